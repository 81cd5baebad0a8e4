//! The benchmarks (`scripts/bench`, binary `sophia-bench`): figures, not assertions.
//!
//! - `zips`: zip size of each function (`<lambda dir>/<fn>/bootstrap.zip` from `scripts/build`);
//! - `cold_start`: cold start of each release binary behind the local Runtime API: process start
//!   to its first `/next` poll (its init, incl. the MongoDB `hello` of `Mongo::from_env`, is done),
//!   median of `runs` fresh processes; then the first event's end-to-end time (one real batch
//!   invoked right after ready: 10 settlements, or one report) and the peak RSS (`VmHWM`) after it;
//! - `secrets`: the same with the secrets as plain variables vs Secrets Manager behind an
//!   extension that is not ready during init;
//! - `round_trips`: MongoDB round trips per settlement and per report, counted with the driver's
//!   command monitoring around the library calls (`SettlementService`, `ReportService`), next to
//!   the minimum the data model allows;
//! - `latency`: latency of one batch of 10 settlements of 10 organizations through a warm release
//!   `interview-completed` behind the local Runtime API, with `RECORD_CONCURRENCY` 10 and 1.
//!
//! It starts its own fauxqs, nx-27017 and offline OpenAI endpoint (`world`: the runner's parts,
//! without its pollers, so nothing else competes for the servers while a figure is taken) and feeds
//! the functions from `events`. `report` is the table and the JSON's fields, `json` where the
//! JSON goes; `release` finds the release binaries and invokes them, `stats` the median and
//! extremes, `machine` the host.

use std::fmt;
use std::path::PathBuf;
use std::time::Instant;

mod cold_start;
mod events;
mod json;
mod latency;
mod machine;
mod release;
mod report;
mod round_trips;
mod secrets;
mod stats;
mod world;
mod zips;

pub use cold_start::{ColdStart, peak_rss_kib};
pub use json::{keep_previous, previous_path, read_run, write_json};
pub use latency::BatchLatency;
pub use machine::Machine;
pub use release::target_dir;
pub use report::BenchReport;
pub use round_trips::RoundTrip;
pub use secrets::{SECRET_ARNS, SecretStart, run_secrets, secret_functions, secrets_table};
pub use zips::{ZIP_GOAL_BYTES, ZIP_TARGET_BYTES, ZipFigure, zip_figures, zip_table};

use sophia_declarations::Function;
use world::World;

/// The deployed functions, in the order the table shows them: every function
/// `declarations/queues.json` declares (the generated `Function`).
pub const FUNCTIONS: &[Function] = &Function::ALL;

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

/// Runs every benchmark.
pub async fn run(options: &BenchOptions) -> Result<BenchReport, BenchError> {
    let started = Instant::now();
    let machine = Machine::describe();
    let (zips, lambda_architecture) = zip_figures(options);
    let mut notes = setting_notes(options, &zips);
    let report_costs = crate::cost::report_costs().unwrap_or_else(|e| {
        notes.push(format!("cost of a report not computed: {e}"));
        Vec::new()
    });
    let world = World::start(options).await?;
    let result = async {
        let cold = measure_cold_starts(&world, options, &mut notes).await;
        let secrets = measure_secret_starts(&world, options, &mut notes).await;
        eprintln!("round trips");
        let trips = round_trips::round_trips(&world).await?;
        eprintln!("batch latency");
        let batches = measure_batches(&world, options, &mut notes).await;
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

/// The notes on what the run measures against: missing zips, which MongoDB.
fn setting_notes(options: &BenchOptions, zips: &[ZipFigure]) -> Vec<String> {
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
    notes
}

/// The cold start of every function; one that cannot be measured becomes a note.
async fn measure_cold_starts(world: &World, options: &BenchOptions, notes: &mut Vec<String>) -> Vec<ColdStart> {
    let mut cold = Vec::new();
    for &f in FUNCTIONS {
        eprintln!("cold start: {f} ({} runs)", options.runs);
        match cold_start::cold_start(world, options, f).await {
            Ok(c) => cold.push(c),
            Err(e) => notes.push(format!("cold start of {f} not measured: {e}")),
        }
    }
    cold
}

/// The secrets figures of every function with secrets; one that cannot be measured becomes a note.
async fn measure_secret_starts(world: &World, options: &BenchOptions, notes: &mut Vec<String>) -> Vec<SecretStart> {
    let mut secrets = Vec::new();
    for f in secret_functions() {
        eprintln!("secrets: {f} ({} runs per case)", options.runs);
        match secrets::secret_starts(world, options, f).await {
            Ok(rows) => secrets.extend(rows),
            Err(e) => notes.push(format!("secrets figures of {f} not measured: {e}")),
        }
    }
    secrets
}

/// The batch latency with `RECORD_CONCURRENCY` 10, then 1; one not measured becomes a note.
async fn measure_batches(world: &World, options: &BenchOptions, notes: &mut Vec<String>) -> Vec<BatchLatency> {
    let mut batches = Vec::new();
    for c in [10, 1] {
        match latency::batch_latency(world, options, c, options.batch_repeats).await {
            Ok(b) => batches.push(b),
            Err(e) => notes.push(format!("batch latency with RECORD_CONCURRENCY={c} not measured: {e}")),
        }
    }
    batches
}
