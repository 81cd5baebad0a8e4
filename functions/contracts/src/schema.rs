//! JSON Schema documents for every message, generated from the Rust types. The checked-in copies
//! under `functions/contracts/schemas/` are what the TypeScript API validates its publishes
//! against; `tests::checked_in_schemas_match_the_types` fails when they drift (regenerate with
//! `scripts/regenerate`, which sets `SOPHIA_BLESS_SCHEMAS=1`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use crate::messages::FailedTag;
use crate::{
    DurationSeconds, FAILURE_REASON_MAX_CHARS, InterviewCompleted, InterviewFailed, InterviewId, MessageAttributes,
    ObjectIdString, OrganizationId, ReportGenerate, Timestamp,
};

pub const OBJECT_ID_PATTERN: &str = "^[0-9a-fA-F]{24}$";

macro_rules! inline_schema {
    ($ty:ty, $name:literal, $schema:tt) => {
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

inline_schema!(ObjectIdString, "ObjectId", {"type": "string", "pattern": OBJECT_ID_PATTERN});
inline_schema!(InterviewId, "InterviewId", {"type": "string", "pattern": OBJECT_ID_PATTERN, "description": "Interview _id, 24 hex characters"});
inline_schema!(OrganizationId, "OrganizationId", {"type": "string", "pattern": OBJECT_ID_PATTERN, "description": "Organization _id, 24 hex characters"});
inline_schema!(Timestamp, "Timestamp", {"type": "string", "format": "date-time", "description": "ISO-8601 datetime with a time zone, e.g. 2026-12-02T17:30:00.000Z"});
inline_schema!(DurationSeconds, "DurationSeconds", {"type": "number", "minimum": 0, "maximum": DurationSeconds::MAX, "description": "Seconds the interview lasted; fractions allowed, billed by floor(durationSeconds / 60)"});
inline_schema!(FailedTag, "FailedTag", {"type": "string", "const": "interview.failed"});

/// The schema of `InterviewFailed::failure_reason` (a `String` bounded at parse).
pub struct FailureReasonText;
inline_schema!(FailureReasonText, "FailureReason", {"type": "string", "maxLength": FAILURE_REASON_MAX_CHARS, "description": "Free text for the record (never logged), at most 4096 characters (Unicode code points)"});

// The message structs' schemas follow their serde attributes field by field.
macro_rules! struct_schema {
    ($ty:ty, $name:literal, [$(($field:literal, $fty:ty)),* $(,)?], $desc:literal) => {
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                let mut properties = serde_json::Map::new();
                $( properties.insert($field.to_owned(), generator.subschema_for::<$fty>().to_value()); )*
                json_schema!({
                    "description": $desc,
                    "type": "object",
                    "properties": properties,
                    "required": [$($field),*],
                })
            }
        }
    };
}

struct_schema!(
    InterviewCompleted,
    "InterviewCompleted",
    [
        ("interviewId", InterviewId),
        ("organizationId", OrganizationId),
        ("completedAt", Timestamp),
        ("durationSeconds", DurationSeconds),
    ],
    "interview.completed body (no `type` key). Extra fields are ignored by the consumer."
);
struct_schema!(
    InterviewFailed,
    "InterviewFailed",
    [
        ("type", FailedTag),
        ("interviewId", InterviewId),
        ("organizationId", OrganizationId),
        ("failureReason", FailureReasonText),
        ("failedAt", Timestamp),
    ],
    "interview.failed body. Extra fields are ignored by the consumer."
);
struct_schema!(
    ReportGenerate,
    "ReportGenerate",
    [("interviewId", InterviewId), ("organizationId", OrganizationId),],
    "report.generate body. Extra fields are ignored by the consumer."
);

/// Every schema document: file name and content.
pub fn documents() -> Vec<(&'static str, Value)> {
    let mut completed = schemars::schema_for!(InterviewCompleted).to_value();
    // The union's rule: a body with a `type` key is never the completed shape.
    completed["not"] = serde_json::json!({"required": ["type"]});
    let failed = schemars::schema_for!(InterviewFailed).to_value();
    let mut union = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "InterviewQueueMessage",
        "description": "Any body on the interview-completed queue: a body with `type` is the failed shape, otherwise the completed shape.",
    });
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("$schema");
        }
        v
    };
    union["oneOf"] = serde_json::json!([strip(&completed), strip(&failed)]);
    vec![
        ("interview-completed.schema.json", completed),
        ("interview-failed.schema.json", failed),
        ("interview-queue-message.schema.json", union),
        ("report-generate.schema.json", schemars::schema_for!(ReportGenerate).to_value()),
        ("message-attributes.schema.json", schemars::schema_for!(MessageAttributes).to_value()),
    ]
}

/// The text written to disk for one document.
pub fn render(doc: &Value) -> String {
    let mut s = serde_json::to_string_pretty(doc).expect("schemas serialise");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
    }

    #[test]
    fn checked_in_schemas_match_the_types() {
        let bless = std::env::var_os("SOPHIA_BLESS_SCHEMAS").is_some();
        for (name, doc) in documents() {
            let path = dir().join(name);
            let want = render(&doc);
            if bless {
                std::fs::create_dir_all(dir()).unwrap();
                std::fs::write(&path, &want).unwrap();
                continue;
            }
            let have = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{} is missing ({e}); run scripts/regenerate", path.display()));
            assert_eq!(have, want, "{name} drifted from the Rust types; run scripts/regenerate and review the diff");
        }
    }

    #[test]
    fn completed_schema_names_every_wire_field_as_required() {
        let (_, doc) = documents().into_iter().find(|(n, _)| *n == "interview-completed.schema.json").unwrap();
        let required: Vec<&str> = doc["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(required, ["interviewId", "organizationId", "completedAt", "durationSeconds"]);
        assert_eq!(doc["properties"]["interviewId"]["pattern"], OBJECT_ID_PATTERN);
        assert_eq!(doc["not"]["required"][0], "type");
    }

    #[test]
    fn failed_schema_bounds_the_failure_reason_as_the_parser_does() {
        for file in ["interview-failed.schema.json", "interview-queue-message.schema.json"] {
            let (_, doc) = documents().into_iter().find(|(n, _)| *n == file).unwrap();
            let text = doc.to_string();
            assert!(text.contains(&format!(r#""maxLength":{FAILURE_REASON_MAX_CHARS}"#)), "{file}: {text}");
            assert!(
                text.contains(&format!("at most {FAILURE_REASON_MAX_CHARS} characters")),
                "{file}: the description says it"
            );
        }
    }

    /// The schema's enum is derived from every variant of `EventType`, so it is also the check
    /// that `EventType::ALL` (written out) names every variant: a new event type missing from it
    /// fails here (docs/contributing.md, the new queue checklist).
    #[test]
    fn attribute_schema_lists_the_three_event_types() {
        let (_, doc) = documents().into_iter().find(|(n, _)| *n == "message-attributes.schema.json").unwrap();
        let listed: Vec<&str> = doc["$defs"]["EventType"]["enum"]
            .as_array()
            .expect("EventType is a string enum")
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let all: Vec<&str> = crate::EventType::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(listed, all, "EventType::ALL vs the variants the schema derives");
    }
}
