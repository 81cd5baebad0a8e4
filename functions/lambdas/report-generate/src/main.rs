//! The report-generate Lambda binary: clients built once, then the runtime loop.

use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use report_generate::ReportGenerateHandler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler = Arc::new(ReportGenerateHandler::from_env().await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| {
        let handler = handler.clone();
        async move { handler.handle(event).await.map_err(lambda_runtime::Error::from) }
    }))
    .await
}
