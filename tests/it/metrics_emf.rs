//! The handlers' metrics in CloudWatch Embedded Metric Format, through the interview-completed
//! handler on nx-27017: one line per batch (records by outcome, batch size, time left) and one per
//! settlement (credits moved), each a valid EMF document; no candidate text enters a line; and
//! every line of the handlers (interview-completed's, report-generate's failure line) carries
//! exactly the dimension sets `declarations/metrics.json` declares for its metrics, from a function
//! the declaration names (the dashboard and alarms are built from the same file).
//! (One handler test in this file: the metrics sink is process-wide.)

use crate::support::alone;
use harness::World;

use std::sync::{Arc, Mutex};

use aws_lambda_events::event::sqs::SqsEvent;
use interview_completed::{Handler, SqsReportPublisher};
use lambda_runtime::{Context, LambdaEvent};
use sophia_sqs_consumer::metrics::{self, Declaration, EmittedBy, NAMESPACE};
use sophia_sqs_producer::{QueueUrls, SqsProducer};

const MARKER: &str = "CANDIDATE-MARKER-7c1f";

#[tokio::test]
async fn a_batch_and_its_settlements_write_emf_lines_with_numbers_only() {
    // The metrics sink is process-wide: every test's handlers would write into it.
    const TEST: &str = "a_batch_and_its_settlements_write_emf_lines_with_numbers_only";
    if !alone::is_alone(module_path!(), TEST) {
        return alone::run_alone(module_path!(), TEST, &[], &[]);
    }
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 20).await;

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = lines.clone();
    metrics::set_sink(Some(Arc::new(move |l: &str| kept.lock().unwrap().push(l.to_owned()))));

    let producer = SqsProducer::new(harness::sqs_client().await, QueueUrls::default());
    let handler = Handler::new(w.mongo.clone(), SqsReportPublisher(producer));
    let body = |s: &str| serde_json::Value::String(s.to_owned());
    // Published 2 s ago: the settlement's TimeToSettlementMs counts from SentTimestamp.
    let sent = (chrono::Utc::now().timestamp_millis() - 2_000).to_string();
    let records = vec![
        serde_json::json!({"messageId": "m-ok", "body": body(&format!(
            r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":330}}"#
        )), "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": sent}, "messageAttributes": {}}),
        serde_json::json!({"messageId": "m-bad", "body": body(&format!(
            r#"{{"type":"interview.failed","interviewId":"nope","organizationId":"{org}","failureReason":"{MARKER}","failedAt":"x"}}"#
        )), "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}}),
    ];
    let payload: SqsEvent = serde_json::from_value(serde_json::json!({"Records": records})).unwrap();
    let report = handler.handle_with_report(LambdaEvent::new(payload, Context::default())).await.unwrap();
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
    for doc in &docs {
        assert_matches_declaration(doc, "interview-completed");
    }
    let settlement = docs.iter().find(|d| d.get("InterviewsSettled").is_some()).expect("a settlement line");
    assert_eq!(settlement["CreditsConsumed"], 5.0, "floor(330 / 60)");
    assert_eq!(settlement["CreditsReleased"], 15.0, "20 reserved, 5 consumed");
    let to_settlement =
        settlement["TimeToSettlementMs"].as_f64().expect("the time to settlement, on the settlement's line");
    assert!((2_000.0..60_000.0).contains(&to_settlement), "from SentTimestamp, 2 s ago: {to_settlement}");
    let batch_line = docs.iter().find(|d| d.get("BatchSize").is_some()).unwrap();
    assert!(batch_line.get("TimeToSettlementMs").is_none(), "once per settlement, not per batch");
    let batch = docs.iter().find(|d| d.get("BatchSize").is_some()).expect("a batch line");
    assert_eq!(batch["BatchSize"], 2.0);
    assert_eq!(batch["RecordsProcessed"], 1.0);
    assert_eq!(batch["RecordsDroppedInvalid"], 1.0);
}

/// Each directive's `Dimensions` are exactly the declared sets of each of its metrics, every metric
/// is declared as emitted by `function`, and every declared metric of the line is in a directive.
fn assert_matches_declaration(doc: &serde_json::Value, function: &str) {
    let declaration = Declaration::embedded();
    for directive in doc["_aws"]["CloudWatchMetrics"].as_array().expect("directives") {
        assert_eq!(directive["Namespace"], declaration.namespace.as_str());
        for metric in directive["Metrics"].as_array().unwrap() {
            let name = metric["Name"].as_str().unwrap();
            let spec = declaration.metric(name).unwrap_or_else(|| panic!("{name} is not in declarations/metrics.json"));
            assert_eq!(directive["Dimensions"], serde_json::json!(spec.dimension_sets), "{name}: {doc}");
            assert_eq!(metric["Unit"], spec.unit.as_str(), "{name}");
            match &spec.emitted_by {
                EmittedBy::Every => {}
                EmittedBy::Functions(f) => {
                    assert!(f.iter().any(|x| x == function), "{name} is not declared for {function}")
                }
            }
        }
    }
}

/// report-generate's failure line: ReportsFailed by ErrorKind and in total (the dashboard's
/// `ReportsFailed` line and the reports-failed alarm read the [Stage, Function] set, which
/// CloudWatch only has when it is emitted: it matches whole dimension sets).
#[test]
fn a_report_failure_is_emitted_by_kind_and_in_total() {
    let failed: Result<sophia_reports::Generated, sophia_reports::ReportError> =
        Err(sophia_reports::ReportError::InterviewNotFound {
            interview_id: "6751a0c2e4b0a1b2c3d4e5f6".parse().unwrap(),
            organization_id: "6751a0c2e4b0a1b2c3d4e5f7".parse().unwrap(),
        });
    let doc = report_generate::report_metrics(&failed).to_emf(1_700_000_000_001);
    assert_matches_declaration(&doc, "report-generate");
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        serde_json::json!([["Stage", "Function", "ErrorKind"], ["Stage", "Function"]])
    );
    assert_eq!(doc["ErrorKind"], "interview_not_found");
    assert_eq!(doc["ReportsFailed"], 1.0);
}

/// report-generate's completed line carries TimeToReportMs, read from the interview's
/// `completedAt` as the API writes it, with the declared dimension set (the dashboard's p95 and
/// the time-to-report alarm read exactly that set); an interview without a `completedAt` date
/// gives no value rather than a wrong one.
#[tokio::test]
async fn the_time_to_report_is_read_from_the_interviews_end_and_emitted_as_declared() {
    let w = World::fresh().await;
    let interviews = w.mongo.db.collection::<bson::Document>("interviews");
    let ended = bson::oid::ObjectId::new();
    let five_minutes_ago = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - 300_000);
    interviews
        .insert_one(bson::doc! {"_id": ended, "status": "COMPLETED", "completedAt": five_minutes_ago})
        .await
        .unwrap();
    let undated = bson::oid::ObjectId::new();
    interviews
        .insert_one(bson::doc! {"_id": undated, "status": "COMPLETED", "completedAt": "yesterday"})
        .await
        .unwrap();

    let ms = report_generate::time_to_report_ms(&w.mongo.db, sophia_contracts::InterviewId::new(ended)).await;
    let ms = ms.expect("a completedAt date gives a time to report");
    assert!((300_000.0..360_000.0).contains(&ms), "about five minutes: {ms}");
    assert_eq!(
        report_generate::time_to_report_ms(&w.mongo.db, sophia_contracts::InterviewId::new(undated)).await,
        None
    );

    let mut line = sophia_sqs_consumer::metrics::Metrics::new("dev", "sophia-dev-report-generate");
    line.add(sophia_sqs_consumer::metrics::Metric::ReportsCompleted, 1.0)
        .add(sophia_sqs_consumer::metrics::Metric::TimeToReportMs, ms);
    let doc = line.to_emf(1_700_000_000_002);
    assert_matches_declaration(&doc, "report-generate");
    assert_eq!(doc["TimeToReportMs"], ms);
    let level = Declaration::embedded().service_level(sophia_sqs_consumer::metrics::Metric::TimeToReportMs).unwrap();
    assert!(level.met_by(ms), "five minutes is within the level {}", level.human());
}
