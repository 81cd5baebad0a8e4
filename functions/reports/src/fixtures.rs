//! Interview documents for tests, the local demo and the runner: the docs/design.md fields report
//! generation reads (the credits engineer's fixtures own the credit fields).

use std::cmp::Ordering;
use std::time::Duration;

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

/// Reports in every combination of the fields the claim rule ([`crate::claim`]) reads, as other
/// writers leave them: each status; `leaseExpiresAt` absent, `null`, live, ending exactly at `now`
/// or just expired; `updatedAt` and `createdAt` each absent, `null`, recent, ending the lease-less
/// claim exactly at `now` or stale by a millisecond; `attemptCount` absent or an Int32, Int64 or
/// Double below and at the limit (4 x 5 x 5 x 5 x 6 = 3,000). The claim's own test and the
/// cross-language test (tests/it/report_claim_languages.rs) evaluate the rule on it.
pub fn claim_cases(now: DateTime, lease: Duration) -> Vec<Document> {
    let lease_ms = i64::try_from(lease.as_millis()).expect("a lease in milliseconds fits an i64");
    let at = |delta: i64| Some(Bson::DateTime(DateTime::from_millis(now.timestamp_millis() + delta)));
    let statuses = ["NOT_STARTED", "PROCESSING", "COMPLETED", "FAILED"];
    let leases = [None, Some(Bson::Null), at(60_000), at(0), at(-1)];
    let dates = [None, Some(Bson::Null), at(-1_000), at(-lease_ms), at(-lease_ms - 1)];
    let counts = [
        None,
        Some(Bson::Int32(0)),
        Some(Bson::Int64(2)),
        Some(Bson::Double(2.0)),
        Some(Bson::Int32(3)),
        Some(Bson::Double(3.0)),
    ];
    let mut out = Vec::new();
    for status in statuses {
        for lease in &leases {
            for updated in &dates {
                for created in &dates {
                    for count in &counts {
                        let mut d = doc! {"_id": ObjectId::new(), "interviewId": ObjectId::new(), "status": status};
                        for (key, value) in [
                            ("leaseExpiresAt", lease),
                            ("updatedAt", updated),
                            ("createdAt", created),
                            ("attemptCount", count),
                        ] {
                            if let Some(v) = value {
                                d.insert(key, v.clone());
                            }
                        }
                        out.push(d);
                    }
                }
            }
        }
    }
    out
}

/// Whether `d` matches `filter`, evaluated in memory: the operators the claim filters use (Rust's
/// [`crate::claim`] and the API package's), with MongoDB's semantics for them: `{f: null}`
/// matches absent or `null`; `$lt` compares within a type bracket only (numbers across
/// Int32, Int64 and Double; dates with dates), so a `null` or absent field is never below
/// anything; `$in` is equality with any element; `$exists`; `$and`/`$or` of filters.
pub fn filter_matches(d: &Document, filter: &Document) -> bool {
    filter.iter().all(|(key, cond)| match (key.as_str(), cond) {
        ("$or", Bson::Array(fs)) => fs.iter().any(|f| filter_matches(d, f.as_document().unwrap())),
        ("$and", Bson::Array(fs)) => fs.iter().all(|f| filter_matches(d, f.as_document().unwrap())),
        (op, _) if op.starts_with('$') => panic!("filter_matches does not know {op}"),
        (field, Bson::Document(ops)) if ops.keys().all(|k| k.starts_with('$')) => {
            let value = d.get(field);
            ops.iter().all(|(op, arg)| match op.as_str() {
                "$lt" => value.and_then(|v| compare(v, arg)) == Some(Ordering::Less),
                "$in" => arg.as_array().unwrap().iter().any(|a| equal(value, a)),
                "$exists" => value.is_some() == arg.as_bool().unwrap(),
                other => panic!("filter_matches does not know {other}"),
            })
        }
        (field, expected) => equal(d.get(field), expected),
    })
}

fn equal(value: Option<&Bson>, expected: &Bson) -> bool {
    match (value, expected) {
        (None | Some(Bson::Null), Bson::Null) => true,
        (Some(v), e) => compare(v, e) == Some(Ordering::Equal) || v == e,
        (None, _) => false,
    }
}

fn compare(a: &Bson, b: &Bson) -> Option<Ordering> {
    let number = |v: &Bson| match v {
        Bson::Double(n) => Some(*n),
        other => sophia_documents::int::from_bson(other).ok().map(|n| n as f64),
    };
    match (a, b) {
        (Bson::DateTime(x), Bson::DateTime(y)) => Some(x.cmp(y)),
        (Bson::String(x), Bson::String(y)) => Some(x.cmp(y)),
        _ => number(a)?.partial_cmp(&number(b)?),
    }
}
