//! The operator audit trail: every mutating command (publish, dlq redrive, dlq delete, queue
//! move, outbox flush, report retry, migrate) writes one record, dry runs and refusals included:
//! who (the AWS identity from STS `GetCallerIdentity` when the command targets AWS and there are
//! credentials; else `--by` / `SOPHIA_OPERATOR` / `$USER` / the uid, marked self-declared), what
//! (the command and its arguments, candidate text redacted), the request id its messages carry,
//! the plan, the outcome, and when it started and finished.
//!
//! Where ([`Sink`]): one JSON line on stderr (`{"audit": {...}}`) always, and
//! - on a stage (the queues are AWS's), the stage's CloudWatch Logs group
//!   `<app>-<stage>-operator-audit` (declarations/queues.json `operatorAuditLogGroup`): one log
//!   stream per command, created before the command does anything (a command whose record
//!   could not be written is refused), the record appended when it ends. The stack's operator
//!   policy allows only `CreateLogStream`, `PutLogEvents` and `FilterLogEvents` there: the
//!   operator role can append and read, never change or delete a record;
//! - on the local pipeline, its stand-in with the same append-only interface
//!   ([`Sink::append`], [`Sink::list`]): the MongoDB collection `operatorAudit`, when
//!   `MONGODB_URI` is set (the CLI only inserts into it).
//!
//! Who, on a stage, is STS `GetCallerIdentity` of the credentials in use, from AWS's own STS
//! endpoint: an overridden one (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`) is refused
//! ([`endpoint_overrides`]), as is an overridden CloudWatch Logs endpoint. What a record says of
//! its author is the client's word; the stream it is in is AWS's: the operator policy lets a
//! session create and append only to streams under `source/<its aws:SourceIdentity>/` (a role
//! session) or `user/<its aws:username>/` (an IAM user) (infra-bootstrap/src/policies.ts,
//! `AUDIT_STREAM_PREFIXES`), so [`list`] shows each stage record's identity from its stream name
//! ([`StreamOwner`]) and flags a record whose own claim disagrees.

use serde::Serialize;

use crate::{Context, EXIT_ERROR, EXIT_OK, OpsError, Outcome};

/// The environment variables that would send STS or CloudWatch Logs calls elsewhere than AWS
/// (the AWS SDK's service-specific and global endpoint overrides).
pub const ENDPOINT_OVERRIDES: [&str; 3] =
    ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"];

/// The overrides set in `lookup` (the process environment, or the env file overlaid on it).
pub fn endpoint_overrides(lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
    ENDPOINT_OVERRIDES
        .iter()
        .filter_map(|name| lookup(name).filter(|v| !v.trim().is_empty()).map(|v| format!("{name}={v}")))
        .collect()
}

/// CloudWatch Logs at AWS's own endpoint, whatever the environment or profile says.
fn logs_client(config: &aws_config::SdkConfig) -> aws_sdk_cloudwatchlogs::Client {
    let mut builder = aws_sdk_cloudwatchlogs::config::Builder::from(config);
    builder.set_endpoint_url(None);
    aws_sdk_cloudwatchlogs::Client::from_conf(builder.build())
}

/// The stage's audit log group: `<app>-<stage>-<operatorAuditLogGroup>`.
pub fn log_group_name(stage: &str) -> String {
    let d = sophia_declarations::Declaration::embedded();
    d.stage_name(stage, &d.operator_audit_log_group)
}

/// Where the records of this run go: append and read back, nothing else.
#[derive(Debug, Clone)]
pub enum Sink {
    /// A stage: its CloudWatch Logs group and this command's stream (created when opened).
    CloudWatchLogs { client: aws_sdk_cloudwatchlogs::Client, group: String, stream: String },
    /// The local pipeline's stand-in: MongoDB `operatorAudit`, inserted into only.
    Mongo(mongodb::Database),
    /// The local pipeline without `MONGODB_URI`: stderr only (never on a stage).
    StderrOnly,
}

impl Sink {
    /// Appends one record.
    pub async fn append(&self, record: &Record) -> Result<(), String> {
        match self {
            Self::CloudWatchLogs { client, group, stream } => {
                let event = aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
                    .timestamp(chrono::Utc::now().timestamp_millis())
                    .message(serde_json::to_string(record).map_err(|e| e.to_string())?)
                    .build()
                    .map_err(|e| e.to_string())?;
                client
                    .put_log_events()
                    .log_group_name(group)
                    .log_stream_name(stream)
                    .log_events(event)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e).to_string())
            }
            Self::Mongo(db) => write(db, record).await,
            Self::StderrOnly => Ok(()),
        }
    }

    /// Where it writes, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::CloudWatchLogs { group, stream, .. } => format!("CloudWatch Logs {group} (stream {stream})"),
            Self::Mongo(db) => format!("MongoDB {}.{OPERATOR_AUDIT}", db.name()),
            Self::StderrOnly => "stderr only (local, MONGODB_URI not set)".into(),
        }
    }
}

/// Opens the audit trail of a command that changes something, before it runs. On a stage:
/// refuses an overridden STS or CloudWatch Logs endpoint, then creates the command's log stream
/// (refused if that fails: no command runs whose record cannot be kept). Locally: MongoDB when
/// configured, else stderr only.
pub async fn open(ctx: &Context, command: &str) -> Result<Sink, OpsError> {
    if !ctx.targets_aws().await {
        return Ok(match ctx.mongo_for_plan().await {
            Some(m) => Sink::Mongo(m.db),
            None => Sink::StderrOnly,
        });
    }
    let overrides = endpoint_overrides(|name| ctx.env.get(name));
    if !overrides.is_empty() {
        return Err(OpsError::AuditRefused(format!(
            "{} is set: on a stage, the audit record's identity and trail must come from AWS's own STS and CloudWatch Logs; unset it",
            overrides.join(", ")
        )));
    }
    let Some(stage) = ctx.stage.as_deref() else {
        return Err(OpsError::AuditRefused(
            "the queues are AWS queues but --stage is not given: name the stage, so the record goes to its audit trail"
                .into(),
        ));
    };
    let group = log_group_name(stage);
    let who = ctx.identify().await;
    if who.self_declared {
        return Err(OpsError::AuditRefused(format!(
            "no AWS identity (STS GetCallerIdentity did not answer): on a stage the audit record's identity must be AWS's, not {} ({})",
            who.who, who.source
        )));
    }
    let owner = StreamOwner::for_caller(&who.who, ctx.declared_name().as_deref()).map_err(OpsError::AuditRefused)?;
    let stream = format!(
        "{}{}-{command}-{}",
        owner.prefix(),
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        uuid::Uuid::new_v4().simple()
    );
    let client = logs_client(&ctx.aws_config().await);
    client.create_log_stream().log_group_name(&group).log_stream_name(&stream).send().await.map_err(|e| {
        OpsError::AuditRefused(format!(
            "the audit trail {group} did not accept the log stream {stream} ({}): the operator policy (OPS_POLICY_ARN) allows logs:CreateLogStream only under {} {}/ (docs/runbook.md, \"Audit trail\")",
            aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e),
            owner.kind_words(),
            owner.prefix().trim_end_matches('/'),
        ))
    })?;
    Ok(Sink::CloudWatchLogs { client, group, stream })
}

/// Whose stream: the identity AWS binds a stream's name to (the operator policy's
/// `AUDIT_STREAM_PREFIXES`, infra-bootstrap/src/policies.ts). A name is one of AWS's source
/// identity or user name characters (`[\w+=,.@-]`), so it holds no slash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamOwner {
    /// `source` (a role session's `aws:SourceIdentity`) or `user` (an IAM user's `aws:username`).
    pub kind: &'static str,
    pub name: String,
}

impl StreamOwner {
    /// The owner a caller's streams must have: for an IAM user (`arn:...:iam::<account>:user/<path/>name`)
    /// its name; for a role session (`arn:...:sts::<account>:assumed-role/<role>/<session>`) its
    /// source identity, which STS does not tell the caller: `declared` (`--by` or `SOPHIA_OPERATOR`),
    /// else the session name (AWS refuses the stream if it is not the session's source identity).
    pub fn for_caller(arn: &str, declared: Option<&str>) -> Result<Self, String> {
        let resource = arn.splitn(6, ':').nth(5).unwrap_or("");
        let (kind, name) = if let Some(path) = resource.strip_prefix("user/") {
            ("user", path.rsplit('/').next().unwrap_or("").to_owned())
        } else if let Some(rest) = resource.strip_prefix("assumed-role/") {
            let session = rest.split_once('/').map_or("", |(_, session)| session);
            ("source", declared.map(str::trim).filter(|d| !d.is_empty()).unwrap_or(session).to_owned())
        } else {
            return Err(format!(
                "{arn} is neither a role session nor an IAM user: it has no audit stream of its own (docs/runbook.md, \"Audit trail\")"
            ));
        };
        if !Self::valid_name(&name) {
            return Err(format!(
                "{name:?} cannot be an AWS {} (1 to 64 of letters, digits and _+=,.@-): set --by (or SOPHIA_OPERATOR) to the session's source identity",
                if kind == "user" { "user name" } else { "source identity" }
            ));
        }
        Ok(Self { kind, name })
    }

    fn valid_name(name: &str) -> bool {
        (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c))
    }

    /// The stream's owner from its name (`source/<name>/...`, `user/<name>/...`); `None` for a
    /// stream no policy binds (the unbound names written before the policy did).
    pub fn of_stream(stream: &str) -> Option<Self> {
        let (kind, rest) = stream.split_once('/')?;
        let kind = match kind {
            "source" => "source",
            "user" => "user",
            _ => return None,
        };
        let (name, _) = rest.split_once('/')?;
        Self::valid_name(name).then(|| Self { kind, name: name.to_owned() })
    }

    /// `source/<name>/`: the prefix of its streams.
    pub fn prefix(&self) -> String {
        format!("{}/{}/", self.kind, self.name)
    }

    fn kind_words(&self) -> &'static str {
        if self.kind == "user" { "the IAM user's name" } else { "the session's source identity" }
    }

    /// Where a record's own claim (its `who`) disagrees with this owner, in words; `None` when it
    /// agrees: a user's record must name that user's ARN, a source identity's record a role
    /// session and this owner (`who.streamOwner`).
    pub fn disagreement(&self, record: &serde_json::Value) -> Option<String> {
        let who = record.get("who");
        let arn = who.and_then(|w| w.get("who")).and_then(|v| v.as_str()).unwrap_or("");
        let claimed_owner =
            who.and_then(|w| w.get("streamOwner")).and_then(|o| serde_json::from_value::<ClaimedOwner>(o.clone()).ok());
        let claimed =
            Self::for_caller(arn, claimed_owner.as_ref().filter(|o| o.kind == "source").map(|o| o.name.as_str()));
        match claimed {
            Ok(c) if c == *self => None,
            Ok(c) => Some(format!("the record claims {arn} ({} {}), its stream is {}'s", c.kind, c.name, self.name)),
            Err(_) => Some(format!("the record claims {:?}, its stream is {} {}'s", arn, self.kind, self.name)),
        }
    }
}

/// A record's `who.streamOwner`, as read back.
#[derive(Debug, serde::Deserialize)]
struct ClaimedOwner {
    kind: String,
    name: String,
}

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
    /// On a stage: the owner of the stream the record is written to, as this client claims it
    /// (`audit list` compares it with the stream's actual name, which AWS bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_owner: Option<StreamOwner>,
}

impl Identity {
    /// `--by` / `SOPHIA_OPERATOR`, else `$USER`, else the uid.
    pub fn declared(by: Option<&str>) -> Self {
        if let Some(by) = by.map(str::trim).filter(|b| !b.is_empty()) {
            return Self { who: by.to_owned(), source: "--by", self_declared: true, stream_owner: None };
        }
        if let Some(user) = sophia_platform::env::var("USER").filter(|u| !u.trim().is_empty()) {
            return Self { who: user, source: "USER", self_declared: true, stream_owner: None };
        }
        Self {
            who: format!("uid-{}", uid().map_or("unknown".into(), |u| u.to_string())),
            source: "uid",
            self_declared: true,
            stream_owner: None,
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
                    // A declared erasure reason is one fixed word, never candidate text.
                    ("reason", serde_json::Value::String(s))
                        if sophia_declarations::ErasureReason::parse(s).is_ok() => {}
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
    /// What the command acted on: its positional arguments after the command's words (a queue,
    /// an interview and its organization, a message id).
    pub target: String,
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
    /// The SSM Automation execution the command started (`queue pause|resume` on a stage): SSM
    /// records who ran it (`ExecutedBy`), which `audit list` and `queue status` read back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automation_execution_id: Option<String>,
}

impl Record {
    /// The stderr line with `--json`.
    pub fn line(&self) -> String {
        serde_json::json!({"audit": self}).to_string()
    }

    /// The stderr line a person reads: what, on what, the result, who, the request id.
    pub fn summary(&self) -> String {
        format!(
            "audited: {} {} -> {} by {}{} (requestId {})",
            self.command,
            self.target,
            self.result,
            self.who.who,
            if self.who.self_declared { " (self-declared)" } else { "" },
            self.request_id
        )
    }
}

/// The positional arguments of `args` after the words of `command` (`queue-pause` has two:
/// `queue pause`), flags and their values left out.
pub fn target_of(command: &str, args: &[String]) -> String {
    let words = command.split('-').count();
    let mut positional = Vec::new();
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
        } else if let Some(flag) = a.strip_prefix("--") {
            // `--flag value` (a value flag) vs `--yes`, `--dry-run` (switches).
            skip_value = !flag.contains('=') && !SWITCHES.contains(&flag);
        } else {
            positional.push(a.as_str());
        }
    }
    // Global flags may come first (`--env-file x queue pause q`): the command's words are the
    // first positional ones.
    positional.into_iter().skip(words).collect::<Vec<_>>().join(" ")
}

/// The switches of sophia-ops (flags without a value).
const SWITCHES: [&str; 7] = ["yes", "dry-run", "json", "no-env-file", "show-body", "keep-attempts", "reset-attempts"];

/// Who paused `queue`'s (disabled) mapping, in words: `paused by <who> at <when> (<command>)`
/// from the latest `queue-pause` (sophia-ops) or `local-pause` (sophia-local) record naming it
/// over [`PAUSE_LOOKBACK_DAYS`], when no `queue-resume` / `local-resume` came after it; otherwise
/// it says no pause was found in that time and where an older one or another hand is found.
pub async fn who_paused(ctx: &Context, queue: crate::queues::QueueName) -> String {
    let name = queue.to_string();
    let pause = latest_naming(ctx, ["queue-pause", LOCAL_PAUSE], &name).await;
    let resume = latest_naming(ctx, ["queue-resume", LOCAL_RESUME], &name).await;
    match (pause, resume) {
        (Ok(mut pause), Ok(resume)) => {
            if let Some(p) = pause.as_mut() {
                attach_executed_by(ctx, std::slice::from_mut(p)).await;
            }
            pause_words(pause.as_ref(), resume.as_ref())
        }
        (Err(e), _) | (_, Err(e)) => format!("who paused it cannot be told (the audit trail could not be read: {e})"),
    }
}

/// How far back [`who_paused`] looks for a pause (the audit log group keeps 400 days:
/// infra-bootstrap's `AUDIT_RETENTION_DAYS`; older ones with `audit list --since`).
pub const PAUSE_LOOKBACK_DAYS: u64 = 7;

/// The newest `done` record of `commands` over [`PAUSE_LOOKBACK_DAYS`] whose arguments name `name`.
async fn latest_naming(
    ctx: &Context,
    commands: [&str; 2],
    name: &str,
) -> Result<Option<serde_json::Value>, crate::OpsError> {
    let week = std::time::Duration::from_secs(PAUSE_LOOKBACK_DAYS * 86_400);
    let mut latest: Option<serde_json::Value> = None;
    for command in commands {
        let listing = list(ctx, 50, Some(command), Some(week)).await?;
        let named = listing.records.into_iter().find(|r| {
            let args = r.get("args").and_then(|a| a.as_array());
            r.get("result").and_then(|v| v.as_str()) == Some("done")
                && args.is_some_and(|a| a.iter().any(|v| v.as_str() == Some(name)))
        });
        if let Some(r) = named.filter(|r| latest.as_ref().is_none_or(|l| started(l) < started(r))) {
            latest = Some(r);
        }
    }
    Ok(latest)
}

fn started(r: &serde_json::Value) -> &str {
    r.get("startedAt").and_then(|v| v.as_str()).unwrap_or("")
}

/// [`who_paused`] from the latest pause and resume records (no I/O): the pause is named only
/// when it came after the latest resume.
pub fn pause_words(pause: Option<&serde_json::Value>, resume: Option<&serde_json::Value>) -> String {
    match pause.filter(|p| resume.is_none_or(|r| started(r) < started(p))) {
        Some(r) => {
            let get = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_owned();
            let who = match (r.get("awsIdentity"), r.get("executedBy")) {
                (Some(serde_json::Value::Object(_)), _) | (_, Some(_)) => record_author(r),
                _ => r.get("who").and_then(|w| w.get("who")).and_then(|v| v.as_str()).unwrap_or("-").to_owned(),
            };
            format!("paused by {who} at {} ({})", get("startedAt"), get("command"))
        }
        None => format!(
            "no sophia-ops pause of it in the last {PAUSE_LOOKBACK_DAYS} days: paused earlier (older: `audit list --command queue-pause --since 400d`) or disabled outside sophia-ops (CloudTrail: UpdateEventSourceMapping / StartAutomationExecution)"
        ),
    }
}

/// The command name of a pause made with `sophia-local pause` (the local runner writes its
/// record in `operatorAudit`, in the shape of [`Record`]).
pub const LOCAL_PAUSE: &str = "local-pause";
/// The command name of a resume made with `sophia-local resume`.
pub const LOCAL_RESUME: &str = "local-resume";

/// `audit list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditListing {
    pub records: Vec<serde_json::Value>,
    /// More records match than `--limit` let through.
    pub truncated: bool,
    pub limit: i64,
}

impl AuditListing {
    pub fn human(&self) -> String {
        let mut s = format!(
            "{} audit record(s), newest first{}\n",
            self.records.len(),
            if self.truncated {
                format!(" (--limit {} reached: older records match too; raise --limit or narrow --since)", self.limit)
            } else {
                String::new()
            }
        );
        for r in &self.records {
            let get = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_owned();
            let args: Vec<String> = r
                .get("args")
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            let target = r
                .get("target")
                .and_then(|v| v.as_str())
                .map_or_else(|| target_of(&get("command"), &args), str::to_owned);
            s.push_str(&format!(
                "  {}  {:<18} {:<40} {:<10} by {}  requestId {}\n",
                get("startedAt"),
                get("command"),
                if target.is_empty() { "-".to_owned() } else { target },
                get("result"),
                record_author(r),
                get("requestId"),
            ));
        }
        s
    }
}

/// Reads the latest records (newest first): on a stage from its CloudWatch Logs group, locally
/// from MongoDB `operatorAudit`.
pub async fn list(
    ctx: &crate::Context,
    limit: i64,
    command: Option<&str>,
    since: Option<std::time::Duration>,
) -> Result<AuditListing, crate::OpsError> {
    if ctx.targets_aws().await {
        return list_stage(ctx, limit, command, since).await;
    }
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
        .limit(limit + 1)
        .await
        .map_err(|e| crate::OpsError::domain("reading the audit trail", e))?
        .try_collect()
        .await
        .map_err(|e| crate::OpsError::domain("reading the audit trail", e))?;
    let truncated = docs.len() as i64 > limit;
    let records = docs
        .into_iter()
        .take(usize::try_from(limit).unwrap_or(0))
        .map(|mut d| {
            d.remove("_id");
            bson::Bson::Document(d).into_relaxed_extjson()
        })
        .collect();
    Ok(AuditListing { records, truncated, limit })
}

/// Events read from the stage's audit trail at most (newest kept): `--since` narrows it.
const MAX_EVENTS_READ: usize = 10_000;

async fn list_stage(
    ctx: &crate::Context,
    limit: i64,
    command: Option<&str>,
    since: Option<std::time::Duration>,
) -> Result<AuditListing, crate::OpsError> {
    let stage = ctx.stage.as_deref().ok_or_else(|| crate::OpsError::NotConfigured {
        what: "the stage".into(),
        hint: "audit list on AWS queues needs --stage".into(),
    })?;
    let group = log_group_name(stage);
    let client = logs_client(&ctx.aws_config().await);
    let start =
        since.map(|s| chrono::Utc::now().timestamp_millis() - i64::try_from(s.as_millis()).unwrap_or(i64::MAX / 2));
    let mut records = Vec::new();
    let mut token: Option<String> = None;
    let mut more = false;
    loop {
        let out = client
            .filter_log_events()
            .log_group_name(&group)
            .set_start_time(start)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| crate::OpsError::Domain {
                context: "reading the audit trail",
                message: aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e).to_string(),
            })?;
        for event in out.events() {
            let Some(mut record) = event.message().and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
            else {
                continue;
            };
            if command.is_none_or(|c| record.get("command").and_then(|v| v.as_str()) == Some(c)) {
                attach_aws_identity(&mut record, event.log_stream_name().unwrap_or(""));
                records.push(record);
            }
        }
        token = out.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
        if records.len() >= MAX_EVENTS_READ {
            more = true;
            break;
        }
    }
    let started = |r: &serde_json::Value| r.get("startedAt").and_then(|v| v.as_str()).unwrap_or("").to_owned();
    records.sort_by_key(|r| std::cmp::Reverse(started(r)));
    let truncated = more || records.len() as i64 > limit;
    records.truncate(usize::try_from(limit).unwrap_or(0));
    Ok(AuditListing { records, truncated, limit })
}

/// Adds to a record read from a stage's trail the identity AWS bound to its stream
/// (`awsIdentity`: `{kind, name, stream}`, or `null` for a stream no policy binds) and, when the
/// record's own claim disagrees with it, `identityDisagrees` (in words).
pub fn attach_aws_identity(record: &mut serde_json::Value, stream: &str) {
    let owner = StreamOwner::of_stream(stream);
    let disagrees = owner.as_ref().and_then(|o| o.disagreement(record));
    if let Some(map) = record.as_object_mut() {
        map.insert(
            "awsIdentity".into(),
            owner.map_or(
                serde_json::Value::Null,
                |o| serde_json::json!({"kind": o.kind, "name": o.name, "stream": stream}),
            ),
        );
        if let Some(d) = disagrees {
            map.insert("identityDisagrees".into(), serde_json::Value::String(d));
        }
    }
}

/// SSM's own record of who ran an Automation execution (`ExecutedBy`: the caller's ARN, AWS's
/// word), from GetAutomationExecution (which the operators' policy allows on every execution of
/// the account: infra-bootstrap/src/policies.ts, `OPS_SWITCH_READ_ACTIONS`).
async fn executed_by(ctx: &Context, id: &str) -> Result<String, String> {
    let ssm = aws_sdk_ssm::Client::new(&ctx.aws_config().await);
    let out = ssm
        .get_automation_execution()
        .automation_execution_id(id)
        .send()
        .await
        .map_err(|e| aws_sdk_ssm::error::DisplayErrorContext(e).to_string())?;
    out.automation_execution
        .and_then(|e| e.executed_by)
        .ok_or_else(|| format!("SSM names no ExecutedBy for execution {id}"))
}

/// Adds `executedBy` (SSM's, or `executedByError`) to each record that names an Automation
/// execution: one GetAutomationExecution per such record, so only for records shown.
pub async fn attach_executed_by(ctx: &Context, records: &mut [serde_json::Value]) {
    for r in records.iter_mut() {
        let Some(id) = r.get("automationExecutionId").and_then(|v| v.as_str()).map(str::to_owned) else {
            continue;
        };
        let (key, value) = match executed_by(ctx, &id).await {
            Ok(arn) => ("executedBy", arn),
            Err(e) => ("executedByError", e),
        };
        if let Some(map) = r.as_object_mut() {
            map.insert(key.into(), serde_json::Value::String(value));
        }
    }
}

/// Who a record is by, in words: on a stage the identity AWS bound to its stream (the record's
/// own claim flagged when it disagrees, or named as unbound); locally the record's claim.
pub fn record_author(r: &serde_json::Value) -> String {
    let ssm = match (r.get("executedBy").and_then(|v| v.as_str()), r.get("executedByError").and_then(|v| v.as_str())) {
        (Some(arn), _) => format!(" [SSM ExecutedBy {arn}]"),
        (None, Some(e)) => format!(" [SSM ExecutedBy unread: {e}]"),
        _ => String::new(),
    };
    record_claim_or_stream(r) + &ssm
}

fn record_claim_or_stream(r: &serde_json::Value) -> String {
    let claimed = r.get("who").and_then(|w| w.get("who")).and_then(|v| v.as_str()).unwrap_or("-");
    let declared = r.get("who").and_then(|w| w.get("selfDeclared")).and_then(|v| v.as_bool()).unwrap_or(true);
    match r.get("awsIdentity") {
        Some(serde_json::Value::Object(aws)) => {
            let name = aws.get("name").and_then(|v| v.as_str()).unwrap_or("-");
            let kind =
                if aws.get("kind").and_then(|v| v.as_str()) == Some("user") { "IAM user" } else { "source identity" };
            match r.get("identityDisagrees").and_then(|v| v.as_str()) {
                Some(d) => format!("{kind} {name} (AWS) [IDENTITY DISAGREES: {d}]"),
                None => format!("{kind} {name} (AWS)"),
            }
        }
        Some(_) => format!("{claimed} (unbound stream: the client's claim)"),
        None => format!("{claimed}{}", if declared { " (self-declared)" } else { "" }),
    }
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
    let (record, warnings) = store_audit(ctx, command, args, started, result).await;
    record.line() + "\n" + &warnings
}

/// Writes the audit record of a mutating command and returns it with the warnings to print
/// (a record that could not be stored, a local one on stderr only).
pub async fn store_audit(
    ctx: &Context,
    command: &'static str,
    args: &[String],
    started: chrono::DateTime<chrono::Utc>,
    result: &Result<Outcome, OpsError>,
) -> (Record, String) {
    let who = ctx.identify().await;
    let request_id = match ctx.current_request_id() {
        Some(r) => r,
        None => ctx.request_id(command).await,
    };
    let (kind, exit_code, mut outcome) = match result {
        Ok(o) if o.is_dry_run() => ("dry-run", EXIT_OK, serde_json::to_value(o).unwrap_or_default()),
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
    let args = redact_args(args);
    let mut record = Record {
        command: command.to_owned(),
        target: target_of(command, &args),
        args,
        stage: ctx.stage.clone(),
        who,
        request_id,
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        result: kind,
        exit_code,
        plan,
        outcome,
        automation_execution_id: ctx.take_automation_execution(),
    };
    let mut lines = String::new();
    let sink = match ctx.audit_sink(command).await {
        Ok(sink) => sink,
        Err(e) => {
            lines.push_str(&format!("warning: the audit record was NOT stored ({e}): keep the line above\n"));
            return (record, lines);
        }
    };
    if let Sink::CloudWatchLogs { stream, .. } = &sink {
        record.who.stream_owner = StreamOwner::of_stream(stream);
    }
    match sink.append(&record).await {
        Ok(()) if matches!(sink, Sink::StderrOnly) => lines.push_str(
            "note: local pipeline without MONGODB_URI: this audit record is on stderr only (a stage's goes to its audit log group)\n",
        ),
        Ok(()) => {}
        Err(e) => lines.push_str(&format!(
            "warning: the audit record was NOT stored in {} ({e}): keep the line above\n",
            sink.describe()
        )),
    }
    (record, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pause_is_named_only_when_no_resume_came_after_it() {
        let record = |command: &str, at: &str| json!({"command": command, "startedAt": at, "who": {"who": "alice"}});
        let pause = record("queue-pause", "2026-12-07T18:02:00Z");
        assert_eq!(pause_words(Some(&pause), None), "paused by alice at 2026-12-07T18:02:00Z (queue-pause)");
        let earlier = record("local-resume", "2026-12-07T17:00:00Z");
        assert_eq!(pause_words(Some(&pause), Some(&earlier)), "paused by alice at 2026-12-07T18:02:00Z (queue-pause)");
        let outside = "no sophia-ops pause of it in the last 7 days: paused earlier (older: `audit list --command queue-pause --since 400d`) or disabled outside sophia-ops (CloudTrail: UpdateEventSourceMapping / StartAutomationExecution)";
        let later = record("queue-resume", "2026-12-07T18:30:00Z");
        assert_eq!(pause_words(Some(&pause), Some(&later)), outside, "resumed since: this pause is not the one now");
        assert_eq!(pause_words(None, None), outside);
    }

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
    fn an_overridden_sts_or_logs_endpoint_is_named_and_the_log_group_is_the_declared_one() {
        let env = |name: &str| match name {
            "AWS_ENDPOINT_URL_STS" => Some("http://127.0.0.1:9999".to_owned()),
            "AWS_ENDPOINT_URL" => Some(" ".to_owned()),
            _ => None,
        };
        assert_eq!(endpoint_overrides(env), ["AWS_ENDPOINT_URL_STS=http://127.0.0.1:9999"]);
        assert!(endpoint_overrides(|_| None).is_empty());
        assert_eq!(log_group_name("prod"), "sophia-prod-operator-audit");
    }

    #[test]
    fn a_records_target_is_its_positional_arguments_after_the_command() {
        let args = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            target_of("queue-pause", &args("--env-file x.env queue pause report-generate --yes")),
            "report-generate"
        );
        assert_eq!(target_of("publish-completed", &args("publish completed a b --duration-seconds 300")), "a b");
        assert_eq!(target_of("dlq-redrive", &args("dlq redrive report-generate --dry-run --max 3")), "report-generate");
    }

    #[test]
    fn a_stream_is_named_after_the_identity_aws_binds_and_a_disagreeing_record_is_flagged() {
        let session = "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Operator_0123/alice";
        let user = "arn:aws:iam::123456789012:user/ops/bob";
        // A role session: its source identity, given (--by) or else its session name; an IAM user: its name.
        assert_eq!(StreamOwner::for_caller(session, None).unwrap().prefix(), "source/alice/");
        assert_eq!(
            StreamOwner::for_caller(session, Some("alice.smith@example.com")).unwrap().prefix(),
            "source/alice.smith@example.com/"
        );
        assert_eq!(StreamOwner::for_caller(user, Some("ignored")).unwrap().prefix(), "user/bob/");
        assert!(StreamOwner::for_caller("arn:aws:iam::123456789012:root", None).is_err());
        assert!(StreamOwner::for_caller(session, Some("alice/bob")).is_err(), "a slash would reach another's prefix");
        assert_eq!(
            StreamOwner::of_stream("source/alice/20261207T180200Z-queue-pause-0b5f"),
            Some(StreamOwner { kind: "source", name: "alice".into() })
        );
        assert_eq!(StreamOwner::of_stream("20261207T180200Z-queue-pause-0b5f"), None, "an unbound stream of before");

        let record = |arn: &str, owner: serde_json::Value| json!({"command": "queue-pause", "who": {"who": arn, "streamOwner": owner}});
        let mut honest = record(session, json!({"kind": "source", "name": "alice"}));
        attach_aws_identity(&mut honest, "source/alice/20261207T180200Z-queue-pause-0b5f");
        assert_eq!(record_author(&honest), "source identity alice (AWS)");
        // Alice writes, in her own stream (the only one AWS lets her), a record claiming Bob.
        let mut forged = record(user, json!(null));
        attach_aws_identity(&mut forged, "source/alice/20261207T180200Z-queue-pause-0b5f");
        assert!(
            record_author(&forged).starts_with("source identity alice (AWS) [IDENTITY DISAGREES: "),
            "{}",
            record_author(&forged)
        );
        let mut claims_bob = record(session, json!({"kind": "source", "name": "bob"}));
        attach_aws_identity(&mut claims_bob, "source/alice/x");
        assert!(claims_bob["identityDisagrees"].as_str().unwrap().contains("source bob"), "{claims_bob}");
        let mut old = record(session, json!(null));
        attach_aws_identity(&mut old, "20261207T180200Z-queue-pause-0b5f");
        assert_eq!(record_author(&old), format!("{session} (unbound stream: the client's claim)"));
        assert!(pause_words(Some(&json!({"command": "queue-pause", "startedAt": "t", "awsIdentity": honest["awsIdentity"], "who": honest["who"]})), None).starts_with("paused by source identity alice (AWS)"));
        // A pause through the switch: SSM's ExecutedBy beside the stream's identity.
        let mut paused = honest.clone();
        paused["executedBy"] = json!(session);
        assert_eq!(record_author(&paused), format!("source identity alice (AWS) [SSM ExecutedBy {session}]"));
        paused["startedAt"] = json!("t");
        assert_eq!(
            pause_words(Some(&paused), None),
            format!("paused by source identity alice (AWS) [SSM ExecutedBy {session}] at t (queue-pause)")
        );
    }

    #[test]
    fn a_declared_identity_says_so_and_request_ids_name_command_and_operator() {
        let id = Identity::declared(Some("alice"));
        assert_eq!((id.who.as_str(), id.source, id.self_declared), ("alice", "--by", true));
        let r = request_id("dlq-redrive", "alice");
        assert!(r.starts_with("ops:dlq-redrive:alice:") && r.len() > 30, "{r}");
    }
}
