//! Zip size of each function (`<lambda dir>/<fn>/bootstrap.zip` from `scripts/build`) beside
//! its host release binary, and their table (also printed alone by `sophia-bench --zips-only`).

use std::path::PathBuf;

use serde::Serialize;

use super::{BenchOptions, FUNCTIONS};

/// Zip goals: under 4 MB (met), 3 MB or less (met by interview-failed only); docs/performance.md, "Zip size".
pub const ZIP_GOAL_BYTES: u64 = 4_000_000;
pub const ZIP_TARGET_BYTES: u64 = 3_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct ZipFigure {
    pub function: String,
    /// `None`: not built (run `scripts/build`).
    pub zip_bytes: Option<u64>,
    /// The host release binary (same code, host architecture), for comparison.
    pub release_binary_bytes: Option<u64>,
}

/// Zip sizes from `lambda_dir`, release binary sizes from `release_dir`.
pub fn zip_figures(options: &BenchOptions) -> (Vec<ZipFigure>, Option<String>) {
    let size = |p: PathBuf| std::fs::metadata(p).ok().map(|m| m.len());
    let zips = FUNCTIONS
        .iter()
        .map(|f| ZipFigure {
            function: f.name().to_owned(),
            zip_bytes: size(options.lambda_dir.join(f.name()).join("bootstrap.zip")),
            release_binary_bytes: size(options.release_dir.join(f.name())),
        })
        .collect();
    let arch = std::fs::read_to_string(options.lambda_dir.join("build-info.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v.get("architecture").and_then(|a| a.as_str()).map(str::to_owned));
    (zips, arch)
}

/// The zip table (also printed alone by `sophia-bench --zips-only`).
pub fn zip_table(zips: &[ZipFigure], architecture: Option<&str>) -> String {
    let mut out = format!("\nZip size ({} build)\n", architecture.unwrap_or("no"));
    out +=
        &format!("  {:<22} {:>10} {:>8} {:>8} {:>20}\n", "function", "zip", "< 4 MB", "<= 3 MB", "host release binary");
    let mark = |bytes: Option<u64>, ok: fn(u64) -> bool| match bytes {
        Some(b) if ok(b) => "✔",
        Some(_) => "✘",
        None => "-",
    };
    for z in zips {
        out += &format!(
            "  {:<22} {:>10} {:>8} {:>8} {:>20}\n",
            z.function,
            mb(z.zip_bytes),
            mark(z.zip_bytes, |b| b < ZIP_GOAL_BYTES),
            mark(z.zip_bytes, |b| b <= ZIP_TARGET_BYTES),
            mb(z.release_binary_bytes)
        );
    }
    out
}

fn mb(bytes: Option<u64>) -> String {
    bytes.map_or("-".to_owned(), |b| format!("{:.2} MB", b as f64 / 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zip_table_marks_each_goal_and_a_missing_zip() {
        let zip = |function: &str, zip_bytes: Option<u64>| ZipFigure {
            function: function.to_owned(),
            zip_bytes,
            release_binary_bytes: Some(9_500_000),
        };
        let table = zip_table(
            &[zip("interview-completed", Some(3_500_000)), zip("interview-failed", Some(2_900_000)), zip("x", None)],
            Some("arm64"),
        );
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[1], "Zip size (arm64 build)");
        let cells = |line: &str| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(cells(lines[3]), ["interview-completed", "3.50", "MB", "✔", "✘", "9.50", "MB"]);
        assert_eq!(cells(lines[4]), ["interview-failed", "2.90", "MB", "✔", "✔", "9.50", "MB"]);
        assert_eq!(cells(lines[5]), ["x", "-", "-", "-", "9.50", "MB"]);
        assert!(zip_table(&[], None).contains("Zip size (no build)"));
    }
}
