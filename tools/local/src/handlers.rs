//! The functions the runner calls in-process, built from the same library code as the Lambda
//! binaries (one MongoDB client and one SQS producer per function, as `main` does), and the
//! OpenAI endpoint they talk to.

use std::collections::BTreeMap;
use std::sync::Arc;

use interview_completed::{Handler as InterviewCompletedHandler, SqsReportPublisher, consumer_options};
use report_generate::ReportGenerateHandler;
use sophia_openai_fake::FakeOpenAi;
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_reports::openai::OpenAiSettings;
use sophia_reports::{ReportModel, ReportService};
use sophia_sqs_consumer::queue::SqsRecordQueue;
use sophia_sqs_producer::{Queue, QueueUrls, SqsProducer};

use crate::invoke::{BoxError, Instances, Invoke};

/// The model name the offline endpoint reports, so stored reports say where they came from.
pub const OFFLINE_MODEL: &str = "sophia-offline-deterministic";

/// Where report generation sends its chat completions.
pub struct OpenAiEndpoint {
    pub base_url: String,
    pub model: String,
    /// Passed only to function processes (never written to the env file).
    pub api_key: String,
    fake: Option<FakeOpenAi>,
}

impl OpenAiEndpoint {
    /// With a key: OpenAI (or `OPENAI_BASE_URL`), model from `OPENAI_MODEL`. Without: the local
    /// deterministic endpoint, which labels every report it makes.
    pub async fn start(api_key: Option<String>) -> Result<Self, String> {
        match api_key {
            Some(key) => Ok(Self {
                base_url: config::optional(config::OPENAI_BASE_URL)
                    .unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
                model: config::optional(config::OPENAI_MODEL)
                    .unwrap_or_else(|| config::DEFAULT_OPENAI_MODEL.to_owned()),
                api_key: key,
                fake: None,
            }),
            None => {
                let fake = FakeOpenAi::deterministic()
                    .map_err(|e| format!("the offline OpenAI endpoint did not start: {e}"))?;
                Ok(Self {
                    base_url: fake.base_url(),
                    model: OFFLINE_MODEL.to_owned(),
                    api_key: "offline-no-key".to_owned(),
                    fake: Some(fake),
                })
            }
        }
    }

    pub fn describe(&self) -> String {
        match &self.fake {
            Some(_) => format!("offline deterministic endpoint {} (no OPENAI_API_KEY)", self.base_url),
            None => format!("{} model {}", self.base_url, self.model),
        }
    }

    pub fn settings(&self) -> OpenAiSettings {
        let mut s = OpenAiSettings::for_endpoint(self.base_url.clone(), self.model.clone());
        if self.fake.is_none() {
            s.api_key = Some(self.api_key.clone());
        }
        s
    }

    /// The offline endpoint's fault URL (`PUT`/`GET /__sophia/fault` on its own server, its base
    /// URL without `/v1`); `None` for a real endpoint, where nothing can be injected.
    pub fn fault_url(&self) -> Option<String> {
        self.fake
            .as_ref()
            .map(|_| format!("{}/__sophia/fault", self.base_url.trim_end_matches('/').trim_end_matches("/v1")))
    }

    /// The bearer token of that fault interface; `None` for a real endpoint.
    pub fn fault_token(&self) -> Option<String> {
        self.fake.as_ref().map(|f| f.fault_token().to_owned())
    }

    pub fn stop(&mut self) {
        self.fake.take();
    }
}

/// The explicit migration step: every collection's indexes (idempotent).
pub async fn migrate(mongo: &Mongo) -> Result<(), String> {
    sophia_credits::migrations::apply(&mongo.db).await.map_err(|e| format!("credits migrations: {e}"))?;
    sophia_reports::migrations::apply(&mongo.db).await.map_err(|e| format!("reports migrations: {e}"))?;
    Ok(())
}

/// The in-process invoker of the function subscribed to `queue`: `instances` execution
/// environments, each with its own runtime and clients built as the binary's `main` builds them.
/// One arm per declared queue: a queue added to the declaration does not compile here until its
/// consumer is wired in (runs with `--bootstrap` start the built binaries instead).
pub async fn in_process(
    queue: Queue,
    instances: usize,
    mongo: &Mongo,
    sqs_endpoint: &str,
    env: &BTreeMap<String, String>,
    openai: &OpenAiEndpoint,
) -> Result<Arc<dyn Invoke>, String> {
    let function = queue.settings().consumer.as_str();
    let urls = QueueUrls::from_lookup(|name| env.get(name).cloned());
    let settings = mongo_settings(mongo, env);
    let endpoint = sqs_endpoint.to_owned();
    let invoker: Instances = match queue {
        Queue::InterviewCompleted => {
            let options = consumer_options(env.get(config::RECORD_CONCURRENCY).map(String::as_str))
                .map_err(|e| format!("{function}: {e}"))?
                .with_queue(local_record_queue(sqs_endpoint));
            Instances::spawn(
                function,
                instances,
                move || {
                    let (settings, endpoint, urls, options) =
                        (settings.clone(), endpoint.clone(), urls.clone(), options.clone());
                    async move {
                        let mongo = Mongo::connect(&settings).await?;
                        let sqs = sophia_platform::sqs::local_client(&endpoint);
                        Ok::<_, BoxError>(InterviewCompletedHandler::with_options(
                            mongo,
                            SqsReportPublisher(SqsProducer::new(sqs, urls)),
                            options,
                        ))
                    }
                },
                |h, event| {
                    Box::pin(async move { h.handle(event).await.map_err(|e| -> BoxError { e.to_string().into() }) })
                },
            )
        }
        Queue::ReportGenerate => {
            let mut openai = openai.settings();
            // As the binary reads it (`OPENAI_TIMEOUT_MS`): a drill shortens the attempt timeout.
            if let Some(ms) = env.get(sophia_reports::openai::OPENAI_TIMEOUT_MS) {
                let ms: u64 = ms
                    .parse()
                    .map_err(|_| format!("{function}: OPENAI_TIMEOUT_MS: expected milliseconds, got {ms:?}"))?;
                openai.timeout = std::time::Duration::from_millis(ms);
            }
            let options = report_generate::consumer_options().with_queue(local_record_queue(sqs_endpoint));
            Instances::spawn(
                function,
                instances,
                move || {
                    let (settings, openai, options) = (settings.clone(), openai.clone(), options.clone());
                    async move {
                        let mongo = Mongo::connect(&settings).await?;
                        let service = ReportService::new(mongo.db.clone(), ReportModel::new(&openai));
                        Ok::<_, BoxError>(ReportGenerateHandler::with_service(mongo, service, options))
                    }
                },
                |h, event| Box::pin(async move { h.handle(event).await.map_err(|e| -> BoxError { Box::new(e) }) }),
            )
        }
    }
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(invoker))
}

/// The queue a consumer changes a failed record's visibility on (its backoff) and requeues to: the
/// local SQS, whose address the runner knows and the process environment does not.
fn local_record_queue(sqs_endpoint: &str) -> Arc<SqsRecordQueue> {
    let client = sophia_platform::sqs::local_client(sqs_endpoint);
    Arc::new(SqsRecordQueue::with_client(client, Some(sqs_endpoint.to_owned())))
}

fn mongo_settings(mongo: &Mongo, env: &BTreeMap<String, String>) -> MongoSettings {
    MongoSettings {
        uri: env.get(config::MONGODB_URI).cloned().unwrap_or_default(),
        database: mongo.db.name().to_owned(),
        server_selection_timeout: std::time::Duration::from_secs(5),
        allow_standalone: true,
    }
}
