//! Drills: the runner's control channel. While `sophia-local up` runs, an operator injects faults
//! and pauses consumers from another shell (`sophia-local fault|pause|resume|status`, see
//! docs/local.md#4-drills-rehearse-the-runbook):
//!
//! - OpenAI: the standing fault of the offline OpenAI-compatible endpoint, set over its own HTTP
//!   interface (`PUT /__sophia/fault` on the fake's server, `{"kind", "retryAfterSeconds",
//!   "delayMs"}`); impossible when the runner calls a real endpoint (`OPENAI_API_KEY` set);
//! - MongoDB: the functions reach nx-27017 through a [`TcpProxy`] that `down` closes and `up`
//!   opens again (the operator's tools and the runner's own client connect directly);
//! - a consumer: its event source mapping stops receiving (as a disabled mapping) and resumes;
//!   the mappings are also served in the Lambda API's shapes (`GET /event-source-mappings?EventSourceArn=`
//!   as ListEventSourceMappings, `PUT /event-source-mappings/{uuid}` `{"Enabled": bool}` as
//!   UpdateEventSourceMapping: `State`, `StateTransitionReason`), with each function's invocations,
//!   whole-batch errors, failed records and last error over a window (`GET
//!   /functions/{name}/metrics?windowSeconds=`), so that `sophia-ops queue status|pause|resume`
//!   read and change them locally as they do on a stage;
//! - material for the drills: an organization with interviews holding a reservation (`seed`), and
//!   an `interview.completed` body the contract rejects, as a broken producer sends (`invalid`).
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
use axum::routing::{get, post, put};
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
pub const OPENAI_FAULT_KINDS: [&str; 8] =
    ["none", "unauthorized", "quota", "rate_limited", "server_error", "unavailable", "timeout", "slow"];

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
    #[error("MongoDB: {0}")]
    Mongo(String),
    #[error("no event source mapping {0:?} in this pipeline")]
    UnknownMapping(String),
}

impl ControlError {
    fn status(&self) -> StatusCode {
        match self {
            Self::UnknownFunction(..) | Self::UnknownMapping(_) => StatusCode::NOT_FOUND,
            Self::RealOpenAi(_) => StatusCode::CONFLICT,
            Self::Fake(_) => StatusCode::BAD_GATEWAY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Busy(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::Mongo(_) => StatusCode::INTERNAL_SERVER_ERROR,
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
    /// The mapping's id (`UUID` of the Lambda API's mapping), made at start.
    pub uuid: String,
    /// When the mapping was created, paused or resumed (`LastModified`).
    pub last_modified: std::sync::Mutex<std::time::SystemTime>,
}

impl ControlledFunction {
    /// The mapping as Lambda's `GetEventSourceMapping` / `ListEventSourceMappings` describe one
    /// (the fields `sophia-ops queue status` reads on a stage): `State` is `Enabled` or `Disabled`,
    /// `StateTransitionReason` `USER_INITIATED` (a pause or resume is an operator's).
    pub fn mapping(&self, region: &str) -> Value {
        let modified = self
            .last_modified
            .lock()
            .map(|t| *t)
            .unwrap_or(std::time::UNIX_EPOCH)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        json!({
            "UUID": self.uuid,
            "EventSourceArn": self.pair.source.arn,
            "FunctionArn": format!("arn:aws:lambda:{region}:000000000000:function:{}", self.name),
            "State": if self.pause.is_on() { "Disabled" } else { "Enabled" },
            "StateTransitionReason": "USER_INITIATED",
            "LastModified": modified,
        })
    }
}

/// What can be injected, and the state to report.
pub struct Controls {
    pub functions: Vec<ControlledFunction>,
    pub mongo: sophia_platform::mongo::Mongo,
    /// The interview-completed queue's URL (the invalid body goes there).
    pub interview_queue_url: Option<String>,
    /// The functions' way to MongoDB.
    pub proxy: TcpProxy,
    /// nx-27017 itself (the env file's `MONGODB_URI`).
    pub direct_mongo_uri: String,
    /// `http://127.0.0.1:<port>/__sophia/fault` of the offline endpoint; `None` with a real one.
    pub openai_fault_url: Option<String>,
    /// The bearer token that fault interface requires (`FakeOpenAi::fault_token`).
    pub openai_fault_token: Option<String>,
    /// What the runner calls (for `status`).
    pub openai_endpoint: String,
    pub sqs: aws_sdk_sqs::Client,
}

impl Controls {
    /// A new organization (1000 credits, 30 days) with `interviews` interviews, each holding
    /// [`SEED_RESERVED`] credits, transcript stored, marked COMPLETED with
    /// [`SEED_DURATION_SECONDS`] as the API does before it publishes; nothing is published.
    pub async fn seed(&self, interviews: usize) -> Result<Seeded, ControlError> {
        use sophia_contracts::{DurationSeconds, Timestamp};
        use sophia_credits::{CreditsStore, seed};
        let fail = |e: sophia_credits::CreditsError| ControlError::Mongo(e.to_string());
        let store = CreditsStore::new(self.mongo.db.clone());
        let now = chrono::Utc::now();
        let org = seed::create_organization(&store, &format!("Drill organization {}", now.format("%H:%M:%S")))
            .await
            .map_err(fail)?;
        seed::grant_lot(&store, org, 1000, now + chrono::Duration::days(30)).await.map_err(fail)?;
        let mut ids = Vec::new();
        for _ in 0..interviews.clamp(1, 50) {
            let id =
                seed::reserved_interview(&self.mongo.client, &store, org, SEED_RESERVED, crate::demo::transcript(true))
                    .await
                    .map_err(fail)?;
            let duration = DurationSeconds::new(SEED_DURATION_SECONDS).expect("in range");
            seed::mark_completed(&store, id, Timestamp::now(), duration).await.map_err(fail)?;
            ids.push(id.to_string());
        }
        tracing::info!(organizationId = %org, interviews = ids.len(), "drill: seeded");
        Ok(Seeded {
            organization_id: org.to_string(),
            interview_ids: ids,
            reserved_per_interview: SEED_RESERVED,
            duration_seconds: SEED_DURATION_SECONDS,
        })
    }

    /// Sends to the interview-completed queue an `interview.completed` for these ids whose
    /// `completedAt` and `durationSeconds` the contract rejects: the consumer drops it (the
    /// invalid-messages-dropped drill); the interview keeps its reservation.
    pub async fn send_invalid(&self, interview_id: &str, organization_id: &str) -> Result<String, ControlError> {
        use sophia_contracts::{EventType, RequestId};
        let body = serde_json::to_string(&json!({
            "interviewId": interview_id,
            "organizationId": organization_id,
            "completedAt": "yesterday",
            "durationSeconds": -5,
        }))
        .expect("serialises");
        let queue = sophia_sqs_producer::Queue::InterviewCompleted;
        let urls = match &self.interview_queue_url {
            Some(url) => sophia_sqs_producer::QueueUrls::default().with(queue, url.clone()),
            None => sophia_sqs_producer::QueueUrls::default(),
        };
        let producer = sophia_sqs_producer::SqsProducer::new(self.sqs.clone(), urls);
        producer
            .send(queue, &body, EventType::InterviewCompleted, &RequestId::from_caller(Some("drill-invalid")))
            .await
            .map_err(|e| ControlError::BadRequest(format!("could not send: {e}")))?;
        Ok(body)
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
        if let Ok(mut t) = f.last_modified.lock() {
            *t = std::time::SystemTime::now();
        }
        tracing::info!(function, paused, "drill: event source mapping {}", if paused { "paused" } else { "resumed" });
        Ok(())
    }

    /// The audit record of a `sophia-local pause|resume` of `function`, in `operatorAudit` and in
    /// the shape of sophia-ops' records (`command` `local-pause` or `local-resume`, `args`,
    /// `target`, `who`, `requestId`, `startedAt`, `finishedAt`, `result`), so that `sophia-ops
    /// audit list` lists it and `queue status` says who paused.
    pub async fn audit_mapping_change(
        &self,
        function: &str,
        paused: bool,
        by: Option<String>,
        started: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), String> {
        let verb = if paused { "pause" } else { "resume" };
        let (who, source) = match by.filter(|b| !b.trim().is_empty()) {
            Some(b) => (b, "USER"),
            None => ("sophia-local (unknown user)".to_owned(), "none"),
        };
        let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let record = bson::doc! {
            "command": format!("local-{verb}"),
            "args": [verb, function],
            "target": function,
            "stage": bson::Bson::Null,
            "who": {"who": &who, "source": source, "selfDeclared": true},
            "requestId": format!("local:{verb}:{who}:{}", uuid::Uuid::new_v4()),
            "startedAt": at(started),
            "finishedAt": at(chrono::Utc::now()),
            "result": "done",
            "exitCode": 0,
            "plan": bson::Bson::Null,
            "outcome": {"function": function, "state": if paused { "Disabled" } else { "Enabled" }},
        };
        self.mongo
            .db
            .collection::<bson::Document>(OPERATOR_AUDIT)
            .insert_one(record)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// `ListEventSourceMappings` of the queue `event_source_arn` (every mapping when `None`).
    pub fn mappings(&self, event_source_arn: Option<&str>) -> Value {
        let list: Vec<Value> = self
            .functions
            .iter()
            .filter(|f| event_source_arn.is_none_or(|arn| f.pair.source.arn == arn))
            .map(|f| f.mapping(MAPPING_REGION))
            .collect();
        json!({ "EventSourceMappings": list })
    }

    /// `UpdateEventSourceMapping` with `Enabled`: a pause (`false`) answers once nothing
    /// receives any more, as [`Controls::set_paused`].
    pub async fn update_mapping(&self, uuid: &str, enabled: bool) -> Result<Value, ControlError> {
        let f = self
            .functions
            .iter()
            .find(|f| f.uuid == uuid)
            .ok_or_else(|| ControlError::UnknownMapping(uuid.to_owned()))?;
        self.set_paused(&f.name, !enabled).await?;
        Ok(f.mapping(MAPPING_REGION))
    }

    /// The function's invocations, whole-batch errors and failed records since `since`, the
    /// last error's text, the records it dropped as invalid (message id and the contract's
    /// reason) and the age of its queue's oldest message: what CloudWatch (`Invocations`,
    /// `Errors`, `Throttles`, `RecordsDroppedInvalid`, `ApproximateAgeOfOldestMessage`) and the
    /// function's log give `queue status` on a stage. The local runner never throttles.
    pub async fn function_metrics(&self, function: &str, since: std::time::SystemTime) -> Result<Value, ControlError> {
        let f = self.function(function)?;
        let w = f.stats.window(since);
        Ok(json!({
            "invocations": w.invocations,
            "errors": w.errors,
            "throttles": 0,
            "recordsFailed": w.records_failed,
            "lastError": w.last_error,
            "oldestAgeSeconds": oldest_age_seconds(&f.pair.source).await,
            "droppedInvalid": f.stats.dropped(since).iter().map(|d| json!({
                "at": chrono::DateTime::<chrono::Utc>::from(d.at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "messageId": d.message_id,
                "reason": d.reason,
            })).collect::<Vec<_>>(),
        }))
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
        let token = self.openai_fault_token.as_deref();
        let (status, answer) = http("PUT", url, token, Some(body.to_string())).await.map_err(ControlError::Fake)?;
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
        match http("GET", url, self.openai_fault_token.as_deref(), None).await {
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

/// The region the local mappings' ARNs name (the event source mapping emulator's).
const MAPPING_REGION: &str = "us-east-1";

/// How long `pause` may take: the longest function timeout, and the runner's own margin.
const PAUSE_LIMIT: Duration = Duration::from_secs(330);

/// Credits each seeded interview holds.
pub const SEED_RESERVED: i64 = 10;
/// The duration each seeded interview is completed with (bills all 10 credits).
pub const SEED_DURATION_SECONDS: u64 = 600;

/// What `seed` made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seeded {
    pub organization_id: String,
    pub interview_ids: Vec<String>,
    pub reserved_per_interview: i64,
    pub duration_seconds: u64,
}

#[derive(Serialize, Deserialize)]
struct SeedRequest {
    interviews: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InvalidRequest {
    interview_id: String,
    organization_id: String,
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
            .route("/event-source-mappings", get(list_mappings))
            .route("/event-source-mappings/{uuid}", put(update_mapping))
            .route("/functions/{function}/metrics", get(function_metrics))
            .route("/seed", post(seed))
            .route("/invalid", post(invalid))
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

fn authorized(state: &ServerState, headers: &HeaderMap) -> bool {
    sophia_openai_fake::bearer_matches(headers, &state.token)
}

fn unauthorized() -> Response {
    error_response(StatusCode::UNAUTHORIZED, "missing or wrong control token (see the runner's env file)")
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
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    axum::Json(s.controls.status().await).into_response()
}

async fn openai_fault(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return result(Err(ControlError::BadRequest(format!("a JSON body: {e}")))),
    };
    result(s.controls.set_openai_fault(&body).await)
}

async fn mongo_fault(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    match serde_json::from_slice::<MongoFault>(&body) {
        Ok(f) => {
            s.controls.set_mongo_down(f.state == MongoState::Down);
            result(Ok(()))
        }
        Err(e) => result(Err(ControlError::BadRequest(format!("expected {{\"state\": \"down\"|\"up\"}}: {e}")))),
    }
}

async fn pause(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
    UrlPath(function): UrlPath<String>,
    body: Bytes,
) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    audited(&s.controls, &function, true, &body).await
}

async fn resume(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
    UrlPath(function): UrlPath<String>,
    body: Bytes,
) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    audited(&s.controls, &function, false, &body).await
}

/// A pause or resume of `sophia-local`, then its audit record (`{"by": ...}` of the body names
/// who asked).
async fn audited(controls: &Controls, function: &str, paused: bool, body: &[u8]) -> Response {
    let started = chrono::Utc::now();
    let changed = controls.set_paused(function, paused).await;
    if changed.is_ok() {
        let by = serde_json::from_slice::<Value>(body).ok().and_then(|b| b["by"].as_str().map(str::to_owned));
        if let Err(e) = controls.audit_mapping_change(function, paused, by, started).await {
            tracing::warn!(function, error = %e, "the audit record of the pause or resume was not stored");
        }
    }
    result(changed)
}

/// `?a=b&c=d` of a request, percent-decoded.
fn query_param(uri: &axum::http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn list_mappings(State(s): State<Arc<ServerState>>, headers: HeaderMap, uri: axum::http::Uri) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    axum::Json(s.controls.mappings(query_param(&uri, "EventSourceArn").as_deref())).into_response()
}

/// The body of `UpdateEventSourceMapping` this pipeline honours.
#[derive(Serialize, Deserialize)]
struct MappingUpdate {
    #[serde(rename = "Enabled")]
    enabled: bool,
}

async fn update_mapping(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
    UrlPath(uuid): UrlPath<String>,
    body: Bytes,
) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    let update = match serde_json::from_slice::<MappingUpdate>(&body) {
        Ok(u) => u,
        Err(e) => return result(Err(ControlError::BadRequest(format!("expected {{\"Enabled\": true|false}}: {e}")))),
    };
    match s.controls.update_mapping(&uuid, update.enabled).await {
        Ok(mapping) => axum::Json(mapping).into_response(),
        Err(e) => error_response(e.status(), &e.to_string()),
    }
}

async fn function_metrics(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
    UrlPath(function): UrlPath<String>,
    uri: axum::http::Uri,
) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    let window = query_param(&uri, "windowSeconds").and_then(|w| w.parse::<u64>().ok()).unwrap_or(900);
    let since = std::time::SystemTime::now() - Duration::from_secs(window);
    match s.controls.function_metrics(&function, since).await {
        Ok(m) => axum::Json(m).into_response(),
        Err(e) => error_response(e.status(), &e.to_string()),
    }
}

async fn seed(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    let n = serde_json::from_slice::<SeedRequest>(&body).map(|r| r.interviews).unwrap_or(1);
    // The seeding future is not `Send` for every lifetime (rustc's higher-ranked `Send` check on
    // the credits crate's reservation): run it on a blocking thread of this runtime.
    let controls = s.controls.clone();
    let handle = tokio::runtime::Handle::current();
    let seeded = tokio::task::spawn_blocking(move || handle.block_on(controls.seed(n))).await;
    match seeded {
        Ok(Ok(seeded)) => axum::Json(seeded).into_response(),
        Ok(Err(e)) => error_response(e.status(), &e.to_string()),
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, &format!("seeding stopped: {e}")),
    }
}

async fn invalid(State(s): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&s, &headers) {
        return unauthorized();
    }
    let request = match serde_json::from_slice::<InvalidRequest>(&body) {
        Ok(r) => r,
        Err(e) => {
            return result(Err(ControlError::BadRequest(format!("expected interviewId and organizationId: {e}"))));
        }
    };
    match s.controls.send_invalid(&request.interview_id, &request.organization_id).await {
        Ok(sent) => axum::Json(json!({"sent": sent})).into_response(),
        Err(e) => error_response(e.status(), &e.to_string()),
    }
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
        self.call_within(method, path, body, Duration::from_secs(30)).await
    }

    async fn call_within(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        limit: Duration,
    ) -> Result<String, String> {
        let url = format!("{}{path}", self.url);
        let (status, answer) =
            sophia_platform::loopback::exchange(method, &url, Some(&self.token), body.map(|b| b.to_string()), limit)
                .await
                .map_err(|e| {
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

    /// Answers once the mapping's pollers are parked: a poller finishing a slow batch can take up
    /// to the function's timeout (report-generate: 300 s).
    pub async fn pause(&self, function: &str) -> Result<(), String> {
        self.call_within("PUT", &format!("/pause/{function}"), Some(who_asks()), PAUSE_LIMIT).await.map(drop)
    }

    pub async fn resume(&self, function: &str) -> Result<(), String> {
        self.call("DELETE", &format!("/pause/{function}"), Some(who_asks())).await.map(drop)
    }

    pub async fn seed(&self, interviews: usize) -> Result<Seeded, String> {
        let body = self.call("POST", "/seed", Some(json!(SeedRequest { interviews }))).await?;
        serde_json::from_str(&body).map_err(|e| format!("unreadable answer from the runner: {e}"))
    }

    /// Sends the invalid body; answers the body sent.
    pub async fn send_invalid(&self, interview_id: &str, organization_id: &str) -> Result<String, String> {
        let request =
            InvalidRequest { interview_id: interview_id.to_owned(), organization_id: organization_id.to_owned() };
        let body = self.call("POST", "/invalid", Some(json!(request))).await?;
        let answer: Value =
            serde_json::from_str(&body).map_err(|e| format!("unreadable answer from the runner: {e}"))?;
        Ok(answer["sent"].as_str().unwrap_or_default().to_owned())
    }

    /// `ListEventSourceMappings` of a queue, in the Lambda API's shape.
    pub async fn mappings(&self, event_source_arn: &str) -> Result<Value, String> {
        let body = self.call("GET", &format!("/event-source-mappings?EventSourceArn={event_source_arn}"), None).await?;
        serde_json::from_str(&body).map_err(|e| format!("unreadable answer from the runner: {e}"))
    }

    pub async fn status(&self) -> Result<Status, String> {
        let body = self.call("GET", "/status", None).await?;
        serde_json::from_str(&body).map_err(|e| format!("unreadable status from the runner: {e}"))
    }
}

/// The operator's collection of audit records (sophia-ops' `operatorAudit`, where its local
/// records go).
pub const OPERATOR_AUDIT: &str = "operatorAudit";

/// `{"by": $USER}`: who runs `sophia-local pause|resume` (self-declared, as sophia-ops' local
/// records are).
fn who_asks() -> Value {
    json!({"by": sophia_platform::env::var("USER")})
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

/// The age of the oldest message of `queue` (ready, delayed or in flight), as SQS's
/// `ApproximateAgeOfOldestMessage` counts it, from fauxqs' non-destructive inspection endpoint
/// (`GET /_fauxqs/queues/<name>`: nothing is received, no visibility changes); `None` when the
/// queue is empty or the endpoint does not answer.
async fn oldest_age_seconds(queue: &crate::queues::QueueRef) -> Option<u64> {
    // `http://sqs.<region>.localhost:<port>/<account>/<name>`: fauxqs listens on 127.0.0.1:<port>.
    let port = queue.url.split("://").nth(1)?.split('/').next()?.rsplit(':').next()?;
    let url = format!("http://127.0.0.1:{port}/_fauxqs/queues/{}", queue.name);
    let (status, body) = http("GET", &url, None, None).await.ok()?;
    let state: Value = serde_json::from_str(&body).ok().filter(|_| status == 200)?;
    let messages = &state["messages"];
    let sent = |m: &Value| m["sentTimestamp"].as_u64().or_else(|| m["message"]["sentTimestamp"].as_u64());
    let oldest = ["ready", "delayed", "inflight"]
        .iter()
        .filter_map(|k| messages[k].as_array())
        .flatten()
        .filter_map(sent)
        .min()?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64;
    Some(now.saturating_sub(oldest) / 1000)
}

/// One plain-HTTP exchange with a loopback server: (status, body).
async fn http(method: &str, url: &str, token: Option<&str>, body: Option<String>) -> Result<(u16, String), String> {
    sophia_platform::loopback::exchange(method, url, token, body, Duration::from_secs(30)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_percent_decoded() {
        let uri: axum::http::Uri =
            "/event-source-mappings?EventSourceArn=arn%3Aaws%3Asqs%3Aus-east-1%3A000000000000%3Aq&x=1".parse().unwrap();
        assert_eq!(query_param(&uri, "EventSourceArn").as_deref(), Some("arn:aws:sqs:us-east-1:000000000000:q"));
        assert_eq!(query_param(&uri, "x").as_deref(), Some("1"));
        assert_eq!(query_param(&uri, "y"), None);
        assert_eq!(percent_decode("100%"), "100%");
    }

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
