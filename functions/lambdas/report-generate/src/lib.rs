//! The report-generate consumer: each `report.generate` record goes through the SQS consumer
//! wrapper into [`ReportService::generate_report_until`] (bounded by the invocation's
//! deadline). Batch size is 1 in production; any size works (records of one interview or
//! organization run one after another, the rest concurrently).
//!
//! Per record: `Ok` -> acknowledged (completed, already completed, out of attempts, held by
//! another worker); an error is retried or dropped by its [`Disposition`] (decided by the
//! error's kind: every generation failure is retried, so the third reaches the DLQ). The
//! per-batch setup pings MongoDB (failure: the whole batch is retried). Indexes are created by
//! the explicit migration step (`sophia-ops migrate`, run by `scripts/deploy`), never by the
//! handler; its first invocation checks the required unique index and logs an ERROR if it is
//! missing (once per cold start).
//!
//! Tests call [`ReportGenerateHandler::handle_detailed`] in-process with
//! `LambdaEvent::new(event, Context::default())`.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use sophia_contracts::ReportGenerate;
use sophia_platform::indexes::{log_missing_ttl_indexes, log_missing_unique_indexes};
use sophia_platform::mongo::Mongo;
use sophia_reports::{Disposition, Generated, ReportError, ReportModel, ReportService, migrations};
use sophia_sqs_consumer::metrics::{Dimension, Metric, Metrics};
use sophia_sqs_consumer::{BatchError, BatchReport, BoxError, ConsumerOptions, Failure, RecordMeta, SqsConsumer};

/// The consumer's decision for an error: retry (SQS redelivers) or drop (logged, acknowledged).
pub fn to_failure(e: ReportError) -> Failure {
    match e.disposition() {
        Disposition::Retry => Failure::retry(e),
        Disposition::Drop => Failure::drop(e),
    }
}

/// Everything one process needs, built once in `main` (or by a test).
#[derive(Debug)]
pub struct ReportGenerateHandler {
    mongo: Mongo,
    service: ReportService,
    consumer: SqsConsumer,
    /// The required unique indexes, checked once per process (cold start).
    index_check: tokio::sync::OnceCell<()>,
}

impl ReportGenerateHandler {
    pub fn new(mongo: Mongo, model: ReportModel) -> Self {
        let service = ReportService::new(mongo.db.clone(), model);
        Self::with_service(mongo, service, ConsumerOptions::default())
    }

    /// With a prepared service (e.g. a shorter lease) and consumer options.
    pub fn with_service(mongo: Mongo, service: ReportService, options: ConsumerOptions) -> Self {
        Self { mongo, service, consumer: SqsConsumer::new(options), index_check: tokio::sync::OnceCell::new() }
    }

    /// From the environment: `MONGODB_*` (see `sophia_platform::mongo`) and `OPENAI_*` (see
    /// `sophia_reports::openai::OpenAiSettings::from_env`); on AWS both secrets are read once,
    /// here, through the secrets extension (`sophia_platform::secrets`).
    pub async fn from_env() -> Result<Self, BoxError> {
        let mongo = Mongo::from_env().await?;
        sophia_platform::secrets::load(sophia_platform::secrets::Secret::OpenAiApiKey).await?;
        let model = ReportModel::from_env()?;
        let limits = sophia_reports::prompt::PromptLimits::from_env()?;
        tracing::info!(
            model = model.model(),
            timeoutMs = model.timeout().as_millis() as u64,
            transcriptTokenBudget = limits.transcript_token_budget,
            "report-generate ready"
        );
        let service = ReportService::new(mongo.db.clone(), model).with_prompt_limits(limits);
        Ok(Self::with_service(mongo, service, ConsumerOptions::default()))
    }

    pub fn service(&self) -> &ReportService {
        &self.service
    }

    /// One invocation, answered for Lambda.
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, BatchError> {
        self.handle_detailed(event).await.map(|r| r.response)
    }

    /// One invocation, with every record's outcome.
    pub async fn handle_detailed(&self, event: LambdaEvent<SqsEvent>) -> Result<BatchReport, BatchError> {
        let setup = || async {
            self.mongo.ping().await?;
            self.index_check
                .get_or_init(|| async {
                    log_missing_unique_indexes(&self.mongo.db, "report-generate", migrations::REQUIRED).await;
                    log_missing_ttl_indexes(&self.mongo.db, "report-generate", migrations::REQUIRED_TTL).await;
                })
                .await;
            Ok::<(), BoxError>(())
        };
        let handler = |message: ReportGenerate, meta: RecordMeta| async move {
            let result =
                self.service.generate_report_until(message.interview_id, message.organization_id, meta.deadline).await;
            report_metrics(&result).emit();
            result.map(|_| ()).map_err(to_failure)
        };
        self.consumer.process_detailed(event, setup, handler).await
    }
}

/// A report's EMF line: completed (with its tokens and the model's latency) or failed, by error
/// kind (a third dimension, `ErrorKind`, a fixed word).
pub fn report_metrics(result: &Result<Generated, ReportError>) -> Metrics {
    match result {
        Ok(Generated::Completed { usage, .. }) => {
            let mut m = Metrics::from_env();
            m.add(Metric::ReportsCompleted, 1.0);
            if usage.prompt_tokens > 0 {
                m.add(Metric::PromptTokens, usage.prompt_tokens as f64)
                    .add(Metric::CachedTokens, usage.cached_tokens as f64)
                    .add(Metric::CompletionTokens, usage.completion_tokens as f64)
                    .add(Metric::ModelLatencyMs, usage.latency_ms as f64);
            }
            m
        }
        Ok(_) => Metrics::from_env(),
        Err(e) => {
            let kind = e.error_kind().map_or("interview_not_found", |k| k.as_str());
            let mut m = Metrics::from_env().with_dimension(Dimension { name: "ErrorKind", value: kind });
            m.add(Metric::ReportsFailed, 1.0);
            m
        }
    }
}

#[cfg(test)]
mod tests {
    use sophia_reports::Usage;
    use sophia_reports::model::{Recommendation, ReportSource};

    use super::*;

    #[test]
    fn a_completed_report_counts_its_tokens_and_a_failure_its_kind() {
        let usage = Usage { prompt_tokens: 6_000, cached_tokens: 1_152, completion_tokens: 900, latency_ms: 4_200 };
        let completed = Ok(Generated::Completed {
            recommendation: Recommendation::Hire,
            source: ReportSource::Model,
            attempt: 1,
            usage,
        });
        let doc = report_metrics(&completed).to_emf(0);
        assert_eq!(doc["ReportsCompleted"], 1.0);
        assert_eq!((doc["PromptTokens"].as_f64(), doc["CachedTokens"].as_f64()), (Some(6_000.0), Some(1_152.0)));
        assert_eq!(doc["CompletionTokens"], 900.0);
        assert_eq!(doc["ModelLatencyMs"], 4_200.0);

        let rule = Ok(Generated::Completed {
            recommendation: Recommendation::InsufficientEvidence,
            source: ReportSource::InsufficientEvidenceRule,
            attempt: 1,
            usage: Usage::default(),
        });
        let doc = report_metrics(&rule).to_emf(0);
        assert_eq!(doc["ReportsCompleted"], 1.0);
        assert!(doc.get("PromptTokens").is_none(), "no model call, no tokens");

        let failed: Result<Generated, ReportError> = Err(ReportError::InterviewNotFound {
            interview_id: "6751a0c2e4b0a1b2c3d4e5f6".parse().unwrap(),
            organization_id: "6751a0c2e4b0a1b2c3d4e5f7".parse().unwrap(),
        });
        let doc = report_metrics(&failed).to_emf(0);
        assert_eq!(doc["ReportsFailed"], 1.0);
        assert_eq!(doc["ErrorKind"], "interview_not_found");
        assert_eq!(doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0][2], "ErrorKind");
    }
}
