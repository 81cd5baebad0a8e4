//! The handlers' metrics in CloudWatch Embedded Metric Format, through the interview-completed
//! handler on nx-27017: one line per batch (records by outcome, batch size, time left) and one per
//! settlement (credits moved), each a valid EMF document; no candidate text enters a line.
//! (One test in this file: the metrics sink is process-wide.)

mod settlement_common;

use std::sync::{Arc, Mutex};

use aws_lambda_events::event::sqs::SqsEvent;
use interview_completed::{Handler, SqsReportPublisher};
use lambda_runtime::{Context, LambdaEvent};
use settlement_common::world;
use sophia_sqs_consumer::metrics::{self, NAMESPACE};
use sophia_sqs_producer::{QueueUrls, SqsProducer};

const MARKER: &str = "CANDIDATE-MARKER-7c1f";

#[tokio::test]
async fn a_batch_and_its_settlements_write_emf_lines_with_numbers_only() {
    let w = world().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 20).await;

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = lines.clone();
    metrics::set_sink(Some(Arc::new(move |l: &str| kept.lock().unwrap().push(l.to_owned()))));

    let producer =
        SqsProducer::new(harness::sqs_client().await, QueueUrls { interview_completed: None, report_generate: None });
    let handler = Handler::new(w.mongo.clone(), SqsReportPublisher(producer));
    let body = |s: &str| serde_json::Value::String(s.to_owned());
    let records = vec![
        serde_json::json!({"messageId": "m-ok", "body": body(&format!(
            r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":330}}"#
        )), "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}}),
        serde_json::json!({"messageId": "m-bad", "body": body(&format!(
            r#"{{"type":"interview.failed","interviewId":"nope","organizationId":"{org}","failureReason":"{MARKER}","failedAt":"x"}}"#
        )), "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}}),
    ];
    let payload: SqsEvent = serde_json::from_value(serde_json::json!({"Records": records})).unwrap();
    let report = handler.handle_detailed(LambdaEvent::new(payload, Context::default())).await.unwrap();
    metrics::set_sink(None);
    assert!(report.response.batch_item_failures.is_empty());

    let lines = lines.lock().unwrap().clone();
    for line in &lines {
        assert!(!line.contains(MARKER) && !line.contains(&interview.to_string()), "no data in a metric line: {line}");
    }
    let docs: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    for doc in &docs {
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], NAMESPACE);
        assert!(doc["_aws"]["Timestamp"].as_u64().unwrap() > 1_700_000_000_000);
        for name in directive["Dimensions"][0].as_array().unwrap() {
            assert!(doc[name.as_str().unwrap()].is_string(), "dimension {name} is a member: {doc}");
        }
        for metric in directive["Metrics"].as_array().unwrap() {
            assert!(doc[metric["Name"].as_str().unwrap()].is_number(), "metric {metric} is a member: {doc}");
            assert!(matches!(metric["Unit"].as_str(), Some("Count" | "Milliseconds")));
        }
    }
    let settlement = docs.iter().find(|d| d.get("InterviewsSettled").is_some()).expect("a settlement line");
    assert_eq!(settlement["CreditsConsumed"], 5.0, "floor(330 / 60)");
    assert_eq!(settlement["CreditsReleased"], 15.0, "20 reserved, 5 consumed");
    let batch = docs.iter().find(|d| d.get("BatchSize").is_some()).expect("a batch line");
    assert_eq!(batch["BatchSize"], 2.0);
    assert_eq!(batch["RecordsProcessed"], 1.0);
    assert_eq!(batch["RecordsDroppedInvalid"], 1.0);
}
