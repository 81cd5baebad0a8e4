//! Durations as an operator reads them (`2h 5m`, `3d 4h`): queue status, the listings, `report late`.

/// Whole seconds in the two largest units that matter (`45s`, `12m 3s`, `2h 5m`, `3d 4h`).
pub fn human_duration(seconds: u64) -> String {
    match seconds {
        s if s >= 86_400 => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
        s if s >= 3600 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m {}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}
