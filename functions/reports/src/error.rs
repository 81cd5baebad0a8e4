use sophia_contracts::{InterviewId, OrganizationId};
use sophia_documents::DocumentError;

use crate::error_kind::ErrorKind;
use crate::openai::ModelError;

/// What a consumer should do with a message whose processing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Let SQS redeliver it (and, after maxReceiveCount receives, move it to the DLQ).
    Retry,
    /// Permanent and nothing to show an operator: log and acknowledge.
    Drop,
}

/// Why `generate_report` did not finish. Every message names fields, statuses and codes, never
/// candidate text, model output or a secret.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No interview with this id in this organization, or it is soft-deleted. Nothing was
    /// written.
    #[error(
        "interview {interview_id} not found in organization {organization_id} (absent, soft-deleted or another organization's)"
    )]
    InterviewNotFound { interview_id: InterviewId, organization_id: OrganizationId },
    /// The model call failed; the report was set `FAILED` with `lastError` first.
    #[error("attempt {attempt}: {source}")]
    Model {
        attempt: i32,
        #[source]
        source: ModelError,
    },
    /// A stored document (interview or report) cannot be read: permanent, but shown to an
    /// operator through the DLQ (docs/design.md, "Documents written by other services").
    #[error("{0}")]
    Document(#[from] DocumentError),
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
}

impl ReportError {
    /// Retry (SQS redelivers, then the DLQ) for every failure of an attempt, whatever its kind:
    /// docs/design.md's "every attempt's error is returned, the third included". Only a missing
    /// interview is dropped (nothing was written, nothing to show).
    pub fn disposition(&self) -> Disposition {
        match self.error_kind() {
            None => Disposition::Drop,
            Some(_) => Disposition::Retry,
        }
    }

    /// The stored kind; `None` for a missing interview (no report is written for it).
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Self::InterviewNotFound { .. } => None,
            Self::Model { source, .. } => Some(source.kind()),
            Self::Document(_) => Some(ErrorKind::InvalidDocument),
            Self::Mongo(_) => Some(ErrorKind::Database),
        }
    }

    /// Whether the failure is the provider's or the database's absence
    /// ([`ErrorKind::is_provider_away`]): the consumer backs off and the attempt is given back.
    pub fn is_transient(&self) -> bool {
        self.error_kind().is_some_and(ErrorKind::is_provider_away)
    }

    /// The provider's `Retry-After`, when its answer gave one.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Model { source, .. } => source.retry_after(),
            _ => None,
        }
    }

    /// A short stable label for logs.
    pub fn kind(&self) -> &'static str {
        self.error_kind().map_or("interview_not_found", ErrorKind::as_str)
    }

    /// The refusal text to keep on the report, if the model refused.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Model { source: ModelError::Refusal { text }, .. } => Some(text),
            _ => None,
        }
    }
}
