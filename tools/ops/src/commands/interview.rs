//! `interview show|unsettled`: one interview's state, and the interviews a lost message left
//! holding a reservation. Both change nothing.

use std::time::Duration;

use sophia_contracts::{InterviewId, OrganizationId};

use crate::cli::InterviewCommand;
use crate::{Context, OpsError, Outcome, interview_state, listing};

pub async fn run(command: &InterviewCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        InterviewCommand::Show { interview_id, dlq_scan, no_receive } => {
            show(ctx, *interview_id, *dlq_scan, *no_receive).await
        }
        InterviewCommand::Unsettled { org, older_than, limit } => unsettled(ctx, *org, *older_than, *limit).await,
    }
}

/// `interview show`: settlement, report and DLQ messages (`no_receive`: no DLQ search).
pub async fn show(
    ctx: &Context,
    interview_id: InterviewId,
    dlq_scan: usize,
    no_receive: bool,
) -> Result<Outcome, OpsError> {
    let scan = if no_receive { 0 } else { dlq_scan };
    Ok(Outcome::InterviewShow(Box::new(interview_state::show(ctx, interview_id, scan).await?)))
}

/// `interview unsettled`.
pub async fn unsettled(
    ctx: &Context,
    org: Option<OrganizationId>,
    older_than: Option<Duration>,
    limit: i64,
) -> Result<Outcome, OpsError> {
    Ok(Outcome::InterviewUnsettled(listing::unsettled(ctx, org, older_than, limit).await?))
}
