//! Each alarm is diagnosable from its first command, through the local pipeline (fauxqs queues
//! with a 1 s visibility timeout, the event-source-mapping emulator invoking the real functions,
//! nx-27017, the OpenAI fake):
//! - invalid messages dropped: a dropped `interview.completed` leaves its interview unsettled;
//!   `invariants check` (settled interviews only) still passes, `interview unsettled` lists it;
//! - reports failing: a refused OpenAI key fails the first attempt; `report failures` lists the
//!   report with its interview, `credentials_refused` and the attempt count, no id needed;
//! - oldest message too old: `queue status` shows the depth, says locally that there is no event
//!   source mapping API and no CloudWatch, and decides only what it can.

use crate::support::ops as ops_support;

use std::time::Duration;

use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::sqs::send;
use ops_support::ok;
use sophia_contracts::InterviewId;
use sophia_openai_fake::{ApiError, Behaviour, FakeOpenAi};
use sophia_ops::Outcome;
use sophia_ops::listing::FailuresListing;
use sophia_ops::status::Verdict;

#[tokio::test]
async fn a_dropped_interview_message_shows_in_interview_unsettled_not_in_invariants_check() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let dropped = w.reserved_interview(org, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    // A producer bug: a negative duration. The consumer drops it (RecordsDroppedInvalid).
    let body = format!(
        r#"{{"interviewId":"{dropped}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":-5}}"#
    );
    send(sqs, &queues.interview_completed.source.url, &body).await;
    let interviews = interview_esm(sqs, queues, 1, w.settings());
    poll_until(&interviews, Duration::from_secs(20), |runs| runs.iter().any(|r| r.deleted == 1)).await;
    assert!(!w.settled(dropped).await);

    let ctx = w.ops_context();
    let Outcome::InvariantsCheck(check) = ok(&ctx, &["invariants", "check"]).await else { panic!() };
    assert!(check.ok, "the old first command cannot see a drop: {check:?}");
    let Outcome::InterviewUnsettled(listing) = ok(&ctx, &["interview", "unsettled"]).await else { panic!() };
    let found: Vec<_> = listing.interviews.iter().filter(|i| i.interview_id == dropped.to_string()).collect();
    assert_eq!(found.len(), 1, "{listing:#?}");
    assert_eq!(found[0].credits_reserved, Some(10));
    assert_eq!(found[0].organization_id.as_deref(), Some(org.to_string().as_str()));
    assert!(listing.human().contains(&dropped.to_string()));
    // Its next command, without receiving anything from the DLQs: the allocation's credits shown.
    let Outcome::InterviewShow(shown) = ok(&ctx, &["interview", "show", &dropped.to_string(), "--no-receive"]).await
    else {
        panic!()
    };
    assert_eq!(shown.settlement.allocations.iter().map(|a| a.amount).collect::<Vec<_>>(), [Some(10)]);
    assert!(shown.human().contains(" amount 10"), "{}", shown.human());
    assert!(shown.dlq.searched.values().all(|v| v.contains("not searched")), "{:?}", shown.dlq.searched);
    let Outcome::InterviewUnsettled(other) =
        ok(&ctx, &["interview", "unsettled", "--org", &bson::oid::ObjectId::new().to_hex()]).await
    else {
        panic!()
    };
    assert!(other.interviews.is_empty(), "scoped to the organization");
}

/// One reserved interview's `report.generate` through the report consumer while OpenAI answers
/// `error` (`times` times), until a run fails; then what `report failures` lists.
async fn report_failures_after_a_failed_run(error: ApiError, times: usize) -> (InterviewId, FailuresListing) {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    for _ in 0..times {
        fake.push(Behaviour::Error(error.clone()));
    }
    let reports = ops_support::report_mapping(&w, &fake);
    send(
        sqs,
        &queues.report_generate.source.url,
        &format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#),
    )
    .await;
    poll_until(&reports, Duration::from_secs(20), |runs| runs.iter().any(|r| !r.failed_ids.is_empty())).await;
    let ctx = w.ops_context();
    let Outcome::ReportFailures(listing) = ok(&ctx, &["report", "failures", "--since", "1h"]).await else { panic!() };
    (interview, listing)
}

#[tokio::test]
async fn report_failures_lists_a_refused_key_from_its_first_attempt_without_an_id() {
    let (interview, listing) = report_failures_after_a_failed_run(ApiError::invalid_api_key(), 2).await;
    assert_eq!(listing.reports.len(), 1, "{listing:#?}");
    let r = &listing.reports[0];
    assert_eq!(r.interview_id, interview.to_string());
    assert_eq!(r.error_kind.as_deref(), Some("credentials_refused"));
    assert_eq!(r.attempts, Some(1), "listed from the first attempt");
    assert_eq!(listing.by_kind.get("credentials_refused"), Some(&1));
    assert!(listing.human().contains("docs/runbook.md#error-kinds"), "{}", listing.human());
}

#[tokio::test]
async fn report_failures_lists_a_report_waiting_out_an_outage_whose_attempt_was_given_back() {
    let (interview, listing) = report_failures_after_a_failed_run(ApiError::server_error(), 4).await;
    assert_eq!(listing.reports.len(), 1, "an outage's reports are listed although no attempt was spent: {listing:#?}");
    let r = &listing.reports[0];
    assert_eq!(r.interview_id, interview.to_string());
    assert_eq!(r.error_kind.as_deref(), Some("server_error"));
    assert_eq!(r.attempts, Some(0), "the transient failure gave its attempt back");
    assert!(r.transient_failures.unwrap_or(0) >= 1, "{r:#?}");
    assert!(listing.human().contains("transient failure(s)"), "{}", listing.human());
}

#[tokio::test]
async fn queue_status_locally_shows_depth_and_says_what_it_cannot_see() {
    let w = World::fast(1).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.queue_context();
    let Outcome::QueueStatus(empty) = ok(&ctx, &["queue", "status", "interview-completed"]).await else { panic!() };
    assert_eq!(empty.verdict, Verdict::Healthy, "{empty:#?}");
    for _ in 0..3 {
        send(sqs, &queues.interview_completed.source.url, "{}").await;
    }
    let Outcome::QueueStatus(s) = ok(&ctx, &["queue", "status", "interview-completed"]).await else { panic!() };
    assert_eq!(s.visible, Some(3));
    assert_eq!(s.dlq_visible, Some(0));
    assert_eq!(s.retention_seconds, Some(345_600), "the declared 4 days");
    assert_eq!(
        s.verdict,
        Verdict::Undecided,
        "without the runner's control channel there is no mapping state or metrics: {s:#?}"
    );
    let text = s.human();
    // Without the local runner's control channel (no `sophia-local up` here) it says where the
    // mapping state and the function's metrics would come from.
    assert!(text.contains("mapping:    local: no control channel of the local runner"), "{text}");
    assert!(text.contains("function:   local: no function metrics without the runner's control channel"), "{text}");
    assert!(text.contains("verdict: undecided"), "{text}");
    assert_eq!(ops_support::visible(sqs, &queues.interview_completed.source.url).await, 3, "nothing was received");
}
