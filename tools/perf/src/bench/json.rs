//! Where a run's JSON goes: the run before it kept as `<name>.previous.json` (the picture sets
//! the two side by side), the run read back for `--picture-only`, the report written.

use std::path::{Path, PathBuf};

use super::BenchReport;

/// The run recorded at `path` (the previous one), copied to `<stem>.previous.json` before this
/// run replaces it; `None` when there is none or it is not JSON.
pub fn keep_previous(path: &Path) -> Option<serde_json::Value> {
    let value = read_run(path)?;
    let _ = std::fs::copy(path, previous_path(path));
    Some(value)
}

/// A run recorded as JSON at `path`; `None` when there is none or it is not JSON.
pub fn read_run(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Where [`keep_previous`] keeps the previous run: `<stem>.previous.json` beside `path`.
pub fn previous_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    path.with_file_name(format!("{stem}.previous.json"))
}

/// Writes the report as JSON (creating the directory).
pub fn write_json(report: &BenchReport, path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(report).map_err(std::io::Error::other)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_run_is_kept_beside_the_json_before_it_is_replaced() {
        let dir = std::env::temp_dir().join(format!("sophia-bench-previous-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let json = dir.join("bench.json");
        assert_eq!(previous_path(&json), dir.join("bench.previous.json"));
        assert_eq!(keep_previous(&json), None, "no run recorded yet");
        std::fs::write(&json, r#"{"lambda_architecture": "x86_64"}"#).expect("write");
        let kept = keep_previous(&json).expect("the recorded run");
        assert_eq!(kept["lambda_architecture"], "x86_64");
        assert_eq!(
            std::fs::read_to_string(previous_path(&json)).expect("copied"),
            r#"{"lambda_architecture": "x86_64"}"#
        );
        std::fs::write(&json, "not JSON").expect("write");
        assert_eq!(keep_previous(&json), None, "a broken file is no previous run");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
