//! Admin retry (docs/design.md "Admin retry"): re-publish `report.generate` rather than generating
//! synchronously, and reset a FAILED report's attempts only when explicitly asked. For the
//! operator CLI; the publisher is a closure so this crate needs no SQS client (pass
//! `SqsProducer::publish_report_generate`).

use std::future::Future;

use mongodb::Database;
use sophia_contracts::{InterviewId, OrganizationId, ReportGenerate, RequestId};

use crate::interview;
use crate::model::ReportStatus;
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

/// Re-publishes `report.generate` for one interview of one organization.
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
    let RetryRequest { interview_id, organization_id, reset_attempts } = request;
    if interview::load_raw(db, interview_id, organization_id).await?.is_none() {
        return Err(AdminError::InterviewNotFound { interview_id, organization_id });
    }
    let store = ReportStore::new(db);
    let report = store.find(interview_id).await?;
    let mut attempts_reset = false;
    match &report {
        Some(r) if r.status == ReportStatus::Completed => return Ok(RetryOutcome::AlreadyCompleted),
        Some(r) if reset_attempts => {
            if r.status != ReportStatus::Failed || !store.reset_attempts(interview_id).await? {
                return Err(AdminError::NotFailed(r.status.as_str()));
            }
            attempts_reset = true;
        }
        Some(r) if r.attempt_count >= MAX_ATTEMPTS => {
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
