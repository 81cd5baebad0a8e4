//! The integration-test harness: a `spawn_app`-like kit that starts the real local servers once
//! per test binary (fauxqs for SQS, nx-27017 for MongoDB, both on free 127.0.0.1 ports) and hands
//! every test its own database and its own uniquely named queues. This file holds the servers,
//! unique names and the one way a test skips; the rest by what it holds:
//!
//! - [`world`]: [`World`], what a test runs against (the database of its own, migrated, its
//!   client and store, the SQS client and the queues of its own, and a MongoDB server of its own
//!   when asked for), and the narrower views built from it;
//! - [`mongo`]: a bare database of a test's own (no migration), clients of a given URI, readers;
//! - [`sqs`]: the SQS client, queues of a test's own, message bodies, Lambda SQS events, depth,
//!   draining;
//! - [`functions`]: the Lambda functions as their `main`s build them, and the event source mapping
//!   that invokes them;
//! - [`logs`]: the process-wide JSON log capture;
//! - [`wait`]: waiting for a condition by polling it (the one place a test sleeps between checks);
//! - [`faults`]: a MongoDB server of a test's own that can be killed and restarted.
//!
//! - `SOPHIA_TEST_MONGODB_URI`: use this MongoDB (e.g. a real replica set in GitHub Actions)
//!   instead of starting nx-27017.
//! - Servers exit with the test process (their stdin pipe closes), and are stopped by PID by the
//!   tests that stop them on purpose.

pub mod faults;
pub mod functions;
pub mod logs;
pub mod mongo;
pub mod sqs;
pub mod wait;
pub mod world;

pub use mongo::test_mongo;
pub use sqs::{drain, sqs_client, test_queues, test_queues_fast};
pub use wait::wait_until;
pub use world::World;

use std::sync::OnceLock;

use sophia_local::servers::{LocalServer, free_port, start_fauxqs, start_nx_mongo};
use sophia_platform::mongo::{Mongo, Topology};

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
