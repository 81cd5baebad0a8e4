//! `interviewReports`: one document per interview (unique on `interviewId`, see
//! [`crate::migrations`]), and every state transition as one conditional write.
//!
//! The claim (step 4 of the replaced report generation, "an atomic update/upsert that increments
//! `attemptCount`": docs/design.md, "Its report generation") is two atomic
//! writes, each correct on its own under concurrency, the second only when the first finds the
//! document already there:
//! 1. [`ReportStore::insert_claimed`]: insert the report already `PROCESSING` under this
//!    worker's lease with `attemptCount` 1. The unique index makes it an insert-if-absent: a
//!    duplicate-key error (11000) means the report exists, and exactly one concurrent inserter
//!    wins. On a first delivery this is the whole claim.
//! 2. [`ReportStore::claim`]: one `findOneAndUpdate` (no upsert) that moves a report nobody
//!    holds with attempts left ([`claim::claimable_filter`], the rule of [`crate::claim`]:
//!    `NOT_STARTED`, `FAILED`, or `PROCESSING` with an expired lease or, written before leases
//!    existed, none and an `updatedAt`/`createdAt` older than the lease length) to
//!    `PROCESSING`, increments `attemptCount` (absent counts as 0) and sets a new lease
//!    (`leaseId`, `leaseExpiresAt`). Exactly one concurrent caller wins.
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
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_documents::{DocumentError, int};

use crate::claim;
use crate::error_kind::ErrorKind;
use crate::report::{GenerationMetadata, ReportContent, ReportDocument, ReportStatus, StoredReport};

pub const INTERVIEW_REPORTS: &str = "interviewReports";

pub use crate::claim::MAX_ATTEMPTS;

/// `lastError` is bounded to this many characters.
pub const MAX_LAST_ERROR_CHARS: usize = 1_000;

/// Days after a write that a report is kept when its interview has no `retentionExpiresAt` (an
/// interview is given one when it is settled, before `report.generate` is published, so this
/// only covers a document written otherwise): the settlement's own 60 days
/// (`sophia_credits::settlement::RETENTION_DAYS`; tests/it/report_retention.rs checks they agree).
pub const FALLBACK_RETENTION_DAYS: i64 = 60;

/// The report's retention date: the interview's `retentionExpiresAt`, else
/// [`FALLBACK_RETENTION_DAYS`] from `now`. Every write of a report sets it (docs/design.md, "Documents written by other services"; the TTL index on it deletes the report).
pub fn retention_or_fallback(interview_retention: Option<DateTime>, now: DateTime) -> DateTime {
    interview_retention.unwrap_or_else(|| {
        DateTime::from_millis(now.timestamp_millis().saturating_add(FALLBACK_RETENTION_DAYS * 24 * 3600 * 1000))
    })
}

/// A successful claim: the lease this worker holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub id: ObjectId,
    pub interview_id: ObjectId,
    /// The attempt this claim started (1 for the first).
    pub attempt: i32,
    pub expires_at: DateTime,
    /// The retention date the claim wrote; the completion or failure under this lease writes it
    /// again.
    pub retention_expires_at: DateTime,
}

#[derive(Debug, Clone)]
pub struct ReportStore {
    reports: Collection<Document>,
}

pub(crate) fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::InsertMany(m) => m.write_errors.iter().flatten().any(|w| w.code == 11000),
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

/// Whether a failure of this kind on this attempt is delivered again by the queue without anyone
/// acting: the provider or the database was away (the attempt is given back), or attempts are
/// left. Only the consumer's give-up on a long outage
/// ([`ReportStore::mark_given_up`]) ends such a wait early.
pub fn waits_for_retry(kind: ErrorKind, attempt: i32) -> bool {
    kind.is_provider_away() || attempt < MAX_ATTEMPTS
}

fn bounded(s: &str) -> String {
    s.chars().take(MAX_LAST_ERROR_CHARS).collect()
}

/// A store operation failed: MongoDB itself, or a stored report that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
    #[error("{0}")]
    Document(#[from] DocumentError),
}

/// The `$set` of a failure record: FAILED, why (bounded, no candidate text), its kind, whether
/// the message will be delivered again without anyone acting (`waitingForRetry`), and the
/// refusal's text when the model refused (removed otherwise).
fn failure_update(
    now: DateTime,
    error: &str,
    kind: ErrorKind,
    refusal: Option<&str>,
    retention: DateTime,
    waiting_for_retry: bool,
) -> Document {
    let mut set = doc! {
        "status": ReportStatus::Failed.as_str(),
        "waitingForRetry": waiting_for_retry,
        "retentionExpiresAt": retention,
        "lastError": bounded(error),
        "errorKind": kind.as_str(),
        "lastErrorAt": now,
        "leaseId": Bson::Null,
        "leaseExpiresAt": Bson::Null,
        "updatedAt": now,
    };
    match refusal {
        Some(text) => {
            set.insert("refusal", text);
            doc! {"$set": set}
        }
        None => doc! {"$set": set, "$unset": {"refusal": ""}},
    }
}

impl ReportStore {
    pub fn new(db: &Database) -> Self {
        Self { reports: db.collection(INTERVIEW_REPORTS) }
    }

    pub fn collection(&self) -> &Collection<Document> {
        &self.reports
    }

    /// The report's head, decoded with the read model (an unreadable one is a
    /// [`StoreError::Document`] naming the field).
    pub async fn find(&self, interview_id: InterviewId) -> Result<Option<StoredReport>, StoreError> {
        let raw = self.find_raw(interview_id).await?;
        Ok(raw.map(|d| sophia_documents::decode(INTERVIEW_REPORTS, d)).transpose()?)
    }

    /// The report document as stored.
    pub async fn find_raw(&self, interview_id: InterviewId) -> mongodb::error::Result<Option<Document>> {
        self.reports.find_one(doc! {"interviewId": interview_id.oid()}).await
    }

    /// Step 1 of the claim: the report inserted already `PROCESSING` under a new lease
    /// (`attemptCount` 1), unless one exists (`None`: go on with [`claim`](Self::claim)).
    pub async fn insert_claimed(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        retention_expires_at: DateTime,
        lease: Duration,
    ) -> mongodb::error::Result<Option<Lease>> {
        let now = DateTime::now();
        let claimed = Lease {
            id: ObjectId::new(),
            interview_id: interview_id.oid(),
            attempt: 1,
            expires_at: claim::after(now, lease),
            retention_expires_at,
        };
        let report = ReportDocument {
            id: ObjectId::new(),
            interview_id: interview_id.oid(),
            organization_id: organization_id.oid(),
            status: ReportStatus::Processing,
            attempt_count: claimed.attempt,
            lease_id: Some(claimed.id),
            lease_expires_at: Some(claimed.expires_at),
            last_error: None,
            error_kind: None,
            last_error_at: None,
            refusal: None,
            transient_failures: None,
            last_retry: None,
            retries: None,
            retention_expires_at: Some(retention_expires_at),
            report: None,
            needs_review: None,
            generation: None,
            transcript_turns_omitted: None,
            created_at: now,
            updated_at: now,
            completed_at: None,
            attempts_reset_at: None,
            waiting_for_retry: None,
            retry_queued_at: None,
            erased_at: None,
        };
        match self.reports.insert_one(bson::to_document(&report)?).await {
            Ok(_) => Ok(Some(claimed)),
            Err(e) if is_duplicate_key(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Step 2 of the claim. `None`: not claimable now (completed, held under a live lease, out
    /// of attempts, or unreadable: the caller reads it to say which). The claim writes the
    /// retention date (a placeholder the API wrote may have none).
    pub async fn claim(
        &self,
        interview_id: InterviewId,
        lease: Duration,
        retention: DateTime,
    ) -> mongodb::error::Result<Option<Lease>> {
        if let Some(claimed) = self.claim_once(interview_id, lease, retention).await? {
            return Ok(Some(claimed));
        }
        // `attemptCount: null` (a writer's explicit null) means 0 but `$inc` refuses it: make it
        // 0 if the report is otherwise claimable, then claim again. Rare, so only on this path.
        let now = DateTime::now();
        let normalized = self
            .reports
            .update_one(
                doc! {"interviewId": interview_id.oid(), "attemptCount": Bson::Null, "$or": claim::free_filter(now, lease)},
                doc! {"$set": {"attemptCount": 0_i32, "retentionExpiresAt": retention}},
            )
            .await?;
        if normalized.modified_count == 0 {
            return Ok(None);
        }
        self.claim_once(interview_id, lease, retention).await
    }

    async fn claim_once(
        &self,
        interview_id: InterviewId,
        lease: Duration,
        retention: DateTime,
    ) -> mongodb::error::Result<Option<Lease>> {
        let now = DateTime::now();
        let expires_at = claim::after(now, lease);
        let lease_id = ObjectId::new();
        let claimed = self
            .reports
            .find_one_and_update(
                doc! {
                    "interviewId": interview_id.oid(),
                    "$and": [claim::claimable_filter(now, lease)],
                },
                doc! {
                    "$set": {
                        "status": ReportStatus::Processing.as_str(),
                        "leaseId": lease_id,
                        "leaseExpiresAt": expires_at,
                        "retentionExpiresAt": retention,
                        "updatedAt": now,
                    },
                    "$inc": {"attemptCount": 1_i32},
                    // Being tried now: no longer waiting (docs/design.md, "Report states").
                    "$unset": {"waitingForRetry": ""},
                },
            )
            .return_document(ReturnDocument::After)
            .await?;
        let Some(claimed) = claimed else { return Ok(None) };
        // Only the count is read back: the rest of the document is not this step's business.
        let attempt = claimed
            .get("attemptCount")
            .and_then(|v| int::from_bson(v).ok())
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(MAX_ATTEMPTS);
        Ok(Some(Lease {
            id: lease_id,
            interview_id: interview_id.oid(),
            attempt,
            expires_at,
            retention_expires_at: retention,
        }))
    }

    /// Step 3 of the replaced report generation (docs/design.md, "Its report generation"): out of attempts -> `FAILED` (unless completed, or a live holder is
    /// still working on its last attempt). Returns whether the document was marked.
    pub async fn mark_exhausted(
        &self,
        interview_id: InterviewId,
        lease: Duration,
        retention: DateTime,
    ) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {
                    "interviewId": interview_id.oid(),
                    "attemptCount": {"$gte": MAX_ATTEMPTS},
                    "$or": claim::free_filter(now, lease),
                },
                doc! {"$set": {
                    "status": ReportStatus::Failed.as_str(),
                    "waitingForRetry": false,
                    "retentionExpiresAt": retention,
                    "leaseId": Bson::Null,
                    "leaseExpiresAt": Bson::Null,
                    "updatedAt": now,
                }},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// `PROCESSING` -> `COMPLETED` under the caller's lease, with the review mark
    /// (`needsReview`: the report still carries a critical finding). `false`: the lease was lost
    /// (it expired and another worker reclaimed the report); nothing was written.
    pub async fn complete(
        &self,
        lease: &Lease,
        content: &ReportContent,
        generation: &GenerationMetadata,
        needs_review: bool,
    ) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": lease.interview_id, "leaseId": lease.id, "status": ReportStatus::Processing.as_str()},
                doc! {
                    "$set": {
                        "status": ReportStatus::Completed.as_str(),
                        "report": bson::to_bson(content)?,
                        "generation": bson::to_bson(generation)?,
                        // For the API: how many turns the model did not see (0: the whole interview).
                        "transcriptTurnsOmitted": generation.truncation.turns_omitted,
                        "retentionExpiresAt": lease.retention_expires_at,
                        "needsReview": needs_review,
                        "lastError": Bson::Null,
                        "leaseId": Bson::Null,
                        "leaseExpiresAt": Bson::Null,
                        "completedAt": now,
                        "updatedAt": now,
                    },
                    "$unset": {"errorKind": "", "lastErrorAt": "", "refusal": "", "waitingForRetry": ""},
                },
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// `PROCESSING` -> `FAILED` with `lastError`, `errorKind` (and the refusal's text), under the
    /// caller's lease. A kind of the provider or the database being away
    /// ([`ErrorKind::is_provider_away`]) gives the attempt back (`attemptCount` − 1) and counts
    /// it in `transientFailures` instead: attempts count answers that were wrong. Either such a
    /// kind or an attempt before the last is redelivered by the queue: `waitingForRetry` true
    /// ([`waits_for_retry`]); a consumer that gives up on an outage says so with
    /// [`mark_given_up`](Self::mark_given_up).
    pub async fn fail(
        &self,
        lease: &Lease,
        error: &str,
        kind: ErrorKind,
        refusal: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        let waiting = waits_for_retry(kind, lease.attempt);
        let mut update = failure_update(DateTime::now(), error, kind, refusal, lease.retention_expires_at, waiting);
        if kind.is_provider_away() {
            update.insert("$inc", doc! {"attemptCount": -1_i32, "transientFailures": 1_i32});
        }
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": lease.interview_id, "leaseId": lease.id, "status": ReportStatus::Processing.as_str()},
                update,
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// A report document that cannot be read (so cannot be claimed): `FAILED` with the reason,
    /// unless it is `COMPLETED`, an erasure's tombstone (`ERASED`) or under a live lease. Returns whether it was marked.
    pub async fn fail_unreadable(
        &self,
        interview_id: InterviewId,
        error: &DocumentError,
        retention: DateTime,
    ) -> mongodb::error::Result<bool> {
        let now = DateTime::now();
        let r = self
            .reports
            .update_one(
                // `$nin` rather than `$ne`: the same on MongoDB, and nx-27017 (whose date-filter
                // path misses documents lacking the date field under `$ne`) matches it too
                // (tests/it/mongo_wire_gaps.rs).
                doc! {
                    "interviewId": interview_id.oid(),
                    "status": {"$nin": [ReportStatus::Completed.as_str(), ReportStatus::Erased.as_str()]},
                    "$or": [{"leaseExpiresAt": Bson::Null}, {"leaseExpiresAt": {"$lt": now}}],
                },
                failure_update(now, &error.to_string(), ErrorKind::InvalidDocument, None, retention, false),
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// The consumer gave up on a report whose transient failures outlasted the give-up age (its
    /// message goes to the DLQ): `waitingForRetry` false, so it reads as needing an operator.
    /// Returns whether a `FAILED` report was marked.
    pub async fn mark_given_up(&self, interview_id: InterviewId) -> mongodb::error::Result<bool> {
        let r = self
            .reports
            .update_one(
                doc! {"interviewId": interview_id.oid(), "status": ReportStatus::Failed.as_str()},
                doc! {"$set": {"waitingForRetry": false, "updatedAt": DateTime::now()}},
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
