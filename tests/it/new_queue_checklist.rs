//! docs/contributing.md's "A new queue or function: the checklist" is the truth, and stays so:
//!
//! - every row names a file that exists (a new crate's `<name>` excepted), a symbol in it, and what
//!   forces the change: the compiler, a test that exists (a Rust `fn` or a TypeScript `test("...")`
//!   title), the lint, the declaration itself;
//! - every place in the code that dispatches on a queue or a function is a row: a `match` arm on
//!   the generated `Queue` or `Function` or on `EventType`, an `is(Queue::...)`, an `==` with
//!   `Queue::`/`Function::`, a comparison with a declared queue or function name, a table keyed by
//!   declared names, a hand-written list of the functions. A new such place fails here until it
//!   is listed (and, better, made a `match` with no catch-all or a declared property);
//! - no `match` on those enums has a catch-all (`_ =>`): the arm a new queue would silently take;
//! - every declared function is a workspace crate; no workflow or script lists the functions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sophia_contracts::EventType;
use sophia_declarations::{Declaration, Function, Queue};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One row of the checklist table.
#[derive(Debug)]
struct Row {
    file: String,
    symbol: Option<String>,
    forced_by: String,
}

/// The spans between backticks of a cell.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The spans between double quotes of a cell (TypeScript test titles).
fn quoted(cell: &str) -> Vec<String> {
    cell.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

fn checklist() -> Vec<Row> {
    let text = read(&repo().join("docs/contributing.md"));
    let start = text.find("## A new queue or function: the checklist").expect("docs/contributing.md has the checklist");
    let section = &text[start..];
    let section = section[3..].find("\n## ").map_or(section, |end| &section[..end + 3]);
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() != 5 || !cells[0].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let file = code_spans(cells[1]).into_iter().next().unwrap_or_else(|| panic!("row without a file: {line}"));
        let symbol = code_spans(cells[2]).into_iter().next();
        rows.push(Row { file, symbol, forced_by: cells[3].to_owned() });
    }
    assert!(rows.len() >= 20, "the checklist table is found: {rows:#?}");
    rows
}

/// Files under `dir` (recursively) whose name ends with one of `exts`, skipping build output,
/// dependencies and generated code.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", "node_modules", "generated", "dist", ".local"].contains(&name.as_str()) {
                files(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

fn under(dirs: &[&str], exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in dirs {
        files(&repo().join(d), exts, &mut out);
    }
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo()).unwrap_or(path).to_string_lossy().into_owned()
}

/// The declared names: queue keys, names and DLQ names, function names; and the variants of the
/// generated `Queue` and `Function` and of `EventType`.
struct Declared {
    names: BTreeSet<String>,
    queue_keys: BTreeSet<String>,
    functions: BTreeSet<String>,
    variants: Vec<(&'static str, BTreeSet<String>)>,
}

impl Declared {
    fn embedded() -> Self {
        let d = Declaration::embedded();
        let mut names = BTreeSet::new();
        for q in &d.queues {
            names.extend([q.key.clone(), q.name.clone(), q.dlq_name.clone()]);
        }
        let functions: BTreeSet<String> = d.functions.iter().map(|f| f.name.clone()).collect();
        names.extend(functions.iter().cloned());
        let debug = |v: &dyn std::fmt::Debug| format!("{v:?}");
        Declared {
            names,
            queue_keys: d.queues.iter().map(|q| q.key.clone()).collect(),
            functions,
            variants: vec![
                ("Queue", Queue::ALL.iter().map(|q| debug(q)).collect()),
                ("Function", Function::ALL.iter().map(|f| debug(f)).collect()),
                ("EventType", EventType::ALL.iter().map(|e| debug(e)).collect()),
            ],
        }
    }

    /// `Queue::ReportGenerate`, `sophia_declarations::Function::InterviewFailed`, `Self::...` is not.
    fn is_variant_path(&self, text: &str) -> bool {
        let text = text.trim();
        if text.is_empty() || !text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            return false;
        }
        self.variants
            .iter()
            .any(|(ty, vs)| vs.iter().any(|v| text == format!("{ty}::{v}") || text.ends_with(&format!("::{ty}::{v}"))))
    }

    /// A `match` arm on a declared enum: `Queue::A => ...`, `EventType::A | EventType::B => ...`.
    fn is_enum_arm(&self, line: &str) -> bool {
        line.split_once("=>").is_some_and(|(head, _)| head.split('|').all(|p| self.is_variant_path(p)))
    }

    fn quoted_functions(&self, line: &str) -> usize {
        self.functions.iter().filter(|f| line.contains(&format!("\"{f}\""))).count()
    }

    /// A comparison with a declared name in either order (`== "report-generate"`, `"x" !==`).
    fn compares_a_name(&self, line: &str) -> bool {
        self.names.iter().any(|n| {
            let q = format!("\"{n}\"");
            ["==", "!=", "===", "!=="]
                .iter()
                .any(|op| line.contains(&format!("{op} {q}")) || line.contains(&format!("{q} {op}")))
        })
    }

    /// Why a Rust line is a per-queue or per-function dispatch, if it is one.
    fn rust_dispatch(&self, line: &str) -> Option<&'static str> {
        let t = line.trim();
        if t.starts_with("//") {
            return None;
        }
        if self.is_enum_arm(t) {
            return Some("a match arm on a declared enum");
        }
        if t.contains(".is(") && t.split(".is(").skip(1).any(|rest| rest.contains("Queue::")) {
            return Some("an is(Queue::...) comparison");
        }
        let is_path_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
        let compared_with_enum = ["== ", "!= "].iter().any(|op| {
            t.split(op).skip(1).any(|rest| {
                let path = rest.split(|c: char| !is_path_char(c)).next().unwrap_or_default();
                path.contains("Queue::") || path.contains("Function::")
            })
        });
        if compared_with_enum {
            return Some("an == with a declared enum");
        }
        if self.compares_a_name(t) {
            return Some("a comparison with a declared name");
        }
        if self.names.iter().any(|n| t.starts_with(&format!("\"{n}\" =>")) || t.starts_with(&format!("\"{n}\" |"))) {
            return Some("a match arm on a declared name");
        }
        if self.quoted_functions(t) >= 2 {
            return Some("a hand-written list of the functions");
        }
        None
    }

    /// Why a TypeScript line is a per-queue or per-function dispatch, if it is one.
    fn ts_dispatch(&self, line: &str) -> Option<&'static str> {
        let t = line.trim();
        if t.starts_with("//") || t.starts_with('*') || t.starts_with("/*") {
            return None;
        }
        if self.compares_a_name(t) {
            return Some("a comparison with a declared name");
        }
        let indexed = self
            .names
            .iter()
            .any(|n| t.split(&format!("[\"{n}\"]")).count() > 1 && !t.contains(&format!("schemas[\"{n}\"]")));
        if indexed || self.queue_keys.iter().any(|k| t.contains(&format!(".{k}.")) || t.contains(&format!(".{k}["))) {
            return Some("a read keyed by a declared name");
        }
        let entry = self.names.iter().any(|n| t.starts_with(&format!("\"{n}\":")))
            || self.queue_keys.iter().any(|k| t.starts_with(&format!("{k}:")));
        if entry {
            return Some("a table keyed by declared names");
        }
        if self.names.iter().any(|n| t.contains(&format!("= \"{n}\";"))) {
            return Some("a constant holding a declared name");
        }
        if self.queue_keys.iter().any(|k| t.contains(&format!("\"{k}\""))) {
            return Some("a declared queue key written out");
        }
        if self.quoted_functions(t) >= 2 {
            return Some("a hand-written list of the functions");
        }
        None
    }
}

/// Production Rust: functions/, tools/, declarations/; each file up to its `#[cfg(test)]`.
fn production_rust() -> Vec<(String, String)> {
    under(&["functions", "tools", "declarations"], &[".rs"])
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == "tests" || c.as_os_str() == "benches"))
        .map(|p| {
            let text = read(&p);
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
            (relative(&p), code)
        })
        .collect()
}

/// Production TypeScript: the Pulumi programs and the package's sources (not generated code).
fn production_ts() -> Vec<(String, String)> {
    under(&["infra-pulumi/src", "infra-bootstrap/src", "clients/typescript/src"], &[".ts"])
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".d.ts"))
        .map(|p| (relative(&p), read(&p)))
        .collect()
}

/// Every dispatch the scan finds: `file:line: why: text`, and the set of files.
fn dispatches(declared: &Declared) -> (Vec<String>, BTreeSet<String>) {
    let mut found = Vec::new();
    let mut hit_files = BTreeSet::new();
    let sources = production_rust()
        .into_iter()
        .map(|(f, t)| (f, t, true))
        .chain(production_ts().into_iter().map(|(f, t)| (f, t, false)));
    for (file, text, rust) in sources {
        for (n, line) in text.lines().enumerate() {
            let why = if rust { declared.rust_dispatch(line) } else { declared.ts_dispatch(line) };
            if let Some(why) = why {
                found.push(format!("{file}:{}: {why}: {}", n + 1, line.trim()));
                hit_files.insert(file.clone());
            }
        }
    }
    (found, hit_files)
}

#[test]
fn the_checklist_names_files_symbols_and_tests_that_exist() {
    let rows = checklist();
    let rust_sources: Vec<String> =
        under(&["functions", "tools", "declarations", "tests"], &[".rs"]).iter().map(|p| read(p)).collect();
    let ts_tests: Vec<String> =
        under(&["infra-pulumi/test", "infra-bootstrap/test", "clients/typescript/test"], &[".ts"])
            .iter()
            .map(|p| read(p))
            .collect();
    let mut problems = Vec::new();
    for row in &rows {
        let path = repo().join(&row.file);
        if row.file.contains('<') {
            assert!(row.forced_by.starts_with("test "), "a new file is forced by a test: {row:?}");
        } else if !path.exists() {
            problems.push(format!("{}: no such file", row.file));
            continue;
        } else if let Some(symbol) = &row.symbol
            && path.is_file()
            && !read(&path).contains(symbol.as_str())
        {
            problems.push(format!("{}: no `{symbol}` in it", row.file));
        }
        let kind = row.forced_by.split([' ', '`']).next().unwrap_or_default();
        match kind {
            "compiler" | "declaration" => {}
            "the" if row.forced_by == "the change" => {}
            "lint" => {
                let lint = read(&repo().join("scripts/lint"));
                for command in code_spans(&row.forced_by) {
                    if !lint.contains(&command) {
                        problems.push(format!("{}: scripts/lint does not run `{command}`", row.file));
                    }
                }
            }
            "test" => {
                let rust_names = code_spans(&row.forced_by);
                let ts_titles = quoted(&row.forced_by);
                if rust_names.is_empty() && ts_titles.is_empty() {
                    problems.push(format!("{}: `{}` names no test", row.file, row.forced_by));
                }
                for name in rust_names {
                    let defined = format!("fn {name}(");
                    if !rust_sources.iter().any(|s| s.contains(&defined)) {
                        problems.push(format!("{}: no Rust test `{name}`", row.file));
                    }
                }
                for title in ts_titles {
                    let defined = format!("test(\"{title}");
                    if !ts_tests.iter().any(|s| s.contains(&defined)) {
                        problems.push(format!("{}: no TypeScript test titled \"{title}...\"", row.file));
                    }
                }
            }
            _ => problems.push(format!(
                "{}: forced by `{}`: say compiler, test `name` / \"title\", lint `command`, declaration or the change",
                row.file, row.forced_by
            )),
        }
    }
    assert!(problems.is_empty(), "docs/contributing.md, the new queue checklist:\n{}", problems.join("\n"));
}

#[test]
fn every_dispatch_on_a_queue_or_function_is_on_the_checklist() {
    let declared = Declared::embedded();
    let listed: BTreeSet<String> = checklist().into_iter().map(|r| r.file).collect();
    let (found, files) = dispatches(&declared);
    // The scan sees what it is for (if these went, it would be blind, not the code clean).
    for expected in ["tools/ops/src/contract.rs", "tools/local/src/handlers.rs", "infra-pulumi/src/wiring.ts"] {
        assert!(files.contains(expected), "the scan finds {expected}: {found:#?}");
    }
    let unlisted: Vec<&String> =
        found.iter().filter(|f| !listed.contains(f.split(':').next().unwrap_or_default())).collect();
    assert!(
        unlisted.is_empty(),
        "places that decide by queue or function and are not in docs/contributing.md's new queue checklist \
         (make each a `match` with no catch-all on the generated enum, or a declared property of \
         declarations/queues.json, and add a row saying what forces it):\n{}",
        unlisted.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_match_on_a_declared_enum_has_a_catch_all() {
    let declared = Declared::embedded();
    let mut found = Vec::new();
    for (file, code) in production_rust() {
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !declared.is_enum_arm(line.trim()) {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            for (j, next) in lines.iter().enumerate().skip(i + 1) {
                if next.trim().is_empty() {
                    continue;
                }
                let next_indent = next.len() - next.trim_start().len();
                if next_indent < indent {
                    break;
                }
                let t = next.trim_start();
                if next_indent == indent && (t.starts_with("_ =>") || t.starts_with("_ if ")) {
                    found.push(format!("{file}:{}: {}", j + 1, t));
                }
            }
        }
    }
    found.dedup();
    assert!(
        found.is_empty(),
        "a catch-all arm on Queue, Function or EventType: a new one would take it silently:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_declared_function_is_a_workspace_crate() {
    let workspace = read(&repo().join("Cargo.toml"));
    let mut problems = Vec::new();
    for f in &Declaration::embedded().functions {
        let dir = format!("functions/lambdas/{}", f.name);
        let manifest = repo().join(&dir).join("Cargo.toml");
        if !manifest.is_file() {
            problems.push(format!("{dir}/Cargo.toml is missing"));
        } else if !read(&manifest).contains(&format!("name = \"{}\"", f.name)) {
            problems.push(format!("{dir}/Cargo.toml: the package is not named {}", f.name));
        }
        if !workspace.contains(&format!("\"{dir}\"")) {
            problems.push(format!("Cargo.toml: {dir} is not a workspace member"));
        }
    }
    assert!(problems.is_empty(), "declarations/queues.json's functions vs the crates:\n{}", problems.join("\n"));
}

#[test]
fn no_workflow_lists_the_functions_by_hand() {
    let declared = Declared::embedded();
    let mut texts = under(&[".github/workflows"], &[".yml", ".yaml"]);
    texts.extend(under(&["scripts"], &[""]).into_iter().filter(|p| p.parent() == Some(&repo().join("scripts"))));
    assert!(texts.iter().any(|p| p.ends_with("rust.yml")), "the workflows are read");
    let mut found = Vec::new();
    for path in &texts {
        for (n, line) in read(path).lines().enumerate() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            let named = declared.functions.iter().filter(|f| {
                line.split_whitespace().collect::<Vec<_>>().windows(2).any(|w| w[0] == "-p" && w[1] == f.as_str())
            });
            if named.count() > 0 || declared.quoted_functions(line) >= 2 {
                found.push(format!("{}:{}: {}", relative(path), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a hand-written list of the functions (read them with `lambda_functions` of scripts/lib.sh):\n{}",
        found.join("\n")
    );
}

/// The scan recognises the silent places this test exists for, as they were written before.
#[test]
fn the_scan_finds_the_silent_places_it_is_for() {
    let d = Declared::embedded();
    let rust = [
        "    if queue.is(sophia_declarations::Queue::ReportGenerate) {",
        "            Queue::ReportGenerate => backoff.with_requeue(Requeue::default()),",
        "        EventType::InterviewCompleted | EventType::InterviewFailed => {",
        "            \"interview-completed\" => world.completed_batch(&orgs).await?,",
        "    let records_per_run = if function == \"report-generate\" { 1 } else { orgs.len() };",
        "pub const FUNCTIONS: [&str; 3] = [\"interview-completed\", \"report-generate\", \"interview-failed\"];",
        "    if q == Queue::ReportGenerate {",
    ];
    for line in rust {
        assert!(d.rust_dispatch(line).is_some(), "not seen: {line}");
    }
    let ts = [
        "      s.name === \"report-generate\"",
        "  return openAiBudgetProblems(raw, maximumConcurrency[\"reportGenerate\"]);",
        "  \"report-generate\": { openai: true, resumeBucket: true },",
        "  reportGenerate: [\"report.generate\"],",
        "export const MIGRATION_FUNCTION = \"interview-completed\";",
        "export const REQUEUES_TO_OWN_QUEUE: readonly string[] = [\"reportGenerate\", \"interviewCompleted\"];",
    ];
    for line in ts {
        assert!(d.ts_dispatch(line).is_some(), "not seen: {line}");
    }
    let not = [
        "        Self::Report => world.report_batch(orgs[0]).await,",
        "    let urls = QueueUrls::from_lookup(|name| env.get(name).cloned());",
        "    // if function == \"report-generate\"",
        "        Queue::ALL.into_iter().find(|q| q.key() == key)",
    ];
    for line in not {
        assert!(d.rust_dispatch(line).is_none(), "seen wrongly: {line}");
    }
}
