//! The five invariants of docs/design.md, checked against what is stored. Used after every test
//! scenario, by the local demo, the ops CLI and the load test.
//!
//! 1. `credits.reserved == sum(lot.reserved)`;
//! 2. `credits.available == sum(lot.remaining - lot.reserved)` over lots that are not `EXPIRED`;
//! 3. per lot `0 <= reserved <= remaining <= granted`;
//! 4. `sum(granted - remaining) == sum(SETTLE) + sum(FORFEIT)`;
//! 5. per settled interview `sum(RESERVE) == sum(SETTLE) + sum(RELEASE) + sum(FORFEIT)` for its
//!    reference, and `sum(SETTLE) == credits.consumed`.
//!
//! Sums are computed here, in Rust, from the documents (no aggregation), so the check does not
//! depend on the server's numeric types; documents are read leniently (`sophia_documents`: a
//! balance an operator fixed by hand in the mongo shell is a double). Sums are exact: stored
//! 64-bit amounts are added in 128 bits, so corrupt numbers can neither wrap nor
//! saturate into an apparent balance; the comparison reports them.

use std::collections::HashMap;

use bson::doc;
use bson::oid::ObjectId;

use crate::arithmetic::LotStatus;
use crate::error::CreditsError;
use crate::model::{
    CREDIT_LEDGER, CREDIT_LOTS, CreditLot, INTERVIEWS, InterviewCreditsView, LedgerEntry, LedgerType, ORGANIZATIONS,
    Organization, ReferenceKind,
};
use crate::store::CreditsStore;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("invariant 1: organization {organization_id} has credits.reserved {org} but its lots reserve {lots}")]
    Reserved { organization_id: ObjectId, org: i64, lots: i128 },
    #[error(
        "invariant 2: organization {organization_id} has credits.available {org} but its unexpired lots have {lots} free"
    )]
    Available { organization_id: ObjectId, org: i64, lots: i128 },
    #[error(
        "invariant 3: lot {lot_id} breaks 0 <= reserved ({reserved}) <= remaining ({remaining}) <= granted ({granted})"
    )]
    LotBounds { lot_id: ObjectId, granted: i64, remaining: i64, reserved: i64 },
    #[error("invariant 4: organization {organization_id} lots lost {lots} credits but SETTLE + FORFEIT = {ledger}")]
    Consumption { organization_id: ObjectId, lots: i128, ledger: i128 },
    #[error(
        "invariant 5: settled interview {interview_id}: RESERVE {reserve} != SETTLE {settle} + RELEASE {release} + FORFEIT {forfeit}"
    )]
    InterviewBalance { interview_id: ObjectId, reserve: i128, settle: i128, release: i128, forfeit: i128 },
    #[error("invariant 5: settled interview {interview_id}: SETTLE {settle} != credits.consumed {consumed:?}")]
    InterviewConsumed { interview_id: ObjectId, settle: i128, consumed: Option<i64> },
}

impl Violation {
    /// Which of the five invariants this breaks.
    pub fn invariant(&self) -> u8 {
        match self {
            Self::Reserved { .. } => 1,
            Self::Available { .. } => 2,
            Self::LotBounds { .. } => 3,
            Self::Consumption { .. } => 4,
            Self::InterviewBalance { .. } | Self::InterviewConsumed { .. } => 5,
        }
    }
}

/// The invariants of one organization.
pub async fn check_organization(
    store: &CreditsStore,
    organization_id: ObjectId,
) -> Result<Vec<Violation>, CreditsError> {
    let orgs: Vec<Organization> = store.all(ORGANIZATIONS, doc! {"_id": organization_id}).await?;
    if orgs.is_empty() {
        return Err(CreditsError::OrganizationNotFound { organization_id });
    }
    let by_org = doc! {"organizationId": organization_id};
    let lots: Vec<CreditLot> = store.all(CREDIT_LOTS, by_org.clone()).await?;
    let ledger: Vec<LedgerEntry> = store.all(CREDIT_LEDGER, by_org.clone()).await?;
    let interviews: Vec<InterviewCreditsView> = store.all(INTERVIEWS, by_org).await?;
    Ok(check(&orgs, &lots, &ledger, &interviews))
}

/// The invariants of every organization in the database.
pub async fn check_all(store: &CreditsStore) -> Result<Vec<Violation>, CreditsError> {
    let orgs: Vec<Organization> = store.all(ORGANIZATIONS, doc! {}).await?;
    let lots: Vec<CreditLot> = store.all(CREDIT_LOTS, doc! {}).await?;
    let ledger: Vec<LedgerEntry> = store.all(CREDIT_LEDGER, doc! {}).await?;
    let interviews: Vec<InterviewCreditsView> = store.all(INTERVIEWS, doc! {}).await?;
    Ok(check(&orgs, &lots, &ledger, &interviews))
}

/// An exact sum: stored amounts are not trusted to be small (2^64 amounts of 64 bits fit in 128).
fn sum(amounts: impl Iterator<Item = i64>) -> i128 {
    amounts.map(i128::from).sum()
}

/// The pure check over loaded documents (documents of organizations not in `orgs` are ignored).
pub fn check(
    orgs: &[Organization],
    lots: &[CreditLot],
    ledger: &[LedgerEntry],
    interviews: &[InterviewCreditsView],
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for org in orgs {
        let id = org.id;
        let own_lots: Vec<&CreditLot> = lots.iter().filter(|l| l.organization_id == id).collect();
        let reserved = sum(own_lots.iter().map(|l| l.reserved));
        if i128::from(org.credits.reserved) != reserved {
            violations.push(Violation::Reserved { organization_id: id, org: org.credits.reserved, lots: reserved });
        }
        let free = own_lots
            .iter()
            .filter(|l| l.status != LotStatus::Expired)
            .map(|l| i128::from(l.remaining) - i128::from(l.reserved))
            .sum::<i128>();
        if i128::from(org.credits.available) != free {
            violations.push(Violation::Available { organization_id: id, org: org.credits.available, lots: free });
        }
        for l in &own_lots {
            if !(0 <= l.reserved && l.reserved <= l.remaining && l.remaining <= l.granted) {
                violations.push(Violation::LotBounds {
                    lot_id: l.id,
                    granted: l.granted,
                    remaining: l.remaining,
                    reserved: l.reserved,
                });
            }
        }
        let lost = own_lots.iter().map(|l| i128::from(l.granted) - i128::from(l.remaining)).sum::<i128>();
        let settled_or_forfeited = sum(ledger
            .iter()
            .filter(|e| e.organization_id == id && matches!(e.kind, LedgerType::Settle | LedgerType::Forfeit))
            .map(|e| e.amount));
        if lost != settled_or_forfeited {
            violations.push(Violation::Consumption { organization_id: id, lots: lost, ledger: settled_or_forfeited });
        }
    }
    let org_ids: Vec<ObjectId> = orgs.iter().map(|o| o.id).collect();
    let mut per_interview: HashMap<ObjectId, [i128; 4]> = HashMap::new();
    for e in ledger.iter().filter(|e| e.reference.kind == ReferenceKind::Interview) {
        let sums = per_interview.entry(e.reference.id).or_default();
        let slot = match e.kind {
            LedgerType::Reserve => 0,
            LedgerType::Settle => 1,
            LedgerType::Release => 2,
            LedgerType::Forfeit => 3,
        };
        sums[slot] += i128::from(e.amount);
    }
    for i in interviews.iter().filter(|i| i.settled_at.is_some() && org_ids.contains(&i.organization_id)) {
        let [reserve, settle, release, forfeit] = per_interview.get(&i.id).copied().unwrap_or_default();
        if reserve != settle + release + forfeit {
            violations.push(Violation::InterviewBalance { interview_id: i.id, reserve, settle, release, forfeit });
        }
        if i.credits.consumed.map(i128::from) != Some(settle) {
            violations.push(Violation::InterviewConsumed { interview_id: i.id, settle, consumed: i.credits.consumed });
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use bson::DateTime;

    use super::*;
    use crate::model::{InterviewCredits, OrgCredits, Reference};

    fn oid(n: u8) -> ObjectId {
        ObjectId::from_bytes([n; 12])
    }

    fn entry(kind: LedgerType, amount: i64, reference: Reference) -> LedgerEntry {
        LedgerEntry {
            id: ObjectId::new(),
            organization_id: oid(1),
            lot_id: oid(2),
            kind,
            amount,
            reference,
            created_at: DateTime::now(),
        }
    }

    fn world(
        consumed: Option<i64>,
        remaining: i64,
        available: i64,
    ) -> (Vec<Organization>, Vec<CreditLot>, Vec<LedgerEntry>, Vec<InterviewCreditsView>) {
        let org = Organization { id: oid(1), name: "o".into(), credits: OrgCredits { available, reserved: 0 } };
        let lot = CreditLot {
            id: oid(2),
            organization_id: oid(1),
            granted: 10,
            remaining,
            reserved: 0,
            expires_at: DateTime::now(),
            status: LotStatus::Active,
            created_at: None,
        };
        let r = Reference { kind: ReferenceKind::Interview, id: oid(3) };
        let ledger =
            vec![entry(LedgerType::Reserve, 4, r), entry(LedgerType::Settle, 3, r), entry(LedgerType::Release, 1, r)];
        let interview = InterviewCreditsView {
            id: oid(3),
            organization_id: oid(1),
            status: None,
            credits: InterviewCredits { reserved: 4, consumed, allocations: vec![] },
            settled_at: Some(DateTime::now()),
            retention_expires_at: None,
            created_at: None,
        };
        (vec![org], vec![lot], ledger, vec![interview])
    }

    #[test]
    fn a_consistent_organization_has_no_violations() {
        let (o, l, e, i) = world(Some(3), 7, 7);
        assert_eq!(check(&o, &l, &e, &i), vec![]);
    }

    #[test]
    fn each_broken_invariant_is_reported_by_number() {
        let (o, l, e, i) = world(Some(2), 8, 5);
        let numbers: Vec<u8> = check(&o, &l, &e, &i).iter().map(Violation::invariant).collect();
        assert_eq!(numbers, vec![2, 4, 5]);
        let (o, mut l, e, i) = world(Some(3), 7, 7);
        l[0].reserved = 9;
        let numbers: Vec<u8> = check(&o, &l, &e, &i).iter().map(Violation::invariant).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
    }

    #[test]
    fn sums_past_64_bits_are_exact_never_saturated_into_agreement() {
        // Two lots reserving i64::MAX each: a saturating sum would read i64::MAX and agree with
        // an organization claiming i64::MAX reserved.
        let (mut o, l, e, i) = world(Some(3), 7, 7);
        let huge = CreditLot { reserved: i64::MAX, remaining: i64::MAX, granted: i64::MAX, ..l[0].clone() };
        let lots = vec![huge.clone(), CreditLot { id: oid(9), ..huge }];
        o[0].credits.reserved = i64::MAX;
        let v = check(&o, &lots, &e, &i);
        let reserved = v.iter().find(|x| x.invariant() == 1).expect("invariant 1 reported");
        assert_eq!(
            reserved,
            &Violation::Reserved { organization_id: oid(1), org: i64::MAX, lots: 2 * i128::from(i64::MAX) }
        );
    }
}
