//! The part of an interview document (`interviews`, docs/design.md) that report generation reads.
//! Read-only: this crate never writes interviews.
//!
//! A read model of a document the API writes (docs/design.md, "Documents written by other
//! services"), decoded with [`sophia_documents::decode`]: every optional field may be absent or
//! `null` (`snapshot` and its fields, `proctoring`, `proctoring.transcript`, a turn's `speaker`
//! and `text`, `durationSeconds`, `credibility`), `durationSeconds` may be any BSON numeric, and
//! unknown fields are ignored. What still cannot be read is a [`DocumentError`] naming the field.

use bson::oid::ObjectId;
use bson::{Bson, Document, doc};
use mongodb::Database;
use serde::{Deserialize, Serialize};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_documents::{DocumentError, null_as_default};

pub const INTERVIEWS: &str = "interviews";

/// A skill or question in the snapshot: a plain string, or an object with a `name`/`text`
/// (whichever shape the API stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Labelled {
    Text(String),
    Named { name: String },
    Texted { text: String },
}

impl Labelled {
    pub fn label(&self) -> &str {
        match self {
            Self::Text(s) | Self::Named { name: s } | Self::Texted { text: s } => s,
        }
    }
}

/// `snapshot`: the role as it was when the interview was scheduled, and the candidate's resume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Snapshot {
    pub role: Option<String>,
    #[serde(deserialize_with = "null_as_default")]
    pub skills: Vec<Labelled>,
    #[serde(deserialize_with = "null_as_default")]
    pub questions: Vec<Labelled>,
    pub resume_text: Option<String>,
}

/// One turn of the proctoring transcript. A `null` or absent `speaker` or `text` reads as empty
/// (such a turn is neither the candidate's nor substantive).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Turn {
    #[serde(deserialize_with = "null_as_default")]
    pub speaker: String,
    #[serde(deserialize_with = "null_as_default")]
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Proctoring {
    #[serde(deserialize_with = "null_as_default")]
    pub transcript: Vec<Turn>,
}

/// The interview fields report generation needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interview {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub organization_id: ObjectId,
    /// Seconds, as stored (an integer type or a double: both are read).
    #[serde(default)]
    pub duration_seconds: Option<f64>,
    #[serde(default)]
    pub retention_expires_at: Option<bson::DateTime>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub snapshot: Snapshot,
    #[serde(default, deserialize_with = "null_as_default")]
    pub proctoring: Proctoring,
    /// Proctoring's credibility assessment, as stored; only its allowlisted fields reach the
    /// model ([`crate::prompt::CREDIBILITY_FIELDS`]).
    #[serde(default)]
    pub credibility: Option<Bson>,
}

/// The speaker value of the candidate's turns (compared case-insensitively).
pub const CANDIDATE_SPEAKER: &str = "candidate";

impl Turn {
    pub fn is_candidate(&self) -> bool {
        self.speaker.trim().eq_ignore_ascii_case(CANDIDATE_SPEAKER)
    }
}

/// Loads the interview by `_id` and `organizationId`, excluding soft-deleted ones
/// (`deletedAt` absent or `null`), as the raw document: decode it with [`decode`] (after the
/// report is claimed, so that an unreadable interview is recorded on its report). `None` covers
/// "absent", "another organization's" and "deleted" alike, so the caller cannot leak which one
/// it was.
pub async fn load_raw(
    db: &Database,
    interview_id: InterviewId,
    organization_id: OrganizationId,
) -> mongodb::error::Result<Option<Document>> {
    db.collection::<Document>(INTERVIEWS)
        .find_one(doc! {
            "_id": interview_id.oid(),
            "organizationId": organization_id.oid(),
            "deletedAt": Bson::Null,
        })
        // `proctoring` whole: nx-27017 returns a dotted projection (`proctoring.transcript`) as a
        // flat key, and the subdocument is small next to what the prompt sends anyway.
        .projection(doc! {
            "organizationId": 1, "durationSeconds": 1, "retentionExpiresAt": 1,
            "snapshot": 1, "proctoring": 1, "credibility": 1,
        })
        .await
}

/// The read model of a raw interview document.
pub fn decode(raw: Document) -> Result<Interview, DocumentError> {
    sophia_documents::decode(INTERVIEWS, raw)
}

/// `retentionExpiresAt` of a raw document if it is a date (read before the full decode: the
/// claim copies it to the report, or [`crate::store::retention_or_fallback`] when absent).
pub fn retention_of(raw: &Document) -> Option<bson::DateTime> {
    match raw.get("retentionExpiresAt") {
        Some(Bson::DateTime(d)) => Some(*d),
        _ => None,
    }
}
