//! The transactional outbox of `report.generate` (docs/design.md, "The report.generate outbox").
//!
//! The settlement transaction inserts a `PENDING` entry; after the commit the caller publishes it
//! through a [`ReportPublisher`] and marks it `PUBLISHED`. A failed publish leaves it pending and
//! is returned as an error (the record is retried; the redelivery finds the interview settled and
//! only flushes the entry). A publisher that skips (no queue URL configured) leaves it pending
//! with a warning: not a failure. [`flush_pending_outbox`] is the operator's sweep.
//!
//! Two concurrent flushes of one entry may both publish: a duplicate `report.generate` is
//! harmless (the report consumer is idempotent), a lost one is not.

use std::future::Future;
use std::time::Duration;

use bson::DateTime;
use chrono::Utc;
use sophia_contracts::{InterviewId, OrganizationId, ReportGenerate, RequestId};
use tokio::time::Instant;

use crate::error::{BoxError, CreditsError};
use crate::model::OutboxEntry;
use crate::store::CreditsStore;

/// A publish is not started with less than this left before its bound: it would likely be cut
/// off, and a publish that cannot finish leaves the entry pending for the redelivery anyway.
pub const PUBLISH_MIN_TIME: Duration = Duration::from_secs(1);

/// What a publisher did with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Sent {
        message_id: String,
    },
    /// Nothing was sent on purpose (e.g. the queue URL is not configured).
    Skipped {
        reason: String,
    },
}

/// Sends `report.generate`. Implemented over SQS by the Lambda crate; by closures in tests
/// ([`FnPublisher`]).
pub trait ReportPublisher {
    fn publish(
        &self,
        message: &ReportGenerate,
        request_id: &RequestId,
    ) -> impl Future<Output = Result<Published, BoxError>> + Send;
}

/// A publisher from a closure taking owned arguments.
#[derive(Debug, Clone)]
pub struct FnPublisher<F>(pub F);

impl<F, Fut> ReportPublisher for FnPublisher<F>
where
    F: Fn(ReportGenerate, RequestId) -> Fut + Sync,
    Fut: Future<Output = Result<Published, BoxError>> + Send,
{
    fn publish(
        &self,
        message: &ReportGenerate,
        request_id: &RequestId,
    ) -> impl Future<Output = Result<Published, BoxError>> + Send {
        (self.0)(message.clone(), request_id.clone())
    }
}

/// What flushing one entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushOutcome {
    Published {
        message_id: String,
    },
    /// The publisher skipped it; it stays pending.
    LeftPending {
        reason: String,
    },
    /// There was no pending entry.
    NothingPending,
    /// The interview's candidate data was erased: the entry was deleted, not published
    /// (docs/candidate-data.md, "Erasure").
    Erased,
}

/// Publishes one entry and marks it published. A publish error is recorded on the entry and
/// returned as [`CreditsError::Publish`] (retryable).
///
/// With a store bounded by a deadline ([`CreditsStore::with_deadline`]), the publish is not
/// started with less than [`PUBLISH_MIN_TIME`] left and is abandoned at the deadline: both return
/// [`CreditsError::PublishDeferred`] with the entry still pending (the redelivery flushes it).
///
/// Once the message is sent, failing to mark the entry published is logged and the call
/// succeeds: failing the record would only publish a second time on redelivery, and the entry
/// stays pending for the operator's flush (a duplicate `report.generate` is harmless).
pub async fn publish_entry(
    store: &CreditsStore,
    entry: &OutboxEntry,
    publisher: &impl ReportPublisher,
) -> Result<FlushOutcome, CreditsError> {
    // The erasure's check, just before the send: an erased interview's entry is deleted, never
    // published. (An erasure landing between this read and the send leaves one report.generate
    // naming ids only, which the report's tombstone acknowledges without writing.)
    if store.erasure_requested(entry.interview_id).await? {
        let deleted = store.delete_outbox_of(entry.interview_id).await?;
        tracing::info!(outboxId = %entry.id, deleted, "interview erased: outbox entry deleted, not published");
        return Ok(FlushOutcome::Erased);
    }
    let message = ReportGenerate {
        interview_id: InterviewId::new(entry.interview_id),
        organization_id: OrganizationId::new(entry.organization_id),
    };
    let request_id = RequestId::from_caller(Some(&entry.request_id));
    let deferred =
        || CreditsError::PublishDeferred { kind: OutboxEntry::REPORT_GENERATE, interview_id: entry.interview_id };
    let published = match store.deadline() {
        None => publisher.publish(&message, &request_id).await,
        Some(deadline) => {
            if deadline.saturating_duration_since(Instant::now()) < PUBLISH_MIN_TIME {
                tracing::warn!(outboxId = %entry.id, "too little time left to publish; the outbox entry stays pending");
                return Err(deferred());
            }
            match tokio::time::timeout_at(deadline, publisher.publish(&message, &request_id)).await {
                Ok(published) => published,
                Err(_) => {
                    tracing::warn!(outboxId = %entry.id, "the publish did not finish before the record's deadline; the outbox entry stays pending");
                    return Err(deferred());
                }
            }
        }
    };
    match published {
        Ok(Published::Sent { message_id }) => {
            match store.mark_published(&entry.id, &message_id, DateTime::from_chrono(Utc::now())).await {
                Ok(was_pending) => {
                    tracing::info!(outboxId = %entry.id, sqsMessageId = %message_id, wasPending = was_pending, "outbox entry published")
                }
                Err(e) => tracing::warn!(
                    outboxId = %entry.id,
                    sqsMessageId = %message_id,
                    error = %e,
                    "report.generate sent but the outbox entry could not be marked published; it stays pending for a later flush"
                ),
            }
            Ok(FlushOutcome::Published { message_id })
        }
        Ok(Published::Skipped { reason }) => {
            tracing::warn!(outboxId = %entry.id, reason = %reason, "report.generate not published; the outbox entry stays pending");
            Ok(FlushOutcome::LeftPending { reason })
        }
        Err(source) => {
            let text = source.to_string();
            if let Err(e) = store.record_publish_failure(&entry.id, &text).await {
                tracing::warn!(outboxId = %entry.id, error = %e, "could not record the publish failure on the outbox entry");
            }
            Err(CreditsError::Publish { kind: OutboxEntry::REPORT_GENERATE, interview_id: entry.interview_id, source })
        }
    }
}

/// Publishes the interview's pending `report.generate` entry, if there is one (a redelivery
/// after a failed publish).
pub async fn publish_pending_for_interview(
    store: &CreditsStore,
    interview_id: InterviewId,
    publisher: &impl ReportPublisher,
) -> Result<FlushOutcome, CreditsError> {
    match store.pending_report_entry(interview_id.oid()).await? {
        Some(entry) => publish_entry(store, &entry, publisher).await,
        None => Ok(FlushOutcome::NothingPending),
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlushReport {
    pub published: usize,
    pub left_pending: usize,
    /// Entries of erased interviews, deleted instead of published.
    pub erased: usize,
    /// `(outbox id, error)` of entries whose publish failed (they stay pending).
    pub failed: Vec<(String, String)>,
}

/// The operator's sweep: publishes up to `limit` pending entries created more than `older_than`
/// ago, oldest first. Failures are collected, not fatal.
pub async fn flush_pending_outbox(
    store: &CreditsStore,
    publisher: &impl ReportPublisher,
    older_than: Duration,
    limit: i64,
) -> Result<FlushReport, CreditsError> {
    let age = chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::zero());
    let before = DateTime::from_chrono(Utc::now() - age);
    let mut report = FlushReport::default();
    for entry in store.pending_outbox_before(before, limit).await? {
        match publish_entry(store, &entry, publisher).await {
            Ok(FlushOutcome::Published { .. }) => report.published += 1,
            Ok(FlushOutcome::Erased) => report.erased += 1,
            Ok(FlushOutcome::LeftPending { .. } | FlushOutcome::NothingPending) => report.left_pending += 1,
            Err(CreditsError::Publish { source, .. }) => report.failed.push((entry.id.clone(), source.to_string())),
            Err(e @ CreditsError::PublishDeferred { .. }) => report.failed.push((entry.id.clone(), e.to_string())),
            Err(e) => return Err(e),
        }
    }
    tracing::info!(
        published = report.published,
        leftPending = report.left_pending,
        erased = report.erased,
        failed = report.failed.len(),
        "outbox flushed"
    );
    Ok(report)
}
