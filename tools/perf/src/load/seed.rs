//! The seed: `orgs` organizations, two credit lots each, and one reserved interview per valid
//! event, written in bulk (`insert_many`) in the exact shape the library's reservation writes
//! (organization balances, lot `reserved`, `RESERVE` ledger entries, interview
//! `credits.allocations`), so the five invariants hold before anything is published; every fifth
//! reservation spans both lots.

use std::time::Instant;

use bson::oid::ObjectId;
use bson::{DateTime, Document, doc};
use sophia_credits::arithmetic::{Allocation, LotStatus};
use sophia_credits::model::{CreditLot, LedgerEntry, LedgerType, OrgCredits, Organization, Reference, ReferenceKind};
use sophia_credits::{CreditsStore, invariants};

use sophia_local::demo::transcript;

use super::LoadError;
use super::mix::Mix;
use super::rng::Rng;

/// One seeded interview and what its settlement must produce.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    pub(super) id: ObjectId,
    pub(super) org: ObjectId,
    pub(super) reserved: i64,
    pub(super) lots: usize,
    /// `None`: failed.
    pub(super) duration: Option<u64>,
}

impl Planned {
    pub(super) fn expected_consumed(&self) -> i64 {
        self.duration.map_or(0, |d| ((d / 60) as i64).min(self.reserved))
    }
}

/// Seeds the run (timed) and checks the five invariants hold before anything is published.
pub(super) async fn seed_and_check(
    store: &CreditsStore,
    mix: &Mix,
    orgs: usize,
    rng: &mut Rng,
) -> Result<(Vec<Planned>, f64), LoadError> {
    let seed_started = Instant::now();
    let planned = seed(store, mix, orgs, rng).await?;
    let seed_seconds = seed_started.elapsed().as_secs_f64();
    let violations_before = invariants::check_all(store).await?;
    if !violations_before.is_empty() {
        return Err(LoadError::Setup(format!(
            "the seed itself breaks the invariants: {:?}",
            violations_before.first()
        )));
    }
    eprintln!(
        "seeded {} organizations, {} lots, {} reserved interviews in {seed_seconds:.1} s",
        orgs,
        orgs * 2,
        planned.len()
    );
    Ok((planned, seed_seconds))
}

/// Organizations, lots and reserved interviews in bulk, consistent with the five invariants.
async fn seed(store: &CreditsStore, mix: &Mix, orgs: usize, rng: &mut Rng) -> Result<Vec<Planned>, LoadError> {
    let mut plan = SeedPlan::new(orgs, mix.interviews());
    let mut planned = Vec::with_capacity(mix.interviews());
    for i in 0..mix.interviews() {
        planned.push(plan.add_interview(i, mix, rng)?);
    }
    plan.insert(store).await?;
    Ok(planned)
}

/// The documents of a seed before they are written.
struct SeedPlan {
    now: chrono::DateTime<chrono::Utc>,
    at: DateTime,
    org_ids: Vec<ObjectId>,
    lot_ids: Vec<[ObjectId; 2]>,
    /// Credits reserved on each organization's two lots so far.
    lot_reserved: Vec<[i64; 2]>,
    interviews: Vec<Document>,
    ledger: Vec<LedgerEntry>,
}

impl SeedPlan {
    fn new(orgs: usize, interviews: usize) -> Self {
        let now = chrono::Utc::now();
        let at = DateTime::from_chrono(now);
        let org_ids: Vec<ObjectId> = (0..orgs).map(|_| ObjectId::new()).collect();
        let lot_ids: Vec<[ObjectId; 2]> = (0..orgs).map(|_| [ObjectId::new(), ObjectId::new()]).collect();
        let lot_reserved = vec![[0_i64; 2]; orgs];
        Self { now, at, org_ids, lot_ids, lot_reserved, interviews: Vec::with_capacity(interviews), ledger: Vec::new() }
    }

    /// The `i`-th interview: reserved on one lot of its organization (both, every fifth), its
    /// `RESERVE` entries, completed (or failed past `mix.completed`) with a transcript.
    fn add_interview(&mut self, i: usize, mix: &Mix, rng: &mut Rng) -> Result<Planned, bson::ser::Error> {
        let (at, lot_ids) = (self.at, &self.lot_ids);
        let o = i % self.org_ids.len();
        let reserved = rng.range(10, 40) as i64;
        let failed = i >= mix.completed;
        // Mostly 2-40 minutes; one in twenty under a minute (insufficient evidence).
        let duration = (!failed).then(|| if rng.range(0, 19) == 0 { rng.range(5, 59) } else { rng.range(120, 2700) });
        let allocations: Vec<Allocation> = if i.is_multiple_of(5) {
            let a = reserved / 2;
            vec![
                Allocation { lot_id: lot_ids[o][0], credits: a },
                Allocation { lot_id: lot_ids[o][1], credits: reserved - a },
            ]
        } else {
            vec![Allocation { lot_id: lot_ids[o][i % 2], credits: reserved }]
        };
        let id = ObjectId::new();
        for a in &allocations {
            let slot = usize::from(a.lot_id == lot_ids[o][1]);
            self.lot_reserved[o][slot] += a.credits;
            self.ledger.push(LedgerEntry::new(
                self.org_ids[o],
                a.lot_id,
                LedgerType::Reserve,
                a.credits,
                Reference { kind: ReferenceKind::Interview, id },
                at,
            ));
        }
        let mut d = doc! {
            "_id": id,
            "organizationId": self.org_ids[o],
            "credits": {"reserved": reserved, "allocations": bson::to_bson(&allocations)?},
            "settledAt": null,
            "createdAt": at,
        };
        match duration {
            Some(seconds) => {
                d.insert("status", "COMPLETED");
                d.insert("completedAt", at);
                d.insert("durationSeconds", seconds as i64);
            }
            None => {
                d.insert("status", "FAILED");
                d.insert("failedAt", at);
            }
        }
        for (k, v) in transcript(duration.is_some_and(|s| s >= 60)) {
            d.insert(k, v);
        }
        self.interviews.push(d);
        Ok(Planned { id, org: self.org_ids[o], reserved, lots: allocations.len(), duration })
    }

    /// Each organization and its two lots (30 and 365 days), 50 credits available on each lot
    /// beside what the interviews reserved.
    fn organizations_and_lots(&self) -> (Vec<Organization>, Vec<CreditLot>) {
        let (now, at) = (self.now, self.at);
        let mut organizations = Vec::new();
        let mut lots = Vec::new();
        for (o, lot_reserved) in self.lot_reserved.iter().enumerate() {
            let mut available = 0;
            for (slot, days) in [(0, 30), (1, 365)] {
                let granted = lot_reserved[slot] + 50;
                available += granted - lot_reserved[slot];
                lots.push(CreditLot {
                    id: self.lot_ids[o][slot],
                    organization_id: self.org_ids[o],
                    granted,
                    remaining: granted,
                    reserved: lot_reserved[slot],
                    expires_at: DateTime::from_chrono(now + chrono::Duration::days(days)),
                    status: LotStatus::Active,
                    created_at: Some(at),
                });
            }
            let reserved = lot_reserved[0] + lot_reserved[1];
            organizations.push(Organization {
                id: self.org_ids[o],
                name: format!("Load organization {o}"),
                credits: OrgCredits { available, reserved },
            });
        }
        (organizations, lots)
    }

    /// Everything written in bulk: organizations, lots, interviews (500 a call), ledger (1,000).
    async fn insert(self, store: &CreditsStore) -> Result<(), LoadError> {
        let (organizations, lots) = self.organizations_and_lots();
        store.organizations().insert_many(&organizations).await?;
        store.lots().insert_many(&lots).await?;
        for chunk in self.interviews.chunks(500) {
            store.interview_documents().insert_many(chunk).await?;
        }
        for chunk in self.ledger.chunks(1000) {
            store.ledger().insert_many(chunk).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of 200 events over 3 organizations, as `seed` writes it.
    fn plan() -> (SeedPlan, Vec<Planned>, Mix) {
        let mix = Mix::of(200);
        let mut plan = SeedPlan::new(3, mix.interviews());
        let mut rng = Rng::new(0x5eed);
        let planned = (0..mix.interviews()).map(|i| plan.add_interview(i, &mix, &mut rng).expect("plans")).collect();
        (plan, planned, mix)
    }

    #[test]
    fn the_reserve_entries_and_the_lots_carry_every_reserved_credit() {
        let (plan, planned, _) = plan();
        let reserved: i64 = planned.iter().map(|p| p.reserved).sum();
        assert_eq!(plan.ledger.iter().map(|e| e.amount).sum::<i64>(), reserved);
        let (organizations, lots) = plan.organizations_and_lots();
        assert_eq!((organizations.len(), lots.len()), (3, 6));
        assert_eq!(lots.iter().map(|l| l.reserved).sum::<i64>(), reserved);
        assert_eq!(organizations.iter().map(|o| o.credits.reserved).sum::<i64>(), reserved);
        assert!(organizations.iter().all(|o| o.credits.available == 100), "50 free credits on each of two lots");
        assert!(lots.iter().all(|l| l.granted == l.reserved + 50 && l.remaining == l.granted));
    }

    #[test]
    fn every_fifth_reservation_spans_both_lots_and_the_failed_ones_come_last() {
        let (plan, planned, mix) = plan();
        for (i, p) in planned.iter().enumerate() {
            assert_eq!(p.lots, if i % 5 == 0 { 2 } else { 1 }, "interview {i}");
            assert_eq!(p.duration.is_none(), i >= mix.completed, "interview {i}");
        }
        assert_eq!(plan.ledger.len(), planned.iter().map(|p| p.lots).sum::<usize>());
        let statuses: Vec<&str> = plan.interviews.iter().map(|d| d.get_str("status").expect("status")).collect();
        assert_eq!(statuses.iter().filter(|s| **s == "FAILED").count(), mix.failed);
    }

    #[test]
    fn a_completed_interview_is_billed_its_whole_minutes_up_to_its_reservation() {
        let p = |reserved, duration| Planned { id: ObjectId::new(), org: ObjectId::new(), reserved, lots: 1, duration };
        assert_eq!(p(30, Some(600)).expected_consumed(), 10);
        assert_eq!(p(30, Some(59)).expected_consumed(), 0);
        assert_eq!(p(5, Some(600)).expected_consumed(), 5, "never more than reserved");
        assert_eq!(p(30, None).expected_consumed(), 0, "a failed interview costs nothing");
    }
}
