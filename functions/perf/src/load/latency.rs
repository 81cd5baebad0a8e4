//! Percentiles of a set of latencies (per message, per window of the timeline).

use serde::Serialize;

/// Percentiles of a set of millisecond figures.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1];
        Self { count: values.len(), p50_ms: at(0.50), p99_ms: at(0.99), max_ms: values[values.len() - 1] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let l = Latency::of((1..=100).map(f64::from).collect());
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (50.0, 99.0, 100.0));
    }

    #[test]
    fn no_value_no_latency_and_one_value_is_every_percentile() {
        assert_eq!(Latency::of(Vec::new()).count, 0);
        let l = Latency::of(vec![7.0]);
        assert_eq!((l.count, l.p50_ms, l.p99_ms, l.max_ms), (1, 7.0, 7.0, 7.0));
    }
}
