//! The model call: one chat completion with `response_format: json_schema` (`strict: true`),
//! through `async-openai`, against OpenAI or any compatible endpoint (`OPENAI_BASE_URL`; the
//! tests and the offline local runner point it at `sophia-openai-fake`).
//!
//! No trait: the only other "implementation" is an HTTP server, so tests exercise this very
//! client over HTTP.
//!
//! One attempt is one chat completion. async-openai 0.43 itself retries a `429` (except
//! `insufficient_quota`), a `5xx` or a connect error up to 3 times, backing off from 100 ms
//! (or by `Retry-After`); the whole call, retries included, is bounded by the timeout here.
//! Only what is left after that fails the attempt (and goes back to SQS).
//!
//! Nothing here logs or returns candidate text: errors carry statuses, OpenAI's own error
//! messages, and parse positions, never the reply's content.

use std::fmt;
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage, ChatCompletionRequestSystemMessageContent,
    ChatCompletionRequestUserMessage, ChatCompletionRequestUserMessageContent, CreateChatCompletionRequest,
    FinishReason, ResponseFormat, ResponseFormatJsonSchema,
};
use sophia_platform::config::{self, ConfigError, DEFAULT_OPENAI_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL};

use crate::model::{LlmReport, OutOfRange};
use crate::prompt::Prompt;
use crate::schema::{SCHEMA_NAME, report_schema};

/// Milliseconds one chat completion may take, end to end.
pub const OPENAI_TIMEOUT_MS: &str = "OPENAI_TIMEOUT_MS";
/// Default request timeout: well inside the 300 s function timeout, leaving time to record a
/// failure before the invocation ends.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

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
}

impl fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl OpenAiSettings {
    /// From `OPENAI_API_KEY` (or what `sophia_platform::secrets::load` read from
    /// `OPENAI_API_KEY_SECRET_ARN` at init), `OPENAI_MODEL` (default `gpt-4.1-mini`), `OPENAI_BASE_URL` and
    /// `OPENAI_TIMEOUT_MS` (default 120 s). The key is required unless a base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        let settings = Self {
            api_key: sophia_platform::secrets::get(sophia_platform::secrets::Secret::OpenAiApiKey)
                .map(|k| k.into_inner()),
            model: config::optional(OPENAI_MODEL).unwrap_or_else(|| DEFAULT_OPENAI_MODEL.to_owned()),
            base_url: config::optional(OPENAI_BASE_URL),
            timeout: config::millis(OPENAI_TIMEOUT_MS, DEFAULT_TIMEOUT)?,
        };
        if settings.api_key.is_none() && settings.base_url.is_none() {
            return Err(ConfigError::Missing(OPENAI_API_KEY));
        }
        Ok(settings)
    }

    /// A compatible endpoint (e.g. the local fake) without a key.
    pub fn for_endpoint(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self { api_key: None, model: model.into(), base_url: Some(base_url.into()), timeout: DEFAULT_TIMEOUT }
    }
}

/// Why the model did not produce a report. Every kind is worth a retry.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("chat completion timed out after {0:?}")]
    Timeout(Duration),
    #[error("chat completion transport error: {0}")]
    Transport(String),
    #[error("OpenAI API error: HTTP {status}: {message}")]
    Api { status: u16, kind: Option<String>, code: Option<String>, message: String },
    #[error("the chat completion response is not a chat completion ({0})")]
    InvalidResponse(String),
    #[error("the model refused to answer ({refusal_chars} characters of refusal text withheld)")]
    Refusal { refusal_chars: usize },
    #[error("the completion has no choice or no content (finish_reason {0})")]
    NoContent(String),
    #[error("the completion was cut off (finish_reason {0})")]
    Incomplete(String),
    #[error("the report does not parse: {0}")]
    Malformed(String),
    #[error("the report is out of range: {0}")]
    OutOfRange(#[from] OutOfRange),
    #[error("the chat completion request could not be built: {0}")]
    Request(String),
}

impl ModelError {
    /// A short stable label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Timeout(_) => "timeout",
            Self::Transport(_) => "transport",
            Self::Api { status: 429, .. } => "rate_limited",
            Self::Api { .. } => "api",
            Self::InvalidResponse(_) => "invalid_response",
            Self::Refusal { .. } => "refusal",
            Self::NoContent(_) => "no_content",
            Self::Incomplete(_) => "incomplete",
            Self::Malformed(_) => "malformed",
            Self::OutOfRange(_) => "out_of_range",
            Self::Request(_) => "request",
        }
    }
}

fn bounded(s: &str, max: usize) -> String {
    if s.chars().count() > max { format!("{}…", s.chars().take(max).collect::<String>()) } else { s.to_owned() }
}

fn from_openai(e: OpenAIError) -> ModelError {
    match e {
        OpenAIError::Reqwest(e) => ModelError::Transport(bounded(&e.to_string(), 300)),
        OpenAIError::ApiError(r) => ModelError::Api {
            status: r.status_code.as_u16(),
            kind: r.api_error.r#type,
            code: r.api_error.code,
            message: bounded(&r.api_error.message, 300),
        },
        // The error's text holds the response body: keep only the parse position.
        OpenAIError::JSONDeserialize(e, _) => {
            ModelError::InvalidResponse(format!("{:?} error at line {} column {}", e.classify(), e.line(), e.column()))
        }
        other => ModelError::Request(bounded(&other.to_string(), 300)),
    }
}

/// A parsed, validated report and how it was obtained.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub report: LlmReport,
    /// The model that answered, as the API reported it.
    pub model: String,
    pub completion_id: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    pub latency: Duration,
}

/// The report model client, built once per process.
#[derive(Debug, Clone)]
pub struct ReportModel {
    client: Client<OpenAIConfig>,
    model: String,
    timeout: Duration,
}

impl ReportModel {
    pub fn new(settings: &OpenAiSettings) -> Self {
        let mut config = OpenAIConfig::new().with_api_key(settings.api_key.clone().unwrap_or_default());
        if let Some(base) = &settings.base_url {
            config = config.with_api_base(base.trim_end_matches('/'));
        } else {
            config = config.with_api_base("https://api.openai.com/v1");
        }
        Self { client: Client::with_config(config), model: settings.model.clone(), timeout: settings.timeout }
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
            temperature: Some(0.2),
            ..Default::default()
        }
    }

    /// One chat completion, bounded by the configured timeout, and by `deadline` less
    /// [`FAILURE_RECORDING_MARGIN`] if that is sooner.
    pub async fn generate(
        &self,
        prompt: &Prompt,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<ModelReply, ModelError> {
        let timeout = match deadline {
            Some(d) => self
                .timeout
                .min(d.saturating_duration_since(tokio::time::Instant::now()).saturating_sub(FAILURE_RECORDING_MARGIN)),
            None => self.timeout,
        };
        let request = self.request(prompt);
        let started = Instant::now();
        let response = tokio::time::timeout(timeout, self.client.chat().create(request))
            .await
            .map_err(|_| ModelError::Timeout(timeout))?
            .map_err(from_openai)?;
        let latency = started.elapsed();
        let choice =
            response.choices.into_iter().next().ok_or_else(|| ModelError::NoContent("none: no choices".into()))?;
        let finish = choice.finish_reason.map(|f| format!("{f:?}")).unwrap_or_else(|| "null".into());
        if let Some(refusal) = choice.message.refusal.filter(|r| !r.is_empty()) {
            return Err(ModelError::Refusal { refusal_chars: refusal.chars().count() });
        }
        if let Some(FinishReason::Length | FinishReason::ContentFilter) = choice.finish_reason {
            return Err(ModelError::Incomplete(finish));
        }
        let content = choice.message.content.filter(|c| !c.trim().is_empty()).ok_or(ModelError::NoContent(finish))?;
        let report: LlmReport = serde_json::from_str(&content).map_err(|e| {
            ModelError::Malformed(format!("{:?} error at line {} column {}", e.classify(), e.line(), e.column()))
        })?;
        report.validate()?;
        let usage = response.usage.unwrap_or_default();
        Ok(ModelReply {
            report,
            model: response.model,
            completion_id: response.id,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            latency,
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
        let printed = format!("{s:?}");
        assert!(!printed.contains("sk-secret-value") && printed.contains("<redacted>"), "{printed}");
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
