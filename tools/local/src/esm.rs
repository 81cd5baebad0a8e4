//! An emulator of Lambda's SQS event source mapping, for the local pipeline and the tests.
//!
//! Like the real one it long-polls the queue, collects up to the batch size within the batching
//! window, builds the SQS event JSON that Lambda delivers (`Records[]` with messageId,
//! receiptHandle, body, attributes incl. ApproximateReceiveCount, messageAttributes, md5s,
//! eventSource, eventSourceARN, awsRegion), invokes the function with its timeout as deadline, and
//! with `ReportBatchItemFailures` deletes every record the response does not list. Failed records
//! are left alone: they reappear after the queue's visibility timeout, and the queue's own
//! RedrivePolicy moves them to the DLQ after maxReceiveCount receives. A response that names an
//! empty or unknown itemIdentifier, an error or a timeout fails the whole batch, as on AWS.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use serde_json::{Value, json};
use sophia_declarations::{Declaration, Function, QueueSettings};
use tokio::sync::watch;

use crate::invoke::{Invoke, InvokeContext, InvokeError};
use crate::queues::QueueRef;

/// One mapping: a queue, a function, and the declared settings.
#[derive(Clone)]
pub struct EventSourceMapping {
    pub client: Client,
    pub queue: QueueRef,
    pub function_name: String,
    pub batch_size: u32,
    pub batching_window: Duration,
    pub function_timeout: Duration,
    pub region: String,
    pub invoker: Arc<dyn Invoke>,
    pub stats: Arc<EsmStats>,
    /// The consumer's contract: why it rejects a body (`None`: it accepts it). A deleted record
    /// whose body it rejects was dropped as invalid by the function ([`EsmStats::dropped`]).
    pub contract: Option<fn(&str) -> Option<String>>,
}

/// The contract of a declared consumer function, as its handler parses a body
/// (`QueueMessage::parse`): the reason it rejects one, as its `invalid message dropped` line says.
/// A `match` with no catch-all: a function added to `declarations/queues.json` stops the build
/// here until the local stage knows its contract.
pub fn contract_of(function: Function) -> Option<fn(&str) -> Option<String>> {
    use sophia_contracts::QueueMessage;
    match function {
        Function::InterviewCompleted => {
            Some(|b| sophia_contracts::InterviewQueueMessage::parse(b).err().map(|e| e.to_string()))
        }
        Function::ReportGenerate => Some(|b| sophia_contracts::ReportGenerate::parse(b).err().map(|e| e.to_string())),
        // Not a queue's consumer: nothing to drop.
        Function::InterviewFailed => None,
    }
}

/// A record the function acknowledged without processing because its contract rejects the body:
/// the local stand-in of the `invalid message dropped` log line and `RecordsDroppedInvalid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub at: SystemTime,
    pub message_id: String,
    /// The contract's reason (names the invalid fields, never their values).
    pub reason: String,
}

/// Counters, for the runner's status line, the load test's report and the tests.
#[derive(Debug, Default)]
pub struct EsmStats {
    pub invocations: AtomicU64,
    pub records: AtomicU64,
    pub deleted: AtomicU64,
    pub item_failures: AtomicU64,
    pub batch_failures: AtomicU64,
    /// The longest invocation so far, in milliseconds (the local stand-in for Lambda's Duration
    /// maximum, which the near-its-timeout alarm watches).
    pub longest_invocation_ms: AtomicU64,
    /// Records delivered by their `ApproximateReceiveCount` (1 = first delivery): how often the
    /// pipeline needed a retry, the load test's receive-count histogram.
    receive_counts: Mutex<BTreeMap<u32, u64>>,
    /// Each invocation's end, whether the whole batch failed and how many records it reported as
    /// failed (oldest first, at most [`HISTORY`]): what `queue status` counts over its window, as
    /// CloudWatch's `Invocations` and `Errors` and the consumer's `RecordsFailed` on a stage.
    history: Mutex<VecDeque<Invocation>>,
    /// The last whole-batch failure: when, and what the function's error said.
    last_error: Mutex<Option<(SystemTime, String)>>,
    /// Records dropped as invalid (oldest first, at most [`HISTORY`]).
    dropped: Mutex<VecDeque<Dropped>>,
}

/// How many invocations [`EsmStats`] remembers for the windowed counts.
pub const HISTORY: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Invocation {
    ended: SystemTime,
    batch_failed: bool,
    records_failed: u64,
}

/// Counts over a window (see [`EsmStats::window`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub invocations: u64,
    /// Invocations whose whole batch failed (Lambda's `Errors`).
    pub errors: u64,
    /// Records reported as batch item failures.
    pub records_failed: u64,
    /// The last whole-batch failure within the window: what the function's error said.
    pub last_error: Option<String>,
}

impl EsmStats {
    /// Invocations, records, deleted, item failures, batch failures.
    pub fn snapshot(&self) -> [u64; 5] {
        [
            self.invocations.load(Ordering::Relaxed),
            self.records.load(Ordering::Relaxed),
            self.deleted.load(Ordering::Relaxed),
            self.item_failures.load(Ordering::Relaxed),
            self.batch_failures.load(Ordering::Relaxed),
        ]
    }

    /// Records delivered, by receive count.
    pub fn receive_counts(&self) -> BTreeMap<u32, u64> {
        self.receive_counts.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Counts of the invocations that ended at or after `since`.
    pub fn window(&self, since: SystemTime) -> WindowCounts {
        let mut counts = WindowCounts::default();
        if let Ok(history) = self.history.lock() {
            for i in history.iter().filter(|i| i.ended >= since) {
                counts.invocations += 1;
                counts.errors += u64::from(i.batch_failed);
                counts.records_failed += i.records_failed;
            }
        }
        counts.last_error =
            self.last_error.lock().ok().and_then(|e| e.clone()).filter(|(at, _)| *at >= since).map(|(_, error)| error);
        counts
    }

    /// The records dropped as invalid at or after `since`, oldest first.
    pub fn dropped(&self, since: SystemTime) -> Vec<Dropped> {
        self.dropped.lock().map(|d| d.iter().filter(|d| d.at >= since).cloned().collect()).unwrap_or_default()
    }

    fn record_dropped(&self, message_id: &str, reason: String) {
        if let Ok(mut dropped) = self.dropped.lock() {
            if dropped.len() >= HISTORY {
                dropped.pop_front();
            }
            dropped.push_back(Dropped { at: SystemTime::now(), message_id: message_id.to_owned(), reason });
        }
    }

    fn record_invocation(&self, batch_error: Option<&str>, records_failed: u64) {
        let ended = SystemTime::now();
        if let Ok(mut history) = self.history.lock() {
            if history.len() >= HISTORY {
                history.pop_front();
            }
            history.push_back(Invocation { ended, batch_failed: batch_error.is_some(), records_failed });
        }
        if let (Some(error), Ok(mut last)) = (batch_error, self.last_error.lock()) {
            *last = Some((ended, error.to_owned()));
        }
    }

    fn count_receives(&self, messages: &[Message]) {
        let Ok(mut counts) = self.receive_counts.lock() else { return };
        for m in messages {
            *counts.entry(receive_count(m)).or_default() += 1;
        }
    }
}

/// A message's `ApproximateReceiveCount` (1 when SQS did not say).
fn receive_count(message: &Message) -> u32 {
    message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The switch of a mapping's pollers (a drill's `pause` / `resume`): on, each poller finishes
/// what it received and parks; [`Pause::parked`] counts the parked pollers.
#[derive(Debug, Default)]
pub struct Pause {
    pub on: watch::Sender<bool>,
    pub parked: watch::Sender<usize>,
}

impl Pause {
    /// Turns the switch on and waits until `pollers` pollers are parked (nothing receives any
    /// more), at most `limit`; false when they did not all park in time.
    pub async fn pause(&self, pollers: usize, limit: Duration) -> bool {
        self.on.send_replace(true);
        let mut parked = self.parked.subscribe();
        tokio::time::timeout(limit, parked.wait_for(|n| *n >= pollers)).await.is_ok_and(|r| r.is_ok())
    }

    pub fn resume(&self) {
        self.on.send_replace(false);
    }

    pub fn is_on(&self) -> bool {
        *self.on.borrow()
    }
}

/// What one invocation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationSummary {
    pub message_ids: Vec<String>,
    pub failed_ids: Vec<String>,
    pub deleted: usize,
    /// Set when the whole batch failed (error, timeout, or an invalid response).
    pub batch_error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EsmError {
    #[error("ReceiveMessage on {queue}: {source}")]
    Receive {
        queue: String,
        #[source]
        source: aws_sdk_sqs::Error,
    },
    #[error("DeleteMessageBatch on {queue}: {source}")]
    Delete {
        queue: String,
        #[source]
        source: aws_sdk_sqs::Error,
    },
}

impl EventSourceMapping {
    /// A mapping with the declared settings of `queue_settings` and its consumer function.
    pub fn declared(
        client: Client,
        queue: QueueRef,
        settings: &QueueSettings,
        decl: &Declaration,
        invoker: Arc<dyn Invoke>,
    ) -> Self {
        let function = decl.function(&settings.consumer).expect("declared consumer");
        Self {
            client,
            queue,
            function_name: settings.consumer.clone(),
            batch_size: settings.batch_size,
            batching_window: Duration::from_secs(settings.maximum_batching_window_seconds.into()),
            function_timeout: Duration::from_secs(function.timeout_seconds.into()),
            region: "us-east-1".to_owned(),
            invoker,
            stats: Arc::default(),
            contract: Function::from_name(&settings.consumer).and_then(contract_of),
        }
    }

    /// Polls and invokes until `shutdown` turns true.
    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        self.run_pausable(shutdown, Arc::new(Pause::default())).await
    }

    /// [`run`](Self::run), receiving nothing while `pause` is on, as a disabled event source
    /// mapping: a batch already received finishes, then the poller parks; messages wait.
    pub async fn run_pausable(self, mut shutdown: watch::Receiver<bool>, pause: Arc<Pause>) {
        let mut paused = pause.on.subscribe();
        while !*shutdown.borrow() {
            if *paused.borrow_and_update() {
                pause.parked.send_modify(|n| *n += 1);
                let gone = tokio::select! {
                    changed = shutdown.changed() => changed.is_err(),
                    _ = paused.wait_for(|on| !*on) => false,
                };
                pause.parked.send_modify(|n| *n -= 1);
                if gone {
                    break;
                }
                continue;
            }
            tokio::select! {
                _ = shutdown.changed() => break,
                polled = self.poll_once(Duration::from_secs(2)) => {
                    if let Err(e) = polled {
                        tracing::warn!(function = %self.function_name, error = %e, "event source mapping poll failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        }
    }

    /// One receive-invoke-delete cycle. `Ok(None)` when the queue had nothing within `wait`.
    pub async fn poll_once(&self, wait: Duration) -> Result<Option<InvocationSummary>, EsmError> {
        let messages = self.collect_batch(wait).await?;
        if messages.is_empty() {
            return Ok(None);
        }
        let summary = self.invoke_and_settle(messages).await?;
        Ok(Some(summary))
    }

    async fn receive(&self, max: u32, wait: Duration) -> Result<Vec<Message>, EsmError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue.url)
            .max_number_of_messages(max.min(10) as i32)
            .wait_time_seconds(wait.as_secs().min(20) as i32)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(|e| EsmError::Receive { queue: self.queue.name.clone(), source: e.into() })?;
        Ok(out.messages.unwrap_or_default())
    }

    /// Up to `batch_size` messages: receives until the batch is full or the batching window ends.
    async fn collect_batch(&self, wait: Duration) -> Result<Vec<Message>, EsmError> {
        let mut batch = self.receive(self.batch_size, wait).await?;
        if batch.is_empty() {
            return Ok(batch);
        }
        let window_ends = tokio::time::Instant::now() + self.batching_window;
        while (batch.len() as u32) < self.batch_size {
            let left = window_ends.saturating_duration_since(tokio::time::Instant::now());
            // Without a window Lambda still takes what one poll returns; a short extra receive
            // gathers what SQS returned in pieces (it returns at most 10 per call).
            let more = if left.is_zero() {
                self.receive(self.batch_size - batch.len() as u32, Duration::ZERO).await?
            } else {
                self.receive(self.batch_size - batch.len() as u32, left.min(Duration::from_secs(1))).await?
            };
            if more.is_empty() && left.is_zero() {
                break;
            }
            batch.extend(more);
        }
        Ok(batch)
    }

    /// Acknowledged records whose body the consumer's contract rejects: dropped as invalid.
    fn count_dropped(&self, acknowledged: &[&Message]) {
        let Some(contract) = self.contract else { return };
        for m in acknowledged {
            if let Some(reason) = contract(m.body().unwrap_or_default()) {
                self.stats.record_dropped(m.message_id().unwrap_or_default(), reason);
            }
        }
    }

    async fn invoke_and_settle(&self, messages: Vec<Message>) -> Result<InvocationSummary, EsmError> {
        let event = sqs_event(&messages, &self.queue.arn, &self.region);
        let request_id = uuid::Uuid::new_v4().to_string();
        let deadline = SystemTime::now() + self.function_timeout;
        let context = InvokeContext {
            request_id: request_id.clone(),
            deadline_ms: deadline.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64,
            function_arn: format!("arn:aws:lambda:{}:000000000000:function:{}", self.region, self.function_name),
        };
        self.stats.invocations.fetch_add(1, Ordering::Relaxed);
        self.stats.records.fetch_add(messages.len() as u64, Ordering::Relaxed);
        self.stats.count_receives(&messages);
        let ids: Vec<String> = messages.iter().map(|m| m.message_id().unwrap_or_default().to_owned()).collect();
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(self.function_timeout, self.invoker.invoke(event, context))
            .await
            .unwrap_or(Err(InvokeError::Timeout));
        self.stats.longest_invocation_ms.fetch_max(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        let failed = match result.and_then(|response| failed_identifiers(&response, &ids)) {
            Ok(failed) => failed,
            Err(e) => {
                self.stats.batch_failures.fetch_add(1, Ordering::Relaxed);
                self.stats.record_invocation(Some(&e.to_string()), 0);
                tracing::warn!(function = %self.function_name, requestId = %request_id, error = %e, "invocation failed; the whole batch returns to the queue");
                return Ok(InvocationSummary {
                    message_ids: ids.clone(),
                    failed_ids: ids,
                    deleted: 0,
                    batch_error: Some(e.to_string()),
                });
            }
        };
        let to_delete: Vec<&Message> =
            messages.iter().filter(|m| !failed.contains(m.message_id().unwrap_or_default())).collect();
        let deleted = self.delete(&to_delete).await?;
        self.count_dropped(&to_delete);
        self.stats.deleted.fetch_add(deleted as u64, Ordering::Relaxed);
        self.stats.item_failures.fetch_add(failed.len() as u64, Ordering::Relaxed);
        self.stats.record_invocation(None, failed.len() as u64);
        let failed_ids: Vec<String> = ids.iter().filter(|id| failed.contains(id.as_str())).cloned().collect();
        Ok(InvocationSummary { message_ids: ids, failed_ids, deleted, batch_error: None })
    }

    async fn delete(&self, messages: &[&Message]) -> Result<usize, EsmError> {
        let mut deleted = 0;
        for chunk in messages.chunks(10) {
            let entries: Vec<DeleteMessageBatchRequestEntry> = chunk
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(m.receipt_handle().unwrap_or_default())
                        .build()
                        .expect("id and receipt handle are set")
                })
                .collect();
            let out = self
                .client
                .delete_message_batch()
                .queue_url(&self.queue.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| EsmError::Delete { queue: self.queue.name.clone(), source: e.into() })?;
            deleted += out.successful.len();
        }
        Ok(deleted)
    }
}

/// The ids a response reports as failed. An empty or unknown identifier, or a response that is
/// not a batch response, fails the whole batch (AWS's rule).
fn failed_identifiers(response: &Value, ids: &[String]) -> Result<HashSet<String>, InvokeError> {
    let Some(failures) = response.get("batchItemFailures") else {
        // `null` or `{}` mean "all succeeded" on AWS.
        return if response.is_null() || response.as_object().is_some_and(|o| o.is_empty()) {
            Ok(HashSet::new())
        } else {
            Err(InvokeError::BadResponse(format!("no batchItemFailures in {response}")))
        };
    };
    let Some(list) = failures.as_array() else {
        return Err(InvokeError::BadResponse("batchItemFailures is not a list".into()));
    };
    let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
    list.iter()
        .map(|f| match f.get("itemIdentifier").and_then(Value::as_str) {
            Some(id) if known.contains(id) => Ok(id.to_owned()),
            other => Err(InvokeError::BadResponse(format!("invalid itemIdentifier {other:?}"))),
        })
        .collect()
}

/// The event JSON Lambda delivers for these messages.
pub fn sqs_event(messages: &[Message], queue_arn: &str, region: &str) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, Value> = m
                .attributes()
                .map(|a| a.iter().map(|(k, v)| (k.as_str().to_owned(), Value::String(v.clone()))).collect())
                .unwrap_or_default();
            let message_attributes: serde_json::Map<String, Value> = m
                .message_attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                json!({
                                    "stringValue": v.string_value(),
                                    "stringListValues": [],
                                    "binaryListValues": [],
                                    "dataType": v.data_type(),
                                }),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": message_attributes,
                "md5OfBody": m.md5_of_body(),
                "md5OfMessageAttributes": m.md5_of_message_attributes(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            })
        })
        .collect();
    json!({ "Records": records })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_or_empty_identifiers_fail_the_whole_batch() {
        let ids = vec!["a".to_owned(), "b".to_owned()];
        assert!(failed_identifiers(&json!({"batchItemFailures": [{"itemIdentifier": "c"}]}), &ids).is_err());
        assert!(failed_identifiers(&json!({"batchItemFailures": [{"itemIdentifier": ""}]}), &ids).is_err());
        assert!(failed_identifiers(&json!({"unexpected": 1}), &ids).is_err());
        assert_eq!(
            failed_identifiers(&json!({"batchItemFailures": [{"itemIdentifier": "b"}]}), &ids).unwrap(),
            HashSet::from(["b".to_owned()])
        );
        assert!(failed_identifiers(&Value::Null, &ids).unwrap().is_empty());
        assert!(failed_identifiers(&json!({"batchItemFailures": []}), &ids).unwrap().is_empty());
    }
}
