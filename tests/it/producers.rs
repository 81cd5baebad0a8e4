//! Producers against the real local SQS (fauxqs): body and both attributes byte for byte, the
//! skip on a missing queue URL, and a message that fails three times landing in the DLQ.

use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use harness::{sqs_client, test_queues};
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, ReportGenerate, RequestId, Timestamp};
use sophia_sqs_producer::{CompletedInput, FailedInput, PublishOutcome, Queue, QueueUrls, SqsProducer};

const INTERVIEW: &str = "65a1b2c3d4e5f60718293a4b";
const ORG: &str = "65a1b2c3d4e5f60718293a4c";

/// A producer that knows the URL of `queue` only.
fn producer_to(client: &aws_sdk_sqs::Client, queue: Queue, url: &str) -> SqsProducer {
    SqsProducer::new(client.clone(), QueueUrls::default().with(queue, url))
}

fn ids() -> (InterviewId, OrganizationId) {
    (INTERVIEW.parse().unwrap(), ORG.parse().unwrap())
}

async fn receive_one(client: &aws_sdk_sqs::Client, url: &str) -> aws_sdk_sqs::types::Message {
    let out = client
        .receive_message()
        .queue_url(url)
        .wait_time_seconds(2)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    let mut messages = out.messages.unwrap_or_default();
    assert_eq!(messages.len(), 1, "exactly one message expected");
    messages.remove(0)
}

fn attr<'a>(m: &'a aws_sdk_sqs::types::Message, name: &str) -> (&'a str, &'a str) {
    let a = &m.message_attributes.as_ref().expect("attributes")[name];
    (a.data_type(), a.string_value().expect("string value"))
}

#[tokio::test]
async fn interview_completed_is_published_with_the_exact_body_and_attributes() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let producer = producer_to(&client, Queue::InterviewCompleted, &queues.interview_completed.source.url);
    let (interview_id, organization_id) = ids();
    let input = CompletedInput {
        interview_id,
        organization_id,
        completed_at: Some("2026-12-02T17:30:00Z".parse::<Timestamp>().unwrap()),
        duration_seconds: DurationSeconds::new(754),
    };
    let outcome = producer.publish_interview_completed(input, &RequestId::from_caller(Some("req-42"))).await.unwrap();
    assert!(matches!(outcome, PublishOutcome::Sent { ref message_id } if !message_id.is_empty()));
    let m = receive_one(&client, &queues.interview_completed.source.url).await;
    assert_eq!(
        m.body(),
        Some(
            r#"{"interviewId":"65a1b2c3d4e5f60718293a4b","organizationId":"65a1b2c3d4e5f60718293a4c","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":754}"#
        )
    );
    assert_eq!(attr(&m, "requestId"), ("String", "req-42"));
    assert_eq!(attr(&m, "eventType"), ("String", "interview.completed"));
}

#[tokio::test]
async fn interview_failed_defaults_failed_at_to_now_and_request_id_to_unknown() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let producer = producer_to(&client, Queue::InterviewCompleted, &queues.interview_completed.source.url);
    let (interview_id, organization_id) = ids();
    let before = chrono::Utc::now();
    let input =
        FailedInput { interview_id, organization_id, failure_reason: "bot lost the call".into(), failed_at: None };
    producer.publish_interview_failed(input, &RequestId::from_caller(None)).await.unwrap();
    let m = receive_one(&client, &queues.interview_completed.source.url).await;
    let body: serde_json::Value = serde_json::from_str(m.body().unwrap()).unwrap();
    assert_eq!(body["type"], "interview.failed");
    assert_eq!(body["failureReason"], "bot lost the call");
    let failed_at: Timestamp = body["failedAt"].as_str().unwrap().parse().unwrap();
    assert!(failed_at.as_datetime() >= before - chrono::Duration::milliseconds(1));
    assert_eq!(attr(&m, "requestId"), ("String", "unknown"));
    assert_eq!(attr(&m, "eventType"), ("String", "interview.failed"));
}

#[tokio::test]
async fn completed_defaults_duration_to_zero() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let producer = producer_to(&client, Queue::InterviewCompleted, &queues.interview_completed.source.url);
    let (interview_id, organization_id) = ids();
    producer
        .publish_interview_completed(
            CompletedInput { interview_id, organization_id, completed_at: None, duration_seconds: None },
            &RequestId::unknown(),
        )
        .await
        .unwrap();
    let m = receive_one(&client, &queues.interview_completed.source.url).await;
    let body: serde_json::Value = serde_json::from_str(m.body().unwrap()).unwrap();
    assert_eq!(body["durationSeconds"], 0);
}

#[tokio::test]
async fn report_generate_carries_the_settlement_request_id() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let producer = producer_to(&client, Queue::ReportGenerate, &queues.report_generate.source.url);
    let (interview_id, organization_id) = ids();
    producer
        .publish_report_generate(
            &ReportGenerate { interview_id, organization_id },
            &RequestId::settlement(interview_id),
        )
        .await
        .unwrap();
    let m = receive_one(&client, &queues.report_generate.source.url).await;
    assert_eq!(
        m.body(),
        Some(r#"{"interviewId":"65a1b2c3d4e5f60718293a4b","organizationId":"65a1b2c3d4e5f60718293a4c"}"#)
    );
    assert_eq!(attr(&m, "requestId"), ("String", "settlement-65a1b2c3d4e5f60718293a4b"));
    assert_eq!(attr(&m, "eventType"), ("String", "report.generate"));
}

#[tokio::test]
async fn a_missing_queue_url_skips_the_publish_and_says_so() {
    let client = sqs_client().await;
    let producer = SqsProducer::new(client, QueueUrls::default());
    let (interview_id, organization_id) = ids();
    let outcome = producer
        .publish_report_generate(&ReportGenerate { interview_id, organization_id }, &RequestId::unknown())
        .await
        .unwrap();
    assert_eq!(outcome, PublishOutcome::Skipped { missing: "REPORT_GENERATE_QUEUE_URL" });
    let outcome = producer
        .publish_interview_completed(
            CompletedInput { interview_id, organization_id, completed_at: None, duration_seconds: None },
            &RequestId::unknown(),
        )
        .await
        .unwrap();
    assert_eq!(outcome, PublishOutcome::Skipped { missing: "INTERVIEW_COMPLETED_QUEUE_URL" });
}

#[tokio::test]
async fn a_publish_to_a_queue_that_does_not_exist_is_an_error() {
    let client = sqs_client().await;
    let url = format!("{}/000000000000/{}", harness::sqs_endpoint(), harness::unique("missing"));
    let producer = producer_to(&client, Queue::ReportGenerate, &url);
    let (interview_id, organization_id) = ids();
    let err = producer
        .publish_report_generate(&ReportGenerate { interview_id, organization_id }, &RequestId::unknown())
        .await;
    assert!(err.is_err(), "{err:?}");
}

#[tokio::test]
async fn queues_get_the_declared_attributes() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let attrs = client
        .get_queue_attributes()
        .queue_url(&queues.report_generate.source.url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(attrs[&QueueAttributeName::VisibilityTimeout], "1800");
    let redrive: serde_json::Value = serde_json::from_str(&attrs[&QueueAttributeName::RedrivePolicy]).unwrap();
    assert_eq!(redrive["deadLetterTargetArn"], queues.report_generate.dlq.arn.as_str());
    assert_eq!(redrive["maxReceiveCount"].to_string().trim_matches('"'), "3");
    let dlq = client
        .get_queue_attributes()
        .queue_url(&queues.report_generate.dlq.url)
        .attribute_names(QueueAttributeName::MessageRetentionPeriod)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(dlq[&QueueAttributeName::MessageRetentionPeriod], "1209600");
}

/// The RedrivePolicy at work: a message received three times without being deleted moves to
/// the DLQ (maxReceiveCount 3). Visibility is shortened on each receive so the test is quick.
#[tokio::test]
async fn a_message_that_fails_three_times_lands_in_the_dlq() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let source = &queues.interview_completed.source.url;
    let producer = producer_to(&client, Queue::InterviewCompleted, source);
    let (interview_id, organization_id) = ids();
    producer
        .publish_interview_completed(
            CompletedInput { interview_id, organization_id, completed_at: None, duration_seconds: None },
            &RequestId::unknown(),
        )
        .await
        .unwrap();
    for attempt in 1..=3 {
        let m = receive_one(&client, source).await;
        let count = m.attributes.as_ref().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount].clone();
        assert_eq!(count, attempt.to_string());
        // The consumer "fails": the message becomes visible again at once.
        client
            .change_message_visibility()
            .queue_url(source)
            .receipt_handle(m.receipt_handle().unwrap())
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
    }
    // The fourth receive moves it to the DLQ instead of delivering it.
    let out = client.receive_message().queue_url(source).wait_time_seconds(1).send().await.unwrap();
    assert!(out.messages.unwrap_or_default().is_empty(), "the source queue must be empty after 3 failed receives");
    // receive_one long-polls (2 s) until the DLQ holds it.
    let dead = receive_one(&client, &queues.interview_completed.dlq.url).await;
    let body: serde_json::Value = serde_json::from_str(dead.body().unwrap()).unwrap();
    assert_eq!(body["interviewId"], INTERVIEW);
}

#[tokio::test]
async fn interview_failed_over_the_failure_reason_limit_is_refused_before_sending() {
    let client = sqs_client().await;
    let queues = test_queues(&client).await;
    let url = queues.interview_completed.source.url.clone();
    let producer = producer_to(&client, Queue::InterviewCompleted, &url);
    let (interview_id, organization_id) = ids();
    let limit = sophia_contracts::FAILURE_REASON_MAX_CHARS;
    // Counted in characters, as the consumer's contract counts them: multi-byte characters at the limit
    // pass. (Two-byte ones here: fauxqs refuses characters above U+FFFF, which SQS accepts.)
    let at_limit = FailedInput { interview_id, organization_id, failure_reason: "é".repeat(limit), failed_at: None };
    let sent = producer.publish_interview_failed(at_limit, &RequestId::from_caller(Some("req-limit"))).await.unwrap();
    assert!(matches!(sent, PublishOutcome::Sent { .. }));
    let over = FailedInput { interview_id, organization_id, failure_reason: "x".repeat(limit + 1), failed_at: None };
    let err = producer.publish_interview_failed(over, &RequestId::from_caller(Some("req-over"))).await.unwrap_err();
    assert!(matches!(err, sophia_sqs_producer::PublishError::Contract { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("interview.failed not sent: failureReason has {} characters, at most {limit} are accepted", limit + 1)
    );
    let m = receive_one(&client, &url).await;
    assert!(m.body().unwrap().contains("éé"), "only the message at the limit was sent");
}
