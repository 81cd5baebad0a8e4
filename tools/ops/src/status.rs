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
}

impl FunctionMetrics {
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
                None => format!(
                    "{} of {} invocation(s) failed as a whole batch (the per-batch setup: MongoDB unreachable or refused, or the function could not start); the text is in the function's ERROR lines",
                    self.errors, self.invocations
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
    /// Messages wait and nothing consumes them: the mapping is disabled or missing, or the
    /// function was not invoked in the window.
    Stopped,
    /// The function runs but its batches or records fail: messages come back, age, and after
    /// maxReceiveCount receives reach the DLQ.
    Failing,
    /// The function runs but is throttled: messages wait.
    Slow,
    /// The function runs without errors or throttles but messages still wait: more arrived than
    /// the concurrency cap drains at once.
    Burst,
    /// Nothing waits, or nothing waits long.
    Healthy,
    /// Not enough to decide (local pipeline with messages waiting, or the APIs refused).
    Undecided,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Failing => "failing",
            Self::Slow => "slow",
            Self::Burst => "a burst",
            Self::Healthy => "healthy",
            Self::Undecided => "undecided",
        }
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
    /// `ApproximateAgeOfOldestMessage` (CloudWatch, the latest minute of the window).
    pub oldest_age_seconds: Option<u64>,
    /// Retention minus the oldest age: after this the oldest message is deleted without reaching
    /// the DLQ.
    pub retention_left_seconds: Option<u64>,
    pub mapping: Option<Mapping>,
    /// Why there is no mapping line (local pipeline, an API error), when there is none.
    pub mapping_note: Option<String>,
    pub window_seconds: u64,
    pub metrics: Option<FunctionMetrics>,
    pub metrics_note: Option<String>,
    pub verdict: Verdict,
    /// With `failing`: what the function's errors say.
    pub cause: Option<String>,
    pub evidence: Vec<String>,
}

/// Decides from the facts (no I/O). `mapping`: `None` when unknown; `Some(None)` when no mapping
/// reads the queue.
pub fn verdict(
    visible: u64,
    in_flight: u64,
    oldest_age: Option<u64>,
    healthy_age: u64,
    mapping: Option<Option<&Mapping>>,
    metrics: Option<&FunctionMetrics>,
) -> (Verdict, Option<String>, Vec<String>) {
    let mut evidence = Vec::new();
    let waiting = visible + in_flight;
    if waiting == 0 {
        evidence.push("no message waits or is in flight".into());
        return (Verdict::Healthy, None, evidence);
    }
    evidence.push(format!("{visible} message(s) visible, {in_flight} in flight"));
    match mapping {
        Some(None) => {
            evidence.push("no event source mapping reads the queue: nothing receives from it".into());
            return (Verdict::Stopped, None, evidence);
        }
        Some(Some(m)) if m.state != "Enabled" => {
            evidence.push(format!(
                "the event source mapping {} is {}{}: nothing receives from the queue (resume: `queue resume`)",
                m.uuid,
                m.state,
                m.state_transition_reason.as_ref().map_or(String::new(), |r| format!(" ({r})"))
            ));
            return (Verdict::Stopped, None, evidence);
        }
        _ => {}
    }
    if let Some(m) = metrics {
        if let Some(cause) = m.failing() {
            evidence.push(format!(
                "the function ran {} time(s): {} error(s), {} failed record(s), {} throttle(s)",
                m.invocations,
                m.errors,
                m.records_failed.map_or("?".into(), |r| r.to_string()),
                m.throttles
            ));
            return (Verdict::Failing, Some(cause), evidence);
        }
        if m.invocations == 0 && visible > 0 {
            evidence.push("messages wait but the function was not invoked in the window".into());
            return (Verdict::Stopped, None, evidence);
        }
        if m.throttles > 0 {
            evidence.push(format!("the function ran {} time(s) with {} throttle(s)", m.invocations, m.throttles));
            return (Verdict::Slow, None, evidence);
        }
        if oldest_age.is_none_or(|a| a <= healthy_age) && (oldest_age.is_some() || visible == 0) {
            evidence.push(format!(
                "the oldest message is younger than {healthy_age}s or in flight; the function runs without errors"
            ));
            return (Verdict::Healthy, None, evidence);
        }
        evidence.push(format!(
            "the function ran {} time(s) without errors or throttles, yet messages wait: more arrived than the concurrency cap drains",
            m.invocations
        ));
        return (Verdict::Burst, None, evidence);
    }
    if in_flight > 0 && visible == 0 {
        evidence.push("every waiting message is in flight: something is consuming".into());
        return (Verdict::Healthy, None, evidence);
    }
    evidence.push("no mapping state or function metrics to tell stopped, slow and a burst apart".into());
    (Verdict::Undecided, None, evidence)
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
                    }),
                    None,
                ))
            }
            Self::Unavailable(why) => Err(why.clone()),
        }
    }
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
    let visible = count(&attrs, QueueAttributeName::ApproximateNumberOfMessages);
    let in_flight = count(&attrs, QueueAttributeName::ApproximateNumberOfMessagesNotVisible);
    let delayed = count(&attrs, QueueAttributeName::ApproximateNumberOfMessagesDelayed);
    let retention = count(&attrs, QueueAttributeName::MessageRetentionPeriod);
    let visibility = count(&attrs, QueueAttributeName::VisibilityTimeout).unwrap_or(30);
    let arn = attrs.get(&QueueAttributeName::QueueArn).cloned();
    let dlq_url = locator.dlq_url(queue).await.ok();
    let dlq_visible = match &dlq_url {
        Some(u) => crate::queues::approximate_visible(&locator, u).await.ok().flatten(),
        None => None,
    };
    // By the URL only: a `--stage` whose queues are loopback (tests) has no Lambda API either.
    let observer = Observer::for_queue(ctx, &url);
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
    let queue_name = url.rsplit('/').next().unwrap_or_default().to_owned();
    let (metrics, oldest, metrics_note) = match observer.metrics(ctx, &queue_name, function.as_deref(), window).await {
        Ok((m, oldest)) => (m, oldest, None),
        Err(_) if matches!(observer, Observer::Unavailable(_)) => {
            (None, None, Some("local: no function metrics without the runner's control channel".to_owned()))
        }
        Err(e) => (None, None, Some(format!("the function's metrics could not be read: {e}"))),
    };
    let mapping_state = mapping_known.then_some(mapping.as_ref());
    // Healthy age: within one visibility timeout a message is being worked on normally.
    let (verdict, cause, mut evidence) =
        verdict(visible.unwrap_or(0), in_flight.unwrap_or(0), oldest, visibility, mapping_state, metrics.as_ref());
    let retention_left = match (retention, oldest) {
        (Some(r), Some(a)) => Some(r.saturating_sub(a)),
        _ => None,
    };
    if let Some(left) = retention_left.filter(|l| *l < 86_400) {
        evidence.push(format!(
            "the oldest message is deleted by SQS in {} (retention), without reaching the DLQ",
            human_duration(left)
        ));
    }
    Ok(QueueStatus {
        queue,
        queue_url: url,
        dlq_url,
        visible,
        in_flight,
        delayed,
        dlq_visible,
        retention_seconds: retention,
        oldest_age_seconds: oldest,
        retention_left_seconds: retention_left,
        mapping,
        mapping_note,
        window_seconds: window.as_secs(),
        metrics,
        metrics_note,
        verdict,
        cause,
        evidence,
    })
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
        // The functions' own metrics (declarations/metrics.json: dimensions Stage and Function,
        // ReportsFailed also by ErrorKind); a function that does not emit one reads as 0.
        if let Some(stage) = stage {
            let both = [("Stage", stage), ("Function", f)];
            queries.push(metric_query("rf", "Sophia", "RecordsFailed", &both, "Sum"));
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
    let m = function.map(|_| FunctionMetrics {
        invocations: sum("inv"),
        errors: sum("err"),
        throttles: sum("thr"),
        records_failed: with_stage.then(|| sum("rf")),
        last_error: None,
        failures_by_kind,
    });
    Ok((m, oldest))
}

impl QueueStatus {
    pub fn human(&self) -> String {
        let n = |v: Option<u64>| v.map_or("?".into(), |n| n.to_string());
        let mut s = format!("queue {} ({})\n", self.queue, self.queue_url);
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
        match (&self.mapping, &self.mapping_note) {
            (Some(m), _) => s.push_str(&format!(
                "  mapping:    {} {}{}{}\n",
                m.state,
                m.function_arn.as_deref().map(function_name).unwrap_or_default(),
                m.maximum_concurrency.map_or(String::new(), |c| format!(", maximumConcurrency {c}")),
                m.state_transition_reason.as_ref().map_or(String::new(), |r| format!(" ({r})"))
            )),
            (None, Some(note)) => s.push_str(&format!("  mapping:    {note}\n")),
            (None, None) => {}
        }
        match (&self.metrics, &self.metrics_note) {
            (Some(m), _) => s.push_str(&format!(
                "  function:   {} invocation(s), {} error(s), {} throttle(s){} in the last {}\n",
                m.invocations,
                m.errors,
                m.throttles,
                m.records_failed.map_or(String::new(), |r| format!(", {r} failed record(s)")),
                human_duration(self.window_seconds)
            )),
            (None, Some(note)) => s.push_str(&format!("  function:   {note}\n")),
            (None, None) => s.push_str("  function:   no mapping, no function metrics\n"),
        }
        match &self.cause {
            Some(cause) => s.push_str(&format!("verdict: {}: {cause}\n", self.verdict.as_str())),
            None => s.push_str(&format!("verdict: {}\n", self.verdict.as_str())),
        }
        for e in &self.evidence {
            s.push_str(&format!("  - {e}\n"));
        }
        s
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

    #[test]
    fn the_verdicts_and_their_evidence() {
        let (enabled, disabled) = (mapping("Enabled"), mapping("Disabled"));
        let on = Some(Some(&enabled));
        assert_eq!(verdict(0, 0, None, 180, on, Some(&m(0, 0, 0))).0, Verdict::Healthy);
        let (v, _, e) = verdict(40, 0, Some(900), 180, Some(Some(&disabled)), Some(&m(0, 0, 0)));
        assert_eq!(v, Verdict::Stopped);
        assert!(e.iter().any(|l| l.contains("mapping u-1 is Disabled (USER_INITIATED)")), "{e:?}");
        assert_eq!(verdict(40, 0, Some(900), 180, Some(None), None).0, Verdict::Stopped, "no mapping");
        assert_eq!(verdict(40, 0, Some(900), 180, on, Some(&m(0, 0, 0))).0, Verdict::Stopped, "enabled, not invoked");
        assert_eq!(verdict(40, 5, Some(900), 180, on, Some(&m(30, 0, 2))).0, Verdict::Slow);
        assert_eq!(verdict(400, 50, Some(900), 180, on, Some(&m(300, 0, 0))).0, Verdict::Burst);
        assert_eq!(verdict(3, 1, Some(20), 180, on, Some(&m(30, 0, 0))).0, Verdict::Healthy);
        assert_eq!(verdict(3, 0, None, 180, None, None).0, Verdict::Undecided, "no runner, messages waiting");
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
        let (v, cause, _) = verdict(0, 1, None, 180, on, Some(&local));
        assert_eq!(v, Verdict::Failing);
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
        let (v, _, _) = verdict(3, 0, Some(900), 180, on, Some(&reports));
        assert_eq!(v, Verdict::Failing);
        assert_eq!(m(9, 0, 0).failing(), None);
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
