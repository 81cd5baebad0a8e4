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
//! The local pipeline has neither a Lambda API nor CloudWatch: those lines say so, and the verdict
//! is made from what SQS shows.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde::Serialize;

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

/// The function's recent metrics (sums over the window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FunctionMetrics {
    pub invocations: i64,
    pub errors: i64,
    pub throttles: i64,
}

/// The verdict and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Messages wait and nothing consumes them: the mapping is disabled or missing, or the
    /// function was not invoked in the window.
    Stopped,
    /// The function runs but fails or is throttled: messages come back and age.
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
    pub evidence: Vec<String>,
}

/// Decides from the facts (no I/O). `mapping_enabled`: `None` when unknown (local).
pub fn verdict(
    visible: u64,
    in_flight: u64,
    oldest_age: Option<u64>,
    healthy_age: u64,
    mapping_enabled: Option<bool>,
    metrics: Option<FunctionMetrics>,
) -> (Verdict, Vec<String>) {
    let mut evidence = Vec::new();
    let waiting = visible + in_flight;
    if waiting == 0 {
        evidence.push("no message waits or is in flight".into());
        return (Verdict::Healthy, evidence);
    }
    evidence.push(format!("{visible} message(s) visible, {in_flight} in flight"));
    if mapping_enabled == Some(false) {
        evidence.push("the event source mapping is not enabled: nothing receives from the queue".into());
        return (Verdict::Stopped, evidence);
    }
    if let Some(m) = metrics {
        if m.invocations == 0 && visible > 0 {
            evidence.push("messages wait but the function was not invoked in the window".into());
            return (Verdict::Stopped, evidence);
        }
        if m.errors > 0 || m.throttles > 0 {
            evidence.push(format!(
                "the function ran {} time(s) with {} error(s) and {} throttle(s)",
                m.invocations, m.errors, m.throttles
            ));
            return (Verdict::Slow, evidence);
        }
        if oldest_age.is_some_and(|a| a <= healthy_age) {
            evidence
                .push(format!("the oldest message is younger than {healthy_age}s; the function runs without errors"));
            return (Verdict::Healthy, evidence);
        }
        evidence.push(format!(
            "the function ran {} time(s) without errors or throttles, yet messages wait: more arrived than the concurrency cap drains",
            m.invocations
        ));
        return (Verdict::Burst, evidence);
    }
    if in_flight > 0 && visible == 0 {
        evidence.push("every waiting message is in flight: something is consuming".into());
        return (Verdict::Healthy, evidence);
    }
    evidence.push("no mapping state or function metrics to tell stopped, slow and a burst apart".into());
    (Verdict::Undecided, evidence)
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
        Some(u) => crate::dlq::approximate_visible(&locator, u).await.ok().flatten(),
        None => None,
    };
    // By the URL only: a `--stage` whose queues are loopback (tests) has no Lambda API either.
    let local = crate::confirm::is_local_url(&url);
    let (mapping, mapping_note) = if local {
        (None, Some("local: no event source mapping API (the local runner polls the queue itself)".to_owned()))
    } else {
        match arn.as_deref() {
            None => (None, Some("the queue has no QueueArn".into())),
            Some(arn) => match event_source_mapping(ctx, arn).await {
                Ok(Some(m)) => (Some(m), None),
                Ok(None) => (None, Some(format!("no event source mapping reads {arn}: nothing consumes the queue"))),
                Err(e) => (None, Some(format!("Lambda ListEventSourceMappings failed: {e}"))),
            },
        }
    };
    let function = mapping.as_ref().and_then(|m| m.function_arn.as_deref()).map(function_name);
    let (metrics, oldest, metrics_note) = if local {
        (None, None, Some("local: no CloudWatch metrics (invocations, errors, throttles, oldest age)".to_owned()))
    } else {
        let queue_name = url.rsplit('/').next().unwrap_or_default().to_owned();
        match metrics(ctx, &queue_name, function.as_deref(), window).await {
            Ok((m, oldest)) => (m, oldest, None),
            Err(e) => (None, None, Some(format!("CloudWatch GetMetricData failed: {e}"))),
        }
    };
    let mapping_enabled = match (&mapping, local, &mapping_note) {
        (Some(m), _, _) => Some(m.state == "Enabled"),
        (None, false, Some(note)) if note.starts_with("no event source mapping") => Some(false),
        _ => None,
    };
    // Healthy age: within one visibility timeout a message is being worked on normally.
    let (verdict, mut evidence) =
        verdict(visible.unwrap_or(0), in_flight.unwrap_or(0), oldest, visibility, mapping_enabled, metrics);
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

async fn metrics(
    ctx: &Context,
    queue_name: &str,
    function: Option<&str>,
    window: Duration,
) -> Result<(Option<FunctionMetrics>, Option<u64>), String> {
    use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat};
    let client = aws_sdk_cloudwatch::Client::new(&ctx.aws_config().await);
    let query = |id: &str, namespace: &str, name: &str, dim: (&str, &str), stat: &str| {
        MetricDataQuery::builder()
            .id(id)
            .metric_stat(
                MetricStat::builder()
                    .metric(
                        Metric::builder()
                            .namespace(namespace)
                            .metric_name(name)
                            .dimensions(Dimension::builder().name(dim.0).value(dim.1).build())
                            .build(),
                    )
                    .period(60)
                    .stat(stat)
                    .build(),
            )
            .build()
    };
    let mut queries =
        vec![query("age", "AWS/SQS", "ApproximateAgeOfOldestMessage", ("QueueName", queue_name), "Maximum")];
    if let Some(f) = function {
        for (id, name) in [("inv", "Invocations"), ("err", "Errors"), ("thr", "Throttles")] {
            queries.push(query(id, "AWS/Lambda", name, ("FunctionName", f), "Sum"));
        }
    }
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
    let m = function.map(|_| FunctionMetrics { invocations: sum("inv"), errors: sum("err"), throttles: sum("thr") });
    Ok((m, oldest))
}

pub fn human_duration(seconds: u64) -> String {
    match seconds {
        s if s >= 86_400 => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
        s if s >= 3600 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m {}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
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
                "  function:   {} invocation(s), {} error(s), {} throttle(s) in the last {}\n",
                m.invocations,
                m.errors,
                m.throttles,
                human_duration(self.window_seconds)
            )),
            (None, Some(note)) => s.push_str(&format!("  function:   {note}\n")),
            (None, None) => s.push_str("  function:   no mapping, no function metrics\n"),
        }
        s.push_str(&format!("verdict: {}\n", self.verdict.as_str()));
        for e in &self.evidence {
            s.push_str(&format!("  - {e}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(invocations: i64, errors: i64, throttles: i64) -> Option<FunctionMetrics> {
        Some(FunctionMetrics { invocations, errors, throttles })
    }

    #[test]
    fn the_verdicts_and_their_evidence() {
        assert_eq!(verdict(0, 0, None, 180, Some(true), m(0, 0, 0)).0, Verdict::Healthy);
        let (v, e) = verdict(40, 0, Some(900), 180, Some(false), m(0, 0, 0));
        assert_eq!(v, Verdict::Stopped);
        assert!(e.iter().any(|l| l.contains("not enabled")), "{e:?}");
        assert_eq!(verdict(40, 0, Some(900), 180, Some(true), m(0, 0, 0)).0, Verdict::Stopped, "enabled, not invoked");
        assert_eq!(verdict(40, 5, Some(900), 180, Some(true), m(30, 4, 0)).0, Verdict::Slow);
        assert_eq!(verdict(40, 5, Some(900), 180, Some(true), m(30, 0, 2)).0, Verdict::Slow);
        assert_eq!(verdict(400, 50, Some(900), 180, Some(true), m(300, 0, 0)).0, Verdict::Burst);
        assert_eq!(verdict(3, 1, Some(20), 180, Some(true), m(30, 0, 0)).0, Verdict::Healthy);
        assert_eq!(verdict(3, 0, None, 180, None, None).0, Verdict::Undecided, "local, messages waiting");
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
