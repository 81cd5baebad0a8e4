//! Which queue a command talks to, and how its URL and ARN are found.
//!
//! - `--stage <stage>`: by name, `GetQueueUrl` of `sophia-<stage>-<name>` (names from the shared
//!   declaration, the same one the Pulumi program reads);
//! - otherwise the environment (or env file): each declared queue's `queueUrlEnv`
//!   (`INTERVIEW_COMPLETED_QUEUE_URL`, `REPORT_GENERATE_QUEUE_URL`) and its DLQ variable
//!   (`INTERVIEW_COMPLETED_DLQ_URL`, ...). A DLQ URL that is not set is found from the source
//!   queue's `RedrivePolicy`.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;
use serde::Serialize;
use sophia_declarations::{Declaration, Queue, QueueSettings};

use crate::OpsError;
use crate::env::Env;

/// A pipeline, named as on the command line: one of the queues `declarations/queues.json`
/// declares (`interview-completed`, `report-generate`, and any queue added there), by its name
/// without the stage prefix. Its URL variables and stage names come from the declaration.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueueName(Queue);

impl QueueName {
    /// A declared queue by name (`interview-completed`).
    pub fn named(name: &str) -> Option<Self> {
        Queue::from_name(name).map(Self)
    }

    /// Every declared queue, in declaration order.
    pub fn all() -> impl Iterator<Item = Self> {
        Queue::ALL.into_iter().map(Self)
    }

    pub const fn of(queue: Queue) -> Self {
        Self(queue)
    }

    /// The declared queue.
    pub fn queue(self) -> Queue {
        self.0
    }

    pub fn settings(self) -> &'static QueueSettings {
        self.0.settings()
    }

    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// Whether each message of this queue stands for a stored report that keeps its own attempt
    /// count: its DLQ's redrive resets those attempts (unless `--keep-attempts`), `dlq show`
    /// looks the report up. A `match` with no catch-all: a queue added to the declaration stops
    /// the build here until someone decides (docs/contributing.md, the new queue checklist).
    pub fn holds_report_attempts(self) -> bool {
        match self.0 {
            Queue::ReportGenerate => true,
            Queue::InterviewCompleted => false,
        }
    }

    pub fn source_env(self) -> &'static str {
        self.0.url_env()
    }

    /// `<QUEUE>_DLQ_URL`, derived from the queue's variable.
    pub fn dlq_env(self) -> &'static str {
        self.0.dlq_url_env()
    }
}

impl std::fmt::Debug for QueueName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QueueName({})", self.as_str())
    }
}

impl std::fmt::Display for QueueName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for QueueName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::str::FromStr for QueueName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::named(s).ok_or_else(|| {
            let names: Vec<&str> = Self::all().map(Self::as_str).collect();
            format!("unknown queue {s:?} (declarations/queues.json declares {})", names.join(", "))
        })
    }
}

/// clap: the possible values are the declared queue names (listed in `--help`).
impl clap::ValueEnum for QueueName {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::LazyLock<Vec<QueueName>> = std::sync::LazyLock::new(|| QueueName::all().collect());
        ALL.as_slice()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

/// A resolved queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueRef {
    pub url: String,
    pub arn: String,
}

/// Finds queue URLs and ARNs for one stage or one environment.
#[derive(Debug, Clone)]
pub struct QueueLocator {
    client: Client,
    env: Env,
    stage: Option<String>,
}

impl QueueLocator {
    pub fn new(client: Client, env: Env, stage: Option<String>) -> Self {
        Self { client, env, stage }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The URL of the queue a pipeline's producers send to.
    pub async fn source_url(&self, queue: QueueName) -> Result<String, OpsError> {
        if let Some(stage) = &self.stage {
            return self.url_by_name(&Declaration::embedded().stage_name(stage, &queue.settings().name)).await;
        }
        self.env.get(queue.source_env()).ok_or_else(|| OpsError::NotConfigured {
            what: format!("the {queue} queue"),
            hint: format!("set {} (or pass --stage <stage>, or --env-file .local/sophia.env)", queue.source_env()),
        })
    }

    /// The URL of a pipeline's dead-letter queue.
    pub async fn dlq_url(&self, queue: QueueName) -> Result<String, OpsError> {
        if let Some(stage) = &self.stage {
            return self.url_by_name(&Declaration::embedded().stage_name(stage, &queue.settings().dlq_name)).await;
        }
        if let Some(url) = self.env.get(queue.dlq_env()) {
            return Ok(url);
        }
        let source = self.source_url(queue).await.map_err(|_| OpsError::NotConfigured {
            what: format!("the {queue} DLQ"),
            hint: format!(
                "set {} or {} (or pass --stage <stage>, or --env-file .local/sophia.env)",
                queue.dlq_env(),
                queue.source_env()
            ),
        })?;
        self.dlq_from_redrive_policy(&source).await
    }

    /// Both queues of a pipeline with their ARNs (for redrive).
    pub async fn pair(&self, queue: QueueName) -> Result<(QueueRef, QueueRef), OpsError> {
        let source_url = self.source_url(queue).await?;
        let dlq_url = self.dlq_url(queue).await?;
        let source = QueueRef { arn: self.arn(&source_url).await?, url: source_url };
        let dlq = QueueRef { arn: self.arn(&dlq_url).await?, url: dlq_url };
        Ok((source, dlq))
    }

    pub async fn arn(&self, url: &str) -> Result<String, OpsError> {
        self.attribute(url, QueueAttributeName::QueueArn)
            .await?
            .ok_or_else(|| OpsError::NotFound(format!("{url} has no QueueArn")))
    }

    /// One queue attribute (`None` when the queue does not have it).
    pub async fn attribute(&self, url: &str, name: QueueAttributeName) -> Result<Option<String>, OpsError> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(name.clone())
            .send()
            .await
            .map_err(|e| OpsError::sqs("GetQueueAttributes", url, e))?;
        Ok(out.attributes.and_then(|mut a| a.remove(&name)))
    }

    async fn url_by_name(&self, name: &str) -> Result<String, OpsError> {
        self.url_by_name_and_owner(name, None).await
    }

    async fn url_by_name_and_owner(&self, name: &str, owner: Option<&str>) -> Result<String, OpsError> {
        let out = self
            .client
            .get_queue_url()
            .queue_name(name)
            .set_queue_owner_aws_account_id(owner.map(str::to_owned))
            .send()
            .await
            .map_err(|e| OpsError::sqs("GetQueueUrl", name, e))?;
        out.queue_url.ok_or_else(|| OpsError::NotFound(format!("no URL returned for queue {name}")))
    }

    async fn dlq_from_redrive_policy(&self, source_url: &str) -> Result<String, OpsError> {
        let policy = self.attribute(source_url, QueueAttributeName::RedrivePolicy).await?.ok_or_else(|| {
            OpsError::NotConfigured {
                what: format!("a DLQ for {source_url}"),
                hint: "the queue has no RedrivePolicy".into(),
            }
        })?;
        let arn = serde_json::from_str::<serde_json::Value>(&policy)
            .ok()
            .and_then(|v| v["deadLetterTargetArn"].as_str().map(str::to_owned))
            .ok_or_else(|| {
                OpsError::Invalid(format!("RedrivePolicy of {source_url} has no deadLetterTargetArn: {policy}"))
            })?;
        // arn:aws:sqs:<region>:<account>:<name>
        let parts: Vec<&str> = arn.split(':').collect();
        let (Some(account), Some(name)) = (parts.get(4), parts.get(5)) else {
            return Err(OpsError::Invalid(format!("unexpected DLQ ARN {arn}")));
        };
        self.url_by_name_and_owner(name, Some(account).filter(|a| !a.is_empty()).copied()).await
    }
}

/// `ApproximateNumberOfMessages` of a queue.
pub async fn approximate_visible(locator: &QueueLocator, url: &str) -> Result<Option<u64>, OpsError> {
    Ok(locator.attribute(url, QueueAttributeName::ApproximateNumberOfMessages).await?.and_then(|v| v.parse().ok()))
}
