//! docs/runbook.md is tested like code:
//! - its error-kind list is exactly the kinds the functions can store or log
//!   (`sophia_reports::ErrorKind::ALL` and the missing interview's `interview_not_found`);
//! - every `sophia-ops ...` command it names, and every alarm's first command
//!   (docs/reference/alarms.md, generated from infra-pulumi/src/alarms.ts), parses with the CLI's
//!   own clap parser;
//! - every resource name it gives (`sophia-<stage>-...`, `sophia/<stage>/...`, `alias/...`) is one
//!   the stack creates (declarations/queues.json, infra-pulumi/src/*.ts through
//!   infra-pulumi/src/naming.ts).

use std::collections::BTreeSet;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn runbook() -> String {
    read("docs/runbook.md")
}

#[test]
fn the_runbook_lists_exactly_the_error_kinds_the_functions_store() {
    let text = runbook();
    let start = text.find("<!-- error-kinds:start -->").expect("the error-kinds list is marked");
    let end = text.find("<!-- error-kinds:end -->").expect("the error-kinds list ends");
    let listed: BTreeSet<String> = text[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect();
    let mut declared: BTreeSet<String> = sophia_reports::ErrorKind::ALL.iter().map(|k| k.as_str().to_owned()).collect();
    // Not stored (no report is written) but logged with this kind when the interview is missing.
    let missing = sophia_reports::ReportError::InterviewNotFound {
        interview_id: "65a1b2c3d4e5f60718293a4b".parse().unwrap(),
        organization_id: "65a1b2c3d4e5f60718293a4c".parse().unwrap(),
    };
    declared.insert(missing.kind().to_owned());
    assert_eq!(listed, declared, "docs/runbook.md#error-kinds vs the declared kinds");
    let refused = text[start..end].lines().find(|l| l.starts_with("- `credentials_refused`")).unwrap();
    assert!(refused.contains("secrets.md#rotating-a-secret-no-redeploy"), "links the rotation procedure: {refused}");
    assert!(read("docs/secrets.md").contains("## Rotating a secret (no redeploy)"), "the anchor exists");
}

/// Placeholders as the runbook writes them, with a value of the right shape.
fn fill(command: &str) -> String {
    [
        ("<stage>", "dev"),
        ("<queue of the function>", "interview-completed"),
        ("<queue>", "report-generate"),
        ("<interviewId>", "65a1b2c3d4e5f60718293a4b"),
        ("<organizationId>", "65a1b2c3d4e5f60718293a4c"),
        ("<messageId>", "0b5e8f4c-1111-2222-3333-444455556666"),
        ("<n>", "60"),
        ("<durationSeconds>", "600"),
        ("<completedAt>", "2026-12-02T17:30:00Z"),
        ("<text>", "the call dropped"),
    ]
    .iter()
    .fold(command.to_owned(), |c, (from, to)| c.replace(from, to))
}

/// Whitespace-separated words, double quotes grouping.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Every `sophia-ops ...` of a Markdown text: lines of code blocks and inline code spans (which
/// may wrap), without trailing `# comments`. Spans ending in `...` (an elided command) are skipped.
fn commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block && line.trim_start().starts_with("sophia-ops ") {
            let command = line.trim().split("  #").next().unwrap().trim();
            found.push(command.to_owned());
        }
    }
    let flat: String =
        text.split("```").enumerate().filter(|(i, _)| i % 2 == 0).map(|(_, t)| t).collect::<Vec<_>>().join(" ");
    for (i, span) in flat.split('`').enumerate() {
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        if i % 2 == 1 && span.starts_with("sophia-ops ") && !span.ends_with("...") {
            found.push(span);
        }
    }
    found
}

fn assert_parses(command: &str, source: &str) {
    let filled = fill(command);
    let args = words(&filled);
    assert_eq!(args[0], "sophia-ops", "{source}: {command}");
    if let Err(e) = sophia_ops::parse(&args) {
        let benign = matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion);
        assert!(benign, "{source}: `{command}` does not parse:\n{e}");
    }
}

#[test]
fn every_command_the_runbook_names_parses() {
    let text = runbook();
    let found = commands(&text);
    assert!(found.len() >= 25, "the runbook's commands are found: {found:#?}");
    for c in &found {
        assert_parses(c, "docs/runbook.md");
    }
    for needed in
        ["queue status", "queue resume", "report late", "interview unsettled", "report failures", "audit list"]
    {
        assert!(found.iter().any(|c| c.contains(needed)), "the runbook uses `{needed}`");
    }
}

#[test]
fn every_alarms_first_command_parses() {
    let text = read("docs/reference/alarms.md");
    let mut n = 0;
    for line in text.lines() {
        let Some(rest) = line.split("First: ").nth(1) else { continue };
        let command = rest.split(". Runbook: ").next().unwrap();
        assert_parses(command, "docs/reference/alarms.md");
        n += 1;
    }
    assert!(n >= 10, "every alarm row has a first command ({n})");
    assert!(text.contains("First: sophia-ops --stage <stage> queue status interview-completed."));
    assert!(text.contains("First: sophia-ops --stage <stage> report failures."));
    assert!(!text.contains("First: sophia-ops --stage <stage> invariants check."), "a first command shows the problem");
}

/// `unfinishedWorkCommand` of every declared function (declarations/queues.json), which the
/// alarms name as the first command when a function has no queue to look at, is a real command:
/// a new function's is checked before any alarm of a stage names it.
#[test]
fn every_declared_unfinished_work_command_parses() {
    let decl = sophia_declarations::Declaration::embedded();
    for f in &decl.functions {
        assert_parses(&format!("sophia-ops --stage <stage> {}", f.unfinished_work_command), "declarations/queues.json");
    }
    let report = decl.function("report-generate").expect("declared");
    assert_eq!(report.unfinished_work_command, "report failures", "the report function's failures are reports");
}

/// The names the stack gives, with `<stage>` for the stage.
fn stack_names() -> BTreeSet<String> {
    let decl = sophia_declarations::Declaration::embedded();
    let mut names = BTreeSet::new();
    names.insert(format!("sophia-<stage>-{}", decl.operator_audit_log_group));
    for q in &decl.queues {
        names.insert(format!("sophia-<stage>-{}", q.name));
        names.insert(format!("sophia-<stage>-{}", q.dlq_name));
    }
    let sources: Vec<String> = std::fs::read_dir(repo().join("infra-pulumi/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ts"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let queues_json = read("declarations/queues.json");
    // Functions: every "name" of queues.json's functions (and queues: harmless overlap).
    for part in queues_json.split("\"name\"").skip(1) {
        if let Some(name) = part.split('"').nth(1) {
            names.insert(format!("sophia-<stage>-{name}"));
        }
    }
    for src in &sources {
        for call in ["policyName(\"", "topicName(\"", "roleName(\""] {
            for part in src.split(call).skip(1) {
                names.insert(format!("sophia-<stage>-{}", part.split('"').next().unwrap()));
            }
        }
        // `alias/${naming.prefix}-secrets`
        for part in src.split("`alias/${naming.prefix}-").skip(1) {
            names.insert(format!("alias/sophia-<stage>-{}", part.split('`').next().unwrap()));
        }
    }
    names
}

#[test]
fn every_resource_name_in_the_runbook_is_one_the_stack_creates() {
    let text = runbook();
    let known = stack_names();
    assert!(known.contains("alias/sophia-<stage>-secrets"), "{known:#?}");
    let sources: String =
        ["infra-pulumi/src/environment.ts", "infra-pulumi/src/secrets.ts"].iter().map(|p| read(p)).collect();
    let is_name_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '*';
    let mut checked = 0;
    for prefix in ["sophia-<stage>-", "alias/sophia-<stage>", "sophia/<stage>/"] {
        for (at, _) in text.match_indices(prefix) {
            if prefix == "sophia-<stage>-" && text[..at].ends_with("alias/") {
                continue; // the KMS alias, checked whole below
            }
            let tail: String = text[at + prefix.len()..].chars().take_while(|c| is_name_char(*c)).collect();
            let tail = tail.trim_end_matches('-');
            if tail.contains('*') || (tail.is_empty() && !prefix.starts_with("alias/")) {
                continue; // a wildcard or the bare prefix
            }
            checked += 1;
            let name = format!("{prefix}{tail}");
            match prefix {
                "sophia/<stage>/" => assert!(
                    sources.contains(&format!("\"{tail}\"")) || sources.contains(&format!("{tail}:")),
                    "the secret {name} is not one the stack creates"
                ),
                _ => assert!(known.contains(&name), "{name} is not a name the stack creates ({known:?})"),
            }
        }
    }
    assert!(checked >= 10, "names were found ({checked})");
}
