//! Faults of SQS and OpenAI, and duplicate deliveries, through the local pipeline: fauxqs
//! queues with a 1 s visibility timeout (so receive counts and the DLQ move are real), the
//! event-source-mapping emulator invoking function instances built as the binaries' `main`
//! builds them, nx-27017 (or `SOPHIA_TEST_MONGODB_URI`), and the scripted OpenAI fake.
//!
//! Each case ends with the state of the queues and the database, and the five invariants.
//! In-process versions of some of these exist (`settlement_handler.rs`:
//! `a_failed_publish_fails_the_record_and_the_redelivery_publishes_it`; `report_generation.rs`:
//! `three_failures_leave_the_report_failed_and_every_one_is_returned_for_the_dlq`,
//! `an_expired_lease_is_reclaimed`); here the same guarantees are shown end to end over SQS.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use bson::{Bson, Document, doc};
use harness::World;
use harness::functions::{completed_instances, esm, fake_openai, interview_esm, poll_until, report_instance};
use harness::mongo::{int, reports_of};
use harness::sqs::{assert_queues_empty, completed_body, depth, drain, send};
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::model::OutboxStatus;
use sophia_local::esm::{EventSourceMapping, InvocationSummary};
use sophia_local::queues::QueueSet;
use sophia_openai_fake::{ApiError, Behaviour, FakeOpenAi};
use sophia_reports::store::MAX_ATTEMPTS;
use sophia_sqs_consumer::ConsumerOptions;

/// The client retries a 429 (not a quota error) or a 5xx itself, 3 times, inside one attempt.
const CLIENT_RETRIES: usize = sophia_reports::openai::MAX_RETRIES;

/// The report queue's mapping invoking one report-generate function (a 300 s lease) whose OpenAI
/// client times out after `timeout`.
fn report_mapping(w: &World, fake: &FakeOpenAi, timeout: Duration) -> EventSourceMapping {
    let instance =
        report_instance(w.settings(), fake_openai(fake, timeout), Duration::from_secs(300), ConsumerOptions::default());
    esm(&w.sqs, &w.queues.report_generate.source, "reportGenerate", instance)
}

/// A world with queues of a 1 s visibility timeout, an organization with `granted` credits and
/// one interview with `reserved` of them.
async fn setup(granted: i64, reserved: i64) -> (World, OrganizationId, InterviewId) {
    let w = World::fast(1).await;
    let org = w.org_with_credits(granted).await;
    let interview = w.reserved_interview(org, reserved).await;
    (w, org, interview)
}

fn report_body(interview: InterviewId, org: OrganizationId) -> String {
    format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#)
}

fn status(d: &Document) -> (&str, i64) {
    (d.get_str("status").unwrap_or("?"), int(d, "attemptCount").unwrap_or(-1))
}

/// `report.generate` cannot be sent after the settlement committed (the producer points at a
/// queue that does not exist): the settlement stays, the outbox entry stays PENDING with the
/// error, the record is a batch item failure and comes back; the redelivery (the function now
/// configured with the real queue) only flushes the outbox, once, and the report is generated.
#[tokio::test]
async fn a_failed_report_publish_after_commit_keeps_the_settlement_and_the_redelivery_flushes_the_outbox_once() {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    send(sqs, &queues.interview_completed.source.url, &completed_body(interview, org, 300)).await;

    let missing = format!("{}/000000000000/{}", harness::sqs_endpoint(), harness::unique("deleted-queue"));
    let broken = esm(
        sqs,
        &queues.interview_completed.source,
        "interviewCompleted",
        completed_instances(1, w.settings(), &missing),
    );
    let first = broken.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
    assert_eq!(
        (first.failed_ids.len(), first.deleted, first.batch_error.as_deref()),
        (1, 0, None),
        "a batch item failure: {first:?}"
    );
    assert!(w.settled(interview).await, "the settlement is committed");
    let entry = w.outbox(interview).await.unwrap();
    assert_eq!((entry.status, entry.attempts), (OutboxStatus::Pending, 1));
    assert!(entry.last_error.as_deref().is_some_and(|e| e.contains("SendMessage")), "{:?}", entry.last_error);
    assert_eq!(depth(sqs, &queues.report_generate.source.url).await, (0, 0), "nothing published");
    let ledger = w.ledger_of(interview).await;
    w.assert_invariants().await;

    let fixed = interview_esm(sqs, queues, 1, w.settings());
    let second =
        fixed.poll_once(Duration::from_secs(3)).await.unwrap().expect("redelivered after the visibility timeout");
    assert_eq!((second.failed_ids.len(), second.deleted), (0, 1), "{second:?}");
    assert_eq!(w.ledger_of(interview).await, ledger, "the redelivery settles nothing again");
    let entry = w.outbox(interview).await.unwrap();
    assert_eq!(entry.status, OutboxStatus::Published);
    assert_eq!(depth(sqs, &queues.report_generate.source.url).await, (1, 0), "flushed exactly once");

    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    let reports = report_mapping(&w, &fake, Duration::from_secs(10));
    let generated = reports.poll_once(Duration::from_secs(2)).await.unwrap().expect("report.generate delivered");
    assert_eq!(generated.deleted, 1);
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(status(&stored[0]), ("COMPLETED", 1));
    assert_eq!(fake.request_count(), 1);
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// Delivers `report.generate` through SQS until the message is in the report DLQ: three
/// receives, each a failed attempt whose error the handler returned (docs/design.md: the third
/// included), then SQS moves the message to the DLQ on the next receive.
async fn three_failed_attempts_then_the_dlq(
    sqs: &aws_sdk_sqs::Client,
    queues: &QueueSet,
    reports: &EventSourceMapping,
) -> Vec<InvocationSummary> {
    let runs = poll_until(reports, Duration::from_secs(30), |s| s.len() >= 3).await;
    let shape: Vec<(usize, usize)> = runs.iter().map(|r| (r.failed_ids.len(), r.deleted)).collect();
    assert_eq!(shape, [(1, 0), (1, 0), (1, 0)], "every attempt returned for retry: {runs:?}");
    assert!(reports.poll_once(Duration::from_secs(2)).await.unwrap().is_none(), "no fourth delivery");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (1, 0), "the message is in the report DLQ");
    assert_eq!(depth(sqs, &queues.report_generate.source.url).await, (0, 0));
    runs
}

async fn ops(ctx: &sophia_ops::Context, args: &[&str]) -> sophia_ops::Outcome {
    let cli = sophia_ops::parse(std::iter::once("sophia-ops").chain(args.iter().copied())).expect("command line");
    sophia_ops::execute(&cli.command, ctx).await.expect("sophia-ops")
}

/// One failure mode end to end: the fake answers every call with `answers` (in order), three
/// receives run three failed attempts, the message lands in the report DLQ, the report is FAILED
/// (attemptCount 3) with `errorKind` `kind` and a `lastError` containing `error`, and
/// `sophia-ops dlq show` shows the message with that report state. A later duplicate is
/// acknowledged without a model call.
async fn a_failure_reaches_the_report_dlq(answers: Vec<Behaviour>, kind: &str, error: &str) -> Document {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    let calls = answers.len();
    for answer in answers {
        fake.push(answer);
    }
    let reports = report_mapping(&w, &fake, Duration::from_secs(10));
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;

    three_failed_attempts_then_the_dlq(sqs, queues, &reports).await;
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1, "one report document");
    let report = stored[0].clone();
    // The provider away (a 5xx, a 429, no answer) costs no attempt: they are given back.
    let transient = ["server_error", "rate_limited", "timeout"].contains(&kind);
    let attempts = if transient { 0 } else { MAX_ATTEMPTS };
    assert_eq!(status(&report), ("FAILED", i64::from(attempts)));
    assert_eq!(report.get_str("errorKind").unwrap(), kind, "{report}");
    let last_error = report.get_str("lastError").unwrap().to_owned();
    assert!(last_error.contains(error), "{error:?} not in {last_error:?}");
    assert_eq!((fake.request_count(), fake.pending()), (calls, 0), "every scripted answer used, no more");

    let ctx = w.ops_context();
    let sophia_ops::Outcome::DlqList(listing) = ops(&ctx, &["dlq", "list", "report-generate"]).await else {
        panic!("dlq list")
    };
    assert_eq!(listing.messages.len(), 1);
    let id = listing.messages[0].message_id.clone();
    let sophia_ops::Outcome::DlqShow(shown) = ops(&ctx, &["dlq", "show", "report-generate", &id]).await else {
        panic!("dlq show")
    };
    assert_eq!(shown.message.body, report_body(interview, org));
    assert_eq!(
        shown.report,
        Some(sophia_ops::dlq_messages::ReportState::Found {
            status: "FAILED".into(),
            attempt_count: attempts,
            error_kind: Some(kind.into()),
            last_error: Some(last_error.clone()),
        })
    );
    let human = sophia_ops::Outcome::DlqShow(shown).human();
    assert!(human.contains(&format!("errorKind {kind}")), "{human}");

    if transient {
        // The attempts are still there: a duplicate (or a plain redrive) generates the report.
        fake.push(Behaviour::Report);
        send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;
        let again = reports.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
        assert_eq!((again.failed_ids.len(), again.deleted), (0, 1), "completed: {again:?}");
        let done = reports_of(&w.mongo.db, interview).await;
        assert_eq!(status(&done[0]), ("COMPLETED", 1));
        drain(sqs, &queues.report_generate.dlq.url).await;
        assert_queues_empty(sqs, queues).await;
        w.assert_invariants().await;
        return report;
    }

    // A duplicate (or a redrive without --reset-attempts): acknowledged, no model call.
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;
    let again = reports.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
    assert_eq!((again.failed_ids.len(), again.deleted), (0, 1), "acknowledged: {again:?}");
    assert_eq!(fake.request_count(), calls, "no model call");
    drain(sqs, &queues.report_generate.dlq.url).await;
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
    report
}

fn times(n: usize, b: Behaviour) -> Vec<Behaviour> {
    vec![b; n]
}

/// HTTP 500 on every call: each attempt retries it MAX_RETRIES times itself, then fails.
#[tokio::test]
async fn http_500_on_every_call_reaches_the_report_dlq_as_server_error() {
    let answers = times(3 * (CLIENT_RETRIES + 1), Behaviour::ServerError);
    a_failure_reaches_the_report_dlq(answers, "server_error", "HTTP 500").await;
}

#[tokio::test]
async fn http_401_invalid_api_key_reaches_the_report_dlq_as_credentials_refused() {
    // A plain OPENAI_API_KEY (no secret ARN): nothing to read again, each attempt fails.
    let answers = times(3, Behaviour::Error(ApiError::invalid_api_key()));
    let report = a_failure_reaches_the_report_dlq(answers, "credentials_refused", "HTTP 401").await;
    assert!(report.get_str("lastError").unwrap().contains("invalid_api_key"));
}

/// A 429 `insufficient_quota` is not a rate limit: no retry within the attempt.
#[tokio::test]
async fn http_429_insufficient_quota_reaches_the_report_dlq_as_quota() {
    let answers = times(3, Behaviour::Error(ApiError::insufficient_quota()));
    a_failure_reaches_the_report_dlq(answers, "quota", "insufficient_quota").await;
}

#[tokio::test]
async fn finish_reason_length_reaches_the_report_dlq_as_truncated() {
    a_failure_reaches_the_report_dlq(times(3, Behaviour::Length), "truncated", "finish_reason length").await;
}

/// The refusal's text is kept on the report (never in lastError or the logs).
#[tokio::test]
async fn a_refusal_reaches_the_report_dlq_and_its_text_is_kept_on_the_report() {
    let refusal = "I can't help with evaluating this person.";
    let answers = times(3, Behaviour::RefusalText(refusal.into()));
    let report = a_failure_reaches_the_report_dlq(answers, "refusal", "refused").await;
    assert_eq!(report.get_str("refusal").unwrap(), refusal);
    assert!(!report.get_str("lastError").unwrap().contains(refusal));
}

#[tokio::test]
async fn content_that_is_not_json_reaches_the_report_dlq_as_invalid_output() {
    a_failure_reaches_the_report_dlq(times(3, Behaviour::MalformedJson), "invalid_output", "not JSON").await;
}

/// HTTP 429 and 500 (each answered again on the client's own retries) and a reply slower than
/// the client timeout: three failed receives, then the report DLQ (this consumer has no queue to
/// back off on or requeue to: `ConsumerOptions::default()`); the provider being away cost the
/// report none of its attempts (FAILED, attemptCount 0, the last kind), so a later duplicate
/// generates it; there is never a second report document.
#[tokio::test]
async fn rate_limits_server_errors_and_timeouts_cost_no_attempt_and_the_message_reaches_the_dlq() {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    for _ in 0..=CLIENT_RETRIES {
        fake.push(Behaviour::RateLimited);
    }
    for _ in 0..=CLIENT_RETRIES {
        fake.push(Behaviour::ServerError);
    }
    // The client timeout leaves room for the client's own retries of the 429s and 500s.
    fake.push(Behaviour::slow(Duration::from_secs(4), Behaviour::Report));
    let reports = report_mapping(&w, &fake, Duration::from_secs(2));
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;

    three_failed_attempts_then_the_dlq(sqs, queues, &reports).await;
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1, "one report document");
    assert_eq!(status(&stored[0]), ("FAILED", 0));
    assert_eq!(int(&stored[0], "transientFailures"), Some(3));
    assert!(stored[0].get_str("lastError").unwrap().contains("timed out"), "{}", stored[0]);
    assert_eq!(stored[0].get_str("errorKind").unwrap(), "timeout");
    assert_eq!(fake.request_count(), 2 * (CLIENT_RETRIES + 1) + 1);
    assert_eq!(fake.pending(), 0);

    // A duplicate report.generate (or an operator's plain redrive): the attempts are there.
    fake.push(Behaviour::Report);
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;
    let again = poll_until(&reports, Duration::from_secs(10), |s| !s.is_empty()).await;
    assert_eq!((again[0].failed_ids.len(), again[0].deleted), (0, 1), "completed: {again:?}");
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!((stored.len(), status(&stored[0])), (1, ("COMPLETED", 1)));
    drain(sqs, &queues.report_generate.dlq.url).await;
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// An interview the API wrote with a transcript the read model cannot read (a string where turns
/// are expected, carrying candidate text): never a database error; the report is FAILED with
/// `invalid_document` naming the field (not its value), and the message reaches the DLQ.
#[tokio::test]
async fn an_unreadable_interview_reaches_the_report_dlq_as_invalid_document() {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    w.mongo
        .db
        .collection::<Document>("interviews")
        .update_one(
            doc! {"_id": interview.oid()},
            doc! {"$set": {"proctoring": {"transcript": "CANDIDATE-TEXT-MARKER all in one string"}}},
        )
        .await
        .unwrap();
    let fake = FakeOpenAi::scripted().unwrap();
    let reports = report_mapping(&w, &fake, Duration::from_secs(10));
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;
    three_failed_attempts_then_the_dlq(sqs, queues, &reports).await;
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(status(&stored[0]), ("FAILED", i64::from(MAX_ATTEMPTS)));
    assert_eq!(stored[0].get_str("errorKind").unwrap(), "invalid_document");
    let last_error = stored[0].get_str("lastError").unwrap();
    assert!(last_error.contains("proctoring.transcript") && !last_error.contains("MARKER"), "{last_error}");
    assert_eq!(fake.request_count(), 0, "no model call");
    drain(sqs, &queues.report_generate.dlq.url).await;
    assert_queues_empty(sqs, queues).await;
}

/// A malformed completion and a refusal fail two attempts over two receives; the third
/// receive's attempt succeeds: one COMPLETED report (attemptCount 3, lastError cleared), the
/// message deleted, no DLQ.
#[tokio::test]
async fn a_malformed_reply_and_a_refusal_are_retried_and_the_third_attempt_completes_one_report() {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::MalformedJson).push(Behaviour::Refusal).push(Behaviour::Report);
    let reports = report_mapping(&w, &fake, Duration::from_secs(10));
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;

    let runs = poll_until(&reports, Duration::from_secs(20), |s| s.iter().any(|r| r.deleted == 1)).await;
    assert_eq!(runs.iter().map(|r| (r.failed_ids.len(), r.deleted)).collect::<Vec<_>>(), [(1, 0), (1, 0), (0, 1)]);
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(status(&stored[0]), ("COMPLETED", 3));
    assert_eq!(stored[0].get("lastError"), Some(&Bson::Null));
    assert_eq!(fake.request_count(), 3);
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// A worker dies while the model is answering. The first delivery is received from the real
/// queue and run by the production handler, which believes it has its declared 300 s; its future
/// is dropped as soon as its chat completion is in flight (a killed process stops at whatever it
/// was awaiting), so nothing is answered and nothing deleted. The report stays PROCESSING under
/// a 500 ms lease; the message comes back after the visibility timeout and after the lease (as
/// in production, where the visibility timeout, 1800 s, is longer than the lease, 300 s), and
/// that delivery reclaims the report and completes it.
#[tokio::test]
async fn a_worker_killed_mid_report_leaves_a_lease_that_expires_and_a_later_delivery_completes_the_report() {
    let (w, org, interview) = setup(50, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::slow(Duration::from_secs(5), Behaviour::Report)).push(Behaviour::Report);
    let lease = Duration::from_millis(500);
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;

    // The doomed worker: the production handler, fed what the event source mapping would send.
    let received = sqs
        .receive_message()
        .queue_url(&queues.report_generate.source.url)
        .wait_time_seconds(2)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(received.len(), 1);
    let payload: SqsEvent = serde_json::from_value(sophia_local::esm::sqs_event(
        &received,
        &queues.report_generate.source.arn,
        "us-east-1",
    ))
    .unwrap();
    let mut context = Context::default();
    context.deadline = (std::time::SystemTime::now() + Duration::from_secs(300))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let settings = fake_openai(&fake, Duration::from_secs(60));
    let service = sophia_reports::ReportService::new(w.mongo.db.clone(), sophia_reports::ReportModel::new(&settings))
        .with_lease(lease);
    let doomed =
        report_generate::ReportGenerateHandler::with_service(w.mongo.clone(), service, ConsumerOptions::default());
    // The kill: once the chat completion is in flight, the invocation's future is dropped.
    let model_called = harness::wait::poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async { fake.request_count() },
        |calls| *calls > 0,
    );
    tokio::select! {
        r = doomed.handle(LambdaEvent::new(payload, context)) => panic!("the worker finished instead of dying: {r:?}"),
        calls = model_called => assert!(calls > 0, "the worker never called the model"),
    }
    drop(doomed);
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(status(&stored[0]), ("PROCESSING", 1), "left behind by the dead worker");
    let lease_ends = stored[0].get_datetime("leaseExpiresAt").expect("a BSON date").timestamp_millis();
    // The redelivery must come after the lease (in production: visibility 1800 s > lease 300 s).
    harness::wait_until("the dead worker's lease has expired", lease + Duration::from_secs(10), || async {
        bson::DateTime::now().timestamp_millis() > lease_ends
    })
    .await;

    let instance =
        report_instance(w.settings(), fake_openai(&fake, Duration::from_secs(10)), lease, ConsumerOptions::default());
    let reports = esm(sqs, &queues.report_generate.source, "reportGenerate", instance);
    let later = reports.poll_once(Duration::from_secs(3)).await.unwrap().expect("the message comes back");
    assert_eq!((later.failed_ids.len(), later.deleted), (0, 1), "{later:?}");
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(status(&stored[0]), ("COMPLETED", 2), "reclaimed on the second attempt");
    assert_eq!(fake.request_count(), 2);
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// Checks the end state of the duplicate cases: one settlement, one publish, one report.
async fn assert_settled_reported_once(
    w: &World,
    sqs: &aws_sdk_sqs::Client,
    queues: &QueueSet,
    interview: InterviewId,
    org: OrganizationId,
    publishes: std::ops::RangeInclusive<usize>,
) {
    let mut expected = vec![("RELEASE".to_owned(), 20), ("RESERVE".to_owned(), 30), ("SETTLE".to_owned(), 10)];
    expected.sort();
    assert_eq!(w.ledger_of(interview).await, expected, "one settlement");
    assert_eq!(w.org_credits(org).await, (90, 0));
    let published = drain(sqs, &queues.report_generate.source.url).await;
    assert!(publishes.contains(&published.len()), "{} report.generate, expected {publishes:?}", published.len());
    assert!(published.iter().all(|m| m.body() == Some(report_body(interview, org).as_str())));
    // Every published copy is delivered: the first makes the report, the others find it done.
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    for m in &published {
        send(sqs, &queues.report_generate.source.url, m.body().unwrap()).await;
    }
    let reports = report_mapping(w, &fake, Duration::from_secs(10));
    let runs = poll_until(&reports, Duration::from_secs(20), |s| {
        s.iter().map(|r| r.deleted).sum::<usize>() >= published.len()
    })
    .await;
    assert!(runs.iter().all(|r| r.failed_ids.is_empty()), "{runs:?}");
    let stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!((stored.len(), status(&stored[0])), (1, ("COMPLETED", 1)), "one report");
    assert_eq!(fake.request_count(), 1);
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// Ten copies of one `interview.completed` arrive together: one invocation with a batch of ten
/// (the declared batch size). One settles, nine find it settled; all ten are acknowledged; one
/// `report.generate`; one report.
#[tokio::test]
async fn ten_copies_in_one_batch_settle_once_publish_once_and_make_one_report() {
    let (w, org, interview) = setup(100, 30).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    for _ in 0..10 {
        send(sqs, &queues.interview_completed.source.url, &completed_body(interview, org, 600)).await;
    }
    let mapping = interview_esm(sqs, queues, 1, w.settings());
    let runs =
        poll_until(&mapping, Duration::from_secs(10), |s| s.iter().map(|r| r.deleted).sum::<usize>() >= 10).await;
    assert_eq!(runs.len(), 1, "one invocation of ten records: {runs:?}");
    assert_eq!((runs[0].message_ids.len(), runs[0].failed_ids.len()), (10, 0));
    assert_settled_reported_once(&w, sqs, queues, interview, org, 1..=1).await;
}

/// Ten copies delivered to ten function instances at once (ten mappings with batch size 1
/// polling together): truly concurrent settlements of one interview. One settlement and one
/// report; `report.generate` may be published more than once here, by design (docs/design.md: a
/// delivery that finds the outbox entry still pending while the winner publishes it publishes
/// it too; the report consumer is idempotent), so every published copy is delivered and only
/// one model call may happen. Needs isolated
/// transactions (a replica set): on nx-27017 an aborting loser would roll back the winner's
/// writes (shared-connection savepoints), so there it is skipped with a SKIPPED line.
#[tokio::test]
async fn ten_copies_to_ten_concurrent_instances_settle_once_and_make_one_report() {
    let w = World::fast(5).await;
    if !harness::requires_transactions(
        &w.mongo,
        "ten_copies_to_ten_concurrent_instances_settle_once_and_make_one_report",
    )
    .await
    {
        return;
    }
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    for _ in 0..10 {
        send(sqs, &queues.interview_completed.source.url, &completed_body(interview, org, 600)).await;
    }
    let instances = completed_instances(10, w.settings(), &queues.report_generate.source.url);
    let mappings: Vec<EventSourceMapping> = (0..10)
        .map(|_| {
            let mut m = esm(sqs, &queues.interview_completed.source, "interviewCompleted", instances.clone());
            m.batch_size = 1;
            m
        })
        .collect();
    let runs = futures::future::join_all(mappings.iter().map(|m| m.poll_once(Duration::from_secs(2)))).await;
    let deleted: usize = runs.into_iter().map(|r| r.unwrap().map_or(0, |s| s.deleted)).sum();
    assert_eq!(deleted, 10, "every copy acknowledged");
    assert_settled_reported_once(&w, sqs, queues, interview, org, 1..=10).await;
}
