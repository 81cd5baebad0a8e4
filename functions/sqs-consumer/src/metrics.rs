//! Metrics in CloudWatch Embedded Metric Format (EMF): one JSON line on stdout that CloudWatch
//! Logs turns into metrics, with no API call and no agent
//! (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>).
//!
//! What a line may carry is declared once, in `declarations/metrics.json` (embedded here; the Pulumi
//! program builds the dashboard and the alarms from the same file): each metric's unit, its
//! dimension sets (a line carries exactly those, so CloudWatch can be asked for each set: it
//! matches whole dimension sets) and the functions that emit it. Tests on both sides check that
//! the [`Metric`] enum and the declaration name the same metrics.
//!
//! Nothing but numbers and fixed names can enter a line: metric names come from the [`Metric`]
//! enum, dimension names from the declaration, and dimension values are the stage and the
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
pub const SOPHIA_METRICS: &str = sophia_env::declared("SOPHIA_METRICS");
/// Environment variable: the stage (the stack sets it); `local` when unset.
pub const SOPHIA_STAGE: &str = sophia_env::declared("SOPHIA_STAGE");

/// The declaration of every metric (`declarations/metrics.json`), shared with the Pulumi program
/// (the dashboard and the alarms read it), embedded at build time.
pub const DECLARATION_JSON: &str = sophia_declarations::METRICS_JSON;

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

    fn parse(s: &str) -> Option<Self> {
        match s {
            "Count" => Some(Self::Count),
            "Milliseconds" => Some(Self::Milliseconds),
            _ => None,
        }
    }
}

/// Which functions emit a metric (`"*"`: every function of queues.json, e.g. the batch counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmittedBy {
    Every,
    Functions(Vec<String>),
}

/// One metric of the declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricSpec {
    pub name: String,
    pub unit: Unit,
    /// Every set is written on each line that carries the metric (EMF `Dimensions`), in this order.
    pub dimension_sets: Vec<Vec<String>>,
    pub emitted_by: EmittedBy,
}

/// The `quantile` (0..1) of `values` by nearest rank: the smallest value at or above that share
/// of them; `None` for no value.
pub fn percentile(values: &[f64], quantile: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = (sorted.len() as f64 * quantile).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// `declarations/metrics.json`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    pub namespace: String,
    /// Dimension names (the declaration describes each).
    pub dimensions: Vec<String>,
    pub metrics: Vec<MetricSpec>,
    /// `serviceLevels`: percentiles of Milliseconds metrics the stage alarms on
    /// (infra-pulumi/src/alarms.ts) and the load test compares its figures with.
    pub service_levels: Vec<ServiceLevel>,
}

/// A service level of the declaration: the `statistic` percentile (`p95`) of `metric` over
/// `period_seconds` stays at or under `threshold_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceLevel {
    pub metric: String,
    /// `p<percentile>`, as CloudWatch names the statistic.
    pub statistic: String,
    /// 1..=99 (`p95` -> 95).
    pub percentile: u8,
    pub threshold_ms: u64,
    pub period_seconds: u64,
    pub description: String,
}

impl ServiceLevel {
    /// The percentile as a fraction (`p95` -> 0.95).
    pub fn quantile(&self) -> f64 {
        f64::from(self.percentile) / 100.0
    }

    /// "p95 <= 15 min".
    pub fn human(&self) -> String {
        let s = self.threshold_ms / 1000;
        let threshold = if s.is_multiple_of(60) { format!("{} min", s / 60) } else { format!("{s} s") };
        format!("{} <= {threshold}", self.statistic)
    }

    /// The level's percentile of `values` (nearest rank, as CloudWatch's percentiles of raw
    /// values); `None` when there is none.
    pub fn measure(&self, values: &[f64]) -> Option<f64> {
        percentile(values, self.quantile())
    }

    /// Whether `value_ms` (the statistic measured) meets the level.
    pub fn met_by(&self, value_ms: f64) -> bool {
        value_ms <= self.threshold_ms as f64
    }
}

impl Declaration {
    /// Parses and checks a declaration: known units, dimension sets made of declared dimensions,
    /// each starting with Stage and Function (the dashboard and alarms select by both), no
    /// duplicate names or sets.
    pub fn parse(text: &str) -> Result<Self, String> {
        let doc: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("metrics.json does not parse: {e}"))?;
        let namespace = doc["namespace"].as_str().ok_or("metrics.json: namespace must be a string")?.to_owned();
        let dimensions: Vec<String> = doc["dimensions"]
            .as_object()
            .ok_or("metrics.json: dimensions must be an object")?
            .keys()
            .cloned()
            .collect();
        let mut metrics = Vec::new();
        for m in doc["metrics"].as_array().ok_or("metrics.json: metrics must be an array")? {
            let metric = parse_metric(m, &dimensions)?;
            if metrics.iter().any(|x: &MetricSpec| x.name == metric.name) {
                return Err(format!("metrics.json: {} is declared twice", metric.name));
            }
            metrics.push(metric);
        }
        let mut service_levels = Vec::new();
        for l in doc["serviceLevels"].as_array().map(Vec::as_slice).unwrap_or_default() {
            service_levels.push(parse_service_level(l, &metrics)?);
        }
        Ok(Self { namespace, dimensions, metrics, service_levels })
    }

    /// The service level of `metric`, if one is declared.
    pub fn service_level(&self, metric: Metric) -> Option<&ServiceLevel> {
        self.service_levels.iter().find(|l| l.metric == metric.name())
    }

    /// The embedded declaration (a test checks that it parses and matches [`Metric`]).
    pub fn embedded() -> &'static Declaration {
        static PARSED: OnceLock<Declaration> = OnceLock::new();
        PARSED.get_or_init(|| match Declaration::parse(DECLARATION_JSON) {
            Ok(d) => d,
            // Unreachable in a tested build: `the_declaration_parses_and_names_every_metric_of_the_enum`.
            Err(e) => panic!("{e}"),
        })
    }

    pub fn metric(&self, name: &str) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// One metric of `metrics.json`: its name, known unit, dimension sets (each starting with Stage
/// and Function, of declared dimensions, none twice) and who emits it.
fn parse_metric(m: &serde_json::Value, dimensions: &[String]) -> Result<MetricSpec, String> {
    let name = m["name"].as_str().ok_or("metrics.json: a metric without a name")?.to_owned();
    let unit = m["unit"]
        .as_str()
        .and_then(Unit::parse)
        .ok_or_else(|| format!("metrics.json: {name} has no known unit (Count, Milliseconds)"))?;
    let mut dimension_sets: Vec<Vec<String>> = Vec::new();
    for set in m["dimensionSets"].as_array().ok_or_else(|| format!("metrics.json: {name} has no dimensionSets"))? {
        let set: Vec<String> = set
            .as_array()
            .ok_or_else(|| format!("metrics.json: {name}: a dimension set is an array"))?
            .iter()
            .map(|d| d.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("metrics.json: {name}: dimension names are strings"))?;
        if set.len() < 2 || set[0] != "Stage" || set[1] != "Function" {
            return Err(format!("metrics.json: {name}: every dimension set starts with Stage, Function"));
        }
        if let Some(d) = set.iter().find(|d| !dimensions.contains(d)) {
            return Err(format!("metrics.json: {name} names the undeclared dimension {d}"));
        }
        if dimension_sets.contains(&set) {
            return Err(format!("metrics.json: {name} declares {set:?} twice"));
        }
        dimension_sets.push(set);
    }
    if dimension_sets.is_empty() {
        return Err(format!("metrics.json: {name} has no dimension set"));
    }
    let emitted_by = match &m["emittedBy"] {
        serde_json::Value::String(s) if s == "*" => EmittedBy::Every,
        serde_json::Value::Array(a) => EmittedBy::Functions(
            a.iter()
                .map(|f| f.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("metrics.json: {name}: emittedBy lists function names"))?,
        ),
        _ => return Err(format!("metrics.json: {name}: emittedBy is \"*\" or a list of functions")),
    };
    Ok(MetricSpec { name, unit, dimension_sets, emitted_by })
}

/// One service level of `metrics.json`: a whole percentile of a declared Milliseconds metric, a
/// positive threshold and period.
fn parse_service_level(l: &serde_json::Value, metrics: &[MetricSpec]) -> Result<ServiceLevel, String> {
    let metric = l["metric"].as_str().ok_or("metrics.json: a service level without a metric")?.to_owned();
    match metrics.iter().find(|m| m.name == metric) {
        Some(m) if m.unit == Unit::Milliseconds => {}
        Some(_) => {
            return Err(format!("metrics.json: the service level of {metric} needs a Milliseconds metric"));
        }
        None => return Err(format!("metrics.json: a service level names the undeclared metric {metric}")),
    }
    let statistic = l["statistic"].as_str().unwrap_or_default().to_owned();
    let percentile =
        statistic.strip_prefix('p').and_then(|p| p.parse::<u8>().ok()).filter(|p| (1..=99).contains(p)).ok_or_else(
            || format!("metrics.json: {metric}: a service level's statistic is a whole percentile (p95)"),
        )?;
    let number = |k: &str| {
        l[k].as_u64().filter(|n| *n > 0).ok_or_else(|| format!("metrics.json: {metric}: {k} is a positive integer"))
    };
    Ok(ServiceLevel {
        threshold_ms: number("thresholdMs")?,
        period_seconds: number("periodSeconds")?,
        description: l["description"].as_str().unwrap_or_default().to_owned(),
        metric,
        statistic,
        percentile,
    })
}

/// Declares the [`Metric`] enum: one name per metric of `declarations/metrics.json` (the name is
/// the variant's, the description its documentation; unit and dimension sets come from the
/// declaration). Called with the declaration's names by `sophia_declarations::with_metric_names!`.
macro_rules! metrics {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Every metric the functions emit (names as in `declarations/metrics.json`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Metric {
            $($(#[$doc])* $name,)*
        }

        impl Metric {
            pub const ALL: &'static [Metric] = &[$(Self::$name,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }
        }
    };
}

// Adding a metric: its line in declarations/metrics.json; the names come from there.
sophia_declarations::with_metric_names!(metrics);

/// Used only if a variant were missing from the declaration, which a test forbids.
static UNDECLARED: OnceLock<MetricSpec> = OnceLock::new();

impl Metric {
    /// The metric's entry in the declaration.
    pub fn spec(self) -> &'static MetricSpec {
        Declaration::embedded().metric(self.name()).unwrap_or_else(|| {
            debug_assert!(false, "{} is not declared in declarations/metrics.json", self.name());
            UNDECLARED.get_or_init(|| MetricSpec {
                name: String::new(),
                unit: Unit::Count,
                dimension_sets: vec![vec!["Stage".to_owned(), "Function".to_owned()]],
                emitted_by: EmittedBy::Every,
            })
        })
    }

    pub fn unit(self) -> Unit {
        self.spec().unit
    }
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
        sophia_env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
            && sophia_env::var(SOPHIA_METRICS).map(|v| v != "off").unwrap_or(true)
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
                clean(&sophia_env::var(SOPHIA_STAGE).unwrap_or_else(|| "local".to_owned())),
                clean(&sophia_env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| "local".to_owned())),
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

    /// The EMF document (one JSON object) at `timestamp_ms`: one directive per group of metrics
    /// that share their declared dimension sets, each with exactly those sets (EMF `Dimensions` is
    /// an array of dimension sets, every set applied to every metric of the directive:
    /// <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>).
    /// A declared dimension the line does not carry (an `ErrorKind` without [`with_dimension`])
    /// is written as `unknown`, so the sets stay exactly the declared ones.
    ///
    /// [`with_dimension`]: Metrics::with_dimension
    pub fn to_emf(&self, timestamp_ms: u64) -> serde_json::Value {
        let mut groups: Vec<(&Vec<Vec<String>>, Vec<Metric>)> = Vec::new();
        for metric in self.values.keys() {
            let sets = &metric.spec().dimension_sets;
            match groups.iter_mut().find(|(s, _)| *s == sets) {
                Some((_, metrics)) => metrics.push(*metric),
                None => groups.push((sets, vec![*metric])),
            }
        }
        let directives: Vec<serde_json::Value> = groups
            .iter()
            .map(|(sets, metrics)| {
                let definitions: Vec<serde_json::Value> =
                    metrics.iter().map(|m| serde_json::json!({"Name": m.name(), "Unit": m.unit().as_str()})).collect();
                serde_json::json!({"Namespace": NAMESPACE, "Dimensions": sets, "Metrics": definitions})
            })
            .collect();
        let mut doc = serde_json::json!({
            "_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": directives},
            "Stage": self.stage,
            "Function": self.function,
        });
        if let Some(d) = self.extra {
            doc[d.name] = serde_json::Value::from(clean(d.value));
        }
        for (sets, _) in &groups {
            for name in sets.iter().flatten() {
                if doc.get(name.as_str()).is_none() {
                    doc[name.as_str()] = serde_json::Value::from("unknown");
                }
            }
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
        // ReportsFailed by kind and in total (the dashboard and the alarm read the total);
        // ModelLatencyMs, declared with [Stage, Function] only, in a directive of its own.
        assert_eq!(
            directive["Dimensions"],
            serde_json::json!([["Stage", "Function", "ErrorKind"], ["Stage", "Function"]])
        );
        assert_eq!(aws["CloudWatchMetrics"][1]["Dimensions"], serde_json::json!([["Stage", "Function"]]));
        let units: BTreeMap<String, String> = aws["CloudWatchMetrics"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["Metrics"].as_array().unwrap().iter())
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

    #[test]
    fn the_time_to_report_is_a_declared_service_level_and_a_bad_level_is_refused() {
        let level = Declaration::embedded().service_level(Metric::TimeToReportMs).expect("declared");
        assert_eq!((level.statistic.as_str(), level.percentile, level.threshold_ms), ("p95", 95, 900_000));
        assert_eq!(level.human(), "p95 <= 15 min");
        assert!(level.met_by(900_000.0) && !level.met_by(900_001.0));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(level.measure(&hundred), Some(95.0));
        assert_eq!(percentile(&hundred, 0.5), Some(50.0));
        assert_eq!(percentile(&[7.0], 0.95), Some(7.0));
        assert_eq!(percentile(&[], 0.95), None);
        let with = |level: &str| {
            format!(
                r#"{{"namespace": "Sophia", "dimensions": {{"Stage": "", "Function": ""}},
                "metrics": [{{"name": "A", "unit": "Count", "dimensionSets": [["Stage", "Function"]], "emittedBy": "*"}},
                            {{"name": "B", "unit": "Milliseconds", "dimensionSets": [["Stage", "Function"]], "emittedBy": "*"}}],
                "serviceLevels": [{level}]}}"#
            )
        };
        let ok =
            Declaration::parse(&with(r#"{"metric": "B", "statistic": "p99", "thresholdMs": 5, "periodSeconds": 60}"#));
        assert_eq!(ok.unwrap().service_levels[0].quantile(), 0.99);
        for (bad, why) in [
            (r#"{"metric": "A", "statistic": "p95", "thresholdMs": 5, "periodSeconds": 60}"#, "Milliseconds"),
            (r#"{"metric": "C", "statistic": "p95", "thresholdMs": 5, "periodSeconds": 60}"#, "undeclared"),
            (r#"{"metric": "B", "statistic": "Average", "thresholdMs": 5, "periodSeconds": 60}"#, "percentile"),
            (r#"{"metric": "B", "statistic": "p95", "thresholdMs": 0, "periodSeconds": 60}"#, "thresholdMs"),
        ] {
            let e = Declaration::parse(&with(bad)).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_declaration_parses_and_names_every_metric_of_the_enum() {
        let d = Declaration::parse(DECLARATION_JSON).expect("declarations/metrics.json");
        assert_eq!(d.namespace, NAMESPACE);
        let declared: Vec<&str> = d.metrics.iter().map(|m| m.name.as_str()).collect();
        let enumerated: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
        let mut a = declared.clone();
        let mut b = enumerated.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "the Metric enum is generated from declarations/metrics.json");
        for metric in Metric::ALL {
            assert_eq!(metric.spec().name, metric.name());
            assert!(metric.name().chars().all(|c| c.is_ascii_alphanumeric()), "{metric:?}");
        }
        // emittedBy names functions of queues.json.
        let functions = &sophia_declarations::Declaration::embedded().functions;
        for m in &d.metrics {
            if let EmittedBy::Functions(names) = &m.emitted_by {
                assert!(!names.is_empty(), "{}", m.name);
                for n in names {
                    assert!(functions.iter().any(|f| &f.name == n), "{}: {n} is not a function of queues.json", m.name);
                }
            }
        }
    }

    #[test]
    fn a_line_carries_exactly_the_declared_dimension_sets_of_each_metric() {
        for metric in Metric::ALL {
            let mut m = Metrics::new("dev", "sophia-dev-report-generate")
                .with_dimension(Dimension { name: "ErrorKind", value: "timeout" });
            m.add(*metric, 1.0);
            let doc = m.to_emf(0);
            let directives = doc["_aws"]["CloudWatchMetrics"].as_array().unwrap();
            assert_eq!(directives.len(), 1, "{metric:?}");
            assert_eq!(directives[0]["Dimensions"], serde_json::json!(metric.spec().dimension_sets), "{metric:?}");
            assert_eq!(directives[0]["Metrics"][0]["Unit"], metric.unit().as_str());
            for name in metric.spec().dimension_sets.iter().flatten() {
                assert!(doc[name.as_str()].is_string(), "{metric:?}: dimension {name} is a member");
            }
        }
        // A declared dimension the line lacks is written as `unknown`: the sets stay the declared ones.
        let mut m = Metrics::new("dev", "f");
        m.add(Metric::ReportsFailed, 1.0);
        let doc = m.to_emf(0);
        assert_eq!(doc["ErrorKind"], "unknown");
        assert_eq!(doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"][1], serde_json::json!(["Stage", "Function"]));
    }

    #[test]
    fn a_declaration_that_breaks_a_rule_is_refused_with_its_reason() {
        let base = |metric: &str| {
            format!(
                r#"{{"namespace":"Sophia","dimensions":{{"Stage":"","Function":"","ErrorKind":""}},"metrics":[{metric}]}}"#
            )
        };
        let cases = [
            (r#"{"name":"A","unit":"Bytes","dimensionSets":[["Stage","Function"]],"emittedBy":"*"}"#, "no known unit"),
            (
                r#"{"name":"A","unit":"Count","dimensionSets":[["Function","Stage"]],"emittedBy":"*"}"#,
                "starts with Stage, Function",
            ),
            (
                r#"{"name":"A","unit":"Count","dimensionSets":[["Stage","Function","Nope"]],"emittedBy":"*"}"#,
                "undeclared dimension Nope",
            ),
            (r#"{"name":"A","unit":"Count","dimensionSets":[],"emittedBy":"*"}"#, "no dimension set"),
            (r#"{"name":"A","unit":"Count","dimensionSets":[["Stage","Function"]],"emittedBy":"some"}"#, "emittedBy"),
        ];
        for (metric, reason) in cases {
            let e = Declaration::parse(&base(metric)).unwrap_err();
            assert!(e.contains(reason), "{e}");
        }
    }
}
