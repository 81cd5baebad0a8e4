//! The on-call drills of docs/runbook.md whose first command is `queue status` or `report late`,
//! against the local pipeline (the real runner, its event-source-mapping emulator and control
//! channel, fauxqs, nx-27017), each asserting what that first command prints. The commands run as
//! the binary runs them: `sophia-ops --env-file <the runner's env file> ...`, parsed, executed and
//! rendered in this process (`sophia_ops::run_with_args`), audit record included.
//!
//! - MongoDB down: `queue status interview-completed` says `verdict: failing:` with what the
//!   function's error says (the batch setup's MongoDB failure), not "healthy";
//! - report-generate stopped: `queue pause report-generate` (planned, audited) stops its mapping;
//!   `queue status report-generate` names the mapping, `Disabled (USER_INITIATED)`, as a stage's
//!   Lambda API would; `queue resume` drains it;
//! - reports are late: `report late` first names the stopped queue, and after the resume the p95
//!   over the level. Scaled time: the interviews ended 20 minutes before they are published (an
//!   outage of 20 minutes, the level's 15 minutes plus 5, compressed to the time the test takes;
//!   scale 20 min : ~0 s), so the time to report the functions measure is the one a stage would
//!   show after such an outage.

use std::time::Duration;

use sophia_contracts::{InterviewId, OrganizationId, Timestamp};
use sophia_local::control::MongoState;

use crate::support::drill::{Drill, LIMIT, ops, verdict_line};
use harness::wait_until;

/// The scaled outage of the reports-late drill: how long before the test the interviews ended.
const ENDED_AGO: Duration = Duration::from_secs(20 * 60);

/// Interviews holding a reservation, marked COMPLETED as the API does, having ended `ago` ago.
async fn ended_interviews(drill: &Drill, n: usize, ago: Duration) -> (OrganizationId, Vec<InterviewId>, Timestamp) {
    let ended = Timestamp::new(chrono::Utc::now() - chrono::Duration::from_std(ago).unwrap());
    let (org, ids) = drill.interviews_ended_at(n, ended).await;
    (org, ids, ended)
}

/// docs/runbook.md, "Oldest message too old" / "Function errors", MongoDB down: every batch of
/// interview-completed fails while its message stays in flight; the first command names the
/// failure and what the function's error says, and says healthy again after `fault mongo up`.
#[tokio::test(flavor = "multi_thread")]
async fn mongo_down_queue_status_says_failing_with_what_the_errors_say() {
    // 10 s of visibility: a failed delivery (about 5 s of server selection) comes back within it.
    let drill = Drill::start(10, None).await;
    let (org, ids, ended) = ended_interviews(&drill, 1, Duration::ZERO).await;
    drill.control.mongo(MongoState::Down).await.expect("fault mongo down");
    drill.publish_ended(org, &ids, ended).await;
    wait_until("a batch of interview-completed failed", LIMIT, || async {
        drill.function("interview-completed").await.batch_failures >= 1
    })
    .await;

    let out = ops(&drill, &["queue", "status", "interview-completed"]).await;
    assert_eq!(out.exit_code, 0, "{}{}", out.stdout, out.stderr);
    let verdict = verdict_line(&out);
    assert!(
        verdict.starts_with("verdict: failing: the function returned an error: batch setup failed"),
        "{}",
        out.stdout
    );
    assert!(verdict.contains("invocation(s) failed as a whole batch"), "{verdict}");
    // What the function's error says: the MongoDB driver's reason, not a guess.
    let lower = verdict.to_ascii_lowercase();
    assert!(lower.contains("server selection") || lower.contains("connection"), "{verdict}");
    assert!(out.stdout.contains("  mapping:    Enabled interview-completed"), "{}", out.stdout);
    assert!(!out.stdout.contains("healthy"), "{}", out.stdout);

    drill.control.mongo(MongoState::Up).await.expect("fault mongo up");
    wait_until("the interview settles after `fault mongo up`", LIMIT, || drill.settled(ids[0])).await;
    wait_until("interview-completed is drained", LIMIT, || async {
        let f = drill.function("interview-completed").await;
        f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;
    // Drained, but the window still holds the errors: not healthy yet, and it says why.
    let out = ops(&drill, &["queue", "status", "interview-completed"]).await;
    assert!(verdict_line(&out).starts_with("verdict: recovering: the function returned an error"), "{}", out.stdout);
    assert!(out.stdout.contains("next: sophia-ops queue status interview-completed --window 1m"), "{}", out.stdout);
    // A window after the last error: healthy.
    wait_until("queue status says healthy over a window without errors", LIMIT, || async {
        verdict_line(&ops(&drill, &["queue", "status", "interview-completed", "--window", "2s"]).await)
            == "verdict: healthy"
    })
    .await;
    drill.stop().await;
}

/// docs/runbook.md, "Oldest message too old", stopped: `queue pause report-generate` (a plan with
/// `--dry-run`, then the change, audited) disables the mapping as UpdateEventSourceMapping does;
/// `queue status report-generate` names it; `queue resume` drains the queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_report_mapping_is_named_by_queue_status_and_resumed_by_an_audited_command() {
    let drill = Drill::start(30, None).await;
    let dry = ops(&drill, &["queue", "pause", "report-generate", "--dry-run"]).await;
    assert_eq!(dry.exit_code, 0, "{}{}", dry.stdout, dry.stderr);
    assert!(
        dry.stdout.starts_with("dry run, nothing sent:\npause (disable) the event source mapping "),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.contains("plan:       mapping now: ") && dry.stdout.contains("-> report-generate, Enabled"),
        "{}",
        dry.stdout
    );
    assert!(!drill.function("report-generate").await.paused, "a dry run changes nothing");

    let paused = ops(&drill, &["queue", "pause", "report-generate"]).await;
    assert_eq!(paused.exit_code, 0, "{}{}", paused.stdout, paused.stderr);
    assert!(paused.stdout.contains(" Enabled -> Disabled (USER_INITIATED)"), "{}", paused.stdout);
    assert!(paused.stderr.contains("audited: queue-pause report-generate -> done by "), "audited: {}", paused.stderr);
    assert!(drill.function("report-generate").await.paused, "sophia-local status sees the same pause");

    let (org, ids, ended) = ended_interviews(&drill, 1, Duration::ZERO).await;
    drill.publish_ended(org, &ids, ended).await;
    wait_until("the report request waits in the stopped queue", LIMIT, || async {
        drill.function("report-generate").await.visible == Some(1)
    })
    .await;
    let out = ops(&drill, &["queue", "status", "report-generate"]).await;
    let verdict = verdict_line(&out);
    assert!(verdict.starts_with("verdict: stopped: the event source mapping "), "{}", out.stdout);
    // Who paused, from the audit trail.
    assert!(verdict.contains(", paused by ") && verdict.contains("(queue-pause)"), "{}", out.stdout);
    assert!(out.stdout.contains("  mapping:    Disabled report-generate"), "{}", out.stdout);
    // The oldest message's age, locally too (fauxqs' inspection, as CloudWatch's metric on a stage).
    let oldest = out.stdout.lines().find(|l| l.starts_with("  oldest:     ")).unwrap_or_default();
    assert!(oldest.contains(" old; deleted by SQS in ") && !oldest.contains("unknown"), "{}", out.stdout);
    assert!(
        out.stdout.contains("is Disabled (USER_INITIATED), paused by ")
            && out.stdout.contains("(queue-pause): nothing receives from the queue (resume: the next: line)")
            && out.stdout.contains("next: sophia-ops queue resume report-generate"),
        "{}",
        out.stdout
    );

    let resumed = ops(&drill, &["queue", "resume", "report-generate"]).await;
    assert!(resumed.stdout.contains(" Disabled -> Enabled"), "{}", resumed.stdout);
    assert!(
        resumed.stderr.contains("audited: queue-resume report-generate -> done by "),
        "audited: {}",
        resumed.stderr
    );
    wait_until("the report completes after the resume", LIMIT, || async {
        drill.report(ids[0]).await.is_some_and(|r| r.get_str("status") == Ok("COMPLETED"))
    })
    .await;
    wait_until("queue status says healthy", LIMIT, || async {
        verdict_line(&ops(&drill, &["queue", "status", "report-generate"]).await) == "verdict: healthy"
    })
    .await;
    drill.stop().await;
}

/// docs/runbook.md, "Reports are late" (scaled: the interviews ended 20 minutes ago): while
/// report-generate is stopped `report late` first says so and counts the report waiting; after
/// the resume it says the reports were late, with the p95 over the level.
#[tokio::test(flavor = "multi_thread")]
async fn reports_late_first_names_the_stopped_queue_then_the_p95_over_the_level() {
    let drill = Drill::start(30, None).await;
    let paused = ops(&drill, &["queue", "pause", "report-generate"]).await;
    assert_eq!(paused.exit_code, 0, "{}{}", paused.stdout, paused.stderr);
    let (org, ids, ended) = ended_interviews(&drill, 2, ENDED_AGO).await;
    drill.publish_ended(org, &ids, ended).await;
    for id in &ids {
        wait_until("each interview settles", LIMIT, || drill.settled(*id)).await;
    }
    wait_until("both report requests wait", LIMIT, || async {
        drill.function("report-generate").await.visible == Some(2)
    })
    .await;

    let out = ops(&drill, &["report", "late"]).await;
    assert_eq!(out.exit_code, 0, "{}{}", out.stdout, out.stderr);
    let first = out.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("reports are late: report-generate is stopped: the event source mapping "),
        "{}",
        out.stdout
    );
    assert!(first.contains("is Disabled (USER_INITIATED)"), "{first}");
    assert!(
        out.stdout.contains("waiting: 2 interview(s) ended without a stored report, the oldest 20m"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("    2 settled, report not started"), "{}", out.stdout);

    let resumed = ops(&drill, &["queue", "resume", "report-generate"]).await;
    assert_eq!(resumed.exit_code, 0, "{}{}", resumed.stdout, resumed.stderr);
    for id in &ids {
        wait_until("each report completes", LIMIT, || async {
            drill.report(*id).await.is_some_and(|r| r.get_str("status") == Ok("COMPLETED"))
        })
        .await;
    }
    let out = ops(&drill, &["report", "late"]).await;
    let first = out.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("reports were late: the p95 of the 2 report(s) completed in the window is 20m"),
        "{}",
        out.stdout
    );
    assert!(first.contains("over the level (p95 <= 15 min)"), "{first}");
    assert!(out.stdout.contains("waiting: 0 interview(s)"), "{}", out.stdout);
    drill.stop().await;
}
