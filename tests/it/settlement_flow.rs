//! Settlement over the real wire protocol (nx-27017 here, or `SOPHIA_TEST_MONGODB_URI`): one
//! database per test, and the five invariants checked after every scenario.

use crate::support::settlement as settlement_common;
use harness::World;
use harness::mongo::int;

use bson::doc;
use chrono::{Duration, Utc};
use settlement_common::{RecordingPublisher, at, ctx, secs};
use sophia_contracts::{InterviewCompleted, InterviewId, OrganizationId, RequestId};
use sophia_credits::arithmetic::LotStatus;
use sophia_credits::model::{LedgerType, OutboxStatus};
use sophia_credits::{
    CreditsError, Disposition, FlushOutcome, SettleContext, SettleOutcome, flush_pending_outbox, migrations, seed,
};

fn completed(interview: InterviewId, org: OrganizationId, completed_at: &str, duration: u64) -> InterviewCompleted {
    InterviewCompleted {
        interview_id: interview,
        organization_id: org,
        completed_at: at(completed_at),
        duration_seconds: secs(duration),
    }
}

async fn interview_doc(w: &World, id: InterviewId) -> bson::Document {
    w.store.interview_documents().find_one(doc! {"_id": id.oid()}).await.unwrap().unwrap()
}

#[tokio::test]
async fn completed_interview_is_billed_in_whole_minutes_and_its_report_is_published_once() {
    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    assert_eq!(w.org_credits(org).await, (70, 30));
    let publisher = RecordingPublisher::default();

    let message = completed(interview, org, "2026-12-02T17:30:00.000Z", 754);
    let result = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap();

    let SettleOutcome::Settled(summary) = &result.outcome else { panic!("must settle: {result:?}") };
    assert_eq!((summary.reserved, summary.consumed, summary.released, summary.forfeited), (30, 12, 18, 0));
    assert!(matches!(result.publish, FlushOutcome::Published { .. }));
    let d = interview_doc(&w, interview).await;
    assert!(d.get_datetime("settledAt").is_ok(), "settledAt is a date: {d}");
    assert_eq!(int(&d, "credits.consumed"), Some(12));
    let retention = d.get_datetime("retentionExpiresAt").unwrap().to_chrono();
    assert_eq!(retention, at("2026-12-02T17:30:00.000Z").as_datetime() + Duration::days(60));
    assert_eq!(w.org_credits(org).await, (88, 0));
    let lot = &w.lots(org).await[0];
    assert_eq!((lot.remaining, lot.reserved, lot.status), (88, 0, LotStatus::Active));
    assert_eq!(w.ledger_sum(interview, LedgerType::Reserve).await, 30);
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 12);
    assert_eq!(w.ledger_sum(interview, LedgerType::Release).await, 18);
    let sent = publisher.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.interview_id, interview);
    assert_eq!(sent[0].1, RequestId::settlement(interview));
    let entry = w.outbox(interview).await.unwrap();
    assert_eq!((entry.status, entry.sqs_message_id.as_deref()), (OutboxStatus::Published, Some("m-1")));
    w.assert_invariants().await;
}

#[tokio::test]
async fn billing_is_capped_at_the_reservation_and_a_lot_used_up_is_exhausted() {
    let w = World::fresh().await;
    let org = w.org_with_credits(30).await;
    let interview = w.reserved_interview(org, 30).await;
    let outcome = w
        .settlement()
        .settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(7200), ctx())
        .await
        .unwrap();
    let SettleOutcome::Settled(s) = outcome else { panic!() };
    assert_eq!((s.consumed, s.released), (30, 0));
    let lot = &w.lots(org).await[0];
    assert_eq!((lot.remaining, lot.reserved, lot.status), (0, 0, LotStatus::Exhausted));
    assert_eq!(w.org_credits(org).await, (0, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn zero_and_59_seconds_bill_nothing_and_release_everything() {
    let w = World::fresh().await;
    let org = w.org_with_credits(20).await;
    for duration in [0, 59] {
        let interview = w.reserved_interview(org, 5).await;
        let s = w
            .settlement()
            .settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(duration), ctx())
            .await
            .unwrap();
        assert!(matches!(s, SettleOutcome::Settled(ref s) if s.consumed == 0 && s.released == 5), "{duration}: {s:?}");
        assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 0);
    }
    assert_eq!(w.org_credits(org).await, (20, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn failed_interview_releases_the_whole_reservation_and_writes_no_report() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 20).await;
    let outcome =
        w.settlement().settle_failed_interview(interview, org, at("2026-12-01T10:00:00Z"), ctx()).await.unwrap();
    let SettleOutcome::Settled(s) = outcome else { panic!() };
    assert_eq!((s.consumed, s.released, s.outbox.is_none()), (0, 20, true));
    let d = interview_doc(&w, interview).await;
    assert_eq!(int(&d, "credits.consumed"), Some(0));
    assert_eq!(
        d.get_datetime("retentionExpiresAt").unwrap().to_chrono(),
        at("2026-12-01T10:00:00Z").as_datetime() + Duration::days(60)
    );
    assert_eq!(w.org_credits(org).await, (50, 0));
    assert!(w.outbox(interview).await.is_none());
    assert_eq!(w.ledger_sum(interview, LedgerType::Release).await, 20);
    // A duplicate failed delivery does nothing.
    assert_eq!(
        w.settlement().settle_failed_interview(interview, org, at("2026-12-01T10:00:00Z"), ctx()).await.unwrap(),
        SettleOutcome::AlreadySettled
    );
    assert_eq!(w.ledger(interview).await.len(), 2);
    w.assert_invariants().await;
}

#[tokio::test]
async fn reservation_and_settlement_walk_several_lots_oldest_expiry_first() {
    let w = World::fresh().await;
    let org = seed::create_organization(&w.store, "Multi").await.unwrap();
    let late = seed::grant_lot(&w.store, org, 50, Utc::now() + Duration::days(20)).await.unwrap();
    let early = seed::grant_lot(&w.store, org, 5, Utc::now() + Duration::days(10)).await.unwrap();
    let interview = seed::create_interview(&w.store, org, doc! {}).await.unwrap();
    let allocations = seed::reserve(&w.mongo.client, &w.store, org, interview, 12).await.unwrap();
    assert_eq!(allocations.iter().map(|a| (a.lot_id, a.credits)).collect::<Vec<_>>(), vec![(early, 5), (late, 7)]);
    w.assert_invariants().await;

    let outcome = w
        .settlement()
        .settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(8 * 60 + 30), ctx())
        .await
        .unwrap();
    let SettleOutcome::Settled(s) = outcome else { panic!() };
    assert_eq!((s.consumed, s.released, s.lots), (8, 4, 2));
    let lots = w.lots(org).await;
    assert_eq!((lots[0].id, lots[0].remaining, lots[0].status), (early, 0, LotStatus::Exhausted));
    assert_eq!((lots[1].id, lots[1].remaining, lots[1].reserved), (late, 47, 0));
    assert_eq!(w.org_credits(org).await, (47, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn an_expired_lot_forfeits_the_unused_reservation_and_its_remainder() {
    let w = World::fresh().await;
    let org = seed::create_organization(&w.store, "Expiring").await.unwrap();
    seed::grant_lot(&w.store, org, 10, Utc::now() + Duration::days(1)).await.unwrap();
    let interview = w.reserved_interview(org, 6).await;
    let later = SettleContext { deadline: None, now: Utc::now() + Duration::days(2) };
    let outcome = w
        .settlement()
        .settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(150), later)
        .await
        .unwrap();
    let SettleOutcome::Settled(s) = outcome else { panic!() };
    assert_eq!((s.consumed, s.released, s.forfeited, s.expiry_forfeited), (2, 0, 4, 4));
    let lot = &w.lots(org).await[0];
    assert_eq!((lot.remaining, lot.reserved, lot.status), (0, 0, LotStatus::Expired));
    assert_eq!(w.org_credits(org).await, (0, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_duplicate_delivery_writes_nothing_and_publishes_nothing() {
    let w = World::fresh().await;
    let org = w.org_with_credits(40).await;
    let interview = w.reserved_interview(org, 10).await;
    let publisher = RecordingPublisher::default();
    let message = completed(interview, org, "2026-12-02T17:30:00Z", 300);
    assert!(w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap().outcome.settled());
    let ledger_before = w.ledger(interview).await.len();
    let again = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap();
    assert_eq!(again.outcome, SettleOutcome::AlreadySettled);
    assert_eq!(again.publish, FlushOutcome::NothingPending);
    assert_eq!(w.ledger(interview).await.len(), ledger_before);
    assert_eq!(publisher.sent().len(), 1);
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_failed_publish_is_retried_and_the_redelivery_flushes_the_outbox_exactly_once() {
    let w = World::fresh().await;
    let org = w.org_with_credits(40).await;
    let interview = w.reserved_interview(org, 10).await;
    let publisher = RecordingPublisher::default();
    publisher.fail_next(1);
    let message = completed(interview, org, "2026-12-02T17:30:00Z", 300);

    let err = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap_err();
    assert!(matches!(err, CreditsError::Publish { .. }), "{err}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(interview_doc(&w, interview).await.get_datetime("settledAt").is_ok(), "the settlement is committed");
    let entry = w.outbox(interview).await.unwrap();
    assert_eq!((entry.status, entry.attempts), (OutboxStatus::Pending, 1));
    assert!(entry.last_error.unwrap().contains("simulated"));
    w.assert_invariants().await;

    let redelivery = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap();
    assert_eq!(redelivery.outcome, SettleOutcome::AlreadySettled);
    assert!(matches!(redelivery.publish, FlushOutcome::Published { .. }));
    let third = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap();
    assert_eq!(third.publish, FlushOutcome::NothingPending);
    assert_eq!(publisher.sent().len(), 1, "published exactly once");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Published);
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_skipped_publish_stays_pending_until_the_operator_flush() {
    let w = World::fresh().await;
    let org = w.org_with_credits(40).await;
    let interview = w.reserved_interview(org, 10).await;
    let message = completed(interview, org, "2026-12-02T17:30:00Z", 300);
    let r =
        w.settlement().settle_completed_and_publish(&message, &RecordingPublisher::skipping(), ctx()).await.unwrap();
    assert!(r.outcome.settled());
    assert!(matches!(r.publish, FlushOutcome::LeftPending { .. }));
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Pending);

    let publisher = RecordingPublisher::default();
    let young = flush_pending_outbox(&w.store, &publisher, std::time::Duration::from_secs(3600), 100).await.unwrap();
    assert_eq!(young.published, 0, "entries younger than the threshold are left alone");
    // nx-27017 compares dates in filters at about one-second granularity (an entry 10 ms older
    // than the bound does not match `$lt`): flush again until the entry is old enough for it
    // (a flush that finds nothing old enough changes nothing), for up to 5 s.
    let report = harness::wait::poll(
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(50),
        || async { flush_pending_outbox(&w.store, &publisher, std::time::Duration::ZERO, 100).await.unwrap() },
        |report| report.published > 0,
    )
    .await;
    assert_eq!((report.published, report.left_pending, report.failed.len()), (1, 0, 0));
    let again = flush_pending_outbox(&w.store, &publisher, std::time::Duration::ZERO, 100).await.unwrap();
    assert_eq!(again.published, 0);
    assert_eq!(publisher.sent().len(), 1);
    w.assert_invariants().await;
}

#[tokio::test]
async fn an_unknown_interview_is_retried_and_changes_nothing() {
    let w = World::fresh().await;
    let org = w.org_with_credits(10).await;
    let unknown = InterviewId::new(bson::oid::ObjectId::new());
    let err = w
        .settlement()
        .settle_completed_interview(unknown, org, at("2026-12-02T17:30:00Z"), secs(60), ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, CreditsError::InterviewNotFound { .. }), "{err}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert_eq!(w.org_credits(org).await, (10, 0));
    w.assert_invariants().await;
}

// Another organization's interview and an interview with nothing reserved: see
// `settlement_edge_cases.rs` (docs/design.md, "Settlement decisions").

#[tokio::test]
async fn reservation_refuses_what_the_lots_cannot_cover() {
    let w = World::fresh().await;
    let org = w.org_with_credits(10).await;
    let interview = seed::create_interview(&w.store, org, doc! {}).await.unwrap();
    let err = seed::reserve(&w.mongo.client, &w.store, org, interview, 11).await.unwrap_err();
    assert!(matches!(err, CreditsError::InsufficientCredits { .. }), "{err}");
    assert_eq!(w.org_credits(org).await, (10, 0));
    seed::reserve(&w.mongo.client, &w.store, org, interview, 10).await.unwrap();
    let again = seed::reserve(&w.mongo.client, &w.store, org, interview, 1).await.unwrap_err();
    assert!(matches!(again, CreditsError::AlreadyReserved { .. }), "{again}");
    w.assert_invariants().await;
}

#[tokio::test]
async fn the_migration_is_idempotent_and_the_ledger_refuses_a_second_write() {
    let w = World::fresh().await;
    migrations::apply(&w.mongo.db).await.expect("second run changes nothing");
    let org = w.org_with_credits(10).await;
    let interview = w.reserved_interview(org, 5).await;
    w.settlement()
        .settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(120), ctx())
        .await
        .unwrap();
    let mut settle = w.ledger(interview).await.into_iter().find(|e| e.kind == LedgerType::Settle).unwrap();
    settle.id = bson::oid::ObjectId::new();
    let err = w.store.ledger().insert_one(&settle).await.unwrap_err();
    assert!(sophia_credits::error::is_duplicate_key(&err), "{err}");
    w.assert_invariants().await;
}

/// The race of two deliveries, made deterministic: B reads the interview (unsettled), A settles
/// it completely, then B runs its transaction. B's claim matches nothing, B writes nothing and
/// does not publish. (Ten truly concurrent deliveries and claims need a server that runs them
/// concurrently and isolates transactions: see `settlement_transactions.rs`; nx-27017 serialises
/// them, and an aborting loser rolls back the winner's writes.)
#[tokio::test]
async fn a_delivery_that_loses_the_race_after_its_read_writes_nothing() {
    use sophia_credits::SettleKind;

    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    let kind = SettleKind::Completed { completed_at: at("2026-12-02T17:30:00Z"), duration_seconds: secs(600) };
    let late =
        w.settlement().prepare(interview.oid(), org.oid(), kind).await.unwrap().expect("unsettled when B reads it");

    let publisher = RecordingPublisher::default();
    let first = w
        .settlement()
        .settle_completed_and_publish(&completed(interview, org, "2026-12-02T17:30:00Z", 600), &publisher, ctx())
        .await
        .unwrap();
    assert!(first.outcome.settled());
    let ledger = w.ledger(interview).await.len();

    assert_eq!(w.settlement().execute(late, ctx()).await.unwrap(), SettleOutcome::AlreadySettled);
    assert_eq!(w.ledger(interview).await.len(), ledger);
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 10);
    assert_eq!(publisher.sent().len(), 1);
    assert_eq!(w.org_credits(org).await, (90, 0));
    w.assert_invariants().await;
}

/// The test server's gap that `scripts/tools/nx_launcher.py` closes: `$inc` of a dotted path must
/// change the nested field (the organization's `credits.available`), not add a top-level key.
#[tokio::test]
async fn nested_inc_updates_the_nested_field() {
    let w = World::fresh().await;
    let coll = w.mongo.db.collection::<bson::Document>("gap");
    coll.insert_one(doc! {"_id": 1, "credits": {"available": 0_i64}}).await.unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"credits.available": 5_i64}}).await.unwrap();
    let d = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(int(&d, "credits.available"), Some(5), "{d}");
    assert!(d.get("credits.available").is_none(), "no literal dotted key: {d}");
}

/// Counts the database commands of one settlement with command monitoring: the read, the claim,
/// the lots read, ONE update command for all its lots, the organization, the ledger, the outbox,
/// the commit.
#[tokio::test]
async fn a_settlement_takes_a_known_small_number_of_round_trips() {
    use std::sync::{Arc, Mutex};

    use futures::TryStreamExt;
    use mongodb::event::EventHandler;
    use mongodb::event::command::CommandEvent;
    use sophia_credits::settlement::ROUND_TRIPS_COMPLETED;

    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    let completed_interview = w.reserved_interview(org, 30).await;
    let failed_interview = w.reserved_interview(org, 30).await;
    // A reservation over two lots: 5 credits on the lot expiring first, 15 on the later one.
    let two_lot_org = seed::create_organization(&w.store, "Two lots").await.unwrap();
    seed::grant_lot(&w.store, two_lot_org, 5, Utc::now() + Duration::days(10)).await.unwrap();
    seed::grant_lot(&w.store, two_lot_org, 50, Utc::now() + Duration::days(30)).await.unwrap();
    let two_lot_interview = w.reserved_interview(two_lot_org, 20).await;

    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = commands.clone();
    let mut options = mongodb::options::ClientOptions::parse(harness::mongo_uri()).await.unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Started(s) = e {
            seen.lock().unwrap().push(s.command_name);
        }
    }));
    let client = mongodb::Client::with_options(options).unwrap();
    let service = sophia_credits::SettlementService::new(client.clone(), client.database(w.mongo.db.name()));

    service
        .settle_completed_interview(completed_interview, org, at("2026-12-02T17:30:00Z"), secs(600), ctx())
        .await
        .unwrap();
    let names = std::mem::take(&mut *commands.lock().unwrap());
    assert_eq!(names, ["find", "update", "find", "update", "update", "insert", "insert", "commitTransaction"]);
    assert_eq!(names.len(), ROUND_TRIPS_COMPLETED);

    // Two lots: still one `update` command for the lots (one statement each).
    service
        .settle_completed_interview(two_lot_interview, two_lot_org, at("2026-12-02T17:30:00Z"), secs(600), ctx())
        .await
        .unwrap();
    let names = std::mem::take(&mut *commands.lock().unwrap());
    assert_eq!(names.len(), ROUND_TRIPS_COMPLETED, "{names:?}");
    let lots: Vec<bson::Document> =
        w.mongo.db.collection("creditLots").find(doc! {}).await.unwrap().try_collect().await.unwrap();
    let two_lots: Vec<_> = lots.iter().filter(|l| l.get_object_id("organizationId") == Ok(two_lot_org.oid())).collect();
    assert_eq!(two_lots.len(), 2);
    assert!(two_lots.iter().all(|l| int(l, "reserved") == Some(0)), "both lots settled: {two_lots:?}");

    service.settle_failed_interview(failed_interview, org, at("2026-12-02T17:30:00Z"), ctx()).await.unwrap();
    let names = std::mem::take(&mut *commands.lock().unwrap());
    assert_eq!(names.len(), ROUND_TRIPS_COMPLETED - 1, "no outbox insert: {names:?}");

    // A duplicate: one read, no transaction.
    service
        .settle_completed_interview(completed_interview, org, at("2026-12-02T17:30:00Z"), secs(600), ctx())
        .await
        .unwrap();
    assert_eq!(std::mem::take(&mut *commands.lock().unwrap()), ["find"]);
    w.assert_invariants().await;
}

/// The test server's gap (fixed in scripts/tools/nx_launcher.py): a filter on an ObjectId field
/// other than `_id` must match in finds and updates, as the settlement claim and the lot reads
/// rely on it.
#[tokio::test]
async fn object_id_fields_match_by_equality() {
    use futures::TryStreamExt;
    let w = World::fresh().await;
    let coll = w.mongo.db.collection::<bson::Document>("gap_oid");
    let org = bson::oid::ObjectId::new();
    coll.insert_one(doc! {"_id": 1, "organizationId": org}).await.unwrap();
    assert_eq!(coll.find(doc! {"organizationId": org}).await.unwrap().try_collect::<Vec<_>>().await.unwrap().len(), 1);
    let r = coll
        .update_one(doc! {"_id": 1, "organizationId": org, "settledAt": null}, doc! {"$set": {"x": 1}})
        .await
        .unwrap();
    assert_eq!(r.matched_count, 1);
}

/// The transaction loop runs the body again after a transient failure (here a guarded write's
/// conflict) and gives up before the record's deadline instead of the driver's 120 s.
#[tokio::test]
async fn transient_failures_are_retried_within_the_deadline_only() {
    use std::time::Duration;

    use sophia_credits::txn::{Finish, RetryPolicy, run_transaction};
    use tokio::time::Instant;

    let w = World::fresh().await;
    let mut attempts = 0;
    let value = run_transaction(&w.mongo.client, &RetryPolicy::default(), async |_s: &mut mongodb::ClientSession| {
        attempts += 1;
        if attempts < 3 { Err(CreditsError::Conflict { what: "test" }) } else { Ok(Finish::Commit(attempts)) }
    })
    .await
    .unwrap();
    assert_eq!(value, 3);

    let started = Instant::now();
    let policy = RetryPolicy::with_deadline(Some(Instant::now() + Duration::from_secs(2)));
    let err = run_transaction(
        &w.mongo.client,
        &policy,
        async |_s: &mut mongodb::ClientSession| -> Result<Finish<()>, CreditsError> {
            Err(CreditsError::Conflict { what: "test" })
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CreditsError::RetryBudgetExhausted { attempts, .. } if attempts > 1), "{err}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(started.elapsed() < Duration::from_secs(2), "stopped before the deadline: {:?}", started.elapsed());

    // A permanent error is not retried.
    let mut calls = 0;
    let err = run_transaction(
        &w.mongo.client,
        &RetryPolicy::default(),
        async |_s: &mut mongodb::ClientSession| -> Result<Finish<()>, CreditsError> {
            calls += 1;
            Err(CreditsError::InterviewNotFound { interview_id: bson::oid::ObjectId::new() })
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CreditsError::InterviewNotFound { .. }));
    assert_eq!(calls, 1);
}
