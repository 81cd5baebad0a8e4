//! The load test (`scripts/load-test`, binary `sophia-load`): thousands of interview events
//! through the whole local pipeline, then a full audit of the outcome.
//!
//! 1. the runner's pipeline ([`Runner`]: fauxqs, nx-27017, the offline OpenAI endpoint, one
//!    event-source-mapping emulator per function with in-process instances): report generation with
//!    several pollers, settlement one transaction at a time (nx-27017's limit, see
//!    [`runner_options`]);
//! 2. `orgs` organizations, two credit lots each, and one reserved interview per valid event, written
//!    in bulk (`insert_many`) in the exact shape the library's reservation writes (organization
//!    balances, lot `reserved`, `RESERVE` ledger entries, interview `credits.allocations`), so the
//!    five invariants hold before anything is published; every fifth reservation spans both lots;
//! 3. the mix, shuffled, published through the real producer with bounded concurrency: 5 %
//!    duplicates (an interview published twice), 2 % malformed bodies (six kinds), 1 % failed
//!    interviews, the rest completed with varied durations (some under a minute: insufficient
//!    evidence, no model call);
//! 4. waits (progress bar on stderr, overall timeout) until every valid interview is settled and
//!    every completed one has a terminal report;
//! 5. audits: settled exactly once (per interview `SETTLE` entries ≤ its lots, no duplicate ledger
//!    key, `credits.consumed` = `SETTLE` sum = the expected bill, `RESERVE` = `SETTLE` + `RELEASE` +
//!    `FORFEIT`), exactly one report per completed interview and none for failed ones, both DLQs
//!    empty, no pending outbox entry, no interview written by a malformed body,
//!    `invariants::check_all` empty; and measures throughput and per-message latency.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use bson::oid::ObjectId;
use bson::{DateTime, Document, doc};
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use sophia_contracts::{DurationSeconds, EventType, InterviewId, OrganizationId, RequestId, Timestamp};
use sophia_credits::arithmetic::{Allocation, LotStatus};
use sophia_credits::model::{
    CreditLot, LedgerEntry, LedgerType, OrgCredits, Organization, OutboxEntry, OutboxStatus, Reference, ReferenceKind,
};
use sophia_credits::{CreditsStore, invariants};
use sophia_platform::config;
use sophia_sqs_producer::{CompletedInput, FailedInput, Queue, QueueUrls, SqsProducer};

use sophia_local::demo::transcript;
use sophia_local::runner::{Runner, RunnerOptions};

#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Messages published in total (valid + duplicates + malformed).
    pub events: usize,
    pub orgs: usize,
    /// Pollers (function instances) of the report-generate mapping.
    pub pollers: usize,
    /// Pollers of the interview-completed mapping, and the consumer's concurrency in each: keep
    /// both at 1 on nx-27017 (one transaction at a time; see [`runner_options`]).
    pub settle_pollers: usize,
    pub settle_concurrency: usize,
    /// Concurrent `publish_*` calls.
    pub publish_concurrency: usize,
    /// Overall bound on the wait for the pipeline.
    pub timeout: Duration,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    pub seed: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            events: 10_000,
            orgs: 50,
            pollers: 4,
            settle_pollers: 1,
            settle_concurrency: 1,
            publish_concurrency: 32,
            timeout: Duration::from_secs(12 * 3600),
            progress: true,
            seed: 0x5eed,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("credits: {0}")]
    Credits(#[from] sophia_credits::CreditsError),
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
    #[error("publish: {0}")]
    Publish(#[from] sophia_sqs_producer::PublishError),
    #[error("bson: {0}")]
    Bson(#[from] bson::ser::Error),
    #[error("{0}")]
    Setup(String),
}

/// How many messages of each kind a run of `events` publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mix {
    pub events: usize,
    pub completed: usize,
    pub failed: usize,
    pub duplicates: usize,
    pub malformed: usize,
}

impl Mix {
    /// 5 % duplicates, 2 % malformed, 1 % failed, the rest completed (each at least one when
    /// `events` allows).
    pub fn of(events: usize) -> Self {
        let pct = |p: usize| (events * p / 100).max(usize::from(events >= 100));
        let (duplicates, malformed, failed) = (pct(5), pct(2), pct(1));
        let completed = events.saturating_sub(duplicates + malformed + failed).max(1);
        Self { events, completed, failed, duplicates, malformed }
    }
    /// Distinct valid interviews.
    pub fn interviews(&self) -> usize {
        self.completed + self.failed
    }
}

/// A small deterministic generator (xorshift64*), so a run is reproducible without a crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// One seeded interview and what its settlement must produce.
#[derive(Debug, Clone)]
struct Planned {
    id: ObjectId,
    org: ObjectId,
    reserved: i64,
    lots: usize,
    /// `None`: failed.
    duration: Option<u64>,
}

impl Planned {
    fn expected_consumed(&self) -> i64 {
        self.duration.map_or(0, |d| ((d / 60) as i64).min(self.reserved))
    }
}

#[derive(Debug, Clone)]
enum Message {
    Valid(usize),
    Malformed(String),
}

/// Percentiles of a set of millisecond figures.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1];
        Self { count: values.len(), p50_ms: at(0.50), p99_ms: at(0.99), max_ms: values[values.len() - 1] }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub mix: Mix,
    pub orgs: usize,
    pub pollers: usize,
    pub settle_pollers: usize,
    pub settle_concurrency: usize,
    pub seed_seconds: f64,
    pub publish_seconds: f64,
    /// First publish to the last `settledAt`.
    pub settle_seconds: f64,
    /// First publish to the last terminal report.
    pub report_seconds: f64,
    /// Distinct valid interviews settled per second, first publish to last settlement.
    pub settled_per_second: f64,
    /// All messages published (incl. duplicates and malformed) per second over the same span.
    pub messages_per_second: f64,
    pub settle_latency: Latency,
    pub report_latency: Latency,
    pub settled: usize,
    pub reports_completed: usize,
    pub reports_failed: usize,
    pub insufficient_evidence_reports: usize,
    pub ledger_entries: usize,
    pub esm: Vec<(String, [u64; 5])>,
    /// Per function: records delivered by `ApproximateReceiveCount` (1 = first delivery).
    pub receive_counts: Vec<(String, BTreeMap<u32, u64>)>,
    /// Settlements and reports over the run, in windows of equal width.
    pub timeline: Vec<Window>,
    pub violations: Vec<String>,
    pub timed_out: bool,
}

/// One window of the run: what finished in it, and the latency of what finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Window {
    /// Seconds from the first publish.
    pub start_s: f64,
    pub end_s: f64,
    /// Interviews settled in the window (by `settledAt`) and their publish -> settledAt latency.
    pub settled: usize,
    pub settle_p50_ms: f64,
    pub settle_p99_ms: f64,
    /// Reports finished in the window and their publish -> report latency.
    pub reports: usize,
    pub report_p50_ms: f64,
    pub report_p99_ms: f64,
}

impl Window {
    pub fn seconds(&self) -> f64 {
        self.end_s - self.start_s
    }
}

/// The run cut into at most `max_windows` windows of whole seconds (at least one second each).
/// Samples are `(seconds from the first publish when it finished, latency ms)`.
pub fn timeline(settled: &[(f64, f64)], reports: &[(f64, f64)], max_windows: usize) -> Vec<Window> {
    let end = settled.iter().chain(reports).map(|s| s.0).fold(0.0_f64, f64::max);
    if settled.is_empty() && reports.is_empty() {
        return Vec::new();
    }
    let width = (end / max_windows.max(1) as f64).ceil().max(1.0);
    let count = ((end / width).floor() as usize + 1).min(max_windows.max(1));
    let bucket = |samples: &[(f64, f64)]| {
        let mut out = vec![Vec::new(); count];
        for &(at, ms) in samples {
            out[((at.max(0.0) / width).floor() as usize).min(count - 1)].push(ms);
        }
        out
    };
    bucket(settled)
        .into_iter()
        .zip(bucket(reports))
        .enumerate()
        .map(|(i, (settle, report))| {
            let (s, r) = (Latency::of(settle), Latency::of(report));
            Window {
                start_s: i as f64 * width,
                end_s: (i + 1) as f64 * width,
                settled: s.count,
                settle_p50_ms: s.p50_ms,
                settle_p99_ms: s.p99_ms,
                reports: r.count,
                report_p50_ms: r.p50_ms,
                report_p99_ms: r.p99_ms,
            }
        })
        .collect()
}

/// Windows of the timeline: a picture of 60 bars stays readable.
pub const TIMELINE_WINDOWS: usize = 60;

impl LoadReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && !self.timed_out
    }
}

/// The six kinds of malformed body, cycled.
fn malformed_body(i: usize, org: ObjectId) -> String {
    let id = ObjectId::new();
    match i % 6 {
        0 => "this is not JSON {".to_owned(),
        1 => format!(
            r#"{{"interviewId":"{id}-not-an-id","organizationId":"{org}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":600}}"#
        ),
        2 => format!(r#"{{"interviewId":"{id}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":600}}"#),
        3 => format!(
            r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":"six hundred"}}"#
        ),
        4 => format!(
            r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"yesterday","durationSeconds":-5}}"#
        ),
        _ => format!(
            r#"{{"type":"interview.exploded","interviewId":"{id}","organizationId":"{org}","failureReason":"x","failedAt":"2026-12-02T10:00:00Z"}}"#
        ),
    }
}

/// Organizations, lots and reserved interviews in bulk, consistent with the five invariants.
async fn seed(
    store: &CreditsStore,
    planned: &mut Vec<Planned>,
    mix: &Mix,
    orgs: usize,
    rng: &mut Rng,
) -> Result<(), LoadError> {
    let now = chrono::Utc::now();
    let at = DateTime::from_chrono(now);
    let org_ids: Vec<ObjectId> = (0..orgs).map(|_| ObjectId::new()).collect();
    let lot_ids: Vec<[ObjectId; 2]> = (0..orgs).map(|_| [ObjectId::new(), ObjectId::new()]).collect();
    let mut lot_reserved = vec![[0_i64; 2]; orgs];
    let mut interviews = Vec::with_capacity(mix.interviews());
    let mut ledger = Vec::new();
    for i in 0..mix.interviews() {
        let o = i % orgs;
        let reserved = rng.range(10, 40) as i64;
        let failed = i >= mix.completed;
        // Mostly 2-40 minutes; one in twenty under a minute (insufficient evidence).
        let duration = (!failed).then(|| if rng.range(0, 19) == 0 { rng.range(5, 59) } else { rng.range(120, 2700) });
        let allocations: Vec<Allocation> = if i % 5 == 0 {
            let a = reserved / 2;
            vec![
                Allocation { lot_id: lot_ids[o][0], credits: a },
                Allocation { lot_id: lot_ids[o][1], credits: reserved - a },
            ]
        } else {
            vec![Allocation { lot_id: lot_ids[o][i % 2], credits: reserved }]
        };
        let id = ObjectId::new();
        for a in &allocations {
            let slot = usize::from(a.lot_id == lot_ids[o][1]);
            lot_reserved[o][slot] += a.credits;
            ledger.push(LedgerEntry::new(
                org_ids[o],
                a.lot_id,
                LedgerType::Reserve,
                a.credits,
                Reference { kind: ReferenceKind::Interview, id },
                at,
            ));
        }
        let mut d = doc! {
            "_id": id,
            "organizationId": org_ids[o],
            "credits": {"reserved": reserved, "allocations": bson::to_bson(&allocations)?},
            "settledAt": null,
            "createdAt": at,
        };
        match duration {
            Some(seconds) => {
                d.insert("status", "COMPLETED");
                d.insert("completedAt", at);
                d.insert("durationSeconds", seconds as i64);
            }
            None => {
                d.insert("status", "FAILED");
                d.insert("failedAt", at);
            }
        }
        for (k, v) in transcript(duration.is_some_and(|s| s >= 60)) {
            d.insert(k, v);
        }
        interviews.push(d);
        planned.push(Planned { id, org: org_ids[o], reserved, lots: allocations.len(), duration });
    }
    let mut organizations = Vec::new();
    let mut lots = Vec::new();
    for o in 0..orgs {
        let mut available = 0;
        for (slot, days) in [(0, 30), (1, 365)] {
            let granted = lot_reserved[o][slot] + 50;
            available += granted - lot_reserved[o][slot];
            lots.push(CreditLot {
                id: lot_ids[o][slot],
                organization_id: org_ids[o],
                granted,
                remaining: granted,
                reserved: lot_reserved[o][slot],
                expires_at: DateTime::from_chrono(now + chrono::Duration::days(days)),
                status: LotStatus::Active,
                created_at: Some(at),
            });
        }
        let reserved = lot_reserved[o][0] + lot_reserved[o][1];
        organizations.push(Organization {
            id: org_ids[o],
            name: format!("Load organization {o}"),
            credits: OrgCredits { available, reserved },
        });
    }
    store.organizations().insert_many(&organizations).await?;
    store.lots().insert_many(&lots).await?;
    for chunk in interviews.chunks(500) {
        store.interview_documents().insert_many(chunk).await?;
    }
    for chunk in ledger.chunks(1000) {
        store.ledger().insert_many(chunk).await?;
    }
    Ok(())
}

async fn ids_where(collection: &mongodb::Collection<Document>, filter: Document) -> Result<usize, LoadError> {
    let found: Vec<Document> = collection.find(filter).projection(doc! {"_id": 1}).await?.try_collect().await?;
    Ok(found.len())
}

/// The options of the runner's pipeline for a load test. Settlement is limited by
/// `settle_pollers` × `settle_concurrency` (`RECORD_CONCURRENCY`, as a deployed function reads
/// it): nx-27017 runs transactions as savepoints on one shared connection, and two at once make
/// commits fail (measured: 389 `commitTransaction` failures in a 500-message run with 4 pollers
/// and the consumer's default concurrency 4). Report generation has no transaction and runs with
/// `pollers` instances.
pub fn runner_options(options: &LoadOptions) -> RunnerOptions {
    RunnerOptions {
        database: "sophia-load".to_owned(),
        queue_prefix: "sophia-load".to_owned(),
        env_file: None,
        pollers: options.pollers,
        function_pollers: BTreeMap::from([(INTERVIEW_COMPLETED.to_owned(), options.settle_pollers)]),
        function_env: BTreeMap::from([(
            config::RECORD_CONCURRENCY.to_owned(),
            options.settle_concurrency.max(1).to_string(),
        )]),
        ..RunnerOptions::default()
    }
}

const INTERVIEW_COMPLETED: &str = "interview-completed";

fn setup(e: impl fmt::Display) -> LoadError {
    LoadError::Setup(e.to_string())
}

/// Runs the whole load test against a fresh local pipeline.
pub async fn run(options: &LoadOptions) -> Result<LoadReport, LoadError> {
    let mix = Mix::of(options.events);
    let orgs = options.orgs.max(1);
    let pipeline = Runner::start(runner_options(options)).await.map_err(setup)?;
    let result = drive(&pipeline, options, mix, orgs).await;
    let stats = pipeline.stats();
    let receive_counts = pipeline.receive_counts();
    pipeline.stop().await;
    let mut report = result?;
    report.esm = stats;
    report.receive_counts = receive_counts;
    Ok(report)
}

async fn drive(runner: &Runner, options: &LoadOptions, mix: Mix, orgs: usize) -> Result<LoadReport, LoadError> {
    let mut rng = Rng::new(options.seed);
    let store = CreditsStore::new(runner.mongo.db.clone());
    let env = runner.env();

    // 1. Seed.
    let seed_started = Instant::now();
    let mut planned = Vec::new();
    seed(&store, &mut planned, &mix, orgs, &mut rng).await?;
    let seed_seconds = seed_started.elapsed().as_secs_f64();
    let violations_before = invariants::check_all(&store).await?;
    if !violations_before.is_empty() {
        return Err(LoadError::Setup(format!(
            "the seed itself breaks the invariants: {:?}",
            violations_before.first()
        )));
    }
    eprintln!(
        "seeded {} organizations, {} lots, {} reserved interviews in {seed_seconds:.1} s",
        orgs,
        orgs * 2,
        planned.len()
    );

    // 2. The mix, shuffled.
    let mut messages: Vec<Message> = (0..planned.len()).map(Message::Valid).collect();
    for k in 0..mix.duplicates {
        // Duplicates of completed interviews, spread over the whole set.
        messages.push(Message::Valid((k * 7919) % mix.completed));
    }
    for k in 0..mix.malformed {
        messages.push(Message::Malformed(malformed_body(k, planned[k % planned.len()].org)));
    }
    rng.shuffle(&mut messages);

    let producer = SqsProducer::new(runner.sqs.clone(), QueueUrls::from_lookup(|name| env.get(name).cloned()));
    if producer.urls().get(Queue::InterviewCompleted).is_none() {
        return Err(LoadError::Setup("no interview queue URL".into()));
    }

    // 3. Publish, bounded concurrency; the first publish time of each interview.
    let bar = progress_bar(options.progress, messages.len() as u64, "publish");
    let first_publish = SystemTime::now();
    let publish_started = Instant::now();
    let planned_ref = &planned;
    let published: Vec<Result<Option<(usize, SystemTime)>, LoadError>> =
        futures::stream::iter(messages.into_iter().enumerate())
            .map(|(n, m)| {
                let (producer, bar) = (&producer, &bar);
                async move {
                    let request_id = RequestId::from_caller(Some(&format!("load-{n}")));
                    let at = SystemTime::now();
                    let out = match m {
                        Message::Valid(i) => {
                            let p = &planned_ref[i];
                            match p.duration {
                                Some(seconds) => {
                                    let input = CompletedInput {
                                        interview_id: InterviewId::new(p.id),
                                        organization_id: OrganizationId::new(p.org),
                                        completed_at: Some(Timestamp::now()),
                                        duration_seconds: DurationSeconds::new(seconds),
                                    };
                                    producer.publish_interview_completed(input, &request_id).await?;
                                }
                                None => {
                                    let input = FailedInput {
                                        interview_id: InterviewId::new(p.id),
                                        organization_id: OrganizationId::new(p.org),
                                        failure_reason: "load test: bot could not join".into(),
                                        failed_at: Some(Timestamp::now()),
                                    };
                                    producer.publish_interview_failed(input, &request_id).await?;
                                }
                            }
                            Some((i, at))
                        }
                        Message::Malformed(body) => {
                            producer
                                .send(Queue::InterviewCompleted, &body, EventType::InterviewCompleted, &request_id)
                                .await?;
                            None
                        }
                    };
                    bar.inc(1);
                    Ok(out)
                }
            })
            .buffer_unordered(options.publish_concurrency.max(1))
            .collect()
            .await;
    let mut published_at: HashMap<usize, SystemTime> = HashMap::new();
    for r in published {
        if let Some((i, at)) = r? {
            published_at.entry(i).and_modify(|t| *t = (*t).min(at)).or_insert(at);
        }
    }
    let publish_seconds = publish_started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    eprintln!(
        "published {} messages in {publish_seconds:.1} s ({:.0} msg/s)",
        mix.events,
        mix.events as f64 / publish_seconds.max(1e-9)
    );

    // 4. Wait for every settlement and every report.
    let interviews = runner.mongo.db.collection::<Document>("interviews");
    let reports = runner.mongo.db.collection::<Document>("interviewReports");
    let target = (mix.interviews() + mix.completed) as u64;
    let bar = progress_bar(options.progress, target, "settled+reported");
    let until = Instant::now() + options.timeout;
    let mut timed_out = false;
    loop {
        let settled = ids_where(&interviews, doc! {"settledAt": {"$ne": null}}).await?;
        let done = ids_where(&reports, doc! {"status": {"$in": ["COMPLETED", "FAILED"]}}).await?;
        bar.set_position((settled + done) as u64);
        if settled >= mix.interviews() && done >= mix.completed {
            break;
        }
        if Instant::now() > until {
            timed_out = true;
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    bar.finish_and_clear();
    // A duplicate still in flight gets a moment to (not) write a second time.
    tokio::time::sleep(Duration::from_secs(3)).await;

    // 5. Audit.
    let mut report = audit(runner, &store, &planned, &published_at, first_publish).await?;
    report.mix = mix;
    report.orgs = orgs;
    report.pollers = options.pollers;
    report.settle_pollers = options.settle_pollers;
    report.settle_concurrency = options.settle_concurrency;
    report.seed_seconds = seed_seconds;
    report.publish_seconds = publish_seconds;
    report.timed_out = timed_out;
    Ok(report.finish())
}

fn progress_bar(visible: bool, len: u64, label: &str) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>17} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(label.to_owned());
    bar
}

fn ms_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64() * 1000.0,
        Err(e) => -(e.duration().as_secs_f64() * 1000.0),
    }
}

async fn audit(
    runner: &Runner,
    store: &CreditsStore,
    planned: &[Planned],
    published_at: &HashMap<usize, SystemTime>,
    first_publish: SystemTime,
) -> Result<LoadReport, LoadError> {
    let mut violations = Vec::new();
    let db = &runner.mongo.db;
    let by_id: HashMap<ObjectId, usize> = planned.iter().enumerate().map(|(i, p)| (p.id, i)).collect();

    // Interviews: settled, consumed.
    let docs: Vec<Document> = db
        .collection::<Document>("interviews")
        .find(doc! {})
        .projection(doc! {"_id": 1, "settledAt": 1, "credits": 1})
        .await?
        .try_collect()
        .await?;
    if docs.len() != planned.len() {
        violations.push(format!(
            "{} interview documents, {} seeded (a malformed body wrote something?)",
            docs.len(),
            planned.len()
        ));
    }
    let mut settled_at: HashMap<ObjectId, SystemTime> = HashMap::new();
    let mut consumed: HashMap<ObjectId, i64> = HashMap::new();
    for d in &docs {
        let Ok(id) = d.get_object_id("_id") else { continue };
        if let Ok(t) = d.get_datetime("settledAt") {
            settled_at.insert(id, t.to_system_time());
        }
        if let Some(c) = d.get_document("credits").ok().and_then(|c| c.get("consumed")) {
            let v = match c {
                bson::Bson::Int32(v) => i64::from(*v),
                bson::Bson::Int64(v) => *v,
                _ => -1,
            };
            consumed.insert(id, v);
        }
    }

    // Ledger: keys unique, per interview sums.
    let ledger: Vec<LedgerEntry> = store.ledger().find(doc! {}).await?.try_collect().await?;
    let mut keys = HashSet::new();
    let mut sums: HashMap<ObjectId, BTreeMap<&'static str, (i64, usize)>> = HashMap::new();
    for e in &ledger {
        if !keys.insert((e.reference.kind, e.reference.id, e.kind.as_str(), e.lot_id)) {
            violations.push(format!(
                "duplicate ledger key {:?} {} {} lot {}",
                e.reference.kind,
                e.reference.id,
                e.kind.as_str(),
                e.lot_id
            ));
        }
        if e.reference.kind == ReferenceKind::Interview {
            let s = sums.entry(e.reference.id).or_default().entry(e.kind.as_str()).or_default();
            s.0 += e.amount;
            s.1 += 1;
        }
    }
    for p in planned {
        let sum = |k: &str| sums.get(&p.id).and_then(|m| m.get(k)).copied().unwrap_or_default();
        let (settle, release, forfeit, reserve) = (sum("SETTLE"), sum("RELEASE"), sum("FORFEIT"), sum("RESERVE"));
        if !settled_at.contains_key(&p.id) {
            violations.push(format!("interview {} not settled", p.id));
            continue;
        }
        if settle.1 > p.lots || release.1 > p.lots || forfeit.1 > p.lots {
            violations.push(format!(
                "interview {}: {} SETTLE / {} RELEASE / {} FORFEIT entries for {} lots",
                p.id, settle.1, release.1, forfeit.1, p.lots
            ));
        }
        if reserve.0 != p.reserved || reserve.0 != settle.0 + release.0 + forfeit.0 {
            violations.push(format!(
                "interview {}: RESERVE {} != SETTLE {} + RELEASE {} + FORFEIT {} (reserved {})",
                p.id, reserve.0, settle.0, release.0, forfeit.0, p.reserved
            ));
        }
        let stored = consumed.get(&p.id).copied();
        if stored != Some(settle.0) || settle.0 != p.expected_consumed() {
            violations.push(format!(
                "interview {}: credits.consumed {:?}, SETTLE sum {}, expected {}",
                p.id,
                stored,
                settle.0,
                p.expected_consumed()
            ));
        }
    }

    // Reports.
    let report_docs: Vec<Document> =
        db.collection::<Document>("interviewReports").find(doc! {}).await?.try_collect().await?;
    let mut per_interview: HashMap<ObjectId, Vec<&Document>> = HashMap::new();
    for r in &report_docs {
        if let Ok(id) = r.get_object_id("interviewId") {
            per_interview.entry(id).or_default().push(r);
        }
    }
    let (mut reports_completed, mut reports_failed, mut insufficient) = (0, 0, 0);
    let mut report_done_at: HashMap<ObjectId, SystemTime> = HashMap::new();
    for p in planned {
        let found = per_interview.get(&p.id).map(Vec::as_slice).unwrap_or_default();
        match p.duration {
            None if !found.is_empty() => {
                violations.push(format!("failed interview {} has {} report(s)", p.id, found.len()))
            }
            None => {}
            Some(_) if found.len() != 1 => {
                violations.push(format!("completed interview {} has {} reports", p.id, found.len()))
            }
            Some(_) => {
                let r = found[0];
                match r.get_str("status").unwrap_or("") {
                    "COMPLETED" => reports_completed += 1,
                    "FAILED" => reports_failed += 1,
                    other => violations.push(format!("report of {} is {other:?}, not terminal", p.id)),
                }
                let rec = r
                    .get_document("report")
                    .ok()
                    .and_then(|x| x.get_str("recommendation").ok())
                    .or_else(|| r.get_str("recommendation").ok());
                if rec == Some("insufficient_evidence") {
                    insufficient += 1;
                }
                if let Ok(t) = r.get_datetime("completedAt").or_else(|_| r.get_datetime("updatedAt")) {
                    report_done_at.insert(p.id, t.to_system_time());
                }
            }
        }
    }
    for id in per_interview.keys() {
        if !by_id.contains_key(id) {
            violations.push(format!("a report for an unknown interview {id}"));
        }
    }

    // Outbox, DLQs, invariants.
    let outbox: Vec<OutboxEntry> = store.outbox().find(doc! {}).await?.try_collect().await?;
    let pending = outbox.iter().filter(|e| e.status == OutboxStatus::Pending).count();
    if pending > 0 {
        violations.push(format!("{pending} outbox entries still PENDING"));
    }
    let completed_count = planned.iter().filter(|p| p.duration.is_some()).count();
    if outbox.len() != completed_count {
        violations.push(format!("{} outbox entries for {completed_count} completed interviews", outbox.len()));
    }
    for (name, key) in
        [("interview-completed-dlq", "INTERVIEW_COMPLETED_DLQ_URL"), ("report-generate-dlq", "REPORT_GENERATE_DLQ_URL")]
    {
        if let Some(url) = runner.env().get(key) {
            let n = queue_depth(&runner.sqs, url).await;
            if n != 0 {
                violations.push(format!(
                    "DLQ {name} holds {n} message(s); expected none (malformed bodies are dropped, not retried)"
                ));
            }
        }
    }
    for v in invariants::check_all(store).await? {
        violations.push(format!("invariant: {v}"));
    }

    // Figures.
    let mut settle_samples = Vec::new();
    let mut report_samples = Vec::new();
    let mut last_settled = first_publish;
    let mut last_report = first_publish;
    for (i, p) in planned.iter().enumerate() {
        let Some(&sent) = published_at.get(&i) else { continue };
        if let Some(&t) = settled_at.get(&p.id) {
            settle_samples.push((ms_between(first_publish, t) / 1000.0, ms_between(sent, t)));
            last_settled = last_settled.max(t);
        }
        if let Some(&t) = report_done_at.get(&p.id) {
            report_samples.push((ms_between(first_publish, t) / 1000.0, ms_between(sent, t)));
            last_report = last_report.max(t);
        }
    }
    let timeline = timeline(&settle_samples, &report_samples, TIMELINE_WINDOWS);
    let settle_ms = settle_samples.iter().map(|s| s.1).collect();
    let report_ms = report_samples.iter().map(|s| s.1).collect();
    let settle_seconds = ms_between(first_publish, last_settled) / 1000.0;
    let report_seconds = ms_between(first_publish, last_report) / 1000.0;
    let settled = settled_at.len();
    Ok(LoadReport {
        mix: Mix::of(0),
        orgs: 0,
        pollers: 0,
        settle_pollers: 0,
        settle_concurrency: 0,
        seed_seconds: 0.0,
        publish_seconds: 0.0,
        settle_seconds,
        report_seconds,
        settled_per_second: settled as f64 / settle_seconds.max(1e-9),
        messages_per_second: 0.0,
        settle_latency: Latency::of(settle_ms),
        report_latency: Latency::of(report_ms),
        settled,
        reports_completed,
        reports_failed,
        insufficient_evidence_reports: insufficient,
        ledger_entries: ledger.len(),
        esm: Vec::new(),
        receive_counts: Vec::new(),
        timeline,
        violations,
        timed_out: false,
    })
}

/// Visible + in-flight messages of a queue (0 when the attributes cannot be read is not
/// assumed: that is reported as `u64::MAX`).
async fn queue_depth(sqs: &aws_sdk_sqs::Client, url: &str) -> u64 {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    match sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
    {
        Ok(out) => {
            let attrs = out.attributes.unwrap_or_default();
            let get = |k: A| attrs.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            get(A::ApproximateNumberOfMessages) + get(A::ApproximateNumberOfMessagesNotVisible)
        }
        Err(_) => u64::MAX,
    }
}

impl LoadReport {
    /// Fills the figures that need the mix (called by `drive`).
    pub fn finish(mut self) -> Self {
        self.messages_per_second = self.mix.events as f64 / self.settle_seconds.max(1e-9);
        self
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.mix;
        writeln!(
            f,
            "\nSophia load test: {} messages over {} organizations; settlement {} poller(s) x concurrency {}, report generation {} pollers",
            m.events, self.orgs, self.settle_pollers, self.settle_concurrency, self.pollers
        )?;
        writeln!(
            f,
            "  mix: {} completed, {} failed, {} duplicates, {} malformed ({} distinct valid interviews)",
            m.completed,
            m.failed,
            m.duplicates,
            m.malformed,
            m.interviews()
        )?;
        writeln!(f, "  seed {:.1} s, publish {:.1} s", self.seed_seconds, self.publish_seconds)?;
        writeln!(
            f,
            "  settled {} / {} in {:.1} s from the first publish",
            self.settled,
            m.interviews(),
            self.settle_seconds
        )?;
        writeln!(
            f,
            "  throughput: {:.1} valid events settled/s ({:.1} messages/s incl. duplicates and malformed)",
            self.settled_per_second, self.messages_per_second
        )?;
        writeln!(
            f,
            "  latency publish -> settledAt: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (n={})",
            self.settle_latency.p50_ms,
            self.settle_latency.p99_ms,
            self.settle_latency.max_ms,
            self.settle_latency.count
        )?;
        writeln!(
            f,
            "  latency publish -> report completed: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (n={}); last report {:.1} s after the first publish",
            self.report_latency.p50_ms,
            self.report_latency.p99_ms,
            self.report_latency.max_ms,
            self.report_latency.count,
            self.report_seconds
        )?;
        writeln!(
            f,
            "  reports: {} COMPLETED ({} insufficient_evidence), {} FAILED; ledger entries {}",
            self.reports_completed, self.insufficient_evidence_reports, self.reports_failed, self.ledger_entries
        )?;
        for (function, [invocations, records, deleted, item_failures, batch_failures]) in &self.esm {
            writeln!(
                f,
                "  {function}: {invocations} invocations, {records} records, {deleted} deleted, {item_failures} item failures, {batch_failures} batch failures"
            )?;
        }
        for (function, counts) in &self.receive_counts {
            let counts: Vec<String> = counts.iter().map(|(times, n)| format!("{n} received {times}x")).collect();
            writeln!(f, "  {function} records by receive count: {}", counts.join(", "))?;
        }
        if self.timed_out {
            writeln!(f, "✘ timed out before everything was settled and reported")?;
        }
        if self.violations.is_empty() {
            writeln!(
                f,
                "✔ every valid interview settled exactly once, one report per completed interview, none for failed ones,"
            )?;
            write!(f, "  DLQs empty, no pending outbox entry, the five invariants hold for every organization")
        } else {
            writeln!(f, "✘ {} violation(s):", self.violations.len())?;
            for v in self.violations.iter().take(50) {
                writeln!(f, "    {v}")?;
            }
            if self.violations.len() > 50 {
                write!(f, "    … and {} more", self.violations.len() - 50)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_of_ten_thousand() {
        let m = Mix::of(10_000);
        assert_eq!((m.completed, m.failed, m.duplicates, m.malformed), (9_200, 100, 500, 200));
        assert_eq!(m.interviews() + m.duplicates + m.malformed, 10_000);
    }

    #[test]
    fn the_timeline_cuts_the_run_into_windows_of_whole_seconds() {
        // 150 s of settlements, two per second, latency = the second they finished in.
        let settled: Vec<(f64, f64)> = (0..300).map(|i| (f64::from(i) / 2.0, f64::from(i / 2))).collect();
        let reports = [(10.5, 900.0), (149.9, 100.0)];
        let t = timeline(&settled, &reports, 60);
        // 149.9 s / 60 -> 3 s windows, 50 of them.
        assert_eq!(t.len(), 50);
        assert_eq!((t[0].start_s, t[0].end_s, t[0].seconds()), (0.0, 3.0, 3.0));
        assert!(t.iter().all(|w| w.settled == 6), "two settlements a second, three seconds a window");
        assert_eq!((t[0].settle_p50_ms, t[0].settle_p99_ms), (1.0, 2.0));
        assert_eq!((t[3].reports, t[3].report_p50_ms), (1, 900.0));
        assert_eq!((t[49].reports, t[49].report_p99_ms), (1, 100.0));
        assert_eq!(t.iter().map(|w| w.reports).sum::<usize>(), 2);
    }

    #[test]
    fn a_short_run_has_one_second_windows_and_an_empty_run_none() {
        let t = timeline(&[(0.2, 5.0), (2.7, 7.0)], &[], 60);
        assert_eq!(t.iter().map(|w| w.settled).collect::<Vec<_>>(), [1, 0, 1]);
        assert_eq!(t[1].settle_p99_ms, 0.0, "an empty window has no latency");
        assert!(timeline(&[], &[], 60).is_empty());
    }

    #[test]
    fn percentiles() {
        let l = Latency::of((1..=100).map(f64::from).collect());
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (50.0, 99.0, 100.0));
    }
}
