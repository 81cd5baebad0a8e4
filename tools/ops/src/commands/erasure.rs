//! `erasure request|sweep|show|list`: the erasure of a candidate's data ([`crate::erasure`]).

use sophia_contracts::{InterviewId, OrganizationId};
use sophia_declarations::{ErasureReason, ErasureReference, Queue};

use crate::cli::ErasureCommand;
use crate::confirm::{self, Plan};
use crate::erasure::{self, ErasureReport, Requester};
use crate::queues::QueueName;
use crate::{Context, OpsError, Outcome};

pub async fn run(command: &ErasureCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        ErasureCommand::Request { interview_ids, reason, reference, organization_id } => {
            request(ctx, interview_ids, *reason, reference.clone(), *organization_id).await
        }
        ErasureCommand::Sweep => sweep(ctx).await,
        ErasureCommand::Replay { since } => replay(ctx, *since).await,
        ErasureCommand::Show { interview_id } => {
            let db = ctx.mongo().await?.db;
            Ok(Outcome::ErasureShow(ErasureReport {
                erasures: vec![erasure::show(&db, *interview_id).await?],
                failed: Vec::new(),
            }))
        }
        ErasureCommand::List { pending, overdue } => {
            let db = ctx.mongo().await?.db;
            Ok(Outcome::ErasureShow(ErasureReport {
                erasures: erasure::list(&db, *pending, *overdue).await?,
                failed: Vec::new(),
            }))
        }
    }
}

/// The plan of a command that erases: what it removes, where.
async fn plan(ctx: &Context, action: &str, ids: &[InterviewId]) -> Result<(), OpsError> {
    let url = ctx.locator().await.dlq_url(QueueName::of(Queue::InterviewCompleted)).await?;
    let mut plan = Plan::new(ctx, action, url);
    plan.effects.push(format!(
        "for {} interview(s): the report replaced by a tombstone, the outbox entries deleted, every DLQ message naming them deleted; recorded in `erasures`",
        ids.len()
    ));
    confirm::gate(ctx, plan, ids, false).await?;
    Ok(())
}

/// `erasure request`: the requests first (who, when, why), then every copy removed.
async fn request(
    ctx: &Context,
    ids: &[InterviewId],
    reason: ErasureReason,
    reference: Option<ErasureReference>,
    organization_id: Option<OrganizationId>,
) -> Result<Outcome, OpsError> {
    plan(ctx, "erase the candidate's data", ids).await?;
    ctx.identify().await;
    let requester = Requester {
        by: ctx.operator("erasure-request").by,
        reason,
        reference,
        via: "sophia-ops".into(),
        replay_of: None,
    };
    let request_id = ctx.request_id("erasure-request").await;
    let db = ctx.mongo().await?.db;
    for id in ids {
        erasure::record_request(&db, *id, organization_id.map(|o| o.oid()), &requester, &request_id).await?;
    }
    Ok(Outcome::ErasureRequest(erasure::complete(&db, &ctx.locator().await, ids).await?))
}

/// The most audit records a replay reads (far more than the erasures of any backup interval).
const REPLAY_AUDIT_LIMIT: i64 = 10_000;

/// `erasure replay`: the requests of the audited `erasure-request` records since `since` that
/// `erasures` no longer holds (a restore dropped them), recorded again and completed.
async fn replay(ctx: &Context, since: std::time::Duration) -> Result<Outcome, OpsError> {
    // The operators' requests, and every request a sweep listed (the API's included: each
    // `erasure-sweep` record's outcome names the pending requests it completed).
    let mut records = Vec::new();
    for command in ["erasure-request", "erasure-sweep"] {
        let audit = crate::audit_trail::list(ctx, REPLAY_AUDIT_LIMIT, Some(command), Some(since)).await?;
        if audit.truncated {
            return Err(OpsError::Invalid(format!(
                "more than {REPLAY_AUDIT_LIMIT} {command} records since then: replay a shorter --since first"
            )));
        }
        records.extend(audit.records);
    }
    let db = ctx.mongo().await?.db;
    let mut lost = Vec::new();
    for audited in erasure::audited_requests(&records) {
        if erasure::show(&db, audited.interview_id).await.is_err()
            && !lost.iter().any(|(i, _, _)| *i == audited.interview_id)
        {
            lost.push((audited.interview_id, audited.organization_id, audited));
        }
    }
    let ids: Vec<InterviewId> = lost.iter().map(|(i, _, _)| *i).collect();
    plan(ctx, "record again and complete the erasures a restore dropped", &ids).await?;
    ctx.identify().await;
    for (id, organization_id, audited) in &lost {
        let requester = Requester {
            by: audited.requested_by.clone(),
            reason: audited.reason,
            reference: audited.reference.clone(),
            via: "sophia-ops replay".into(),
            // The audited time; a record without one replays as requested now.
            replay_of: Some(audited.requested_at.unwrap_or_else(bson::DateTime::now)),
        };
        erasure::record_request(&db, *id, *organization_id, &requester, &audited.request_id).await?;
    }
    Ok(Outcome::ErasureRequest(erasure::complete(&db, &ctx.locator().await, &ids).await?))
}

/// `erasure sweep`: every pending request completed (the API's requests are completed here).
async fn sweep(ctx: &Context) -> Result<Outcome, OpsError> {
    let db = ctx.mongo().await?.db;
    let ids = erasure::pending_interviews(&db).await?;
    plan(ctx, "complete the pending erasures", &ids).await?;
    Ok(Outcome::ErasureRequest(erasure::complete(&db, &ctx.locator().await, &ids).await?))
}
