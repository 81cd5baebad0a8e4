//! Creates a pipeline's queues on any SQS endpoint with the attributes the Pulumi program gives
//! them, from the same declaration.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;
use sophia_declarations::{Declaration, QueueSettings};

/// A queue as created: its name, URL and ARN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRef {
    pub name: String,
    pub url: String,
    pub arn: String,
}

/// A source queue and its DLQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePair {
    pub key: String,
    pub source: QueueRef,
    pub dlq: QueueRef,
}

/// The queues of one stage: every pair the declaration lists (in its order), and the two whose
/// handlers are written by hand by name (tests and the demo address them directly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSet {
    pub interview_completed: QueuePair,
    pub report_generate: QueuePair,
    /// Every declared pair, the two above included.
    pub all: Vec<QueuePair>,
}

impl QueueSet {
    pub fn pairs(&self) -> &[QueuePair] {
        &self.all
    }

    /// The pair of a declared queue key.
    pub fn pair(&self, key: &str) -> Option<&QueuePair> {
        self.all.iter().find(|p| p.key == key)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QueueSetupError {
    #[error("creating queue {name}: {source}")]
    Create {
        name: String,
        #[source]
        source: aws_sdk_sqs::Error,
    },
    #[error("reading the ARN of {name}: {source}")]
    Attributes {
        name: String,
        #[source]
        source: aws_sdk_sqs::Error,
    },
    #[error("the endpoint returned no {what} for {name}")]
    Missing { name: String, what: &'static str },
}

/// Creates (idempotently, as CreateQueue is) the DLQ and source queue of every declared pipeline,
/// named `<prefix>-<name>` (for a stage: `sophia-<stage>`).
pub async fn create_queue_set(client: &Client, prefix: &str, decl: &Declaration) -> Result<QueueSet, QueueSetupError> {
    create_queue_set_with(client, prefix, decl, &QueueOverrides::default()).await
}

/// Deliberate departures from the declaration, for tests that cannot wait 180 s for a failed
/// message to reappear. Production and the local runner use none.
#[derive(Debug, Clone, Default)]
pub struct QueueOverrides {
    pub visibility_timeout_seconds: Option<u32>,
}

pub async fn create_queue_set_with(
    client: &Client,
    prefix: &str,
    decl: &Declaration,
    overrides: &QueueOverrides,
) -> Result<QueueSet, QueueSetupError> {
    let mut all = Vec::with_capacity(decl.queues.len());
    for q in &decl.queues {
        all.push(create_pair(client, prefix, q, overrides).await?);
    }
    let named = |key: &str| all.iter().find(|p| p.key == key).cloned().expect("the declaration names both queues");
    Ok(QueueSet {
        interview_completed: named(sophia_declarations::Queue::InterviewCompleted.key()),
        report_generate: named(sophia_declarations::Queue::ReportGenerate.key()),
        all,
    })
}

async fn create_pair(
    client: &Client,
    prefix: &str,
    q: &QueueSettings,
    overrides: &QueueOverrides,
) -> Result<QueuePair, QueueSetupError> {
    let dlq_name = format!("{prefix}-{}", q.dlq_name);
    let dlq = create(
        client,
        &dlq_name,
        vec![(QueueAttributeName::MessageRetentionPeriod, q.dlq_message_retention_seconds.to_string())],
    )
    .await?;
    let redrive =
        serde_json::json!({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": q.max_receive_count}).to_string();
    let source_name = format!("{prefix}-{}", q.name);
    let source = create(
        client,
        &source_name,
        vec![
            (
                QueueAttributeName::VisibilityTimeout,
                overrides.visibility_timeout_seconds.unwrap_or(q.visibility_timeout_seconds).to_string(),
            ),
            (QueueAttributeName::MessageRetentionPeriod, q.message_retention_seconds.to_string()),
            (QueueAttributeName::RedrivePolicy, redrive),
        ],
    )
    .await?;
    let allow = serde_json::json!({"redrivePermission": "byQueue", "sourceQueueArns": [source.arn]}).to_string();
    // Not every local endpoint knows RedriveAllowPolicy; it only restricts who may use the DLQ.
    if let Err(e) = client
        .set_queue_attributes()
        .queue_url(&dlq.url)
        .attributes(QueueAttributeName::RedriveAllowPolicy, allow)
        .send()
        .await
    {
        tracing::debug!(queue = %dlq.name, error = %aws_sdk_sqs::Error::from(e), "RedriveAllowPolicy not set");
    }
    Ok(QueuePair { key: q.key.clone(), source, dlq })
}

async fn create(
    client: &Client,
    name: &str,
    attributes: Vec<(QueueAttributeName, String)>,
) -> Result<QueueRef, QueueSetupError> {
    let mut req = client.create_queue().queue_name(name);
    for (k, v) in attributes {
        req = req.attributes(k, v);
    }
    let out = req.send().await.map_err(|e| QueueSetupError::Create { name: name.to_owned(), source: e.into() })?;
    let url = out.queue_url.ok_or_else(|| QueueSetupError::Missing { name: name.to_owned(), what: "QueueUrl" })?;
    let attrs = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| QueueSetupError::Attributes { name: name.to_owned(), source: e.into() })?;
    let arn = attrs
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| QueueSetupError::Missing { name: name.to_owned(), what: "QueueArn" })?;
    Ok(QueueRef { name: name.to_owned(), url, arn })
}
