//! `docs/reference/report-document.md`, rendered from the stored report's JSON Schema
//! (`schemas/interview-report-document.schema.json`, itself generated from the Rust type
//! `sophia_reports::report::ReportDocument` and drift-tested there). The field descriptions are the
//! type's doc comments: describe a field there, then run `scripts/regenerate`.

use serde_json::Value;

/// The page, relative to the repository root.
pub const PATH: &str = "docs/reference/report-document.md";

/// The schema the page is rendered from, as checked in.
pub const SCHEMA: &str = include_str!("../schemas/interview-report-document.schema.json");

const INTRO: &str = "<!-- Generated from functions/contracts/schemas/interview-report-document.schema.json\n     \
(the doc comments of sophia_reports::report::ReportDocument); do not edit.\n     \
Regenerate: scripts/regenerate (a test fails when this file differs). -->\n\
# Reference: the stored report (`interviewReports`)\n\n\
One document per interview (unique index on `interviewId`), written by report-generate and read\n\
by the API. This page is rendered from its JSON Schema,\n\
[`functions/contracts/schemas/interview-report-document.schema.json`](../../functions/contracts/schemas/interview-report-document.schema.json),\n\
which is generated from the Rust type `sophia_reports::report::ReportDocument` (BSON dates appear\n\
as `date-time` strings, ObjectIds as 24-hex strings). The API's TypeScript types come from that\n\
schema ([the package](../../clients/typescript/README.md)). Optional fields may be absent or\n\
`null`: both mean unset. The API may create a `NOT_STARTED` placeholder with only `interviewId`,\n\
`organizationId`, `createdAt` and `updatedAt`. The states and who moves them:\n\
[design.md](../design.md#report-generation). Which validation findings a report can carry, and\n\
how the API should show a report marked for review: [report-quality.md](../report-quality.md).\n\n";

/// One line of a description: newlines joined, rustdoc links (`` [`x`] ``) as code, pipes escaped.
fn text(description: &str) -> String {
    let joined = description.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("[`") {
        let after = &rest[at + 1..];
        match after.find("`]") {
            Some(end) if !after[end + 2..].starts_with('(') => {
                out.push_str(&rest[..at]);
                out.push_str(&after[..end + 1]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out.replace('|', "\\|")
}

fn anchor(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// A property's type, in words, with links to the nested types.
fn type_of(node: &Value) -> String {
    if let Some(r) = node["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{})", anchor(name));
    }
    if let Some(any) = node["anyOf"].as_array() {
        return any.iter().map(type_of).collect::<Vec<_>>().join(" or ");
    }
    let types: Vec<&str> = match &node["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types
        .iter()
        .map(|t| match *t {
            "array" => format!("array of {}", type_of(&node["items"])),
            "string" if node["format"] == "date-time" => "date".to_owned(),
            "string" if node["pattern"].as_str().is_some_and(|p| p.contains("{24}")) => "ObjectId".to_owned(),
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

fn fields(out: &mut String, schema: &Value) {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    out.push_str("| field | type | required | meaning |\n| --- | --- | --- | --- |\n");
    for (name, node) in schema["properties"].as_object().into_iter().flatten() {
        let meaning = node["description"].as_str().map(text).unwrap_or_default();
        let required = if required.contains(&name.as_str()) { "yes" } else { "" };
        out.push_str(&format!("| `{name}` | {} | {required} | {meaning} |\n", type_of(node)));
    }
}

fn values(out: &mut String, schema: &Value) {
    out.push_str("| value | meaning |\n| --- | --- |\n");
    if let Some(one_of) = schema["oneOf"].as_array() {
        for v in one_of {
            let meaning = v["description"].as_str().map(text).unwrap_or_default();
            out.push_str(&format!("| `{}` | {meaning} |\n", v["const"].as_str().unwrap_or_default()));
        }
    }
    for v in schema["enum"].as_array().into_iter().flatten() {
        out.push_str(&format!("| `{}` | |\n", v.as_str().unwrap_or_default()));
    }
}

/// The page rendered from `schema` (the checked-in [`SCHEMA`] in production).
pub fn markdown_of(schema: &Value) -> String {
    let mut out = String::from(INTRO);
    out.push_str("## The document\n\n");
    if let Some(d) = schema["description"].as_str() {
        out.push_str(&format!("{}\n\n", text(d)));
    }
    fields(&mut out, schema);
    out.push_str("\n## Nested types\n");
    for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
        out.push_str(&format!("\n### {name}\n\n"));
        if let Some(d) = def["description"].as_str() {
            out.push_str(&format!("{}\n\n", text(d)));
        }
        if def["properties"].is_object() {
            fields(&mut out, def);
        } else {
            values(&mut out, def);
        }
    }
    out
}

/// `docs/reference/report-document.md`.
pub fn markdown() -> String {
    markdown_of(&serde_json::from_str(SCHEMA).expect("the checked-in schema is JSON"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    #[test]
    fn descriptions_become_one_table_cell() {
        assert_eq!(text("a [`crate::prompt`] b\nc | d [x](y) [`k`](z)"), "a `crate::prompt` b c \\| d [x](y) [`k`](z)");
    }

    #[test]
    fn fields_show_their_type_whether_required_and_their_description() {
        let schema = json!({
            "description": "Doc.",
            "required": ["a"],
            "properties": {
                "a": {"type": "string", "pattern": "^[0-9a-fA-F]{24}$", "description": "The id."},
                "b": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}]},
                "c": {"type": ["string", "null"], "format": "date-time"},
                "d": {"type": "array", "items": {"$ref": "#/$defs/Kind"}}
            },
            "$defs": {"Kind": {"oneOf": [{"const": "x", "description": "An x."}], "description": "A kind."}}
        });
        let page = markdown_of(&schema);
        assert!(page.contains("| `a` | ObjectId | yes | The id. |"), "{page}");
        assert!(page.contains("| `b` | [`Kind`](#kind) or null |  |  |"), "{page}");
        assert!(page.contains("| `c` | date or null |"), "{page}");
        assert!(page.contains("| `d` | array of [`Kind`](#kind) |"), "{page}");
        assert!(page.contains("### Kind\n\nA kind.\n\n| value | meaning |\n| --- | --- |\n| `x` | An x. |"), "{page}");
    }

    /// Every field of the stored document is described on the page.
    #[test]
    fn every_top_level_field_has_a_description() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let generic = ["A BSON ObjectId", "A BSON date"];
        for (name, node) in schema["properties"].as_object().unwrap() {
            let d = node["description"].as_str().unwrap_or_default();
            assert!(
                !d.is_empty() && !generic.iter().any(|g| d.starts_with(g)),
                "{name} has no description of its own: {d:?}"
            );
        }
    }

    /// The page is the schema's rendering (`scripts/regenerate` rewrites it).
    #[test]
    fn the_report_document_reference_is_the_rendering_of_the_schema() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(PATH);
        sophia_env::bless_or_assert(&path, &markdown(), "the stored report's schema");
    }
}
