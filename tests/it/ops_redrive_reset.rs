//! `sophia-ops dlq redrive` does what the operator means, through the local pipeline (fauxqs
//! queues with a 1 s visibility timeout, the event-source-mapping emulator invoking the
//! report-generate and interview-completed functions as their `main` builds them, nx-27017 and
//! the scripted OpenAI fake):
//! - a report FAILED at its third attempt, its message in the report DLQ: the plan shows the
//!   report's state; one redrive resets its attempts (recorded on the report: when, by whom,
//!   from how many) before the message moves, and the report is COMPLETED;
//! - a COMPLETED report is never reset, a report a live worker holds is not either, and a reset
//!   racing a consumer's claim never double-counts an attempt;
//! - redriving the interview DLQ shows per message whether the interview is still unsettled, and
//!   each interview is settled once.

use crate::support::ops as ops_support;

use std::time::Duration;

use bson::{Document, doc};
use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::mongo::{int, reports_of};
use harness::sqs::{assert_queues_empty, completed_body, depth, send};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_local::queues::QueueSet;
use sophia_openai_fake::{Behaviour, FakeOpenAi};
use sophia_ops::Outcome;
use sophia_reports::admin::{Operator, ResetOutcome, reset_for_retry};
use sophia_reports::store::{MAX_ATTEMPTS, ReportStore};

fn report_body(interview: InterviewId, org: OrganizationId) -> String {
    format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#)
}

async fn ops(ctx: &sophia_ops::Context, args: &[&str]) -> Outcome {
    let cli = sophia_ops::parse(std::iter::once("sophia-ops").chain(args.iter().copied())).expect("command line");
    sophia_ops::execute(&cli.command, ctx).await.expect("sophia-ops")
}

async fn report(w: &World, interview: InterviewId) -> Document {
    let mut all = reports_of(&w.mongo.db, interview).await;
    assert_eq!(all.len(), 1, "one report document");
    all.remove(0)
}

#[tokio::test]
async fn a_report_failed_at_three_attempts_is_completed_by_one_redrive_that_records_who_reset_it() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let fake = FakeOpenAi::scripted().unwrap();
    for _ in 0..MAX_ATTEMPTS {
        fake.push(Behaviour::MalformedJson);
    }
    let reports = ops_support::report_mapping(&w, &fake);
    send(sqs, &queues.report_generate.source.url, &report_body(interview, org)).await;
    let runs = poll_until(&reports, Duration::from_secs(30), |s| s.len() >= 3).await;
    assert!(runs.iter().all(|r| r.failed_ids.len() == 1), "every attempt returned for retry: {runs:?}");
    assert!(reports.poll_once(Duration::from_secs(2)).await.unwrap().is_none(), "no fourth delivery");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (1, 0), "the message is in the report DLQ");
    let failed = report(&w, interview).await;
    assert_eq!((failed.get_str("status").unwrap(), int(&failed, "attemptCount")), ("FAILED", Some(3)));

    // The plan shows the report's state and what the redrive will do with it.
    let ctx = w.ops_context();
    let Outcome::DlqRedrive(dry) = ops(&ctx, &["dlq", "redrive", "report-generate", "--dry-run"]).await else {
        panic!("dry run")
    };
    let plan = dry.plan.as_ref().expect("the dry run carries its plan").human();
    assert!(
        plan.contains(&format!(
            "interview {interview}: now out of attempts (3 of 3): nothing retries it; fix the cause, then `sophia-ops report retry {interview} {org} --reset-attempts`; the consumer: attempts reset from 3 to 0, then generated: attempt 1 of 3"
        )),
        "{plan}"
    );
    assert_eq!(int(&report(&w, interview).await, "attemptCount"), Some(3), "a dry run resets nothing");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (1, 0), "a dry run moves nothing");

    // One redrive: the reset is on the report before the message is back in the source queue.
    // `--by alice@example.com` (Context::from_cli reads it into the context).
    let ctx = w.ops_context().acting_as(Some("alice@example.com".into()));
    let Outcome::DlqRedrive(done) = ops(&ctx, &["dlq", "redrive", "report-generate"]).await else { panic!("redrive") };
    assert_eq!((done.moved, done.failed, done.duplicated), (1, 0, 0));
    assert!(done.is_clean(), "{}", done.human());
    assert_eq!(done.prepared.len(), 1);
    assert!(
        done.prepared[0].note.starts_with("report FAILED at 3 attempt(s): attempts reset to 0"),
        "{:?}",
        done.prepared
    );
    let reset = report(&w, interview).await;
    assert_eq!((reset.get_str("status").unwrap(), int(&reset, "attemptCount")), ("FAILED", Some(0)));
    let last = reset.get_document("lastRetry").unwrap();
    assert_eq!(
        last.get_str("by").unwrap(),
        "alice@example.com (self-declared)",
        "no AWS identity locally: --by, marked"
    );
    assert_eq!(last.get_str("via").unwrap(), "dlq-redrive");
    assert_eq!(int(last, "attemptsBefore"), Some(3));
    assert!(last.get_datetime("at").is_ok(), "{last}");
    assert_eq!(reset.get_array("retries").unwrap().len(), 1);

    // The consumer generates it: COMPLETED on the first attempt of the new budget.
    fake.push(Behaviour::Report);
    let generated = poll_until(&reports, Duration::from_secs(30), |s| s.iter().any(|r| r.deleted == 1)).await;
    assert!(generated.iter().all(|r| r.failed_ids.is_empty()), "{generated:?}");
    let completed = report(&w, interview).await;
    assert_eq!((completed.get_str("status").unwrap(), int(&completed, "attemptCount")), ("COMPLETED", Some(1)));
    assert_eq!(
        completed.get_document("lastRetry").unwrap().get_str("by").unwrap(),
        "alice@example.com (self-declared)",
        "the record stays"
    );
    assert_eq!(fake.request_count(), 4, "three failed calls and the one that completed");
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;

    // A second redrive (say, of a duplicate) never resets a COMPLETED report.
    send(sqs, &queues.report_generate.dlq.url, &report_body(interview, org)).await;
    let Outcome::DlqRedrive(again) = ops(&ctx, &["dlq", "redrive", "report-generate"]).await else { panic!() };
    assert_eq!(again.moved, 1);
    assert!(again.prepared[0].note.contains("COMPLETED: not reset"), "{:?}", again.prepared);
    let still = report(&w, interview).await;
    assert_eq!((still.get_str("status").unwrap(), int(&still, "attemptCount")), ("COMPLETED", Some(1)));
    assert_eq!(still.get_array("retries").unwrap().len(), 1, "no reset recorded");
    let acked = reports.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
    assert_eq!((acked.failed_ids.len(), acked.deleted), (0, 1), "acknowledged without a model call");
    assert_eq!(fake.request_count(), 4);
}

async fn seed_report(w: &World, interview: InterviewId, org: OrganizationId, fields: Document) {
    let mut d = doc! {"interviewId": interview.oid(), "organizationId": org.oid(), "createdAt": bson::DateTime::now()};
    d.extend(fields);
    w.mongo.db.collection::<Document>("interviewReports").insert_one(d).await.unwrap();
}

#[tokio::test]
async fn only_a_failed_or_stuck_report_is_reset_and_a_live_claim_is_left_alone() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let who = Operator::new("bob", "report-retry");
    let past = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - 60_000);
    let future = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() + 600_000);

    let completed = w.reserved_interview(org, 1).await;
    seed_report(&w, completed, org, doc! {"status": "COMPLETED", "attemptCount": 2}).await;
    assert_eq!(reset_for_retry(&w.mongo.db, completed, &who).await.unwrap(), ResetOutcome::Completed);
    assert_eq!(int(&report(&w, completed).await, "attemptCount"), Some(2));
    assert!(report(&w, completed).await.get("lastRetry").is_none(), "untouched");

    let live = w.reserved_interview(org, 1).await;
    seed_report(&w, live, org, doc! {"status": "PROCESSING", "attemptCount": 3, "leaseId": bson::oid::ObjectId::new(), "leaseExpiresAt": future}).await;
    assert!(matches!(reset_for_retry(&w.mongo.db, live, &who).await.unwrap(), ResetOutcome::Held { .. }));
    assert_eq!(int(&report(&w, live).await, "attemptCount"), Some(3));

    // Stuck: PROCESSING under a lease that expired, out of attempts (a consumer would mark it
    // FAILED and acknowledge the message).
    let stuck = w.reserved_interview(org, 1).await;
    seed_report(&w, stuck, org, doc! {"status": "PROCESSING", "attemptCount": 3_i64, "leaseId": bson::oid::ObjectId::new(), "leaseExpiresAt": past}).await;
    assert_eq!(
        reset_for_retry(&w.mongo.db, stuck, &who).await.unwrap(),
        ResetOutcome::Reset { status_before: "PROCESSING", attempts_before: 3 }
    );
    let d = report(&w, stuck).await;
    assert_eq!(int(&d, "attemptCount"), Some(0));
    assert_eq!(d.get_document("lastRetry").unwrap().get_str("statusBefore").unwrap(), "PROCESSING");

    // Without a lease (written before leases existed): held until its last write plus the lease
    // (the claim rule, sophia_reports::claim), then reset as the consumer would reclaim it; the
    // reset writes that end as leaseExpiresAt, so its own updatedAt does not hold it again.
    let lease_ms = sophia_reports::claim::lease().as_millis() as i64;
    let recent = w.reserved_interview(org, 1).await;
    seed_report(&w, recent, org, doc! {"status": "PROCESSING", "attemptCount": 3, "updatedAt": past}).await;
    assert!(matches!(reset_for_retry(&w.mongo.db, recent, &who).await.unwrap(), ResetOutcome::Held { .. }));
    let lapsed_at = bson::DateTime::from_millis(past.timestamp_millis() - lease_ms);
    let lease_less = w.reserved_interview(org, 1).await;
    seed_report(
        &w,
        lease_less,
        org,
        doc! {"status": "PROCESSING", "attemptCount": 3, "leaseExpiresAt": bson::Bson::Null, "updatedAt": lapsed_at},
    )
    .await;
    assert_eq!(
        reset_for_retry(&w.mongo.db, lease_less, &who).await.unwrap(),
        ResetOutcome::Reset { status_before: "PROCESSING", attempts_before: 3 }
    );
    let d = report(&w, lease_less).await;
    assert_eq!(int(&d, "attemptCount"), Some(0));
    assert_eq!(d.get_datetime("leaseExpiresAt").unwrap().timestamp_millis(), lapsed_at.timestamp_millis() + lease_ms);

    let absent = w.reserved_interview(org, 1).await;
    assert_eq!(reset_for_retry(&w.mongo.db, absent, &who).await.unwrap(), ResetOutcome::Absent);
}

/// Resets and consumer claims at the same time, on a report FAILED with attempts left: exactly
/// one claim wins, and the attempt it holds is what the document says: a reset either came
/// before the claim (the claim is attempt 1) or saw the claim and left the report alone.
#[tokio::test]
async fn a_reset_racing_a_consumer_claim_never_loses_or_double_counts_an_attempt() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    for round in 0..5 {
        let interview = w.reserved_interview(org, 1).await;
        seed_report(&w, interview, org, doc! {"status": "FAILED", "attemptCount": 1}).await;
        let store = ReportStore::new(&w.mongo.db);
        let db = w.mongo.db.clone();
        let claims = (0..4).map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .claim(
                        interview,
                        Duration::from_secs(300),
                        sophia_reports::store::retention_or_fallback(None, bson::DateTime::now()),
                    )
                    .await
                    .unwrap()
            })
        });
        let resets = (0..4).map(|_| {
            let db = db.clone();
            tokio::spawn(async move { reset_for_retry(&db, interview, &Operator::new("race", "test")).await.unwrap() })
        });
        let claims: Vec<_> = futures::future::join_all(claims).await.into_iter().map(Result::unwrap).collect();
        let resets: Vec<_> = futures::future::join_all(resets).await.into_iter().map(Result::unwrap).collect();
        let won: Vec<_> = claims.iter().flatten().collect();
        assert_eq!(won.len(), 1, "round {round}: exactly one claim: {claims:?} {resets:?}");
        let d = report(&w, interview).await;
        assert_eq!(d.get_str("status").unwrap(), "PROCESSING", "round {round}: the claim is not undone");
        assert_eq!(d.get_object_id("leaseId").unwrap(), won[0].id, "round {round}: the winner holds the lease");
        assert_eq!(int(&d, "attemptCount"), Some(i64::from(won[0].attempt)), "round {round}: {d}");
        let reset_count = resets.iter().filter(|r| matches!(r, ResetOutcome::Reset { .. })).count();
        assert_eq!(d.get_array("retries").map_or(0, Vec::len), reset_count, "round {round}: one record per reset");
        if reset_count > 0 {
            assert_eq!(won[0].attempt, 1, "round {round}: a reset before the claim makes it attempt 1");
        } else {
            assert_eq!(won[0].attempt, 2, "round {round}: without a reset the claim is attempt 2");
        }
    }
}

#[tokio::test]
async fn redriving_the_interview_dlq_shows_which_interviews_are_unsettled_and_settles_each_once() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let settled = w.reserved_interview(org, 10).await;
    let unsettled = w.reserved_interview(org, 10).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let interviews = interview_esm(sqs, queues, 1, w.settings());

    // `settled` goes through once; then both messages end in the DLQ (a duplicate of the first,
    // and the second, whose delivery failed three times while, say, MongoDB was down).
    send(sqs, &queues.interview_completed.source.url, &completed_body(settled, org, 300)).await;
    poll_until(&interviews, Duration::from_secs(20), |s| s.iter().any(|r| r.deleted == 1)).await;
    assert!(w.settled(settled).await);
    drain_report_queue(sqs, queues).await;
    send(sqs, &queues.interview_completed.dlq.url, &completed_body(settled, org, 300)).await;
    send(sqs, &queues.interview_completed.dlq.url, &completed_body(unsettled, org, 120)).await;

    let ctx = w.ops_context();
    let Outcome::DlqRedrive(dry) = ops(&ctx, &["dlq", "redrive", "interview-completed", "--dry-run"]).await else {
        panic!()
    };
    let plan = dry.plan.as_ref().unwrap().human();
    assert!(plan.contains(&format!("interview {settled}: already settled: acknowledged, nothing charged")), "{plan}");
    assert!(plan.contains(&format!("interview {unsettled}: settles: 2 credit(s) consumed, 8 released")), "{plan}");

    let Outcome::DlqRedrive(done) = ops(&ctx, &["dlq", "redrive", "interview-completed"]).await else { panic!() };
    assert_eq!(done.moved, 2);
    poll_until(&interviews, Duration::from_secs(20), |s| s.iter().map(|r| r.deleted).sum::<usize>() >= 2).await;
    assert!(w.settled(unsettled).await);
    for interview in [settled, unsettled] {
        let settles = w.ledger_of(interview).await.into_iter().filter(|(t, _)| t == "SETTLE").count();
        assert_eq!(settles, 1, "{interview}: settled once in the ledger");
        assert_eq!(
            w.find("outbox", doc! {"interviewId": interview.oid()}).await.len(),
            1,
            "{interview}: one outbox entry"
        );
    }
    assert_eq!(w.org_credits(org).await, (100 - 5 - 2, 0), "5 + 2 credits consumed once each, nothing left reserved");
    drain_report_queue(sqs, queues).await;
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

async fn drain_report_queue(sqs: &aws_sdk_sqs::Client, queues: &QueueSet) {
    // drain receives until a one-second long poll comes back empty: a message still on its way
    // is waited for there.
    harness::drain(sqs, &queues.report_generate.source.url).await;
}
