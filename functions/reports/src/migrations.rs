//! The indexes of this crate's collection, created by an explicit, idempotent step
//! (`sophia-ops migrate`, which `scripts/deploy` runs against the stage's database, and the
//! local runner). The report-generate function never creates them; it checks [`REQUIRED`] on its
//! first invocation and logs an ERROR for a missing one.

use bson::doc;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use sophia_platform::indexes::RequiredIndex;

use crate::store::INTERVIEW_REPORTS;

/// The unique index that makes a report one-per-interview.
pub const INTERVIEW_ID_UNIQUE: &str = "interviewId_unique";

/// The unique indexes report generation relies on (one report per interview: the insert-claim
/// is an insert-if-absent only with it).
pub const REQUIRED: &[RequiredIndex] = &[RequiredIndex { collection: INTERVIEW_REPORTS, keys: &["interviewId"] }];

/// Creates the indexes if absent. Safe to call any number of times, concurrently too
/// (`createIndexes` with an identical specification is a no-op).
pub async fn apply(db: &Database) -> mongodb::error::Result<()> {
    let unique = IndexModel::builder()
        .keys(doc! {"interviewId": 1})
        .options(IndexOptions::builder().name(INTERVIEW_ID_UNIQUE.to_owned()).unique(true).build())
        .build();
    db.collection::<bson::Document>(INTERVIEW_REPORTS).create_index(unique).await?;
    Ok(())
}
