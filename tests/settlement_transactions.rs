//! Guarantees that need real MongoDB transactions (a replica set): run where the MongoDB under
//! test reports `setName` (e.g. the GitHub Actions workflow's `mongo:7 --replSet rs0`), and print
//! a SKIPPED line on nx-27017, whose transactions are savepoints on one shared connection.

mod settlement_common;

use bson::doc;
use settlement_common::{at, ctx, secs, world};
use sophia_credits::model::{LedgerType, OutboxEntry};
use sophia_credits::{CreditsError, Disposition, SettleOutcome};

/// A settlement that fails after its claim and writes (here: its outbox insert hits a unique
/// `_id`) aborts as a whole, while another settlement of the same organization, committed at the
/// same time, stays.
#[tokio::test]
async fn an_aborted_settlement_leaves_nothing_behind_and_other_writers_alone() {
    let w = world().await;
    if !harness::requires_transactions(&w.mongo, "an_aborted_settlement_leaves_nothing_behind_and_other_writers_alone")
        .await
    {
        return;
    }
    let org = w.org_with_credits(100).await;
    let doomed = w.reserved_interview(org, 20).await;
    let fine = w.reserved_interview(org, 20).await;
    // Something already holds the doomed interview's outbox id: its transaction's last insert fails.
    w.mongo
        .db
        .collection::<bson::Document>("outbox")
        .insert_one(doc! {"_id": OutboxEntry::report_generate_id(doomed.oid()), "status": "SQUATTER"})
        .await
        .unwrap();

    let (a, b) = tokio::join!(
        w.service.settle_completed_interview(doomed, org, at("2026-12-02T17:30:00Z"), secs(600), ctx()),
        w.service.settle_completed_interview(fine, org, at("2026-12-02T17:30:00Z"), secs(600), ctx()),
    );
    let err = a.unwrap_err();
    assert!(matches!(err, CreditsError::Mongo { .. }), "{err}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(b.unwrap().settled());

    let doomed_doc = w.store.interview(doomed.oid()).await.unwrap().unwrap();
    assert!(doomed_doc.settled_at.is_none(), "the claim was rolled back");
    assert_eq!(w.ledger_sum(doomed, LedgerType::Settle).await, 0);
    assert_eq!(w.ledger_sum(doomed, LedgerType::Release).await, 0);
    assert_eq!(w.ledger_sum(fine, LedgerType::Settle).await, 10);
    // 100 - 20 (doomed, still reserved) - 10 (fine consumed) = 70 available, 20 reserved.
    assert_eq!(w.org_credits(org).await, (70, 20));
    w.assert_invariants().await;
}

/// Many settlements of different interviews of one organization at once, all on the same lot:
/// they conflict on the lot and the organization, MongoDB reports write conflicts
/// (TransientTransactionError) and the retry loop runs them again until every one is settled.
#[tokio::test]
async fn write_conflicts_are_retried_and_every_settlement_ends_correct() {
    let w = world().await;
    if !harness::requires_transactions(&w.mongo, "write_conflicts_are_retried_and_every_settlement_ends_correct").await
    {
        return;
    }
    let org = w.org_with_credits(200).await;
    let mut interviews = Vec::new();
    for _ in 0..8 {
        interviews.push(w.reserved_interview(org, 10).await);
    }
    let results = futures::future::join_all(
        interviews
            .iter()
            .map(|i| w.service.settle_completed_interview(*i, org, at("2026-12-02T17:30:00Z"), secs(300), ctx())),
    )
    .await;
    for r in &results {
        assert!(matches!(r, Ok(SettleOutcome::Settled(s)) if s.consumed == 5), "{r:?}");
    }
    assert_eq!(w.org_credits(org).await, (200 - 8 * 5, 0));
    assert_eq!(w.lots(org).await[0].remaining, 160);
    w.assert_invariants().await;
}

/// Ten concurrent deliveries of one interview, settle and publish, with real isolation: the
/// losers see a write conflict (retried) or the claim already taken; exactly one settles and one
/// `report.generate` is published.
#[tokio::test]
async fn concurrent_duplicate_deliveries_settle_and_publish_exactly_once() {
    let w = world().await;
    if !harness::requires_transactions(&w.mongo, "concurrent_duplicate_deliveries_settle_and_publish_exactly_once")
        .await
    {
        return;
    }
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    let publisher = settlement_common::RecordingPublisher::default();
    let message = sophia_contracts::InterviewCompleted {
        interview_id: interview,
        organization_id: org,
        completed_at: at("2026-12-02T17:30:00Z"),
        duration_seconds: secs(600),
    };
    let results =
        futures::future::join_all((0..10).map(|_| w.service.settle_completed_and_publish(&message, &publisher, ctx())))
            .await;
    let settled = results.iter().filter(|r| matches!(r, Ok(r) if r.outcome.settled())).count();
    assert_eq!(settled, 1, "{results:?}");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 10);
    assert_eq!(w.ledger(interview).await.len(), 3, "RESERVE, SETTLE, RELEASE once each");
    assert!(
        !publisher.sent().is_empty(),
        "published; a delivery that finds the entry still pending while the winner publishes may publish it again, which is harmless (DESIGN.md)"
    );
    assert_eq!(w.org_credits(org).await, (90, 0));
    w.assert_invariants().await;
}

/// Ten claims of one interview at once (the claim's filter and update, outside transactions) on
/// a server that runs them concurrently: exactly one matches. This is the property every
/// settlement's exactly-once rests on. (On nx-27017, which serialises every command, it could
/// not fail, so it lives here.)
#[tokio::test]
async fn ten_concurrent_claims_on_a_replica_set_match_exactly_once() {
    use sophia_credits::CreditsStore;

    let w = world().await;
    if !harness::requires_transactions(&w.mongo, "ten_concurrent_claims_on_a_replica_set_match_exactly_once").await {
        return;
    }
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    let coll = w.store.interview_documents();
    let claims = (0..10).map(|n| {
        let coll = coll.clone();
        async move {
            coll.update_one(
                CreditsStore::claim_filter(interview.oid(), org.oid(), 30),
                doc! {"$set": {"settledAt": bson::DateTime::now(), "claimedBy": n}},
            )
            .await
            .unwrap()
            .matched_count
        }
    });
    let matched: u64 = futures::future::join_all(claims).await.into_iter().sum();
    assert_eq!(matched, 1);
}
