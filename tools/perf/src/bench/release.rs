//! The release binaries the timed figures run: where they are, each function's declared memory
//! and timeout, and one invocation of them behind the local Runtime API.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sophia_declarations::Declaration;
use sophia_local::invoke::InvokeContext;

use super::BenchOptions;

/// `<repo>/target` unless `CARGO_TARGET_DIR` says otherwise.
pub fn target_dir() -> PathBuf {
    match sophia_platform::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let p = PathBuf::from(d);
            if p.is_absolute() { p } else { sophia_local::servers::repo_root().join(p) }
        }
        None => sophia_local::servers::repo_root().join("target"),
    }
}

/// One function's release binary, with its declared memory and timeout.
pub(super) fn release_function(options: &BenchOptions, function: &str) -> Result<(PathBuf, u32, Duration), String> {
    let binary = options.release_dir.join(function);
    if !binary.is_file() {
        return Err(format!("no release binary {} (cargo build --release -p {function})", binary.display()));
    }
    let (memory, timeout) = Declaration::embedded()
        .function(function)
        .map(|f| (f.memory_mb, Duration::from_secs(u64::from(f.timeout_seconds))))
        .unwrap_or((256, Duration::from_secs(30)));
    Ok((binary, memory, timeout))
}

pub(super) fn invoke_context(function: &str, timeout: Duration) -> InvokeContext {
    let deadline = SystemTime::now() + timeout;
    InvokeContext {
        request_id: format!("bench-{}", bson::oid::ObjectId::new()),
        deadline_ms: deadline.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64,
        function_arn: format!("arn:aws:lambda:us-east-1:000000000000:function:sophia-bench-{function}"),
    }
}

pub(super) fn item_failures(response: &serde_json::Value) -> usize {
    response.get("batchItemFailures").and_then(|f| f.as_array()).map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_release_binary_says_how_to_build_it() {
        let options = BenchOptions {
            release_dir: std::env::temp_dir().join(format!("sophia-bench-no-release-{}", std::process::id())),
            lambda_dir: PathBuf::new(),
            runs: 1,
            batch_repeats: 1,
            mongo_uri: None,
        };
        let e = release_function(&options, "interview-completed").expect_err("no binary there");
        assert!(e.contains("cargo build --release -p interview-completed"), "{e}");
    }

    #[test]
    fn item_failures_count_the_batch_item_failures_of_a_response() {
        let response = serde_json::json!({"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]});
        assert_eq!(item_failures(&response), 2);
        assert_eq!(item_failures(&serde_json::json!({"batchItemFailures": []})), 0);
        assert_eq!(item_failures(&serde_json::json!(null)), 0);
    }

    #[test]
    fn an_invocation_names_its_function_and_a_deadline_ahead() {
        let ctx = invoke_context("report-generate", Duration::from_secs(60));
        assert!(ctx.function_arn.ends_with(":function:sophia-bench-report-generate"), "{}", ctx.function_arn);
        assert!(ctx.request_id.starts_with("bench-"));
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        assert!(ctx.deadline_ms > now_ms, "the deadline is in the future");
    }
}
