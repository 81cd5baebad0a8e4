//! `dlq list` and `dlq show`: look at a dead-letter queue without removing anything.
//!
//! SQS has no true peek: any receive counts, a visibility timeout of 0 included. Messages are
//! received with a short visibility timeout (so that one listing sees each message once), never
//! deleted, and made visible again at once at the end (`ChangeMessageVisibilityBatch` to 0). Each
//! look increments a message's `ApproximateReceiveCount` in the DLQ, and the count shown includes
//! it. Harmless by construction: the DLQs have no RedrivePolicy, and a redrive (receive / send /
//! delete) sends a new message whose count starts at 0 in the source queue. The commands that
//! receive nothing: `queue status`, `interview show --no-receive`.
//!
//! Bodies are shown redacted by default: every string outside the contracts' identifier and
//! timestamp fields (`failureReason`, which may quote the candidate) becomes
//! `<redacted: N chars>` ([`crate::contract::redact`]); `--show-body` shows them whole.
//!
//! `dlq delete` removes one message the operator has decided to drop: it is found as `dlq show`
//! finds it and deleted by the receipt handle of that receive; every other message seen is
//! released at once.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, Message, MessageSystemAttributeName};
use chrono::{DateTime, SecondsFormat};
use serde::Serialize;
use sophia_contracts::MessageAttributes;

use crate::OpsError;
use crate::progress::ProgressMode;
use crate::queues::{QueueLocator, QueueName, approximate_visible};

/// How long a listing holds the messages it has seen (released at the end).
pub const PEEK_HOLD: Duration = Duration::from_secs(30);
/// SQS's largest receive batch.
pub const RECEIVE_BATCH: i32 = 10;

/// One DLQ message as an operator sees it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DlqMessage {
    pub message_id: String,
    /// `ApproximateReceiveCount` as the DLQ reports it (it includes this listing's receive).
    pub receive_count: Option<u64>,
    /// When the message was first sent (`SentTimestamp`), ISO-8601.
    pub sent_at: Option<String>,
    pub event_type: Option<String>,
    pub request_id: Option<String>,
    /// Every message attribute, as `name -> value` (binary values as their byte count).
    pub attributes: BTreeMap<String, String>,
    /// The body: redacted (candidate-text fields replaced by `<redacted: N chars>`) unless
    /// `body_redacted` is false (`--show-body`).
    pub body: String,
    pub body_redacted: bool,
    /// The interview the body names, if it names one (valid or not).
    pub interview_id: Option<String>,
    /// Why the body does not satisfy its queue's contract, if it does not (a poison message).
    pub contract_error: Option<String>,
    /// Why it is in the DLQ, in words ([`attach_reasons`]; `dlq list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DlqMessage {
    /// The message with its body redacted (see [`crate::contract::redact`]).
    pub fn from_sqs(queue: QueueName, m: &Message) -> Self {
        Self::from_sqs_with(queue, m, false)
    }

    /// `show_body`: the body as it is (it may hold candidate text).
    pub fn from_sqs_with(queue: QueueName, m: &Message, show_body: bool) -> Self {
        let system = m.attributes();
        let number =
            |name: MessageSystemAttributeName| system.and_then(|a| a.get(&name)).and_then(|v| v.parse::<i64>().ok());
        let attributes: BTreeMap<String, String> = m
            .message_attributes()
            .map(|attrs| {
                attrs
                    .iter()
                    .map(|(k, v)| {
                        let value = v
                            .string_value()
                            .map(str::to_owned)
                            .or_else(|| v.binary_value().map(|b| format!("<{} bytes>", b.as_ref().len())))
                            .unwrap_or_default();
                        (k.clone(), value)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let raw = m.body().unwrap_or_default();
        let contract_error = crate::contract::check(queue, raw).err();
        let interview_id = crate::contract::interview_named(raw).map(|i| i.to_string());
        let (body, body_redacted) =
            if show_body { (raw.to_owned(), false) } else { (crate::contract::redact(raw), true) };
        Self {
            message_id: m.message_id().unwrap_or_default().to_owned(),
            receive_count: number(MessageSystemAttributeName::ApproximateReceiveCount)
                .and_then(|n| u64::try_from(n).ok()),
            sent_at: number(MessageSystemAttributeName::SentTimestamp)
                .and_then(DateTime::from_timestamp_millis)
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)),
            event_type: attributes.get(MessageAttributes::EVENT_TYPE).cloned(),
            request_id: attributes.get(MessageAttributes::REQUEST_ID).cloned(),
            attributes,
            body,
            body_redacted,
            interview_id,
            contract_error,
            reason: None,
        }
    }

    pub fn human(&self) -> String {
        let mut s = format!(
            "{}  receives={}  sent={}  eventType={}  requestId={}\n  body: {}\n",
            self.message_id,
            self.receive_count.map_or("?".into(), |n| n.to_string()),
            self.sent_at.as_deref().unwrap_or("?"),
            self.event_type.as_deref().unwrap_or("-"),
            self.request_id.as_deref().unwrap_or("-"),
            self.body
        );
        let others: Vec<String> = self
            .attributes
            .iter()
            .filter(|(k, _)| ![MessageAttributes::EVENT_TYPE, MessageAttributes::REQUEST_ID].contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !others.is_empty() {
            s.push_str(&format!("  other attributes: {}\n", others.join(", ")));
        }
        if let Some(e) = &self.contract_error {
            s.push_str(&format!("  contract: INVALID ({e})\n"));
        }
        if let Some(reason) = self.attributes.get(sophia_sqs_consumer::queue::DEAD_LETTER_REASON) {
            s.push_str(&format!(
                "  sent to the DLQ by its consumer on delivery, no retry: it can never succeed: {reason} (docs/runbook.md#a-message-that-can-never-succeed)\n"
            ));
        } else if let Some(reason) = &self.reason {
            s.push_str(&format!("  reason: {reason}\n"));
        }
        s
    }
}

/// Why each listed message is in the DLQ, for the messages whose consumer did not say
/// (`deadLetterReason`): a body that breaks the contract; else failed on each of its receives,
/// with what the function's errors say now (`queue status`'s cause) and, for report-generate,
/// what its report is now ([`crate::report_state::report_now`]).
pub async fn attach_reasons(listing: &mut DlqListing, ctx: &crate::Context) {
    let unexplained = |m: &DlqMessage| {
        m.contract_error.is_none() && !m.attributes.contains_key(sophia_sqs_consumer::queue::DEAD_LETTER_REASON)
    };
    for m in listing.messages.iter_mut().filter(|m| m.contract_error.is_some()) {
        m.reason = Some(format!(
            "its body breaks the {} contract ({}): it can never succeed; delete it (dlq delete), then publish it again correctly",
            listing.queue,
            m.contract_error.as_deref().unwrap_or_default()
        ));
    }
    if !listing.messages.iter().any(unexplained) {
        listing.next = next_step(listing, false).map(|n| ctx.ops_command(&n));
        return;
    }
    let (passed, now) = match crate::status::queue_status(ctx, listing.queue, std::time::Duration::from_secs(900)).await
    {
        Ok(s) => errors_now(&s),
        Err(e) => (false, format!("the function's errors could not be read ({e})")),
    };
    listing.next = next_step(listing, passed).map(|n| ctx.ops_command(&n));
    let reports = report_states(ctx, listing).await;
    for m in listing.messages.iter_mut().filter(|m| unexplained(m)) {
        let report = m
            .interview_id
            .as_ref()
            .and_then(|i| reports.get(i))
            .map_or(String::new(), |r| format!("; its report: {r}"));
        m.reason = Some(format!(
            "its consumer failed it on each of its {} receive(s) (maxReceiveCount){report}; {now}",
            m.receive_count.map_or("?".into(), |n| n.saturating_sub(1).to_string())
        ));
    }
}

/// What the function's errors say now, for a message that failed each of its receives: the
/// function's own failures (metrics' [`crate::status::FunctionMetrics::failing`]) or a stopped
/// queue, never the verdict's cause (which is the DLQ itself whenever it holds messages). `true`
/// only on evidence that what failed the messages has passed: the function ran without an error
/// in the window. No error in a quiet window proves nothing (no traffic, no invocation, no
/// error), nor does MongoDB answering this machine (the functions' path is another): then
/// "unknown whether it has passed", the last known cause, and how to check.
pub fn errors_now(s: &crate::status::QueueStatus) -> (bool, String) {
    use crate::status::MongoNow;
    let window = crate::duration_text::human_duration(s.window_seconds);
    let Some(m) = &s.metrics else {
        return (
            false,
            format!(
                "the function's errors could not be read ({}): queue status {} before a redrive",
                s.metrics_note.as_deref().unwrap_or("no metrics"),
                s.queue
            ),
        );
    };
    if let Some(cause) = m.failing() {
        return (false, format!("the function's errors now: {cause}"));
    }
    if s.verdict == crate::status::Verdict::Stopped {
        return (false, format!("nothing consumes the queue now: {}", s.cause.as_deref().unwrap_or("stopped")));
    }
    let last = s.last_cause.as_deref().map_or(String::new(), |c| format!("; the last known cause: {c}"));
    if m.invocations > 0 {
        return (
            true,
            format!(
                "the function ran {} time(s) without an error in the last {window}{last}: what failed it has passed; redrive it (dlq redrive)",
                m.invocations
            ),
        );
    }
    let how = match &s.mongodb {
        MongoNow::NotChecked => format!("set MONGODB_URI and run queue status {} (it asks MongoDB)", s.queue),
        MongoNow::Unreachable(_) => {
            "MongoDB does not answer from here either: its access first (docs/runbook.md#function-errors)".into()
        }
        MongoNow::Reachable => format!(
            "MongoDB answers from here, not necessarily from the functions; the next batch shows it (queue status {} --window 5m once traffic comes), or redrive and watch: a message that fails again returns to the DLQ after its receives",
            s.queue
        ),
    };
    (
        false,
        format!(
            "unknown whether it has passed: no invocation in the last {window} (no error proves nothing without traffic); MongoDB {}{last}; check: {how}",
            s.mongodb.words()
        ),
    )
}

/// The command after `dlq list` (without the program and the stage): the redrive when what
/// failed every listed message has passed, else a look at the first message that can never
/// succeed (or the first listed).
fn next_step(listing: &DlqListing, passed: bool) -> Option<String> {
    let never = |m: &&DlqMessage| {
        m.contract_error.is_some() || m.attributes.contains_key(sophia_sqs_consumer::queue::DEAD_LETTER_REASON)
    };
    if passed && !listing.messages.is_empty() && !listing.messages.iter().any(|m| never(&m)) {
        return Some(format!("dlq redrive {}", listing.queue));
    }
    let first = listing.messages.iter().find(never).or(listing.messages.first())?;
    Some(format!("dlq show {} {}", listing.queue, first.message_id))
}

/// report-generate with MongoDB: each listed interview's report now, in words.
async fn report_states(ctx: &crate::Context, listing: &DlqListing) -> std::collections::HashMap<String, String> {
    let mut states = std::collections::HashMap::new();
    if !listing.queue.holds_report_attempts() || !ctx.has_mongo() {
        return states;
    }
    let Ok(mongo) = ctx.mongo().await else { return states };
    let ids: Vec<bson::Bson> = listing
        .messages
        .iter()
        .filter_map(|m| m.interview_id.as_deref()?.parse::<bson::oid::ObjectId>().ok())
        .map(bson::Bson::ObjectId)
        .collect();
    let visibility = crate::report_state::report_visibility(ctx).await;
    let found = mongo
        .db
        .collection::<bson::Document>(sophia_reports::store::INTERVIEW_REPORTS)
        .find(bson::doc! {"interviewId": {"$in": ids}})
        .projection(crate::report_state::projection())
        .await;
    let docs: Vec<bson::Document> = match found {
        Ok(c) => futures::TryStreamExt::try_collect(c).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    for d in docs {
        let Ok(id) = d.get_object_id("interviewId") else { continue };
        let now = crate::report_state::report_now(&d, bson::DateTime::now(), visibility);
        let words = if now.state == crate::report_failure::FailureState::NotStarted {
            not_started_in_dlq(visibility)
        } else {
            now.shown(ctx)
        };
        states.insert(id.to_hex(), words);
    }
    states
}

/// A NOT_STARTED report whose message is in the report DLQ: every delivery failed before the
/// report was claimed (a whole batch failing: MongoDB unreachable, the function not starting),
/// each one visibility timeout after the last; no attempt was spent.
fn not_started_in_dlq(visibility: std::time::Duration) -> String {
    let q = sophia_declarations::Queue::ReportGenerate.settings();
    format!(
        "not started: each of its {} deliveries failed before the report was claimed (the whole batch failed: MongoDB unreachable, or the function could not start), one visibility timeout ({}) apart; no attempt spent: once the cause is fixed, a plain redrive (dlq redrive report-generate)",
        q.max_receive_count,
        sophia_sqs_consumer::backoff::words(visibility)
    )
}

/// Printed with bodies shown whole (`--show-body`).
pub const SHOW_BODY_NOTE: &str = "note: --show-body prints message bodies whole; they may hold candidate text (failureReason): do not paste them into tickets or chats\n";

/// The result of `dlq list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DlqListing {
    pub queue: QueueName,
    pub dlq_url: String,
    /// `ApproximateNumberOfMessages` before the listing (visible messages).
    pub approximate_visible: Option<u64>,
    pub messages: Vec<DlqMessage>,
    /// More messages may be in the DLQ than were listed (`--max` reached).
    pub truncated: bool,
    /// The next command, written out (this run's `--stage` included), when a message is listed.
    pub next: Option<String>,
}

impl DlqListing {
    pub fn human(&self) -> String {
        let mut s = format!(
            "{} DLQ ({}): {} message(s) listed{}\n",
            self.queue,
            self.dlq_url,
            self.messages.len(),
            match (self.truncated, self.approximate_visible) {
                (true, Some(n)) => format!(" of about {n} (--max reached)"),
                (true, None) => " (--max reached)".into(),
                _ => String::new(),
            }
        );
        if self.messages.iter().any(|m| !m.body_redacted) {
            s.insert_str(0, SHOW_BODY_NOTE);
        }
        for m in &self.messages {
            s.push_str(&m.human());
        }
        if self.messages.is_empty() {
            s.push_str("  (empty)\n");
        } else {
            s.push_str("  (receive counts include this look: SQS has no peek; harmless in a DLQ)\n");
        }
        if let Some(next) = &self.next {
            s.push_str(&format!("  next: {next}\n"));
        }
        s
    }
}

/// The result of `dlq show`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DlqShow {
    pub queue: QueueName,
    pub dlq_url: String,
    pub message: DlqMessage,
    /// For a `report.generate` message, when MongoDB is configured: the report it was for, which
    /// says why generation failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportState>,
}

/// The state of the report a `report.generate` DLQ message was for.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum ReportState {
    /// The report document as stored (its `lastError` names fields, never candidate text).
    Found { status: String, attempt_count: i32, error_kind: Option<String>, last_error: Option<String> },
    /// No report document for the interview.
    Absent,
    /// It could not be looked up (MongoDB unreachable, or an unreadable document).
    Unavailable(String),
}

impl ReportState {
    fn human(&self) -> String {
        match self {
            Self::Found { status, attempt_count, error_kind, last_error } => format!(
                "  report:        {status} after {attempt_count} attempt(s); errorKind {}; lastError: {}\n",
                error_kind.as_deref().unwrap_or("-"),
                last_error.as_deref().unwrap_or("-")
            ),
            Self::Absent => "  report:        none written\n".to_owned(),
            Self::Unavailable(why) => format!("  report:        not looked up ({why})\n"),
        }
    }
}

/// Looks up the report of a `report.generate` DLQ message when `MONGODB_URI` is configured
/// (never fails the command: a lookup problem is shown instead).
pub async fn attach_report(shown: &mut DlqShow, ctx: &crate::Context) {
    if !shown.queue.holds_report_attempts()
        || ctx.env.get(sophia_platform::config::MONGODB_URI).is_none()
        || shown.message.contract_error.is_some()
    {
        return;
    }
    let Some(interview_id) = shown.message.interview_id.as_deref().and_then(|i| i.parse().ok()) else { return };
    let state = match ctx.mongo().await {
        Err(e) => ReportState::Unavailable(e.to_string()),
        Ok(mongo) => match sophia_reports::store::ReportStore::new(&mongo.db).find(interview_id).await {
            Ok(Some(r)) => ReportState::Found {
                status: r.status.as_str().to_owned(),
                attempt_count: r.attempt_count,
                last_error: crate::report_failure::shown_last_error(r.last_error.as_deref(), r.error_kind.is_some()),
                error_kind: r.error_kind.map(|k| k.as_str().to_owned()),
            },
            Ok(None) => ReportState::Absent,
            Err(e) => ReportState::Unavailable(e.to_string()),
        },
    };
    shown.report = Some(state);
}

impl DlqShow {
    pub fn human(&self) -> String {
        let m = &self.message;
        let mut s = format!("{} DLQ message {}\n", self.queue, m.message_id);
        s.push_str(&format!("  receive count: {}\n", m.receive_count.map_or("?".into(), |n| n.to_string())));
        s.push_str(&format!("  sent at:       {}\n", m.sent_at.as_deref().unwrap_or("?")));
        for (k, v) in &m.attributes {
            s.push_str(&format!("  attribute {k}: {v}\n"));
        }
        s.push_str(&format!("  contract:      {}\n", m.contract_error.as_deref().unwrap_or("valid")));
        let pretty = serde_json::from_str::<serde_json::Value>(&m.body)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| m.body.clone());
        let label = if m.body_redacted { "body (candidate text redacted; --show-body to see it):" } else { "body:" };
        s.push_str(&format!("  {label}\n{}\n", indent(&pretty, "    ")));
        if !m.body_redacted {
            s.insert_str(0, SHOW_BODY_NOTE);
        }
        if let Some(report) = &self.report {
            s.push_str(&report.human());
        }
        s
    }
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n")
}

/// Receives up to `max` messages (1..=10) with every attribute, holding them for `visibility`.
pub async fn receive(
    client: &Client,
    url: &str,
    max: i32,
    visibility: Duration,
    wait: Duration,
) -> Result<Vec<Message>, OpsError> {
    let out = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max.clamp(1, RECEIVE_BATCH))
        .visibility_timeout(i32::try_from(visibility.as_secs()).unwrap_or(i32::MAX))
        .wait_time_seconds(i32::try_from(wait.as_secs()).unwrap_or(0))
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .map_err(|e| OpsError::sqs("ReceiveMessage", url, e))?;
    Ok(out.messages.unwrap_or_default())
}

/// Makes received messages visible again at once. Returns how many could not be released (they
/// become visible by themselves when their visibility timeout ends).
pub async fn release(client: &Client, url: &str, receipt_handles: &[String]) -> usize {
    let mut unreleased = 0;
    for chunk in receipt_handles.chunks(RECEIVE_BATCH as usize) {
        let entries: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, handle)| {
                ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(handle)
                    .visibility_timeout(0)
                    .build()
                    .expect("id and receipt handle are set")
            })
            .collect();
        match client.change_message_visibility_batch().queue_url(url).set_entries(Some(entries)).send().await {
            Ok(out) => unreleased += out.failed.len(),
            Err(e) => {
                tracing::warn!(queue = url, error = %OpsError::sqs("ChangeMessageVisibilityBatch", url, e), "could not release messages");
                unreleased += chunk.len();
            }
        }
    }
    unreleased
}

/// Receives distinct messages until `max` are seen, the queue returns nothing, or `stop` is
/// satisfied; then releases all of them. Never deletes.
async fn peek(
    client: &Client,
    url: &str,
    max: usize,
    progress: &indicatif::ProgressBar,
    mut stop: impl FnMut(&Message) -> bool,
) -> Result<(Vec<Message>, bool), OpsError> {
    let mut seen = HashSet::new();
    let mut held = Vec::new();
    let mut messages = Vec::new();
    let mut stopped = false;
    let result = async {
        while messages.len() < max && !stopped {
            let want = i32::try_from(max - messages.len()).unwrap_or(RECEIVE_BATCH);
            let batch = receive(client, url, want, PEEK_HOLD, Duration::from_secs(1)).await?;
            let mut fresh = 0;
            for m in batch {
                if let Some(handle) = m.receipt_handle() {
                    held.push(handle.to_owned());
                }
                if seen.insert(m.message_id().unwrap_or_default().to_owned()) {
                    fresh += 1;
                    stopped = stopped || stop(&m);
                    messages.push(m);
                    progress.inc(1);
                }
            }
            if fresh == 0 {
                break;
            }
        }
        Ok::<_, OpsError>(())
    }
    .await;
    let unreleased = release(client, url, &held).await;
    if unreleased > 0 {
        tracing::warn!(
            queue = url,
            unreleased,
            "some peeked messages stay invisible until their {}s hold ends",
            PEEK_HOLD.as_secs()
        );
    }
    result?;
    let truncated = messages.len() >= max;
    Ok((messages, truncated))
}

/// `dlq list <queue> [--max N]`.
pub async fn list(
    locator: &QueueLocator,
    queue: QueueName,
    max: usize,
    mode: ProgressMode,
) -> Result<DlqListing, OpsError> {
    list_with(locator, queue, max, mode, false).await
}

/// `dlq list`, with bodies whole when `show_body`.
pub async fn list_with(
    locator: &QueueLocator,
    queue: QueueName,
    max: usize,
    mode: ProgressMode,
    show_body: bool,
) -> Result<DlqListing, OpsError> {
    let dlq_url = locator.dlq_url(queue).await?;
    peek_listing(locator, dlq_url, queue, max, mode, show_body).await
}

/// A peek of any queue (`queue move`'s source), its bodies checked against `queue`'s contract
/// and redacted.
pub async fn list_from(
    locator: &QueueLocator,
    url: &str,
    queue: QueueName,
    max: usize,
) -> Result<DlqListing, OpsError> {
    peek_listing(locator, url.to_owned(), queue, max, ProgressMode::Hidden, false).await
}

async fn peek_listing(
    locator: &QueueLocator,
    dlq_url: String,
    queue: QueueName,
    max: usize,
    mode: ProgressMode,
    show_body: bool,
) -> Result<DlqListing, OpsError> {
    let approximate = approximate_visible(locator, &dlq_url).await?;
    let bar = mode.bar(approximate.map(|n| n.min(max as u64)), format!("reading {queue} DLQ"));
    let (messages, truncated) = peek(locator.client(), &dlq_url, max, &bar, |_| false).await?;
    bar.finish_and_clear();
    let messages = messages.iter().map(|m| DlqMessage::from_sqs_with(queue, m, show_body)).collect();
    Ok(DlqListing { queue, dlq_url, approximate_visible: approximate, messages, truncated, next: None })
}

/// How many messages `dlq show` reads at most while looking for one id.
pub const SHOW_SCAN_LIMIT: usize = 10_000;

/// `dlq show <queue> <messageId>`.
pub async fn show(
    locator: &QueueLocator,
    queue: QueueName,
    message_id: &str,
    mode: ProgressMode,
) -> Result<DlqShow, OpsError> {
    show_with(locator, queue, message_id, mode, false).await
}

/// `dlq show`, with the body whole when `show_body`.
pub async fn show_with(
    locator: &QueueLocator,
    queue: QueueName,
    message_id: &str,
    mode: ProgressMode,
    show_body: bool,
) -> Result<DlqShow, OpsError> {
    let dlq_url = locator.dlq_url(queue).await?;
    let bar = mode.bar(None, format!("searching {queue} DLQ"));
    let (messages, _) =
        peek(locator.client(), &dlq_url, SHOW_SCAN_LIMIT, &bar, |m| m.message_id() == Some(message_id)).await?;
    bar.finish_and_clear();
    let found = messages.iter().find(|m| m.message_id() == Some(message_id)).ok_or_else(|| {
        OpsError::NotFound(format!(
            "message {message_id} is not in the {queue} DLQ ({} message(s) looked at; it may have been redriven, expired, or be held by another reader)",
            messages.len()
        ))
    })?;
    Ok(DlqShow { queue, dlq_url, message: DlqMessage::from_sqs_with(queue, found, show_body), report: None })
}

/// The result of `dlq delete`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DlqDelete {
    pub queue: QueueName,
    pub dlq_url: String,
    /// The message that was deleted (body redacted).
    pub message: DlqMessage,
}

impl DlqDelete {
    pub fn human(&self) -> String {
        format!(
            "deleted {} from the {} DLQ ({}): it will not be processed\n{}",
            self.message.message_id,
            self.queue,
            self.dlq_url,
            self.message.human()
        )
    }
}

/// `dlq delete <queue> <messageId>`: finds the message as `show` does and deletes it with the
/// receipt handle of that receive (the only way SQS deletes); every other message seen is
/// released at once. Not found: an error, nothing deleted.
pub async fn delete(
    locator: &QueueLocator,
    queue: QueueName,
    message_id: &str,
    mode: ProgressMode,
) -> Result<DlqDelete, OpsError> {
    let dlq_url = locator.dlq_url(queue).await?;
    let client = locator.client();
    let bar = mode.bar(None, format!("searching {queue} DLQ"));
    let mut seen = HashSet::new();
    let mut held = Vec::new();
    let mut found: Option<Message> = None;
    let result = async {
        while found.is_none() && seen.len() < SHOW_SCAN_LIMIT {
            let batch = receive(client, &dlq_url, RECEIVE_BATCH, PEEK_HOLD, Duration::from_secs(1)).await?;
            let mut fresh = 0;
            for m in batch {
                if m.message_id() == Some(message_id) && found.is_none() {
                    found = Some(m);
                    continue;
                }
                if let Some(handle) = m.receipt_handle() {
                    held.push(handle.to_owned());
                }
                if seen.insert(m.message_id().unwrap_or_default().to_owned()) {
                    fresh += 1;
                    bar.inc(1);
                }
            }
            if fresh == 0 && found.is_none() {
                break;
            }
        }
        if let Some(m) = &found {
            client
                .delete_message()
                .queue_url(&dlq_url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await
                .map_err(|e| OpsError::sqs("DeleteMessage", &dlq_url, e))?;
        }
        Ok::<_, OpsError>(())
    }
    .await;
    bar.finish_and_clear();
    release(client, &dlq_url, &held).await;
    result?;
    let m = found.ok_or_else(|| {
        OpsError::NotFound(format!(
            "message {message_id} is not in the {queue} DLQ ({} other message(s) looked at); nothing was deleted",
            seen.len()
        ))
    })?;
    Ok(DlqDelete { queue, dlq_url, message: DlqMessage::from_sqs(queue, &m) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{FunctionMetrics, QueueStatus, Verdict};

    fn status(verdict: Verdict, cause: &str, metrics: Option<FunctionMetrics>) -> QueueStatus {
        QueueStatus::example(sophia_declarations::Queue::InterviewCompleted, verdict, cause, metrics)
    }

    #[test]
    fn a_dlq_message_reason_reads_the_function_errors_not_the_dlq_itself() {
        let dlq = "1 message(s) in the DLQ, each needs a person (dlq list, then dlq show <messageId>)";
        // The DLQ is the verdict's cause, and no error is left in the window: redrive it.
        let quiet = FunctionMetrics { invocations: 3, records_failed: Some(0), ..FunctionMetrics::default() };
        let now = errors_now(&status(Verdict::NeedsPerson, dlq, Some(quiet)));
        assert!(now.0);
        assert_eq!(
            now.1,
            "the function ran 3 time(s) without an error in the last 15m: what failed it has passed; redrive it (dlq redrive)"
        );
        // No traffic, no error: not evidence. MongoDB asked, and the last cause, decide.
        let idle = FunctionMetrics { records_failed: Some(0), ..FunctionMetrics::default() };
        let mut s = status(Verdict::NeedsPerson, dlq, Some(idle));
        let (passed, now) = errors_now(&s);
        assert!(!passed, "{now}");
        assert!(
            now.starts_with("unknown whether it has passed: no invocation in the last 15m")
                && now.ends_with("check: set MONGODB_URI and run queue status interview-completed (it asks MongoDB)"),
            "{now}"
        );
        s.mongodb = crate::status::MongoNow::Reachable;
        s.last_cause = Some("batch setup failed; the whole batch will be retried: MongoDB (at 18:02)".into());
        let (passed, now) = errors_now(&s);
        assert!(!passed, "MongoDB answering this machine is not the functions reaching it: {now}");
        assert!(
            now.contains("MongoDB reachable now; the last known cause: batch setup failed")
                && now.contains("check: MongoDB answers from here, not necessarily from the functions"),
            "{now}"
        );
        let failing = FunctionMetrics {
            invocations: 2,
            errors: 2,
            last_error: Some("batch setup failed: MongoDB unreachable".into()),
            ..FunctionMetrics::default()
        };
        let (passed, now) = errors_now(&status(Verdict::Failing, &format!("x; also {dlq}"), Some(failing)));
        assert!(!passed);
        assert!(now.starts_with("the function's errors now: batch setup failed: MongoDB unreachable"), "{now}");
        let (passed, unknown) = errors_now(&status(Verdict::NeedsPerson, dlq, None));
        assert!(!passed, "unknown errors are not no errors");
        assert!(unknown.starts_with("the function's errors could not be read (the metrics API refused)"), "{unknown}");
    }

    fn message(id: &str, contract_error: Option<&str>) -> DlqMessage {
        DlqMessage {
            message_id: id.into(),
            receive_count: Some(4),
            sent_at: None,
            event_type: None,
            request_id: None,
            attributes: BTreeMap::new(),
            body: String::new(),
            body_redacted: true,
            interview_id: None,
            contract_error: contract_error.map(str::to_owned),
            reason: None,
        }
    }

    #[test]
    fn dlq_list_ends_with_the_next_command() {
        let mut listing = DlqListing {
            queue: crate::queues::QueueName::of(sophia_declarations::Queue::InterviewCompleted),
            dlq_url: "http://dlq".into(),
            approximate_visible: Some(2),
            messages: vec![message("m-1", None), message("m-2", None)],
            truncated: false,
            next: None,
        };
        assert_eq!(next_step(&listing, true).as_deref(), Some("dlq redrive interview-completed"));
        assert_eq!(next_step(&listing, false).as_deref(), Some("dlq show interview-completed m-1"));
        listing.messages.push(message("m-3", Some("organizationId missing")));
        assert_eq!(
            next_step(&listing, true).as_deref(),
            Some("dlq show interview-completed m-3"),
            "a message that can never succeed is looked at before any redrive"
        );
        listing.next = Some("sophia-ops --stage dev dlq show interview-completed m-3".into());
        assert!(listing.human().ends_with("  next: sophia-ops --stage dev dlq show interview-completed m-3\n"));
        listing.messages.clear();
        assert_eq!(next_step(&listing, true), None);
    }
}
