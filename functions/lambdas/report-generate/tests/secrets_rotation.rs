//! The built `report-generate` binary with its OpenAI key in Secrets Manager, behind a local
//! Runtime API, a stand-in for the Parameters and Secrets extension and the OpenAI fake:
//!
//! - the extension answers "not ready" until the first event is requested: init does not call it
//!   and the first invocation reads the key;
//! - a rotation mid-run (a new value in the stand-in, the fake accepting only the new key): the
//!   report that hit the 401 is COMPLETED on its retry within the same invocation, the next ones
//!   use the new key, and the stand-in saw exactly one extra read;
//! - a revoked key with no new version: one re-read per interval, each delivery fails with
//!   `errorKind` `credentials_refused`, the third (maxReceiveCount) goes to the DLQ.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::{Document, doc};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_local::invoke::{Invoke, InvokeContext};
use sophia_local::runtime_api::RuntimeApi;
use sophia_local::servers::{LocalServer, free_port, start_nx_mongo};
use sophia_openai_fake::FakeOpenAi;
use sophia_platform::stand_in::ExtensionStandIn;
use sophia_reports::fixtures::InterviewFixture;
use sophia_reports::migrations;
use sophia_reports::store::{INTERVIEW_REPORTS, MAX_ATTEMPTS};

const ARN: &str = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia/local/openai-api-key-AbCdEf";
const OLD_KEY: &str = "sk-old-0123456789";
const NEW_KEY: &str = "sk-new-9876543210";

struct World {
    _server: LocalServer,
    db: mongodb::Database,
    uri: String,
    database: String,
    fake: FakeOpenAi,
    extension: ExtensionStandIn,
}

async fn world(database: &str) -> World {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let uri = server.url();
    let db = mongodb::Client::with_uri_str(&uri).await.unwrap().database(database);
    migrations::apply(&db).await.unwrap();
    let fake = FakeOpenAi::deterministic().expect("the OpenAI fake starts");
    let extension = ExtensionStandIn::start(true).await.unwrap();
    extension.put(ARN, OLD_KEY);
    World { _server: server, db, uri, database: database.to_owned(), fake, extension }
}

impl World {
    fn env(&self, refresh_interval_ms: u64) -> Vec<(String, String)> {
        [
            ("MONGODB_URI", self.uri.clone()),
            ("MONGODB_DATABASE", self.database.clone()),
            ("MONGODB_ALLOW_STANDALONE", "true".to_owned()),
            // Blank: unset for the binary, whatever the test process has.
            ("OPENAI_API_KEY", String::new()),
            ("OPENAI_API_KEY_SECRET_ARN", ARN.to_owned()),
            ("OPENAI_BASE_URL", self.fake.base_url()),
            ("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT", self.extension.port().to_string()),
            ("SECRETS_REFRESH_INTERVAL_MS", refresh_interval_ms.to_string()),
            ("LOG_LEVEL", "warn".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    async fn interview(&self) -> (InterviewId, OrganizationId) {
        let org = OrganizationId::new(bson::oid::ObjectId::new());
        InterviewFixture::new(org).insert(&self.db).await.unwrap()
    }

    async fn report(&self, interview: InterviewId) -> Document {
        self.db
            .collection::<Document>(INTERVIEW_REPORTS)
            .find_one(doc! {"interviewId": interview.oid()})
            .await
            .unwrap()
            .expect("a report")
    }

    /// The keys the fake was called with, in order.
    fn keys_seen(&self) -> Vec<String> {
        self.fake.requests().iter().map(|r| r.authorization.clone().unwrap_or_default()).collect()
    }
}

async fn started(world: &World, refresh_interval_ms: u64) -> RuntimeApi {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_report-generate"));
    let mut api = RuntimeApi::serve().await.unwrap();
    api.start_function(binary, "report-generate", 1024, &world.env(refresh_interval_ms)).unwrap();
    api.wait_ready(Duration::from_secs(20)).await.expect("init ends although the extension is not ready");
    assert_eq!(world.extension.reads(ARN), 0, "init never called the extension");
    // The function asked for its first event: the extension serves from now on, as on AWS.
    world.extension.serve_from_now();
    api
}

/// One `report.generate` record, received for the `receive`th time.
async fn deliver(api: &mut RuntimeApi, ids: (InterviewId, OrganizationId), receive: u32) -> serde_json::Value {
    let body = serde_json::json!({"interviewId": ids.0.to_string(), "organizationId": ids.1.to_string()});
    let event = serde_json::json!({"Records": [{
        "messageId": format!("m-{}-{receive}", ids.0),
        "receiptHandle": "r",
        "body": body.to_string(),
        "attributes": {"ApproximateReceiveCount": receive.to_string()},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:sophia-local-report-generate",
        "awsRegion": "us-east-1"
    }]});
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let context = InvokeContext {
        request_id: format!("req-{}-{receive}", ids.0),
        deadline_ms: now_ms + 60_000,
        function_arn: "arn:aws:lambda:us-east-1:000000000000:function:report-generate".into(),
    };
    api.invoke(event, context).await.expect("the binary answers")
}

fn failures(response: &serde_json::Value) -> usize {
    response["batchItemFailures"].as_array().map_or(usize::MAX, Vec::len)
}

#[tokio::test]
async fn a_rotated_key_is_picked_up_after_one_refused_call_and_one_extra_read() {
    let w = world("rotation_rotated").await;
    w.fake.accept_only_key(Some(OLD_KEY));
    let mut api = started(&w, 30_000).await;

    let first = w.interview().await;
    assert_eq!(failures(&deliver(&mut api, first, 1).await), 0);
    assert_eq!(w.extension.reads(ARN), 1, "the first invocation read the key once");

    // The rotation: a new AWSCURRENT value, the old key revoked.
    w.extension.put(ARN, NEW_KEY);
    w.fake.accept_only_key(Some(NEW_KEY));
    let rotated = w.interview().await;
    let response = deliver(&mut api, rotated, 1).await;
    assert_eq!(failures(&response), 0, "completed on its retry within the invocation: {response}");
    let report = w.report(rotated.0).await;
    assert_eq!(report.get_str("status").unwrap(), "COMPLETED", "{report}");

    let next = w.interview().await;
    assert_eq!(failures(&deliver(&mut api, next, 1).await), 0);
    api.stop().await;

    assert_eq!(w.report(next.0).await.get_str("status").unwrap(), "COMPLETED");
    let (old, new) = (format!("Bearer {OLD_KEY}"), format!("Bearer {NEW_KEY}"));
    assert_eq!(w.keys_seen(), [old.clone(), old, new.clone(), new], "refused once, then the new key only");
    assert_eq!(w.extension.reads(ARN), 2, "exactly one extra read");
}

#[tokio::test]
async fn a_revoked_key_without_a_new_version_is_reread_once_per_interval_and_reaches_the_dlq() {
    let w = world("rotation_revoked").await;
    w.fake.accept_only_key(Some("sk-that-nobody-has"));
    let interval = Duration::from_millis(2_000);
    let mut api = started(&w, interval.as_millis() as u64).await;
    let ids = w.interview().await;

    // SQS's three receives (maxReceiveCount 3): the first two within one interval.
    assert_eq!(failures(&deliver(&mut api, ids, 1).await), 1);
    assert_eq!(w.extension.reads(ARN), 2, "the first read, then one re-read after the refusal");
    assert_eq!(failures(&deliver(&mut api, ids, 2).await), 1);
    assert_eq!(w.extension.reads(ARN), 2, "not read again within the interval");
    tokio::time::sleep(interval + Duration::from_millis(200)).await;
    let last = deliver(&mut api, ids, 3).await;
    api.stop().await;
    assert_eq!(failures(&last), 1, "the last receive fails too: SQS moves it to the DLQ");
    assert_eq!(w.extension.reads(ARN), 3, "one re-read in the next interval");

    let report = w.report(ids.0).await;
    assert_eq!(report.get_str("status").unwrap(), "FAILED", "{report}");
    assert_eq!(report.get_str("errorKind").unwrap(), "credentials_refused", "{report}");
    let attempts = sophia_documents::int::at(&report, "attemptCount");
    assert_eq!(attempts, Some(Ok(i64::from(MAX_ATTEMPTS))), "{report}");
    assert!(w.keys_seen().iter().all(|k| k == &format!("Bearer {OLD_KEY}")), "never another key");
}
