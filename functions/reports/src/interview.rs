//! The part of an interview document (`interviews`, DESIGN.md) that report generation reads.
//! Read-only: this crate never writes interviews.

use bson::oid::ObjectId;
use bson::{Bson, doc};
use mongodb::Database;
use serde::{Deserialize, Serialize};
use sophia_contracts::{InterviewId, OrganizationId};

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
    pub skills: Vec<Labelled>,
    pub questions: Vec<Labelled>,
    pub resume_text: Option<String>,
}

/// One turn of the proctoring transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub speaker: String,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Proctoring {
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
    #[serde(default)]
    pub snapshot: Snapshot,
    #[serde(default)]
    pub proctoring: Proctoring,
    /// Proctoring's credibility assessment, passed to the model as data as stored.
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
/// (`deletedAt` set). `None` covers "absent", "another organization's" and "deleted" alike, so
/// the caller cannot leak which one it was.
pub async fn load(
    db: &Database,
    interview_id: InterviewId,
    organization_id: OrganizationId,
) -> mongodb::error::Result<Option<Interview>> {
    db.collection::<Interview>(INTERVIEWS)
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
