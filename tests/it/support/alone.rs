//! Tests that change process-wide state (a variable read when a client is built, the EMF metrics
//! sink) and so cannot share the test process with the others: the binary runs itself again for
//! that one test, with the variables given set on the child only.

use std::ffi::OsStr;
use std::process::Command;

/// Set on the child process, to the full name of the test it runs.
const ALONE: &str = "SOPHIA_TEST_ALONE";

/// The test's name as libtest lists it (`<module>::<test>`, without the binary's crate name).
fn full_name(module_path: &str, test: &str) -> String {
    let module = module_path.split_once("::").map_or(module_path, |(_, m)| m);
    format!("{module}::{test}")
}

/// Whether this process is the child that runs `test` (of `module_path`) alone.
pub fn is_alone(module_path: &str, test: &str) -> bool {
    std::env::var(ALONE).is_ok_and(|v| v == full_name(module_path, test))
}

/// Runs `test` of `module_path` in a new process of this test binary, with `envs` set there, and
/// fails with the child's output when the test fails there. Lines of the child's stdout that
/// start with one of `forward` are printed (its test summary is not: scripts/test counts those).
pub fn run_alone(module_path: &str, test: &str, envs: &[(&str, &OsStr)], forward: &[&str]) {
    let name = full_name(module_path, test);
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads", "1"])
        .env(ALONE, &name)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("the test binary runs again");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for line in stdout.lines().filter(|l| forward.iter().any(|p| l.starts_with(p))) {
        println!("{line}");
    }
    assert!(out.status.success(), "{name} failed in its own process ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("1 passed"), "{name} did not run in its own process:\n{stdout}");
}
