//! One load run on a started pipeline, step by step: seed, build the mix, publish, wait for
//! every settlement and report, audit.

use std::time::{Duration, Instant};

use bson::{Document, doc};
use futures::TryStreamExt;
use sophia_credits::CreditsStore;

use sophia_local::runner::Runner;

use super::audit::audit;
use super::messages;
use super::mix::Mix;
use super::progress::progress_bar;
use super::publish::publish;
use super::report::LoadReport;
use super::rng::Rng;
use super::seed::seed_and_check;
use super::{LoadError, LoadOptions};

/// One load run on the started `runner`; the report lacks only what the runner counted itself.
pub(super) async fn drive(
    runner: &Runner,
    options: &LoadOptions,
    mix: Mix,
    orgs: usize,
) -> Result<LoadReport, LoadError> {
    let mut rng = Rng::new(options.seed);
    let store = CreditsStore::new(runner.mongo.db.clone());

    // 1. Seed.
    let (planned, seed_seconds) = seed_and_check(&store, &mix, orgs, &mut rng).await?;

    // 2. The mix, shuffled.
    let messages = messages::messages(&planned, &mix, &mut rng);

    // 3. Publish, bounded concurrency; the first publish time of each interview.
    let published = publish(runner, &planned, messages, &mix, options).await?;

    // 4. Wait for every settlement and every report.
    let timed_out = wait_for_pipeline(runner, &mix, options).await?;

    // 5. Audit.
    let mut report = audit(runner, &store, &planned, &published.at, published.first).await?;
    report.mix = mix;
    report.orgs = orgs;
    report.pollers = options.pollers;
    report.settle_pollers = options.settle_pollers;
    report.settle_concurrency = options.settle_concurrency;
    report.seed_seconds = seed_seconds;
    report.publish_seconds = published.seconds;
    report.timed_out = timed_out;
    Ok(report.finish())
}

/// Polls (progress bar on stderr) until every valid interview is settled and every completed
/// one has a terminal report, or `options.timeout` passed (`true`: timed out).
async fn wait_for_pipeline(runner: &Runner, mix: &Mix, options: &LoadOptions) -> Result<bool, LoadError> {
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
    Ok(timed_out)
}

async fn ids_where(collection: &mongodb::Collection<Document>, filter: Document) -> Result<usize, LoadError> {
    let found: Vec<Document> = collection.find(filter).projection(doc! {"_id": 1}).await?.try_collect().await?;
    Ok(found.len())
}
