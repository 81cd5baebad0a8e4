//! `interviewReports`: one document per interview (unique on `interviewId`, see
//! [`crate::migrations`]), and every state transition as one conditional write.
//!
//! The claim (the spec's "atomic update/upsert that increments `attemptCount`") is two atomic
//! writes, each correct on its own under concurrency, the second only when the first finds the
//! document already there:
//! 1. [`ReportStore::insert_claimed`]: insert the report already `PROCESSING` under this
//!    worker's lease with `attemptCount` 1. The unique index makes it an insert-if-absent: a
//!    duplicate-key error (11000) means the report exists, and exactly one concurrent inserter
//!    wins. On a first delivery this is the whole claim.
//! 2. [`ReportStore::claim`]: one `findOneAndUpdate` (no upsert) that moves `NOT_STARTED`,
//!    `FAILED`, or `PROCESSING` with an expired lease to `PROCESSING`, increments `attemptCount`
//!    and sets a new lease (`leaseId`, `leaseExpiresAt`). Exactly one concurrent caller wins.
//!
//! Not a `findOneAndUpdate` upsert: it needs `$setOnInsert` (which nx-27017 ignores) and, when
//! the existing report is not claimable, its insert would be stopped only by the unique index
//! (which nx-27017 does not enforce on upserts), so it could not be tested here. Later writes by
//! the claimant are conditional on its `leaseId`, so a worker whose lease expired and was
//! reclaimed cannot overwrite the new holder.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};
use serde::{Deserialize, Deserializer};
use sophia_contracts::{InterviewId, OrganizationId};

use crate::model::{GenerationMetadata, ReportContent, ReportStatus};

pub const INTERVIEW_REPORTS: &str = "interviewReports";

/// Attempts after which a report stays `FAILED` and further deliveries are acknowledged.
pub const MAX_ATTEMPTS: i32 = 3;

/// `lastError` is bounded to this many characters.
pub const MAX_LAST_ERROR_CHARS: usize = 1_000;

fn de_count<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    // Written as Int32 here; a JavaScript writer stores doubles; a server may widen to Int64.
    match Bson::deserialize(d)? {
        Bson::Int32(n) => Ok(n),
        Bson::Int64(n) => i32::try_from(n).map_err(serde::de::Error::custom),
        Bson::Double(f) if f.fract() == 0.0 && f >= 0.0 && f <= f64::from(i32::MAX) => Ok(f as i32),
        Bson::Null => Ok(0),
        other => Err(serde::de::Error::custom(format!("attemptCount is not a count: {other}"))),
    }
}

/// A report document as read back.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredReport {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub interview_id: ObjectId,
    pub organization_id: ObjectId,
    pub status: ReportStatus,
    #[serde(deserialize_with = "de_count", default)]
    pub attempt_count: i32,
    #[serde(default)]
    pub lease_id: Option<ObjectId>,
    #[serde(default)]
    pub lease_expires_at: Option<DateTime>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub retention_expires_at: Option<DateTime>,
    #[serde(default)]
    pub report: Option<ReportContent>,
    #[serde(default)]
    pub generation: Option<GenerationMetadata>,
}

impl StoredReport {
    /// `PROCESSING` under a lease that has not expired at `now`.
    pub fn is_live(&self, now: DateTime) -> bool {
        self.status == ReportStatus::Processing && self.lease_expires_at.is_some_and(|l| l > now)
    }
}

/// A successful claim: the lease this worker holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub id: ObjectId,
    pub interview_id: ObjectId,
    /// The attempt this claim started (1 for the first).
    pub attempt: i32,
    pub expires_at: DateTime,
}

#[derive(Debug, Clone)]
pub struct ReportStore {
    reports: Collection<Document>,
}

fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::InsertMany(m) => m.write_errors.iter().flatten().any(|w| w.code == 11000),
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// The `$or` of states no live worker holds at `now`: NOT_STARTED, FAILED, or PROCESSING
/// under an expired lease.
fn not_held(now: DateTime) -> Bson {
    bson::bson!([
        {"status": {"$in": [ReportStatus::NotStarted.as_str(), ReportStatus::Failed.as_str()]}},
        {"status": ReportStatus::Processing.as_str(), "leaseExpiresAt": {"$lt": now}},
    ])
}

fn expiry(now: DateTime, lease: Duration) -> DateTime {
    DateTime::from_millis(now.timestamp_millis().saturating_add(lease.as_millis() as i64))
}

fn bounded(s: &str) -> String {
    s.chars().take(MAX_LAST_ERROR_CHARS).collect()
}

impl ReportStore {
    pub fn new(db: &Database) -> Self {
        Self { reports: db.collection(INTERVIEW_REPORTS) }
    }

    pub fn collection(&self) -> &Collection<Document> {
        &self.reports
    }

    pub async fn find(&self, interview_id: InterviewId) -> mongodb::error::Result<Option<StoredReport>> {
        let raw = self.reports.find_one(doc! {"interviewId": interview_id.oid()}).await?;
        raw.map(|d| bson::from_document(d).map_err(mongodb::error::Error::from)).transpose()
    }

    /// Step 1 of the claim: the report inserted already `PROCESSING` under a new lease
    /// (`attemptCount` 1), unless one exists (`None`: go on with [`claim`](Self::claim)).
    pub async fn insert_claimed(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        retention_expires_at: Option<DateTime>,
        lease: Duration,
    ) -> mongodb::error::Result<Option<Lease>> {
        let now = DateTime::now();
        let claimed =
            Lease { id: ObjectId::new(), interview_id: interview_id.oid(), attempt: 1, expires_at: expiry(now, lease) };
        let report = doc! {
            "_id": ObjectId::new(),
            "interviewId": interview_id.oid(),
            "organizationId": organization_id.oid(),
            "status": ReportStatus::Processing.as_str(),
            "attemptCount": claimed.attempt,
            "leaseId": claimed.id,
            "leaseExpiresAt": claimed.expires_at,
            "lastError": Bson::Null,
            "retentionExpiresAt": retention_expires_at.map_or(Bson::Null, Bson::DateTime),
            "report": Bson::Null,
            "generation": Bson::Null,
            "createdAt": now,
            "updatedAt": now,
        };
        match self.reports.insert_one(report).await {
            Ok(_) => Ok(Some(claimed)),
            Err(e) if is_duplicate_key(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Step 2 of the claim. `None`: not claimable now (completed, held under a live lease, or
    /// out of attempts).
    pub async fn claim(&self, interview_id: InterviewId, lease: Duration) -> mongodb::error::Result<Option<Lease>> {
        let now = DateTime::now();
        let expires_at = expiry(now, lease);
        let lease_id = ObjectId::new();
        let claimed = self
            .reports
            .find_one_and_update(
                doc! {
                    "interviewId": interview_id.oid(),
                    "attemptCount": {"$lt": MAX_ATTEMPTS},
                    "$or": not_held(now),
                },
                doc! {
                    "$set": {
                        "status": ReportStatus::Processing.as_str(),
                        "leaseId": lease_id,
                        "leaseExpiresAt": expires_at,
                        "updatedAt": now,
                    },
                    "$inc": {"attemptCount": 1_i32},
                },
            )
            .return_document(ReturnDocument::After)
            .await?;
        let Some(claimed) = claimed else { return Ok(None) };
        let stored: StoredReport = bson::from_document(claimed)?;
        Ok(Some(Lease { id: lease_id, interview_id: stored.interview_id, attempt: stored.attempt_count, expires_at }))
    }

    /// Step 3 of the spec: out of attempts -> `FAILED` (unless completed, or a live holder is
    /// still working on its last attempt). Returns whether the document was marked.
    pub async fn mark_exhausted(&self, interview_id: InterviewId) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {
                    "interviewId": interview_id.oid(),
                    "attemptCount": {"$gte": MAX_ATTEMPTS},
                    "$or": not_held(now),
                },
                doc! {"$set": {
                    "status": ReportStatus::Failed.as_str(),
                    "leaseId": Bson::Null,
                    "leaseExpiresAt": Bson::Null,
                    "updatedAt": now,
                }},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// `PROCESSING` -> `COMPLETED` under the caller's lease. `false`: the lease was lost (it
    /// expired and another worker reclaimed the report); nothing was written.
    pub async fn complete(
        &self,
        lease: &Lease,
        content: &ReportContent,
        generation: &GenerationMetadata,
        retention_expires_at: Option<DateTime>,
    ) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": lease.interview_id, "leaseId": lease.id, "status": ReportStatus::Processing.as_str()},
                doc! {"$set": {
                    "status": ReportStatus::Completed.as_str(),
                    "report": bson::to_bson(content)?,
                    "generation": bson::to_bson(generation)?,
                    // For the API: how many turns the model did not see (0: the whole interview).
                    "transcriptTurnsOmitted": generation.truncation.turns_omitted,
                    "retentionExpiresAt": retention_expires_at.map_or(Bson::Null, Bson::DateTime),
                    "lastError": Bson::Null,
                    "leaseId": Bson::Null,
                    "leaseExpiresAt": Bson::Null,
                    "completedAt": now,
                    "updatedAt": now,
                }},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// `PROCESSING` -> `FAILED` with `lastError`, under the caller's lease.
    pub async fn fail(&self, lease: &Lease, error: &str) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": lease.interview_id, "leaseId": lease.id, "status": ReportStatus::Processing.as_str()},
                doc! {"$set": {
                    "status": ReportStatus::Failed.as_str(),
                    "lastError": bounded(error),
                    "lastErrorAt": now,
                    "leaseId": Bson::Null,
                    "leaseExpiresAt": Bson::Null,
                    "updatedAt": now,
                }},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// Admin: a `FAILED` report's `attemptCount` back to 0. `false` if it is not `FAILED`.
    pub async fn reset_attempts(&self, interview_id: InterviewId) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": interview_id.oid(), "status": ReportStatus::Failed.as_str()},
                doc! {"$set": {"attemptCount": 0_i32, "attemptsResetAt": now, "updatedAt": now}},
            )
            .await?;
        Ok(r.matched_count == 1)
    }
}
