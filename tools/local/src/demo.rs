//! The demo: one organization, a handful of interviews that cover the paths of the pipelines (docs/design.md), their
//! events published through the real producers, and a readable summary read back from MongoDB and
//! the queues, with each outcome checked against what docs/design.md says should happen.
//!
//! | scenario | what is published | expected |
//! | --- | --- | --- |
//! | `long` | `interview.completed`, 754 s | 12 credits consumed, 8 released, report COMPLETED by the model |
//! | `short` | `interview.completed`, 45 s | 0 consumed, all released, report `insufficient_evidence`, no model call |
//! | `failed` | `interview.failed` | 0 consumed, all released, no report |
//! | `expired-lot` | `interview.completed`, 120 s, its lot expired meanwhile | 2 consumed, the rest forfeited, lot EXPIRED |
//! | `soft-deleted` | `interview.completed`, 300 s, interview soft-deleted | settled (billing is owed), no report |
//! | `duplicate` | `interview.completed` three times | settled once, one report |
//! | `malformed` | a body with a bad ObjectId | dropped with an error log; nothing written, not in the DLQ |

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_sqs::Client;
use bson::{Document, doc};
use futures::TryStreamExt;
use serde::Serialize;
use sophia_contracts::{DurationSeconds, EventType, InterviewId, OrganizationId, RequestId, Timestamp};
use sophia_credits::model::LedgerEntry;
use sophia_credits::{CreditsStore, invariants, seed};
use sophia_platform::mongo::Mongo;
use sophia_sqs_producer::{CompletedInput, FailedInput, Queue, QueueUrls, SqsProducer};

/// How long the demo waits for the pipeline to reach the expected state.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("credits: {0}")]
    Credits(#[from] sophia_credits::CreditsError),
    #[error("MongoDB: {0}")]
    Mongo(#[from] mongodb::error::Error),
    #[error("publish: {0}")]
    Publish(#[from] sophia_sqs_producer::PublishError),
    #[error("{0}")]
    Setup(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    Long,
    Short,
    Failed,
    ExpiredLot,
    SoftDeleted,
    Duplicate,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Self::Long => "long",
            Self::Short => "short",
            Self::Failed => "failed",
            Self::ExpiredLot => "expired-lot",
            Self::SoftDeleted => "soft-deleted",
            Self::Duplicate => "duplicate",
        }
    }
    /// (reserved, duration seconds or None for a failed interview)
    fn plan(self) -> (i64, Option<u64>) {
        match self {
            Self::Long => (20, Some(754)),
            Self::Short => (5, Some(45)),
            Self::Failed => (10, None),
            Self::ExpiredLot => (5, Some(120)),
            Self::SoftDeleted => (5, Some(300)),
            Self::Duplicate => (10, Some(600)),
        }
    }
    /// (consumed, released, forfeited, report expected, report recommendation if fixed)
    fn expected(self) -> (i64, i64, i64, Option<ExpectedReport>) {
        match self {
            Self::Long => (12, 8, 0, Some(ExpectedReport::Model)),
            Self::Short => (0, 5, 0, Some(ExpectedReport::InsufficientEvidence)),
            Self::Failed => (0, 10, 0, None),
            Self::ExpiredLot => (2, 0, 3, Some(ExpectedReport::Model)),
            Self::SoftDeleted => (5, 0, 0, None),
            Self::Duplicate => (10, 0, 0, Some(ExpectedReport::Model)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedReport {
    Model,
    InsufficientEvidence,
}

#[derive(Debug, Clone, Serialize)]
pub struct LedgerLine {
    #[serde(rename = "type")]
    pub kind: String,
    pub lot: String,
    pub amount: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct InterviewSummary {
    pub scenario: Scenario,
    pub interview_id: String,
    pub published: usize,
    pub settled: bool,
    pub reserved: i64,
    pub consumed: i64,
    pub released: i64,
    pub forfeited: i64,
    pub ledger: Vec<LedgerLine>,
    pub report_status: Option<String>,
    pub report_recommendation: Option<String>,
    pub report_score: Option<i64>,
    pub report_model: Option<String>,
    pub report_attempts: Option<i64>,
    pub report_count: u64,
    pub expectation: String,
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct OrganizationSummary {
    pub organization_id: String,
    pub available: i64,
    pub reserved: i64,
    pub lots: Vec<(String, i64, i64, i64, String)>,
    pub invariant_violations: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DlqSummary {
    pub queue: String,
    pub messages: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    pub interviews: Vec<InterviewSummary>,
    pub malformed_dropped: bool,
    pub organization: OrganizationSummary,
    pub dlqs: Vec<DlqSummary>,
    pub waited_ms: u64,
    #[serde(skip)]
    first_report_at: Option<SystemTime>,
}

impl DemoReport {
    pub fn all_expectations_met(&self) -> bool {
        self.interviews.iter().all(|i| i.ok)
            && self.malformed_dropped
            && self.organization.invariant_violations.is_empty()
            && self.dlqs.iter().all(|d| d.messages.is_empty())
    }

    /// Time from `started` (the command's start) to the first stored report.
    pub fn first_report_after(&self, started: Instant) -> Duration {
        let started_at = SystemTime::now() - started.elapsed();
        self.first_report_at.and_then(|t| t.duration_since(started_at).ok()).unwrap_or_default()
    }
}

struct Seeded {
    scenario: Scenario,
    interview_id: InterviewId,
    published: usize,
}

/// Seeds, publishes, waits, and reads back. `env` is the runner's env map (queue URLs).
pub async fn run(mongo: &Mongo, sqs: &Client, env: &BTreeMap<String, String>) -> Result<DemoReport, DemoError> {
    let store = CreditsStore::new(mongo.db.clone());
    let producer = SqsProducer::new(sqs.clone(), QueueUrls::from_lookup(|name| env.get(name).cloned()));
    let now = chrono::Utc::now();
    let org = seed::create_organization(&store, &format!("Demo organization {}", now.format("%H:%M:%S"))).await?;
    // Reservation takes the lot that expires first: the short-lived lot goes to `expired-lot`,
    // which is reserved first and settled after the lot has expired.
    seed::grant_lot(&store, org, 5, now + chrono::Duration::seconds(2)).await?;
    seed::grant_lot(&store, org, 40, now + chrono::Duration::days(30)).await?;
    seed::grant_lot(&store, org, 30, now + chrono::Duration::days(365)).await?;
    let order = [
        Scenario::ExpiredLot,
        Scenario::Long,
        Scenario::Short,
        Scenario::Failed,
        Scenario::SoftDeleted,
        Scenario::Duplicate,
    ];
    let mut seeded = Vec::new();
    for scenario in order {
        let (reserve, _) = scenario.plan();
        let mut extra = transcript(scenario != Scenario::Short);
        if scenario == Scenario::SoftDeleted {
            extra.insert("deletedAt", bson::DateTime::now());
        }
        let interview_id = seed::reserved_interview(&mongo.client, &store, org, reserve, extra).await?;
        seeded.push(Seeded { scenario, interview_id, published: 0 });
    }
    // Let the short-lived lot expire before its interview is settled.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let started = Instant::now();
    for s in &mut seeded {
        let (_, duration) = s.scenario.plan();
        let copies = if s.scenario == Scenario::Duplicate { 3 } else { 1 };
        let request_id = RequestId::from_caller(Some(&format!("demo-{}", s.scenario.name())));
        for _ in 0..copies {
            match duration {
                Some(seconds) => {
                    let completed_at = Timestamp::now();
                    let duration_seconds = DurationSeconds::new(seconds);
                    seed::mark_completed(&store, s.interview_id, completed_at, duration_seconds.unwrap_or_default())
                        .await?;
                    producer
                        .publish_interview_completed(
                            CompletedInput {
                                interview_id: s.interview_id,
                                organization_id: org,
                                completed_at: Some(completed_at),
                                duration_seconds,
                            },
                            &request_id,
                        )
                        .await?;
                }
                None => {
                    let failed_at = Timestamp::now();
                    seed::mark_failed(&store, s.interview_id, failed_at).await?;
                    producer
                        .publish_interview_failed(
                            FailedInput {
                                interview_id: s.interview_id,
                                organization_id: org,
                                failure_reason: "bot could not join the call".into(),
                                failed_at: Some(failed_at),
                            },
                            &request_id,
                        )
                        .await?;
                }
            }
            s.published += 1;
        }
    }
    if producer.urls().get(Queue::InterviewCompleted).is_none() {
        return Err(DemoError::Setup("no interview queue URL".into()));
    }
    let malformed_id = InterviewId::new(bson::oid::ObjectId::new());
    producer
        .send(
            Queue::InterviewCompleted,
            &format!(r#"{{"interviewId":"{malformed_id}-not-an-id","organizationId":"{org}","completedAt":"yesterday","durationSeconds":-5}}"#),
            EventType::InterviewCompleted,
            &RequestId::from_caller(Some("demo-malformed")),
        )
        .await?;

    wait_until_done(mongo, &seeded).await?;
    let waited_ms = started.elapsed().as_millis() as u64;
    // Give a duplicate that is still in flight a moment to (not) write a second time.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut interviews = Vec::new();
    let mut first_report_at: Option<SystemTime> = None;
    for s in &seeded {
        let summary = summarise(mongo, &store, s).await?;
        interviews.push(summary);
    }
    for r in reports_of(mongo, &seeded).await? {
        if let Ok(t) = r.get_datetime("updatedAt").or_else(|_| r.get_datetime("completedAt")) {
            let t = t.to_system_time();
            first_report_at = Some(first_report_at.map_or(t, |f| f.min(t)));
        }
    }
    let malformed_dropped =
        count(&mongo.db.collection::<Document>("interviews"), doc! {"_id": malformed_id.oid()}).await? == 0;
    let organization = organization_summary(&store, org).await?;
    let mut dlqs = Vec::with_capacity(Queue::ALL.len());
    for queue in Queue::ALL {
        dlqs.push(peek_dlq(sqs, queue.dlq_name(), env.get(queue.dlq_url_env())).await);
    }
    Ok(DemoReport { interviews, malformed_dropped, organization, dlqs, waited_ms, first_report_at })
}

async fn reports_of(mongo: &Mongo, seeded: &[Seeded]) -> Result<Vec<Document>, DemoError> {
    let ids: Vec<bson::oid::ObjectId> = seeded.iter().map(|s| s.interview_id.oid()).collect();
    Ok(mongo
        .db
        .collection::<Document>("interviewReports")
        .find(doc! {"interviewId": {"$in": ids}})
        .await?
        .try_collect()
        .await?)
}

/// Polls until every interview is settled and every expected report is in a final state.
async fn wait_until_done(mongo: &Mongo, seeded: &[Seeded]) -> Result<(), DemoError> {
    let interviews = mongo.db.collection::<Document>("interviews");
    let until = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let ids: Vec<bson::oid::ObjectId> = seeded.iter().map(|s| s.interview_id.oid()).collect();
        // find + count here, not count_documents: nx-27017's count path does not match ObjectIds.
        let settled = count(&interviews, doc! {"_id": {"$in": &ids}, "settledAt": {"$ne": null}}).await?;
        let expected_reports: Vec<bson::oid::ObjectId> =
            seeded.iter().filter(|s| s.scenario.expected().3.is_some()).map(|s| s.interview_id.oid()).collect();
        let done_reports = count(
            &mongo.db.collection::<Document>("interviewReports"),
            doc! {"interviewId": {"$in": &expected_reports}, "status": {"$in": ["COMPLETED", "FAILED"]}},
        )
        .await?;
        if settled as usize == seeded.len() && done_reports as usize == expected_reports.len() {
            return Ok(());
        }
        if Instant::now() > until {
            tracing::warn!(settled, done_reports, "the demo's wait timed out; reporting what is there");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn count(collection: &mongodb::Collection<Document>, filter: Document) -> Result<u64, DemoError> {
    let found: Vec<Document> = collection.find(filter).projection(doc! {"_id": 1}).await?.try_collect().await?;
    Ok(found.len() as u64)
}

/// An integer at a dotted path; `None` when absent or not an integer (a fractional double is
/// refused, not truncated).
fn int(d: &Document, path: &str) -> Option<i64> {
    sophia_documents::int::at(d, path)?.ok()
}

fn text(d: &Document, path: &str) -> Option<String> {
    let mut cur = d;
    let mut parts = path.split('.').peekable();
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            return cur.get_str(p).ok().map(str::to_owned);
        }
        cur = cur.get_document(p).ok()?;
    }
    None
}

async fn summarise(mongo: &Mongo, store: &CreditsStore, s: &Seeded) -> Result<InterviewSummary, DemoError> {
    let interview = mongo
        .db
        .collection::<Document>("interviews")
        .find_one(doc! {"_id": s.interview_id.oid()})
        .await?
        .unwrap_or_default();
    let ledger: Vec<LedgerEntry> =
        store.ledger().find(doc! {"reference.id": s.interview_id.oid()}).await?.try_collect().await?;
    let sum = |kind: &str| ledger.iter().filter(|e| e.kind.as_str() == kind).map(|e| e.amount).sum::<i64>();
    let reports: Vec<Document> = mongo
        .db
        .collection::<Document>("interviewReports")
        .find(doc! {"interviewId": s.interview_id.oid()})
        .await?
        .try_collect()
        .await?;
    let report = reports.first();
    let (consumed, released, forfeited) = (sum("SETTLE"), sum("RELEASE"), sum("FORFEIT"));
    let (exp_consumed, exp_released, exp_forfeited, exp_report) = s.scenario.expected();
    let recommendation = report.and_then(|r| text(r, "report.recommendation").or_else(|| text(r, "recommendation")));
    let status = report.and_then(|r| text(r, "status"));
    let report_ok = match exp_report {
        None => reports.is_empty(),
        Some(ExpectedReport::InsufficientEvidence) => {
            reports.len() == 1
                && status.as_deref() == Some("COMPLETED")
                && recommendation.as_deref() == Some("insufficient_evidence")
        }
        Some(ExpectedReport::Model) => {
            reports.len() == 1
                && status.as_deref() == Some("COMPLETED")
                && recommendation.as_deref().is_some_and(|r| r != "insufficient_evidence")
        }
    };
    let settled = interview.get("settledAt").is_some_and(|v| !matches!(v, bson::Bson::Null));
    let ok = settled && (consumed, released, forfeited) == (exp_consumed, exp_released, exp_forfeited) && report_ok;
    let expectation = format!(
        "consumed {exp_consumed}, released {exp_released}, forfeited {exp_forfeited}, {}",
        match exp_report {
            None => "no report",
            Some(ExpectedReport::Model) => "a model report",
            Some(ExpectedReport::InsufficientEvidence) => "an insufficient_evidence report",
        }
    );
    Ok(InterviewSummary {
        scenario: s.scenario,
        interview_id: s.interview_id.to_string(),
        published: s.published,
        settled,
        reserved: sum("RESERVE"),
        consumed,
        released,
        forfeited,
        ledger: ledger
            .iter()
            .map(|e| LedgerLine {
                kind: e.kind.as_str().to_owned(),
                lot: e.lot_id.to_hex()[18..].to_owned(),
                amount: e.amount,
            })
            .collect(),
        report_status: status,
        report_recommendation: recommendation,
        report_score: report.and_then(|r| int(r, "report.overallScore").or_else(|| int(r, "overallScore"))),
        report_model: report.and_then(|r| text(r, "generation.model").or_else(|| text(r, "metadata.model"))),
        report_attempts: report.and_then(|r| int(r, "attemptCount")),
        report_count: reports.len() as u64,
        expectation,
        ok,
    })
}

async fn organization_summary(store: &CreditsStore, org: OrganizationId) -> Result<OrganizationSummary, DemoError> {
    let o = store
        .organizations()
        .find_one(doc! {"_id": org.oid()})
        .await?
        .ok_or_else(|| DemoError::Setup("organization vanished".into()))?;
    let lots: Vec<_> = store.lots().find(doc! {"organizationId": org.oid()}).await?.try_collect().await?;
    let violations = invariants::check_organization(store, org.oid()).await?;
    Ok(OrganizationSummary {
        organization_id: org.to_string(),
        available: o.credits.available,
        reserved: o.credits.reserved,
        lots: lots
            .iter()
            .map(|l| {
                (
                    l.id.to_hex()[18..].to_owned(),
                    l.granted,
                    l.remaining,
                    l.reserved,
                    format!("{:?}", l.status).to_uppercase(),
                )
            })
            .collect(),
        invariant_violations: violations.iter().map(ToString::to_string).collect(),
    })
}

/// The bodies in a DLQ, without removing them (received with visibility 0).
async fn peek_dlq(sqs: &Client, name: &str, url: Option<&String>) -> DlqSummary {
    let mut messages = Vec::new();
    if let Some(url) = url
        && let Ok(out) = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .wait_time_seconds(0)
            .send()
            .await
    {
        messages = out.messages.unwrap_or_default().into_iter().filter_map(|m| m.body).collect();
    }
    DlqSummary { queue: name.to_owned(), messages }
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "\nSophia local demo — organization {}\n", self.organization.organization_id)?;
        for i in &self.interviews {
            writeln!(
                f,
                "{} {:<13} interview {}  published {}x  {}",
                if i.ok { "✔" } else { "✘" },
                i.scenario.name(),
                i.interview_id,
                i.published,
                if i.settled { "settled" } else { "NOT SETTLED" }
            )?;
            writeln!(
                f,
                "    credits: reserved {}, consumed {}, released {}, forfeited {}",
                i.reserved, i.consumed, i.released, i.forfeited
            )?;
            for l in &i.ledger {
                writeln!(f, "      ledger {:<8} lot …{} {:>4}", l.kind, l.lot, l.amount)?;
            }
            match &i.report_status {
                Some(status) => writeln!(
                    f,
                    "    report: {status}, recommendation {}, score {}, model {}, attempts {}{}",
                    i.report_recommendation.as_deref().unwrap_or("-"),
                    i.report_score.map_or("-".to_owned(), |s| s.to_string()),
                    i.report_model.as_deref().unwrap_or("-"),
                    i.report_attempts.unwrap_or(0),
                    if i.report_count > 1 { format!(" ({} reports!)", i.report_count) } else { String::new() }
                )?,
                None => writeln!(f, "    report: none")?,
            }
            writeln!(f, "    expected: {}", i.expectation)?;
        }
        writeln!(
            f,
            "{} malformed message dropped without writing anything",
            if self.malformed_dropped { "✔" } else { "✘" }
        )?;
        let o = &self.organization;
        writeln!(f, "\nOrganization balances: available {}, reserved {}", o.available, o.reserved)?;
        for (id, granted, remaining, reserved, status) in &o.lots {
            writeln!(f, "    lot …{id}: granted {granted}, remaining {remaining}, reserved {reserved}, {status}")?;
        }
        if o.invariant_violations.is_empty() {
            writeln!(f, "✔ all five credit invariants hold")?;
        } else {
            for v in &o.invariant_violations {
                writeln!(f, "✘ {v}")?;
            }
        }
        for d in &self.dlqs {
            writeln!(
                f,
                "{} DLQ {}: {} message(s)",
                if d.messages.is_empty() { "✔" } else { "✘" },
                d.queue,
                d.messages.len()
            )?;
            for m in &d.messages {
                writeln!(f, "      {m}")?;
            }
        }
        writeln!(f, "\nEverything settled and reported {:.1} s after publishing.", self.waited_ms as f64 / 1000.0)?;
        write!(
            f,
            "{}",
            if self.all_expectations_met() {
                "Demo: every outcome as expected."
            } else {
                "Demo: SOME OUTCOMES DIFFER FROM THE EXPECTATION (see ✘)."
            }
        )
    }
}

/// The interview fields report generation reads: a snapshot and a transcript whose candidate
/// answers are substantive (or one-word, for insufficient evidence).
pub fn transcript(substantive: bool) -> Document {
    let answer = |topic: &str| {
        if substantive {
            format!(
                "In my last role I owned the {topic}, measured it every week, and cut its cost by a third without losing reliability."
            )
        } else {
            "Yes.".to_owned()
        }
    };
    doc! {
        "snapshot": {
            "role": "Backend engineer",
            "skills": ["Rust", "Distributed systems"],
            "questions": ["Describe a system you scaled.", "How do you handle failures in queues?"],
            "resumeText": "Eight years building payment and messaging back ends in Rust and Go.",
        },
        "proctoring": {"transcript": [
            {"speaker": "interviewer", "text": "Describe a system you scaled."},
            {"speaker": "candidate", "text": answer("ingestion pipeline")},
            {"speaker": "interviewer", "text": "How do you handle failures in queues?"},
            {"speaker": "candidate", "text": answer("dead-letter queue process with redrive tooling")},
        ]},
    }
}
