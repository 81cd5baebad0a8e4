//! Drills: the runner's control channel. While `sophia-local up` runs, an operator injects faults
//! and pauses consumers from another shell (`sophia-local fault|pause|resume|status`, see
//! docs/local.md#drills):
//!
//! - OpenAI: the standing fault of the offline OpenAI-compatible endpoint, set over its own HTTP
//!   interface (`PUT /__sophia/fault` on the fake's server, `{"kind", "retryAfterSeconds",
//!   "delayMs"}`); impossible when the runner calls a real endpoint (`OPENAI_API_KEY` set);
//! - MongoDB: the functions reach nx-27017 through a [`TcpProxy`] that `down` closes and `up`
//!   opens again (the operator's tools and the runner's own client connect directly);
//! - a consumer: its event source mapping stops receiving (as a disabled mapping) and resumes.
//!
//! The channel is a small HTTP server of the runner on 127.0.0.1; its URL and a per-run bearer
//! token are written to the env file (readable by its owner only), as
//! [`CONTROL_URL`] and [`CONTROL_TOKEN`]. Requests without the token are refused.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::esm::{EsmStats, Pause};
use crate::proxy::TcpProxy;
use crate::queues::QueuePair;

/// The env-file variable with the control server's URL (`http://127.0.0.1:<port>`).
pub const CONTROL_URL: &str = "SOPHIA_LOCAL_CONTROL_URL";
/// The env-file variable with the per-run bearer token of the control server.
pub const CONTROL_TOKEN: &str = "SOPHIA_LOCAL_CONTROL_TOKEN";

/// The OpenAI fault kinds the offline endpoint accepts.
pub const OPENAI_FAULT_KINDS: [&str; 6] = ["none", "unauthorized", "rate_limited", "server_error", "timeout", "slow"];

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("no function {0:?} is subscribed in this pipeline (subscribed: {1})")]
    UnknownFunction(String, String),
    #[error(
        "cannot inject an OpenAI fault: the runner calls a real endpoint ({0}, OPENAI_API_KEY is set); restart it without OPENAI_API_KEY to drill OpenAI faults"
    )]
    RealOpenAi(String),
    #[error("the OpenAI endpoint refused the fault: {0}")]
    Fake(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}: paused, but a poller still holds a batch past the function's timeout")]
    Busy(String),
}

impl ControlError {
    fn status(&self) -> StatusCode {
        match self {
            Self::UnknownFunction(..) => StatusCode::NOT_FOUND,
            Self::RealOpenAi(_) => StatusCode::CONFLICT,
            Self::Fake(_) => StatusCode::BAD_GATEWAY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Busy(_) => StatusCode::GATEWAY_TIMEOUT,
        }
    }
}

/// One subscribed function, as the controls see it.
pub struct ControlledFunction {
    pub name: String,
    pub pair: QueuePair,
    pub timeout: Duration,
    pub stats: Arc<EsmStats>,
    pub pause: Arc<Pause>,
    /// Its pollers (all of them park before `pause` answers).
    pub pollers: usize,
}

/// What can be injected, and the state to report.
pub struct Controls {
    functions: Vec<ControlledFunction>,
    proxy: TcpProxy,
    direct_mongo_uri: String,
    /// `http://127.0.0.1:<port>/__sophia/fault` of the offline endpoint; `None` with a real one.
    openai_fault_url: Option<String>,
    openai_endpoint: String,
    sqs: aws_sdk_sqs::Client,
}

impl Controls {
    pub fn new(
        functions: Vec<ControlledFunction>,
        proxy: TcpProxy,
        direct_mongo_uri: String,
        openai_fault_url: Option<String>,
        openai_endpoint: String,
        sqs: aws_sdk_sqs::Client,
    ) -> Self {
        Self { functions, proxy, direct_mongo_uri, openai_fault_url, openai_endpoint, sqs }
    }

    fn function(&self, name: &str) -> Result<&ControlledFunction, ControlError> {
        self.functions.iter().find(|f| f.name == name).ok_or_else(|| {
            ControlError::UnknownFunction(
                name.to_owned(),
                self.functions.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", "),
            )
        })
    }

    /// Stops (`true`) or restarts (`false`) the event source mapping of `function`. A pause
    /// returns once every poller has finished the batch it held: from then on nothing is received.
    pub async fn set_paused(&self, function: &str, paused: bool) -> Result<(), ControlError> {
        let f = self.function(function)?;
        if paused {
            if !f.pause.pause(f.pollers, f.timeout + Duration::from_secs(10)).await {
                return Err(ControlError::Busy(function.to_owned()));
            }
        } else {
            f.pause.resume();
        }
        tracing::info!(function, paused, "drill: event source mapping {}", if paused { "paused" } else { "resumed" });
        Ok(())
    }

    /// MongoDB unreachable for the functions (`true`) or reachable again.
    pub fn set_mongo_down(&self, down: bool) {
        self.proxy.set_down(down);
        tracing::info!(down, "drill: MongoDB {} for the functions", if down { "down" } else { "up" });
    }

    /// The MongoDB URI the functions use (the proxy).
    pub fn functions_mongo_uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/", self.proxy.port())
    }

    /// Sets the offline endpoint's standing fault (`{"kind": ..., "retryAfterSeconds"?,
    /// "delayMs"?}`, passed as is).
    pub async fn set_openai_fault(&self, body: &Value) -> Result<(), ControlError> {
        let Some(url) = &self.openai_fault_url else {
            return Err(ControlError::RealOpenAi(self.openai_endpoint.clone()));
        };
        let (status, answer) = http("PUT", url, None, Some(body.to_string())).await.map_err(ControlError::Fake)?;
        if status == 404 {
            return Err(ControlError::Fake(format!(
                "HTTP 404 on {url}: this build's offline endpoint has no fault interface (PUT /__sophia/fault)"
            )));
        }
        if status != 204 {
            return Err(ControlError::Fake(format!("HTTP {status}: {answer}")));
        }
        tracing::info!(fault = %body, "drill: OpenAI fault set");
        Ok(())
    }

    async fn openai_fault(&self) -> Option<Value> {
        let url = self.openai_fault_url.as_ref()?;
        match http("GET", url, None, None).await {
            Ok((200, body)) => serde_json::from_str(&body).ok(),
            Ok((404, _)) => Some(json!({"error": "no fault interface on the offline endpoint (HTTP 404)"})),
            Ok((status, body)) => Some(json!({"error": format!("HTTP {status}: {body}")})),
            Err(e) => Some(json!({"error": e})),
        }
    }

    async fn depth(&self, url: &str) -> (Option<u64>, Option<u64>) {
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await;
        let Ok(out) = out else { return (None, None) };
        let attrs = out.attributes.unwrap_or_default();
        let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse().ok());
        (
            n(QueueAttributeName::ApproximateNumberOfMessages),
            n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        )
    }

    /// What is injected or paused now, and each consumer's queue and counters.
    pub async fn status(&self) -> Status {
        let mut functions = Vec::new();
        for f in &self.functions {
            let (visible, in_flight) = self.depth(&f.pair.source.url).await;
            let (dlq_visible, dlq_in_flight) = self.depth(&f.pair.dlq.url).await;
            let [invocations, records, deleted, item_failures, batch_failures] = f.stats.snapshot();
            functions.push(FunctionStatus {
                name: f.name.clone(),
                paused: f.pause.is_on(),
                queue: f.pair.source.name.clone(),
                visible,
                in_flight,
                dlq_visible: dlq_visible.map(|v| v + dlq_in_flight.unwrap_or(0)),
                invocations,
                records,
                deleted,
                item_failures,
                batch_failures,
                longest_invocation_ms: f.stats.longest_invocation_ms.load(Ordering::Relaxed),
                timeout_ms: f.timeout.as_millis() as u64,
            });
        }
        let s = &self.proxy.stats;
        Status {
            openai: OpenAiStatus {
                endpoint: self.openai_endpoint.clone(),
                injectable: self.openai_fault_url.is_some(),
                fault: self.openai_fault().await,
            },
            mongo: MongoStatus {
                down: self.proxy.is_down(),
                functions_uri: self.functions_mongo_uri(),
                direct_uri: self.direct_mongo_uri.clone(),
                passed: s.passed.load(Ordering::Relaxed),
                refused: s.refused.load(Ordering::Relaxed),
                cut: s.cut.load(Ordering::Relaxed),
            },
            functions,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub openai: OpenAiStatus,
    pub mongo: MongoStatus,
    pub functions: Vec<FunctionStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAiStatus {
    pub endpoint: String,
    /// Whether faults can be injected (the offline endpoint).
    pub injectable: bool,
    /// The standing fault, as the endpoint reports it (`{"kind": "none"}` when none).
    pub fault: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MongoStatus {
    /// MongoDB unreachable for the functions.
    pub down: bool,
    /// What the functions connect to (the proxy).
    pub functions_uri: String,
    /// What the env file gives the operator's tools (nx-27017 itself).
    pub direct_uri: String,
    pub passed: u64,
    pub refused: u64,
    pub cut: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionStatus {
    pub name: String,
    pub paused: bool,
    pub queue: String,
    /// Messages waiting (`ApproximateNumberOfMessages`).
    pub visible: Option<u64>,
    /// Messages received and not yet deleted (`ApproximateNumberOfMessagesNotVisible`).
    pub in_flight: Option<u64>,
    pub dlq_visible: Option<u64>,
    pub invocations: u64,
    pub records: u64,
    pub deleted: u64,
    pub item_failures: u64,
    pub batch_failures: u64,
    pub longest_invocation_ms: u64,
    pub timeout_ms: u64,
}

impl FunctionStatus {
    /// What `Status` shows for this function.
    pub fn line(&self) -> String {
        let n = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
        format!(
            "{:<20} {:<8} queue {} visible {}, in flight {}; DLQ {} | {} invocations, {} records, {} deleted, {} record failures, {} batch failures (errors) | longest {:.1} s of {} s timeout",
            self.name,
            if self.paused { "PAUSED" } else { "polling" },
            self.queue,
            n(self.visible),
            n(self.in_flight),
            n(self.dlq_visible),
            self.invocations,
            self.records,
            self.deleted,
            self.item_failures,
            self.batch_failures,
            self.longest_invocation_ms as f64 / 1000.0,
            self.timeout_ms / 1000,
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fault = match (&self.openai.fault, self.openai.injectable) {
            (_, false) => "no fault can be injected (a real endpoint)".to_owned(),
            (Some(v), true) => match v.get("kind").and_then(Value::as_str) {
                Some(kind) => {
                    let mut s = kind.to_owned();
                    if let Some(r) = v.get("retryAfterSeconds") {
                        s.push_str(&format!(", Retry-After {r} s"));
                    }
                    if let Some(d) = v.get("delayMs") {
                        s.push_str(&format!(", {d} ms per answer"));
                    }
                    s
                }
                None => format!("unknown ({v})"),
            },
            (None, true) => "unknown".to_owned(),
        };
        writeln!(f, "openai   fault: {fault} ({})", self.openai.endpoint)?;
        writeln!(
            f,
            "mongo    {} for the functions ({}; {} connections passed, {} refused, {} cut); the operator's MONGODB_URI {} is direct",
            if self.mongo.down { "DOWN" } else { "up" },
            self.mongo.functions_uri,
            self.mongo.passed,
            self.mongo.refused,
            self.mongo.cut,
            self.mongo.direct_uri,
        )?;
        for func in &self.functions {
            writeln!(f, "{}", func.line())?;
        }
        Ok(())
    }
}

/// The `state` of `PUT /fault/mongo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MongoState {
    Down,
    Up,
}

#[derive(Serialize, Deserialize)]
struct MongoFault {
    state: MongoState,
}

/// The running control server; stops when dropped.
pub struct ControlServer {
    url: String,
    token: String,
    task: JoinHandle<()>,
}

impl ControlServer {
    /// Serves `controls` on a free 127.0.0.1 port with a new token.
    pub async fn start(controls: Arc<Controls>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr: SocketAddr = listener.local_addr()?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let state = Arc::new(ServerState { controls, token: token.clone() });
        let app = Router::new()
            .route("/status", get(status))
            .route("/fault/openai", put(openai_fault))
            .route("/fault/mongo", put(mongo_fault))
            .route("/pause/{function}", put(pause).delete(resume))
            .with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url: format!("http://{addr}"), token, task })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The env-file lines of the channel.
    pub fn env(&self) -> [(String, String); 2] {
        [(CONTROL_URL.to_owned(), self.url.clone()), (CONTROL_TOKEN.to_owned(), self.token.clone())]
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct ServerState {
    controls: Arc<Controls>,
    token: String,
}

fn authorized(state: &ServerState, headers: &HeaderMap) -> Result<(), Response> {
    let given = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    // Compared without an early exit on the first differing byte.
    let same = given.is_some_and(|g| {
        g.len() == state.token.len() && g.bytes().zip(state.token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    });
    if same {
        Ok(())
    } else {
        Err(error_response(StatusCode::UNAUTHORIZED, "missing or wrong control token (see the runner's env file)"))
    }
}

fn error_response(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

fn result(r: Result<(), ControlError>) -> Response {
    match r {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => error_response(e.status(), &e.to_string()),
    }
}

async fn status(State(s): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    axum::Json(s.controls.status().await).into_response()
}

async fn openai_fault(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return result(Err(ControlError::BadRequest(format!("a JSON body: {e}")))),
    };
    result(s.controls.set_openai_fault(&body).await)
}

async fn mongo_fault(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    match serde_json::from_slice::<MongoFault>(&body) {
        Ok(f) => {
            s.controls.set_mongo_down(f.state == MongoState::Down);
            result(Ok(()))
        }
        Err(e) => result(Err(ControlError::BadRequest(format!("expected {{\"state\": \"down\"|\"up\"}}: {e}")))),
    }
}

async fn pause(State(s): State<Arc<ServerState>>, headers: HeaderMap, UrlPath(function): UrlPath<String>) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    result(s.controls.set_paused(&function, true).await)
}

async fn resume(State(s): State<Arc<ServerState>>, headers: HeaderMap, UrlPath(function): UrlPath<String>) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    result(s.controls.set_paused(&function, false).await)
}

/// The client side of the channel, as `sophia-local fault|pause|resume|status` use it.
#[derive(Debug, Clone)]
pub struct ControlClient {
    url: String,
    token: String,
}

impl ControlClient {
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Self {
        Self { url: url.into(), token: token.into() }
    }

    /// From the runner's env file (an error that says what to do when there is none).
    pub fn from_env_file(path: &Path) -> Result<Self, String> {
        let vars = crate::envfile::read(path).map_err(|e| {
            format!(
                "no running pipeline: cannot read {} ({e}); start one with `scripts/run-local --no-demo`",
                path.display()
            )
        })?;
        let get = |k: &str| {
            vars.get(k).cloned().ok_or_else(|| {
                format!("{} has no {k}: the runner that wrote it has no control channel (restart it)", path.display())
            })
        };
        Ok(Self::new(get(CONTROL_URL)?, get(CONTROL_TOKEN)?))
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<String, String> {
        let url = format!("{}{path}", self.url);
        let (status, answer) =
            http(method, &url, Some(&self.token), body.map(|b| b.to_string())).await.map_err(|e| {
                format!(
                    "the runner's control channel at {} does not answer ({e}): is `sophia-local up` still running?",
                    self.url
                )
            })?;
        if (200..300).contains(&status) {
            return Ok(answer);
        }
        let message = serde_json::from_str::<Value>(&answer)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_owned))
            .unwrap_or(answer);
        Err(message)
    }

    /// `fault openai <kind>`: the body of the offline endpoint's fault contract.
    pub async fn openai_fault(
        &self,
        kind: &str,
        retry_after_seconds: Option<u64>,
        delay_ms: Option<u64>,
    ) -> Result<(), String> {
        let body = openai_fault_body(kind, retry_after_seconds, delay_ms)?;
        self.call("PUT", "/fault/openai", Some(body)).await.map(drop)
    }

    pub async fn mongo(&self, state: MongoState) -> Result<(), String> {
        self.call("PUT", "/fault/mongo", Some(json!(MongoFault { state }))).await.map(drop)
    }

    pub async fn pause(&self, function: &str) -> Result<(), String> {
        self.call("PUT", &format!("/pause/{function}"), None).await.map(drop)
    }

    pub async fn resume(&self, function: &str) -> Result<(), String> {
        self.call("DELETE", &format!("/pause/{function}"), None).await.map(drop)
    }

    pub async fn status(&self) -> Result<Status, String> {
        let body = self.call("GET", "/status", None).await?;
        serde_json::from_str(&body).map_err(|e| format!("unreadable status from the runner: {e}"))
    }
}

/// The fault contract's JSON for `kind`: `retryAfterSeconds` only for `rate_limited`, `delayMs`
/// only for `slow`.
pub fn openai_fault_body(kind: &str, retry_after_seconds: Option<u64>, delay_ms: Option<u64>) -> Result<Value, String> {
    if !OPENAI_FAULT_KINDS.contains(&kind) {
        return Err(format!("unknown OpenAI fault {kind:?}: one of {}", OPENAI_FAULT_KINDS.join(", ")));
    }
    if retry_after_seconds.is_some() && kind != "rate_limited" {
        return Err("--retry-after-seconds goes with rate_limited only".into());
    }
    if delay_ms.is_some() && kind != "slow" {
        return Err("--delay-ms goes with slow only".into());
    }
    let mut body = json!({"kind": kind});
    if let Some(s) = retry_after_seconds {
        body["retryAfterSeconds"] = json!(s);
    }
    if let Some(ms) = delay_ms {
        body["delayMs"] = json!(ms);
    }
    Ok(body)
}

/// One plain-HTTP exchange with a loopback server: (status, body).
async fn http(method: &str, url: &str, token: Option<&str>, body: Option<String>) -> Result<(u16, String), String> {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let client: Client<_, Full<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut request = hyper::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        request = request.header("authorization", format!("Bearer {t}"));
    }
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(Full::new(bytes::Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((status, String::from_utf8_lossy(&bytes).into_owned()))
    };
    tokio::time::timeout(Duration::from_secs(30), exchange).await.map_err(|_| "no answer within 30 s".to_owned())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_bodies_follow_the_endpoints_contract() {
        assert_eq!(openai_fault_body("none", None, None).unwrap(), json!({"kind": "none"}));
        assert_eq!(
            openai_fault_body("rate_limited", Some(2), None).unwrap(),
            json!({"kind": "rate_limited", "retryAfterSeconds": 2})
        );
        assert_eq!(openai_fault_body("slow", None, Some(1500)).unwrap(), json!({"kind": "slow", "delayMs": 1500}));
        assert!(openai_fault_body("outage", None, None).unwrap_err().contains("unknown OpenAI fault"));
        assert!(openai_fault_body("server_error", Some(1), None).is_err());
        assert!(openai_fault_body("timeout", None, Some(1)).is_err());
    }
}
