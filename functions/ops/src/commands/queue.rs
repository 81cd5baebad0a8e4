//! `queue status|move`: a source queue's state and verdict (changes nothing, receives nothing),
//! and moving another queue's messages (an old stack's queue or DLQ) into this stack's queue.

use std::time::Duration;

use sophia_contracts::InterviewId;

use crate::cli::QueueCommand;
use crate::confirm::{self, Gate, Plan};
use crate::queues::QueueName;
use crate::redrive::{self, RedriveOptions, SqsMoveIo};
use crate::{Context, OpsError, Outcome, dlq, predict, status};

pub async fn run(command: &QueueCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        QueueCommand::Status { queue, window } => status(ctx, *queue, *window).await,
        QueueCommand::Move { from_url, to, into_dlq, max, dry_run, visibility_timeout } => {
            move_from(ctx, from_url, *to, into_dlq, *max, *dry_run, *visibility_timeout).await
        }
    }
}

/// `queue status`.
pub async fn status(ctx: &Context, queue: QueueName, window: Duration) -> Result<Outcome, OpsError> {
    Ok(Outcome::QueueStatus(Box::new(status::queue_status(ctx, queue, window).await?)))
}

/// `queue move`: a sample of the source's messages, each checked against the destination's
/// contract, through the gate; then receive / check / send / delete.
pub async fn move_from(
    ctx: &Context,
    from_url: &str,
    to: QueueName,
    into_dlq: &bool,
    max: Option<usize>,
    dry_run: bool,
    visibility_timeout: Duration,
) -> Result<Outcome, OpsError> {
    let locator = ctx.locator().await;
    let destination = if *into_dlq { locator.dlq_url(to).await? } else { locator.source_url(to).await? };
    let what = if *into_dlq { format!("the {to} DLQ") } else { format!("the {to} queue") };
    let mut plan = Plan::new(ctx, format!("move every message of {from_url} into {what}"), destination.clone());
    // The source counts too: an old stack's queue is not local either.
    plan.local = plan.local && ctx.is_local(from_url);
    let peeked = dlq::list_from(&locator, from_url, to, 10).await?;
    plan.effects.push(format!(
        "about {} message(s) in {from_url}{}; each body is checked against the {to} contract, an invalid one stays there",
        peeked.approximate_visible.map_or("?".into(), |n| n.to_string()),
        max.map_or(String::new(), |m| format!(" (at most {m} moved)"))
    ));
    let mongo = ctx.mongo_for_plan().await;
    for m in &peeked.messages {
        let line = match &m.contract_error {
            Some(e) => format!("INVALID, stays in place ({e})"),
            None if mongo.is_some() => {
                let reset = *into_dlq && to.is(sophia_declarations::Queue::ReportGenerate);
                let fate = predict::message(mongo.as_ref(), to, &m.body, reset).await;
                format!(
                    "valid; interview {}: {}{}",
                    m.interview_id.as_deref().unwrap_or("-"),
                    if *into_dlq { "once redriven (with the reset), " } else { "" },
                    fate.text
                )
            }
            None => "valid".to_owned(),
        };
        plan.effects.push(format!("sample {}: {line}", m.message_id));
    }
    let ids: Vec<InterviewId> =
        peeked.messages.iter().filter_map(|m| m.interview_id.as_deref()?.parse().ok()).collect();
    let plan = match confirm::gate(ctx, plan, &ids, dry_run).await? {
        Gate::DryRun(plan) => Some(plan),
        Gate::Proceed => None,
    };
    let options = RedriveOptions {
        max,
        dry_run,
        method: redrive::RedriveMethod::ReceiveSendDelete,
        visibility: visibility_timeout,
        progress: ctx.progress,
        ops_request_id: Some(ctx.request_id("queue-move").await),
    };
    let io = SqsMoveIo(locator.client().clone());
    let mut report = redrive::queue_move_to(&locator, from_url, to, &destination, &options, &io).await?;
    report.plan = plan;
    Ok(Outcome::QueueMove(report))
}
