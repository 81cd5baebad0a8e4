//! The benchmarks (`scripts/bench`, binary `sophia-bench`): figures, not assertions.
//!
//! - zip size of each function (`<lambda dir>/<fn>/bootstrap.zip` from `scripts/build`);
//! - cold start of each release binary behind [`RuntimeApi`]: process start to its first
//!   `/next` poll (its init, incl. the MongoDB `hello` of `Mongo::from_env`, is done), median of
//!   `runs` fresh processes; then the first event's end-to-end time (one real batch invoked right
//!   after ready: 10 settlements, or one report) and the peak RSS (`VmHWM`) after it;
//! - MongoDB round trips per settlement and per report, counted with the driver's command
//!   monitoring around the library calls (`SettlementService`, `ReportService`), next to the
//!   minimum the data model allows;
//! - latency of one batch of 10 settlements of 10 organizations through a warm release
//!   `interview-completed` behind [`RuntimeApi`], with `RECORD_CONCURRENCY` 10 and 1.
//!
//! It starts its own fauxqs, nx-27017 and offline OpenAI endpoint (the runner's parts, without
//! its pollers, so nothing else competes for the servers while a figure is taken).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use interview_completed::SqsReportPublisher;
use mongodb::event::EventHandler;
use mongodb::event::command::CommandEvent;
use serde::Serialize;
use sophia_contracts::{
    DurationSeconds, InterviewCompleted, InterviewFailed, InterviewId, OrganizationId, ReportGenerate, RequestId,
    Timestamp,
};
use sophia_credits::{CreditsStore, SettleContext, SettlementService, seed};
use sophia_declarations::Declaration;
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_reports::{ReportModel, ReportService};
use sophia_sqs_producer::{Queue, QueueUrls, SqsProducer};

use sophia_local::handlers::{self, OpenAiEndpoint};
use sophia_local::invoke::{Invoke, InvokeContext};
use sophia_local::queues::{QueueOverrides, QueueSet, create_queue_set_with};
use sophia_local::runtime_api::RuntimeApi;
use sophia_local::servers::{LocalServer, free_port, start_fauxqs, start_nx_mongo};

/// The deployed functions, in the order the table shows them.
pub const FUNCTIONS: [&str; 3] = ["interview-completed", "report-generate", "interview-failed"];

/// Zip goals: under 4 MB (met), 3 MB or less (met by interview-failed only); docs/performance.md, "Zip size".
pub const ZIP_GOAL_BYTES: u64 = 4_000_000;
pub const ZIP_TARGET_BYTES: u64 = 3_000_000;

#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// `cargo build --release` output (`<dir>/<function>`).
    pub release_dir: PathBuf,
    /// `scripts/build` output (`<dir>/<function>/bootstrap.zip`, `<dir>/build-info.json`).
    pub lambda_dir: PathBuf,
    /// Fresh processes per binary for the cold start.
    pub runs: usize,
    /// Batches per concurrency setting for the batch latency.
    pub batch_repeats: usize,
    /// A MongoDB that can run concurrent transactions (a replica set) instead of a local
    /// nx-27017: the concurrent batch figure is only valid there. The figures go to a fresh
    /// database (`sophia-bench-<time>`), dropped at the end.
    pub mongo_uri: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("servers: {0}")]
    Server(#[from] sophia_local::servers::ServerError),
    #[error("queues: {0}")]
    Queues(#[from] sophia_local::queues::QueueSetupError),
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
    #[error("MongoDB: {0}")]
    Platform(#[from] sophia_platform::mongo::MongoError),
    #[error("credits: {0}")]
    Credits(#[from] sophia_credits::CreditsError),
    #[error("reports: {0}")]
    Reports(#[from] sophia_reports::ReportError),
    #[error("publish: {0}")]
    Publish(#[from] sophia_sqs_producer::PublishError),
    #[error("{0}")]
    Other(String),
}

fn other(e: impl fmt::Display) -> BenchError {
    BenchError::Other(e.to_string())
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total: String,
    pub kernel: String,
    pub load_average_at_start: String,
}

impl Machine {
    pub fn describe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_owned())
                .unwrap_or_else(|| "unknown".into())
        };
        Self {
            nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model: field(&cpuinfo, "model name"),
            mem_total: field(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default(), "MemTotal"),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned(),
            load_average_at_start: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ZipFigure {
    pub function: String,
    /// `None`: not built (run `scripts/build`).
    pub zip_bytes: Option<u64>,
    /// The host release binary (same code, host architecture), for comparison.
    pub release_binary_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    pub function: String,
    pub runs: usize,
    pub ready_ms_median: f64,
    pub ready_ms_min: f64,
    pub ready_ms_max: f64,
    /// What the first invocation carried.
    pub first_event: String,
    pub first_event_ms_median: f64,
    pub first_event_ms_max: f64,
    /// Every first batch was answered without item failures.
    pub first_events_ok: bool,
    /// Records reported as batch item failures, over all runs (on nx-27017: concurrent
    /// transactions, which it cannot run, fail to commit and are retried by SQS).
    pub item_failures: usize,
    pub records: usize,
    /// Peak RSS (VmHWM) after the first batch, median / max over the runs.
    pub peak_rss_kib_median: u64,
    pub peak_rss_kib_max: u64,
}

/// Cold start and first event of one release binary with its secrets as plain variables, or
/// in Secrets Manager behind a stand-in for the Parameters and Secrets extension that answers
/// HTTP 400 "not ready to serve traffic, please wait" until the function asks for its first
/// event (as the real one is reported to do during init).
#[derive(Debug, Clone, Serialize)]
pub struct SecretStart {
    pub function: String,
    /// `plain` or `secrets-manager`.
    pub case: String,
    pub runs: usize,
    pub ready_ms_median: f64,
    pub ready_ms_max: f64,
    pub first_event_ms_median: f64,
    pub first_event_ms_max: f64,
    /// Requests to the extension before the first `/next`, the most over the runs.
    pub extension_reads_during_init: usize,
    pub first_events_ok: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoundTrip {
    pub case: String,
    pub commands: Vec<String>,
    pub count: usize,
    pub minimum: usize,
    pub minimum_reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchLatency {
    pub concurrency: usize,
    pub batches: usize,
    pub ms_median: f64,
    pub ms_min: f64,
    pub ms_max: f64,
    pub all_ok: bool,
    pub item_failures: usize,
    pub records: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub machine: Machine,
    pub lambda_architecture: Option<String>,
    pub zips: Vec<ZipFigure>,
    pub cold_starts: Vec<ColdStart>,
    /// Plain variables vs Secrets Manager behind an extension not ready during init.
    #[serde(default)]
    pub secret_starts: Vec<SecretStart>,
    pub round_trips: Vec<RoundTrip>,
    pub batch_latency: Vec<BatchLatency>,
    /// The cost of one report, before and after the compact prompt and the token budget.
    pub report_costs: Vec<crate::cost::ReportCost>,
    pub notes: Vec<String>,
    pub seconds: f64,
}

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `VmHWM` of a process, KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// Zip sizes from `lambda_dir`, release binary sizes from `release_dir`.
pub fn zip_figures(options: &BenchOptions) -> (Vec<ZipFigure>, Option<String>) {
    let size = |p: PathBuf| std::fs::metadata(p).ok().map(|m| m.len());
    let zips = FUNCTIONS
        .iter()
        .map(|f| ZipFigure {
            function: (*f).to_owned(),
            zip_bytes: size(options.lambda_dir.join(f).join("bootstrap.zip")),
            release_binary_bytes: size(options.release_dir.join(f)),
        })
        .collect();
    let arch = std::fs::read_to_string(options.lambda_dir.join("build-info.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v.get("architecture").and_then(|a| a.as_str()).map(str::to_owned));
    (zips, arch)
}

/// The local servers and what the functions need to reach them.
struct World {
    fauxqs: LocalServer,
    /// The local MongoDB, unless `BenchOptions::mongo_uri` names one.
    nx: Option<LocalServer>,
    sqs: aws_sdk_sqs::Client,
    queues: QueueSet,
    mongo: Mongo,
    settings: MongoSettings,
    openai: OpenAiEndpoint,
    env: Vec<(String, String)>,
    /// `RECORD_CONCURRENCY` of the binaries' first batches.
    record_concurrency: usize,
}

impl World {
    async fn start(options: &BenchOptions) -> Result<Self, BenchError> {
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

    fn store(&self) -> CreditsStore {
        CreditsStore::new(self.mongo.db.clone())
    }

    fn producer(&self) -> SqsProducer {
        SqsProducer::new(
            self.sqs.clone(),
            QueueUrls::default()
                .with(Queue::InterviewCompleted, self.queues.interview_completed.source.url.clone())
                .with(Queue::ReportGenerate, self.queues.report_generate.source.url.clone()),
        )
    }

    /// `n` organizations with one lot each.
    async fn orgs(&self, n: usize) -> Result<Vec<OrganizationId>, BenchError> {
        let store = self.store();
        let mut orgs = Vec::new();
        for i in 0..n {
            let org = seed::create_organization(&store, &format!("Bench organization {i}")).await?;
            seed::grant_lot(&store, org, 10_000, chrono::Utc::now() + chrono::Duration::days(365)).await?;
            orgs.push(org);
        }
        Ok(orgs)
    }

    /// A reserved interview (the library's reservation transaction) with a substantive
    /// transcript, marked completed (or failed).
    async fn interview(
        &self,
        org: OrganizationId,
        reserve: i64,
        completed_seconds: Option<u64>,
    ) -> Result<InterviewId, BenchError> {
        let store = self.store();
        let id =
            seed::reserved_interview(&self.mongo.client, &store, org, reserve, sophia_local::demo::transcript(true))
                .await?;
        match completed_seconds {
            Some(s) => {
                seed::mark_completed(&store, id, Timestamp::now(), DurationSeconds::new(s).unwrap_or_default()).await?
            }
            None => seed::mark_failed(&store, id, Timestamp::now()).await?,
        }
        Ok(id)
    }

    /// The SQS event Lambda would deliver for these bodies: sent to `to`, received back
    /// (with their real attributes), left in flight.
    async fn event_of(
        &self,
        to: Queue,
        bodies: &[(String, sophia_contracts::EventType)],
    ) -> Result<serde_json::Value, BenchError> {
        let queue = &self.queues.pair(to.key()).expect("every declared queue is created").source;
        let producer = self.producer();
        for (body, kind) in bodies {
            producer.send(to, body, *kind, &RequestId::from_caller(Some("bench"))).await?;
        }
        let mut messages = Vec::new();
        let until = Instant::now() + Duration::from_secs(20);
        while messages.len() < bodies.len() && Instant::now() < until {
            let out = self
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages((bodies.len() - messages.len()).min(10) as i32)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .message_attribute_names("All")
                .wait_time_seconds(1)
                .send()
                .await
                .map_err(|e| other(aws_sdk_sqs::Error::from(e)))?;
            messages.extend(out.messages.unwrap_or_default());
        }
        if messages.len() != bodies.len() {
            return Err(other(format!(
                "received {} of {} messages back from {}",
                messages.len(),
                bodies.len(),
                queue.name
            )));
        }
        Ok(sophia_local::esm::sqs_event(&messages, &queue.arn, "us-east-1"))
    }

    async fn completed_batch(&self, orgs: &[OrganizationId]) -> Result<serde_json::Value, BenchError> {
        let mut bodies = Vec::new();
        for (i, org) in orgs.iter().enumerate() {
            let seconds = 300 + 60 * i as u64;
            let id = self.interview(*org, 30, Some(seconds)).await?;
            let m = InterviewCompleted {
                interview_id: id,
                organization_id: *org,
                completed_at: Timestamp::now(),
                duration_seconds: DurationSeconds::new(seconds).unwrap_or_default(),
            };
            bodies.push((serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::InterviewCompleted));
        }
        self.event_of(Queue::InterviewCompleted, &bodies).await
    }

    async fn failed_batch(&self, orgs: &[OrganizationId]) -> Result<serde_json::Value, BenchError> {
        let mut bodies = Vec::new();
        for org in orgs {
            let id = self.interview(*org, 30, None).await?;
            let m = InterviewFailed::new(id, *org, "bench: bot could not join".into(), Timestamp::now());
            bodies.push((serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::InterviewFailed));
        }
        self.event_of(Queue::InterviewCompleted, &bodies).await
    }

    async fn report_batch(&self, org: OrganizationId) -> Result<serde_json::Value, BenchError> {
        let id = self.interview(org, 30, Some(900)).await?;
        let m = ReportGenerate { interview_id: id, organization_id: org };
        self.event_of(
            Queue::ReportGenerate,
            &[(serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::ReportGenerate)],
        )
        .await
    }

    async fn stop(mut self) {
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

fn invoke_context(function: &str, timeout: Duration) -> InvokeContext {
    let deadline = SystemTime::now() + timeout;
    InvokeContext {
        request_id: format!("bench-{}", bson::oid::ObjectId::new()),
        deadline_ms: deadline.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64,
        function_arn: format!("arn:aws:lambda:us-east-1:000000000000:function:sophia-bench-{function}"),
    }
}

fn item_failures(response: &serde_json::Value) -> usize {
    response.get("batchItemFailures").and_then(|f| f.as_array()).map_or(0, Vec::len)
}

/// The smallest and largest of `v` (+inf, -inf when empty).
fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().copied().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// One function's release binary, with its declared memory and timeout.
fn release_function(options: &BenchOptions, function: &str) -> Result<(PathBuf, u32, Duration), String> {
    let binary = options.release_dir.join(function);
    if !binary.is_file() {
        return Err(format!("no release binary {} (cargo build --release -p {function})", binary.display()));
    }
    let (memory, timeout) = Declaration::embedded()
        .function(function)
        .map(|f| (f.memory_mb, Duration::from_secs(u64::from(f.timeout_seconds))))
        .unwrap_or((256, Duration::from_secs(30)));
    Ok((binary, memory, timeout))
}

/// Cold start, first event and peak RSS of one release binary, `runs` fresh processes.
async fn cold_start(world: &World, options: &BenchOptions, function: &str) -> Result<ColdStart, BenchError> {
    let (binary, memory, timeout) = release_function(options, function).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let (mut ready, mut first, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    let (mut failures, mut records) = (0, 0);
    for _ in 0..options.runs.max(1) {
        // The event is prepared before the process starts, so seeding is not timed.
        let event = match function {
            "interview-completed" => world.completed_batch(&orgs).await?,
            "interview-failed" => world.failed_batch(&orgs).await?,
            _ => world.report_batch(orgs[0]).await?,
        };
        let mut api = RuntimeApi::serve().await.map_err(other)?;
        let started = Instant::now();
        api.start_function(&binary, function, memory, &world.env).map_err(other)?;
        api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{function}: {e}")))?;
        ready.push(ms(started.elapsed()));
        let invoked = Instant::now();
        let response = api
            .invoke(event, invoke_context(function, timeout))
            .await
            .map_err(|e| other(format!("{function}: {e}")))?;
        first.push(ms(invoked.elapsed()));
        failures += item_failures(&response);
        records += if function == "report-generate" { 1 } else { orgs.len() };
        if let Some(kib) = api.pid().and_then(peak_rss_kib) {
            rss.push(kib as f64);
        }
        api.stop().await;
    }
    let (rmin, rmax) = min_max(&ready);
    let (_, fmax) = min_max(&first);
    let (_, smax) = min_max(&rss);
    Ok(ColdStart {
        function: function.to_owned(),
        runs: ready.len(),
        ready_ms_median: median(&ready),
        ready_ms_min: rmin,
        ready_ms_max: rmax,
        first_event: if function == "report-generate" {
            "1 report (model path, offline endpoint)".into()
        } else {
            format!("10 settlements, 10 orgs, {} at once", world.record_concurrency)
        },
        first_event_ms_median: median(&first),
        first_event_ms_max: fmax,
        first_events_ok: failures == 0,
        item_failures: failures,
        records,
        peak_rss_kib_median: median(&rss) as u64,
        peak_rss_kib_max: if rss.is_empty() { 0 } else { smax as u64 },
    })
}

pub const SECRET_ARNS: [(&str, &str); 2] = [
    (config::MONGODB_URI, "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-bench/mongodb-uri-AbCdEf"),
    (config::OPENAI_API_KEY, "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-bench/openai-api-key-AbCdEf"),
];

/// The functions whose secrets the bench moves to Secrets Manager.
pub const SECRET_FUNCTIONS: [&str; 2] = ["interview-completed", "report-generate"];

/// [`SecretStart`] of `function`, `runs` fresh processes per case.
async fn secret_starts(world: &World, options: &BenchOptions, function: &str) -> Result<Vec<SecretStart>, BenchError> {
    use sophia_platform::stand_in::ExtensionStandIn;
    let (binary, memory, timeout) = release_function(options, function).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let mut out = Vec::new();
    for case in ["plain", "secrets-manager"] {
        let (mut ready, mut first) = (Vec::new(), Vec::new());
        let (mut reads_during_init, mut failures) = (0, 0);
        for _ in 0..options.runs.max(1) {
            let event = match function {
                "interview-completed" => world.completed_batch(&orgs).await?,
                _ => world.report_batch(orgs[0]).await?,
            };
            let extension = ExtensionStandIn::start(true).await.map_err(other)?;
            let mut env = world.env.clone();
            if case == "secrets-manager" {
                for (var, arn) in SECRET_ARNS {
                    let Some(entry) = env.iter_mut().find(|(k, _)| k.as_str() == var) else { continue };
                    extension.put(arn, &entry.1);
                    // Blank: unset for the binary.
                    entry.1 = String::new();
                    env.push((format!("{var}_SECRET_ARN"), arn.to_owned()));
                }
                env.push(("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT".to_owned(), extension.port().to_string()));
            }
            let mut api = RuntimeApi::serve().await.map_err(other)?;
            let started = Instant::now();
            api.start_function(&binary, function, memory, &env).map_err(other)?;
            api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{function}: {e}")))?;
            ready.push(ms(started.elapsed()));
            reads_during_init = reads_during_init.max(extension.heads().len());
            extension.serve_from_now();
            let invoked = Instant::now();
            let response = api.invoke(event, invoke_context(function, timeout)).await;
            first.push(ms(invoked.elapsed()));
            failures += response.as_ref().map_or(1, item_failures);
            api.stop().await;
        }
        let (_, rmax) = min_max(&ready);
        let (_, fmax) = min_max(&first);
        out.push(SecretStart {
            function: function.to_owned(),
            case: case.to_owned(),
            runs: ready.len(),
            ready_ms_median: median(&ready),
            ready_ms_max: rmax,
            first_event_ms_median: median(&first),
            first_event_ms_max: fmax,
            extension_reads_during_init: reads_during_init,
            first_events_ok: failures == 0,
        });
    }
    Ok(out)
}

/// The secrets table: each function's plain and Secrets Manager rows, with the ratio of their
/// ready times and the first event's extra time.
pub fn secrets_table(rows: &[SecretStart]) -> String {
    let mut out = String::from(
        "\nSecrets: plain variables vs Secrets Manager through an extension answering \"not ready\" until the first /next\n",
    );
    out += &format!(
        "  {:<22} {:<16} {:>5} {:>12} {:>10} {:>12} {:>14} {:>16}\n",
        "function", "case", "runs", "ready p50", "x plain", "first p50", "+first event", "init ext. calls"
    );
    for r in rows {
        let plain = rows.iter().find(|p| p.function == r.function && p.case == "plain");
        let ratio = plain.map_or(f64::NAN, |p| r.ready_ms_median / p.ready_ms_median);
        let extra = plain.map_or(f64::NAN, |p| r.first_event_ms_median - p.first_event_ms_median);
        out += &format!(
            "  {:<22} {:<16} {:>5} {:>9.1} ms {:>9.2}x {:>9.1} ms {:>11.1} ms {:>16}{}\n",
            r.function,
            r.case,
            r.runs,
            r.ready_ms_median,
            ratio,
            r.first_event_ms_median,
            extra,
            r.extension_reads_during_init,
            if r.first_events_ok { "" } else { "  (first events failed)" }
        );
    }
    out
}

/// Only the secrets figures (`sophia-bench --secrets-only`).
pub async fn run_secrets(options: &BenchOptions) -> Result<Vec<SecretStart>, BenchError> {
    let world = World::start(options).await?;
    let mut rows = Vec::new();
    let mut result = Ok(());
    for f in SECRET_FUNCTIONS {
        eprintln!("secrets: {f} ({} runs per case)", options.runs);
        match secret_starts(&world, options, f).await {
            Ok(r) => rows.extend(r),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    world.stop().await;
    result.map(|()| rows)
}

/// A client whose every command name is recorded.
async fn monitored_client(uri: &str) -> Result<(mongodb::Client, Arc<Mutex<Vec<String>>>), BenchError> {
    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = commands.clone();
    let mut options = mongodb::options::ClientOptions::parse(uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Started(s) = e {
            seen.lock().expect("not poisoned").push(s.command_name);
        }
    }));
    Ok((mongodb::Client::with_options(options)?, commands))
}

fn take(commands: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    std::mem::take(&mut *commands.lock().expect("not poisoned"))
}

/// Round trips of the library calls, with the minimum the data model allows.
async fn round_trips(world: &World) -> Result<Vec<RoundTrip>, BenchError> {
    let (client, commands) = monitored_client(&world.settings.uri).await?;
    let db = client.database(&world.settings.database);
    // One warm-up command so that connection set-up is not counted.
    db.run_command(bson::doc! {"ping": 1}).await?;
    take(&commands);
    let service = SettlementService::new(client.clone(), db.clone());
    let store = world.store();
    let ctx = || SettleContext::now_with_deadline(None);

    let org = world.orgs(1).await?[0];
    // A second organization whose reservations span two lots: 5 credits on a lot that expires
    // first, the rest on a later one.
    let org2 = seed::create_organization(&store, "Bench two-lot organization").await?;
    seed::grant_lot(&store, org2, 5, chrono::Utc::now() + chrono::Duration::days(10)).await?;
    seed::grant_lot(&store, org2, 1000, chrono::Utc::now() + chrono::Duration::days(365)).await?;

    let mut out = Vec::new();
    let mut record = |case: &str, commands: Vec<String>, minimum: usize, reason: &str| {
        out.push(RoundTrip {
            case: case.to_owned(),
            count: commands.len(),
            commands,
            minimum,
            minimum_reason: reason.to_owned(),
        });
    };

    let a = world.interview(org, 30, Some(600)).await?;
    take(&commands);
    service
        .settle_completed_interview(a, org, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    record("settle completed, 1 lot", take(&commands), 8, MIN_SETTLE);

    let b = world.interview(org2, 20, Some(600)).await?;
    take(&commands);
    service
        .settle_completed_interview(b, org2, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    record("settle completed, 2 lots", take(&commands), 8, MIN_SETTLE);

    let c = world.interview(org, 30, None).await?;
    take(&commands);
    service.settle_failed_interview(c, org, Timestamp::now(), ctx()).await?;
    record("settle failed, 1 lot", take(&commands), 7, "as completed, without the outbox insert");

    service
        .settle_completed_interview(a, org, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    record(
        "duplicate (already settled)",
        take(&commands),
        1,
        "one read (or one findAndModify claim that matches nothing) must decide it",
    );

    let d = world.interview(org, 30, Some(600)).await?;
    take(&commands);
    let message = InterviewCompleted {
        interview_id: d,
        organization_id: org,
        completed_at: Timestamp::now(),
        duration_seconds: DurationSeconds::new(600).unwrap_or_default(),
    };
    service.settle_completed_and_publish(&message, &SqsReportPublisher(world.producer()), ctx()).await?;
    record(
        "whole record: settle + publish report.generate + mark outbox published",
        take(&commands),
        9,
        "the settlement's 8 + marking the outbox entry published after the SQS send",
    );

    let reports = ReportService::new(db.clone(), ReportModel::new(&world.openai.settings()));
    let e = world.interview(org, 30, Some(900)).await?;
    take(&commands);
    reports.generate_report(e, org).await?;
    record("report, model path (first delivery)", take(&commands), 3, MIN_REPORT);

    let f = world.interview(org, 30, Some(40)).await?;
    take(&commands);
    reports.generate_report(f, org).await?;
    record("report, insufficient evidence (no model call)", take(&commands), 3, MIN_REPORT);

    // A retry: the report of `f` put back to FAILED, as a failed model call leaves it.
    db.collection::<bson::Document>(sophia_reports::store::INTERVIEW_REPORTS)
        .update_one(bson::doc! {"interviewId": f.oid()}, bson::doc! {"$set": {"status": "FAILED"}})
        .await?;
    take(&commands);
    reports.generate_report(f, org).await?;
    record(
        "report, retry of a FAILED report",
        take(&commands),
        4,
        "the first delivery's 3 + the insert the unique index refuses (the price of not reading the report first, \
         which would cost every first delivery a 4th trip)",
    );

    reports.generate_report(e, org).await?;
    record(
        "report, duplicate (already COMPLETED)",
        take(&commands),
        4,
        "the interview, the refused insert, the claim that matches nothing, one read to say why; 1 (a read of the report \
         first) only at a 4th trip on every first delivery, and duplicates are the rare case",
    );
    Ok(out)
}

const MIN_SETTLE: &str = "this data model on MongoDB 7, with the read outside the transaction (a duplicate costs that one read and no transaction): \
     the read, the claim {settledAt: null, credits.reserved: R}, one find of the allocated lots (expiry and remaining decide consume/release/forfeit \
     and status), ONE update command carrying a guarded statement per lot, the organization $inc, the ledger insert_many, the outbox insert, \
     commitTransaction = 8 whatever the number of lots. 7 by folding the read into a findAndModify claim (consumed by a pipeline $min), at a \
     transaction per duplicate; fewer needs a model change or MongoDB 8 bulkWrite across collections";

const MIN_REPORT: &str = "find the interview (org-scoped, not deleted), the insert of the report already claimed (PROCESSING, attemptCount 1, \
     the lease; the unique index on interviewId makes it an insert-if-absent), the guarded update writing the result = 3, reached. \
     A findAndModify upsert claim would also be 3 but needs $setOnInsert and a unique index enforced on upserts, neither of which \
     nx-27017 has, so it could not be tested here";

/// Batches of 10 settlements of 10 organizations through one warm release `interview-completed`
/// behind the local Runtime API, with `RECORD_CONCURRENCY` = `concurrency`: a first batch warms
/// its connection pool (as a warm Lambda's is), then `repeats` timed batches.
async fn batch_latency(
    world: &World,
    options: &BenchOptions,
    concurrency: usize,
    repeats: usize,
) -> Result<BatchLatency, BenchError> {
    let function = "interview-completed";
    let (binary, memory, timeout) = release_function(options, function).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let mut env = world.env.clone();
    env.retain(|(k, _)| k != config::RECORD_CONCURRENCY);
    env.push((config::RECORD_CONCURRENCY.to_owned(), concurrency.to_string()));
    let mut api = RuntimeApi::serve().await.map_err(other)?;
    api.start_function(&binary, function, memory, &env).map_err(other)?;
    api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{function}: {e}")))?;
    let warm_up = world.completed_batch(&orgs).await?;
    api.invoke(warm_up, invoke_context(function, timeout)).await.map_err(|e| other(format!("{function}: {e}")))?;
    let mut times = Vec::new();
    let (mut failures, mut records) = (0, 0);
    for _ in 0..repeats.max(1) {
        let event = world.completed_batch(&orgs).await?;
        let started = Instant::now();
        let response = api
            .invoke(event, invoke_context(function, timeout))
            .await
            .map_err(|e| other(format!("{function}: {e}")))?;
        times.push(ms(started.elapsed()));
        failures += item_failures(&response);
        records += orgs.len();
    }
    api.stop().await;
    let (lo, hi) = min_max(&times);
    Ok(BatchLatency {
        concurrency,
        batches: times.len(),
        ms_median: median(&times),
        ms_min: lo,
        ms_max: hi,
        all_ok: failures == 0,
        item_failures: failures,
        records,
    })
}

/// Runs every benchmark.
pub async fn run(options: &BenchOptions) -> Result<BenchReport, BenchError> {
    let started = Instant::now();
    let machine = Machine::describe();
    let (zips, lambda_architecture) = zip_figures(options);
    let mut notes = Vec::new();
    if zips.iter().any(|z| z.zip_bytes.is_none()) {
        notes.push(format!("some zips are missing under {}: run scripts/build", options.lambda_dir.display()));
    }
    notes.push(match &options.mongo_uri {
        Some(_) => "MongoDB: the server of --mongo-uri (round trips and batch latency ran there)".to_owned(),
        None => {
            "MongoDB: a local nx-27017 (cannot commit concurrent transactions: see the concurrency-10 batch)".to_owned()
        }
    });
    let report_costs = crate::cost::report_costs().unwrap_or_else(|e| {
        notes.push(format!("cost of a report not computed: {e}"));
        Vec::new()
    });
    let world = World::start(options).await?;
    let result = async {
        let mut cold = Vec::new();
        for f in FUNCTIONS {
            eprintln!("cold start: {f} ({} runs)", options.runs);
            match cold_start(&world, options, f).await {
                Ok(c) => cold.push(c),
                Err(e) => notes.push(format!("cold start of {f} not measured: {e}")),
            }
        }
        let mut secrets = Vec::new();
        for f in SECRET_FUNCTIONS {
            eprintln!("secrets: {f} ({} runs per case)", options.runs);
            match secret_starts(&world, options, f).await {
                Ok(rows) => secrets.extend(rows),
                Err(e) => notes.push(format!("secrets figures of {f} not measured: {e}")),
            }
        }
        eprintln!("round trips");
        let trips = round_trips(&world).await?;
        eprintln!("batch latency");
        let mut batches = Vec::new();
        for c in [10, 1] {
            match batch_latency(&world, options, c, options.batch_repeats).await {
                Ok(b) => batches.push(b),
                Err(e) => notes.push(format!("batch latency with RECORD_CONCURRENCY={c} not measured: {e}")),
            }
        }
        Ok::<_, BenchError>((cold, secrets, trips, batches))
    }
    .await;
    world.stop().await;
    let (cold_starts, secret_starts, round_trips, batch_latency) = result?;
    Ok(BenchReport {
        machine,
        lambda_architecture,
        zips,
        cold_starts,
        secret_starts,
        round_trips,
        batch_latency,
        report_costs,
        notes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The zip table (also printed alone by `sophia-bench --zips-only`).
pub fn zip_table(zips: &[ZipFigure], architecture: Option<&str>) -> String {
    let mut out = format!("\nZip size ({} build)\n", architecture.unwrap_or("no"));
    out +=
        &format!("  {:<22} {:>10} {:>8} {:>8} {:>20}\n", "function", "zip", "< 4 MB", "<= 3 MB", "host release binary");
    let mark = |bytes: Option<u64>, ok: fn(u64) -> bool| match bytes {
        Some(b) if ok(b) => "✔",
        Some(_) => "✘",
        None => "-",
    };
    for z in zips {
        out += &format!(
            "  {:<22} {:>10} {:>8} {:>8} {:>20}\n",
            z.function,
            mb(z.zip_bytes),
            mark(z.zip_bytes, |b| b < ZIP_GOAL_BYTES),
            mark(z.zip_bytes, |b| b <= ZIP_TARGET_BYTES),
            mb(z.release_binary_bytes)
        );
    }
    out
}

fn mb(bytes: Option<u64>) -> String {
    bytes.map_or("-".to_owned(), |b| format!("{:.2} MB", b as f64 / 1e6))
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.machine;
        writeln!(
            f,
            "\nSophia benchmarks — {} × {} ({}), {}, kernel {}, load average at start {}",
            m.nproc,
            m.cpu_model,
            m.mem_total,
            std::env::consts::ARCH,
            m.kernel,
            m.load_average_at_start
        )?;
        write!(f, "{}", zip_table(&self.zips, self.lambda_architecture.as_deref()))?;
        writeln!(
            f,
            "\nCold start (process start -> first /next poll; init includes MongoDB hello) and first event, release binaries behind a local Runtime API"
        )?;
        writeln!(
            f,
            "  {:<22} {:>5} {:>12} {:>16} {:>36} {:>14} {:>14}",
            "function", "runs", "ready p50", "ready min-max", "first event", "first p50", "VmHWM p50/max"
        )?;
        for c in &self.cold_starts {
            writeln!(
                f,
                "  {:<22} {:>5} {:>9.1} ms {:>9.1}-{:.1} ms {:>36} {:>11.1} ms {:>6.1}/{:.1} MB{}",
                c.function,
                c.runs,
                c.ready_ms_median,
                c.ready_ms_min,
                c.ready_ms_max,
                c.first_event,
                c.first_event_ms_median,
                c.peak_rss_kib_median as f64 / 1024.0,
                c.peak_rss_kib_max as f64 / 1024.0,
                if c.first_events_ok {
                    String::new()
                } else {
                    format!("  ({} of {} records failed)", c.item_failures, c.records)
                }
            )?;
        }
        write!(f, "{}", secrets_table(&self.secret_starts))?;
        writeln!(f, "\nMongoDB round trips (driver command monitoring)")?;
        writeln!(f, "  {:<72} {:>6} {:>8}  commands", "case", "count", "minimum")?;
        for r in &self.round_trips {
            writeln!(f, "  {:<72} {:>6} {:>8}  {}", r.case, r.count, r.minimum, r.commands.join(" "))?;
        }
        writeln!(f, "  minimum, settlement: {MIN_SETTLE}")?;
        writeln!(f, "  minimum, report: {MIN_REPORT}")?;
        writeln!(
            f,
            "\nBatch of 10 settlements, 10 organizations, warm release interview-completed behind the local Runtime API"
        )?;
        for b in &self.batch_latency {
            writeln!(
                f,
                "  concurrency {:>2}: median {:>7.1} ms (min {:.1}, max {:.1}, {} batches){}",
                b.concurrency,
                b.ms_median,
                b.ms_min,
                b.ms_max,
                b.batches,
                if b.all_ok {
                    String::new()
                } else {
                    format!("  ({} of {} records failed)", b.item_failures, b.records)
                }
            )?;
        }
        write!(f, "{}", crate::cost::table(&self.report_costs))?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        write!(f, "\nbenchmarks took {:.0} s", self.seconds)
    }
}

/// `<repo>/target` unless `CARGO_TARGET_DIR` says otherwise.
pub fn target_dir() -> PathBuf {
    match sophia_platform::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let p = PathBuf::from(d);
            if p.is_absolute() { p } else { sophia_local::servers::repo_root().join(p) }
        }
        None => sophia_local::servers::repo_root().join("target"),
    }
}

/// The run recorded at `path` (the previous one), copied to `<stem>.previous.json` before this
/// run replaces it; `None` when there is none or it is not JSON.
pub fn keep_previous(path: &Path) -> Option<serde_json::Value> {
    let value = read_run(path)?;
    let _ = std::fs::copy(path, previous_path(path));
    Some(value)
}

/// A run recorded as JSON at `path`; `None` when there is none or it is not JSON.
pub fn read_run(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Where [`keep_previous`] keeps the previous run: `<stem>.previous.json` beside `path`.
pub fn previous_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    path.with_file_name(format!("{stem}.previous.json"))
}

/// Writes the report as JSON (creating the directory).
pub fn write_json(report: &BenchReport, path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(report).map_err(std::io::Error::other)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_run_is_kept_beside_the_json_before_it_is_replaced() {
        let dir = std::env::temp_dir().join(format!("sophia-bench-previous-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let json = dir.join("bench.json");
        assert_eq!(previous_path(&json), dir.join("bench.previous.json"));
        assert_eq!(keep_previous(&json), None, "no run recorded yet");
        std::fs::write(&json, r#"{"lambda_architecture": "x86_64"}"#).expect("write");
        let kept = keep_previous(&json).expect("the recorded run");
        assert_eq!(kept["lambda_architecture"], "x86_64");
        assert_eq!(
            std::fs::read_to_string(previous_path(&json)).expect("copied"),
            r#"{"lambda_architecture": "x86_64"}"#
        );
        std::fs::write(&json, "not JSON").expect("write");
        assert_eq!(keep_previous(&json), None, "a broken file is no previous run");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
