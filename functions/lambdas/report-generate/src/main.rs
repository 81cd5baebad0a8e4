//! The report-generate Lambda binary: clients built once (at init, or at the first invocation
//! when the secrets extension is not serving yet), then the runtime loop.

use lambda_runtime::{LambdaEvent, service_fn};
use report_generate::ReportGenerateHandler;
use sophia_platform::deferred::Deferred;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler = Deferred::at_init(ReportGenerateHandler::from_env).await?;
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        handler.get().await?.handle(event).await.map_err(lambda_runtime::Error::from)
    }))
    .await
}
