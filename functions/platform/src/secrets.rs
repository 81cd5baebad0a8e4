//! Secrets: `MONGODB_URI` and `OPENAI_API_KEY` (docs/secrets.md).
//!
//! Each secret comes from its plain variable when that is set (local runs, tests), else from
//! AWS Secrets Manager through the AWS Parameters and Secrets Lambda Extension, whose ARN the
//! stack puts in `<VARIABLE>_SECRET_ARN`. The extension serves
//! `GET http://localhost:<PARAMETERS_SECRETS_EXTENSION_HTTP_PORT or 2773>/secretsmanager/get?secretId=<ARN>`
//! with the header `X-Aws-Parameters-Secrets-Token: <AWS_SESSION_TOKEN>` and answers the JSON of
//! Secrets Manager's `GetSecretValue`; the value is its `SecretString`, used as it is.
//!
//! When: not during init. The extension is reported to answer "not ready" to calls made during
//! init, so a function whose secrets come from ARNs builds its clients at its first invocation
//! ([`crate::deferred`]), where [`load`] reads each secret once. Connection errors, 5xx and the
//! extension's "not ready" 400 are still retried with a short back-off for a budget
//! (`SECRETS_EXTENSION_TIMEOUT_MS`, default 3 s); any other answer fails at once. Every error
//! names the variable and the ARN, never the value (nor any body the extension sent). The HTTP
//! client is hyper's, already linked into every binary by `lambda_runtime`: no AWS SDK client
//! and no TLS for a loopback call.
//!
//! A value is read once per process, and again by [`reread`] when a call was refused for it
//! (a rotated secret; [`crate::rotation`]), at most once per interval.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use crate::config::{self, ConfigError, MONGODB_URI, OPENAI_API_KEY};
pub use crate::sqs::AWS_SESSION_TOKEN;

pub const MONGODB_URI_SECRET_ARN: &str = crate::env::declared("MONGODB_URI_SECRET_ARN");
pub const OPENAI_API_KEY_SECRET_ARN: &str = crate::env::declared("OPENAI_API_KEY_SECRET_ARN");
/// The extension's port (the extension reads the same variable).
pub const PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: &str = crate::env::declared("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT");
/// How long init may wait for the extension, in milliseconds (all attempts together).
pub const SECRETS_EXTENSION_TIMEOUT_MS: &str = crate::env::declared("SECRETS_EXTENSION_TIMEOUT_MS");
pub const DEFAULT_EXTENSION_PORT: u16 = 2773;
/// Short: init as a whole must end within Lambda's 10 s, and when the extension has not started
/// serving by then the clients are built at the first invocation ([`crate::deferred`]).
pub const DEFAULT_EXTENSION_BUDGET: Duration = Duration::from_secs(3);
/// One request may take this long (the extension itself calls Secrets Manager on a cache miss).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
const BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// A secret the functions need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Secret {
    MongoDbUri,
    OpenAiApiKey,
}

impl Secret {
    /// The plain variable (local runs).
    pub fn var(self) -> &'static str {
        match self {
            Self::MongoDbUri => MONGODB_URI,
            Self::OpenAiApiKey => OPENAI_API_KEY,
        }
    }

    /// The variable holding the secret's ARN (AWS).
    pub fn arn_var(self) -> &'static str {
        match self {
            Self::MongoDbUri => MONGODB_URI_SECRET_ARN,
            Self::OpenAiApiKey => OPENAI_API_KEY_SECRET_ARN,
        }
    }
}

/// A secret's value: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: String) -> Self {
        Self(value)
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretValue(<redacted, {} chars>)", self.0.chars().count())
    }
}

/// Why a secret could not be read. Never carries the value or a response body.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "{arn_var} is set but {AWS_SESSION_TOKEN} is not: the Parameters and Secrets extension needs it (Lambda sets it)"
    )]
    NoSessionToken { arn_var: &'static str },
    #[error(
        "cannot read {var} from secret {arn}: the Parameters and Secrets extension at {endpoint} did not answer within \
         {waited_ms} ms ({attempts} attempts; last: {last}). Is the extension layer attached to the function?"
    )]
    Unavailable { var: &'static str, arn: String, endpoint: String, attempts: u32, waited_ms: u128, last: String },
    #[error(
        "cannot read {var} from secret {arn}: the extension answered HTTP {status} ({code}); check that the secret \
         exists and that the function's role has secretsmanager:GetSecretValue on it and kms:Decrypt on its key"
    )]
    Refused { var: &'static str, arn: String, status: u16, code: String },
    #[error("cannot read {var} from secret {arn}: {problem}")]
    Malformed { var: &'static str, arn: String, problem: &'static str },
}

/// How to reach the extension.
#[derive(Debug, Clone)]
pub struct Extension {
    /// `http://localhost:2773`.
    pub endpoint: String,
    token: SecretValue,
    /// All attempts together.
    pub budget: Duration,
    pub attempt_timeout: Duration,
}

impl Extension {
    pub fn new(endpoint: impl Into<String>, session_token: impl Into<String>, budget: Duration) -> Self {
        Self {
            endpoint: endpoint.into().trim_end_matches('/').to_owned(),
            token: SecretValue(session_token.into()),
            budget,
            attempt_timeout: ATTEMPT_TIMEOUT.min(budget),
        }
    }

    /// From `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT`, `AWS_SESSION_TOKEN` and
    /// `SECRETS_EXTENSION_TIMEOUT_MS`, for the secret whose ARN variable is `arn_var`.
    fn from_lookup(arn_var: &'static str, var: &impl Fn(&'static str) -> Option<String>) -> Result<Self, SecretError> {
        let port = match var(PARAMETERS_SECRETS_EXTENSION_HTTP_PORT) {
            None => DEFAULT_EXTENSION_PORT,
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| ConfigError::Invalid {
                name: PARAMETERS_SECRETS_EXTENSION_HTTP_PORT,
                reason: format!("expected a port number, got {p:?}"),
            })?,
        };
        let budget = match var(SECRETS_EXTENSION_TIMEOUT_MS) {
            None => DEFAULT_EXTENSION_BUDGET,
            Some(ms) => ms.parse::<u64>().map(Duration::from_millis).map_err(|e| ConfigError::Invalid {
                name: SECRETS_EXTENSION_TIMEOUT_MS,
                reason: format!("expected milliseconds: {e}"),
            })?,
        };
        let token = var(AWS_SESSION_TOKEN).ok_or(SecretError::NoSessionToken { arn_var })?;
        Ok(Self::new(format!("http://localhost:{port}"), token, budget))
    }

    /// `GetSecretValue` of `arn` through the extension, retried while the extension starts.
    pub async fn get(&self, secret: Secret, arn: &str) -> Result<SecretValue, SecretError> {
        let var = secret.var();
        let url = format!("{}/secretsmanager/get?secretId={}", self.endpoint, percent_encode(arn));
        let client: Client<HttpConnector, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let started = Instant::now();
        let deadline = started + self.budget;
        let mut attempts = 0;
        let mut backoff = BACKOFF;
        let last = loop {
            attempts += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            let outcome = match tokio::time::timeout(self.attempt_timeout.min(left), self.attempt(&client, &url)).await
            {
                Ok(outcome) => outcome,
                Err(_) => Attempt::Retry(format!("no answer within {} ms", self.attempt_timeout.min(left).as_millis())),
            };
            match outcome {
                Attempt::Done(body) => {
                    let value = secret_string(&body).map_err(|problem| SecretError::Malformed {
                        var,
                        arn: arn.to_owned(),
                        problem,
                    })?;
                    tracing::info!(
                        variable = var,
                        secretArn = arn,
                        attempts,
                        "secret read through the Parameters and Secrets extension"
                    );
                    return Ok(value);
                }
                Attempt::Refused { status, code } => {
                    return Err(SecretError::Refused { var, arn: arn.to_owned(), status, code });
                }
                Attempt::Retry(reason) => {
                    let now = Instant::now();
                    if now + backoff >= deadline {
                        break reason;
                    }
                    tracing::debug!(variable = var, attempts, reason = %reason, "secrets extension not ready; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        Err(SecretError::Unavailable {
            var,
            arn: arn.to_owned(),
            endpoint: self.endpoint.clone(),
            attempts,
            waited_ms: started.elapsed().as_millis(),
            last,
        })
    }

    async fn attempt(&self, client: &Client<HttpConnector, Empty<Bytes>>, url: &str) -> Attempt {
        let request = match hyper::Request::get(url)
            .header("X-Aws-Parameters-Secrets-Token", self.token.expose())
            .body(Empty::<Bytes>::new())
        {
            Ok(r) => r,
            Err(e) => return Attempt::Refused { status: 0, code: format!("request not built: {e}") },
        };
        let response = match client.request(request).await {
            Ok(r) => r,
            Err(e) => return Attempt::Retry(format!("connection failed: {}", connect_reason(&e))),
        };
        let status = response.status().as_u16();
        let body = match response.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return Attempt::Retry(format!("HTTP {status}, body not read")),
        };
        match status {
            200..=299 => Attempt::Done(body),
            500..=599 => Attempt::Retry(format!("HTTP {status}")),
            400 if String::from_utf8_lossy(&body).to_ascii_lowercase().contains("not ready") => {
                Attempt::Retry("HTTP 400: the extension is not ready yet".to_owned())
            }
            _ => Attempt::Refused { status, code: error_code(&body) },
        }
    }
}

enum Attempt {
    Done(Bytes),
    Retry(String),
    Refused { status: u16, code: String },
}

/// The kind of a connection error (hyper's text is free of the request's data).
fn connect_reason(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text.chars().take(200).collect()
}

/// Only an AWS error name found in the body (`AccessDeniedException`, `ResourceNotFoundException`,
/// `DecryptionFailure`, ...), never the body itself.
fn error_code(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() <= 64 && (w.ends_with("Exception") || *w == "DecryptionFailure" || *w == "InternalServiceError")
        })
        .map_or_else(|| "no AWS error code in the answer".to_owned(), str::to_owned)
}

fn secret_string(body: &[u8]) -> Result<SecretValue, &'static str> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(rename = "SecretString")]
        secret_string: Option<String>,
    }
    let answer: Answer =
        serde_json::from_slice(body).map_err(|_| "the extension's answer is not GetSecretValue JSON (withheld)")?;
    let value = answer.secret_string.ok_or("the secret has no SecretString (binary secrets are not supported)")?;
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err("the secret's SecretString is empty");
    }
    Ok(SecretValue(value))
}

/// RFC 3986 unreserved characters stay; everything else is %-encoded (an ARN has `:` and `/`).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Values read through the extension by this process.
static LOADED: Mutex<Option<HashMap<Secret, SecretValue>>> = Mutex::new(None);
/// When [`reread`] last read each secret.
static REREAD_AT: Mutex<Option<HashMap<Secret, Instant>>> = Mutex::new(None);

/// Where a secret's value comes from, per the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The plain variable is set (it wins: local runs).
    Plain,
    /// Read through the extension from this ARN.
    Arn(String),
    /// Neither is set.
    Unset,
}

/// The plain variable wins over the ARN.
pub fn source(secret: Secret, var: &impl Fn(&'static str) -> Option<String>) -> Source {
    if var(secret.var()).is_some() {
        Source::Plain
    } else if let Some(arn) = var(secret.arn_var()) {
        Source::Arn(arn)
    } else {
        Source::Unset
    }
}

/// At init: when the plain variable is unset and the ARN variable is set, reads the secret
/// through the extension (once per process) so that [`get`] returns it. Nothing to do otherwise;
/// a missing secret is reported by whoever requires it.
pub async fn load(secret: Secret) -> Result<(), SecretError> {
    load_with(secret, &config::optional).await
}

/// As [`load`], with the variables from `var` (tests, or an environment held elsewhere).
pub async fn load_with(secret: Secret, var: &impl Fn(&'static str) -> Option<String>) -> Result<(), SecretError> {
    let Source::Arn(arn) = source(secret, var) else { return Ok(()) };
    if loaded(secret).is_some() {
        return Ok(());
    }
    let value = Extension::from_lookup(secret.arn_var(), var)?.get(secret, &arn).await?;
    LOADED.lock().expect("secrets lock").get_or_insert_with(HashMap::new).insert(secret, value);
    Ok(())
}

/// What [`reread`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reread {
    /// This process read the secret again less than the interval ago: not read now.
    Throttled,
    /// The secret does not come from Secrets Manager (a plain variable, or nothing): there is
    /// nothing to read again.
    NotFromSecretsManager,
    /// Secrets Manager holds the value this process already had.
    Unchanged,
    /// Secrets Manager holds a new value, which [`get`] returns from now on.
    Changed,
}

/// Reads the secret again through the extension, for a call its value was refused for (see
/// [`crate::rotation`]). The stack runs the extension without its cache
/// (`SECRETS_MANAGER_TTL=0`), so this is a `GetSecretValue` of the `AWSCURRENT` version; with a
/// cache, the extension answers its cached value until the cache's TTL has run out and this
/// reports [`Reread::Unchanged`] meanwhile. Logs the variable, the ARN and whether the value
/// changed, never the value.
///
/// At most once per `interval` per secret and per process, whoever asks (a refused batch, a
/// refused record, a failed build): within it, [`Reread::Throttled`] without a read, so a revoked
/// credential with no replacement does not hammer Secrets Manager.
pub async fn reread(secret: Secret, interval: Duration) -> Result<Reread, SecretError> {
    reread_with(secret, interval, &config::optional).await
}

/// As [`reread`], with the variables from `var`.
pub async fn reread_with(
    secret: Secret,
    interval: Duration,
    var: &impl Fn(&'static str) -> Option<String>,
) -> Result<Reread, SecretError> {
    let Source::Arn(arn) = source(secret, var) else { return Ok(Reread::NotFromSecretsManager) };
    {
        let mut last = REREAD_AT.lock().expect("reread lock");
        let at = last.get_or_insert_with(HashMap::new);
        if let Some(previous) = at.get(&secret)
            && previous.elapsed() < interval
        {
            return Ok(Reread::Throttled);
        }
        at.insert(secret, Instant::now());
    }
    let value = Extension::from_lookup(secret.arn_var(), var)?.get(secret, &arn).await?;
    let mut guard = LOADED.lock().expect("secrets lock");
    let map = guard.get_or_insert_with(HashMap::new);
    let outcome = if map.get(&secret) == Some(&value) { Reread::Unchanged } else { Reread::Changed };
    map.insert(secret, value);
    drop(guard);
    let changed = outcome == Reread::Changed;
    tracing::info!(variable = secret.var(), secretArn = %arn, changed, "secret read again after its value was refused");
    Ok(outcome)
}

/// Whether reading `secret` means asking the extension (its ARN is set, its plain variable is
/// not) and this process has not read it yet.
pub fn unread(secret: Secret) -> bool {
    matches!(source(secret, &config::optional), Source::Arn(_)) && loaded(secret).is_none()
}

fn loaded(secret: Secret) -> Option<SecretValue> {
    LOADED.lock().expect("secrets lock").as_ref().and_then(|m| m.get(&secret).cloned())
}

/// The secret's value: the plain variable, else what [`load`] read at init.
pub fn get(secret: Secret) -> Option<SecretValue> {
    config::optional(secret.var()).map(SecretValue).or_else(|| loaded(secret))
}

/// As [`get`], or an error naming both variables.
pub fn required(secret: Secret) -> Result<SecretValue, ConfigError> {
    get(secret).ok_or_else(|| ConfigError::Invalid {
        name: secret.var(),
        reason: format!("not set, and neither is {} (the stack sets the ARN on AWS)", secret.arn_var()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&'static str, &str)]) -> impl Fn(&'static str) -> Option<String> {
        let map: HashMap<&'static str, String> = pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_plain_variable_wins_over_the_arn_and_neither_is_unset() {
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sophia-prod-mongodb-AbCdEf";
        assert_eq!(
            source(Secret::MongoDbUri, &lookup(&[(MONGODB_URI, "mongodb://x"), (MONGODB_URI_SECRET_ARN, arn)])),
            Source::Plain
        );
        assert_eq!(source(Secret::MongoDbUri, &lookup(&[(MONGODB_URI_SECRET_ARN, arn)])), Source::Arn(arn.into()));
        assert_eq!(source(Secret::OpenAiApiKey, &lookup(&[(MONGODB_URI_SECRET_ARN, arn)])), Source::Unset);
        assert_eq!(source(Secret::OpenAiApiKey, &lookup(&[(OPENAI_API_KEY_SECRET_ARN, arn)])), Source::Arn(arn.into()));
    }

    #[tokio::test]
    async fn an_arn_without_a_session_token_is_a_clear_error() {
        let err = load_with(Secret::OpenAiApiKey, &lookup(&[(OPENAI_API_KEY_SECRET_ARN, "arn:x")])).await.unwrap_err();
        assert!(matches!(err, SecretError::NoSessionToken { arn_var: OPENAI_API_KEY_SECRET_ARN }), "{err}");
        assert!(err.to_string().contains("AWS_SESSION_TOKEN"), "{err}");
    }

    #[tokio::test]
    async fn a_bad_port_or_budget_is_a_config_error() {
        let vars = [
            (OPENAI_API_KEY_SECRET_ARN, "arn:x"),
            (AWS_SESSION_TOKEN, "t"),
            (PARAMETERS_SECRETS_EXTENSION_HTTP_PORT, "http"),
        ];
        let err = load_with(Secret::OpenAiApiKey, &lookup(&vars)).await.unwrap_err();
        assert!(err.to_string().contains(PARAMETERS_SECRETS_EXTENSION_HTTP_PORT), "{err}");
    }

    #[test]
    fn arns_are_percent_encoded_and_values_never_printed() {
        assert_eq!(
            percent_encode("arn:aws:secretsmanager:eu-west-1:1:secret:a/b+c"),
            "arn%3Aaws%3Asecretsmanager%3Aeu-west-1%3A1%3Asecret%3Aa%2Fb%2Bc"
        );
        let v = SecretValue::new("mongodb://u:hunter2@h".into());
        assert_eq!(format!("{v:?}"), "SecretValue(<redacted, 21 chars>)");
    }

    #[test]
    fn only_an_aws_error_name_is_kept_from_an_error_body() {
        assert_eq!(error_code(br#"{"__type":"AccessDeniedException","message":"User x"}"#), "AccessDeniedException");
        assert_eq!(error_code(b"secret stuff"), "no AWS error code in the answer");
    }
}
