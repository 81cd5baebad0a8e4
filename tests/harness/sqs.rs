//! The local SQS as the tests use it: the client, queues of a test's own, the messages the API
//! publishes, Lambda's SQS events, a queue's depth and draining it.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::types::QueueAttributeName;
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_declarations::Declaration;
use sophia_local::queues::{QueueOverrides, QueueSet, create_queue_set, create_queue_set_with};

use crate::{sqs_endpoint, unique};

/// An SQS client for the local endpoint (a fresh one per test: each test has its own runtime).
pub async fn sqs_client() -> aws_sdk_sqs::Client {
    sophia_platform::sqs::local_client(&sqs_endpoint())
}

/// The four queues of a pipeline, uniquely prefixed, with the declared attributes.
pub async fn test_queues(client: &aws_sdk_sqs::Client) -> QueueSet {
    create_queue_set(client, &unique("t"), Declaration::embedded()).await.expect("queues are created")
}

/// Queues like [`test_queues`] but with a short visibility timeout, so that a failed message
/// reappears within the test (the declared 180 s / 1800 s are checked elsewhere).
pub async fn test_queues_fast(client: &aws_sdk_sqs::Client, visibility_timeout_seconds: u32) -> QueueSet {
    let overrides = QueueOverrides { visibility_timeout_seconds: Some(visibility_timeout_seconds) };
    create_queue_set_with(client, &unique("t"), Declaration::embedded(), &overrides).await.expect("queues are created")
}

/// Receives (and deletes) every message of `url` until it is empty (hidden 60 s while held, so
/// a short-visibility queue cannot hand one back mid-drain).
pub async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    let mut all = Vec::new();
    loop {
        let out = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(60)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive");
        let batch = out.messages.unwrap_or_default();
        if batch.is_empty() {
            return all;
        }
        for m in &batch {
            client
                .delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .expect("delete");
        }
        all.extend(batch);
    }
}

pub const COMPLETED_AT: &str = "2026-12-02T17:30:00.000Z";

/// An `interview.completed` body, as the API publishes it.
pub fn completed_body(interview: InterviewId, org: OrganizationId, seconds: u64) -> String {
    format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"{COMPLETED_AT}","durationSeconds":{seconds}}}"#
    )
}

/// An `interview.failed` body, as the API publishes it.
pub fn failed_body(interview: InterviewId, org: OrganizationId, reason: &str) -> String {
    serde_json::json!({
        "type": "interview.failed",
        "interviewId": interview.to_string(),
        "organizationId": org.to_string(),
        "failureReason": reason,
        "failedAt": COMPLETED_AT,
    })
    .to_string()
}

/// A Lambda SQS event of `(messageId, body)` records, as Lambda delivers it.
pub fn sqs_event(records: &[(String, String)]) -> LambdaEvent<SqsEvent> {
    let records: Vec<serde_json::Value> = records
        .iter()
        .map(|(id, body)| {
            serde_json::json!({
                "messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {}, "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:faults", "awsRegion": "us-east-1",
            })
        })
        .collect();
    LambdaEvent::new(
        serde_json::from_value(serde_json::json!({"Records": records})).expect("SQS event"),
        Context::default(),
    )
}

pub async fn send(client: &aws_sdk_sqs::Client, url: &str, body: &str) {
    client.send_message().queue_url(url).message_body(body).send().await.expect("SendMessage");
}

/// All four queues of the set hold nothing, visible or in flight.
pub async fn assert_queues_empty(client: &aws_sdk_sqs::Client, queues: &QueueSet) {
    for pair in queues.pairs() {
        for queue in [&pair.source, &pair.dlq] {
            assert_eq!(depth(client, &queue.url).await, (0, 0), "{} is empty", queue.name);
        }
    }
}

/// `(visible, in flight)` messages of a queue.
pub async fn depth(client: &aws_sdk_sqs::Client, url: &str) -> (i64, i64) {
    let out = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("GetQueueAttributes");
    let attrs = out.attributes.unwrap_or_default();
    let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse().ok()).unwrap_or(-1);
    (n(QueueAttributeName::ApproximateNumberOfMessages), n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

/// Visible messages of a queue, counted without receiving.
pub async fn visible(client: &aws_sdk_sqs::Client, url: &str) -> u64 {
    let (visible, _) = depth(client, url).await;
    u64::try_from(visible).expect("the queue reports its visible messages")
}

/// [`visible`] once it shows `expected`: a message another receive released (a dry run, a refused
/// command, a move's read) is counted again a moment later, so this polls (every 20 ms, for up to
/// 10 s) and returns the last count, which the caller asserts.
pub async fn visible_when(client: &aws_sdk_sqs::Client, url: &str, expected: u64) -> u64 {
    crate::wait::poll(Duration::from_secs(10), Duration::from_millis(20), || visible(client, url), |n| *n == expected)
        .await
}
