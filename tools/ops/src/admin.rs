//! The MongoDB-side commands: `outbox flush`, `report retry`, `invariants check`. They call the
//! credits and reports libraries; this module only adapts their results for output.

use sophia_declarations::Queue;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::{BoxError, CreditsStore, flush_pending_outbox, invariants};
use sophia_reports::admin::{RetryOutcome, RetryRequest, retry_report_generation_by};
use sophia_sqs_producer::{PublishOutcome, QueueUrls, SqsProducer, SqsReportPublisher};

use crate::queues::QueueName;
use crate::{Context, OpsError};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxFlushReport {
    pub older_than_seconds: u64,
    pub published: usize,
    pub left_pending: usize,
    pub failed: Vec<OutboxFailure>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxFailure {
    pub outbox_id: String,
    pub error: String,
}

impl OutboxFlushReport {
    pub fn human(&self) -> String {
        let mut s = format!(
            "outbox flush (entries older than {}s): {} published, {} left pending, {} failed\n",
            self.older_than_seconds,
            self.published,
            self.left_pending,
            self.failed.len()
        );
        for f in &self.failed {
            s.push_str(&format!("  {}: {}\n", f.outbox_id, f.error));
        }
        s
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportRetryReport {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    /// `published` or `already-completed`.
    pub outcome: &'static str,
    pub request_id: Option<String>,
    pub message_id: Option<String>,
    pub attempts_reset: bool,
    /// The command for what is left behind: each earlier `report.generate` of this interview in
    /// the DLQ, its exact `dlq delete` (the re-published message replaces it).
    pub next: Vec<String>,
}

impl ReportRetryReport {
    pub fn human(&self) -> String {
        let mut s = match self.outcome {
            "published" => format!(
                "report.generate re-published for interview {} (organization {})\n  requestId: {}\n  messageId: {}\n  attempts reset: {}\n",
                self.interview_id,
                self.organization_id,
                self.request_id.as_deref().unwrap_or("-"),
                self.message_id.as_deref().unwrap_or("-"),
                if self.attempts_reset { "yes" } else { "no" }
            ),
            _ => format!("the report of interview {} is already COMPLETED: nothing published\n", self.interview_id),
        };
        for next in &self.next {
            s.push_str(&format!("next: {next}\n"));
        }
        s
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantViolation {
    pub invariant: u8,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantsReport {
    /// The organization checked, or `None` for all.
    pub organization_id: Option<OrganizationId>,
    pub ok: bool,
    pub violations: Vec<InvariantViolation>,
}

impl InvariantsReport {
    pub fn human(&self) -> String {
        let scope = self.organization_id.map_or("all organizations".to_owned(), |o| format!("organization {o}"));
        if self.ok {
            return format!("invariants 1-5 hold for {scope}\n");
        }
        let mut s = format!("{} invariant violation(s) for {scope}:\n", self.violations.len());
        for v in &self.violations {
            s.push_str(&format!("  {}\n", v.message));
        }
        s
    }
}

/// The `report.generate` publisher of a flush or retry: the project's producer, sending to the
/// report-generate queue this context resolves (environment, env file or `--stage`).
async fn report_producer(ctx: &Context) -> Result<SqsProducer, OpsError> {
    let locator = ctx.locator().await;
    let url = locator.source_url(QueueName::of(Queue::ReportGenerate)).await?;
    Ok(SqsProducer::new(
        locator.client().clone(),
        QueueUrls::default().with(sophia_declarations::Queue::ReportGenerate, url),
    ))
}

/// `outbox flush`: `sophia_credits::flush_pending_outbox` with the SQS producer.
pub async fn outbox_flush(ctx: &Context, older_than: Duration, limit: i64) -> Result<OutboxFlushReport, OpsError> {
    let producer = report_producer(ctx).await?;
    let store = CreditsStore::new(ctx.mongo().await?.db);
    let publisher = SqsReportPublisher(producer);
    let flushed = flush_pending_outbox(&store, &publisher, older_than, limit)
        .await
        .map_err(|e| OpsError::domain("outbox flush", e))?;
    Ok(OutboxFlushReport {
        older_than_seconds: older_than.as_secs(),
        published: flushed.published,
        left_pending: flushed.left_pending,
        failed: flushed.failed.into_iter().map(|(outbox_id, error)| OutboxFailure { outbox_id, error }).collect(),
    })
}

/// `report retry`: `sophia_reports::admin::retry_report_generation`, re-publishing through the
/// SQS producer (never generating synchronously).
pub async fn report_retry(
    ctx: &Context,
    interview_id: InterviewId,
    organization_id: OrganizationId,
    reset_attempts: bool,
    ops_request_id: &str,
) -> Result<ReportRetryReport, OpsError> {
    let producer = report_producer(ctx).await?;
    let db = ctx.mongo().await?.db;
    let sent = Mutex::new(None);
    let request = RetryRequest { interview_id, organization_id, reset_attempts };
    let operator = ctx.operator("report-retry");
    let ops_request_id = sophia_contracts::RequestId::from_caller(Some(ops_request_id));
    let outcome = retry_report_generation_by(&db, request, &operator, |message, _| {
        // The message carries the operator's request id (`ops:report-retry:<who>:<uuid>`).
        let (producer, sent, request_id) = (&producer, &sent, ops_request_id.clone());
        async move {
            match producer.publish_report_generate(&message, &request_id).await? {
                PublishOutcome::Sent { message_id } => {
                    *sent.lock().expect("not poisoned") = Some(message_id);
                    Ok::<(), BoxError>(())
                }
                PublishOutcome::Skipped { missing } => Err(format!("{missing} is not set").into()),
            }
        }
    })
    .await
    .map_err(|e| OpsError::domain("report retry", e))?;
    let message_id = sent.into_inner().expect("not poisoned");
    let next = left_in_the_dlq(ctx, interview_id).await;
    Ok(match outcome {
        RetryOutcome::Published { request_id: _, attempts_reset } => ReportRetryReport {
            interview_id,
            organization_id,
            outcome: "published",
            request_id: Some(ops_request_id.to_string()),
            message_id,
            attempts_reset,
            next,
        },
        RetryOutcome::AlreadyCompleted => ReportRetryReport {
            interview_id,
            organization_id,
            outcome: "already-completed",
            request_id: None,
            message_id: None,
            attempts_reset: false,
            next,
        },
    })
}

/// How many DLQ messages `report retry` looks at for the interview's earlier `report.generate`.
const RETRY_DLQ_SCAN: usize = 100;

/// The exact `dlq delete` of each `report.generate` of `interview_id` in report-generate's DLQ,
/// or, when the DLQ could not be read, the listing that finds them.
async fn left_in_the_dlq(ctx: &Context, interview_id: InterviewId) -> Vec<String> {
    let queue = QueueName::of(Queue::ReportGenerate);
    let locator = ctx.locator().await;
    let mode = crate::progress::ProgressMode::Hidden;
    let wanted = interview_id.to_string();
    match crate::dlq_messages::list(&locator, queue, RETRY_DLQ_SCAN, mode).await {
        Ok(listing) => listing
            .messages
            .iter()
            .filter(|m| m.interview_id.as_deref() == Some(wanted.as_str()))
            .map(|m| {
                format!(
                    "{} (its earlier message, left in the DLQ)",
                    ctx.ops_command(&format!("dlq delete {queue} {}", m.message_id))
                )
            })
            .collect(),
        Err(e) => vec![format!(
            "{} (the DLQ could not be read: {e}): `dlq delete {queue} <messageId>` for this interview's earlier message",
            ctx.ops_command(&format!("dlq list {queue}"))
        )],
    }
}

/// The plan of `outbox flush`: how many entries are pending past the threshold and, for the
/// first 20, what the report consumer will do with each once published. Returns their interviews.
pub async fn outbox_plan(
    mongo: &sophia_platform::mongo::Mongo,
    older_than: Duration,
    limit: i64,
    plan: &mut crate::confirm::Plan,
) -> Result<Vec<InterviewId>, OpsError> {
    let store = CreditsStore::new(mongo.db.clone());
    let before = bson::DateTime::from_millis(
        chrono::Utc::now().timestamp_millis() - i64::try_from(older_than.as_millis()).unwrap_or(0),
    );
    let pending =
        store.pending_outbox_before(before, limit).await.map_err(|e| OpsError::domain("reading the outbox", e))?;
    plan.effects.push(format!(
        "{} pending entr{} will be published",
        pending.len(),
        if pending.len() == 1 { "y" } else { "ies" }
    ));
    for entry in pending.iter().take(20) {
        let message = sophia_contracts::ReportGenerate {
            interview_id: InterviewId::new(entry.interview_id),
            organization_id: OrganizationId::new(entry.organization_id),
        };
        let fate = crate::predict::report(&mongo.db, message, false).await;
        plan.effects.push(format!(
            "entry {} (interview {}): report.generate, then the consumer: {}",
            entry.id, entry.interview_id, fate.text
        ));
    }
    if pending.len() > 20 {
        plan.effects.push(format!("(only the first 20 of {} are listed)", pending.len()));
    }
    Ok(Vec::new())
}

/// `invariants check [--org ID]`: `sophia_credits::invariants`.
pub async fn invariants_check(ctx: &Context, org: Option<OrganizationId>) -> Result<InvariantsReport, OpsError> {
    let store = CreditsStore::new(ctx.mongo().await?.db);
    let found = match org {
        Some(o) => invariants::check_organization(&store, o.oid()).await,
        None => invariants::check_all(&store).await,
    }
    .map_err(|e| OpsError::domain("invariants check", e))?;
    let violations: Vec<InvariantViolation> =
        found.iter().map(|v| InvariantViolation { invariant: v.invariant(), message: v.to_string() }).collect();
    Ok(InvariantsReport { organization_id: org, ok: violations.is_empty(), violations })
}

/// What `migrate` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateReport {
    pub database: String,
}

impl MigrateReport {
    pub fn human(&self) -> String {
        format!("indexes of database {} are in place (credits, ledger, outbox, reports)\n", self.database)
    }
}

/// `migrate`: the explicit, idempotent migration step of both domains (never run by a handler).
pub async fn migrate(ctx: &Context) -> Result<MigrateReport, OpsError> {
    let db = ctx.mongo().await?.db;
    sophia_credits::migrations::apply(&db).await.map_err(|e| OpsError::domain("credits migrations", e))?;
    sophia_reports::migrations::apply(&db).await.map_err(|e| OpsError::domain("reports migrations", e))?;
    Ok(MigrateReport { database: db.name().to_owned() })
}
