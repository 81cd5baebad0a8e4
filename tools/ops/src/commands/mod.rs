//! One handler per command, in a module named for the command family: each builds the command's
//! plan (what it will do and, from the state the consumer will read, what the consumer will then
//! do), passes it through the confirmation gate ([`crate::confirm::gate`]) when the command changes
//! something, runs the work the per-concern modules provide ([`crate::publish_message`], [`crate::dlq_messages`],
//! [`crate::redrive`], [`crate::admin`], ...) and wraps the report in an [`Outcome`](crate::Outcome).
//!
//! - `publish completed|failed|report`: [`publish`];
//! - `dlq list|show|redrive|delete`: [`dlq`];
//! - `interview show|unsettled`: [`interview`];
//! - `queue status|move`: [`queue`];
//! - `outbox flush`: [`outbox`];
//! - `report retry|failures`: [`report`];
//! - `invariants check`: [`invariants`];
//! - `migrate`: [`migrate`];
//! - `audit list`: [`audit`];
//! - `erasure request|sweep|show|list`: [`erasure`].
//!
//! [`crate::execute`] picks the family; each family's `run` picks the handler.

pub mod audit;
pub mod dlq;
pub mod erasure;
pub mod interview;
pub mod invariants;
pub mod migrate;
pub mod outbox;
pub mod publish;
pub mod queue;
pub mod report;
