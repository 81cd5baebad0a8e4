//! The report-generate consumer: each `report.generate` record goes through the SQS consumer
//! wrapper into [`ReportService::generate_report_until`] (bounded by the invocation's
//! deadline). Batch size is 1 in production; any size works (records of one interview or
//! organization run one after another, the rest concurrently).
//!
//! Per record: `Ok` -> acknowledged (completed, already completed, out of attempts, held by
//! another worker); an error is retried or dropped by its [`Disposition`] (decided by the
//! error's kind: every generation failure is retried, so the third reaches the DLQ). The
//! per-batch setup pings MongoDB (failure: the whole batch is retried). Indexes are created by
//! the explicit migration step (the deploy's `{"sophiaOps":"migrate"}` invocation, `sophia-ops
//! migrate`), never by the handler. Its first invocation checks the required indexes and logs an
//! ERROR for each one missing (once per cold start). Without the unique `interviewId` index the
//! insert-claim is not insert-if-absent (a redelivery would insert a second report and call the
//! model again, and the migration could then not build the index over the duplicate), so every
//! batch is refused, whole, until the index exists ([`UniqueIndexMissing`]): SQS redelivers it,
//! after `maxReceiveCount` receives it waits in the DLQ; nothing is generated twice and nothing is
//! lost. A database is in that state only between a switch to a new database and its migration
//! (docs/deploy.md, "Later deploys"); the TTL index is only logged.
//!
//! Tests call [`ReportGenerateHandler::handle_with_report`] in-process with
//! `LambdaEvent::new(event, Context::default())`.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use sophia_contracts::ReportGenerate;
use std::sync::Arc;

use sophia_platform::indexes::{log_missing_ttl_indexes, log_missing_unique_indexes, missing_unique_indexes};
use sophia_platform::mongo::{Mongo, credentials_refused};
use sophia_platform::rotation::{self, Renewed, Rotating};
use sophia_platform::secrets::{self, Secret};
use sophia_reports::store::MAX_ATTEMPTS;
use sophia_reports::{Disposition, ErrorKind, Generated, ReportError, ReportModel, ReportService, migrations};
use sophia_sqs_consumer::backoff::Decision;
use sophia_sqs_consumer::metrics::{Dimension, Metric, Metrics};
use sophia_sqs_consumer::queue::SqsRecordQueue;
use sophia_sqs_consumer::{BatchError, BatchReport, BoxError, ConsumerOptions, Failure, RecordMeta, SqsConsumer};

/// The consumer's decision for an error: retry (SQS redelivers), transient (the provider or the
/// database away: redelivered after a backoff, requeued on the last receive until the give-up
/// age, the attempt given back) or drop (logged, acknowledged). Decided by the error's kind.
pub fn to_failure(e: ReportError) -> Failure {
    match e.disposition() {
        Disposition::Retry if e.is_transient() => {
            let retry_after = e.retry_after();
            Failure::transient(e, retry_after)
        }
        Disposition::Retry => Failure::retry(e),
        Disposition::Drop => Failure::drop(e),
    }
}

/// The batch setup's refusal while the unique `interviewId` index is missing (the batch is retried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueIndexMissing {
    pub database: String,
    pub indexes: Vec<String>,
}

impl std::fmt::Display for UniqueIndexMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "required unique index missing in {} ({}): no report is generated until the migration has created it; the batch will be retried",
            self.database,
            self.indexes.join("; ")
        )
    }
}

impl std::error::Error for UniqueIndexMissing {}

/// The report queue's consumer options: its maxReceiveCount and visibility timeout, transient
/// failures requeued on the last receive (`sophia_sqs_consumer::backoff`), and the queue itself
/// reached with the function's own SQS client (from the environment, built on first use).
pub fn consumer_options() -> ConsumerOptions {
    ConsumerOptions::for_queue("reportGenerate").with_queue(Arc::new(SqsRecordQueue::from_env()))
}

/// The clients one process uses, rebuilt together when a refused secret has a new value.
#[derive(Debug, Clone)]
pub struct Clients {
    pub mongo: Mongo,
    pub service: ReportService,
}

/// Everything one process needs, built once in `main` (or by a test).
#[derive(Debug)]
pub struct ReportGenerateHandler {
    clients: Rotating<Clients>,
    consumer: SqsConsumer,
    /// The required indexes' ERROR lines, once per process (cold start).
    index_check: tokio::sync::OnceCell<()>,
    /// Set once the unique `interviewId` index is found; until then every batch checks it.
    unique_index_found: tokio::sync::OnceCell<()>,
}

impl ReportGenerateHandler {
    pub fn new(mongo: Mongo, model: ReportModel) -> Self {
        let service = ReportService::new(mongo.db.clone(), model);
        Self::with_service(mongo, service, consumer_options())
    }

    /// With a prepared service (e.g. a shorter lease) and consumer options; never rebuilt.
    pub fn with_service(mongo: Mongo, service: ReportService, options: ConsumerOptions) -> Self {
        Self::with_clients(Rotating::fixed(Clients { mongo, service }), options)
    }

    fn with_clients(clients: Rotating<Clients>, options: ConsumerOptions) -> Self {
        Self {
            clients,
            consumer: SqsConsumer::new(options),
            index_check: tokio::sync::OnceCell::new(),
            unique_index_found: tokio::sync::OnceCell::new(),
        }
    }

    /// From the environment: `MONGODB_*` (see `sophia_platform::mongo`) and `OPENAI_*` (see
    /// `sophia_reports::openai::OpenAiSettings::from_env`); on AWS both secrets are read through
    /// the secrets extension (`sophia_platform::secrets`), and read again when OpenAI refuses the
    /// key or MongoDB the URI's credentials (`sophia_platform::rotation`): the clients are then
    /// rebuilt with the new value and the record tried once more.
    pub async fn from_env() -> Result<Self, BoxError> {
        let clients = Self::clients_from_env(None).await?;
        let limits = sophia_reports::prompt::PromptLimits::from_env()?;
        tracing::info!(
            model = clients.service.model().model(),
            timeoutMs = clients.service.model().timeout().as_millis() as u64,
            transcriptTokenBudget = limits.transcript_token_budget,
            "report-generate ready"
        );
        let rotating = Rotating::renewable(clients, rotation::interval_from_env()?, |used: Arc<Clients>, secret| {
            let reuse = (secret == Secret::OpenAiApiKey).then(|| used.mongo.clone());
            async move { Self::clients_from_env(reuse).await }
        });
        Ok(Self::with_clients(rotating, consumer_options()))
    }

    /// The clients from the secrets as [`secrets::get`] returns them now; `mongo` is reused when
    /// given (only the OpenAI key changed).
    async fn clients_from_env(mongo: Option<Mongo>) -> Result<Clients, BoxError> {
        let mongo = match mongo {
            Some(mongo) => mongo,
            None => Mongo::from_env().await?,
        };
        secrets::load(Secret::OpenAiApiKey).await?;
        let model = ReportModel::from_env()?;
        let limits = sophia_reports::prompt::PromptLimits::from_env()?;
        let service = ReportService::new(mongo.db.clone(), model).with_prompt_limits(limits);
        Ok(Clients { mongo, service })
    }

    /// The service in use now.
    pub fn service(&self) -> ReportService {
        self.clients.current().service.clone()
    }

    /// One invocation, answered for Lambda.
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, BatchError> {
        self.handle_with_report(event).await.map(|r| r.response)
    }

    /// One invocation, with every record's outcome.
    pub async fn handle_with_report(&self, event: LambdaEvent<SqsEvent>) -> Result<BatchReport, BatchError> {
        let setup = || async {
            let mut clients = self.clients.current();
            if let Err(e) = clients.mongo.ping().await {
                // Refused credentials: a new URI, if Secrets Manager has one, and one more ping.
                if !credentials_refused(&e) {
                    return Err(BoxError::from(e));
                }
                match self.clients.renew(Secret::MongoDbUri, &clients).await {
                    Renewed::Rebuilt(new) => clients = new,
                    _ => return Err(BoxError::from(e)),
                }
                clients.mongo.ping().await?;
            }
            erasures_overdue(&clients.mongo.db).await;
            self.index_check
                .get_or_init(|| async {
                    log_missing_unique_indexes(&clients.mongo.db, "report-generate", migrations::REQUIRED).await;
                    log_missing_ttl_indexes(&clients.mongo.db, "report-generate", migrations::REQUIRED_TTL).await;
                })
                .await;
            if self.unique_index_found.get().is_none() {
                match missing_unique_indexes(&clients.mongo.db, migrations::REQUIRED).await {
                    Ok(missing) if missing.is_empty() => {
                        let _ = self.unique_index_found.set(());
                    }
                    Ok(missing) => {
                        return Err(BoxError::from(UniqueIndexMissing {
                            database: clients.mongo.db.name().to_owned(),
                            indexes: missing.iter().map(ToString::to_string).collect(),
                        }));
                    }
                    // Not checkable (the cold start logged a WARN): the function runs, as before.
                    Err(_) => {}
                }
            }
            Ok::<(), BoxError>(())
        };
        let handler = |message: ReportGenerate, meta: RecordMeta| async move {
            let clients = self.clients.current();
            let (interview_id, organization_id, deadline) =
                (message.interview_id, message.organization_id, meta.deadline);
            let generate = |service: ReportService| async move {
                service.generate_report_until(interview_id, organization_id, deadline).await
            };
            let mut result = generate(clients.service.clone()).await;
            // Refused credentials: read the secret again (the later records get new clients even
            // when this one cannot be tried again), and try once more with a new value.
            if let Err(e) = &result
                && let Some(secret) = refused_secret(e)
                && let Renewed::Rebuilt(renewed) = self.clients.renew(secret, &clients).await
                && retry_allowed(e)
            {
                report_metrics(&result).emit();
                result = generate(renewed.service.clone()).await;
            }
            let mut metrics = report_metrics(&result);
            if matches!(result, Ok(Generated::Completed { .. }))
                && let Some(ms) = time_to_report_ms(&self.clients.current().mongo.db, interview_id).await
            {
                metrics.add(Metric::TimeToReportMs, ms);
            }
            metrics.emit();
            if let Err(e) = &result
                && self.gives_up(e, &meta)
            {
                mark_given_up(&self.clients.current().service, interview_id).await;
            }
            result.map(|_| ()).map_err(to_failure)
        };
        self.consumer.process_with_report(event, setup, handler).await
    }
}

impl ReportGenerateHandler {
    /// Whether the consumer wrapper will give this transient failure up (its outage outlasted the
    /// give-up age on the last receive: the DLQ), by the same decision the wrapper takes
    /// (`sophia_sqs_consumer::backoff::Backoff::decide`).
    fn gives_up(&self, e: &ReportError, meta: &RecordMeta) -> bool {
        if !e.is_transient() {
            return false;
        }
        let options = self.consumer.options();
        let age = meta.transient_since.and_then(|t| t.elapsed().ok()).unwrap_or_default();
        matches!(
            options.backoff.decide(
                meta.receive_count,
                options.max_receive_count,
                age,
                e.retry_after(),
                &meta.message_id
            ),
            Decision::GiveUp(_)
        )
    }
}

/// The report no longer waits for a retry: its message goes to the DLQ (logged when it cannot
/// be recorded; the DLQ alarm and `RecordsGivenUp` still say so).
async fn mark_given_up(service: &ReportService, interview_id: sophia_contracts::InterviewId) {
    if let Err(e) = service.store().mark_given_up(interview_id).await {
        tracing::error!(error = %e, "could not record on the report that its retries were given up");
    }
}

/// Milliseconds from the interview's end (`completedAt`, written by the API when it marks the
/// interview COMPLETED) to now, just after its report was stored COMPLETED: the time to report
/// (docs/design.md, "Time to report"). `None` when the interview has no `completedAt` date (an
/// older writer) or cannot be read now: the report stays stored, only the metric is skipped.
pub async fn time_to_report_ms(db: &mongodb::Database, interview_id: sophia_contracts::InterviewId) -> Option<f64> {
    let interview = db
        .collection::<bson::Document>(sophia_reports::interview::INTERVIEWS)
        .find_one(bson::doc! {"_id": interview_id.oid()})
        .projection(bson::doc! {"completedAt": 1})
        .await
        .ok()??;
    let completed_at = interview.get_datetime("completedAt").ok()?.timestamp_millis();
    let now = bson::DateTime::now().timestamp_millis();
    Some(now.saturating_sub(completed_at).max(0) as f64)
}

/// The secret whose credentials were refused by the failed call, if that is why it failed:
/// OpenAI's HTTP 401 (`invalid_api_key`: a wrong, revoked or rotated key), or MongoDB's
/// authentication failure.
pub fn refused_secret(e: &ReportError) -> Option<Secret> {
    match e {
        ReportError::Model { source, .. } if source.kind() == ErrorKind::CredentialsRefused => {
            Some(Secret::OpenAiApiKey)
        }
        e if credentials_refused(e) => Some(Secret::MongoDbUri),
        _ => None,
    }
}

/// One more try within this invocation only when the failed attempt was not the report's last:
/// a last attempt's error goes to SQS (and so to the DLQ) as it always did, where a try after it
/// would find the report out of attempts and acknowledge the message.
fn retry_allowed(e: &ReportError) -> bool {
    match e {
        ReportError::Model { attempt, .. } => *attempt < MAX_ATTEMPTS,
        _ => true,
    }
}

/// The `ErasuresOverdue` line (docs/candidate-data.md, "Erasure"), at each batch: the erasure
/// requests still PENDING past their completion time. A failed count is logged, never fatal.
pub async fn erasures_overdue(db: &mongodb::Database) {
    if let Err(e) = count_erasures_overdue(db).await {
        tracing::warn!(error = %e, "could not count the overdue erasure requests");
    }
}

/// Counts the overdue erasure requests and writes the `ErasuresOverdue` line; returns the count.
async fn count_erasures_overdue(db: &mongodb::Database) -> mongodb::error::Result<u64> {
    let n = sophia_reports::erasure::overdue(db).await?;
    let mut m = Metrics::from_env();
    m.add(Metric::ErasuresOverdue, n as f64);
    m.emit();
    Ok(n)
}

/// The key of a scheduled invocation's payload (a schedule invoking the function directly,
/// not through its queue): `{"sophiaScheduled": "erasure-check"}`, nothing more.
pub const SCHEDULED_KEY: &str = "sophiaScheduled";

/// What a scheduled invocation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScheduledTask {
    /// Count the erasure requests still PENDING past their completion time and write the
    /// `ErasuresOverdue` line, whatever the traffic, so the erasures-overdue alarm has a data point
    /// every period the schedule runs. What the alarm does with a period without one is its own
    /// definition's (`"erasures-overdue"` in `ALARM_KINDS`, infra-pulumi/src/alarms.ts).
    ErasureCheck,
}

/// `{"sophiaScheduled": "<task>"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledRequest {
    #[serde(rename = "sophiaScheduled")]
    pub task: ScheduledTask,
}

/// One invocation's payload: an SQS batch (the event source mapping) or a scheduled task.
/// Parse, don't validate: a body with the [`SCHEDULED_KEY`] is a scheduled request and nothing
/// else (an unknown task or an extra field is a clear error, never an empty SQS batch).
#[derive(Debug, Clone)]
pub enum Invocation {
    Sqs(SqsEvent),
    Scheduled(ScheduledRequest),
}

impl<'de> serde::Deserialize<'de> for Invocation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.get(SCHEDULED_KEY).is_some() {
            ScheduledRequest::deserialize(value).map(Invocation::Scheduled).map_err(|e| {
                D::Error::custom(format!("not a valid scheduled request ({SCHEDULED_KEY}: \"erasure-check\"): {e}"))
            })
        } else {
            SqsEvent::deserialize(value).map(Invocation::Sqs).map_err(D::Error::custom)
        }
    }
}

/// What the erasure check counted (the invocation's answer; the metric is the line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErasureChecked {
    pub erasures_overdue: u64,
}

/// The answer to an [`Invocation`].
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    Sqs(SqsBatchResponse),
    ErasureChecked(ErasureChecked),
}

impl ReportGenerateHandler {
    /// Any invocation: an SQS batch as [`Self::handle`], or a scheduled task. The erasure check
    /// fails the invocation when MongoDB cannot be counted: the Errors alarm, and a period without
    /// an `ErasuresOverdue` point, which the erasures-overdue alarm treats as its definition says
    /// (infra-pulumi/src/alarms.ts).
    pub async fn handle_invocation(&self, event: LambdaEvent<Invocation>) -> Result<Answer, BoxError> {
        let (payload, context) = event.into_parts();
        match payload {
            Invocation::Sqs(batch) => {
                Ok(Answer::Sqs(self.handle(LambdaEvent::new(batch, context)).await.map_err(BoxError::from)?))
            }
            Invocation::Scheduled(ScheduledRequest { task: ScheduledTask::ErasureCheck }) => {
                let db = self.clients.current().mongo.db.clone();
                let erasures_overdue = count_erasures_overdue(&db).await?;
                tracing::info!(erasuresOverdue = erasures_overdue, "scheduled erasure check");
                Ok(Answer::ErasureChecked(ErasureChecked { erasures_overdue }))
            }
        }
    }
}

/// A report's EMF line: completed (with its tokens and the model's latency over every call, the
/// repair call when one was made, and `ReportsNeedingReview` when the stored report carries a
/// critical finding; dimensions Stage and Function) or failed, by error kind (a third
/// dimension, `ErrorKind`, a fixed word).
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
            if usage.repair_calls > 0 {
                m.add(Metric::ReportRepairCalls, usage.repair_calls as f64);
            }
            if usage.needs_review {
                m.add(Metric::ReportsNeedingReview, 1.0);
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
    use sophia_reports::report::{Recommendation, ReportSource};

    use super::*;

    #[test]
    fn a_completed_report_counts_its_tokens_and_a_failure_its_kind() {
        let usage = Usage {
            prompt_tokens: 6_000,
            cached_tokens: 1_152,
            completion_tokens: 900,
            latency_ms: 4_200,
            repair_calls: 0,
            needs_review: false,
        };
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
        assert!(doc.get("ReportRepairCalls").is_none() && doc.get("ReportsNeedingReview").is_none(), "{doc}");

        let rule = Ok(Generated::Completed {
            recommendation: Recommendation::InsufficientEvidence,
            source: ReportSource::InsufficientEvidenceRule,
            attempt: 1,
            usage: Usage::default(),
        });
        let doc = report_metrics(&rule).to_emf(0);
        assert_eq!(doc["ReportsCompleted"], 1.0);
        assert!(doc.get("PromptTokens").is_none(), "no model call, no tokens");

        // A repaired report, and one still carrying a critical finding after its repair: both
        // counted on the completed line, with the dimensions [Stage, Function] only.
        for (needs_review, review_count) in [(false, None), (true, Some(1.0))] {
            let repaired = Ok(Generated::Completed {
                recommendation: Recommendation::Hire,
                source: ReportSource::Model,
                attempt: 1,
                usage: Usage { repair_calls: 1, needs_review, ..usage },
            });
            let doc = report_metrics(&repaired).to_emf(0);
            assert_eq!(doc["ReportRepairCalls"], 1.0);
            assert_eq!(doc.get("ReportsNeedingReview").and_then(|v| v.as_f64()), review_count);
            let dimensions = &doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"];
            assert_eq!(dimensions.to_string(), r#"[["Stage","Function"]]"#);
            let units: Vec<_> = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["Name"] == "ReportRepairCalls" || m["Name"] == "ReportsNeedingReview")
                .map(|m| m["Unit"].as_str().unwrap().to_owned())
                .collect();
            assert!(!units.is_empty() && units.iter().all(|u| u == "Count"), "{units:?}");
        }

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
