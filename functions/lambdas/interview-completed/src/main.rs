//! The `interview-completed` Lambda binary: one MongoDB client (checked for transactions) and one
//! SQS producer per process, reused by every invocation; built at init with plain variables, at
//! the first invocation when the URI comes from Secrets Manager (`sophia_platform::deferred`), and
//! rebuilt when MongoDB refuses the URI's credentials and the secret has a new value
//! (`sophia_platform::rotation`). It answers SQS batches and the deploy's
//! `{"sophiaOps":"migrate"}` (`interview_completed::ops`).

use interview_completed::{Handler, SqsReportPublisher, options_from_env};
use lambda_runtime::{LambdaEvent, service_fn};
use sophia_platform::deferred::{BoxError, Deferred};
use sophia_platform::mongo::Mongo;
use sophia_platform::rotation;
use sophia_platform::secrets::Secret;
use sophia_sqs_producer::{QueueUrls, SqsProducer};

async fn build() -> Result<Handler<SqsReportPublisher>, BoxError> {
    let options = options_from_env()?;
    let interval = rotation::interval_from_env()?;
    let mongo = Mongo::from_env().await?;
    let producer = SqsProducer::new(sophia_platform::sqs::client(None)?, QueueUrls::from_env());
    Ok(Handler::renewable(mongo, SqsReportPublisher(producer), options, interval))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let handler = Deferred::at_init(&[Secret::MongoDbUri], build).await?;
    let handler = &handler;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<_>| async move { handler.get().await?.invoke(event).await },
    ))
    .await
}
