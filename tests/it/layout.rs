//! The root integration tests stay one binary: no `tests/<name>.rs` (Cargo would build it as a
//! test binary of its own, linking every crate again), and every `tests/it/<name>.rs` is a module
//! of `tests/it/main.rs` (a file that is not declared is silently never compiled).

use std::path::{Path, PathBuf};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn rust_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn no_root_test_file_is_a_binary_of_its_own() {
    let strays = rust_files(&tests_dir());
    assert!(
        strays.is_empty(),
        "tests/{{{}}}.rs: move each into tests/it/ (git mv tests/<name>.rs tests/it/<name>.rs), declare it \
         in tests/it/main.rs and use crate::support::... for its helpers (docs/testing.md, \"One test binary\")",
        strays.join(",")
    );
}

#[test]
fn every_file_of_the_binary_is_a_declared_module() {
    let main = std::fs::read_to_string(tests_dir().join("it/main.rs")).expect("tests/it/main.rs");
    let undeclared: Vec<String> = rust_files(&tests_dir().join("it"))
        .into_iter()
        .filter(|name| name != "main" && !main.lines().any(|l| l.trim() == format!("mod {name};")))
        .collect();
    assert!(undeclared.is_empty(), "not declared in tests/it/main.rs (never compiled): {undeclared:?}");
}

/// Every `.rs` file under `dir`, recursively (no `target/` or `node_modules/`).
pub(crate) fn rust_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap_or_default();
        if path.is_dir() && name != "target" && name != "node_modules" {
            rust_files_under(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_skip_goes_through_harness_skipped_so_that_scripts_test_counts_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files_under(&root.join("tests"), &mut files);
    rust_files_under(&root.join("functions"), &mut files);
    rust_files_under(&root.join("tools"), &mut files);
    let the_one = root.join("tests/harness/lib.rs");
    let marker = concat!("\"SKIP", "PED"); // split, so that this file does not hold it
    let elsewhere: Vec<String> = files
        .iter()
        .filter(|f| **f != the_one)
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|text| text.contains(marker)))
        .map(|f| f.strip_prefix(root).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        elsewhere.is_empty(),
        "a SKIPPED line written by hand is counted as a pass: call harness::skipped(test, why) instead in {elsewhere:?}"
    );
    let harness = std::fs::read_to_string(&the_one).expect("tests/harness/lib.rs");
    assert!(harness.contains(marker), "harness::skipped writes the SKIPPED line");
}

/// `functions/` holds what ships in a zip and `tools/` what never reaches a Lambda
/// (docs/architecture.md, "Crates"): no crate under `functions/` may depend on a tool outside
/// its `[dev-dependencies]` (a binary's end-to-end test may run it behind the local runtime).
#[test]
fn no_deployed_crate_depends_on_a_tool() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tools: Vec<String> = std::fs::read_dir(root.join("tools"))
        .expect("tools/")
        .map(|e| e.expect("directory entry").path().join("Cargo.toml"))
        .filter(|p| p.is_file())
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = text.lines().find_map(|l| l.strip_prefix("name = ")).expect("a package name");
            name.trim_matches('"').to_string()
        })
        .collect();
    assert!(tools.len() >= 4, "the tools' crates were found: {tools:?}");
    let mut manifests = Vec::new();
    let mut rust = Vec::new();
    rust_files_under(&root.join("functions"), &mut rust);
    let mut dirs: Vec<PathBuf> = rust
        .iter()
        .filter_map(|f| f.ancestors().find(|a| a.join("Cargo.toml").is_file()).map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    manifests.extend(dirs.into_iter().map(|d| d.join("Cargo.toml")));
    assert!(manifests.len() >= 10, "the deployed crates were found: {manifests:?}");
    let mut problems = Vec::new();
    for manifest in &manifests {
        let mut section = String::new();
        for line in std::fs::read_to_string(manifest).unwrap().lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_string();
            } else if section != "[dev-dependencies]"
                && !line.starts_with('#')
                && let Some(tool) =
                    tools.iter().find(|t| line.starts_with(&format!("{t}.")) || line.starts_with(&format!("{t} ")))
            {
                let shown = manifest.strip_prefix(root).unwrap_or(manifest).display();
                problems.push(format!("{shown} {section}: {tool}"));
            }
        }
    }
    assert!(problems.is_empty(), "a deployed crate links a tool (move the code or the crate): {problems:?}");
}

/// A sleep in tests/ that is not the polling helper's is a guess at how long something takes:
/// too long on a quiet machine, too short on a loaded one. Tests wait by polling the condition
/// they wait for (`harness::wait_until`, `harness::wait::poll`); a sleep that is itself what a test
/// is about (time passing, a slow function) is named here, with why.
const SLEEPS_THAT_ARE_THE_TEST: &[(&str, &str)] =
    &[("tests/it/esm_emulator.rs", "a function that outlives its timeout: the sleep is its slowness")];

#[test]
fn no_test_sleeps_but_the_polling_helper_and_the_named_exceptions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files_under(&root.join("tests"), &mut files);
    let the_helper = Path::new("tests/harness/wait.rs");
    // Split, so that this file does not hold them.
    let calls = [concat!("sle", "ep("), concat!("sle", "ep_until("), concat!("sle", "ep_ms(")];
    let mut found: Vec<(String, usize)> = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(root).unwrap_or(file);
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let n: usize = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| calls.iter().map(|c| l.matches(c).count()).sum::<usize>())
            .sum();
        if n > 0 && relative != the_helper {
            found.push((relative.display().to_string(), n));
        }
    }
    let unexpected: Vec<&(String, usize)> = found
        .iter()
        .filter(|(file, n)| !(*n == 1 && SLEEPS_THAT_ARE_THE_TEST.iter().any(|(named, _)| named == file)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "a fixed sleep in tests/ (file, count): {unexpected:?}. Poll the condition the test waits for \
         instead (harness::wait_until, harness::wait::poll; docs/testing.md, \"Writing a test\"), or, if the \
         time passing is itself what the test is about, name it in SLEEPS_THAT_ARE_THE_TEST with why"
    );
    let helper = std::fs::read_to_string(root.join(the_helper)).expect("tests/harness/wait.rs");
    assert!(calls.iter().any(|c| helper.contains(c)), "the polling helper is where tests sleep between checks");
    for (named, why) in SLEEPS_THAT_ARE_THE_TEST {
        assert!(found.iter().any(|(file, _)| file == named), "{named} no longer sleeps ({why}): drop it from the list");
    }
}
