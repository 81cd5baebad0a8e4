//! What the figures feed the functions: organizations with a lot, reserved interviews, and the
//! SQS events Lambda would deliver for their messages (sent to the queue and received back).

use std::time::{Duration, Instant};

use sophia_contracts::{
    DurationSeconds, InterviewCompleted, InterviewFailed, InterviewId, OrganizationId, ReportGenerate, RequestId,
    Timestamp,
};
use sophia_credits::seed;
use sophia_sqs_producer::Queue;

use super::world::World;
use super::{BenchError, other};

impl World {
    /// `n` organizations with one lot each.
    pub(super) async fn orgs(&self, n: usize) -> Result<Vec<OrganizationId>, BenchError> {
        let store = self.store();
        let mut orgs = Vec::new();
        for i in 0..n {
            let org = seed::create_organization(&store, &format!("Bench organization {i}")).await?;
            seed::grant_lot(&store, org, 10_000, chrono::Utc::now() + chrono::Duration::days(365)).await?;
            orgs.push(org);
        }
        Ok(orgs)
    }

    /// A reserved interview (the library's reservation transaction) with a substantive
    /// transcript, marked completed (or failed).
    pub(super) async fn interview(
        &self,
        org: OrganizationId,
        reserve: i64,
        completed_seconds: Option<u64>,
    ) -> Result<InterviewId, BenchError> {
        let store = self.store();
        let id =
            seed::reserved_interview(&self.mongo.client, &store, org, reserve, sophia_local::demo::transcript(true))
                .await?;
        match completed_seconds {
            Some(s) => {
                seed::mark_completed(&store, id, Timestamp::now(), DurationSeconds::new(s).unwrap_or_default()).await?
            }
            None => seed::mark_failed(&store, id, Timestamp::now()).await?,
        }
        Ok(id)
    }

    /// The SQS event Lambda would deliver for these bodies: sent to `to`, received back
    /// (with their real attributes), left in flight.
    async fn event_of(
        &self,
        to: Queue,
        bodies: &[(String, sophia_contracts::EventType)],
    ) -> Result<serde_json::Value, BenchError> {
        let queue = &self.queues.pair(to.key()).expect("every declared queue is created").source;
        let producer = self.producer();
        for (body, kind) in bodies {
            producer.send(to, body, *kind, &RequestId::from_caller(Some("bench"))).await?;
        }
        let mut messages = Vec::new();
        let until = Instant::now() + Duration::from_secs(20);
        while messages.len() < bodies.len() && Instant::now() < until {
            let out = self
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages((bodies.len() - messages.len()).min(10) as i32)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .message_attribute_names("All")
                .wait_time_seconds(1)
                .send()
                .await
                .map_err(|e| other(aws_sdk_sqs::Error::from(e)))?;
            messages.extend(out.messages.unwrap_or_default());
        }
        if messages.len() != bodies.len() {
            return Err(other(format!(
                "received {} of {} messages back from {}",
                messages.len(),
                bodies.len(),
                queue.name
            )));
        }
        Ok(sophia_local::esm::sqs_event(&messages, &queue.arn, "us-east-1"))
    }

    pub(super) async fn completed_batch(&self, orgs: &[OrganizationId]) -> Result<serde_json::Value, BenchError> {
        let mut bodies = Vec::new();
        for (i, org) in orgs.iter().enumerate() {
            let seconds = 300 + 60 * i as u64;
            let id = self.interview(*org, 30, Some(seconds)).await?;
            let m = InterviewCompleted {
                interview_id: id,
                organization_id: *org,
                completed_at: Timestamp::now(),
                duration_seconds: DurationSeconds::new(seconds).unwrap_or_default(),
            };
            bodies.push((serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::InterviewCompleted));
        }
        self.event_of(Queue::InterviewCompleted, &bodies).await
    }

    pub(super) async fn failed_batch(&self, orgs: &[OrganizationId]) -> Result<serde_json::Value, BenchError> {
        let mut bodies = Vec::new();
        for org in orgs {
            let id = self.interview(*org, 30, None).await?;
            let m = InterviewFailed::new(id, *org, "bench: bot could not join".into(), Timestamp::now());
            bodies.push((serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::InterviewFailed));
        }
        self.event_of(Queue::InterviewCompleted, &bodies).await
    }

    pub(super) async fn report_batch(&self, org: OrganizationId) -> Result<serde_json::Value, BenchError> {
        let id = self.interview(org, 30, Some(900)).await?;
        let m = ReportGenerate { interview_id: id, organization_id: org };
        self.event_of(
            Queue::ReportGenerate,
            &[(serde_json::to_string(&m).map_err(other)?, sophia_contracts::EventType::ReportGenerate)],
        )
        .await
    }
}
