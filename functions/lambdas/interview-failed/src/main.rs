//! The `interview-failed` Lambda binary (not subscribed; see the library docs); its client is
//! built at init with a plain variable, at the first invocation when the URI comes from Secrets
//! Manager (`sophia_platform::deferred`).

use interview_completed::options_from_env;
use interview_failed::Handler;
use lambda_runtime::{LambdaEvent, service_fn};
use sophia_platform::deferred::{BoxError, Deferred};
use sophia_platform::mongo::Mongo;
use sophia_platform::secrets::Secret;

async fn build() -> Result<Handler, BoxError> {
    let options = options_from_env()?;
    Ok(Handler::with_options(Mongo::from_env().await?, options))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler = Deferred::at_init(&[Secret::MongoDbUri], build).await?;
    let handler = &handler;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<_>| async move { handler.get().await?.handle(event).await },
    ))
    .await
}
