//! Metrics in CloudWatch Embedded Metric Format (EMF): one JSON line on stdout that CloudWatch
//! Logs turns into metrics, with no API call and no agent
//! (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>).
//!
//! Nothing but numbers and fixed names can enter a line: metric names and units come from the
//! [`Metric`] enum, dimension names are constants, and dimension values are the stage and the
//! function (from the environment, reduced to `[A-Za-z0-9._-]`) or a [`Dimension`] built from a
//! `&'static str` (an outcome or an error kind). No candidate text, no secret, no id.
//!
//! Why not the `metrics_cloudwatch_embedded` crate: it installs a process-wide recorder, and the
//! local runner and the tests run several functions in one process, each with its own dimensions;
//! the format is small and documented.
//!
//! Emission is on when `AWS_LAMBDA_FUNCTION_NAME` is set (Lambda, or the local Runtime API) and
//! `SOPHIA_METRICS` is not `off`; a test or the local runner sets a [`Sink`] instead.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Sophia";
/// Environment variable: `off` disables emission.
pub const SOPHIA_METRICS: &str = "SOPHIA_METRICS";
/// Environment variable: the stage (the stack sets it); `local` when unset.
pub const SOPHIA_STAGE: &str = "SOPHIA_STAGE";

/// CloudWatch units used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
        }
    }
}

/// Every metric the functions emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// Records of a batch, by how they ended.
    RecordsProcessed,
    RecordsDroppedInvalid,
    RecordsDropped,
    RecordsFailed,
    BatchSize,
    /// Time left before the invocation's deadline when the batch was answered.
    TimeLeftMs,
    /// Settlements.
    InterviewsSettled,
    InterviewsAlreadySettled,
    CreditsConsumed,
    CreditsReleased,
    CreditsForfeited,
    /// Reports.
    ReportsCompleted,
    ReportsFailed,
    ModelLatencyMs,
    PromptTokens,
    CachedTokens,
    CompletionTokens,
    /// Completed reports stored with `needsReview: true` (a critical finding left after the repair).
    ReportsNeedingReview,
    /// Repair calls made (at most one per attempt).
    ReportRepairCalls,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Self::RecordsProcessed => "RecordsProcessed",
            Self::RecordsDroppedInvalid => "RecordsDroppedInvalid",
            Self::RecordsDropped => "RecordsDropped",
            Self::RecordsFailed => "RecordsFailed",
            Self::BatchSize => "BatchSize",
            Self::TimeLeftMs => "TimeLeftMs",
            Self::InterviewsSettled => "InterviewsSettled",
            Self::InterviewsAlreadySettled => "InterviewsAlreadySettled",
            Self::CreditsConsumed => "CreditsConsumed",
            Self::CreditsReleased => "CreditsReleased",
            Self::CreditsForfeited => "CreditsForfeited",
            Self::ReportsCompleted => "ReportsCompleted",
            Self::ReportsFailed => "ReportsFailed",
            Self::ModelLatencyMs => "ModelLatencyMs",
            Self::PromptTokens => "PromptTokens",
            Self::CachedTokens => "CachedTokens",
            Self::CompletionTokens => "CompletionTokens",
            Self::ReportsNeedingReview => "ReportsNeedingReview",
            Self::ReportRepairCalls => "ReportRepairCalls",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Self::TimeLeftMs | Self::ModelLatencyMs => Unit::Milliseconds,
            _ => Unit::Count,
        }
    }

    pub const ALL: [Metric; 19] = [
        Self::RecordsProcessed,
        Self::RecordsDroppedInvalid,
        Self::RecordsDropped,
        Self::RecordsFailed,
        Self::BatchSize,
        Self::TimeLeftMs,
        Self::InterviewsSettled,
        Self::InterviewsAlreadySettled,
        Self::CreditsConsumed,
        Self::CreditsReleased,
        Self::CreditsForfeited,
        Self::ReportsCompleted,
        Self::ReportsFailed,
        Self::ModelLatencyMs,
        Self::PromptTokens,
        Self::CachedTokens,
        Self::CompletionTokens,
        Self::ReportsNeedingReview,
        Self::ReportRepairCalls,
    ];
}

/// An extra dimension whose value is a fixed word of the code (an outcome, an error kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    pub name: &'static str,
    pub value: &'static str,
}

/// Where lines go: stdout on Lambda; a buffer in tests.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

static SINK: OnceLock<Mutex<Option<Sink>>> = OnceLock::new();

fn sink_slot() -> &'static Mutex<Option<Sink>> {
    SINK.get_or_init(|| Mutex::new(None))
}

/// Replaces the destination of every line (tests, the local runner); `None` restores the default.
pub fn set_sink(sink: Option<Sink>) {
    *sink_slot().lock().unwrap_or_else(|e| e.into_inner()) = sink;
}

/// Read once per process.
fn enabled_by_env() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
            && std::env::var(SOPHIA_METRICS).map(|v| v != "off").unwrap_or(true)
    })
}

/// Keeps `[A-Za-z0-9._-]`, at most 128 characters: a name from configuration, never free text.
fn clean(value: &str) -> String {
    let v: String =
        value.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).take(128).collect();
    if v.is_empty() { "unknown".to_owned() } else { v }
}

/// The metrics of one event (a batch, a settlement, a report), written as one EMF line.
#[derive(Debug, Clone)]
pub struct Metrics {
    stage: String,
    function: String,
    extra: Option<Dimension>,
    values: BTreeMap<Metric, f64>,
}

impl Metrics {
    /// Dimensions Stage (`SOPHIA_STAGE`, else `local`) and Function (`AWS_LAMBDA_FUNCTION_NAME`).
    /// Read once per process: every record's line reuses them.
    pub fn from_env() -> Self {
        static DIMENSIONS: OnceLock<(String, String)> = OnceLock::new();
        let (stage, function) = DIMENSIONS.get_or_init(|| {
            (
                clean(&std::env::var(SOPHIA_STAGE).unwrap_or_else(|_| "local".to_owned())),
                clean(&std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".to_owned())),
            )
        });
        Self { stage: stage.clone(), function: function.clone(), extra: None, values: BTreeMap::new() }
    }

    pub fn new(stage: &str, function: &str) -> Self {
        Self { stage: clean(stage), function: clean(function), extra: None, values: BTreeMap::new() }
    }

    /// A third dimension (e.g. `ErrorKind`), for this line only.
    pub fn with_dimension(mut self, dimension: Dimension) -> Self {
        self.extra = Some(dimension);
        self
    }

    /// Adds `value` to the metric (counts add up within one line).
    pub fn add(&mut self, metric: Metric, value: f64) -> &mut Self {
        if value.is_finite() {
            *self.values.entry(metric).or_insert(0.0) += value;
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The EMF document (one JSON object) at `timestamp_ms`.
    pub fn to_emf(&self, timestamp_ms: u64) -> serde_json::Value {
        let mut dimensions = vec!["Stage", "Function"];
        if let Some(d) = self.extra {
            dimensions.push(d.name);
        }
        let definitions: Vec<serde_json::Value> =
            self.values.keys().map(|m| serde_json::json!({"Name": m.name(), "Unit": m.unit().as_str()})).collect();
        let mut doc = serde_json::json!({
            "_aws": {
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": [dimensions], "Metrics": definitions}],
            },
            "Stage": self.stage,
            "Function": self.function,
        });
        if let Some(d) = self.extra {
            doc[d.name] = serde_json::Value::from(clean(d.value));
        }
        for (metric, value) in &self.values {
            doc[metric.name()] = serde_json::json!(value);
        }
        doc
    }

    /// Writes the line (to the sink set, else stdout when enabled); nothing when empty.
    pub fn emit(&self) {
        if self.values.is_empty() {
            return;
        }
        let sink = sink_slot().lock().unwrap_or_else(|e| e.into_inner()).clone();
        if sink.is_none() && !enabled_by_env() {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let line = self.to_emf(now).to_string();
        match sink {
            Some(sink) => sink(&line),
            None => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_emf_document_with_namespace_dimensions_and_units() {
        let mut m = Metrics::new("dev", "sophia-dev-report-generate")
            .with_dimension(Dimension { name: "ErrorKind", value: "rate_limited" });
        m.add(Metric::ReportsFailed, 1.0).add(Metric::ModelLatencyMs, 812.0).add(Metric::ReportsFailed, 1.0);
        let doc = m.to_emf(1_700_000_000_000);
        let aws = &doc["_aws"];
        assert_eq!(aws["Timestamp"], 1_700_000_000_000u64);
        let directive = &aws["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Sophia");
        assert_eq!(directive["Dimensions"], serde_json::json!([["Stage", "Function", "ErrorKind"]]));
        let units: BTreeMap<String, String> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["Name"].as_str().unwrap().to_owned(), d["Unit"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(units["ReportsFailed"], "Count");
        assert_eq!(units["ModelLatencyMs"], "Milliseconds");
        // Every referenced dimension and metric is a top-level member (the EMF rule).
        assert_eq!(
            (doc["Stage"].as_str(), doc["Function"].as_str()),
            (Some("dev"), Some("sophia-dev-report-generate"))
        );
        assert_eq!(doc["ErrorKind"], "rate_limited");
        assert_eq!(doc["ReportsFailed"], 2.0);
        assert_eq!(doc["ModelLatencyMs"], 812.0);
    }

    #[test]
    fn nothing_but_names_and_numbers_can_enter_a_line() {
        let mut m = Metrics::new("dev\n\"{evil} CANDIDATE TEXT", "mongodb://user:pass@host/");
        m.add(Metric::RecordsProcessed, 1.0).add(Metric::CreditsConsumed, f64::NAN);
        let doc = m.to_emf(0);
        for dimension in ["Stage", "Function"] {
            let value = doc[dimension].as_str().unwrap();
            assert!(value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')), "{value}");
        }
        let line = doc.to_string();
        assert!(!line.contains("CANDIDATE TEXT") && !line.contains("pass@") && !line.contains("{evil}"), "{line}");
        assert!(!line.contains("CreditsConsumed"), "a non-finite value is not written: {line}");
        // Metric names are the enum's: every one is a plain identifier with a unit.
        for metric in Metric::ALL {
            assert!(metric.name().chars().all(|c| c.is_ascii_alphanumeric()), "{metric:?}");
        }
    }

    #[test]
    fn lines_go_to_the_sink_and_an_empty_set_writes_nothing() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let kept = lines.clone();
        set_sink(Some(Arc::new(move |l: &str| kept.lock().unwrap().push(l.to_owned()))));
        Metrics::new("dev", "f").emit();
        let mut m = Metrics::new("dev", "f");
        m.add(Metric::BatchSize, 10.0);
        m.emit();
        set_sink(None);
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1);
        let doc: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(doc["BatchSize"], 10.0);
    }
}
