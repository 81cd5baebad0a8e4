//! Percentiles of a set of latencies (per message, per window of the timeline), nearest rank as
//! the service level measures them (`sophia_sqs_consumer::metrics::percentile`).

use serde::Serialize;

/// Percentiles of a set of millisecond figures.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    /// The time-to-report service level's percentile (declarations/metrics.json `serviceLevels`).
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(values: Vec<f64>) -> Self {
        let at = |q: f64| sophia_sqs_consumer::metrics::percentile(&values, q).unwrap_or(0.0);
        Self { count: values.len(), p50_ms: at(0.50), p95_ms: at(0.95), p99_ms: at(0.99), max_ms: at(1.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let l = Latency::of((1..=100).map(f64::from).collect());
        assert_eq!((l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms), (50.0, 95.0, 99.0, 100.0));
    }

    #[test]
    fn no_value_no_latency_and_one_value_is_every_percentile() {
        assert_eq!(Latency::of(Vec::new()).count, 0);
        let l = Latency::of(vec![7.0]);
        assert_eq!((l.count, l.p50_ms, l.p99_ms, l.max_ms), (1, 7.0, 7.0, 7.0));
    }
}
