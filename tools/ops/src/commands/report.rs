//! `report retry|failures`: re-publishing report.generate for one interview (never generating
//! synchronously), after a plan of what the consumer will do; and the reports that failed.

use sophia_declarations::Queue;
use std::time::Duration;

use sophia_contracts::RequestId;

use crate::cli::{Ids, ReportCommand};
use crate::confirm::{self, Gate};
use crate::publish_message::PublishRequest;
use crate::queues::QueueName;
use crate::{Context, OpsError, Outcome, admin, listing, predict};

pub async fn run(command: &ReportCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        ReportCommand::Retry { ids, reset_attempts, dry_run } => retry(ctx, ids, *reset_attempts, *dry_run).await,
        ReportCommand::Failures { since, limit } => failures(ctx, *since, *limit).await,
        ReportCommand::Late { since } => Ok(Outcome::ReportLate(Box::new(crate::late::late(ctx, *since).await?))),
    }
}

/// `report retry`: with `reset_attempts`, a FAILED (or stuck) report's attempts are reset first.
pub async fn retry(ctx: &Context, ids: &Ids, reset_attempts: bool, dry_run: bool) -> Result<Outcome, OpsError> {
    let ops_id = ctx.request_id("report-retry").await;
    let request = PublishRequest::report(ids.interview_id, ids.organization_id, RequestId::from_caller(Some(&ops_id)));
    let mut plan = request.plan(ctx, ctx.locator().await.source_url(QueueName::of(Queue::ReportGenerate)).await?);
    plan.action = "re-publish report.generate (report retry)".into();
    plan.effects.clear();
    let fate = match ctx.mongo_for_plan().await {
        Some(mongo) => Some(predict::report(&mongo.db, request_message(ids), reset_attempts).await),
        None => None,
    };
    match &fate {
        Some(f) if f.outcome == "already-completed" => {
            plan.effects.push("report COMPLETED: nothing to do (nothing is reset, nothing is published)".into())
        }
        Some(f) if f.outcome == "dropped" => {
            plan.effects.push(format!("publishes report.generate; the consumer, from the state now: {}", f.text))
        }
        Some(f) => {
            if reset_attempts && f.text.starts_with("attempts reset") {
                plan.effects.push(format!(
                    "resets the report's attemptCount to 0 first (recorded on the report: lastRetry, by {})",
                    ctx.operator("report-retry").by
                ));
            }
            plan.effects.push(format!("publishes report.generate; the consumer, from the state now: {}", f.text));
        }
        None => {
            if reset_attempts {
                plan.effects.push(format!(
                    "resets a FAILED report's attemptCount to 0 first (recorded on the report: lastRetry, by {})",
                    ctx.operator("report-retry").by
                ));
            }
            plan.effects.push(
                "publishes report.generate (what the consumer will do is not predicted: MONGODB_URI is not set)".into(),
            );
        }
    }
    if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[ids.interview_id], dry_run).await? {
        return Ok(Outcome::DryRun(plan));
    }
    Ok(Outcome::ReportRetry(
        admin::report_retry(ctx, ids.interview_id, ids.organization_id, reset_attempts, &ops_id).await?,
    ))
}

/// `report failures`.
pub async fn failures(ctx: &Context, since: Duration, limit: i64) -> Result<Outcome, OpsError> {
    Ok(Outcome::ReportFailures(listing::failures(ctx, since, limit).await?))
}

/// The report.generate message a retry publishes, as the consumer will parse it.
fn request_message(ids: &Ids) -> sophia_contracts::ReportGenerate {
    sophia_contracts::ReportGenerate { interview_id: ids.interview_id, organization_id: ids.organization_id }
}
