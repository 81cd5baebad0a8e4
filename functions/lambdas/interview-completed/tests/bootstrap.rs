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

#[tokio::test]
async fn the_binary_settles_an_interview_from_an_sqs_event() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let uri = server.url();
    let database = "bootstrap_e2e";
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = client.database(database);
    migrations::apply(&db).await.unwrap();
    let store = CreditsStore::new(db.clone());
    let org = seed::create_organization(&store, "Bootstrap").await.unwrap();
    seed::grant_lot(&store, org, 50, chrono_in_days(30)).await.unwrap();
    let interview = seed::reserved_interview(&client, &store, org, 20, doc! {}).await.unwrap();

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

    let body = format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":330}}"#
    );
    let response = invoke_one(&mut api, "m-bootstrap", &body).await;
    api.stop().await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");

    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert!(settled.settled_at.is_some());
    assert_eq!(settled.credits.consumed, Some(5));
    let violations = invariants::check_all(&store).await.unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

/// Sends one SQS record with `body` to the function behind `api` (30 s deadline); its answer.
async fn invoke_one(api: &mut RuntimeApi, message_id: &str, body: &str) -> serde_json::Value {
    let event = serde_json::json!({"Records": [{
        "messageId": message_id,
        "receiptHandle": "r",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:sophia-local-interview-completed",
        "awsRegion": "us-east-1"
    }]});
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let context = InvokeContext {
        request_id: format!("req-{message_id}"),
        deadline_ms: now_ms + 30_000,
        function_arn: "arn:aws:lambda:us-east-1:000000000000:function:interview-completed".into(),
    };
    api.invoke(event, context).await.expect("the binary answers")
}

fn chrono_in_days(days: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::Duration::days(days)
}

/// A stand-in for the AWS Parameters and Secrets Lambda Extension: answers every request with
/// `status` and `body`, and keeps each request's head (request line and headers).
async fn fake_extension(status: &'static str, body: String) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let port = serve_extension(move |head| {
        kept.lock().unwrap().push(head);
        (status, body.clone())
    })
    .await;
    (port, seen)
}

/// Serves the extension's HTTP on a free 127.0.0.1 port: `answer` gets each request's head and
/// returns the status line and the body.
async fn serve_extension(answer: impl Fn(String) -> (&'static str, String) + Send + 'static) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let (status, body) = answer(String::from_utf8_lossy(&head).into_owned());
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    port
}

/// On AWS the stack sets `MONGODB_URI_SECRET_ARN`, not the URI: the binary reads the URI through
/// the extension at init (with the session token Lambda sets) and starts; a refused read stops it
/// at init.
#[tokio::test]
async fn the_binary_reads_its_mongodb_uri_through_the_secrets_extension() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let arn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-local/mongodb-uri-AbCdEf";
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let env = |port: u16| {
        [
            // Blank: unset for the binary, whatever the test process has.
            ("MONGODB_URI".to_owned(), String::new()),
            ("MONGODB_URI_SECRET_ARN".to_owned(), arn.to_owned()),
            ("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT".to_owned(), port.to_string()),
            ("SECRETS_EXTENSION_TIMEOUT_MS".to_owned(), "3000".to_owned()),
            ("MONGODB_ALLOW_STANDALONE".to_owned(), "true".to_owned()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
        ]
    };

    let answer = serde_json::json!({"ARN": arn, "Name": "sophia-local/mongodb-uri", "SecretString": server.url(),
        "VersionId": "v1", "VersionStages": ["AWSCURRENT"]});
    let (port, seen) = fake_extension("200 OK", answer.to_string()).await;
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "interview-completed", 256, &env(port)).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("init read the URI through the extension");
    api.stop().await;
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "read once: {requests:?}");
    let request = requests[0].to_ascii_lowercase();
    assert!(request.starts_with("get /secretsmanager/get?secretid=arn%3aaws%3asecretsmanager%3a"), "{request}");
    assert!(request.contains("x-aws-parameters-secrets-token: local"), "{request}");

    let denied = r#"{"__type":"AccessDeniedException","message":"not authorized"}"#.to_owned();
    let (port, _) = fake_extension("400 Bad Request", denied).await;
    let mut refused = RuntimeApi::serve().await.unwrap();
    refused.start_function(binary, "interview-completed", 256, &env(port)).unwrap();
    let error = refused.wait_ready(Duration::from_secs(20)).await.expect_err("a refused secret stops init");
    refused.stop().await;
    assert!(error.to_string().contains("exited during init"), "{error}");
}

/// A stand-in for the extension that answers "not ready" (HTTP 400, as the real one does while it
/// starts) until `serving` is set, then `body`.
async fn starting_extension(body: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let serving = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = serving.clone();
    let port = serve_extension(move |_| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            ("200 OK", body.clone())
        } else {
            ("400 Bad Request", "not ready to serve traffic, please wait".to_owned())
        }
    })
    .await;
    (port, serving)
}

/// The extension may not serve during the function's init (Lambda starts the function's init as
/// soon as the extension registered): init goes on without the clients, and the first invocation
/// reads the secret, connects and settles.
#[tokio::test]
async fn an_extension_not_serving_during_init_defers_the_clients_to_the_first_invocation() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let database = "bootstrap_deferred";
    let client = mongodb::Client::with_uri_str(server.url()).await.unwrap();
    let db = client.database(database);
    migrations::apply(&db).await.unwrap();
    let store = CreditsStore::new(db.clone());
    let org = seed::create_organization(&store, "Deferred").await.unwrap();
    seed::grant_lot(&store, org, 50, chrono_in_days(30)).await.unwrap();
    let interview = seed::reserved_interview(&client, &store, org, 20, doc! {}).await.unwrap();

    let arn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-local/mongodb-uri-AbCdEf";
    let answer = serde_json::json!({"ARN": arn, "SecretString": server.url(), "VersionStages": ["AWSCURRENT"]});
    let (port, serving) = starting_extension(answer.to_string()).await;
    let env = [
        ("MONGODB_URI".to_owned(), String::new()),
        ("MONGODB_URI_SECRET_ARN".to_owned(), arn.to_owned()),
        ("MONGODB_DATABASE".to_owned(), database.to_owned()),
        ("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT".to_owned(), port.to_string()),
        ("SECRETS_EXTENSION_TIMEOUT_MS".to_owned(), "500".to_owned()),
        ("MONGODB_ALLOW_STANDALONE".to_owned(), "true".to_owned()),
        ("RECORD_CONCURRENCY".to_owned(), "1".to_owned()),
        ("LOG_LEVEL".to_owned(), "warn".to_owned()),
    ];
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_interview-completed"));
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "interview-completed", 256, &env).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("init goes on although the extension does not serve yet");

    serving.store(true, std::sync::atomic::Ordering::SeqCst);
    let body = format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":120}}"#
    );
    // The first invocation builds the clients, then answers.
    let response = invoke_one(&mut api, "m-deferred", &body).await;
    api.stop().await;
    assert_eq!(response["batchItemFailures"], serde_json::json!([]), "{response}");
    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert_eq!(settled.credits.consumed, Some(2), "settled by the first invocation");
}
