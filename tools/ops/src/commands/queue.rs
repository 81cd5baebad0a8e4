//! `queue status|pause|resume|move`: a source queue's state and verdict (changes nothing, receives
//! nothing), stopping and starting its event source mapping (planned, audited), and moving another queue's messages (an old stack's queue or DLQ) into this stack's queue.

use std::time::Duration;

use sophia_contracts::InterviewId;

use crate::cli::QueueCommand;
use crate::confirm::{self, Gate, Plan};
use crate::queues::QueueName;
use crate::redrive::{self, RedriveOptions, SqsMoveIo};
use crate::{Context, OpsError, Outcome, dlq_messages, predict, status};

pub async fn run(command: &QueueCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        QueueCommand::Status { queue, window } => status(ctx, *queue, *window).await,
        QueueCommand::Pause { queue, dry_run } => set_mapping(ctx, *queue, false, *dry_run).await,
        QueueCommand::Resume { queue, dry_run } => set_mapping(ctx, *queue, true, *dry_run).await,
        QueueCommand::Move { from_url, to, into_dlq, max, dry_run, visibility_timeout } => {
            move_from(ctx, from_url, *to, into_dlq, *max, *dry_run, *visibility_timeout).await
        }
    }
}

/// `queue status`.
pub async fn status(ctx: &Context, queue: QueueName, window: Duration) -> Result<Outcome, OpsError> {
    Ok(Outcome::QueueStatus(Box::new(status::queue_status(ctx, queue, window).await?)))
}

/// `queue pause` (`enabled` false) / `queue resume`: the plan (the mapping now, the queue's
/// depth, what changes), the gate, then the change through the same interface `queue status`
/// reads ([`status::Observer`]).
pub async fn set_mapping(ctx: &Context, queue: QueueName, enabled: bool, dry_run: bool) -> Result<Outcome, OpsError> {
    let now = status::queue_status(ctx, queue, Duration::from_secs(900)).await?;
    let Some(mapping) = now.mapping.clone() else {
        return Err(OpsError::Invalid(format!(
            "no event source mapping of {queue} to {}: {}",
            if enabled { "resume" } else { "pause" },
            now.mapping_note.as_deref().unwrap_or("none found")
        )));
    };
    let verb = if enabled { "resume (enable)" } else { "pause (disable)" };
    let mut plan =
        Plan::new(ctx, format!("{verb} the event source mapping {} of {queue}", mapping.uuid), now.queue_url.clone());
    let function = mapping.function_arn.as_deref().map(status::function_name).unwrap_or_default();
    plan.effects.push(format!("mapping now: {} -> {function}, {}", mapping.uuid, mapping.state));
    let waiting = format!(
        "{} message(s) visible, {} in flight",
        now.visible.map_or("?".into(), |n| n.to_string()),
        now.in_flight.map_or("?".into(), |n| n.to_string())
    );
    plan.effects.push(if enabled {
        format!("{function} receives again what waits ({waiting}); each message keeps its receive count")
    } else {
        format!(
            "nothing receives from {queue} until `queue resume {queue}`: {waiting} now, every new message waits; a message older than the retention ({}) is deleted by SQS without reaching the DLQ",
            now.retention_seconds.map_or("?".into(), crate::duration_text::human_duration)
        )
    });
    if (mapping.state == "Enabled") == enabled {
        plan.effects.push(format!("the mapping is already {}: nothing changes", mapping.state));
    }
    if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[], dry_run).await? {
        return Ok(Outcome::DryRun(plan));
    }
    // A stage: through its pause switch (crate::pause_switch), which sets Enabled and nothing else;
    // the local pipeline: through its runner's control channel.
    let after = match status::Observer::for_queue(ctx, &now.queue_url) {
        status::Observer::Aws => {
            crate::pause_switch::set_enabled(ctx, &now.queue_url, queue.as_str(), &mapping, enabled).await
        }
        observer => observer.set_enabled(ctx, &mapping.uuid, enabled).await,
    }
    .map_err(|e| OpsError::Invalid(format!("set Enabled={enabled} on mapping {}: {e}", mapping.uuid)))?;
    Ok(Outcome::QueueMapping(status::MappingChange { queue, before: mapping, after }))
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
    let peeked = dlq_messages::list_from(&locator, from_url, to, 10).await?;
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
                let reset = *into_dlq && to.holds_report_attempts();
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
