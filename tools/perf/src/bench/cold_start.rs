//! Cold start of each release binary behind the local Runtime API: process start to its first
//! `/next` poll (its init, incl. the MongoDB `hello` of `Mongo::from_env`, is done), median of
//! `runs` fresh processes; then the first event's end-to-end time (one real batch invoked right
//! after ready: 10 settlements, or one report) and the peak RSS (`VmHWM`) after it.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use sophia_contracts::OrganizationId;
use sophia_declarations::Function;
use sophia_local::invoke::Invoke;
use sophia_local::runtime_api::RuntimeApi;

use super::release::{invoke_context, item_failures, release_function};
use super::stats::{median, min_max, ms};
use super::world::World;
use super::{BenchError, BenchOptions, other};

#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    pub function: String,
    pub runs: usize,
    pub ready_ms_median: f64,
    pub ready_ms_min: f64,
    pub ready_ms_max: f64,
    /// What the first invocation carried.
    pub first_event: String,
    pub first_event_ms_median: f64,
    pub first_event_ms_max: f64,
    /// Every first batch was answered without item failures.
    pub first_events_ok: bool,
    /// Records reported as batch item failures, over all runs (on nx-27017: concurrent
    /// transactions, which it cannot run, fail to commit and are retried by SQS).
    pub item_failures: usize,
    pub records: usize,
    /// Peak RSS (VmHWM) after the first batch, median / max over the runs.
    pub peak_rss_kib_median: u64,
    pub peak_rss_kib_max: u64,
}

/// `VmHWM` of a process, KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// What one fresh process gave: its ready time, its first event's time and failures, its peak RSS.
struct ColdRun {
    ready_ms: f64,
    first_event_ms: f64,
    item_failures: usize,
    peak_rss_kib: Option<u64>,
}

/// The first event the bench gives a function: a batch of its own queue's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FirstEvent {
    /// A batch of `interview.completed` settlements, one per organization.
    Settlements,
    /// A batch of `interview.failed` settlements, one per organization.
    FailedSettlements,
    /// One `report.generate` (the model path, offline endpoint).
    Report,
}

impl FirstEvent {
    /// The first event of `function`'s measurements. A `match` with no catch-all: a function
    /// added to `declarations/queues.json` stops the build here until the bench knows its event.
    pub(super) fn of(function: Function) -> Self {
        match function {
            Function::InterviewCompleted => Self::Settlements,
            Function::InterviewFailed => Self::FailedSettlements,
            Function::ReportGenerate => Self::Report,
        }
    }

    /// The event, prepared (seeded) before the process starts so that seeding is not timed.
    pub(super) async fn prepare(self, world: &World, orgs: &[OrganizationId]) -> Result<serde_json::Value, BenchError> {
        match self {
            Self::Settlements => world.completed_batch(orgs).await,
            Self::FailedSettlements => world.failed_batch(orgs).await,
            Self::Report => world.report_batch(orgs[0]).await,
        }
    }

    /// Records the event carries.
    fn records(self, orgs: usize) -> usize {
        match self {
            Self::Settlements | Self::FailedSettlements => orgs,
            Self::Report => 1,
        }
    }

    /// What the event carried, for the table.
    fn describe(self, world: &World) -> String {
        match self {
            Self::Settlements | Self::FailedSettlements => {
                format!("10 settlements, 10 orgs, {} at once", world.record_concurrency)
            }
            Self::Report => "1 report (model path, offline endpoint)".into(),
        }
    }
}

/// Cold start, first event and peak RSS of one release binary, `runs` fresh processes.
pub(super) async fn cold_start(
    world: &World,
    options: &BenchOptions,
    function: Function,
) -> Result<ColdStart, BenchError> {
    let first_event = FirstEvent::of(function);
    let function = function.name();
    let (binary, memory, timeout) = release_function(options, function).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let mut runs = Vec::new();
    for _ in 0..options.runs.max(1) {
        let event = first_event.prepare(world, &orgs).await?;
        runs.push(one_cold_start(world, &binary, function, memory, timeout, event).await?);
    }
    Ok(summarise(function, first_event.describe(world), &runs, first_event.records(orgs.len())))
}

/// One fresh process: started, ready, its first event invoked, its peak RSS read, stopped.
async fn one_cold_start(
    world: &World,
    binary: &Path,
    function: &str,
    memory: u32,
    timeout: Duration,
    event: serde_json::Value,
) -> Result<ColdRun, BenchError> {
    let mut api = RuntimeApi::serve().await.map_err(other)?;
    let started = Instant::now();
    api.start_function(binary, function, memory, &world.env).map_err(other)?;
    api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{function}: {e}")))?;
    let ready_ms = ms(started.elapsed());
    let invoked = Instant::now();
    let response =
        api.invoke(event, invoke_context(function, timeout)).await.map_err(|e| other(format!("{function}: {e}")))?;
    let first_event_ms = ms(invoked.elapsed());
    let run = ColdRun {
        ready_ms,
        first_event_ms,
        item_failures: item_failures(&response),
        peak_rss_kib: api.pid().and_then(peak_rss_kib),
    };
    api.stop().await;
    Ok(run)
}

/// The figures of `runs` fresh processes of `function`.
fn summarise(function: &str, first_event: String, runs: &[ColdRun], records_per_run: usize) -> ColdStart {
    let ready: Vec<f64> = runs.iter().map(|r| r.ready_ms).collect();
    let first: Vec<f64> = runs.iter().map(|r| r.first_event_ms).collect();
    let rss: Vec<f64> = runs.iter().filter_map(|r| r.peak_rss_kib).map(|kib| kib as f64).collect();
    let failures: usize = runs.iter().map(|r| r.item_failures).sum();
    let (rmin, rmax) = min_max(&ready);
    let (_, fmax) = min_max(&first);
    let (_, smax) = min_max(&rss);
    ColdStart {
        function: function.to_owned(),
        runs: ready.len(),
        ready_ms_median: median(&ready),
        ready_ms_min: rmin,
        ready_ms_max: rmax,
        first_event,
        first_event_ms_median: median(&first),
        first_event_ms_max: fmax,
        first_events_ok: failures == 0,
        item_failures: failures,
        records: records_per_run * runs.len(),
        peak_rss_kib_median: median(&rss) as u64,
        peak_rss_kib_max: if rss.is_empty() { 0 } else { smax as u64 },
    }
}

/// The cold start section of the bench table.
pub(super) fn cold_start_section(f: &mut fmt::Formatter<'_>, rows: &[ColdStart]) -> fmt::Result {
    writeln!(
        f,
        "\nCold start (process start -> first /next poll; init includes MongoDB hello) and first event, release binaries behind a local Runtime API"
    )?;
    writeln!(
        f,
        "  {:<22} {:>5} {:>12} {:>16} {:>36} {:>14} {:>14}",
        "function", "runs", "ready p50", "ready min-max", "first event", "first p50", "VmHWM p50/max"
    )?;
    for c in rows {
        writeln!(
            f,
            "  {:<22} {:>5} {:>9.1} ms {:>9.1}-{:.1} ms {:>36} {:>11.1} ms {:>6.1}/{:.1} MB{}",
            c.function,
            c.runs,
            c.ready_ms_median,
            c.ready_ms_min,
            c.ready_ms_max,
            c.first_event,
            c.first_event_ms_median,
            c.peak_rss_kib_median as f64 / 1024.0,
            c.peak_rss_kib_max as f64 / 1024.0,
            if c.first_events_ok {
                String::new()
            } else {
                format!("  ({} of {} records failed)", c.item_failures, c.records)
            }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_rss_of_this_process_is_read_from_proc() {
        let kib = peak_rss_kib(std::process::id()).expect("VmHWM of a live process");
        assert!(kib > 0, "a running test has resident memory");
        assert_eq!(peak_rss_kib(u32::MAX), None, "no such process");
    }
}
