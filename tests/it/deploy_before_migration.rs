//! A later deploy runs the new code before its migration. Under `pulumi up` the functions' code is
//! updated first (their event source mappings already exist and keep delivering), then the stack
//! invokes interview-completed with `{"sophiaOps":"migrate"}` (infra-pulumi/src/stack.ts: the
//! `aws.lambda.Invocation` depends on that function only); every mapping waits for the invocation,
//! but an existing mapping is not stopped while it runs. So every release's code must work on the
//! indexes the previous release's migration left, and on none at all if a migration never ran
//! (docs/deploy.md, "Later deploys").
//!
//! Through the real handlers (the code Lambda calls), against a database whose migration has not
//! run, these tests show exactly what happens:
//! - the previous release's indexes (everything but the report retention TTL index, which the
//!   data-protection work added last): settlement and report generation work, a redelivery changes
//!   nothing, report-generate's cold-start check logs one ERROR for the TTL index, reports are
//!   written with their `retentionExpiresAt` date, and the migration then adds the index without
//!   touching a document (MongoDB deletes expired reports from then on);
//! - no index at all (a database the stage was just pointed at, before the invocation has run):
//!   settlement still settles once (the claim on `settledAt` is the gate, the ledger's unique index
//!   a second line); report-generate refuses every batch, whole, while its unique `interviewId`
//!   index is missing (without it the insert-claim is not insert-if-absent: a redelivery would store
//!   a second report and call the model again), so SQS redelivers the messages and nothing is
//!   generated; once the migration has run, the same process generates each report once.

use crate::support::report as report_support;
use crate::support::settlement as settlement_common;
use harness::World;

use aws_lambda_events::event::sqs::SqsEvent;
use bson::doc;
use harness::logs::LogCapture;
use interview_completed::Handler as SettlementHandler;
use lambda_runtime::{Context, LambdaEvent};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};
use report_support::{Behaviour, Env, InterviewFixture, deliver, event, org, report_count, stored};
use settlement_common::RecordingPublisher;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::model::LedgerType;
use sophia_platform::indexes::{missing_ttl_indexes, missing_unique_indexes};
use sophia_reports::migrations::{INTERVIEW_ID_UNIQUE, REQUIRED, REQUIRED_TTL};
use sophia_reports::store::INTERVIEW_REPORTS;
use sophia_sqs_consumer::Outcome;

/// What the previous release's migration left: the credits indexes as they are now and the
/// reports' unique `interviewId` index, without the retention TTL index added since.
async fn previous_release_indexes(db: &Database) {
    sophia_credits::migrations::apply(db).await.expect("credits indexes");
    let unique = IndexModel::builder()
        .keys(doc! {"interviewId": 1})
        .options(IndexOptions::builder().name(INTERVIEW_ID_UNIQUE.to_owned()).unique(true).build())
        .build();
    db.collection::<bson::Document>(INTERVIEW_REPORTS).create_index(unique).await.expect("the unique index");
}

/// One `interview.completed` SQS event as Lambda delivers it (tests/it/fixtures/settlement-sqs-event.json).
fn completed_event(message_id: &str, interview: InterviewId, org: OrganizationId) -> LambdaEvent<SqsEvent> {
    let body = format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":754}}"#
    );
    let text = include_str!("fixtures/settlement-sqs-event.json")
        .replace("{{MESSAGE_ID}}", message_id)
        .replace("{{EVENT_TYPE}}", "interview.completed")
        .replace("\"{{BODY}}\"", &serde_json::to_string(&body).unwrap());
    LambdaEvent::new(serde_json::from_str(&text).unwrap(), Context::default())
}

/// The ERROR lines of the cold-start index checks for this database.
fn index_errors(logs: &LogCapture, database: &str) -> Vec<(String, String)> {
    logs.lines()
        .into_iter()
        .filter(|l| l["level"] == "ERROR" && l["database"] == database)
        .filter(|l| l["message"].as_str().is_some_and(|m| m.starts_with("required ")))
        .map(|l| (l["function"].as_str().unwrap_or("").to_owned(), l["index"].as_str().unwrap_or("").to_owned()))
        .collect()
}

/// Settles one completed interview through the handler, then its redelivery: both acknowledged,
/// one settlement, one `report.generate`.
async fn settle_twice(world: &World) {
    let org = world.org_with_credits(100).await;
    let interview = world.reserved_interview(org, 30).await;
    let publisher = RecordingPublisher::default();
    let handler = SettlementHandler::new(world.mongo.clone(), publisher.clone());
    for id in ["m-first", "m-redelivered"] {
        let report = handler.handle_with_report(completed_event(id, interview, org)).await.expect("no batch error");
        assert_eq!(report.outcomes, vec![(id.to_owned(), Outcome::Processed)], "{id}");
        assert!(report.response.batch_item_failures.is_empty(), "{id}");
    }
    let consumed = world.ledger_sum(interview, LedgerType::Settle).await;
    assert!(consumed > 0, "the interview was settled: {:?}", world.ledger(interview).await);
    let entries = world.ledger(interview).await.len();
    assert_eq!(publisher.sent().len(), 1, "one report.generate for the interview");
    // A third delivery, from a fresh process (a new cold start), writes nothing either.
    let again = SettlementHandler::new(world.mongo.clone(), publisher.clone());
    again.handle_with_report(completed_event("m-third", interview, org)).await.expect("no batch error");
    assert_eq!(world.ledger(interview).await.len(), entries, "no second settlement");
    assert_eq!(publisher.sent().len(), 1);
    world.assert_invariants().await;
}

/// Generates one report through the handler, then its redelivery: one model call, one report,
/// with its retention date.
async fn report_twice(env: &Env) -> InterviewId {
    let fixture = InterviewFixture::new(org());
    let ids = fixture.insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(env, ids).await, Outcome::Processed);
    let first = stored(env, ids.0).await.expect("report written");
    assert_eq!(first.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(
        first.get_datetime("retentionExpiresAt").unwrap(),
        fixture.document().get_datetime("retentionExpiresAt").unwrap(),
        "the date the TTL index will expire it on is written before the index exists"
    );
    assert_eq!(deliver(env, ids).await, Outcome::Processed, "the redelivery is acknowledged");
    assert_eq!(env.fake.request_count(), 1, "no second model call");
    assert_eq!(report_count(env).await, 1);
    assert_eq!(stored(env, ids.0).await.unwrap(), first, "nothing rewritten");
    ids.0
}

#[tokio::test]
async fn new_code_on_the_previous_releases_indexes_settles_and_reports_then_the_migration_adds_the_ttl_index() {
    let logs = LogCapture::global();
    let w = World::without_migration().await;
    let (mongo, database) = (&w.mongo, w.mongo.db.name().to_owned());
    previous_release_indexes(&mongo.db).await;

    settle_twice(&w).await;
    let env = Env::of(&w, std::time::Duration::from_secs(10));
    let interview = report_twice(&env).await;

    assert_eq!(
        index_errors(logs, &database),
        vec![("report-generate".to_owned(), "interviewReports(retentionExpiresAt) expireAfterSeconds 0".to_owned())],
        "only the index the previous release lacked is reported, once per cold start"
    );
    assert_eq!(missing_ttl_indexes(&mongo.db, REQUIRED_TTL).await.unwrap(), REQUIRED_TTL.to_vec());

    // The stack's invocation, after the code update: what `{"sophiaOps":"migrate"}` runs.
    let before = stored(&env, interview).await.unwrap();
    interview_completed::ops::migrate(&mongo.db).await.expect("the migration runs on a database in use");
    assert_eq!(missing_ttl_indexes(&mongo.db, REQUIRED_TTL).await.unwrap(), vec![]);
    assert_eq!(stored(&env, interview).await.unwrap(), before, "the migration touches no report");
    assert_eq!(report_count(&env).await, 1);
}

#[tokio::test]
async fn new_code_on_a_database_without_any_index_settles_once_and_refuses_reports_until_the_migration() {
    let logs = LogCapture::global();
    let w = World::without_migration().await;
    let (mongo, database) = (&w.mongo, w.mongo.db.name().to_owned());

    // Settlement: the claim on `settledAt` is the gate; the ledger's unique index only a second line.
    settle_twice(&w).await;

    // Reports: refused, whole batch, while `interviewId_unique` is missing; nothing written, no model call.
    let env = Env::of(&w, std::time::Duration::from_secs(10));
    let fixture = InterviewFixture::new(org());
    let ids = fixture.insert(&mongo.db).await.unwrap();
    for _ in 0..2 {
        let refused = env.handler.handle_with_report(event(&[ids])).await.expect_err("refused before the migration");
        assert!(refused.to_string().contains("the whole batch will be retried"), "{refused}");
    }
    assert_eq!(env.fake.request_count(), 0, "no model call");
    assert_eq!(report_count(&env).await, 0, "no report");

    let mut errors = index_errors(logs, &database);
    errors.sort();
    assert_eq!(
        errors,
        vec![
            // settle_twice starts two processes of interview-completed: one ERROR per cold start.
            ("interview-completed".to_owned(), "creditLedger(reference.kind, reference.id, type, lotId)".to_owned()),
            ("interview-completed".to_owned(), "creditLedger(reference.kind, reference.id, type, lotId)".to_owned()),
            ("report-generate".to_owned(), "interviewReports(interviewId)".to_owned()),
            ("report-generate".to_owned(), "interviewReports(retentionExpiresAt) expireAfterSeconds 0".to_owned()),
        ],
        "each missing index named once per cold start, by the function that needs it"
    );

    // The stack's invocation: then the retried message is generated once, by the same process.
    interview_completed::ops::migrate(&mongo.db).await.expect("the migration");
    assert_eq!(missing_unique_indexes(&mongo.db, REQUIRED).await.unwrap(), vec![]);
    assert_eq!(missing_unique_indexes(&mongo.db, interview_completed::ops::REQUIRED_INDEXES).await.unwrap(), vec![]);
    assert_eq!(missing_ttl_indexes(&mongo.db, REQUIRED_TTL).await.unwrap(), vec![]);
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed, "a redelivery is a no-op");
    assert_eq!(env.fake.request_count(), 1, "one model call");
    assert_eq!(report_count(&env).await, 1, "one report");
    assert_eq!(stored(&env, ids.0).await.unwrap().get_str("status").unwrap(), "COMPLETED");
}
