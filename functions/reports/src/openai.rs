//! The model call: one chat completion with `response_format: json_schema` (`strict: true`),
//! against OpenAI or any compatible endpoint (`OPENAI_BASE_URL`; the tests and the offline local
//! runner point it at `sophia-openai-fake`).
//!
//! The request and response bodies are async-openai's types; the HTTP exchange is done here with
//! the reqwest client async-openai itself uses, so that:
//! - every failure is classified from the real API's documented shapes (status and
//!   `error.type` / `error.code`, `finish_reason`, `message.refusal`) into an [`ErrorKind`];
//! - a 429's `Retry-After` (or `retry-after-ms`) is honoured only inside the time the invocation
//!   has left: a wait that would end past the deadline is not started, the attempt fails as
//!   `rate_limited` at once;
//! - no library logs a response body (async-openai's client logs whole error and unparsable
//!   bodies, which can quote candidate text);
//! - redirects are never followed (reqwest follows up to 10 by default,
//!   <https://docs.rs/reqwest/latest/reqwest/redirect/index.html>, and a 307/308 re-sends
//!   the body, the transcript, to wherever the `Location` points): a 3xx fails the attempt as
//!   `bad_request`, nothing is sent elsewhere;
//! - the answer's body is read up to [`MAX_RESPONSE_BYTES`] and no further.
//!
//! Within one attempt, `rate_limited` and `server_error` answers are retried up to
//! [`MAX_RETRIES`] times (after `Retry-After`, else a 100 ms doubling backoff); everything else
//! fails the attempt at once and goes back to SQS.
//!
//! Nothing here logs or returns candidate text, model output or the key: errors carry statuses,
//! OpenAI's `type`/`code`/`param` identifiers (never its `message`, which can quote the request),
//! and parse positions or schema paths.

use std::fmt;
use std::time::{Duration, Instant};

use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessage, ChatCompletionRequestSystemMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, CreateChatCompletionRequest, CreateChatCompletionResponse, FinishReason,
    ResponseFormat, ResponseFormatJsonSchema,
};
use serde_json::Value;
use sophia_platform::config::{self, ConfigError, DEFAULT_OPENAI_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL};

use crate::error_kind::ErrorKind;
use crate::prompt::Prompt;
use crate::report::{LlmReport, OutOfRange};
use crate::schema::{SCHEMA_NAME, report_schema};

/// Milliseconds one attempt (its chat completions and their waits) may take, end to end.
pub const OPENAI_TIMEOUT_MS: &str = sophia_platform::env::declared("OPENAI_TIMEOUT_MS");
/// `max_completion_tokens` of the request.
pub const OPENAI_MAX_COMPLETION_TOKENS: &str = sophia_platform::env::declared("OPENAI_MAX_COMPLETION_TOKENS");
/// `temperature` of the request (0 to 2).
pub const OPENAI_TEMPERATURE: &str = sophia_platform::env::declared("OPENAI_TEMPERATURE");

/// Default attempt timeout: well inside the 300 s function timeout, leaving time to record a
/// failure before the invocation ends.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default `max_completion_tokens`: a report for a role of 15 skills and 15 questions with their
/// reasoning is about 3,000 tokens; 8,000 leaves room without letting a runaway reply cost more
/// than a few cents (gpt-4.1-mini allows 32,768).
pub const DEFAULT_MAX_COMPLETION_TOKENS: u32 = 8_000;
/// Default temperature: low, for consistent scoring of the same transcript.
pub const DEFAULT_TEMPERATURE: f32 = 0.2;
/// Chat completions retried within one attempt after a `rate_limited` or `server_error` answer.
pub const MAX_RETRIES: usize = 3;
/// First backoff when the answer has no `Retry-After` (doubled each time, at most 8 s).
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The most of an answer's body that is read: a report of `max_completion_tokens` 32,768 (the
/// model's maximum) is about 130 KB of JSON, so 4 MiB is far beyond any real answer and still
/// small for a 512 MB function. A longer body fails the call.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Time kept back from the invocation's deadline so that a timed-out attempt can still be
/// recorded as FAILED before the invocation ends.
pub const FAILURE_RECORDING_MARGIN: Duration = Duration::from_secs(3);

/// How to reach the model.
#[derive(Clone)]
pub struct OpenAiSettings {
    /// Required for api.openai.com; optional for a compatible endpoint that needs none.
    pub api_key: Option<String>,
    pub model: String,
    /// e.g. `http://127.0.0.1:PORT/v1`; `None` is OpenAI.
    pub base_url: Option<String>,
    pub timeout: Duration,
    pub max_completion_tokens: u32,
    pub temperature: f32,
}

impl fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("temperature", &self.temperature)
            .finish()
    }
}

fn parse_max_tokens(value: Option<&str>) -> Result<u32, ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid { name: OPENAI_MAX_COMPLETION_TOKENS, reason: reason.into() };
    match value.map(str::parse::<u32>) {
        None => Ok(DEFAULT_MAX_COMPLETION_TOKENS),
        Some(Ok(n)) if (1..=1_000_000).contains(&n) => Ok(n),
        Some(_) => Err(invalid("expected a whole number of tokens from 1 to 1000000")),
    }
}

fn parse_temperature(value: Option<&str>) -> Result<f32, ConfigError> {
    match value.map(str::parse::<f32>) {
        None => Ok(DEFAULT_TEMPERATURE),
        Some(Ok(t)) if (0.0..=2.0).contains(&t) => Ok(t),
        Some(_) => {
            Err(ConfigError::Invalid { name: OPENAI_TEMPERATURE, reason: "expected a number from 0 to 2".into() })
        }
    }
}

impl OpenAiSettings {
    /// From `OPENAI_API_KEY` (or what `sophia_platform::secrets::load` read from
    /// `OPENAI_API_KEY_SECRET_ARN`), `OPENAI_MODEL` (default `gpt-4.1-mini`), `OPENAI_BASE_URL`,
    /// `OPENAI_TIMEOUT_MS` (default 120 s), `OPENAI_MAX_COMPLETION_TOKENS` (default 8000) and
    /// `OPENAI_TEMPERATURE` (default 0.2). The key is required unless a base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        let settings = Self {
            api_key: sophia_platform::secrets::get(sophia_platform::secrets::Secret::OpenAiApiKey)
                .map(|k| k.into_inner()),
            model: config::optional(OPENAI_MODEL).unwrap_or_else(|| DEFAULT_OPENAI_MODEL.to_owned()),
            base_url: config::optional(OPENAI_BASE_URL),
            timeout: config::millis(OPENAI_TIMEOUT_MS, DEFAULT_TIMEOUT)?,
            max_completion_tokens: parse_max_tokens(config::optional(OPENAI_MAX_COMPLETION_TOKENS).as_deref())?,
            temperature: parse_temperature(config::optional(OPENAI_TEMPERATURE).as_deref())?,
        };
        if settings.api_key.is_none() && settings.base_url.is_none() {
            return Err(ConfigError::Missing(OPENAI_API_KEY));
        }
        Ok(settings)
    }

    /// A compatible endpoint (e.g. the local fake) without a key, with the defaults.
    pub fn for_endpoint(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            api_key: None,
            model: model.into(),
            base_url: Some(base_url.into()),
            timeout: DEFAULT_TIMEOUT,
            max_completion_tokens: DEFAULT_MAX_COMPLETION_TOKENS,
            temperature: DEFAULT_TEMPERATURE,
        }
    }
}

/// An identifier from an OpenAI error body (`type`, `code`, `param`), kept only if it looks like
/// one: short, no spaces or quotes (a `message` is never kept; it can quote the request).
fn identifier(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']'));
    ok.then(|| s.to_owned())
}

/// The billing codes OpenAI returns with a 429 whose `type` is `insufficient_quota`.
const QUOTA_CODES: &[&str] = &[
    "insufficient_quota",
    "credit_balance_exhausted",
    "organization_spend_limit_exceeded",
    "project_spend_limit_exceeded",
    "organization_usage_limit_exceeded",
];

/// The kind of an HTTP error answer, from its status and OpenAI's `error.type` / `error.code`
/// (<https://platform.openai.com/docs/guides/error-codes>).
pub fn classify_status(status: u16, error_type: Option<&str>, code: Option<&str>) -> ErrorKind {
    match status {
        401 if code == Some("invalid_api_key") => ErrorKind::CredentialsRefused,
        401 | 403 => ErrorKind::Auth,
        404 if code == Some("model_not_found") => ErrorKind::ModelNotFound,
        408 => ErrorKind::Timeout,
        429 if error_type == Some("insufficient_quota") || code.is_some_and(|c| QUOTA_CODES.contains(&c)) => {
            ErrorKind::Quota
        }
        429 => ErrorKind::RateLimited,
        500..=599 => ErrorKind::ServerError,
        _ => ErrorKind::BadRequest,
    }
}

/// Why the model did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("chat completion timed out after {0:?}")]
    Timeout(Duration),
    #[error("the OpenAI endpoint could not be reached ({0})")]
    Unreachable(&'static str),
    /// An HTTP error answer. OpenAI's `message` is not kept (it can quote the request).
    #[error("OpenAI API error: HTTP {status} (type {}, code {}{})",
        error_type.as_deref().unwrap_or("-"), code.as_deref().unwrap_or("-"),
        param.as_deref().map(|p| format!(", param {p}")).unwrap_or_default())]
    Api {
        status: u16,
        kind: ErrorKind,
        error_type: Option<String>,
        code: Option<String>,
        param: Option<String>,
        retry_after: Option<Duration>,
    },
    #[error("the HTTP 200 answer is not a chat completion ({0})")]
    NotACompletion(String),
    /// A 3xx: the redirect is not followed (the request body holds the transcript).
    #[error("the OpenAI endpoint answered HTTP {status} (a redirect, not followed)")]
    Redirect { status: u16 },
    /// The answer's body is longer than [`MAX_RESPONSE_BYTES`]; reading stopped there.
    #[error("the answer's body is longer than {limit} bytes; not read further")]
    TooLarge { limit: usize },
    /// The refusal's text is kept on the report, never in this message.
    #[error("the model refused to answer ({} characters of refusal text, kept on the report as `refusal`)", text.chars().count())]
    Refusal { text: String },
    #[error("the completion was cut off at max_completion_tokens {max_completion_tokens} (finish_reason length)")]
    Truncated { max_completion_tokens: u32 },
    #[error("the completion was stopped by the content filter (finish_reason content_filter)")]
    ContentFilter,
    #[error("the completion has no choice or no content (finish_reason {0})")]
    NoContent(String),
    #[error("the content is not JSON: {0}")]
    NotJson(String),
    #[error("the content does not match the report schema: {0}")]
    SchemaMismatch(String),
    #[error("the report is out of range: {0}")]
    OutOfRange(#[from] OutOfRange),
    #[error("the chat completion request could not be built: {0}")]
    Request(String),
}

impl ModelError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::Unreachable(_) | Self::NotACompletion(_) => ErrorKind::ServerError,
            Self::Api { kind, .. } => *kind,
            Self::Refusal { .. } => ErrorKind::Refusal,
            Self::Truncated { .. } => ErrorKind::Truncated,
            Self::ContentFilter => ErrorKind::ContentFilter,
            Self::NoContent(_)
            | Self::NotJson(_)
            | Self::SchemaMismatch(_)
            | Self::OutOfRange(_)
            | Self::TooLarge { .. } => ErrorKind::InvalidOutput,
            Self::Request(_) | Self::Redirect { .. } => ErrorKind::BadRequest,
        }
    }

    /// The provider's `Retry-After` (or `retry-after-ms`), when the answer gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// `retry-after-ms` (OpenAI's, milliseconds) or `Retry-After` (seconds), as sent.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let secs = number("retry-after-ms").map(|ms| ms / 1000.0).or_else(|| number("retry-after"))?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

fn transport(e: &reqwest::Error) -> ModelError {
    if e.is_timeout() {
        ModelError::Timeout(Duration::ZERO)
    } else if e.is_connect() {
        ModelError::Unreachable("connection failed")
    } else if e.is_body() || e.is_decode() {
        ModelError::Unreachable("the answer's body could not be read")
    } else {
        ModelError::Unreachable("request failed")
    }
}

/// The body, read chunk by chunk up to `limit` bytes (a `Content-Length` over it is refused
/// before reading).
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ModelError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(ModelError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport(&e))? {
        if body.len() + chunk.len() > limit {
            return Err(ModelError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A serde_json error as a position or a schema path, without the data it quotes.
fn content_error(e: serde_path_to_error::Error<serde_json::Error>) -> ModelError {
    let inner = e.inner();
    let position = format!("line {} column {}", inner.line(), inner.column());
    match inner.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            ModelError::NotJson(format!("{:?} error at {position}", inner.classify()))
        }
        _ => {
            let message = inner.to_string();
            let what = if let Some(rest) = message.strip_prefix("missing field `") {
                format!("missing field `{}`", rest.split('`').next().unwrap_or_default())
            } else if message.starts_with("unknown field") {
                "a field the schema does not have".to_owned()
            } else if message.starts_with("unknown variant") {
                "a value outside the enum".to_owned()
            } else {
                message
                    .rsplit_once(", expected ")
                    .map(|(_, expected)| {
                        let expected: String = expected.chars().take(80).collect();
                        format!("expected {}", expected.split(" at line ").next().unwrap_or_default())
                    })
                    .unwrap_or_else(|| "a value of the wrong type".to_owned())
            };
            ModelError::SchemaMismatch(format!("at `{}`: {what} ({position})", e.path()))
        }
    }
}

/// A parsed, validated report and how it was obtained.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub report: LlmReport,
    /// The message content as the model wrote it (the assistant message of a repair request).
    pub content: String,
    /// The model that answered, as the API reported it.
    pub model: String,
    pub completion_id: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    /// Prompt tokens served from OpenAI's prompt cache.
    pub cached_tokens: u32,
    pub latency: Duration,
    /// Chat completions retried within this attempt (rate limits, server errors).
    pub retries: usize,
}

/// The report model client, built once per process.
#[derive(Clone)]
pub struct ReportModel {
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
    model: String,
    timeout: Duration,
    max_completion_tokens: u32,
    temperature: f32,
}

impl fmt::Debug for ReportModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReportModel")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ReportModel {
    pub fn new(settings: &OpenAiSettings) -> Self {
        let base = settings.base_url.as_deref().unwrap_or("https://api.openai.com/v1").trim_end_matches('/');
        // reqwest is built without a crypto provider of its own: it takes the process default.
        sophia_platform::tls::install_default_provider();
        // No redirect is followed: a 307/308 would re-send the transcript to another host
        // (reqwest's default policy follows up to 10).
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            http,
            endpoint: format!("{base}/chat/completions"),
            api_key: settings.api_key.clone(),
            model: settings.model.clone(),
            timeout: settings.timeout,
            max_completion_tokens: settings.max_completion_tokens,
            temperature: settings.temperature,
        }
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self::new(&OpenAiSettings::from_env()?))
    }

    /// The configured model.
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn max_completion_tokens(&self) -> u32 {
        self.max_completion_tokens
    }

    /// The repair request: the first request unchanged (its cacheable prefix too: instructions,
    /// schema, interview data, `prompt_cache_key`), then the first reply as the assistant's
    /// message and the corrective message ([`crate::repair`]) after it.
    pub fn repair_request(&self, prompt: &Prompt, first_reply: &str, corrective: &str) -> CreateChatCompletionRequest {
        let mut request = self.request(prompt);
        request.messages.push(ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
            content: Some(ChatCompletionRequestAssistantMessageContent::Text(first_reply.to_owned())),
            ..Default::default()
        }));
        request.messages.push(ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(corrective.to_owned()),
            name: None,
        }));
        request
    }

    /// The request body (exactly what is sent).
    pub fn request(&self, prompt: &Prompt) -> CreateChatCompletionRequest {
        let system = ChatCompletionRequestSystemMessage {
            content: ChatCompletionRequestSystemMessageContent::Text(prompt.system.clone()),
            name: None,
        };
        let user = ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(prompt.user.clone()),
            name: None,
        };
        CreateChatCompletionRequest {
            model: self.model.clone(),
            messages: vec![ChatCompletionRequestMessage::System(system), ChatCompletionRequestMessage::User(user)],
            response_format: Some(ResponseFormat::JsonSchema {
                json_schema: ResponseFormatJsonSchema {
                    name: SCHEMA_NAME.to_owned(),
                    description: Some("A structured assessment of one job interview".to_owned()),
                    schema: report_schema(),
                    strict: Some(true),
                },
            }),
            temperature: Some(self.temperature),
            max_completion_tokens: Some(self.max_completion_tokens),
            // One key per prompt version: requests that share the static prefix (instructions and
            // schema) are routed to the same cache (https://platform.openai.com/docs/guides/prompt-caching).
            prompt_cache_key: Some(crate::prompt::prompt_version().to_owned()),
            ..Default::default()
        }
    }

    /// When an attempt that starts now must end: the configured timeout, or `deadline` less
    /// [`FAILURE_RECORDING_MARGIN`], whichever is sooner. Every call of the attempt (the first
    /// and the repair) shares it.
    pub fn attempt_end(&self, deadline: Option<tokio::time::Instant>) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        let end = now + self.timeout;
        match deadline {
            Some(d) => end.min(d.checked_sub(FAILURE_RECORDING_MARGIN).unwrap_or(now).max(now)),
            None => end,
        }
    }

    /// One attempt of one call: a chat completion (retried on `rate_limited` / `server_error`
    /// while time is left), bounded by [`attempt_end`](Self::attempt_end).
    pub async fn generate(
        &self,
        prompt: &Prompt,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<ModelReply, ModelError> {
        self.complete_until(&self.request(prompt), self.attempt_end(deadline)).await
    }

    /// One chat completion of `request` (retried on `rate_limited` / `server_error` while time
    /// is left), ending by `end`.
    pub async fn complete_until(
        &self,
        request: &CreateChatCompletionRequest,
        end: tokio::time::Instant,
    ) -> Result<ModelReply, ModelError> {
        // The time this call has: a timeout reports it.
        let budget = end.saturating_duration_since(tokio::time::Instant::now());
        if budget.is_zero() {
            return Err(ModelError::Timeout(budget));
        }
        let body = serde_json::to_vec(request).map_err(|e| ModelError::Request(e.to_string()))?;
        let started = Instant::now();
        let mut retries = 0;
        loop {
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            let error = match tokio::time::timeout(left, self.once(&body)).await {
                Ok(Ok(response)) => return self.reply(response, started.elapsed(), retries),
                Ok(Err(ModelError::Timeout(_))) | Err(_) => return Err(ModelError::Timeout(budget)),
                Ok(Err(e)) => e,
            };
            if !error.kind().is_transient() || retries >= MAX_RETRIES {
                return Err(error);
            }
            let wait = error.retry_after().unwrap_or_else(|| {
                FIRST_BACKOFF.saturating_mul(2_u32.saturating_pow(retries as u32)).min(Duration::from_secs(8))
            });
            if tokio::time::Instant::now() + wait >= end {
                tracing::warn!(
                    kind = %error.kind(),
                    waitMs = wait.as_millis() as u64,
                    "the wait the API asked for does not fit in the time left; the attempt fails now"
                );
                return Err(error);
            }
            tracing::info!(kind = %error.kind(), waitMs = wait.as_millis() as u64, retry = retries + 1, "chat completion retried");
            tokio::time::sleep(wait).await;
            retries += 1;
        }
    }

    /// One HTTP exchange.
    async fn once(&self, body: &[u8]) -> Result<CreateChatCompletionResponse, ModelError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| transport(&e))?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            return Err(ModelError::Redirect { status });
        }
        let retry_after = retry_after(response.headers());
        let bytes = read_capped(response, MAX_RESPONSE_BYTES).await;
        if !(200..300).contains(&status) {
            // An error answer too long to read is classified by its status alone.
            let bytes = bytes.unwrap_or_default();
            let error = serde_json::from_slice::<Value>(&bytes).ok().map(|v| v["error"].clone()).unwrap_or_default();
            let (error_type, code, param) =
                (identifier(&error["type"]), identifier(&error["code"]), identifier(&error["param"]));
            let kind = classify_status(status, error_type.as_deref(), code.as_deref());
            return Err(ModelError::Api { status, kind, error_type, code, param, retry_after });
        }
        let bytes = bytes?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ModelError::NotACompletion(format!("{:?} error at line {} column {}", e.classify(), e.line(), e.column()))
        })
    }

    fn reply(
        &self,
        response: CreateChatCompletionResponse,
        latency: Duration,
        retries: usize,
    ) -> Result<ModelReply, ModelError> {
        let choice =
            response.choices.into_iter().next().ok_or_else(|| ModelError::NoContent("none: no choices".into()))?;
        let finish = choice.finish_reason.map(|f| format!("{f:?}")).unwrap_or_else(|| "null".into());
        if let Some(text) = choice.message.refusal.filter(|r| !r.trim().is_empty()) {
            return Err(ModelError::Refusal { text });
        }
        match choice.finish_reason {
            Some(FinishReason::Length) => {
                return Err(ModelError::Truncated { max_completion_tokens: self.max_completion_tokens });
            }
            Some(FinishReason::ContentFilter) => return Err(ModelError::ContentFilter),
            _ => {}
        }
        let content = choice.message.content.filter(|c| !c.trim().is_empty()).ok_or(ModelError::NoContent(finish))?;
        let report: LlmReport = {
            let mut json = serde_json::Deserializer::from_str(&content);
            let report = serde_path_to_error::deserialize(&mut json).map_err(content_error)?;
            json.end().map_err(|e| {
                ModelError::NotJson(format!("trailing characters at line {} column {}", e.line(), e.column()))
            })?;
            report
        };
        report.validate()?;
        let usage = response.usage.unwrap_or_default();
        Ok(ModelReply {
            report,
            content,
            model: response.model,
            completion_id: response.id,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
            latency,
            retries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_never_print_the_key() {
        let mut s = OpenAiSettings::for_endpoint("http://127.0.0.1:1/v1", "gpt-4.1-mini");
        s.api_key = Some("sk-secret-value".into());
        let printed = format!("{s:?} {:?}", ReportModel::new(&s));
        assert!(!printed.contains("sk-secret-value") && printed.contains("<redacted>"), "{printed}");
    }

    #[test]
    fn max_tokens_and_temperature_are_configurable_and_checked() {
        assert_eq!(parse_max_tokens(None), Ok(DEFAULT_MAX_COMPLETION_TOKENS));
        assert_eq!(parse_max_tokens(Some("1200")), Ok(1200));
        assert!(parse_max_tokens(Some("0")).is_err() && parse_max_tokens(Some("lots")).is_err());
        assert_eq!(parse_temperature(None), Ok(DEFAULT_TEMPERATURE));
        assert_eq!(parse_temperature(Some("0")), Ok(0.0));
        assert!(parse_temperature(Some("2.5")).is_err() && parse_temperature(Some("-1")).is_err());
        let mut s = OpenAiSettings::for_endpoint("http://127.0.0.1:1/v1", "m");
        (s.max_completion_tokens, s.temperature) = (1234, 0.7);
        let prompt = Prompt { system: "s".into(), user: "u".into(), truncation: Default::default() };
        let body = serde_json::to_value(ReportModel::new(&s).request(&prompt)).unwrap();
        assert_eq!(body["max_completion_tokens"], 1234);
        assert!((body["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-6);
    }

    #[test]
    fn statuses_and_codes_map_to_kinds_as_openai_documents_them() {
        use ErrorKind::*;
        let cases = [
            (401, Some("invalid_request_error"), Some("invalid_api_key"), CredentialsRefused),
            (401, Some("invalid_request_error"), Some("no_organization"), Auth),
            (403, None, Some("unsupported_country_region_territory"), Auth),
            (404, Some("invalid_request_error"), Some("model_not_found"), ModelNotFound),
            (404, None, None, BadRequest),
            (400, Some("invalid_request_error"), None, BadRequest),
            (429, Some("requests"), Some("rate_limit_exceeded"), RateLimited),
            (429, Some("rate_limit_error"), Some("slow_down"), RateLimited),
            (429, Some("insufficient_quota"), Some("insufficient_quota"), Quota),
            (429, Some("insufficient_quota"), Some("project_spend_limit_exceeded"), Quota),
            (429, None, Some("credit_balance_exhausted"), Quota),
            (500, Some("server_error"), None, ServerError),
            (503, Some("service_unavailable_error"), Some("server_is_overloaded"), ServerError),
            (408, None, None, Timeout),
        ];
        for (status, t, c, kind) in cases {
            assert_eq!(classify_status(status, t, c), kind, "{status} {t:?} {c:?}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }

    #[test]
    fn identifiers_from_an_error_body_are_kept_and_prose_is_not() {
        assert_eq!(identifier(&Value::from("invalid_api_key")), Some("invalid_api_key".into()));
        assert_eq!(identifier(&Value::from("messages[1].content")), Some("messages[1].content".into()));
        assert_eq!(identifier(&Value::from("Incorrect API key provided: sk-abc")), None);
        assert_eq!(identifier(&Value::Null), None);
    }

    #[tokio::test]
    async fn a_deadline_inside_the_margin_fails_fast_as_a_timeout() {
        let model = ReportModel::new(&OpenAiSettings::for_endpoint("http://127.0.0.1:9/v1", "m"));
        let prompt = Prompt { system: "s".into(), user: "u".into(), truncation: Default::default() };
        let deadline = tokio::time::Instant::now() + FAILURE_RECORDING_MARGIN / 2;
        let err = model.generate(&prompt, Some(deadline)).await.unwrap_err();
        assert!(matches!(err, ModelError::Timeout(d) if d == Duration::ZERO), "{err}");
    }
}
