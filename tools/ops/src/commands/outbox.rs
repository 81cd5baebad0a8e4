//! `outbox flush`: publishes the pending report.generate outbox entries of settlements, after a
//! plan that counts them.

use sophia_declarations::Queue;
use std::time::Duration;

use crate::cli::OutboxCommand;
use crate::confirm::{self, Plan};
use crate::queues::QueueName;
use crate::{Context, OpsError, Outcome, admin};

pub async fn run(command: &OutboxCommand, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        OutboxCommand::Flush { older_than, limit } => flush(ctx, *older_than, *limit).await,
    }
}

/// `outbox flush`.
pub async fn flush(ctx: &Context, older_than: Duration, limit: i64) -> Result<Outcome, OpsError> {
    let url = ctx.locator().await.source_url(QueueName::of(Queue::ReportGenerate)).await?;
    let mut plan = Plan::new(ctx, "publish pending report.generate outbox entries", url);
    plan.effects.push(format!("entries created more than {}s ago, at most {limit}", older_than.as_secs()));
    let ids = match ctx.mongo_for_plan().await {
        Some(mongo) => admin::outbox_plan(&mongo, older_than, limit, &mut plan).await?,
        None => Vec::new(),
    };
    confirm::gate(ctx, plan, &ids, false).await?;
    Ok(Outcome::OutboxFlush(admin::outbox_flush(ctx, older_than, limit).await?))
}
