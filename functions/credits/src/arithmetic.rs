//! The pure credit arithmetic of docs/design.md: billing, the reservation walk, the settlement walk
//! (consume, then release or forfeit), lot status transitions. No I/O; every database write of a
//! settlement is derived from a [`SettlementPlan`].
//!
//! # Overflow
//! Stored amounts are not trusted to be small: a corrupt lot or allocation can hold any 64-bit
//! value, and the release profile has no overflow checks, so an unchecked `+` would wrap silently
//! into a plausible-looking balance. Every sum of stored amounts here is checked
//! ([`checked_sum`], `checked_add`/`checked_sub`); an overflow is [`PlanError::SumOverflow`],
//! which the settlement turns into the inconsistent-data error (retried, then the DLQ, like any
//! other inconsistent credit data). The remaining subtractions cannot overflow because of the
//! checks before them (a lot's `remaining` and `reserved` are at least the allocation, which is
//! positive): each says why where it stands. `tests` holds a property test over corrupt numbers.

use std::collections::HashMap;

use bson::oid::ObjectId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Seconds per billed credit.
pub const SECONDS_PER_CREDIT: u64 = 60;

/// `floor(duration_seconds / 60)`, capped at the reserved credits (never negative).
pub fn billed_credits(duration_seconds: u64, reserved: i64) -> i64 {
    let billed = i64::try_from(duration_seconds / SECONDS_PER_CREDIT).unwrap_or(i64::MAX);
    billed.min(reserved.max(0))
}

/// A credit lot's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LotStatus {
    Active,
    Exhausted,
    Expired,
}

impl LotStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Exhausted => "EXHAUSTED",
            Self::Expired => "EXPIRED",
        }
    }

    /// The status after a change: `EXPIRED` once expired with nothing reserved, else `EXHAUSTED`
    /// at `remaining == 0`, else unchanged. `EXHAUSTED` and `EXPIRED` are final.
    pub fn after(self, remaining: i64, reserved: i64, expired: bool) -> Self {
        match self {
            Self::Exhausted | Self::Expired => self,
            Self::Active if expired && reserved == 0 => Self::Expired,
            Self::Active if remaining == 0 => Self::Exhausted,
            Self::Active => Self::Active,
        }
    }
}

/// What the arithmetic needs to know about a lot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotState {
    pub id: ObjectId,
    pub granted: i64,
    pub remaining: i64,
    pub reserved: i64,
    pub expires_at: DateTime<Utc>,
    pub status: LotStatus,
}

impl LotState {
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at <= now
    }
    /// Credits that can still be reserved: `remaining - reserved`, or 0 for a lot whose numbers
    /// break `0 <= reserved <= remaining` (corrupt data is never reserved from; the invariant
    /// checker reports it). Cannot overflow: the subtraction only runs inside those bounds.
    pub fn free(&self) -> i64 {
        if 0 <= self.reserved && self.reserved <= self.remaining { self.remaining - self.reserved } else { 0 }
    }
}

/// Credits of one lot held for one interview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Allocation {
    pub lot_id: ObjectId,
    #[serde(deserialize_with = "sophia_documents::int::i64")]
    pub credits: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("insufficient credits: {requested} requested, {available} reservable")]
pub struct Insufficient {
    pub requested: i64,
    pub available: i64,
}

/// The reservation walk: usable lots (active, not expired, something free) oldest expiry first
/// (ties by id), each giving what it can until `amount` is covered.
pub fn plan_reservation(lots: &[LotState], amount: i64, now: DateTime<Utc>) -> Result<Vec<Allocation>, Insufficient> {
    let mut usable: Vec<&LotState> =
        lots.iter().filter(|l| l.status == LotStatus::Active && !l.is_expired(now) && l.free() > 0).collect();
    usable.sort_by_key(|l| (l.expires_at, l.id));
    // Saturating on purpose: a sum past i64::MAX is still "more than any request", which is all
    // this comparison needs; the walk below takes at most `amount` from each lot.
    let available = usable.iter().map(|l| l.free()).fold(0_i64, i64::saturating_add);
    if amount > available {
        return Err(Insufficient { requested: amount, available });
    }
    let mut left = amount.max(0);
    let mut allocations = Vec::new();
    for lot in usable {
        if left == 0 {
            break;
        }
        let take = left.min(lot.free());
        allocations.push(Allocation { lot_id: lot.id, credits: take });
        left -= take;
    }
    Ok(allocations)
}

/// The change to one lot in a settlement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotSettlement {
    pub before: LotState,
    /// The interview's reservation on this lot.
    pub reserved: i64,
    /// `SETTLE`: consumed from this lot.
    pub consumed: i64,
    /// `RELEASE`: returned to `available` (lot not expired).
    pub released: i64,
    /// `FORFEIT` of the reservation's unconsumed part (lot expired).
    pub forfeited: i64,
    /// `FORFEIT` of the lot's unreserved remainder, when this settlement expires the lot.
    pub expiry_forfeited: i64,
    pub remaining_after: i64,
    pub reserved_after: i64,
    pub status_after: LotStatus,
}

/// Every change of one settlement. Built by [`plan_settlement`] (or [`SettlementPlan::empty`]),
/// which computes its totals with checked arithmetic: a plan that exists has totals that fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettlementPlan {
    pub reserved: i64,
    pub consumed: i64,
    pub lots: Vec<LotSettlement>,
    totals: PlanTotals,
}

/// The sums of a plan, each computed once, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct PlanTotals {
    released: i64,
    forfeited: i64,
    expiry_forfeited: i64,
    /// `forfeited + expiry_forfeited`.
    all_forfeited: i64,
    /// `released - expiry_forfeited`.
    org_available_delta: i64,
}

/// The lots' field the expiry forfeits come from (named by errors).
pub const LOT_REMAINING: &str = "creditLots.remaining";

impl PlanTotals {
    fn of(lots: &[LotSettlement]) -> Result<Self, PlanError> {
        let overflow = || PlanError::SumOverflow(LOT_REMAINING);
        let sum =
            |f: fn(&LotSettlement) -> i64| checked_sum(lots.iter().map(f)).ok_or(PlanError::SumOverflow(ALLOCATIONS));
        // Released and forfeited parts are parts of the allocations, whose sum was checked; the
        // expiry forfeits are lots' unreserved remainders, which can be anything stored.
        let released = sum(|l| l.released)?;
        let forfeited = sum(|l| l.forfeited)?;
        let expiry_forfeited = checked_sum(lots.iter().map(|l| l.expiry_forfeited)).ok_or_else(overflow)?;
        Ok(Self {
            released,
            forfeited,
            expiry_forfeited,
            all_forfeited: forfeited.checked_add(expiry_forfeited).ok_or_else(overflow)?,
            org_available_delta: released.checked_sub(expiry_forfeited).ok_or_else(overflow)?,
        })
    }
}

impl SettlementPlan {
    /// Nothing reserved: no lots, no credit changes.
    pub fn empty() -> Self {
        Self { reserved: 0, consumed: 0, lots: Vec::new(), totals: PlanTotals::default() }
    }
    pub fn released(&self) -> i64 {
        self.totals.released
    }
    /// Forfeited reservation credits (the interview's part).
    pub fn forfeited(&self) -> i64 {
        self.totals.forfeited
    }
    /// Unreserved credits of lots this settlement expired.
    pub fn expiry_forfeited(&self) -> i64 {
        self.totals.expiry_forfeited
    }
    /// Everything forfeited: the interview's part and the expired lots' remainders.
    pub fn all_forfeited(&self) -> i64 {
        self.totals.all_forfeited
    }
    /// The organization's `credits.reserved` change (`reserved` is a checked sum of positive
    /// allocations, so its negation fits).
    pub fn org_reserved_delta(&self) -> i64 {
        -self.reserved
    }
    /// The organization's `credits.available` change: released less the expiry forfeits.
    pub fn org_available_delta(&self) -> i64 {
        self.totals.org_available_delta
    }
}

/// Why allocations and lots disagree (the data is inconsistent; no plan can be made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("allocation names lot {0}, which does not exist")]
    MissingLot(ObjectId),
    #[error(
        "lot {lot}: the allocation holds {allocated} but the lot has only {reserved} reserved and {remaining} remaining"
    )]
    LotTooSmall { lot: ObjectId, allocated: i64, reserved: i64, remaining: i64 },
    #[error("allocation of {0} credits is not positive")]
    NonPositive(i64),
    #[error("`credits.allocations` hold {allocated} credits but `credits.reserved` says {reserved}")]
    ReservationMismatch { allocated: i64, reserved: i64 },
    #[error("`credits.reserved` says {reserved} credits are reserved but `credits.allocations` is empty")]
    NoAllocations { reserved: i64 },
    #[error("the credit amounts of `{0}` add up to more than a 64-bit integer holds")]
    SumOverflow(&'static str),
}

/// The interview field the allocations are stored in (named by errors).
pub const ALLOCATIONS: &str = "credits.allocations";

/// The sum of stored credit amounts, `None` on overflow (stored data is not trusted to be small).
pub fn checked_sum(amounts: impl IntoIterator<Item = i64>) -> Option<i64> {
    amounts.into_iter().try_fold(0_i64, i64::checked_add)
}

/// The settlement walk. `consumed` must already be capped (see [`billed_credits`]); allocations
/// naming one lot twice are merged (first position wins).
pub fn plan_settlement(
    allocations: &[Allocation],
    lots: &[LotState],
    consumed: i64,
    now: DateTime<Utc>,
) -> Result<SettlementPlan, PlanError> {
    let by_id: HashMap<ObjectId, &LotState> = lots.iter().map(|l| (l.id, l)).collect();
    let mut merged: Vec<Allocation> = Vec::with_capacity(allocations.len());
    for a in allocations {
        if a.credits <= 0 {
            return Err(PlanError::NonPositive(a.credits));
        }
        match merged.iter_mut().find(|m| m.lot_id == a.lot_id) {
            Some(m) => m.credits = m.credits.checked_add(a.credits).ok_or(PlanError::SumOverflow(ALLOCATIONS))?,
            None => merged.push(*a),
        }
    }
    let reserved = checked_sum(merged.iter().map(|a| a.credits)).ok_or(PlanError::SumOverflow(ALLOCATIONS))?;
    let mut left = consumed.clamp(0, reserved);
    let consumed = left;
    // Below, for each allocation `a` (a.credits > 0) of lot `lot`: `lot.reserved >= a.credits` and
    // `lot.remaining >= a.credits` are checked first, `c <= left` and `c <= a.credits`; so every
    // subtraction stays within [0, lot.remaining] and cannot overflow.
    let mut out = Vec::with_capacity(merged.len());
    for a in merged {
        let lot = **by_id.get(&a.lot_id).ok_or(PlanError::MissingLot(a.lot_id))?;
        if lot.reserved < a.credits || lot.remaining < a.credits {
            return Err(PlanError::LotTooSmall {
                lot: lot.id,
                allocated: a.credits,
                reserved: lot.reserved,
                remaining: lot.remaining,
            });
        }
        let c = left.min(a.credits);
        left -= c;
        let unconsumed = a.credits - c;
        let expired = lot.is_expired(now);
        let (released, forfeited) = if expired { (0, unconsumed) } else { (unconsumed, 0) };
        let reserved_after = lot.reserved - a.credits;
        let mut remaining_after = lot.remaining - c - forfeited;
        let mut expiry_forfeited = 0;
        if expired && reserved_after == 0 && lot.status == LotStatus::Active {
            expiry_forfeited = remaining_after;
            remaining_after = 0;
        }
        let status_after = lot.status.after(remaining_after, reserved_after, expired);
        out.push(LotSettlement {
            before: lot,
            reserved: a.credits,
            consumed: c,
            released,
            forfeited,
            expiry_forfeited,
            remaining_after,
            reserved_after,
            status_after,
        });
    }
    let totals = PlanTotals::of(&out)?;
    Ok(SettlementPlan { reserved, consumed, lots: out, totals })
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 12, 0, 0).unwrap()
    }

    fn lot(n: u8, granted: i64, remaining: i64, reserved: i64, expires_in_days: i64) -> LotState {
        LotState {
            id: ObjectId::from_bytes([n; 12]),
            granted,
            remaining,
            reserved,
            expires_at: now() + Duration::days(expires_in_days),
            status: LotStatus::Active,
        }
    }

    #[test]
    fn billing_is_whole_minutes_capped_at_the_reservation() {
        assert_eq!(billed_credits(0, 30), 0);
        assert_eq!(billed_credits(59, 30), 0);
        assert_eq!(billed_credits(60, 30), 1);
        assert_eq!(billed_credits(3599, 100), 59);
        assert_eq!(billed_credits(3599, 30), 30, "above the reservation: capped");
        assert_eq!(billed_credits(u64::MAX, 5), 5);
        assert_eq!(billed_credits(600, 0), 0);
    }

    #[test]
    fn reservation_takes_oldest_expiry_first_across_lots() {
        let lots = [lot(1, 10, 10, 0, 30), lot(2, 5, 5, 2, 10), lot(3, 50, 50, 0, 90)];
        let plan = plan_reservation(&lots, 12, now()).unwrap();
        assert_eq!(
            plan,
            vec![Allocation { lot_id: lots[1].id, credits: 3 }, Allocation { lot_id: lots[0].id, credits: 9 }]
        );
    }

    #[test]
    fn reservation_skips_expired_inactive_and_full_lots_and_refuses_what_it_cannot_cover() {
        let mut exhausted = lot(4, 5, 0, 0, 5);
        exhausted.status = LotStatus::Exhausted;
        let lots = [lot(1, 10, 10, 0, -1), lot(2, 5, 5, 5, 3), exhausted, lot(3, 4, 4, 0, 9)];
        assert_eq!(plan_reservation(&lots, 4, now()).unwrap(), vec![Allocation { lot_id: lots[3].id, credits: 4 }]);
        assert_eq!(plan_reservation(&lots, 5, now()), Err(Insufficient { requested: 5, available: 4 }));
    }

    #[test]
    fn settlement_consumes_in_allocation_order_and_releases_the_rest() {
        let a = lot(1, 10, 10, 4, 10);
        let b = lot(2, 10, 10, 6, 20);
        let allocations = [Allocation { lot_id: a.id, credits: 4 }, Allocation { lot_id: b.id, credits: 6 }];
        let plan = plan_settlement(&allocations, &[b, a], 7, now()).unwrap();
        assert_eq!((plan.reserved, plan.consumed), (10, 7));
        let (pa, pb) = (plan.lots[0], plan.lots[1]);
        assert_eq!((pa.consumed, pa.released, pa.forfeited), (4, 0, 0));
        assert_eq!((pa.remaining_after, pa.reserved_after, pa.status_after), (6, 0, LotStatus::Active));
        assert_eq!((pb.consumed, pb.released, pb.forfeited), (3, 3, 0));
        assert_eq!((pb.remaining_after, pb.reserved_after), (7, 0));
        assert_eq!((plan.org_reserved_delta(), plan.org_available_delta()), (-10, 3));
    }

    #[test]
    fn consumption_is_clamped_to_the_reservation() {
        let a = lot(1, 10, 10, 4, 10);
        let plan = plan_settlement(&[Allocation { lot_id: a.id, credits: 4 }], &[a], 99, now()).unwrap();
        assert_eq!(plan.consumed, 4);
        assert_eq!(plan.lots[0].status_after, LotStatus::Active);
    }

    #[test]
    fn a_lot_consumed_to_zero_is_exhausted() {
        let a = lot(1, 4, 4, 4, 10);
        let plan = plan_settlement(&[Allocation { lot_id: a.id, credits: 4 }], &[a], 4, now()).unwrap();
        assert_eq!((plan.lots[0].remaining_after, plan.lots[0].status_after), (0, LotStatus::Exhausted));
    }

    #[test]
    fn an_expired_lot_forfeits_instead_of_releasing_and_expires_with_its_remainder() {
        // Expired, 3 reserved by this interview, 5 unreserved: consume 1, forfeit 2, then the lot
        // has nothing reserved and is expired: its 5 are forfeited and it becomes EXPIRED.
        let a = lot(1, 10, 8, 3, -1);
        let plan = plan_settlement(&[Allocation { lot_id: a.id, credits: 3 }], &[a], 1, now()).unwrap();
        let p = plan.lots[0];
        assert_eq!((p.consumed, p.released, p.forfeited, p.expiry_forfeited), (1, 0, 2, 5));
        assert_eq!((p.remaining_after, p.reserved_after, p.status_after), (0, 0, LotStatus::Expired));
        assert_eq!((plan.org_reserved_delta(), plan.org_available_delta()), (-3, -5));
    }

    #[test]
    fn an_expired_lot_still_holding_other_reservations_stays_active_for_now() {
        let a = lot(1, 10, 10, 7, -1);
        let plan = plan_settlement(&[Allocation { lot_id: a.id, credits: 3 }], &[a], 0, now()).unwrap();
        let p = plan.lots[0];
        assert_eq!((p.released, p.forfeited, p.expiry_forfeited), (0, 3, 0));
        assert_eq!((p.remaining_after, p.reserved_after, p.status_after), (7, 4, LotStatus::Active));
        assert_eq!(plan.org_available_delta(), 0, "the lot's free credits are unchanged until it expires");
    }

    #[test]
    fn a_failed_interview_releases_everything() {
        let a = lot(1, 10, 10, 4, 10);
        let b = lot(2, 10, 10, 6, -2);
        let plan = plan_settlement(
            &[Allocation { lot_id: a.id, credits: 4 }, Allocation { lot_id: b.id, credits: 6 }],
            &[a, b],
            0,
            now(),
        )
        .unwrap();
        assert_eq!((plan.released(), plan.forfeited(), plan.expiry_forfeited()), (4, 6, 4));
        assert_eq!(plan.lots[1].status_after, LotStatus::Expired);
    }

    #[test]
    fn lot_status_transitions() {
        use LotStatus::*;
        assert_eq!(Active.after(5, 0, false), Active);
        assert_eq!(Active.after(0, 0, false), Exhausted);
        assert_eq!(Active.after(5, 1, true), Active);
        assert_eq!(Active.after(0, 0, true), Expired);
        assert_eq!(Exhausted.after(0, 0, true), Exhausted);
        assert_eq!(Expired.after(3, 0, false), Expired);
    }

    #[test]
    fn inconsistent_allocations_are_refused() {
        let a = lot(1, 10, 10, 2, 10);
        let missing = ObjectId::from_bytes([9; 12]);
        assert_eq!(
            plan_settlement(&[Allocation { lot_id: missing, credits: 1 }], &[a], 0, now()),
            Err(PlanError::MissingLot(missing))
        );
        assert!(matches!(
            plan_settlement(&[Allocation { lot_id: a.id, credits: 3 }], &[a], 0, now()),
            Err(PlanError::LotTooSmall { .. })
        ));
        assert_eq!(
            plan_settlement(&[Allocation { lot_id: a.id, credits: 0 }], &[a], 0, now()),
            Err(PlanError::NonPositive(0))
        );
    }

    #[test]
    fn allocations_whose_sum_overflows_are_inconsistent_data_naming_the_field() {
        let a = lot(1, i64::MAX, i64::MAX, i64::MAX, 10);
        let b = lot(2, 10, 10, 10, 10);
        let huge = [Allocation { lot_id: a.id, credits: i64::MAX }, Allocation { lot_id: b.id, credits: 10 }];
        let e = plan_settlement(&huge, &[a, b], 0, now()).unwrap_err();
        assert_eq!(e, PlanError::SumOverflow("credits.allocations"));
        assert!(e.to_string().contains("`credits.allocations`"), "{e}");
        let twice = [Allocation { lot_id: a.id, credits: i64::MAX }, Allocation { lot_id: a.id, credits: 1 }];
        assert_eq!(plan_settlement(&twice, &[a], 0, now()), Err(PlanError::SumOverflow("credits.allocations")));
        assert_eq!(checked_sum([i64::MAX, 1]), None);
        assert_eq!(checked_sum([2, 3]), Some(5));
    }

    #[test]
    fn expiry_forfeits_that_overflow_are_inconsistent_data_naming_the_lots_field() {
        // Two expired lots whose last reservation this settlement releases: both remainders are
        // forfeited, and together they exceed i64::MAX.
        let half = i64::MAX / 2 + 10;
        let (a, b) = (lot(1, i64::MAX, half, 1, -1), lot(2, i64::MAX, half, 1, -1));
        let allocations = [Allocation { lot_id: a.id, credits: 1 }, Allocation { lot_id: b.id, credits: 1 }];
        let e = plan_settlement(&allocations, &[a, b], 0, now()).unwrap_err();
        assert_eq!(e, PlanError::SumOverflow(LOT_REMAINING));
        assert!(e.to_string().contains("`creditLots.remaining`"), "{e}");
        // One such lot alone fits: released 0, expiry forfeit = its remainder.
        let plan = plan_settlement(&allocations[..1], &[a], 0, now()).unwrap();
        assert_eq!(
            (plan.expiry_forfeited(), plan.all_forfeited(), plan.org_available_delta()),
            (half - 1, half, 1 - half)
        );
    }

    #[test]
    fn a_lot_whose_numbers_break_its_bounds_has_nothing_free() {
        let mut corrupt = lot(1, 10, 10, -5, 10);
        assert_eq!(corrupt.free(), 0, "negative reserved");
        corrupt.reserved = 11;
        assert_eq!(corrupt.free(), 0, "reserved above remaining");
        let extreme = LotState { remaining: i64::MAX, reserved: i64::MIN, ..corrupt };
        assert_eq!(extreme.free(), 0, "no overflow, nothing to reserve");
        assert_eq!(plan_reservation(&[extreme], 1, now()), Err(Insufficient { requested: 1, available: 0 }));
    }

    #[test]
    fn duplicate_allocations_of_one_lot_are_merged() {
        let a = lot(1, 10, 10, 5, 10);
        let plan = plan_settlement(
            &[Allocation { lot_id: a.id, credits: 2 }, Allocation { lot_id: a.id, credits: 3 }],
            &[a],
            1,
            now(),
        )
        .unwrap();
        assert_eq!(plan.lots.len(), 1);
        assert_eq!((plan.lots[0].reserved, plan.lots[0].released), (5, 4));
    }

    /// Over arbitrary (corrupt) lot numbers, allocations and consumption, the walks
    /// either return a typed [`PlanError`] or a plan whose every total equals the exact sum
    /// (computed in i128): never a wrapped value. Tests run with overflow checks, so an unchecked
    /// operation that overflowed would panic here as well.
    mod corrupt_numbers {
        use proptest::prelude::*;

        use super::*;

        /// Mostly boundary values: the ones that overflow.
        fn amount() -> impl Strategy<Value = i64> {
            prop_oneof![
                Just(i64::MAX),
                Just(i64::MAX - 1),
                Just(i64::MAX / 2 + 1),
                Just(i64::MIN),
                Just(-1_i64),
                Just(0_i64),
                Just(1_i64),
                0_i64..100,
                any::<i64>(),
            ]
        }

        fn lots() -> impl Strategy<Value = Vec<LotState>> {
            prop::collection::vec((amount(), amount(), amount(), any::<bool>()), 1..4).prop_map(|v| {
                v.into_iter()
                    .enumerate()
                    .map(|(i, (granted, remaining, reserved, expired))| LotState {
                        id: ObjectId::from_bytes([i as u8 + 1; 12]),
                        granted,
                        remaining,
                        reserved,
                        expires_at: now() + Duration::days(if expired { -1 } else { 1 }),
                        status: LotStatus::Active,
                    })
                    .collect()
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn settlement_is_a_typed_error_or_exact(
                lots in lots(),
                allocs in prop::collection::vec((0_usize..4, amount()), 1..5),
                consumed in amount(),
            ) {
                let allocations: Vec<Allocation> = allocs
                    .iter()
                    .map(|(i, credits)| Allocation { lot_id: lots[i % lots.len()].id, credits: *credits })
                    .collect();
                match plan_settlement(&allocations, &lots, consumed, now()) {
                    Err(e) => {
                        // Typed, and it names fields or lots, never a wrapped amount.
                        prop_assert!(!e.to_string().is_empty());
                    }
                    Ok(plan) => {
                        let exact = |f: fn(&LotSettlement) -> i64| plan.lots.iter().map(|l| i128::from(f(l))).sum::<i128>();
                        let (released, forfeited, expiry) = (exact(|l| l.released), exact(|l| l.forfeited), exact(|l| l.expiry_forfeited));
                        prop_assert_eq!(i128::from(plan.released()), released);
                        prop_assert_eq!(i128::from(plan.forfeited()), forfeited);
                        prop_assert_eq!(i128::from(plan.expiry_forfeited()), expiry);
                        prop_assert_eq!(i128::from(plan.all_forfeited()), forfeited + expiry);
                        prop_assert_eq!(i128::from(plan.org_available_delta()), released - expiry);
                        prop_assert_eq!(i128::from(plan.reserved), allocations.iter().map(|a| i128::from(a.credits)).sum::<i128>());
                        prop_assert!(0 <= plan.consumed && plan.consumed <= plan.reserved);
                        for l in &plan.lots {
                            prop_assert_eq!(i128::from(l.consumed) + i128::from(l.released) + i128::from(l.forfeited), i128::from(l.reserved));
                            prop_assert!(l.remaining_after >= 0 && l.reserved_after >= 0, "{:?}", l);
                            prop_assert!(l.remaining_after <= l.before.remaining);
                        }
                    }
                }
            }

            #[test]
            fn reservation_is_insufficient_or_exact(lots in lots(), amount in amount()) {
                match plan_reservation(&lots, amount, now()) {
                    Err(Insufficient { requested, available }) => {
                        prop_assert_eq!(requested, amount);
                        prop_assert!(available < amount && available >= 0);
                    }
                    Ok(allocations) => {
                        let total: i128 = allocations.iter().map(|a| i128::from(a.credits)).sum();
                        prop_assert_eq!(total, i128::from(amount.max(0)));
                        for a in &allocations {
                            let lot = lots.iter().find(|l| l.id == a.lot_id).unwrap();
                            prop_assert!(a.credits > 0 && a.credits <= lot.free());
                        }
                    }
                }
            }
        }
    }
}
