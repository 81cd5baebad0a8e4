//! The tombstone of an erased interview's report (docs/candidate-data.md, "Erasure"; why it is
//! the report document itself: docs/design.md, "Erasure").
//!
//! An erasure replaces the interview's report document with a tombstone: `status` `ERASED`, the
//! ids and dates only, every field derived from the candidate's answers gone (the report, its
//! quotes and summary, `lastError`, `refusal`, `generation`, the retry history). Because the
//! tombstone *is* the one report document of the interview (unique on `interviewId`), every
//! writer's existing conditional write checks it, in the same write:
//!
//! - the first-delivery claim ([`ReportStore::insert_claimed`](crate::store::ReportStore::insert_claimed))
//!   is an insert the unique index refuses;
//! - the claim ([`claim::claimable_filter`](crate::claim::claimable_filter)) matches only
//!   `NOT_STARTED`, `FAILED` or a lapsed `PROCESSING`;
//! - the store of a result and of a failure (`complete`, `fail`) require `PROCESSING` under the
//!   worker's `leaseId`, which the tombstone does not carry: a model answer that arrives after the
//!   erasure stores nothing;
//! - the attempts reset of the admin retry and of the redrive is a compare-and-set on the status
//!   read (`ERASED` is declared `erased` in `declarations/reports.json`: never reset).
//!
//! The tombstone is written by [`tombstone`]: an insert (no report yet), else one
//! `findOneAndReplace` of the existing document, atomic on that document whatever a worker is
//! doing with it. It has no `retentionExpiresAt`, so the TTL index never removes it: a message
//! naming the interview can outlive the report's retention (a DLQ keeps one 14 days), and the
//! tombstone holds nothing about the candidate.

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use mongodb::Database;
use mongodb::options::ReturnDocument;
use sophia_contracts::InterviewId;
use sophia_documents::erasure::{ERASURES, request_filter};

use crate::interview::INTERVIEWS;
use crate::report::ReportStatus;
use crate::store::{INTERVIEW_REPORTS, ReportStore};

/// What [`tombstone`] found in the report's place before it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replaced {
    /// No report document: the tombstone was inserted.
    Nothing,
    /// A report in this status (`COMPLETED`, `PROCESSING`, ...) was replaced by the tombstone.
    Report { status: String },
    /// The tombstone was already there (an erasure repeated).
    AlreadyErased,
}

impl Replaced {
    /// For the erasure's record: what was removed (`none`, the status of the report removed, or
    /// `already-erased`).
    pub fn as_record(&self) -> String {
        match self {
            Self::Nothing => "none".into(),
            Self::Report { status } => format!("report {status}"),
            Self::AlreadyErased => "already-erased".into(),
        }
    }
}

/// The tombstone document: ids and dates only.
pub fn tombstone_document(interview_id: ObjectId, organization_id: Option<ObjectId>, at: DateTime) -> Document {
    doc! {
        "interviewId": interview_id,
        "organizationId": organization_id.map_or(Bson::Null, Bson::ObjectId),
        "status": ReportStatus::Erased.as_str(),
        "attemptCount": 0_i32,
        "erasedAt": at,
        "createdAt": at,
        "updatedAt": at,
    }
}

/// How many times [`tombstone`] looks again when the report changes under it (created next to
/// the tombstone where the unique index is missing, or removed by the TTL index meanwhile).
pub const REPLACE_TRIES: usize = 5;

/// Replaces the organization's report(s) of the interview with the tombstone, by `interviewId`
/// and `organizationId` first (never relying on the unique index: without it an insert would sit
/// next to the real report), and inserts the tombstone only where none matched; then looks again,
/// so that a report created meanwhile is replaced too. Safe against a worker racing it: the
/// worker's later writes are conditional on what the tombstone removed (see the module docs).
/// `Ok(None)`: the report still changed after [`REPLACE_TRIES`] tries (ask again).
pub async fn tombstone(
    db: &Database,
    interview_id: InterviewId,
    organization_id: Option<ObjectId>,
) -> mongodb::error::Result<Option<Replaced>> {
    let reports = ReportStore::new(db);
    let organization_id = match organization_id {
        Some(o) => Some(o),
        None => organization_of(db, interview_id).await?,
    };
    let now = DateTime::now();
    let stone = tombstone_document(interview_id.oid(), organization_id, now);
    let mine =
        doc! {"interviewId": interview_id.oid(), "organizationId": organization_id.map_or(Bson::Null, Bson::ObjectId)};
    let mut live = mine.clone();
    live.insert("status", doc! {"$nin": [ReportStatus::Erased.as_str()]});
    let (mut removed, mut inserted) = (None, false);
    for _ in 0..REPLACE_TRIES {
        let before = reports
            .collection()
            .find_one_and_replace(live.clone(), stone.clone())
            .return_document(ReturnDocument::Before)
            .await?;
        if let Some(d) = before {
            removed = Some(Replaced::Report { status: d.get_str("status").unwrap_or("unknown").to_owned() });
            continue;
        }
        if reports.collection().find_one(mine.clone()).await?.is_some() {
            let found = if inserted { Replaced::Nothing } else { Replaced::AlreadyErased };
            return Ok(Some(removed.unwrap_or(found)));
        }
        let mut inserting = stone.clone();
        inserting.insert("_id", ObjectId::new());
        match reports.collection().insert_one(inserting).await {
            Ok(_) => inserted = true,
            Err(e) if crate::store::is_duplicate_key(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The interview's organization, from its interview document, else its report (the tombstone
/// keeps it, as every report does).
pub async fn organization_of(db: &Database, interview_id: InterviewId) -> mongodb::error::Result<Option<ObjectId>> {
    let interview = db.collection::<Document>(INTERVIEWS).find_one(doc! {"_id": interview_id.oid()}).await?;
    if let Some(org) = interview.as_ref().and_then(|i| i.get_object_id("organizationId").ok()) {
        return Ok(Some(org));
    }
    let report =
        db.collection::<Document>(INTERVIEW_REPORTS).find_one(doc! {"interviewId": interview_id.oid()}).await?;
    Ok(report.and_then(|r| r.get_object_id("organizationId").ok()))
}

/// Whether the candidate's data of this interview was erased: an erasure request exists, or the
/// report is a tombstone. The admin retry and the redrive ask this before they publish; the
/// report consumer relies on the tombstone itself.
pub async fn is_erased(db: &Database, interview_id: InterviewId) -> mongodb::error::Result<bool> {
    let requested = db.collection::<Document>(ERASURES).find_one(request_filter(interview_id.oid())).await?;
    if requested.is_some() {
        return Ok(true);
    }
    report_is_tombstone(db, interview_id).await
}

/// How many erasure requests are still `PENDING` past their completion time (the
/// `ErasuresOverdue` metric).
pub async fn overdue(db: &Database) -> mongodb::error::Result<u64> {
    db.collection::<Document>(ERASURES)
        .count_documents(sophia_documents::erasure::overdue_filter(DateTime::now()))
        .await
}

/// Whether the interview's report document is a tombstone.
pub async fn report_is_tombstone(db: &Database, interview_id: InterviewId) -> mongodb::error::Result<bool> {
    let report = db
        .collection::<Document>(INTERVIEW_REPORTS)
        .find_one(doc! {"interviewId": interview_id.oid(), "status": ReportStatus::Erased.as_str()})
        .await?;
    Ok(report.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tombstone_holds_ids_and_dates_only() {
        let (interview, org, at) = (ObjectId::new(), ObjectId::new(), DateTime::from_millis(1_000));
        let t = tombstone_document(interview, Some(org), at);
        let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["attemptCount", "createdAt", "erasedAt", "interviewId", "organizationId", "status", "updatedAt"]
        );
        assert_eq!(t.get_str("status").unwrap(), "ERASED");
        assert!(!t.contains_key("retentionExpiresAt"), "the TTL index must never remove a tombstone");
    }

    #[test]
    fn what_was_replaced_reads_as_a_record() {
        assert_eq!(Replaced::Nothing.as_record(), "none");
        assert_eq!(Replaced::Report { status: "COMPLETED".into() }.as_record(), "report COMPLETED");
        assert_eq!(Replaced::AlreadyErased.as_record(), "already-erased");
    }
}
