//! The MongoDB repository: typed collections and the individual reads and writes of the credits
//! flow. Writes that must not lose a concurrent update carry a guard in their filter (the values
//! they were computed from) and report a [`CreditsError::Conflict`] when it does not match.
//!
//! Reads of documents other writers also write (interviews, lots, organizations) fetch raw
//! documents and decode them with `sophia_documents` (any integral numeric type, absent = `null`,
//! errors that name the field and never quote its value: [`CreditsError::Unreadable`]).
//!
//! A store made [`with_deadline`](CreditsStore::with_deadline) bounds every operation by that
//! instant: finds carry `maxTimeMS` from the time left, and every operation is abandoned at the
//! deadline with [`CreditsError::DeadlineExceeded`] (the driver's own time limits are per
//! connection, not per record).

use std::future::IntoFuture;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use futures::TryStreamExt;
use mongodb::error::Error as MongoError;
use mongodb::{ClientSession, Collection, Database};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::arithmetic::{Allocation, LotSettlement, LotStatus};
use crate::error::CreditsError;
use crate::model::{
    CREDIT_LEDGER, CREDIT_LOTS, CreditLot, INTERVIEWS, InterviewCreditsView, LedgerEntry, ORGANIZATIONS, OUTBOX,
    Organization, OutboxEntry,
};

/// One guarded lot write: `(reserved, remaining)` as read, and `(reserved, remaining, status)` to
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotWrite {
    pub lot_id: ObjectId,
    pub before: (i64, i64),
    pub after: (i64, i64, LotStatus),
}

impl From<&LotSettlement> for LotWrite {
    fn from(lot: &LotSettlement) -> Self {
        Self {
            lot_id: lot.before.id,
            before: (lot.before.reserved, lot.before.remaining),
            after: (lot.reserved_after, lot.remaining_after, lot.status_after),
        }
    }
}

/// The credits collections of one database.
#[derive(Debug, Clone)]
pub struct CreditsStore {
    db: Database,
    /// When every operation must have finished (see the module docs).
    deadline: Option<Instant>,
}

impl CreditsStore {
    pub fn new(db: Database) -> Self {
        Self { db, deadline: None }
    }

    /// The same store with every operation bounded by `deadline` (`None`: unbounded).
    pub fn with_deadline(&self, deadline: Option<Instant>) -> Self {
        Self { db: self.db.clone(), deadline }
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The server-side time limit of a read: what is left before the deadline.
    fn max_time(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)))
    }

    /// Runs one driver operation, abandoned at the deadline.
    async fn bounded<T>(
        &self,
        op: &'static str,
        action: impl IntoFuture<Output = Result<T, MongoError>>,
    ) -> Result<T, CreditsError> {
        match self.deadline {
            None => action.await.map_err(CreditsError::mongo(op)),
            Some(deadline) => match tokio::time::timeout_at(deadline, action.into_future()).await {
                Ok(result) => result.map_err(CreditsError::mongo(op)),
                Err(_) => Err(CreditsError::DeadlineExceeded { op }),
            },
        }
    }

    /// Finds and decodes documents of `collection` (raw, then `sophia_documents::decode`).
    async fn find_decoded<T: DeserializeOwned>(
        &self,
        s: Option<&mut ClientSession>,
        collection: &'static str,
        filter: Document,
        sort: Option<Document>,
    ) -> Result<Vec<T>, CreditsError> {
        let coll = self.db.collection::<Document>(collection);
        let mut find = coll.find(filter);
        if let Some(sort) = sort {
            find = find.sort(sort);
        }
        if let Some(t) = self.max_time() {
            find = find.max_time(t);
        }
        let raw: Vec<Document> = match s {
            Some(s) => {
                let mut cursor = self.bounded("find", find.session(&mut *s)).await?;
                self.bounded("find", cursor.stream(s).try_collect()).await?
            }
            None => {
                let cursor = self.bounded("find", find).await?;
                self.bounded("find", cursor.try_collect()).await?
            }
        };
        raw.into_iter().map(|d| sophia_documents::decode(collection, d).map_err(CreditsError::from)).collect()
    }

    async fn find_one_decoded<T: DeserializeOwned>(
        &self,
        s: Option<&mut ClientSession>,
        collection: &'static str,
        op: &'static str,
        filter: Document,
    ) -> Result<Option<T>, CreditsError> {
        let coll = self.db.collection::<Document>(collection);
        let mut find = coll.find_one(filter);
        if let Some(t) = self.max_time() {
            find = find.max_time(t);
        }
        let raw = match s {
            Some(s) => self.bounded(op, find.session(s)).await?,
            None => self.bounded(op, find).await?,
        };
        raw.map(|d| sophia_documents::decode(collection, d)).transpose().map_err(CreditsError::from)
    }
    pub fn db(&self) -> &Database {
        &self.db
    }
    pub fn organizations(&self) -> Collection<Organization> {
        self.db.collection(ORGANIZATIONS)
    }
    pub fn lots(&self) -> Collection<CreditLot> {
        self.db.collection(CREDIT_LOTS)
    }
    pub fn ledger(&self) -> Collection<LedgerEntry> {
        self.db.collection(CREDIT_LEDGER)
    }
    /// The interview fields the credits flow reads.
    pub fn interviews(&self) -> Collection<InterviewCreditsView> {
        self.db.collection(INTERVIEWS)
    }
    /// Interviews as raw documents (they carry many fields this crate does not own).
    pub fn interview_documents(&self) -> Collection<Document> {
        self.db.collection(INTERVIEWS)
    }
    pub fn outbox(&self) -> Collection<OutboxEntry> {
        self.db.collection(OUTBOX)
    }

    /// Reads an interview outside any transaction.
    pub async fn interview(&self, id: ObjectId) -> Result<Option<InterviewCreditsView>, CreditsError> {
        self.find_one_decoded(None, INTERVIEWS, "find interview", doc! {"_id": id}).await
    }

    pub async fn interview_in(
        &self,
        s: &mut ClientSession,
        id: ObjectId,
    ) -> Result<Option<InterviewCreditsView>, CreditsError> {
        self.find_one_decoded(Some(s), INTERVIEWS, "find interview", doc! {"_id": id}).await
    }

    pub async fn organization_in(
        &self,
        s: &mut ClientSession,
        id: ObjectId,
    ) -> Result<Option<Organization>, CreditsError> {
        self.find_one_decoded(Some(s), ORGANIZATIONS, "find organization", doc! {"_id": id}).await
    }

    /// Every document of `collection` matching `filter`, decoded (the invariant checker).
    pub async fn all<T: DeserializeOwned>(
        &self,
        collection: &'static str,
        filter: Document,
    ) -> Result<Vec<T>, CreditsError> {
        self.find_decoded(None, collection, filter, None).await
    }

    /// Lots by id, restricted to the organization (a lot of another organization is "missing").
    pub async fn lots_by_id_in(
        &self,
        s: &mut ClientSession,
        organization_id: ObjectId,
        ids: &[ObjectId],
    ) -> Result<Vec<CreditLot>, CreditsError> {
        let filter = doc! {"_id": {"$in": ids.to_vec()}, "organizationId": organization_id};
        self.find_decoded(Some(s), CREDIT_LOTS, filter, None).await
    }

    /// The organization's active lots, oldest expiry first.
    pub async fn active_lots_in(
        &self,
        s: &mut ClientSession,
        organization_id: ObjectId,
    ) -> Result<Vec<CreditLot>, CreditsError> {
        let filter = doc! {"organizationId": organization_id, "status": LotStatus::Active.as_str()};
        self.find_decoded(Some(s), CREDIT_LOTS, filter, Some(doc! {"expiresAt": 1, "_id": 1})).await
    }

    /// The claim's filter: the interview, of this organization, unsettled, with the reservation
    /// the settlement was computed from (0 also matches an absent or `null` reservation; MongoDB
    /// compares numbers across types, so a reservation stored as a double matches too).
    pub fn claim_filter(interview_id: ObjectId, organization_id: ObjectId, reserved: i64) -> Document {
        let reserved = if reserved == 0 { Bson::from(doc! {"$in": [0_i64, Bson::Null]}) } else { Bson::from(reserved) };
        doc! {"_id": interview_id, "organizationId": organization_id, "settledAt": null, "credits.reserved": reserved}
    }

    /// The settlement claim: sets `settledAt` (and the given fields) only while it is null.
    /// Returns whether this call claimed the interview.
    pub async fn claim_interview_in(
        &self,
        s: &mut ClientSession,
        interview_id: ObjectId,
        organization_id: ObjectId,
        reserved: i64,
        set: Document,
    ) -> Result<bool, CreditsError> {
        let coll = self.interview_documents();
        let claim =
            coll.update_one(Self::claim_filter(interview_id, organization_id, reserved), doc! {"$set": set}).session(s);
        let r = self.bounded("claim interview", claim).await?;
        Ok(r.matched_count == 1)
    }

    /// A lot write's filter: the lot, still holding the values the new ones were computed from.
    fn lot_guard(lot_id: ObjectId, (reserved_before, remaining_before): (i64, i64)) -> Document {
        doc! {"_id": lot_id, "reserved": reserved_before, "remaining": remaining_before}
    }

    fn lot_update((reserved_after, remaining_after, status): (i64, i64, LotStatus)) -> Document {
        doc! {"$set": {"reserved": reserved_after, "remaining": remaining_after, "status": status.as_str()}}
    }

    /// Lot writes (a reservation's or a settlement's) in ONE `update` command, a guarded
    /// statement per lot: one round trip whatever the number of lots. (The driver's typed API
    /// sends one statement per command, and its multi-statement `bulkWrite` needs MongoDB 8; the
    /// wire protocol's `update` command takes an array of statements.) A statement matching
    /// nothing is a [`CreditsError::Conflict`]; the caller's transaction then aborts.
    pub async fn update_lots_in(&self, s: &mut ClientSession, writes: &[LotWrite]) -> Result<(), CreditsError> {
        if writes.is_empty() {
            return Ok(());
        }
        let statements: Vec<Document> = writes
            .iter()
            .map(|w| {
                doc! {
                    "q": Self::lot_guard(w.lot_id, w.before),
                    "u": Self::lot_update(w.after),
                    "multi": false,
                    "upsert": false,
                }
            })
            .collect();
        let command =
            self.db.run_command(doc! {"update": CREDIT_LOTS, "updates": statements, "ordered": true}).session(s);
        let reply = self.bounded("update lots", command).await?;
        if update_reply_matched(&reply)? != writes.len() as i64 {
            return Err(CreditsError::Conflict { what: "credit lot" });
        }
        Ok(())
    }

    /// `$inc` of the organization's balances; `guard_available` adds `credits.available >= n`.
    pub async fn inc_org_credits_in(
        &self,
        s: &mut ClientSession,
        organization_id: ObjectId,
        available: i64,
        reserved: i64,
        guard_available: Option<i64>,
    ) -> Result<(), CreditsError> {
        let mut filter = doc! {"_id": organization_id};
        if let Some(n) = guard_available {
            filter.insert("credits.available", doc! {"$gte": n});
        }
        let coll = self.organizations();
        let update = coll
            .update_one(filter, doc! {"$inc": {"credits.available": available, "credits.reserved": reserved}})
            .session(s);
        let r = self.bounded("update organization credits", update).await?;
        if r.matched_count != 1 {
            return Err(if guard_available.is_some() {
                CreditsError::Conflict { what: "organization credits" }
            } else {
                CreditsError::OrganizationNotFound { organization_id }
            });
        }
        Ok(())
    }

    pub async fn insert_ledger_in(&self, s: &mut ClientSession, entries: &[LedgerEntry]) -> Result<(), CreditsError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.bounded("insert ledger entries", self.ledger().insert_many(entries).session(s)).await?;
        Ok(())
    }

    pub async fn insert_outbox_in(&self, s: &mut ClientSession, entry: &OutboxEntry) -> Result<(), CreditsError> {
        self.bounded("insert outbox entry", self.outbox().insert_one(entry).session(s)).await?;
        Ok(())
    }

    /// Records a reservation on the interview (only while it is unsettled and holds none).
    pub async fn set_reservation_in(
        &self,
        s: &mut ClientSession,
        interview_id: ObjectId,
        reserved: i64,
        allocations: &[Allocation],
    ) -> Result<(), CreditsError> {
        let allocations = bson::to_bson(allocations).expect("allocations serialise");
        let r = self
            .interview_documents()
            .update_one(
                doc! {"_id": interview_id, "settledAt": null, "credits.reserved": {"$in": [0_i64, bson::Bson::Null]}},
                doc! {"$set": {"credits.reserved": reserved, "credits.allocations": allocations}},
            )
            .session(s)
            .await
            .map_err(CreditsError::mongo("record reservation"))?;
        if r.matched_count != 1 {
            return Err(CreditsError::Conflict { what: "interview reservation" });
        }
        Ok(())
    }

    /// The pending outbox entry of an interview's `report.generate`, if any.
    pub async fn pending_report_entry(&self, interview_id: ObjectId) -> Result<Option<OutboxEntry>, CreditsError> {
        let coll = self.outbox();
        let find = coll.find_one(doc! {"_id": OutboxEntry::report_generate_id(interview_id), "status": "PENDING"});
        self.bounded("find outbox entry", find).await
    }

    /// Whether the candidate's data of this interview was erased (an erasure request exists:
    /// `sophia_documents::erasure`). The outbox publish asks it before sending.
    pub async fn erasure_requested(&self, interview_id: ObjectId) -> Result<bool, CreditsError> {
        let coll = self.db.collection::<Document>(sophia_documents::erasure::ERASURES);
        let filter = sophia_documents::erasure::request_filter(interview_id);
        let find = coll.find_one(filter);
        Ok(self.bounded("find erasure request", find).await?.is_some())
    }

    /// Deletes every outbox entry of an erased interview, whatever its status. Returns how many.
    pub async fn delete_outbox_of(&self, interview_id: ObjectId) -> Result<u64, CreditsError> {
        let outbox = self.outbox();
        let delete = outbox.delete_many(doc! {"interviewId": interview_id});
        Ok(self.bounded("delete outbox entries of an erased interview", delete).await?.deleted_count)
    }

    /// Marks an entry published (only if still pending). Returns whether it was pending.
    pub async fn mark_published(&self, id: &str, sqs_message_id: &str, at: DateTime) -> Result<bool, CreditsError> {
        let coll = self.outbox();
        let update = coll.update_one(
            doc! {"_id": id, "status": "PENDING"},
            doc! {"$set": {"status": "PUBLISHED", "publishedAt": at, "sqsMessageId": sqs_message_id}, "$inc": {"attempts": 1_i64}},
        );
        let r = self.bounded("mark outbox entry published", update).await?;
        Ok(r.matched_count == 1)
    }

    /// Counts a failed publish attempt on a pending entry (best effort).
    pub async fn record_publish_failure(&self, id: &str, error: &str) -> Result<(), CreditsError> {
        let error: String = error.chars().take(1000).collect();
        let coll = self.outbox();
        let update = coll.update_one(
            doc! {"_id": id, "status": "PENDING"},
            doc! {"$set": {"lastError": error}, "$inc": {"attempts": 1_i64}},
        );
        self.bounded("record outbox publish failure", update).await?;
        Ok(())
    }

    /// Pending entries created before `before`, oldest first.
    pub async fn pending_outbox_before(&self, before: DateTime, limit: i64) -> Result<Vec<OutboxEntry>, CreditsError> {
        self.outbox()
            .find(doc! {"status": "PENDING", "createdAt": {"$lt": before}})
            .sort(doc! {"createdAt": 1})
            .limit(limit)
            .await
            .map_err(CreditsError::mongo("find pending outbox entries"))?
            .try_collect()
            .await
            .map_err(CreditsError::mongo("find pending outbox entries"))
    }
}

/// The number of documents an `update` command's statements matched (`n`), or its first write
/// error (a raw command reports those in the reply, not as an `Err`).
fn update_reply_matched(reply: &Document) -> Result<i64, CreditsError> {
    if let Ok(errors) = reply.get_array("writeErrors")
        && let Some(first) = errors.first().and_then(Bson::as_document)
    {
        return Err(CreditsError::WriteRejected {
            op: "update lots",
            code: first.get("code").and_then(|n| sophia_documents::int::from_bson(n).ok()).unwrap_or_default(),
            message: first.get_str("errmsg").unwrap_or("no message").to_owned(),
        });
    }
    reply.get("n").and_then(|n| sophia_documents::int::from_bson(n).ok()).ok_or_else(|| CreditsError::WriteRejected {
        op: "update lots",
        code: 0,
        message: format!("the reply has no count of matched documents: {reply}"),
    })
}

#[cfg(test)]
mod reply_tests {
    use super::*;

    #[test]
    fn an_update_reply_gives_its_matched_count_in_any_numeric_type() {
        assert_eq!(update_reply_matched(&doc! {"n": 2_i32, "nModified": 2_i32, "ok": 1.0}).unwrap(), 2);
        assert_eq!(update_reply_matched(&doc! {"n": 3_i64, "ok": 1.0}).unwrap(), 3);
        assert_eq!(update_reply_matched(&doc! {"n": 1.0, "ok": 1.0}).unwrap(), 1);
    }

    #[test]
    fn write_errors_and_a_missing_count_are_typed_errors() {
        let reply = doc! {
            "n": 0,
            "writeErrors": [{"index": 0, "code": 121, "errmsg": "Document failed validation"}],
            "ok": 1.0,
        };
        match update_reply_matched(&reply) {
            Err(CreditsError::WriteRejected { code: 121, message, .. }) => {
                assert_eq!(message, "Document failed validation")
            }
            other => panic!("expected WriteRejected, got {other:?}"),
        }
        assert!(matches!(update_reply_matched(&doc! {"ok": 1.0}), Err(CreditsError::WriteRejected { code: 0, .. })));
    }
}
