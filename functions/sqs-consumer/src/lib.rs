//! The SQS consumer wrapper: the replaced system's `createSqsConsumer` (docs/design.md, "Its consumer wrapper"), in Rust.
//!
//! For one Lambda invocation it
//! 1. refuses a batch with a record that has no `messageId` (an empty `itemIdentifier` would make
//!    AWS fail the whole batch silently, so the invocation fails explicitly instead);
//! 2. runs the per-batch setup (e.g. verifying the MongoDB connection); its failure fails the
//!    invocation, so SQS retries the whole batch;
//! 3. parses every body into the queue's message type; an invalid body is logged (the reason, naming
//!    the field, and a redacted preview: see [`preview`]) and dropped
//!    (acknowledged), as no retry can fix it;
//! 4. runs the handler per record, concurrently up to a bound, but one after another for records
//!    that share an ordering key (same organization or interview);
//! 5. cancels a record still running shortly before the invocation's deadline
//!    ([`ConsumerOptions::cancel_margin`], 1 s), so the partial batch response is always sent;
//! 6. returns as batch item failures exactly the records whose handler asked for a retry,
//!    panicked, were cancelled at the deadline, or were not started because it was too close;
//!    a transient failure ([`Failure::Transient`]) first sets the record's visibility to a
//!    backoff, or on the last receive of a queue that allows it sends a delayed copy and
//!    acknowledges the record ([`backoff`], [`queue`]).
//!
//! Each record is processed inside one `tracing` span carrying `messageId`, `requestId`,
//! `eventType` and `receiveCount`, and ends with one `record processed` event with its
//! `outcome` and `durationMs`. Each batch also writes one line of metrics in CloudWatch Embedded
//! Metric Format ([`metrics`]): records by outcome, batch size, time left.

pub mod backoff;
mod batch;
mod failure;
pub mod metrics;
pub mod preview;
pub mod queue;
mod record;

pub use batch::{BatchError, BatchReport, ConsumerOptions, SqsConsumer};
pub use failure::{BoxError, Failure};
pub use record::{Outcome, RecordMeta};
