//! Helpers of the fault and bad-input suite (`tests/it/faults_*.rs`, `tests/it/bad_input.rs`):
//!
//! - [`DiskMongo`]: an nx-27017 of a test's own whose databases live in SQLite files, so that it
//!   can be killed (SIGKILL, by PID) and restarted on the same port with its committed data; a
//!   transaction open at the kill is rolled back by SQLite when the files are opened again;
//! - [`World`]: a database with the credits migration, its store, seed shortcuts and the
//!   invariant check every fault case ends with;
//! - SQS event bodies and records, queue depth, draining, and a database snapshot (to prove that
//!   nothing was written).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::types::QueueAttributeName;
use bson::{Document, doc};
use futures::TryStreamExt;
use interview_completed::SqsReportPublisher;
use lambda_runtime::{Context, LambdaEvent};
use report_generate::ReportGenerateHandler;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::{CreditsStore, invariants, migrations, seed};
use sophia_declarations::Declaration;
use sophia_local::esm::{EventSourceMapping, InvocationSummary};
use sophia_local::invoke::{BoxError, Instances, Invoke};
use sophia_local::queues::{QueueRef, QueueSet};
use sophia_local::servers::{ensure_tools_installed, state_dir};
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_reports::{OpenAiSettings, ReportModel, ReportService};
use sophia_sqs_consumer::ConsumerOptions;
use sophia_sqs_producer::{QueueUrls, SqsProducer};
use std::sync::Arc;

/// nx-27017 with its data in files under `.local/faults/<name>`: survives a kill and a restart.
#[derive(Debug)]
pub struct DiskMongo {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    _stdin: Option<ChildStdin>,
}

impl DiskMongo {
    /// Starts it on 127.0.0.1:`port` with a fresh data directory.
    pub fn start(port: u16) -> Self {
        ensure_tools_installed().expect("nx-27017 is installed (scripts/setup-tools)");
        let dir = state_dir().join("faults").join(crate::unique("nx"));
        std::fs::create_dir_all(&dir).expect("data directory");
        let mut server = Self { port, dir, child: None, _stdin: None };
        server.restart();
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the process again on the same port and data directory (after [`kill`](Self::kill)).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.join("server.log")).expect("log file");
        let mut child = Command::new(state_dir().join("venv/bin/python"))
            .arg(sophia_local::servers::repo_root().join("scripts/tools/nx_launcher.py"))
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .arg("--pid-file")
            .arg(self.dir.join("nx.pid"))
            .args(["--host", "127.0.0.1", "-p", &self.port.to_string()])
            .env("SOPHIA_EXIT_ON_STDIN_EOF", "1")
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("nx-27017 starts");
        self._stdin = child.stdin.take();
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(30);
        while !self.accepts() {
            assert!(Instant::now() < until, "nx-27017 did not listen on {}; see {}", self.port, self.dir.display());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL by PID (no shutdown, no flush: a crash), and waits until the port refuses.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self._stdin = None;
        while self.accepts() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn accepts(&self) -> bool {
        TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], self.port)), Duration::from_millis(200)).is_ok()
    }

    /// A handle on database `database` with a short server-selection timeout (an unreachable
    /// server fails fast).
    pub async fn mongo(&self, database: &str) -> Mongo {
        mongo_at(&self.uri(), database).await
    }

    pub fn settings(&self, database: &str) -> MongoSettings {
        mongo_settings(&self.uri(), database)
    }
}

impl Drop for DiskMongo {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A client of `uri`, database `database`, server selection given up after 1 s.
pub async fn mongo_at(uri: &str, database: &str) -> Mongo {
    Mongo::connect(&mongo_settings(uri, database)).await.expect("MongoDB client builds")
}

/// A fresh database name.
pub fn database_name() -> String {
    crate::unique("f").replace('-', "_")
}

/// A database with the migrations applied (credits and reports) and shortcuts over it.
pub struct World {
    pub mongo: Mongo,
    pub store: CreditsStore,
}

impl World {
    pub async fn new(mongo: Mongo) -> Self {
        // What `sophia-ops migrate` does before the functions run: every collection's indexes.
        migrations::apply(&mongo.db).await.expect("credits migration applies");
        sophia_reports::migrations::apply(&mongo.db).await.expect("reports migration applies");
        let store = CreditsStore::new(mongo.db.clone());
        Self { mongo, store }
    }

    /// On the harness's MongoDB, in a database of its own.
    pub async fn fresh() -> Self {
        Self::new(crate::test_mongo().await).await
    }

    /// Settings for another client of this database (e.g. a function instance's).
    pub fn settings(&self) -> MongoSettings {
        mongo_settings(&crate::mongo_uri(), self.mongo.db.name())
    }

    /// An organization with one lot of `granted` credits expiring in 30 days.
    pub async fn org_with_credits(&self, granted: i64) -> OrganizationId {
        org_with_credits(&self.store, "Faults Inc", granted).await
    }

    /// An interview with `amount` credits reserved and enough evidence for a model report.
    pub async fn reserved_interview(&self, org: OrganizationId, amount: i64) -> InterviewId {
        seed::reserved_interview(&self.mongo.client, &self.store, org, amount, report_evidence())
            .await
            .expect("reserved interview")
    }

    /// Every document of `collection`.
    pub async fn all(&self, collection: &str) -> Vec<Document> {
        self.mongo
            .db
            .collection::<Document>(collection)
            .find(doc! {})
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("read")
    }

    /// Documents of `collection` matching `filter` (a `find`: nx-27017's count_documents does
    /// not match ObjectId fields, see tests/it/mongo_wire_gaps.rs).
    pub async fn find(&self, collection: &str, filter: Document) -> Vec<Document> {
        self.mongo
            .db
            .collection::<Document>(collection)
            .find(filter)
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("read")
    }

    /// `(available, reserved)` of the organization.
    pub async fn org_credits(&self, org: OrganizationId) -> (i64, i64) {
        org_credits(&self.store, org).await
    }

    /// The ledger entries of one interview, as `(type, amount)` sorted.
    pub async fn ledger_of(&self, interview: InterviewId) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = self
            .find("creditLedger", doc! {"reference.id": interview.oid()})
            .await
            .iter()
            .map(|d| (d.get_str("type").unwrap_or("?").to_owned(), int(d, "amount").unwrap_or(i64::MIN)))
            .collect();
        v.sort();
        v
    }

    /// The interview's `report.generate` outbox entry.
    pub async fn outbox(&self, interview: InterviewId) -> Option<sophia_credits::model::OutboxEntry> {
        outbox(&self.store, interview).await
    }

    /// Whether the interview's `settledAt` is set.
    pub async fn settled(&self, interview: InterviewId) -> bool {
        self.store.interview(interview.oid()).await.expect("read").expect("interview").settled_at.is_some()
    }

    /// The five invariants of docs/design.md over the whole database.
    pub async fn assert_invariants(&self) {
        assert_invariants(&self.store).await;
    }

    /// Every collection's documents, by name (for "nothing was written").
    pub async fn snapshot(&self) -> BTreeMap<String, Vec<Document>> {
        let mut out = BTreeMap::new();
        for name in self.mongo.db.list_collection_names().await.expect("list collections") {
            let mut docs = self.all(&name).await;
            docs.sort_by_key(|d| d.get("_id").map(|v| v.to_string()).unwrap_or_default());
            out.insert(name, docs);
        }
        out
    }
}

/// An organization named `name` with one lot of `granted` credits expiring in 30 days.
pub async fn org_with_credits(store: &CreditsStore, name: &str, granted: i64) -> OrganizationId {
    let org = seed::create_organization(store, name).await.expect("organization");
    seed::grant_lot(store, org, granted, chrono::Utc::now() + chrono::Duration::days(30)).await.expect("lot");
    org
}

/// `(available, reserved)` of the organization.
pub async fn org_credits(store: &CreditsStore, org: OrganizationId) -> (i64, i64) {
    let o = store.organizations().find_one(doc! {"_id": org.oid()}).await.expect("find").expect("organization");
    (o.credits.available, o.credits.reserved)
}

/// The interview's `report.generate` outbox entry.
pub async fn outbox(store: &CreditsStore, interview: InterviewId) -> Option<sophia_credits::model::OutboxEntry> {
    let id = sophia_credits::model::OutboxEntry::report_generate_id(interview.oid());
    store.outbox().find_one(doc! {"_id": id}).await.expect("read outbox")
}

/// The five invariants of docs/design.md over the whole database: every scenario ends here.
pub async fn assert_invariants(store: &CreditsStore) {
    let violations = invariants::check_all(store).await.expect("invariants can be read");
    assert!(
        violations.is_empty(),
        "invariants broken:\n{}",
        violations.iter().map(|v| format!("  - {v}")).collect::<Vec<_>>().join("\n")
    );
}

/// An integer field (dotted path) whatever its stored width (nx-27017 returns small Int64 as Int32).
pub fn int(d: &Document, path: &str) -> Option<i64> {
    sophia_documents::int::at(d, path)?.ok()
}

/// What report generation reads from an interview (snapshot, transcript, credibility, duration),
/// taken from the reports crate's fixture; merged into a seeded interview.
pub fn report_evidence() -> Document {
    let fixture = sophia_reports::fixtures::InterviewFixture::new(OrganizationId::new(bson::oid::ObjectId::new()));
    let all = fixture.document();
    let mut d = Document::new();
    for key in ["snapshot", "proctoring", "credibility", "durationSeconds"] {
        if let Some(v) = all.get(key) {
            d.insert(key, v.clone());
        }
    }
    d
}

pub const COMPLETED_AT: &str = "2026-12-02T17:30:00.000Z";

pub fn completed_body(interview: InterviewId, org: OrganizationId, seconds: u64) -> String {
    format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"{COMPLETED_AT}","durationSeconds":{seconds}}}"#
    )
}

pub fn failed_body(interview: InterviewId, org: OrganizationId, reason: &str) -> String {
    serde_json::json!({
        "type": "interview.failed",
        "interviewId": interview.to_string(),
        "organizationId": org.to_string(),
        "failureReason": reason,
        "failedAt": COMPLETED_AT,
    })
    .to_string()
}

/// A Lambda SQS event of `(messageId, body)` records, as Lambda delivers it.
pub fn sqs_event(records: &[(String, String)]) -> LambdaEvent<SqsEvent> {
    let records: Vec<serde_json::Value> = records
        .iter()
        .map(|(id, body)| {
            serde_json::json!({
                "messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {}, "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:faults", "awsRegion": "us-east-1",
            })
        })
        .collect();
    LambdaEvent::new(
        serde_json::from_value(serde_json::json!({"Records": records})).expect("SQS event"),
        Context::default(),
    )
}

pub async fn send(client: &aws_sdk_sqs::Client, url: &str, body: &str) {
    client.send_message().queue_url(url).message_body(body).send().await.expect("SendMessage");
}

/// All four queues of the set hold nothing, visible or in flight.
pub async fn assert_queues_empty(client: &aws_sdk_sqs::Client, queues: &QueueSet) {
    for pair in queues.pairs() {
        for queue in [&pair.source, &pair.dlq] {
            assert_eq!(depth(client, &queue.url).await, (0, 0), "{} is empty", queue.name);
        }
    }
}

/// `(visible, in flight)` messages of a queue.
pub async fn depth(client: &aws_sdk_sqs::Client, url: &str) -> (i64, i64) {
    let out = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("GetQueueAttributes");
    let attrs = out.attributes.unwrap_or_default();
    let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse().ok()).unwrap_or(-1);
    (n(QueueAttributeName::ApproximateNumberOfMessages), n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

pub use crate::drain;

/// Settings for a client of `uri`, database `database` (server selection given up after 1 s).
pub fn mongo_settings(uri: &str, database: &str) -> MongoSettings {
    MongoSettings {
        uri: uri.to_owned(),
        database: database.to_owned(),
        server_selection_timeout: Duration::from_secs(1),
        allow_standalone: true,
    }
}

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

/// The stored report documents of one interview (a `find`, see [`World::find`]).
pub async fn reports_of(db: &mongodb::Database, interview: InterviewId) -> Vec<Document> {
    db.collection::<Document>("interviewReports")
        .find(doc! {"interviewId": interview.oid()})
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("read")
}

/// JSON log lines of this test process (as the Lambda binaries log them: one object per event,
/// flattened, with the current span's fields under `span`). One global subscriber, installed on
/// first use: tracing caches each callsite's interest process-wide, so a thread-local capture
/// next to concurrently running tests can miss events. Tests select their own lines (e.g. by
/// `span.messageId`).
#[derive(Clone, Default)]
pub struct LogCapture(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogCapture {
    /// The process-wide capture.
    pub fn global() -> &'static LogCapture {
        static CAPTURE: std::sync::OnceLock<LogCapture> = std::sync::OnceLock::new();
        CAPTURE.get_or_init(|| {
            let capture = LogCapture::default();
            tracing_subscriber::fmt()
                .json()
                .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
                .with_current_span(true)
                .flatten_event(true)
                .with_writer(capture.clone())
                .try_init()
                .expect("no other global subscriber in the test process");
            capture
        })
    }

    /// Every line so far, parsed (a line that is not JSON fails the test).
    pub fn lines(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8(self.0.lock().expect("log lock").clone()).expect("UTF-8 logs");
        text.lines().map(|l| serde_json::from_str(l).expect("every log line is JSON")).collect()
    }

    /// Everything so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("log lock").clone()).expect("UTF-8 logs")
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
