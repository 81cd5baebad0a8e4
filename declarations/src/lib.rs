//! The Rust side of `declarations/`, the files both languages read: `queues.json` (queues and
//! functions) and `metrics.json` (the functions' metrics). The Pulumi program reads the same files
//! (`infra-pulumi/src/settings.ts`, `infra-pulumi/src/metrics.ts`); the numbers and the list of
//! queues are never repeated in code.
//!
//! - [`Queue`] is generated from `queues.json` by `build.rs`: one variant per queue, with its key,
//!   names and URL variables. Code that is specific to one queue by nature (its handler, its
//!   message contract, its producer) matches on it, so a queue added to the declaration stops the
//!   build at each place that must handle it (the list is in `docs/contributing.md`).
//! - [`Declaration`] is `queues.json` parsed and checked (the 6x rule, the cross references): the
//!   local runner, the consumers' deadlines, `sophia-ops` and the tests read its numbers.
//! - [`METRICS_JSON`] is `metrics.json`'s text (parsed by `sophia-sqs-consumer`'s metrics module).

mod naming;

use serde::Deserialize;

/// `queues.json`'s text, embedded at build time so binaries need no file at run time.
pub const DECLARATION_JSON: &str = include_str!("../queues.json");

/// `metrics.json`'s text: every metric the functions emit, its unit and dimension sets.
pub const METRICS_JSON: &str = include_str!("../metrics.json");

include!(concat!(env!("OUT_DIR"), "/queue.rs"));

impl Queue {
    /// The queue whose declaration key is `key` (`reportGenerate`).
    pub fn from_key(key: &str) -> Option<Queue> {
        Queue::ALL.into_iter().find(|q| q.key() == key)
    }

    /// The queue named `name` without the stage prefix (`report-generate`), as operators type it.
    pub fn from_name(name: &str) -> Option<Queue> {
        Queue::ALL.into_iter().find(|q| q.name() == name)
    }

    /// Its numbers in the embedded declaration.
    pub fn settings(self) -> &'static QueueSettings {
        Declaration::embedded().queue(self.key()).expect("the Queue enum is generated from the embedded declaration")
    }
}

impl std::fmt::Display for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Declaration {
    pub app_name: String,
    pub queues: Vec<QueueSettings>,
    pub functions: Vec<FunctionSettings>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueueSettings {
    /// Stable key (`interviewCompleted`, `reportGenerate`).
    pub key: String,
    /// Component name of the queue in the stack (`InterviewCompleted`).
    pub component: String,
    /// Queue name without the `<app>-<stage>-` prefix.
    pub name: String,
    pub dlq_name: String,
    /// The environment variable that carries this queue's URL to producers.
    pub queue_url_env: String,
    /// What the queue carries (the generated [`Queue`]'s documentation, the configuration page).
    pub description: String,
    /// The function subscribed to this queue.
    pub consumer: String,
    /// The API sends to it: its URL is in the API's environment and the API's publish policy.
    pub published_by_api: bool,
    pub visibility_timeout_seconds: u32,
    pub message_retention_seconds: u32,
    pub max_receive_count: u32,
    pub dlq_message_retention_seconds: u32,
    pub batch_size: u32,
    pub maximum_batching_window_seconds: u32,
    pub report_batch_item_failures: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FunctionSettings {
    pub name: String,
    pub timeout_seconds: u32,
    pub memory_mb: u32,
    pub subscribed_to: Option<String>,
    #[serde(default)]
    pub publishes_to: Vec<String>,
}

impl QueueSettings {
    /// The variable that carries this queue's DLQ URL to operators' tools: `queueUrlEnv` with
    /// `_QUEUE_URL` replaced by `_DLQ_URL` (`INTERVIEW_COMPLETED_DLQ_URL`); [`Declaration::check`]
    /// makes sure every `queueUrlEnv` ends so.
    pub fn dlq_url_env(&self) -> String {
        naming::dlq_url_env(&self.queue_url_env)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("queues.json does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("queues.json: {0}")]
    Invalid(String),
}

impl Declaration {
    /// The embedded declaration, parsed and checked.
    pub fn embedded() -> &'static Declaration {
        static DECL: std::sync::LazyLock<Declaration> = std::sync::LazyLock::new(|| {
            Declaration::parse(DECLARATION_JSON).expect("declarations/queues.json is checked by the test suite")
        });
        &DECL
    }

    pub fn parse(text: &str) -> Result<Self, SettingsError> {
        let decl: Declaration = serde_json::from_str(text)?;
        decl.check()?;
        Ok(decl)
    }

    /// Structural rules and the 6x rule: visibility >= 6 x (function timeout + batching window)
    /// is AWS's recommendation; docs/design.md states it as visibility >= 6 x timeout + window, and we
    /// check the stricter reading of both.
    pub fn check(&self) -> Result<(), SettingsError> {
        let mut seen = std::collections::HashSet::new();
        for q in &self.queues {
            if !seen.insert(q.name.as_str()) || !seen.insert(q.key.as_str()) {
                return Err(SettingsError::Invalid(format!("queue {} is declared twice", q.key)));
            }
            if !q.queue_url_env.ends_with("_QUEUE_URL") {
                return Err(SettingsError::Invalid(format!(
                    "queue {}: queueUrlEnv {} must end with _QUEUE_URL (its DLQ variable is derived from it)",
                    q.key, q.queue_url_env
                )));
            }
            let f = self.function(&q.consumer).ok_or_else(|| {
                SettingsError::Invalid(format!("queue {} names unknown consumer {}", q.key, q.consumer))
            })?;
            if f.subscribed_to.as_deref() != Some(q.key.as_str()) {
                return Err(SettingsError::Invalid(format!(
                    "function {} is not declared subscribed to {}",
                    f.name, q.key
                )));
            }
            let floor = 6 * (f.timeout_seconds + q.maximum_batching_window_seconds);
            if q.visibility_timeout_seconds < floor {
                return Err(SettingsError::Invalid(format!(
                    "queue {}: visibility timeout {} s is below 6 x (timeout {} s + batching window {} s) = {} s",
                    q.key, q.visibility_timeout_seconds, f.timeout_seconds, q.maximum_batching_window_seconds, floor
                )));
            }
            if !(1..=10_000).contains(&q.batch_size) || q.max_receive_count == 0 {
                return Err(SettingsError::Invalid(format!(
                    "queue {}: batch size or maxReceiveCount out of range",
                    q.key
                )));
            }
        }
        for f in &self.functions {
            for target in f.publishes_to.iter().chain(f.subscribed_to.iter()) {
                if self.queue(target).is_none() {
                    return Err(SettingsError::Invalid(format!(
                        "function {} refers to unknown queue {target}",
                        f.name
                    )));
                }
            }
        }
        Ok(())
    }

    pub fn queue(&self, key: &str) -> Option<&QueueSettings> {
        self.queues.iter().find(|q| q.key == key)
    }

    /// A queue by its name without the stage prefix (`interview-completed`), as operators type it.
    pub fn queue_named(&self, name: &str) -> Option<&QueueSettings> {
        self.queues.iter().find(|q| q.name == name)
    }

    /// The functions subscribed to a queue, in declaration order (the local runner's consumers).
    pub fn subscribed_functions(&self) -> impl Iterator<Item = (&FunctionSettings, &QueueSettings)> {
        self.functions.iter().filter_map(|f| Some((f, self.queue(f.subscribed_to.as_deref()?)?)))
    }

    /// Who sends to a queue: `the API` when it is published by the API, then the functions whose
    /// `publishesTo` names it.
    pub fn publishers(&self, key: &str) -> Vec<&str> {
        let api = self.queue(key).is_some_and(|q| q.published_by_api).then_some("the API");
        let functions = self.functions.iter().filter(|f| f.publishes_to.iter().any(|k| k == key));
        api.into_iter().chain(functions.map(|f| f.name.as_str())).collect()
    }

    pub fn function(&self, name: &str) -> Option<&FunctionSettings> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// `sophia-<stage>-<name>`: the deployed name of a queue or function.
    pub fn stage_name(&self, stage: &str, name: &str) -> String {
        format!("{}-{stage}-{name}", self.app_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_declaration_has_the_spec_numbers() {
        let d = Declaration::embedded();
        let ic = Queue::InterviewCompleted.settings();
        assert_eq!((ic.visibility_timeout_seconds, ic.batch_size, ic.max_receive_count), (180, 10, 3));
        assert_eq!(ic.dlq_message_retention_seconds, 14 * 24 * 60 * 60);
        let rg = Queue::ReportGenerate.settings();
        assert_eq!((rg.visibility_timeout_seconds, rg.batch_size, rg.max_receive_count), (1800, 1, 3));
        assert_eq!(rg.dlq_message_retention_seconds, 1_209_600);
        assert!(ic.report_batch_item_failures && rg.report_batch_item_failures);
        assert_eq!(d.function("interview-completed").unwrap().timeout_seconds, 30);
        assert_eq!(d.function("report-generate").unwrap().timeout_seconds, 300);
        assert_eq!(d.function("interview-failed").unwrap().subscribed_to, None);
        assert_eq!(d.stage_name("dev", &ic.dlq_name), "sophia-dev-interview-completed-dlq");
    }

    #[test]
    fn every_subscribed_function_satisfies_the_six_times_rule() {
        let d = Declaration::embedded();
        for q in &d.queues {
            let f = d.function(&q.consumer).unwrap();
            assert!(
                q.visibility_timeout_seconds >= 6 * (f.timeout_seconds + q.maximum_batching_window_seconds),
                "{}",
                q.key
            );
        }
    }

    #[test]
    fn dlq_variables_are_derived_from_the_queue_variables() {
        let d = Declaration::embedded();
        assert_eq!(Queue::InterviewCompleted.settings().dlq_url_env(), "INTERVIEW_COMPLETED_DLQ_URL");
        assert_eq!(Queue::ReportGenerate.dlq_url_env(), "REPORT_GENERATE_DLQ_URL");
        assert_eq!(d.queue_named("report-generate").map(|q| q.key.as_str()), Some(Queue::ReportGenerate.key()));
        let subscribed: Vec<&str> = d.subscribed_functions().map(|(f, _)| f.name.as_str()).collect();
        assert_eq!(subscribed, ["interview-completed", "report-generate"]);
        let bad = DECLARATION_JSON.replace("\"INTERVIEW_COMPLETED_QUEUE_URL\"", "\"INTERVIEW_COMPLETED_URL\"");
        assert!(Declaration::parse(&bad).unwrap_err().to_string().contains("_QUEUE_URL"));
    }

    #[test]
    fn the_generated_queue_enum_follows_the_declaration() {
        let d = Declaration::embedded();
        assert_eq!(Queue::ALL.len(), d.queues.len());
        for (queue, declared) in Queue::ALL.into_iter().zip(&d.queues) {
            assert_eq!(queue.key(), declared.key);
            assert_eq!(queue.name(), declared.name);
            assert_eq!(queue.dlq_name(), declared.dlq_name);
            assert_eq!(queue.url_env(), declared.queue_url_env);
            assert_eq!(queue.dlq_url_env(), declared.dlq_url_env());
            assert_eq!(queue.description(), declared.description);
            assert_eq!(format!("{:?}", queue), declared.component);
            assert_eq!(Queue::from_key(queue.key()), Some(queue));
            assert_eq!(Queue::from_name(queue.name()), Some(queue));
            assert_eq!(queue.to_string(), queue.name());
        }
        assert_eq!(Queue::from_name("audit-export"), None);
    }

    #[test]
    fn the_metrics_declaration_is_embedded() {
        let metrics: serde_json::Value = serde_json::from_str(METRICS_JSON).expect("metrics.json parses");
        assert!(metrics["metrics"].as_array().is_some_and(|m| !m.is_empty()));
    }

    #[test]
    fn a_visibility_timeout_below_six_times_the_function_timeout_is_refused() {
        let text = DECLARATION_JSON.replace("\"visibilityTimeoutSeconds\": 180", "\"visibilityTimeoutSeconds\": 179");
        let err = Declaration::parse(&text).unwrap_err().to_string();
        assert!(err.contains("below 6 x"), "{err}");
    }
}
