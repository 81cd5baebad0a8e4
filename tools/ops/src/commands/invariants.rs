//! `invariants check`: the five credit invariants, for one organization or all of them.

use sophia_contracts::OrganizationId;

use crate::cli::InvariantsCommand;
use crate::{Context, OpsError, Outcome, admin};

pub async fn run(command: &InvariantsCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        InvariantsCommand::Check { org } => check(ctx, *org).await,
    }
}

/// `invariants check`.
pub async fn check(ctx: &Context, org: Option<OrganizationId>) -> Result<Outcome, OpsError> {
    Ok(Outcome::InvariantsCheck(admin::invariants_check(ctx, org).await?))
}
