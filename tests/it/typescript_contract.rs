//! The contract between the TypeScript API and the Rust consumers, across the language boundary
//! ([clients/typescript](../clients/typescript/README.md)). Both directions run the BUILT TypeScript package (`clients/typescript`,
//! imported by its package name as the API imports it):
//!
//! - forward: a scratch API project (`clients/typescript/scripts/scratch.mjs`: the PACKED tarball
//!   installed next to the project's own, older `@aws-sdk/client-sqs` and its own `mongodb`
//!   driver) publishes every kind of message with its own injected SQS client (0 and 59 seconds, a
//!   fractional duration, the longest duration the package publishes (a day: its own bound; the
//!   consumers accept up to 2^53 - 1, which `sophia-ops publish` sends in the reverse test), every
//!   optional field absent, failed interviews, a
//!   `report.generate`) and runs the admin retry of a FAILED report at 3 attempts (attempts reset
//!   with its driver, then a re-publish) into the local pipeline (`sophia_local::runner`,
//!   configured only through the variables the runner prints for the API); the Rust consumers
//!   settle them and generate the reports; MongoDB is checked;
//! - reverse: what `sophia-ops publish` and the settlement producer send, captured off fauxqs,
//!   passes the package's runtime validation, and the TypeScript and Rust verdicts agree on a body
//!   the consumer drops;
//! - the stored type: the reports the Rust consumer wrote, read by the scratch API's own driver,
//!   hold a Date and an ObjectId wherever the package's `StoredInterviewReportDocument` says so;
//! - the `failureReason` limit: both sides accept a reason at the limit and refuse one past it
//!   (the package before sending, the Rust parser on the wire), counting characters alike.
//!
//! Needs Node 20+ (`node`, `npm`) and the npm registry (or the npm cache) for the scratch
//! project's first install; installs the package (`npm ci`) when its node_modules is missing and
//! builds and packs it once per run. Without Node the tests FAIL with a message: they never pass
//! silently.

use crate::support::ops as ops_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use bson::{Document, doc};
use futures::TryStreamExt;
use sophia_contracts::{
    DurationSeconds, FAILURE_REASON_MAX_CHARS, InterviewId, InterviewQueueMessage, OrganizationId, QueueMessage,
    ReportGenerate,
};
use sophia_credits::{CreditsStore, seed};
use sophia_local::runner::{Runner, RunnerOptions};
use sophia_reports::fixtures::InterviewFixture;
use sophia_reports::store::ReportStore;

pub(crate) fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/typescript")
}

fn run_checked(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{what}: could not start ({e}). Node.js 20+ and npm are required for the TypeScript contract tests")
    });
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// `npm ci` when node_modules is missing, then `npm run build`, once per test binary.
pub(crate) fn built_package() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = package_dir();
        let version = run_checked(Command::new("node").arg("--version"), "node --version");
        let major: u32 =
            version.trim().trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
        assert!(major >= 20, "Node.js 20+ is required for the TypeScript contract tests, found {}", version.trim());
        if !dir.join("node_modules/.package-lock.json").is_file() {
            run_checked(
                Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&dir),
                "npm ci in clients/typescript",
            );
        }
        run_checked(Command::new("npm").args(["run", "build", "--silent"]).current_dir(&dir), "npm run build");
        dir
    })
}

/// The scratch API project with the packed tarball installed (`clients/typescript/scripts/scratch.mjs`: npm pack,
/// `npm ci` of its committed lockfile when it changed, the tarball, one SDK copy, tsc), once per
/// test binary: its directory and its own `@aws-sdk/client-sqs` version.
fn scratch_project() -> &'static (PathBuf, String) {
    static SCRATCH: OnceLock<(PathBuf, String)> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = built_package();
        // --prebuilt: the dist/ built_package() made (the other test reads it meanwhile).
        let out = run_checked(
            Command::new("node").arg(dir.join("scripts/scratch.mjs")).arg("--prebuilt").current_dir(dir),
            "scratch.mjs",
        );
        let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("scratch.mjs printed no JSON ({e}): {out}"));
        (PathBuf::from(last["dir"].as_str().unwrap()), last["sdk"].as_str().unwrap().to_owned())
    })
}

/// Runs one of the package's contract scripts with `env` added to this process's environment.
pub(crate) fn node_script(script: &str, args: &[&str], env: &BTreeMap<String, String>) -> serde_json::Value {
    let dir = built_package();
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("test/contract").join(script)).args(args).current_dir(dir).envs(env);
    let stdout = run_checked(&mut cmd, script);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {stdout}"))
}

/// One interview of the forward test: what the TypeScript side publishes and what must follow.
struct Case {
    name: &'static str,
    reserved: i64,
    /// The publish input's optional fields (`None`: absent) and the request id.
    duration: Option<f64>,
    failed: bool,
    with_anchor: bool,
    request_id: Option<&'static str>,
    consumed: i64,
    /// `None`: no report; `Some(true)`: insufficient_evidence; `Some(false)`: a model report.
    insufficient: Option<bool>,
}

const CASES: [Case; 7] = [
    Case {
        name: "zero",
        reserved: 5,
        duration: Some(0.0),
        failed: false,
        with_anchor: true,
        request_id: Some("ts-zero"),
        consumed: 0,
        insufficient: Some(true),
    },
    Case {
        name: "fifty-nine",
        reserved: 5,
        duration: Some(59.0),
        failed: false,
        with_anchor: true,
        request_id: Some("ts-59"),
        consumed: 0,
        insufficient: Some(true),
    },
    Case {
        name: "fractional",
        reserved: 20,
        duration: Some(754.5),
        failed: false,
        with_anchor: true,
        request_id: Some("ts-frac"),
        consumed: 12,
        insufficient: Some(false),
    },
    Case {
        name: "longest",
        reserved: 3,
        // DURATION_SECONDS_MAX_PUBLISHED: the package refuses more (a unit mistake).
        duration: Some(86_400.0),
        failed: false,
        with_anchor: true,
        request_id: Some("ts-max"),
        consumed: 3,
        insufficient: Some(false),
    },
    Case {
        name: "all-defaults",
        reserved: 4,
        duration: None,
        failed: false,
        with_anchor: false,
        request_id: None,
        consumed: 0,
        insufficient: Some(true),
    },
    Case {
        name: "failed",
        reserved: 10,
        duration: None,
        failed: true,
        with_anchor: true,
        request_id: Some("ts-failed"),
        consumed: 0,
        insufficient: None,
    },
    Case {
        name: "failed-defaults",
        reserved: 6,
        duration: None,
        failed: true,
        with_anchor: false,
        request_id: None,
        consumed: 0,
        insufficient: None,
    },
];

async fn found(db: &mongodb::Database, collection: &str, filter: Document) -> Vec<Document> {
    db.collection::<Document>(collection).find(filter).await.unwrap().try_collect().await.unwrap()
}

fn int(d: &Document, key: &str) -> i64 {
    match sophia_documents::int::at(d, key) {
        Some(Ok(n)) => n,
        other => panic!("{key}: {other:?} ({:?})", d.get(key)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_published_by_the_typescript_package_are_settled_and_reported_by_the_rust_consumers() {
    built_package();
    let options = RunnerOptions {
        env_file: None,
        database: harness::unique("ts").replace('-', "_"),
        queue_prefix: harness::unique("ts"),
        ..RunnerOptions::default()
    };
    let runner = Runner::start(options).await.expect("the local pipeline starts");
    let db = runner.mongo.db.clone();
    let store = CreditsStore::new(db.clone());
    let org = seed::create_organization(&store, "TypeScript contract").await.unwrap();
    seed::grant_lot(&store, org, 100, chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
    let mut ids: Vec<InterviewId> = Vec::new();
    for case in &CASES {
        let extra = sophia_local::demo::transcript(true);
        ids.push(seed::reserved_interview(&runner.mongo.client, &store, org, case.reserved, extra).await.unwrap());
    }
    // What the API writes before it publishes; the anchor is after every interview's createdAt.
    let anchor = sophia_contracts::Timestamp::now();
    let mut publishes = Vec::new();
    for (case, id) in CASES.iter().zip(&ids) {
        if case.failed {
            seed::mark_failed(&store, *id, anchor).await.unwrap();
        } else {
            let whole = DurationSeconds::from_secs_f64(case.duration.unwrap_or(0.0)).unwrap();
            seed::mark_completed(&store, *id, anchor, whole).await.unwrap();
        }
        let mut input = serde_json::json!({"interviewId": id.to_string(), "organizationId": org.to_string()});
        if case.failed {
            // "failed": a reason at the contract's limit (multi-byte characters count once), which
            // the package sends and the Rust consumer settles.
            input["failureReason"] = if case.name == "failed" {
                "é".repeat(FAILURE_REASON_MAX_CHARS).into()
            } else {
                "the bot could not join the call".into()
            };
        }
        if case.with_anchor {
            input[if case.failed { "failedAt" } else { "completedAt" }] = anchor.to_string().into();
        }
        if let Some(d) = case.duration {
            input["durationSeconds"] = serde_json::json!(d);
        }
        let mut c = serde_json::json!({"kind": if case.failed { "failed" } else { "completed" }, "input": input});
        if let Some(r) = case.request_id {
            c["requestId"] = r.into();
        }
        publishes.push(c);
    }

    // Two interviews outside the credits flow (another organization, already settled): one gets a
    // report.generate from the API, the other has a FAILED report at 3 attempts for the admin retry.
    let other = OrganizationId::new(bson::oid::ObjectId::new());
    let (fresh, _) = InterviewFixture::new(other).insert(&db).await.unwrap();
    let (exhausted, _) = InterviewFixture::new(other).insert(&db).await.unwrap();
    ReportStore::new(&db)
        .collection()
        .insert_one(doc! {
            "_id": bson::oid::ObjectId::new(), "interviewId": exhausted.oid(), "organizationId": other.oid(),
            "status": "FAILED", "attemptCount": 3_i32, "createdAt": bson::DateTime::now(), "updatedAt": bson::DateTime::now(),
        })
        .await
        .unwrap();
    let ids_of =
        |i: InterviewId| serde_json::json!({"interviewId": i.to_string(), "organizationId": other.to_string()});
    publishes.push(
        serde_json::json!({"kind": "report", "input": ids_of(fresh), "requestId": format!("settlement-{fresh}")}),
    );
    publishes.push(serde_json::json!({"kind": "retry", "input": ids_of(exhausted), "resetAttempts": false}));
    publishes.push(serde_json::json!({"kind": "retry", "input": ids_of(exhausted), "resetAttempts": true}));

    // Only what `sophia-local up` prints for the API: both queues the API publishes to.
    let env: BTreeMap<String, String> = sophia_local::runner::api_env(runner.env());
    for name in ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL", "AWS_ENDPOINT_URL_SQS"] {
        assert!(env.contains_key(name), "the API's environment has {name}");
    }
    let cases_json = serde_json::Value::from(publishes).to_string();
    let (scratch, sdk) = scratch_project();
    let mut cmd = Command::new("node");
    cmd.arg(scratch.join("publish-all.mjs")).arg(&cases_json).current_dir(scratch).envs(&env);
    let stdout = run_checked(&mut cmd, "the scratch API's publish-all.mjs");
    let out: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no JSON ({e}): {stdout}"));
    assert_eq!(&out["sdk"], sdk.as_str(), "published with the scratch project's own SDK");
    let results = out["results"].as_array().expect("one result per case");
    assert_eq!(results.len(), CASES.len() + 3);
    for (case, r) in CASES.iter().zip(results) {
        assert_eq!(r["status"], "sent", "{}: {r}", case.name);
    }
    assert_eq!(results[CASES.len()]["status"], "sent", "report.generate: {}", results[CASES.len()]);
    // The admin retry answers a result (kind, code, HTTP status), never throws one.
    assert_eq!(
        (&results[CASES.len() + 1]["kind"], &results[CASES.len() + 1]["httpStatus"]),
        (&"attempts-exhausted".into(), &409.into()),
        "{}",
        results[CASES.len() + 1]
    );
    let retried = &results[CASES.len() + 2];
    assert_eq!((&retried["kind"], &retried["attemptsReset"]), (&"queued".into(), &true.into()), "{retried}");
    assert_eq!(retried["requestId"], format!("admin-retry-{exhausted}"));
    let fractional: serde_json::Value = serde_json::from_str(results[2]["body"].as_str().unwrap()).unwrap();
    assert_eq!(fractional["durationSeconds"], 754.5, "the fraction travels as published");
    let defaults: serde_json::Value = serde_json::from_str(results[4]["body"].as_str().unwrap()).unwrap();
    assert_eq!(defaults["durationSeconds"], 0, "durationSeconds defaults to 0");

    // Wait for every settlement and every expected report to reach a final state.
    let oids: Vec<bson::oid::ObjectId> = ids.iter().map(|i| i.oid()).collect();
    let expected_reports = CASES.iter().filter(|c| c.insufficient.is_some()).count();
    let reserved: i64 = CASES.iter().map(|c| c.reserved).sum();
    let (settled, ledgered, reports, generated) = harness::wait::poll(
        Duration::from_secs(180),
        Duration::from_millis(300),
        || async {
            let settled =
                found(&db, "interviews", doc! {"_id": {"$in": &oids}, "settledAt": {"$ne": null}}).await.len();
            // nx-27017 has no transactions: `settledAt` can be visible before the ledger entries are.
            let ledgered: i64 = found(
                &db,
                "creditLedger",
                doc! {"reference.id": {"$in": &oids}, "type": {"$in": ["SETTLE", "RELEASE"]}},
            )
            .await
            .iter()
            .map(|e| int(e, "amount"))
            .sum();
            let reports = found(
                &db,
                "interviewReports",
                doc! {"interviewId": {"$in": &oids}, "status": {"$in": ["COMPLETED", "FAILED"]}},
            )
            .await
            .len();
            let generated = found(
                &db,
                "interviewReports",
                doc! {"interviewId": {"$in": [fresh.oid(), exhausted.oid()]}, "status": "COMPLETED"},
            )
            .await
            .len();
            (settled, ledgered, reports, generated)
        },
        |&(settled, ledgered, reports, generated)| {
            settled == CASES.len() && ledgered == reserved && reports == expected_reports && generated == 2
        },
    )
    .await;
    assert!(
        settled == CASES.len() && ledgered == reserved && reports == expected_reports && generated == 2,
        "not done after 180 s: {settled} settled, {ledgered} of {reserved} credits settled or released, {reports} reports, {generated} of the 2 API-triggered reports"
    );

    for (case, id) in CASES.iter().zip(&ids) {
        let ledger = found(&db, "creditLedger", doc! {"reference.id": id.oid()}).await;
        let sum =
            |kind: &str| ledger.iter().filter(|e| e.get_str("type") == Ok(kind)).map(|e| int(e, "amount")).sum::<i64>();
        assert_eq!(sum("SETTLE"), case.consumed, "{}: consumed", case.name);
        assert_eq!(sum("RELEASE"), case.reserved - case.consumed, "{}: released", case.name);
        let reports = found(&db, "interviewReports", doc! {"interviewId": id.oid()}).await;
        match case.insufficient {
            None => assert!(reports.is_empty(), "{}: no report for a failed interview", case.name),
            Some(insufficient) => {
                assert_eq!(reports.len(), 1, "{}: one report", case.name);
                assert_eq!(reports[0].get_str("status"), Ok("COMPLETED"), "{}: {:?}", case.name, reports[0]);
                let recommendation = reports[0]
                    .get_document("report")
                    .ok()
                    .and_then(|r| r.get_str("recommendation").ok())
                    .or_else(|| reports[0].get_str("recommendation").ok());
                assert_eq!(
                    recommendation == Some("insufficient_evidence"),
                    insufficient,
                    "{}: {recommendation:?}",
                    case.name
                );
            }
        }
    }
    // report.generate published by the API for an interview without a report, and the admin retry
    // of a FAILED report at 3 attempts: both generated by the Rust consumer.
    for (id, reset) in [(fresh, false), (exhausted, true)] {
        let report = found(&db, "interviewReports", doc! {"interviewId": id.oid()}).await;
        assert_eq!(report.len(), 1, "{id}: one report");
        assert_eq!(report[0].get_str("status"), Ok("COMPLETED"), "{id}: {:?}", report[0]);
        assert_eq!(int(&report[0], "attemptCount"), 1, "{id}: one attempt (after the reset: a fresh budget)");
        assert_eq!(report[0].get_datetime("attemptsResetAt").is_ok(), reset, "the reset is recorded: {:?}", report[0]);
        if reset {
            // Who and when, as `sophia-ops report retry --reset-attempts` records it.
            let last = report[0].get_document("lastRetry").expect("lastRetry");
            assert_eq!((last.get_str("by"), last.get_str("via")), (Ok("scratch-api-admin"), Ok("api-admin-retry")));
            assert_eq!((int(last, "attemptsBefore"), last.get_str("statusBefore")), (3, Ok("FAILED")));
            assert_eq!(report[0].get_array("retries").map(Vec::len), Ok(1));
            // Written by the package's retry and then the Rust consumer: the documented layout
            // (ReportDocument denies unknown fields), which the package's stored type is generated from.
            let typed = crate::support::report::typed(&report[0]);
            assert_eq!(typed.last_retry.map(|m| m.via), Some("api-admin-retry".to_owned()));
        }
    }
    // The reports the Rust consumer wrote, read by the API's own driver: the package's stored type
    // (ObjectIds and Dates where the schema says so) is what the driver returns.
    let reported: Vec<String> =
        CASES.iter().zip(&ids).filter(|(c, _)| c.insufficient.is_some()).map(|(_, id)| id.to_string()).collect();
    let all: Vec<String> = reported.iter().cloned().chain([fresh.to_string(), exhausted.to_string()]).collect();
    let mut cmd = Command::new("node");
    cmd.arg(scratch.join("read-reports.mjs"))
        .arg(serde_json::Value::from(all.clone()).to_string())
        .current_dir(scratch)
        .envs(&env);
    let stdout = run_checked(&mut cmd, "the scratch API's read-reports.mjs");
    let read: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no JSON ({e}): {stdout}"));
    assert_eq!(read["checked"], all.len(), "{read}");
    assert_eq!(read["problems"], serde_json::json!([]), "the stored type matches what the driver returns");
    let violations = sophia_credits::invariants::check_all(&store).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    let dlq = ops_support::drain(&runner.sqs, &runner.queues.interview_completed.dlq.url).await;
    assert!(dlq.is_empty(), "nothing reached the DLQ");
    runner.stop().await;
}

#[tokio::test]
async fn what_the_rust_producers_send_passes_the_typescript_validation() {
    built_package();
    let o = ops_support::ops().await;
    let (i, org) = (ops_support::INTERVIEW, ops_support::ORG);
    let max = DurationSeconds::MAX.to_string();
    for args in [
        vec!["publish", "completed", i, org, "--duration-seconds", "0"],
        vec!["publish", "completed", i, org, "--duration-seconds", "59"],
        vec!["publish", "completed", i, org, "--duration-seconds", &max, "--request-id", "ops-max"],
        vec![
            "publish",
            "completed",
            i,
            org,
            "--duration-seconds",
            "754",
            "--completed-at",
            "2026-12-02T18:30:00+01:00",
        ],
        vec!["publish", "failed", i, org, "--reason", "bot lost the call"],
        vec!["publish", "failed", i, org, "--reason", "x", "--failed-at", "2026-12-02T17:30:00.123456Z"],
        vec!["publish", "report", i, org, "--request-id", "settlement-65a1b2c3d4e5f60718293a4b"],
    ] {
        ops_support::run(&o.ctx, &args).await.unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    // The settlement producer's own publish (the outbox's report.generate), and a fractional
    // duration written by the contract types.
    let producer = sophia_sqs_producer::SqsProducer::new(
        o.sqs.clone(),
        sophia_sqs_producer::QueueUrls::default()
            .with(sophia_sqs_producer::Queue::InterviewCompleted, o.queues.interview_completed.source.url.clone())
            .with(sophia_sqs_producer::Queue::ReportGenerate, o.queues.report_generate.source.url.clone()),
    );
    let id: InterviewId = i.parse().unwrap();
    let org_id: OrganizationId = org.parse().unwrap();
    producer
        .publish_report_generate(
            &ReportGenerate { interview_id: id, organization_id: org_id },
            &sophia_contracts::RequestId::settlement(id),
        )
        .await
        .unwrap();
    producer
        .publish_interview_completed(
            sophia_sqs_producer::CompletedInput {
                interview_id: id,
                organization_id: org_id,
                completed_at: None,
                duration_seconds: DurationSeconds::from_secs_f64(119.5),
            },
            &sophia_contracts::RequestId::from_caller(None),
        )
        .await
        .unwrap();
    // A negative control: a body the consumer drops must be refused by the TypeScript side too.
    let dropped = format!(
        r#"{{"interviewId":"{i}","organizationId":"{org}","completedAt":"2026-12-02 17:30:00Z","durationSeconds":"60"}}"#
    );
    ops_support::put(
        &o.sqs,
        &o.queues.interview_completed.source.url,
        &dropped,
        [("requestId", "x"), ("eventType", "interview.completed")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), ops_support::string_attr(v)))
            .collect(),
    )
    .await;

    let mut captured = Vec::new();
    for url in [&o.queues.interview_completed.source.url, &o.queues.report_generate.source.url] {
        for m in ops_support::drain(&o.sqs, url).await {
            let attributes: BTreeMap<String, String> = m
                .message_attributes()
                .unwrap_or(&Default::default())
                .iter()
                .map(|(k, v)| (k.clone(), v.string_value().unwrap_or_default().to_owned()))
                .collect();
            captured.push(serde_json::json!({"body": m.body().unwrap(), "attributes": attributes}));
        }
    }
    assert_eq!(captured.len(), 10, "7 ops publishes, 2 producer publishes, 1 control");
    let file = std::env::temp_dir().join(format!("{}.json", harness::unique("sophia-wire")));
    std::fs::write(&file, serde_json::Value::from(captured.clone()).to_string()).unwrap();
    let verdict = node_script("check-wire.mjs", &[file.to_str().unwrap()], &BTreeMap::new());
    let _ = std::fs::remove_file(&file);
    assert_eq!(verdict["checked"], 10);
    for (m, issues) in captured.iter().zip(verdict["results"].as_array().unwrap()) {
        let body = m["body"].as_str().unwrap();
        let rust_accepts = match m["attributes"]["eventType"].as_str() {
            Some("report.generate") => ReportGenerate::parse(body).is_ok(),
            _ => InterviewQueueMessage::parse(body).is_ok(),
        };
        let ts_accepts = issues.as_array().unwrap().is_empty();
        assert_eq!(ts_accepts, rust_accepts, "TypeScript and Rust disagree on {m}: {issues}");
        assert_eq!(ts_accepts, body != dropped, "only the control is refused: {m}: {issues}");
    }
}

/// The `failureReason` limit is one limit: the package (producer) and the Rust contract (consumer)
/// accept a reason at [`FAILURE_REASON_MAX_CHARS`] characters and refuse one past it, counting
/// characters the same way (code points, not bytes or UTF-16 units). The package refuses before
/// anything is sent, even without a queue URL; the forward test above sends one at the limit
/// through the pipeline.
#[test]
fn the_failure_reason_limit_is_one_limit_in_both_languages() {
    let (scratch, _) = scratch_project();
    let (i, o) = ("65a1b2c3d4e5f60718293a4b", "65a1b2c3d4e5f60718293a4c");
    let reasons = [
        ("ascii at the limit", "x".repeat(FAILURE_REASON_MAX_CHARS), true),
        ("4-byte characters at the limit", "\u{1F600}".repeat(FAILURE_REASON_MAX_CHARS), true),
        ("ascii one past", "x".repeat(FAILURE_REASON_MAX_CHARS + 1), false),
        ("2-byte characters one past", "é".repeat(FAILURE_REASON_MAX_CHARS + 1), false),
    ];
    // Consumer side: the Rust parser and the package's wire validation give the same verdict.
    let captured: Vec<serde_json::Value> = reasons
        .iter()
        .map(|(_, reason, _)| {
            let body = serde_json::json!({"type": "interview.failed", "interviewId": i, "organizationId": o, "failureReason": reason, "failedAt": "2026-12-02T17:30:00.000Z"});
            serde_json::json!({"body": body.to_string(), "attributes": {"requestId": "x", "eventType": "interview.failed"}})
        })
        .collect();
    let file = std::env::temp_dir().join(format!("{}.json", harness::unique("sophia-reason")));
    std::fs::write(&file, serde_json::Value::from(captured.clone()).to_string()).unwrap();
    let verdict = node_script("check-wire.mjs", &[file.to_str().unwrap()], &BTreeMap::new());
    let _ = std::fs::remove_file(&file);
    for (((name, _, ok), m), issues) in reasons.iter().zip(&captured).zip(verdict["results"].as_array().unwrap()) {
        let rust = InterviewQueueMessage::parse(m["body"].as_str().unwrap());
        assert_eq!(rust.is_ok(), *ok, "{name}: Rust {rust:?}");
        assert_eq!(issues.as_array().unwrap().is_empty(), *ok, "{name}: TypeScript {issues}");
        if !ok {
            let err = rust.unwrap_err().to_string();
            assert!(
                err.ends_with(&format!(
                    "expected a string of at most {FAILURE_REASON_MAX_CHARS} characters, got a string of {} characters",
                    FAILURE_REASON_MAX_CHARS + 1
                )),
                "{name}: {err}"
            );
            assert_eq!(issues[0]["path"], "/failureReason", "{name}: {issues}");
        }
    }
    // Producer side: the package (in the scratch API project, as installed) sends at the limit and
    // refuses past it with a ContractViolationError naming the field, never the text. No queue URL:
    // a valid message is skipped, an invalid one throws before the skip.
    let cases: Vec<serde_json::Value> = reasons
        .iter()
        .map(|(_, reason, _)| serde_json::json!({"kind": "failed", "input": {"interviewId": i, "organizationId": o, "failureReason": reason}}))
        .collect();
    let mut cmd = Command::new("node");
    cmd.arg(scratch.join("publish-all.mjs"))
        .arg(serde_json::Value::from(cases).to_string())
        .current_dir(scratch)
        .env_remove("INTERVIEW_COMPLETED_QUEUE_URL")
        .env_remove("REPORT_GENERATE_QUEUE_URL");
    let stdout = run_checked(&mut cmd, "publish-all.mjs (failureReason limit)");
    let out: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no JSON ({e}): {stdout}"));
    for ((name, _, ok), r) in reasons.iter().zip(out["results"].as_array().unwrap()) {
        if *ok {
            assert_eq!(r["status"], "skipped", "{name}: valid, and no queue URL: {r}");
        } else {
            assert_eq!(r["error"]["name"], "ContractViolationError", "{name}: {r}");
            assert_eq!(
                r["error"]["message"],
                format!(
                    "interview-failed contract violated: /failureReason must NOT have more than {FAILURE_REASON_MAX_CHARS} characters"
                ),
                "{name}"
            );
        }
    }
}
