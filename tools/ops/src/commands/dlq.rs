//! `dlq list|show|redrive|delete`: looking at a DLQ (peek: nothing is removed, bodies redacted),
//! moving its messages back to the source queue (for report-generate each report's attempts
//! reset just before its message moves), and dropping one message after its plan.

use std::time::Duration;

use sophia_contracts::InterviewId;

use crate::cli::DlqCommand;
use crate::confirm::{self, Gate, Plan};
use crate::dlq_messages;
use crate::progress::ProgressMode;
use crate::queues::{QueueLocator, QueueName};
use crate::redrive::{self, RedriveMethod, RedriveOptions, ResetReports, SqsMoveIo};
use crate::{Context, OpsError, Outcome, predict};

/// How many DLQ messages a redrive plan lists, at most.
pub const REDRIVE_PLAN_MESSAGES: usize = 50;

pub async fn run(command: &DlqCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        DlqCommand::List { queue, max, show_body } => list(ctx, *queue, *max, *show_body).await,
        DlqCommand::Show { queue, message_id, show_body } => show(ctx, *queue, message_id, *show_body).await,
        DlqCommand::Redrive { queue, max, dry_run, method, visibility_timeout, keep_attempts } => {
            redrive(ctx, *queue, *max, *dry_run, *method, *visibility_timeout, *keep_attempts).await
        }
        DlqCommand::Delete { queue, message_id, dry_run } => delete(ctx, *queue, message_id, *dry_run).await,
    }
}

/// `dlq list`.
pub async fn list(ctx: &Context, queue: QueueName, max: usize, show_body: bool) -> Result<Outcome, OpsError> {
    let mut listing = dlq_messages::list_with(&ctx.locator().await, queue, max, ctx.progress, show_body).await?;
    dlq_messages::attach_reasons(&mut listing, ctx).await;
    Ok(Outcome::DlqList(listing))
}

/// `dlq show`: the message, and for report-generate its report's state.
pub async fn show(ctx: &Context, queue: QueueName, message_id: &str, show_body: bool) -> Result<Outcome, OpsError> {
    let mut shown = dlq_messages::show_with(&ctx.locator().await, queue, message_id, ctx.progress, show_body).await?;
    dlq_messages::attach_report(&mut shown, ctx).await;
    Ok(Outcome::DlqShow(shown))
}

/// `dlq redrive`: the plan through the gate, then the move (with the resets for report-generate
/// unless `keep_attempts`).
pub async fn redrive(
    ctx: &Context,
    queue: QueueName,
    max: Option<usize>,
    dry_run: bool,
    method: RedriveMethod,
    visibility_timeout: Duration,
    keep_attempts: bool,
) -> Result<Outcome, OpsError> {
    let locator = ctx.locator().await;
    let reset = queue.holds_report_attempts() && !keep_attempts;
    if reset && method == RedriveMethod::MoveTask {
        return Err(OpsError::Invalid(format!(
            "StartMessageMoveTask moves every message server-side, so a {queue} redrive cannot reset each report just before its message moves; use --method auto, or --keep-attempts to move without resets"
        )));
    }
    let plan = redrive_plan(ctx, &locator, queue, max, reset).await?;
    let ids: Vec<InterviewId> = plan.1.clone();
    let plan = if dry_run {
        match confirm::gate(ctx, plan.0, &ids, true).await? {
            Gate::DryRun(plan) => Some(plan),
            Gate::Proceed => None,
        }
    } else {
        confirm::gate(ctx, plan.0, &ids, false).await?;
        None
    };
    let options = RedriveOptions {
        max,
        dry_run,
        method,
        visibility: visibility_timeout,
        progress: ctx.progress,
        ops_request_id: Some(ctx.request_id("dlq-redrive").await),
    };
    let io = SqsMoveIo(locator.client().clone());
    let mut report = if reset && dry_run {
        redrive::redrive_prepared(&locator, queue, &options, &io, &redrive::ResetPreview).await?
    } else if reset {
        let db = ctx.mongo().await.map_err(|e| match e {
            OpsError::NotConfigured { .. } => OpsError::NotConfigured {
                what: "MongoDB".into(),
                hint: format!("a {queue} redrive resets each report's attempts before its message moves: set MONGODB_URI (or pass --keep-attempts to move the messages without resets)"),
            },
            other => other,
        })?.db;
        let prepare = ResetReports { db, operator: ctx.operator("dlq-redrive") };
        redrive::redrive_prepared(&locator, queue, &options, &io, &prepare).await?
    } else if ctx.has_mongo() {
        let prepare = redrive::SkipErased { db: ctx.mongo().await?.db, queue };
        redrive::redrive_prepared(&locator, queue, &options, &io, &prepare).await?
    } else {
        ctx.note(format!("MONGODB_URI is not set: the {queue} redrive cannot skip the messages of erased interviews (run `sophia-ops erasure sweep` first)"));
        redrive::redrive_with(&locator, queue, &options, &io).await?
    };
    report.plan = plan;
    Ok(Outcome::DlqRedrive(report))
}

/// `dlq delete`: the message and what a redrive would have done with it, through the gate, then
/// the delete.
pub async fn delete(ctx: &Context, queue: QueueName, message_id: &str, dry_run: bool) -> Result<Outcome, OpsError> {
    let locator = ctx.locator().await;
    let shown = dlq_messages::show(&locator, queue, message_id, ProgressMode::Hidden).await?;
    let mut plan = Plan::new(ctx, format!("delete message {message_id} from the {queue} DLQ"), shown.dlq_url.clone());
    plan.effects.push(format!(
        "the message is gone for good: it will not be processed (redacted body: {})",
        shown.message.body
    ));
    if let Some(e) = &shown.message.contract_error {
        plan.effects.push(format!("its body breaks the contract: {e}"));
    } else if let Some(mongo) = ctx.mongo_for_plan().await {
        let fate = predict::message(Some(&mongo), queue, &shown.message.body, false).await;
        plan.effects.push(format!("redriven instead, the consumer would, from the state now: {}", fate.text));
    }
    let ids: Vec<InterviewId> = shown.message.interview_id.iter().filter_map(|i| i.parse().ok()).collect();
    if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &ids, dry_run).await? {
        return Ok(Outcome::DryRun(plan));
    }
    Ok(Outcome::DlqDelete(dlq_messages::delete(&locator, queue, message_id, ctx.progress).await?))
}

/// The plan of a redrive: what moves where and, per message (the first
/// [`REDRIVE_PLAN_MESSAGES`]), the state that decides what the consumer will do with it: for
/// report-generate the report's status, attempts and errorKind and whether it will be reset; for
/// interview-completed whether the interview is still unsettled. Also the interviews to show.
async fn redrive_plan(
    ctx: &Context,
    locator: &QueueLocator,
    queue: QueueName,
    max: Option<usize>,
    reset: bool,
) -> Result<(Plan, Vec<InterviewId>), OpsError> {
    let (source, dlq_url) = (locator.source_url(queue).await?, locator.dlq_url(queue).await?);
    let mut plan = Plan::new(ctx, format!("redrive the {queue} DLQ ({dlq_url})"), source);
    let peeked = dlq_messages::list(locator, queue, REDRIVE_PLAN_MESSAGES, ProgressMode::Hidden).await?;
    plan.effects.push(format!(
        "about {} message(s) move back to the source queue{}",
        peeked.approximate_visible.map_or("?".into(), |n| n.to_string()),
        max.map_or(String::new(), |m| format!(" (at most {m})"))
    ));
    if queue.holds_report_attempts() {
        plan.effects.push(if reset {
            "each FAILED (or stuck) report gets a fresh attempt budget just before its message moves, recorded on the report (lastRetry, retries); COMPLETED reports are not touched".into()
        } else {
            "--keep-attempts: reports keep their attempts; a report FAILED at its last attempt stays FAILED (its message is acknowledged without a model call)".into()
        });
    }
    let ids: Vec<InterviewId> =
        peeked.messages.iter().filter_map(|m| m.interview_id.as_deref()?.parse().ok()).collect();
    let mongo = ctx.mongo_for_plan().await;
    let mut planned = Vec::new();
    for m in &peeked.messages {
        let mut fate = predict::message(mongo.as_ref(), queue, &m.body, reset).await;
        fate.now = fate.now.map(|now| crate::report_state::staged(&now, ctx));
        planned.push(predict::Planned { message_id: m.message_id.clone(), interview_id: m.interview_id.clone(), fate });
    }
    // Applied in order: a second message for an interview meets the first one's settlement.
    let (lines, total) = predict::in_order(&planned);
    plan.effects.extend(lines);
    if mongo.is_some() {
        plan.effects.push(total);
    }
    if peeked.truncated {
        plan.effects.push(format!("(only the first {REDRIVE_PLAN_MESSAGES} messages are listed)"));
    }
    // The per-message lines say it all; the plan's interview lines would repeat them.
    Ok((plan, if ctx.has_mongo() || !confirm::is_local_url(&dlq_url) { ids } else { Vec::new() }))
}
