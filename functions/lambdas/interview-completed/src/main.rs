//! The `interview-completed` Lambda binary: one MongoDB client (checked for transactions) and one
//! SQS producer per process, reused by every invocation.

use interview_completed::{Handler, SqsReportPublisher, options_from_env};
use lambda_runtime::service_fn;
use sophia_platform::mongo::Mongo;
use sophia_sqs_producer::{QueueUrls, SqsProducer};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sophia_platform::telemetry::init();
    let mongo = Mongo::from_env().await?;
    let producer = SqsProducer::new(sophia_platform::sqs::client(None)?, QueueUrls::from_env());
    let handler = Handler::with_options(mongo, SqsReportPublisher(producer), options_from_env()?);
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event| handler.handle(event))).await
}
