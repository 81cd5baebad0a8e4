//! The producers (replacing the API's `sqs.service.ts`, docs/design.md "Its producers"): `publish_interview_completed`,
//! `publish_interview_failed` and `publish_report_generate`.
//!
//! Each publish sends the message's JSON body (no envelope) with the String attributes
//! `requestId` and `eventType`, and `MessageGroupId` = the message's organization id: the tenant of
//! Amazon SQS fair queues on a standard queue (docs/design.md, "Tenant fairness"), derived from the
//! typed message (for a raw body, [`SqsProducer::send`] parses it first). A queue whose URL is not configured is skipped with a warning, and
//! the caller is told so ([`PublishOutcome::Skipped`]); it is not an error, as in the replaced producers (docs/design.md, "Its producers").

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::MessageAttributeValue;
use sophia_contracts::{
    DurationSeconds, EventType, FAILURE_REASON_MAX_CHARS, InterviewCompleted, InterviewFailed, InterviewId,
    InterviewQueueMessage, OrganizationId, QueueMessage, ReportGenerate, RequestId, Timestamp, to_body,
};
pub use sophia_declarations::Queue;
use sophia_platform::config;

/// The queue URLs a producer sends to, by declared queue; a queue without one is "not
/// configured: skip with a warning".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueUrls(std::collections::BTreeMap<Queue, String>);

impl QueueUrls {
    /// Every declared queue's URL variable (`queueUrlEnv`: `INTERVIEW_COMPLETED_QUEUE_URL`, ...)
    /// from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(config::optional)
    }

    /// Every declared queue's URL variable, looked up in `lookup` (an env file, a map).
    pub fn from_lookup(mut lookup: impl FnMut(&'static str) -> Option<String>) -> Self {
        Self(Queue::ALL.into_iter().filter_map(|queue| Some((queue, lookup(queue.url_env())?))).collect())
    }

    /// With `queue`'s URL set to `url`.
    pub fn with(mut self, queue: Queue, url: impl Into<String>) -> Self {
        self.0.insert(queue, url.into());
        self
    }

    /// `queue`'s URL, if configured.
    pub fn get(&self, queue: Queue) -> Option<&str> {
        self.0.get(&queue).map(String::as_str)
    }
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    Sent {
        message_id: String,
    },
    /// The queue URL variable was not set; nothing was sent.
    Skipped {
        missing: &'static str,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// SQS refused or could not be reached. Worth retrying.
    #[error("SendMessage of {event_type} to {queue_url} failed: {source}")]
    Send {
        event_type: EventType,
        queue_url: String,
        #[source]
        source: aws_sdk_sqs::Error,
    },
    /// The message breaks the contract the consumer parses it with: sending it would only have it
    /// dropped there. Not worth retrying; nothing was sent.
    #[error("{event_type} not sent: {reason}")]
    Contract { event_type: EventType, reason: String },
}

/// What the API knows when an interview completes; absent fields take the replaced producers' defaults
/// (`completedAt` = now, `durationSeconds` = 0).
#[derive(Debug, Clone)]
pub struct CompletedInput {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    pub completed_at: Option<Timestamp>,
    pub duration_seconds: Option<DurationSeconds>,
}

/// What the API knows when an interview fails (`failedAt` defaults to now).
#[derive(Debug, Clone)]
pub struct FailedInput {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    pub failure_reason: String,
    pub failed_at: Option<Timestamp>,
}

/// The producer: one SQS client (built once per process) and the configured queue URLs.
#[derive(Debug, Clone)]
pub struct SqsProducer {
    client: Client,
    urls: QueueUrls,
}

impl SqsProducer {
    pub fn new(client: Client, urls: QueueUrls) -> Self {
        Self { client, urls }
    }

    pub fn urls(&self) -> &QueueUrls {
        &self.urls
    }

    pub async fn publish_interview_completed(
        &self,
        input: CompletedInput,
        request_id: &RequestId,
    ) -> Result<PublishOutcome, PublishError> {
        let message = InterviewCompleted {
            interview_id: input.interview_id,
            organization_id: input.organization_id,
            completed_at: input.completed_at.unwrap_or_else(Timestamp::now),
            duration_seconds: input.duration_seconds.unwrap_or_default(),
        };
        let group = message.organization_id.to_string();
        self.send_interview(&to_body(&message), EventType::InterviewCompleted, request_id, &group).await
    }

    pub async fn publish_interview_failed(
        &self,
        input: FailedInput,
        request_id: &RequestId,
    ) -> Result<PublishOutcome, PublishError> {
        let chars = input.failure_reason.chars().count();
        if chars > FAILURE_REASON_MAX_CHARS {
            return Err(PublishError::Contract {
                event_type: EventType::InterviewFailed,
                reason: format!(
                    "failureReason has {chars} characters, at most {FAILURE_REASON_MAX_CHARS} are accepted"
                ),
            });
        }
        let message = InterviewFailed::new(
            input.interview_id,
            input.organization_id,
            input.failure_reason,
            input.failed_at.unwrap_or_else(Timestamp::now),
        );
        let group = message.organization_id().to_string();
        self.send_interview(&to_body(&message), EventType::InterviewFailed, request_id, &group).await
    }

    /// `report.generate`; settlement passes `RequestId::settlement(interview_id)`.
    pub async fn publish_report_generate(
        &self,
        message: &ReportGenerate,
        request_id: &RequestId,
    ) -> Result<PublishOutcome, PublishError> {
        let group = message.organization_id.to_string();
        let body = to_body(message);
        self.send_grouped(Queue::ReportGenerate, &body, EventType::ReportGenerate, request_id, Some(&group)).await
    }

    async fn send_interview(
        &self,
        body: &str,
        event_type: EventType,
        request_id: &RequestId,
        group: &str,
    ) -> Result<PublishOutcome, PublishError> {
        self.send_grouped(Queue::InterviewCompleted, body, event_type, request_id, Some(group)).await
    }

    /// Sends to `queue` a body that is already a valid contract message (e.g. redrive or replay
    /// tools), with `MessageGroupId` = its organization id (see [`group_of_body`]).
    pub async fn send(
        &self,
        queue: Queue,
        body: &str,
        event_type: EventType,
        request_id: &RequestId,
    ) -> Result<PublishOutcome, PublishError> {
        let group = group_of_body(body, event_type);
        if group.is_none() {
            tracing::warn!(eventType = %event_type, requestId = %request_id, "body is not a contract message; sent without a MessageGroupId");
        }
        self.send_grouped(queue, body, event_type, request_id, group.as_deref()).await
    }

    /// [`send`](Self::send) with this `MessageGroupId` (`None`: none).
    pub async fn send_grouped(
        &self,
        queue: Queue,
        body: &str,
        event_type: EventType,
        request_id: &RequestId,
        group: Option<&str>,
    ) -> Result<PublishOutcome, PublishError> {
        let Some(queue_url) = self.urls.get(queue) else {
            let env_name = queue.url_env();
            tracing::warn!(eventType = %event_type, requestId = %request_id, "{env_name} is not set; publish skipped");
            return Ok(PublishOutcome::Skipped { missing: env_name });
        };
        let sent = self
            .client
            .send_message()
            .queue_url(queue_url)
            .message_body(body)
            .message_attributes("requestId", string_attribute(request_id.as_str()))
            .message_attributes("eventType", string_attribute(event_type.as_str()))
            .set_message_group_id(group.map(str::to_owned))
            .send()
            .await
            .map_err(|e| PublishError::Send { event_type, queue_url: queue_url.to_owned(), source: e.into() })?;
        let message_id = sent.message_id.unwrap_or_default();
        tracing::info!(eventType = %event_type, requestId = %request_id, sqsMessageId = %message_id, "published");
        Ok(PublishOutcome::Sent { message_id })
    }
}

/// `report.generate` over SQS as the settlement outbox's publisher (the port is
/// `sophia_credits::ReportPublisher`; this adapter depends on it, not the other way round).
#[derive(Debug, Clone)]
pub struct SqsReportPublisher(pub SqsProducer);

impl sophia_credits::ReportPublisher for SqsReportPublisher {
    async fn publish(
        &self,
        message: &ReportGenerate,
        request_id: &RequestId,
    ) -> Result<sophia_credits::Published, sophia_credits::BoxError> {
        match self.0.publish_report_generate(message, request_id).await {
            Ok(PublishOutcome::Sent { message_id }) => Ok(sophia_credits::Published::Sent { message_id }),
            Ok(PublishOutcome::Skipped { missing }) => {
                Ok(sophia_credits::Published::Skipped { reason: format!("{missing} is not set") })
            }
            Err(e) => Err(Box::new(e)),
        }
    }
}

/// The fair-queue tenant of a raw body: the organization id of the contract message its event
/// type names; `None` when it does not parse. A `match` with no catch-all: a new event type stops
/// the build here until its message's tenant is named (else its messages would go out without a
/// `MessageGroupId`, outside tenant fairness).
pub fn group_of_body(body: &str, event_type: EventType) -> Option<String> {
    match event_type {
        EventType::ReportGenerate => ReportGenerate::parse(body).ok().map(|m| m.organization_id.to_string()),
        EventType::InterviewCompleted | EventType::InterviewFailed => {
            InterviewQueueMessage::parse(body).ok().map(|m| m.organization_id().to_string())
        }
    }
}

fn string_attribute(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder().data_type("String").string_value(value).build().expect("data type is set")
}
