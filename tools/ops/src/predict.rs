//! What a consumer will do with a message, predicted from the state it will read, in the
//! consumer's own words. The prediction calls the consumers' own decisions wherever they are
//! public: the settlement's first step, [`SettlementService::prepare`] (no transaction, no
//! write: it reads the interview and decides already settled / settles with these amounts /
//! fails with this error), the error's [`sophia_credits::Disposition`] (retry or drop, as the
//! interview-completed consumer maps it), the report consumer's org-scoped interview read
//! ([`sophia_reports::interview::load_raw`]) and its claim rule ([`sophia_reports::claim`]:
//! COMPLETED, held by a worker until when, out of attempts) with the declared lease length.
//!
//! A prediction is made for the state at the time of the plan: a consumer running in between
//! may change it (the plan says "now").

use std::time::Duration;

use serde::Serialize;
use sophia_contracts::{InterviewId, InterviewQueueMessage, OrganizationId, QueueMessage, ReportGenerate};
use sophia_credits::settlement::SettleKind;
use sophia_credits::{CreditsError, Disposition, SettlementService};
use sophia_declarations::{Queue, ResetRule};
use sophia_reports::claim::{self, Hold, MAX_ATTEMPTS};
use sophia_reports::report::StoredReport;
use sophia_reports::store::ReportStore;

use crate::queues::QueueName;

/// One message's predicted fate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fate {
    /// A stable label: `settles`, `already-settled`, `retried`, `dropped`, `generated`,
    /// `already-completed`, `out-of-attempts`, `held`, `invalid`, `unknown`.
    pub outcome: &'static str,
    /// In the consumer's words (what its log line will say).
    pub text: String,
    /// Credits a settlement will consume (`settles` of an `interview.completed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits: Option<i64>,
    /// What the report is now ([`crate::report_state::stored_report_now`]), for a `report.generate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
}

impl Fate {
    fn new(outcome: &'static str, text: impl Into<String>) -> Self {
        Self { outcome, text: text.into(), credits: None, now: None }
    }

    /// The state could not be read: the plan says so rather than guess.
    pub fn unknown(why: impl std::fmt::Display) -> Self {
        Self::new("unknown", format!("state not read ({why}): the outcome cannot be predicted"))
    }
}

/// The retry wording of both consumers: SQS redelivers, and after the last receive the message
/// is in the DLQ again (with a new message id).
const RETRIED: &str = "the consumer fails it and SQS retries it; after its receives run out it is back in the DLQ";

/// What the interview-completed consumer will do with `body` (an `interview.completed` or
/// `interview.failed` message), by running the settlement's read-only first step.
pub async fn interview_message(mongo: &sophia_platform::mongo::Mongo, body: &str) -> Fate {
    let message = match InterviewQueueMessage::parse(body) {
        Ok(m) => m,
        Err(e) => return Fate::new("invalid", format!("dropped: the body breaks the contract ({e})")),
    };
    let (interview, org, kind) = match &message {
        InterviewQueueMessage::Completed(m) => (
            m.interview_id,
            m.organization_id,
            SettleKind::Completed { completed_at: m.completed_at, duration_seconds: m.duration_seconds },
        ),
        InterviewQueueMessage::Failed(m) => {
            (m.interview_id, m.organization_id, SettleKind::Failed { failed_at: m.failed_at })
        }
    };
    settlement(mongo, interview, org, kind).await
}

/// What a settlement of `interview` for `org` would do now.
pub async fn settlement(
    mongo: &sophia_platform::mongo::Mongo,
    interview: InterviewId,
    org: OrganizationId,
    kind: SettleKind,
) -> Fate {
    let service = SettlementService::new(mongo.client.clone(), mongo.db.clone());
    match service.prepare(interview.oid(), org.oid(), kind).await {
        Ok(None) => Fate::new("already-settled", "already settled: acknowledged, nothing charged"),
        Ok(Some(p)) => {
            let released = p.reserved - p.consumed;
            match kind {
                SettleKind::Completed { .. } => Fate {
                    credits: Some(p.consumed),
                    ..Fate::new(
                        "settles",
                        format!(
                            "settles: {} credit(s) consumed, {released} released (forfeited instead on an expired lot) of {} reserved; a report is requested",
                            p.consumed, p.reserved
                        ),
                    )
                },
                SettleKind::Failed { .. } => Fate {
                    credits: Some(0),
                    ..Fate::new(
                        "settles",
                        format!(
                            "settles as failed: nothing consumed, {released} credit(s) released (forfeited instead on an expired lot); no report"
                        ),
                    )
                },
            }
        }
        // The plan could not read: say so rather than predict a failure of the consumer.
        Err(e @ (CreditsError::Mongo { .. } | CreditsError::DeadlineExceeded { .. })) => Fate::unknown(e),
        Err(e) => settlement_error(&e),
    }
}

/// The consumer's answer to a settlement error, by its disposition.
fn settlement_error(e: &CreditsError) -> Fate {
    let why = match e {
        CreditsError::WrongOrganization { actual, .. } => {
            format!("the interview belongs to another organization ({actual})")
        }
        CreditsError::InterviewNotFound { .. } => "the interview does not exist (interview not found)".to_owned(),
        other => other.to_string(),
    };
    match e.disposition() {
        Disposition::Retry => Fate::new("retried", format!("fails: {why}; {RETRIED}")),
        Disposition::Drop => Fate::new("dropped", format!("dropped: {why}; acknowledged, nothing written")),
        Disposition::DeadLetter => Fate::new(
            "dead-lettered",
            format!(
                "fails: {why}; back in the DLQ on this delivery, no retry (docs/runbook.md#a-message-that-can-never-succeed)"
            ),
        ),
    }
}

/// What the report-generate consumer will do with `interview`'s `report.generate` now; with
/// `reset`, after a FAILED (or stuck) report's attempts are reset first (`dlq redrive
/// report-generate`, `report retry --reset-attempts`).
pub async fn report(db: &mongodb::Database, message: ReportGenerate, reset: bool) -> Fate {
    let ReportGenerate { interview_id, organization_id } = message;
    match sophia_reports::interview::load_raw(db, interview_id, organization_id).await {
        Err(e) => return Fate::unknown(format!("reading the interview: {e}")),
        Ok(None) => {
            return Fate::new(
                "dropped",
                "dropped: interview not found in this organization (absent, soft-deleted or another organization's): acknowledged, nothing written",
            );
        }
        Ok(Some(_)) => {}
    }
    let stored = match ReportStore::new(db).find(interview_id).await {
        Ok(stored) => stored,
        Err(e) => return Fate::unknown(format!("reading the report: {e}")),
    };
    let now = bson::DateTime::now();
    let mut fate = report_from(stored.as_ref(), reset, now, claim::lease());
    // What the report is now, in the words every other command uses (the same claim rule).
    if let Some(r) = &stored {
        let failure = crate::report_state::Failure {
            kind: r.error_kind.map(|k| k.as_str().to_owned()),
            waiting: r.waiting_for_retry,
            last_error_at: None,
        };
        let visibility = Duration::from_secs(u64::from(Queue::ReportGenerate.settings().visibility_timeout_seconds));
        let state = crate::report_state::stored_report_now(r, failure, now, visibility);
        fate.now = Some(state.words);
    }
    fate
}

/// The report consumer's claim rule ([`sophia_reports::claim`]) over the stored report at `now`
/// with a lease of `lease` (no I/O); with `reset`, after the attempts reset the admin retry would
/// do (only a report nobody holds whose status' declared rule resets it).
pub fn report_from(stored: Option<&StoredReport>, reset: bool, now: bson::DateTime, lease: Duration) -> Fate {
    let Some(stored) = stored else {
        return Fate::new("generated", format!("generated: attempt 1 of {MAX_ATTEMPTS} (an OpenAI call)"));
    };
    let attempts = stored.attempt_count;
    match claim::hold(stored, now, lease) {
        Hold::Completed => Fate::new("already-completed", "report COMPLETED: acknowledged, nothing to do"),
        Hold::Erased => Fate::new("erased", "the candidate's data was erased: acknowledged, nothing written"),
        Hold::Held { until } => Fate::new(
            "held",
            format!(
                "another worker holds a live lease on this report (until {}): skipped (acknowledged); not reset",
                until.try_to_rfc3339_string().unwrap_or_default()
            ),
        ),
        Hold::Free if reset && matches!(stored.status.reset_rule(), ResetRule::Reset | ResetRule::WhenLeaseExpired) => {
            Fate::new(
                "generated",
                format!(
                    "attempts reset from {attempts} to 0, then generated: attempt 1 of {MAX_ATTEMPTS} (an OpenAI call)"
                ),
            )
        }
        Hold::Free if !claim::has_attempts_left(stored) => Fate::new(
            "out-of-attempts",
            format!(
                "out of attempts ({attempts} of {MAX_ATTEMPTS}): acknowledged without a model call; the report stays FAILED (reset its attempts to generate it)"
            ),
        ),
        Hold::Free => {
            Fate::new("generated", format!("generated: attempt {} of {MAX_ATTEMPTS} (an OpenAI call)", attempts + 1))
        }
    }
}

/// The fate of one body of `queue`, with MongoDB (`None`: not configured).
pub async fn message(mongo: Option<&sophia_platform::mongo::Mongo>, queue: QueueName, body: &str, reset: bool) -> Fate {
    if let Err(e) = crate::contract::check(queue, body) {
        return Fate::new("invalid", format!("dropped: the body breaks the contract ({e})"));
    }
    let Some(mongo) = mongo else { return Fate::unknown("MONGODB_URI is not set") };
    // Every declared queue by name: a new queue fails to compile here until its fate is planned.
    match queue.queue() {
        Queue::ReportGenerate => match ReportGenerate::parse(body) {
            Ok(m) => report(&mongo.db, m, reset).await,
            Err(e) => Fate::new("invalid", format!("dropped: the body breaks the contract ({e})")),
        },
        Queue::InterviewCompleted => interview_message(mongo, body).await,
    }
}

/// One message of a plan and its fate, predicted from the state now.
#[derive(Debug, Clone)]
pub struct Planned {
    pub message_id: String,
    pub interview_id: Option<String>,
    pub fate: Fate,
}

/// The plan's fates applied one after the other, as the consumer will meet them: a message for
/// an interview an earlier message of the plan settles (or whose report it generates) is
/// "already settled by <message id>" (resp. "already generated by"), acknowledged, nothing
/// charged. Answers each message's line and the total (credits charged, model calls).
pub fn in_order(planned: &[Planned]) -> (Vec<String>, String) {
    let mut first: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let (mut credits, mut settled, mut generated, mut repeats) = (0_i64, 0_usize, 0_usize, 0_usize);
    let mut lines = Vec::new();
    for p in planned {
        let interview = p.interview_id.as_deref().unwrap_or("-");
        let acts = matches!(p.fate.outcome, "settles" | "generated");
        let text = match (acts, p.interview_id.as_deref().and_then(|i| first.get(i))) {
            (true, Some(by)) => {
                repeats += 1;
                let what = if p.fate.outcome == "settles" { "already settled" } else { "report already generated" };
                format!("{what} by {by} (earlier in this plan): acknowledged, nothing charged")
            }
            _ => {
                if acts && let Some(i) = p.interview_id.as_deref() {
                    first.insert(i, &p.message_id);
                }
                credits += p.fate.credits.unwrap_or(0);
                settled += usize::from(p.fate.outcome == "settles");
                generated += usize::from(p.fate.outcome == "generated");
                match &p.fate.now {
                    Some(now) => format!("now {now}; the consumer: {}", p.fate.text),
                    None => p.fate.text.clone(),
                }
            }
        };
        lines.push(format!("message {}: interview {interview}: {text}", p.message_id));
    }
    let total = format!(
        "in total: {credits} credit(s) charged ({settled} settlement(s)), {generated} report(s) generated (an OpenAI call each); {repeats} message(s) for an interview already handled earlier in the plan"
    );
    (lines, total)
}

#[cfg(test)]
mod tests {
    use bson::oid::ObjectId;
    use bson::{DateTime, Document, doc};

    use super::*;

    const LEASE: Duration = Duration::from_secs(900);

    fn stored(fields: Document) -> StoredReport {
        let mut d = doc! {"_id": ObjectId::new(), "interviewId": ObjectId::new()};
        d.extend(fields);
        sophia_documents::decode("interviewReports", d).unwrap()
    }

    #[test]
    fn a_plan_applies_its_messages_in_order_and_totals_the_credits() {
        let settles = Fate { credits: Some(10), ..Fate::new("settles", "settles: 10 credit(s) consumed") };
        let planned = |m: &str, i: &str, fate: &Fate| Planned {
            message_id: m.into(),
            interview_id: Some(i.into()),
            fate: fate.clone(),
        };
        let (lines, total) = in_order(&[
            planned("m-1", "i-1", &settles),
            planned("m-2", "i-1", &settles),
            planned("m-3", "i-2", &settles),
        ]);
        assert_eq!(lines[0], "message m-1: interview i-1: settles: 10 credit(s) consumed");
        assert_eq!(
            lines[1],
            "message m-2: interview i-1: already settled by m-1 (earlier in this plan): acknowledged, nothing charged"
        );
        assert!(total.starts_with("in total: 20 credit(s) charged (2 settlement(s))"), "{total}");
        assert!(total.contains("1 message(s) for an interview already handled"), "{total}");
    }

    #[test]
    fn the_report_claim_rules_in_the_consumers_words() {
        let now = DateTime::now();
        let at = |delta: i64| DateTime::from_millis(now.timestamp_millis() + delta);
        let fate = |d: Option<Document>, reset| report_from(d.map(stored).as_ref(), reset, now, LEASE);
        assert_eq!(fate(None, false).outcome, "generated");
        let completed = doc! {"status": "COMPLETED", "attemptCount": 1};
        assert_eq!(fate(Some(completed.clone()), true).text, "report COMPLETED: acknowledged, nothing to do");
        let failed = doc! {"status": "FAILED", "attemptCount": 3_i64};
        assert_eq!(fate(Some(failed.clone()), false).outcome, "out-of-attempts");
        assert!(fate(Some(failed), true).text.starts_with("attempts reset from 3 to 0"));
        let held = doc! {"status": "PROCESSING", "attemptCount": 1, "leaseExpiresAt": at(60_000)};
        let held_fate = fate(Some(held), true);
        assert_eq!(held_fate.outcome, "held");
        assert!(held_fate.text.contains(&at(60_000).try_to_rfc3339_string().unwrap()), "{}", held_fate.text);
        let stuck = doc! {"status": "PROCESSING", "attemptCount": 2, "leaseExpiresAt": at(-60_000)};
        assert_eq!(fate(Some(stuck.clone()), false).text, "generated: attempt 3 of 3 (an OpenAI call)");
        assert_eq!(fate(Some(stuck), true).outcome, "generated");
        // NOT_STARTED has its whole budget: a reset does not apply to it.
        let placeholder = doc! {"status": "NOT_STARTED"};
        assert_eq!(fate(Some(placeholder), true).text, "generated: attempt 1 of 3 (an OpenAI call)");
    }

    /// A PROCESSING report without a lease (written before leases existed) is held until its last
    /// write plus the lease, not forever: past it the store's claim takes it, so the plan says
    /// it is generated (and a reset applies), as the consumer will do.
    #[test]
    fn a_lease_less_processing_report_whose_claim_lapsed_is_predicted_as_the_store_will_reclaim_it() {
        let now = DateTime::now();
        let lease_ms = LEASE.as_millis() as i64;
        let at = |delta: i64| DateTime::from_millis(now.timestamp_millis() + delta);
        let fate = |d: Document, reset| report_from(Some(&stored(d)), reset, now, LEASE);
        let lapsed = doc! {"status": "PROCESSING", "attemptCount": 1, "updatedAt": at(-lease_ms - 1_000)};
        assert_eq!(fate(lapsed.clone(), false).text, "generated: attempt 2 of 3 (an OpenAI call)");
        assert_eq!(
            fate(lapsed, true).text,
            "attempts reset from 1 to 0, then generated: attempt 1 of 3 (an OpenAI call)"
        );
        let spent = doc! {"status": "PROCESSING", "attemptCount": 3, "leaseExpiresAt": bson::Bson::Null, "createdAt": at(-lease_ms - 1)};
        assert_eq!(fate(spent, false).outcome, "out-of-attempts");
        // Within the lease after its last write: still held, until that write plus the lease.
        let recent = doc! {"status": "PROCESSING", "attemptCount": 1, "updatedAt": at(-1_000)};
        let held = fate(recent, true);
        assert_eq!(held.outcome, "held");
        assert!(held.text.contains(&at(lease_ms - 1_000).try_to_rfc3339_string().unwrap()), "{}", held.text);
    }
}
