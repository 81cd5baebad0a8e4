//! `queue status <queue>`: what the oldest-message alarm needs to tell a stopped consumer from a
//! slow one and from a burst, in one command that receives nothing.
//!
//! - SQS `GetQueueAttributes` (source queue and DLQ): visible, in flight, delayed, retention;
//! - CloudWatch `GetMetricData`: the source queue's `ApproximateAgeOfOldestMessage` (AWS/SQS; SQS
//!   itself has no attribute for it) and the function's `Invocations`, `Errors`, `Throttles`
//!   (AWS/Lambda) over the window;
//! - Lambda `ListEventSourceMappings` on the queue's ARN: the mapping's state (`Enabled`,
//!   `Disabled`, ...) and its function.
//!
//! On the local pipeline the runner's control channel answers the same questions in the same
//! shapes ([`Observer::Local`]): its mappings as `ListEventSourceMappings` describes them (`State`,
//! `StateTransitionReason`) and its functions' invocations, whole-batch errors, failed records and
//! the last error's text over the window; `queue pause|resume` change a mapping through it as
//! `UpdateEventSourceMapping` does on a stage. Without the channel (no runner), those lines say so
//! and the verdict is made from what SQS shows.
//!
//! When batches or records fail, the verdict is `failing` and names what the errors say: the last
//! whole-batch error (local), the report failures by error kind (`ReportsFailed` by `ErrorKind`),
//! or, on a stage, the count of invocations that failed as a whole batch and where their text is.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde::Serialize;

use crate::duration_text::human_duration;
use crate::queues::{QueueLocator, QueueName};
use crate::{Context, OpsError};

/// The event source mapping of a queue, as the Lambda API returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mapping {
    pub uuid: String,
    /// `Enabled`, `Disabled`, `Enabling`, `Disabling`, `Creating`, `Updating`, `Deleting`.
    pub state: String,
    pub state_transition_reason: Option<String>,
    pub function_arn: Option<String>,
    pub maximum_concurrency: Option<i32>,
}

/// What `queue pause` / `queue resume` changed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MappingChange {
    pub queue: QueueName,
    pub before: Mapping,
    /// As the API answered the change (on AWS `Disabling` / `Enabling` until it is done).
    pub after: Mapping,
}

impl MappingChange {
    pub fn human(&self) -> String {
        format!(
            "queue {}: event source mapping {} {} -> {}{}\n  check: sophia-ops queue status {}\n",
            self.queue,
            self.after.uuid,
            self.before.state,
            self.after.state,
            self.after.state_transition_reason.as_ref().map_or(String::new(), |r| format!(" ({r})")),
            self.queue
        )
    }
}

/// The function's recent metrics (sums over the window).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FunctionMetrics {
    pub invocations: i64,
    /// Invocations that returned an error (a whole batch failed).
    pub errors: i64,
    pub throttles: i64,
    /// Records returned as batch item failures (`RecordsFailed`), when known.
    pub records_failed: Option<i64>,
    /// What the last whole-batch error said (the local runner keeps it), when known.
    pub last_error: Option<String>,
    /// Failed report attempts by error kind (`ReportsFailed` by `ErrorKind`), most first.
    pub failures_by_kind: Vec<(String, i64)>,
    /// Records dropped as invalid in the window (`RecordsDroppedInvalid`; locally the runner's
    /// count).
    pub dropped_invalid: i64,
    /// Each of them, from the function's `invalid message dropped` lines (the local runner's
    /// record), oldest first.
    pub dropped: Vec<crate::function_log::DroppedMessage>,
    /// Why the function's log lines could not be read, when they could not (a stage).
    pub log_note: Option<String>,
    /// The longest invocation in the window (AWS/Lambda `Duration`, Maximum), in ms, when known.
    pub max_duration_ms: Option<i64>,
    /// The function's declared timeout (declarations/queues.json `timeoutSeconds`), in ms.
    pub timeout_ms: Option<i64>,
}

/// The share of the function's timeout at which the duration alarm fires
/// (infra-pulumi/src/alarms.ts `DURATION_ALARM_FRACTION`; a test reads it there), in percent.
pub const NEAR_TIMEOUT_PERCENT: i64 = 80;

impl FunctionMetrics {
    /// The longest invocation as a share of the timeout, in percent, when both are known.
    pub fn duration_percent(&self) -> Option<i64> {
        let (max, timeout) = (self.max_duration_ms?, self.timeout_ms.filter(|t| *t > 0)?);
        Some(max * 100 / timeout)
    }

    /// `the longest invocation ran 4m 10s of its 5m timeout (83%)`.
    fn duration_words(&self) -> Option<String> {
        let percent = self.duration_percent()?;
        Some(format!(
            "the longest invocation ran {} of its {} timeout ({percent}%)",
            human_duration(u64::try_from(self.max_duration_ms? / 1000).unwrap_or(0)),
            human_duration(u64::try_from(self.timeout_ms? / 1000).unwrap_or(0))
        ))
    }

    /// Lambda ended an invocation at its timeout (the longest ran it all: `Task timed out`).
    fn timed_out(&self) -> bool {
        self.duration_percent().is_some_and(|p| p >= 99)
    }

    /// Invocations near the timeout (the duration alarm's level) that did not fail: slow calls.
    pub fn near_timeout(&self) -> Option<String> {
        let percent = self.duration_percent()?;
        (percent >= NEAR_TIMEOUT_PERCENT).then(|| {
            format!(
                "slow calls near the timeout: {} (the alarm's level {NEAR_TIMEOUT_PERCENT}%); past it Lambda ends the invocation (`Task timed out`)",
                self.duration_words().unwrap_or_default()
            )
        })
    }

    /// What the errors say, when batches or records failed in the window.
    pub fn failing(&self) -> Option<String> {
        let records = self.records_failed.unwrap_or(0);
        if self.errors == 0 && records == 0 && self.failures_by_kind.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if self.errors > 0 {
            parts.push(match &self.last_error {
                Some(e) => format!("{e} ({} of {} invocation(s) failed as a whole batch)", self.errors, self.invocations),
                None if self.timed_out() => format!(
                    "{} of {} invocation(s) failed as a whole: {}: Lambda ended it (`Task timed out` in its log), not MongoDB; its report stays PROCESSING until its lease ends, that attempt spent",
                    self.errors,
                    self.invocations,
                    self.duration_words().unwrap_or_default()
                ),
                None => format!(
                    "{} of {} invocation(s) failed as a whole batch (the per-batch setup: MongoDB unreachable or refused, or the function could not start); the text is in the function's ERROR lines{}",
                    self.errors,
                    self.invocations,
                    self.log_note.as_ref().map_or(String::new(), |n| format!(" ({n})"))
                ),
            });
        }
        if !self.failures_by_kind.is_empty() {
            let kinds: Vec<String> = self.failures_by_kind.iter().map(|(k, n)| format!("{k} ({n})")).collect();
            parts.push(format!("report attempts failed by error kind: {}", kinds.join(", ")));
        } else if records > 0 {
            parts.push(format!("{records} record(s) failed and will be delivered again"));
        }
        Some(parts.join("; "))
    }
}

/// The verdict and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Nothing consumes the queue: the mapping is disabled (paused) or missing, or the function
    /// was not invoked in the window while messages wait.
    Stopped,
    /// The function runs but its batches or records fail: messages come back, age, and after
    /// maxReceiveCount receives reach the DLQ.
    Failing,
    /// Something only a person can settle: messages in the DLQ, or reports nothing retries any
    /// more.
    NeedsPerson,
    /// The function runs but is throttled: messages wait.
    Slow,
    /// Messages are delayed: retries of failures, each due when its delay ends.
    Retrying,
    /// The function runs without errors or throttles but messages still wait: more arrived than
    /// the concurrency cap drains at once.
    Burst,
    /// Nothing waits and nothing is left behind, but batches or records failed in the window:
    /// not yet healthy (a narrower `--window` shows whether it still fails).
    Recovering,
    /// Nothing waits long, nothing is in the DLQ, nothing is delayed, no error in the window and
    /// the mapping is enabled.
    Healthy,
    /// Not enough to decide (local pipeline with messages waiting, or the APIs refused).
    Undecided,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Failing => "failing",
            Self::NeedsPerson => "needs a person",
            Self::Slow => "slow",
            Self::Retrying => "retrying",
            Self::Burst => "a burst",
            Self::Recovering => "recovering",
            Self::Healthy => "healthy",
            Self::Undecided => "undecided",
        }
    }
}

/// Whether MongoDB answers this command now: both consumers reach it at the start of every
/// batch, so a quiet stage (no invocation, no error) says nothing of it; this does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase", tag = "state", content = "detail")]
pub enum MongoNow {
    /// It answered just now.
    Reachable,
    /// It did not answer (or refused): why.
    Unreachable(String),
    /// `MONGODB_URI` is not set: not asked.
    #[default]
    NotChecked,
}

impl MongoNow {
    pub fn words(&self) -> String {
        match self {
            Self::Reachable => "reachable now".into(),
            Self::Unreachable(e) => format!("unreachable now ({e})"),
            Self::NotChecked => "not checked (MONGODB_URI unset)".into(),
        }
    }
}

/// Asks MongoDB now (a `hello`), when `MONGODB_URI` is set.
pub async fn mongo_now(ctx: &Context) -> MongoNow {
    if !ctx.has_mongo() {
        return MongoNow::NotChecked;
    }
    match ctx.mongo().await {
        Ok(m) => match m.topology().await {
            Ok(_) => MongoNow::Reachable,
            Err(e) => MongoNow::Unreachable(e.to_string()),
        },
        Err(e) => MongoNow::Unreachable(e.to_string()),
    }
}

/// Everything `queue status` shows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    pub queue: QueueName,
    pub queue_url: String,
    pub dlq_url: Option<String>,
    pub visible: Option<u64>,
    pub in_flight: Option<u64>,
    pub delayed: Option<u64>,
    pub dlq_visible: Option<u64>,
    /// `MessageRetentionPeriod` of the source queue.
    pub retention_seconds: Option<u64>,
    /// `VisibilityTimeout` of the source queue (as the stage has it, not as declared).
    pub visibility_timeout_seconds: Option<u64>,
    /// `ApproximateAgeOfOldestMessage` (CloudWatch, the latest minute of the window).
    pub oldest_age_seconds: Option<u64>,
    /// Retention minus the oldest age: after this the oldest message is deleted without reaching
    /// the DLQ.
    pub retention_left_seconds: Option<u64>,
    pub mapping: Option<Mapping>,
    /// Why there is no mapping line (local pipeline, an API error), when there is none.
    pub mapping_note: Option<String>,
    /// Who paused a disabled mapping, in words ([`crate::audit_trail::who_paused`]: the latest
    /// `queue-pause` or `local-pause` of this queue not followed by a resume, else "disabled
    /// outside sophia-ops").
    pub paused_by: Option<String>,
    pub window_seconds: u64,
    pub metrics: Option<FunctionMetrics>,
    pub metrics_note: Option<String>,
    /// report-generate: the reports MongoDB says need a person (out of attempts, a kind no retry
    /// fixes), when MongoDB is configured.
    pub stranded: Option<String>,
    /// Whether MongoDB answers this command now.
    pub mongodb: MongoNow,
    /// With messages in the DLQ and no error in the window: the last whole-batch error over
    /// [`LAST_CAUSE_LOOKBACK`], with its time when the log gives it.
    pub last_cause: Option<String>,
    pub verdict: Verdict,
    /// What the verdict is about: the first thing a person must act on, and its cause.
    pub cause: Option<String>,
    pub evidence: Vec<String>,
    /// The next command, written out (this run's `--stage` included).
    pub next: Option<String>,
}

/// What a verdict is decided from (no I/O).
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    pub visible: u64,
    pub in_flight: u64,
    pub delayed: u64,
    /// Messages in the DLQ (visible); `None` when the count could not be read (never read as 0).
    pub dlq: Option<u64>,
    pub oldest_age: Option<u64>,
    /// Within this age a message is being worked on normally (the queue's visibility timeout).
    pub healthy_age: u64,
    /// `None` when unknown; `Some(None)` when no mapping reads the queue.
    pub mapping: Option<Option<&'a Mapping>>,
    /// Who paused the mapping, in words ([`crate::audit_trail::who_paused`]).
    pub paused_by: Option<&'a str>,
    pub metrics: Option<&'a FunctionMetrics>,
    /// Reports nothing retries any more (report-generate), in words.
    pub stranded: Option<&'a str>,
    /// Whether MongoDB answers now; `None` when not asked (tests of the rest).
    pub mongodb: Option<&'a MongoNow>,
    /// The queue holds report attempts (report-generate): "healthy" needs its reports read.
    pub reports: bool,
    /// The last known whole-batch error, when none is in the window.
    pub last_cause: Option<&'a str>,
}

/// The verdict, its cause and the evidence, from the facts (no I/O). "healthy" only when nothing
/// needs a person: the mapping enabled, no error or failed record in the window, the DLQ empty,
/// nothing delayed, no stranded report, nothing waiting long. Otherwise the first of: stopped,
/// failing, needs a person (DLQ, stranded reports), slow, retrying, a burst, recovering.
pub fn verdict(f: &Facts) -> (Verdict, Option<String>, Vec<String>) {
    let (decided, cause, mut evidence) = known(f);
    let ran = f.metrics.is_some_and(|m| m.invocations > 0);
    if let Some(MongoNow::Unreachable(e)) = f.mongodb.filter(|_| decided == Verdict::Healthy) {
        if !ran {
            evidence.push("no invocation in the window: nothing shows that the functions reach MongoDB".into());
            let why = format!(
                "cannot tell: MongoDB does not answer from here now ({e}) and the function did not run in the window (an outage, or this machine's access: docs/runbook.md#mongodb_uri)"
            );
            return (Verdict::Undecided, Some(why), evidence);
        }
        evidence.push(format!(
            "MongoDB does not answer from here ({e}), but the function ran without an error: the functions reach it (this machine's access: docs/runbook.md#mongodb_uri)"
        ));
    }
    if let Some(unchecked) =
        f.mongodb.filter(|m| f.reports && decided == Verdict::Healthy && **m != MongoNow::Reachable)
    {
        let why = format!("reports not checked: MongoDB {}", unchecked.words());
        evidence.push("SQS and the function show nothing wrong, but the reports out of attempts are in MongoDB".into());
        return (Verdict::Undecided, Some(why), evidence);
    }
    if decided == Verdict::Healthy && f.dlq.is_none() {
        evidence.push("the DLQ's message count could not be read: it may hold messages".into());
        return (Verdict::Undecided, Some("cannot tell: the DLQ could not be read".into()), evidence);
    }
    (decided, cause, evidence)
}

/// [`verdict`] from what is known: an unknown DLQ count is no message in it here.
fn known(f: &Facts) -> (Verdict, Option<String>, Vec<String>) {
    let dlq = f.dlq.unwrap_or(0);
    let mut evidence = vec![format!(
        "{} message(s) visible, {} in flight, {} delayed; {} in the DLQ",
        f.visible,
        f.in_flight,
        f.delayed,
        f.dlq.map_or("?".into(), |n| n.to_string())
    )];
    let also = left_behind(f);
    if let Some(stopped) = stopped(f, &mut evidence) {
        return (Verdict::Stopped, Some(stopped + &also), evidence);
    }
    let waiting = f.visible + f.in_flight + f.delayed;
    if let Some(m) = f.metrics
        && let Some(cause) = m.failing()
    {
        evidence.push(format!(
            "the function ran {} time(s): {} error(s), {} failed record(s), {} throttle(s)",
            m.invocations,
            m.errors,
            m.records_failed.map_or("?".into(), |r| r.to_string()),
            m.throttles
        ));
        if waiting == 0 && f.dlq == Some(0) && f.stranded.is_none() {
            evidence.push(
                "nothing waits and nothing is in the DLQ: healthy once a window passes without an error (try --window 1m)"
                    .into(),
            );
            return (Verdict::Recovering, Some(cause), evidence);
        }
        return (Verdict::Failing, Some(cause + &also), evidence);
    }
    if let Some(slow) = f.metrics.and_then(FunctionMetrics::near_timeout) {
        evidence.push(slow.clone());
        return (Verdict::Slow, Some(slow + &also), evidence);
    }
    if let Some(dropped) = f.metrics.and_then(dropped_words) {
        if dlq == 0 && f.stranded.is_none() {
            return (Verdict::NeedsPerson, Some(dropped), evidence);
        }
        evidence.push(dropped);
    }
    if dlq > 0 || f.stranded.is_some() {
        let mut first = match f.last_cause {
            Some(c) if dlq > 0 => format!("{}; the last known cause: {c}", dlq_words(dlq)),
            _ if dlq > 0 => dlq_words(dlq),
            _ => f.stranded.unwrap_or_default().to_owned(),
        };
        if let Some(MongoNow::Unreachable(e)) = f.mongodb {
            first.push_str(&format!("; MongoDB does not answer from here now ({e})"));
        }
        if let Some(s) = f.stranded.filter(|_| dlq > 0) {
            evidence.push(s.to_owned());
        }
        return (Verdict::NeedsPerson, Some(first), evidence);
    }
    if waiting == 0 {
        evidence.push("nothing waits, nothing is in the DLQ, no error in the window".into());
        return (Verdict::Healthy, None, evidence);
    }
    moving(f, evidence)
}

/// `; also N in the DLQ, ...`: what a stopped or failing queue has already left behind.
fn left_behind(f: &Facts) -> String {
    let mut parts = Vec::new();
    if let Some(n) = f.dlq.filter(|n| *n > 0) {
        parts.push(dlq_words(n));
    }
    if let Some(s) = f.stranded {
        parts.push(s.to_owned());
    }
    if parts.is_empty() { String::new() } else { format!("; also {}", parts.join("; ")) }
}

/// The records dropped as invalid in the window, in words (the first one's reason).
fn dropped_words(m: &FunctionMetrics) -> Option<String> {
    (m.dropped_invalid > 0).then(|| {
        format!(
            "{} message(s) dropped as invalid in the window (the producer sent bodies the contract rejects; each is gone, in no queue){}",
            m.dropped_invalid,
            m.dropped.last().map_or(String::new(), |d| format!(": the latest, message {}: {}", d.message_id, d.reason))
        )
    })
}

fn dlq_words(n: u64) -> String {
    format!("{n} message(s) in the DLQ, each needs a person (dlq list, then dlq show <messageId>)")
}

/// The mapping's part: `Some(why)` when nothing consumes the queue.
fn stopped(f: &Facts, evidence: &mut Vec<String>) -> Option<String> {
    match f.mapping {
        Some(None) => {
            let why = "no event source mapping reads the queue: nothing receives from it".to_owned();
            evidence.push(why.clone());
            Some(why)
        }
        Some(Some(m)) if m.state == "Enabling" => {
            evidence.push(format!(
                "the event source mapping {} is Enabling: resuming (a `queue resume` takes effect within minutes; run this again)",
                m.uuid
            ));
            None
        }
        Some(Some(m)) if m.state != "Enabled" => {
            let why = format!(
                "the event source mapping {} is {}{}{}{}: nothing receives from the queue (resume: the next: line)",
                m.uuid,
                m.state,
                if m.state == "Disabling" { " (pausing)" } else { "" },
                m.state_transition_reason.as_ref().map_or(String::new(), |r| format!(" ({r})")),
                f.paused_by.map_or(String::new(), |by| format!(", {by}"))
            );
            evidence.push(why.clone());
            Some(why)
        }
        _ => None,
    }
}

/// Messages wait, the function runs without errors: not invoked, throttled, delayed retries, a
/// burst, or healthy.
fn moving(f: &Facts, mut evidence: Vec<String>) -> (Verdict, Option<String>, Vec<String>) {
    let delayed = (f.delayed > 0).then(|| {
        format!("{} message(s) delayed: retries of earlier failures, each delivered when its delay ends", f.delayed)
    });
    let Some(m) = f.metrics else {
        if let Some(d) = delayed {
            return (Verdict::Retrying, Some(d), evidence);
        }
        if f.in_flight > 0 && f.visible == 0 {
            evidence.push(
                "every waiting message is in flight: received, but without the function's metrics nothing tells consumed from failing on each receive"
                    .into(),
            );
            return (
                Verdict::Undecided,
                Some(
                    "cannot tell: the function's metrics could not be read, and every waiting message is in flight"
                        .into(),
                ),
                evidence,
            );
        }
        evidence.push("no mapping state or function metrics to tell stopped, slow and a burst apart".into());
        return (Verdict::Undecided, None, evidence);
    };
    if m.invocations == 0 && f.visible > 0 {
        let why = "messages wait but the function was not invoked in the window".to_owned();
        evidence.push(why.clone());
        return (Verdict::Stopped, Some(why), evidence);
    }
    if m.throttles > 0 {
        evidence.push(format!("the function ran {} time(s) with {} throttle(s)", m.invocations, m.throttles));
        return (Verdict::Slow, None, evidence);
    }
    if let Some(d) = delayed {
        return (Verdict::Retrying, Some(d), evidence);
    }
    if f.oldest_age.is_none_or(|a| a <= f.healthy_age) && (f.oldest_age.is_some() || f.visible == 0) {
        evidence.push(format!(
            "the oldest message is younger than {}s or in flight; the function runs without errors",
            f.healthy_age
        ));
        return (Verdict::Healthy, None, evidence);
    }
    evidence.push(format!(
        "the function ran {} time(s) without errors or throttles, yet messages wait: more arrived than the concurrency cap drains",
        m.invocations
    ));
    (Verdict::Burst, None, evidence)
}

/// Where a queue's mapping and its function's metrics are read and the mapping changed.
#[derive(Debug, Clone)]
pub enum Observer {
    /// A stage: Lambda (`ListEventSourceMappings`, `UpdateEventSourceMapping`) and CloudWatch
    /// (`GetMetricData`).
    Aws,
    /// The local pipeline: the runner's control channel (from its env file).
    Local { url: String, token: String },
    /// Neither (a loopback queue without a running runner's channel): why.
    Unavailable(String),
}

/// The env-file variables of the local runner's control channel (`sophia_local::control`).
pub const LOCAL_CONTROL_URL: &str = sophia_platform::env::declared("SOPHIA_LOCAL_CONTROL_URL");
pub const LOCAL_CONTROL_TOKEN: &str = sophia_platform::env::declared("SOPHIA_LOCAL_CONTROL_TOKEN");

impl Observer {
    /// For a queue at `url`: AWS unless the URL is a loopback one.
    pub fn for_queue(ctx: &Context, url: &str) -> Self {
        if !crate::confirm::is_local_url(url) {
            return Self::Aws;
        }
        match (ctx.env.get(LOCAL_CONTROL_URL), ctx.env.get(LOCAL_CONTROL_TOKEN)) {
            (Some(url), Some(token)) => Self::Local { url, token },
            _ => Self::Unavailable(format!(
                "local: no control channel of the local runner ({LOCAL_CONTROL_URL} is not in the environment or .local/sophia.env: is `sophia-local up` running?)"
            )),
        }
    }

    async fn local_call(
        url: &str,
        token: &str,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> Result<serde_json::Value, String> {
        let (status, answer) = sophia_platform::loopback::exchange(
            method,
            &format!("{url}{path}"),
            Some(token),
            body,
            Duration::from_secs(330),
        )
        .await
        .map_err(|e| format!("the local runner's control channel at {url} does not answer ({e})"))?;
        let value: serde_json::Value = serde_json::from_str(&answer).unwrap_or(serde_json::Value::String(answer));
        if (200..300).contains(&status) {
            Ok(value)
        } else {
            Err(value["error"].as_str().map_or_else(|| format!("HTTP {status}: {value}"), str::to_owned))
        }
    }

    /// The mapping that reads `queue_arn`, if any.
    pub async fn mapping(&self, ctx: &Context, queue_arn: &str) -> Result<Option<Mapping>, String> {
        match self {
            Self::Aws => event_source_mapping(ctx, queue_arn).await,
            Self::Local { url, token } => {
                let out = Self::local_call(
                    url,
                    token,
                    "GET",
                    &format!("/event-source-mappings?EventSourceArn={queue_arn}"),
                    None,
                )
                .await?;
                Ok(out["EventSourceMappings"].as_array().and_then(|l| l.first()).map(mapping_of_json))
            }
            Self::Unavailable(why) => Err(why.clone()),
        }
    }

    /// Enables or disables the mapping `uuid`; answers its state after the change.
    pub async fn set_enabled(&self, ctx: &Context, uuid: &str, enabled: bool) -> Result<Mapping, String> {
        match self {
            Self::Aws => {
                let client = aws_sdk_lambda::Client::new(&ctx.aws_config().await);
                let out = client
                    .update_event_source_mapping()
                    .uuid(uuid)
                    .enabled(enabled)
                    .send()
                    .await
                    .map_err(|e| aws_sdk_lambda::error::DisplayErrorContext(e).to_string())?;
                Ok(Mapping {
                    uuid: out.uuid.unwrap_or_default(),
                    state: out.state.unwrap_or_else(|| "unknown".into()),
                    state_transition_reason: out.state_transition_reason,
                    function_arn: out.function_arn,
                    maximum_concurrency: out.scaling_config.and_then(|s| s.maximum_concurrency),
                })
            }
            Self::Local { url, token } => {
                let body = serde_json::json!({ "Enabled": enabled }).to_string();
                let out =
                    Self::local_call(url, token, "PUT", &format!("/event-source-mappings/{uuid}"), Some(body)).await?;
                Ok(mapping_of_json(&out))
            }
            Self::Unavailable(why) => Err(why.clone()),
        }
    }

    /// The function's metrics over the window, and (AWS) the queue's oldest message age.
    pub async fn metrics(
        &self,
        ctx: &Context,
        queue_name: &str,
        function: Option<&str>,
        window: Duration,
    ) -> Result<(Option<FunctionMetrics>, Option<u64>), String> {
        match self {
            Self::Aws => metrics(ctx, queue_name, function, window).await,
            Self::Local { url, token } => {
                let Some(f) = function else { return Ok((None, None)) };
                let out = Self::local_call(
                    url,
                    token,
                    "GET",
                    &format!("/functions/{f}/metrics?windowSeconds={}", window.as_secs()),
                    None,
                )
                .await?;
                let n = |k: &str| out[k].as_i64().unwrap_or(0);
                Ok((
                    Some(FunctionMetrics {
                        invocations: n("invocations"),
                        errors: n("errors"),
                        throttles: n("throttles"),
                        records_failed: out["recordsFailed"].as_i64(),
                        last_error: out["lastError"].as_str().map(str::to_owned),
                        failures_by_kind: Vec::new(),
                        dropped_invalid: out["droppedInvalid"].as_array().map_or(0, |d| d.len() as i64),
                        dropped: local_dropped(&out["droppedInvalid"]),
                        log_note: None,
                        max_duration_ms: out["maxDurationMs"].as_i64(),
                        timeout_ms: None,
                    }),
                    out["oldestAgeSeconds"].as_u64(),
                ))
            }
            Self::Unavailable(why) => Err(why.clone()),
        }
    }
}

/// The local runner's records dropped as invalid (`droppedInvalid` of its function metrics).
fn local_dropped(v: &serde_json::Value) -> Vec<crate::function_log::DroppedMessage> {
    let text = |d: &serde_json::Value, k: &str| d[k].as_str().map(str::to_owned);
    v.as_array()
        .into_iter()
        .flatten()
        .map(|d| crate::function_log::DroppedMessage {
            at: text(d, "at"),
            message_id: text(d, "messageId").unwrap_or_default(),
            reason: text(d, "reason").unwrap_or_default(),
        })
        .collect()
}

/// A mapping in the Lambda API's JSON shape (the local runner answers it).
fn mapping_of_json(m: &serde_json::Value) -> Mapping {
    let text = |k: &str| m[k].as_str().map(str::to_owned);
    Mapping {
        uuid: text("UUID").unwrap_or_default(),
        state: text("State").unwrap_or_else(|| "unknown".into()),
        state_transition_reason: text("StateTransitionReason"),
        function_arn: text("FunctionArn"),
        maximum_concurrency: m["ScalingConfig"]["MaximumConcurrency"].as_i64().map(|c| c as i32),
    }
}

fn count(attrs: &std::collections::HashMap<QueueAttributeName, String>, name: QueueAttributeName) -> Option<u64> {
    attrs.get(&name).and_then(|v| v.parse().ok())
}

/// `queue status <queue> [--window 15m]`.
pub async fn queue_status(ctx: &Context, queue: QueueName, window: Duration) -> Result<QueueStatus, OpsError> {
    let locator: QueueLocator = ctx.locator().await;
    let url = locator.source_url(queue).await?;
    let attrs = locator
        .client()
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .map_err(|e| OpsError::sqs("GetQueueAttributes", &url, e))?
        .attributes
        .unwrap_or_default();
    let visibility = count(&attrs, QueueAttributeName::VisibilityTimeout);
    let retention = count(&attrs, QueueAttributeName::MessageRetentionPeriod);
    let dlq_url = locator.dlq_url(queue).await.ok();
    let dlq_visible = match &dlq_url {
        Some(u) => crate::queues::approximate_visible(&locator, u).await.ok().flatten(),
        None => None,
    };
    let mut status = QueueStatus {
        queue,
        queue_url: url.clone(),
        dlq_url,
        visible: count(&attrs, QueueAttributeName::ApproximateNumberOfMessages),
        in_flight: count(&attrs, QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        delayed: count(&attrs, QueueAttributeName::ApproximateNumberOfMessagesDelayed),
        dlq_visible,
        retention_seconds: retention,
        visibility_timeout_seconds: visibility,
        oldest_age_seconds: None,
        retention_left_seconds: None,
        mapping: None,
        mapping_note: None,
        paused_by: None,
        window_seconds: window.as_secs(),
        metrics: None,
        metrics_note: None,
        stranded: None,
        mongodb: mongo_now(ctx).await,
        last_cause: None,
        verdict: Verdict::Undecided,
        cause: None,
        evidence: Vec::new(),
        next: None,
    };
    let mapping_known = observe(ctx, &mut status, attrs.get(&QueueAttributeName::QueueArn).cloned(), window).await;
    if queue.holds_report_attempts() {
        crate::report_state::attach_to_status(ctx, &mut status, window).await;
    }
    if status.mapping.as_ref().is_some_and(|m| m.state != "Enabled" && m.state != "Enabling") {
        status.paused_by = Some(crate::audit_trail::who_paused(ctx, queue).await);
    }
    decide(&mut status, mapping_known);
    status.next = next_step(ctx, &status);
    Ok(status)
}

/// The records a queue's consumer dropped as invalid over a window: how many, each with its
/// reason (as many as its log or the local runner gives), or why they could not be read.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedRecords {
    pub count: i64,
    pub messages: Vec<crate::function_log::DroppedMessage>,
    pub note: Option<String>,
}

/// [`DroppedRecords`] of `queue`'s consumer over `window`, as `queue status` reads them.
pub async fn dropped_records(ctx: &Context, queue: QueueName, window: Duration) -> DroppedRecords {
    match queue_status(ctx, queue, window).await {
        Ok(s) => match s.metrics {
            Some(m) => DroppedRecords { count: m.dropped_invalid, messages: m.dropped, note: m.log_note },
            None => DroppedRecords { note: s.metrics_note.or(s.mapping_note), ..DroppedRecords::default() },
        },
        Err(e) => DroppedRecords { note: Some(e.to_string()), ..DroppedRecords::default() },
    }
}

impl DroppedRecords {
    /// `what` names the messages (`report.generate`); empty when nothing was dropped.
    pub fn human(&self, what: &str, window_seconds: u64) -> String {
        let mut s = String::new();
        if self.count > 0 {
            s.push_str(&format!(
                "  dropped as invalid in the last {}: {} {what} message(s): the producer sent a body the contract rejects; each is gone (in no queue, no DLQ, no stored state) (docs/runbook.md#invalid-messages-dropped)\n",
                human_duration(window_seconds),
                self.count
            ));
            s.push_str(&dropped_lines(&self.messages));
        }
        if let Some(note) = &self.note {
            s.push_str(&format!("  dropped as invalid: not known: {note}\n"));
        }
        s
    }
}

/// The next command for the verdict, written out.
fn next_step(ctx: &Context, s: &QueueStatus) -> Option<String> {
    let q = s.queue;
    let dlq = s.dlq_visible.unwrap_or(0) > 0;
    let failures = if q.holds_report_attempts() { "report failures" } else { "interview unsettled" };
    Some(match s.verdict {
        Verdict::Healthy | Verdict::Undecided | Verdict::Burst => return None,
        Verdict::Stopped if s.mapping.as_ref().is_some_and(|m| m.state != "Enabled" && m.state != "Enabling") => {
            format!("{} (once what it was paused for is fixed)", ctx.ops_command(&format!("queue resume {q}")))
        }
        Verdict::Stopped => {
            "the function's log and its event source mapping (docs/runbook.md#oldest-message-too-old)".into()
        }
        Verdict::Failing | Verdict::Retrying => format!(
            "{} (which messages; the cause above first: docs/runbook.md#{})",
            ctx.ops_command(failures),
            failing_section(s)
        ),
        Verdict::NeedsPerson if dlq => ctx.ops_command(&format!("dlq list {q}")),
        Verdict::NeedsPerson => ctx.ops_command(failures),
        Verdict::Recovering | Verdict::Slow => ctx.ops_command(&format!("queue status {q} --window 1m")),
    })
}

/// The runbook's section for a failing or retrying queue: report-generate's failed report
/// attempts (OpenAI's kinds, no whole batch failing) are "Reports failing"; whole batches failing
/// (MongoDB, the function) and interview-completed are "Function errors".
fn failing_section(s: &QueueStatus) -> &'static str {
    let reports = s.queue.holds_report_attempts()
        && s.metrics.as_ref().is_some_and(|m| m.errors == 0 && !m.failures_by_kind.is_empty());
    if reports { "reports-failing" } else { "function-errors" }
}

/// The mapping and the function's metrics, through the queue's [`Observer`]; whether the
/// mapping's state is known.
async fn observe(ctx: &Context, status: &mut QueueStatus, arn: Option<String>, window: Duration) -> bool {
    // By the URL only: a `--stage` whose queues are loopback (tests) has no Lambda API either.
    let observer = Observer::for_queue(ctx, &status.queue_url);
    let (mapping, mapping_note, mapping_known) = match arn.as_deref() {
        None => (None, Some("the queue has no QueueArn".into()), false),
        Some(arn) => match observer.mapping(ctx, arn).await {
            Ok(Some(m)) => (Some(m), None, true),
            Ok(None) => (None, Some(format!("no event source mapping reads {arn}: nothing consumes the queue")), true),
            Err(e) if matches!(observer, Observer::Unavailable(_)) => (None, Some(e), false),
            Err(e) => (None, Some(format!("ListEventSourceMappings failed: {e}")), false),
        },
    };
    let function = mapping.as_ref().and_then(|m| m.function_arn.as_deref()).map(function_name);
    let queue_name = status.queue_url.rsplit('/').next().unwrap_or_default().to_owned();
    let (metrics, oldest, metrics_note) = match observer.metrics(ctx, &queue_name, function.as_deref(), window).await {
        Ok((m, oldest)) => (m, oldest, None),
        Err(_) if matches!(observer, Observer::Unavailable(_)) => {
            (None, None, Some("local: no function metrics without the runner's control channel".to_owned()))
        }
        Err(e) => (None, None, Some(format!("the function's metrics could not be read: {e}"))),
    };
    let mut metrics = metrics;
    if let Some(m) = metrics.as_mut() {
        m.timeout_ms = declared_timeout_ms(status.queue);
    }
    if status.dlq_visible.unwrap_or(0) > 0 && metrics.as_ref().is_some_and(|m| m.failing().is_none()) {
        status.last_cause = last_cause(ctx, &observer, &queue_name, function.as_deref()).await;
    }
    status.mapping = mapping;
    status.mapping_note = mapping_note;
    status.metrics = metrics;
    status.oldest_age_seconds = oldest;
    status.metrics_note = metrics_note;
    mapping_known
}

/// The declared timeout of the function that consumes `queue`, in ms.
fn declared_timeout_ms(queue: QueueName) -> Option<i64> {
    let key = queue.queue().key();
    sophia_declarations::Declaration::embedded()
        .subscribed_functions()
        .find(|(_, q)| q.key == key)
        .map(|(f, _)| i64::from(f.timeout_seconds) * 1000)
}

/// How far back the last known cause of a DLQ's messages is looked for.
pub const LAST_CAUSE_LOOKBACK: Duration = Duration::from_secs(24 * 3600);

/// The last whole-batch error over [`LAST_CAUSE_LOOKBACK`]: on a stage the function's ERROR line
/// with its time, locally the runner's last error.
async fn last_cause(ctx: &Context, observer: &Observer, queue_name: &str, function: Option<&str>) -> Option<String> {
    let f = function?;
    if let Observer::Aws = observer {
        let found = crate::function_log::last_batch_error(ctx, f, LAST_CAUSE_LOOKBACK).await.ok()??;
        return Some(found);
    }
    let (m, _) = observer.metrics(ctx, queue_name, Some(f), LAST_CAUSE_LOOKBACK).await.ok()?;
    m?.failing().map(|c| format!("{c} (in the last {})", human_duration(LAST_CAUSE_LOOKBACK.as_secs())))
}

/// The verdict of `status`'s facts, and the retention line.
fn decide(status: &mut QueueStatus, mapping_known: bool) {
    let facts = Facts {
        visible: status.visible.unwrap_or(0),
        in_flight: status.in_flight.unwrap_or(0),
        delayed: status.delayed.unwrap_or(0),
        dlq: status.dlq_visible,
        oldest_age: status.oldest_age_seconds,
        // Within one visibility timeout a message is being worked on normally.
        healthy_age: status.visibility_timeout_seconds.unwrap_or(30),
        mapping: mapping_known.then_some(status.mapping.as_ref()),
        paused_by: status.paused_by.as_deref(),
        metrics: status.metrics.as_ref(),
        stranded: status.stranded.as_deref(),
        mongodb: Some(&status.mongodb),
        reports: status.queue.holds_report_attempts(),
        last_cause: status.last_cause.as_deref(),
    };
    let (verdict, cause, mut evidence) = verdict(&facts);
    status.retention_left_seconds = match (status.retention_seconds, status.oldest_age_seconds) {
        (Some(r), Some(a)) => Some(r.saturating_sub(a)),
        _ => None,
    };
    if let Some(left) = status.retention_left_seconds.filter(|l| *l < 86_400) {
        evidence.push(format!(
            "the oldest message is deleted by SQS in {} (retention), without reaching the DLQ",
            human_duration(left)
        ));
    }
    (status.verdict, status.cause, status.evidence) = (verdict, cause, evidence);
}

/// `arn:aws:lambda:<region>:<account>:function:<name>[:alias]` -> `<name>`.
pub fn function_name(arn: &str) -> String {
    let parts: Vec<&str> = arn.split(':').collect();
    parts.get(6).map_or(arn, |n| n).to_owned()
}

async fn event_source_mapping(ctx: &Context, queue_arn: &str) -> Result<Option<Mapping>, String> {
    let client = aws_sdk_lambda::Client::new(&ctx.aws_config().await);
    let out = client
        .list_event_source_mappings()
        .event_source_arn(queue_arn)
        .send()
        .await
        .map_err(|e| aws_sdk_lambda::error::DisplayErrorContext(e).to_string())?;
    Ok(out.event_source_mappings.unwrap_or_default().into_iter().next().map(|m| Mapping {
        uuid: m.uuid.unwrap_or_default(),
        state: m.state.unwrap_or_else(|| "unknown".into()),
        state_transition_reason: m.state_transition_reason,
        function_arn: m.function_arn,
        maximum_concurrency: m.scaling_config.and_then(|s| s.maximum_concurrency),
    }))
}

/// The queries of `queue status`: the queue's oldest message; with a function, its Lambda
/// invocations, errors and throttles and, on a stage, its own failure metrics (ReportsFailed by
/// error kind: ids `k0`, `k1`, ... in [`sophia_reports::ErrorKind::ALL`]'s order).
fn metric_queries(
    queue_name: &str,
    function: Option<&str>,
    stage: Option<&str>,
) -> Vec<aws_sdk_cloudwatch::types::MetricDataQuery> {
    let mut queries =
        vec![metric_query("age", "AWS/SQS", "ApproximateAgeOfOldestMessage", &[("QueueName", queue_name)], "Maximum")];
    if let Some(f) = function {
        for (id, name) in [("inv", "Invocations"), ("err", "Errors"), ("thr", "Throttles")] {
            queries.push(metric_query(id, "AWS/Lambda", name, &[("FunctionName", f)], "Sum"));
        }
        queries.push(metric_query("dur", "AWS/Lambda", "Duration", &[("FunctionName", f)], "Maximum"));
        // The functions' own metrics (declarations/metrics.json: dimensions Stage and Function,
        // ReportsFailed also by ErrorKind); a function that does not emit one reads as 0.
        if let Some(stage) = stage {
            let both = [("Stage", stage), ("Function", f)];
            queries.push(metric_query("rf", "Sophia", "RecordsFailed", &both, "Sum"));
            queries.push(metric_query("di", "Sophia", "RecordsDroppedInvalid", &both, "Sum"));
            for (i, kind) in sophia_reports::ErrorKind::ALL.iter().enumerate() {
                let dims = [("Stage", stage), ("Function", f), ("ErrorKind", kind.as_str())];
                queries.push(metric_query(&format!("k{i}"), "Sophia", "ReportsFailed", &dims, "Sum"));
            }
        }
    }
    queries
}

/// One metric's statistic per minute.
fn metric_query(
    id: &str,
    namespace: &str,
    name: &str,
    dims: &[(&str, &str)],
    stat: &str,
) -> aws_sdk_cloudwatch::types::MetricDataQuery {
    use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat};
    let dimensions: Vec<Dimension> =
        dims.iter().map(|(k, v)| Dimension::builder().name(*k).value(*v).build()).collect();
    MetricDataQuery::builder()
        .id(id)
        .metric_stat(
            MetricStat::builder()
                .metric(
                    Metric::builder().namespace(namespace).metric_name(name).set_dimensions(Some(dimensions)).build(),
                )
                .period(60)
                .stat(stat)
                .build(),
        )
        .build()
}

async fn metrics(
    ctx: &Context,
    queue_name: &str,
    function: Option<&str>,
    window: Duration,
) -> Result<(Option<FunctionMetrics>, Option<u64>), String> {
    let client = aws_sdk_cloudwatch::Client::new(&ctx.aws_config().await);
    let kinds = sophia_reports::ErrorKind::ALL;
    let queries = metric_queries(queue_name, function, ctx.stage.as_deref());
    let end = std::time::SystemTime::now();
    let start = end - window.max(Duration::from_secs(300));
    let out = client
        .get_metric_data()
        .set_metric_data_queries(Some(queries))
        .start_time(aws_sdk_cloudwatch::primitives::DateTime::from(start))
        .end_time(aws_sdk_cloudwatch::primitives::DateTime::from(end))
        .send()
        .await
        .map_err(|e| aws_sdk_cloudwatch::error::DisplayErrorContext(e).to_string())?;
    let results = out.metric_data_results.unwrap_or_default();
    let values = |id: &str| -> Vec<f64> {
        results.iter().find(|r| r.id() == Some(id)).map(|r| r.values().to_vec()).unwrap_or_default()
    };
    // Results are newest first by default (ScanBy TimestampDescending).
    let oldest = values("age").first().map(|v| *v as u64);
    let sum = |id: &str| values(id).iter().sum::<f64>() as i64;
    let with_stage = ctx.stage.is_some();
    let mut failures_by_kind: Vec<(String, i64)> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str().to_owned(), sum(&format!("k{i}"))))
        .filter(|(_, n)| *n > 0)
        .collect();
    failures_by_kind.sort_by_key(|k| std::cmp::Reverse(k.1));
    let mut m = function.map(|_| FunctionMetrics {
        invocations: sum("inv"),
        errors: sum("err"),
        throttles: sum("thr"),
        records_failed: with_stage.then(|| sum("rf")),
        last_error: None,
        failures_by_kind,
        dropped_invalid: sum("di"),
        dropped: Vec::new(),
        log_note: None,
        max_duration_ms: values("dur").iter().copied().reduce(f64::max).map(|d| d as i64),
        timeout_ms: None,
    });
    if let (Some(m), Some(f)) = (m.as_mut(), function) {
        from_the_log(ctx, m, f, window).await;
    }
    Ok((m, oldest))
}

/// A stage: what the metrics cannot say, from the function's log lines: the last whole-batch
/// error's text (MongoDB unreachable ...) and each record dropped as invalid.
async fn from_the_log(ctx: &Context, m: &mut FunctionMetrics, function: &str, window: Duration) {
    let refused = |e: String| format!("its log could not be read: {e}");
    if m.errors > 0 {
        match crate::function_log::last_batch_error(ctx, function, window).await {
            Ok(found) => m.last_error = found,
            Err(e) => m.log_note = Some(refused(e)),
        }
    }
    if m.dropped_invalid > 0 {
        match crate::function_log::dropped(ctx, function, window).await {
            Ok((found, unread)) => {
                m.dropped = found;
                if let Some(since) = unread {
                    m.log_note = Some(format!("its drop lines before {since} not read (too many)"));
                }
            }
            Err(e) => m.log_note = Some(refused(e)),
        }
    }
}

impl QueueStatus {
    pub fn human(&self) -> String {
        let n = |v: Option<u64>| v.map_or("?".into(), |n| n.to_string());
        let mut s = format!("queue {} ({})\n", self.queue, self.queue_url);
        let waiting = self.visible.unwrap_or(0) + self.in_flight.unwrap_or(0) + self.delayed.unwrap_or(0);
        s.push_str(&format!(
            "  messages:   {} visible, {} in flight, {} delayed\n",
            n(self.visible),
            n(self.in_flight),
            n(self.delayed)
        ));
        s.push_str(&format!(
            "  oldest:     {}\n",
            match (self.oldest_age_seconds, self.retention_left_seconds) {
                (Some(a), Some(l)) => format!(
                    "{} old; deleted by SQS in {} (retention {})",
                    human_duration(a),
                    human_duration(l),
                    human_duration(self.retention_seconds.unwrap_or(0))
                ),
                (Some(a), None) => human_duration(a),
                _ if self.metrics.is_some() && waiting == 0 => "no message waits".to_owned(),
                _ => format!(
                    "unknown ({}); retention {}",
                    self.metrics_note.as_deref().unwrap_or("no data"),
                    self.retention_seconds.map_or("?".into(), human_duration)
                ),
            }
        ));
        s.push_str(&format!(
            "  DLQ:        {} message(s){}\n",
            n(self.dlq_visible),
            self.dlq_url.as_ref().map_or(String::new(), |u| format!(" ({u})"))
        ));
        s.push_str(&format!("  MongoDB:    {}\n", self.mongodb.words()));
        match (&self.mapping, &self.mapping_note) {
            (Some(m), _) => s.push_str(&format!(
                "  mapping:    {} {}{}{}{}\n",
                m.state,
                m.function_arn.as_deref().map(function_name).unwrap_or_default(),
                m.maximum_concurrency.map_or(String::new(), |c| format!(", maximumConcurrency {c}")),
                m.state_transition_reason.as_ref().map_or(String::new(), |r| format!(" ({r})")),
                self.paused_by.as_ref().map_or(String::new(), |by| format!(", {by}"))
            )),
            (None, Some(note)) => s.push_str(&format!("  mapping:    {note}\n")),
            (None, None) => {}
        }
        s.push_str(&self.function_lines());
        match &self.cause {
            Some(cause) => s.push_str(&format!("verdict: {}: {cause}\n", self.verdict.as_str())),
            None => s.push_str(&format!("verdict: {}\n", self.verdict.as_str())),
        }
        for e in &self.evidence {
            s.push_str(&format!("  - {e}\n"));
        }
        if let Some(next) = &self.next {
            s.push_str(&format!("next: {next}\n"));
        }
        s
    }

    /// The `function:` line (with `duration:` and `dropped:` lines) or why there is none.
    fn function_lines(&self) -> String {
        let mut s = String::new();
        match (&self.metrics, &self.metrics_note) {
            (Some(m), _) => {
                s.push_str(&format!(
                    "  function:   {} invocation(s), {} error(s), {} throttle(s){}{} in the last {}\n",
                    m.invocations,
                    m.errors,
                    m.throttles,
                    m.records_failed.map_or(String::new(), |r| format!(", {r} failed record(s)")),
                    if m.dropped_invalid > 0 {
                        format!(", {} dropped as invalid", m.dropped_invalid)
                    } else {
                        String::new()
                    },
                    human_duration(self.window_seconds)
                ));
                if let Some(d) = m.duration_words() {
                    s.push_str(&format!("  duration:   {d}\n"));
                }
                s.push_str(&dropped_lines(&m.dropped));
            }
            (None, Some(note)) => s.push_str(&format!("  function:   {note}\n")),
            (None, None) => s.push_str("  function:   no mapping, no function metrics\n"),
        }
        s
    }
}

/// One line per record dropped as invalid (the latest [`DROPPED_SHOWN`]), each with its reason.
pub fn dropped_lines(dropped: &[crate::function_log::DroppedMessage]) -> String {
    let skip = dropped.len().saturating_sub(DROPPED_SHOWN);
    let mut s = String::new();
    if skip > 0 {
        s.push_str(&format!("  dropped:    ({skip} earlier not shown)\n"));
    }
    for d in &dropped[skip..] {
        s.push_str(&format!(
            "  dropped:    message {} at {}: {}\n",
            d.message_id,
            d.at.as_deref().unwrap_or("?"),
            d.reason
        ));
    }
    s
}

/// How many dropped records a listing shows (the latest).
pub const DROPPED_SHOWN: usize = 10;

#[cfg(test)]
impl QueueStatus {
    /// A status of `queue` with nothing waiting, one message in its DLQ, this verdict, cause and
    /// metrics (the metrics note: "the metrics API refused").
    pub(crate) fn example(
        queue: sophia_declarations::Queue,
        verdict: Verdict,
        cause: &str,
        metrics: Option<FunctionMetrics>,
    ) -> Self {
        QueueStatus {
            queue: QueueName::of(queue),
            queue_url: "http://q".into(),
            dlq_url: None,
            visible: Some(0),
            in_flight: Some(0),
            delayed: Some(0),
            dlq_visible: Some(1),
            retention_seconds: None,
            visibility_timeout_seconds: None,
            oldest_age_seconds: None,
            retention_left_seconds: None,
            mapping: None,
            mapping_note: None,
            paused_by: None,
            window_seconds: 900,
            metrics,
            metrics_note: Some("the metrics API refused".into()),
            stranded: None,
            mongodb: MongoNow::NotChecked,
            last_cause: None,
            verdict,
            cause: Some(cause.into()),
            evidence: Vec::new(),
            next: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(invocations: i64, errors: i64, throttles: i64) -> FunctionMetrics {
        FunctionMetrics { invocations, errors, throttles, ..FunctionMetrics::default() }
    }

    fn mapping(state: &str) -> Mapping {
        Mapping {
            uuid: "u-1".into(),
            state: state.into(),
            state_transition_reason: Some("USER_INITIATED".into()),
            function_arn: None,
            maximum_concurrency: None,
        }
    }

    /// `verdict` of visible, in flight, the oldest age, a mapping and metrics (180 s healthy age).
    fn v(
        visible: u64,
        in_flight: u64,
        oldest_age: Option<u64>,
        mapping: Option<Option<&Mapping>>,
        metrics: Option<&FunctionMetrics>,
    ) -> (Verdict, Option<String>, Vec<String>) {
        verdict(&Facts {
            visible,
            in_flight,
            oldest_age,
            healthy_age: 180,
            mapping,
            metrics,
            dlq: Some(0),
            ..Facts::default()
        })
    }

    #[test]
    fn the_verdicts_and_their_evidence() {
        let (enabled, disabled) = (mapping("Enabled"), mapping("Disabled"));
        let on = Some(Some(&enabled));
        assert_eq!(v(0, 0, None, on, Some(&m(0, 0, 0))).0, Verdict::Healthy);
        let (verdict_, _, e) = v(40, 0, Some(900), Some(Some(&disabled)), Some(&m(0, 0, 0)));
        assert_eq!(verdict_, Verdict::Stopped);
        assert!(e.iter().any(|l| l.contains("mapping u-1 is Disabled (USER_INITIATED)")), "{e:?}");
        assert_eq!(v(40, 0, Some(900), Some(None), None).0, Verdict::Stopped, "no mapping");
        assert_eq!(v(40, 0, Some(900), on, Some(&m(0, 0, 0))).0, Verdict::Stopped, "enabled, not invoked");
        assert_eq!(v(40, 5, Some(900), on, Some(&m(30, 0, 2))).0, Verdict::Slow);
        assert_eq!(v(400, 50, Some(900), on, Some(&m(300, 0, 0))).0, Verdict::Burst);
        assert_eq!(v(3, 1, Some(20), on, Some(&m(30, 0, 0))).0, Verdict::Healthy);
        assert_eq!(v(3, 0, None, None, None).0, Verdict::Undecided, "no runner, messages waiting");
    }

    /// Nothing waits, the DLQ is empty, the mapping and the metrics as given (180 s healthy age).
    fn quiet_facts<'a>(mapping: &'a Mapping, metrics: &'a FunctionMetrics) -> Facts<'a> {
        Facts {
            healthy_age: 180,
            mapping: Some(Some(mapping)),
            metrics: Some(metrics),
            dlq: Some(0),
            ..Facts::default()
        }
    }

    /// "healthy" only when nothing needs a person: an empty source with a DLQ, delayed messages,
    /// stranded reports or a paused mapping (and who paused it) is not.
    #[test]
    fn nothing_that_needs_a_person_reads_as_healthy() {
        let (enabled, disabled) = (mapping("Enabled"), mapping("Disabled"));
        let quiet = m(5, 0, 0);
        let base = quiet_facts(&enabled, &quiet);
        let (verdict_, cause, _) = verdict(&Facts { dlq: Some(2), ..base });
        assert_eq!(verdict_, Verdict::NeedsPerson, "a DLQ that is not empty while its source is");
        assert!(cause.unwrap().starts_with("2 message(s) in the DLQ, each needs a person"));
        let (verdict_, cause, _) = verdict(&Facts { delayed: 3, ..base });
        assert_eq!(verdict_, Verdict::Retrying);
        assert!(cause.unwrap().starts_with("3 message(s) delayed"));
        let stranded = "2 report(s) need a person";
        let (verdict_, cause, _) = verdict(&Facts { stranded: Some(stranded), ..base });
        assert_eq!((verdict_, cause.as_deref()), (Verdict::NeedsPerson, Some(stranded)));
        let paused =
            Facts { mapping: Some(Some(&disabled)), paused_by: Some("paused by alice at 18:02 (queue-pause)"), ..base };
        let (verdict_, cause, _) = verdict(&paused);
        assert_eq!(verdict_, Verdict::Stopped, "paused with nothing waiting is not healthy");
        assert!(cause.unwrap().contains("is Disabled (USER_INITIATED), paused by alice at 18:02 (queue-pause)"));
        // Errors in the window, nothing left: recovering; with a DLQ: failing, the DLQ named too.
        let failed = FunctionMetrics { last_error: Some("MongoDB unreachable".into()), ..m(6, 6, 0) };
        let (verdict_, _, _) = verdict(&Facts { metrics: Some(&failed), ..base });
        assert_eq!(verdict_, Verdict::Recovering);
        let (verdict_, cause, _) = verdict(&Facts { metrics: Some(&failed), dlq: Some(4), ..base });
        assert_eq!(verdict_, Verdict::Failing);
        assert!(
            cause
                .unwrap()
                .ends_with("; also 4 message(s) in the DLQ, each needs a person (dlq list, then dlq show <messageId>)")
        );
        assert_eq!(verdict(&base).0, Verdict::Healthy);
        // A message dropped as invalid needs a person (the producer), named with its reason.
        let dropped = FunctionMetrics {
            dropped_invalid: 1,
            dropped: vec![crate::function_log::DroppedMessage {
                at: None,
                message_id: "m-1".into(),
                reason: "interviewId: not an ObjectId".into(),
            }],
            ..m(5, 0, 0)
        };
        let (verdict_, cause, _) = verdict(&Facts { metrics: Some(&dropped), ..base });
        assert_eq!(verdict_, Verdict::NeedsPerson);
        assert!(
            cause.as_deref().is_some_and(|c| c.starts_with("1 message(s) dropped as invalid in the window")
                && c.ends_with("the latest, message m-1: interviewId: not an ObjectId")),
            "{cause:?}"
        );
    }

    #[test]
    fn report_attempts_failing_by_kind_lead_to_reports_failing() {
        use sophia_declarations::Queue::{InterviewCompleted, ReportGenerate};
        let kinds = FunctionMetrics { failures_by_kind: vec![("quota".into(), 2)], ..m(2, 0, 0) };
        let failing = |q, m: &FunctionMetrics| QueueStatus::example(q, Verdict::Failing, "x", Some(m.clone()));
        assert_eq!(failing_section(&failing(ReportGenerate, &kinds)), "reports-failing");
        let batches = FunctionMetrics { last_error: Some("MongoDB unreachable".into()), ..kinds.clone() };
        let batches = FunctionMetrics { errors: 2, ..batches };
        assert_eq!(failing_section(&failing(ReportGenerate, &batches)), "function-errors");
        assert_eq!(failing_section(&failing(InterviewCompleted, &m(2, 2, 0))), "function-errors");
    }

    /// An unknown count is not zero: a DLQ that could not be read, or every message in flight with
    /// no metrics to say whether they are consumed, never reads as healthy.
    #[test]
    fn unknown_counts_are_undecided_never_healthy() {
        let enabled = mapping("Enabled");
        let quiet = m(5, 0, 0);
        let base = quiet_facts(&enabled, &quiet);
        let (verdict_, cause, evidence) = verdict(&Facts { dlq: None, ..base });
        assert_eq!(verdict_, Verdict::Undecided);
        assert_eq!(cause.as_deref(), Some("cannot tell: the DLQ could not be read"));
        assert!(evidence[0].ends_with("; ? in the DLQ"), "{evidence:?}");
        // What is known still comes first: a DLQ unknown does not hide a failing function.
        let failed = FunctionMetrics { last_error: Some("MongoDB unreachable".into()), ..m(6, 6, 0) };
        assert_eq!(verdict(&Facts { dlq: None, metrics: Some(&failed), ..base }).0, Verdict::Failing);
        let (verdict_, cause, _) = verdict(&Facts { in_flight: 3, metrics: None, ..base });
        assert_eq!(verdict_, Verdict::Undecided, "every message in flight, metrics unreadable");
        assert!(cause.unwrap().starts_with("cannot tell: the function's metrics could not be read"));
    }

    #[test]
    fn failing_batches_name_what_the_errors_say() {
        let enabled = mapping("Enabled");
        let on = Some(Some(&enabled));
        // Every message in flight (as while MongoDB is down) no longer reads as healthy.
        let local = FunctionMetrics {
            last_error: Some("the function returned an error: batch setup failed: MongoDB unreachable".into()),
            records_failed: Some(0),
            ..m(4, 4, 0)
        };
        let (verdict_, cause, _) = v(0, 1, None, on, Some(&local));
        assert_eq!(verdict_, Verdict::Failing);
        assert_eq!(
            cause.as_deref(),
            Some(
                "the function returned an error: batch setup failed: MongoDB unreachable (4 of 4 invocation(s) failed as a whole batch)"
            )
        );
        let aws = m(5, 5, 0);
        assert!(aws.failing().unwrap().contains("5 of 5 invocation(s) failed as a whole batch (the per-batch setup"));
        let reports = FunctionMetrics {
            records_failed: Some(9),
            failures_by_kind: vec![("rate_limited".into(), 7), ("timeout".into(), 2)],
            ..m(9, 0, 0)
        };
        assert_eq!(
            reports.failing().as_deref(),
            Some("report attempts failed by error kind: rate_limited (7), timeout (2)")
        );
        assert_eq!(v(3, 0, Some(900), on, Some(&reports)).0, Verdict::Failing);
        assert_eq!(m(9, 0, 0).failing(), None);
    }

    /// Slow calls that still succeed are named (the near-timeout alarm's first command), a
    /// failure at the timeout is Lambda ending the invocation, not MongoDB, and a DLQ whose
    /// cause has gone quiet keeps naming it; MongoDB not answering is failing with no traffic.
    #[test]
    fn durations_mongodb_and_the_last_cause_are_named() {
        let (enabled, enabling) = (mapping("Enabled"), mapping("Enabling"));
        let slow = FunctionMetrics { max_duration_ms: Some(250_000), timeout_ms: Some(300_000), ..m(4, 0, 0) };
        let base = quiet_facts(&enabled, &slow);
        let (verdict_, cause, _) = verdict(&base);
        assert_eq!(verdict_, Verdict::Slow);
        assert_eq!(
            cause.as_deref(),
            Some(
                "slow calls near the timeout: the longest invocation ran 4m 10s of its 5m timeout (83%) (the alarm's level 80%); past it Lambda ends the invocation (`Task timed out`)"
            )
        );
        let killed = FunctionMetrics { max_duration_ms: Some(300_000), timeout_ms: Some(300_000), ..m(2, 1, 0) };
        let failing = killed.failing().unwrap();
        assert!(failing.contains("Lambda ended it (`Task timed out` in its log), not MongoDB"), "{failing}");
        let quiet = m(0, 0, 0);
        let idle = quiet_facts(&enabled, &quiet);
        let down = MongoNow::Unreachable("Server selection timeout".into());
        let (verdict_, cause, _) = verdict(&Facts { mongodb: Some(&down), ..idle });
        assert_eq!(verdict_, Verdict::Undecided, "no traffic, no error, MongoDB not answering: not healthy");
        assert!(
            cause.unwrap().starts_with("cannot tell: MongoDB does not answer from here now (Server selection timeout)")
        );
        let (verdict_, cause, _) = verdict(&Facts { mongodb: Some(&down), dlq: Some(2), ..idle });
        assert_eq!(verdict_, Verdict::NeedsPerson);
        assert!(cause.unwrap().ends_with("; MongoDB does not answer from here now (Server selection timeout)"));
        let last = "batch setup failed: MongoDB (the function's ERROR line at 2026-12-07T18:02:00Z)";
        let (verdict_, cause, _) =
            verdict(&Facts { mongodb: Some(&MongoNow::Reachable), dlq: Some(2), last_cause: Some(last), ..idle });
        assert_eq!(verdict_, Verdict::NeedsPerson);
        assert!(cause.unwrap().ends_with(&format!("; the last known cause: {last}")));
        let (verdict_, cause, _) = verdict(&Facts { mongodb: Some(&MongoNow::NotChecked), reports: true, ..idle });
        assert_eq!(verdict_, Verdict::Undecided, "never healthy without the reports read");
        assert_eq!(cause.as_deref(), Some("reports not checked: MongoDB not checked (MONGODB_URI unset)"));
        let (verdict_, _, evidence) = verdict(&Facts { mapping: Some(Some(&enabling)), ..idle });
        assert_eq!(verdict_, Verdict::Healthy, "Enabling right after a resume is not stopped");
        assert!(evidence.iter().any(|e| e.contains("is Enabling: resuming")), "{evidence:?}");
        let disabling = mapping("Disabling");
        let (verdict_, cause, _) = verdict(&Facts { mapping: Some(Some(&disabling)), ..idle });
        assert_eq!(verdict_, Verdict::Stopped);
        assert!(cause.unwrap().contains("is Disabling (pausing) (USER_INITIATED)"));
    }

    #[test]
    fn the_near_timeout_level_is_the_alarms() {
        let alarms = include_str!("../../../infra-pulumi/src/alarms.ts");
        let declared = format!("DURATION_ALARM_FRACTION = {};", NEAR_TIMEOUT_PERCENT as f64 / 100.0);
        assert!(alarms.contains(&declared), "infra-pulumi/src/alarms.ts no longer says {declared}");
    }

    #[test]
    fn function_names_come_from_their_arn() {
        assert_eq!(
            function_name("arn:aws:lambda:eu-west-1:123456789012:function:sophia-prod-report-generate"),
            "sophia-prod-report-generate"
        );
        assert_eq!(function_name("sophia-dev-x"), "sophia-dev-x");
    }
}
