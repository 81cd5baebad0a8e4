//! The operator's drills where the first command once said "healthy" or "on time" while something
//! still needed a person (docs/runbook.md), each on the local pipeline (the real runner, its
//! event-source-mapping emulator and control channel, fauxqs, nx-27017, the offline OpenAI
//! endpoint), asserting what the first command prints, run as the binary runs it
//! (`sophia-ops --env-file <the runner's env file> ...`):
//!
//! - **a DLQ that is not empty while its source is**: a message for another organization is sent
//!   to the DLQ on its first delivery, no error; `queue status interview-completed` says "needs a
//!   person", never "healthy", `report late` never "on time", `dlq list` and `interview
//!   unsettled` give the reason on the message's and the interview's line;
//! - **OpenAI `insufficient_quota`** (`sophia-local fault openai quota`): every attempt spends one
//!   of the report's three; `report failures` flags it NEEDS YOU NOW with the next delivery's
//!   time, `interview show` says the same from the same function, `queue status report-generate`
//!   names the kind, and `report late` is not "on time";
//! - **a redrive plan that simulates in order**: two messages for one interview in the
//!   interview-completed DLQ; the plan's second line reads "already settled by <the first's id>"
//!   and the plan ends with the credits it will charge (one settlement's);
//! - **a pause made with `sophia-local pause`** is in the audit trail, and `queue status` says who
//!   paused; `audit list` shows each record's target; no audit JSON unless `--json`;
//! - **MongoDB down until the message is in the DLQ**: failing (with the DLQ named) while it lasts,
//!   then, with the traffic stopped, "needs a person" naming the last known cause, never healthy; `dlq list` gives the reason, `interview show` the
//!   redrive, the plan the credits;
//! - **OpenAI 503** (`sophia-local fault openai unavailable`): waiting for a retry with its due
//!   time, the kind on `queue status`, `report late` not on time;
//! - **a report out of attempts**: `report late` names it (never on time), `report failures`,
//!   `interview show` and `dlq list` say out of attempts in the same words.

use sophia_contracts::InterviewId;
use sophia_credits::seed;

use crate::support::drill::{Drill, LIMIT, ops, verdict_line};
use harness::wait_until;

/// docs/runbook.md, "interview-completed DLQ not empty": the source queue is empty, the DLQ is
/// not, and no batch failed. The first command must not say healthy.
#[tokio::test(flavor = "multi_thread")]
async fn a_dlq_that_is_not_empty_while_its_source_is_is_not_healthy() {
    let p = Drill::start(30, None).await;
    let (_org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    let other = seed::create_organization(&p.store(), "Another organization").await.unwrap();
    p.send_interview_message(&format!(
        r#"{{"interviewId":"{id}","organizationId":"{other}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":600}}"#
    ))
    .await;
    wait_until("the message reaches the DLQ and the source is empty", LIMIT, || async {
        let f = p.function("interview-completed").await;
        f.dlq_visible == Some(1) && f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;

    let out = ops(&p, &["queue", "status", "interview-completed"]).await;
    assert_eq!(out.exit_code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        verdict_line(&out).starts_with("verdict: needs a person: 1 message(s) in the DLQ, each needs a person"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("healthy"), "{}", out.stdout);
    assert!(out.stdout.contains("next: sophia-ops dlq list interview-completed\n"), "{}", out.stdout);
    assert!(!out.stderr.contains("WARN") && !out.stderr.contains("{\""), "quiet: {}", out.stderr);

    // The command `next:` names, as the runbook runs it (`dlq list` has no window option: the
    // reason of a message that can never succeed is the consumer's own, kept on the message).
    let listing = ops(&p, &["dlq", "list", "interview-completed"]).await;
    assert_eq!(listing.exit_code, 0, "{}{}", listing.stdout, listing.stderr);
    assert!(
        listing.stdout.contains(&format!(
            "  sent to the DLQ by its consumer on delivery, no retry: it can never succeed: interview {id} belongs to organization"
        )),
        "{}",
        listing.stdout
    );
    assert!(listing.stdout.contains("  next: sophia-ops dlq show interview-completed "), "{}", listing.stdout);

    let late = ops(&p, &["report", "late"]).await;
    let first = late.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("reports are late: interview-completed needs a person: 1 message(s) in the DLQ"),
        "{}",
        late.stdout
    );
    assert!(
        late.stdout.contains("not settled: its interview.completed is in the interview-completed DLQ: message "),
        "{}",
        late.stdout
    );

    let unsettled = ops(&p, &["interview", "unsettled"]).await;
    assert!(
        unsettled.stdout.contains("its interview.completed is in the interview-completed DLQ: message ")
            && unsettled.stdout.contains("belongs to organization"),
        "the reason on the interview's line: {}",
        unsettled.stdout
    );
    p.stop().await;
}

/// docs/runbook.md, "Reports failing", `insufficient_quota`: each delivery spends an attempt, so
/// the first command flags it as needing a person now, with when the next delivery is due.
#[tokio::test(flavor = "multi_thread")]
async fn openai_quota_is_flagged_as_needing_a_person_now_by_every_command() {
    let p = Drill::start(60, None).await;
    p.control.openai_fault("quota", None, None).await.expect("fault openai quota");
    let (org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    p.publish_completed(org, &ids).await;
    wait_until("the first attempt fails with quota", LIMIT, || async {
        p.report(id).await.is_some_and(|r| r.get_str("errorKind") == Ok("quota"))
    })
    .await;

    let failures = ops(&p, &["report", "failures"]).await;
    assert_eq!(failures.exit_code, 0, "{}{}", failures.stdout, failures.stderr);
    assert!(failures.stdout.contains(&format!("{:<19}  {id}", "NEEDS YOU")), "{}", failures.stdout);
    assert!(
        failures.stdout.contains("NEEDS YOU NOW: quota spends one of its 3 attempts on every delivery (1 spent)")
            && failures.stdout.contains("the next delivery is due by "),
        "{}",
        failures.stdout
    );
    assert!(
        failures.stdout.contains(&format!("  next: sophia-ops interview show {id} (lastError")),
        "{}",
        failures.stdout
    );
    // The stage's visibility timeout (60 s here), not the declared 30 min.
    assert!(failures.stdout.contains("visibility timeout (1 min)"), "{}", failures.stdout);

    let shown = ops(&p, &["interview", "show", &id.to_string(), "--dlq-scan", "0"]).await;
    assert!(shown.stdout.contains("  now: NEEDS YOU NOW: quota spends one of its 3 attempts"), "{}", shown.stdout);
    assert!(shown.stdout.contains("  status FAILED  attempts 1 of 3  errorKind quota"), "{}", shown.stdout);

    let status = ops(&p, &["queue", "status", "report-generate"]).await;
    let verdict = verdict_line(&status);
    assert!(verdict.starts_with("verdict: failing: ") && verdict.contains("quota (1)"), "{}", status.stdout);
    let late = ops(&p, &["report", "late"]).await;
    assert!(!late.stdout.contains("on time"), "{}", late.stdout);
    assert!(late.stdout.starts_with("reports are late: report-generate is failing: "), "{}", late.stdout);

    p.control.openai_fault("none", None, None).await.expect("fault openai none");
    p.stop().await;
}

/// The interview-completed DLQ's URL of the runner.
fn dlq_url(p: &Drill) -> String {
    p.runner.queues.interview_completed.dlq.url.clone()
}

/// docs/runbook.md, "interview-completed DLQ not empty": the redrive plan applies its messages
/// in order.
#[tokio::test(flavor = "multi_thread")]
async fn a_redrive_plan_settles_an_interview_once_and_totals_the_credits() {
    let p = Drill::start(30, None).await;
    let (org, ids) = p.completed_interviews(1).await;
    let id: InterviewId = ids[0];
    let body = format!(
        r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":600}}"#
    );
    for _ in 0..2 {
        p.runner
            .sqs
            .send_message()
            .queue_url(dlq_url(&p))
            .message_body(&body)
            .message_attributes("requestId", crate::support::ops::string_attr("drill"))
            .send()
            .await
            .expect("sent to the DLQ");
    }
    let plan = ops(&p, &["dlq", "redrive", "interview-completed", "--dry-run"]).await;
    assert_eq!(plan.exit_code, 0, "{}{}", plan.stdout, plan.stderr);
    let lines: Vec<&str> = plan.stdout.lines().filter(|l| l.contains(&format!("interview {id}: "))).collect();
    assert_eq!(lines.len(), 2, "{}", plan.stdout);
    assert!(lines[0].contains("settles: 10 credit(s) consumed"), "{}", plan.stdout);
    let first_id = lines[0].split("message ").nth(1).and_then(|r| r.split(':').next()).unwrap().to_owned();
    assert!(
        lines[1]
            .contains(&format!("already settled by {first_id} (earlier in this plan): acknowledged, nothing charged")),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("in total: 10 credit(s) charged (1 settlement(s))"), "{}", plan.stdout);
    p.stop().await;
}

/// docs/local.md, drill "a paused consumer": a pause made with `sophia-local pause` is audited,
/// and `queue status` says who paused; `audit list` names each record's target.
#[tokio::test(flavor = "multi_thread")]
async fn a_local_pause_is_audited_and_queue_status_says_who_paused() {
    let p = Drill::start(30, None).await;
    p.control.pause("report-generate").await.expect("sophia-local pause report-generate");
    let status = ops(&p, &["queue", "status", "report-generate"]).await;
    let verdict = verdict_line(&status);
    assert!(
        verdict.starts_with("verdict: stopped: the event source mapping ")
            && verdict.contains("is Disabled (USER_INITIATED), paused by ")
            && verdict.contains("(local-pause)"),
        "an empty queue whose mapping is paused is not healthy, and says who paused: {}",
        status.stdout
    );
    assert!(status.stdout.contains("next: sophia-ops queue resume report-generate"), "{}", status.stdout);

    let resumed = ops(&p, &["queue", "resume", "report-generate"]).await;
    assert_eq!(resumed.exit_code, 0, "{}{}", resumed.stdout, resumed.stderr);
    assert!(resumed.stderr.contains("audited: queue-resume report-generate -> done by "), "{}", resumed.stderr);
    assert!(!resumed.stderr.contains("{\"audit\""), "no JSON unless --json: {}", resumed.stderr);
    let audit = ops(&p, &["audit", "list"]).await;
    let line = |command: &str| audit.stdout.lines().find(|l| l.contains(command)).map(str::to_owned);
    assert!(line("queue-resume").is_some_and(|l| l.contains(" report-generate ")), "{}", audit.stdout);
    assert!(line("local-pause").is_some_and(|l| l.contains(" report-generate ")), "{}", audit.stdout);
    wait_until("queue status says healthy after the resume", LIMIT, || async {
        verdict_line(&ops(&p, &["queue", "status", "report-generate"]).await) == "verdict: healthy"
    })
    .await;
    p.stop().await;
}

/// docs/runbook.md, "interview-completed DLQ not empty" while MongoDB is still down: the source
/// is empty, the message is in the DLQ, the errors go on. The first command says failing (never
/// healthy) and what is left in the DLQ; after `fault mongo up`, a window without errors says the
/// DLQ still needs a person, and every command names where the message is and what to do.
#[tokio::test(flavor = "multi_thread")]
async fn mongo_down_until_the_dlq_is_failing_then_needs_a_person_never_healthy() {
    // 10 s of visibility: each failed delivery (about 5 s of server selection) comes back soon.
    let p = Drill::start(10, None).await;
    let (org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    p.control.mongo(sophia_local::control::MongoState::Down).await.expect("fault mongo down");
    p.publish_completed(org, &ids).await;
    wait_until("the message reaches the DLQ after its receives", LIMIT, || async {
        let f = p.function("interview-completed").await;
        f.dlq_visible == Some(1) && f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;

    let out = ops(&p, &["queue", "status", "interview-completed"]).await;
    let verdict = verdict_line(&out);
    assert!(
        verdict.starts_with("verdict: failing: the function returned an error: batch setup failed"),
        "{}",
        out.stdout
    );
    assert!(verdict.contains("; also 1 message(s) in the DLQ"), "{}", out.stdout);
    assert!(!out.stdout.contains("healthy"), "{}", out.stdout);
    let late = ops(&p, &["report", "late"]).await;
    assert!(late.stdout.starts_with("reports are late: interview-completed is failing: "), "{}", late.stdout);
    let listing = ops(&p, &["dlq", "list", "interview-completed"]).await;
    assert!(
        listing.stdout.contains("  reason: its consumer failed it on each of its ")
            && listing.stdout.contains("the function's errors now: the function returned an error: batch setup failed"),
        "the reason where the operator reads it: {}",
        listing.stdout
    );
    assert!(
        listing.stdout.contains("  next: sophia-ops dlq show interview-completed "),
        "while the function still fails, the next step is a look, not a redrive: {}",
        listing.stdout
    );
    // The traffic has stopped (the message is in the DLQ), MongoDB is still down for the
    // functions: a quiet window has no error, and the verdict keeps naming the last known cause.
    wait_until("a quiet window still names the last known cause", LIMIT, || async {
        let out = ops(&p, &["queue", "status", "interview-completed", "--window", "2s"]).await;
        let verdict = verdict_line(&out);
        verdict.starts_with("verdict: needs a person: 1 message(s) in the DLQ")
            && verdict.contains("; the last known cause: the function returned an error: batch setup failed")
            && out.stdout.contains("  MongoDB:    reachable now\n")
    })
    .await;

    p.control.mongo(sophia_local::control::MongoState::Up).await.expect("fault mongo up");
    wait_until("a window without errors: the DLQ still needs a person", LIMIT, || async {
        let out = ops(&p, &["queue", "status", "interview-completed", "--window", "2s"]).await;
        verdict_line(&out).starts_with("verdict: needs a person: 1 message(s) in the DLQ")
    })
    .await;
    let shown = ops(&p, &["interview", "show", &id.to_string()]).await;
    assert!(
        shown
            .stdout
            .contains("reads valid: once what failed it is fixed (queue status interview-completed), redrive it")
            && shown.stdout.contains("  sophia-ops dlq redrive interview-completed\n"),
        "a MongoDB-caused DLQ message is redriven, not deleted and republished: {}",
        shown.stdout
    );
    assert!(
        shown
            .stdout
            .contains("  now: not settled: its interview.completed is in the interview-completed DLQ: message "),
        "where the message is, in the words of report late and interview unsettled: {}",
        shown.stdout
    );
    let plan = ops(&p, &["dlq", "redrive", "interview-completed", "--dry-run"]).await;
    assert!(plan.stdout.contains("in total: 10 credit(s) charged (1 settlement(s))"), "{}", plan.stdout);
    p.stop().await;
}

/// docs/local.md, "Reports failing" with `fault openai unavailable` (HTTP 503): the attempt is
/// given back and the report waits for a retry; `queue status report-generate` names the kind,
/// and `report late` does not say on time.
#[tokio::test(flavor = "multi_thread")]
async fn openai_503_is_a_retry_named_by_its_kind_and_never_on_time() {
    let p = Drill::start(30, None).await;
    p.control.openai_fault("unavailable", None, None).await.expect("fault openai unavailable");
    let (org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    p.publish_completed(org, &ids).await;
    wait_until("the first attempt fails with server_error", LIMIT, || async {
        p.report(id).await.is_some_and(|r| r.get_str("errorKind") == Ok("server_error"))
    })
    .await;
    let failures = ops(&p, &["report", "failures"]).await;
    assert!(failures.stdout.contains(": 0 need you, 1 waiting for a retry, 0 in flight"), "{}", failures.stdout);
    assert!(
        failures.stdout.contains("waiting for a retry after server_error (the provider or MongoDB away: its attempt given back, 0 spent): the next delivery is due by "),
        "{}",
        failures.stdout
    );
    let status = ops(&p, &["queue", "status", "report-generate"]).await;
    assert!(
        verdict_line(&status).starts_with("verdict: failing: report attempts failed by error kind: server_error (1)"),
        "{}",
        status.stdout
    );
    let late = ops(&p, &["report", "late"]).await;
    assert!(late.stdout.starts_with("reports are late: report-generate is failing: "), "{}", late.stdout);
    p.control.openai_fault("none", None, None).await.expect("fault openai none");
    p.stop().await;
}

/// docs/runbook.md, "Reports failing", a report out of attempts (the key refused three times):
/// `report late` never says on time while it needs a person, `report failures` and `interview
/// show` say out of attempts from the same function, and `queue status report-generate` names the
/// DLQ and the stranded report.
#[tokio::test(flavor = "multi_thread")]
async fn a_report_out_of_attempts_needs_a_person_in_every_command() {
    let p = Drill::start(3, None).await;
    let (org, ids) = p.completed_interviews(1).await;
    let id = ids[0];
    p.control.openai_fault("unauthorized", None, None).await.expect("fault openai unauthorized");
    p.publish_completed(org, &ids).await;
    wait_until("the report message reaches the DLQ", LIMIT, || async {
        p.function("report-generate").await.dlq_visible == Some(1)
    })
    .await;
    p.control.openai_fault("none", None, None).await.expect("fault openai none");

    let late = ops(&p, &["report", "late"]).await;
    let first = late.stdout.lines().next().unwrap();
    assert!(first.starts_with("reports are late: report-generate is failing: "), "{}", late.stdout);
    assert!(
        first.contains("also 1 message(s) in the DLQ") && first.contains("1 report(s) need a person"),
        "{}",
        late.stdout
    );
    assert!(late.stdout.contains("    1 report FAILED after credentials_refused: NEEDS YOU"), "{}", late.stdout);
    let failures = ops(&p, &["report", "failures"]).await;
    assert!(failures.stdout.contains("      out of attempts (3 of 3): nothing retries it"), "{}", failures.stdout);
    let shown = ops(&p, &["interview", "show", &id.to_string(), "--dlq-scan", "0"]).await;
    assert!(shown.stdout.contains("  now: out of attempts (3 of 3): nothing retries it"), "{}", shown.stdout);
    let dlq = ops(&p, &["dlq", "list", "report-generate"]).await;
    assert!(dlq.stdout.contains("its report: out of attempts (3 of 3)"), "{}", dlq.stdout);
    p.stop().await;
}
