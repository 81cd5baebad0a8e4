//! Read-only listings that need no id: `interview unsettled` (reservations no settlement has
//! released) and `report failures` (reports with failed attempts). Identifiers, numbers, statuses
//! and dates only.

use std::time::Duration;

use bson::{Bson, Document, doc};
use futures::TryStreamExt;
use serde::Serialize;
use sophia_contracts::OrganizationId;
use sophia_credits::model::INTERVIEWS;
use sophia_reports::store::INTERVIEW_REPORTS;

use crate::confirm::{number, text};
use crate::duration_text::human_duration;
use crate::report_failure::FailureState;
use crate::{Context, OpsError};

/// A numeric comparison that matches Int32, Int64 and double alike (nx-27017, the local server,
/// compares numbers within one BSON type only).
fn any_number(op: &str, n: i64) -> Bson {
    let alternatives: Vec<Document> =
        vec![doc! {op: i32::try_from(n).unwrap_or(i32::MAX)}, doc! {op: n}, doc! {op: n as f64}];
    Bson::Array(alternatives.into_iter().map(Bson::Document).collect())
}

fn or_field(field: &str, op: &str, n: i64) -> Document {
    let Bson::Array(alts) = any_number(op, n) else { unreachable!() };
    doc! {"$or": alts.into_iter().map(|a| Bson::Document(doc! {field: a})).collect::<Vec<_>>()}
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unsettled {
    pub interview_id: String,
    pub organization_id: Option<String>,
    pub status: Option<String>,
    pub credits_reserved: Option<i64>,
    /// `createdAt`, else the ObjectId's time.
    pub created_at: Option<String>,
    pub age_seconds: Option<u64>,
    /// Why it is not settled: where its `interview.completed` is (a COMPLETED interview).
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsettledListing {
    pub organization_id: Option<OrganizationId>,
    pub interviews: Vec<Unsettled>,
    pub truncated: bool,
    /// The next command, written out (the oldest interview, this run's `--stage`).
    pub next: Option<String>,
    /// Why MongoDB was not read (it cannot be reached from here): then the listing is what the
    /// interview-completed queue and its DLQ say.
    pub mongo_error: Option<String>,
    /// `interview.completed` / `interview.failed` messages dropped as invalid over
    /// [`DROPS_WINDOW`]: their interviews keep their reservation.
    pub dropped: crate::status::DroppedRecords,
}

impl UnsettledListing {
    pub fn human(&self) -> String {
        if let Some(e) = &self.mongo_error {
            return self.human_from_queues(e);
        }
        let scope = self.organization_id.map_or("all organizations".into(), |o| format!("organization {o}"));
        let mut s = format!(
            "{} unsettled interview(s) holding a reservation ({scope}), oldest first{}\n",
            self.interviews.len(),
            if self.truncated { " (--limit reached)" } else { "" }
        );
        for i in &self.interviews {
            s.push_str(&format!(
                "  {}  age {:>8}  organization {}  reserved {}  status {}\n",
                i.interview_id,
                i.age_seconds.map_or("?".into(), human_duration),
                i.organization_id.as_deref().unwrap_or("-"),
                i.credits_reserved.map_or("?".into(), |n| n.to_string()),
                i.status.as_deref().unwrap_or("-"),
            ));
            if let Some(reason) = &i.reason {
                s.push_str(&format!("      {reason}\n"));
            }
        }
        s.push_str(&self.dropped.human("interview", DROPS_WINDOW.as_secs()));
        match &self.next {
            Some(next) => s.push_str(&format!("  next: {next}\n")),
            None if !self.interviews.is_empty() => s.push_str(
                "  next: nothing: every interview listed is still running and holds its reservation by design\n",
            ),
            None => {}
        }
        s
    }
}

impl UnsettledListing {
    /// MongoDB cannot be reached: the interviews are not listed; the DLQ's messages are, with
    /// their reasons (each names its interview).
    fn human_from_queues(&self, error: &str) -> String {
        let mut s = format!(
            "cannot list the unsettled interviews: MongoDB cannot be reached from here ({error}). From the queues: {} interview(s) named by the interview-completed DLQ\n",
            self.interviews.len()
        );
        for i in &self.interviews {
            s.push_str(&format!(
                "  {}  organization {}\n      {}\n",
                i.interview_id,
                i.organization_id.as_deref().unwrap_or("-"),
                i.reason.as_deref().unwrap_or("-")
            ));
        }
        if let Some(next) = &self.next {
            s.push_str(&format!("  next: {next}\n"));
        }
        s
    }
}

/// `interview unsettled` when MongoDB cannot be reached: the interview-completed DLQ's messages
/// (their interview and reason) and the queue's verdict.
async fn unsettled_from_queues(ctx: &Context, org: Option<OrganizationId>, error: &OpsError) -> UnsettledListing {
    let queue = crate::queues::QueueName::of(sophia_declarations::Queue::InterviewCompleted);
    let (messages, next) = match crate::status::queue_status(ctx, queue, Duration::from_secs(900)).await {
        Ok(s) => (crate::late::completed_messages(ctx, &s).await, without_mongodb_next(ctx, queue, s.dlq_visible)),
        Err(e) => (Default::default(), format!("the queue could not be read either: {e}")),
    };
    let interviews = messages
        .in_dlq
        .iter()
        .map(|(id, why)| Unsettled {
            interview_id: id.clone(),
            organization_id: None,
            status: None,
            credits_reserved: None,
            created_at: None,
            age_seconds: None,
            reason: Some(format!("its interview.completed is in the interview-completed DLQ: {why}")),
        })
        .collect();
    UnsettledListing {
        organization_id: org,
        interviews,
        truncated: false,
        next: Some(next),
        mongo_error: Some(error.to_string()),
        dropped: Default::default(),
    }
}

/// `interview unsettled [--org] [--older-than] [--limit]`.
pub async fn unsettled(
    ctx: &Context,
    org: Option<OrganizationId>,
    older_than: Option<Duration>,
    limit: i64,
) -> Result<UnsettledListing, OpsError> {
    let db = match ctx.mongo().await {
        Ok(m) => m.db,
        Err(e) => return Ok(unsettled_from_queues(ctx, org, &e).await),
    };
    let mut filter = doc! {"settledAt": Bson::Null, "deletedAt": Bson::Null};
    let mut and = vec![Bson::Document(or_field("credits.reserved", "$gt", 0))];
    if let Some(o) = org {
        filter.insert("organizationId", o.oid());
    }
    if let Some(age) = older_than {
        let before = bson::oid::ObjectId::from_bytes({
            let secs = (chrono::Utc::now().timestamp() - age.as_secs() as i64).max(0) as u32;
            let mut b = [0u8; 12];
            b[..4].copy_from_slice(&secs.to_be_bytes());
            b
        });
        and.push(Bson::Document(doc! {"_id": {"$lt": before}}));
    }
    filter.insert("$and", and);
    let docs: Vec<Document> = db
        .collection::<Document>(INTERVIEWS)
        .find(filter)
        // `credits` whole: nx-27017 returns a dotted projection as a flat key.
        .projection(doc! {"organizationId": 1, "status": 1, "credits": 1, "createdAt": 1})
        .sort(doc! {"_id": 1})
        .limit(limit + 1)
        .await
        .map_err(|e| OpsError::domain("listing unsettled interviews", e))?
        .try_collect()
        .await
        .map_err(|e| OpsError::domain("listing unsettled interviews", e))?;
    let truncated = docs.len() as i64 > limit;
    let now = chrono::Utc::now();
    let interviews: Vec<Unsettled> = docs
        .iter()
        .take(limit as usize)
        .map(|d| {
            let created = match d.get("createdAt") {
                Some(Bson::DateTime(t)) => Some(t.to_chrono()),
                _ => d.get_object_id("_id").ok().map(|o| o.timestamp().to_chrono()),
            };
            Unsettled {
                interview_id: d.get("_id").and_then(text).unwrap_or_default(),
                organization_id: d.get("organizationId").and_then(text),
                status: d.get("status").and_then(text),
                credits_reserved: d.get_document("credits").ok().and_then(|c| c.get("reserved")).and_then(number),
                created_at: created.map(|c| c.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                age_seconds: created.map(|c| (now - c).num_seconds().max(0) as u64),
                reason: None,
            }
        })
        .collect();
    let next = unsettled_next(ctx, &interviews);
    let mut listing = UnsettledListing {
        organization_id: org,
        interviews,
        truncated,
        next,
        mongo_error: None,
        dropped: Default::default(),
    };
    attach_reasons(ctx, &mut listing).await;
    Ok(listing)
}

/// The next command of `interview unsettled`: `interview show` of the oldest interview that
/// needs a look (one that ended: COMPLETED or FAILED, or soft-deleted), never of one still
/// running, which holds its reservation by design until it ends.
fn unsettled_next(ctx: &Context, interviews: &[Unsettled]) -> Option<String> {
    let ended = interviews.iter().find(|i| !holds_by_design(i.status.as_deref()))?;
    Some(format!(
        "{} (its DLQ messages, ledger, outbox)",
        ctx.ops_command(&format!("interview show {}", ended.interview_id))
    ))
}

/// An interview that has not ended (`IN_PROGRESS`, `SCHEDULED`, ...) holds its reservation until
/// its `interview.completed` or `interview.failed` settles it: nothing to act on.
fn holds_by_design(status: Option<&str>) -> bool {
    !matches!(status, Some("COMPLETED" | "FAILED") | None)
}

/// How far back `interview unsettled` lists the messages interview-completed dropped as invalid.
pub const DROPS_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The line under an interview that has not ended.
const RUNNING: &str = "not ended yet: it holds its reservation until its interview.completed or interview.failed settles it; nothing to do";

/// Why each COMPLETED interview is not settled ([`crate::late::where_unsettled`]); an interview
/// still `IN_PROGRESS` (or another status) holds its reservation by design until it ends.
async fn attach_reasons(ctx: &Context, listing: &mut UnsettledListing) {
    for i in listing.interviews.iter_mut().filter(|i| holds_by_design(i.status.as_deref())) {
        i.reason = Some(RUNNING.into());
    }
    let queue = crate::queues::QueueName::of(sophia_declarations::Queue::InterviewCompleted);
    let status = crate::status::queue_status(ctx, queue, DROPS_WINDOW).await;
    listing.dropped = match &status {
        Ok(s) => crate::status::DroppedRecords {
            count: s.metrics.as_ref().map_or(0, |m| m.dropped_invalid),
            messages: s.metrics.as_ref().map(|m| m.dropped.clone()).unwrap_or_default(),
            note: s.metrics.as_ref().and_then(|m| m.log_note.clone()).or(s.metrics_note.clone()),
        },
        Err(e) => crate::status::DroppedRecords { note: Some(e.to_string()), ..Default::default() },
    };
    if !listing.interviews.iter().any(|i| i.status.as_deref() == Some("COMPLETED")) {
        return;
    }
    let messages = match status {
        Ok(s) => crate::late::completed_messages(ctx, &s).await,
        Err(e) => {
            for i in &mut listing.interviews {
                i.reason = Some(format!("where its message is could not be read: {e}"));
            }
            return;
        }
    };
    for i in listing.interviews.iter_mut().filter(|i| i.status.as_deref() == Some("COMPLETED")) {
        i.reason = Some(crate::late::where_unsettled(&i.interview_id, &messages));
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub interview_id: String,
    pub organization_id: Option<String>,
    /// The stored `status` (`FAILED` of a report waiting for a retry included: see `state`).
    pub status: Option<String>,
    pub state: FailureState,
    pub error_kind: Option<String>,
    pub attempts: Option<i64>,
    /// Failures that gave their attempt back (a provider or the database away: `rate_limited`,
    /// `server_error`, `timeout`, `database`), so an outage shows here with `attempts` at 0.
    pub transient_failures: Option<i64>,
    pub last_error_at: Option<String>,
    /// Where it is and what comes next (when the next delivery is due), in words.
    pub now: String,
    pub next_delivery: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailuresListing {
    pub since_seconds: u64,
    /// Needing an operator first, then waiting, then being retried; latest failure first within each.
    pub reports: Vec<Failure>,
    pub truncated: bool,
    /// Reports per error kind.
    pub by_kind: std::collections::BTreeMap<String, usize>,
    /// What happens to a report after a failure, from the code's own values.
    pub retry_schedule: RetrySchedule,
    /// The next command, written out (the first report listed, this run's `--stage`).
    pub next: Option<String>,
    /// `report.generate` messages dropped as invalid in the window: they leave no report state,
    /// only the consumer's log line (and `RecordsDroppedInvalid`).
    pub dropped: crate::status::DroppedRecords,
    /// The command that publishes a dropped request again, written out.
    pub republish: String,
    /// Why MongoDB was not read (it cannot be reached from here): then the listing is what the
    /// report-generate queue and its DLQ say (`from_queues`).
    pub mongo_error: Option<String>,
    /// Without MongoDB: each interview named by a report-generate DLQ message, with its reason.
    pub from_queues: Vec<(String, String)>,
}

/// The report queue's retry schedule, from the consumer's policy
/// (`sophia_sqs_consumer::backoff::policy_of`) and the declared queue: the runbook's timings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrySchedule {
    /// A transient failure (the provider or the database away): its attempt given back.
    pub transient: String,
    /// Any other failure: one of the report's attempts.
    pub other: String,
}

impl RetrySchedule {
    /// With the report queue's visibility timeout as declared.
    pub fn of_report_queue() -> Self {
        let q = sophia_declarations::Queue::ReportGenerate.settings();
        Self::with_visibility(Duration::from_secs(u64::from(q.visibility_timeout_seconds)))
    }

    /// With the report queue's visibility timeout as the stage has it.
    pub fn with_visibility(visibility: Duration) -> Self {
        use sophia_declarations::Queue;
        let q = Queue::ReportGenerate.settings();
        let schedule = sophia_sqs_consumer::backoff::policy_of(Queue::ReportGenerate).schedule(q.max_receive_count);
        let away: Vec<&str> = sophia_reports::ErrorKind::ALL
            .into_iter()
            .filter(|k| k.is_provider_away())
            .map(sophia_reports::ErrorKind::as_str)
            .collect();
        Self {
            transient: format!("{} gives its attempt back; {schedule}", away.join(", ")),
            other: format!(
                "any other kind counts one of the report's {} attempts and is delivered again after the queue's visibility timeout ({}); the last attempt's failure goes to the DLQ",
                sophia_reports::store::MAX_ATTEMPTS,
                sophia_sqs_consumer::backoff::words(visibility)
            ),
        }
    }
}

impl FailuresListing {
    /// Without MongoDB: what report-generate's DLQ says (each message names its interview).
    fn human_from_queues(&self, error: &str) -> String {
        let mut s = format!(
            "cannot list the reports: MongoDB cannot be reached from here ({error}); a report never started (each delivery failed before its claim) has no failure stored anyway. From the queues: {} interview(s) named by the report-generate DLQ\n",
            self.from_queues.len()
        );
        for (interview, why) in &self.from_queues {
            s.push_str(&format!("  {interview}\n      {why}\n"));
        }
        if let Some(next) = &self.next {
            s.push_str(&format!("  next: {next}\n"));
        }
        s
    }

    pub fn count(&self, state: FailureState) -> usize {
        self.reports.iter().filter(|r| r.state == state).count()
    }

    pub fn human(&self) -> String {
        if let Some(e) = &self.mongo_error {
            return self.human_from_queues(e);
        }
        let mut s = format!(
            "{} report(s) with failed attempts, not COMPLETED, in the last {}{}: {} need you, {} waiting for a retry, {} in flight\n",
            self.reports.len(),
            human_duration(self.since_seconds),
            if self.truncated { " (--limit reached: more not shown)" } else { "" },
            self.count(FailureState::NeedsYou),
            self.count(FailureState::WaitingForRetry),
            self.count(FailureState::RetryingNow),
        );
        s.push_str(&self.dropped.human("report.generate", self.since_seconds));
        if !self.by_kind.is_empty() {
            let kinds: Vec<String> = self.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
            s.push_str(&format!(
                "  by error kind: {} (what each means: docs/runbook.md#error-kinds)\n",
                kinds.join(", ")
            ));
        }
        for r in &self.reports {
            s.push_str(&format!(
                "  {:<19}  {}  organization {}  errorKind {}  {} attempt(s) of {}, {} transient failure(s)  last failed {}\n      {}\n",
                r.state.label(),
                r.interview_id,
                r.organization_id.as_deref().unwrap_or("-"),
                r.error_kind.as_deref().unwrap_or("-"),
                r.attempts.map_or("?".into(), |n| n.to_string()),
                sophia_reports::store::MAX_ATTEMPTS,
                r.transient_failures.unwrap_or(0),
                r.last_error_at.as_deref().unwrap_or("-"),
                r.now,
            ));
        }
        if !self.reports.is_empty() {
            s.push_str(&format!("  retries: {}\n", self.retry_schedule.transient));
            s.push_str(&format!("           {}\n", self.retry_schedule.other));
            if let Some(next) = &self.next {
                s.push_str(&format!("  next: {next} (lastError, lease, retries)\n"));
            }
        } else if self.dropped.count > 0 {
            s.push_str(&format!(
                "  next: fix the producer, then for each dropped request (its ids in the producer's logs or the consumer's bodyPreview): {}\n",
                self.republish
            ));
        }
        s
    }
}

/// `report failures [--since 24h] [--limit]`: reports not COMPLETED whose last failure is within
/// `since` (a COMPLETED report leaves the list, whatever it failed before).
pub async fn failures(ctx: &Context, since: Duration, limit: i64) -> Result<FailuresListing, OpsError> {
    let db = match ctx.mongo().await {
        Ok(m) => m.db,
        Err(e) => return Ok(failures_from_queues(ctx, since, &e).await),
    };
    let after = bson::DateTime::from_millis(
        chrono::Utc::now().timestamp_millis() - i64::try_from(since.as_millis()).unwrap_or(i64::MAX / 2),
    );
    let completed = sophia_reports::ReportStatus::Completed.as_str();
    let filter = doc! {
        // `$nin` rather than `$ne`: nx-27017 matches it as MongoDB does (tests/it/mongo_wire_gaps.rs).
        "status": {"$nin": [completed]},
        "lastErrorAt": {"$gte": after},
        // A failed attempt, or a transient failure that gave its attempt back (an outage).
        "$or": [or_field("attemptCount", "$gt", 0), or_field("transientFailures", "$gt", 0)],
    };
    let docs: Vec<Document> = db
        .collection::<Document>(INTERVIEW_REPORTS)
        .find(filter)
        .projection(crate::report_state::projection())
        .sort(doc! {"lastErrorAt": -1})
        .limit(limit + 1)
        .await
        .map_err(|e| OpsError::domain("listing failed reports", e))?
        .try_collect()
        .await
        .map_err(|e| OpsError::domain("listing failed reports", e))?;
    let truncated = docs.len() as i64 > limit;
    let visibility = crate::report_state::report_visibility(ctx).await;
    let now = bson::DateTime::now();
    let earliest = docs.iter().filter_map(|d| d.get_datetime("lastErrorAt").ok().copied()).min();
    let done = crate::report_state::latest_completion(&db, earliest).await;
    let mut reports: Vec<Failure> = docs
        .iter()
        .take(limit as usize)
        .filter(|d| d.get_str("status").ok() != Some(completed))
        .map(|d| {
            let mut state = crate::report_state::report_now(d, now, visibility);
            state.after_completion(done);
            let words = state.shown(ctx);
            Failure {
                interview_id: d.get("interviewId").and_then(text).unwrap_or_default(),
                organization_id: d.get("organizationId").and_then(text),
                state: state.state,
                status: d.get("status").and_then(text),
                error_kind: state.error_kind,
                attempts: d.get("attemptCount").and_then(number),
                transient_failures: d.get("transientFailures").and_then(number),
                last_error_at: d.get("lastErrorAt").and_then(text),
                now: words,
                next_delivery: state.next_delivery,
            }
        })
        .collect();
    // Stable: latest failure first within each state.
    reports.sort_by_key(|r| r.state);
    let mut by_kind = std::collections::BTreeMap::new();
    for r in &reports {
        *by_kind.entry(r.error_kind.clone().unwrap_or_else(|| "-".into())).or_insert(0) += 1;
    }
    let next = reports.first().map(|r| ctx.ops_command(&format!("interview show {}", r.interview_id)));
    Ok(FailuresListing {
        next,
        since_seconds: since.as_secs(),
        reports,
        truncated,
        by_kind,
        retry_schedule: RetrySchedule::with_visibility(visibility),
        dropped: crate::status::dropped_records(ctx, report_queue(), since).await,
        republish: ctx.ops_command("publish report <interviewId> <organizationId>"),
        mongo_error: None,
        from_queues: Vec::new(),
    })
}

/// `report failures` when MongoDB cannot be reached: the report-generate DLQ's messages (their
/// interview and reason), and a next step that does not lead back here or to `queue status`.
async fn failures_from_queues(ctx: &Context, since: Duration, error: &OpsError) -> FailuresListing {
    let queue = report_queue();
    let (from_queues, next) = match crate::status::queue_status(ctx, queue, Duration::from_secs(900)).await {
        Ok(s) => {
            let mut found: Vec<(String, String)> =
                crate::late::completed_messages(ctx, &s).await.in_dlq.into_iter().collect();
            found.sort();
            (found, without_mongodb_next(ctx, queue, s.dlq_visible))
        }
        Err(e) => (Vec::new(), format!("the queue could not be read either: {e}")),
    };
    FailuresListing {
        since_seconds: since.as_secs(),
        reports: Vec::new(),
        truncated: false,
        by_kind: Default::default(),
        retry_schedule: RetrySchedule::of_report_queue(),
        next: Some(next),
        dropped: Default::default(),
        republish: ctx.ops_command("publish report <interviewId> <organizationId>"),
        mongo_error: Some(error.to_string()),
        from_queues,
    }
}

/// The next step of a listing that could not read MongoDB: its DLQ when it holds messages, else
/// MongoDB's access first (the runbook's section): never `queue status`, whose next step for the
/// same outage is this listing.
pub fn without_mongodb_next(ctx: &Context, queue: crate::queues::QueueName, dlq: Option<u64>) -> String {
    match dlq {
        Some(n) if n > 0 => format!("{} ({n} message(s) there)", ctx.ops_command(&format!("dlq list {queue}"))),
        _ => "MongoDB's access from here first (docs/runbook.md#mongodb_uri; the functions': docs/runbook.md#function-errors): this listing needs it".into(),
    }
}

fn report_queue() -> crate::queues::QueueName {
    crate::queues::QueueName::of(sophia_declarations::Queue::ReportGenerate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_schedule_is_the_consumers() {
        let r = RetrySchedule::of_report_queue();
        assert!(
            r.transient.starts_with(
                "rate_limited, server_error, timeout, database gives its attempt back; visible again 30 s-1 min"
            ),
            "{}",
            r.transient
        );
        assert!(r.transient.contains("a copy is sent delayed 10 min"), "{}", r.transient);
        assert!(r.other.contains("one of the report's 3 attempts") && r.other.contains("(30 min)"), "{}", r.other);
    }

    fn interview(id: &str, status: &str) -> Unsettled {
        Unsettled {
            interview_id: id.into(),
            organization_id: None,
            status: Some(status.into()),
            credits_reserved: Some(10),
            created_at: None,
            age_seconds: None,
            reason: None,
        }
    }

    /// A running interview holds its reservation by design: never the next step.
    #[test]
    fn the_next_step_is_the_oldest_interview_that_ended() {
        let ctx = Context::new(crate::env::Env::from_pairs([("X", "y")]), Some("prod".into()), Default::default());
        let listed = [interview("a", "IN_PROGRESS"), interview("b", "SCHEDULED"), interview("c", "COMPLETED")];
        assert_eq!(
            unsettled_next(&ctx, &listed).as_deref(),
            Some("sophia-ops --stage prod interview show c (its DLQ messages, ledger, outbox)")
        );
        assert_eq!(unsettled_next(&ctx, &listed[..2]), None);
        let listing = UnsettledListing {
            organization_id: None,
            interviews: listed[..1].to_vec(),
            truncated: false,
            next: None,
            mongo_error: None,
            dropped: Default::default(),
        };
        assert!(
            listing.human().contains("  next: nothing: every interview listed is still running"),
            "{}",
            listing.human()
        );
        assert!(holds_by_design(Some("IN_PROGRESS")) && !holds_by_design(Some("FAILED")) && !holds_by_design(None));
    }
}
