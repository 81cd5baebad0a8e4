//! `sophia-ops publish` against fauxqs: what the command reports is exactly what lands on the
//! queue (body and both attributes); bad input and missing configuration are clear errors; the
//! `--json` output parses.

use crate::support::ops as ops_support;

use aws_sdk_sqs::types::Message;
use harness::World;
use ops_support::{INTERVIEW, ORG, drain, ops, run};
use sophia_ops::env::Env;
use sophia_ops::{Context, OpsError, Outcome, ProgressMode, render};

fn attr<'a>(m: &'a Message, name: &str) -> &'a str {
    m.message_attributes().unwrap()[name].string_value().unwrap()
}

#[tokio::test]
async fn publish_completed_round_trips_body_and_attributes() {
    let o = ops().await;
    let args = [
        "publish",
        "completed",
        INTERVIEW,
        ORG,
        "--completed-at",
        "2026-12-02T18:30:00+01:00",
        "--duration-seconds",
        "754",
        "--request-id",
        "ops-1",
    ];
    let Outcome::Publish(report) = run(&o.ctx, &args).await.unwrap() else { panic!("a publish report") };
    let received = drain(&o.sqs, &o.queues.interview_completed.source.url).await;
    assert_eq!(received.len(), 1);
    let m = &received[0];
    assert_eq!(
        m.body().unwrap(),
        r#"{"interviewId":"65a1b2c3d4e5f60718293a4b","organizationId":"65a1b2c3d4e5f60718293a4c","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":754}"#
    );
    assert_eq!(serde_json::to_string(&report.body).unwrap(), m.body().unwrap(), "the report shows the exact body sent");
    assert_eq!(report.message_id, m.message_id().unwrap());
    assert_eq!(attr(m, "eventType"), "interview.completed");
    assert_eq!(attr(m, "requestId"), "ops-1");
}

#[tokio::test]
async fn publish_failed_and_report_go_to_their_queues_with_defaults() {
    let o = ops().await;
    let before = chrono::Utc::now() - chrono::Duration::milliseconds(1);
    run(&o.ctx, &["publish", "failed", INTERVIEW, ORG, "--reason", "bot lost the call"]).await.unwrap();
    run(&o.ctx, &["publish", "report", INTERVIEW, ORG, "--request-id", "settlement-x"]).await.unwrap();

    let failed = drain(&o.sqs, &o.queues.interview_completed.source.url).await;
    assert_eq!(failed.len(), 1);
    let body: serde_json::Value = serde_json::from_str(failed[0].body().unwrap()).unwrap();
    assert_eq!(body["type"], "interview.failed");
    assert_eq!(body["failureReason"], "bot lost the call");
    let failed_at: chrono::DateTime<chrono::Utc> = body["failedAt"].as_str().unwrap().parse().unwrap();
    assert!(failed_at >= before, "failedAt defaults to now");
    assert_eq!(attr(&failed[0], "eventType"), "interview.failed");
    assert!(attr(&failed[0], "requestId").starts_with("ops:publish-failed:"), "the default names command and operator");

    let report = drain(&o.sqs, &o.queues.report_generate.source.url).await;
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].body().unwrap(), format!(r#"{{"interviewId":"{INTERVIEW}","organizationId":"{ORG}"}}"#));
    assert_eq!(attr(&report[0], "eventType"), "report.generate");
    assert_eq!(attr(&report[0], "requestId"), "settlement-x");
}

#[tokio::test]
async fn json_output_parses_and_names_the_command() {
    let o = ops().await;
    let result = run(&o.ctx, &["--json", "publish", "report", INTERVIEW, ORG]).await;
    let rendered = render(&result, true);
    assert_eq!(rendered.exit_code, 0);
    let v: serde_json::Value = serde_json::from_str(&rendered.stdout).expect("--json prints JSON");
    assert_eq!(v["command"], "publish");
    assert_eq!(v["eventType"], "report.generate");
    assert_eq!(v["body"]["interviewId"], INTERVIEW);
    assert!(v["messageId"].as_str().is_some_and(|id| !id.is_empty()));
}

#[tokio::test]
async fn a_missing_queue_url_is_a_clear_error_in_text_and_json() {
    let client = harness::sqs_client().await;
    let ctx =
        Context::new(Env::from_pairs(Vec::<(String, String)>::new()), None, ProgressMode::Hidden).with_sqs(client);
    let result = run(&ctx, &["publish", "completed", INTERVIEW, ORG, "--duration-seconds", "60"]).await;
    let err = result.as_ref().unwrap_err();
    assert!(matches!(err, OpsError::NotConfigured { .. }), "{err:?}");
    assert!(err.to_string().contains("INTERVIEW_COMPLETED_QUEUE_URL"), "{err}");
    let text = render(&result, false);
    assert_eq!(text.exit_code, 1);
    assert!(text.stderr.starts_with("error: "), "{}", text.stderr);
    let json: serde_json::Value = serde_json::from_str(&render(&result, true).stdout).unwrap();
    assert_eq!(json["kind"], "not-configured");
}

#[tokio::test]
async fn invalid_ids_timestamps_and_durations_are_refused_before_anything_is_sent() {
    for args in [
        vec!["sophia-ops", "publish", "completed", "65a1b2c3", ORG],
        vec!["sophia-ops", "publish", "completed", INTERVIEW, ORG, "--completed-at", "yesterday"],
        vec!["sophia-ops", "publish", "completed", INTERVIEW, ORG, "--duration-seconds", "1.5"],
        vec!["sophia-ops", "publish", "failed", INTERVIEW, ORG],
    ] {
        let err = sophia_ops::parse(args.clone()).unwrap_err();
        assert!(!err.to_string().is_empty(), "{args:?}");
    }
    let err = sophia_ops::parse(["sophia-ops", "publish", "report", INTERVIEW, "not-an-id"]).unwrap_err().to_string();
    assert!(err.contains("24-character hexadecimal ObjectId"), "{err}");
}

/// `--stage` finds the queues by name (`sophia-<stage>-...`) with no URL in the environment (a
/// stage is never local: `--yes` and MongoDB for the interview's state, see `ops_confirm.rs`).
#[tokio::test]
async fn stage_resolves_queues_by_name() {
    let client = harness::sqs_client().await;
    let stage = harness::unique("st");
    let queues = sophia_local::queues::create_queue_set(
        &client,
        &format!("sophia-{stage}"),
        sophia_declarations::Declaration::embedded(),
    )
    .await
    .unwrap();
    let ctx = Context::new(Env::from_pairs(Vec::<(String, String)>::new()), Some(stage), ProgressMode::Hidden)
        .with_sqs(client.clone())
        .with_mongo(World::without_migration().await.mongo)
        .confirmed_by(true);
    let Outcome::Publish(report) = run(&ctx, &["publish", "report", INTERVIEW, ORG]).await.unwrap() else { panic!() };
    assert_eq!(report.queue_url, queues.report_generate.source.url);
    assert_eq!(drain(&client, &queues.report_generate.source.url).await.len(), 1);
}
