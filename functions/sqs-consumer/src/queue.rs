//! The record's own queue, for what the wrapper does to a transiently failed record
//! ([`crate::backoff`]): `ChangeMessageVisibility` (the function's role allows exactly that on
//! its own queue) and, on the report queue, `SendMessage` of a delayed copy; and for a record
//! that can never succeed ([`crate::Failure::DeadLetter`]), `SendMessage` of it to the queue's
//! own DLQ, found from the queue's `RedrivePolicy` (`GetQueueAttributes`, which the event source
//! mapping already needs on that queue), once per queue.
//!
//! [`RecordQueue`] is the port; [`SqsRecordQueue`] the adapter over the SQS API. The queue URL is
//! derived from the record's `eventSourceARN` (`arn:<partition>:sqs:<region>:<account>:<name>`):
//! `https://sqs.<region>.amazonaws.com/<account>/<name>` on AWS (no call, no permission beyond
//! the action itself); when an endpoint is configured (`AWS_ENDPOINT_URL_SQS`: a local SQS, whose
//! URLs depend on how it was started), `GetQueueUrl` of the ARN's name, once per queue.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_sdk_sqs::types::MessageAttributeValue;
use futures::future::BoxFuture;

use crate::BoxError;

/// The account of local emulators' queue ARNs (fauxqs).
const LOCAL_ACCOUNT: &str = "000000000000";

/// What the wrapper needs of one record to change its visibility or send a copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    /// The record's SQS message id (kept on a dead-lettered copy as [`SOURCE_MESSAGE_ID`]).
    pub message_id: String,
    pub queue_arn: String,
    pub receipt_handle: String,
    pub body: String,
    /// The String message attributes as received (`requestId`, `eventType`, ...).
    pub string_attributes: Vec<(String, String)>,
    /// The fair-queue tenant (`MessageGroupId`): the message's organization id.
    pub group_id: String,
}

/// The message attribute (String) of a record the consumer sent to its DLQ itself: why no retry
/// can succeed (the error's chain: ids and kinds, never candidate text; at most
/// [`DEAD_LETTER_REASON_CHARS`] characters).
pub const DEAD_LETTER_REASON: &str = "deadLetterReason";
/// The message attribute (String) of a record the consumer sent to its DLQ itself: the message
/// id it had on its source queue (the one in the consumer's log lines).
pub const SOURCE_MESSAGE_ID: &str = "sourceMessageId";
/// The longest [`DEAD_LETTER_REASON`] sent.
pub const DEAD_LETTER_REASON_CHARS: usize = 512;

/// The port: the operations on a record's own queue.
pub trait RecordQueue: Send + Sync + fmt::Debug {
    fn change_visibility<'a>(&'a self, record: &'a RecordRef, timeout: Duration)
    -> BoxFuture<'a, Result<(), BoxError>>;
    /// Sends a copy of the record (same body, its String attributes and group id) delayed by
    /// `delay`, with [`crate::backoff::TRANSIENT_SINCE`] = `transient_since_ms`.
    fn requeue<'a>(
        &'a self,
        record: &'a RecordRef,
        delay: Duration,
        transient_since_ms: u64,
    ) -> BoxFuture<'a, Result<(), BoxError>>;
    /// Sends a copy of the record (same body and String attributes, with [`DEAD_LETTER_REASON`]
    /// and [`SOURCE_MESSAGE_ID`]) to its queue's DLQ; returns the copy's message id. The caller
    /// acknowledges the record only after this succeeded.
    fn dead_letter<'a>(&'a self, record: &'a RecordRef, reason: &'a str) -> BoxFuture<'a, Result<String, BoxError>>;
}

/// The queue URL of a queue ARN (see the module docs); `None` for what is not an SQS ARN.
pub fn queue_url_from_arn(arn: &str, endpoint: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = arn.split(':').collect();
    let ["arn", partition, "sqs", region, account, name] = parts.as_slice() else { return None };
    if region.is_empty() || account.is_empty() || name.is_empty() {
        return None;
    }
    Some(match endpoint {
        Some(e) => format!("{}/{account}/{name}", e.trim_end_matches('/')),
        None => {
            let domain = if partition.ends_with("-cn") { "amazonaws.com.cn" } else { "amazonaws.com" };
            format!("https://sqs.{region}.{domain}/{account}/{name}")
        }
    })
}

/// The adapter over the SQS API. The client is built on first use from the process environment
/// (`sophia_platform::sqs::client`: what Lambda gives the function), unless one is given.
#[derive(Clone)]
pub struct SqsRecordQueue {
    client: Arc<OnceLock<Result<aws_sdk_sqs::Client, String>>>,
    endpoint: Option<String>,
    /// Queue URLs by ARN, as a local endpoint answered `GetQueueUrl`.
    local_urls: Arc<Mutex<HashMap<String, String>>>,
    /// DLQ ARNs by source queue ARN, as the source queue's `RedrivePolicy` names them.
    dlq_arns: Arc<Mutex<HashMap<String, String>>>,
}

impl fmt::Debug for SqsRecordQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqsRecordQueue").field("endpoint", &self.endpoint).finish()
    }
}

impl SqsRecordQueue {
    /// The client and endpoint from the process environment, read on first use.
    pub fn from_env() -> Self {
        let endpoint = sophia_platform::config::optional(sophia_platform::sqs::AWS_ENDPOINT_URL_SQS)
            .or_else(|| sophia_platform::config::optional(sophia_platform::sqs::AWS_ENDPOINT_URL));
        Self { client: Arc::new(OnceLock::new()), endpoint, local_urls: Arc::default(), dlq_arns: Arc::default() }
    }

    /// This client; `endpoint`: the one it was built for (`None`: AWS).
    pub fn with_client(client: aws_sdk_sqs::Client, endpoint: Option<String>) -> Self {
        let cell = OnceLock::new();
        let _ = cell.set(Ok(client));
        Self { client: Arc::new(cell), endpoint, local_urls: Arc::default(), dlq_arns: Arc::default() }
    }

    fn client(&self) -> Result<&aws_sdk_sqs::Client, BoxError> {
        self.client
            .get_or_init(|| sophia_platform::sqs::client(self.endpoint.as_deref()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| BoxError::from(e.clone()))
    }

    async fn url(&self, record: &RecordRef) -> Result<String, BoxError> {
        self.url_of(&record.queue_arn).await
    }

    async fn url_of(&self, queue_arn: &str) -> Result<String, BoxError> {
        let Some(endpoint) = self.endpoint.as_deref() else {
            // A local emulator's queue (its placeholder account) is never looked for on AWS.
            if queue_arn.contains(&format!(":{LOCAL_ACCOUNT}:")) {
                return Err("a local queue (account 000000000000) and no AWS_ENDPOINT_URL_SQS: not sent to AWS".into());
            }
            return queue_url_from_arn(queue_arn, None)
                .ok_or_else(|| format!("queue ARN {queue_arn:?} is not an SQS queue ARN").into());
        };
        if let Some(url) = self.local_urls.lock().expect("urls lock").get(queue_arn) {
            return Ok(url.clone());
        }
        let name = queue_arn.rsplit(':').next().unwrap_or_default();
        let url = self
            .client()?
            .get_queue_url()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| BoxError::from(aws_sdk_sqs::Error::from(e)))?
            .queue_url
            .unwrap_or_else(|| format!("{}/{LOCAL_ACCOUNT}/{name}", endpoint.trim_end_matches('/')));
        self.local_urls.lock().expect("urls lock").insert(queue_arn.to_owned(), url.clone());
        Ok(url)
    }

    /// The DLQ ARN of the record's queue: its `RedrivePolicy`'s `deadLetterTargetArn`.
    async fn dlq_arn(&self, record: &RecordRef) -> Result<String, BoxError> {
        if let Some(arn) = self.dlq_arns.lock().expect("dlq lock").get(&record.queue_arn) {
            return Ok(arn.clone());
        }
        let attributes = self
            .client()?
            .get_queue_attributes()
            .queue_url(self.url(record).await?)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
            .send()
            .await
            .map_err(|e| BoxError::from(aws_sdk_sqs::Error::from(e)))?;
        let policy = attributes
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy))
            .ok_or_else(|| format!("queue {} has no RedrivePolicy: no DLQ to send to", record.queue_arn))?;
        let arn = dead_letter_target(policy)
            .ok_or_else(|| format!("the RedrivePolicy of {} names no deadLetterTargetArn", record.queue_arn))?;
        self.dlq_arns.lock().expect("dlq lock").insert(record.queue_arn.clone(), arn.clone());
        Ok(arn)
    }
}

/// The `deadLetterTargetArn` of a `RedrivePolicy` (JSON).
pub fn dead_letter_target(redrive_policy: &str) -> Option<String> {
    let policy: serde_json::Value = serde_json::from_str(redrive_policy).ok()?;
    policy.get("deadLetterTargetArn")?.as_str().filter(|a| !a.is_empty()).map(str::to_owned)
}

fn string_attribute(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder().data_type("String").string_value(value).build().expect("data type is set")
}

impl RecordQueue for SqsRecordQueue {
    fn change_visibility<'a>(
        &'a self,
        record: &'a RecordRef,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.client()?
                .change_message_visibility()
                .queue_url(self.url(record).await?)
                .receipt_handle(&record.receipt_handle)
                .visibility_timeout(timeout.as_secs().min(43_200) as i32)
                .send()
                .await
                .map_err(|e| BoxError::from(aws_sdk_sqs::Error::from(e)))?;
            Ok(())
        })
    }

    fn requeue<'a>(
        &'a self,
        record: &'a RecordRef,
        delay: Duration,
        transient_since_ms: u64,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let mut send = self
                .client()?
                .send_message()
                .queue_url(self.url(record).await?)
                .message_body(&record.body)
                .message_group_id(&record.group_id)
                .delay_seconds(delay.as_secs().min(900) as i32)
                .message_attributes(crate::backoff::TRANSIENT_SINCE, string_attribute(&transient_since_ms.to_string()));
            for (name, value) in &record.string_attributes {
                if name != crate::backoff::TRANSIENT_SINCE {
                    send = send.message_attributes(name, string_attribute(value));
                }
            }
            send.send().await.map_err(|e| BoxError::from(aws_sdk_sqs::Error::from(e)))?;
            Ok(())
        })
    }

    fn dead_letter<'a>(&'a self, record: &'a RecordRef, reason: &'a str) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            let dlq_url = self.url_of(&self.dlq_arn(record).await?).await?;
            let reason: String = reason.chars().take(DEAD_LETTER_REASON_CHARS).collect();
            let mut send = self
                .client()?
                .send_message()
                .queue_url(dlq_url)
                .message_body(&record.body)
                .message_attributes(DEAD_LETTER_REASON, string_attribute(&reason))
                .message_attributes(SOURCE_MESSAGE_ID, string_attribute(&record.message_id));
            for (name, value) in &record.string_attributes {
                if name != DEAD_LETTER_REASON && name != SOURCE_MESSAGE_ID {
                    send = send.message_attributes(name, string_attribute(value));
                }
            }
            let sent = send.send().await.map_err(|e| BoxError::from(aws_sdk_sqs::Error::from(e)))?;
            Ok(sent.message_id.unwrap_or_default())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dlq_is_the_redrive_policys_target() {
        let policy = r#"{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:1:sophia-dev-interview-completed-dlq","maxReceiveCount":3}"#;
        assert_eq!(
            dead_letter_target(policy).as_deref(),
            Some("arn:aws:sqs:eu-west-1:1:sophia-dev-interview-completed-dlq")
        );
        assert_eq!(dead_letter_target(r#"{"maxReceiveCount":3}"#), None);
        assert_eq!(dead_letter_target("not json"), None);
    }

    #[test]
    fn the_queue_url_comes_from_the_event_source_arn() {
        let arn = "arn:aws:sqs:eu-west-1:123456789012:sophia-prod-report-generate";
        assert_eq!(
            queue_url_from_arn(arn, None).unwrap(),
            "https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-prod-report-generate"
        );
        assert_eq!(
            queue_url_from_arn(arn, Some("http://127.0.0.1:4566/")).unwrap(),
            "http://127.0.0.1:4566/123456789012/sophia-prod-report-generate"
        );
        assert_eq!(
            queue_url_from_arn("arn:aws-cn:sqs:cn-north-1:1:q", None).unwrap(),
            "https://sqs.cn-north-1.amazonaws.com.cn/1/q"
        );
        for bad in ["", "arn:aws:sns:eu-west-1:1:topic", "arn:aws:sqs:eu-west-1:1", "arn:aws:sqs::1:q"] {
            assert_eq!(queue_url_from_arn(bad, None), None, "{bad}");
        }
    }
}
