//! The report-generate Lambda binary: clients built once (at init with plain variables, at the
//! first invocation when the secrets come from Secrets Manager, and again when OpenAI or MongoDB
//! refuses a secret that has a new value), then the runtime loop.

use lambda_runtime::{LambdaEvent, service_fn};
use report_generate::ReportGenerateHandler;
use sophia_platform::deferred::Deferred;
use sophia_platform::secrets::Secret;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler =
        Deferred::at_init(&[Secret::MongoDbUri, Secret::OpenAiApiKey], ReportGenerateHandler::from_env).await?;
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        handler.get().await?.handle_invocation(event).await
    }))
    .await
}
