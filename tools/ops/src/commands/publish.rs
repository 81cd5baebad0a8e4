//! `publish completed|failed|report`: one message, built and checked by the message contracts,
//! sent once its plan (what the consumer will do with it, from the state now) passes the gate.

use crate::cli::PublishCommand;
use crate::confirm::{self, Gate};
use crate::publish_message::{self, PublishRequest};
use crate::{Context, OpsError, Outcome, predict};

/// The audit name of each publish command (see [`crate::mutating_name`]); its messages'
/// request ids are made with it.
pub fn audit_name(command: &PublishCommand) -> &'static str {
    match command {
        PublishCommand::Completed { .. } => "publish-completed",
        PublishCommand::Failed { .. } => "publish-failed",
        PublishCommand::Report { .. } => "publish-report",
    }
}

pub async fn run(command: &PublishCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    let ops_id = ctx.request_id(audit_name(command)).await;
    let (request, dry_run) = match command {
        PublishCommand::Completed { ids, completed_at, duration_seconds, request_id, dry_run } => (
            PublishRequest::completed(
                ids.interview_id,
                ids.organization_id,
                *completed_at,
                Some(*duration_seconds),
                Some(request_id.as_deref().unwrap_or(&ops_id)),
            ),
            *dry_run,
        ),
        PublishCommand::Failed { ids, reason, failed_at, request_id, dry_run } => (
            PublishRequest::failed(
                ids.interview_id,
                ids.organization_id,
                reason.clone(),
                *failed_at,
                Some(request_id.as_deref().unwrap_or(&ops_id)),
            ),
            *dry_run,
        ),
        PublishCommand::Report { ids, request_id, dry_run } => (
            PublishRequest::report(
                ids.interview_id,
                ids.organization_id,
                sophia_contracts::RequestId::from_caller(Some(request_id.as_deref().unwrap_or(&ops_id))),
            ),
            *dry_run,
        ),
    };
    let locator = ctx.locator().await;
    let mut plan = request.plan(ctx, locator.source_url(request.queue()).await?);
    if let Some(mongo) = ctx.mongo_for_plan().await {
        let fate = predict::message(Some(&mongo), request.queue(), &request.body(), false).await;
        plan.effects = vec![format!("the consumer, from the state now: {}", fate.text)];
    } else {
        plan.effects.push("(what the consumer will do is not predicted: MONGODB_URI is not set)".into());
    }
    let interview = request.interview_id();
    if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[interview], dry_run).await? {
        return Ok(Outcome::DryRun(plan));
    }
    Ok(Outcome::Publish(publish_message::publish(&locator, request).await?))
}
