//! Credits of the Sophia interviews in MongoDB: reservation, settlement of completed and failed
//! interviews, the `report.generate` outbox, the invariant checker, seed helpers and the index
//! migration. No AWS or Lambda types: the Lambda crates wire this to SQS.
//!
//! - [`arithmetic`]: pure billing / reservation / settlement arithmetic and lot status changes;
//! - [`model`], [`store`]: the documents and the repository;
//! - [`txn`]: one transaction with retries bounded by the record's deadline;
//! - [`settlement`]: [`SettlementService`] (`settle_completed_interview`,
//!   `settle_failed_interview`, `settle_completed_and_publish`);
//! - [`outbox`]: publishing after commit, [`outbox::flush_pending_outbox`] for operators;
//! - [`reservation`], [`seed`]: the API's reservation and fixtures;
//! - [`invariants`]: the five invariants of docs/design.md; [`migrations`]: the indexes.
//!
//! # Retry or drop ([`CreditsError::disposition`], docs/design.md "Settlement decisions")
//! The rule: retry when a later attempt can succeed or when an operator must look at the message
//! (SQS moves it to the DLQ after 3 receives and keeps it 14 days); a settlement never drops a
//! message (only the reservation side refuses for good: already reserved, insufficient credits).
//! - MongoDB errors (unreachable, timeouts, transient transaction errors beyond the deadline,
//!   unknown commit results), guarded-write conflicts, an operation or publish the record's
//!   deadline leaves no time for: **retry**.
//! - Interview not found: **retry**. The API writes the interview before it publishes, so
//!   absence means a lagging read or a wrong id; dropping would lose a billing event for good (or
//!   hide a bug in the producer), while retrying ends in the DLQ where an operator sees it and
//!   can redrive it.
//! - Interview of another organization than the message says: **dead-letter** (the DLQ on the
//!   first delivery, [`Disposition::DeadLetter`]): no retry can change an interview's
//!   organization, so the retries would only delay the operator by three receives.
//! - Inconsistent credit data (`credits.reserved > 0` without allocations, allocations that do
//!   not add up or overflow, an allocation naming a missing lot, a lot holding less than the
//!   allocation), a stored document that cannot be read (a fractional credit amount: the error
//!   names the field, never the value), a completion/failure time outside its window, a missing
//!   organization: **retry**, to park the message in the DLQ until the data is repaired.
//! - Nothing reserved (`credits.reserved` 0, absent or `null`, no allocations): not an error;
//!   the interview is settled with `consumed` 0 and no credit writes.
//! - A soft-deleted interview is settled like any other (the minutes were used).
//! - A failed `report.generate` publish after a committed settlement: **retry**; the
//!   redelivery finds the interview settled and only flushes the pending outbox entry. A send
//!   that succeeded but could not be marked published is acknowledged (logged; flushed later).
//! - An invalid body is dropped by the consumer wrapper before it reaches this crate.
//!
//! # Exactly once
//! The claim `{_id, organizationId, settledAt: null}` -> `$set settledAt` inside the settlement's
//! transaction is the only gate: a duplicate or concurrent delivery either sees `settledAt` set
//! when it reads, or its claim matches nothing and it writes nothing. The ledger's unique index on
//! `(reference.kind, reference.id, type, lotId)` is a second line: no settlement can write twice.

pub mod arithmetic;
pub mod error;
pub mod invariants;
pub mod migrations;
pub mod model;
pub mod outbox;
pub mod reservation;
pub mod seed;
pub mod settlement;
pub mod store;
pub mod txn;

pub use error::{BoxError, CreditsError, Disposition};
pub use outbox::{FlushOutcome, FlushReport, FnPublisher, Published, ReportPublisher, flush_pending_outbox};
pub use settlement::{CompletedResult, SettleContext, SettleKind, SettleOutcome, SettledSummary, SettlementService};
pub use store::CreditsStore;
pub use txn::RetryPolicy;
