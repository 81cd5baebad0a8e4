//! The message contract of each queue, as the operator commands check it: which body a queue
//! accepts (a DLQ listing's contract check, `queue move`'s validation before a send) and which
//! interview a body is about.
//!
//! This is the one place in `sophia-ops` that is written per queue: a queue added to
//! `declarations/queues.json` is accepted by every command at once, and `check`'s `match` on the
//! generated [`Queue`] does not compile until the new queue's parser is added there.

use sophia_contracts::{InterviewId, InterviewQueueMessage, QueueMessage, ReportGenerate};
use sophia_declarations::Queue;

use crate::queues::QueueName;

/// What a valid body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subject {
    pub event_type: &'static str,
    pub interview_id: InterviewId,
}

/// Checks `body` against `queue`'s contract: the subject of a valid body, or why it is not valid
/// (the contract's error names fields and types, never a value).
pub fn check(queue: QueueName, body: &str) -> Result<Subject, String> {
    match queue.queue() {
        Queue::InterviewCompleted => match InterviewQueueMessage::parse(body).map_err(|e| e.to_string())? {
            InterviewQueueMessage::Completed(m) => {
                Ok(Subject { event_type: "interview.completed", interview_id: m.interview_id })
            }
            InterviewQueueMessage::Failed(m) => {
                Ok(Subject { event_type: "interview.failed", interview_id: m.interview_id })
            }
        },
        Queue::ReportGenerate => ReportGenerate::parse(body)
            .map(|m| Subject { event_type: "report.generate", interview_id: m.interview_id })
            .map_err(|e| e.to_string()),
    }
}

/// The `interviewId` a body names, valid or not (for a poison message, when it still names one).
pub fn interview_named(body: &str) -> Option<InterviewId> {
    serde_json::from_str::<serde_json::Value>(body).ok()?.get("interviewId")?.as_str()?.parse().ok()
}

/// The body fields of every contract that hold no candidate text: identifiers, timestamps, the
/// event type and the billed duration. Every other string of a body (`failureReason` today, any
/// field a producer adds) is redacted unless the operator asks for bodies (`--show-body`).
pub const PLAIN_FIELDS: [&str; 6] =
    ["type", "interviewId", "organizationId", "completedAt", "failedAt", "durationSeconds"];

/// A body for display: each string outside [`PLAIN_FIELDS`] replaced by
/// `<redacted: N chars>`; a body that is not a JSON object replaced whole.
pub fn redact(body: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut fields)) => {
            let mut changed = false;
            for (name, value) in fields.iter_mut() {
                if !PLAIN_FIELDS.contains(&name.as_str()) {
                    changed |= redact_value(value);
                }
            }
            // Nothing to hide: the body as it was sent (same field order and spacing).
            if changed { serde_json::Value::Object(fields).to_string() } else { body.to_owned() }
        }
        _ => format!("<redacted: body is not a JSON object, {} chars>", body.chars().count()),
    }
}

/// Redacts every string in `value`; whether there was one.
fn redact_value(value: &mut serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => {
            *s = marker(s);
            true
        }
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |c, v| redact_value(v) | c),
        serde_json::Value::Object(fields) => fields.values_mut().fold(false, |c, v| redact_value(v) | c),
        _ => false,
    }
}

/// `<redacted: N chars>`.
pub fn marker(s: &str) -> String {
    format!("<redacted: {} chars>", s.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: &str = "65a1b2c3d4e5f60718293a4b";
    const O: &str = "65a1b2c3d4e5f60718293a4c";

    #[test]
    fn bodies_are_checked_against_their_own_queue() {
        let report = format!(r#"{{"interviewId":"{I}","organizationId":"{O}"}}"#);
        let subject = check(QueueName::of(Queue::ReportGenerate), &report).unwrap();
        assert_eq!((subject.event_type, subject.interview_id.to_string()), ("report.generate", I.to_owned()));
        assert!(
            check(QueueName::of(Queue::InterviewCompleted), &report).is_err(),
            "a report.generate body is not an interview message"
        );
        let failed = format!(
            r#"{{"type":"interview.failed","interviewId":"{I}","organizationId":"{O}","failureReason":"x","failedAt":"2026-12-02T17:30:00Z"}}"#
        );
        assert_eq!(check(QueueName::of(Queue::InterviewCompleted), &failed).unwrap().event_type, "interview.failed");
    }

    #[test]
    fn candidate_text_is_redacted_and_identifiers_are_kept() {
        let body = format!(
            r#"{{"type":"interview.failed","interviewId":"{I}","organizationId":"{O}","failureReason":"Ana said her salary is 90k","failedAt":"2026-12-02T17:30:00Z","extra":{{"note":"secret"}}}}"#
        );
        let shown = redact(&body);
        assert!(!shown.contains("salary") && !shown.contains("secret"), "{shown}");
        assert!(shown.contains(r#""failureReason":"<redacted: 26 chars>""#), "{shown}");
        assert!(shown.contains(I) && shown.contains("2026-12-02T17:30:00Z"), "{shown}");
        assert_eq!(redact("not json at all"), "<redacted: body is not a JSON object, 15 chars>");
        let plain = format!(r#"{{"organizationId":"{O}", "interviewId":"{I}"}}"#);
        assert_eq!(redact(&plain), plain, "nothing to hide: unchanged");
    }
}
