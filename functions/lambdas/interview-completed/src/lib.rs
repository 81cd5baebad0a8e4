//! The `interview-completed` Lambda: the interview queue's consumer.
//!
//! Routes by the union (docs/design.md): the failed shape (a body with `type`) goes to the failed
//! settlement, any other valid body to the completed settlement followed by the `report.generate`
//! publish from the outbox. The consumer wrapper does the rest (invalid bodies dropped, per-batch
//! MongoDB ping, ordering by organization and interview, batch item failures).
//!
//! Besides SQS batches it answers the deploy's one-shot `{"sophiaOps":"migrate"}` ([`ops`]), and
//! its first batch checks the ledger's unique index ([`ops::REQUIRED_INDEXES`]) once per cold start,
//! logging an ERROR when it is missing (as report-generate does for its own).
//!
//! `main` builds one [`Handler`] per process (one MongoDB client, one SQS producer); tests build
//! the same [`Handler`] and call [`Handler::handle`] with `LambdaEvent::new(event,
//! Context::default())`, the code path Lambda calls.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use sophia_contracts::{InterviewFailed, InterviewQueueMessage};
use sophia_credits::{
    BoxError, CreditsError, Disposition, ReportPublisher, SettleContext, SettleOutcome, SettlementService,
};
use std::time::Duration;

use sophia_platform::config::{self, ConfigError};
use sophia_platform::indexes::log_missing_unique_indexes;
use sophia_platform::mongo::{Mongo, credentials_refused};
use sophia_platform::rotation::{Renewed, Rotating};
use sophia_platform::secrets::Secret;
use sophia_sqs_consumer::metrics::{Metric, Metrics};
use sophia_sqs_consumer::{BatchError, BatchReport, ConsumerOptions, Failure, RecordMeta, SqsConsumer};
pub use sophia_sqs_producer::SqsReportPublisher;

pub mod ops;

/// The consumer's answer for a settlement error, by kind (see `sophia_credits` docs).
pub fn failure_of(e: CreditsError) -> Failure {
    match e.disposition() {
        Disposition::Retry if e.is_transient() => Failure::transient(e, None),
        Disposition::Retry => Failure::retry(e),
        Disposition::Drop => Failure::drop(e),
        Disposition::DeadLetter => Failure::dead_letter(e),
    }
}

/// The consumer options of the interview consumers' binaries: the defaults, with
/// `RECORD_CONCURRENCY` (records of one batch settled at once) from the environment.
pub fn options_from_env() -> Result<ConsumerOptions, ConfigError> {
    consumer_options(config::optional(config::RECORD_CONCURRENCY).as_deref())
}

/// [`options_from_env`] with the value of `RECORD_CONCURRENCY` given.
/// The interview queue's settings (maxReceiveCount, the visibility timeout bounding a backoff)
/// and the queue reached with the function's own SQS client, so that a transient failure is
/// retried after about a minute (`sophia_sqs_consumer::backoff`).
pub fn consumer_options(record_concurrency: Option<&str>) -> Result<ConsumerOptions, ConfigError> {
    let defaults = ConsumerOptions::for_queue("interviewCompleted")
        .with_queue(std::sync::Arc::new(sophia_sqs_consumer::queue::SqsRecordQueue::from_env()));
    let concurrency = config::positive(config::RECORD_CONCURRENCY, record_concurrency, defaults.concurrency)?;
    Ok(ConsumerOptions { concurrency, ..defaults })
}

/// The failed settlement of one record (shared with the `interview-failed` Lambda).
pub async fn settle_failed(service: &SettlementService, m: &InterviewFailed, meta: &RecordMeta) -> Result<(), Failure> {
    service
        .settle_failed_interview(
            m.interview_id,
            m.organization_id,
            m.failed_at,
            SettleContext::now_with_deadline(meta.deadline),
        )
        .await
        .map(|outcome| settlement_metrics(&outcome).emit())
        .map_err(failure_of)
}

/// A settlement's EMF line: settled or already settled, and the credits it moved.
pub fn settlement_metrics(outcome: &SettleOutcome) -> Metrics {
    let mut m = Metrics::from_env();
    match outcome {
        SettleOutcome::Settled(s) => {
            m.add(Metric::InterviewsSettled, 1.0)
                .add(Metric::CreditsConsumed, s.consumed as f64)
                .add(Metric::CreditsReleased, s.released as f64)
                .add(Metric::CreditsForfeited, (s.forfeited + s.expiry_forfeited) as f64);
        }
        SettleOutcome::AlreadySettled => {
            m.add(Metric::InterviewsAlreadySettled, 1.0);
        }
    }
    m
}

/// `TimeToSettlementMs` on a settlement made now: from the message's publish to now (the
/// service level's second half, docs/design.md "Time to report").
pub fn with_time_to_settlement(mut m: Metrics, outcome: &SettleOutcome, meta: &RecordMeta) -> Metrics {
    if let (SettleOutcome::Settled(_), Some(ms)) = (outcome, meta.since_published_ms()) {
        m.add(Metric::TimeToSettlementMs, ms);
    }
    m
}

/// The MongoDB clients of one process, rebuilt together when MongoDB refuses the URI's
/// credentials and Secrets Manager has a new URI (`sophia_platform::rotation`).
#[derive(Debug, Clone)]
pub struct Settlement {
    pub mongo: Mongo,
    pub service: SettlementService,
}

impl Settlement {
    pub fn new(mongo: Mongo) -> Self {
        let service = SettlementService::new(mongo.client.clone(), mongo.db.clone());
        Self { mongo, service }
    }

    /// From the environment (the URI as `secrets::get` returns it now), checked for transactions.
    pub async fn from_env() -> Result<Self, BoxError> {
        Ok(Self::new(Mongo::from_env().await?))
    }
}

/// The per-process state of the function.
#[derive(Debug)]
pub struct Handler<P> {
    clients: Rotating<Settlement>,
    publisher: P,
    consumer: SqsConsumer,
    /// The required unique index, checked once per process (cold start), shared by clones.
    index_check: std::sync::Arc<tokio::sync::OnceCell<()>>,
}

impl<P: ReportPublisher> Handler<P> {
    pub fn new(mongo: Mongo, publisher: P) -> Self {
        Self::with_options(mongo, publisher, ConsumerOptions::default())
    }

    /// With these clients, never rebuilt (tests, the local runner).
    pub fn with_options(mongo: Mongo, publisher: P, options: ConsumerOptions) -> Self {
        Self {
            clients: Rotating::fixed(Settlement::new(mongo)),
            publisher,
            consumer: SqsConsumer::new(options),
            index_check: Default::default(),
        }
    }

    /// With clients rebuilt from the environment when MongoDB refuses the credentials and the
    /// secret has a new value (at most one re-read per `interval`).
    pub fn renewable(mongo: Mongo, publisher: P, options: ConsumerOptions, interval: Duration) -> Self {
        let clients = Rotating::renewable(Settlement::new(mongo), interval, |_, _| Settlement::from_env());
        Self { clients, publisher, consumer: SqsConsumer::new(options), index_check: Default::default() }
    }

    /// The settlement service in use now.
    pub fn service(&self) -> SettlementService {
        self.clients.current().service.clone()
    }

    /// One invocation of any kind, as Lambda calls the binary: an SQS batch, or an ops request.
    pub async fn invoke(&self, event: LambdaEvent<ops::Invocation>) -> Result<ops::Answer, lambda_runtime::Error> {
        let (payload, context) = event.into_parts();
        match payload {
            ops::Invocation::Sqs(batch) => Ok(ops::Answer::Sqs(self.handle(LambdaEvent::new(batch, context)).await?)),
            ops::Invocation::Ops(ops::OpsRequest { command: ops::OpsCommand::Migrate }) => {
                Ok(ops::Answer::Migrated(ops::migrate(&self.clients.current().mongo.db).await?))
            }
        }
    }

    /// One invocation, as Lambda calls it.
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        Ok(self.handle_with_report(event).await?.response)
    }

    /// One invocation with every record's outcome (tests, the local runner).
    pub async fn handle_with_report(&self, event: LambdaEvent<SqsEvent>) -> Result<BatchReport, BatchError> {
        let setup = || async {
            ping_renewing(&self.clients).await?;
            self.index_check
                .get_or_init(|| async {
                    let db = self.clients.current().mongo.db.clone();
                    log_missing_unique_indexes(&db, "interview-completed", ops::REQUIRED_INDEXES).await;
                })
                .await;
            Ok::<(), BoxError>(())
        };
        self.consumer.process_with_report(event, setup, |m, meta| self.handle_record(m, meta)).await
    }

    async fn handle_record(&self, message: InterviewQueueMessage, meta: RecordMeta) -> Result<(), Failure> {
        let clients = self.clients.current();
        match self.settle(&clients.service, &message, &meta).await {
            Err(e) if credentials_refused(&e) => match self.clients.renew(Secret::MongoDbUri, &clients).await {
                Renewed::Rebuilt(renewed) => self.settle(&renewed.service, &message, &meta).await,
                _ => Err(e),
            },
            result => result,
        }
        .map_err(failure_of)
    }

    async fn settle(
        &self,
        service: &SettlementService,
        message: &InterviewQueueMessage,
        meta: &RecordMeta,
    ) -> Result<(), CreditsError> {
        let context = SettleContext::now_with_deadline(meta.deadline);
        match message {
            InterviewQueueMessage::Failed(m) => service
                .settle_failed_interview(m.interview_id, m.organization_id, m.failed_at, context)
                .await
                .map(|outcome| settlement_metrics(&outcome).emit()),
            InterviewQueueMessage::Completed(m) => {
                service.settle_completed_and_publish(m, &self.publisher, context).await.map(|result| {
                    with_time_to_settlement(settlement_metrics(&result.outcome), &result.outcome, meta).emit()
                })
            }
        }
    }
}

/// The per-batch setup: a MongoDB ping; when MongoDB refuses the credentials, a re-read of the
/// URI ([`Rotating::renew`]) and, with a new one, a ping on the rebuilt clients, which the batch's
/// records then use.
pub async fn ping_renewing(clients: &Rotating<Settlement>) -> Result<(), BoxError> {
    let used = clients.current();
    let Err(e) = used.mongo.ping().await else { return Ok(()) };
    if !credentials_refused(&e) {
        return Err(e.into());
    }
    match clients.renew(Secret::MongoDbUri, &used).await {
        Renewed::Rebuilt(renewed) => Ok(renewed.mongo.ping().await?),
        _ => Err(e.into()),
    }
}
