use sophia_contracts::{InterviewId, OrganizationId};

use crate::openai::ModelError;

/// What a consumer should do with a message whose processing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Transient: let SQS redeliver it.
    Retry,
    /// Permanent: log and acknowledge.
    Drop,
}

/// Why `generate_report` did not finish.
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
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
}

impl ReportError {
    pub fn disposition(&self) -> Disposition {
        match self {
            Self::InterviewNotFound { .. } => Disposition::Drop,
            Self::Model { .. } | Self::Mongo(_) => Disposition::Retry,
        }
    }

    /// A short stable label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InterviewNotFound { .. } => "interview_not_found",
            Self::Model { source, .. } => source.kind(),
            Self::Mongo(_) => "mongo",
        }
    }
}
