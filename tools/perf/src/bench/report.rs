//! The bench's report: every figure of a run (the JSON's fields) and the table printed.

use std::fmt;

use serde::Serialize;

use super::cold_start::{ColdStart, cold_start_section};
use super::latency::{BatchLatency, batch_section};
use super::machine::Machine;
use super::round_trips::{RoundTrip, round_trips_section};
use super::secrets::{SecretStart, secrets_table};
use super::zips::{ZipFigure, zip_table};

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub machine: Machine,
    pub lambda_architecture: Option<String>,
    pub zips: Vec<ZipFigure>,
    pub cold_starts: Vec<ColdStart>,
    /// Plain variables vs Secrets Manager behind an extension not ready during init.
    #[serde(default)]
    pub secret_starts: Vec<SecretStart>,
    pub round_trips: Vec<RoundTrip>,
    pub batch_latency: Vec<BatchLatency>,
    /// The cost of one report, before and after the compact prompt and the token budget.
    pub report_costs: Vec<crate::cost::ReportCost>,
    pub notes: Vec<String>,
    pub seconds: f64,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.machine;
        writeln!(
            f,
            "\nSophia benchmarks — {} × {} ({}), {}, kernel {}, load average at start {}",
            m.nproc,
            m.cpu_model,
            m.mem_total,
            std::env::consts::ARCH,
            m.kernel,
            m.load_average_at_start
        )?;
        write!(f, "{}", zip_table(&self.zips, self.lambda_architecture.as_deref()))?;
        cold_start_section(f, &self.cold_starts)?;
        write!(f, "{}", secrets_table(&self.secret_starts))?;
        round_trips_section(f, &self.round_trips)?;
        batch_section(f, &self.batch_latency)?;
        write!(f, "{}", crate::cost::table(&self.report_costs))?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        write!(f, "\nbenchmarks took {:.0} s", self.seconds)
    }
}
