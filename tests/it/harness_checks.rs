//! The harness's own behaviour: the replica-set requirement that turns a skip into a failure.

use harness::{REQUIRE_REPLICA_SET, World, replica_set_required, requires_transactions_unless};
use sophia_platform::mongo::Topology;

#[test]
fn the_replica_set_requirement_is_read_from_its_variable() {
    assert!(replica_set_required(Some("1")));
    assert!(replica_set_required(Some("true")));
    assert!(!replica_set_required(None));
    assert!(!replica_set_required(Some("0")));
    assert!(!replica_set_required(Some("")));
}

/// With the requirement set, a standalone server fails the test instead of skipping it.
#[tokio::test]
async fn a_required_replica_set_turns_the_skip_into_a_failure() {
    let mongo = World::without_migration().await.mongo;
    if !matches!(mongo.topology().await.expect("hello answers"), Topology::Standalone) {
        return; // A real replica set under test: nothing to skip.
    }
    // The requirement as `REQUIRE_REPLICA_SET=1` gives it, passed in: the process environment is
    // shared by every test of the binary.
    assert!(replica_set_required(Some("1")), "{REQUIRE_REPLICA_SET}=1 requires a replica set");
    let outcome = tokio::spawn(async move { requires_transactions_unless(&mongo, "probe", true).await }).await;
    let panic = outcome.expect_err("a standalone server fails the test");
    assert!(panic.is_panic());
}
