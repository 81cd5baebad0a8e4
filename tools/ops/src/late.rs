//! `report late`: the first command of "reports are late" (docs/runbook.md#reports-are-late).
//! One answer from three looks, changing nothing; it receives nothing from a source queue, but
//! when the interview-completed DLQ holds messages it peeks at them (as `dlq list` does: each
//! look adds one to a message's receive count, harmless in a DLQ) to say which interview's
//! message is there and why:
//!
//! - the time to report of the reports completed in the window (the interview's `completedAt` to
//!   the report's `completedAt`), its percentile against the declared service level
//!   (declarations/metrics.json `serviceLevels`, the level the stage alarms on);
//! - what waits now: interviews that ended (`completedAt` within the lookback) without a COMPLETED
//!   report, by where they wait (settlement, report not started, report in a state);
//! - each queue's `queue status` verdict (stopped, failing, slow, a burst).
//!
//! The first line says where the time goes: a stopped or failing queue first (with its cause),
//! then interviews waiting past the level, then a level missed by reports already completed.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures::TryStreamExt;
use serde::Serialize;
use sophia_credits::model::INTERVIEWS;
use sophia_reports::store::INTERVIEW_REPORTS;
use sophia_sqs_consumer::metrics::{Declaration, Metric, ServiceLevel};

use crate::duration_text::human_duration;
use crate::queues::QueueName;
use crate::status::{self, Verdict};
use crate::{Context, OpsError};

/// At most this many interviews are looked at (the listing says when it stopped there).
pub const SCAN_LIMIT: i64 = 10_000;
/// Interviews that ended this long before the window are looked at too (a report still waiting).
pub const LOOKBACK: Duration = Duration::from_secs(24 * 3600);

/// One queue's verdict, as `queue status` gives it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueVerdict {
    pub queue: QueueName,
    pub verdict: Verdict,
    pub cause: Option<String>,
    pub evidence: Vec<String>,
}

/// Everything `report late` shows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LateReport {
    /// The first line: whether reports are late, and where the time goes.
    pub answer: String,
    pub late: bool,
    pub window_seconds: u64,
    /// e.g. `p95 <= 15 min`.
    pub level: String,
    pub level_threshold_ms: u64,
    /// Reports completed in the window, and their time to report (ms).
    pub completed: usize,
    pub p50_ms: Option<f64>,
    /// The level's percentile.
    pub level_percentile_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Interviews that ended without a COMPLETED report, by where they wait.
    pub waiting: BTreeMap<String, usize>,
    pub oldest_waiting_seconds: Option<u64>,
    pub truncated: bool,
    pub queues: Vec<QueueVerdict>,
    /// The next command, written out.
    pub next: String,
    /// Why MongoDB was not read (it cannot be reached from here): then only the queues speak.
    pub mongo_error: Option<String>,
}

/// Where the `interview.completed` messages are: the interview ids in its DLQ (with why each is
/// there), and how many messages its queue holds (visible, in flight, delayed).
#[derive(Debug, Clone, Default)]
pub struct CompletedMessages {
    pub in_dlq: HashMap<String, String>,
    pub in_queue: u64,
}

/// Where the `interview.completed` of an interview not settled is, and why it is not settled:
/// the one answer of `report late` and `interview unsettled`.
pub fn where_unsettled(interview_id: &str, messages: &CompletedMessages) -> String {
    if let Some(why) = messages.in_dlq.get(interview_id) {
        format!("not settled: its interview.completed is in the interview-completed DLQ: {why}")
    } else if messages.in_queue > 0 {
        // SQS has no look into a source queue without receiving: whether it is one of them is
        // not known here.
        format!(
            "not settled: its interview.completed is not in the interview-completed DLQ; interview-completed holds {} message(s) (visible, in flight or delayed): it may be one of them, or it was never published, lost, or dropped as invalid (interview show; the log by interviewId)",
            messages.in_queue
        )
    } else {
        "not settled: its interview.completed is in neither interview-completed nor its DLQ: never published, lost, or dropped by the consumer as invalid (its log says why); interview show, then publish completed".into()
    }
}

/// Where an interview without a COMPLETED report waits (the report's part is
/// [`crate::report_state::report_now`]'s).
fn stage_of(
    interview: &Document,
    report: Option<&Document>,
    messages: &CompletedMessages,
    visibility: Duration,
) -> String {
    if !matches!(interview.get("settledAt"), Some(Bson::DateTime(_))) {
        let id = interview.get_object_id("_id").map(|o| o.to_hex()).unwrap_or_default();
        return where_unsettled(&id, messages);
    }
    match report {
        None => {
            "settled, report not started (its report.generate is in report-generate or its DLQ, or was never published)"
                .into()
        }
        Some(r) => {
            let now = crate::report_state::report_now(r, bson::DateTime::now(), visibility);
            if now.state == crate::report_failure::FailureState::NotStarted {
                return format!("settled, report {}", now.words);
            }
            let status = r.get_str("status").unwrap_or("unknown");
            let kind = now.error_kind.as_deref().map_or(String::new(), |k| format!(" after {k}"));
            format!("report {status}{kind}: {}", now.state.label())
        }
    }
}

/// Whether a report needs nothing more: the one report state's answer (COMPLETED, or ERASED:
/// nothing generates it again), not a status compared here.
fn done(report: &Document, visibility: Duration) -> bool {
    crate::report_state::report_now(report, bson::DateTime::now(), visibility).state
        == crate::report_failure::FailureState::Done
}

fn millis(d: &Document, field: &str) -> Option<i64> {
    match d.get(field) {
        Some(Bson::DateTime(t)) => Some(t.timestamp_millis()),
        _ => None,
    }
}

/// Why a queue makes reports late, when it does: stopped, failing, a DLQ or stranded reports,
/// throttled, retrying.
fn queue_reason(q: &QueueVerdict) -> Option<String> {
    let cause = || q.cause.clone().unwrap_or_else(|| format!("see `queue status {}`", q.queue));
    match q.verdict {
        Verdict::Stopped => {
            // The line that says why (the mapping, or no invocation), not the retention line
            // that may follow it.
            let why = q.evidence.iter().find(|e| e.contains("mapping") || e.contains("not invoked"));
            let detail = q.cause.clone().or_else(|| why.or(q.evidence.last()).cloned()).unwrap_or_default();
            Some(format!("{} is stopped: {detail}", q.queue))
        }
        Verdict::Failing => Some(format!("{} is failing: {}", q.queue, cause())),
        Verdict::NeedsPerson => Some(format!("{} needs a person: {}", q.queue, cause())),
        Verdict::Slow => Some(format!("{} is throttled (see `queue status {}`)", q.queue, q.queue)),
        Verdict::Retrying => Some(format!("{} is retrying: {}", q.queue, cause())),
        _ => None,
    }
}

/// The first line, from the facts (no I/O). "on time" only when no queue is stopped, failing,
/// retrying or holding messages in its DLQ, no report needs a person, and nothing waits past the
/// level.
pub fn answer(
    level: &ServiceLevel,
    queues: &[QueueVerdict],
    waiting: usize,
    oldest_waiting_seconds: Option<u64>,
    completed: usize,
    level_percentile_ms: Option<f64>,
) -> (bool, String) {
    let waits_past_level = oldest_waiting_seconds.is_some_and(|s| s * 1000 > level.threshold_ms);
    if let Some(why) = queues.iter().find_map(queue_reason) {
        return (true, format!("reports are late: {why}"));
    }
    if let Some(q) = queues.iter().find(|q| q.verdict == Verdict::Burst) {
        return (
            true,
            format!(
                "reports are late: {} is in a burst: more arrived than its concurrency drains; they wait their turn",
                q.queue
            ),
        );
    }
    if waits_past_level {
        return (
            true,
            format!(
                "reports are late: {waiting} interview(s) ended without a report, the oldest {} ago (over the level, {}), while both queues run",
                human_duration(oldest_waiting_seconds.unwrap_or(0)),
                level.human()
            ),
        );
    }
    let recovering = queues.iter().find(|q| q.verdict == Verdict::Recovering).map(|q| {
        format!("; {} failed in the window ({}), nothing of it waits now", q.queue, q.cause.as_deref().unwrap_or("-"))
    });
    let waits = if waiting > 0 { format!("; {waiting} waiting, none past the level") } else { String::new() };
    match level_percentile_ms {
        Some(p) if !level.met_by(p) => (
            true,
            format!(
                "reports were late: the {} of the {completed} report(s) completed in the window is {}, over the level ({}); nothing is stopped or failing now (the time went to an outage now over, or OpenAI's latency: the dashboard's model latency)",
                level.statistic,
                human_duration((p / 1000.0) as u64),
                level.human()
            ),
        ),
        _ if recovering.is_some() => {
            (false, format!("reports are not late now{}{waits}", recovering.unwrap_or_default()))
        }
        Some(p) => (
            false,
            format!(
                "reports are on time: the {} of the {completed} report(s) completed in the window is {} (level {}){waits}",
                level.statistic,
                human_duration((p / 1000.0) as u64),
                level.human(),
            ),
        ),
        None if waiting > 0 => (false, format!("reports are on time: no report completed in the window{waits}")),
        None => (false, "reports are on time: no report completed in the window; nothing waits".into()),
    }
}

/// `report late [--since 1h]`.
pub async fn late(ctx: &Context, since: Duration) -> Result<LateReport, OpsError> {
    let level = Declaration::embedded().service_level(Metric::TimeToReportMs).cloned().ok_or_else(|| {
        OpsError::Invalid("declarations/metrics.json declares no time-to-report service level".into())
    })?;
    let now = bson::DateTime::now().timestamp_millis();
    let window_start = now - since.as_millis() as i64;
    let (queues, messages, visibility) = queue_verdicts(ctx).await?;
    let db = match ctx.mongo().await {
        Ok(m) => m.db,
        Err(e) => return Ok(without_mongo(ctx, &level, since, queues, &messages, &e)),
    };
    let (interviews, reports) = interviews_and_reports(&db, window_start - LOOKBACK.as_millis() as i64).await?;
    let truncated = interviews.len() as i64 > SCAN_LIMIT;
    let mut samples = Vec::new();
    let mut waiting: BTreeMap<String, usize> = BTreeMap::new();
    let mut oldest_waiting: Option<i64> = None;
    for i in interviews.iter().take(SCAN_LIMIT as usize) {
        let (Ok(id), Some(ended)) = (i.get_object_id("_id"), millis(i, "completedAt")) else { continue };
        let report = reports.get(&id);
        match report.filter(|r| done(r, visibility)) {
            Some(r) => {
                if let Some(stored) = millis(r, "completedAt").filter(|t| *t >= window_start) {
                    samples.push((stored - ended).max(0) as f64);
                }
            }
            None => {
                *waiting.entry(stage_of(i, report, &messages, visibility)).or_default() += 1;
                oldest_waiting = Some(oldest_waiting.map_or(ended, |o| o.min(ended)));
            }
        }
    }
    let oldest_waiting_seconds = oldest_waiting.map(|t| ((now - t).max(0) / 1000) as u64);
    let waiting_total = waiting.values().sum();
    let level_percentile_ms = level.measure(&samples);
    let (late, answer) =
        answer(&level, &queues, waiting_total, oldest_waiting_seconds, samples.len(), level_percentile_ms);
    let next = next_command(ctx, &queues, &waiting);
    Ok(LateReport {
        answer,
        late,
        window_seconds: since.as_secs(),
        level: level.human(),
        level_threshold_ms: level.threshold_ms,
        completed: samples.len(),
        p50_ms: sophia_sqs_consumer::metrics::percentile(&samples, 0.5),
        level_percentile_ms,
        max_ms: samples.iter().copied().reduce(f64::max),
        waiting,
        oldest_waiting_seconds,
        truncated,
        next,
        queues,
        mongo_error: None,
    })
}

/// Each queue's verdict, where the `interview.completed` messages are, and the report queue's
/// visibility timeout as the stage has it.
async fn queue_verdicts(ctx: &Context) -> Result<(Vec<QueueVerdict>, CompletedMessages, Duration), OpsError> {
    let mut queues = Vec::new();
    let mut messages = CompletedMessages::default();
    let mut visibility = sophia_reports::claim::lease();
    for queue in QueueName::all() {
        let s = status::queue_status(ctx, queue, Duration::from_secs(900)).await?;
        if queue.holds_report_attempts() {
            visibility = s.visibility_timeout_seconds.map_or(visibility, Duration::from_secs);
        } else {
            messages = completed_messages(ctx, &s).await;
        }
        queues.push(QueueVerdict { queue, verdict: s.verdict, cause: s.cause, evidence: s.evidence });
    }
    Ok((queues, messages, visibility))
}

/// `report late` when MongoDB cannot be reached from here: what the queues say (their verdicts,
/// the interview-completed DLQ's messages and reasons), and that the interviews and reports
/// could not be read. Never "on time".
fn without_mongo(
    ctx: &Context,
    level: &ServiceLevel,
    since: Duration,
    queues: Vec<QueueVerdict>,
    messages: &CompletedMessages,
    error: &OpsError,
) -> LateReport {
    let queue_part = queues.iter().find_map(queue_reason).unwrap_or_else(|| {
        "no queue is stopped, failing or holding DLQ messages (what waits in MongoDB is not known)".into()
    });
    let answer = format!(
        "cannot tell whether reports are late: MongoDB cannot be reached from here ({error}); the interviews and reports are not read. From the queues: {queue_part}"
    );
    let mut waiting = BTreeMap::new();
    for (id, why) in &messages.in_dlq {
        waiting.insert(format!("interview {id}: its interview.completed is in the interview-completed DLQ: {why}"), 1);
    }
    let next = match queues.iter().find(|q| q.verdict != Verdict::Healthy) {
        Some(q) => ctx.ops_command(&format!("queue status {}", q.queue)),
        None => "reach MongoDB from here first (docs/runbook.md#mongodb_uri: the URI, the Atlas access list), then run it again".into(),
    };
    LateReport {
        answer,
        late: true,
        window_seconds: since.as_secs(),
        level: level.human(),
        level_threshold_ms: level.threshold_ms,
        completed: 0,
        p50_ms: None,
        level_percentile_ms: None,
        max_ms: None,
        waiting,
        oldest_waiting_seconds: None,
        truncated: false,
        queues,
        next,
        mongo_error: Some(error.to_string()),
    }
}

/// The first command after `report late`: the first queue that is not healthy, else the reports
/// that need a person, else the interviews that wait (or, nothing waiting, the unsettled ones).
fn next_command(ctx: &Context, queues: &[QueueVerdict], waiting: &BTreeMap<String, usize>) -> String {
    ctx.ops_command(&next_step(queues, waiting))
}

/// [`next_command`] without the program and the stage.
fn next_step(queues: &[QueueVerdict], waiting: &BTreeMap<String, usize>) -> String {
    if let Some(q) = queues.iter().find(|q| q.verdict != Verdict::Healthy) {
        return format!("queue status {}", q.queue);
    }
    let reports_wait = waiting.keys().any(|k| k.starts_with("report ") || k.starts_with("settled"));
    if waiting.keys().any(|k| k.contains("NEEDS YOU"))
        || (reports_wait && !waiting.keys().any(|k| k.starts_with("not settled")))
    {
        return "report failures".into();
    }
    "interview unsettled".into()
}

/// The interviews that ended since `lookback_start` (at most [`SCAN_LIMIT`] + 1) and their
/// reports, by interview.
async fn interviews_and_reports(
    db: &mongodb::Database,
    lookback_start: i64,
) -> Result<(Vec<Document>, HashMap<bson::oid::ObjectId, Document>), OpsError> {
    let fail = |e| OpsError::domain("reading interviews for the time to report", e);
    let interviews: Vec<Document> = db
        .collection::<Document>(INTERVIEWS)
        .find(doc! {"status": "COMPLETED", "deletedAt": Bson::Null, "completedAt": {"$gte": bson::DateTime::from_millis(lookback_start)}})
        .projection(doc! {"completedAt": 1, "settledAt": 1})
        .limit(SCAN_LIMIT + 1)
        .await
        .map_err(fail)?
        .try_collect()
        .await
        .map_err(fail)?;
    let ids: Vec<Bson> = interviews.iter().filter_map(|d| d.get_object_id("_id").ok()).map(Bson::ObjectId).collect();
    let fail = |e| OpsError::domain("reading reports for the time to report", e);
    let mut projection = crate::report_state::projection();
    projection.insert("completedAt", 1);
    let reports = db
        .collection::<Document>(INTERVIEW_REPORTS)
        .find(doc! {"interviewId": {"$in": ids}})
        .projection(projection)
        .await
        .map_err(fail)?
        .try_collect::<Vec<Document>>()
        .await
        .map_err(fail)?
        .into_iter()
        .filter_map(|r| Some((r.get_object_id("interviewId").ok()?, r)))
        .collect();
    Ok((interviews, reports))
}

/// Where the `interview.completed` messages are, from `queue status interview-completed` and a
/// peek at its DLQ (with each message's reason) when it holds any.
pub async fn completed_messages(ctx: &Context, s: &status::QueueStatus) -> CompletedMessages {
    let in_queue = s.visible.unwrap_or(0) + s.in_flight.unwrap_or(0) + s.delayed.unwrap_or(0);
    let mut in_dlq = HashMap::new();
    if s.dlq_visible.unwrap_or(0) > 0 {
        let listing = crate::dlq_messages::list(
            &ctx.locator().await,
            s.queue,
            crate::interview_state::DEFAULT_DLQ_SCAN,
            crate::progress::ProgressMode::Hidden,
        )
        .await;
        if let Ok(mut listing) = listing {
            crate::dlq_messages::attach_reasons(&mut listing, ctx).await;
            for m in listing.messages {
                let why = m
                    .attributes
                    .get(sophia_sqs_consumer::queue::DEAD_LETTER_REASON)
                    .cloned()
                    .or(m.reason)
                    .unwrap_or_else(|| format!("see dlq list {}", s.queue));
                if let Some(id) = m.interview_id {
                    in_dlq.insert(id, format!("message {}: {why}", m.message_id));
                }
            }
        }
    }
    CompletedMessages { in_dlq, in_queue }
}

impl LateReport {
    pub fn human(&self) -> String {
        let mut s = format!("{}\n", self.answer);
        match &self.mongo_error {
            Some(_) => s.push_str(&self.human_from_queues()),
            None => s.push_str(&self.human_from_mongo()),
        }
        for q in &self.queues {
            s.push_str(&format!(
                "  queue {}: {}{}\n",
                q.queue,
                q.verdict.as_str(),
                q.cause.as_ref().map_or(String::new(), |c| format!(": {c}"))
            ));
        }
        s.push_str(&format!("  next: {}\n", self.next));
        s
    }

    /// Without MongoDB: the interviews the interview-completed DLQ names, nothing else.
    fn human_from_queues(&self) -> String {
        let mut s = format!(
            "  time to report and waiting interviews: not read (MongoDB cannot be reached); {} interview(s) named by the interview-completed DLQ:\n",
            self.waiting.len()
        );
        for line in self.waiting.keys() {
            s.push_str(&format!("    {line}\n"));
        }
        s
    }

    fn human_from_mongo(&self) -> String {
        let t = |ms: Option<f64>| ms.map_or("-".into(), |ms| human_duration((ms / 1000.0) as u64));
        let mut s = String::new();
        s.push_str(&format!(
            "  time to report (interview end -> report stored), {} report(s) completed in the last {}: p50 {}, {} {}, max {} (level {})\n",
            self.completed,
            human_duration(self.window_seconds),
            t(self.p50_ms),
            self.level.split(' ').next().unwrap_or("p95"),
            t(self.level_percentile_ms),
            t(self.max_ms),
            self.level,
        ));
        let waiting: usize = self.waiting.values().sum();
        s.push_str(&format!(
            "  waiting: {waiting} interview(s) ended without a stored report{}{}\n",
            self.oldest_waiting_seconds.map_or(String::new(), |o| format!(", the oldest {} ago", human_duration(o))),
            if self.truncated { format!(" (only the first {SCAN_LIMIT} interviews looked at)") } else { String::new() }
        ));
        for (stage, n) in &self.waiting {
            s.push_str(&format!("    {n} {stage}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level() -> ServiceLevel {
        Declaration::embedded().service_level(Metric::TimeToReportMs).unwrap().clone()
    }

    fn q(queue: sophia_declarations::Queue, verdict: Verdict, cause: Option<&str>) -> QueueVerdict {
        QueueVerdict {
            queue: QueueName::of(queue),
            verdict,
            cause: cause.map(str::to_owned),
            evidence: vec!["the event source mapping u-1 is Disabled (USER_INITIATED): nothing receives".into()],
        }
    }

    #[test]
    fn the_answer_names_where_the_time_goes_stopped_and_failing_first() {
        use sophia_declarations::Queue::{InterviewCompleted, ReportGenerate};
        let healthy = q(InterviewCompleted, Verdict::Healthy, None);
        let (late, a) =
            answer(&level(), &[healthy.clone(), q(ReportGenerate, Verdict::Stopped, None)], 2, Some(60), 0, None);
        assert!(late);
        assert_eq!(
            a,
            "reports are late: report-generate is stopped: the event source mapping u-1 is Disabled (USER_INITIATED): nothing receives"
        );
        let (_, a) = answer(
            &level(),
            &[q(InterviewCompleted, Verdict::Failing, Some("MongoDB unreachable")), healthy.clone()],
            2,
            Some(60),
            0,
            None,
        );
        assert_eq!(a, "reports are late: interview-completed is failing: MongoDB unreachable");
        let dlq = q(ReportGenerate, Verdict::NeedsPerson, Some("2 message(s) in the DLQ"));
        let (late, a) = answer(&level(), &[healthy.clone(), dlq], 0, None, 4, Some(60_000.0));
        assert!(late, "never on time while a DLQ holds messages");
        assert_eq!(a, "reports are late: report-generate needs a person: 2 message(s) in the DLQ");
        let both = [healthy.clone(), q(ReportGenerate, Verdict::Healthy, None)];
        let (late, a) = answer(&level(), &both, 3, Some(1200), 0, None);
        assert!(late && a.contains("the oldest 20m ago (over the level, p95 <= 15 min)"), "{a}");
        let (late, a) = answer(&level(), &both, 0, None, 4, Some(1_200_000.0));
        assert!(
            late && a.starts_with("reports were late: the p95 of the 4 report(s) completed in the window is 20m"),
            "{a}"
        );
        let (late, a) = answer(&level(), &both, 0, None, 4, Some(60_000.0));
        assert!(!late);
        assert_eq!(
            a,
            "reports are on time: the p95 of the 4 report(s) completed in the window is 1m (level p95 <= 15 min)"
        );
    }

    #[test]
    fn an_interview_waits_at_its_settlement_its_report_request_or_its_report() {
        let ended = doc! {"completedAt": bson::DateTime::now()};
        let none = CompletedMessages::default();
        let v = Duration::from_secs(60);
        assert!(stage_of(&ended, None, &none, v).contains("never published, lost, or dropped"));
        let settled = doc! {"completedAt": bson::DateTime::now(), "settledAt": bson::DateTime::now()};
        assert!(stage_of(&settled, None, &none, v).starts_with("settled, report not started"));
        let report = doc! {"_id": bson::oid::ObjectId::new(), "interviewId": bson::oid::ObjectId::new(),
        "status": "FAILED", "errorKind": "rate_limited", "waitingForRetry": true};
        assert_eq!(
            stage_of(&settled, Some(&report), &none, v),
            "report FAILED after rate_limited: waiting for a retry"
        );
        let out = doc! {"_id": bson::oid::ObjectId::new(), "interviewId": bson::oid::ObjectId::new(),
        "status": "FAILED", "errorKind": "invalid_output", "attemptCount": 3};
        assert_eq!(stage_of(&settled, Some(&out), &none, v), "report FAILED after invalid_output: NEEDS YOU");
    }

    #[test]
    fn the_next_step_is_a_command_never_a_doc_link() {
        use sophia_declarations::Queue::{InterviewCompleted, ReportGenerate};
        let healthy = [q(InterviewCompleted, Verdict::Healthy, None), q(ReportGenerate, Verdict::Healthy, None)];
        let mut waiting = BTreeMap::new();
        assert_eq!(next_step(&healthy, &waiting), "interview unsettled");
        waiting.insert("not settled: its interview.completed waits in interview-completed".to_owned(), 1);
        assert_eq!(next_step(&healthy, &waiting), "interview unsettled");
        waiting.insert("report FAILED after invalid_output: NEEDS YOU".to_owned(), 1);
        assert_eq!(next_step(&healthy, &waiting), "report failures");
        let failing = [q(InterviewCompleted, Verdict::Healthy, None), q(ReportGenerate, Verdict::Failing, None)];
        assert_eq!(next_step(&failing, &waiting), "queue status report-generate");
    }

    #[test]
    fn an_erased_report_is_done_not_late() {
        let of = |status: &str| doc! {"_id": bson::oid::ObjectId::new(), "interviewId": bson::oid::ObjectId::new(), "status": status};
        let v = Duration::from_secs(60);
        assert!(done(&of("ERASED"), v), "an erased report is never generated again: not waiting");
        assert!(done(&of("COMPLETED"), v));
        assert!(!done(&of("NOT_STARTED"), v));
        assert!(!done(&of("FAILED"), v));
    }
}
