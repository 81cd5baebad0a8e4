//! The integration-test harness: a `spawn_app`-like kit that starts the real local servers once
//! per test binary (fauxqs for SQS, nx-27017 for MongoDB, both on free 127.0.0.1 ports) and hands
//! every test its own database and its own uniquely named queues.
//!
//! - `SOPHIA_TEST_MONGODB_URI`: use this MongoDB (e.g. a real replica set in GitHub Actions)
//!   instead of starting nx-27017.
//! - Servers exit with the test process (their stdin pipe closes), and are stopped by PID by the
//!   tests that stop them on purpose.

pub mod faults;

use std::sync::OnceLock;

use sophia_declarations::Declaration;
use sophia_local::queues::{QueueSet, create_queue_set};
use sophia_local::servers::{LocalServer, free_port, start_fauxqs, start_nx_mongo};
use sophia_platform::mongo::{Mongo, MongoSettings, Topology};

static FAUXQS: OnceLock<LocalServer> = OnceLock::new();
static NX_MONGO: OnceLock<LocalServer> = OnceLock::new();

/// The fauxqs server of this test binary (started on first use).
pub fn fauxqs() -> &'static LocalServer {
    FAUXQS.get_or_init(|| start_fauxqs(free_port()).expect("fauxqs starts (run scripts/setup-tools)"))
}

/// The endpoint URL of the local SQS.
pub fn sqs_endpoint() -> String {
    fauxqs().url()
}

/// The MongoDB URI under test: `SOPHIA_TEST_MONGODB_URI`, or this binary's nx-27017.
pub fn mongo_uri() -> String {
    std::env::var("SOPHIA_TEST_MONGODB_URI").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| {
        NX_MONGO.get_or_init(|| start_nx_mongo(free_port()).expect("nx-27017 starts (run scripts/setup-tools)")).url()
    })
}

/// A short unique name (`<prefix>-<8 hex>`), for databases and queues.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// An SQS client for the local endpoint (a fresh one per test: each test has its own runtime).
pub async fn sqs_client() -> aws_sdk_sqs::Client {
    sophia_platform::sqs::local_client(&sqs_endpoint())
}

/// The four queues of a pipeline, uniquely prefixed, with the declared attributes.
pub async fn test_queues(client: &aws_sdk_sqs::Client) -> QueueSet {
    create_queue_set(client, &unique("t"), Declaration::embedded()).await.expect("queues are created")
}

/// A MongoDB handle on a database of its own (nx-27017 transactions are not isolated between
/// clients of one database, so no two tests share one).
pub async fn test_mongo() -> Mongo {
    let settings = MongoSettings {
        uri: mongo_uri(),
        database: unique("t").replace('-', "_"),
        server_selection_timeout: std::time::Duration::from_secs(5),
        allow_standalone: true,
    };
    Mongo::connect(&settings).await.expect("MongoDB client builds")
}

/// `SOPHIA_REQUIRE_REPLICA_SET=1`: a test that needs a replica set fails instead of skipping
/// (the replica-set workflow sets it, so a mis-configured URI cannot skip silently there).
pub const REQUIRE_REPLICA_SET: &str = "SOPHIA_REQUIRE_REPLICA_SET";

/// Whether [`REQUIRE_REPLICA_SET`] asks for a replica set (`1` or `true`).
pub fn replica_set_required(value: Option<&str>) -> bool {
    matches!(value.map(str::trim), Some("1" | "true"))
}

/// For tests that need real transaction semantics: true on a replica set or mongos; otherwise
/// prints a loud SKIPPED line (visible with `--nocapture` and in the test summary's stdout) and
/// returns false, or fails the test when [`REQUIRE_REPLICA_SET`] is set.
pub async fn requires_transactions(mongo: &Mongo, test: &str) -> bool {
    requires_transactions_unless(mongo, test, replica_set_required(std::env::var(REQUIRE_REPLICA_SET).ok().as_deref()))
        .await
}

/// [`requires_transactions`] with the requirement given instead of read from the process
/// environment (so that its own test sets no variable in the shared test process).
pub async fn requires_transactions_unless(mongo: &Mongo, test: &str, replica_set_is_required: bool) -> bool {
    match mongo.topology().await.expect("hello answers") {
        Topology::ReplicaSet | Topology::Sharded => true,
        Topology::Standalone => {
            assert!(
                !replica_set_is_required,
                "{test}: {REQUIRE_REPLICA_SET} is set but the MongoDB under test ({}) is standalone",
                if std::env::var("SOPHIA_TEST_MONGODB_URI").is_ok_and(|u| !u.is_empty()) {
                    "SOPHIA_TEST_MONGODB_URI"
                } else {
                    "nx-27017: SOPHIA_TEST_MONGODB_URI is not set"
                }
            );
            skipped(
                test,
                "needs a MongoDB replica set (set SOPHIA_TEST_MONGODB_URI); the server under test is standalone (nx-27017)",
            );
            false
        }
    }
}

/// Says that `test` (or the part of it named) did not run for lack of a capability: a loud
/// `SKIPPED <test>: <why>` line on stdout and stderr, and the same line appended to
/// `.local/test-skips.log`, which `scripts/test` lists and counts at the end (cargo hides a passing
/// test's output and counts a skipped one as passed). The one way a test skips: the `layout`
/// module fails on a SKIPPED line written anywhere else.
pub fn skipped(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}");
    println!("{line}");
    eprintln!("{line}");
    let path = sophia_local::servers::state_dir().join("test-skips.log");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        use std::io::Write;
        // One write per line (O_APPEND): concurrent tests cannot interleave their lines.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// Queues like [`test_queues`] but with a short visibility timeout, so that a failed message
/// reappears within the test (the declared 180 s / 1800 s are checked elsewhere).
pub async fn test_queues_fast(client: &aws_sdk_sqs::Client, visibility_timeout_seconds: u32) -> QueueSet {
    let overrides =
        sophia_local::queues::QueueOverrides { visibility_timeout_seconds: Some(visibility_timeout_seconds) };
    sophia_local::queues::create_queue_set_with(client, &unique("t"), Declaration::embedded(), &overrides)
        .await
        .expect("queues are created")
}

/// Receives (and deletes) every message of `url` until it is empty (hidden 60 s while held, so
/// a short-visibility queue cannot hand one back mid-drain).
pub async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    let mut all = Vec::new();
    loop {
        let out = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(60)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive");
        let batch = out.messages.unwrap_or_default();
        if batch.is_empty() {
            return all;
        }
        for m in &batch {
            client
                .delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .expect("delete");
        }
        all.extend(batch);
    }
}
