//! Reading the MongoDB documents that other services write.
//!
//! The TypeScript API (Mongoose), operators in the mongo shell and documents older than this code
//! write the same collections this system reads (docs/design.md, "Documents written by other
//! services"). They differ from what our own code writes in three ways, and every read model of
//! the workspace handles them through this crate, the one shared approach:
//!
//! - **absent and `null` mean the same** for optional fields: use `Option<T>` (serde maps `null`
//!   to `None`), or [`null_as_default`] for a field whose absence means its default (a `null`
//!   sub-document, list or string);
//! - **every BSON numeric type** holding an integral value is an integer: the mongo shell writes
//!   every number literal as a double (`10` is stored as `10.0`), Mongoose writes `Int32`, the
//!   Rust driver `Int64`. Use [`int::i64`] / [`int::opt_i64`] on integer fields; a non-integral
//!   or non-finite value is an error;
//! - **a document that still cannot be read** is a [`DocumentError`] naming the collection, the
//!   document's `_id` and the field path, *never the value*: a decode error of the driver quotes
//!   the offending value (a transcript stored as a string would be logged whole). Decode with
//!   [`decode`] (fetch the raw `bson::Document`, then decode), never with a typed collection.
//!
//! Unknown extra fields are ignored (no read model denies them).

use std::fmt;

use bson::{Bson, Document};
use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};

pub mod erasure;
pub mod int;

/// What was wrong with a field, in words that never include its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A required field is absent (or `null` where no default exists).
    Missing,
    /// The field holds a value of another type or out of range.
    Invalid,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Missing => "is missing",
            Self::Invalid => "has a type or value this service cannot read",
        })
    }
}

/// A stored document that cannot be read as the read model expects. Permanent: retrying the
/// same read gives the same error, so consumers treat it as inconsistent data (retry, then the
/// DLQ for an operator), never as a database outage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{collection} document {id}: field `{field}` {problem}{expected}")]
pub struct DocumentError {
    /// The collection the document was read from.
    pub collection: &'static str,
    /// The document's `_id` (hex for an ObjectId), or `?` when the `_id` itself is unreadable.
    pub id: String,
    /// The dotted path of the offending field (`proctoring.transcript.3.text`).
    pub field: String,
    pub problem: Problem,
    /// What the read model expected (", expected a string"), from the type, never from the data.
    expected: String,
}

impl DocumentError {
    /// An error for a field checked after decoding (for example a sum that overflows).
    pub fn invalid(collection: &'static str, id: impl fmt::Display, field: impl Into<String>, expected: &str) -> Self {
        Self {
            collection,
            id: id.to_string(),
            field: field.into(),
            problem: Problem::Invalid,
            expected: if expected.is_empty() { String::new() } else { format!(", expected {expected}") },
        }
    }

    /// The expectation part of the message (empty when unknown).
    pub fn expected(&self) -> &str {
        self.expected.trim_start_matches(", expected ")
    }
}

/// Decodes a raw document into the read model `T`. The error names the field path and what was
/// expected, never the stored value.
pub fn decode<T: DeserializeOwned>(collection: &'static str, doc: Document) -> Result<T, DocumentError> {
    let id = match doc.get("_id") {
        Some(Bson::ObjectId(oid)) => oid.to_hex(),
        Some(Bson::String(s)) if s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic()) => s.clone(),
        Some(_) => "?".to_owned(),
        None => "(no _id)".to_owned(),
    };
    let deserializer = bson::Deserializer::new(Bson::Document(doc));
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let mut field = e.path().to_string();
        let message = e.inner().to_string();
        // serde's messages: "missing field `name`" (the name is the model's, never data), or
        // "invalid type: <unexpected>, expected <what>" / "invalid value: ..., expected ...",
        // whose <unexpected> part quotes the value: only the part after the last ", expected "
        // comes from the model's own `expecting`, so only that is kept.
        let (problem, expected) = if let Some(name) = missing_field_name(&message) {
            if field == "." || field.is_empty() {
                field = name.to_owned();
            } else {
                field = format!("{field}.{name}");
            }
            (Problem::Missing, String::new())
        } else {
            let expected = message
                .rsplit_once(", expected ")
                .map(|(_, what)| sanitize_expected(what))
                .filter(|what| !what.is_empty())
                .map(|what| format!(", expected {what}"))
                .unwrap_or_default();
            (Problem::Invalid, expected)
        };
        if field.is_empty() || field == "." {
            field = "(document)".to_owned();
        }
        DocumentError { collection, id: id.clone(), field, problem, expected }
    })
}

fn missing_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    let name = rest.strip_suffix('`')?;
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')).then_some(name)
}

/// The `expecting` text of a serde visitor is written by types, not data, but a `custom` error
/// could still carry anything: keep it short and printable.
fn sanitize_expected(what: &str) -> String {
    let what: String = what.chars().filter(|c| !c.is_control()).take(120).collect();
    what.trim().to_owned()
}

/// `deserialize_with` for a field whose `null` means its default, like its absence (pair it with
/// `#[serde(default)]`): a `null` sub-document, list or string.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use bson::doc;
    use bson::oid::ObjectId;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Turn {
        #[serde(deserialize_with = "null_as_default")]
        speaker: String,
        #[serde(deserialize_with = "null_as_default")]
        text: String,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Proctoring {
        #[serde(default, deserialize_with = "null_as_default")]
        transcript: Vec<Turn>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Interview {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[serde(default, deserialize_with = "null_as_default")]
        proctoring: Proctoring,
        #[serde(default, deserialize_with = "int::opt_i64")]
        duration_seconds: Option<i64>,
        #[serde(deserialize_with = "int::i64")]
        reserved: i64,
    }

    const MARKER: &str = "CANDIDATE-SECRET-MARKER said this";

    #[test]
    fn null_and_absent_read_the_same() {
        let id = ObjectId::new();
        let absent: Interview = decode("interviews", doc! {"_id": id, "reserved": 3}).unwrap();
        let null: Interview =
            decode("interviews", doc! {"_id": id, "reserved": 3, "proctoring": null, "durationSeconds": null}).unwrap();
        assert_eq!(absent, null);
        assert_eq!(absent.proctoring.transcript, vec![]);
        let turns: Interview = decode(
            "interviews",
            doc! {"_id": id, "reserved": 3, "proctoring": {"transcript": [{"speaker": null, "text": null}, {"speaker": "candidate"}]}},
        )
        .unwrap();
        assert_eq!(turns.proctoring.transcript.len(), 2);
        assert_eq!(turns.proctoring.transcript[0].text, "");
        assert_eq!(turns.proctoring.transcript[1].speaker, "candidate");
    }

    #[test]
    fn every_integral_numeric_type_reads_as_an_integer() {
        let id = ObjectId::new();
        for reserved in [Bson::Int32(10), Bson::Int64(10), Bson::Double(10.0)] {
            let i: Interview = decode("interviews", doc! {"_id": id, "reserved": reserved.clone()}).unwrap();
            assert_eq!(i.reserved, 10, "{reserved:?}");
        }
        let i: Interview = decode("interviews", doc! {"_id": id, "reserved": -0.0, "durationSeconds": 1800.0}).unwrap();
        assert_eq!((i.reserved, i.duration_seconds), (0, Some(1800)));
    }

    #[test]
    fn a_non_integral_or_wrong_typed_number_names_the_field() {
        let id = ObjectId::new();
        let e = decode::<Interview>("interviews", doc! {"_id": id, "reserved": 2.5}).unwrap_err();
        assert_eq!((e.field.as_str(), e.problem), ("reserved", Problem::Invalid));
        assert_eq!(e.id, id.to_hex());
        assert!(e.to_string().contains("field `reserved`"), "{e}");
        assert!(!e.to_string().contains("2.5"), "the value must not be quoted: {e}");
        for bad in
            [Bson::Double(f64::NAN), Bson::Double(f64::INFINITY), Bson::Double(1e300), Bson::String(MARKER.into())]
        {
            let e = decode::<Interview>("interviews", doc! {"_id": id, "reserved": bad.clone()}).unwrap_err();
            assert_eq!(e.field, "reserved", "{bad:?}");
            assert!(!e.to_string().contains("MARKER"), "{e}");
        }
    }

    #[test]
    fn a_wrong_typed_text_is_named_by_path_without_its_value() {
        let id = ObjectId::new();
        // A transcript stored as one string: the driver's own error would quote it whole.
        let e =
            decode::<Interview>("interviews", doc! {"_id": id, "reserved": 1, "proctoring": {"transcript": MARKER}})
                .unwrap_err();
        assert_eq!(e.field, "proctoring.transcript");
        assert!(!format!("{e} {e:?}").contains("MARKER"), "{e:?}");
        let e = decode::<Interview>(
            "interviews",
            doc! {"_id": id, "reserved": 1, "proctoring": {"transcript": [{"text": "ok"}, {"text": {"nested": MARKER}}]}},
        )
        .unwrap_err();
        assert_eq!(e.field, "proctoring.transcript[1].text");
        assert!(!format!("{e} {e:?}").contains("MARKER"), "{e:?}");
        assert!(e.expected().contains("string"), "{e:?}");
    }

    #[test]
    fn a_missing_required_field_is_named() {
        let e = decode::<Interview>("interviews", doc! {"_id": ObjectId::new()}).unwrap_err();
        assert_eq!((e.field.as_str(), e.problem), ("reserved", Problem::Missing));
        let e = decode::<Interview>("interviews", doc! {"reserved": 1}).unwrap_err();
        assert_eq!((e.field.as_str(), e.id.as_str()), ("_id", "(no _id)"));
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let i: Interview =
            decode("interviews", doc! {"_id": ObjectId::new(), "reserved": 1, "__v": 0, "somethingNew": {"a": 1}})
                .unwrap();
        assert_eq!(i.reserved, 1);
    }
}
