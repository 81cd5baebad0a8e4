//! `interview show <interviewId>`: one interview's settlement and report, and whether a DLQ
//! holds a message for it, read from MongoDB and the DLQs without changing anything.
//!
//! Only identifiers, statuses, numbers and dates are read from the documents (never the
//! transcript, the snapshot or the report's content). Two stored texts need care:
//! - `lastError`: this implementation writes it naming fields and codes only, and always with an
//!   `errorKind`; a `lastError` without `errorKind` was written by another writer (the system
//!   this one replaces stored raw error messages, which may quote the model's output), so it is
//!   shown as its length only ([`shown_last_error`](crate::report_failure::shown_last_error));
//! - `refusal` (the model's refusal text) is never shown, only whether there is one.

use std::collections::BTreeMap;

use bson::{Bson, Document, doc};
use futures::TryStreamExt;
use serde::Serialize;
use sophia_contracts::InterviewId;
use sophia_credits::model::{CREDIT_LEDGER, INTERVIEWS, OUTBOX, OutboxEntry};
use sophia_reports::store::INTERVIEW_REPORTS;

use crate::progress::ProgressMode;
use crate::queues::QueueName;
use crate::report_failure::{FailureState, shown_last_error};
use crate::{Context, OpsError};

/// How many messages of each DLQ `interview show` looks at, at most, by default.
pub const DEFAULT_DLQ_SCAN: usize = 1_000;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InterviewShow {
    pub interview_id: String,
    pub found: bool,
    pub organization_id: Option<String>,
    pub status: Option<String>,
    /// Soft-deleted (`deletedAt` set): still settled, no report generated.
    pub deleted: bool,
    /// The interview's `completedAt` and `durationSeconds` as the API stored them: what a lost
    /// or dropped `interview.completed` is published again with (`--completed-at`,
    /// `--duration-seconds`).
    pub completed_at: Option<String>,
    pub duration_seconds: Option<f64>,
    pub settlement: Settlement,
    pub report: Option<ReportView>,
    pub dlq: DlqLookup,
    /// How a next command starts (`sophia-ops`, with this run's `--stage`).
    #[serde(skip)]
    pub ops: String,
    /// A COMPLETED interview not settled: where its `interview.completed` is
    /// ([`crate::late::where_unsettled`], the words of `report late` and `interview unsettled`).
    pub unsettled_now: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Settlement {
    /// `null`: not settled yet (a settlement claims exactly this).
    pub settled_at: Option<String>,
    pub credits_reserved: Option<i64>,
    pub credits_consumed: Option<i64>,
    pub retention_expires_at: Option<String>,
    /// `credits.allocations`: what was reserved from which lot.
    pub allocations: Vec<LotAmount>,
    /// The ledger lines of this interview, by lot.
    pub ledger: Vec<LotLedger>,
    /// The `report.generate` outbox entry a completed settlement writes.
    pub outbox: Option<OutboxView>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LotAmount {
    pub lot_id: String,
    pub amount: Option<i64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LotLedger {
    pub lot_id: String,
    pub lines: Vec<LedgerLine>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LedgerLine {
    #[serde(rename = "type")]
    pub kind: String,
    pub amount: Option<i64>,
    pub created_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutboxView {
    pub id: String,
    pub status: String,
    pub attempts: i64,
    pub request_id: String,
    pub created_at: Option<String>,
    pub published_at: Option<String>,
    pub sqs_message_id: Option<String>,
    /// A publish error (an SQS error: no candidate text).
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReportView {
    pub status: Option<String>,
    /// What the report is now ([`crate::report_state::report_now`], the one every command reads).
    pub state: FailureState,
    /// Where it is and what comes next, in words.
    pub now: String,
    pub next_delivery: Option<String>,
    pub waiting_for_retry: Option<bool>,
    pub transient_failures: Option<i64>,
    pub attempt_count: Option<i64>,
    pub error_kind: Option<String>,
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
    pub lease_id: Option<String>,
    pub lease_expires_at: Option<String>,
    /// Whether the model refused (its text is kept on the report, never shown here).
    pub refused: bool,
    /// The validation warnings' codes and fields (`skillAssessments[2].evidence[0]`).
    pub validation_warnings: Vec<String>,
    /// `needsReview`, if the report has one (a flag, or the kind of value it holds).
    pub needs_review: Option<serde_json::Value>,
    pub completed_at: Option<String>,
    /// The last operator retry: `{at, by, via, attemptsBefore, statusBefore}`.
    pub last_retry: Option<serde_json::Value>,
    pub retries: usize,
}

/// Where the DLQs were searched, and what was found.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DlqLookup {
    /// Messages for this interview, by queue.
    pub messages: Vec<DlqHit>,
    /// Per queue: how many DLQ messages were looked at, or why the DLQ was not searched.
    pub searched: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DlqHit {
    pub queue: QueueName,
    pub message_id: String,
    pub event_type: Option<String>,
    pub receive_count: Option<u64>,
    pub sent_at: Option<String>,
    pub contract_error: Option<String>,
    /// Why its consumer sent it to the DLQ on delivery (`deadLetterReason`): it can never succeed.
    pub dead_letter_reason: Option<String>,
}

/// An identifier, status or date (see [`crate::confirm`]).
fn text(v: Option<&Bson>) -> Option<String> {
    crate::confirm::text(v?)
}

fn number(v: Option<&Bson>) -> Option<i64> {
    crate::confirm::number(v?)
}

fn present(v: Option<&Bson>) -> bool {
    !matches!(v, None | Some(Bson::Null))
}

/// Reads everything `interview show` prints. `dlq_scan`: messages looked at per DLQ (0: the
/// DLQs are not searched).
pub async fn show(ctx: &Context, interview_id: InterviewId, dlq_scan: usize) -> Result<InterviewShow, OpsError> {
    let db = ctx.mongo().await?.db;
    let read = |what: &'static str| move |e: mongodb::error::Error| OpsError::domain(what, e);
    let interview = db
        .collection::<Document>(INTERVIEWS)
        .find_one(doc! {"_id": interview_id.oid()})
        .projection(doc! {"organizationId": 1, "status": 1, "deletedAt": 1, "settledAt": 1, "credits": 1, "retentionExpiresAt": 1, "completedAt": 1, "durationSeconds": 1})
        .await
        .map_err(read("reading the interview"))?;
    let ledger: Vec<Document> = db
        .collection::<Document>(CREDIT_LEDGER)
        .find(doc! {"reference.id": interview_id.oid()})
        .await
        .map_err(read("reading the ledger"))?
        .try_collect()
        .await
        .map_err(read("reading the ledger"))?;
    let outbox = db
        .collection::<Document>(OUTBOX)
        .find_one(doc! {"_id": OutboxEntry::report_generate_id(interview_id.oid())})
        .await
        .map_err(read("reading the outbox"))?;
    let report = db
        .collection::<Document>(INTERVIEW_REPORTS)
        .find_one(doc! {"interviewId": interview_id.oid()})
        .projection(doc! {"report.summary": 0, "report.strengths": 0, "report.concerns": 0,
        "report.skillAssessments": 0, "report.questionAnalysis": 0, "report.insufficientEvidenceReason": 0})
        .await
        .map_err(read("reading the report"))?;
    let dlq = find_in_dlqs(ctx, interview_id, dlq_scan).await;
    let visibility = crate::report_state::report_visibility(ctx).await;
    let mut shown =
        assemble(interview_id, interview.as_ref(), &ledger, outbox.as_ref(), report.as_ref(), dlq, visibility);
    shown.ops = ctx.ops_command("").trim_end().to_owned();
    if let (Some(r), Some(doc)) = (shown.report.as_mut(), report.as_ref()) {
        // The same words as `report failures`: a report completed since its failure says the
        // cause looks fixed.
        let mut now = crate::report_state::report_now(doc, bson::DateTime::now(), visibility);
        if now.needs_person_now {
            now.after_completion(crate::report_state::latest_completion(&db, now.last_error_at).await);
            (r.state, r.now) = (now.state, now.words);
        }
        r.now = crate::report_state::staged(&r.now, ctx);
    }
    if shown.republish_command().is_some() {
        shown.unsettled_now = Some(unsettled_now(ctx, &shown).await);
    }
    Ok(shown)
}

/// Where the `interview.completed` of a COMPLETED interview not settled is: its DLQ message (and
/// why it is there), its queue, or nowhere.
async fn unsettled_now(ctx: &Context, shown: &InterviewShow) -> String {
    let queue = QueueName::of(sophia_declarations::Queue::InterviewCompleted);
    if shown.dlq.searched.get(&queue.to_string()).is_none_or(|v| v.starts_with("not searched")) {
        return "not settled (the interview-completed DLQ was not searched: raise --dlq-scan)".into();
    }
    let mut messages = crate::late::CompletedMessages::default();
    for m in shown.dlq.messages.iter().filter(|m| m.queue == queue) {
        let why = m
            .dead_letter_reason
            .clone()
            .or_else(|| m.contract_error.as_ref().map(|e| format!("its body breaks the contract ({e})")))
            .unwrap_or_else(|| "its consumer failed it on each of its receives (dlq list interview-completed)".into());
        messages.in_dlq.insert(shown.interview_id.clone(), format!("message {}: {why}", m.message_id));
    }
    if let Ok(s) = crate::status::queue_status(ctx, queue, std::time::Duration::from_secs(900)).await {
        messages.in_queue = s.visible.unwrap_or(0) + s.in_flight.unwrap_or(0) + s.delayed.unwrap_or(0);
    }
    crate::late::where_unsettled(&shown.interview_id, &messages)
}

/// The view of the documents (no I/O).
pub fn assemble(
    interview_id: InterviewId,
    interview: Option<&Document>,
    ledger: &[Document],
    outbox: Option<&Document>,
    report: Option<&Document>,
    dlq: DlqLookup,
    visibility: std::time::Duration,
) -> InterviewShow {
    let credits = interview.and_then(|d| d.get_document("credits").ok());
    InterviewShow {
        interview_id: interview_id.to_string(),
        found: interview.is_some(),
        organization_id: interview.and_then(|d| text(d.get("organizationId"))),
        status: interview.and_then(|d| text(d.get("status"))),
        deleted: interview.is_some_and(|d| present(d.get("deletedAt"))),
        completed_at: interview.and_then(|d| text(d.get("completedAt"))),
        duration_seconds: interview.and_then(|d| match d.get("durationSeconds") {
            Some(Bson::Double(f)) => Some(*f),
            other => number(other).map(|n| n as f64),
        }),
        settlement: Settlement {
            settled_at: interview.and_then(|d| text(d.get("settledAt"))),
            credits_reserved: credits.and_then(|c| number(c.get("reserved"))),
            credits_consumed: credits.and_then(|c| number(c.get("consumed"))),
            retention_expires_at: interview.and_then(|d| text(d.get("retentionExpiresAt"))),
            allocations: allocations(credits),
            ledger: ledger_by_lot(ledger),
            outbox: outbox.map(OutboxView::of),
        },
        report: report.map(|r| ReportView::of(r, visibility)),
        dlq,
        ops: "sophia-ops".into(),
        unsettled_now: None,
    }
}

/// `credits.allocations`: what was reserved from which lot.
fn allocations(credits: Option<&Document>) -> Vec<LotAmount> {
    credits
        .and_then(|c| c.get_array("allocations").ok())
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .map(|d| LotAmount {
                    lot_id: text(d.get("lotId")).unwrap_or_else(|| "?".into()),
                    // The settlement writes `credits` per allocation; `amount` is an older name.
                    amount: number(d.get("credits").or_else(|| d.get("amount"))),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The interview's ledger lines, by lot, each lot's in the order they were written.
fn ledger_by_lot(ledger: &[Document]) -> Vec<LotLedger> {
    let mut by_lot: BTreeMap<String, Vec<(Option<String>, LedgerLine)>> = BTreeMap::new();
    for line in ledger {
        let lot = text(line.get("lotId")).unwrap_or_else(|| "?".into());
        let created_at = text(line.get("createdAt"));
        let entry = LedgerLine {
            kind: text(line.get("type")).unwrap_or_else(|| "?".into()),
            amount: number(line.get("amount")),
            created_at: created_at.clone(),
        };
        by_lot.entry(lot).or_default().push((created_at, entry));
    }
    by_lot
        .into_iter()
        .map(|(lot_id, mut lines)| {
            lines.sort_by(|a, b| a.0.cmp(&b.0));
            LotLedger { lot_id, lines: lines.into_iter().map(|(_, l)| l).collect() }
        })
        .collect()
}

impl OutboxView {
    fn of(o: &Document) -> Self {
        Self {
            id: text(o.get("_id")).unwrap_or_default(),
            status: text(o.get("status")).unwrap_or_else(|| "?".into()),
            attempts: number(o.get("attempts")).unwrap_or(0),
            request_id: text(o.get("requestId")).unwrap_or_default(),
            created_at: text(o.get("createdAt")),
            published_at: text(o.get("publishedAt")),
            sqs_message_id: text(o.get("sqsMessageId")),
            last_error: o.get_str("lastError").ok().map(|e| e.chars().take(300).collect()),
        }
    }
}

impl ReportView {
    /// The report's state: identifiers, statuses, numbers and dates only (never its content).
    fn of(r: &Document, visibility: std::time::Duration) -> Self {
        let content = r.get_document("report").ok();
        let error_kind = text(r.get("errorKind"));
        let last_retry = r.get_document("lastRetry").ok().map(|d| {
            serde_json::json!({
                "at": text(d.get("at")), "by": text(d.get("by")), "via": text(d.get("via")),
                "attemptsBefore": number(d.get("attemptsBefore")), "statusBefore": text(d.get("statusBefore")),
            })
        });
        let status = text(r.get("status"));
        let waiting_for_retry = r.get_bool("waitingForRetry").ok();
        let now = crate::report_state::report_now(r, bson::DateTime::now(), visibility);
        Self {
            state: now.state,
            now: now.words,
            next_delivery: now.next_delivery,
            waiting_for_retry,
            transient_failures: number(r.get("transientFailures")),
            status,
            attempt_count: number(r.get("attemptCount")).or(Some(0)),
            last_error: shown_last_error(r.get_str("lastError").ok(), error_kind.is_some()),
            error_kind,
            last_error_at: text(r.get("lastErrorAt")),
            lease_id: text(r.get("leaseId")),
            lease_expires_at: text(r.get("leaseExpiresAt")),
            refused: present(r.get("refusal")),
            validation_warnings: warnings(content),
            needs_review: r.get("needsReview").or_else(|| content.and_then(|c| c.get("needsReview"))).map(needs_review),
            completed_at: text(r.get("completedAt")),
            last_retry,
            retries: r.get_array("retries").map_or(0, Vec::len),
        }
    }
}

/// The validation warnings' codes and fields (`invalid_quote at skillAssessments[2].evidence[0]`).
fn warnings(content: Option<&Document>) -> Vec<String> {
    content
        .and_then(|c| c.get_array("validationWarnings").ok())
        .map(|w| {
            w.iter()
                .filter_map(Bson::as_document)
                .map(|w| {
                    format!(
                        "{} at {}",
                        text(w.get("code")).unwrap_or_default(),
                        text(w.get("field")).unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `needsReview` as shown: a flag, or of a document only its flag-like parts (booleans, and the
/// number of items of a list of reasons), or the kind of value it holds.
fn needs_review(v: &Bson) -> serde_json::Value {
    match v {
        Bson::Boolean(b) => serde_json::Value::Bool(*b),
        Bson::Null => serde_json::Value::Null,
        Bson::Document(d) => {
            // Only the flag-like parts: booleans and the names of the reasons.
            let mut shown = serde_json::Map::new();
            for (k, v) in d {
                match v {
                    Bson::Boolean(b) => {
                        shown.insert(k.clone(), serde_json::Value::Bool(*b));
                    }
                    Bson::Array(a) => {
                        shown.insert(k.clone(), serde_json::json!(format!("{} item(s)", a.len())));
                    }
                    _ => {}
                }
            }
            serde_json::Value::Object(shown)
        }
        other => serde_json::json!(format!("present ({:?})", other.element_type())),
    }
}

/// Looks for the interview's messages in every declared DLQ (a peek: nothing is removed). A DLQ
/// that is not configured or cannot be read is reported, not an error.
pub async fn find_in_dlqs(ctx: &Context, interview_id: InterviewId, scan: usize) -> DlqLookup {
    let mut lookup = DlqLookup { messages: Vec::new(), searched: BTreeMap::new() };
    if scan == 0 {
        for q in QueueName::all() {
            lookup.searched.insert(q.to_string(), "not searched (--dlq-scan 0)".into());
        }
        return lookup;
    }
    let locator = ctx.locator().await;
    let wanted = interview_id.to_string();
    for queue in QueueName::all() {
        match crate::dlq_messages::list(&locator, queue, scan, ProgressMode::Hidden).await {
            Ok(listing) => {
                lookup.searched.insert(
                    queue.to_string(),
                    format!(
                        "{} message(s) looked at{}",
                        listing.messages.len(),
                        if listing.truncated { " (more not looked at: raise --dlq-scan)" } else { "" }
                    ),
                );
                for m in listing.messages.into_iter().filter(|m| m.interview_id.as_deref() == Some(wanted.as_str())) {
                    lookup.messages.push(DlqHit {
                        queue,
                        message_id: m.message_id,
                        event_type: m.event_type,
                        receive_count: m.receive_count,
                        sent_at: m.sent_at,
                        contract_error: m.contract_error,
                        dead_letter_reason: m.attributes.get(sophia_sqs_consumer::queue::DEAD_LETTER_REASON).cloned(),
                    });
                }
            }
            Err(e) => {
                lookup.searched.insert(queue.to_string(), format!("not searched: {e}"));
            }
        }
    }
    lookup
}

impl InterviewShow {
    /// For a COMPLETED interview not settled (its `interview.completed` dropped, lost, or sent
    /// to the DLQ naming another organization): the command that publishes it again with the
    /// facts the API stored, its own organization included.
    pub fn republish_command(&self) -> Option<String> {
        let unsettled = self.found && !self.deleted && self.settlement.settled_at.is_none();
        if !unsettled || self.status.as_deref() != Some("COMPLETED") {
            return None;
        }
        Some(format!(
            "{} publish completed {} {} --duration-seconds {} --completed-at {}",
            self.ops,
            self.interview_id,
            self.organization_id.as_deref().unwrap_or("<organizationId>"),
            self.duration_seconds.map_or("<durationSeconds>".into(), |d| d.to_string()),
            self.completed_at.as_deref().unwrap_or("<completedAt>"),
        ))
    }

    pub fn human(&self) -> String {
        let mut s = format!("interview {}\n", self.interview_id);
        if !self.found {
            s.push_str("  NOT FOUND in MongoDB (interviews)\n");
        } else {
            s.push_str(&format!(
                "  organization {}  status {}{}\n",
                opt(&self.organization_id),
                opt(&self.status),
                if self.deleted { "  (soft-deleted)" } else { "" }
            ));
        }
        if self.found {
            s.push_str(&format!(
                "  completedAt {}  durationSeconds {}\n",
                opt(&self.completed_at),
                self.duration_seconds.map_or("-".into(), |d| d.to_string())
            ));
        }
        s.push_str("settlement\n");
        self.settlement.write_human(&mut s);
        if let Some(now) = &self.unsettled_now {
            s.push_str(&format!("  now: {now}\n"));
        }
        s.push_str("report\n");
        match &self.report {
            None => s.push_str("  none written\n"),
            Some(r) => r.write_human(&mut s),
        }
        s.push_str("dead-letter queues\n");
        self.dlq.write_human(&mut s);
        if let Some(command) = self.republish_command() {
            s.push_str(&self.next_for_unsettled(&command));
        }
        s
    }
}

impl InterviewShow {
    /// The `next:` of a COMPLETED interview not settled, by where its message is.
    fn next_for_unsettled(&self, republish: &str) -> String {
        let valid_in_dlq =
            self.dlq.messages.iter().find(|m| m.contract_error.is_none() && m.dead_letter_reason.is_none());
        if let Some(m) = self.dlq.messages.iter().find(|m| m.dead_letter_reason.is_some()) {
            return format!(
                "next: COMPLETED and not settled; its message {id} in the {q} DLQ can never succeed ({}): delete it, then publish it again with the stored facts (plan, then --yes):\n  {} dlq delete {q} {id}\n  {republish}\n",
                m.dead_letter_reason.as_deref().unwrap_or_default(),
                self.ops,
                id = m.message_id,
                q = m.queue,
            );
        }
        if let Some(m) = valid_in_dlq {
            return format!(
                "next: COMPLETED and not settled; its message {} is in the {q} DLQ and reads valid: once what failed it is fixed (queue status {q}), redrive it (plan, then --yes):\n  {} dlq redrive {q}\n  only if `dlq show {q} {}` says it can never succeed (another organization): delete it, then publish it again:\n  {republish}\n",
                m.message_id,
                self.ops,
                m.message_id,
                q = m.queue,
            );
        }
        let why = if !self.dlq.messages.is_empty() {
            "its message is in a DLQ (above) and breaks the contract: delete it (dlq delete), then"
        } else if self.dlq.searched.values().any(|v| v.starts_with("not searched")) {
            "the DLQs were not searched: unless a DLQ or the queue still holds its message (queue status interview-completed),"
        } else {
            "in no DLQ: unless its message is still on its way (queue status interview-completed), it was never published or was lost;"
        };
        format!(
            "next: COMPLETED and not settled; {why} publish it again with the stored facts (plan, then --yes):\n  {republish}\n"
        )
    }
}

/// A text for the human view: `-` when absent.
fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// A number for the human view: `-` when absent.
fn num(v: Option<i64>) -> String {
    v.map_or("-".into(), |n| n.to_string())
}

impl Settlement {
    /// The settlement's lines of `interview show`: credits, allocations, ledger by lot, outbox.
    fn write_human(&self, s: &mut String) {
        s.push_str(&format!(
            "  settledAt {}\n  credits reserved {} consumed {}\n  retentionExpiresAt {}\n",
            self.settled_at.as_deref().unwrap_or("null (not settled)"),
            num(self.credits_reserved),
            num(self.credits_consumed),
            opt(&self.retention_expires_at)
        ));
        for a in &self.allocations {
            s.push_str(&format!("  allocation: lot {} amount {}\n", a.lot_id, num(a.amount)));
        }
        if self.ledger.is_empty() {
            s.push_str("  ledger: no lines\n");
        }
        for lot in &self.ledger {
            s.push_str(&format!("  ledger, lot {}:\n", lot.lot_id));
            for l in &lot.lines {
                s.push_str(&format!("    {:<8} {:>6}  {}\n", l.kind, num(l.amount), opt(&l.created_at)));
            }
        }
        match &self.outbox {
            None => s.push_str("  outbox: no report.generate entry\n"),
            Some(o) => s.push_str(&format!(
                "  outbox {}: {} (attempts {}, requestId {}, created {}, published {}, SQS message {}){}\n",
                o.id,
                o.status,
                o.attempts,
                o.request_id,
                opt(&o.created_at),
                opt(&o.published_at),
                opt(&o.sqs_message_id),
                o.last_error.as_ref().map_or(String::new(), |e| format!("; last error: {e}"))
            )),
        }
    }
}

impl ReportView {
    /// The report's lines of `interview show`.
    fn write_human(&self, s: &mut String) {
        s.push_str(&format!(
            "  status {}  attempts {} of {}  errorKind {}  transient failures {}\n  now: {}\n  lastError: {} (at {})\n  lease {} until {}\n",
            opt(&self.status),
            num(self.attempt_count),
            sophia_reports::store::MAX_ATTEMPTS,
            opt(&self.error_kind),
            self.transient_failures.unwrap_or(0),
            self.now,
            opt(&self.last_error),
            opt(&self.last_error_at),
            opt(&self.lease_id),
            opt(&self.lease_expires_at)
        ));
        if self.refused {
            s.push_str("  the model refused (the refusal's text is on the report, not shown)\n");
        }
        if let Some(c) = &self.completed_at {
            s.push_str(&format!("  completedAt {c}\n"));
        }
        s.push_str(&format!(
            "  validation warnings: {}\n",
            if self.validation_warnings.is_empty() { "none".to_owned() } else { self.validation_warnings.join("; ") }
        ));
        if let Some(n) = &self.needs_review {
            s.push_str(&format!("  needsReview: {n}\n"));
        }
        if let Some(retry) = &self.last_retry {
            s.push_str(&format!("  last retry: {retry} ({} retry record(s))\n", self.retries));
        }
    }
}

impl DlqLookup {
    /// The DLQs' lines of `interview show`: where it looked, and each message found.
    fn write_human(&self, s: &mut String) {
        for (queue, searched) in &self.searched {
            s.push_str(&format!("  {queue}: {searched}\n"));
        }
        if self.messages.is_empty() {
            s.push_str("  no message for this interview in the DLQs searched\n");
        }
        for m in &self.messages {
            s.push_str(&format!(
                "  IN THE {} DLQ: message {} ({}, received {} times, sent {}){}\n",
                m.queue,
                m.message_id,
                m.event_type.as_deref().unwrap_or("-"),
                m.receive_count.map_or("?".into(), |n| n.to_string()),
                m.sent_at.as_deref().unwrap_or("?"),
                m.contract_error.as_ref().map_or(String::new(), |e| format!("; contract: INVALID ({e})"))
            ));
            if let Some(reason) = &m.dead_letter_reason {
                s.push_str(&format!("    sent there by its consumer, it can never succeed: {reason}\n"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_reads_ids_numbers_and_dates_only() {
        let id: InterviewId = "65a1b2c3d4e5f60718293a4b".parse().unwrap();
        let lot = bson::oid::ObjectId::new();
        let interview = doc! {"_id": id.oid(), "status": "COMPLETED", "settledAt": bson::DateTime::from_millis(0),
        "credits": {"reserved": 10_i32, "consumed": 5_i64, "allocations": [{"lotId": lot, "credits": 10}]}};
        let ledger = vec![
            doc! {"lotId": lot, "type": "SETTLE", "amount": 5_i64, "createdAt": bson::DateTime::from_millis(2)},
            doc! {"lotId": lot, "type": "RESERVE", "amount": 10_i64, "createdAt": bson::DateTime::from_millis(1)},
        ];
        let report = doc! {"status": "FAILED", "attemptCount": 3, "lastError": "x", "refusal": "I cannot quote: SECRET",
        "report": {"validationWarnings": [{"code": "quote_not_found", "field": "strengths[0]", "message": "m"}]}};
        let dlq = DlqLookup { messages: vec![], searched: BTreeMap::new() };
        let v = assemble(id, Some(&interview), &ledger, None, Some(&report), dlq, std::time::Duration::from_secs(60));
        assert_eq!(
            v.settlement.ledger[0].lines.iter().map(|l| l.kind.as_str()).collect::<Vec<_>>(),
            ["RESERVE", "SETTLE"]
        );
        assert_eq!(v.settlement.allocations[0].amount, Some(10), "the allocation's credits are shown");
        let r = v.report.as_ref().unwrap();
        assert!(r.refused);
        assert_eq!(r.validation_warnings, ["quote_not_found at strengths[0]"]);
        assert!(r.last_error.as_deref().unwrap().contains("another writer"));
        let human = v.human();
        assert!(!human.contains("SECRET") && human.contains("settledAt 1970-01-01T00:00:00Z"), "{human}");
    }
}
