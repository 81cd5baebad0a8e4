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
