//! The one declaration of queue and function settings (`infra-pulumi/queues.json`), shared with
//! the Pulumi program. The Rust side reads it for the local runner, the consumers' deadlines and
//! the tests; the numbers are never repeated in code.

use serde::Deserialize;

/// The declaration's text, embedded at build time so binaries need no file at run time.
pub const DECLARATION_JSON: &str = include_str!("../../../infra-pulumi/queues.json");

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
    /// Component name in the spec (`InterviewCompleted`).
    pub component: String,
    /// Queue name without the `<app>-<stage>-` prefix.
    pub name: String,
    pub dlq_name: String,
    /// The environment variable that carries this queue's URL to producers.
    pub queue_url_env: String,
    /// The function subscribed to this queue.
    pub consumer: String,
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
            Declaration::parse(DECLARATION_JSON).expect("infra-pulumi/queues.json is checked by the test suite")
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
        for q in &self.queues {
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

    pub fn function(&self, name: &str) -> Option<&FunctionSettings> {
        self.functions.iter().find(|f| f.name == name)
    }

    pub fn interview_completed(&self) -> &QueueSettings {
        self.queue("interviewCompleted").expect("declared")
    }

    pub fn report_generate(&self) -> &QueueSettings {
        self.queue("reportGenerate").expect("declared")
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
        let ic = d.interview_completed();
        assert_eq!((ic.visibility_timeout_seconds, ic.batch_size, ic.max_receive_count), (180, 10, 3));
        assert_eq!(ic.dlq_message_retention_seconds, 14 * 24 * 60 * 60);
        let rg = d.report_generate();
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
    fn a_visibility_timeout_below_six_times_the_function_timeout_is_refused() {
        let text = DECLARATION_JSON.replace("\"visibilityTimeoutSeconds\": 180", "\"visibilityTimeoutSeconds\": 179");
        let err = Declaration::parse(&text).unwrap_err().to_string();
        assert!(err.contains("below 6 x"), "{err}");
    }
}
