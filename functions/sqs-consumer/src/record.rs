use std::time::{Duration, SystemTime};

use aws_lambda_events::event::sqs::SqsMessage;
use sophia_contracts::{MessageAttributes, RequestId};
use tokio::time::Instant;

/// What the wrapper knows about a record besides its parsed body, handed to the handler.
#[derive(Debug, Clone)]
pub struct RecordMeta {
    pub message_id: String,
    /// The `requestId` attribute, or `unknown`.
    pub request_id: RequestId,
    /// The `eventType` attribute as sent (the body decides routing; this is for logs).
    pub event_type_attribute: Option<String>,
    /// `ApproximateReceiveCount`: 1 on the first delivery.
    pub receive_count: u32,
    /// When the invocation's time runs out, if known. Handlers bound their own retries by it.
    pub deadline: Option<Instant>,
    /// Since when this message may have been failing transiently: the `transientSince`
    /// attribute of a requeued copy, else the first receive (`ApproximateFirstReceiveTimestamp`),
    /// else when it was sent (`SentTimestamp`). The give-up age counts from it.
    pub transient_since: Option<SystemTime>,
    /// When the message was first published, as far as SQS says: the earliest of its
    /// `SentTimestamp` and, for a requeued copy, its `transientSince` attribute (the copy's own
    /// `SentTimestamp` is the requeue's). The time to settlement counts from it.
    pub published_at: Option<SystemTime>,
}

impl RecordMeta {
    pub(crate) fn from_record(message_id: String, record: &SqsMessage, deadline: Option<Instant>) -> Self {
        let attr = |name: &str| record.message_attributes.get(name).and_then(|a| a.string_value.as_deref());
        Self {
            message_id,
            request_id: RequestId::from_caller(attr(MessageAttributes::REQUEST_ID)),
            event_type_attribute: attr(MessageAttributes::EVENT_TYPE).map(|s| s.chars().take(64).collect()),
            receive_count: record.attributes.get("ApproximateReceiveCount").and_then(|v| v.parse().ok()).unwrap_or(1),
            deadline,
            transient_since: attr(crate::backoff::TRANSIENT_SINCE)
                .or_else(|| record.attributes.get("ApproximateFirstReceiveTimestamp").map(String::as_str))
                .or_else(|| record.attributes.get("SentTimestamp").map(String::as_str))
                .and_then(crate::backoff::from_epoch_ms),
            published_at: [
                record.attributes.get("SentTimestamp").map(String::as_str),
                attr(crate::backoff::TRANSIENT_SINCE),
            ]
            .into_iter()
            .flatten()
            .filter_map(crate::backoff::from_epoch_ms)
            .min(),
        }
    }

    /// Milliseconds from [`RecordMeta::published_at`] to now (`None` when SQS did not say).
    pub fn since_published_ms(&self) -> Option<f64> {
        let at = self.published_at?;
        Some(SystemTime::now().duration_since(at).unwrap_or_default().as_millis() as f64)
    }

    /// Time left before the deadline (None when the deadline is unknown).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// How one record ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The handler succeeded: the record is deleted.
    Processed,
    /// The body did not parse: logged and deleted (no retry can fix it).
    DroppedInvalid,
    /// The handler reported a permanent failure: logged and deleted.
    DroppedByHandler,
    /// The handler asked for a retry: reported as a batch item failure.
    Failed,
    /// The handler panicked: reported as a batch item failure; other records are unaffected.
    Panicked,
    /// Not started because the invocation's deadline was too close: reported as a failure.
    DeadlineSkipped,
    /// Still running shortly before the invocation's deadline: cancelled and reported as a
    /// failure, so the invocation answers in time.
    DeadlineCancelled,
    /// A transient failure on the last receive: a delayed copy was sent, then the record
    /// acknowledged (see [`crate::backoff`]).
    Requeued,
    /// A failure no retry can change ([`crate::Failure::DeadLetter`]): the record was sent to its
    /// queue's DLQ, then acknowledged.
    DeadLettered,
}

impl Outcome {
    /// Whether SQS must redeliver the record.
    pub fn is_batch_item_failure(self) -> bool {
        matches!(self, Self::Failed | Self::Panicked | Self::DeadlineSkipped | Self::DeadlineCancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processed => "processed",
            Self::DroppedInvalid => "dropped_invalid",
            Self::DroppedByHandler => "dropped",
            Self::Failed => "failed_retry",
            Self::Panicked => "panicked_retry",
            Self::DeadlineSkipped => "deadline_retry",
            Self::DeadlineCancelled => "deadline_cancelled_retry",
            Self::Requeued => "requeued",
            Self::DeadLettered => "dead_lettered",
        }
    }
}
