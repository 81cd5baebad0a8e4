//! Interview documents for tests, the local demo and the runner: the docs/design.md fields report
//! generation reads (the credits engineer's fixtures own the credit fields).

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use mongodb::Database;
use sophia_contracts::{InterviewId, OrganizationId};

use crate::interview::INTERVIEWS;

/// A completed interview with enough evidence for a model report, adjustable by the builder.
#[derive(Debug, Clone)]
pub struct InterviewFixture {
    doc: Document,
}

/// The default transcript: three substantive candidate answers.
pub const DEFAULT_TRANSCRIPT: &[(&str, &str)] = &[
    ("interviewer", "Tell me about a data migration you led."),
    ("candidate", "I moved our billing tables from MySQL to Postgres with dual writes and a nightly checksum job."),
    ("interviewer", "How did you make sure nothing was lost?"),
    ("candidate", "We compared row counts and hashes per tenant every night and paged on any drift for two weeks."),
    ("interviewer", "How do you handle errors in Rust services?"),
    ("candidate", "I use thiserror for typed errors in libraries and decide retry or drop at the edge of the service."),
];

impl InterviewFixture {
    pub fn new(organization_id: OrganizationId) -> Self {
        let now = DateTime::now();
        let retention = DateTime::from_millis(now.timestamp_millis() + 60 * 24 * 3600 * 1000);
        let mut fixture = Self {
            doc: doc! {
                "_id": ObjectId::new(),
                "organizationId": organization_id.oid(),
                "status": "COMPLETED",
                "durationSeconds": 754_i32,
                "completedAt": now,
                "settledAt": now,
                "retentionExpiresAt": retention,
                "deletedAt": Bson::Null,
                "snapshot": {
                    "role": "Senior Backend Engineer",
                    "skills": ["Rust", "Databases", "Error handling"],
                    "questions": ["Tell me about a data migration you led.", "How do you handle errors in Rust services?"],
                    "resumeText": "Jane Doe. 8 years backend engineering: Rust, Postgres, AWS Lambda.",
                },
                "credibility": {"score": 92_i32, "flags": []},
            },
        };
        fixture = fixture.transcript(DEFAULT_TRANSCRIPT);
        fixture
    }

    pub fn interview_id(&self) -> InterviewId {
        InterviewId::new(self.doc.get_object_id("_id").expect("set by new"))
    }

    pub fn organization_id(&self) -> OrganizationId {
        OrganizationId::new(self.doc.get_object_id("organizationId").expect("set by new"))
    }

    pub fn duration_seconds(mut self, seconds: i32) -> Self {
        self.doc.insert("durationSeconds", seconds);
        self
    }

    pub fn transcript(mut self, turns: &[(&str, &str)]) -> Self {
        let turns: Vec<Bson> =
            turns.iter().map(|(speaker, text)| Bson::Document(doc! {"speaker": *speaker, "text": *text})).collect();
        self.doc.insert("proctoring", doc! {"transcript": turns});
        self
    }

    pub fn resume(mut self, text: &str) -> Self {
        if let Ok(snapshot) = self.doc.get_document_mut("snapshot") {
            snapshot.insert("resumeText", text);
        }
        self
    }

    /// Soft-deleted now.
    pub fn deleted(mut self) -> Self {
        self.doc.insert("deletedAt", DateTime::now());
        self
    }

    pub fn document(&self) -> &Document {
        &self.doc
    }

    /// Inserts the interview; returns its ids.
    pub async fn insert(&self, db: &Database) -> mongodb::error::Result<(InterviewId, OrganizationId)> {
        db.collection::<Document>(INTERVIEWS).insert_one(&self.doc).await?;
        Ok((self.interview_id(), self.organization_id()))
    }
}
