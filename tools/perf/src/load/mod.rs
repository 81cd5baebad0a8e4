//! The load test (`scripts/load-test`, binary `sophia-load`): thousands of interview events
//! through the whole local pipeline, then a full audit of the outcome.
//!
//! 1. the runner's pipeline ([`Runner`]: fauxqs, nx-27017, the offline OpenAI endpoint, one
//!    event-source-mapping emulator per function with in-process instances): report generation with
//!    several pollers, settlement one transaction at a time (nx-27017's limit, see
//!    [`runner_options`]);
//! 2. `seed`: `orgs` organizations, two credit lots each, and one reserved interview per valid
//!    event, written in bulk (`insert_many`) in the exact shape the library's reservation writes
//!    (organization balances, lot `reserved`, `RESERVE` ledger entries, interview
//!    `credits.allocations`), so the five invariants hold before anything is published; every
//!    fifth reservation spans both lots;
//! 3. `mix`, `messages` and `publish`: the mix, its messages shuffled (`rng`), published through
//!    the real producer with bounded concurrency: 5 % duplicates (an interview published
//!    twice), 2 % malformed bodies (six kinds), 1 % failed interviews, the rest completed with
//!    varied durations (some under a minute: insufficient evidence, no model call);
//! 4. `drive`: waits (`progress` bar on stderr, overall timeout) until every valid interview is
//!    settled and every completed one has a terminal report;
//! 5. `audit`: settled exactly once (per interview `SETTLE` entries ≤ its lots, no duplicate
//!    ledger key, `credits.consumed` = `SETTLE` sum = the expected bill, `RESERVE` = `SETTLE` +
//!    `RELEASE` + `FORFEIT`), exactly one report per completed interview and none for failed ones,
//!    both DLQs empty (`queue_depth`), no pending outbox entry, no interview written by a
//!    malformed body, `invariants::check_all` empty; and measures throughput and per-message
//!    latency (`figures`, `latency`, `timeline`) into the `report`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use sophia_platform::config;

use sophia_local::runner::{Runner, RunnerOptions};

mod audit;
mod drive;
mod figures;
mod latency;
mod messages;
mod mix;
mod progress;
mod publish;
mod queue_depth;
mod report;
mod rng;
mod seed;
mod timeline;

pub use latency::Latency;
pub use mix::Mix;
pub use report::LoadReport;
pub use rng::Rng;
pub use timeline::{TIMELINE_WINDOWS, Window, timeline};

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
    let result = drive::drive(&pipeline, options, mix, orgs).await;
    let stats = pipeline.stats();
    let receive_counts = pipeline.receive_counts();
    pipeline.stop().await;
    let mut report = result?;
    report.esm = stats;
    report.receive_counts = receive_counts;
    Ok(report)
}
