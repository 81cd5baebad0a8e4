//! The local runner: the whole pipeline on one machine.
//!
//! Starts fauxqs and nx-27017 on 127.0.0.1, creates the four queues from the shared declaration,
//! applies the MongoDB migrations, serves the offline OpenAI-compatible endpoint when no key is
//! given, and runs one event-source-mapping emulator per subscribed function, calling the real
//! handler code in-process or the built `bootstrap` binaries behind a local Runtime API. The
//! functions reach MongoDB through a [`TcpProxy`] and every mapping can be paused, so that drills
//! can take them away ([`crate::control`], served on 127.0.0.1). Its endpoints go to
//! `.local/sophia.env`. [`Runner::stop`] stops everything it started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sophia_declarations::{Declaration, Queue, QueueSettings};
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::control::{ControlServer, ControlledFunction, Controls};
use crate::esm::{EsmStats, EventSourceMapping, Pause};
use crate::handlers::{self, OpenAiEndpoint};
use crate::invoke::Invoke;
use crate::proxy::TcpProxy;
use crate::queues::{QueueOverrides, QueueSet, create_queue_set_with};
use crate::runtime_api::RuntimeApi;
use crate::servers::{LocalServer, free_port, start_fauxqs, start_nx_mongo};

/// How functions are called.
#[derive(Debug, Clone)]
pub enum FunctionMode {
    /// The handler library code, in this process, with a real `lambda_runtime::Context`.
    InProcess,
    /// The built binaries: `<dir>/<function>/bootstrap` (cargo-lambda's layout, x86_64) or
    /// `<dir>/<function>` (a `cargo build --release` target dir).
    Bootstrap(PathBuf),
}

#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// 0 picks a free port.
    pub sqs_port: u16,
    pub mongo_port: u16,
    pub database: String,
    /// Queue names are `<prefix>-<name>`.
    pub queue_prefix: String,
    pub functions: FunctionMode,
    /// `Some(key)`: call OpenAI (or `OPENAI_BASE_URL`); `None`: the offline deterministic endpoint.
    pub openai_api_key: Option<String>,
    pub overrides: QueueOverrides,
    pub env_file: Option<PathBuf>,
    /// Pollers per mapping (Lambda scales out; 1 is enough for the demo), each with its own
    /// function instance.
    pub pollers: usize,
    /// Pollers of one function's mapping instead of `pollers`.
    pub function_pollers: BTreeMap<String, usize>,
    /// More environment for the functions (not written to the env file), e.g.
    /// `RECORD_CONCURRENCY`.
    pub function_env: BTreeMap<String, String>,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        Self {
            sqs_port: 0,
            mongo_port: 0,
            database: "sophia".to_owned(),
            queue_prefix: "sophia-local".to_owned(),
            functions: FunctionMode::InProcess,
            openai_api_key: None,
            overrides: QueueOverrides::default(),
            env_file: Some(crate::envfile::default_path()),
            pollers: 1,
            function_pollers: BTreeMap::new(),
            function_env: BTreeMap::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Server(#[from] crate::servers::ServerError),
    #[error(transparent)]
    Queues(#[from] crate::queues::QueueSetupError),
    #[error(transparent)]
    Mongo(#[from] sophia_platform::mongo::MongoError),
    #[error("{0}")]
    Setup(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// A running local pipeline.
pub struct Runner {
    pub queues: QueueSet,
    pub mongo: Mongo,
    pub sqs: aws_sdk_sqs::Client,
    env: BTreeMap<String, String>,
    env_file: Option<PathBuf>,
    stats: Vec<(String, Arc<EsmStats>)>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    runtime_apis: Vec<Arc<tokio::sync::Mutex<RuntimeApi>>>,
    openai: OpenAiEndpoint,
    controls: Arc<Controls>,
    control_server: ControlServer,
    // Dropped last: stopping the servers ends everything else's I/O.
    fauxqs: LocalServer,
    nx_mongo: LocalServer,
}

fn port_or_free(port: u16) -> u16 {
    if port == 0 { free_port() } else { port }
}

/// The pipeline's environment (what the env file holds and the functions read): the SQS
/// endpoint, every declared queue's URL and DLQ URL under the variables the declaration names,
/// MongoDB (direct), the OpenAI endpoint.
fn environment(
    decl: &Declaration,
    queues: &QueueSet,
    fauxqs: &LocalServer,
    nx_mongo: &LocalServer,
    database: &str,
    openai: &OpenAiEndpoint,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("AWS_ENDPOINT_URL_SQS".to_owned(), fauxqs.url());
    env.insert("AWS_REGION".to_owned(), "us-east-1".to_owned());
    // Every declared queue's URL and DLQ URL, under the variables the declaration names.
    for pair in queues.pairs() {
        let settings = decl.queue(&pair.key).expect("created from the declaration");
        env.insert(settings.queue_url_env.clone(), pair.source.url.clone());
        env.insert(settings.dlq_url_env(), pair.dlq.url.clone());
    }
    env.insert(config::MONGODB_URI.to_owned(), nx_mongo.url());
    env.insert(config::MONGODB_DATABASE.to_owned(), database.to_owned());
    env.insert(config::MONGODB_ALLOW_STANDALONE.to_owned(), "true".to_owned());
    env.insert(config::OPENAI_BASE_URL.to_owned(), openai.base_url.clone());
    env.insert(config::OPENAI_MODEL.to_owned(), openai.model.clone());
    env
}

/// Every declared queue's function behind its event source mapping, polling.
struct Functions {
    tasks: Vec<JoinHandle<()>>,
    runtime_apis: Vec<Arc<tokio::sync::Mutex<RuntimeApi>>>,
    stats: Vec<(String, Arc<EsmStats>)>,
    controlled: Vec<ControlledFunction>,
}

impl Functions {
    /// Per declared queue: its function's invoker (in-process or a bootstrap behind a Runtime
    /// API), its mapping and that mapping's pollers (the queue's consumer's count, or `pollers`).
    #[allow(clippy::too_many_arguments)]
    async fn start(
        options: &RunnerOptions,
        queues: &QueueSet,
        mongo: &Mongo,
        sqs: &aws_sdk_sqs::Client,
        fauxqs: &LocalServer,
        function_env: &BTreeMap<String, String>,
        openai: &OpenAiEndpoint,
        shutdown_rx: watch::Receiver<bool>,
    ) -> Result<Self, RunnerError> {
        let decl = Declaration::embedded();
        let mut functions =
            Functions { tasks: Vec::new(), runtime_apis: Vec::new(), stats: Vec::new(), controlled: Vec::new() };
        let pairs: Vec<_> = queues.pairs().to_vec();
        for pair in &pairs {
            let settings = decl.queue(&pair.key).expect("declared");
            let pollers = options.function_pollers.get(&settings.consumer).copied().unwrap_or(options.pollers).max(1);
            let invoker = invoker(
                settings,
                &options.functions,
                pollers,
                mongo,
                &fauxqs.url(),
                function_env,
                openai,
                &mut functions.runtime_apis,
            )
            .await?;
            let esm = EventSourceMapping::declared(sqs.clone(), pair.source.clone(), settings, decl, invoker);
            let pause = Arc::new(Pause::default());
            functions.stats.push((settings.consumer.clone(), esm.stats.clone()));
            functions.controlled.push(ControlledFunction {
                name: settings.consumer.clone(),
                pair: pair.clone(),
                timeout: esm.function_timeout,
                stats: esm.stats.clone(),
                pause: pause.clone(),
                pollers,
                uuid: uuid::Uuid::new_v4().to_string(),
                last_modified: std::sync::Mutex::new(std::time::SystemTime::now()),
            });
            for _ in 0..pollers {
                functions.tasks.push(tokio::spawn(esm.clone().run_pausable(shutdown_rx.clone(), pause.clone())));
            }
        }
        Ok(functions)
    }
}

impl Runner {
    pub async fn start(options: RunnerOptions) -> Result<Self, RunnerError> {
        let decl = Declaration::embedded();
        let fauxqs = start_fauxqs(port_or_free(options.sqs_port))?;
        let nx_mongo = start_nx_mongo(port_or_free(options.mongo_port))?;
        let sqs = sophia_platform::sqs::local_client(&fauxqs.url());
        let queues = create_queue_set_with(&sqs, &options.queue_prefix, decl, &options.overrides).await?;
        let settings = MongoSettings {
            uri: nx_mongo.url(),
            database: options.database.clone(),
            server_selection_timeout: Duration::from_secs(5),
            allow_standalone: true,
        };
        let mongo = Mongo::connect(&settings).await?;
        mongo.check_deployment().await?;
        handlers::migrate(&mongo).await.map_err(RunnerError::Setup)?;
        let openai = OpenAiEndpoint::start(options.openai_api_key.clone()).await.map_err(RunnerError::Setup)?;

        // The functions' way to MongoDB, which a drill can cut (the operator's stays direct).
        let mongo_target = std::net::SocketAddr::from(([127, 0, 0, 1], nx_mongo.port()));
        let proxy = TcpProxy::start(mongo_target).await?;

        let mut env = environment(decl, &queues, &fauxqs, &nx_mongo, &options.database, &openai);
        let mut function_env = env.clone();
        function_env.insert(config::MONGODB_URI.to_owned(), format!("mongodb://127.0.0.1:{}/", proxy.port()));
        function_env.extend(options.function_env.clone());

        let (shutdown, shutdown_rx) = watch::channel(false);
        let functions =
            Functions::start(&options, &queues, &mongo, &sqs, &fauxqs, &function_env, &openai, shutdown_rx).await?;
        let controls = Arc::new(Controls {
            functions: functions.controlled,
            mongo: mongo.clone(),
            interview_queue_url: env.get(Queue::InterviewCompleted.url_env()).cloned(),
            proxy,
            direct_mongo_uri: nx_mongo.url(),
            openai_fault_url: openai.fault_url(),
            openai_fault_token: openai.fault_token(),
            openai_endpoint: openai.describe(),
            sqs: sqs.clone(),
        });
        let control_server = ControlServer::start(controls.clone()).await?;
        env.extend(control_server.env());
        if let Some(path) = &options.env_file {
            crate::envfile::write(path, &env)?;
        }
        Ok(Runner {
            queues,
            mongo,
            sqs,
            env,
            env_file: options.env_file.clone(),
            stats: functions.stats,
            shutdown,
            tasks: functions.tasks,
            runtime_apis: functions.runtime_apis,
            openai,
            controls,
            control_server,
            fauxqs,
            nx_mongo,
        })
    }

    /// The drills' controls (also served over HTTP, see [`crate::control`]).
    pub fn controls(&self) -> &Arc<Controls> {
        &self.controls
    }

    /// The control channel's URL (also in the env file).
    pub fn control_url(&self) -> &str {
        self.control_server.url()
    }

    /// The endpoints, as written to the env file.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    pub fn fauxqs(&self) -> &LocalServer {
        &self.fauxqs
    }

    pub fn nx_mongo(&self) -> &LocalServer {
        &self.nx_mongo
    }

    pub fn openai(&self) -> &OpenAiEndpoint {
        &self.openai
    }

    /// Per function: invocations, records, deleted, item failures, batch failures.
    pub fn stats(&self) -> Vec<(String, [u64; 5])> {
        self.stats.iter().map(|(f, s)| (f.clone(), s.snapshot())).collect()
    }

    /// Per function: records delivered by `ApproximateReceiveCount`.
    pub fn receive_counts(&self) -> Vec<(String, BTreeMap<u32, u64>)> {
        self.stats.iter().map(|(f, s)| (f.clone(), s.receive_counts())).collect()
    }

    /// Stops the pollers, the function processes and the servers; removes the env file.
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(25), task).await;
        }
        for api in self.runtime_apis.drain(..) {
            api.lock().await.stop().await;
        }
        self.control_server.stop();
        self.openai.stop();
        if let Some(path) = &self.env_file {
            let _ = std::fs::remove_file(path);
        }
        self.fauxqs.stop();
        self.nx_mongo.stop();
    }
}

/// The invoker of a subscribed function in `mode`.
#[allow(clippy::too_many_arguments)]
async fn invoker(
    queue: &QueueSettings,
    mode: &FunctionMode,
    instances: usize,
    mongo: &Mongo,
    sqs_endpoint: &str,
    function_env: &BTreeMap<String, String>,
    openai: &OpenAiEndpoint,
    runtime_apis: &mut Vec<Arc<tokio::sync::Mutex<RuntimeApi>>>,
) -> Result<Arc<dyn Invoke>, RunnerError> {
    let function = queue.consumer.as_str();
    match mode {
        FunctionMode::InProcess => {
            let declared = Queue::from_key(&queue.key)
                .ok_or_else(|| RunnerError::Setup(format!("no in-process handler for queue {}", queue.key)))?;
            handlers::in_process(declared, instances, mongo, sqs_endpoint, function_env, openai)
                .await
                .map_err(RunnerError::Setup)
        }
        FunctionMode::Bootstrap(dir) => {
            let binary = [dir.join(function).join("bootstrap"), dir.join(function)]
                .into_iter()
                .find(|p| p.is_file())
                .ok_or_else(|| RunnerError::Setup(format!("no built binary for {function} under {} (build with `cargo build --release -p {function}` or scripts/build x86_64)", dir.display())))?;
            let decl = Declaration::embedded();
            let memory = decl.function(function).map(|f| f.memory_mb).unwrap_or(256);
            let mut env: Vec<(String, String)> = function_env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            env.push((config::OPENAI_API_KEY.to_owned(), openai.api_key.clone()));
            env.push(("AWS_ACCESS_KEY_ID".to_owned(), "local".to_owned()));
            env.push(("AWS_SECRET_ACCESS_KEY".to_owned(), "local".to_owned()));
            let mut api = RuntimeApi::serve().await?;
            api.start_function(&binary, function, memory, &env)?;
            let ready = api
                .wait_ready(Duration::from_secs(30))
                .await
                .map_err(|e| RunnerError::Setup(format!("{function}: {e}")))?;
            tracing::info!(function, readyMs = ready.as_millis() as u64, binary = %binary.display(), "bootstrap ready");
            let api = Arc::new(tokio::sync::Mutex::new(api));
            runtime_apis.push(api.clone());
            Ok(Arc::new(SharedApi(api)))
        }
    }
}

/// The variables the API needs to publish into this pipeline and read what it writes: the URLs
/// of the queues the API publishes to (`publishedByApi` in the declaration: the interview queue,
/// and the report queue for `publishReportGenerate` and the admin retry), the SQS endpoint, a
/// region, placeholder credentials (fauxqs checks none) and MongoDB. `sophia-local up` prints
/// them; the TypeScript contract test runs the package with exactly these.
pub fn api_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let api_queues = Queue::ALL.into_iter().filter(|q| q.settings().published_by_api).map(Queue::url_env);
    let mut api: BTreeMap<String, String> = api_queues
        .chain(["AWS_ENDPOINT_URL_SQS", "AWS_REGION", config::MONGODB_URI, config::MONGODB_DATABASE])
        .filter_map(|k| env.get(k).map(|v| (k.to_owned(), v.clone())))
        .collect();
    api.insert("AWS_ACCESS_KEY_ID".to_owned(), "local".to_owned());
    api.insert("AWS_SECRET_ACCESS_KEY".to_owned(), "local".to_owned());
    api
}

/// A Runtime API shared by several pollers.
struct SharedApi(Arc<tokio::sync::Mutex<RuntimeApi>>);

impl Invoke for SharedApi {
    fn invoke(
        &self,
        event: serde_json::Value,
        context: crate::invoke::InvokeContext,
    ) -> crate::invoke::BoxFuture<'_, Result<serde_json::Value, crate::invoke::InvokeError>> {
        Box::pin(async move {
            let api = self.0.lock().await;
            api.invoke(event, context).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_gets_its_queues_endpoint_region_placeholder_credentials_and_mongodb_and_nothing_else() {
        let env: BTreeMap<String, String> = [
            ("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1"),
            ("AWS_REGION", "us-east-1"),
            ("INTERVIEW_COMPLETED_QUEUE_URL", "http://q"),
            ("REPORT_GENERATE_QUEUE_URL", "http://r"),
            ("INTERVIEW_COMPLETED_DLQ_URL", "http://d"),
            ("MONGODB_URI", "mongodb://127.0.0.1:2/"),
            ("MONGODB_DATABASE", "sophia"),
            ("OPENAI_BASE_URL", "http://o/v1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let api = api_env(&env);
        assert_eq!(
            api.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_ENDPOINT_URL_SQS",
                "AWS_REGION",
                "AWS_SECRET_ACCESS_KEY",
                "INTERVIEW_COMPLETED_QUEUE_URL",
                "MONGODB_DATABASE",
                "MONGODB_URI",
                "REPORT_GENERATE_QUEUE_URL"
            ]
        );
        assert_eq!(api["INTERVIEW_COMPLETED_QUEUE_URL"], "http://q");
        assert_eq!(api["AWS_ACCESS_KEY_ID"], "local");
    }
}
