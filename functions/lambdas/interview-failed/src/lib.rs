//! The `interview-failed` Lambda: the failed-only handler (built and deployable, not subscribed
//! to any queue, as in the replaced system, docs/design.md). A body that is not the failed shape is invalid here and
//! dropped by the consumer wrapper.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use interview_completed::settle_failed;
use lambda_runtime::LambdaEvent;
use sophia_contracts::InterviewFailed;
use sophia_credits::{BoxError, SettlementService};
use sophia_platform::mongo::Mongo;
use sophia_sqs_consumer::{BatchError, BatchReport, ConsumerOptions, SqsConsumer};

#[derive(Debug, Clone)]
pub struct Handler {
    mongo: Mongo,
    service: SettlementService,
    consumer: SqsConsumer,
}

impl Handler {
    pub fn new(mongo: Mongo) -> Self {
        Self::with_options(mongo, ConsumerOptions::default())
    }

    pub fn with_options(mongo: Mongo, options: ConsumerOptions) -> Self {
        let service = SettlementService::new(mongo.client.clone(), mongo.db.clone());
        Self { mongo, service, consumer: SqsConsumer::new(options) }
    }

    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        Ok(self.handle_with_report(event).await?.response)
    }

    pub async fn handle_with_report(&self, event: LambdaEvent<SqsEvent>) -> Result<BatchReport, BatchError> {
        let setup = || async { self.mongo.ping().await.map_err(BoxError::from) };
        self.consumer
            .process_with_report(event, setup, |m: InterviewFailed, meta| async move {
                settle_failed(&self.service, &m, &meta).await
            })
            .await
    }
}
