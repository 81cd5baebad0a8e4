//! The drills of docs/local.md, through the local pipeline: the real runner (fauxqs, nx-27017,
//! the functions' handler code, the event-source-mapping emulator) and its control channel, driven
//! over HTTP with the client `sophia-local fault|pause|resume|status` uses, from the env file the
//! runner writes.
//!
//! - MongoDB down: the settlement fails and is retried, nothing is lost or charged twice, and it
//!   settles after `fault mongo up`;
//! - a paused consumer: its queue grows while nothing receives, and drains on `resume`;
//! - OpenAI rate limited: each report attempt fails with `rate_limited` and is retried, and the
//!   report completes after `fault openai none` (needs the offline endpoint's fault interface,
//!   `PUT /__sophia/fault` of tools/openai-fake);
//! - the channel itself: its token, the functions it knows, and no OpenAI fault with a real key.

use crate::support::drill::{Drill, LIMIT, RESERVED};
use bson::doc;
use harness::mongo::int;
use harness::wait_until;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::invariants;
use sophia_local::control::{ControlClient, MongoState};

/// docs/local.md, drill "interview-completed DLQ not empty" / "Function errors", first half:
/// MongoDB down for the functions -> the settlement fails and its message stays in the queue
/// (retried, not in the DLQ, nothing charged); `fault mongo up` -> it settles once, the
/// invariants hold.
#[tokio::test(flavor = "multi_thread")]
async fn mongo_down_fails_and_retries_the_settlement_without_loss_then_it_settles_after_up() {
    // 10 s of visibility: a failed delivery (about 5 s of server selection) comes back after it.
    let drill = Drill::start(10, None).await;
    let (org, ids) = drill.completed_interviews(1).await;
    let id = ids[0];

    drill.control.mongo(MongoState::Down).await.expect("fault mongo down");
    let status = drill.control.status().await.unwrap();
    assert!(status.mongo.down, "{status}");
    assert_ne!(status.mongo.functions_uri, status.mongo.direct_uri, "the functions go through the proxy");
    drill.publish_completed(org, &ids).await;

    wait_until("a failed delivery of interview-completed", LIMIT, || async {
        let f = drill.function("interview-completed").await;
        f.item_failures + f.batch_failures >= 1
    })
    .await;
    // The operator's view (MONGODB_URI of the env file) still reads MongoDB: nothing was settled
    // or charged, and the message waits for its next delivery instead of being lost.
    assert!(!drill.settled(id).await, "not settled while MongoDB is down");
    assert!(drill.settle_lines(id).await.is_empty(), "nothing charged while MongoDB is down");
    let f = drill.function("interview-completed").await;
    assert_eq!(f.visible.unwrap_or(0) + f.in_flight.unwrap_or(0), 1, "the message is kept for a retry: {}", f.line());
    assert_eq!(f.dlq_visible, Some(0), "not in the DLQ yet: {}", f.line());
    let status = drill.control.status().await.unwrap();
    assert!(status.mongo.refused + status.mongo.cut >= 1, "the proxy turned the functions away: {status}");

    drill.control.mongo(MongoState::Up).await.expect("fault mongo up");
    // nx-27017 does not isolate transactions: settledAt and the ledger line may show one after
    // the other; wait for both before counting.
    wait_until("the interview settles after `fault mongo up`", LIMIT, || async {
        drill.settled(id).await && !drill.settle_lines(id).await.is_empty()
    })
    .await;
    assert_eq!(drill.settle_lines(id).await, vec![RESERVED], "charged exactly once");
    let interview = drill.interview(id).await;
    let consumed = int(&interview, "credits.consumed");
    assert_eq!(consumed, Some(RESERVED), "{interview}");
    let violations = invariants::check_organization(&drill.store(), org.oid()).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    drill.drained_without_dlq("interview-completed").await;
    drill.stop().await;
}

/// docs/local.md, drill "Oldest message too old" (and "Function throttled"): `pause` stops the
/// mapping, the queue grows while nothing is invoked; `resume` drains it and every interview
/// settles.
#[tokio::test(flavor = "multi_thread")]
async fn a_paused_consumer_lets_its_queue_grow_and_resume_drains_it() {
    let drill = Drill::start(30, None).await;
    let (org, ids) = drill.completed_interviews(3).await;

    drill.control.pause("interview-completed").await.expect("pause answers once the pollers are parked");
    let before = drill.function("interview-completed").await;
    assert!(before.paused, "{}", before.line());
    drill.publish_completed(org, &ids).await;

    wait_until("three messages wait in the paused queue", LIMIT, || async {
        drill.function("interview-completed").await.visible == Some(3)
    })
    .await;
    let paused = drill.function("interview-completed").await;
    assert_eq!(paused.invocations, before.invocations, "nothing is received while paused: {}", paused.line());
    assert_eq!(paused.in_flight, Some(0), "{}", paused.line());
    for id in &ids {
        assert!(!drill.settled(*id).await);
    }

    drill.control.resume("interview-completed").await.expect("resume");
    for id in &ids {
        wait_until("each interview settles after resume", LIMIT, || drill.settled(*id)).await;
    }
    wait_until("the queue is drained", LIMIT, || async {
        let f = drill.function("interview-completed").await;
        f.visible == Some(0) && f.in_flight == Some(0) && !f.paused
    })
    .await;
    let violations = invariants::check_organization(&drill.store(), org.oid()).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    drill.stop().await;
}

/// docs/local.md, drill "Reports failing": OpenAI answers 429 -> each report attempt fails with
/// `rate_limited` (the settlement is not affected) and the message is retried; `fault openai
/// none` -> the report completes within its three attempts, nothing in the DLQ.
///
/// Needs the offline endpoint's fault interface (`PUT /__sophia/fault`, tools/openai-fake).
#[tokio::test(flavor = "multi_thread")]
async fn openai_rate_limited_fails_report_attempts_then_the_report_completes_after_none() {
    let drill = Drill::start(10, None).await;
    let (org, ids) = drill.completed_interviews(1).await;
    let id = ids[0];
    drill.control.openai_fault("rate_limited", Some(1), None).await.expect("fault openai rate_limited");
    let status = drill.control.status().await.unwrap();
    assert_eq!(status.openai.fault.as_ref().and_then(|f| f["kind"].as_str()), Some("rate_limited"), "{status}");
    drill.publish_completed(org, &ids).await;

    wait_until("a report attempt fails with rate_limited", LIMIT, || async {
        drill.report(id).await.is_some_and(|r| r.get_str("errorKind") == Ok("rate_limited"))
    })
    .await;
    assert!(drill.settled(id).await, "the settlement does not wait for the report");
    let report = drill.report(id).await.unwrap();
    assert_ne!(report.get_str("status"), Ok("COMPLETED"), "{report}");

    drill.control.openai_fault("none", None, None).await.expect("fault openai none");
    wait_until("the report completes after `fault openai none`", LIMIT, || async {
        drill.report(id).await.is_some_and(|r| r.get_str("status") == Ok("COMPLETED"))
    })
    .await;
    let report = drill.report(id).await.unwrap();
    // Within its three attempts (an attempt that met an outage may be given back: at least the
    // one that completed counts).
    let attempts = int(&report, "attemptCount");
    assert!(attempts.is_some_and(|a| (1..=3).contains(&a)), "{report}");
    drill.drained_without_dlq("report-generate").await;
    drill.stop().await;
}

/// Every OpenAI fault kind of docs/local.md reaches the offline endpoint as its contract says
/// (`GET /__sophia/fault` reads back what was set), and `none` clears it.
///
/// Needs the offline endpoint's fault interface (`PUT /__sophia/fault`, tools/openai-fake).
#[tokio::test(flavor = "multi_thread")]
async fn every_openai_fault_kind_reaches_the_offline_endpoint_and_none_clears_it() {
    let drill = Drill::start(30, None).await;
    for (kind, retry, delay) in [
        ("unauthorized", None, None),
        ("rate_limited", Some(7), None),
        ("server_error", None, None),
        ("timeout", None, None),
        ("slow", None, Some(1500)),
        ("none", None, None),
    ] {
        drill.control.openai_fault(kind, retry, delay).await.unwrap_or_else(|e| panic!("{kind}: {e}"));
        let fault = drill.control.status().await.unwrap().openai.fault.expect("the endpoint reports its fault");
        assert_eq!(fault["kind"], kind, "{fault}");
        assert_eq!(fault.get("retryAfterSeconds").and_then(|v| v.as_u64()), retry, "{fault}");
        assert_eq!(fault.get("delayMs").and_then(|v| v.as_u64()), delay, "{fault}");
    }
    drill.stop().await;
}

/// The channel answers only with the run's token, names the functions it can pause, and with a
/// real OpenAI key says that no OpenAI fault can be injected.
#[tokio::test(flavor = "multi_thread")]
async fn the_control_channel_needs_its_token_and_says_what_it_cannot_do() {
    // A key: the runner would call OpenAI (nothing is published, so nothing is sent there).
    let drill = Drill::start(30, Some("sk-drill-not-a-real-key")).await;
    let env = sophia_local::envfile::read(&drill.env_file).unwrap();
    let url = &env[sophia_local::control::CONTROL_URL];
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!env.values().any(|v| v.contains("sk-drill")), "the key is never written to the env file");

    let stranger = ControlClient::new(url.clone(), "not-the-token");
    let refused = stranger.status().await.unwrap_err();
    assert!(refused.contains("control token"), "{refused}");
    let refused = stranger.mongo(MongoState::Down).await.unwrap_err();
    assert!(refused.contains("control token"), "{refused}");
    assert!(!drill.control.status().await.unwrap().mongo.down, "a refused request changes nothing");

    let unknown = drill.control.pause("interview-failed").await.unwrap_err();
    assert!(unknown.contains("interview-completed, report-generate"), "{unknown}");

    let real = drill.control.openai_fault("rate_limited", None, None).await.unwrap_err();
    assert!(real.contains("cannot inject an OpenAI fault") && real.contains("OPENAI_API_KEY"), "{real}");
    let status = drill.control.status().await.unwrap();
    assert!(!status.openai.injectable, "{status}");
    assert!(status.to_string().contains("no fault can be injected"), "{status}");
    drill.stop().await;
}

/// docs/local.md, drill "Invalid messages dropped": `sophia-local seed` then `publish-invalid`
/// -> the consumer drops the body (acknowledged, not retried, not in the DLQ) and the interview
/// keeps its reservation, unsettled; the right message then settles it.
#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_body_is_dropped_and_leaves_its_interview_reserved_until_the_right_message() {
    let drill = Drill::start(30, None).await;
    let seeded = drill.control.seed(1).await.expect("seed");
    assert_eq!(seeded.interview_ids.len(), 1);
    let id = InterviewId::new(bson::oid::ObjectId::parse_str(&seeded.interview_ids[0]).unwrap());
    let org = OrganizationId::new(bson::oid::ObjectId::parse_str(&seeded.organization_id).unwrap());
    let reserved = int(&drill.interview(id).await, "credits.reserved");
    assert_eq!(reserved, Some(seeded.reserved_per_interview));

    let sent = drill.control.send_invalid(&seeded.interview_ids[0], &seeded.organization_id).await.expect("sent");
    assert!(sent.contains("\"durationSeconds\":-5"), "{sent}");
    wait_until("the invalid message is consumed", LIMIT, || async {
        let f = drill.function("interview-completed").await;
        f.deleted >= 1 && f.visible == Some(0) && f.in_flight == Some(0)
    })
    .await;
    let f = drill.function("interview-completed").await;
    assert_eq!(
        (f.item_failures, f.batch_failures, f.dlq_visible),
        (0, 0, Some(0)),
        "dropped, not retried: {}",
        f.line()
    );
    assert!(!drill.settled(id).await, "nothing settled by an invalid body");
    assert!(drill.settle_lines(id).await.is_empty());

    // The fix: the message the producer should have sent.
    drill.publish_completed(org, &[id]).await;
    wait_until("the interview settles", LIMIT, || async {
        drill.settled(id).await && !drill.settle_lines(id).await.is_empty()
    })
    .await;
    assert_eq!(drill.settle_lines(id).await, vec![seeded.reserved_per_interview]);
    drill.stop().await;
}

/// docs/local.md, drill "report-generate DLQ not empty": OpenAI refuses the key (401) -> three
/// attempts fail with `credentials_refused` and the message reaches the report DLQ with its report
/// FAILED at three attempts (what a plain redrive would not change).
///
/// Needs the offline endpoint's fault interface (`PUT /__sophia/fault`, tools/openai-fake).
#[tokio::test(flavor = "multi_thread")]
async fn openai_unauthorized_fails_three_attempts_and_the_report_message_reaches_the_dlq() {
    let drill = Drill::start(3, None).await;
    let (org, ids) = drill.completed_interviews(1).await;
    let id = ids[0];
    drill.control.openai_fault("unauthorized", None, None).await.expect("fault openai unauthorized");
    drill.publish_completed(org, &ids).await;

    wait_until("the report message reaches the DLQ", LIMIT, || async {
        drill.function("report-generate").await.dlq_visible == Some(1)
    })
    .await;
    let report = drill.report(id).await.expect("a report document");
    assert_eq!(report.get_str("status"), Ok("FAILED"), "{report}");
    assert_eq!(report.get_str("errorKind"), Ok("credentials_refused"), "{report}");
    assert_eq!(int(&report, "attemptCount"), Some(3), "{report}");
    assert!(drill.settled(id).await, "the settlement does not depend on the report");
    drill.control.openai_fault("none", None, None).await.expect("fault openai none");
    drill.stop().await;
}
