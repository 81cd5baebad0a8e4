//! The Lambda handlers end to end, through the code path Lambda calls: an SQS event JSON in
//! (tests/it/fixtures/settlement-sqs-event.json), an `SqsBatchResponse` out, MongoDB (nx-27017 or
//! `SOPHIA_TEST_MONGODB_URI`) and a real local SQS (fauxqs) for `report.generate`.

use harness::World;

use aws_lambda_events::event::sqs::SqsEvent;
use harness::sqs_client;
use interview_completed::{Handler, SqsReportPublisher};
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{InterviewId, OrganizationId, RequestId};
use sophia_credits::model::OutboxStatus;
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_sqs_consumer::Outcome;
use sophia_sqs_producer::{QueueUrls, SqsProducer};

const FIXTURE: &str = include_str!("fixtures/settlement-sqs-event.json");

/// One SQS record from the fixture, with this body.
fn record(message_id: &str, body: &str, event_type: &str) -> serde_json::Value {
    let text = FIXTURE
        .replace("{{MESSAGE_ID}}", message_id)
        .replace("{{EVENT_TYPE}}", event_type)
        .replace("\"{{BODY}}\"", &serde_json::to_string(body).unwrap());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["Records"][0].clone()
}

fn event(records: Vec<serde_json::Value>) -> LambdaEvent<SqsEvent> {
    let payload: SqsEvent = serde_json::from_value(serde_json::json!({"Records": records})).unwrap();
    LambdaEvent::new(payload, Context::default())
}

fn completed_body(i: InterviewId, o: OrganizationId, seconds: u64) -> String {
    format!(
        r#"{{"interviewId":"{i}","organizationId":"{o}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":{seconds}}}"#
    )
}

fn failed_body(i: InterviewId, o: OrganizationId) -> String {
    format!(
        r#"{{"type":"interview.failed","interviewId":"{i}","organizationId":"{o}","failureReason":"bot lost the call","failedAt":"2026-12-02T17:30:00.000Z"}}"#
    )
}

fn outcome_of(report: &sophia_sqs_consumer::BatchReport, id: &str) -> Outcome {
    report.outcomes.iter().find(|(m, _)| m == id).map(|(_, o)| *o).unwrap()
}

async fn handler_with_queue(
    w: &World,
    report_generate_url: Option<String>,
) -> (Handler<SqsReportPublisher>, aws_sdk_sqs::Client) {
    let client = sqs_client().await;
    let producer = SqsProducer::new(
        client.clone(),
        match report_generate_url {
            Some(url) => QueueUrls::default().with(sophia_sqs_producer::Queue::ReportGenerate, url),
            None => QueueUrls::default(),
        },
    );
    (Handler::new(w.mongo.clone(), SqsReportPublisher(producer)), client)
}

#[tokio::test]
async fn a_batch_is_routed_settled_published_once_and_answered() {
    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    let done = w.reserved_interview(org, 30).await;
    let failed = w.reserved_interview(org, 10).await;
    let other_org = w.org_with_credits(5).await;
    let queues = &w.queues;
    let (handler, client) = handler_with_queue(&w, Some(queues.report_generate.source.url.clone())).await;

    let unknown = InterviewId::new(bson::oid::ObjectId::new());
    let records = vec![
        record("m-completed", &completed_body(done, org, 754), "interview.completed"),
        record("m-failed", &failed_body(failed, org), "interview.failed"),
        record("m-duplicate", &completed_body(done, org, 754), "interview.completed"),
        record("m-invalid", r#"{"interviewId":"nope"}"#, "interview.completed"),
        record("m-wrong-org", &completed_body(done, other_org, 754), "interview.completed"),
        record("m-unknown", &completed_body(unknown, org, 60), "interview.completed"),
    ];
    let report = handler.handle_with_report(event(records.clone())).await.unwrap();
    assert_eq!(outcome_of(&report, "m-completed"), Outcome::Processed);
    assert_eq!(outcome_of(&report, "m-failed"), Outcome::Processed);
    assert_eq!(outcome_of(&report, "m-duplicate"), Outcome::Processed);
    assert_eq!(outcome_of(&report, "m-invalid"), Outcome::DroppedInvalid);
    // docs/design.md: another organization's interview goes to the DLQ on its first delivery; this
    // handler has no queue to send it there (no RecordQueue), so it is retried like an unknown
    // one: never lost (ops_drills.rs runs the DLQ send through the local pipeline).
    assert_eq!(outcome_of(&report, "m-wrong-org"), Outcome::Failed);
    assert_eq!(outcome_of(&report, "m-unknown"), Outcome::Failed);
    // The same code path Lambda calls answers with the records to retry.
    let response = handler.handle(event(records)).await.unwrap();
    let failures: Vec<&str> = response.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
    assert_eq!(failures, ["m-wrong-org", "m-unknown"]);

    let messages = harness::drain(&client, &queues.report_generate.source.url).await;
    assert_eq!(
        messages.len(),
        1,
        "one report.generate for the completed interview, none for the failed one or duplicates"
    );
    assert_eq!(messages[0].body(), Some(format!(r#"{{"interviewId":"{done}","organizationId":"{org}"}}"#).as_str()));
    let attrs = messages[0].message_attributes().unwrap();
    assert_eq!(attrs["requestId"].string_value(), Some(RequestId::settlement(done).as_str()));
    assert_eq!(attrs["eventType"].string_value(), Some("report.generate"));
    assert_eq!(w.org_credits(org).await, (88, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_failed_publish_fails_the_record_and_the_redelivery_publishes_it() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let missing = format!("{}/000000000000/{}", harness::sqs_endpoint(), harness::unique("missing"));
    let (broken, _) = handler_with_queue(&w, Some(missing)).await;
    let body = completed_body(interview, org, 180);

    let first = broken.handle(event(vec![record("m-1", &body, "interview.completed")])).await.unwrap();
    assert_eq!(first.batch_item_failures.len(), 1, "SQS must redeliver it");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Pending);
    w.assert_invariants().await;

    let queues = &w.queues;
    let (fixed, client) = handler_with_queue(&w, Some(queues.report_generate.source.url.clone())).await;
    for _ in 0..2 {
        let again = fixed.handle(event(vec![record("m-1", &body, "interview.completed")])).await.unwrap();
        assert!(again.batch_item_failures.is_empty());
    }
    assert_eq!(harness::drain(&client, &queues.report_generate.source.url).await.len(), 1, "flushed exactly once");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Published);
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_missing_report_queue_url_settles_and_leaves_the_entry_pending() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let (handler, _) = handler_with_queue(&w, None).await;
    let response = handler
        .handle(event(vec![record("m-1", &completed_body(interview, org, 120), "interview.completed")]))
        .await
        .unwrap();
    assert!(response.batch_item_failures.is_empty(), "a skipped publish is not a failure");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Pending);
    w.assert_invariants().await;
}

#[tokio::test]
async fn the_failed_only_handler_settles_failures_and_drops_the_completed_shape() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let failed = w.reserved_interview(org, 10).await;
    let other = w.reserved_interview(org, 10).await;
    let handler = interview_failed::Handler::new(w.mongo.clone());
    let report = handler
        .handle_with_report(event(vec![
            record("m-failed", &failed_body(failed, org), "interview.failed"),
            record("m-completed", &completed_body(other, org, 60), "interview.completed"),
        ]))
        .await
        .unwrap();
    assert_eq!(outcome_of(&report, "m-failed"), Outcome::Processed);
    assert_eq!(outcome_of(&report, "m-completed"), Outcome::DroppedInvalid);
    assert_eq!(w.org_credits(org).await, (40, 10));
    w.assert_invariants().await;
}

#[tokio::test]
async fn an_unreachable_mongodb_fails_the_whole_batch() {
    let settings = MongoSettings {
        uri: format!("mongodb://127.0.0.1:{}/", harness_free_port()),
        database: "unreachable".into(),
        server_selection_timeout: std::time::Duration::from_millis(300),
        allow_standalone: true,
    };
    let mongo = Mongo::connect(&settings).await.unwrap();
    let handler = interview_failed::Handler::new(mongo);
    let o = OrganizationId::new(bson::oid::ObjectId::new());
    let i = InterviewId::new(bson::oid::ObjectId::new());
    let err = handler.handle(event(vec![record("m-1", &failed_body(i, o), "interview.failed")])).await;
    assert!(err.is_err(), "the setup ping fails the invocation: {err:?}");
}

fn harness_free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
