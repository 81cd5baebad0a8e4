//! The deployed architecture, executed: each arm64 `bootstrap` from the zips that
//! `scripts/build arm64` made (the bytes `pulumi up` deploys) runs under user-mode emulation
//! (`qemu-aarch64-static`, Debian's `qemu-user-static`) behind the local Lambda Runtime API, on
//! real SQS event JSON, against nx-27017 and the OpenAI fake. `scripts/test-arm64` installs qemu,
//! builds the zips and runs this file with `SOPHIA_REQUIRE_ARM64=1`; without that variable and
//! without the zips the tests print SKIPPED (and are listed at the end of `scripts/test`).
//!
//! Behaviour only: emulated timings say nothing about Graviton.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::{Document, doc};
use harness::World;
use sophia_credits::{invariants, seed};
use sophia_local::invoke::{Invoke, InvokeContext};
use sophia_local::runtime_api::RuntimeApi;
use sophia_openai_fake::FakeOpenAi;
use sophia_reports::fixtures::InterviewFixture;

const ELF_MACHINE_AARCH64: u16 = 183;

/// Where the arm64 zips are, when this run is to use them: `SOPHIA_ARM64_LAMBDA_DIR`, else `$CARGO_TARGET_DIR/lambda`, else
/// `target/lambda`, accepted only when its `build-info.json` says arm64.
fn lambda_dir() -> Option<PathBuf> {
    // Only zips built for this run: scripts/test-arm64 builds them and sets SOPHIA_REQUIRE_ARM64
    // (zips left over from an older build would test older code).
    if std::env::var("SOPHIA_REQUIRE_ARM64").as_deref() != Ok("1")
        && std::env::var_os("SOPHIA_ARM64_LAMBDA_DIR").is_none()
    {
        return None;
    }
    let dir = std::env::var_os("SOPHIA_ARM64_LAMBDA_DIR").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
            .join("lambda")
    });
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("build-info.json")).ok()?).ok()?;
    (info["architecture"] == "arm64").then_some(dir)
}

fn qemu() -> Option<PathBuf> {
    ["/usr/bin/qemu-aarch64-static", "/usr/bin/qemu-aarch64"].iter().map(PathBuf::from).find(|p| p.is_file())
}

/// The environment to run one function, or `None` after a loud SKIPPED line (a failure under
/// `SOPHIA_REQUIRE_ARM64=1`, which `scripts/test-arm64` sets).
fn arm64_function(function: &str, test: &str) -> Option<PathBuf> {
    let why = match (lambda_dir(), qemu()) {
        (Some(dir), Some(qemu)) => return Some(wrapper(&dir, &qemu, function)),
        (None, _) => "no arm64 zips built for this run",
        (_, None) => "qemu-aarch64-static is not installed (apt-get install qemu-user-static)",
    };
    let why = format!("{why}; scripts/test-arm64 builds and runs them");
    assert!(std::env::var("SOPHIA_REQUIRE_ARM64").as_deref() != Ok("1"), "{test}: {why}");
    harness::skipped(test, &why);
    None
}

/// Unzips `<dir>/<function>/bootstrap.zip`, checks it is an executable aarch64 ELF, and writes a
/// wrapper that runs it under qemu (the Runtime API starts one program, with the environment).
fn wrapper(dir: &Path, qemu: &Path, function: &str) -> PathBuf {
    let zip_path = dir.join(function).join("bootstrap.zip");
    let out = sophia_local::servers::state_dir().join("arm64").join(function);
    std::fs::create_dir_all(&out).unwrap();
    let binary = out.join("bootstrap");
    // Python's zipfile (python3 is on every machine the scripts run on): extract `bootstrap` and
    // print its Unix mode from the zip's external attributes.
    let extracted = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\ni = z.getinfo('bootstrap')\nopen(sys.argv[2], 'wb').write(z.read(i))\nprint(i.external_attr >> 16)",
        ])
        .arg(&zip_path)
        .arg(&binary)
        .output()
        .expect("python3 runs");
    assert!(extracted.status.success(), "{}: {}", zip_path.display(), String::from_utf8_lossy(&extracted.stderr));
    let mode: u32 = String::from_utf8_lossy(&extracted.stdout).trim().parse().expect("a mode");
    let bytes = std::fs::read(&binary).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF", "{function}: bootstrap is not an ELF file");
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), ELF_MACHINE_AARCH64, "{function}: not an aarch64 ELF");
    assert!(mode & 0o111 != 0, "{function}: bootstrap is not executable in the zip (mode {mode:o})");

    set_mode(&binary, 0o755);
    let script = out.join("run-under-qemu");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nQEMU_LD_PREFIX=/usr/aarch64-linux-gnu exec '{}' '{}' \"$@\"\n",
            qemu.display(),
            binary.display()
        ),
    )
    .unwrap();
    set_mode(&script, 0o755);
    script
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn sqs_event(bodies: &[String]) -> serde_json::Value {
    let records: Vec<_> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            serde_json::json!({
                "messageId": format!("m-arm64-{i}"),
                "receiptHandle": "r",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:sophia-local-queue",
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    serde_json::json!({ "Records": records })
}

/// Starts the emulated function, waits for its first poll, sends one event, returns the reply.
async fn invoke(
    script: &Path,
    function: &str,
    env: &[(String, String)],
    event: serde_json::Value,
) -> serde_json::Value {
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(script, function, 256, env).unwrap();
    // Emulated start-up is slow (~0.4 s measured, more on a loaded machine).
    api.wait_ready(Duration::from_secs(120)).await.unwrap_or_else(|e| panic!("{function} under qemu: {e}"));
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let context = InvokeContext {
        request_id: format!("req-arm64-{function}"),
        deadline_ms: now_ms + 120_000,
        function_arn: format!("arn:aws:lambda:us-east-1:000000000000:function:{function}"),
    };
    let response = api.invoke(event, context).await.unwrap_or_else(|e| panic!("{function} answers: {e}"));
    api.stop().await;
    response
}

fn in_days(days: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::Duration::days(days)
}

#[tokio::test]
async fn arm64_interview_completed_settles_and_drops_an_invalid_body() {
    let Some(script) = arm64_function("interview-completed", "arm64_interview_completed") else { return };
    let world = World::with_own_server().await;
    let store = &world.store;
    let org = seed::create_organization(store, "Arm64").await.unwrap();
    seed::grant_lot(store, org, 50, in_days(30)).await.unwrap();
    let interview = seed::reserved_interview(&world.mongo.client, store, org, 20, doc! {}).await.unwrap();

    let bodies = [
        format!(
            r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":330}}"#
        ),
        "{not json".to_owned(),
    ];
    let response = invoke(&script, "interview-completed", &world.function_env(&[]), sqs_event(&bodies)).await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");

    let settled = store.interview(interview.oid()).await.unwrap().expect("the interview exists");
    assert!(settled.settled_at.is_some(), "settled by the arm64 binary");
    assert_eq!(settled.credits.consumed, Some(5), "floor(330 / 60)");
    // No REPORT_GENERATE_QUEUE_URL: the outbox entry waits, pending, for a flush.
    let outbox = world.mongo.db.collection::<Document>("outbox").count_documents(doc! {}).await.unwrap();
    assert_eq!(outbox, 1);
    let violations = invariants::check_all(store).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

#[tokio::test]
async fn arm64_interview_failed_releases_the_reservation() {
    let Some(script) = arm64_function("interview-failed", "arm64_interview_failed") else { return };
    let world = World::with_own_server().await;
    let store = &world.store;
    let org = seed::create_organization(store, "Arm64 failed").await.unwrap();
    seed::grant_lot(store, org, 40, in_days(30)).await.unwrap();
    let interview = seed::reserved_interview(&world.mongo.client, store, org, 15, doc! {}).await.unwrap();

    let body = format!(
        r#"{{"type":"interview.failed","interviewId":"{interview}","organizationId":"{org}","failureReason":"bot crashed","failedAt":"2026-12-02T17:30:00.000Z"}}"#
    );
    let response = invoke(&script, "interview-failed", &world.function_env(&[]), sqs_event(&[body])).await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");

    let settled = store.interview(interview.oid()).await.unwrap().expect("the interview exists");
    assert!(settled.settled_at.is_some());
    assert_eq!(settled.credits.consumed, Some(0), "a failed interview consumes nothing");
    let org_doc =
        world.mongo.db.collection::<Document>("organizations").find_one(doc! {"_id": org.oid()}).await.unwrap();
    let credits = org_doc.unwrap().get_document("credits").unwrap().clone();
    assert_eq!(sophia_documents::int::from_bson(credits.get("reserved").unwrap()), Ok(0));
    assert_eq!(sophia_documents::int::from_bson(credits.get("available").unwrap()), Ok(40));
    let violations = invariants::check_all(store).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

#[tokio::test]
async fn arm64_report_generate_stores_a_model_report() {
    let Some(script) = arm64_function("report-generate", "arm64_report_generate") else { return };
    let world = World::with_own_server().await;
    let openai = FakeOpenAi::deterministic().expect("the OpenAI fake starts");
    let org = sophia_contracts::OrganizationId::new(bson::oid::ObjectId::new());
    let (interview, _) = InterviewFixture::new(org).insert(&world.mongo.db).await.unwrap();

    let env = world.function_env(&[
        ("OPENAI_BASE_URL", openai.base_url()),
        ("OPENAI_API_KEY", "sk-local-test".to_owned()),
        ("OPENAI_MODEL", "gpt-4.1-mini".to_owned()),
    ]);
    let body = format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#);
    let response = invoke(&script, "report-generate", &env, sqs_event(&[body])).await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");

    assert_eq!(openai.requests().len(), 1, "one chat completion from the arm64 binary");
    let report = world
        .mongo
        .db
        .collection::<Document>("interviewReports")
        .find_one(doc! {"interviewId": interview.oid()})
        .await
        .unwrap()
        .expect("a report is stored");
    assert_eq!(report.get_str("status"), Ok("COMPLETED"), "{report:?}");
}
