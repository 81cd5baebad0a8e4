//! The load test's report: every figure of a run (the JSON's fields) and the text printed.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::latency::Latency;
use super::mix::Mix;
use super::timeline::Window;

#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub mix: Mix,
    pub orgs: usize,
    pub pollers: usize,
    pub settle_pollers: usize,
    pub settle_concurrency: usize,
    pub seed_seconds: f64,
    pub publish_seconds: f64,
    /// First publish to the last `settledAt`.
    pub settle_seconds: f64,
    /// First publish to the last terminal report.
    pub report_seconds: f64,
    /// Distinct valid interviews settled per second, first publish to last settlement.
    pub settled_per_second: f64,
    /// All messages published (incl. duplicates and malformed) per second over the same span.
    pub messages_per_second: f64,
    pub settle_latency: Latency,
    pub report_latency: Latency,
    pub settled: usize,
    pub reports_completed: usize,
    pub reports_failed: usize,
    pub insufficient_evidence_reports: usize,
    pub ledger_entries: usize,
    pub esm: Vec<(String, [u64; 5])>,
    /// Per function: records delivered by `ApproximateReceiveCount` (1 = first delivery).
    pub receive_counts: Vec<(String, BTreeMap<u32, u64>)>,
    /// Settlements and reports over the run, in windows of equal width.
    pub timeline: Vec<Window>,
    pub violations: Vec<String>,
    pub timed_out: bool,
}

impl LoadReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && !self.timed_out
    }
}

impl LoadReport {
    /// Fills the figures that need the mix (called by `drive`).
    pub fn finish(mut self) -> Self {
        self.messages_per_second = self.mix.events as f64 / self.settle_seconds.max(1e-9);
        self
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.mix;
        writeln!(
            f,
            "\nSophia load test: {} messages over {} organizations; settlement {} poller(s) x concurrency {}, report generation {} pollers",
            m.events, self.orgs, self.settle_pollers, self.settle_concurrency, self.pollers
        )?;
        writeln!(
            f,
            "  mix: {} completed, {} failed, {} duplicates, {} malformed ({} distinct valid interviews)",
            m.completed,
            m.failed,
            m.duplicates,
            m.malformed,
            m.interviews()
        )?;
        writeln!(f, "  seed {:.1} s, publish {:.1} s", self.seed_seconds, self.publish_seconds)?;
        writeln!(
            f,
            "  settled {} / {} in {:.1} s from the first publish",
            self.settled,
            m.interviews(),
            self.settle_seconds
        )?;
        writeln!(
            f,
            "  throughput: {:.1} valid events settled/s ({:.1} messages/s incl. duplicates and malformed)",
            self.settled_per_second, self.messages_per_second
        )?;
        writeln!(
            f,
            "  latency publish -> settledAt: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (n={})",
            self.settle_latency.p50_ms,
            self.settle_latency.p99_ms,
            self.settle_latency.max_ms,
            self.settle_latency.count
        )?;
        writeln!(
            f,
            "  latency publish -> report completed: p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms (n={}); last report {:.1} s after the first publish",
            self.report_latency.p50_ms,
            self.report_latency.p95_ms,
            self.report_latency.p99_ms,
            self.report_latency.max_ms,
            self.report_latency.count,
            self.report_seconds
        )?;
        writeln!(f, "  {}", time_to_report_line(&self.report_latency))?;
        writeln!(
            f,
            "  reports: {} COMPLETED ({} insufficient_evidence), {} FAILED; ledger entries {}",
            self.reports_completed, self.insufficient_evidence_reports, self.reports_failed, self.ledger_entries
        )?;
        for (function, [invocations, records, deleted, item_failures, batch_failures]) in &self.esm {
            writeln!(
                f,
                "  {function}: {invocations} invocations, {records} records, {deleted} deleted, {item_failures} item failures, {batch_failures} batch failures"
            )?;
        }
        for (function, counts) in &self.receive_counts {
            let counts: Vec<String> = counts.iter().map(|(times, n)| format!("{n} received {times}x")).collect();
            writeln!(f, "  {function} records by receive count: {}", counts.join(", "))?;
        }
        self.verdict(f)
    }
}

/// The time to report (each interview is published as it ends: publish -> report stored) against
/// the declared service level, as the stage's alarm judges it.
pub fn time_to_report_line(latency: &Latency) -> String {
    use sophia_sqs_consumer::metrics::{Declaration, Metric};
    let Some(level) = Declaration::embedded().service_level(Metric::TimeToReportMs) else {
        return "time to report: no service level declared".into();
    };
    if latency.count == 0 {
        return format!("time to report: no report completed (level {})", level.human());
    }
    let measured = match level.percentile {
        95 => latency.p95_ms,
        99 => latency.p99_ms,
        50 => latency.p50_ms,
        _ => {
            return format!(
                "time to report: the load test measures p50, p95 and p99, not the level's {}",
                level.statistic
            );
        }
    };
    format!(
        "time to report: {} {:.1} s against the level {}: {}",
        level.statistic,
        measured / 1000.0,
        level.human(),
        if level.met_by(measured) { "met" } else { "MISSED" }
    )
}

impl LoadReport {
    /// The audit's verdict: a timeout, then every violation (the first 50) or the all-clear.
    fn verdict(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.timed_out {
            writeln!(f, "✘ timed out before everything was settled and reported")?;
        }
        if self.violations.is_empty() {
            writeln!(
                f,
                "✔ every valid interview settled exactly once, one report per completed interview, none for failed ones,"
            )?;
            write!(f, "  DLQs empty, no pending outbox entry, the five invariants hold for every organization")
        } else {
            writeln!(f, "✘ {} violation(s):", self.violations.len())?;
            for v in self.violations.iter().take(50) {
                writeln!(f, "    {v}")?;
            }
            if self.violations.len() > 50 {
                write!(f, "    … and {} more", self.violations.len() - 50)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(violations: Vec<String>, timed_out: bool) -> LoadReport {
        LoadReport {
            mix: Mix::of(1_000),
            orgs: 5,
            pollers: 4,
            settle_pollers: 1,
            settle_concurrency: 1,
            seed_seconds: 1.0,
            publish_seconds: 2.0,
            settle_seconds: 40.0,
            report_seconds: 50.0,
            settled_per_second: 23.25,
            messages_per_second: 0.0,
            settle_latency: Latency::default(),
            report_latency: Latency::default(),
            settled: 930,
            reports_completed: 920,
            reports_failed: 0,
            insufficient_evidence_reports: 40,
            ledger_entries: 3_000,
            esm: Vec::new(),
            receive_counts: Vec::new(),
            timeline: Vec::new(),
            violations,
            timed_out,
        }
    }

    #[test]
    fn finish_counts_every_message_over_the_settlement_span() {
        let r = report(Vec::new(), false).finish();
        assert_eq!(r.messages_per_second, 25.0, "1,000 messages in 40 s");
        assert!(r.ok());
        assert!(r.to_string().ends_with("the five invariants hold for every organization"));
    }

    #[test]
    fn a_timeout_or_a_violation_fails_the_run_and_the_text_lists_the_first_fifty() {
        assert!(!report(Vec::new(), true).ok());
        let r = report((0..52).map(|i| format!("violation {i}")).collect(), false);
        assert!(!r.ok());
        let text = r.to_string();
        assert!(text.contains("✘ 52 violation(s):\n    violation 0\n"));
        assert!(text.contains("    violation 49\n") && !text.contains("violation 50"));
        assert!(text.ends_with("    … and 2 more"));
    }
}
