//! Commands that move money are explicit: against a queue that is not on this machine,
//! every command that publishes, redrives or resets first shows what it would do and the current
//! state of the interviews concerned (read from MongoDB), and runs only with `--yes`. Without it,
//! it prints that and exits non-zero; it never reads stdin (CI has none). `--dry-run` prints the
//! same plan and sends nothing, wherever the queue is.
//!
//! "Local" means no `--stage` and a loopback queue URL (the local pipeline's fauxqs, from the
//! environment or `.local/sophia.env`); `--stage <any>` and any other URL (AWS, a VPC endpoint,
//! another host) are treated as a real stage.

use std::collections::BTreeMap;

use bson::{Bson, Document, doc};
use serde::Serialize;
use sophia_contracts::InterviewId;

use crate::{Context, OpsError};

/// What a command would do, and what the interviews it concerns look like now.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// e.g. `publish interview.completed`.
    pub action: String,
    pub queue_url: String,
    pub local: bool,
    /// The exact body that would be sent, when there is one.
    pub body: Option<serde_json::Value>,
    /// Message attributes that would be sent.
    pub attributes: BTreeMap<String, String>,
    /// Anything else the operator must know (e.g. "resets the report's attempts").
    pub effects: Vec<String>,
    pub interviews: Vec<InterviewState>,
}

impl Plan {
    /// A plan for `queue_url` of the context's target (see [`Context::is_local`]).
    pub fn new(ctx: &Context, action: impl Into<String>, queue_url: impl Into<String>) -> Self {
        let queue_url = queue_url.into();
        Self {
            action: action.into(),
            local: ctx.is_local(&queue_url),
            queue_url,
            body: None,
            attributes: BTreeMap::new(),
            effects: Vec::new(),
            interviews: Vec::new(),
        }
    }

    pub fn human(&self) -> String {
        let mut s = format!("{} -> {}{}\n", self.action, self.queue_url, if self.local { " (local)" } else { "" });
        if let Some(body) = &self.body {
            s.push_str(&format!("  body:       {body}\n"));
        }
        for (k, v) in &self.attributes {
            s.push_str(&format!("  attribute:  {k} = {v}\n"));
        }
        for e in &self.effects {
            s.push_str(&format!("  plan:       {e}\n"));
        }
        for i in &self.interviews {
            s.push_str(&format!("  {}\n", i.human()));
        }
        s
    }
}

/// An interview as MongoDB holds it now (what the settlement and report flows look at).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InterviewState {
    pub interview_id: String,
    pub found: bool,
    pub organization_id: Option<String>,
    pub status: Option<String>,
    pub settled_at: Option<String>,
    pub credits_reserved: Option<i64>,
    pub credits_consumed: Option<i64>,
    pub report_status: Option<String>,
    pub report_attempts: Option<i64>,
    pub report_error_kind: Option<String>,
}

impl InterviewState {
    pub fn human(&self) -> String {
        if !self.found {
            return format!("interview {}: NOT FOUND in MongoDB", self.interview_id);
        }
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let num = |v: Option<i64>| v.map_or("-".into(), |n| n.to_string());
        format!(
            "interview {} (organization {}): status {}, settledAt {}, credits reserved {} consumed {}, report {} (attempts {}, errorKind {})",
            self.interview_id,
            opt(&self.organization_id),
            opt(&self.status),
            opt(&self.settled_at),
            num(self.credits_reserved),
            num(self.credits_consumed),
            opt(&self.report_status),
            num(self.report_attempts),
            opt(&self.report_error_kind),
        )
    }
}

/// A loopback queue URL (the local pipeline): `127.x`, `[::1]`, `localhost` or a `*.localhost`
/// name (RFC 6761; fauxqs answers `http://sqs.<region>.localhost:<port>/...`).
pub fn is_local_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    if rest.starts_with("[::1]") {
        return true;
    }
    let host = rest.split(['/', ':', '?']).next().unwrap_or("").to_ascii_lowercase();
    host.starts_with("127.") || host == "localhost" || host.ends_with(".localhost")
}

/// Reads the interviews' state, as the plan shows it.
pub async fn interview_states(ctx: &Context, ids: &[InterviewId]) -> Result<Vec<InterviewState>, OpsError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let db = ctx
        .mongo()
        .await
        .map_err(|e| {
            match e {
        OpsError::NotConfigured { .. } => OpsError::NotConfigured {
            what: "MongoDB".into(),
            hint: "set MONGODB_URI: the interview's current state is shown before anything is sent to a non-local queue"
                .into(),
        },
        other => other,
    }
        })?
        .db;
    let mut states = Vec::with_capacity(ids.len());
    for id in ids {
        let interview = db
            .collection::<Document>("interviews")
            .find_one(doc! {"_id": id.oid()})
            .await
            .map_err(|e| OpsError::domain("reading the interview", e))?;
        let report = db
            .collection::<Document>("interviewReports")
            .find_one(doc! {"interviewId": id.oid()})
            .await
            .map_err(|e| OpsError::domain("reading the report", e))?;
        states.push(state_of(*id, interview.as_ref(), report.as_ref()));
    }
    Ok(states)
}

fn state_of(id: InterviewId, interview: Option<&Document>, report: Option<&Document>) -> InterviewState {
    let credits = interview.and_then(|d| d.get_document("credits").ok());
    InterviewState {
        interview_id: id.to_string(),
        found: interview.is_some(),
        organization_id: interview.and_then(|d| d.get("organizationId")).and_then(text),
        status: interview.and_then(|d| d.get("status")).and_then(text),
        settled_at: interview.and_then(|d| d.get("settledAt")).and_then(text),
        credits_reserved: credits.and_then(|c| c.get("reserved")).and_then(number),
        credits_consumed: credits.and_then(|c| c.get("consumed")).and_then(number),
        report_status: report.and_then(|d| d.get("status")).and_then(text),
        report_attempts: report.and_then(|d| d.get("attemptCount")).and_then(number),
        report_error_kind: report.and_then(|d| d.get("errorKind")).and_then(text),
    }
}

/// Identifiers, statuses and dates only (these fields hold no candidate text).
pub(crate) fn text(v: &Bson) -> Option<String> {
    match v {
        Bson::String(s) => Some(s.chars().take(64).collect()),
        Bson::ObjectId(o) => Some(o.to_hex()),
        Bson::DateTime(d) => Some(d.try_to_rfc3339_string().unwrap_or_else(|_| d.to_string())),
        _ => None,
    }
}

/// Any integral BSON number, as other writers store it (Int32, Int64, a whole double).
pub(crate) fn number(v: &Bson) -> Option<i64> {
    sophia_documents::int::from_bson(v).ok()
}

/// The gate: a dry run returns the plan (with the state when MongoDB is reachable or the queue
/// is not local); a non-local run without `--yes` is refused with the plan; otherwise the plan is
/// noted for the operator and the command proceeds.
pub async fn gate(ctx: &Context, mut plan: Plan, ids: &[InterviewId], dry_run: bool) -> Result<Gate, OpsError> {
    if !plan.local || ctx.has_mongo() {
        plan.interviews = interview_states(ctx, ids).await?;
    }
    ctx.keep_plan(&plan);
    if dry_run {
        return Ok(Gate::DryRun(plan));
    }
    if !plan.local && !ctx.confirmed() {
        return Err(OpsError::ConfirmationRequired(Box::new(plan)));
    }
    if !plan.local {
        ctx.note(plan.human());
    }
    Ok(Gate::Proceed)
}

/// What [`gate`] decided.
#[derive(Debug)]
pub enum Gate {
    DryRun(Plan),
    Proceed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_queue_urls_are_local() {
        assert!(is_local_url("http://127.0.0.1:4566/000000000000/sophia-report-generate"));
        assert!(is_local_url("http://localhost:4566/q"));
        assert!(is_local_url("http://sqs.us-east-1.localhost:41529/000000000000/t-report-generate"));
        assert!(!is_local_url("https://localhost.example.com/q"));
        assert!(!is_local_url("https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-prod-report-generate"));
        assert!(!is_local_url("https://vpce-1.sqs.eu-west-1.vpce.amazonaws.com/1/q"));
    }

    #[test]
    fn the_state_reads_what_other_writers_store() {
        let id: InterviewId = "65a1b2c3d4e5f60718293a4b".parse().unwrap();
        // Mongoose writes Int32, the mongo shell doubles; a report without attemptCount.
        let interview = doc! {"_id": id.oid(), "organizationId": bson::oid::ObjectId::new(), "status": "COMPLETED",
        "settledAt": bson::DateTime::from_millis(0), "credits": {"reserved": 10_i32, "consumed": 2.0}};
        let report = doc! {"interviewId": id.oid(), "status": "FAILED"};
        let s = state_of(id, Some(&interview), Some(&report));
        assert_eq!((s.credits_reserved, s.credits_consumed), (Some(10), Some(2)));
        assert_eq!(s.settled_at.as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!((s.report_status.as_deref(), s.report_attempts), (Some("FAILED"), None));
        assert!(s.human().contains("settledAt 1970-01-01T00:00:00Z"), "{}", s.human());
        assert!(state_of(id, None, None).human().contains("NOT FOUND"));
    }
}
