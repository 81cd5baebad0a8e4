//! The deploy's migration step through the built binary, as the stack's `aws.lambda.Invocation`
//! sends it (infra-pulumi/src/stack.ts): `{"sophiaOps":"migrate"}` to the running function creates
//! every index `sophia-ops migrate` creates, twice without harm; an unknown command is an error
//! naming it (so `pulumi up` stops before any event source mapping); SQS batches still work.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sophia_local::invoke::{Invoke, InvokeContext, InvokeError};
use sophia_local::runtime_api::RuntimeApi;
use sophia_local::servers::{free_port, start_nx_mongo};

fn context(id: &str) -> InvokeContext {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    InvokeContext {
        request_id: id.to_owned(),
        deadline_ms: now_ms + 30_000,
        function_arn: "arn:aws:lambda:us-east-1:000000000000:function:sophia-dev-interview-completed".into(),
    }
}

/// The key fields of each index of `collection`, from `listIndexes`' first batch (as
/// `sophia_platform::indexes` reads it; nx-27017 names indexes its own way, so keys, not names).
async fn index_keys(db: &mongodb::Database, collection: &str) -> Vec<Vec<String>> {
    let reply = db.run_command(bson::doc! {"listIndexes": collection}).await.unwrap();
    let batch = reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap();
    batch
        .iter()
        .filter_map(|b| b.as_document())
        .filter_map(|d| d.get_document("key").ok().map(|k| k.keys().cloned().collect()))
        .collect()
}

#[tokio::test]
async fn the_binary_runs_the_migrations_on_a_sophia_ops_invocation() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let database = "migrate_e2e";
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let env = [
        ("MONGODB_URI".to_owned(), server.url()),
        ("MONGODB_DATABASE".to_owned(), database.to_owned()),
        ("MONGODB_ALLOW_STANDALONE".to_owned(), "true".to_owned()),
        ("LOG_LEVEL".to_owned(), "warn".to_owned()),
    ];
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "interview-completed", 256, &env).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("the binary starts");

    let first =
        api.invoke(serde_json::json!({"sophiaOps": "migrate"}), context("m1")).await.expect("the migration answers");
    let again = api
        .invoke(serde_json::json!({"sophiaOps": "migrate"}), context("m2"))
        .await
        .expect("a second run changes nothing");
    let refused = api.invoke(serde_json::json!({"sophiaOps": "drop"}), context("m3")).await;
    let batch = api.invoke(serde_json::json!({"Records": []}), context("m4")).await.expect("an SQS batch still works");
    api.stop().await;

    assert_eq!(first["migrated"], database, "{first}");
    assert_eq!(first, again);
    let expected: Vec<&str> = vec![
        "ledger_idempotency",
        "ledger_by_organization",
        "outbox_pending",
        "lots_by_organization_expiry",
        "interviews_by_organization",
        "outbox_published_ttl",
        "interviewId_unique",
    ];
    assert_eq!(first["indexes"], serde_json::json!(expected));

    let client = mongodb::Client::with_uri_str(server.url()).await.unwrap();
    let db = client.database(database);
    let keys = |fields: &[&str]| fields.iter().map(|f| (*f).to_owned()).collect::<Vec<String>>();
    let ledger = index_keys(&db, "creditLedger").await;
    assert!(ledger.contains(&keys(&["organizationId", "createdAt"])), "{ledger:?}");
    let outbox = index_keys(&db, "outbox").await;
    assert!(outbox.contains(&keys(&["publishedAt"])), "the published-entry TTL index: {outbox:?}");
    assert!(outbox.contains(&keys(&["status", "createdAt"])), "{outbox:?}");
    let required = [interview_completed::ops::REQUIRED_INDEXES, sophia_reports::migrations::REQUIRED].concat();
    let missing = sophia_platform::indexes::missing_unique_indexes(&db, &required).await.unwrap();
    assert!(missing.is_empty(), "both functions' cold-start checks find what the migration made: {missing:?}");

    match refused {
        Err(InvokeError::Function(message)) => {
            assert!(message.contains("drop") || message.contains("ops request"), "{message}")
        }
        other => panic!("an unknown ops command must fail the invocation, got {other:?}"),
    }
    assert_eq!(batch, serde_json::json!({"batchItemFailures": []}));
}

#[tokio::test]
async fn before_the_migration_the_cold_start_check_finds_the_ledger_index_missing() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let client = mongodb::Client::with_uri_str(server.url()).await.unwrap();
    let db = client.database("migrate_missing");
    let missing = sophia_platform::indexes::missing_unique_indexes(&db, interview_completed::ops::REQUIRED_INDEXES)
        .await
        .unwrap();
    assert_eq!(missing, interview_completed::ops::REQUIRED_INDEXES.to_vec());
    interview_completed::ops::migrate(&db).await.unwrap();
    let missing = sophia_platform::indexes::missing_unique_indexes(&db, interview_completed::ops::REQUIRED_INDEXES)
        .await
        .unwrap();
    assert!(missing.is_empty(), "{missing:?}");
}
