//! The run cut into windows of equal width: what settled and what was reported in each, and the
//! latency of what finished there (the picture's latency and throughput panels).

use serde::Serialize;

use super::latency::Latency;

/// One window of the run: what finished in it, and the latency of what finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Window {
    /// Seconds from the first publish.
    pub start_s: f64,
    pub end_s: f64,
    /// Interviews settled in the window (by `settledAt`) and their publish -> settledAt latency.
    pub settled: usize,
    pub settle_p50_ms: f64,
    pub settle_p99_ms: f64,
    /// Reports finished in the window and their publish -> report latency.
    pub reports: usize,
    pub report_p50_ms: f64,
    pub report_p99_ms: f64,
}

impl Window {
    pub fn seconds(&self) -> f64 {
        self.end_s - self.start_s
    }
}

/// Windows of the timeline: a picture of 60 bars stays readable.
pub const TIMELINE_WINDOWS: usize = 60;

/// The run cut into at most `max_windows` windows of whole seconds (at least one second each).
/// Samples are `(seconds from the first publish when it finished, latency ms)`.
pub fn timeline(settled: &[(f64, f64)], reports: &[(f64, f64)], max_windows: usize) -> Vec<Window> {
    let end = settled.iter().chain(reports).map(|s| s.0).fold(0.0_f64, f64::max);
    if settled.is_empty() && reports.is_empty() {
        return Vec::new();
    }
    let width = (end / max_windows.max(1) as f64).ceil().max(1.0);
    let count = ((end / width).floor() as usize + 1).min(max_windows.max(1));
    let bucket = |samples: &[(f64, f64)]| {
        let mut out = vec![Vec::new(); count];
        for &(at, ms) in samples {
            out[((at.max(0.0) / width).floor() as usize).min(count - 1)].push(ms);
        }
        out
    };
    bucket(settled)
        .into_iter()
        .zip(bucket(reports))
        .enumerate()
        .map(|(i, (settle, report))| {
            let (s, r) = (Latency::of(settle), Latency::of(report));
            Window {
                start_s: i as f64 * width,
                end_s: (i + 1) as f64 * width,
                settled: s.count,
                settle_p50_ms: s.p50_ms,
                settle_p99_ms: s.p99_ms,
                reports: r.count,
                report_p50_ms: r.p50_ms,
                report_p99_ms: r.p99_ms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_cuts_the_run_into_windows_of_whole_seconds() {
        // 150 s of settlements, two per second, latency = the second they finished in.
        let settled: Vec<(f64, f64)> = (0..300).map(|i| (f64::from(i) / 2.0, f64::from(i / 2))).collect();
        let reports = [(10.5, 900.0), (149.9, 100.0)];
        let t = timeline(&settled, &reports, 60);
        // 149.9 s / 60 -> 3 s windows, 50 of them.
        assert_eq!(t.len(), 50);
        assert_eq!((t[0].start_s, t[0].end_s, t[0].seconds()), (0.0, 3.0, 3.0));
        assert!(t.iter().all(|w| w.settled == 6), "two settlements a second, three seconds a window");
        assert_eq!((t[0].settle_p50_ms, t[0].settle_p99_ms), (1.0, 2.0));
        assert_eq!((t[3].reports, t[3].report_p50_ms), (1, 900.0));
        assert_eq!((t[49].reports, t[49].report_p99_ms), (1, 100.0));
        assert_eq!(t.iter().map(|w| w.reports).sum::<usize>(), 2);
    }

    #[test]
    fn a_short_run_has_one_second_windows_and_an_empty_run_none() {
        let t = timeline(&[(0.2, 5.0), (2.7, 7.0)], &[], 60);
        assert_eq!(t.iter().map(|w| w.settled).collect::<Vec<_>>(), [1, 0, 1]);
        assert_eq!(t[1].settle_p99_ms, 0.0, "an empty window has no latency");
        assert!(timeline(&[], &[], 60).is_empty());
    }
}
