//! The settlement service: `settle_completed_interview` and `settle_failed_interview`.
//!
//! One settlement is one transaction, in this order:
//! 1. (before the transaction) read the interview: missing, wrong organization, already settled,
//!    inconsistent reservation and an anchor outside its window are decided here without starting
//!    a transaction (docs/design.md, "Settlement decisions"). An interview with nothing reserved
//!    (`credits.reserved` 0, absent or `null`, no allocations) is still settled: claimed,
//!    `consumed` 0, retention, the outbox entry, and no credit writes. A soft-deleted interview
//!    is settled like any other (the minutes were used; its report is not generated);
//! 2. the claim: `{_id, organizationId, settledAt: null, credits.reserved: R}` -> `$set
//!    settledAt, credits.consumed, retentionExpiresAt`. Only the call whose claim matched goes
//!    on; a claim that matches nothing aborts (the first settlement won). The claim is what makes
//!    a settlement happen exactly once;
//! 3. read the allocated lots; plan with [`crate::arithmetic::plan_settlement`];
//! 4. one `update` command carrying a guarded statement per lot, one `$inc` of the organization,
//!    one `insert_many` of the ledger entries, and (completed only) the `report.generate` outbox
//!    entry;
//! 5. commit.
//!
//! Round trips (database commands), whatever the number of lots the reservation spans: the read,
//! the claim, the lots read, the lots update, the organization, the ledger `insert_many`, the
//! outbox insert and the commit: [`ROUND_TRIPS_COMPLETED`] = 8 for a completed interview, 7 for a
//! failed one, 1 for a duplicate (the read finds it settled: no transaction). Publishing after
//! the commit adds the SQS send and one update marking the outbox entry published.
//!
//! 8 is the minimum of this data model with the read kept outside the transaction. Folding the
//! read into the claim (a `findAndModify` returning the allocations, `credits.consumed` computed
//! by a pipeline `$min` against the stored reservation) would make 7, but every duplicate would
//! then open a transaction (2 commands instead of 1 read) and the claim would need pipeline
//! updates; duplicates are the common redelivery, so the read stays.

use bson::oid::ObjectId;
use bson::{DateTime, doc};
use std::time::Duration;

use chrono::Utc;
use mongodb::{Client, ClientSession, Database};
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, RequestId, Timestamp};
use tokio::time::Instant;

use crate::arithmetic::{ALLOCATIONS, PlanError, SettlementPlan, billed_credits, checked_sum, plan_settlement};
use crate::error::CreditsError;
use crate::model::{
    INTERVIEWS, InterviewCreditsView, LedgerEntry, LedgerType, OutboxEntry, OutboxStatus, Reference, ReferenceKind,
};
use crate::store::{CreditsStore, LotWrite};
use crate::txn::{Finish, RetryPolicy, run_transaction};

/// Database commands of a completed settlement, transaction included, whatever the number of
/// lots (the integration tests and `sophia-bench` count them with command monitoring).
pub const ROUND_TRIPS_COMPLETED: usize = 8;

/// Days from the completion (or failure) anchor to `retentionExpiresAt`.
pub const RETENTION_DAYS: i64 = 60;

/// How far in the future a completion or failure anchor may be (docs/design.md, "Settlement decisions"): the API's clock and
/// Lambda's may disagree by seconds, never by minutes; retention is computed from the anchor.
pub const ANCHOR_FUTURE_TOLERANCE: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// The absolute lower bound of a completion or failure anchor: 2024-01-01T00:00:00Z,
/// before any interview this system settles (it was built in 2026; the API's interviews are
/// settled within days of completion). Retention is computed from the anchor, so an anchor below
/// it (a JavaScript `new Date(0)`, a zeroed field: 1970) would give a `retentionExpiresAt` decades
/// in the past and the report would be deleted as soon as it is written, or a clock so wrong that
/// no date from it can be trusted. Such an anchor is outside its window, like one before the
/// interview's `createdAt`: inconsistent data, retried, then the DLQ, with the field named. It
/// applies whether or not the interview has a `createdAt` (a `createdAt` can be as wrong).
/// An anchor between the floor and now is accepted as it is (docs/design.md, "Settlement decisions": an old but possible
/// anchor keeps its retention even if that is already due).
pub const ANCHOR_FLOOR_UNIX_SECONDS: i64 = 1_704_067_200;

/// [`ANCHOR_FLOOR_UNIX_SECONDS`] as a date.
pub fn anchor_floor() -> chrono::DateTime<Utc> {
    chrono::DateTime::from_timestamp(ANCHOR_FLOOR_UNIX_SECONDS, 0).unwrap_or_default()
}

/// `retentionExpiresAt`: [`RETENTION_DAYS`] after the anchor (saturating at chrono's largest date;
/// a checked anchor is never near it).
pub fn retention_expires_at(anchor: chrono::DateTime<Utc>) -> chrono::DateTime<Utc> {
    anchor.checked_add_signed(chrono::Duration::days(RETENTION_DAYS)).unwrap_or(chrono::DateTime::<Utc>::MAX_UTC)
}

/// Every MongoDB operation and the `report.generate` publish of a record must finish this long
/// before the invocation's deadline: the consumer wrapper cancels a record 1 s before it, and the
/// record should fail with its own error rather than be cancelled.
pub const OPERATION_MARGIN: Duration = Duration::from_millis(1500);

/// What happens to an interview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleKind {
    Completed { completed_at: Timestamp, duration_seconds: DurationSeconds },
    Failed { failed_at: Timestamp },
}

impl SettleKind {
    fn anchor(&self) -> Timestamp {
        match self {
            Self::Completed { completed_at, .. } => *completed_at,
            Self::Failed { failed_at } => *failed_at,
        }
    }
    /// The message field the anchor comes from (named by errors).
    fn anchor_field(&self) -> &'static str {
        match self {
            Self::Completed { .. } => "completedAt",
            Self::Failed { .. } => "failedAt",
        }
    }
    fn name(&self) -> &'static str {
        match self {
            Self::Completed { .. } => "completed",
            Self::Failed { .. } => "failed",
        }
    }
}

/// The per-call context: the record's deadline (bounds the retries) and the clock.
#[derive(Debug, Clone, Copy)]
pub struct SettleContext {
    pub deadline: Option<Instant>,
    /// `settledAt`, ledger `createdAt`, and the instant lot expiry is judged at.
    pub now: chrono::DateTime<Utc>,
}

impl SettleContext {
    pub fn now_with_deadline(deadline: Option<Instant>) -> Self {
        Self { deadline, now: Utc::now() }
    }

    /// When every MongoDB operation and the publish must have finished: the record's deadline
    /// less [`OPERATION_MARGIN`].
    pub fn operation_deadline(&self) -> Option<Instant> {
        self.deadline.map(|d| d.checked_sub(OPERATION_MARGIN).unwrap_or(d))
    }
}

/// What a settlement changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledSummary {
    pub reserved: i64,
    pub consumed: i64,
    pub released: i64,
    pub forfeited: i64,
    pub expiry_forfeited: i64,
    /// `forfeited + expiry_forfeited`, checked when the plan was made.
    pub all_forfeited: i64,
    pub lots: usize,
    /// The outbox entry written with the settlement (completed interviews).
    pub outbox: Option<Box<OutboxEntry>>,
}

impl SettledSummary {
    fn from_plan(plan: &SettlementPlan, outbox: Option<Box<OutboxEntry>>) -> Self {
        Self {
            reserved: plan.reserved,
            consumed: plan.consumed,
            released: plan.released(),
            forfeited: plan.forfeited(),
            expiry_forfeited: plan.expiry_forfeited(),
            all_forfeited: plan.all_forfeited(),
            lots: plan.lots.len(),
            outbox,
        }
    }
}

/// The result of a settlement call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleOutcome {
    /// This call settled the interview.
    Settled(SettledSummary),
    /// Another call settled it first; nothing was written.
    AlreadySettled,
}

impl SettleOutcome {
    pub fn settled(&self) -> bool {
        matches!(self, Self::Settled(_))
    }
}

/// The settlement service over one client (transactions) and its database.
#[derive(Debug, Clone)]
pub struct SettlementService {
    client: Client,
    store: CreditsStore,
}

enum Attempt {
    Settled(SettledSummary),
    ClaimLost,
}

impl SettlementService {
    pub fn new(client: Client, db: Database) -> Self {
        Self { client, store: CreditsStore::new(db) }
    }

    pub fn store(&self) -> &CreditsStore {
        &self.store
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// billed = `floor(duration / 60)` capped at the reservation; one transaction with the claim,
    /// the credit changes, and the `report.generate` outbox entry. Does not publish (see
    /// [`crate::outbox`]).
    pub async fn settle_completed_interview(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        completed_at: Timestamp,
        duration_seconds: DurationSeconds,
        ctx: SettleContext,
    ) -> Result<SettleOutcome, CreditsError> {
        self.settle(interview_id, organization_id, SettleKind::Completed { completed_at, duration_seconds }, ctx).await
    }

    /// `consumed = 0`: the whole reservation is released (forfeited on expired lots); no report.
    pub async fn settle_failed_interview(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        failed_at: Timestamp,
        ctx: SettleContext,
    ) -> Result<SettleOutcome, CreditsError> {
        self.settle(interview_id, organization_id, SettleKind::Failed { failed_at }, ctx).await
    }

    pub async fn settle(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        kind: SettleKind,
        ctx: SettleContext,
    ) -> Result<SettleOutcome, CreditsError> {
        let span = tracing::info_span!(
            "settlement",
            interviewId = %interview_id,
            organizationId = %organization_id,
            kind = kind.name(),
            settled = tracing::field::Empty,
            consumedCredits = tracing::field::Empty,
        );
        let result = tracing::Instrument::instrument(
            self.settle_inner(interview_id.oid(), organization_id.oid(), kind, ctx),
            span.clone(),
        )
        .await;
        let _entered = span.enter();
        match &result {
            Ok(SettleOutcome::Settled(s)) => {
                span.record("settled", true);
                span.record("consumedCredits", s.consumed);
                tracing::info!(
                    settled = true,
                    reservedCredits = s.reserved,
                    consumedCredits = s.consumed,
                    releasedCredits = s.released,
                    forfeitedCredits = s.all_forfeited,
                    lots = s.lots,
                    "interview settled"
                );
            }
            Ok(SettleOutcome::AlreadySettled) => {
                span.record("settled", false);
                tracing::info!(settled = false, "interview already settled; nothing written");
            }
            Err(e) => {
                span.record("settled", false);
                // WARN: the consumer logs the record's end at the level it deserves (ERROR on the
                // last receive, when the message goes to the DLQ).
                tracing::warn!(settled = false, error = %e, retryable = e.is_retryable(), "settlement failed");
            }
        }
        result
    }

    async fn settle_inner(
        &self,
        interview_id: ObjectId,
        organization_id: ObjectId,
        kind: SettleKind,
        ctx: SettleContext,
    ) -> Result<SettleOutcome, CreditsError> {
        let store = self.store.with_deadline(ctx.operation_deadline());
        match prepare_with(&store, interview_id, organization_id, kind).await? {
            Some(prepared) => self.execute(prepared, ctx).await,
            None => Ok(SettleOutcome::AlreadySettled),
        }
    }

    /// Step 1 (no transaction): reads the interview and decides what a settlement would do.
    /// `None`: already settled. Errors: not found, wrong organization, inconsistent reservation,
    /// unreadable document, anchor outside its window.
    pub async fn prepare(
        &self,
        interview_id: ObjectId,
        organization_id: ObjectId,
        kind: SettleKind,
    ) -> Result<Option<Prepared>, CreditsError> {
        prepare_with(&self.store, interview_id, organization_id, kind).await
    }

    /// Step 2: the transaction, whose claim decides whether this call settles. Between
    /// [`prepare`](Self::prepare) and here another delivery may have settled the interview: the
    /// claim then matches nothing and nothing is written.
    pub async fn execute(&self, prepared: Prepared, ctx: SettleContext) -> Result<SettleOutcome, CreditsError> {
        let Prepared { interview_id, organization_id, kind, reserved, consumed, allocations } = prepared;
        let now = DateTime::from_chrono(ctx.now);
        let retention = DateTime::from_chrono(retention_expires_at(kind.anchor().as_datetime()));
        let policy = RetryPolicy::with_deadline(ctx.operation_deadline());
        let store = &self.store.with_deadline(ctx.operation_deadline());
        let attempt = run_transaction(&self.client, &policy, async |s: &mut ClientSession| {
            let mut set = doc! {"settledAt": now, "retentionExpiresAt": retention};
            if reserved == 0 {
                // Nothing reserved: `credits` may be absent or `null` (a `$set` of
                // `credits.consumed` fails on a `null` parent), so it is written whole.
                set.insert("credits", doc! {"reserved": 0_i64, "consumed": consumed, "allocations": []});
            } else {
                set.insert("credits.consumed", consumed);
            }
            if !store.claim_interview_in(s, interview_id, organization_id, reserved, set).await? {
                return Ok(Finish::Abort(Attempt::ClaimLost));
            }
            // Nothing reserved: no lots, no organization change, no ledger entries.
            let plan = if allocations.is_empty() {
                SettlementPlan::empty()
            } else {
                let lot_ids: Vec<ObjectId> = allocations.iter().map(|a| a.lot_id).collect();
                let lots: Vec<_> =
                    store.lots_by_id_in(s, organization_id, &lot_ids).await?.iter().map(|l| l.state()).collect();
                let plan = plan_settlement(&allocations, &lots, consumed, ctx.now)
                    .map_err(|source| CreditsError::Inconsistent { interview_id, source })?;
                store.update_lots_in(s, &plan.lots.iter().map(LotWrite::from).collect::<Vec<_>>()).await?;
                store
                    .inc_org_credits_in(s, organization_id, plan.org_available_delta(), plan.org_reserved_delta(), None)
                    .await?;
                store.insert_ledger_in(s, &ledger_entries(&plan, organization_id, interview_id, now)).await?;
                plan
            };
            let outbox = match kind {
                SettleKind::Completed { .. } => {
                    let entry = report_outbox_entry(interview_id, organization_id, now);
                    store.insert_outbox_in(s, &entry).await?;
                    Some(Box::new(entry))
                }
                SettleKind::Failed { .. } => None,
            };
            Ok(Finish::Commit(Attempt::Settled(SettledSummary::from_plan(&plan, outbox))))
        })
        .await?;
        match attempt {
            Attempt::Settled(summary) => Ok(SettleOutcome::Settled(summary)),
            Attempt::ClaimLost => {
                // Another delivery settled it between our read and our claim, or the reservation
                // changed (then a retry will see the new one).
                let now_settled = store.interview(interview_id).await?.is_some_and(|i| i.settled_at.is_some());
                if now_settled {
                    Ok(SettleOutcome::AlreadySettled)
                } else {
                    Err(CreditsError::Conflict { what: "interview reservation" })
                }
            }
        }
    }
}

/// What [`SettlementService::prepare`] read and decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub interview_id: ObjectId,
    pub organization_id: ObjectId,
    pub kind: SettleKind,
    pub reserved: i64,
    pub consumed: i64,
    pub allocations: Vec<crate::arithmetic::Allocation>,
}

/// Step 1 over a store (bounded by the record's deadline when the store is).
async fn prepare_with(
    store: &CreditsStore,
    interview_id: ObjectId,
    organization_id: ObjectId,
    kind: SettleKind,
) -> Result<Option<Prepared>, CreditsError> {
    let interview = store.interview(interview_id).await?.ok_or(CreditsError::InterviewNotFound { interview_id })?;
    let Some(reserved) = check_settleable(&interview, organization_id)? else { return Ok(None) };
    check_anchor(&interview, kind, Utc::now())?;
    let consumed = match kind {
        SettleKind::Completed { duration_seconds, .. } => billed_credits(duration_seconds.get(), reserved),
        SettleKind::Failed { .. } => 0,
    };
    Ok(Some(Prepared {
        interview_id,
        organization_id,
        kind,
        reserved,
        consumed,
        allocations: interview.credits.allocations,
    }))
}

/// `Ok(None)`: already settled; `Ok(Some(reserved))`: can be settled (0: nothing reserved).
fn check_settleable(interview: &InterviewCreditsView, organization_id: ObjectId) -> Result<Option<i64>, CreditsError> {
    let interview_id = interview.id;
    if interview.organization_id != organization_id {
        return Err(CreditsError::WrongOrganization {
            interview_id,
            claimed: organization_id,
            actual: interview.organization_id,
        });
    }
    if interview.settled_at.is_some() {
        return Ok(None);
    }
    let (reserved, allocations) = (interview.credits.reserved, &interview.credits.allocations);
    if reserved < 0 {
        return Err(sophia_documents::DocumentError::invalid(
            INTERVIEWS,
            interview_id,
            "credits.reserved",
            "a non-negative integer",
        )
        .into());
    }
    if reserved == 0 && allocations.is_empty() {
        return Ok(Some(0));
    }
    let inconsistent = |source| CreditsError::Inconsistent { interview_id, source };
    if allocations.is_empty() {
        return Err(inconsistent(PlanError::NoAllocations { reserved }));
    }
    let allocated =
        checked_sum(allocations.iter().map(|a| a.credits)).ok_or(inconsistent(PlanError::SumOverflow(ALLOCATIONS)))?;
    if allocated != reserved {
        return Err(inconsistent(PlanError::ReservationMismatch { allocated, reserved }));
    }
    Ok(Some(reserved))
}

/// The completion or failure anchor must lie in its window (docs/design.md, "Settlement decisions"): not before
/// [`anchor_floor`], not before the interview's `createdAt` (when it has one), not more than
/// [`ANCHOR_FUTURE_TOLERANCE`] ahead.
pub fn check_anchor(
    interview: &InterviewCreditsView,
    kind: SettleKind,
    now: chrono::DateTime<Utc>,
) -> Result<(), CreditsError> {
    let anchor = kind.anchor().as_datetime();
    let out = |why| CreditsError::AnchorOutOfWindow { interview_id: interview.id, field: kind.anchor_field(), why };
    if anchor < anchor_floor() {
        return Err(out("earlier than 2024-01-01T00:00:00Z, the floor of a plausible anchor"));
    }
    if interview.created_at.is_some_and(|created| anchor < created.to_chrono()) {
        return Err(out("earlier than the interview's createdAt"));
    }
    if anchor > now + ANCHOR_FUTURE_TOLERANCE {
        return Err(out("more than 5 minutes in the future"));
    }
    Ok(())
}

/// SETTLE / RELEASE / FORFEIT per lot (amounts > 0), plus the LOT_EXPIRY forfeit of a lot this
/// settlement expired.
pub fn ledger_entries(
    plan: &SettlementPlan,
    organization_id: ObjectId,
    interview_id: ObjectId,
    at: DateTime,
) -> Vec<LedgerEntry> {
    let interview = Reference { kind: ReferenceKind::Interview, id: interview_id };
    let mut entries = Vec::new();
    for lot in &plan.lots {
        let lot_id = lot.before.id;
        for (kind, amount) in [
            (LedgerType::Settle, lot.consumed),
            (LedgerType::Release, lot.released),
            (LedgerType::Forfeit, lot.forfeited),
        ] {
            if amount > 0 {
                entries.push(LedgerEntry::new(organization_id, lot_id, kind, amount, interview, at));
            }
        }
        if lot.expiry_forfeited > 0 {
            let reference = Reference { kind: ReferenceKind::LotExpiry, id: lot_id };
            entries.push(LedgerEntry::new(
                organization_id,
                lot_id,
                LedgerType::Forfeit,
                lot.expiry_forfeited,
                reference,
                at,
            ));
        }
    }
    entries
}

/// The `report.generate` outbox entry of a completed settlement.
pub fn report_outbox_entry(interview_id: ObjectId, organization_id: ObjectId, at: DateTime) -> OutboxEntry {
    OutboxEntry {
        id: OutboxEntry::report_generate_id(interview_id),
        kind: OutboxEntry::REPORT_GENERATE.to_owned(),
        interview_id,
        organization_id,
        request_id: RequestId::settlement(InterviewId::new(interview_id)).as_str().to_owned(),
        status: OutboxStatus::Pending,
        created_at: at,
        attempts: 0,
        published_at: None,
        sqs_message_id: None,
        last_error: None,
    }
}

/// What the completed path did: the settlement and the publish after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedResult {
    pub outcome: SettleOutcome,
    pub publish: crate::outbox::FlushOutcome,
}

impl SettlementService {
    /// The interview-completed record: settle, then publish `report.generate` from the outbox.
    /// Only a call that settled, or that finds the interview's entry still pending, publishes.
    /// A failed publish is an error (retryable) although the settlement is committed; so is a
    /// publish that the record's deadline leaves no time for (the entry stays pending and the
    /// redelivery flushes it).
    pub async fn settle_completed_and_publish(
        &self,
        message: &sophia_contracts::InterviewCompleted,
        publisher: &impl crate::outbox::ReportPublisher,
        ctx: SettleContext,
    ) -> Result<CompletedResult, CreditsError> {
        let outcome = self
            .settle_completed_interview(
                message.interview_id,
                message.organization_id,
                message.completed_at,
                message.duration_seconds,
                ctx,
            )
            .await?;
        let store = self.store.with_deadline(ctx.operation_deadline());
        let publish = match &outcome {
            SettleOutcome::Settled(SettledSummary { outbox: Some(entry), .. }) => {
                crate::outbox::publish_entry(&store, entry, publisher).await?
            }
            _ => crate::outbox::publish_pending_for_interview(&store, message.interview_id, publisher).await?,
        };
        Ok(CompletedResult { outcome, publish })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::error::Disposition;

    fn interview(created_at: Option<chrono::DateTime<Utc>>) -> InterviewCreditsView {
        InterviewCreditsView {
            id: ObjectId::from_bytes([7; 12]),
            organization_id: ObjectId::from_bytes([8; 12]),
            status: None,
            credits: Default::default(),
            settled_at: None,
            retention_expires_at: None,
            created_at: created_at.map(DateTime::from_chrono),
        }
    }

    fn completed(at: chrono::DateTime<Utc>) -> SettleKind {
        SettleKind::Completed { completed_at: Timestamp::new(at), duration_seconds: DurationSeconds::new(600).unwrap() }
    }

    fn now() -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, 6, 0, 0).unwrap()
    }

    #[test]
    fn a_1970_anchor_without_created_at_is_out_of_its_window_never_a_retention_in_the_past() {
        let epoch = chrono::DateTime::<Utc>::UNIX_EPOCH;
        for kind in [completed(epoch), SettleKind::Failed { failed_at: Timestamp::new(epoch) }] {
            let e = check_anchor(&interview(None), kind, now()).unwrap_err();
            assert!(matches!(e, CreditsError::AnchorOutOfWindow { field, .. } if field == kind.anchor_field()), "{e}");
            assert_eq!(e.disposition(), Disposition::Retry, "retried, then the DLQ, like any anchor out of its window");
            assert!(e.to_string().contains("2024-01-01"), "{e}");
        }
        // A createdAt as wrong as the anchor does not let it through.
        let e = check_anchor(&interview(Some(epoch)), completed(epoch), now()).unwrap_err();
        assert!(matches!(e, CreditsError::AnchorOutOfWindow { .. }), "{e}");
    }

    #[test]
    fn the_floor_itself_and_any_plausible_anchor_after_it_are_accepted() {
        let floor = anchor_floor();
        assert_eq!(floor, Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap());
        assert!(check_anchor(&interview(None), completed(floor), now()).is_ok());
        assert!(check_anchor(&interview(None), completed(floor - chrono::Duration::seconds(1)), now()).is_err());
        let recent = now() - chrono::Duration::days(3);
        assert!(check_anchor(&interview(None), completed(recent), now()).is_ok());
        assert_eq!(retention_expires_at(recent), recent + chrono::Duration::days(60));
        assert!(retention_expires_at(recent) > now(), "a recent anchor's retention lies ahead");
    }

    #[test]
    fn every_accepted_anchor_gives_a_retention_no_earlier_than_the_floor_plus_60_days() {
        // The lowest retention any accepted anchor can produce.
        let lowest = retention_expires_at(anchor_floor());
        assert_eq!(lowest, Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap());
        assert_eq!(
            retention_expires_at(chrono::DateTime::<Utc>::MAX_UTC),
            chrono::DateTime::<Utc>::MAX_UTC,
            "saturates"
        );
    }
}
