//! The erasure of a candidate's data (docs/candidate-data.md, "Erasure"): `erasure request`,
//! `erasure sweep`, `erasure show`, `erasure list`.
//!
//! One request per interview, in `erasures` (`_id` = the interview id; the names:
//! `sophia_documents::erasure`), written first: its presence is the erasure. Then, per interview:
//!
//! 1. the report becomes a tombstone ([`sophia_reports::erasure::tombstone`]): every writer's
//!    conditional write skips it from then on (the claim, the store of a late model answer, the
//!    admin retry's and the redrive's reset);
//! 2. its outbox entries are deleted (the outbox publish also checks the request before sending);
//! 3. the two DLQs are swept: every message naming the interview is received and deleted (an
//!    `interview.failed` there holds its `failureReason`), every other one released at once;
//! 4. the request is finished: `DONE` when nothing this system holds is left and the API's
//!    interview document holds none of the candidate fields ([`INTERVIEW_CANDIDATE_FIELDS`]);
//!    else `PENDING`, with what is left and why.
//!
//! The API's package does steps 1-2 itself (`requestErasure`) and leaves the request `PENDING`
//! on the queues: `erasure sweep` does 3-4 for every pending request (the runbook's schedule).
//! Every step is idempotent: a repeated request or sweep does them again and records the repeat.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::Client;
use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use futures::TryStreamExt;
use mongodb::Database;
use serde::Serialize;
use sophia_contracts::InterviewId;
use sophia_credits::CreditsStore;
use sophia_declarations::{ErasureReason, ErasureReference};
use sophia_documents::erasure::{DONE, ERASURES, PENDING, overdue_filter, request_filter};

use crate::OpsError;
use crate::dlq_messages::{RECEIVE_BATCH, receive, release};
use crate::queues::{QueueLocator, QueueName};

/// The fields of an `interviews` document that hold the candidate's text (what report
/// generation reads): the API erases them; the erasure is `DONE` only once they are gone.
pub const INTERVIEW_CANDIDATE_FIELDS: [&str; 3] = ["snapshot.resumeText", "proctoring", "credibility"];

/// How long a sweep holds a DLQ message it looked at (released at the end of the sweep).
const SWEEP_HOLD: Duration = Duration::from_secs(60);

/// Who asks for an erasure, why, and through what (recorded on the request; never candidate
/// data: an operator's or a user's id, a declared reason, an opaque ticket reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub by: String,
    pub reason: ErasureReason,
    pub reference: Option<ErasureReference>,
    /// `sophia-ops` here; `api` from the API's package.
    pub via: String,
    /// A replay's request: when it was first requested (as audited). Recorded as `requestedAt`
    /// (the audited time, never the replay's), the replay's time as `replayedAt`.
    pub replay_of: Option<DateTime>,
}

/// What was removed, as the request records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    /// `none`, `report <STATUS>` (the report replaced by the tombstone), `already-erased`.
    pub report: Option<String>,
    pub outbox_entries: i64,
    pub dlq_messages: i64,
}

/// Something not erased yet, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    pub what: String,
    pub why: String,
}

/// One erasure request as stored: the proof an operator and the API read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureRecord {
    pub interview_id: String,
    pub organization_id: Option<String>,
    pub request_id: Option<String>,
    pub requested_by: String,
    pub requested_at: Option<String>,
    /// When a replay recorded the request again after a restore (`requested_at` stays the
    /// audited original).
    pub replayed_at: Option<String>,
    pub reason: String,
    pub reference: Option<String>,
    pub via: String,
    pub state: String,
    pub removed: Removed,
    pub pending: Vec<Pending>,
    pub queues_swept_at: Option<String>,
    pub completed_at: Option<String>,
    pub repeats: usize,
}

fn text(d: &Document, key: &str) -> String {
    d.get_str(key).unwrap_or_default().to_owned()
}

fn date(d: &Document, key: &str) -> Option<String> {
    d.get_datetime(key).ok().and_then(|t| t.try_to_rfc3339_string().ok())
}

fn count(d: &Document, key: &str) -> i64 {
    d.get(key).and_then(|v| sophia_documents::int::from_bson(v).ok()).unwrap_or(0)
}

impl ErasureRecord {
    /// The record of a stored request (absent fields read as empty: the API's package writes the
    /// same layout, `clients/typescript/src/erasure.ts`).
    pub fn from_document(d: &Document) -> Self {
        let removed = d.get_document("removed").cloned().unwrap_or_default();
        let pending = d.get_array("pending").map(|a| a.as_slice()).unwrap_or_default();
        Self {
            interview_id: d.get_object_id("_id").map(|o| o.to_hex()).unwrap_or_default(),
            organization_id: d.get_object_id("organizationId").ok().map(|o| o.to_hex()),
            request_id: d.get_str("requestId").ok().map(str::to_owned),
            requested_by: text(d, "requestedBy"),
            requested_at: date(d, "requestedAt"),
            replayed_at: date(d, "replayedAt"),
            reason: text(d, "reason"),
            reference: d.get_str("reference").ok().map(str::to_owned),
            via: text(d, "via"),
            state: text(d, "state"),
            removed: Removed {
                report: removed.get_str("report").ok().map(str::to_owned),
                outbox_entries: count(&removed, "outboxEntries"),
                dlq_messages: count(&removed, "dlqMessages"),
            },
            pending: pending
                .iter()
                .filter_map(Bson::as_document)
                .map(|p| Pending { what: text(p, "what"), why: text(p, "why") })
                .collect(),
            queues_swept_at: date(d, "queuesSweptAt"),
            completed_at: date(d, "completedAt"),
            repeats: d.get_array("repeats").map(Vec::len).unwrap_or(0),
        }
    }

    pub fn human(&self) -> String {
        let mut s = format!(
            "erasure of interview {}: {}\n  requested by {} via {} at {}: {}{}\n  removed: report {}, {} outbox entr(y/ies), {} DLQ message(s)\n",
            self.interview_id,
            self.state,
            self.requested_by,
            self.via,
            self.requested_at.as_deref().unwrap_or("-"),
            self.reason,
            self.reference.as_deref().map(|r| format!(" ({r})")).unwrap_or_default(),
            self.removed.report.as_deref().unwrap_or("-"),
            self.removed.outbox_entries,
            self.removed.dlq_messages,
        );
        if let Some(at) = &self.replayed_at {
            s.push_str(&format!("  recorded again by a replay at {at} (after a restore)\n"));
        }
        for p in &self.pending {
            s.push_str(&format!("  pending: {}: {}\n", p.what, p.why));
        }
        if let Some(at) = &self.completed_at {
            s.push_str(&format!("  completed at {at}\n"));
        }
        s
    }
}

/// Writes the request (first, so that every writer sees it), or records a repeat of it.
pub async fn record_request(
    db: &Database,
    interview_id: InterviewId,
    organization_id: Option<ObjectId>,
    requester: &Requester,
    request_id: &str,
) -> Result<(), OpsError> {
    let owner = sophia_reports::erasure::organization_of(db, interview_id)
        .await
        .map_err(|e| OpsError::domain("erasure request", e))?;
    if let (Some(asked), Some(owner)) = (organization_id, owner)
        && asked != owner
    {
        return Err(OpsError::Invalid(format!(
            "interview {interview_id} is not organization {asked}'s (its interview or report names another): nothing was erased"
        )));
    }
    let organization_id = organization_id.or(owner);
    let now = DateTime::now();
    let erasures = db.collection::<Document>(ERASURES);
    let reference = requester.reference.as_ref().map_or(Bson::Null, |r| Bson::String(r.as_str().to_owned()));
    let mut request = doc! {
        "_id": interview_id.oid(),
        "interviewId": interview_id.oid(),
        "organizationId": organization_id.map_or(Bson::Null, Bson::ObjectId),
        "requestId": request_id,
        "requestedBy": requester.by.as_str(),
        "requestedAt": requester.replay_of.unwrap_or(now),
        "reason": requester.reason.as_str(),
        "reference": reference.clone(),
        "via": requester.via.as_str(),
        "state": PENDING,
        "removed": {"report": Bson::Null, "outboxEntries": 0_i64, "dlqMessages": 0_i64},
        "pending": [
            {"what": "report", "why": "the report's tombstone is not written yet"},
            {"what": "queues", "why": "the DLQs are not swept yet (sophia-ops --stage <stage> erasure sweep)"},
        ],
        "completedAt": Bson::Null,
        "updatedAt": now,
    };
    if requester.replay_of.is_some() {
        request.insert("replayedAt", now);
    }
    // An upsert on `_id`: the filter names one document, so a second request matches the first
    // (a repeat) instead of inserting next to it, with or without any index but `_id`'s. `_id`
    // is in `$setOnInsert` too: the stored id is the ObjectId, not what a server derives from
    // the filter (nx-27017 stores a filter's ObjectId `_id` as its hex string).
    let written =
        erasures.update_one(request_filter(interview_id.oid()), doc! {"$setOnInsert": request}).upsert(true).await;
    let first = match written {
        Ok(w) => w.upserted_id.is_some(),
        // Two first requests at once: the server's upsert lost the race to the other's insert.
        Err(e) if is_duplicate_key(&e) => false,
        Err(e) => return Err(OpsError::domain("erasure request", e)),
    };
    if !first {
        let repeat = doc! {"by": requester.by.as_str(), "at": now, "reason": requester.reason.as_str(), "reference": reference, "via": requester.via.as_str()};
        erasures
            .update_one(request_filter(interview_id.oid()), doc! {"$push": {"repeats": repeat}})
            .await
            .map_err(|e| OpsError::domain("erasure request", e))?;
    }
    Ok(())
}

fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    matches!(e.kind.as_ref(), ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000)
}

/// Steps 1-2: the report's tombstone and the outbox entries, recorded on the request.
pub async fn erase_stored(db: &Database, interview_id: InterviewId) -> Result<(), OpsError> {
    let erasures = db.collection::<Document>(ERASURES);
    let request = erasures
        .find_one(request_filter(interview_id.oid()))
        .await
        .map_err(|e| OpsError::domain("erasure", e))?
        .ok_or_else(|| OpsError::NotFound(format!("no erasure request for interview {interview_id}")))?;
    let organization_id = request.get_object_id("organizationId").ok();
    let replaced = sophia_reports::erasure::tombstone(db, interview_id, organization_id)
        .await
        .map_err(|e| OpsError::domain("erasure: the report's tombstone", e))?
        .ok_or_else(|| {
            OpsError::Invalid(format!(
                "erasure of interview {interview_id}: the report changed at each of {} tries; the request is recorded, run it again",
                sophia_reports::erasure::REPLACE_TRIES
            ))
        })?;
    let outbox = CreditsStore::new(db.clone())
        .delete_outbox_of(interview_id.oid())
        .await
        .map_err(|e| OpsError::domain("erasure: the outbox entries", e))?;
    // The first finding is kept: a repeat finds only the tombstone it left.
    let mut filter = request_filter(interview_id.oid());
    filter.insert("removed.report", Bson::Null);
    erasures
        .update_one(filter, doc! {"$set": {"removed.report": replaced.as_record()}})
        .await
        .map_err(|e| OpsError::domain("erasure", e))?;
    erasures
        .update_one(
            request_filter(interview_id.oid()),
            doc! {
                "$inc": {"removed.outboxEntries": outbox as i64},
                "$set": {"updatedAt": DateTime::now()},
                "$pull": {"pending": {"what": "report"}},
            },
        )
        .await
        .map_err(|e| OpsError::domain("erasure", e))?;
    tracing::info!(interviewId = %interview_id, report = %replaced.as_record(), outboxEntries = outbox, "erasure: stored copies removed");
    Ok(())
}

/// Step 3: receives every message of both DLQs, deletes those naming an erased interview (one
/// with a request in `erasures`, whatever its state: a message in flight at the erasure may reach
/// a DLQ later), and releases the others at once. Returns how many were deleted per interview,
/// and why a message may have escaped it (its counts before and after: see [`in_flight`]).
pub async fn sweep_dlqs(db: &Database, locator: &QueueLocator) -> Result<Sweep, OpsError> {
    let mut sweep = Sweep::default();
    for queue in QueueName::all() {
        let url = locator.dlq_url(queue).await?;
        let before = dlq_counts(locator, &url).await?;
        let deleted_before: i64 = sweep.deleted.values().sum();
        sweep_one(db, locator.client(), &url, &mut sweep.deleted).await?;
        let after = dlq_counts(locator, &url).await?;
        let deleted = sweep.deleted.values().sum::<i64>() - deleted_before;
        if let Some(why) = in_flight(queue, before, after, deleted) {
            sweep.in_flight.push(why);
        }
    }
    Ok(sweep)
}

/// What one sweep of the DLQs did: the messages deleted per interview, and why it could not see
/// every message (messages in flight elsewhere, or the DLQ changing under it): while any reason
/// is listed, no request ends `DONE`.
#[derive(Debug, Default)]
pub struct Sweep {
    pub deleted: HashMap<InterviewId, i64>,
    pub in_flight: Vec<String>,
}

/// A DLQ's `(ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible)`.
async fn dlq_counts(locator: &QueueLocator, url: &str) -> Result<(u64, u64), OpsError> {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let visible = locator.attribute(url, A::ApproximateNumberOfMessages).await?;
    let hidden = locator.attribute(url, A::ApproximateNumberOfMessagesNotVisible).await?;
    let n = |v: Option<String>| v.and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok((n(visible), n(hidden)))
}

/// Why the sweep of `queue`'s DLQ may have missed a message: one in flight (received by someone
/// else: a redrive, a `dlq show`) before or after it, or a count that does not add up (a message
/// arrived or left during it). SQS's counts are approximate and lag: a reason here can be stale,
/// never the reverse (the request stays `PENDING`; sweep again).
fn in_flight(queue: QueueName, before: (u64, u64), after: (u64, u64), deleted: i64) -> Option<String> {
    if before.1 > 0 || after.1 > 0 {
        return Some(format!(
            "{} message(s) of the {queue} DLQ were in flight (received elsewhere: a redrive, a dlq show) and not read by the sweep; sweep again once they are back",
            before.1.max(after.1)
        ));
    }
    if after.0 as i64 != before.0 as i64 - deleted {
        return Some(format!(
            "the {queue} DLQ changed during the sweep ({} message(s) before, {deleted} deleted, {} after); sweep again",
            before.0, after.0
        ));
    }
    None
}

/// The erased ones among `named` (one read).
async fn erased_among(db: &Database, named: &[InterviewId]) -> Result<Vec<InterviewId>, OpsError> {
    let ids: Vec<ObjectId> = named.iter().map(|i| i.oid()).collect();
    let found: Vec<Document> = db
        .collection::<Document>(ERASURES)
        .find(doc! {"_id": {"$in": ids}})
        .projection(doc! {"_id": 1})
        .await
        .map_err(|e| OpsError::domain("erasure sweep", e))?
        .try_collect()
        .await
        .map_err(|e| OpsError::domain("erasure sweep", e))?;
    Ok(found.iter().filter_map(|d| d.get_object_id("_id").ok()).map(InterviewId::new).collect())
}

async fn sweep_one(
    db: &Database,
    client: &Client,
    url: &str,
    deleted: &mut HashMap<InterviewId, i64>,
) -> Result<(), OpsError> {
    let mut held = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let result = async {
        loop {
            let batch = receive(client, url, RECEIVE_BATCH, SWEEP_HOLD, Duration::from_secs(1)).await?;
            let fresh: Vec<_> =
                batch.iter().filter(|m| seen.insert(m.message_id().unwrap_or_default().to_owned())).collect();
            if fresh.is_empty() {
                held.extend(batch.iter().filter_map(|m| m.receipt_handle().map(str::to_owned)));
                return Ok::<_, OpsError>(());
            }
            let named: Vec<_> =
                batch.iter().filter_map(|m| crate::contract::interview_named(m.body().unwrap_or_default())).collect();
            let erased = erased_among(db, &named).await?;
            for m in &batch {
                let handle = m.receipt_handle().unwrap_or_default();
                match crate::contract::interview_named(m.body().unwrap_or_default()) {
                    Some(named) if erased.contains(&named) => {
                        client
                            .delete_message()
                            .queue_url(url)
                            .receipt_handle(handle)
                            .send()
                            .await
                            .map_err(|e| OpsError::sqs("DeleteMessage", url, e))?;
                        *deleted.entry(named).or_insert(0) += 1;
                    }
                    _ => held.push(handle.to_owned()),
                }
            }
        }
    }
    .await;
    release(client, url, &held).await;
    result
}

/// Step 4: records the sweep and decides the state: `DONE` when nothing is left.
pub async fn finish(
    db: &Database,
    interview_id: InterviewId,
    dlq_deleted: i64,
    in_flight: &[String],
) -> Result<ErasureRecord, OpsError> {
    let now = DateTime::now();
    let left = interview_fields_left(db, interview_id).await?;
    let mut pending: Vec<Document> = in_flight.iter().map(|why| doc! {"what": "queues", "why": why}).collect();
    if !left.is_empty() {
        pending.push(
            doc! {"what": "interview", "why": format!("the API's interviews document still holds {} (the API erases them; sweep again after)", left.join(", "))},
        );
    }
    let mut set = doc! {"queuesSweptAt": now, "updatedAt": now, "pending": pending.clone()};
    if pending.is_empty() {
        set.insert("state", DONE);
        set.insert("completedAt", now);
    }
    let erasures = db.collection::<Document>(ERASURES);
    erasures
        .update_one(
            request_filter(interview_id.oid()),
            doc! {"$set": set, "$inc": {"removed.dlqMessages": dlq_deleted}},
        )
        .await
        .map_err(|e| OpsError::domain("erasure", e))?;
    show(db, interview_id).await
}

/// Which of [`INTERVIEW_CANDIDATE_FIELDS`] the interview document still holds (none when the
/// document is gone).
pub async fn interview_fields_left(db: &Database, interview_id: InterviewId) -> Result<Vec<&'static str>, OpsError> {
    let interview = db
        .collection::<Document>(sophia_reports::interview::INTERVIEWS)
        .find_one(doc! {"_id": interview_id.oid()})
        .await
        .map_err(|e| OpsError::domain("erasure: the interview", e))?;
    let Some(interview) = interview else { return Ok(Vec::new()) };
    let holds = |path: &str| {
        let mut parts = path.split('.');
        let first = interview.get(parts.next().unwrap_or_default());
        let value = parts.fold(first, |v, key| v.and_then(Bson::as_document).and_then(|d| d.get(key)));
        !matches!(value, None | Some(Bson::Null))
    };
    Ok(INTERVIEW_CANDIDATE_FIELDS.into_iter().filter(|f| holds(f)).collect())
}

/// `erasure show`: the stored request.
pub async fn show(db: &Database, interview_id: InterviewId) -> Result<ErasureRecord, OpsError> {
    let found = db
        .collection::<Document>(ERASURES)
        .find_one(request_filter(interview_id.oid()))
        .await
        .map_err(|e| OpsError::domain("erasure show", e))?;
    found
        .as_ref()
        .map(ErasureRecord::from_document)
        .ok_or_else(|| OpsError::NotFound(format!("no erasure request for interview {interview_id}")))
}

/// `erasure list`: requests, oldest first; `pending_only`: those not `DONE`; `overdue_only`:
/// pending longer than `sophia_documents::erasure::COMPLETION_TIME`.
pub async fn list(db: &Database, pending_only: bool, overdue_only: bool) -> Result<Vec<ErasureRecord>, OpsError> {
    let filter = match (pending_only, overdue_only) {
        (_, true) => overdue_filter(DateTime::now()),
        (true, false) => doc! {"state": PENDING},
        (false, false) => Document::new(),
    };
    let docs: Vec<Document> = db
        .collection::<Document>(ERASURES)
        .find(filter)
        .sort(doc! {"requestedAt": 1})
        .await
        .map_err(|e| OpsError::domain("erasure list", e))?
        .try_collect()
        .await
        .map_err(|e| OpsError::domain("erasure list", e))?;
    Ok(docs.iter().map(ErasureRecord::from_document).collect())
}

/// What `erasure request` and `erasure sweep` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureReport {
    pub erasures: Vec<ErasureRecord>,
    /// The requests a step failed for (the others were completed): the interview, the step and
    /// the error's kind, never its text (no candidate data). Their requests stay `PENDING`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<ErasureFailure>,
}

/// One request a step of `complete` failed for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureFailure {
    pub interview_id: String,
    /// `stored copies` (the tombstone, the outbox entries) or `finish` (the request's state).
    pub step: &'static str,
    /// [`OpsError::kind`].
    pub kind: &'static str,
}

impl ErasureFailure {
    fn of(interview_id: InterviewId, step: &'static str, e: &OpsError) -> Self {
        tracing::warn!(interviewId = %interview_id, step, kind = e.kind(), "erasure: a step failed; the others continue");
        Self { interview_id: interview_id.to_string(), step, kind: e.kind() }
    }
}

impl ErasureReport {
    pub fn human(&self) -> String {
        if self.erasures.is_empty() && self.failed.is_empty() {
            return "no erasure request\n".into();
        }
        let mut s: String = self.erasures.iter().map(ErasureRecord::human).collect();
        for f in &self.failed {
            s.push_str(&format!(
                "erasure of interview {}: FAILED at {} ({}); it stays PENDING, run the command again\n",
                f.interview_id, f.step, f.kind
            ));
        }
        s
    }

    /// Some request is not `DONE` yet, or failed.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty() && self.erasures.iter().all(|e| e.state == DONE)
    }
}

/// Steps 2-4 for `interviews` whose requests are recorded: the stored copies, one sweep of the
/// DLQs (every erased interview's messages), then each request finished. A request a step fails
/// for is reported in `failed` (and not finished: it stays `PENDING` with what is left); the
/// others go on.
pub async fn complete(
    db: &Database,
    locator: &QueueLocator,
    interviews: &[InterviewId],
) -> Result<ErasureReport, OpsError> {
    let mut failed = Vec::new();
    let mut stored = Vec::new();
    for id in interviews {
        match erase_stored(db, *id).await {
            Ok(()) => stored.push(*id),
            Err(e) => failed.push(ErasureFailure::of(*id, "stored copies", &e)),
        }
    }
    let sweep = sweep_dlqs(db, locator).await?;
    let mut erasures = Vec::new();
    for id in &stored {
        match finish(db, *id, sweep.deleted.get(id).copied().unwrap_or(0), &sweep.in_flight).await {
            Ok(record) => erasures.push(record),
            Err(e) => failed.push(ErasureFailure::of(*id, "finish", &e)),
        }
    }
    Ok(ErasureReport { erasures, failed })
}

/// One request as an `erasure-request` audit record's outcome holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditedRequest {
    pub interview_id: InterviewId,
    pub organization_id: Option<ObjectId>,
    pub requested_by: String,
    pub request_id: String,
    pub reason: ErasureReason,
    pub reference: Option<ErasureReference>,
    /// When it was requested, as audited (absent in a record that lacks it).
    pub requested_at: Option<DateTime>,
}

/// The requests of `erasure-request` audit records (their outcome: the [`ErasureReport`]). A
/// record whose reason is not a declared word (written before reasons were declared, redacted)
/// replays as `legal-order`: the restore is the legal reason the request is written again.
pub fn audited_requests(records: &[serde_json::Value]) -> Vec<AuditedRequest> {
    let mut out = Vec::new();
    for r in records {
        let erasures = r.pointer("/outcome/erasures").and_then(|e| e.as_array()).cloned().unwrap_or_default();
        for e in &erasures {
            let text = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            let Some(interview_id) = text("interviewId").and_then(|i| i.parse().ok()) else { continue };
            out.push(AuditedRequest {
                interview_id,
                organization_id: text("organizationId").and_then(|o| ObjectId::parse_str(o).ok()),
                requested_by: text("requestedBy").unwrap_or_default(),
                request_id: text("requestId").unwrap_or_default(),
                reason: text("reason").and_then(|r| ErasureReason::parse(&r).ok()).unwrap_or(ErasureReason::LegalOrder),
                reference: text("reference").and_then(|r| ErasureReference::parse(&r).ok()),
                requested_at: text("requestedAt").and_then(|t| DateTime::parse_rfc3339_str(t).ok()),
            });
        }
    }
    out
}

/// The interviews of every pending request (`erasure sweep`).
pub async fn pending_interviews(db: &Database) -> Result<Vec<InterviewId>, OpsError> {
    let pending = list(db, true, false).await?;
    Ok(pending.iter().filter_map(|e| e.interview_id.parse().ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_request_reads_as_its_record() {
        let id = ObjectId::new();
        let d = doc! {
            "_id": id, "organizationId": Bson::Null, "requestId": "r1", "requestedBy": "dpo@example.com",
            "requestedAt": DateTime::from_millis(0), "reason": "candidate-request", "reference": "DPO-42", "via": "api", "state": PENDING,
            "removed": {"report": "report COMPLETED", "outboxEntries": 1_i32, "dlqMessages": 2_i64},
            "pending": [{"what": "queues", "why": "not swept"}], "completedAt": Bson::Null,
        };
        let r = ErasureRecord::from_document(&d);
        assert_eq!(r.interview_id, id.to_hex());
        assert_eq!((r.state.as_str(), r.via.as_str(), r.organization_id.as_deref()), (PENDING, "api", None));
        assert_eq!(r.removed, Removed { report: Some("report COMPLETED".into()), outbox_entries: 1, dlq_messages: 2 });
        assert_eq!(r.pending, vec![Pending { what: "queues".into(), why: "not swept".into() }]);
        assert!(r.human().contains("pending: queues: not swept"), "{}", r.human());
        assert!(!ErasureReport { erasures: vec![r], failed: Vec::new() }.is_complete());
    }

    #[test]
    fn a_sweep_that_could_not_see_every_message_says_why() {
        let q = QueueName::all().next().unwrap();
        assert_eq!(in_flight(q, (3, 0), (1, 0), 2), None, "every message seen, the counts add up");
        assert!(in_flight(q, (3, 1), (1, 0), 2).unwrap().contains("in flight"));
        assert!(in_flight(q, (3, 0), (1, 1), 2).unwrap().contains("in flight"));
        assert!(in_flight(q, (3, 0), (2, 0), 2).unwrap().contains("changed during the sweep"));
    }
}
