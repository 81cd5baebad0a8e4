//! `migrate`: creates the indexes the flow relies on (idempotent).

use crate::{Context, OpsError, Outcome, admin};

pub async fn run(ctx: &Context) -> Result<Outcome, OpsError> {
    Ok(Outcome::Migrate(admin::migrate(ctx).await?))
}
