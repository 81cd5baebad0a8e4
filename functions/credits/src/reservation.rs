//! Reservation (the API's side, implemented here for fixtures, the local demo and tests): lots
//! oldest expiry first; per lot `reserved += n`; organization `available -= R`, `reserved += R`;
//! one `RESERVE` ledger entry per lot; the allocations recorded on the interview. One
//! transaction, retried like a settlement.

use bson::DateTime;
use chrono::Utc;
use mongodb::{Client, ClientSession};
use sophia_contracts::{InterviewId, OrganizationId};

use crate::arithmetic::{Allocation, plan_reservation};
use crate::error::CreditsError;
use crate::model::{LedgerEntry, LedgerType, Reference, ReferenceKind};
use crate::store::{CreditsStore, LotWrite};
use crate::txn::{Finish, RetryPolicy, run_transaction};

/// Reserves `amount` credits for an unsettled interview without a reservation. Refuses with
/// [`CreditsError::InsufficientCredits`] when the organization's usable lots cannot cover it.
pub async fn reserve_credits(
    client: &Client,
    store: &CreditsStore,
    organization_id: OrganizationId,
    interview_id: InterviewId,
    amount: i64,
    now: chrono::DateTime<Utc>,
    policy: &RetryPolicy,
) -> Result<Vec<Allocation>, CreditsError> {
    let (org, interview) = (organization_id.oid(), interview_id.oid());
    let at = DateTime::from_chrono(now);
    run_transaction(client, policy, async |s: &mut ClientSession| {
        let view = store
            .interview_in(s, interview)
            .await?
            .ok_or(CreditsError::InterviewNotFound { interview_id: interview })?;
        if view.organization_id != org {
            return Err(CreditsError::WrongOrganization {
                interview_id: interview,
                claimed: org,
                actual: view.organization_id,
            });
        }
        if view.settled_at.is_some() {
            return Err(CreditsError::AlreadySettled { interview_id: interview });
        }
        if view.credits.reserved > 0 || !view.credits.allocations.is_empty() {
            return Err(CreditsError::AlreadyReserved { interview_id: interview });
        }
        store.organization_in(s, org).await?.ok_or(CreditsError::OrganizationNotFound { organization_id: org })?;
        let lots = store.active_lots_in(s, org).await?;
        let states: Vec<_> = lots.iter().map(|l| l.state()).collect();
        let allocations = plan_reservation(&states, amount, now)
            .map_err(|source| CreditsError::InsufficientCredits { organization_id: org, source })?;
        let writes: Vec<LotWrite> = allocations
            .iter()
            .map(|a| {
                let lot = states.iter().find(|l| l.id == a.lot_id).expect("planned from these lots");
                LotWrite {
                    lot_id: lot.id,
                    before: (lot.reserved, lot.remaining),
                    // Cannot overflow: the walk took at most `free() = remaining - reserved` from
                    // a lot within `0 <= reserved <= remaining` (arithmetic.rs).
                    after: (lot.reserved + a.credits, lot.remaining, lot.status),
                }
            })
            .collect();
        store.update_lots_in(s, &writes).await?;
        store.inc_org_credits_in(s, org, -amount, amount, Some(amount)).await?;
        let reference = Reference { kind: ReferenceKind::Interview, id: interview };
        let entries: Vec<LedgerEntry> = allocations
            .iter()
            .map(|a| LedgerEntry::new(org, a.lot_id, LedgerType::Reserve, a.credits, reference, at))
            .collect();
        store.insert_ledger_in(s, &entries).await?;
        store.set_reservation_in(s, interview, amount, &allocations).await?;
        Ok(Finish::Commit(allocations))
    })
    .await
}
