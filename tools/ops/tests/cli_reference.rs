//! `docs/reference/ops-cli.md` is the binary's help: this test fails when they differ.
//! Regenerate with `scripts/regenerate` (which runs this test with `SOPHIA_BLESS=1`).

use std::path::PathBuf;

#[test]
fn the_command_reference_matches_the_clap_definitions() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(sophia_ops::reference::PATH);
    sophia_platform::env::bless_or_assert(&path, &sophia_ops::reference::markdown(), "tools/ops/src/cli.rs");
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
