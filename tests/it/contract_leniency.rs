//! The message contract is as lenient as its producer (docs/design.md "Message contract decisions"):
//! a completed message whose `durationSeconds` has a fraction, as JavaScript's
//! `(end - start) / 1000` gives, is settled through the handler Lambda calls and billed by
//! `floor(durationSeconds / 60)`; a string duration is still dropped, and its value is never in
//! the reason.

use harness::World;

use aws_lambda_events::event::sqs::SqsEvent;
use interview_completed::{Handler, SqsReportPublisher};
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{InterviewId, OrganizationId, Timestamp};
use sophia_credits::model::LedgerType;
use sophia_sqs_consumer::Outcome;
use sophia_sqs_producer::{QueueUrls, SqsProducer};

fn record(message_id: &str, body: &str) -> serde_json::Value {
    serde_json::json!({
        "messageId": message_id,
        "receiptHandle": format!("rh-{message_id}"),
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1764696600000"},
        "messageAttributes": {
            "requestId": {"stringValue": "req-leniency", "dataType": "String"},
            "eventType": {"stringValue": "interview.completed", "dataType": "String"}
        },
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:000000000000:sophia-dev-interview-completed",
        "awsRegion": "eu-west-1"
    })
}

fn event(records: Vec<serde_json::Value>) -> LambdaEvent<SqsEvent> {
    let payload: SqsEvent = serde_json::from_value(serde_json::json!({"Records": records})).unwrap();
    LambdaEvent::new(payload, Context::default())
}

/// The body the API's producer writes, with the duration as raw JSON text.
fn completed_body(i: InterviewId, o: OrganizationId, duration_json: &str) -> String {
    format!(
        r#"{{"interviewId":"{i}","organizationId":"{o}","completedAt":"{}","durationSeconds":{duration_json}}}"#,
        Timestamp::now()
    )
}

#[tokio::test]
async fn fractional_durations_are_settled_and_billed_by_the_floor_of_the_minutes() {
    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    // (wire duration, reserved, billed minutes)
    let cases = [("119.999", 10, 1), ("59.5", 10, 0), ("600.25", 5, 5), ("0.001", 3, 0)];
    let mut interviews = Vec::new();
    for (_, reserved, _) in cases {
        interviews.push(w.reserved_interview(org, reserved).await);
    }
    let producer = SqsProducer::new(harness::sqs_client().await, QueueUrls::default());
    let handler = Handler::new(w.mongo.clone(), SqsReportPublisher(producer));
    let records: Vec<_> = cases
        .iter()
        .zip(&interviews)
        .enumerate()
        .map(|(n, ((duration, _, _), id))| record(&format!("m-{n}"), &completed_body(*id, org, duration)))
        .collect();

    let report = handler.handle_with_report(event(records)).await.unwrap();

    for (n, ((duration, reserved, billed), id)) in cases.iter().zip(&interviews).enumerate() {
        let outcome = report.outcomes.iter().find(|(m, _)| *m == format!("m-{n}")).map(|(_, o)| *o);
        assert_eq!(outcome, Some(Outcome::Processed), "{duration} s is settled, not dropped");
        assert_eq!(w.ledger_sum(*id, LedgerType::Settle).await, *billed, "{duration} s bills {billed}");
        assert_eq!(w.ledger_sum(*id, LedgerType::Release).await, reserved - billed, "{duration} s releases the rest");
    }
    assert_eq!(w.org_credits(org).await, (100 - 6, 0), "1 + 0 + 5 + 0 credits consumed, nothing left reserved");
    w.assert_invariants().await;
}

#[tokio::test]
async fn a_string_duration_is_still_dropped_and_nothing_is_written() {
    let w = World::fresh().await;
    let org = w.org_with_credits(20).await;
    let interview = w.reserved_interview(org, 10).await;
    let producer = SqsProducer::new(harness::sqs_client().await, QueueUrls::default());
    let handler = Handler::new(w.mongo.clone(), SqsReportPublisher(producer));
    let report = handler
        .handle_with_report(event(vec![
            record("m-string", &completed_body(interview, org, r#""60""#)),
            record("m-null", &completed_body(interview, org, "null")),
            record("m-negative", &completed_body(interview, org, "-0.5")),
        ]))
        .await
        .unwrap();
    for id in ["m-string", "m-null", "m-negative"] {
        let outcome = report.outcomes.iter().find(|(m, _)| m == id).map(|(_, o)| *o);
        assert_eq!(outcome, Some(Outcome::DroppedInvalid), "{id}");
    }
    assert_eq!(w.org_credits(org).await, (10, 10), "the reservation is untouched");
    assert!(w.ledger(interview).await.iter().all(|e| e.kind == LedgerType::Reserve));
    w.assert_invariants().await;
}
