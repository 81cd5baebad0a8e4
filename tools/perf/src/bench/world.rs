//! The local servers a bench run starts (fauxqs, nx-27017 or the server of `--mongo-uri`, the
//! offline OpenAI endpoint: the runner's parts, without its pollers, so nothing else competes for
//! the servers while a figure is taken), and the environment the functions need to reach them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sophia_credits::CreditsStore;
use sophia_declarations::Declaration;
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_sqs_producer::{Queue, QueueUrls, SqsProducer};

use sophia_local::handlers::{self, OpenAiEndpoint};
use sophia_local::queues::{QueueOverrides, QueueSet, create_queue_set_with};
use sophia_local::servers::{LocalServer, free_port, start_fauxqs, start_nx_mongo};

use super::{BenchError, BenchOptions};

/// The local servers and what the functions need to reach them.
pub(super) struct World {
    fauxqs: LocalServer,
    /// The local MongoDB, unless `BenchOptions::mongo_uri` names one.
    nx: Option<LocalServer>,
    pub(super) sqs: aws_sdk_sqs::Client,
    pub(super) queues: QueueSet,
    pub(super) mongo: Mongo,
    pub(super) settings: MongoSettings,
    pub(super) openai: OpenAiEndpoint,
    pub(super) env: Vec<(String, String)>,
    /// `RECORD_CONCURRENCY` of the binaries' first batches.
    pub(super) record_concurrency: usize,
}

impl World {
    pub(super) async fn start(options: &BenchOptions) -> Result<Self, BenchError> {
        let fauxqs = start_fauxqs(free_port())?;
        let (nx, uri, database) = match &options.mongo_uri {
            Some(uri) => {
                let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
                (None, uri.clone(), format!("sophia-bench-{at}"))
            }
            None => {
                let nx = start_nx_mongo(free_port())?;
                let uri = nx.url();
                (Some(nx), uri, "sophia-bench".to_owned())
            }
        };
        let sqs = sophia_platform::sqs::local_client(&fauxqs.url());
        let queues =
            create_queue_set_with(&sqs, "sophia-bench", Declaration::embedded(), &QueueOverrides::default()).await?;
        let settings = MongoSettings {
            uri: uri.clone(),
            database,
            server_selection_timeout: Duration::from_secs(5),
            allow_standalone: nx.is_some(),
        };
        let mongo = Mongo::connect(&settings).await?;
        mongo.check_deployment().await?;
        handlers::migrate(&mongo).await.map_err(BenchError::Other)?;
        let openai = OpenAiEndpoint::start(None).await.map_err(BenchError::Other)?;
        let mut env = vec![
            ("AWS_ENDPOINT_URL_SQS".to_owned(), fauxqs.url()),
            ("AWS_REGION".to_owned(), "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID".to_owned(), "local".to_owned()),
            ("AWS_SECRET_ACCESS_KEY".to_owned(), "local".to_owned()),
            (Queue::InterviewCompleted.url_env().to_owned(), queues.interview_completed.source.url.clone()),
            (Queue::ReportGenerate.url_env().to_owned(), queues.report_generate.source.url.clone()),
            (config::MONGODB_URI.to_owned(), uri),
            (config::MONGODB_DATABASE.to_owned(), settings.database.clone()),
            (config::MONGODB_ALLOW_STANDALONE.to_owned(), nx.is_some().to_string()),
            (config::OPENAI_BASE_URL.to_owned(), openai.base_url.clone()),
            (config::OPENAI_MODEL.to_owned(), openai.model.clone()),
            (config::OPENAI_API_KEY.to_owned(), openai.api_key.clone()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
        ];
        // nx-27017 cannot commit concurrent transactions: its first batches run one record at a
        // time, as the runner's settlement does; a real server keeps the binaries' default.
        let record_concurrency =
            if nx.is_some() { 1 } else { sophia_sqs_consumer::ConsumerOptions::default().concurrency };
        env.push((config::RECORD_CONCURRENCY.to_owned(), record_concurrency.to_string()));
        Ok(Self { fauxqs, nx, sqs, queues, mongo, settings, openai, env, record_concurrency })
    }

    pub(super) fn store(&self) -> CreditsStore {
        CreditsStore::new(self.mongo.db.clone())
    }

    pub(super) fn producer(&self) -> SqsProducer {
        SqsProducer::new(
            self.sqs.clone(),
            QueueUrls::default()
                .with(Queue::InterviewCompleted, self.queues.interview_completed.source.url.clone())
                .with(Queue::ReportGenerate, self.queues.report_generate.source.url.clone()),
        )
    }

    pub(super) async fn stop(mut self) {
        self.openai.stop();
        self.fauxqs.stop();
        match self.nx.take() {
            Some(mut nx) => nx.stop(),
            None => {
                if let Err(e) = self.mongo.db.drop().await {
                    eprintln!("could not drop the bench database {}: {e}", self.settings.database);
                }
            }
        }
    }
}
