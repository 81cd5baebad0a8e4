//! Candidate text never reaches a log line (docs/design.md, "Secrets and candidate data"): message
//! bodies carry a marker in every position where a producer can put free text (the
//! `failureReason`, an id, a timestamp, the `type`, the duration, an unknown key, a nested value,
//! a key, the whole body), valid or not, and go through the production interview-completed
//! handler. Not one captured log line contains the marker; every dropped body is still logged
//! with its messageId, the reason naming the field, and a redacted preview that keeps the ids.

use harness::World;
use harness::functions::completed_handler;
use harness::logs::LogCapture;
use harness::sqs::sqs_event;
use serde_json::{Value, json};
use sophia_sqs_consumer::Outcome;

const MARKER: &str = "Jane Doe MARKER-51c2 private";

#[tokio::test]
async fn a_marker_in_every_free_text_position_of_a_body_is_never_logged() {
    let logs = LogCapture::global();
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let (valid_failed, valid_extra) = (w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await);
    let (i, o) = (w.reserved_interview(org, 10).await.to_string(), org.to_string());
    let at = "2026-12-02T17:30:00.000Z";
    let completed = |patch: Value| {
        let mut v = json!({"interviewId": i, "organizationId": o, "completedAt": at, "durationSeconds": 60});
        for (k, val) in patch.as_object().unwrap() {
            v[k] = val.clone();
        }
        v.to_string()
    };
    let failed = |patch: Value| {
        let mut v = json!({"type": "interview.failed", "interviewId": i, "organizationId": o, "failureReason": MARKER, "failedAt": at});
        for (k, val) in patch.as_object().unwrap() {
            v[k] = val.clone();
        }
        v.to_string()
    };
    // (name, body, dropped?)
    let cases: Vec<(&str, String, bool)> = vec![
        (
            "valid failed",
            json!({"type": "interview.failed", "interviewId": valid_failed.to_string(), "organizationId": o, "failureReason": MARKER, "failedAt": at})
                .to_string(),
            false,
        ),
        (
            "valid with extra",
            json!({"interviewId": valid_extra.to_string(), "organizationId": o, "completedAt": at, "durationSeconds": 60, "note": MARKER, "meta": {"transcript": [MARKER]}})
                .to_string(),
            false,
        ),
        ("reason and bad date", failed(json!({"failedAt": "not a date"})), true),
        ("reason and bad id", failed(json!({"organizationId": "nope"})), true),
        ("reason as object", failed(json!({"failureReason": {"text": MARKER}})), true),
        ("marker as interviewId", completed(json!({"interviewId": MARKER})), true),
        ("marker as organizationId", completed(json!({"organizationId": MARKER})), true),
        ("marker as completedAt", completed(json!({"completedAt": MARKER})), true),
        ("marker as duration", completed(json!({"durationSeconds": MARKER})), true),
        ("marker in duration array", completed(json!({"durationSeconds": [MARKER]})), true),
        ("marker as type", completed(json!({"type": MARKER})), true),
        ("marker in extra and bad id", completed(json!({"interviewId": 1, "extra": {"deep": [[MARKER]]}})), true),
        ("marker as a key", completed(json!({MARKER: 1, "durationSeconds": -1})), true),
        ("marker as body", format!("{MARKER} completed the interview"), true),
        ("marker as json string", json!(MARKER).to_string(), true),
    ];

    let queues = &w.queues;
    let handler = completed_handler(w.mongo.clone(), &queues.report_generate.source.url).await;
    let records: Vec<(String, String)> =
        cases.iter().map(|(name, body, _)| (format!("redact-{}", name.replace(' ', "-")), body.clone())).collect();
    let mut outcomes = Vec::new();
    for chunk in records.chunks(10) {
        outcomes.extend(handler.handle_with_report(sqs_event(chunk)).await.expect("no batch error").outcomes);
    }
    for ((id, outcome), (name, _, dropped)) in outcomes.iter().zip(&cases) {
        let expected = if *dropped { Outcome::DroppedInvalid } else { Outcome::Processed };
        assert_eq!(*outcome, expected, "{name} ({id})");
    }

    let text = logs.text();
    for (n, line) in text.lines().enumerate() {
        assert!(!line.contains("MARKER-51c2"), "log line {n} carries candidate text: {line}");
    }
    let lines = logs.lines();
    for ((id, _), (name, body, dropped)) in records.iter().zip(&cases) {
        if !dropped {
            continue;
        }
        let line = lines
            .iter()
            .find(|l| l["message"] == "invalid message dropped" && l["span"]["messageId"] == id.as_str())
            .unwrap_or_else(|| panic!("{name}: no `invalid message dropped` line"));
        assert_eq!(line["bodyBytes"].as_u64(), Some(body.len() as u64), "{name}");
        let preview = line["bodyPreview"].as_str().unwrap();
        if body.starts_with('{') && !name.to_lowercase().contains("id") {
            assert!(preview.contains(&i), "{name}: the preview keeps the interviewId to replay it: {preview}");
        }
    }
    let reason_line = lines
        .iter()
        .find(|l| l["span"]["messageId"] == "redact-marker-as-interviewId" && l["message"] == "invalid message dropped")
        .unwrap();
    assert_eq!(
        reason_line["reason"],
        "body does not match the interview.completed schema: interviewId: expected a 24-character hexadecimal ObjectId, got a string of 28 characters"
    );
}
