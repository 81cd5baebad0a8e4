//! The crate's typed error and the retry-or-drop decision for queue consumers.

use bson::oid::ObjectId;
use mongodb::error::{Error as MongoError, ErrorKind, WriteFailure};
use sophia_documents::DocumentError;

use crate::arithmetic::{Insufficient, PlanError};

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a queue consumer should do with a record whose processing returned this error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Report a batch item failure: SQS redelivers, and after maxReceiveCount the DLQ keeps it.
    Retry,
    /// Log and acknowledge: no redelivery can succeed.
    Drop,
    /// No redelivery can succeed, and a person must see the message: the consumer sends it to
    /// its DLQ on this delivery (then acknowledges it), instead of spending the queue's
    /// receives on retries that cannot change the answer.
    DeadLetter,
}

#[derive(Debug, thiserror::Error)]
pub enum CreditsError {
    #[error("interview {interview_id} not found")]
    InterviewNotFound { interview_id: ObjectId },
    #[error("interview {interview_id} belongs to organization {actual}, not to {claimed} as the message says")]
    WrongOrganization { interview_id: ObjectId, claimed: ObjectId, actual: ObjectId },
    #[error("interview {interview_id} already holds a reservation")]
    AlreadyReserved { interview_id: ObjectId },
    #[error("interview {interview_id} is already settled")]
    AlreadySettled { interview_id: ObjectId },
    #[error("organization {organization_id} not found")]
    OrganizationNotFound { organization_id: ObjectId },
    #[error("organization {organization_id}: {source}")]
    InsufficientCredits { organization_id: ObjectId, source: Insufficient },
    #[error("interview {interview_id}: credit data is inconsistent: {source}")]
    Inconsistent { interview_id: ObjectId, source: PlanError },
    /// A stored document (interview, lot, organization) that cannot be read as the model says:
    /// a fractional credit amount, a wrong type, a sum that overflows. The error names the
    /// field, never its value.
    #[error("inconsistent data: {0}")]
    Unreadable(#[from] DocumentError),
    /// The message's completion or failure time is outside its window (docs/design.md, "Message
    /// contract decisions"); retention is computed from it, so it is not trusted.
    #[error("interview {interview_id}: the message's `{field}` is {why}")]
    AnchorOutOfWindow { interview_id: ObjectId, field: &'static str, why: &'static str },
    /// An operation did not finish before the record's time ran out.
    #[error("{op} did not finish before the record's deadline")]
    DeadlineExceeded { op: &'static str },
    /// Too little time was left to publish after the commit: the outbox entry stays pending and
    /// the redelivery publishes it.
    #[error("too little time left to publish {kind} for interview {interview_id}; its outbox entry stays pending")]
    PublishDeferred { kind: &'static str, interview_id: ObjectId },
    /// A guarded write matched nothing: another writer changed the document since it was read.
    #[error("{what} changed concurrently")]
    Conflict { what: &'static str },
    #[error("MongoDB {op} failed: {source}")]
    Mongo { op: &'static str, source: MongoError },
    /// A raw command's reply carried a write error (the typed API would have returned it as a
    /// [`CreditsError::Mongo`]).
    #[error("MongoDB {op} rejected a write (code {code}): {message}")]
    WriteRejected { op: &'static str, code: i64, message: String },
    #[error("transaction gave up after {attempts} attempts: the deadline is too close to retry ({last})")]
    RetryBudgetExhausted { attempts: u32, last: Box<CreditsError> },
    #[error("publishing {kind} for interview {interview_id} failed: {source}")]
    Publish { kind: &'static str, interview_id: ObjectId, source: BoxError },
}

impl CreditsError {
    /// Retry or drop, by kind (see the crate docs for the reasoning):
    /// - MongoDB errors, conflicts, deadlines, an exhausted retry budget and a failed publish:
    ///   retry;
    /// - an interview that is not (yet) there: retry (a lagging read may find it), so the message
    ///   ends in the DLQ where an operator sees it, rather than being lost (docs/design.md);
    /// - an interview of another organization than the message says: the DLQ on the first
    ///   delivery (the interview's organization does not change by itself; docs/design.md,
    ///   "Settlement decisions");
    /// - inconsistent or unreadable credit data, an anchor outside its window: retry, so the
    ///   message waits in the DLQ for an operator fix;
    /// - the reservation-side refusals (already reserved or settled, insufficient credits): drop.
    pub fn disposition(&self) -> Disposition {
        match self {
            Self::AlreadyReserved { .. } | Self::AlreadySettled { .. } | Self::InsufficientCredits { .. } => {
                Disposition::Drop
            }
            Self::WrongOrganization { .. } => Disposition::DeadLetter,
            Self::InterviewNotFound { .. }
            | Self::OrganizationNotFound { .. }
            | Self::Inconsistent { .. }
            | Self::Unreadable(_)
            | Self::AnchorOutOfWindow { .. }
            | Self::Conflict { .. }
            | Self::Mongo { .. }
            | Self::WriteRejected { .. }
            | Self::DeadlineExceeded { .. }
            | Self::RetryBudgetExhausted { .. }
            | Self::Publish { .. }
            | Self::PublishDeferred { .. } => Disposition::Retry,
        }
    }

    /// A retry that waits for something away to come back (MongoDB failing or busy, a concurrent
    /// writer, the record's time running out, SQS refusing a publish), not for an operator: the
    /// consumer backs the record off for about a minute rather than the queue's visibility
    /// timeout. Data an operator must fix is not transient.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Mongo { .. }
                | Self::Conflict { .. }
                | Self::DeadlineExceeded { .. }
                | Self::RetryBudgetExhausted { .. }
                | Self::Publish { .. }
                | Self::PublishDeferred { .. }
        )
    }

    pub fn is_retryable(&self) -> bool {
        self.disposition() == Disposition::Retry
    }

    /// Whether the whole transaction may be run again at once (MongoDB says so, or a guard saw a
    /// concurrent change).
    pub fn is_transient_transaction_error(&self) -> bool {
        match self {
            Self::Mongo { source, .. } => source.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR),
            Self::Conflict { .. } => true,
            _ => false,
        }
    }

    pub fn mongo(op: &'static str) -> impl FnOnce(MongoError) -> Self {
        move |source| Self::Mongo { op, source }
    }
}

/// Whether a write failed on a unique index (E11000).
pub fn is_duplicate_key(e: &MongoError) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::InsertMany(m) => m.write_errors.as_ref().is_some_and(|ws| ws.iter().any(|w| w.code == 11000)),
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_reservation_side_refusals_are_dropped_and_a_wrong_organization_dead_lettered() {
        let id = ObjectId::new();
        assert_eq!(
            CreditsError::WrongOrganization { interview_id: id, claimed: id, actual: id }.disposition(),
            Disposition::DeadLetter,
            "docs/design.md: another organization's interview goes to the DLQ on its first delivery"
        );
        assert_eq!(CreditsError::AlreadyReserved { interview_id: id }.disposition(), Disposition::Drop);
        assert_eq!(CreditsError::InterviewNotFound { interview_id: id }.disposition(), Disposition::Retry);
        assert_eq!(CreditsError::Conflict { what: "x" }.disposition(), Disposition::Retry);
        let unreadable = DocumentError::invalid("creditLots", id, "remaining", "an integer");
        assert_eq!(CreditsError::from(unreadable).disposition(), Disposition::Retry);
        let anchor = CreditsError::AnchorOutOfWindow { interview_id: id, field: "completedAt", why: "in the future" };
        assert_eq!(anchor.disposition(), Disposition::Retry);
        assert_eq!(CreditsError::DeadlineExceeded { op: "find" }.disposition(), Disposition::Retry);
        assert!(CreditsError::Conflict { what: "x" }.is_transient_transaction_error());
        assert!(!CreditsError::InterviewNotFound { interview_id: id }.is_transient_transaction_error());
        let publish = CreditsError::Publish { kind: "report.generate", interview_id: id, source: "down".into() };
        assert!(publish.is_retryable());
        assert!(CreditsError::PublishDeferred { kind: "report.generate", interview_id: id }.is_retryable());
    }
}
