//! The per-batch ping of a warm handler whose MongoDB URI was rotated: the ping is refused for
//! its credentials, the handler reads the URI again through the extension (a stand-in), rebuilds
//! its clients with the new URI and the batch settles on them; a second refused batch within the
//! interval is not read again. In-process (the handler `main` builds), because a running
//! nx-27017 cannot start refusing a URI it accepted: the handler starts with clients built on the
//! refused URI, as a sandbox does whose secret was rotated after its init, and the interval is
//! 5 s.
//!
//! The only test of this binary: it sets the process's environment, as Lambda does.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use bson::doc;
use interview_completed::Handler;
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{ReportGenerate, RequestId};
use sophia_credits::{BoxError, CreditsStore, FnPublisher, Published, migrations, seed};
use sophia_local::servers::{free_port, start_nx_mongo};
use sophia_platform::mongo::{Mongo, MongoSettings};
use sophia_platform::secrets::{self, Secret};
use sophia_platform::stand_in::ExtensionStandIn;
use sophia_sqs_consumer::ConsumerOptions;

const ARN: &str = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-local/mongodb-uri-AbCdEf";

/// Publishes nothing: the test is about MongoDB.
async fn skip(_: ReportGenerate, _: RequestId) -> Result<Published, BoxError> {
    Ok(Published::Skipped { reason: "not published in this test".into() })
}

fn event(interview: impl std::fmt::Display, org: impl std::fmt::Display) -> LambdaEvent<SqsEvent> {
    let body = format!(
        r#"{{"interviewId":"{interview}","organizationId":"{org}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":120}}"#
    );
    let event = serde_json::json!({"Records": [{
        "messageId": format!("m-{interview}"), "body": body,
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}, "eventSource": "aws:sqs"
    }]});
    LambdaEvent::new(serde_json::from_value(event).unwrap(), Context::default())
}

#[tokio::test]
async fn a_refused_ping_reads_the_uri_again_and_the_batch_settles_on_rebuilt_clients() {
    let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
    let database = "rotation_ping";
    let client = mongodb::Client::with_uri_str(server.url()).await.unwrap();
    let db = client.database(database);
    migrations::apply(&db).await.unwrap();
    let store = CreditsStore::new(db.clone());
    let org = seed::create_organization(&store, "Rotated").await.unwrap();
    seed::grant_lot(&store, org, 50, chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
    let interview = seed::reserved_interview(&client, &store, org, 20, doc! {}).await.unwrap();

    let revoked = server.url().replacen("mongodb://", "mongodb://sophia:revoked@", 1);
    let extension = ExtensionStandIn::start(false).await.unwrap();
    extension.put(ARN, &revoked);
    // SAFETY: the only test of this binary; nothing else reads the environment concurrently.
    unsafe {
        std::env::remove_var("MONGODB_URI");
        std::env::set_var("MONGODB_URI_SECRET_ARN", ARN);
        std::env::set_var("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT", extension.port().to_string());
        std::env::set_var("AWS_SESSION_TOKEN", "local");
        std::env::set_var("MONGODB_DATABASE", database);
        std::env::set_var("MONGODB_ALLOW_STANDALONE", "true");
        std::env::set_var("SOPHIA_METRICS", "off");
    }
    // The sandbox's init: the URI read once, clients built on it (lazily: nothing refused yet).
    secrets::load(Secret::MongoDbUri).await.unwrap();
    assert_eq!(secrets::get(Secret::MongoDbUri).unwrap().expose(), revoked);
    let settings = MongoSettings::from_env().unwrap();
    let mongo = Mongo::connect(&settings).await.unwrap();
    let options = ConsumerOptions { concurrency: 1, ..ConsumerOptions::default() };
    // Long enough for a refused batch (a ping tried twice) to end within it.
    let interval = Duration::from_millis(5_000);
    let handler = Handler::renewable(mongo, FnPublisher(skip), options, interval);

    // Revoked without a replacement yet: the batch fails after one re-read.
    let failed = handler.handle_with_report(event(interview, org)).await;
    assert!(failed.is_err(), "the ping is refused and the URI has no new value");
    assert_eq!(extension.reads(ARN), 2);

    // The new version is put, but within the interval nothing is read again.
    extension.put(ARN, &server.url());
    assert!(handler.handle_with_report(event(interview, org)).await.is_err());
    assert_eq!(extension.reads(ARN), 2, "one re-read per interval");
    assert!(store.interview(interview.oid()).await.unwrap().unwrap().settled_at.is_none());

    // The next interval: read again, a new value, clients rebuilt, the batch settles on them.
    tokio::time::sleep(interval + Duration::from_millis(200)).await;
    let report = handler.handle_with_report(event(interview, org)).await.expect("the batch runs");
    assert!(report.failed_ids().is_empty(), "{:?}", report.outcomes);
    assert_eq!(extension.reads(ARN), 3);
    let settled = store.interview(interview.oid()).await.unwrap().unwrap();
    assert_eq!(settled.credits.consumed, Some(2), "settled with the new URI");
}
