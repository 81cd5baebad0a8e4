//! The operator's drills of what a fresh reader of docs/runbook.md still found misleading on the
//! local stage, each on the local pipeline (the real runner, its event-source-mapping emulator and
//! control channel, fauxqs, nx-27017, the offline OpenAI endpoint), asserting what the first
//! command the runbook (or the alarm) names prints, run as the binary runs it (`sophia-ops
//! --env-file <the runner's env file> ...`):
//!
//! - **a dropped `report.generate`** (the report-generate invalid-messages alarm, whose first
//!   command is `report failures`): a dropped message leaves no report state, yet `report
//!   failures` names it, its message id and the contract's reason, and `queue status
//!   report-generate` does not say healthy;
//! - **the operator cannot reach MongoDB**: `report late` and `interview unsettled` say so on
//!   their first line and still print what the queues say (the DLQ's interview and its reason);
//!   and with MongoDB, `interview unsettled` never names a running interview as the next step;
//! - **OpenAI answers slower than the client timeout** (`sophia-local fault openai slow`): the
//!   attempt fails as `timeout` and is given back; `report failures` and `queue status
//!   report-generate` name the kind. Scaled time: the client timeout is 1 s here (120 s in
//!   production, `OPENAI_TIMEOUT_MS`), the answer 3 s late.

use std::collections::BTreeMap;

use sophia_credits::seed;

use crate::support::drill::{Drill, LIMIT, ops, ops_with, verdict_line};
use harness::wait_until;

/// docs/runbook.md, "Invalid messages dropped", for report-generate: the alarm's first command
/// (`report failures`) shows the dropped message and why.
#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_report_request_is_named_by_the_alarms_first_command() {
    let p = Drill::start(30, None).await;
    let (org, _ids) = p.completed_interviews(1).await;
    let url = p.runner.env()["REPORT_GENERATE_QUEUE_URL"].clone();
    let sent = p
        .runner
        .sqs
        .send_message()
        .queue_url(&url)
        .message_body(format!(r#"{{"interviewId":"not-an-id","organizationId":"{org}"}}"#))
        .message_attributes("requestId", crate::support::ops::string_attr("drill"))
        .send()
        .await
        .expect("sent");
    let message_id = sent.message_id().expect("a message id").to_owned();
    wait_until("the consumer drops the invalid request", LIMIT, || async {
        let f = p.function("report-generate").await;
        f.deleted >= 1 && f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;

    let failures = ops(&p, &["report", "failures"]).await;
    assert_eq!(failures.exit_code, 0, "{}{}", failures.stdout, failures.stderr);
    assert!(
        failures.stdout.contains("dropped as invalid in the last 24h: 1 report.generate message(s)"),
        "{}",
        failures.stdout
    );
    let line = failures
        .stdout
        .lines()
        .find(|l| l.contains(&format!("message {message_id} at ")))
        .unwrap_or_else(|| panic!("the dropped message's line: {}", failures.stdout));
    assert!(line.contains("interviewId"), "the contract's reason names the field: {line}");
    assert!(
        failures.stdout.contains("  next: fix the producer, then for each dropped request")
            && failures.stdout.contains("sophia-ops publish report <interviewId> <organizationId>"),
        "{}",
        failures.stdout
    );
    let status = ops(&p, &["queue", "status", "report-generate"]).await;
    assert!(
        verdict_line(&status).starts_with("verdict: needs a person: 1 message(s) dropped as invalid in the window"),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains(&format!("  dropped:    message {message_id} at ")), "{}", status.stdout);
    p.stop().await;
}

/// The runner's env file with `MONGODB_URI` pointing where nothing listens: an operator whose
/// network (or Atlas access list) does not reach MongoDB, while the queues answer.
fn unreachable_mongo_env(p: &Drill) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&p.env_file).expect("the env file reads");
    let lines: Vec<String> =
        text.lines()
            .map(|l| {
                if l.starts_with("MONGODB_URI=") {
                    "MONGODB_URI=mongodb://127.0.0.1:1/".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect();
    let path = p.env_file.with_file_name("no-mongo.env");
    std::fs::write(&path, lines.join("\n") + "\n").expect("written");
    path
}

/// docs/runbook.md, "Reports are late" and "Invalid messages dropped": an interview still running
/// is never the next step of `interview unsettled`; without MongoDB, `report late` and `interview
/// unsettled` say why and still print what the queues say.
#[tokio::test(flavor = "multi_thread")]
async fn without_mongodb_late_and_unsettled_say_so_and_print_the_queues() {
    let p = Drill::start(30, None).await;
    let store = p.store();
    let org = seed::create_organization(&store, "Drill organization").await.unwrap();
    seed::grant_lot(&store, org, 1000, chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
    let transcript = sophia_local::demo::transcript(true);
    // The older interview is still running (SCHEDULED); the newer one ended.
    let running = seed::reserved_interview(&p.runner.mongo.client, &store, org, 10, transcript.clone()).await.unwrap();
    let ended = seed::reserved_interview(&p.runner.mongo.client, &store, org, 10, transcript).await.unwrap();
    let completed_at = sophia_contracts::Timestamp::now();
    let duration = sophia_contracts::DurationSeconds::new(600).unwrap();
    seed::mark_completed(&store, ended, completed_at, duration).await.unwrap();
    p.dead_letter_for_another_organization(ended).await;

    let unsettled = ops(&p, &["interview", "unsettled"]).await;
    let after = |id: &str| unsettled.stdout.split(id).nth(1).and_then(|r| r.lines().nth(1)).unwrap_or("").to_owned();
    assert!(after(&running.to_string()).contains("not ended yet: it holds its reservation"), "{}", unsettled.stdout);
    assert!(
        unsettled.stdout.contains(&format!("  next: sophia-ops interview show {ended} (")),
        "the next step is the interview that ended, not the running one: {}",
        unsettled.stdout
    );

    let no_mongo = unreachable_mongo_env(&p);
    let late = ops_with(&no_mongo, &["report", "late"]).await;
    assert_eq!(late.exit_code, 0, "{}{}", late.stdout, late.stderr);
    let first = late.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("cannot tell whether reports are late: MongoDB cannot be reached from here (")
            && first.contains("From the queues: interview-completed needs a person: 1 message(s) in the DLQ"),
        "{}",
        late.stdout
    );
    assert!(!late.stdout.contains("reports are on time"), "{}", late.stdout);
    assert!(
        late.stdout.contains(&format!("interview {ended}: its interview.completed is in the interview-completed DLQ"))
            && late.stdout.contains("belongs to organization"),
        "{}",
        late.stdout
    );
    let unsettled = ops_with(&no_mongo, &["interview", "unsettled"]).await;
    assert_eq!(unsettled.exit_code, 0, "{}{}", unsettled.stdout, unsettled.stderr);
    assert!(
        unsettled.stdout.starts_with("cannot list the unsettled interviews: MongoDB cannot be reached from here (")
            && unsettled.stdout.contains(&ended.to_string())
            && unsettled.stdout.contains("belongs to organization"),
        "{}",
        unsettled.stdout
    );
    assert!(
        unsettled.stdout.contains("  next: sophia-ops dlq list interview-completed (1 message(s) there)\n"),
        "the DLQ, never back to queue status: {}",
        unsettled.stdout
    );
    let failures = ops_with(&no_mongo, &["report", "failures"]).await;
    assert_eq!(failures.exit_code, 0, "{}{}", failures.stdout, failures.stderr);
    assert!(
        failures.stdout.starts_with("cannot list the reports: MongoDB cannot be reached from here (")
            && failures.stdout.contains("From the queues: 0 interview(s) named by the report-generate DLQ")
            && failures.stdout.contains("  next: MongoDB's access from here first (docs/runbook.md#mongodb_uri"),
        "{}",
        failures.stdout
    );
    let status = ops_with(&no_mongo, &["queue", "status", "report-generate"]).await;
    assert!(
        verdict_line(&status).starts_with("verdict: undecided: ") && verdict_line(&status).contains("MongoDB"),
        "never healthy with the reports unread: {}",
        status.stdout
    );
    p.stop().await;
}

/// docs/runbook.md, "report-generate near its timeout" and "Reports failing": a model slower than
/// the client timeout fails the attempt as `timeout` (its attempt given back), named by the first
/// commands. Scaled: a 1 s client timeout, answers 3 s late.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_model_times_out_and_the_first_command_names_it() {
    let env = BTreeMap::from([(sophia_reports::openai::OPENAI_TIMEOUT_MS.to_owned(), "1000".to_owned())]);
    let p = Drill::start_with(60, None, env).await;
    p.control.openai_fault("slow", None, Some(3000)).await.expect("fault openai slow --delay-ms 3000");
    let (org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    p.publish_completed(org, &ids).await;
    wait_until("the first attempt fails with timeout", LIMIT, || async {
        p.report(id).await.is_some_and(|r| r.get_str("errorKind") == Ok("timeout"))
    })
    .await;

    let status = ops(&p, &["queue", "status", "report-generate"]).await;
    assert!(
        verdict_line(&status).starts_with("verdict: failing: report attempts failed by error kind: timeout (1)"),
        "{}",
        status.stdout
    );
    let failures = ops(&p, &["report", "failures"]).await;
    assert!(
        failures.stdout.contains(&format!("{:<19}  {id}", "waiting for a retry"))
            && failures.stdout.contains(
                "waiting for a retry after timeout (the provider or MongoDB away: its attempt given back, 0 spent)"
            ),
        "{}",
        failures.stdout
    );
    p.control.openai_fault("none", None, None).await.expect("fault openai none");
    p.stop().await;
}
