use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::{FutureExt, StreamExt};
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{OrderingKey, QueueMessage};
use tokio::time::Instant;
use tracing::{Instrument, field};

use crate::backoff::{Backoff, Decision};
use crate::failure::chain;
use crate::metrics::{Metric, Metrics};
use crate::queue::{RecordQueue, RecordRef};
use crate::{BoxError, Failure, Outcome, RecordMeta};

/// How an invocation fails as a whole (so SQS retries every record of the batch).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("record {index} of the batch has no messageId: refusing to answer with an empty itemIdentifier")]
    MissingMessageId { index: usize },
    #[error("batch setup failed, the whole batch will be retried: {0}")]
    Setup(BoxError),
}

/// Tuning of one consumer.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    /// How many independent records run at once.
    pub concurrency: usize,
    /// A record is not started when less than this is left before the invocation's deadline.
    pub deadline_margin: Duration,
    /// A record still running this long before the invocation's deadline is cancelled and
    /// reported as a batch item failure, so that the partial batch response is always sent
    /// (docs/design.md, "Settlement decisions": a Lambda timeout would redeliver the whole batch).
    pub cancel_margin: Duration,
    /// At most this much of an invalid body's redacted preview is logged (its keys, ids,
    /// timestamps and numbers, with every other string replaced by its length: see
    /// `preview`), so an operator can see what was dropped and replay it.
    pub invalid_body_preview_chars: usize,
    /// The queue's maxReceiveCount: a record failing on this receive goes to the DLQ, which needs
    /// a person, so it is logged at ERROR; earlier failures, which SQS retries, at WARN.
    pub max_receive_count: u32,
    /// What a transient failure ([`Failure::Transient`]) does: the backoff, bounded by the
    /// queue's visibility timeout, and whether the last receive requeues ([`crate::backoff`]).
    pub backoff: Backoff,
    /// The records' own queue, for the backoff and the requeue. `None`: a transient failure is
    /// an ordinary batch item failure (SQS shows it again after the visibility timeout).
    pub queue: Option<Arc<dyn RecordQueue>>,
    /// Whether the wrapper may send a record that can never succeed ([`Failure::DeadLetter`]) to
    /// the DLQ itself: the queue's declared `deadLettersPermanentFailures`, the property that also
    /// gives its consumer SendMessage on the DLQ. When it is false the record is not sent: it is
    /// a failure SQS shows again, dead-lettered by the redrive policy after maxReceiveCount
    /// (nothing lost), and the log says the handler asked for what the declaration does not allow.
    pub dead_letters: bool,
}

impl ConsumerOptions {
    /// The options of the consumer of this declared queue (`declarations/queues.json` key): its
    /// maxReceiveCount and its transient-failure policy ([`crate::backoff::policy_of`]).
    pub fn for_queue(key: &str) -> Self {
        let d = sophia_declarations::Declaration::embedded();
        let q = d.queue(key).unwrap_or_else(|| panic!("queues.json declares no queue {key}"));
        let queue = sophia_declarations::Queue::from_key(key).expect("a declared queue has a Queue variant");
        Self {
            max_receive_count: q.max_receive_count,
            backoff: crate::backoff::policy_of(queue),
            dead_letters: q.dead_letters_permanent_failures,
            ..Self::default()
        }
    }

    pub fn with_queue(mut self, queue: Arc<dyn RecordQueue>) -> Self {
        self.queue = Some(queue);
        self
    }
}

/// Why a [`Failure::DeadLetter`] was not sent when the queue does not declare it (the log's
/// `queueError`).
const NOT_DECLARED_TO_DEAD_LETTER: &str = "this queue is not declared deadLettersPermanentFailures \
     (declarations/queues.json): the record is left to SQS, whose redrive policy dead-letters it \
     after maxReceiveCount";

/// The smallest visibility timeout of the declared queues: the default bound of a backoff.
fn declared_visibility_timeout() -> Duration {
    let d = sophia_declarations::Declaration::embedded();
    let secs = d.queues.iter().map(|q| q.visibility_timeout_seconds).min().expect("queues.json declares queues");
    Duration::from_secs(u64::from(secs))
}

/// The smallest maxReceiveCount of the declared queues (`declarations/queues.json`).
fn declared_max_receive_count() -> u32 {
    let d = sophia_declarations::Declaration::embedded();
    d.queues.iter().map(|q| q.max_receive_count).min().expect("queues.json declares queues")
}

impl Default for ConsumerOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            deadline_margin: Duration::from_secs(5),
            cancel_margin: Duration::from_secs(1),
            invalid_body_preview_chars: 1024,
            max_receive_count: declared_max_receive_count(),
            backoff: Backoff::new(declared_visibility_timeout()),
            queue: None,
            dead_letters: true,
        }
    }
}

/// What happened to every record of a batch, in batch order, and the response for Lambda.
#[derive(Debug, Clone)]
pub struct BatchReport {
    pub outcomes: Vec<(String, Outcome)>,
    pub response: SqsBatchResponse,
}

impl BatchReport {
    pub fn failed_ids(&self) -> Vec<&str> {
        self.response.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect()
    }
    pub fn count(&self, outcome: Outcome) -> usize {
        self.outcomes.iter().filter(|(_, o)| *o == outcome).count()
    }
}

/// The consumer wrapper for one queue's message type.
#[derive(Debug, Clone, Default)]
pub struct SqsConsumer {
    options: ConsumerOptions,
}

struct Parsed<M> {
    index: usize,
    message: M,
    meta: RecordMeta,
    /// For the backoff and the requeue (`None` without a receipt handle or a source ARN).
    raw: Option<RecordRef>,
}

impl SqsConsumer {
    pub fn new(options: ConsumerOptions) -> Self {
        assert!(options.concurrency > 0, "concurrency must be at least 1");
        Self { options }
    }

    pub fn options(&self) -> &ConsumerOptions {
        &self.options
    }

    /// Processes one invocation and answers Lambda: the entry point of every consumer binary.
    pub async fn process<M, S, SF, H, HF>(
        &self,
        event: LambdaEvent<SqsEvent>,
        setup: S,
        handler: H,
    ) -> Result<SqsBatchResponse, BatchError>
    where
        M: QueueMessage,
        S: FnOnce() -> SF,
        SF: Future<Output = Result<(), BoxError>>,
        H: Fn(M, RecordMeta) -> HF,
        HF: Future<Output = Result<(), Failure>>,
    {
        self.process_with_report(event, setup, handler).await.map(|r| r.response)
    }

    /// As [`process`](Self::process), with every record's outcome (for tests and the local runner).
    pub async fn process_with_report<M, S, SF, H, HF>(
        &self,
        event: LambdaEvent<SqsEvent>,
        setup: S,
        handler: H,
    ) -> Result<BatchReport, BatchError>
    where
        M: QueueMessage,
        S: FnOnce() -> SF,
        SF: Future<Output = Result<(), BoxError>>,
        H: Fn(M, RecordMeta) -> HF,
        HF: Future<Output = Result<(), Failure>>,
    {
        let LambdaEvent { payload, context } = event;
        let records = payload.records;
        let batch_span = tracing::info_span!("batch", awsRequestId = %context.request_id, records = records.len());
        async move {
            let ids = message_ids(&records)?;
            setup().await.map_err(|e| {
                tracing::error!(error = %chain(e.as_ref()), "batch setup failed; the whole batch will be retried");
                BatchError::Setup(e)
            })?;
            let deadline = deadline_instant(&context);
            let mut outcomes: Vec<Option<Outcome>> = vec![None; records.len()];
            let mut parsed = Vec::with_capacity(records.len());
            for (index, (record, id)) in records.iter().zip(&ids).enumerate() {
                let meta = RecordMeta::from_record(id.clone(), record, deadline);
                match parse_record::<M>(record, &meta, &self.options) {
                    Some(message) => {
                        let raw = record_ref(record, &message);
                        parsed.push(Parsed { index, message, meta, raw })
                    }
                    None => outcomes[index] = Some(Outcome::DroppedInvalid),
                }
            }
            let handler = &handler;
            let options = &self.options;
            let results: Vec<Vec<(usize, Outcome)>> = futures::stream::iter(group_by_ordering_keys(parsed))
                .map(|group| async move {
                    let mut done = Vec::with_capacity(group.len());
                    for record in group {
                        let index = record.index;
                        done.push((index, run_record(record, handler, options).await));
                    }
                    done
                })
                .buffer_unordered(self.options.concurrency)
                .collect()
                .await;
            for (index, outcome) in results.into_iter().flatten() {
                outcomes[index] = Some(outcome);
            }
            let outcomes: Vec<(String, Outcome)> =
                ids.into_iter().zip(outcomes).map(|(id, o)| (id, o.expect("every record has an outcome"))).collect();
            let mut response = SqsBatchResponse::default();
            response.batch_item_failures = outcomes
                .iter()
                .filter(|(_, o)| o.is_batch_item_failure())
                .map(|(id, _)| {
                    let mut f = BatchItemFailure::default();
                    f.item_identifier = id.clone();
                    f
                })
                .collect();
            tracing::info!(failures = response.batch_item_failures.len(), "batch processed");
            batch_metrics(&outcomes, deadline).emit();
            Ok(BatchReport { outcomes, response })
        }
        .instrument(batch_span)
        .await
    }
}

/// The batch's EMF line: records by outcome, the batch size, the time left.
fn batch_metrics(outcomes: &[(String, Outcome)], deadline: Option<Instant>) -> Metrics {
    let mut m = Metrics::from_env();
    m.add(Metric::BatchSize, outcomes.len() as f64);
    for (_, outcome) in outcomes {
        let metric = match outcome {
            Outcome::Processed => Metric::RecordsProcessed,
            Outcome::DroppedInvalid => Metric::RecordsDroppedInvalid,
            Outcome::DroppedByHandler => Metric::RecordsDropped,
            Outcome::Requeued => Metric::RecordsRequeued,
            _ => Metric::RecordsFailed,
        };
        m.add(metric, 1.0);
    }
    if let Some(deadline) = deadline {
        m.add(Metric::TimeLeftMs, deadline.saturating_duration_since(Instant::now()).as_millis() as f64);
    }
    m
}

fn message_ids(records: &[SqsMessage]) -> Result<Vec<String>, BatchError> {
    records
        .iter()
        .enumerate()
        .map(|(index, r)| match r.message_id.as_deref() {
            Some(id) if !id.trim().is_empty() => Ok(id.to_owned()),
            _ => {
                tracing::error!(index, "record without messageId; failing the invocation");
                Err(BatchError::MissingMessageId { index })
            }
        })
        .collect()
}

/// The invocation's deadline as a monotonic instant. `Context::default()` has deadline 0,
/// meaning unknown (in-process calls without a runtime): no record is then skipped for time.
fn deadline_instant(context: &Context) -> Option<Instant> {
    if context.deadline == 0 {
        return None;
    }
    let left = context.deadline().duration_since(SystemTime::now()).unwrap_or(Duration::ZERO);
    Some(Instant::now() + left)
}

fn record_span(meta: &RecordMeta, event_type: &str) -> tracing::Span {
    tracing::info_span!(
        "record",
        messageId = %meta.message_id,
        requestId = %meta.request_id,
        eventType = %event_type,
        receiveCount = meta.receive_count,
        outcome = field::Empty,
        durationMs = field::Empty,
    )
}

fn parse_record<M: QueueMessage>(record: &SqsMessage, meta: &RecordMeta, options: &ConsumerOptions) -> Option<M> {
    let body = record.body.as_deref().unwrap_or("");
    match M::parse(body) {
        Ok(message) => Some(message),
        Err(reason) => {
            let span = record_span(meta, meta.event_type_attribute.as_deref().unwrap_or("unknown"));
            let _entered = span.enter();
            span.record("outcome", Outcome::DroppedInvalid.as_str());
            let preview = crate::preview::redacted(body, options.invalid_body_preview_chars);
            // WARN: the drop is the contract (docs/design.md); a producer that keeps sending what the
            // contract rejects shows in the dropped-invalid count.
            tracing::warn!(
                reason = %reason,
                bodyBytes = body.len(),
                bodyPreview = %preview,
                "invalid message dropped"
            );
            None
        }
    }
}

/// What the wrapper needs to change a record's visibility or send a copy of it.
fn record_ref<M: QueueMessage>(record: &SqsMessage, message: &M) -> Option<RecordRef> {
    Some(RecordRef {
        message_id: record.message_id.clone().unwrap_or_default(),
        queue_arn: record.event_source_arn.clone()?,
        receipt_handle: record.receipt_handle.clone()?,
        body: record.body.clone().unwrap_or_default(),
        string_attributes: record
            .message_attributes
            .iter()
            .filter(|(_, a)| a.data_type.as_deref() == Some("String"))
            .filter_map(|(k, a)| Some((k.clone(), a.string_value.clone()?)))
            .collect(),
        group_id: message.organization_id().to_string(),
    })
}

async fn run_record<M, H, HF>(record: Parsed<M>, handler: &H, options: &ConsumerOptions) -> Outcome
where
    M: QueueMessage,
    H: Fn(M, RecordMeta) -> HF,
    HF: Future<Output = Result<(), Failure>>,
{
    let Parsed { message, meta, raw, .. } = record;
    let (message_id, receive_count, transient_since) =
        (meta.message_id.clone(), meta.receive_count, meta.transient_since);
    let span = record_span(&meta, message.event_type().as_str());
    // Log levels mean something: ERROR only when a person is needed (the message is going to the
    // DLQ, or the code panicked); a failure SQS will retry is a WARN.
    let last_receive = meta.receive_count >= options.max_receive_count;
    if let Some(skipped) = skipped_before_start(&message, &meta, &span, options) {
        return skipped;
    }
    let started = Instant::now();
    let result = match run_before_deadline(message, meta, handler, &span, started, last_receive, options).await {
        Ok(result) => result,
        Err(cancelled) => return cancelled,
    };
    // A transient failure: a backoff (or, on the last receive, a requeued copy) before the
    // record is answered; decided before the span's outcome is recorded.
    let decision = match &result {
        Ok(Err(Failure::Transient { retry_after, .. })) => {
            Some(back_off(*retry_after, &message_id, receive_count, transient_since, raw.as_ref(), options).await)
        }
        _ => None,
    };
    // A failure no retry can change: the DLQ now, by the wrapper's own send (acknowledged only
    // once that send succeeded).
    let dead_lettered = match &result {
        Ok(Err(Failure::DeadLetter(e))) => Some(match (&options.queue, &raw) {
            _ if !options.dead_letters => Err(NOT_DECLARED_TO_DEAD_LETTER.into()),
            (Some(queue), Some(raw)) => queue.dead_letter(raw, &chain(e.as_ref())).await,
            _ => Err("no queue to find the DLQ of".into()),
        }),
        _ => None,
    };
    let outcome = outcome_of(&result, &decision, &dead_lettered);
    span.record("outcome", outcome.as_str());
    span.record("durationMs", started.elapsed().as_millis() as u64);
    let _entered = span.enter();
    log_result(result, decision, dead_lettered, last_receive, options.max_receive_count);
    outcome
}

/// What the handler returned, or the panic it raised.
type HandlerResult = Result<Result<(), Failure>, Box<dyn std::any::Any + Send>>;

/// What was done about a transient failure: the decision, the failure's age, whether the queue
/// call (visibility change or requeue) succeeded.
type TransientDone = (Decision, Duration, Result<(), BoxError>);

/// Before the handler starts: warns when the `eventType` attribute disagrees with the body, and
/// skips the record (`DeadlineSkipped`) when too little of the invocation is left.
fn skipped_before_start<M: QueueMessage>(
    message: &M,
    meta: &RecordMeta,
    span: &tracing::Span,
    options: &ConsumerOptions,
) -> Option<Outcome> {
    let margin = options.deadline_margin;
    if let Some(attr) = meta.event_type_attribute.as_deref()
        && attr != message.event_type().as_str()
    {
        span.in_scope(|| {
            tracing::warn!(attribute = attr, "eventType attribute disagrees with the body; the body decides")
        });
    }
    if meta.remaining().is_some_and(|left| left < margin) {
        span.record("outcome", Outcome::DeadlineSkipped.as_str());
        span.in_scope(|| {
            tracing::warn!(marginMs = margin.as_millis() as u64, "too close to the deadline; left for redelivery")
        });
        return Some(Outcome::DeadlineSkipped);
    }
    None
}

/// Runs the handler (panics caught) until `cancel_margin` before the invocation's deadline;
/// a record still running then is cancelled: `Err(DeadlineCancelled)`, its span and line written.
async fn run_before_deadline<M, H, HF>(
    message: M,
    meta: RecordMeta,
    handler: &H,
    span: &tracing::Span,
    started: Instant,
    last_receive: bool,
    options: &ConsumerOptions,
) -> Result<HandlerResult, Outcome>
where
    M: QueueMessage,
    H: Fn(M, RecordMeta) -> HF,
    HF: Future<Output = Result<(), Failure>>,
{
    let (cancel_margin, max_receive_count) = (options.cancel_margin, options.max_receive_count);
    let cancel_at = meta.deadline.map(|d| d.checked_sub(cancel_margin).unwrap_or(d));
    let run = AssertUnwindSafe(async { handler(message, meta).await }.instrument(span.clone())).catch_unwind();
    let Some(at) = cancel_at else { return Ok(run.await) };
    match tokio::time::timeout_at(at, run).await {
        Ok(result) => Ok(result),
        Err(_) => {
            span.record("outcome", Outcome::DeadlineCancelled.as_str());
            span.record("durationMs", started.elapsed().as_millis() as u64);
            span.in_scope(|| {
                if last_receive {
                    tracing::error!(
                        cancelMarginMs = cancel_margin.as_millis() as u64,
                        maxReceiveCount = max_receive_count,
                        "record still running at the invocation's deadline on its last receive; cancelled, it goes to the DLQ"
                    )
                } else {
                    tracing::warn!(
                        cancelMarginMs = cancel_margin.as_millis() as u64,
                        "record still running at the invocation's deadline; cancelled, SQS will redeliver it"
                    )
                }
            });
            Err(Outcome::DeadlineCancelled)
        }
    }
}

/// A transient failure's backoff ([`crate::backoff`]): the decision for this receive, applied on
/// the record's queue (its visibility changed, or a delayed copy sent on the last receive).
async fn back_off(
    retry_after: Option<Duration>,
    message_id: &str,
    receive_count: u32,
    transient_since: Option<SystemTime>,
    raw: Option<&RecordRef>,
    options: &ConsumerOptions,
) -> TransientDone {
    let age = transient_since.map_or(Duration::ZERO, |t| SystemTime::now().duration_since(t).unwrap_or_default());
    let decision = options.backoff.decide(receive_count, options.max_receive_count, age, retry_after, message_id);
    let done = match (&options.queue, raw, decision) {
        (Some(queue), Some(raw), Decision::Backoff(after) | Decision::GiveUp(after)) => {
            queue.change_visibility(raw, after).await
        }
        (Some(queue), Some(raw), Decision::Requeue(delay)) => {
            let since = transient_since.unwrap_or_else(SystemTime::now);
            queue.requeue(raw, delay, crate::backoff::epoch_ms(since)).await
        }
        (None, _, _) | (_, None, _) => Err("no queue to change the record's visibility on".into()),
    };
    (decision, age, done)
}

/// The record's outcome, from the handler's result and what the wrapper did about it.
fn outcome_of(
    result: &HandlerResult,
    decision: &Option<TransientDone>,
    dead_lettered: &Option<Result<String, BoxError>>,
) -> Outcome {
    let requeued = matches!(decision, Some((Decision::Requeue(_), _, Ok(()))));
    match result {
        Ok(Ok(())) => Outcome::Processed,
        Ok(Err(Failure::Transient { .. })) if requeued => Outcome::Requeued,
        Ok(Err(Failure::DeadLetter(_))) if matches!(dead_lettered, Some(Ok(_))) => Outcome::DeadLettered,
        Ok(Err(Failure::Retry(_) | Failure::Transient { .. } | Failure::DeadLetter(_))) => Outcome::Failed,
        Ok(Err(Failure::Drop(_))) => Outcome::DroppedByHandler,
        Err(_) => Outcome::Panicked,
    }
}

/// The record's line (inside its span), at the level its outcome needs.
fn log_result(
    result: HandlerResult,
    decision: Option<TransientDone>,
    dead_lettered: Option<Result<String, BoxError>>,
    last_receive: bool,
    max_receive_count: u32,
) {
    match result {
        Ok(Ok(())) => tracing::info!("record processed"),
        Ok(Err(Failure::Retry(e))) if last_receive => tracing::error!(
            error = %chain(e.as_ref()),
            maxReceiveCount = max_receive_count,
            "record failed on its last receive; it goes to the DLQ"
        ),
        Ok(Err(Failure::Retry(e))) => {
            tracing::warn!(error = %chain(e.as_ref()), "record failed; SQS will redeliver it")
        }
        Ok(Err(Failure::Transient { error, .. })) => {
            log_transient(&chain(error.as_ref()), decision, last_receive, max_receive_count)
        }
        Ok(Err(Failure::DeadLetter(e))) => match dead_lettered {
            Some(Ok(dlq_message_id)) => tracing::error!(
                error = %chain(e.as_ref()),
                dlqMessageId = %dlq_message_id,
                "record can never succeed; sent to the DLQ on this delivery, no retry"
            ),
            Some(Err(send)) if last_receive => tracing::error!(
                error = %chain(e.as_ref()),
                queueError = %chain(send.as_ref()),
                maxReceiveCount = max_receive_count,
                "record can never succeed and its send to the DLQ failed; on its last receive, SQS moves it to the DLQ"
            ),
            _ => tracing::warn!(
                error = %chain(e.as_ref()),
                queueError = %dead_lettered.as_ref().and_then(|d| d.as_ref().err()).map_or(String::new(), |s| chain(s.as_ref())),
                "record can never succeed but its send to the DLQ failed; SQS will redeliver it"
            ),
        },
        // An expected end (e.g. a report for a soft-deleted interview): nothing for a person to do.
        Ok(Err(Failure::Drop(e))) => tracing::warn!(error = %chain(e.as_ref()), "record not processed; dropped"),
        Err(panic) => tracing::error!(panic = %panic_text(&panic), "handler panicked; SQS will redeliver the record"),
    }
}

/// The line of a transient failure, by what was done about it (see [`crate::backoff`]).
fn log_transient(error: &str, decision: Option<TransientDone>, last_receive: bool, max_receive_count: u32) {
    let Some((decision, age, done)) = decision else { return };
    let age_seconds = age.as_secs();
    match (decision, done) {
        (Decision::Backoff(after), Ok(())) if last_receive => tracing::error!(
            error,
            backoffSeconds = after.as_secs(),
            maxReceiveCount = max_receive_count,
            "record failed transiently on its last receive; it goes to the DLQ after the backoff"
        ),
        (Decision::Backoff(after), Ok(())) => tracing::warn!(
            error,
            backoffSeconds = after.as_secs(),
            transientAgeSeconds = age_seconds,
            "record failed transiently; visible again after the backoff"
        ),
        (Decision::Requeue(delay), Ok(())) => tracing::warn!(
            error,
            delaySeconds = delay.as_secs(),
            transientAgeSeconds = age_seconds,
            maxReceiveCount = max_receive_count,
            "record failed transiently on its last receive; a delayed copy was sent and this one acknowledged"
        ),
        (Decision::GiveUp(_), _) => {
            Metrics::from_env().add(Metric::RecordsGivenUp, 1.0).emit();
            tracing::error!(
                error,
                transientAgeSeconds = age_seconds,
                maxReceiveCount = max_receive_count,
                "record failed transiently for longer than the give-up age; it goes to the DLQ"
            )
        }
        // The DLQ next: a person is needed.
        (_, Err(e)) if last_receive => tracing::error!(
            error,
            queueError = %chain(e.as_ref()),
            transientAgeSeconds = age_seconds,
            maxReceiveCount = max_receive_count,
            "record failed transiently on its last receive and its backoff or requeue failed; it goes to the DLQ"
        ),
        (_, Err(e)) => tracing::warn!(
            error,
            queueError = %chain(e.as_ref()),
            transientAgeSeconds = age_seconds,
            "record failed transiently and its backoff failed; SQS redelivers it after the visibility timeout"
        ),
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// Splits records into groups that may run concurrently: records sharing any ordering key end up
/// in one group (transitively), in batch order.
fn group_by_ordering_keys<M: QueueMessage>(records: Vec<Parsed<M>>) -> Vec<Vec<Parsed<M>>> {
    let mut parent: Vec<usize> = (0..records.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut owner: HashMap<OrderingKey, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        for key in r.message.ordering_keys() {
            match owner.get(&key) {
                Some(&j) => {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    if a != b {
                        parent[a.max(b)] = a.min(b);
                    }
                }
                None => {
                    owner.insert(key, i);
                }
            }
        }
    }
    let mut group_of_root: HashMap<usize, usize> = HashMap::new();
    let mut groups: Vec<Vec<Parsed<M>>> = Vec::new();
    for (i, r) in records.into_iter().enumerate() {
        let root = find(&mut parent, i);
        let g = *group_of_root.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(r);
    }
    groups
}
