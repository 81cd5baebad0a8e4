//! Tenant fairness: every message on both queues carries `MessageGroupId` = its organization id
//! (Amazon SQS fair queues on standard queues). The SQS requests are read on the wire (an SDK
//! interceptor records each request body before it is sent) while they go to the real local SQS
//! (fauxqs): the three producer calls, a raw body sent as redrive tools send it, and the
//! settlement's outbox publisher.
//!
//! fauxqs accepts `MessageGroupId` on a standard queue; whether it returns it is printed (1.9.2
//! keeps it only on FIFO queues, and delivers standard queues without fair-queue scheduling).

use std::sync::{Arc, Mutex};

use aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use harness::{sqs_client, test_queues};
use serde_json::Value;
use sophia_contracts::{EventType, InterviewId, OrganizationId, ReportGenerate, RequestId};
use sophia_credits::ReportPublisher;
use sophia_sqs_producer::{CompletedInput, FailedInput, QueueUrls, SqsProducer, SqsReportPublisher};

/// Records the JSON body of every SQS request the client sends.
#[derive(Debug, Default, Clone)]
struct Recorder(Arc<Mutex<Vec<Value>>>);

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "sqs request recorder"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_sqs::error::BoxError> {
        if let Some(bytes) = context.request().body().bytes() {
            self.0.lock().unwrap().push(serde_json::from_slice(bytes).unwrap_or(Value::Null));
        }
        Ok(())
    }
}

impl Recorder {
    /// The `MessageGroupId` of every `SendMessage` (requests with a `MessageBody`), in order.
    fn group_ids(&self) -> Vec<Option<String>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b.get("MessageBody").is_some())
            .map(|b| b["MessageGroupId"].as_str().map(str::to_owned))
            .collect()
    }
}

#[tokio::test]
async fn every_publish_on_both_queues_carries_the_organization_as_message_group_id() {
    let plain = sqs_client().await;
    let queues = test_queues(&plain).await;
    let recorder = Recorder::default();
    let client = aws_sdk_sqs::Client::from_conf(plain.config().to_builder().interceptor(recorder.clone()).build());
    let urls = QueueUrls::default()
        .with(sophia_sqs_producer::Queue::InterviewCompleted, queues.interview_completed.source.url.clone())
        .with(sophia_sqs_producer::Queue::ReportGenerate, queues.report_generate.source.url.clone());
    let producer = SqsProducer::new(client, urls.clone());
    let orgs: Vec<OrganizationId> = (0..4).map(|_| OrganizationId::new(bson::oid::ObjectId::new())).collect();
    let interview = || InterviewId::new(bson::oid::ObjectId::new());
    let request = RequestId::from_caller(Some("fair-1"));

    producer
        .publish_interview_completed(
            CompletedInput {
                interview_id: interview(),
                organization_id: orgs[0],
                completed_at: None,
                duration_seconds: None,
            },
            &request,
        )
        .await
        .unwrap();
    producer
        .publish_interview_failed(
            FailedInput {
                interview_id: interview(),
                organization_id: orgs[1],
                failure_reason: "bot left".into(),
                failed_at: None,
            },
            &request,
        )
        .await
        .unwrap();
    let report = ReportGenerate { interview_id: interview(), organization_id: orgs[2] };
    SqsReportPublisher(producer.clone()).publish(&report, &RequestId::settlement(report.interview_id)).await.unwrap();
    // A raw body, as a redrive or replay tool sends it.
    let raw = format!(r#"{{"interviewId":"{}","organizationId":"{}"}}"#, interview(), orgs[3]);
    producer.send(sophia_sqs_producer::Queue::ReportGenerate, &raw, EventType::ReportGenerate, &request).await.unwrap();

    let expected: Vec<Option<String>> = orgs.iter().map(|o| Some(o.to_string())).collect();
    assert_eq!(recorder.group_ids(), expected);

    // What the local SQS does with it on a standard queue.
    let out = plain
        .receive_message()
        .queue_url(&queues.report_generate.source.url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let messages = out.messages.unwrap_or_default();
    assert_eq!(messages.len(), 2, "both report.generate messages accepted");
    let returned: Vec<Option<String>> = messages
        .iter()
        .map(|m| m.attributes().and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId)).cloned())
        .collect();
    for (m, group) in messages.iter().zip(&returned) {
        if let Some(group) = group {
            assert!(m.body().unwrap().contains(group.as_str()), "the group is the body's organization");
        }
    }
    println!(
        "fauxqs on a standard queue: MessageGroupId accepted; returned on receive: {}",
        if returned.iter().all(Option::is_some) { "yes" } else { "no (kept on FIFO queues only)" }
    );
}
