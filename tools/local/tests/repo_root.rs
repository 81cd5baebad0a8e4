//! The runner keeps its files in the checkout it is run from: without `SOPHIA_REPO_ROOT` the
//! built binary looks for the checkout from its current directory, never in the checkout it was
//! built in (a path compiled into it), and says so clearly when there is none.

use std::path::{Path, PathBuf};
use std::process::Command;

fn sophia_local(cwd: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sophia-local"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SOPHIA_REPO_ROOT")
        .output()
        .expect("sophia-local runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sophia-repo-root-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn outside_any_checkout_it_refuses_to_start_and_names_the_way_out() {
    let dir = scratch("outside");
    for args in [&["up", "--no-demo"][..], &["status"], &["fault", "mongo", "down"], &["pause", "report-generate"]] {
        let out = sophia_local(&dir, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("is not inside a Sophia checkout") && stderr.contains("SOPHIA_REPO_ROOT"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.join(".local").exists(), "nothing written where it was run");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn inside_another_checkout_it_uses_that_checkouts_local_directory_not_the_one_it_was_built_in() {
    // A checkout as the runner recognises one: the workspace Cargo.toml and the local crate.
    let dir = scratch("other");
    std::fs::create_dir_all(dir.join("tools/local")).unwrap();
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[workspace]\nmembers = [\"tools/local\"]\n").unwrap();
    std::fs::write(dir.join("tools/local/Cargo.toml"), "[package]\nname = \"sophia-local\"\n").unwrap();

    // From a subdirectory: the control commands look for that checkout's env file.
    let out = sophia_local(&dir.join("docs"), &["status"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "no runner there: {stderr}");
    let expected = dir.join(".local").join("sophia.env");
    assert!(stderr.contains(&expected.display().to_string()), "the env file of the checkout it runs in: {stderr}");
    let built_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    assert!(!stderr.contains(&built_in.join(".local").display().to_string()), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}
