//! The command reference, `docs/reference/ops-cli.md`, generated from the clap definitions (the
//! `--help` of every command), so the document cannot drift from the binary:
//! `tools/ops/tests/cli_reference.rs` fails when the file differs, and rewrites it with
//! `SOPHIA_BLESS=1` (`scripts/regenerate` sets it).

use clap::CommandFactory;

use crate::Cli;

/// The reference's path from the repository root.
pub const PATH: &str = "docs/reference/ops-cli.md";

/// Help text is wrapped at this width, whatever the terminal.
const WIDTH: usize = 100;

/// The whole document.
pub fn markdown() -> String {
    let mut cmd = Cli::command().term_width(WIDTH).max_term_width(WIDTH);
    cmd.build();
    let mut out = String::from(
        "<!-- Generated from the clap definitions of tools/ops (src/cli.rs); do not edit.\n     \
         Regenerate: scripts/regenerate\n     \
         (the test fails when this file differs from the binary's help). -->\n\
         # `sophia-ops` command reference\n\n\
         Every command's `--help`, as the binary prints it. How to get the binary, the permissions it\n\
         needs and where its settings come from: [tools/ops/README.md](../../tools/ops/README.md).\n\n",
    );
    let mut sections = Vec::new();
    collect(&mut cmd, &mut sections);
    out.push_str("## Commands\n\n");
    for (path, about, _) in &sections {
        out.push_str(&format!("- [`{path}`](#{}): {about}\n", anchor(path)));
    }
    for (path, _, help) in &sections {
        out.push_str(&format!("\n## {path}\n\n```text\n{}\n```\n", help.trim_end()));
    }
    out
}

/// Depth first: (`sophia-ops dlq redrive`, its one-line about, its long help).
fn collect(cmd: &mut clap::Command, out: &mut Vec<(String, String, String)>) {
    let path = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_owned();
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    let help = cmd.render_long_help().to_string();
    let help: String = help.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    out.push((path, about.lines().next().unwrap_or("").trim_end_matches('.').to_owned(), help));
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() != "help" {
            collect(sub, out);
        }
    }
}

/// GitHub's heading anchor: lowercase, spaces to `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
