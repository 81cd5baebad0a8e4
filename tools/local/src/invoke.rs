//! How the event-source-mapping emulator calls a function: in-process (the handler library code
//! with a real `lambda_runtime::Context`), or the built `bootstrap` binary behind a local Lambda
//! Runtime API ([`crate::runtime_api`]). Both speak JSON, as Lambda does.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Context, LambdaEvent};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What Lambda tells a function about one invocation.
#[derive(Debug, Clone)]
pub struct InvokeContext {
    pub request_id: String,
    /// Milliseconds since the epoch.
    pub deadline_ms: u64,
    pub function_arn: String,
}

/// Why an invocation returned no response (Lambda then retries the whole batch).
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error("the function returned an error: {0}")]
    Function(String),
    #[error("the function timed out")]
    Timeout,
    #[error("the function's response is not an SQS batch response: {0}")]
    BadResponse(String),
    #[error("the function is not available: {0}")]
    Unavailable(String),
}

/// A function the emulator can invoke.
pub trait Invoke: Send + Sync {
    fn invoke(
        &self,
        event: serde_json::Value,
        context: InvokeContext,
    ) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>>;
}

/// The event and context as `lambda_runtime` hands them to a handler.
fn lambda_event(event: serde_json::Value, context: InvokeContext) -> Result<LambdaEvent<SqsEvent>, InvokeError> {
    let payload: SqsEvent =
        serde_json::from_value(event).map_err(|e| InvokeError::Function(format!("event does not deserialise: {e}")))?;
    let mut ctx = Context::default();
    ctx.request_id = context.request_id;
    ctx.deadline = context.deadline_ms;
    ctx.invoked_function_arn = context.function_arn;
    Ok(LambdaEvent::new(payload, ctx))
}

/// The handler's answer as the JSON Lambda would send back.
fn response_json(result: Result<SqsBatchResponse, BoxError>) -> Result<serde_json::Value, InvokeError> {
    let response = result.map_err(|e| InvokeError::Function(e.to_string()))?;
    serde_json::to_value(response).map_err(|e| InvokeError::BadResponse(e.to_string()))
}

type Handler = dyn Fn(LambdaEvent<SqsEvent>) -> BoxFuture<'static, Result<SqsBatchResponse, BoxError>> + Send + Sync;

/// Calls the handler code in this process, exactly as `lambda_runtime` would: the event is
/// deserialised from the JSON Lambda sends, the context carries request id, deadline and ARN.
#[derive(Clone)]
pub struct InProcess {
    handler: Arc<Handler>,
}

impl InProcess {
    pub fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(LambdaEvent<SqsEvent>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<SqsBatchResponse, BoxError>> + Send + 'static,
    {
        Self { handler: Arc::new(move |event| Box::pin(handler(event))) }
    }
}

impl Invoke for InProcess {
    fn invoke(
        &self,
        event: serde_json::Value,
        context: InvokeContext,
    ) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>> {
        Box::pin(async move { response_json((self.handler)(lambda_event(event, context)?).await) })
    }
}

/// A future that need not be `Send`: an instance runs its invocations on its own thread.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

struct Job {
    event: serde_json::Value,
    context: InvokeContext,
    reply: tokio::sync::oneshot::Sender<Result<serde_json::Value, InvokeError>>,
}

/// One invocation against an instance's state.
pub type InstanceCall<H> =
    for<'a> fn(&'a H, LambdaEvent<SqsEvent>) -> LocalBoxFuture<'a, Result<SqsBatchResponse, BoxError>>;

/// Function instances, each like a Lambda execution environment: its own thread and
/// current-thread runtime, its state (clients) built once by the factory (what `main` does),
/// one invocation at a time. Invocations go to whichever instance is free.
pub struct Instances {
    jobs: std::sync::mpsc::SyncSender<Job>,
}

impl Instances {
    /// Starts `count` instances. `factory` builds one instance's state inside its runtime;
    /// `call` runs one invocation against it.
    pub fn spawn<H, F, Fut>(name: &str, count: usize, factory: F, call: InstanceCall<H>) -> Result<Self, InvokeError>
    where
        H: 'static,
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<H, BoxError>>,
    {
        let (jobs, receiver) = std::sync::mpsc::sync_channel::<Job>(count.max(1));
        let receiver = Arc::new(std::sync::Mutex::new(receiver));
        let factory = Arc::new(factory);
        for i in 0..count.max(1) {
            let (receiver, factory) = (receiver.clone(), factory.clone());
            let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        Ok(r) => r,
                        Err(e) => return drop(ready_tx.send(Err(e.to_string()))),
                    };
                    let state = match runtime.block_on(factory()) {
                        Ok(s) => s,
                        Err(e) => return drop(ready_tx.send(Err(e.to_string()))),
                    };
                    let _ = ready_tx.send(Ok(()));
                    loop {
                        let job = match receiver.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        let answer = runtime.block_on(async {
                            response_json(call(&state, lambda_event(job.event, job.context)?).await)
                        });
                        let _ = job.reply.send(answer);
                    }
                })
                .map_err(|e| InvokeError::Unavailable(e.to_string()))?;
            ready_rx
                .recv()
                .map_err(|_| InvokeError::Unavailable(format!("{name} instance died during init")))?
                .map_err(|e| InvokeError::Unavailable(format!("{name} init: {e}")))?;
        }
        Ok(Self { jobs })
    }
}

impl Invoke for Instances {
    fn invoke(
        &self,
        event: serde_json::Value,
        context: InvokeContext,
    ) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>> {
        Box::pin(async move {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let jobs = self.jobs.clone();
            tokio::task::spawn_blocking(move || jobs.send(Job { event, context, reply }).map_err(|_| ()))
                .await
                .map_err(|e| InvokeError::Unavailable(e.to_string()))?
                .map_err(|_| InvokeError::Unavailable("all instances stopped".into()))?;
            answer.await.map_err(|_| InvokeError::Unavailable("the instance dropped the invocation".into()))?
        })
    }
}
