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
    fn invoke(&self, event: serde_json::Value, context: InvokeContext) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>>;
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
    fn invoke(&self, event: serde_json::Value, context: InvokeContext) -> BoxFuture<'_, Result<serde_json::Value, InvokeError>> {
        Box::pin(async move {
            let payload: SqsEvent = serde_json::from_value(event).map_err(|e| InvokeError::Function(format!("event does not deserialise: {e}")))?;
            let mut ctx = Context::default();
            ctx.request_id = context.request_id;
            ctx.deadline = context.deadline_ms;
            ctx.invoked_function_arn = context.function_arn;
            let response = (self.handler)(LambdaEvent::new(payload, ctx)).await.map_err(|e| InvokeError::Function(e.to_string()))?;
            serde_json::to_value(response).map_err(|e| InvokeError::BadResponse(e.to_string()))
        })
    }
}
