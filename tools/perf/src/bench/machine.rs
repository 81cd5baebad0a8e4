//! The machine a bench run was taken on: the header of the table and the `machine` of the JSON.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total: String,
    pub kernel: String,
    pub load_average_at_start: String,
}

impl Machine {
    pub fn describe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_owned())
                .unwrap_or_else(|| "unknown".into())
        };
        Self {
            nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model: field(&cpuinfo, "model name"),
            mem_total: field(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default(), "MemTotal"),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned(),
            load_average_at_start: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}
