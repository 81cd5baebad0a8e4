//! The MongoDB-side commands: `outbox flush`, `report retry`, `invariants check`. They call the
//! credits and reports libraries; this module only adapts their results for output.

use std::time::Duration;

use serde::Serialize;
use sophia_contracts::{InterviewId, OrganizationId};

use crate::{Context, OpsError};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxFlushReport {
    pub older_than_seconds: u64,
    pub published: usize,
    pub left_pending: usize,
    pub failed: Vec<OutboxFailure>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxFailure {
    pub outbox_id: String,
    pub error: String,
}

impl OutboxFlushReport {
    pub fn human(&self) -> String {
        let mut s = format!(
            "outbox flush (entries older than {}s): {} published, {} left pending, {} failed\n",
            self.older_than_seconds,
            self.published,
            self.left_pending,
            self.failed.len()
        );
        for f in &self.failed {
            s.push_str(&format!("  {}: {}\n", f.outbox_id, f.error));
        }
        s
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportRetryReport {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    /// `published` or `already-completed`.
    pub outcome: &'static str,
    pub request_id: Option<String>,
    pub message_id: Option<String>,
    pub attempts_reset: bool,
}

impl ReportRetryReport {
    pub fn human(&self) -> String {
        match self.outcome {
            "published" => format!(
                "report.generate re-published for interview {} (organization {})\n  requestId: {}\n  messageId: {}\n  attempts reset: {}\n",
                self.interview_id,
                self.organization_id,
                self.request_id.as_deref().unwrap_or("-"),
                self.message_id.as_deref().unwrap_or("-"),
                if self.attempts_reset { "yes" } else { "no" }
            ),
            _ => format!("the report of interview {} is already COMPLETED: nothing published\n", self.interview_id),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantViolation {
    pub invariant: u8,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvariantsReport {
    /// The organization checked, or `None` for all.
    pub organization_id: Option<OrganizationId>,
    pub ok: bool,
    pub violations: Vec<InvariantViolation>,
}

impl InvariantsReport {
    pub fn human(&self) -> String {
        let scope = self.organization_id.map_or("all organizations".to_owned(), |o| format!("organization {o}"));
        if self.ok {
            return format!("invariants 1-5 hold for {scope}\n");
        }
        let mut s = format!("{} invariant violation(s) for {scope}:\n", self.violations.len());
        for v in &self.violations {
            s.push_str(&format!("  {}\n", v.message));
        }
        s
    }
}

pub async fn outbox_flush(_ctx: &Context, _older_than: Duration, _limit: i64) -> Result<OutboxFlushReport, OpsError> {
    Err(OpsError::Unavailable { command: "outbox flush", reason: "sophia-credits does not export flush_pending_outbox yet".into() })
}

pub async fn report_retry(
    _ctx: &Context,
    _interview_id: InterviewId,
    _organization_id: OrganizationId,
    _reset_attempts: bool,
) -> Result<ReportRetryReport, OpsError> {
    Err(OpsError::Unavailable { command: "report retry", reason: "sophia-reports does not export the admin retry yet".into() })
}

pub async fn invariants_check(_ctx: &Context, _org: Option<OrganizationId>) -> Result<InvariantsReport, OpsError> {
    Err(OpsError::Unavailable { command: "invariants check", reason: "sophia-credits does not export the invariant checker yet".into() })
}
