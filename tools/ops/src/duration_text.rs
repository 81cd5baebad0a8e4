//! Durations as an operator reads them (`2h 5m`, `3d 4h`, `24h`, `15m`): queue status, the
//! listings, `report late`.

/// Whole seconds in the two largest units that matter (`45s`, `12m 3s`, `2h 5m`, `3d 4h`); a
/// zero second unit is left out (`15m`, `2h`), and whole days up to two read in hours (`24h`).
pub fn human_duration(seconds: u64) -> String {
    let two = |big: u64, unit: &str, small: u64, small_unit: &str| {
        if small == 0 { format!("{big}{unit}") } else { format!("{big}{unit} {small}{small_unit}") }
    };
    match seconds {
        s if s >= 86_400 && !(s <= 2 * 86_400 && s % 3600 == 0) => two(s / 86_400, "d", (s % 86_400) / 3600, "h"),
        s if s >= 3600 => two(s / 3600, "h", (s % 3600) / 60, "m"),
        s if s >= 60 => two(s / 60, "m", s % 60, "s"),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn round_durations_read_without_a_zero_unit() {
        assert_eq!(human_duration(900), "15m");
        assert_eq!(human_duration(86_400), "24h");
        assert_eq!(human_duration(4 * 86_400), "4d");
        assert_eq!(human_duration(3 * 86_400 + 4 * 3600), "3d 4h");
        assert_eq!(human_duration(7_500), "2h 5m");
        assert_eq!(human_duration(723), "12m 3s");
        assert_eq!(human_duration(45), "45s");
    }
}
