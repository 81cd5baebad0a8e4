//! Shared by the report tests: an environment (own database, scripted OpenAI fake, the
//! report-generate handler), SQS events for it, and readers of the stored report.
#![allow(dead_code, unused_imports)]

pub use std::time::Duration;

pub use aws_lambda_events::event::sqs::SqsEvent;
pub use bson::{Bson, DateTime, Document, doc};
pub use lambda_runtime::{Context, LambdaEvent};
pub use report_generate::ReportGenerateHandler;
pub use serde_json::{Value, json};
pub use sophia_contracts::{InterviewId, OrganizationId};
pub use sophia_openai_fake::{Behaviour, FAKE_MODEL, FakeOpenAi, OFFLINE_LABEL};
pub use sophia_platform::mongo::Mongo;
pub use sophia_reports::fixtures::InterviewFixture;
pub use sophia_reports::prompt::{DATA_CLOSE, DATA_OPEN, prompt_version};
pub use sophia_reports::schema::{SCHEMA_NAME, report_schema};
pub use sophia_reports::store::{INTERVIEW_REPORTS, MAX_ATTEMPTS};
pub use sophia_reports::{Generated, OpenAiSettings, ReportModel, ReportService, migrations};
pub use sophia_sqs_consumer::{BatchReport, ConsumerOptions, Outcome};

pub const MODEL: &str = "gpt-4.1-mini";
/// The client's retries of a 429 (not a quota error), a 5xx or a connect error within one attempt.
pub const CLIENT_RETRIES: usize = sophia_reports::openai::MAX_RETRIES;
pub const SECRET_ANSWER: &str = "I moved our billing tables from MySQL to Postgres with dual writes";

pub struct Env {
    pub mongo: Mongo,
    pub fake: FakeOpenAi,
    pub handler: ReportGenerateHandler,
}

pub fn settings(fake: &FakeOpenAi, timeout: Duration) -> OpenAiSettings {
    harness::faults::fake_openai(fake, timeout)
}

pub async fn env_with_timeout(timeout: Duration) -> Env {
    let mongo = harness::test_mongo().await;
    // The explicit migration step (`sophia-ops migrate` on a stage): the unique interviewId index.
    migrations::apply(&mongo.db).await.expect("reports migrations");
    let fake = FakeOpenAi::scripted().expect("fake starts");
    let service = ReportService::new(mongo.db.clone(), ReportModel::new(&settings(&fake, timeout)));
    let handler = ReportGenerateHandler::with_service(mongo.clone(), service, ConsumerOptions::default());
    Env { mongo, fake, handler }
}

pub async fn env() -> Env {
    env_with_timeout(Duration::from_secs(10)).await
}

pub fn event(ids: &[(InterviewId, OrganizationId)]) -> LambdaEvent<SqsEvent> {
    let records: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, (interview, org))| {
            json!({
                "messageId": format!("m-{i}-{interview}"),
                "body": json!({"interviewId": interview.to_string(), "organizationId": org.to_string()}).to_string(),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {
                    "requestId": {"stringValue": format!("settlement-{interview}"), "dataType": "String"},
                    "eventType": {"stringValue": "report.generate", "dataType": "String"}
                },
                "eventSource": "aws:sqs"
            })
        })
        .collect();
    LambdaEvent::new(serde_json::from_value(json!({"Records": records})).unwrap(), Context::default())
}

pub async fn deliver(env: &Env, ids: (InterviewId, OrganizationId)) -> Outcome {
    let report: BatchReport = env.handler.handle_detailed(event(&[ids])).await.expect("no batch error");
    assert_eq!(report.outcomes.len(), 1);
    let outcome = report.outcomes[0].1;
    assert_eq!(report.response.batch_item_failures.len(), usize::from(outcome.is_batch_item_failure()));
    outcome
}

pub async fn stored(env: &Env, interview: InterviewId) -> Option<Document> {
    env.mongo
        .db
        .collection::<Document>(INTERVIEW_REPORTS)
        .find_one(doc! {"interviewId": interview.oid()})
        .await
        .unwrap()
}

pub async fn report_count(env: &Env) -> u64 {
    env.mongo.db.collection::<Document>(INTERVIEW_REPORTS).count_documents(doc! {}).await.unwrap()
}

pub fn int(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{key} is not an integer: {other:?}"),
    }
}

pub fn in_ms(ms: i64) -> DateTime {
    DateTime::from_millis(DateTime::now().timestamp_millis() + ms)
}

/// A report document in a given state, as another worker would have left it.
pub async fn seed_report(
    env: &Env,
    ids: (InterviewId, OrganizationId),
    status: &str,
    attempts: i32,
    lease: Option<DateTime>,
) {
    migrations::apply(&env.mongo.db).await.unwrap();
    env.mongo
        .db
        .collection::<Document>(INTERVIEW_REPORTS)
        .insert_one(doc! {
            "interviewId": ids.0.oid(), "organizationId": ids.1.oid(), "status": status, "attemptCount": attempts,
            "leaseId": if lease.is_some() { Bson::ObjectId(bson::oid::ObjectId::new()) } else { Bson::Null },
            "leaseExpiresAt": lease.map_or(Bson::Null, Bson::DateTime), "lastError": Bson::Null,
            "createdAt": DateTime::now(), "updatedAt": DateTime::now(),
        })
        .await
        .unwrap();
}

pub fn org() -> OrganizationId {
    OrganizationId::new(bson::oid::ObjectId::new())
}
