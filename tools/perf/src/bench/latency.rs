//! Latency of one batch of 10 settlements of 10 organizations through a warm release
//! `interview-completed` behind the local Runtime API, with `RECORD_CONCURRENCY` 10 and 1.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use sophia_contracts::OrganizationId;
use sophia_local::invoke::Invoke;
use sophia_local::runtime_api::RuntimeApi;
use sophia_platform::config;

use super::release::{invoke_context, item_failures, release_function};
use super::stats::{median, min_max, ms};
use super::world::World;
use super::{BenchError, BenchOptions, other};

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

const FUNCTION: &str = "interview-completed";

/// Batches of 10 settlements of 10 organizations through one warm release `interview-completed`
/// behind the local Runtime API, with `RECORD_CONCURRENCY` = `concurrency`: a first batch warms
/// its connection pool (as a warm Lambda's is), then `repeats` timed batches.
pub(super) async fn batch_latency(
    world: &World,
    options: &BenchOptions,
    concurrency: usize,
    repeats: usize,
) -> Result<BatchLatency, BenchError> {
    let (binary, memory, timeout) = release_function(options, FUNCTION).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let mut api = warm_function(world, &binary, memory, timeout, concurrency, &orgs).await?;
    let mut times = Vec::new();
    let (mut failures, mut records) = (0, 0);
    for _ in 0..repeats.max(1) {
        let event = world.completed_batch(&orgs).await?;
        let started = Instant::now();
        let response = api
            .invoke(event, invoke_context(FUNCTION, timeout))
            .await
            .map_err(|e| other(format!("{FUNCTION}: {e}")))?;
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

/// The release `interview-completed` started with `RECORD_CONCURRENCY` = `concurrency`, ready,
/// and its connection pool warmed by a first (untimed) batch.
async fn warm_function(
    world: &World,
    binary: &Path,
    memory: u32,
    timeout: Duration,
    concurrency: usize,
    orgs: &[OrganizationId],
) -> Result<RuntimeApi, BenchError> {
    let mut env = world.env.clone();
    env.retain(|(k, _)| k != config::RECORD_CONCURRENCY);
    env.push((config::RECORD_CONCURRENCY.to_owned(), concurrency.to_string()));
    let mut api = RuntimeApi::serve().await.map_err(other)?;
    api.start_function(binary, FUNCTION, memory, &env).map_err(other)?;
    api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{FUNCTION}: {e}")))?;
    let warm_up = world.completed_batch(orgs).await?;
    api.invoke(warm_up, invoke_context(FUNCTION, timeout)).await.map_err(|e| other(format!("{FUNCTION}: {e}")))?;
    Ok(api)
}

/// The batch section of the bench table.
pub(super) fn batch_section(f: &mut fmt::Formatter<'_>, rows: &[BatchLatency]) -> fmt::Result {
    writeln!(
        f,
        "\nBatch of 10 settlements, 10 organizations, warm release interview-completed behind the local Runtime API"
    )?;
    for b in rows {
        writeln!(
            f,
            "  concurrency {:>2}: median {:>7.1} ms (min {:.1}, max {:.1}, {} batches){}",
            b.concurrency,
            b.ms_median,
            b.ms_min,
            b.ms_max,
            b.batches,
            if b.all_ok { String::new() } else { format!("  ({} of {} records failed)", b.item_failures, b.records) }
        )?;
    }
    Ok(())
}
