//! The load test's whole path, small: `sophia_perf::load::run` starts the runner's pipeline
//! (fauxqs, nx-27017, the offline OpenAI endpoint, the event-source-mapping emulators with
//! in-process instances) with the load test's options, publishes a shuffled mix with every kind
//! of message (duplicates, the six malformed bodies, failed and completed interviews), waits, and
//! audits it. `scripts/load-test` runs the same code with 10,000 messages; this keeps the runner
//! and the audit working in CI.

use std::time::Duration;

use sophia_perf::load::{LoadOptions, Mix, run, runner_options};
use sophia_platform::config::RECORD_CONCURRENCY;

#[tokio::test]
async fn a_small_load_run_settles_every_interview_once_and_passes_the_audit() {
    let options = LoadOptions {
        events: 300,
        orgs: 5,
        pollers: 2,
        progress: false,
        timeout: Duration::from_secs(240),
        ..LoadOptions::default()
    };
    let mix = Mix::of(options.events);
    assert_eq!((mix.duplicates, mix.malformed, mix.failed), (15, 6, 3), "every kind of message is in the mix");

    let report = run(&options).await.expect("the pipeline starts and the run completes");

    assert!(report.ok(), "audit violations: {:#?} (timed out: {})", report.violations, report.timed_out);
    assert_eq!(report.settled, mix.interviews());
    assert_eq!(report.reports_completed, mix.completed);
    assert_eq!(report.reports_failed, 0);
    assert_eq!(report.settle_latency.count, mix.interviews());
    let settle = report.esm.iter().find(|(f, _)| f == "interview-completed").expect("the settlement mapping");
    let [_, records, deleted, item_failures, batch_failures] = settle.1;
    assert_eq!((records, deleted), (options.events as u64, options.events as u64), "every message consumed once");
    assert_eq!((item_failures, batch_failures), (0, 0), "one transaction at a time: no failed commit");

    // What the picture draws: every record delivered once, every settlement and report in a window.
    let receives = report.receive_counts.iter().find(|(f, _)| f == "interview-completed").expect("histogram");
    assert_eq!(receives.1, std::collections::BTreeMap::from([(1, options.events as u64)]), "no retry");
    assert_eq!(report.timeline.iter().map(|w| w.settled).sum::<usize>(), mix.interviews());
    assert_eq!(report.timeline.iter().map(|w| w.reports).sum::<usize>(), mix.completed);
    let svg = sophia_perf::charts::load_svg(&report).expect("the picture draws");
    assert!(svg.contains("audit passed"), "the picture's title carries the verdict");
}

/// The runner options of a load run: settlement limited to what nx-27017 can commit, through the
/// same `RECORD_CONCURRENCY` a deployed function reads; report generation scaled out.
#[test]
fn load_runs_limit_settlement_through_the_functions_environment() {
    let options = LoadOptions { pollers: 3, settle_pollers: 1, settle_concurrency: 1, ..LoadOptions::default() };
    let runner = runner_options(&options);
    assert_eq!(runner.pollers, 3);
    assert_eq!(runner.function_pollers.get("interview-completed"), Some(&1));
    assert_eq!(runner.function_env.get(RECORD_CONCURRENCY).map(String::as_str), Some("1"));
    assert_eq!(runner.env_file, None, "a load run leaves the developer's env file alone");
}
