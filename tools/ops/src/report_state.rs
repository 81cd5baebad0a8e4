//! What a report is now, in one function ([`report_now`]) that every command showing a report
//! reads: `interview show`, `report failures`, `report late`, `queue status report-generate`, and,
//! through the same claim rule, the redrive plan ([`crate::predict`]). Two commands run a second
//! apart therefore never disagree, and each says where the report's work is: done, in flight (a
//! worker holds its lease), waiting for a retry (and when the next delivery is due), not started,
//! or with a person (out of attempts, given up, or failing with a kind no retry fixes).
//!
//! Who holds a report is the report consumer's claim rule ([`sophia_reports::claim::hold`]), with
//! the declared lease, not a copy: a `PROCESSING` report whose lease has ended is held by nobody
//! and is taken by the next delivery, as the consumer will.

use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use serde::Serialize;
use sophia_declarations::Queue;
use sophia_reports::claim::{self, Hold, MAX_ATTEMPTS};
use sophia_reports::report::StoredReport;
use sophia_reports::{ErrorKind, ReportStatus};

use crate::Context;
use crate::confirm::{number, text};
use crate::queues::QueueName;
use crate::report_failure::FailureState;

/// The fields [`report_now`] reads: the projection of the commands that list reports.
pub fn projection() -> Document {
    doc! {"interviewId": 1, "organizationId": 1, "status": 1, "errorKind": 1, "attemptCount": 1,
    "transientFailures": 1, "waitingForRetry": 1, "lastErrorAt": 1, "leaseExpiresAt": 1, "updatedAt": 1,
    "createdAt": 1}
}

/// A report now: its state, where its work is, and what comes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportNow {
    pub state: FailureState,
    /// Attempts spent (`attemptCount`, absent: 0) of [`MAX_ATTEMPTS`].
    pub attempts: i64,
    pub error_kind: Option<String>,
    /// A live lease's end (`in flight`).
    pub held_until: Option<String>,
    /// When the next delivery is due, when one is.
    pub next_delivery: Option<String>,
    /// A kind that spends an attempt on every delivery and that no retry fixes: a person must act
    /// before the next delivery.
    pub needs_person_now: bool,
    /// Its last failure (`lastErrorAt`), for [`ReportNow::after_completion`].
    #[serde(skip)]
    pub last_error_at: Option<DateTime>,
    /// In words: where the report is and what happens next. A command in it is written without
    /// the program and the stage (`report retry ...`): show it through [`ReportNow::shown`].
    pub words: String,
}

/// How a command in [`ReportNow::words`] starts, before [`staged`] writes it out.
const RETRY_COMMAND: &str = "`report retry ";

/// `words` with each command in it written out as this run would type it (`sophia-ops --stage
/// <this stage> report retry ...`).
pub fn staged(words: &str, ctx: &Context) -> String {
    words.replace(RETRY_COMMAND, &format!("`{}", ctx.ops_command("report retry ")))
}

impl ReportNow {
    /// [`ReportNow::words`] with its command written out for this run ([`staged`]).
    pub fn shown(&self, ctx: &Context) -> String {
        staged(&self.words, ctx)
    }

    /// A report flagged NEEDS YOU NOW with attempts left, when another report completed after its
    /// last failure (`completed`, [`latest_completion`]): the cause looks fixed, so its next
    /// delivery retries it by itself; it waits for that retry and needs nobody.
    pub fn after_completion(&mut self, completed: Option<DateTime>) {
        let (Some(done), Some(failed)) = (completed, self.last_error_at) else { return };
        if !self.needs_person_now || done <= failed || self.attempts >= i64::from(MAX_ATTEMPTS) {
            return;
        }
        self.needs_person_now = false;
        self.state = FailureState::WaitingForRetry;
        self.words = format!(
            "waiting for a retry after {}: a report completed since (at {}), so its cause looks fixed; the next delivery is due{} and retries it by itself (attempt {} of {MAX_ATTEMPTS})",
            self.error_kind.as_deref().unwrap_or("-"),
            rfc3339(done),
            self.next_delivery.as_ref().map_or(String::new(), |t| format!(" by {t}")),
            self.attempts + 1
        );
    }
}

/// The newest `completedAt` of a COMPLETED report after `since` (the earliest failure a listing
/// shows), when any: its cause was fixed for that report.
pub async fn latest_completion(db: &mongodb::Database, since: Option<DateTime>) -> Option<DateTime> {
    let since = since?;
    let found = db
        .collection::<Document>(sophia_reports::store::INTERVIEW_REPORTS)
        .find_one(doc! {"status": ReportStatus::Completed.as_str(), "completedAt": {"$gt": since}})
        .sort(doc! {"completedAt": -1})
        .projection(doc! {"completedAt": 1})
        .await
        .ok()??;
    found.get_datetime("completedAt").ok().copied()
}

/// Kinds that spend one of the report's attempts on every delivery and that only a person
/// fixes: billing (quota), the key or the account (credentials, auth), the configured model, a
/// request the API rejects, the model's refusals and filters, a document nobody can read.
pub fn needs_person(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Quota
            | ErrorKind::CredentialsRefused
            | ErrorKind::Auth
            | ErrorKind::ModelNotFound
            | ErrorKind::BadRequest
            | ErrorKind::Refusal
            | ErrorKind::ContentFilter
            | ErrorKind::InvalidDocument
    )
}

fn kind_of(name: &str) -> Option<ErrorKind> {
    ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
}

fn rfc3339(t: DateTime) -> String {
    t.try_to_rfc3339_string().unwrap_or_else(|_| t.to_string())
}

/// The claim rule's view of `d`: only the fields it reads (a listing's projection suffices).
fn stored(d: &Document) -> Option<StoredReport> {
    let mut claim = Document::new();
    for k in
        ["_id", "interviewId", "organizationId", "status", "attemptCount", "leaseExpiresAt", "updatedAt", "createdAt"]
    {
        if let Some(v) = d.get(k) {
            claim.insert(k, v.clone());
        }
    }
    sophia_documents::decode(sophia_reports::store::INTERVIEW_REPORTS, claim).ok()
}

/// What report `d` is at `now`, its queue's visibility timeout being `visibility` (when a
/// failed delivery comes back).
pub fn report_now(d: &Document, now: DateTime, visibility: Duration) -> ReportNow {
    let error_kind = text_of(d, "errorKind");
    let attempts = d.get("attemptCount").and_then(number).unwrap_or(0);
    let Some(report) = stored(d) else {
        return ReportNow {
            state: FailureState::NeedsYou,
            attempts,
            error_kind,
            held_until: None,
            next_delivery: None,
            needs_person_now: false,
            last_error_at: None,
            words: "its document cannot be read (a field of a type no reader expects): nothing retries it".into(),
        };
    };
    let failure = Failure {
        kind: error_kind,
        waiting: d.get_bool("waitingForRetry").ok(),
        last_error_at: match d.get("lastErrorAt") {
            Some(Bson::DateTime(t)) => Some(*t),
            _ => None,
        },
    };
    stored_report_now(&report, failure, now, visibility)
}

/// What a report's last failure says, beside what the claim rule reads.
#[derive(Debug, Clone, Default)]
pub struct Failure {
    /// `errorKind` as stored (a kind this build does not know is kept as text).
    pub kind: Option<String>,
    /// `waitingForRetry`, when written.
    pub waiting: Option<bool>,
    pub last_error_at: Option<DateTime>,
}

/// [`report_now`] of a report already read (the redrive plan's [`crate::predict`] reads one).
pub fn stored_report_now(report: &StoredReport, failure: Failure, now: DateTime, visibility: Duration) -> ReportNow {
    let attempts = i64::from(report.attempt_count);
    let kind = failure.kind.as_deref().and_then(kind_of);
    let mut r = ReportNow {
        state: FailureState::NeedsYou,
        attempts,
        error_kind: failure.kind,
        held_until: None,
        next_delivery: None,
        needs_person_now: false,
        last_error_at: failure.last_error_at,
        words: String::new(),
    };
    match claim::hold(report, now, claim::lease()) {
        Hold::Completed => (r.state, r.words) = (FailureState::Done, "done: COMPLETED".into()),
        Hold::Erased => {
            (r.state, r.words) = (
                FailureState::Done,
                "erased: the candidate's data was erased; nothing generates this report again (docs/candidate-data.md#erasure)"
                    .into(),
            );
        }
        Hold::Held { until } => {
            r.state = FailureState::RetryingNow;
            r.held_until = Some(rfc3339(until));
            r.words = format!(
                "in flight: a worker holds it until {} (attempt {} of {MAX_ATTEMPTS})",
                rfc3339(until),
                attempts.max(1)
            );
        }
        Hold::Free if !claim::has_attempts_left(report) => {
            r.words = format!(
                "out of attempts ({attempts} of {MAX_ATTEMPTS}): nothing retries it; fix the cause, then {RETRY_COMMAND}{} {} --reset-attempts`",
                report.interview_id.to_hex(),
                report.organization_id.map_or("<organizationId>".into(), |o| o.to_hex())
            );
        }
        Hold::Free => free(&mut r, report, kind, failure.waiting, failure.last_error_at, visibility),
    }
    r
}

/// A report nobody holds, with attempts left.
fn free(
    r: &mut ReportNow,
    report: &StoredReport,
    kind: Option<ErrorKind>,
    waiting: Option<bool>,
    last_error_at: Option<DateTime>,
    visibility: Duration,
) {
    let next = r.attempts + 1;
    match report.status {
        ReportStatus::NotStarted => {
            r.state = FailureState::NotStarted;
            r.words = format!(
                "not started: its report.generate is in report-generate, visible or in flight (a delivery that failed before the report was claimed, e.g. MongoDB unreachable, hides it for the visibility timeout, {}, then it comes back), or in its DLQ after {} such deliveries (attempt 1 next)",
                sophia_sqs_consumer::backoff::words(visibility),
                Queue::ReportGenerate.settings().max_receive_count
            );
        }
        ReportStatus::Processing => {
            let ended = report.lease_expires_at.or(report.updated_at).map_or("-".into(), rfc3339);
            r.state = FailureState::WaitingForRetry;
            r.next_delivery = report.lease_expires_at.map(|t| rfc3339(claim::after(t, visibility)));
            r.words = format!(
                "its worker's lease ended ({ended}) without an answer (crashed or timed out): the next delivery{} takes it (attempt {next} of {MAX_ATTEMPTS})",
                r.next_delivery.as_ref().map_or(String::new(), |t| format!(", due by {t},"))
            );
        }
        // `claim::hold` answers Erased for an ERASED report before `free` is reached.
        ReportStatus::Failed | ReportStatus::Completed | ReportStatus::Erased => {
            let derived = kind.is_some_and(|k| {
                sophia_reports::store::waits_for_retry(k, i32::try_from(r.attempts).unwrap_or(i32::MAX))
            });
            let name = r.error_kind.clone().unwrap_or_else(|| "-".into());
            if !waiting.unwrap_or(derived) {
                r.words =
                    format!("FAILED after {name}, given up: nothing retries it (docs/runbook.md#reports-failing)");
                return;
            }
            let away = kind.is_some_and(ErrorKind::is_provider_away);
            let after = if away { requeue_bound(visibility) } else { visibility };
            r.next_delivery = last_error_at.map(|t| rfc3339(claim::after(t, after)));
            let due = r.next_delivery.as_ref().map_or(String::new(), |t| format!(" by {t}"));
            if kind.is_some_and(needs_person) {
                r.needs_person_now = true;
                r.words = format!(
                    "NEEDS YOU NOW: {name} spends one of its {MAX_ATTEMPTS} attempts on every delivery ({} spent) and no retry fixes it; the next delivery is due{due}: fix the cause before then and it retries by itself (docs/runbook.md#error-kinds)",
                    r.attempts
                );
            } else if away {
                r.state = FailureState::WaitingForRetry;
                r.words = format!(
                    "waiting for a retry after {name} (the provider or MongoDB away: its attempt given back, {} spent): the next delivery is due{due}",
                    r.attempts
                );
            } else {
                r.state = FailureState::WaitingForRetry;
                r.words = format!(
                    "waiting for a retry after {name}: the next delivery is due{due} (the queue's visibility timeout), attempt {next} of {MAX_ATTEMPTS}"
                );
            }
        }
    }
}

/// The latest a provider-away failure is delivered again: its backoff is at most the
/// visibility timeout, its last receive's copy is delayed the requeue delay.
fn requeue_bound(visibility: Duration) -> Duration {
    let schedule = sophia_sqs_consumer::backoff::policy_of(Queue::ReportGenerate)
        .schedule(Queue::ReportGenerate.settings().max_receive_count);
    schedule.requeue_delay.map_or(visibility, |d| d.max(visibility))
}

fn text_of(d: &Document, k: &str) -> Option<String> {
    d.get(k).and_then(text)
}

/// The report queue's visibility timeout as the stage (or the local pipeline) has it, else as
/// declared.
pub async fn report_visibility(ctx: &Context) -> Duration {
    let declared = Duration::from_secs(u64::from(Queue::ReportGenerate.settings().visibility_timeout_seconds));
    let locator = ctx.locator().await;
    let Ok(url) = locator.source_url(QueueName::of(Queue::ReportGenerate)).await else { return declared };
    let out = locator
        .client()
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout)
        .send()
        .await;
    out.ok()
        .and_then(|o| o.attributes)
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout).cloned())
        .and_then(|v| v.parse().ok())
        .map_or(declared, Duration::from_secs)
}

/// How far back `queue status report-generate` looks for reports that need a person.
pub const STRANDED_LOOKBACK: Duration = Duration::from_secs(24 * 3600);

/// `queue status report-generate` with MongoDB: the error kinds of the reports that failed in the
/// window (when the function's metrics do not give them, as locally) and, over
/// [`STRANDED_LOOKBACK`], the reports that need a person.
/// Without MongoDB answering (`status.mongodb`), nothing: the verdict then says "reports not
/// checked" ([`crate::status::verdict`]), never "healthy".
pub async fn attach_to_status(ctx: &Context, status: &mut crate::status::QueueStatus, window: Duration) {
    if status.mongodb != crate::status::MongoNow::Reachable {
        return;
    }
    let Ok(db) = ctx.mongo().await.map(|m| m.db) else { return };
    let now = DateTime::now();
    let visibility = status.visibility_timeout_seconds.map_or(claim::lease(), Duration::from_secs);
    let since = |d: Duration| DateTime::from_millis(now.timestamp_millis() - i64::try_from(d.as_millis()).unwrap_or(0));
    let (window_start, lookback) = (since(window), since(STRANDED_LOOKBACK.max(window)));
    let completed = ReportStatus::Completed.as_str();
    let found = db
        .collection::<Document>(sophia_reports::store::INTERVIEW_REPORTS)
        .find(doc! {"status": {"$nin": [completed]}, "lastErrorAt": {"$gte": lookback}})
        .projection(projection())
        .limit(1_000)
        .await;
    let docs: Vec<Document> = match found {
        Ok(cursor) => futures::TryStreamExt::try_collect(cursor).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let mut by_kind: std::collections::BTreeMap<String, i64> = Default::default();
    let mut stranded: std::collections::BTreeMap<String, usize> = Default::default();
    let earliest = docs.iter().filter_map(|d| d.get_datetime("lastErrorAt").ok().copied()).min();
    let completed = latest_completion(&db, earliest).await;
    for d in &docs {
        let mut r = report_now(d, now, visibility);
        r.after_completion(completed);
        let kind = r.error_kind.clone().unwrap_or_else(|| "-".into());
        if matches!(d.get("lastErrorAt"), Some(Bson::DateTime(t)) if *t >= window_start) {
            *by_kind.entry(kind.clone()).or_default() += 1;
        }
        if r.state == FailureState::NeedsYou {
            let why = if r.attempts >= i64::from(MAX_ATTEMPTS) { format!("{kind}, out of attempts") } else { kind };
            *stranded.entry(why).or_default() += 1;
        }
    }
    if let Some(m) = status.metrics.as_mut().filter(|m| m.failures_by_kind.is_empty()) {
        m.failures_by_kind = by_kind.into_iter().collect();
        m.failures_by_kind.sort_by_key(|k| std::cmp::Reverse(k.1));
    }
    if !stranded.is_empty() {
        let n: usize = stranded.values().sum();
        let kinds: Vec<String> = stranded.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        status.stranded = Some(format!(
            "{n} report(s) need a person, nothing retries them usefully: {} (report failures)",
            kinds.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use bson::oid::ObjectId;

    use super::*;

    const VISIBILITY: Duration = Duration::from_secs(120);

    fn report(fields: Document) -> Document {
        let mut d = doc! {"_id": ObjectId::new(), "interviewId": ObjectId::new()};
        d.extend(fields);
        d
    }

    #[test]
    fn one_state_from_the_claim_rule_and_the_failure() {
        let now = DateTime::now();
        let at = |delta: i64| DateTime::from_millis(now.timestamp_millis() + delta);
        let of = |d: Document| report_now(&report(d), now, VISIBILITY);
        let held = of(doc! {"status": "PROCESSING", "attemptCount": 1, "leaseExpiresAt": at(60_000)});
        assert_eq!(held.state, FailureState::RetryingNow);
        assert!(held.words.starts_with("in flight: a worker holds it until"), "{}", held.words);
        // A lapsed lease is nobody's: the next delivery takes it (the claim rule, not "retrying now").
        let lapsed = of(doc! {"status": "PROCESSING", "attemptCount": 1, "leaseExpiresAt": at(-1_000)});
        assert_eq!(lapsed.state, FailureState::WaitingForRetry, "{}", lapsed.words);
        assert!(lapsed.words.contains("attempt 2 of 3"), "{}", lapsed.words);
        let spent = of(doc! {"status": "PROCESSING", "attemptCount": 3, "leaseExpiresAt": at(-1_000)});
        assert_eq!(spent.state, FailureState::NeedsYou);
        let out = of(doc! {"status": "FAILED", "attemptCount": 3, "errorKind": "invalid_output"});
        assert!(out.words.starts_with("out of attempts (3 of 3)"), "{}", out.words);
        let (interview, organization) = (bson::oid::ObjectId::new(), bson::oid::ObjectId::new());
        let named = report_now(
            &doc! {"_id": bson::oid::ObjectId::new(), "interviewId": interview, "organizationId": organization,
            "status": "FAILED", "attemptCount": 3},
            now,
            VISIBILITY,
        );
        assert!(
            named.words.ends_with(&format!("then `report retry {interview} {organization} --reset-attempts`")),
            "the command, ids included: {}",
            named.words
        );
        let ctx = Context::new(crate::env::Env::from_pairs([("X", "y")]), Some("prod".into()), Default::default());
        assert!(
            named.shown(&ctx).ends_with(&format!(
                "then `sophia-ops --stage prod report retry {interview} {organization} --reset-attempts`"
            )),
            "written out with this run's stage: {}",
            named.shown(&ctx)
        );
        let failed = of(doc! {"status": "FAILED", "attemptCount": 1, "errorKind": "invalid_output",
        "waitingForRetry": true, "lastErrorAt": at(0)});
        assert_eq!(failed.state, FailureState::WaitingForRetry);
        assert_eq!(failed.next_delivery, Some(rfc3339(at(120_000))), "the queue's visibility timeout, not a literal");
        let quota = of(doc! {"status": "FAILED", "attemptCount": 1, "errorKind": "quota", "waitingForRetry": true,
        "lastErrorAt": at(0)});
        assert_eq!(quota.state, FailureState::NeedsYou);
        assert!(quota.needs_person_now && quota.words.starts_with("NEEDS YOU NOW: quota spends"), "{}", quota.words);
        // A report completed after the quota failure: the cause looks fixed, it retries by itself.
        let mut fixed = quota.clone();
        fixed.after_completion(Some(at(1_000)));
        assert_eq!((fixed.state, fixed.needs_person_now), (FailureState::WaitingForRetry, false));
        assert!(
            fixed.words.starts_with("waiting for a retry after quota: a report completed since")
                && fixed.words.ends_with("retries it by itself (attempt 2 of 3)"),
            "{}",
            fixed.words
        );
        let mut earlier = quota.clone();
        earlier.after_completion(Some(at(-1_000)));
        assert!(earlier.needs_person_now, "a completion before the failure says nothing");
        let away =
            of(doc! {"status": "FAILED", "attemptCount": 0, "errorKind": "server_error", "waitingForRetry": true,
            "lastErrorAt": at(0)});
        assert_eq!(away.state, FailureState::WaitingForRetry, "{}", away.words);
        assert_eq!(of(doc! {"status": "COMPLETED"}).state, FailureState::Done);
        let not_started = of(doc! {"status": "NOT_STARTED"});
        assert_eq!(not_started.state, FailureState::NotStarted);
        // A MongoDB outage hides its message in flight for the visibility timeout: said, not
        // "waits in report-generate".
        assert!(
            not_started.words.contains("visible or in flight")
                && not_started.words.contains("for the visibility timeout, 2 min")
                && not_started.words.contains("or in its DLQ after 3 such deliveries"),
            "{}",
            not_started.words
        );
        assert_eq!(of(doc! {"status": 7}).state, FailureState::NeedsYou, "unreadable");
    }
}
