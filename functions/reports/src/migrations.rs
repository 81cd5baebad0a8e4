//! The indexes of this crate's collection, created by an explicit, idempotent step (the
//! operator CLI, the local runner and the report-generate consumer's first batch call it).

use bson::doc;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use crate::store::INTERVIEW_REPORTS;

/// The unique index that makes a report one-per-interview.
pub const INTERVIEW_ID_UNIQUE: &str = "interviewId_unique";

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
