//! Fixtures and seed data for tests, the local demo and the load test: organizations, credit
//! lots, interviews, reservations. Plain writes (no transaction) except the reservation; run
//! them before the pipeline starts, not concurrently with it on one database.

use bson::oid::ObjectId;
use bson::{DateTime, Document, doc};
use chrono::Utc;
use mongodb::Client;
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, Timestamp};

use crate::arithmetic::{Allocation, LotStatus};
use crate::error::CreditsError;
use crate::model::{CreditLot, OrgCredits, Organization};
use crate::store::CreditsStore;
use crate::txn::RetryPolicy;

/// An organization with no credits.
pub async fn create_organization(store: &CreditsStore, name: &str) -> Result<OrganizationId, CreditsError> {
    let org = Organization { id: ObjectId::new(), name: name.to_owned(), credits: OrgCredits::default() };
    store.organizations().insert_one(&org).await.map_err(CreditsError::mongo("insert organization"))?;
    Ok(OrganizationId::new(org.id))
}

/// Grants a lot of `granted` credits expiring at `expires_at`; the organization's `available`
/// grows by `granted`.
pub async fn grant_lot(
    store: &CreditsStore,
    organization_id: OrganizationId,
    granted: i64,
    expires_at: chrono::DateTime<Utc>,
) -> Result<ObjectId, CreditsError> {
    let lot = CreditLot {
        id: ObjectId::new(),
        organization_id: organization_id.oid(),
        granted,
        remaining: granted,
        reserved: 0,
        expires_at: DateTime::from_chrono(expires_at),
        status: LotStatus::Active,
        created_at: Some(DateTime::now()),
    };
    store.lots().insert_one(&lot).await.map_err(CreditsError::mongo("insert lot"))?;
    let r = store
        .organizations()
        .update_one(doc! {"_id": organization_id.oid()}, doc! {"$inc": {"credits.available": granted}})
        .await
        .map_err(CreditsError::mongo("grant credits"))?;
    if r.matched_count != 1 {
        return Err(CreditsError::OrganizationNotFound { organization_id: organization_id.oid() });
    }
    Ok(lot.id)
}

/// A `SCHEDULED` interview without a reservation. `extra` is merged into the document
/// (e.g. `snapshot`, `proctoring`, `durationSeconds`, `createdAt`) and may override the
/// defaults. No `createdAt` unless given: the fixtures' fixed completion times (e.g.
/// `2026-12-02T17:30Z`) would otherwise precede it, which settlement refuses as inconsistent.
pub async fn create_interview(
    store: &CreditsStore,
    organization_id: OrganizationId,
    extra: Document,
) -> Result<InterviewId, CreditsError> {
    let id = ObjectId::new();
    let mut d = doc! {
        "_id": id,
        "organizationId": organization_id.oid(),
        "status": "SCHEDULED",
        "credits": {"reserved": 0_i64, "allocations": []},
        "settledAt": null,
    };
    for (k, v) in extra {
        d.insert(k, v);
    }
    store.interview_documents().insert_one(d).await.map_err(CreditsError::mongo("insert interview"))?;
    Ok(InterviewId::new(id))
}

/// Reserves with the default retry budget (see [`crate::reservation::reserve_credits`]).
pub async fn reserve(
    client: &Client,
    store: &CreditsStore,
    organization_id: OrganizationId,
    interview_id: InterviewId,
    amount: i64,
) -> Result<Vec<Allocation>, CreditsError> {
    crate::reservation::reserve_credits(
        client,
        store,
        organization_id,
        interview_id,
        amount,
        Utc::now(),
        &RetryPolicy::default(),
    )
    .await
}

/// A new interview with `amount` credits reserved.
pub async fn reserved_interview(
    client: &Client,
    store: &CreditsStore,
    organization_id: OrganizationId,
    amount: i64,
    extra: Document,
) -> Result<InterviewId, CreditsError> {
    let id = create_interview(store, organization_id, extra).await?;
    reserve(client, store, organization_id, id, amount).await?;
    Ok(id)
}

/// What the API does synchronously before publishing `interview.completed`: status, time,
/// duration on the interview.
pub async fn mark_completed(
    store: &CreditsStore,
    interview_id: InterviewId,
    completed_at: Timestamp,
    duration: DurationSeconds,
) -> Result<(), CreditsError> {
    let duration = i64::try_from(duration.get()).unwrap_or(i64::MAX);
    store
        .interview_documents()
        .update_one(
            doc! {"_id": interview_id.oid()},
            doc! {"$set": {"status": "COMPLETED", "completedAt": DateTime::from_chrono(completed_at.as_datetime()), "durationSeconds": duration}},
        )
        .await
        .map_err(CreditsError::mongo("mark interview completed"))?;
    Ok(())
}

/// What the API does before publishing `interview.failed`.
pub async fn mark_failed(
    store: &CreditsStore,
    interview_id: InterviewId,
    failed_at: Timestamp,
) -> Result<(), CreditsError> {
    store
        .interview_documents()
        .update_one(
            doc! {"_id": interview_id.oid()},
            doc! {"$set": {"status": "FAILED", "failedAt": DateTime::from_chrono(failed_at.as_datetime())}},
        )
        .await
        .map_err(CreditsError::mongo("mark interview failed"))?;
    Ok(())
}
