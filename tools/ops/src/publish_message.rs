//! `publish completed|failed|report`: one contract message, sent through the project's producer
//! (the same body and `requestId`/`eventType` attributes as the API and settlement send).

use serde::Serialize;
use sophia_contracts::{
    DurationSeconds, EventType, InterviewCompleted, InterviewFailed, InterviewId, MessageAttributes, OrganizationId,
    ReportGenerate, RequestId, Timestamp, to_body,
};
use sophia_declarations::Queue;
use sophia_sqs_producer::{CompletedInput, FailedInput, PublishOutcome, QueueUrls, SqsProducer};

use crate::confirm::Plan;
use crate::queues::{QueueLocator, QueueName};
use crate::{Context, OpsError};

/// A message to publish, already validated by the contract types.
#[derive(Debug, Clone)]
pub enum PublishRequest {
    Completed { message: InterviewCompleted, request_id: RequestId },
    Failed { message: InterviewFailed, request_id: RequestId },
    Report { message: ReportGenerate, request_id: RequestId },
}

impl PublishRequest {
    /// `interview.completed`; `completedAt` defaults to now and `durationSeconds` to 0, as the
    /// API's producer does.
    pub fn completed(
        interview_id: InterviewId,
        organization_id: OrganizationId,
        completed_at: Option<Timestamp>,
        duration_seconds: Option<DurationSeconds>,
        request_id: Option<&str>,
    ) -> Self {
        let message = InterviewCompleted {
            interview_id,
            organization_id,
            completed_at: completed_at.unwrap_or_else(Timestamp::now),
            duration_seconds: duration_seconds.unwrap_or_default(),
        };
        Self::Completed { message, request_id: RequestId::from_caller(request_id) }
    }

    /// `interview.failed`; `failedAt` defaults to now.
    pub fn failed(
        interview_id: InterviewId,
        organization_id: OrganizationId,
        reason: String,
        failed_at: Option<Timestamp>,
        request_id: Option<&str>,
    ) -> Self {
        let message =
            InterviewFailed::new(interview_id, organization_id, reason, failed_at.unwrap_or_else(Timestamp::now));
        Self::Failed { message, request_id: RequestId::from_caller(request_id) }
    }

    pub fn report(interview_id: InterviewId, organization_id: OrganizationId, request_id: RequestId) -> Self {
        Self::Report { message: ReportGenerate { interview_id, organization_id }, request_id }
    }

    pub fn queue(&self) -> QueueName {
        match self {
            Self::Completed { .. } | Self::Failed { .. } => QueueName::of(Queue::InterviewCompleted),
            Self::Report { .. } => QueueName::of(Queue::ReportGenerate),
        }
    }

    pub fn event_type(&self) -> EventType {
        match self {
            Self::Completed { .. } => EventType::InterviewCompleted,
            Self::Failed { .. } => EventType::InterviewFailed,
            Self::Report { .. } => EventType::ReportGenerate,
        }
    }

    /// The exact body that goes on the wire.
    pub fn body(&self) -> String {
        match self {
            Self::Completed { message, .. } => to_body(message),
            Self::Failed { message, .. } => to_body(message),
            Self::Report { message, .. } => to_body(message),
        }
    }

    pub fn interview_id(&self) -> InterviewId {
        match self {
            Self::Completed { message, .. } => message.interview_id,
            Self::Failed { message, .. } => message.interview_id,
            Self::Report { message, .. } => message.interview_id,
        }
    }

    /// What publishing it to `queue_url` would send (see [`crate::confirm`]).
    pub fn plan(&self, ctx: &Context, queue_url: String) -> Plan {
        let mut plan = Plan::new(ctx, format!("publish {}", self.event_type()), queue_url);
        plan.body = serde_json::from_str(&self.body()).ok();
        plan.attributes.insert(MessageAttributes::EVENT_TYPE.to_owned(), self.event_type().to_string());
        plan.attributes.insert(MessageAttributes::REQUEST_ID.to_owned(), self.request_id().to_string());
        match self {
            Self::Completed { message, .. } => plan.effects.push(format!(
                "settles the interview: {} second(s) billed, the rest of the reservation released",
                message.duration_seconds
            )),
            Self::Failed { .. } => plan.effects.push("releases the interview's whole reservation".into()),
            Self::Report { .. } => plan.effects.push("generates the report (an OpenAI call)".into()),
        }
        plan
    }

    pub fn request_id(&self) -> &RequestId {
        match self {
            Self::Completed { request_id, .. } | Self::Failed { request_id, .. } | Self::Report { request_id, .. } => {
                request_id
            }
        }
    }
}

/// What was sent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishReport {
    pub queue: QueueName,
    pub queue_url: String,
    pub event_type: EventType,
    pub request_id: String,
    pub message_id: String,
    pub body: serde_json::Value,
}

impl PublishReport {
    pub fn human(&self) -> String {
        format!(
            "published {} to {} ({})\n  messageId: {}\n  requestId: {}\n  body:      {}\n",
            self.event_type, self.queue, self.queue_url, self.message_id, self.request_id, self.body
        )
    }
}

/// Sends one message to its pipeline's source queue.
pub async fn publish(locator: &QueueLocator, request: PublishRequest) -> Result<PublishReport, OpsError> {
    let queue = request.queue();
    let url = locator.source_url(queue).await?;
    let producer = SqsProducer::new(locator.client().clone(), QueueUrls::default().with(queue.queue(), url.clone()));
    let body = request.body();
    let event_type = request.event_type();
    let request_id = request.request_id().clone();
    let outcome = match request {
        PublishRequest::Completed { message, request_id } => {
            let input = CompletedInput {
                interview_id: message.interview_id,
                organization_id: message.organization_id,
                completed_at: Some(message.completed_at),
                duration_seconds: Some(message.duration_seconds),
            };
            producer.publish_interview_completed(input, &request_id).await?
        }
        PublishRequest::Failed { message, request_id } => {
            let input = FailedInput {
                interview_id: message.interview_id,
                organization_id: message.organization_id,
                failure_reason: message.failure_reason,
                failed_at: Some(message.failed_at),
            };
            producer.publish_interview_failed(input, &request_id).await?
        }
        PublishRequest::Report { message, request_id } => {
            producer.publish_report_generate(&message, &request_id).await?
        }
    };
    let message_id = match outcome {
        PublishOutcome::Sent { message_id } => message_id,
        // The URL was resolved above, so the producer cannot skip; say so plainly if it ever does.
        PublishOutcome::Skipped { missing } => {
            return Err(OpsError::NotConfigured {
                what: missing.to_owned(),
                hint: "the producer skipped the publish".into(),
            });
        }
    };
    Ok(PublishReport {
        queue,
        queue_url: url,
        event_type,
        request_id: request_id.to_string(),
        message_id,
        body: serde_json::from_str(&body).expect("contract bodies are JSON"),
    })
}
