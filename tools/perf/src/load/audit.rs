//! The audit of a run: settled exactly once (per interview `SETTLE` entries ≤ its lots, no
//! duplicate ledger key, `credits.consumed` = `SETTLE` sum = the expected bill, `RESERVE` =
//! `SETTLE` + `RELEASE` + `FORFEIT`), exactly one report per completed interview and none for
//! failed ones, both DLQs empty, no pending outbox entry, no interview written by a malformed
//! body, `invariants::check_all` empty; then the run's figures from what it found.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

use bson::oid::ObjectId;
use bson::{Document, doc};
use futures::TryStreamExt;
use sophia_credits::model::{LedgerEntry, OutboxEntry, OutboxStatus, ReferenceKind};
use sophia_credits::{CreditsStore, invariants};

use sophia_local::runner::Runner;

use super::LoadError;
use super::figures::Figures;
use super::mix::Mix;
use super::queue_depth::queue_depth;
use super::report::LoadReport;
use super::seed::Planned;

/// What the interview documents say: when each was settled, what each consumed.
struct InterviewStates {
    settled_at: HashMap<ObjectId, SystemTime>,
    consumed: HashMap<ObjectId, i64>,
}

/// The terminal reports found, and when each planned interview's report was done.
#[derive(Default)]
struct ReportCounts {
    completed: usize,
    failed: usize,
    insufficient: usize,
    done_at: HashMap<ObjectId, SystemTime>,
}

/// Audits the run and takes its figures; the run's settings (mix, pollers, seed and publish times)
/// are left for `drive` to fill in.
pub(super) async fn audit(
    runner: &Runner,
    store: &CreditsStore,
    planned: &[Planned],
    published_at: &HashMap<usize, SystemTime>,
    first_publish: SystemTime,
) -> Result<LoadReport, LoadError> {
    let mut violations = Vec::new();
    let db = &runner.mongo.db;
    let states = interview_states(db, planned, &mut violations).await?;
    let ledger_entries = check_ledger(store, planned, &states, &mut violations).await?;
    let reports = check_reports(db, planned, &mut violations).await?;
    check_outbox(store, planned, &mut violations).await?;
    check_dlqs(runner, &mut violations).await;
    for v in invariants::check_all(store).await? {
        violations.push(format!("invariant: {v}"));
    }
    let figures = Figures::of(planned, published_at, &states.settled_at, &reports.done_at, first_publish);
    let settled = states.settled_at.len();
    Ok(LoadReport {
        mix: Mix::of(0),
        orgs: 0,
        pollers: 0,
        settle_pollers: 0,
        settle_concurrency: 0,
        seed_seconds: 0.0,
        publish_seconds: 0.0,
        settle_seconds: figures.settle_seconds,
        report_seconds: figures.report_seconds,
        settled_per_second: settled as f64 / figures.settle_seconds.max(1e-9),
        messages_per_second: 0.0,
        settle_latency: figures.settle_latency,
        report_latency: figures.report_latency,
        settled,
        reports_completed: reports.completed,
        reports_failed: reports.failed,
        insufficient_evidence_reports: reports.insufficient,
        ledger_entries,
        esm: Vec::new(),
        receive_counts: Vec::new(),
        timeline: figures.timeline,
        violations,
        timed_out: false,
    })
}

/// Interviews: as many as seeded (a malformed body wrote none), settled, consumed.
async fn interview_states(
    db: &mongodb::Database,
    planned: &[Planned],
    violations: &mut Vec<String>,
) -> Result<InterviewStates, LoadError> {
    let docs: Vec<Document> = db
        .collection::<Document>("interviews")
        .find(doc! {})
        .projection(doc! {"_id": 1, "settledAt": 1, "credits": 1})
        .await?
        .try_collect()
        .await?;
    if docs.len() != planned.len() {
        violations.push(format!(
            "{} interview documents, {} seeded (a malformed body wrote something?)",
            docs.len(),
            planned.len()
        ));
    }
    let mut settled_at: HashMap<ObjectId, SystemTime> = HashMap::new();
    let mut consumed: HashMap<ObjectId, i64> = HashMap::new();
    for d in &docs {
        let Ok(id) = d.get_object_id("_id") else { continue };
        if let Ok(t) = d.get_datetime("settledAt") {
            settled_at.insert(id, t.to_system_time());
        }
        if let Some(c) = d.get_document("credits").ok().and_then(|c| c.get("consumed")) {
            // -1: not an integer (never matches a bill).
            let v = sophia_documents::int::from_bson(c).unwrap_or(-1);
            consumed.insert(id, v);
        }
    }
    Ok(InterviewStates { settled_at, consumed })
}

/// Ledger: keys unique, and per interview the sums a single settlement leaves. The number of
/// entries.
async fn check_ledger(
    store: &CreditsStore,
    planned: &[Planned],
    states: &InterviewStates,
    violations: &mut Vec<String>,
) -> Result<usize, LoadError> {
    let ledger: Vec<LedgerEntry> = store.ledger().find(doc! {}).await?.try_collect().await?;
    let mut keys = HashSet::new();
    let mut sums: HashMap<ObjectId, BTreeMap<&'static str, (i64, usize)>> = HashMap::new();
    for e in &ledger {
        if !keys.insert((e.reference.kind, e.reference.id, e.kind.as_str(), e.lot_id)) {
            violations.push(format!(
                "duplicate ledger key {:?} {} {} lot {}",
                e.reference.kind,
                e.reference.id,
                e.kind.as_str(),
                e.lot_id
            ));
        }
        if e.reference.kind == ReferenceKind::Interview {
            let s = sums.entry(e.reference.id).or_default().entry(e.kind.as_str()).or_default();
            s.0 += e.amount;
            s.1 += 1;
        }
    }
    for p in planned {
        let sum = |k: &str| sums.get(&p.id).and_then(|m| m.get(k)).copied().unwrap_or_default();
        check_settlement(p, states, [sum("SETTLE"), sum("RELEASE"), sum("FORFEIT"), sum("RESERVE")], violations);
    }
    Ok(ledger.len())
}

/// One interview's settlement against its ledger sums (`[SETTLE, RELEASE, FORFEIT, RESERVE]`,
/// each `(credits, entries)`).
fn check_settlement(p: &Planned, states: &InterviewStates, sums: [(i64, usize); 4], violations: &mut Vec<String>) {
    let [settle, release, forfeit, reserve] = sums;
    if !states.settled_at.contains_key(&p.id) {
        violations.push(format!("interview {} not settled", p.id));
        return;
    }
    if settle.1 > p.lots || release.1 > p.lots || forfeit.1 > p.lots {
        violations.push(format!(
            "interview {}: {} SETTLE / {} RELEASE / {} FORFEIT entries for {} lots",
            p.id, settle.1, release.1, forfeit.1, p.lots
        ));
    }
    if reserve.0 != p.reserved || reserve.0 != settle.0 + release.0 + forfeit.0 {
        violations.push(format!(
            "interview {}: RESERVE {} != SETTLE {} + RELEASE {} + FORFEIT {} (reserved {})",
            p.id, reserve.0, settle.0, release.0, forfeit.0, p.reserved
        ));
    }
    let stored = states.consumed.get(&p.id).copied();
    if stored != Some(settle.0) || settle.0 != p.expected_consumed() {
        violations.push(format!(
            "interview {}: credits.consumed {:?}, SETTLE sum {}, expected {}",
            p.id,
            stored,
            settle.0,
            p.expected_consumed()
        ));
    }
}

/// Reports: exactly one, terminal, per completed interview; none for a failed one or an
/// interview that was not seeded.
async fn check_reports(
    db: &mongodb::Database,
    planned: &[Planned],
    violations: &mut Vec<String>,
) -> Result<ReportCounts, LoadError> {
    let by_id: HashMap<ObjectId, usize> = planned.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
    let report_docs: Vec<Document> =
        db.collection::<Document>("interviewReports").find(doc! {}).await?.try_collect().await?;
    let mut per_interview: HashMap<ObjectId, Vec<&Document>> = HashMap::new();
    for r in &report_docs {
        if let Ok(id) = r.get_object_id("interviewId") {
            per_interview.entry(id).or_default().push(r);
        }
    }
    let mut counts = ReportCounts::default();
    for p in planned {
        let found = per_interview.get(&p.id).map(Vec::as_slice).unwrap_or_default();
        match p.duration {
            None if !found.is_empty() => {
                violations.push(format!("failed interview {} has {} report(s)", p.id, found.len()))
            }
            None => {}
            Some(_) if found.len() != 1 => {
                violations.push(format!("completed interview {} has {} reports", p.id, found.len()))
            }
            Some(_) => count_report(p, found[0], &mut counts, violations),
        }
    }
    for id in per_interview.keys() {
        if !by_id.contains_key(id) {
            violations.push(format!("a report for an unknown interview {id}"));
        }
    }
    Ok(counts)
}

/// The one report of a completed interview: its terminal status, its recommendation, when done.
fn count_report(p: &Planned, r: &Document, counts: &mut ReportCounts, violations: &mut Vec<String>) {
    match r.get_str("status").unwrap_or("") {
        "COMPLETED" => counts.completed += 1,
        "FAILED" => counts.failed += 1,
        other => violations.push(format!("report of {} is {other:?}, not terminal", p.id)),
    }
    let rec = r
        .get_document("report")
        .ok()
        .and_then(|x| x.get_str("recommendation").ok())
        .or_else(|| r.get_str("recommendation").ok());
    if rec == Some("insufficient_evidence") {
        counts.insufficient += 1;
    }
    if let Ok(t) = r.get_datetime("completedAt").or_else(|_| r.get_datetime("updatedAt")) {
        counts.done_at.insert(p.id, t.to_system_time());
    }
}

/// Outbox: nothing still PENDING, one entry per completed interview.
async fn check_outbox(
    store: &CreditsStore,
    planned: &[Planned],
    violations: &mut Vec<String>,
) -> Result<(), LoadError> {
    let outbox: Vec<OutboxEntry> = store.outbox().find(doc! {}).await?.try_collect().await?;
    let pending = outbox.iter().filter(|e| e.status == OutboxStatus::Pending).count();
    if pending > 0 {
        violations.push(format!("{pending} outbox entries still PENDING"));
    }
    let completed_count = planned.iter().filter(|p| p.duration.is_some()).count();
    if outbox.len() != completed_count {
        violations.push(format!("{} outbox entries for {completed_count} completed interviews", outbox.len()));
    }
    Ok(())
}

/// Both DLQs empty: a malformed body is dropped, not retried into a DLQ.
async fn check_dlqs(runner: &Runner, violations: &mut Vec<String>) {
    for (name, key) in
        [("interview-completed-dlq", "INTERVIEW_COMPLETED_DLQ_URL"), ("report-generate-dlq", "REPORT_GENERATE_DLQ_URL")]
    {
        if let Some(url) = runner.env().get(key) {
            let n = queue_depth(&runner.sqs, url).await;
            if n != 0 {
                violations.push(format!(
                    "DLQ {name} holds {n} message(s); expected none (malformed bodies are dropped, not retried)"
                ));
            }
        }
    }
}
