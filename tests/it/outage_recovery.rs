//! A provider outage through the report pipeline (`sophia_perf::burst`: fauxqs, nx-27017, the
//! production report-generate handler with the report queue's consumer options, the OpenAI fake's
//! standing fault), with scaled time: an hour-long OpenAI outage (every answer HTTP 500), then
//! recovery. Every report COMPLETED within 15 minutes of the recovery (scaled), none FAILED, the
//! DLQ empty, no operator command, and each report used exactly one attempt: the outage cost none.
//! `scripts/load-test --burst --outage-hours 6` measures the 6-hour case (docs/performance.md).

use std::time::Duration;

use sophia_perf::burst::{BurstOptions, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_survive_an_outage_and_complete_soon_after_recovery_with_their_attempts_intact() {
    let options = BurstOptions {
        busy: 4,
        quiet: 2,
        concurrency: 2,
        latency: Duration::from_secs(1),
        tokens_per_minute: None,
        time_scale: 60,
        outage: Some(Duration::from_secs(3600)),
        timeout: Duration::from_secs(600),
    };
    let report = run(&options).await.expect("the scenario runs");
    println!("{report}");
    assert_eq!(report.not_completed, 0, "every report COMPLETED: {report}");
    assert!(report.out_of_attempts.is_empty(), "none FAILED for good: {report}");
    assert_eq!(report.dlq, 0, "nothing for an operator: {report}");
    assert_eq!(report.attempts, [(1, 6)].into(), "one attempt each: the outage cost none: {report}");
    assert!(report.receive_counts.keys().any(|&n| n >= 3), "the outage outlasted the backoffs: {report}");
    let after = report.after_recovery_max_s.expect("a recovery");
    assert!(after <= 15.0 * 60.0, "completed {after:.0} s (scaled) after the recovery: {report}");
}
