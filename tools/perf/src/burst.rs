//! The burst and outage scenarios of `scripts/load-test` (`sophia-load --burst`): report
//! generation for two organizations through the local SQS, with the OpenAI fake answering with a
//! realistic latency and a tokens-per-minute limit, and optionally a provider outage first.
//!
//! - **Burst**: one organization publishes `busy` report requests at once, a quiet one `quiet`
//!   right after; `concurrency` report-generate instances (the event source mapping's maximum
//!   concurrency) work the queue. Printed: each organization's report dwell time (publish to
//!   `COMPLETED`: p50, p95, max) and every report that ran out of attempts.
//! - **Outage**: the fake answers HTTP 500 to everything (its standing fault) for `outage`, then
//!   recovers. Printed: when each report completed after the recovery, how many ended FAILED,
//!   what is in the DLQ, and the attempts each report used.
//!
//! Time is scaled by `time_scale`: the fake's latency and its rate-limit window, the consumer's
//! backoffs, requeue delay and give-up age are divided by it, and the figures are multiplied
//! back (what they would be at scale 1). Work that is not scaled (the local SQS's polling, the
//! MongoDB writes on nx-27017) is multiplied too, so the scaled figures are upper bounds.
//!
//! The pipeline is the production handler and wrapper: `report_generate::ReportGenerateHandler`
//! with the report queue's consumer options (backoff, requeue, the queue reached over SQS), the
//! event-source-mapping emulator of `sophia_local`, fauxqs and nx-27017. Only report generation
//! runs: the interviews are written as settled, and `report.generate` is published as the
//! settlement's outbox publisher publishes it (with `MessageGroupId` = the organization). fauxqs
//! delivers a standard queue in arrival order and does not implement fair queues: the figures
//! are what a queue without fairness gives; on AWS, fair queues let the quiet organization's
//! messages go ahead of the busy one's backlog (docs/design.md, "Tenant fairness").

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bson::{Document, doc};
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use sophia_contracts::{OrganizationId, ReportGenerate, RequestId};
use sophia_declarations::Declaration;
use sophia_local::esm::EventSourceMapping;
use sophia_local::invoke::Instances;
use sophia_local::queues::{QueueOverrides, create_queue_set_with};
use sophia_local::servers::{free_port, start_fauxqs, start_nx_mongo};
use sophia_openai_fake::{FakeOpenAi, Fault, Latency, TokenLimit};
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_reports::fixtures::InterviewFixture;
use sophia_reports::{OpenAiSettings, ReportModel, ReportService};
use sophia_sqs_consumer::backoff::Requeue;
use sophia_sqs_consumer::queue::SqsRecordQueue;
use sophia_sqs_consumer::{BoxError, ConsumerOptions};
use sophia_sqs_producer::{Queue, QueueUrls, SqsProducer};

#[derive(Debug, Clone)]
pub struct BurstOptions {
    /// Reports of the busy organization.
    pub busy: usize,
    /// Reports of the quiet organization, published right after the busy one's.
    pub quiet: usize,
    /// report-generate instances (the event source mapping's maximum concurrency).
    pub concurrency: usize,
    /// The fake's typical answer time (at scale 1).
    pub latency: Duration,
    /// The fake's tokens-per-minute limit (`None`: none).
    pub tokens_per_minute: Option<u64>,
    /// Divides every duration (see the module docs).
    pub time_scale: u32,
    /// A provider outage (HTTP 500 to everything) from the start, this long (at scale 1).
    pub outage: Option<Duration>,
    /// Overall bound on the run (real time).
    pub timeout: Duration,
}

impl Default for BurstOptions {
    fn default() -> Self {
        Self {
            busy: 1_000,
            quiet: 10,
            concurrency: 2,
            latency: Latency::realistic().typical,
            tokens_per_minute: Some(200_000),
            time_scale: 30,
            outage: None,
            timeout: Duration::from_secs(3 * 3600),
        }
    }
}

/// Dwell times of one organization's reports (scale-1 seconds).
#[derive(Debug, Clone, Serialize)]
pub struct Dwell {
    pub organization: String,
    pub reports: usize,
    pub completed: usize,
    pub p50_s: f64,
    pub p95_s: f64,
    pub max_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BurstReport {
    pub options: String,
    pub dwell: Vec<Dwell>,
    /// Reports FAILED at their last attempt (interview ids).
    pub out_of_attempts: Vec<String>,
    /// Reports not COMPLETED at the end.
    pub not_completed: usize,
    /// Attempts used by completed reports: attempts -> reports.
    pub attempts: BTreeMap<i64, usize>,
    /// Records delivered by receive count (the mapping's statistics).
    pub receive_counts: BTreeMap<u32, u64>,
    /// Messages in the report DLQ at the end.
    pub dlq: i64,
    /// Requests the fake answered 429 (over the token limit) or with the outage's 500.
    pub model_requests: usize,
    /// With an outage: seconds (scale 1) from the recovery to each report's completion: max and p95.
    pub after_recovery_max_s: Option<f64>,
    pub after_recovery_p95_s: Option<f64>,
    pub real_seconds: f64,
}

impl BurstReport {
    /// No report out of attempts or left incomplete, the DLQ empty.
    pub fn ok(&self) -> bool {
        self.out_of_attempts.is_empty() && self.not_completed == 0 && self.dlq == 0
    }
}

impl fmt::Display for BurstReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "burst: {}", self.options)?;
        for d in &self.dwell {
            writeln!(
                f,
                "  {:<6} {:>5} reports, {:>5} completed; dwell p50 {:>8.0} s, p95 {:>8.0} s, max {:>8.0} s",
                d.organization, d.reports, d.completed, d.p50_s, d.p95_s, d.max_s
            )?;
        }
        if let (Some(max), Some(p95)) = (self.after_recovery_max_s, self.after_recovery_p95_s) {
            writeln!(f, "  after the recovery: every completed report within {max:.0} s (p95 {p95:.0} s)")?;
        }
        for d in &self.dwell {
            writeln!(f, "  {:<6} {}", d.organization, dwell_against_level(d.p95_s))?;
        }
        writeln!(f, "  attempts used by completed reports: {:?}", self.attempts)?;
        writeln!(f, "  records by receive count: {:?}", self.receive_counts)?;
        writeln!(
            f,
            "  model requests: {}; report DLQ: {}; not completed: {}",
            self.model_requests, self.dlq, self.not_completed
        )?;
        if self.out_of_attempts.is_empty() {
            writeln!(f, "  out of attempts: none")?;
        } else {
            writeln!(f, "  OUT OF ATTEMPTS ({}): {}", self.out_of_attempts.len(), self.out_of_attempts.join(", "))?;
        }
        write!(f, "  real time: {:.1} s", self.real_seconds)
    }
}

/// A dwell p95 (publish to COMPLETED, scale-1 seconds: the time to report of a report whose
/// interview ended at its publish) against the declared time-to-report service level.
pub fn dwell_against_level(p95_s: f64) -> String {
    use sophia_sqs_consumer::metrics::{Declaration, Metric};
    match Declaration::embedded().service_level(Metric::TimeToReportMs) {
        Some(level) if p95_s.is_finite() => format!(
            "time to report p95 {p95_s:.0} s against the level {}: {}",
            level.human(),
            if level.met_by(p95_s * 1000.0) { "met" } else { "MISSED" }
        ),
        Some(level) => format!("time to report: no report completed (level {})", level.human()),
        None => "time to report: no service level declared".into(),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs the scenario (see the module docs).
pub async fn run(options: &BurstOptions) -> Result<BurstReport, BoxError> {
    let started = Instant::now();
    let scale = options.time_scale.max(1);
    let mut fauxqs = start_fauxqs(free_port())?;
    let mut nx = start_nx_mongo(free_port())?;
    let decl = Declaration::embedded();
    let sqs = sophia_platform::sqs::local_client(&fauxqs.url());
    let queues = create_queue_set_with(&sqs, "burst", decl, &QueueOverrides::default()).await?;
    let settings = MongoSettings {
        uri: nx.url(),
        database: "sophia_burst".to_owned(),
        server_selection_timeout: Duration::from_secs(5),
        allow_standalone: true,
    };
    let mongo = Mongo::connect(&settings).await?;
    sophia_reports::migrations::apply(&mongo.db).await?;

    let fake = FakeOpenAi::deterministic()?;
    fake.set_latency(Some(Latency { typical: options.latency / scale, jitter: 0.25 }));
    if let Some(tpm) = options.tokens_per_minute {
        fake.set_token_limit(Some(TokenLimit { tokens_per_window: tpm, window: Duration::from_secs(60) / scale }));
    }
    if options.outage.is_some() {
        fake.set_fault(Some(Fault::ServerError));
    }

    // The production handler with the report queue's consumer options, scaled.
    let (endpoint, openai) = (fauxqs.url(), OpenAiSettings::for_endpoint(fake.base_url(), "gpt-4.1-mini"));
    let instances = Instances::spawn(
        "report-generate",
        options.concurrency,
        move || {
            let (settings, endpoint, openai) = (settings.clone(), endpoint.clone(), openai.clone());
            async move {
                let mongo = Mongo::connect(&settings).await?;
                let mut consumer = ConsumerOptions::for_queue("reportGenerate").with_queue(Arc::new(
                    SqsRecordQueue::with_client(sophia_platform::sqs::local_client(&endpoint), Some(endpoint.clone())),
                ));
                consumer.backoff = consumer.backoff.with_requeue(Requeue::default());
                consumer.backoff.time_scale = scale;
                let service = ReportService::new(mongo.db.clone(), ReportModel::new(&openai));
                Ok::<_, BoxError>(report_generate::ReportGenerateHandler::with_service(mongo, service, consumer))
            }
        },
        |h, event| Box::pin(async move { h.handle(event).await.map_err(|e| -> BoxError { Box::new(e) }) }),
    )?;
    let esm = EventSourceMapping::declared(
        sqs.clone(),
        queues.report_generate.source.clone(),
        Queue::ReportGenerate.settings(),
        decl,
        Arc::new(instances),
    );
    let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
    let pollers: Vec<_> =
        (0..options.concurrency).map(|_| tokio::spawn(esm.clone().run(shutdown_rx.clone()))).collect();

    // The interviews, then their report.generate: the busy organization's first, all at once.
    let (busy, quiet) =
        (OrganizationId::new(bson::oid::ObjectId::new()), OrganizationId::new(bson::oid::ObjectId::new()));
    let mut published: Vec<(String, OrganizationId, SystemTime)> = Vec::new();
    let producer = SqsProducer::new(
        sqs.clone(),
        QueueUrls::default().with(Queue::ReportGenerate, queues.report_generate.source.url.clone()),
    );
    for (org, n) in [(busy, options.busy), (quiet, options.quiet)] {
        let fixtures: Vec<InterviewFixture> = (0..n).map(|_| InterviewFixture::new(org)).collect();
        let docs: Vec<Document> = fixtures.iter().map(|f| f.document().clone()).collect();
        for chunk in docs.chunks(500) {
            mongo.db.collection::<Document>("interviews").insert_many(chunk.to_vec()).await?;
        }
        let sends = fixtures.iter().map(|f| {
            let message = ReportGenerate { interview_id: f.interview_id(), organization_id: org };
            let producer = producer.clone();
            async move {
                producer.publish_report_generate(&message, &RequestId::settlement(message.interview_id)).await?;
                Ok::<_, BoxError>((message.interview_id.to_string(), org, SystemTime::now()))
            }
        });
        let sent: Vec<_> = futures::stream::iter(sends).buffer_unordered(32).try_collect().await?;
        published.extend(sent);
    }

    // The outage ends after its (scaled) length.
    let mut recovered_at: Option<SystemTime> = None;
    let outage_end = options.outage.map(|o| started + o / scale);
    let total = published.len();
    let mut reports: Vec<Document>;
    loop {
        if let Some(end) = outage_end
            && recovered_at.is_none()
            && Instant::now() >= end
        {
            fake.set_fault(None);
            recovered_at = Some(SystemTime::now());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        reports = mongo.db.collection::<Document>("interviewReports").find(doc! {}).await?.try_collect().await?;
        let terminal = reports
            .iter()
            .filter(|r| {
                let status = r.get_str("status").unwrap_or_default();
                status == "COMPLETED" || (status == "FAILED" && is_out_of_attempts(r))
            })
            .count();
        if (terminal == total && (outage_end.is_none() || recovered_at.is_some()))
            || started.elapsed() > options.timeout
        {
            break;
        }
    }
    let _ = shutdown.send(true);
    for p in pollers {
        let _ = p.await;
    }

    let scaled = |d: Duration| d.as_secs_f64() * f64::from(scale);
    let by_interview: BTreeMap<String, &Document> =
        reports.iter().filter_map(|r| r.get_object_id("interviewId").ok().map(|id| (id.to_hex(), r))).collect();
    let completed_at = |r: &Document| r.get_datetime("completedAt").ok().map(|d| d.to_system_time());
    let mut dwell = Vec::new();
    for (name, org) in [("busy", busy), ("quiet", quiet)] {
        let mine: Vec<_> = published.iter().filter(|(_, o, _)| *o == org).collect();
        let mut times: Vec<f64> = mine
            .iter()
            .filter_map(|(id, _, sent)| {
                let r = by_interview.get(id)?;
                (r.get_str("status").ok()? == "COMPLETED")
                    .then(|| completed_at(r))
                    .flatten()
                    .map(|done| scaled(done.duration_since(*sent).unwrap_or_default()))
            })
            .collect();
        times.sort_by(f64::total_cmp);
        dwell.push(Dwell {
            organization: name.to_owned(),
            reports: mine.len(),
            completed: times.len(),
            p50_s: percentile(&times, 0.5),
            p95_s: percentile(&times, 0.95),
            max_s: times.last().copied().unwrap_or(f64::NAN),
        });
    }
    let mut after: Vec<f64> = match recovered_at {
        Some(at) => reports
            .iter()
            .filter_map(completed_at)
            .map(|done| scaled(done.duration_since(at).unwrap_or_default()))
            .collect(),
        None => Vec::new(),
    };
    after.sort_by(f64::total_cmp);
    let out_of_attempts: Vec<String> = reports
        .iter()
        .filter(|r| r.get_str("status").ok() == Some("FAILED") && is_out_of_attempts(r))
        .filter_map(|r| r.get_object_id("interviewId").ok().map(|id| id.to_hex()))
        .collect();
    let mut attempts = BTreeMap::new();
    for r in reports.iter().filter(|r| r.get_str("status").ok() == Some("COMPLETED")) {
        *attempts.entry(attempt_count(r).unwrap_or(UNREADABLE)).or_default() += 1;
    }
    let completed = reports.iter().filter(|r| r.get_str("status").ok() == Some("COMPLETED")).count();
    let dlq = sqs
        .get_queue_attributes()
        .queue_url(&queues.report_generate.dlq.url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .ok()
        .and_then(|a| {
            a.attributes?.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)?.parse().ok()
        })
        .unwrap_or(-1);
    let report = BurstReport {
        options: format!(
            "{} + {} reports, concurrency {}, latency {:?}, TPM {:?}, outage {:?}, time scale {}",
            options.busy,
            options.quiet,
            options.concurrency,
            options.latency,
            options.tokens_per_minute,
            options.outage,
            scale
        ),
        dwell,
        out_of_attempts,
        not_completed: total - completed,
        attempts,
        receive_counts: esm.stats.receive_counts(),
        dlq,
        model_requests: fake.request_count(),
        after_recovery_max_s: recovered_at.map(|_| after.last().copied().unwrap_or(0.0)),
        after_recovery_p95_s: recovered_at.map(|_| percentile(&after, 0.95)),
        real_seconds: started.elapsed().as_secs_f64(),
    };
    fauxqs.stop();
    nx.stop();
    Ok(report)
}

/// The attempts key of a report whose `attemptCount` is not an integer (a fractional double is
/// refused, not truncated): shown as its own line of the histogram.
const UNREADABLE: i64 = -1;

/// A report's `attemptCount` (absent: 0), any integral numeric.
fn attempt_count(d: &Document) -> Result<i64, sophia_documents::int::NotAnInteger> {
    sophia_documents::int::at(d, "attemptCount").unwrap_or(Ok(0))
}

fn is_out_of_attempts(d: &Document) -> bool {
    attempt_count(d).is_ok_and(|n| n >= i64::from(sophia_reports::store::MAX_ATTEMPTS))
}
