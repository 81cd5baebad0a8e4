//! The `interview-completed` Lambda: the interview queue's consumer.
//!
//! Routes by the union (docs/design.md): the failed shape (a body with `type`) goes to the failed
//! settlement, any other valid body to the completed settlement followed by the `report.generate`
//! publish from the outbox. The consumer wrapper does the rest (invalid bodies dropped, per-batch
//! MongoDB ping, ordering by organization and interview, batch item failures).
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
use sophia_platform::config::{self, ConfigError};
use sophia_platform::mongo::Mongo;
use sophia_sqs_consumer::metrics::{Metric, Metrics};
use sophia_sqs_consumer::{BatchError, BatchReport, ConsumerOptions, Failure, RecordMeta, SqsConsumer};
pub use sophia_sqs_producer::SqsReportPublisher;

/// The consumer's answer for a settlement error, by kind (see `sophia_credits` docs).
pub fn failure_of(e: CreditsError) -> Failure {
    match e.disposition() {
        Disposition::Retry => Failure::retry(e),
        Disposition::Drop => Failure::drop(e),
    }
}

/// The consumer options of the interview consumers' binaries: the defaults, with
/// `RECORD_CONCURRENCY` (records of one batch settled at once) from the environment.
pub fn options_from_env() -> Result<ConsumerOptions, ConfigError> {
    consumer_options(config::optional(config::RECORD_CONCURRENCY).as_deref())
}

/// [`options_from_env`] with the value of `RECORD_CONCURRENCY` given.
pub fn consumer_options(record_concurrency: Option<&str>) -> Result<ConsumerOptions, ConfigError> {
    let defaults = ConsumerOptions::default();
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

/// The per-process state of the function.
#[derive(Debug, Clone)]
pub struct Handler<P> {
    mongo: Mongo,
    service: SettlementService,
    publisher: P,
    consumer: SqsConsumer,
}

impl<P: ReportPublisher> Handler<P> {
    pub fn new(mongo: Mongo, publisher: P) -> Self {
        Self::with_options(mongo, publisher, ConsumerOptions::default())
    }

    pub fn with_options(mongo: Mongo, publisher: P, options: ConsumerOptions) -> Self {
        let service = SettlementService::new(mongo.client.clone(), mongo.db.clone());
        Self { mongo, service, publisher, consumer: SqsConsumer::new(options) }
    }

    pub fn service(&self) -> &SettlementService {
        &self.service
    }

    /// One invocation, as Lambda calls it.
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        Ok(self.handle_detailed(event).await?.response)
    }

    /// One invocation with every record's outcome (tests, the local runner).
    pub async fn handle_detailed(&self, event: LambdaEvent<SqsEvent>) -> Result<BatchReport, BatchError> {
        let setup = || async { self.mongo.ping().await.map_err(BoxError::from) };
        self.consumer.process_detailed(event, setup, |m, meta| self.handle_record(m, meta)).await
    }

    async fn handle_record(&self, message: InterviewQueueMessage, meta: RecordMeta) -> Result<(), Failure> {
        match message {
            InterviewQueueMessage::Failed(m) => settle_failed(&self.service, &m, &meta).await,
            InterviewQueueMessage::Completed(m) => self
                .service
                .settle_completed_and_publish(&m, &self.publisher, SettleContext::now_with_deadline(meta.deadline))
                .await
                .map(|result| settlement_metrics(&result.outcome).emit())
                .map_err(failure_of),
        }
    }
}
