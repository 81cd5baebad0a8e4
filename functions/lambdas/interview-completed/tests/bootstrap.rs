//! The built `interview-completed` binary end to end, as Lambda runs it: started with the Lambda
//! environment against a local Runtime API (`sophia_local::runtime_api`), MongoDB from the
//! environment (nx-27017 here, allowed as standalone), one SQS event JSON in, the
//! `SqsBatchResponse` JSON out.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::doc;
use sophia_credits::{CreditsStore, invariants, migrations, seed};
use sophia_local::invoke::{Invoke, InvokeContext};
use sophia_local::runtime_api::RuntimeApi;
use sophia_local::servers::{free_port, start_nx_mongo};
use sophia_platform::stand_in::ExtensionStandIn;

#[tokio::test]
async fn the_binary_settles_an_interview_from_an_sqs_event() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let uri = server.url();
    let database = "bootstrap_e2e";
    let (store, org, interview) = reserved(&uri, database).await;

    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let env = |record_concurrency: &str| {
        [
            ("MONGODB_URI".to_owned(), uri.clone()),
            ("MONGODB_DATABASE".to_owned(), database.to_owned()),
            ("MONGODB_ALLOW_STANDALONE".to_owned(), "true".to_owned()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
            ("RECORD_CONCURRENCY".to_owned(), record_concurrency.to_owned()),
        ]
    };

    // The same environment with a bad RECORD_CONCURRENCY stops the function at init.
    let mut refused = RuntimeApi::serve().await.unwrap();
    refused.start_function(binary, "interview-completed", 256, &env("0")).unwrap();
    let error = refused.wait_ready(Duration::from_secs(20)).await.expect_err("RECORD_CONCURRENCY=0 is refused");
    refused.stop().await;
    assert!(error.to_string().contains("exited during init"), "{error}");

    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "interview-completed", 256, &env("2")).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("the binary starts and polls for an event");

    let response = invoke_one(&mut api, "m-bootstrap", &completed_body(interview, org, 330)).await;
    api.stop().await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");

    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert!(settled.settled_at.is_some());
    assert_eq!(settled.credits.consumed, Some(5));
    let violations = invariants::check_all(&store).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

/// One SQS event of one record.
fn sqs_event(message_id: &str, body: &str) -> serde_json::Value {
    serde_json::json!({"Records": [{
        "messageId": message_id,
        "receiptHandle": "r",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:sophia-local-interview-completed",
        "awsRegion": "us-east-1"
    }]})
}

/// An invocation context with a 30 s deadline.
fn context(message_id: &str) -> InvokeContext {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    InvokeContext {
        request_id: format!("req-{message_id}"),
        deadline_ms: now_ms + 30_000,
        function_arn: "arn:aws:lambda:us-east-1:000000000000:function:interview-completed".into(),
    }
}

/// Sends one SQS record with `body` to the function behind `api` (30 s deadline); its answer.
async fn invoke_one(api: &mut RuntimeApi, message_id: &str, body: &str) -> serde_json::Value {
    api.invoke(sqs_event(message_id, body), context(message_id)).await.expect("the binary answers")
}

fn chrono_in_days(days: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::Duration::days(days)
}

/// The interview-completed binary's Secrets Manager environment: the URI's ARN and the stand-in's
/// port, no plain URI.
fn secret_env(extension: &ExtensionStandIn, database: &str, refresh_interval_ms: u64) -> Vec<(String, String)> {
    [
        // Blank: unset for the binary, whatever the test process has.
        ("MONGODB_URI", String::new()),
        ("MONGODB_URI_SECRET_ARN", ARN.to_owned()),
        ("MONGODB_DATABASE", database.to_owned()),
        ("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT", extension.port().to_string()),
        ("SECRETS_EXTENSION_TIMEOUT_MS", "3000".to_owned()),
        ("SECRETS_REFRESH_INTERVAL_MS", refresh_interval_ms.to_string()),
        ("MONGODB_ALLOW_STANDALONE", "true".to_owned()),
        ("RECORD_CONCURRENCY", "1".to_owned()),
        ("LOG_LEVEL", "warn".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

const ARN: &str = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-local/mongodb-uri-AbCdEf";

/// A database with one organization and one reserved interview of 20 credits.
async fn reserved(
    uri: &str,
    database: &str,
) -> (CreditsStore, sophia_contracts::OrganizationId, sophia_contracts::InterviewId) {
    let client = mongodb::Client::with_uri_str(uri).await.unwrap();
    let db = client.database(database);
    migrations::apply(&db).await.unwrap();
    let store = CreditsStore::new(db.clone());
    let org = seed::create_organization(&store, "Secrets").await.unwrap();
    seed::grant_lot(&store, org, 50, chrono_in_days(30)).await.unwrap();
    let interview = seed::reserved_interview(&client, &store, org, 20, doc! {}).await.unwrap();
    (store, org, interview)
}

fn completed_body(interview: impl std::fmt::Display, org: impl std::fmt::Display, seconds: u32) -> String {
    format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":{seconds}}}"#
    )
}

/// On AWS the stack sets `MONGODB_URI_SECRET_ARN`, not the URI, and the extension is reported to
/// answer "not ready" during init: init does not call it (its time is the plain variable's), the
/// first invocation reads the URI once (with the session token Lambda sets), connects and
/// settles; a refused read fails that invocation with the ARN and the AWS error code.
#[tokio::test]
async fn an_extension_not_serving_during_init_is_not_called_and_the_first_invocation_reads_the_uri() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let database = "bootstrap_deferred";
    let (store, org, interview) = reserved(&server.url(), database).await;
    let extension = ExtensionStandIn::start(true).await.unwrap();
    extension.put(ARN, &server.url());

    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "interview-completed", 256, &secret_env(&extension, database, 30_000)).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("init ends although the extension does not serve yet");
    assert_eq!(extension.reads(ARN), 0, "init never called the extension");
    // The function asked for its first event: the extension serves from now on.
    extension.serve_from_now();

    let response = invoke_one(&mut api, "m-deferred", &completed_body(interview, org, 120)).await;
    api.stop().await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");
    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert_eq!(settled.credits.consumed, Some(2), "settled by the first invocation");
    let heads = extension.heads();
    assert_eq!(heads.len(), 1, "read once: {heads:?}");
    let request = heads[0].to_ascii_lowercase();
    assert!(request.starts_with("get /secretsmanager/get?secretid=arn%3aaws%3asecretsmanager%3a"), "{request}");
    assert!(request.contains("x-aws-parameters-secrets-token: local"), "{request}");

    // A refused read (no permission on the secret): init still ends, the invocation fails.
    let denied = ExtensionStandIn::start(false).await.unwrap();
    denied.refuse(Some((400, "AccessDeniedException")));
    let mut refused = RuntimeApi::serve().await.unwrap();
    refused.start_function(binary, "interview-completed", 256, &secret_env(&denied, database, 30_000)).unwrap();
    refused.wait_ready(Duration::from_secs(20)).await.expect("init does not read");
    let error = refused
        .invoke(sqs_event("m-denied", &completed_body(interview, org, 120)), context("m-denied"))
        .await
        .expect_err("the invocation fails");
    refused.stop().await;
    let text = error.to_string();
    assert!(text.contains(ARN) && text.contains("AccessDeniedException"), "{text}");
}

/// MongoDB refuses the URI's credentials (nx-27017 cannot authenticate anyone: the driver's SCRAM
/// fails, as against a server whose user was dropped); Secrets Manager has no new value yet, so
/// the first invocation fails after one re-read; once a new URI is put, the next invocation (after
/// the interval) reads it again, connects with it and settles.
#[tokio::test]
async fn a_refused_mongodb_uri_is_read_again_and_a_new_one_is_used() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let database = "bootstrap_rotated_uri";
    let (store, org, interview) = reserved(&server.url(), database).await;
    let revoked = server.url().replacen("mongodb://", "mongodb://sophia:revoked@", 1);
    assert_ne!(revoked, server.url());
    let extension = ExtensionStandIn::start(false).await.unwrap();
    extension.put(ARN, &revoked);

    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let interval = Duration::from_millis(1_000);
    let mut api = RuntimeApi::serve().await.unwrap();
    let env = secret_env(&extension, database, interval.as_millis() as u64);
    api.start_function(binary, "interview-completed", 256, &env).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.unwrap();

    let body = completed_body(interview, org, 120);
    let refused = api.invoke(sqs_event("m-1", &body), context("m-1")).await;
    assert!(refused.is_err(), "credentials refused, no new value: the batch fails ({refused:?})");
    assert_eq!(extension.reads(ARN), 2, "read, refused, read again once");

    // The rotation: a new AWSCURRENT value.
    extension.put(ARN, &server.url());
    tokio::time::sleep(interval + Duration::from_millis(200)).await;
    let response = invoke_one(&mut api, "m-2", &body).await;
    api.stop().await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");
    assert_eq!(extension.reads(ARN), 3, "one more read after the interval");
    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert_eq!(settled.credits.consumed, Some(2), "settled with the new URI");
}
