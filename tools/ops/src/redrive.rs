//! `dlq redrive <queue> [--max N] [--dry-run]`: move a DLQ's messages back to its source queue.
//!
//! Preferred: SQS `StartMessageMoveTask` (source = the DLQ's ARN, destination = the source
//! queue's ARN), which AWS runs server-side and which keeps bodies and attributes. It cannot stop
//! after N messages, so `--max` always uses the fallback; an endpoint that does not implement it
//! (fauxqs answers `InvalidAction`) also falls back.
//!
//! Fallback, receive / send / delete, per batch of up to 10:
//! 1. receive from the DLQ with a visibility timeout (the messages are hidden, not removed);
//! 2. `SendMessageBatch` to the source queue with the same body and message attributes;
//! 3. `DeleteMessageBatch` from the DLQ of exactly the entries whose send succeeded.
//!
//! Nothing is lost on partial failure: a message whose send failed is never deleted and is made
//! visible in the DLQ again at the end of the run; a message whose delete failed after a
//! successful send is in both queues (a duplicate, harmless because every consumer is
//! idempotent). Each message is attempted at most once per run.
//!
//! Before a message is sent, a [`Prepare`] step may act on it or keep it where it is:
//! - `dlq redrive report-generate` resets the message's report ([`ResetReports`]): a report
//!   FAILED at its last attempt would otherwise acknowledge the redriven message without a
//!   model call. The reset is per message, just before its send, so this redrive always uses
//!   receive / send / delete (`--keep-attempts` redrives without resets, as a move task may);
//! - `queue move` checks each body against the destination's contract ([`ContractCheck`]): an
//!   invalid body is left where it is and reported.
//!
//! A kept message is released at the end of the run, like a failed send.

use sophia_declarations::Queue;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    BatchResultErrorEntry, DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName,
    MessageSystemAttributeNameForSends, MessageSystemAttributeValue, SendMessageBatchRequestEntry,
};
use serde::Serialize;

use sophia_contracts::InterviewId;

use crate::OpsError;
use crate::dlq_messages::{RECEIVE_BATCH, receive, release};
use crate::progress::ProgressMode;
use crate::queues::approximate_visible;
use crate::queues::{QueueLocator, QueueName, QueueRef};

/// Error codes with which an endpoint says it does not implement an operation.
pub const UNSUPPORTED_CODES: [&str; 6] = [
    "InvalidAction",
    "UnsupportedOperation",
    "AWS.SimpleQueueService.UnsupportedOperation",
    "UnknownOperation",
    "UnknownOperationException",
    "NotImplemented",
];

/// After this many consecutive batches in which every send failed, the destination is taken to
/// be unavailable and the run stops (everything not moved stays in the DLQ).
pub const MAX_CONSECUTIVE_FAILED_BATCHES: u32 = 3;

/// How the messages are moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedriveMethod {
    /// `StartMessageMoveTask` when possible (no `--max`, endpoint supports it), else the fallback.
    #[default]
    Auto,
    /// Only `StartMessageMoveTask`; fail if it is not available.
    MoveTask,
    /// Only receive / send / delete.
    ReceiveSendDelete,
}

#[derive(Debug, Clone)]
pub struct RedriveOptions {
    pub max: Option<usize>,
    pub dry_run: bool,
    pub method: RedriveMethod,
    /// How long the fallback hides a received message while it moves it.
    pub visibility: Duration,
    pub progress: ProgressMode,
    /// Added to every message sent as the `opsRequestId` attribute (`ops:<command>:<who>:<uuid>`;
    /// the message's own `requestId` is kept).
    pub ops_request_id: Option<String>,
}

/// The message attribute that names the operator command that moved a message.
pub const OPS_REQUEST_ID: &str = "opsRequestId";

impl Default for RedriveOptions {
    fn default() -> Self {
        Self {
            max: None,
            dry_run: false,
            method: RedriveMethod::Auto,
            visibility: Duration::from_secs(120),
            progress: ProgressMode::Hidden,
            ops_request_id: None,
        }
    }
}

/// One message that was not moved cleanly.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RedriveFailure {
    pub message_id: String,
    /// `send`: still in the DLQ. `delete`: sent, but also still in the DLQ (a duplicate).
    pub step: &'static str,
    pub reason: String,
}

/// What a move task did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MoveTaskReport {
    pub task_handle: String,
    pub status: String,
    pub failure_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedriveReport {
    pub queue: QueueName,
    pub dlq_url: String,
    pub source_url: String,
    /// `move-task` or `receive-send-delete` (for a dry run: the method a real run would try first).
    pub method: &'static str,
    /// Why `StartMessageMoveTask` was not used, when it was not.
    pub fallback_reason: Option<String>,
    pub dry_run: bool,
    /// `ApproximateNumberOfMessages` of the DLQ before the run.
    pub in_dlq_before: Option<u64>,
    /// Messages now in the source queue and gone from the DLQ.
    pub moved: u64,
    /// Their message ids as they were in the queue they came from (receive / send / delete;
    /// a move task names none: the plan lists what it saw), so the audit record names each.
    pub moved_message_ids: Vec<String>,
    /// Messages whose send failed: still in the DLQ.
    pub failed: u64,
    /// Messages sent whose delete failed: in both queues (harmless: consumers are idempotent).
    pub duplicated: u64,
    pub failures: Vec<RedriveFailure>,
    /// Why the run stopped before the DLQ was empty, if it did.
    pub stopped_early: Option<String>,
    pub task: Option<MoveTaskReport>,
    /// Messages the prepare step kept where they were (an invalid body for `queue move`, a
    /// report that could not be reset): still in the queue they were read from.
    pub kept: Vec<RedriveFailure>,
    /// What the prepare step did per message (e.g. the report's reset), in order.
    pub prepared: Vec<PreparedNote>,
    /// The plan shown before the run (per message: the interview's or report's state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::confirm::Plan>,
}

/// What the prepare step did with one message that was sent.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreparedNote {
    pub message_id: String,
    pub interview_id: Option<String>,
    pub note: String,
}

impl RedriveReport {
    fn new(queue: QueueName, from: &QueueRef, to: &QueueRef, dry_run: bool, in_dlq_before: Option<u64>) -> Self {
        Self {
            queue,
            dlq_url: from.url.clone(),
            source_url: to.url.clone(),
            method: "receive-send-delete",
            fallback_reason: None,
            dry_run,
            in_dlq_before,
            moved: 0,
            moved_message_ids: Vec::new(),
            failed: 0,
            duplicated: 0,
            failures: Vec::new(),
            stopped_early: None,
            task: None,
            kept: Vec::new(),
            prepared: Vec::new(),
            plan: None,
        }
    }

    pub fn is_clean(&self) -> bool {
        self.failed == 0 && self.duplicated == 0 && self.stopped_early.is_none() && self.kept.is_empty()
    }

    /// The lines about the prepare step and the kept messages.
    fn prepared_human(&self) -> String {
        let mut s = String::new();
        for n in self.prepared.iter().take(50) {
            s.push_str(&format!(
                "  {} (interview {}): {}\n",
                n.message_id,
                n.interview_id.as_deref().unwrap_or("-"),
                n.note
            ));
        }
        if self.prepared.len() > 50 {
            s.push_str(&format!("  ... and {} more (see --json)\n", self.prepared.len() - 50));
        }
        if !self.kept.is_empty() {
            s.push_str(&format!("  kept in place: {} message(s)\n", self.kept.len()));
            for k in self.kept.iter().take(50) {
                s.push_str(&format!("    {} {}: {}\n", k.step, k.message_id, k.reason));
            }
        }
        s
    }

    pub fn human(&self) -> String {
        let mut s = String::new();
        if let Some(plan) = self.plan.as_ref().filter(|_| self.dry_run) {
            s.push_str(&plan.human());
        }
        if self.dry_run {
            s.push_str(&format!(
                "dry run: {} DLQ holds about {} message(s); a redrive would use {}; nothing was moved\n",
                self.queue,
                self.in_dlq_before.map_or("?".into(), |n| n.to_string()),
                self.method,
            ));
            if let Some(reason) = &self.fallback_reason {
                s.push_str(&format!("  (StartMessageMoveTask not used: {reason})\n"));
            }
            s.push_str(&format!("  from {}\n  to   {}\n", self.dlq_url, self.source_url));
            return s;
        }
        s.push_str(&format!("redrive {} DLQ -> source queue via {}\n", self.queue, self.method));
        s.push_str(&self.prepared_human());
        if let Some(reason) = &self.fallback_reason {
            s.push_str(&format!("  (StartMessageMoveTask not used: {reason})\n"));
        }
        s.push_str(&format!("  moved:  {}\n  failed: {} (still in the DLQ)\n", self.moved, self.failed));
        if self.duplicated > 0 {
            s.push_str(&format!(
                "  duplicated: {} (sent, but the DLQ delete failed: they are in both queues; harmless, consumers are idempotent)\n",
                self.duplicated
            ));
        }
        if let Some(task) = &self.task {
            s.push_str(&format!("  move task {}: {}\n", task.task_handle, task.status));
            if let Some(r) = &task.failure_reason {
                s.push_str(&format!("  task failure: {r} (messages not moved stay in the DLQ)\n"));
            }
        }
        for f in self.failures.iter().take(20) {
            s.push_str(&format!("  {} {}: {}\n", f.step, f.message_id, f.reason));
        }
        if self.failures.len() > 20 {
            s.push_str(&format!("  ... and {} more (see --json)\n", self.failures.len() - 20));
        }
        if let Some(why) = &self.stopped_early {
            s.push_str(&format!("  stopped early: {why}\n"));
        }
        if self.failed > 0 || self.stopped_early.is_some() {
            s.push_str("  nothing was lost: messages not moved are still in the DLQ; run the redrive again\n");
        }
        s
    }
}

/// The result of one batch call: which entry ids succeeded, and why the others failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchResult {
    pub succeeded: Vec<String>,
    pub failed: Vec<(String, String)>,
}

impl BatchResult {
    fn from_sqs(succeeded: impl Iterator<Item = String>, failed: Vec<BatchResultErrorEntry>) -> Self {
        Self {
            succeeded: succeeded.collect(),
            failed: failed
                .into_iter()
                .map(|e| (e.id, format!("{}: {}", e.code, e.message.unwrap_or_default())))
                .collect(),
        }
    }
}

/// The two writes of the fallback, as a seam: tests inject failures here. Entry ids that are in
/// neither list of the result are treated as failed.
pub trait MoveIo: Sync {
    fn send_batch(
        &self,
        queue_url: &str,
        entries: Vec<SendMessageBatchRequestEntry>,
    ) -> impl Future<Output = Result<BatchResult, OpsError>> + Send;
    fn delete_batch(
        &self,
        queue_url: &str,
        entries: Vec<DeleteMessageBatchRequestEntry>,
    ) -> impl Future<Output = Result<BatchResult, OpsError>> + Send;
}

/// The real SQS calls.
#[derive(Debug, Clone)]
pub struct SqsMoveIo(pub Client);

impl MoveIo for SqsMoveIo {
    async fn send_batch(
        &self,
        queue_url: &str,
        entries: Vec<SendMessageBatchRequestEntry>,
    ) -> Result<BatchResult, OpsError> {
        let out = self
            .0
            .send_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| OpsError::sqs("SendMessageBatch", queue_url, e))?;
        Ok(BatchResult::from_sqs(out.successful.into_iter().map(|e| e.id), out.failed))
    }

    async fn delete_batch(
        &self,
        queue_url: &str,
        entries: Vec<DeleteMessageBatchRequestEntry>,
    ) -> Result<BatchResult, OpsError> {
        let out = self
            .0
            .delete_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| OpsError::sqs("DeleteMessageBatch", queue_url, e))?;
        Ok(BatchResult::from_sqs(out.successful.into_iter().map(|e| e.id), out.failed))
    }
}

/// What the prepare step decided for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepared {
    /// Send it; `note` says what was done first (e.g. the report's reset).
    Send { note: Option<String> },
    /// Leave it where it is (`step` names why: `invalid`, `reset`).
    Keep { step: &'static str, reason: String },
}

/// Acts on each message just before it is sent (see the module docs).
pub trait Prepare: Sync {
    /// Whether a run with this step may use `StartMessageMoveTask` (which sends everything
    /// server-side, with no step per message).
    fn allows_move_task(&self) -> bool;
    /// Why a run with this step goes message by message (the fallback's reason).
    fn per_message(&self) -> &'static str {
        "each report's attempts are reset just before its message moves"
    }
    /// Why `--method move-task` is refused with this step.
    fn move_task_refusal(&self, queue: QueueName) -> String {
        format!(
            "StartMessageMoveTask moves every message server-side, so a {queue} redrive cannot reset each report just before its message moves; use --method auto, or --keep-attempts to move without resets"
        )
    }
    fn prepare(&self, message: &Message) -> impl Future<Output = Prepared> + Send;
}

/// No step: every message is sent as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPrepare;

impl Prepare for NoPrepare {
    fn allows_move_task(&self) -> bool {
        true
    }

    async fn prepare(&self, _: &Message) -> Prepared {
        Prepared::Send { note: None }
    }
}

/// `dlq redrive report-generate`: each message's report gets a fresh attempt budget just before
/// the message moves ([`sophia_reports::admin::reset_for_retry`]; never a COMPLETED report, never
/// one a live worker holds). A report that cannot be reset because MongoDB failed keeps its
/// message in the DLQ; any other outcome sends it (the consumer decides, idempotently).
pub struct ResetReports {
    pub db: mongodb::Database,
    pub operator: sophia_reports::admin::Operator,
}

impl Prepare for ResetReports {
    fn allows_move_task(&self) -> bool {
        false
    }

    async fn prepare(&self, message: &Message) -> Prepared {
        use sophia_reports::admin::ResetOutcome;
        let body = message.body().unwrap_or_default();
        let subject = match crate::contract::check(QueueName::of(Queue::ReportGenerate), body) {
            Ok(s) => s,
            Err(_) => {
                return Prepared::Send {
                    note: Some("body breaks the contract: moved, the consumer drops it with an error log".into()),
                };
            }
        };
        if let Some(kept) = erased_keep(&self.db, subject.interview_id).await {
            return kept;
        }
        let note = match sophia_reports::admin::reset_for_retry(&self.db, subject.interview_id, &self.operator).await {
            Ok(ResetOutcome::Reset { status_before, attempts_before }) => {
                format!(
                    "report {status_before} at {attempts_before} attempt(s): attempts reset to 0 (by {}), then moved",
                    self.operator.by
                )
            }
            Ok(ResetOutcome::Completed) => {
                "report COMPLETED: not reset; the moved message is acknowledged without a model call".into()
            }
            Ok(ResetOutcome::Held { lease_expires_at }) => format!(
                "report PROCESSING under a live lease (until {}): not reset; moved",
                lease_expires_at.as_deref().unwrap_or("-")
            ),
            Ok(ResetOutcome::Absent) => "no report yet: moved (it starts with a full budget)".into(),
            Ok(ResetOutcome::NotResettable { status }) => format!("report {status}: not reset; moved"),
            Ok(ResetOutcome::Erased) => "report ERASED: not reset; moved, acknowledged without a write".into(),
            Err(e) => {
                return Prepared::Keep {
                    step: "reset",
                    reason: format!("the report could not be reset ({e}); the message stays in the DLQ"),
                };
            }
        };
        Prepared::Send { note: Some(note) }
    }
}

/// The erasure check of a redrive that resets nothing (an interview DLQ, or `--keep-attempts`):
/// a message naming an erased interview (its request or its tombstone) stays in the DLQ, the
/// reason printed, so a redrive never puts an erased candidate's data (an interview.failed's
/// `failureReason`) back into circulation; `sophia-ops erasure sweep` deletes it. A body that
/// breaks the contract is sent (the consumer drops it with an error log).
pub struct SkipErased {
    pub db: mongodb::Database,
    pub queue: QueueName,
}

/// The step of a message kept because its interview was erased, for every prepare that checks.
pub async fn erased_keep(db: &mongodb::Database, interview_id: InterviewId) -> Option<Prepared> {
    match sophia_reports::erasure::is_erased(db, interview_id).await {
        Ok(false) => None,
        Ok(true) => Some(Prepared::Keep {
            step: "erased",
            reason: "the candidate's data was erased: not moved (`sophia-ops erasure sweep` deletes it)".into(),
        }),
        Err(e) => Some(Prepared::Keep { step: "erased", reason: format!("the erasure check failed ({e}); not moved") }),
    }
}

impl Prepare for SkipErased {
    fn allows_move_task(&self) -> bool {
        false
    }

    fn per_message(&self) -> &'static str {
        "each message's interview is checked for an erasure just before it moves"
    }

    fn move_task_refusal(&self, queue: QueueName) -> String {
        format!(
            "StartMessageMoveTask moves every message server-side, so a {queue} redrive cannot keep the messages of erased interviews in the DLQ; use --method auto"
        )
    }

    async fn prepare(&self, message: &Message) -> Prepared {
        let Ok(subject) = crate::contract::check(self.queue, message.body().unwrap_or_default()) else {
            return Prepared::Send { note: None };
        };
        erased_keep(&self.db, subject.interview_id).await.unwrap_or(Prepared::Send { note: None })
    }
}

/// The dry run of a redrive that resets reports: no move task, nothing done (a dry run sends
/// nothing, so no message is prepared).
pub struct ResetPreview;

impl Prepare for ResetPreview {
    fn allows_move_task(&self) -> bool {
        false
    }

    async fn prepare(&self, _: &Message) -> Prepared {
        Prepared::Keep { step: "dry-run", reason: "a dry run moves nothing".into() }
    }
}

/// `queue move`: each body is checked against the destination queue's contract; an invalid one
/// is left in the queue it came from.
pub struct ContractCheck(pub QueueName);

impl Prepare for ContractCheck {
    fn allows_move_task(&self) -> bool {
        false
    }

    async fn prepare(&self, message: &Message) -> Prepared {
        match crate::contract::check(self.0, message.body().unwrap_or_default()) {
            Ok(_) => Prepared::Send { note: None },
            Err(e) => Prepared::Keep { step: "invalid", reason: format!("not a valid {} body: {e}", self.0) },
        }
    }
}

/// Redrive with the real SQS writes.
pub async fn redrive(
    locator: &QueueLocator,
    queue: QueueName,
    options: &RedriveOptions,
) -> Result<RedriveReport, OpsError> {
    redrive_with(locator, queue, options, &SqsMoveIo(locator.client().clone())).await
}

/// Redrive with the fallback's writes going through `io`.
pub async fn redrive_with(
    locator: &QueueLocator,
    queue: QueueName,
    options: &RedriveOptions,
    io: &impl MoveIo,
) -> Result<RedriveReport, OpsError> {
    redrive_prepared(locator, queue, options, io, &NoPrepare).await
}

/// Redrive with `prepare` run on each message before its send.
pub async fn redrive_prepared(
    locator: &QueueLocator,
    queue: QueueName,
    options: &RedriveOptions,
    io: &impl MoveIo,
    prepare: &impl Prepare,
) -> Result<RedriveReport, OpsError> {
    let (source, dlq) = locator.pair(queue).await?;
    let in_dlq_before = approximate_visible(locator, &dlq.url).await?;
    let mut report = RedriveReport::new(queue, &dlq, &source, options.dry_run, in_dlq_before);
    let try_move_task = match (options.method, options.max) {
        (RedriveMethod::MoveTask, _) if !prepare.allows_move_task() => {
            return Err(OpsError::Invalid(prepare.move_task_refusal(queue)));
        }
        _ if !prepare.allows_move_task() => {
            report.fallback_reason = Some(prepare.per_message().into());
            false
        }
        (RedriveMethod::ReceiveSendDelete, _) => {
            report.fallback_reason = Some("--method receive-send-delete".into());
            false
        }
        (RedriveMethod::MoveTask, Some(_)) => {
            return Err(OpsError::Invalid(
                "StartMessageMoveTask cannot stop after --max messages; drop --max or use --method auto".into(),
            ));
        }
        (RedriveMethod::Auto, Some(max)) => {
            report.fallback_reason = Some(format!("--max {max}: a move task always moves everything"));
            false
        }
        (_, None) => true,
    };
    if options.dry_run {
        if try_move_task {
            match probe_move_task_support(locator.client(), &dlq).await {
                Ok(()) => report.method = "move-task",
                Err(reason) if options.method == RedriveMethod::Auto => report.fallback_reason = Some(reason),
                Err(reason) => return Err(OpsError::Unavailable { command: "dlq redrive --method move-task", reason }),
            }
        }
        return Ok(report);
    }
    if try_move_task {
        match start_move_task(locator.client(), &dlq, &source).await {
            Ok(handle) => {
                report.method = "move-task";
                wait_for_move_task(locator.client(), &dlq, handle, options.progress, &mut report).await?;
                return Ok(report);
            }
            Err(e) if options.method == RedriveMethod::Auto && is_unsupported(&e) => {
                report.fallback_reason = Some(unsupported_reason(&e));
            }
            Err(e) => return Err(e),
        }
    }
    move_by_hand(locator.client(), &dlq, &source, options, io, prepare, &mut report).await?;
    Ok(report)
}

/// `queue move --from-url <url> --to <queue>`: every message of another queue (an old stack's
/// queue or DLQ) into `to`'s source queue, each body checked against `to`'s contract first
/// ([`ContractCheck`]); receive / send / delete with the same guarantees as a redrive.
pub async fn queue_move(
    locator: &QueueLocator,
    from_url: &str,
    to: QueueName,
    options: &RedriveOptions,
    io: &impl MoveIo,
) -> Result<RedriveReport, OpsError> {
    let destination = locator.source_url(to).await?;
    queue_move_to(locator, from_url, to, &destination, options, io).await
}

/// [`queue_move`] into `destination` (`to`'s source queue or its DLQ), bodies checked against
/// `to`'s contract.
pub async fn queue_move_to(
    locator: &QueueLocator,
    from_url: &str,
    to: QueueName,
    destination: &str,
    options: &RedriveOptions,
    io: &impl MoveIo,
) -> Result<RedriveReport, OpsError> {
    let from = QueueRef { url: from_url.to_owned(), arn: String::new() };
    let destination = destination.to_owned();
    if destination == from_url {
        return Err(OpsError::Invalid("--from-url is the destination queue itself: nothing to move".into()));
    }
    let to_ref = QueueRef { url: destination, arn: String::new() };
    let in_before = approximate_visible(locator, from_url).await?;
    let mut report = RedriveReport::new(to, &from, &to_ref, options.dry_run, in_before);
    report.fallback_reason = Some("each body is checked against the contract before it is sent".into());
    if options.dry_run {
        return Ok(report);
    }
    move_by_hand(locator.client(), &from, &to_ref, options, io, &ContractCheck(to), &mut report).await?;
    Ok(report)
}

pub fn is_unsupported(e: &OpsError) -> bool {
    e.sqs_code().is_some_and(|code| UNSUPPORTED_CODES.contains(&code))
}

/// Why the move task was not used, for the report.
fn unsupported_reason(e: &OpsError) -> String {
    match e {
        OpsError::Sqs { message, .. } => format!("not supported by this endpoint ({message})"),
        other => other.to_string(),
    }
}

async fn start_move_task(client: &Client, dlq: &QueueRef, source: &QueueRef) -> Result<String, OpsError> {
    let out = client
        .start_message_move_task()
        .source_arn(&dlq.arn)
        .destination_arn(&source.arn)
        .send()
        .await
        .map_err(|e| OpsError::sqs("StartMessageMoveTask", &dlq.url, e))?;
    Ok(out.task_handle.unwrap_or_default())
}

/// A read-only check that the endpoint implements move tasks (for `--dry-run`).
async fn probe_move_task_support(client: &Client, dlq: &QueueRef) -> Result<(), String> {
    match client.list_message_move_tasks().source_arn(&dlq.arn).max_results(1).send().await {
        Ok(_) => Ok(()),
        Err(e) => {
            let e = OpsError::sqs("ListMessageMoveTasks", &dlq.url, e);
            Err(if is_unsupported(&e) { unsupported_reason(&e) } else { e.to_string() })
        }
    }
}

const TERMINAL_STATUSES: [&str; 3] = ["COMPLETED", "FAILED", "CANCELLED"];

async fn wait_for_move_task(
    client: &Client,
    dlq: &QueueRef,
    handle: String,
    mode: ProgressMode,
    report: &mut RedriveReport,
) -> Result<(), OpsError> {
    let bar = mode.bar(report.in_dlq_before, "moving (StartMessageMoveTask)");
    loop {
        let out = client
            .list_message_move_tasks()
            .source_arn(&dlq.arn)
            .max_results(10)
            .send()
            .await
            .map_err(|e| OpsError::sqs("ListMessageMoveTasks", &dlq.url, e))?;
        let entry = out
            .results
            .unwrap_or_default()
            .into_iter()
            .find(|t| handle.is_empty() || t.task_handle() == Some(handle.as_str()));
        let Some(task) = entry else {
            return Err(OpsError::NotFound(format!("move task {handle} is not listed for {}", dlq.arn)));
        };
        if let Some(total) = task.approximate_number_of_messages_to_move() {
            bar.set_length(u64::try_from(total).unwrap_or(0));
        }
        let moved = u64::try_from(task.approximate_number_of_messages_moved()).unwrap_or(0);
        bar.set_position(moved);
        let status = task.status().unwrap_or("UNKNOWN").to_owned();
        if TERMINAL_STATUSES.contains(&status.as_str()) {
            bar.finish_and_clear();
            report.moved = moved;
            if status != "COMPLETED" {
                report.stopped_early = Some(format!("the move task ended {status}"));
            }
            report.task = Some(MoveTaskReport {
                task_handle: handle,
                status,
                failure_reason: task.failure_reason().map(str::to_owned),
            });
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The body, message attributes and tracing header of a DLQ message, as a send entry, with the
/// operator's request id and, on a standard queue, `MessageGroupId` = the body's organization
/// (fair queues: one organization's burst does not delay the others).
fn send_entry(id: String, m: &Message, ops_request_id: Option<&str>) -> SendMessageBatchRequestEntry {
    let system = m.attributes();
    let trace = system.and_then(|a| a.get(&MessageSystemAttributeName::AwsTraceHeader)).map(|v| {
        MessageSystemAttributeValue::builder().data_type("String").string_value(v).build().expect("data type is set")
    });
    // A FIFO source queue needs a group; reuse the original one, deduplicated by the message id.
    let fifo_group = system.and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId)).cloned();
    let dedup = fifo_group.as_ref().and(m.message_id().map(str::to_owned));
    let group = fifo_group.or_else(|| organization_named(m.body().unwrap_or_default()));
    let mut attributes = m.message_attributes().cloned().unwrap_or_default();
    if let Some(r) = ops_request_id {
        attributes.insert(
            OPS_REQUEST_ID.to_owned(),
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value(r)
                .build()
                .expect("data type is set"),
        );
    }
    let mut entry = SendMessageBatchRequestEntry::builder()
        .id(id)
        .message_body(m.body().unwrap_or_default())
        .set_message_attributes(Some(attributes).filter(|a| !a.is_empty()))
        .set_message_group_id(group)
        .set_message_deduplication_id(dedup);
    if let Some(trace) = trace {
        entry = entry.message_system_attributes(MessageSystemAttributeNameForSends::AwsTraceHeader, trace);
    }
    entry.build().expect("id and body are set")
}

/// The `organizationId` a body names (a valid ObjectId), for `MessageGroupId`.
pub fn organization_named(body: &str) -> Option<String> {
    let id = serde_json::from_str::<serde_json::Value>(body).ok()?.get("organizationId")?.as_str()?.to_owned();
    id.parse::<sophia_contracts::OrganizationId>().ok().map(|o| o.to_string())
}

fn delete_entry(id: &str, receipt_handle: &str) -> DeleteMessageBatchRequestEntry {
    DeleteMessageBatchRequestEntry::builder()
        .id(id)
        .receipt_handle(receipt_handle)
        .build()
        .expect("id and handle are set")
}

/// The outcome of one batch call per entry id: `Ok` or the reason it failed.
fn outcome(ids: &[String], result: Result<BatchResult, OpsError>) -> HashMap<String, Result<(), String>> {
    match result {
        Err(e) => ids.iter().map(|id| (id.clone(), Err(e.to_string()))).collect(),
        Ok(r) => {
            let ok: HashSet<String> = r.succeeded.into_iter().collect();
            let reasons: HashMap<String, String> = r.failed.into_iter().collect();
            ids.iter()
                .map(|id| {
                    let o = if ok.contains(id) {
                        Ok(())
                    } else {
                        Err(reasons.get(id).cloned().unwrap_or_else(|| "not reported by SQS".into()))
                    };
                    (id.clone(), o)
                })
                .collect()
        }
    }
}

async fn move_by_hand(
    client: &Client,
    dlq: &QueueRef,
    source: &QueueRef,
    options: &RedriveOptions,
    io: &impl MoveIo,
    prepare: &impl Prepare,
    report: &mut RedriveReport,
) -> Result<(), OpsError> {
    let total = match (options.max, report.in_dlq_before) {
        (Some(max), Some(there)) => Some((max as u64).min(there)),
        (Some(max), None) => Some(max as u64),
        (None, there) => there,
    };
    let bar = options.progress.bar(total, format!("redriving {}", report.queue));
    let mut run = HandMove::default();
    let result = async {
        while let Some(want) = run.want(options) {
            let batch = receive(client, &dlq.url, want, options.visibility, Duration::from_secs(1)).await?;
            if batch.is_empty() {
                break;
            }
            let kept_before = report.kept.len();
            let (to_send, redeletes) = run.sort(batch, prepare, &bar, report).await;
            if to_send.is_empty() && redeletes.is_empty() {
                if report.kept.len() > kept_before {
                    continue;
                }
                break;
            }
            run.attempted += to_send.len();
            let (sent, failed_in_batch) = run.send(&to_send, io, source, options, report).await;
            // Delete exactly what was sent.
            run.delete(redeletes.into_iter().chain(sent).collect(), io, dlq, report).await;
            bar.inc(to_send.len() as u64);
            if run.destination_unavailable(to_send.len(), failed_in_batch) {
                report.stopped_early = Some(format!(
                    "{MAX_CONSECUTIVE_FAILED_BATCHES} batches in a row could not be sent to {}: the destination looks unavailable",
                    source.url
                ));
                break;
            }
        }
        Ok::<_, OpsError>(())
    }
    .await;
    bar.finish_and_clear();
    let handles: Vec<String> = run.failed_sends.into_values().collect();
    let unreleased = release(client, &dlq.url, &handles).await;
    if unreleased > 0 {
        tracing::warn!(unreleased, "some unsent messages stay hidden in the DLQ until their visibility timeout ends");
    }
    match result {
        // Nothing happened yet (e.g. no permission to receive): a plain error.
        Err(e) if report.moved + report.failed + report.duplicated == 0 => Err(e),
        // Midway: the counts so far matter more than the error; report both.
        Err(e) => {
            report.stopped_early = Some(e.to_string());
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// What a receive / send / delete run remembers across its batches.
#[derive(Default)]
struct HandMove {
    /// Sent but not deleted: if seen again, only the delete is retried.
    sent_not_deleted: HashSet<String>,
    /// Send failed (or kept by the prepare step), by message id with its latest receipt handle:
    /// released at the end so they are visible in the DLQ again at once.
    failed_sends: HashMap<String, String>,
    consecutive_failed_batches: u32,
    /// Messages sent or kept so far (what `--max` counts).
    attempted: usize,
}

impl HandMove {
    /// How many messages the next receive asks for; `None` once `--max` are attempted.
    fn want(&self, options: &RedriveOptions) -> Option<i32> {
        let remaining = options.max.map_or(RECEIVE_BATCH as usize, |m| m.saturating_sub(self.attempted));
        (remaining > 0).then(|| i32::try_from(remaining.min(RECEIVE_BATCH as usize)).unwrap_or(RECEIVE_BATCH))
    }

    /// Sorts a received batch: a message sent before whose delete failed is only deleted again
    /// (the second list: message id, receipt handle); one whose send failed before keeps its new
    /// handle for the release; any other goes through the prepare step, then is sent (the first
    /// list) or kept where it is.
    async fn sort(
        &mut self,
        batch: Vec<Message>,
        prepare: &impl Prepare,
        bar: &indicatif::ProgressBar,
        report: &mut RedriveReport,
    ) -> (Vec<Message>, Vec<(String, String)>) {
        let mut to_send = Vec::new();
        let mut redeletes = Vec::new();
        for m in batch {
            let id = m.message_id().unwrap_or_default().to_owned();
            let handle = m.receipt_handle().unwrap_or_default().to_owned();
            if self.sent_not_deleted.contains(&id) {
                redeletes.push((id, handle));
            } else if let Some(h) = self.failed_sends.get_mut(&id) {
                *h = handle;
            } else {
                match prepare.prepare(&m).await {
                    Prepared::Send { note } => {
                        if let Some(note) = note {
                            let interview_id =
                                crate::contract::interview_named(m.body().unwrap_or_default()).map(|i| i.to_string());
                            report.prepared.push(PreparedNote { message_id: id.clone(), interview_id, note });
                        }
                        to_send.push(m);
                    }
                    Prepared::Keep { step, reason } => {
                        report.kept.push(RedriveFailure { message_id: id.clone(), step, reason });
                        // Released at the end with the failed sends, never received twice.
                        self.failed_sends.insert(id, handle);
                        self.attempted += 1;
                        bar.inc(1);
                    }
                }
            }
        }
        (to_send, redeletes)
    }

    /// Sends `to_send` to the source queue in one batch call: what was sent (message id, receipt
    /// handle: to delete) and how many sends failed (kept for the release, counted in `report`).
    async fn send(
        &mut self,
        to_send: &[Message],
        io: &impl MoveIo,
        source: &QueueRef,
        options: &RedriveOptions,
        report: &mut RedriveReport,
    ) -> (Vec<(String, String)>, usize) {
        // Send: entry id = position in this batch.
        let ids: Vec<String> = (0..to_send.len()).map(|i| format!("m{i}")).collect();
        let sent = if to_send.is_empty() {
            HashMap::new()
        } else {
            let entries = ids
                .iter()
                .zip(to_send)
                .map(|(id, m)| send_entry(id.clone(), m, options.ops_request_id.as_deref()))
                .collect();
            outcome(&ids, io.send_batch(&source.url, entries).await)
        };
        let mut deletes = Vec::new();
        let mut failed_in_batch = 0;
        for (id, m) in ids.iter().zip(to_send) {
            let message_id = m.message_id().unwrap_or_default().to_owned();
            match &sent[id] {
                Ok(()) => deletes.push((message_id, m.receipt_handle().unwrap_or_default().to_owned())),
                Err(reason) => {
                    failed_in_batch += 1;
                    report.failed += 1;
                    report.failures.push(RedriveFailure {
                        message_id: message_id.clone(),
                        step: "send",
                        reason: reason.clone(),
                    });
                    self.failed_sends.insert(message_id, m.receipt_handle().unwrap_or_default().to_owned());
                }
            }
        }
        (deletes, failed_in_batch)
    }

    /// Deletes from the DLQ exactly what was sent (message id, receipt handle): a delete that
    /// fails leaves a duplicate, retried when the message is received again.
    async fn delete(
        &mut self,
        deletes: Vec<(String, String)>,
        io: &impl MoveIo,
        dlq: &QueueRef,
        report: &mut RedriveReport,
    ) {
        if deletes.is_empty() {
            return;
        }
        let del_ids: Vec<String> = (0..deletes.len()).map(|i| format!("d{i}")).collect();
        let entries = del_ids.iter().zip(&deletes).map(|(id, (_, handle))| delete_entry(id, handle)).collect();
        let deleted = outcome(&del_ids, io.delete_batch(&dlq.url, entries).await);
        for (id, (message_id, _)) in del_ids.iter().zip(&deletes) {
            let retried = self.sent_not_deleted.contains(message_id);
            match (&deleted[id], retried) {
                (Ok(()), false) => {
                    report.moved += 1;
                    report.moved_message_ids.push(message_id.clone());
                }
                (Ok(()), true) => {
                    // A retried delete succeeded: the duplicate is gone, the move is complete.
                    self.sent_not_deleted.remove(message_id);
                    report.duplicated -= 1;
                    report.moved += 1;
                    report.moved_message_ids.push(message_id.clone());
                    report.failures.retain(|f| !(f.step == "delete" && &f.message_id == message_id));
                }
                (Err(_), true) => {}
                (Err(reason), false) => {
                    report.duplicated += 1;
                    report.failures.push(RedriveFailure {
                        message_id: message_id.clone(),
                        step: "delete",
                        reason: reason.clone(),
                    });
                    self.sent_not_deleted.insert(message_id.clone());
                }
            }
        }
    }

    /// Whether the destination looks unavailable: [`MAX_CONSECUTIVE_FAILED_BATCHES`] batches in
    /// a row of which every send failed.
    fn destination_unavailable(&mut self, sent: usize, failed_in_batch: usize) -> bool {
        if sent > 0 && failed_in_batch == sent {
            self.consecutive_failed_batches += 1;
            self.consecutive_failed_batches >= MAX_CONSECUTIVE_FAILED_BATCHES
        } else {
            self.consecutive_failed_batches = 0;
            false
        }
    }
}
