//! A local Lambda Runtime API (the `2018-06-01` interface a `bootstrap` binary talks to), so the
//! runner can drive the actual built binaries, and the benchmarks can time their cold start.
//! One server per function process; invocations are queued and answered in order.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::{Mutex as AsyncMutex, mpsc, oneshot};

use crate::invoke::{BoxFuture, Invoke, InvokeContext, InvokeError};

type Reply = oneshot::Sender<Result<serde_json::Value, InvokeError>>;

struct Pending {
    event: serde_json::Value,
    context: InvokeContext,
    reply: Reply,
}

#[derive(Clone)]
struct Shared {
    queue: Arc<AsyncMutex<mpsc::Receiver<Pending>>>,
    in_flight: Arc<Mutex<HashMap<String, Reply>>>,
    init_error: Arc<Mutex<Option<String>>>,
    first_poll: Arc<tokio::sync::Notify>,
}

/// The server and the function process behind it.
pub struct RuntimeApi {
    addr: SocketAddr,
    sender: mpsc::Sender<Pending>,
    shared: Shared,
    server: tokio::task::JoinHandle<()>,
    process: Option<tokio::process::Child>,
}

impl RuntimeApi {
    /// Serves the Runtime API on 127.0.0.1 (a free port).
    pub async fn serve() -> std::io::Result<Self> {
        let (sender, receiver) = mpsc::channel(64);
        let shared = Shared {
            queue: Arc::new(AsyncMutex::new(receiver)),
            in_flight: Arc::default(),
            init_error: Arc::default(),
            first_poll: Arc::new(tokio::sync::Notify::new()),
        };
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, sender, shared, server, process: None })
    }

    /// `host:port`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Starts the function binary against this API with the environment variables Lambda sets,
    /// including the execution role's credentials (placeholders here: nothing local checks
    /// them), then `env`, which may override any of them.
    pub fn start_function(
        &mut self,
        binary: &Path,
        function_name: &str,
        memory_mb: u32,
        env: &[(String, String)],
    ) -> std::io::Result<()> {
        let mut cmd = tokio::process::Command::new(binary);
        cmd.env("AWS_LAMBDA_RUNTIME_API", self.address())
            .env("AWS_LAMBDA_FUNCTION_NAME", function_name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", memory_mb.to_string())
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{function_name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_SESSION_TOKEN", "local")
            // No EMF metric lines on a local console (a caller's `env` may turn them back on).
            .env("SOPHIA_METRICS", "off")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        self.process = Some(cmd.spawn()?);
        Ok(())
    }

    /// Waits until the function asked for its first event (its init is done), or fails if it
    /// reported an init error or exited.
    pub async fn wait_ready(&mut self, limit: Duration) -> Result<Duration, InvokeError> {
        let started = std::time::Instant::now();
        let notified = self.shared.first_poll.notified();
        tokio::pin!(notified);
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut notified => return Ok(started.elapsed()),
                _ = &mut deadline => return Err(InvokeError::Unavailable("the function did not become ready".into())),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    if let Some(e) = self.shared.init_error.lock().unwrap().clone() {
                        return Err(InvokeError::Unavailable(format!("init error: {e}")));
                    }
                    if let Some(p) = self.process.as_mut()
                        && let Ok(Some(status)) = p.try_wait()
                    {
                        return Err(InvokeError::Unavailable(format!("the function exited during init: {status}")));
                    }
                }
            }
        }
    }

    /// The function process's PID, if running.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(|p| p.id())
    }

    pub async fn stop(&mut self) {
        if let Some(mut p) = self.process.take() {
            let _ = p.kill().await;
        }
        self.server.abort();
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Invoke for RuntimeApi {
    fn invoke(
        &self,
        event: serde_json::Value,
        context: InvokeContext,
    ) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.sender
                .send(Pending { event, context, reply })
                .await
                .map_err(|_| InvokeError::Unavailable("runtime API stopped".into()))?;
            answer.await.map_err(|_| InvokeError::Unavailable("the invocation was abandoned".into()))?
        })
    }
}

async fn next(State(shared): State<Shared>) -> Response {
    shared.first_poll.notify_waiters();
    shared.first_poll.notify_one();
    let pending = shared.queue.lock().await.recv().await;
    let Some(p) = pending else {
        return StatusCode::GONE.into_response();
    };
    let mut headers = HeaderMap::new();
    let header = |v: &str| HeaderValue::from_str(v).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    headers.insert("lambda-runtime-aws-request-id", header(&p.context.request_id));
    headers.insert("lambda-runtime-deadline-ms", header(&p.context.deadline_ms.to_string()));
    headers.insert("lambda-runtime-invoked-function-arn", header(&p.context.function_arn));
    headers.insert("lambda-runtime-trace-id", header(&format!("Root=1-{}", p.context.request_id)));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    shared.in_flight.lock().unwrap().insert(p.context.request_id.clone(), p.reply);
    (headers, p.event.to_string()).into_response()
}

async fn response(State(shared): State<Shared>, UrlPath(id): UrlPath<String>, body: Bytes) -> StatusCode {
    let Some(reply) = shared.in_flight.lock().unwrap().remove(&id) else {
        return StatusCode::BAD_REQUEST;
    };
    let parsed = serde_json::from_slice(&body).map_err(|e| InvokeError::BadResponse(e.to_string()));
    let _ = reply.send(parsed);
    StatusCode::ACCEPTED
}

async fn error(State(shared): State<Shared>, UrlPath(id): UrlPath<String>, body: Bytes) -> StatusCode {
    let Some(reply) = shared.in_flight.lock().unwrap().remove(&id) else {
        return StatusCode::BAD_REQUEST;
    };
    let _ = reply.send(Err(InvokeError::Function(String::from_utf8_lossy(&body).into_owned())));
    StatusCode::ACCEPTED
}

async fn init_error(State(shared): State<Shared>, body: Bytes) -> StatusCode {
    *shared.init_error.lock().unwrap() = Some(String::from_utf8_lossy(&body).into_owned());
    StatusCode::ACCEPTED
}
