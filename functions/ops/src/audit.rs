//! The operator audit trail: every mutating command (publish, dlq redrive, dlq delete, queue
//! move, outbox flush, report retry, migrate) writes one record, dry runs and refusals included:
//! who (the AWS identity from STS `GetCallerIdentity` when the command targets AWS and there are
//! credentials; else `--by` / `SOPHIA_OPERATOR` / `$USER` / the uid, marked self-declared), what
//! (the command and its arguments, candidate text redacted), the request id its messages carry,
//! the plan, the outcome, and when it started and finished.
//!
//! Where: one JSON line on stderr (`{"audit": {...}}`) always, and a document in the MongoDB
//! collection `operatorAudit` when MongoDB is configured. The CLI only ever inserts into it
//! (`sophia-ops audit list` reads it); retention is the operators' decision (the collection has
//! no TTL index: see docs/runbook.md#audit-trail).

use serde::Serialize;

use crate::{Context, EXIT_ERROR, EXIT_OK, OpsError, Outcome};

/// The collection of audit records.
pub const OPERATOR_AUDIT: &str = "operatorAudit";

/// Who acts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// An AWS principal ARN, or a self-declared name.
    pub who: String,
    /// `aws-sts`, `--by`, `USER`, `uid`.
    pub source: &'static str,
    /// Not verified by anything (not an AWS identity).
    pub self_declared: bool,
}

impl Identity {
    /// `--by` / `SOPHIA_OPERATOR`, else `$USER`, else the uid.
    pub fn declared(by: Option<&str>) -> Self {
        if let Some(by) = by.map(str::trim).filter(|b| !b.is_empty()) {
            return Self { who: by.to_owned(), source: "--by", self_declared: true };
        }
        if let Some(user) = sophia_platform::env::var("USER").filter(|u| !u.trim().is_empty()) {
            return Self { who: user, source: "USER", self_declared: true };
        }
        Self {
            who: format!("uid-{}", uid().map_or("unknown".into(), |u| u.to_string())),
            source: "uid",
            self_declared: true,
        }
    }
}

/// The process's uid (Unix), from `/proc/self` or the home directory's owner.
fn uid() -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The request id a command's messages carry: `ops:<command>:<who>:<uuid>`.
pub fn request_id(command: &str, who: &str) -> String {
    format!("ops:{command}:{who}:{}", uuid::Uuid::new_v4())
}

/// Every string value of a key that may hold candidate text (`failureReason`, `reason`) becomes a
/// length marker; bodies kept as strings are redacted by the contract rules.
pub fn redact_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match (k.as_str(), &v) {
                    ("failureReason" | "reason", serde_json::Value::String(s)) => {
                        *v = serde_json::Value::String(crate::contract::marker(s));
                    }
                    ("body", serde_json::Value::String(s)) => {
                        *v = serde_json::Value::String(crate::contract::redact(s));
                    }
                    _ => redact_json(v),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        _ => {}
    }
}

/// The arguments as typed, with the value of `--reason` / `--failure-reason` redacted.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push(crate::contract::marker(a));
            hide_next = false;
            continue;
        }
        if let Some((flag, value)) = a.split_once('=').filter(|(f, _)| matches!(*f, "--reason" | "--failure-reason")) {
            out.push(format!("{flag}={}", crate::contract::marker(value)));
            continue;
        }
        hide_next = matches!(a.as_str(), "--reason" | "--failure-reason");
        out.push(a.clone());
    }
    out
}

/// One audit record.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub command: String,
    pub args: Vec<String>,
    pub stage: Option<String>,
    pub who: Identity,
    pub request_id: String,
    pub started_at: String,
    pub finished_at: String,
    /// `done`, `incomplete`, `dry-run`, `refused` (no `--yes`), `error`.
    pub result: &'static str,
    pub exit_code: i32,
    /// The plan the operator saw (or confirmed), when there was one.
    pub plan: Option<serde_json::Value>,
    /// The command's output (JSON), or the error.
    pub outcome: serde_json::Value,
}

impl Record {
    /// The stderr line.
    pub fn line(&self) -> String {
        serde_json::json!({"audit": self}).to_string()
    }
}

/// `audit list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditListing {
    pub records: Vec<serde_json::Value>,
}

impl AuditListing {
    pub fn human(&self) -> String {
        let mut s = format!("{} audit record(s), newest first\n", self.records.len());
        for r in &self.records {
            let get = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_owned();
            let who = r.get("who").and_then(|w| w.get("who")).and_then(|v| v.as_str()).unwrap_or("-");
            let declared = r.get("who").and_then(|w| w.get("selfDeclared")).and_then(|v| v.as_bool()).unwrap_or(true);
            s.push_str(&format!(
                "  {}  {:<18} {:<10} by {}{}  requestId {}\n",
                get("startedAt"),
                get("command"),
                get("result"),
                who,
                if declared { " (self-declared)" } else { "" },
                get("requestId"),
            ));
        }
        s
    }
}

/// Reads the latest records (newest first).
pub async fn list(
    ctx: &crate::Context,
    limit: i64,
    command: Option<&str>,
    since: Option<std::time::Duration>,
) -> Result<AuditListing, crate::OpsError> {
    use futures::TryStreamExt;
    let db = ctx.mongo().await?.db;
    let mut filter = bson::doc! {};
    if let Some(c) = command {
        filter.insert("command", c);
    }
    if let Some(since) = since {
        let after = chrono::Utc::now() - chrono::Duration::seconds(since.as_secs() as i64);
        filter.insert("startedAt", bson::doc! {"$gte": after.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)});
    }
    let docs: Vec<bson::Document> = db
        .collection::<bson::Document>(OPERATOR_AUDIT)
        .find(filter)
        .sort(bson::doc! {"startedAt": -1})
        .limit(limit)
        .await
        .map_err(|e| crate::OpsError::domain("reading the audit trail", e))?
        .try_collect()
        .await
        .map_err(|e| crate::OpsError::domain("reading the audit trail", e))?;
    let records = docs
        .into_iter()
        .map(|mut d| {
            d.remove("_id");
            bson::Bson::Document(d).into_relaxed_extjson()
        })
        .collect();
    Ok(AuditListing { records })
}

/// Inserts `record` into `operatorAudit`.
pub async fn write(db: &mongodb::Database, record: &Record) -> Result<(), String> {
    let doc = bson::to_document(record).map_err(|e| e.to_string())?;
    db.collection::<bson::Document>(OPERATOR_AUDIT).insert_one(doc).await.map(|_| ()).map_err(|e| e.to_string())
}

/// Writes the audit record of a mutating command (MongoDB `operatorAudit` when configured) and
/// returns its stderr lines (the record, and a warning if it could not be stored).
pub async fn record_audit(
    ctx: &Context,
    command: &'static str,
    args: &[String],
    started: chrono::DateTime<chrono::Utc>,
    result: &Result<Outcome, OpsError>,
) -> String {
    let who = ctx.identify().await;
    let request_id = match ctx.current_request_id() {
        Some(r) => r,
        None => ctx.request_id(command).await,
    };
    let (kind, exit_code, mut outcome) = match result {
        Ok(Outcome::DryRun(_)) => ("dry-run", EXIT_OK, serde_json::to_value(result.as_ref().ok()).unwrap_or_default()),
        Ok(o) => (
            if o.exit_code() == EXIT_OK { "done" } else { "incomplete" },
            o.exit_code(),
            serde_json::to_value(o).unwrap_or_default(),
        ),
        Err(OpsError::ConfirmationRequired(_)) => {
            ("refused", EXIT_ERROR, serde_json::json!({"error": "not confirmed (--yes)"}))
        }
        Err(e) => ("error", EXIT_ERROR, serde_json::json!({"error": e.to_string(), "kind": e.kind()})),
    };
    redact_json(&mut outcome);
    let mut plan = ctx.take_plan().and_then(|p| serde_json::to_value(p).ok());
    if let Some(p) = plan.as_mut() {
        redact_json(p);
    }
    let record = Record {
        command: command.to_owned(),
        args: redact_args(args),
        stage: ctx.stage.clone(),
        who,
        request_id,
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        result: kind,
        exit_code,
        plan,
        outcome,
    };
    let mut lines = record.line() + "\n";
    if ctx.has_mongo() {
        let stored = match ctx.mongo().await {
            Ok(m) => write(&m.db, &record).await,
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = stored {
            lines.push_str(&format!(
                "warning: the audit record was NOT stored in MongoDB ({}): keep the line above\n",
                e
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_text_never_reaches_the_record() {
        let args: Vec<String> =
            ["publish", "failed", "a", "b", "--reason", "the candidate said X", "--failure-reason=Y Z"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let shown = redact_args(&args).join(" ");
        assert!(!shown.contains("candidate said") && !shown.contains("Y Z"), "{shown}");
        let mut v = serde_json::json!({"plan": {"body": {"failureReason": "secret words"}}, "x": [{"body": "{\"failureReason\":\"more\"}"}]});
        redact_json(&mut v);
        assert!(!v.to_string().contains("secret words") && !v.to_string().contains("more"), "{v}");
    }

    #[test]
    fn a_declared_identity_says_so_and_request_ids_name_command_and_operator() {
        let id = Identity::declared(Some("alice"));
        assert_eq!((id.who.as_str(), id.source, id.self_declared), ("alice", "--by", true));
        let r = request_id("dlq-redrive", "alice");
        assert!(r.starts_with("ops:dlq-redrive:alice:") && r.len() > 30, "{r}");
    }
}
