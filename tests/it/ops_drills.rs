//! The on-call drills of docs/runbook.md as tests: each incident runs on the local pipeline and
//! asserts what the runbook's first command for it prints, then follows the runbook's next
//! steps to the end.
//!
//! - **An OpenAI outage** (runbook "Reports failing"): `report failures` lists the report as
//!   waiting for a retry (not FAILED, nothing needs the operator), with the retry schedule from
//!   the consumer's own values; `interview show` says the same; after recovery the report
//!   completes and `report failures` lists nothing. The consumer runs with the report queue's
//!   declared policy, time scaled by 60 (`Backoff::time_scale`, what `SOPHIA_RETRY_TIME_SCALE`
//!   sets: a 30-60 s backoff is 1 s, the 10 min requeue delay 10 s), through fauxqs and the
//!   event-source-mapping emulator.
//! - **A message for the wrong organization** (runbook "A message that can never succeed"): the
//!   whole local pipeline (`sophia-local`'s runner); the consumer sends it to the DLQ on its first
//!   delivery, no retry; `dlq list interview-completed` names why; `interview show` gives the
//!   republish command with the interview's own organization and facts; republished and the DLQ
//!   message deleted, the interview is charged once.
//! - **An invalid message** (runbook "Invalid messages dropped"): the whole local pipeline; the
//!   drop's reason names every invalid field; `interview unsettled` (no `--older-than`) lists
//!   the interview minutes old while `--older-than 1h` hides it; `interview show` prints the
//!   stored `completedAt` and `durationSeconds` and the command that republishes with them;
//!   run as printed, it settles the interview with those facts.

use crate::support::drill::{Drill, LIMIT};
use crate::support::ops as ops_support;
use crate::support::scaled_reports::{ScaledReports, scaled_options};
use harness::wait_until;

use std::time::{Duration, Instant};

use bson::{Bson, Document};
use harness::logs::LogCapture;
use harness::mongo::reports_of;
use ops_support::ok;
use sophia_contracts::Timestamp;
use sophia_credits::{invariants, seed};
use sophia_openai_fake::Behaviour;
use sophia_ops::Outcome;
use sophia_ops::report_failure::FailureState;

#[tokio::test]
async fn openai_outage_report_failures_shows_waiting_for_a_retry_then_nothing_after_recovery() {
    // The report queue's declared policy (backoffs, then a delayed copy), scaled.
    let ScaledReports { world: w, interview, fake, reports, .. } =
        ScaledReports::during_an_outage(scaled_options()).await;
    let started = Instant::now();
    while reports_of(&w.mongo.db, interview)
        .await
        .first()
        .and_then(|d| d.get_str("errorKind").ok().map(str::to_owned))
        .is_none()
    {
        assert!(started.elapsed() < LIMIT, "no failed attempt");
        let _ = reports.poll_once(Duration::from_secs(1)).await.expect("poll");
    }

    // The runbook's first command ("Reports failing").
    let ctx = w.ops_context();
    let Outcome::ReportFailures(listing) = ok(&ctx, &["report", "failures", "--since", "1h"]).await else { panic!() };
    let text = listing.human();
    assert_eq!(listing.reports.len(), 1, "{text}");
    assert_eq!(listing.reports[0].state, FailureState::WaitingForRetry, "{text}");
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("1 report(s) with failed attempts, not COMPLETED, in the last ")
            && header.ends_with(": 0 need you, 1 waiting for a retry, 0 in flight"),
        "{text}"
    );
    assert!(text.contains(&format!("waiting for a retry  {interview}")), "{text}");
    assert!(text.contains("errorKind server_error  0 attempt(s) of 3"), "{text}");
    // When the next delivery is due, from the queue's own visibility timeout and the schedule.
    assert!(text.contains("      waiting for a retry after server_error (the provider or MongoDB away: its attempt given back, 0 spent): the next delivery is due by "), "{text}");
    assert!(!text.contains("FAILED"), "an outage's report is not shown as failed: {text}");
    // The stage's schedule (this process does not scale time; the consumer above does).
    assert!(
        text.contains("retries: rate_limited, server_error, timeout, database gives its attempt back; visible again 30 s-1 min after receive 1, 1-2 min after receive 2")
            && text.contains("a copy is sent delayed 10 min"),
        "the schedule is the consumer's: {text}"
    );
    let stored = reports_of(&w.mongo.db, interview).await.remove(0);
    assert_eq!(stored.get_bool("waitingForRetry"), Ok(true), "the stored report says it too: {stored}");
    let Outcome::InterviewShow(shown) = ok(&ctx, &["interview", "show", &interview.to_string(), "--no-receive"]).await
    else {
        panic!()
    };
    // The same state as `report failures`, from the same function.
    assert!(
        shown.human().contains("  now: waiting for a retry after server_error (the provider or MongoDB away"),
        "{}",
        shown.human()
    );

    // OpenAI is back: the next delivery completes the report.
    fake.set_fault(None);
    fake.push(Behaviour::Report);
    let started = Instant::now();
    while reports_of(&w.mongo.db, interview).await[0].get_str("status") != Ok("COMPLETED") {
        assert!(started.elapsed() < LIMIT, "the report did not complete after recovery");
        let _ = reports.poll_once(Duration::from_secs(1)).await.expect("poll");
    }
    let Outcome::ReportFailures(after) = ok(&ctx, &["report", "failures", "--since", "1h"]).await else { panic!() };
    assert!(after.reports.is_empty(), "a completed report leaves the list: {}", after.human());
    assert!(after.human().starts_with("0 report(s) with failed attempts"), "{}", after.human());
    let stored = reports_of(&w.mongo.db, interview).await.remove(0);
    assert_eq!(stored.get("waitingForRetry"), None, "{stored}");
}

fn later_than(interview: &Document, field: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    match interview.get(field) {
        Some(Bson::DateTime(t)) => Some(t.to_chrono()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_for_the_wrong_organization_reaches_the_dlq_on_its_first_delivery_and_the_runbook_ends_it() {
    let p = Drill::start(30, None).await;
    let completed_at: Timestamp = "2026-12-02T17:30:00Z".parse().unwrap();
    let (org, ids) = p.interviews_ended_at(1, completed_at).await;
    let id = ids[0];
    let other = seed::create_organization(&p.store(), "Another organization").await.unwrap();
    p.send_interview_message(&format!(
        r#"{{"interviewId":"{id}","organizationId":"{other}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":600}}"#
    ))
    .await;
    wait_until("the message reaches the DLQ", LIMIT, || async {
        p.function("interview-completed").await.dlq_visible == Some(1)
    })
    .await;
    let f = p.function("interview-completed").await;
    assert_eq!(
        (f.item_failures, f.batch_failures),
        (0, 0),
        "no retry: sent to the DLQ on its first delivery: {}",
        f.line()
    );

    // The runbook's first command ("interview-completed DLQ not empty").
    let Outcome::DlqList(listing) = ok(&p.ops, &["dlq", "list", "interview-completed"]).await else { panic!() };
    let text = listing.human();
    assert_eq!(listing.messages.len(), 1, "{text}");
    assert!(
        text.contains("sent to the DLQ by its consumer on delivery, no retry: it can never succeed")
            && text.contains(&format!("belongs to organization {org}, not to {other} as the message says")),
        "the first command names the cause: {text}"
    );
    let message_id = listing.messages[0].message_id.clone();
    assert!(listing.messages[0].attributes.contains_key("sourceMessageId"), "{text}");

    // Its next step: `interview show` gives the command with the interview's own organization.
    let Outcome::InterviewShow(shown) = ok(&p.ops, &["interview", "show", &id.to_string()]).await else { panic!() };
    let command = shown.republish_command().expect("a completed, unsettled interview has one");
    // The local pipeline has no stage: the command runs as printed.
    assert_eq!(
        command,
        format!("sophia-ops publish completed {id} {org} --duration-seconds 600 --completed-at 2026-12-02T17:30:00Z")
    );
    let text = shown.human();
    assert!(
        text.contains("can never succeed") && text.contains("delete it, then publish it again with the stored facts"),
        "{text}"
    );
    assert!(text.contains(&format!("  sophia-ops dlq delete interview-completed {message_id}\n")), "{text}");
    let Outcome::DlqDelete(_) = ok(&p.ops, &["dlq", "delete", "interview-completed", &message_id]).await else {
        panic!()
    };
    let Outcome::Publish(_) = p.run_printed(&command).await else { panic!() };
    wait_until("the interview settles", LIMIT, || async { !p.settle_lines(id).await.is_empty() }).await;
    let settled = p.interview(id).await;
    assert!(later_than(&settled, "settledAt").is_some(), "{settled}");
    assert_eq!(p.settle_lines(id).await.len(), 1, "charged once");
    assert_eq!(p.function("interview-completed").await.dlq_visible, Some(0));
    let violations = invariants::check_organization(&p.store(), org.oid()).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    p.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_message_names_every_bad_field_and_is_republished_with_the_stored_facts() {
    let logs = LogCapture::global();
    let p = Drill::start(30, None).await;
    let completed_at: Timestamp = "2026-12-02T17:30:00Z".parse().unwrap();
    let (org, ids) = p.interviews_ended_at(1, completed_at).await;
    let id = ids[0];
    // A producer bug: two fields wrong at once.
    p.send_interview_message(&format!(
        r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"yesterday","durationSeconds":-5}}"#
    ))
    .await;
    wait_until("the invalid message is consumed", LIMIT, || async {
        let f = p.function("interview-completed").await;
        f.deleted >= 1 && f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;
    let dropped = logs
        .lines()
        .into_iter()
        .find(|l| {
            l["message"] == "invalid message dropped"
                && l["bodyPreview"].as_str().is_some_and(|b| b.contains(&id.to_string()))
        })
        .expect("the drop is logged with a preview naming the interview");
    let reason = dropped["reason"].as_str().unwrap();
    assert!(
        reason.contains("completedAt: expected") && reason.contains("durationSeconds: expected"),
        "every field: {reason}"
    );

    // The runbook's first command ("Invalid messages dropped"): no --older-than.
    let Outcome::InterviewUnsettled(listing) = ok(&p.ops, &["interview", "unsettled"]).await else { panic!() };
    assert!(listing.human().contains(&id.to_string()), "{}", listing.human());
    // Why: its message is nowhere any more (the consumer dropped it), said on the interview's line.
    assert!(
        listing.human().contains(
            "in neither interview-completed nor its DLQ: never published, lost, or dropped by the consumer as invalid"
        ),
        "{}",
        listing.human()
    );
    let Outcome::InterviewUnsettled(older) = ok(&p.ops, &["interview", "unsettled", "--older-than", "1h"]).await else {
        panic!()
    };
    assert!(
        !older.human().contains(&id.to_string()),
        "--older-than counts from the interview's creation: {}",
        older.human()
    );

    // Its next step: the stored facts and the command that republishes with them.
    let Outcome::InterviewShow(shown) = ok(&p.ops, &["interview", "show", &id.to_string()]).await else { panic!() };
    let text = shown.human();
    assert!(text.contains("completedAt 2026-12-02T17:30:00Z  durationSeconds 600"), "{text}");
    assert!(
        text.contains("  now: not settled: its interview.completed is in neither interview-completed nor its DLQ"),
        "{text}"
    );
    let command = shown.republish_command().expect("a completed, unsettled interview has one");
    assert!(text.contains(&command), "{text}");
    let Outcome::Publish(_) = p.run_printed(&command).await else { panic!() };
    wait_until("the interview settles", LIMIT, || async { !p.settle_lines(id).await.is_empty() }).await;
    let settled = p.interview(id).await;
    assert_eq!(p.settle_lines(id).await.len(), 1, "charged once: {settled}");
    let credits = settled.get_document("credits").unwrap();
    assert_eq!(sophia_documents::int::at(credits, "consumed"), Some(Ok(10)));
    // Retention counts from the message's completion time: the stored one, not the republish's.
    let retention = completed_at.as_datetime() + chrono::Duration::days(sophia_credits::settlement::RETENTION_DAYS);
    assert_eq!(later_than(&settled, "retentionExpiresAt"), Some(retention), "{settled}");
    let violations = invariants::check_organization(&p.store(), org.oid()).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    p.stop().await;
}
