//! Functions fit a screen on the product and operator paths: no non-test Rust function under
//! `functions/` or `tools/` is longer than [`MAX_LINES`] lines, counted from the line of its `fn`
//! to the line of its closing brace (docs/contributing.md, "Function size"). Test code is not
//! counted: a file is read up to its first `#[cfg(test)]`, and `tests/` and `benches/` folders
//! are skipped. A function that is a single table or declaration may be named in [`EXCEPTIONS`]
//! with the reason; today none is.

use std::path::{Path, PathBuf};

/// The longest a function may be, in lines.
const MAX_LINES: usize = 80;

/// Functions allowed over [`MAX_LINES`]: (file, function name, why it is one table or
/// declaration that splitting would only scatter). Keep it empty unless that is true.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// A function found in a file: its name, the line of its `fn` (1-based) and its length in lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FnSpan {
    name: String,
    line: usize,
    lines: usize,
}

/// `source` with every comment, string and character literal blanked out (newlines kept), so
/// that only code's braces and `fn` keywords remain.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |out: &mut String, text: &[char]| {
        out.extend(text.iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let at = |k: usize| rest.get(k).copied().unwrap_or('\0');
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if at(0) == '/' && at(1) == '/' {
            let end = rest.iter().position(|c| *c == '\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if at(0) == '/' && at(1) == '*' {
            let (mut depth, mut k) = (0usize, 0usize);
            while k < rest.len() {
                if at(k) == '/' && at(k + 1) == '*' {
                    depth += 1;
                    k += 2;
                } else if at(k) == '*' && at(k + 1) == '/' {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank(&mut out, &rest[..k.min(rest.len())]);
            i += k;
        } else if let Some(len) = raw_string_len(rest).filter(|_| !ident_before) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if at(0) == '"' {
            let mut k = 1;
            while k < rest.len() && at(k) != '"' {
                k += if at(k) == '\\' { 2 } else { 1 };
            }
            let len = (k + 1).min(rest.len());
            blank(&mut out, &rest[..len]);
            i += len;
        } else if at(0) == '\'' && (at(1) == '\\' || at(2) == '\'') {
            // A character literal ('{', '\n', '\u{7b}'); a lifetime ('a) has no closing quote.
            let len = if at(1) == '\\' {
                rest.get(3..).and_then(|r| r.iter().position(|c| *c == '\'')).map_or(1, |p| p + 4)
            } else {
                3
            };
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            out.push(at(0));
            i += 1;
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) starting `rest`.
fn raw_string_len(rest: &[char]) -> Option<usize> {
    let start = if rest.first() == Some(&'b') { 1 } else { 0 };
    if rest.get(start) != Some(&'r') {
        return None;
    }
    let hashes = rest[start + 1..].iter().take_while(|c| **c == '#').count();
    let open = start + 1 + hashes;
    if rest.get(open) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    (open + 1..rest.len()).find(|k| rest[*k..].starts_with(&close)).map(|k| k + close.len())
}

/// Every function with a body in `source` (its code before the first `#[cfg(test)]`).
fn functions(source: &str) -> Vec<FnSpan> {
    let source = source.split("#[cfg(test)]").next().unwrap_or_default();
    let code: Vec<char> = code_only(source).chars().collect();
    let line_of = |k: usize| code[..k].iter().filter(|c| **c == '\n').count() + 1;
    let word = |k: usize| k < code.len() && (code[k].is_alphanumeric() || code[k] == '_');
    let mut found = Vec::new();
    let mut i = 0;
    while i + 2 < code.len() {
        let is_fn = code[i] == 'f' && code[i + 1] == 'n' && !(i > 0 && word(i - 1)) && !word(i + 2);
        if !is_fn {
            i += 1;
            continue;
        }
        let mut k = i + 2;
        while k < code.len() && code[k].is_whitespace() {
            k += 1;
        }
        let name_start = k;
        while word(k) {
            k += 1;
        }
        if k == name_start {
            i += 2; // `fn(` of a function pointer type
            continue;
        }
        let name: String = code[name_start..k].iter().collect();
        // The body's `{`: the first at bracket depth 0 (a `;` there first: no body).
        let mut depth = 0i32;
        let mut body = None;
        while k < code.len() {
            match code[k] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => break,
                '{' if depth == 0 => {
                    body = Some(k);
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        if let Some(open) = body {
            let mut braces = 0i32;
            let mut close = open;
            for (j, c) in code.iter().enumerate().skip(open) {
                match c {
                    '{' => braces += 1,
                    '}' => braces -= 1,
                    _ => {}
                }
                if braces == 0 {
                    close = j;
                    break;
                }
            }
            let line = line_of(i);
            found.push(FnSpan { name, line, lines: line_of(close) - line + 1 });
        }
        i = name_start;
    }
    found
}

/// Every `.rs` file under `dir` that is not test code (none under a `tests/` or `benches/` folder).
fn product_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut all = Vec::new();
    crate::layout::rust_files_under(dir, &mut all);
    let test_code = |f: &PathBuf| {
        f.strip_prefix(dir).unwrap_or(f).components().any(|c| c.as_os_str() == "tests" || c.as_os_str() == "benches")
    };
    out.extend(all.into_iter().filter(|f| !test_code(f)));
}

#[test]
fn no_product_or_operator_function_is_longer_than_a_screen() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    product_files(&root.join("functions"), &mut files);
    product_files(&root.join("tools"), &mut files);
    assert!(files.len() > 50, "the crates' sources were found: {}", files.len());
    let mut too_long = Vec::new();
    let mut excepted = Vec::new();
    for file in &files {
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{shown}: {e}"));
        for f in functions(&source).into_iter().filter(|f| f.lines > MAX_LINES) {
            if EXCEPTIONS.iter().any(|(path, name, _)| *path == shown && *name == f.name) {
                excepted.push((shown.clone(), f.name));
            } else {
                too_long.push(format!("{shown}:{} fn {} ({} lines)", f.line, f.name, f.lines));
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "functions over {MAX_LINES} lines: split each into named pieces (or, for a single table or declaration, \
         name it in EXCEPTIONS and in docs/contributing.md, \"Function size\"):\n{}",
        too_long.join("\n")
    );
    let stale: Vec<_> =
        EXCEPTIONS.iter().filter(|(path, name, _)| !excepted.iter().any(|(p, n)| p == path && n == name)).collect();
    assert!(stale.is_empty(), "exceptions that are no longer over {MAX_LINES} lines (remove them): {stale:?}");
}

#[test]
fn the_counter_sees_code_only() {
    let source = r##"
fn short() {
    let brace = '{';
    let quote = '\'';
    let text = "}}} fn fake() {";
    let raw = r#"{ "#;
    // fn in_comment() {
    /* } */
}

pub(crate) async fn generic<'a, T: Into<Vec<u8>>>(x: &'a [u8; 4], f: fn(u8) -> u8) -> Result<(), [u8; 2]>
where
    T: Clone,
{
    if true {
        let _ = x;
    }
}

fn declared(x: u8);

#[cfg(test)]
mod tests {
    fn not_counted() {}
}
"##;
    let found = functions(source);
    assert_eq!(
        found,
        vec![FnSpan { name: "short".into(), line: 2, lines: 8 }, FnSpan { name: "generic".into(), line: 11, lines: 8 },]
    );
}
