//! [`ErrorKind`]: why an attempt failed, as stored on the report and logged; what each kind
//! means for the retry. Read by the OpenAI client, the store, the service and the error type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
