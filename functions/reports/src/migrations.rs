//! The indexes of this crate's collection, created by an explicit, idempotent step
//! (`sophia-ops migrate`, which `scripts/deploy` runs against the stage's database, and the
//! local runner). The report-generate function never creates them; it checks [`REQUIRED`] and
//! [`REQUIRED_TTL`] on its first invocation and logs an ERROR for a missing one.
//!
//! # Retention
//! Reports hold candidate text (verbatim quotes, the summary). [`RETENTION_TTL_INDEX`] makes
//! MongoDB delete a report once its `retentionExpiresAt` has passed: a TTL index on a date field
//! with `expireAfterSeconds: 0` expires each document at the date the field holds; a document
//! whose field is absent or not a date is never deleted
//! (https://www.mongodb.com/docs/manual/core/index-ttl/,
//! https://www.mongodb.com/docs/manual/tutorial/expire-data/#expire-documents-at-a-specific-clock-time).
//! So every report write path must set the date (the settlement sets it on the interview, the
//! report copies it). MongoDB's TTL monitor runs about every 60 s and on a replica set deletes on
//! the primary: a report disappears shortly after its date, not at the second.
//!
//! An index on `retentionExpiresAt` that already exists with other options (for instance one the
//! API created with another expiry) makes `createIndexes` fail with IndexOptionsConflict (85) or
//! IndexKeySpecsConflict (86): `migrate` then stops and says so; the operator drops or `collMod`s
//! the old index (docs/candidate-data.md).

use bson::doc;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use sophia_platform::indexes::{RequiredIndex, RequiredTtlIndex};

use crate::store::INTERVIEW_REPORTS;

/// The unique index that makes a report one-per-interview.
pub const INTERVIEW_ID_UNIQUE: &str = "interviewId_unique";

/// The unique indexes report generation relies on (one report per interview: the insert-claim
/// is an insert-if-absent only with it).
pub const REQUIRED: &[RequiredIndex] = &[RequiredIndex { collection: INTERVIEW_REPORTS, keys: &["interviewId"] }];

/// The index of `erasures` that the overdue count reads (docs/candidate-data.md, "Erasure").
pub const ERASURES_OVERDUE_INDEX: &str = "state_requestedAt";

/// The TTL index that deletes a report at its `retentionExpiresAt`.
pub const RETENTION_TTL_INDEX: &str = "retentionExpiresAt_ttl";
/// The field it expires on.
pub const RETENTION_FIELD: &str = "retentionExpiresAt";

/// The TTL indexes report retention relies on.
pub const REQUIRED_TTL: &[RequiredTtlIndex] =
    &[RequiredTtlIndex { collection: INTERVIEW_REPORTS, field: RETENTION_FIELD, expire_after_seconds: 0 }];

/// Creates the indexes if absent. Safe to call any number of times, concurrently too
/// (`createIndexes` with an identical specification is a no-op).
pub async fn apply(db: &Database) -> mongodb::error::Result<()> {
    let unique = IndexModel::builder()
        .keys(doc! {"interviewId": 1})
        .options(IndexOptions::builder().name(INTERVIEW_ID_UNIQUE.to_owned()).unique(true).build())
        .build();
    db.collection::<bson::Document>(INTERVIEW_REPORTS).create_index(unique).await?;
    let ttl = IndexModel::builder()
        .keys(doc! {RETENTION_FIELD: 1})
        .options(
            IndexOptions::builder()
                .name(RETENTION_TTL_INDEX.to_owned())
                .expire_after(std::time::Duration::ZERO)
                .build(),
        )
        .build();
    db.collection::<bson::Document>(INTERVIEW_REPORTS).create_index(ttl).await?;
    // The count of overdue erasure requests report-generate makes at each batch (`ErasuresOverdue`).
    let overdue = IndexModel::builder()
        .keys(doc! {"state": 1, "requestedAt": 1})
        .options(IndexOptions::builder().name(ERASURES_OVERDUE_INDEX.to_owned()).build())
        .build();
    db.collection::<bson::Document>(sophia_documents::erasure::ERASURES).create_index(overdue).await?;
    Ok(())
}
