//! The MongoDB-side commands of `sophia-ops` against nx-27017 and fauxqs: `outbox flush`
//! publishes a settlement's pending `report.generate`, `invariants check` reports a broken
//! balance with exit code 3, and `report retry` re-publishes (or refuses, with the reason).

use crate::support::ops as ops_support;

use bson::doc;
use bson::oid::ObjectId;
use harness::World;
use ops_support::{drain, run};
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, Timestamp};
use sophia_credits::{SettleContext, seed};
use sophia_ops::{EXIT_INCOMPLETE, OpsError, Outcome, render};
use sophia_reports::fixtures::InterviewFixture;
use sophia_reports::store::ReportStore;

/// An organization with 100 credits and a 12-minute interview settled two minutes ago whose
/// `report.generate` is still pending in the outbox (settled without publishing, as after a
/// failed publish).
async fn settled_with_pending_outbox(w: &World) -> (OrganizationId, InterviewId) {
    let org = seed::create_organization(&w.store, "ops-test").await.unwrap();
    seed::grant_lot(&w.store, org, 100, chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
    let interview = seed::reserved_interview(&w.mongo.client, &w.store, org, 30, doc! {}).await.unwrap();
    let completed_at: Timestamp = "2026-12-02T17:30:00Z".parse().unwrap();
    let duration = DurationSeconds::new(720).unwrap();
    seed::mark_completed(&w.store, interview, completed_at, duration).await.unwrap();
    // Settled (and its outbox entry written) two minutes ago: older than the default threshold.
    let settled_two_minutes_ago =
        SettleContext { deadline: None, now: chrono::Utc::now() - chrono::Duration::minutes(2) };
    w.settlement()
        .settle_completed_interview(interview, org, completed_at, duration, settled_two_minutes_ago)
        .await
        .unwrap();
    (org, interview)
}

#[tokio::test]
async fn outbox_flush_publishes_pending_report_generate_older_than_60s_once() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let (org, interview) = settled_with_pending_outbox(&w).await;
    let Outcome::OutboxFlush(report) = run(&ctx, &["outbox", "flush"]).await.unwrap() else { panic!() };
    assert_eq!((report.published, report.left_pending, report.failed.len()), (1, 0, 0), "{report:?}");
    let sent = drain(&w.sqs, &w.queues.report_generate.source.url).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body().unwrap(), format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#));
    let attrs = sent[0].message_attributes().unwrap();
    assert_eq!(attrs["requestId"].string_value(), Some(format!("settlement-{interview}").as_str()));
    // Published entries are not flushed again.
    let Outcome::OutboxFlush(again) = run(&ctx, &["outbox", "flush", "--older-than", "0s"]).await.unwrap() else {
        panic!()
    };
    assert_eq!(again.published, 0);
}

#[tokio::test]
async fn outbox_flush_leaves_entries_younger_than_the_threshold() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    settled_with_pending_outbox(&w).await;
    let Outcome::OutboxFlush(report) = run(&ctx, &["outbox", "flush", "--older-than", "1h"]).await.unwrap() else {
        panic!()
    };
    assert_eq!(report.published, 0);
    assert!(drain(&w.sqs, &w.queues.report_generate.source.url).await.is_empty());
}

#[tokio::test]
async fn invariants_check_passes_then_reports_a_broken_balance_with_exit_code_3() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let (org, _) = settled_with_pending_outbox(&w).await;
    let org_s = org.to_string();
    let Outcome::InvariantsCheck(ok) = run(&ctx, &["invariants", "check", "--org", &org_s]).await.unwrap() else {
        panic!()
    };
    assert!(ok.ok, "{ok:?}");
    let Outcome::InvariantsCheck(all) = run(&ctx, &["invariants", "check"]).await.unwrap() else { panic!() };
    assert!(all.ok);

    w.store
        .organizations()
        .update_one(doc! {"_id": org.oid()}, doc! {"$inc": {"credits.reserved": 5_i64}})
        .await
        .unwrap();
    let result = run(&ctx, &["--json", "invariants", "check", "--org", &org_s]).await;
    let rendered = render(&result, true);
    assert_eq!(rendered.exit_code, EXIT_INCOMPLETE);
    let v: serde_json::Value = serde_json::from_str(&rendered.stdout).unwrap();
    assert_eq!(v["command"], "invariants-check");
    assert_eq!(v["ok"], false);
    assert!(v["violations"].as_array().unwrap().iter().any(|x| x["invariant"] == 1), "{v}");
}

#[tokio::test]
async fn invariants_check_of_an_unknown_organization_is_an_error() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let unknown = ObjectId::new().to_hex();
    let err = run(&ctx, &["invariants", "check", "--org", &unknown]).await.unwrap_err();
    assert!(matches!(err, OpsError::Domain { .. }) && err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn report_retry_republishes_with_the_operators_request_id() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let (interview, org) =
        InterviewFixture::new(OrganizationId::new(ObjectId::new())).insert(&w.mongo.db).await.unwrap();
    let (i, o) = (interview.to_string(), org.to_string());
    let Outcome::ReportRetry(report) = run(&ctx, &["report", "retry", &i, &o]).await.unwrap() else { panic!() };
    assert_eq!(report.outcome, "published");
    let sent = drain(&w.sqs, &w.queues.report_generate.source.url).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(report.message_id.as_deref(), sent[0].message_id());
    let request_id = sent[0].message_attributes().unwrap()["requestId"].string_value().unwrap().to_owned();
    assert!(request_id.starts_with("ops:report-retry:"), "names the command and the operator: {request_id}");
    assert_eq!(report.request_id.as_deref(), Some(request_id.as_str()));
    assert_eq!(sent[0].body().unwrap(), format!(r#"{{"interviewId":"{i}","organizationId":"{o}"}}"#));
}

#[tokio::test]
async fn report_retry_of_an_exhausted_report_needs_reset_attempts() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let (interview, org) =
        InterviewFixture::new(OrganizationId::new(ObjectId::new())).insert(&w.mongo.db).await.unwrap();
    ReportStore::new(&w.mongo.db)
        .collection()
        .insert_one(doc! {"_id": ObjectId::new(), "interviewId": interview.oid(), "organizationId": org.oid(), "status": "FAILED", "attemptCount": 3_i32})
        .await
        .unwrap();
    let (i, o) = (interview.to_string(), org.to_string());
    let err = run(&ctx, &["report", "retry", &i, &o]).await.unwrap_err();
    assert!(err.to_string().contains("attempts"), "{err}");
    assert!(drain(&w.sqs, &w.queues.report_generate.source.url).await.is_empty(), "nothing published");

    let Outcome::ReportRetry(report) = run(&ctx, &["report", "retry", &i, &o, "--reset-attempts"]).await.unwrap()
    else {
        panic!()
    };
    assert!(report.attempts_reset);
    assert_eq!(drain(&w.sqs, &w.queues.report_generate.source.url).await.len(), 1);
    let stored = ReportStore::new(&w.mongo.db).find(interview).await.unwrap().unwrap();
    assert_eq!(stored.attempt_count, 0);
}

#[tokio::test]
async fn report_retry_of_an_unknown_interview_is_refused() {
    let w = World::fresh().await;
    let ctx = w.ops_context();
    let (i, o) = (ObjectId::new().to_hex(), ObjectId::new().to_hex());
    let err = run(&ctx, &["report", "retry", &i, &o]).await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn migrate_creates_the_indexes_the_flow_relies_on_and_is_idempotent() {
    let w = World::without_migration().await;
    let (mongo, ctx) = (&w.mongo, w.ops_context());
    for _ in 0..2 {
        let Outcome::Migrate(report) = run(&ctx, &["migrate"]).await.unwrap() else { panic!("not a migrate outcome") };
        assert_eq!(report.database, mongo.db.name());
    }
    let ledger = mongo.db.collection::<bson::Document>("creditLedger").list_index_names().await.unwrap();
    assert!(ledger.len() >= 2, "the ledger's idempotency index exists: {ledger:?}");
    let reports = mongo.db.collection::<bson::Document>("interviewReports").list_index_names().await.unwrap();
    assert!(reports.iter().any(|n| n.contains("interviewId")), "one report per interview: {reports:?}");
}
