use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_documents::DocumentError;

use crate::openai::ModelError;

/// What a consumer should do with a message whose processing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Let SQS redeliver it (and, after maxReceiveCount receives, move it to the DLQ).
    Retry,
    /// Permanent and nothing to show an operator: log and acknowledge.
    Drop,
}

/// Why an attempt failed, as stored on the report (`interviewReports.errorKind`) and logged
/// (`kind`). Decided from the error's type and OpenAI's documented status and `error.type` /
/// `error.code`, never from a message's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// HTTP 429 other than a quota error (`rate_limit_exceeded`, `slow_down`).
    RateLimited,
    /// HTTP 5xx, an unreachable endpoint, or a 200 whose body is not a chat completion.
    ServerError,
    /// No answer within the client timeout or the invocation's remaining time.
    Timeout,
    /// HTTP 403 (region not supported, IP not allowed), or a 401 other than a refused key.
    Auth,
    /// HTTP 401 `invalid_api_key`: the key was refused (wrong, revoked, or rotated away). The
    /// function reads the key again and, if Secrets Manager has a new one, tries once more with
    /// it (`sophia_platform::rotation`).
    CredentialsRefused,
    /// HTTP 429 `insufficient_quota` and its billing codes (credits exhausted, spend limit).
    Quota,
    /// Another HTTP 4xx: the request was rejected (a schema the API refuses, a bad parameter).
    BadRequest,
    /// HTTP 404 `model_not_found`: the configured model does not exist or is not available.
    ModelNotFound,
    /// The model refused (`message.refusal`); the refusal's text is kept on the report.
    Refusal,
    /// `finish_reason: "length"`: the JSON was cut off at `max_completion_tokens`.
    Truncated,
    /// `finish_reason: "content_filter"`.
    ContentFilter,
    /// The content is not JSON, does not match the schema, or breaks a bound of the report.
    InvalidOutput,
    /// The interview or report document cannot be read (a field of a type no reader expects).
    InvalidDocument,
    /// MongoDB failed (unreachable, timed out, a write error).
    Database,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::ServerError => "server_error",
            Self::Timeout => "timeout",
            Self::Auth => "auth",
            Self::CredentialsRefused => "credentials_refused",
            Self::Quota => "quota",
            Self::BadRequest => "bad_request",
            Self::ModelNotFound => "model_not_found",
            Self::Refusal => "refusal",
            Self::Truncated => "truncated",
            Self::ContentFilter => "content_filter",
            Self::InvalidOutput => "invalid_output",
            Self::InvalidDocument => "invalid_document",
            Self::Database => "database",
        }
    }

    /// Worth another chat completion within the same invocation (after `Retry-After` or a
    /// backoff, when the invocation has the time): the API said "not now", not "no".
    pub fn is_transient(self) -> bool {
        matches!(self, Self::RateLimited | Self::ServerError)
    }

    /// The provider or the database was away (rate limited, a 5xx or unreachable, no answer in
    /// time, MongoDB failing): the attempt says nothing about the report, so it is given back
    /// ([`crate::store::ReportStore::fail`]) and the consumer backs off rather than spending one
    /// of the report's attempts (docs/design.md, "Transient failures and outages"). Every other kind is
    /// an answer that was wrong and counts.
    pub fn is_provider_away(self) -> bool {
        matches!(self, Self::RateLimited | Self::ServerError | Self::Timeout | Self::Database)
    }

    /// Every kind, in declaration order (for the stored document's schema and tests).
    pub const ALL: [ErrorKind; 14] = [
        Self::RateLimited,
        Self::ServerError,
        Self::Timeout,
        Self::Auth,
        Self::CredentialsRefused,
        Self::Quota,
        Self::BadRequest,
        Self::ModelNotFound,
        Self::Refusal,
        Self::Truncated,
        Self::ContentFilter,
        Self::InvalidOutput,
        Self::InvalidDocument,
        Self::Database,
    ];
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
