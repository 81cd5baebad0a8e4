//! Guarantees that need real MongoDB transactions (a replica set): run where the MongoDB under
//! test reports `setName` (e.g. the GitHub Actions workflow's `mongo:7 --replSet rs0`), and print
//! a SKIPPED line on nx-27017, whose transactions are savepoints on one shared connection
//! (`SOPHIA_REQUIRE_REPLICA_SET=1`, set by the workflow, turns the skip into a failure).
//!
//! The retry paths of `sophia_credits::txn` are driven here by the server's `failCommand` fail
//! point (needs `--setParameter enableTestCommands=1`), scoped to a client of its own by
//! `appName`, so parallel tests are not affected; the same branches are unit-tested against a
//! scripted session in `functions/credits/src/txn.rs`.

use crate::support::settlement as settlement_common;
use harness::World;

use bson::doc;
use settlement_common::{at, ctx, secs};
use sophia_credits::model::{LedgerType, OutboxEntry};
use sophia_credits::{CreditsError, Disposition, SettleOutcome};

/// A settlement that fails after its claim and writes (here: its outbox insert hits a unique
/// `_id`) aborts as a whole, while another settlement of the same organization, committed at the
/// same time, stays.
#[tokio::test]
async fn an_aborted_settlement_leaves_nothing_behind_and_other_writers_alone() {
    let w = World::fresh().await;
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

    let service = w.settlement();
    let (a, b) = tokio::join!(
        service.settle_completed_interview(doomed, org, at("2026-12-02T17:30:00Z"), secs(600), ctx()),
        service.settle_completed_interview(fine, org, at("2026-12-02T17:30:00Z"), secs(600), ctx()),
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
    let w = World::fresh().await;
    if !harness::requires_transactions(&w.mongo, "write_conflicts_are_retried_and_every_settlement_ends_correct").await
    {
        return;
    }
    let org = w.org_with_credits(200).await;
    let mut interviews = Vec::new();
    for _ in 0..8 {
        interviews.push(w.reserved_interview(org, 10).await);
    }
    let service = w.settlement();
    let results = futures::future::join_all(
        interviews
            .iter()
            .map(|i| service.settle_completed_interview(*i, org, at("2026-12-02T17:30:00Z"), secs(300), ctx())),
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
    let w = World::fresh().await;
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
    let service = w.settlement();
    let results =
        futures::future::join_all((0..10).map(|_| service.settle_completed_and_publish(&message, &publisher, ctx())))
            .await;
    let settled = results.iter().filter(|r| matches!(r, Ok(r) if r.outcome.settled())).count();
    assert_eq!(settled, 1, "{results:?}");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 10);
    assert_eq!(w.ledger(interview).await.len(), 3, "RESERVE, SETTLE, RELEASE once each");
    assert!(
        !publisher.sent().is_empty(),
        "published; a delivery that finds the entry still pending while the winner publishes may publish it again, which is harmless (docs/design.md)"
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

    let w = World::fresh().await;
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

/// A settlement service on a client named `app_name` (the fail point's scope) that records the
/// names of the commands it starts.
async fn service_named(
    w: &World,
    app_name: &str,
) -> (sophia_credits::SettlementService, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use mongodb::event::EventHandler;
    use mongodb::event::command::CommandEvent;

    let commands: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let seen = commands.clone();
    let mut options = mongodb::options::ClientOptions::parse(harness::mongo_uri()).await.unwrap();
    options.app_name = Some(app_name.to_owned());
    options.command_event_handler = Some(EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Started(s) = e {
            seen.lock().unwrap().push(s.command_name);
        }
    }));
    let client = mongodb::Client::with_options(options).unwrap();
    (sophia_credits::SettlementService::new(client.clone(), client.database(w.mongo.db.name())), commands)
}

/// Arms `failCommand` for the client named `app_name`: `command` fails `times` times (or always
/// with `times` 0) with `code` and `labels`.
async fn fail_point(w: &World, app_name: &str, command: &str, times: i32, code: i32, labels: &[&str]) {
    let mode = if times == 0 { bson::Bson::from("alwaysOn") } else { bson::Bson::from(doc! {"times": times}) };
    w.mongo
        .client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": mode,
            "data": {"failCommands": [command], "errorCode": code, "errorLabels": labels, "appName": app_name},
        })
        .await
        .expect("failCommand is available (mongod --setParameter enableTestCommands=1)");
}

async fn fail_point_off(w: &World) {
    w.mongo
        .client
        .database("admin")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .expect("fail point off");
}

fn count(commands: &std::sync::Mutex<Vec<String>>, name: &str) -> usize {
    commands.lock().unwrap().iter().filter(|c| *c == name).count()
}

/// The server's own errors reach every branch of the retry policy: a `TransientTransactionError`
/// in the body (a write conflict on the lots update), an `UnknownTransactionCommitResult` at
/// commit (the commit alone is retried), a `TransientTransactionError` at commit (the whole
/// transaction again); each settles exactly once with the invariants intact.
#[tokio::test]
async fn fail_points_drive_every_retry_branch_and_each_settles_exactly_once() {
    let w = World::fresh().await;
    if !harness::requires_transactions(&w.mongo, "fail_points_drive_every_retry_branch_and_each_settles_exactly_once")
        .await
    {
        return;
    }
    let org = w.org_with_credits(100).await;
    // (command, times, code, labels, expected count of that command)
    let cases: [(&str, i32, i32, &[&str], usize); 3] = [
        ("update", 1, 112, &["TransientTransactionError"], 4),
        ("commitTransaction", 2, 50, &["UnknownTransactionCommitResult"], 3),
        ("commitTransaction", 1, 251, &["TransientTransactionError"], 2),
    ];
    for (n, (command, times, code, labels, expected)) in cases.into_iter().enumerate() {
        let interview = w.reserved_interview(org, 10).await;
        let app = harness::unique(&format!("failpoint-{n}"));
        let (service, commands) = service_named(&w, &app).await;
        fail_point(&w, &app, command, times, code, labels).await;
        let outcome =
            service.settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(300), ctx()).await;
        fail_point_off(&w).await;
        assert!(
            matches!(outcome, Ok(SettleOutcome::Settled(ref s)) if s.consumed == 5),
            "{command}/{labels:?}: {outcome:?}"
        );
        assert!(count(&commands, command) >= expected, "{command}/{labels:?}: retried: {:?}", commands.lock().unwrap());
        assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 5, "{command}: settled once");
        assert_eq!(w.ledger(interview).await.len(), 3, "{command}: RESERVE, SETTLE, RELEASE once each");
    }
    assert_eq!(w.org_credits(org).await, (100 - 3 * 5, 0));
    w.assert_invariants().await;
}

/// A commit whose result stays unknown until the record's deadline: the policy gives up in
/// time with a retryable error, and nothing is committed.
#[tokio::test]
async fn a_commit_that_keeps_failing_gives_up_before_the_deadline_and_commits_nothing() {
    let w = World::fresh().await;
    if !harness::requires_transactions(
        &w.mongo,
        "a_commit_that_keeps_failing_gives_up_before_the_deadline_and_commits_nothing",
    )
    .await
    {
        return;
    }
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 10).await;
    let app = harness::unique("failpoint-always");
    let (service, _) = service_named(&w, &app).await;
    fail_point(&w, &app, "commitTransaction", 0, 50, &["UnknownTransactionCommitResult"]).await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(4);
    let context = sophia_credits::SettleContext { deadline: Some(deadline), now: chrono::Utc::now() };
    let outcome =
        service.settle_completed_interview(interview, org, at("2026-12-02T17:30:00Z"), secs(300), context).await;
    fail_point_off(&w).await;
    let err = outcome.unwrap_err();
    assert!(
        matches!(err, CreditsError::RetryBudgetExhausted { .. } | CreditsError::DeadlineExceeded { .. }),
        "{err:?}"
    );
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(w.store.interview(interview.oid()).await.unwrap().unwrap().settled_at.is_none(), "nothing committed");
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 0);
    w.assert_invariants().await;
}
