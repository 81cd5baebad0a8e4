//! The `interview-failed` Lambda binary (not subscribed; see the library docs).

use interview_completed::options_from_env;
use interview_failed::Handler;
use lambda_runtime::service_fn;
use sophia_platform::mongo::Mongo;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler = Handler::with_options(Mongo::from_env().await?, options_from_env()?);
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event| handler.handle(event))).await
}
