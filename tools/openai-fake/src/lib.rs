//! A local OpenAI-compatible server: `POST /v1/chat/completions` with the real request and
//! response JSON shapes (`id`, `object: "chat.completion"`, `created`, `model`,
//! `choices[].message.{role,content,refusal}`, `finish_reason`, `usage`), and OpenAI's error
//! body (`{"error": {"message", "type", "param", "code"}}`) for failures.
//!
//! As strict as OpenAI ([`strict`]): every request is first checked as the real API checks it
//! (unknown parameters, a missing model or messages, a strict `json_schema` that breaks the
//! strict-mode rules and limits) and rejected with HTTP 400 and OpenAI's error body, whatever
//! was scripted. Scripted [`Behaviour`]s then cover every documented failure: 400, 401, 403,
//! 404 `model_not_found`, 429 `rate_limit_exceeded` with `Retry-After`, 429
//! `insufficient_quota`, 500, 503, slow answers, `finish_reason` `length` and `content_filter`,
//! a refusal, content that is not JSON and JSON that does not match the schema; and what a client
//! must not trust: a 307/308 redirect to another host, an answer body of any size. A
//! [`Behaviour::Compromised`] reply is what a model that obeyed an injection writes.
//!
//! Two modes:
//! - [`Mode::Scripted`] (tests): each request takes the next [`Behaviour`] from a queue; an
//!   unscripted request gets an HTTP 500 that says so. Every request is recorded.
//! - [`Mode::Deterministic`] (the local runner without `OPENAI_API_KEY`): every request gets a
//!   schema-valid report derived deterministically from the transcript in the request, clearly
//!   labelled: model [`FAKE_MODEL`], summary starting with [`OFFLINE_LABEL`].
//!
//! A standing [`Fault`] ([`FakeOpenAi::set_fault`], or `PUT /__sophia/fault` on the fake's own
//! server with `Authorization: Bearer <`[`FakeOpenAi::fault_token`]`>`) answers every request until
//! cleared, before the script: an outage, a rate limit, a revoked key, a hang or slow answers (see
//! [`fault`]). The fault interface takes the per-run token as the local runner's control channel
//! does: another local process or user (or a web page making requests to 127.0.0.1) cannot fail
//! or stall the runner's reports.
//!
//! The server runs on its own thread and runtime, on 127.0.0.1 only, and stops when the
//! [`FakeOpenAi`] is dropped.
//!
//! ```no_run
//! let fake = sophia_openai_fake::FakeOpenAi::deterministic().expect("binds 127.0.0.1");
//! // OPENAI_BASE_URL=fake.base_url()  (http://127.0.0.1:PORT/v1)
//! ```

mod deterministic;
pub mod fault;
pub mod strict;
pub mod traffic;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

pub use deterministic::{OFFLINE_LABEL, compromised_report, deterministic_report};
pub use fault::{Fault, FaultBody};
pub use traffic::{Latency, TokenLimit};

/// The `model` of every response.
pub const FAKE_MODEL: &str = "sophia-offline-fake";

/// An HTTP error answer with OpenAI's error body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub error_type: String,
    pub param: Option<String>,
    pub code: Option<String>,
    /// Sent as `retry-after` (whole seconds, rounded up) and `retry-after-ms`.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    fn new(status: u16, message: &str, error_type: &str, code: Option<&str>) -> Self {
        Self {
            status,
            message: message.to_owned(),
            error_type: error_type.to_owned(),
            param: None,
            code: code.map(str::to_owned),
            retry_after: None,
        }
    }

    /// The same error with this `message` (e.g. one carrying a marker, for leak tests).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    pub fn bad_request() -> Self {
        let mut e =
            Self::new(400, "Invalid value for 'messages[1].content'.", "invalid_request_error", Some("invalid_value"));
        e.param = Some("messages[1].content".into());
        e
    }

    pub fn invalid_api_key() -> Self {
        Self::new(
            401,
            "Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            Some("invalid_api_key"),
        )
    }

    pub fn unsupported_region() -> Self {
        Self::new(
            403,
            "Country, region, or territory not supported",
            "request_forbidden",
            Some("unsupported_country_region_territory"),
        )
    }

    pub fn model_not_found(model: &str) -> Self {
        Self::new(
            404,
            &format!("The model `{model}` does not exist or you do not have access to it."),
            "invalid_request_error",
            Some("model_not_found"),
        )
    }

    pub fn rate_limited(after: Duration) -> Self {
        Self::new(
            429,
            "Rate limit reached for gpt-4.1-mini in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            "requests",
            Some("rate_limit_exceeded"),
        )
        .with_retry_after(after)
    }

    pub fn insufficient_quota() -> Self {
        Self::new(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            Some("insufficient_quota"),
        )
    }

    pub fn server_error() -> Self {
        Self::new(500, "The server had an error while processing your request. Sorry about that!", "server_error", None)
    }

    pub fn overloaded() -> Self {
        Self::new(
            503,
            "The engine is currently overloaded, please try again later.",
            "service_unavailable_error",
            Some("server_is_overloaded"),
        )
    }
}

/// What the server does with one request (after the request passed the [`strict`] checks).
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    /// A valid report derived from the request's transcript (as in deterministic mode).
    Report,
    /// This exact text as the message content (e.g. a report with out-of-range scores).
    Content(String),
    /// Content that is not JSON (a report cut off mid-object), `finish_reason: "stop"`.
    MalformedJson,
    /// Valid JSON that does not match the report schema (fields missing, a score as a string).
    WrongSchema,
    /// `content: null` and a `refusal` message.
    Refusal,
    /// `content: null` and this `refusal` text.
    RefusalText(String),
    /// The report cut off at the token limit, `finish_reason: "length"`.
    Length,
    /// `finish_reason: "content_filter"`, no content.
    ContentFilter,
    /// HTTP 429 `rate_limit_exceeded` without `Retry-After`.
    RateLimited,
    /// HTTP 500 with OpenAI's server error body.
    ServerError,
    /// Any HTTP error answer (see the [`ApiError`] constructors).
    Error(ApiError),
    /// Waits, then behaves as `then` (for client timeouts).
    Slow { delay: Duration, then: Box<Behaviour> },
    /// A schema-valid reply that is wrong about the interview, as a model that obeyed "recommend
    /// strong_hire" would write it: one skill and one question the interview did not have (a
    /// high score on an invented quote), none of the interview's own, `strong_hire` at an
    /// overall score of 50.
    Compromised,
    /// An HTTP redirect (`307` or `308`) to `location`, which a client must not follow (it would
    /// re-send the request body, the transcript, there).
    Redirect { status: u16, location: String },
    /// An HTTP 200 whose body is `bytes` long (a chat completion with a huge content string);
    /// `chunked`: streamed without a `Content-Length`, so only a capped read stops it.
    Oversize { bytes: usize, chunked: bool },
}

impl Behaviour {
    pub fn slow(delay: Duration, then: Behaviour) -> Self {
        Self::Slow { delay, then: Box::new(then) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Scripted,
    Deterministic,
}

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body as JSON (`Value::Null` if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The `content` of the first message with this role.
    pub fn message(&self, role: &str) -> Option<&str> {
        self.body["messages"].as_array()?.iter().find(|m| m["role"] == role)?["content"].as_str()
    }
}

struct Shared {
    mode: Mode,
    script: Mutex<VecDeque<Behaviour>>,
    requests: Mutex<Vec<RecordedRequest>>,
    counter: AtomicU64,
    /// Static prefixes (system message and response format) already seen, per
    /// `prompt_cache_key`: a repeat is served "from the cache", as OpenAI's prompt caching does.
    cached_prefixes: Mutex<std::collections::HashSet<String>>,
    /// When set, a request without `Authorization: Bearer <this key>` is answered HTTP 401
    /// `invalid_api_key`, as OpenAI answers a revoked key.
    accepted_key: Mutex<Option<String>>,
    /// The bearer token `GET`/`PUT /__sophia/fault` require (new for every start).
    fault_token: String,
    /// The standing fault (see [`fault`]); a watch, so that requests hanging under
    /// [`Fault::Timeout`] are released when it changes.
    fault: watch::Sender<Option<Fault>>,
    /// A latency on every answer ([`traffic`]).
    latency: Mutex<Option<Latency>>,
    /// A tokens-per-minute limit and its window ([`traffic`]).
    token_limit: Mutex<Option<TokenLimit>>,
    window: Mutex<traffic::Window>,
}

/// A running fake server.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for FakeOpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeOpenAi").field("addr", &self.addr).field("mode", &self.shared.mode).finish()
    }
}

impl FakeOpenAi {
    /// Starts on a free 127.0.0.1 port.
    pub fn start(mode: Mode) -> std::io::Result<Self> {
        Self::start_on(0, mode)
    }

    pub fn scripted() -> std::io::Result<Self> {
        Self::start(Mode::Scripted)
    }

    pub fn deterministic() -> std::io::Result<Self> {
        Self::start(Mode::Deterministic)
    }

    /// Starts on 127.0.0.1:`port` (0: any free port).
    pub fn start_on(port: u16, mode: Mode) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            mode,
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            counter: AtomicU64::new(0),
            cached_prefixes: Mutex::new(std::collections::HashSet::new()),
            accepted_key: Mutex::new(None),
            fault_token: uuid::Uuid::new_v4().simple().to_string(),
            fault: watch::Sender::new(None),
            latency: Mutex::new(None),
            token_limit: Mutex::new(None),
            window: Mutex::new(traffic::Window::default()),
        });
        if mode == Mode::Deterministic {
            // The local runner's fake: load tests ask for realistic traffic through the environment.
            if let Some(ms) = traffic::env_ms(traffic::SOPHIA_OPENAI_FAKE_LATENCY_MS) {
                *shared.latency.lock().expect("latency lock") =
                    Some(Latency { typical: Duration::from_millis(ms), jitter: 0.25 });
            }
            if let Some(tpm) = traffic::env_ms(traffic::SOPHIA_OPENAI_FAKE_TPM) {
                let window = traffic::env_ms(traffic::SOPHIA_OPENAI_FAKE_WINDOW_MS).unwrap_or(60_000);
                *shared.token_limit.lock().expect("limit lock") =
                    Some(TokenLimit { tokens_per_window: tpm, window: Duration::from_millis(window) });
            }
        }
        let (tx, rx) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/__sophia/fault", get(get_fault).put(put_fault))
            .with_state(shared.clone());
        std::thread::Builder::new().name(format!("openai-fake-{}", addr.port())).spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return tracing::error!(error = %e, "openai fake: listener"),
                };
                let server = axum::serve(listener, app).with_graceful_shutdown(async {
                    let _ = rx.await;
                });
                if let Err(e) = server.await {
                    tracing::error!(error = %e, "openai fake stopped");
                }
            });
        })?;
        tracing::info!(%addr, ?mode, "OpenAI-compatible fake listening");
        Ok(Self { addr, shared, shutdown: Some(tx) })
    }

    /// The API base to give the client (`OPENAI_BASE_URL`): `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bearer token of the fault interface (`Authorization: Bearer <token>` on
    /// `GET`/`PUT /__sophia/fault`; anything else is answered 401).
    pub fn fault_token(&self) -> &str {
        &self.shared.fault_token
    }

    /// Appends a behaviour to the script.
    pub fn push(&self, behaviour: Behaviour) -> &Self {
        self.shared.script.lock().expect("script lock").push_back(behaviour);
        self
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().expect("requests lock").len()
    }

    /// Accepts only this API key from now on (`None`: any key, the default); other keys get HTTP
    /// 401 `invalid_api_key` (a key rotation: the old key revoked).
    pub fn accept_only_key(&self, key: Option<&str>) -> &Self {
        *self.shared.accepted_key.lock().expect("key lock") = key.map(str::to_owned);
        self
    }

    /// Sets the standing fault applied to every chat completion until cleared with `None` (see
    /// [`fault`] for what each kind answers and how it ranks before the script).
    pub fn set_fault(&self, fault: Option<Fault>) -> &Self {
        self.shared.fault.send_replace(fault);
        self
    }

    /// Every answer waits this long (`None`: at once, the default).
    pub fn set_latency(&self, latency: Option<Latency>) -> &Self {
        *self.shared.latency.lock().expect("latency lock") = latency;
        self
    }

    /// OpenAI's tokens-per-minute limit (`None`: no limit, the default): a request that would go
    /// over it is answered 429 `rate_limit_exceeded` with `Retry-After`.
    pub fn set_token_limit(&self, limit: Option<TokenLimit>) -> &Self {
        *self.shared.token_limit.lock().expect("limit lock") = limit;
        self
    }

    /// The standing fault.
    pub fn fault(&self) -> Option<Fault> {
        *self.shared.fault.borrow()
    }

    /// Behaviours scripted but not yet used.
    pub fn pending(&self) -> usize {
        self.shared.script.lock().expect("script lock").len()
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        // Requests hanging under a timeout fault would keep the server from stopping.
        self.shared.fault.send_replace(None);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": {"message": e.message, "type": e.error_type, "param": e.param, "code": e.code}});
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(after) = e.retry_after {
        let headers = response.headers_mut();
        let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        headers.insert("retry-after", secs.into());
        headers.insert("retry-after-ms", (after.as_millis() as u64).into());
    }
    response
}

/// A 200 of `bytes` bytes: a chat completion whose content is a long run of `x`.
fn oversize(bytes: usize, chunked: bool) -> Response {
    const HEAD: &str = r#"{"id":"chatcmpl-oversize","object":"chat.completion","created":0,"model":"sophia-offline-fake","choices":[{"index":0,"message":{"role":"assistant","content":""#;
    const TAIL: &str = r#""},"finish_reason":"stop"}]}"#;
    let filler = bytes.saturating_sub(HEAD.len() + TAIL.len());
    if !chunked {
        let body = format!("{HEAD}{}{TAIL}", "x".repeat(filler));
        return ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    const CHUNK: usize = 64 * 1024;
    let mut chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(HEAD.as_bytes()))];
    let mut left = filler;
    while left > 0 {
        let n = left.min(CHUNK);
        chunks.push(Ok(Bytes::from(vec![b'x'; n])));
        left -= n;
    }
    chunks.push(Ok(Bytes::from_static(TAIL.as_bytes())));
    let body = axum::body::Body::from_stream(futures::stream::iter(chunks));
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// What a request counts against a token limit: its estimated input (messages and response
/// format) plus its `max_completion_tokens`.
fn request_tokens(request: &Value) -> u64 {
    let prompt_chars: usize = request["messages"]
        .as_array()
        .map(|ms| ms.iter().filter_map(|m| m["content"].as_str()).map(str::len).sum())
        .unwrap_or(0);
    let format_chars = request.get("response_format").map_or(0, |f| f.to_string().len());
    approx_tokens(prompt_chars + format_chars) + request["max_completion_tokens"].as_u64().unwrap_or(0)
}

fn approx_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Prompt caching as OpenAI documents it: an exact prefix seen before (here: the system message
/// and the response format, under the same `prompt_cache_key`) is served from the cache from
/// 1,024 tokens on, in steps of 128.
fn cached_tokens(shared: &Shared, request: &Value) -> u64 {
    let system = request["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let format = request["response_format"].to_string();
    let key = format!("{}\u{0}{system}\u{0}{format}", request["prompt_cache_key"]);
    let tokens = approx_tokens(system.len() + format.len());
    let seen = !shared.cached_prefixes.lock().expect("cache lock").insert(key);
    if seen && tokens >= 1024 { tokens / 128 * 128 } else { 0 }
}

/// Whether `headers` carry `Authorization: Bearer <token>`, compared without an early exit on the
/// first differing byte. The fault interface and the local runner's control channel use it.
pub fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let given = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    given.is_some_and(|g| {
        g.len() == token.len() && g.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    })
}

fn fault_unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "missing or wrong fault token (FakeOpenAi::fault_token)"})))
        .into_response()
}

async fn get_fault(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !bearer_matches(&headers, &shared.fault_token) {
        return fault_unauthorized();
    }
    axum::Json(FaultBody::from_fault(*shared.fault.borrow())).into_response()
}

async fn put_fault(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !bearer_matches(&headers, &shared.fault_token) {
        return fault_unauthorized();
    }
    let parsed = serde_json::from_slice::<FaultBody>(&body).map_err(|e| e.to_string()).and_then(|b| b.to_fault());
    match parsed {
        Ok(fault) => {
            tracing::info!(?fault, "openai fake: standing fault set");
            shared.fault.send_replace(fault);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(reason) => (StatusCode::BAD_REQUEST, axum::Json(json!({"error": reason}))).into_response(),
    }
}

/// The answer of the standing fault, if it answers this request (see [`fault`]).
async fn apply_fault(shared: &Shared) -> Option<Response> {
    let mut changes = shared.fault.subscribe();
    let fault = *changes.borrow_and_update();
    match fault {
        None => None,
        Some(Fault::Unauthorized) => Some(error_response(&ApiError::invalid_api_key())),
        Some(Fault::RateLimited { retry_after }) => {
            let mut e = ApiError::rate_limited(retry_after.unwrap_or_default());
            e.retry_after = retry_after;
            Some(error_response(&e))
        }
        Some(Fault::ServerError) => Some(error_response(&ApiError::server_error())),
        Some(Fault::Quota) => Some(error_response(&ApiError::insufficient_quota())),
        Some(Fault::Unavailable) => Some(error_response(&ApiError::overloaded())),
        Some(Fault::Slow { delay }) => {
            tokio::time::sleep(delay).await;
            None
        }
        Some(Fault::Timeout) => {
            // Released when the fault changes (its client long gone): an error that takes no
            // scripted behaviour, so that the script is kept for the requests after it.
            let _ = changes.changed().await;
            Some(error_response(
                &ApiError::server_error().with_message("sophia-openai-fake: released from a timeout fault"),
            ))
        }
    }
}

async fn chat_completions(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().expect("requests lock").push(RecordedRequest {
        path: "/v1/chat/completions".to_owned(),
        authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned),
        body: json_body.clone(),
    });
    if let Some(answer) = apply_fault(&shared).await {
        return answer;
    }
    let accepted = shared.accepted_key.lock().expect("key lock").clone();
    if let Some(key) = accepted {
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        if given != Some(format!("Bearer {key}").as_str()) {
            return error_response(&ApiError::invalid_api_key());
        }
    }
    if let Err(r) = strict::check_request(&json_body) {
        let mut e = ApiError::new(400, &r.message, "invalid_request_error", r.code.as_deref());
        e.param = r.param;
        return error_response(&e);
    }
    let limit = *shared.token_limit.lock().expect("limit lock");
    if let Some(limit) = limit {
        let cost = request_tokens(&json_body);
        let admitted = shared.window.lock().expect("window lock").admit(&limit, cost, tokio::time::Instant::now());
        if let Err(after) = admitted {
            return error_response(&ApiError::rate_limited(after));
        }
    }
    let next = shared.script.lock().expect("script lock").pop_front();
    let behaviour = match (next, shared.mode) {
        (Some(b), _) => b,
        (None, Mode::Deterministic) => Behaviour::Report,
        (None, Mode::Scripted) => {
            return error_response(
                &ApiError::server_error()
                    .with_message("sophia-openai-fake: no behaviour was scripted for this request"),
            );
        }
    };
    let n = shared.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let cached = cached_tokens(&shared, &json_body);
    let latency = *shared.latency.lock().expect("latency lock");
    if let Some(latency) = latency {
        tokio::time::sleep(latency.draw(n)).await;
    }
    respond(behaviour, &json_body, n, cached).await
}

async fn respond(mut behaviour: Behaviour, request: &Value, n: u64, cached: u64) -> Response {
    while let Behaviour::Slow { delay, then } = behaviour {
        tokio::time::sleep(delay).await;
        behaviour = *then;
    }
    match answer(behaviour, request) {
        Answer::Completion(content, refusal, finish) => completion(request, n, cached, content, refusal, finish),
        Answer::Whole(response) => response,
    }
}

/// What a behaviour answers.
enum Answer {
    /// A chat completion: its content, refusal and `finish_reason`.
    Completion(Option<String>, Option<String>, &'static str),
    /// A whole response of its own: an error, a redirect, an oversize body.
    Whole(Response),
}

/// What the behaviour answers (`Slow` already waited out).
fn answer(behaviour: Behaviour, request: &Value) -> Answer {
    let (content, refusal, finish) = match behaviour {
        Behaviour::Redirect { status, location } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::TEMPORARY_REDIRECT);
            return Answer::Whole((status, [(axum::http::header::LOCATION, location)]).into_response());
        }
        Behaviour::Oversize { bytes, chunked } => return Answer::Whole(oversize(bytes, chunked)),
        Behaviour::Compromised => {
            let report = compromised_report(request);
            (Some(serde_json::to_string(&report).expect("report serialises")), None, "stop")
        }
        Behaviour::Report => {
            let report = deterministic_report(request);
            (Some(serde_json::to_string(&report).expect("report serialises")), None, "stop")
        }
        Behaviour::Content(c) => (Some(c), None, "stop"),
        Behaviour::MalformedJson => (
            Some(r#"Here is the assessment: {"skillAssessments": [], "summary": "The candidate"#.to_owned()),
            None,
            "stop",
        ),
        Behaviour::WrongSchema => (
            Some(
                r#"{"overallScore": "high", "recommendation": "hire", "summary": "The candidate did well."}"#
                    .to_owned(),
            ),
            None,
            "stop",
        ),
        Behaviour::Refusal => (None, Some("I'm sorry, but I can't help with that request.".to_owned()), "stop"),
        Behaviour::RefusalText(text) => (None, Some(text), "stop"),
        Behaviour::Length => {
            let full = serde_json::to_string(&deterministic_report(request)).expect("report serialises");
            let cut: String = full.chars().take(full.chars().count() / 2).collect();
            (Some(cut), None, "length")
        }
        Behaviour::ContentFilter => (None, None, "content_filter"),
        Behaviour::RateLimited => {
            let mut e = ApiError::rate_limited(Duration::ZERO);
            e.retry_after = None;
            return Answer::Whole(error_response(&e));
        }
        Behaviour::ServerError => return Answer::Whole(error_response(&ApiError::server_error())),
        Behaviour::Error(e) => return Answer::Whole(error_response(&e)),
        Behaviour::Slow { .. } => unreachable!("unwrapped above"),
    };
    Answer::Completion(content, refusal, finish)
}

/// The chat completion of an answer, with usage figures approximated from the request's size.
fn completion(
    request: &Value,
    n: u64,
    cached: u64,
    content: Option<String>,
    refusal: Option<String>,
    finish: &str,
) -> Response {
    let prompt_chars: usize = request["messages"]
        .as_array()
        .map(|ms| ms.iter().filter_map(|m| m["content"].as_str()).map(str::len).sum())
        .unwrap_or(0);
    let completion_tokens = approx_tokens(content.as_deref().or(refusal.as_deref()).map_or(0, str::len));
    // OpenAI counts the response format's schema as input too.
    let format_chars = request.get("response_format").map_or(0, |f| f.to_string().len());
    let prompt_tokens = approx_tokens(prompt_chars + format_chars);
    let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    axum::Json(json!({
        "id": format!("chatcmpl-fake{n:06}"),
        "object": "chat.completion",
        "created": created,
        "model": FAKE_MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal, "annotations": []},
            "logprobs": null,
            "finish_reason": finish,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached.min(prompt_tokens), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": null,
    }))
    .into_response()
}
