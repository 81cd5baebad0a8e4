//! The small statistics every timed figure uses: milliseconds, median, smallest and largest.

use std::time::Duration;

pub(super) fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The smallest and largest of `v` (+inf, -inf when empty).
pub(super) fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().copied().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_odd_and_an_even_count_and_of_nothing() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn min_max_and_milliseconds() {
        assert_eq!(min_max(&[2.0, -1.0, 5.0]), (-1.0, 5.0));
        assert_eq!(min_max(&[]), (f64::INFINITY, f64::NEG_INFINITY));
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
    }
}
