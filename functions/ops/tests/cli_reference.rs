//! `docs/reference/ops-cli.md` is the binary's help: this test fails when they differ.
//! Regenerate with `scripts/regenerate` (which runs this test with `SOPHIA_BLESS=1`).

use std::path::PathBuf;

#[test]
fn the_command_reference_matches_the_clap_definitions() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(sophia_ops::reference::PATH);
    let generated = sophia_ops::reference::markdown();
    if std::env::var("SOPHIA_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{} is out of date with functions/ops/src/cli.rs; regenerate it with\n  scripts/regenerate",
        sophia_ops::reference::PATH
    );
}

#[test]
fn the_reference_names_every_command_operators_are_told_to_run() {
    let text = sophia_ops::reference::markdown();
    for command in [
        "sophia-ops interview show",
        "sophia-ops dlq redrive",
        "sophia-ops dlq delete",
        "sophia-ops dlq list",
        "--show-body",
        "sophia-ops queue move",
        "--reset-attempts",
        "sophia-ops invariants check",
        "sophia-ops migrate",
    ] {
        assert!(text.contains(command), "{command} is missing from the reference");
    }
}
