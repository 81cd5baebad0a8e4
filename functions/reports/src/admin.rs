//! Admin retry (docs/design.md "Admin retry"): re-publish `report.generate` rather than generating
//! synchronously, and reset a FAILED report's attempts only when explicitly asked. For the
//! operator CLI; the publisher is a closure so this crate needs no SQS client (pass
//! `SqsProducer::publish_report_generate`).
//!
//! [`reset_for_retry`] gives a report a fresh attempt budget and records who did it and when
//! (`lastRetry` and the `retries` history), for `sophia-ops report retry --reset-attempts` and
//! for `sophia-ops dlq redrive report-generate`, which resets each report just before its message
//! moves. It only touches a report no worker can be working on (`FAILED`, or `PROCESSING` whose
//! claim has ended by the one claim rule, [`crate::claim`]), never a `COMPLETED` one, and it is a
//! compare-and-set on the state it read (status, `attemptCount`, `leaseId`): a consumer that
//! claims the report in between makes the write miss, and the reset is decided again from the new
//! state.

use std::future::Future;

use bson::{Bson, DateTime, doc};
use mongodb::Database;
use serde::Serialize;
use sophia_contracts::{InterviewId, OrganizationId, ReportGenerate, RequestId};
use sophia_declarations::ResetRule;

use crate::claim::{self, Hold};
use crate::interview;
use crate::report::ReportStatus;
use crate::store::{MAX_ATTEMPTS, ReportStore, StoreError};

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryRequest {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    /// Set a FAILED report's `attemptCount` back to 0 before re-publishing.
    pub reset_attempts: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryOutcome {
    /// `report.generate` was published (with this request id).
    Published { request_id: RequestId, attempts_reset: bool },
    /// The report is COMPLETED: nothing was published.
    AlreadyCompleted,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(
        "interview {interview_id} not found in organization {organization_id} (absent, soft-deleted or another organization's)"
    )]
    InterviewNotFound { interview_id: InterviewId, organization_id: OrganizationId },
    #[error(
        "the report has used its {attempts} attempts (max {MAX_ATTEMPTS}): a re-publish would be acknowledged without a retry; ask for an attempts reset"
    )]
    AttemptsExhausted { attempts: i32 },
    #[error("only a FAILED report's attempts can be reset; this one is {0}")]
    NotFailed(&'static str),
    /// The candidate's data for this interview was erased (docs/candidate-data.md, Erasure):
    /// nothing is reset or published.
    #[error("interview {interview_id}: the candidate's data was erased; a report is never generated again")]
    Erased { interview_id: InterviewId },
    #[error("the report changed under {tries} reset attempts in a row (a consumer is working on it); try again")]
    Contended { tries: usize },
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
    /// The report document cannot be read (its `lastError` names the field once a delivery
    /// has tried).
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("publishing report.generate failed: {0}")]
    Publish(BoxError),
}

/// The request id of an admin re-publish: `admin-retry-<interviewId>`.
pub fn admin_request_id(interview_id: InterviewId) -> RequestId {
    RequestId::from_caller(Some(&format!("admin-retry-{interview_id}")))
}

/// Re-publishes `report.generate` for one interview of one organization (an attempts reset is
/// recorded as done by `unknown`; operators' tools call [`retry_report_generation_by`]).
pub async fn retry_report_generation<P, F, E>(
    db: &Database,
    request: RetryRequest,
    publish: P,
) -> Result<RetryOutcome, AdminError>
where
    P: FnOnce(ReportGenerate, RequestId) -> F,
    F: Future<Output = Result<(), E>>,
    E: Into<BoxError>,
{
    retry_report_generation_by(db, request, &Operator::new("unknown", "report-retry"), publish).await
}

/// [`retry_report_generation`], with an attempts reset recorded as done by `operator`.
pub async fn retry_report_generation_by<P, F, E>(
    db: &Database,
    request: RetryRequest,
    operator: &Operator,
    publish: P,
) -> Result<RetryOutcome, AdminError>
where
    P: FnOnce(ReportGenerate, RequestId) -> F,
    F: Future<Output = Result<(), E>>,
    E: Into<BoxError>,
{
    let RetryRequest { interview_id, organization_id, reset_attempts } = request;
    if interview::load_raw(db, interview_id, organization_id).await?.is_none() {
        return Err(AdminError::InterviewNotFound { interview_id, organization_id });
    }
    if crate::erasure::is_erased(db, interview_id).await? {
        return Err(AdminError::Erased { interview_id });
    }
    let store = ReportStore::new(db);
    let report = store.find(interview_id).await?;
    let mut attempts_reset = false;
    match &report {
        Some(r) if r.status == ReportStatus::Completed => return Ok(RetryOutcome::AlreadyCompleted),
        Some(_) if reset_attempts => match reset_for_retry(db, interview_id, operator).await? {
            ResetOutcome::Reset { .. } => attempts_reset = true,
            ResetOutcome::Completed => return Ok(RetryOutcome::AlreadyCompleted),
            ResetOutcome::Held { .. } => return Err(AdminError::NotFailed(ReportStatus::Processing.as_str())),
            ResetOutcome::Absent => return Err(AdminError::NotFailed("absent")),
            ResetOutcome::Erased => return Err(AdminError::Erased { interview_id }),
            ResetOutcome::NotResettable { status } => return Err(AdminError::NotFailed(status)),
        },
        Some(r) if !claim::has_attempts_left(r) => {
            return Err(AdminError::AttemptsExhausted { attempts: r.attempt_count });
        }
        None if reset_attempts => return Err(AdminError::NotFailed("absent")),
        _ => {}
    }
    let request_id = admin_request_id(interview_id);
    publish(ReportGenerate { interview_id, organization_id }, request_id.clone())
        .await
        .map_err(|e| AdminError::Publish(e.into()))?;
    tracing::info!(interviewId = %interview_id, organizationId = %organization_id, attemptsReset = attempts_reset, "report.generate re-published");
    Ok(RetryOutcome::Published { request_id, attempts_reset })
}

/// Who retries a report, and through which command (recorded on the report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operator {
    /// The operator: an AWS identity (`arn:aws:sts::...:assumed-role/...`), a `--by` value or the
    /// login name. Not candidate data.
    pub by: String,
    /// The command: `dlq-redrive`, `report-retry`.
    pub via: String,
}

impl Operator {
    pub fn new(by: impl Into<String>, via: impl Into<String>) -> Self {
        Self { by: by.into(), via: via.into() }
    }
}

/// What [`reset_for_retry`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum ResetOutcome {
    /// The attempt budget is fresh (`attemptCount` 0), recorded in `lastRetry` and `retries`.
    Reset { status_before: &'static str, attempts_before: i32 },
    /// `COMPLETED`: untouched (a redriven message is acknowledged without a model call).
    Completed,
    /// `PROCESSING` under a claim that has not ended ([`claim::hold`]): a worker is generating
    /// it now; untouched. `leaseExpiresAt`: when the claim ends (RFC 3339).
    Held { lease_expires_at: Option<String> },
    /// No report document (the message will create it with a full budget).
    Absent,
    /// `ERASED`: the candidate's data was erased; untouched (a moved message is acknowledged
    /// without writing anything).
    Erased,
    /// A status that is not reset (`NOT_STARTED`: it has its whole budget already).
    NotResettable { status: &'static str },
}

/// How many times a reset is decided again after a concurrent writer changed the report
/// (`declarations/reports.json`).
const RESET_TRIES: usize = sophia_declarations::REPORT_RESET_TRIES;

/// Gives the report of `interview_id` a fresh attempt budget if it is `FAILED` or stuck
/// (`PROCESSING` whose claim has ended, [`claim::hold`] with the declared [`claim::lease`]),
/// recording `lastRetry: {at, by, via, attemptsBefore, statusBefore}` and appending the same to
/// `retries`. Never touches a `COMPLETED` report or
/// one a live worker holds; safe against a consumer racing it (see the module docs).
pub async fn reset_for_retry(
    db: &Database,
    interview_id: InterviewId,
    operator: &Operator,
) -> Result<ResetOutcome, AdminError> {
    let store = ReportStore::new(db);
    let lease = claim::lease();
    for _ in 0..RESET_TRIES {
        let Some(report) = store.find(interview_id).await? else { return Ok(ResetOutcome::Absent) };
        let now = DateTime::now();
        let status = report.status;
        // The rule for this status is declared once (declarations/reports.json), for the API too.
        match status.reset_rule() {
            ResetRule::AlreadyCompleted => return Ok(ResetOutcome::Completed),
            ResetRule::Erased => return Ok(ResetOutcome::Erased),
            ResetRule::Refused => return Ok(ResetOutcome::NotResettable { status: status.as_str() }),
            ResetRule::WhenLeaseExpired => {
                if let Hold::Held { until } = claim::hold(&report, now, lease) {
                    return Ok(ResetOutcome::Held {
                        lease_expires_at: Some(until.try_to_rfc3339_string().unwrap_or_default()),
                    });
                }
            }
            ResetRule::Reset => {}
        }
        let raw = store.find_raw(interview_id).await?;
        // The count as read, whatever numeric type the writer used (MongoDB compares numbers
        // across types; nx-27017, the local server, only within one, hence the `$in`).
        let stored_count = match raw.as_ref().and_then(|d| d.get("attemptCount")) {
            None | Some(Bson::Null) => Bson::Null,
            Some(_) => {
                let n = report.attempt_count;
                bson::bson!({"$in": [n, i64::from(n), f64::from(n)]})
            }
        };
        let mark = doc! {
            "at": now,
            "by": operator.by.as_str(),
            "via": operator.via.as_str(),
            "attemptsBefore": report.attempt_count,
            "statusBefore": status.as_str(),
        };
        // The compare: exactly the state read (a claim changes status, count and lease).
        let mut filter = doc! {"_id": report.id, "status": status.as_str(), "attemptCount": stored_count};
        let mut set = doc! {"attemptCount": 0_i32, "attemptsResetAt": now, "updatedAt": now, "lastRetry": mark.clone()};
        if status.reset_rule() == ResetRule::WhenLeaseExpired {
            filter.insert("leaseId", report.lease_id.map_or(Bson::Null, Bson::ObjectId));
            filter.insert("$or", claim::lapsed_filter(now, lease));
            // The ended claim made explicit: without a lease, the rule would read this write's
            // `updatedAt` as a new claim and hold the report for another lease length.
            set.insert("leaseExpiresAt", claim::held_until(&report, lease).unwrap_or(now));
        }
        let written = store.collection().update_one(filter, doc! {"$set": set, "$push": {"retries": mark}}).await?;
        if written.matched_count == 1 {
            tracing::info!(
                interviewId = %interview_id,
                attemptsBefore = report.attempt_count,
                statusBefore = status.as_str(),
                by = operator.by.as_str(),
                via = operator.via.as_str(),
                "report attempts reset for a retry"
            );
            return Ok(ResetOutcome::Reset { status_before: status.as_str(), attempts_before: report.attempt_count });
        }
        // Another writer changed the report since it was read: decide again.
    }
    Err(AdminError::Contended { tries: RESET_TRIES })
}
