//! The Lambda functions as their `main`s build them (each instance on its own thread and runtime,
//! like a Lambda execution environment, or in process on the test's runtime), and the declared
//! event source mapping that invokes them from a test's own queues.

use std::sync::Arc;
use std::time::{Duration, Instant};

use interview_completed::SqsReportPublisher;
use report_generate::ReportGenerateHandler;
use sophia_declarations::Declaration;
use sophia_local::esm::{EventSourceMapping, InvocationSummary};
use sophia_local::invoke::{BoxError, Instances, Invoke};
use sophia_local::queues::{QueueRef, QueueSet};
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_reports::{OpenAiSettings, ReportModel, ReportService};
use sophia_sqs_consumer::ConsumerOptions;
use sophia_sqs_producer::{QueueUrls, SqsProducer};

/// `count` instances of the interview-completed Lambda as its `main` builds it (its own MongoDB
/// client and SQS producer, publishing `report.generate` to `report_generate_url`), each on its
/// own thread and runtime like a Lambda execution environment.
pub fn completed_instances(count: usize, mongo: MongoSettings, report_generate_url: &str) -> Arc<dyn Invoke> {
    let (url, endpoint) = (report_generate_url.to_owned(), crate::sqs_endpoint());
    let instances = Instances::spawn(
        "interview-completed",
        count,
        move || {
            let (mongo, url, endpoint) = (mongo.clone(), url.clone(), endpoint.clone());
            async move {
                let mongo = Mongo::connect(&mongo).await?;
                let sqs = sophia_platform::sqs::local_client(&endpoint);
                let urls = QueueUrls::default().with(sophia_sqs_producer::Queue::ReportGenerate, url);
                Ok::<_, BoxError>(interview_completed::Handler::new(
                    mongo,
                    SqsReportPublisher(SqsProducer::new(sqs, urls)),
                ))
            }
        },
        |h, event| Box::pin(async move { h.handle(event).await.map_err(|e| -> BoxError { e.to_string().into() }) }),
    )
    .expect("interview-completed instances start");
    Arc::new(instances)
}

/// One instance of the report-generate Lambda against `openai`, with a lease of `lease` and the
/// consumer options `options`.
pub fn report_instance(
    mongo: MongoSettings,
    openai: OpenAiSettings,
    lease: Duration,
    options: ConsumerOptions,
) -> Arc<dyn Invoke> {
    let instances = Instances::spawn(
        "report-generate",
        1,
        move || {
            let (mongo, openai, options) = (mongo.clone(), openai.clone(), options.clone());
            async move {
                let mongo = Mongo::connect(&mongo).await?;
                let service = ReportService::new(mongo.db.clone(), ReportModel::new(&openai)).with_lease(lease);
                Ok::<_, BoxError>(ReportGenerateHandler::with_service(mongo, service, options))
            }
        },
        |h, event| Box::pin(async move { h.handle(event).await.map_err(|e| -> BoxError { Box::new(e) }) }),
    )
    .expect("report-generate instance starts");
    Arc::new(instances)
}

/// OpenAI settings for the fake: key `test-key`, model `gpt-4.1-mini`, client timeout `timeout`.
pub fn fake_openai(fake: &sophia_openai_fake::FakeOpenAi, timeout: Duration) -> OpenAiSettings {
    let mut settings = OpenAiSettings::for_endpoint(fake.base_url(), "gpt-4.1-mini");
    (settings.api_key, settings.timeout) = (Some("test-key".into()), timeout);
    settings
}

/// The interview-completed handler as production builds it, for in-process calls on the test's
/// own runtime (e.g. to read its `BatchReport` and capture its logs).
pub async fn completed_handler(
    mongo: Mongo,
    report_generate_url: &str,
) -> interview_completed::Handler<SqsReportPublisher> {
    let urls = QueueUrls::default().with(sophia_sqs_producer::Queue::ReportGenerate, report_generate_url.to_owned());
    interview_completed::Handler::new(mongo, SqsReportPublisher(SqsProducer::new(crate::sqs_client().await, urls)))
}

/// The declared event source mapping of `queue` with the settings of the declared queue `key`
/// (`interviewCompleted`, `reportGenerate`), invoking `invoker`.
pub fn esm(client: &aws_sdk_sqs::Client, queue: &QueueRef, key: &str, invoker: Arc<dyn Invoke>) -> EventSourceMapping {
    let decl = Declaration::embedded();
    let settings = decl.queue(key).unwrap_or_else(|| panic!("{key} is not a declared queue key"));
    EventSourceMapping::declared(client.clone(), queue.clone(), settings, decl, invoker)
}

/// The interview queue's mapping with `instances` of the production handler.
pub fn interview_esm(
    client: &aws_sdk_sqs::Client,
    queues: &QueueSet,
    instances: usize,
    mongo: MongoSettings,
) -> EventSourceMapping {
    esm(
        client,
        &queues.interview_completed.source,
        "interviewCompleted",
        completed_instances(instances, mongo, &queues.report_generate.source.url),
    )
}

/// Polls `esm` until `done` says so or `limit` passes; returns every invocation's summary.
pub async fn poll_until(
    esm: &EventSourceMapping,
    limit: Duration,
    mut done: impl FnMut(&[InvocationSummary]) -> bool,
) -> Vec<InvocationSummary> {
    let started = Instant::now();
    let mut all = Vec::new();
    while !done(&all) {
        assert!(started.elapsed() < limit, "not done within {limit:?}: {all:#?}");
        if let Some(s) = esm.poll_once(Duration::from_secs(1)).await.expect("poll") {
            all.push(s);
        }
    }
    all
}
