//! What a command produced ([`Outcome`]) and how it is printed ([`render`]): human text by
//! default, JSON with `--json`, and the exit code.

use serde::Serialize;

use crate::{
    OpsError, admin, audit_trail, confirm, dlq_messages, erasure, interview_state, late, listing, publish_message,
    redrive, status,
};

/// Done.
pub const EXIT_OK: i32 = 0;
/// An error (the command did not run, or failed).
pub const EXIT_ERROR: i32 = 1;
/// Done but incomplete: a redrive or move that left messages behind, an outbox entry that
/// failed, an invariant violated.
pub const EXIT_INCOMPLETE: i32 = 3;

/// What a command produced. Serialized with its command name: `{"command": "dlq-redrive", ...}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum Outcome {
    Publish(publish_message::PublishReport),
    DlqList(dlq_messages::DlqListing),
    DlqShow(dlq_messages::DlqShow),
    DlqRedrive(redrive::RedriveReport),
    DlqDelete(dlq_messages::DlqDelete),
    InterviewShow(Box<interview_state::InterviewShow>),
    QueueMove(redrive::RedriveReport),
    OutboxFlush(admin::OutboxFlushReport),
    ReportRetry(admin::ReportRetryReport),
    InvariantsCheck(admin::InvariantsReport),
    Migrate(admin::MigrateReport),
    QueueStatus(Box<status::QueueStatus>),
    /// `report late`.
    ReportLate(Box<late::LateReport>),
    /// `queue pause` / `queue resume`.
    QueueMapping(status::MappingChange),
    InterviewUnsettled(listing::UnsettledListing),
    ReportFailures(listing::FailuresListing),
    AuditList(audit_trail::AuditListing),
    /// `--dry-run`: what would have been sent; nothing was.
    DryRun(confirm::Plan),
    /// `erasure request`, `erasure sweep`: incomplete (exit 3) while a request is PENDING.
    ErasureRequest(erasure::ErasureReport),
    /// `erasure show`, `erasure list`.
    ErasureShow(erasure::ErasureReport),
}

impl Outcome {
    pub fn human(&self) -> String {
        match self {
            Self::Publish(r) => r.human(),
            Self::DlqList(r) => r.human(),
            Self::DlqShow(r) => r.human(),
            Self::DlqRedrive(r) => r.human(),
            Self::DlqDelete(r) => r.human(),
            Self::InterviewShow(r) => r.human(),
            Self::QueueMove(r) => {
                r.human().replacen("redrive ", "queue move ", 1).replacen(" DLQ -> source queue", " <- ", 1)
            }
            Self::OutboxFlush(r) => r.human(),
            Self::ReportRetry(r) => r.human(),
            Self::InvariantsCheck(r) => r.human(),
            Self::Migrate(r) => r.human(),
            Self::QueueStatus(r) => r.human(),
            Self::QueueMapping(r) => r.human(),
            Self::ReportLate(r) => r.human(),
            Self::InterviewUnsettled(r) => r.human(),
            Self::ReportFailures(r) => r.human(),
            Self::AuditList(r) => r.human(),
            Self::DryRun(plan) => format!("dry run, nothing sent:\n{}", plan.human()),
            Self::ErasureRequest(r) | Self::ErasureShow(r) => r.human(),
        }
    }

    /// Nothing was sent, moved or changed: `--dry-run` (a plan, or a redrive's or move's dry
    /// run), recorded as such in the audit trail.
    pub fn is_dry_run(&self) -> bool {
        match self {
            Self::DryRun(_) => true,
            Self::DlqRedrive(r) | Self::QueueMove(r) => r.dry_run,
            _ => false,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialise")
    }

    pub fn exit_code(&self) -> i32 {
        let incomplete = match self {
            Self::DlqRedrive(r) | Self::QueueMove(r) => !r.is_clean(),
            Self::OutboxFlush(r) => !r.failed.is_empty(),
            Self::InvariantsCheck(r) => !r.ok,
            Self::ErasureRequest(r) => !r.is_complete(),
            _ => false,
        };
        if incomplete { EXIT_INCOMPLETE } else { EXIT_OK }
    }
}

/// What to print and the exit code: stdout text, stderr text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// Formats a command's result: human text, or JSON with `json` (errors too, as
/// `{"error": ..., "kind": ...}` on stdout, so scripts always get JSON).
pub fn render(result: &Result<Outcome, OpsError>, json: bool) -> Rendered {
    match (result, json) {
        (Ok(outcome), false) => {
            Rendered { stdout: outcome.human(), stderr: String::new(), exit_code: outcome.exit_code() }
        }
        (Ok(outcome), true) => {
            Rendered { stdout: outcome.to_json() + "\n", stderr: String::new(), exit_code: outcome.exit_code() }
        }
        // A plan waiting for --yes is not an error: it is printed as the plan it is.
        (Err(e @ OpsError::ConfirmationRequired(_)), false) => {
            Rendered { stdout: String::new(), stderr: format!("{e}\n"), exit_code: EXIT_ERROR }
        }
        (Err(e), false) => Rendered { stdout: String::new(), stderr: format!("error: {e}\n"), exit_code: EXIT_ERROR },
        (Err(e), true) => {
            let body = serde_json::json!({"error": e.to_string(), "kind": e.kind()});
            Rendered { stdout: format!("{body}\n"), stderr: String::new(), exit_code: EXIT_ERROR }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    #[test]
    fn a_plan_waiting_for_yes_is_not_printed_as_an_error() {
        let ctx = Context::default();
        let plan = confirm::Plan::new(&ctx, "publish interview.completed", "https://sqs.eu-west-1.amazonaws.com/1/q");
        let rendered = render(&Err(OpsError::ConfirmationRequired(Box::new(plan))), false);
        assert!(rendered.stderr.starts_with("publish interview.completed"), "{}", rendered.stderr);
        assert!(!rendered.stderr.contains("error:"), "{}", rendered.stderr);
        assert_eq!(rendered.exit_code, EXIT_ERROR);
    }
}
