//! `sophia-ops dlq list|show` against fauxqs: a listing shows every message with its id,
//! receive count, sent time, eventType and body, and removes nothing.

use crate::support::ops as ops_support;

use std::collections::HashMap;

use ops_support::{drain, ops, put, report_body, run, string_attr, visible};
use sophia_ops::env::Env;
use sophia_ops::{Context, OpsError, Outcome, ProgressMode, render};

fn attrs(event_type: &str, request_id: &str) -> HashMap<String, aws_sdk_sqs::types::MessageAttributeValue> {
    HashMap::from([
        ("eventType".to_owned(), string_attr(event_type)),
        ("requestId".to_owned(), string_attr(request_id)),
    ])
}

#[tokio::test]
async fn list_shows_what_is_in_the_dlq_without_removing_it() {
    let o = ops().await;
    let dlq = &o.queues.report_generate.dlq.url;
    let mut ids = Vec::new();
    for n in 0..12 {
        ids.push(put(&o.sqs, dlq, &report_body(n), attrs("report.generate", &format!("req-{n}"))).await);
    }
    let poison = put(&o.sqs, dlq, "{not json", attrs("report.generate", "req-poison")).await;

    let Outcome::DlqList(listing) = run(&o.ctx, &["dlq", "list", "report-generate"]).await.unwrap() else { panic!() };
    assert_eq!(listing.messages.len(), 13, "every message is listed once");
    assert!(!listing.truncated);
    let mut listed: Vec<&str> = listing.messages.iter().map(|m| m.message_id.as_str()).collect();
    listed.sort();
    let mut expected: Vec<&str> = ids.iter().chain([&poison]).map(String::as_str).collect();
    expected.sort();
    assert_eq!(listed, expected);
    for m in &listing.messages {
        assert_eq!(m.event_type.as_deref(), Some("report.generate"));
        assert!(m.receive_count.is_some_and(|n| n >= 1));
        assert!(m.sent_at.as_deref().is_some_and(|t| t.ends_with('Z')), "{:?}", m.sent_at);
        assert_eq!(m.contract_error.is_some(), m.message_id == poison, "only the poison message breaks the contract");
    }
    let first = listing.messages.iter().find(|m| m.message_id == ids[0]).unwrap();
    assert_eq!(first.body, report_body(0));
    assert_eq!(first.request_id.as_deref(), Some("req-0"));

    // Nothing was removed, and everything is visible again at once (released, not left hidden).
    assert_eq!(visible(&o.sqs, dlq).await, 13);
    let Outcome::DlqList(again) = run(&o.ctx, &["dlq", "list", "report-generate"]).await.unwrap() else { panic!() };
    assert_eq!(again.messages.len(), 13);
    assert_eq!(drain(&o.sqs, dlq).await.len(), 13);
}

#[tokio::test]
async fn list_stops_at_max_and_says_so() {
    let o = ops().await;
    let dlq = &o.queues.interview_completed.dlq.url;
    for n in 0..5 {
        put(&o.sqs, dlq, &report_body(n), attrs("interview.completed", "r")).await;
    }
    let Outcome::DlqList(listing) = run(&o.ctx, &["dlq", "list", "interview-completed", "--max", "3"]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(listing.messages.len(), 3);
    assert!(listing.truncated);
    assert!(listing.human().contains("--max reached"));
    assert_eq!(visible(&o.sqs, dlq).await, 5);
}

#[tokio::test]
async fn show_finds_one_message_and_a_missing_id_is_not_found() {
    let o = ops().await;
    let dlq = &o.queues.report_generate.dlq.url;
    let mut ids = Vec::new();
    for n in 0..7 {
        ids.push(put(&o.sqs, dlq, &report_body(n), attrs("report.generate", &format!("req-{n}"))).await);
    }
    let Outcome::DlqShow(shown) = run(&o.ctx, &["dlq", "show", "report-generate", &ids[5]]).await.unwrap() else {
        panic!()
    };
    assert_eq!(shown.message.message_id, ids[5]);
    assert_eq!(shown.message.body, report_body(5));
    assert!(shown.human().contains("\"interviewId\""));

    let missing = run(&o.ctx, &["dlq", "show", "report-generate", "00000000-0000-0000-0000-000000000000"]).await;
    assert!(matches!(missing, Err(OpsError::NotFound(_))), "{missing:?}");
    assert_eq!(visible(&o.sqs, dlq).await, 7, "show removes nothing");
}

#[tokio::test]
async fn json_listing_parses() {
    let o = ops().await;
    put(&o.sqs, &o.queues.report_generate.dlq.url, &report_body(1), attrs("report.generate", "req-json")).await;
    let result = run(&o.ctx, &["--json", "dlq", "list", "report-generate"]).await;
    let v: serde_json::Value = serde_json::from_str(&render(&result, true).stdout).unwrap();
    assert_eq!(v["command"], "dlq-list");
    assert_eq!(v["queue"], "report-generate");
    assert_eq!(v["messages"][0]["requestId"], "req-json");
    assert_eq!(v["messages"][0]["body"], report_body(1));
}

/// Without a DLQ URL in the environment, the DLQ is found from the source queue's RedrivePolicy.
#[tokio::test]
async fn the_dlq_is_found_from_the_redrive_policy_when_its_url_is_not_set() {
    let o = ops().await;
    put(&o.sqs, &o.queues.interview_completed.dlq.url, &report_body(3), attrs("interview.completed", "r")).await;
    let pairs: Vec<(String, String)> =
        o.queue_env().into_iter().filter(|(k, _)| k != "INTERVIEW_COMPLETED_DLQ_URL").collect();
    let ctx = Context::new(Env::from_pairs(pairs), None, ProgressMode::Hidden).with_sqs(o.sqs.clone());
    let Outcome::DlqList(listing) = run(&ctx, &["dlq", "list", "interview-completed"]).await.unwrap() else { panic!() };
    assert_eq!(listing.dlq_url, o.queues.interview_completed.dlq.url);
    assert_eq!(listing.messages.len(), 1);
}
