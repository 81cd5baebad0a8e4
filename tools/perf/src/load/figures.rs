//! The run's figures from the audit's timestamps: per message latency (first publish ->
//! `settledAt`, -> report done), the spans from the first publish, and the timeline.

use std::collections::HashMap;
use std::time::SystemTime;

use bson::oid::ObjectId;

use super::latency::Latency;
use super::seed::Planned;
use super::timeline::{TIMELINE_WINDOWS, Window, timeline};

/// What the report takes from the audit's timestamps.
pub(super) struct Figures {
    /// First publish to the last `settledAt`, and to the last terminal report.
    pub(super) settle_seconds: f64,
    pub(super) report_seconds: f64,
    pub(super) settle_latency: Latency,
    pub(super) report_latency: Latency,
    pub(super) timeline: Vec<Window>,
}

impl Figures {
    /// The figures of the interviews published (`published_at`, by index in `planned`) that
    /// settled (`settled_at`) and whose report was done (`report_done_at`).
    pub(super) fn of(
        planned: &[Planned],
        published_at: &HashMap<usize, SystemTime>,
        settled_at: &HashMap<ObjectId, SystemTime>,
        report_done_at: &HashMap<ObjectId, SystemTime>,
        first_publish: SystemTime,
    ) -> Self {
        let mut settle_samples = Vec::new();
        let mut report_samples = Vec::new();
        let mut last_settled = first_publish;
        let mut last_report = first_publish;
        for (i, p) in planned.iter().enumerate() {
            let Some(&sent) = published_at.get(&i) else { continue };
            if let Some(&t) = settled_at.get(&p.id) {
                settle_samples.push((ms_between(first_publish, t) / 1000.0, ms_between(sent, t)));
                last_settled = last_settled.max(t);
            }
            if let Some(&t) = report_done_at.get(&p.id) {
                report_samples.push((ms_between(first_publish, t) / 1000.0, ms_between(sent, t)));
                last_report = last_report.max(t);
            }
        }
        let timeline = timeline(&settle_samples, &report_samples, TIMELINE_WINDOWS);
        let settle_ms = settle_samples.iter().map(|s| s.1).collect();
        let report_ms = report_samples.iter().map(|s| s.1).collect();
        let settle_seconds = ms_between(first_publish, last_settled) / 1000.0;
        let report_seconds = ms_between(first_publish, last_report) / 1000.0;
        Self {
            settle_seconds,
            report_seconds,
            settle_latency: Latency::of(settle_ms),
            report_latency: Latency::of(report_ms),
            timeline,
        }
    }
}

fn ms_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64() * 1000.0,
        Err(e) => -(e.duration().as_secs_f64() * 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn milliseconds_between_two_times_either_way() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        assert_eq!(ms_between(t, t + Duration::from_millis(1500)), 1500.0);
        assert_eq!(ms_between(t + Duration::from_millis(250), t), -250.0);
    }

    #[test]
    fn latency_runs_from_each_interviews_first_publish_and_spans_from_the_first_of_all() {
        let planned: Vec<Planned> = (0..3)
            .map(|_| Planned { id: ObjectId::new(), org: ObjectId::new(), reserved: 10, lots: 1, duration: Some(600) })
            .collect();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        // Interview 2 was never published (no sample), interview 1 has no report yet.
        let published_at = HashMap::from([(0, at(0.0)), (1, at(1.0))]);
        let settled_at = HashMap::from([(planned[0].id, at(2.0)), (planned[1].id, at(4.0)), (planned[2].id, at(9.0))]);
        let report_done_at = HashMap::from([(planned[0].id, at(5.0))]);
        let f = Figures::of(&planned, &published_at, &settled_at, &report_done_at, t0);
        assert_eq!((f.settle_seconds, f.report_seconds), (4.0, 5.0));
        assert_eq!((f.settle_latency.count, f.settle_latency.max_ms), (2, 3000.0));
        assert_eq!((f.report_latency.count, f.report_latency.p50_ms), (1, 5000.0));
        assert_eq!(f.timeline.iter().map(|w| w.settled).sum::<usize>(), 2);
    }
}
