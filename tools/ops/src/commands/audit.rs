//! `audit list`: the latest records of the operator audit trail, newest first.

use std::time::Duration;

use crate::cli::AuditCommand;
use crate::{Context, OpsError, Outcome, audit_trail};

pub async fn run(command: &AuditCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        AuditCommand::List { limit, command, since } => list(ctx, *limit, command.as_deref(), *since).await,
    }
}

/// `audit list`.
pub async fn list(
    ctx: &Context,
    limit: i64,
    command: Option<&str>,
    since: Option<Duration>,
) -> Result<Outcome, OpsError> {
    let mut listing = audit_trail::list(ctx, limit, command, since).await?;
    // A pause or resume on a stage: SSM's own record of who ran it, beside the stream's identity.
    audit_trail::attach_executed_by(ctx, &mut listing.records).await;
    Ok(Outcome::AuditList(listing))
}
