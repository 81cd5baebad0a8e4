//! Bad input on the interview queue: every body that does not satisfy the contract is dropped
//! (acknowledged, never retried, never in the DLQ) with one `invalid message dropped` error line
//! that says why, and nothing is written to any collection. Shown twice with the same bodies:
//! in-process through the production handler (the per-record `BatchReport` outcomes and the
//! captured JSON log lines), and through fauxqs and the event-source-mapping emulator (the
//! queues end empty, the DLQ too). Then the other side: unusual but valid bodies (unicode and
//! a huge `failureReason`, `120.0`, extra fields, upper-case ObjectIds) are settled normally.
//!
//! The parser's unit tests (`functions/contracts/src/messages.rs`) cover each rule on its own;
//! here the point is what the pipeline does with such a message.

use std::collections::HashMap;
use std::time::Duration;

use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::logs::LogCapture;
use harness::sqs::{depth, drain, failed_body, send, sqs_event};
use serde_json::{Value, json};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_sqs_consumer::Outcome;

/// SQS's largest message is 256 KiB (262,144 bytes); these bodies stay just under it.
const NEAR_SQS_LIMIT: usize = 250 * 1024;

/// fauxqs (1.9) refuses characters above U+FFFD (emoji) with InvalidMessageContents, where AWS
/// SQS accepts #x10000-#x10FFFF. For fauxqs, such characters inside JSON strings are sent as
/// `\uD83E\uDD16` escapes: the same JSON value once parsed. (The in-process half of the test
/// delivers the raw bodies.)
fn for_fauxqs(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    for c in body.chars() {
        if u32::from(c) > 0xFFFF {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `base` with the fields of `patch` set, or removed where the patch says `"<remove>"`.
fn patched(base: &Value, patch: Value) -> String {
    let mut v = base.clone();
    for (k, val) in patch.as_object().expect("a patch object") {
        if val == "<remove>" {
            v.as_object_mut().expect("an object").remove(k);
        } else {
            v[k] = val.clone();
        }
    }
    v.to_string()
}

/// `(name, body, what the logged reason must contain)`.
fn bad_bodies(i: InterviewId, o: OrganizationId) -> Vec<(&'static str, String, &'static str)> {
    let (i, o) = (i.to_string(), o.to_string());
    let completed_base = json!({"interviewId": i, "organizationId": o, "completedAt": "2026-12-02T17:30:00.000Z", "durationSeconds": 600});
    let failed_base = json!({"type": "interview.failed", "interviewId": i, "organizationId": o, "failureReason": "bot crashed", "failedAt": "2026-12-02T17:30:00.000Z"});
    let completed = |patch: Value| patched(&completed_base, patch);
    let failed = |patch: Value| patched(&failed_base, patch);
    vec![
        // Not JSON, or not an object.
        ("not json", "interview 65a1 completed".to_owned(), "body is not valid JSON"),
        ("empty body", String::new(), "body is not valid JSON"),
        ("truncated json", format!(r#"{{"interviewId":"{i}","organizationId":"#), "body is not valid JSON"),
        ("byte order mark", format!("\u{feff}{}", completed(json!({}))), "body is not valid JSON"),
        ("json array", format!(r#"["{i}","{o}"]"#), "must be a JSON object, got an array"),
        ("json null", "null".to_owned(), "must be a JSON object, got null"),
        ("json string", format!("\"{i}\""), "must be a JSON object, got a string"),
        // Wrong types.
        ("duration as string", completed(json!({"durationSeconds": "600"})), "durationSeconds"),
        ("interviewId as number", completed(json!({"interviewId": 123})), "interviewId"),
        ("organizationId null", completed(json!({"organizationId": null})), "organizationId"),
        ("completedAt as number", completed(json!({"completedAt": 1764696600000_i64})), "completedAt"),
        ("failureReason as array", failed(json!({"failureReason": ["ошибка", "🤖"]})), "failureReason"),
        // Missing fields.
        (
            "missing durationSeconds",
            completed(json!({"durationSeconds": "<remove>"})),
            "missing field `durationSeconds`",
        ),
        ("missing organizationId", completed(json!({"organizationId": "<remove>"})), "missing field `organizationId`"),
        ("missing failureReason", failed(json!({"failureReason": "<remove>"})), "missing field `failureReason`"),
        ("missing failedAt", failed(json!({"failedAt": "<remove>"})), "missing field `failedAt`"),
        ("empty object", "{}".to_owned(), "missing field"),
        // Bad ObjectIds and dates.
        ("objectid 23 chars", completed(json!({"interviewId": &i[..23]})), "24-character hexadecimal ObjectId"),
        (
            "objectid not hex",
            completed(json!({"organizationId": "zz".repeat(12)})),
            "24-character hexadecimal ObjectId",
        ),
        (
            "objectid full-width digits",
            completed(json!({"interviewId": "６５".repeat(12)})),
            "24-character hexadecimal ObjectId",
        ),
        (
            "objectid with emoji",
            failed(json!({"interviewId": format!("{}🙂", &i[..20])})),
            "24-character hexadecimal ObjectId",
        ),
        ("date without zone", completed(json!({"completedAt": "2026-12-02T17:30:00"})), "ISO-8601"),
        ("date in words", failed(json!({"failedAt": "yesterday"})), "ISO-8601"),
        // Out-of-range numbers.
        ("negative duration", completed(json!({"durationSeconds": -60})), "durationSeconds"),
        // A fractional duration is valid (docs/design.md; tests/it/contract_leniency.rs); a string or null is not.
        ("string duration", completed(json!({"durationSeconds": "90"})), "durationSeconds"),
        ("null duration", completed(json!({"durationSeconds": null})), "durationSeconds"),
        ("duration above 2^53", completed(json!({"durationSeconds": 9_007_199_254_740_993_u64})), "durationSeconds"),
        ("duration 1e400", completed(json!({})).replace("600", "1e400"), "number out of range"),
        // Unknown `type`.
        (
            "type interview.completed",
            completed(json!({"type": "interview.completed"})),
            "field `type` must be \"interview.failed\"",
        ),
        ("type upper case", failed(json!({"type": "INTERVIEW.FAILED"})), "field `type` must be \"interview.failed\""),
        ("type null", completed(json!({"type": null})), "field `type` must be \"interview.failed\""),
        ("type number", completed(json!({"type": 1})), "field `type` must be \"interview.failed\""),
        // Huge bodies, close to SQS's limit.
        (
            "huge objectid",
            completed(json!({"interviewId": "a".repeat(NEAR_SQS_LIMIT)})),
            "24-character hexadecimal ObjectId",
        ),
        ("huge garbage", "x".repeat(NEAR_SQS_LIMIT), "body is not valid JSON"),
        (
            "huge unicode reason, bad date",
            failed(
                json!({"failureReason": format!("🙂{}", "éж—✓".repeat(NEAR_SQS_LIMIT / 10)), "failedAt": "2026-02-30T00:00:00Z"}),
            ),
            "failureReason: expected a string of at most 4096 characters",
        ),
        // The contract's limit (sophia_contracts::FAILURE_REASON_MAX_CHARS): one character past it,
        // from a producer that does not check it, is dropped like any contract violation
        // (docs/design.md, "Message contract decisions").
        (
            "reason one past the limit",
            failed(json!({"failureReason": "é".repeat(sophia_contracts::FAILURE_REASON_MAX_CHARS + 1)})),
            "failureReason: expected a string of at most 4096 characters, got a string of 4097 characters",
        ),
    ]
}

/// Every bad body: dropped with a clear reason, in-process and through SQS; nothing written.
#[tokio::test]
async fn bad_bodies_are_dropped_with_a_clear_log_line_and_nothing_is_written() {
    let logs = LogCapture::global();
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let before = w.snapshot().await;
    let cases = bad_bodies(interview, org);
    for (name, body, _) in &cases {
        assert!(body.len() <= 256 * 1024, "{name}: {} bytes is over SQS's limit", body.len());
    }
    let (sqs, queues) = (&w.sqs, &w.queues);

    // 1. In-process, through the production handler: outcomes and log lines.
    let handler = harness::functions::completed_handler(w.mongo.clone(), &queues.report_generate.source.url).await;
    let records: Vec<(String, String)> =
        cases.iter().map(|(name, body, _)| (name.replace(' ', "-"), body.clone())).collect();
    let mut outcomes = Vec::new();
    for chunk in records.chunks(10) {
        let report = handler.handle_with_report(sqs_event(chunk)).await.expect("no batch error");
        assert!(report.response.batch_item_failures.is_empty(), "nothing is retried: {:?}", report.failed_ids());
        outcomes.extend(report.outcomes);
    }
    assert_eq!(outcomes.len(), cases.len());
    let mut dropped: HashMap<String, Value> = HashMap::new();
    for v in logs.lines() {
        if v["message"] == "invalid message dropped" {
            assert_eq!(v["level"], "WARN", "an expected outcome, not one that needs a person");
            dropped.insert(v["span"]["messageId"].as_str().unwrap().to_owned(), v);
        }
    }
    for ((id, outcome), (name, body, reason)) in outcomes.iter().zip(&cases) {
        assert_eq!(*outcome, Outcome::DroppedInvalid, "{name}");
        let line = dropped.get(id).unwrap_or_else(|| panic!("{name}: no `invalid message dropped` line"));
        let logged = line["reason"].as_str().unwrap();
        assert!(logged.contains(reason), "{name}: the reason {logged:?} does not say {reason:?}");
        assert!(logged.chars().count() <= 300, "{name}: the reason stays short ({} chars)", logged.chars().count());
        assert_eq!(line["bodyBytes"].as_u64(), Some(body.len() as u64), "{name}");
        assert!(line["bodyPreview"].as_str().unwrap().chars().count() <= 1024, "{name}: the preview is bounded");
        assert_eq!(line["span"]["outcome"], "dropped_invalid", "{name}");
    }

    // 2. The same bodies through SQS and the event source mapping: all acknowledged, none
    // retried, none in the DLQ.
    // (SQS refuses an empty body, as AWS does: that case can only arrive in-process.)
    let sendable: Vec<&String> = cases.iter().map(|(_, body, _)| body).filter(|b| !b.is_empty()).collect();
    assert_eq!(sendable.len(), cases.len() - 1);
    for body in &sendable {
        send(sqs, &queues.interview_completed.source.url, &for_fauxqs(body)).await;
    }
    let mapping = interview_esm(sqs, queues, 1, w.settings());
    let runs =
        poll_until(&mapping, Duration::from_secs(20), |s| s.iter().map(|r| r.deleted).sum::<usize>() >= sendable.len())
            .await;
    assert!(runs.iter().all(|r| r.failed_ids.is_empty() && r.batch_error.is_none()), "{runs:?}");
    for url in [
        &queues.interview_completed.source.url,
        &queues.interview_completed.dlq.url,
        &queues.report_generate.source.url,
    ] {
        assert_eq!(depth(sqs, url).await, (0, 0), "{url}");
    }
    // A long poll that outlasts the 1 s visibility timeout: anything coming back would arrive in it.
    assert!(
        mapping.poll_once(Duration::from_secs(2)).await.unwrap().is_none(),
        "nothing comes back after the visibility timeout"
    );

    assert_eq!(w.snapshot().await, before, "no collection was written");
    w.assert_invariants().await;
}

/// The other side of the contract: bodies that look unusual but are valid are settled, once.
/// A `failureReason` with Cyrillic, Arabic, combining marks, emoji and an escaped NUL; a
/// `failureReason` at the contract's limit of 4096 characters, each of 2 to 4 bytes;
/// `durationSeconds: 120.0`; extra unknown fields; upper-case ObjectIds.
#[tokio::test]
async fn unusual_but_valid_bodies_are_settled_once() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let (unicode, huge, odd) =
        (w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await);
    let (sqs, queues) = (&w.sqs, &w.queues);
    let reason = "Бот потерял звонок 🤖 — انقطعت المكالمة; e\u{0301}\u{0000} ✓";
    let odd_body = json!({
        "interviewId": odd.to_string().to_uppercase(), "organizationId": org.to_string().to_uppercase(),
        "completedAt": "2026-12-02T17:30:00.000+01:00", "durationSeconds": 120.0,
        "extra": {"nested": [1, 2, {"deep": true}]}, "requestId": "ignored",
    })
    .to_string();
    let limit = sophia_contracts::FAILURE_REASON_MAX_CHARS;
    let at_limit = format!("🤖{}{}", "éж—✓".repeat((limit - 1) / 4), "✓".repeat((limit - 1) % 4));
    assert_eq!(at_limit.chars().count(), limit);
    let huge_body = failed_body(huge, org, &at_limit);
    assert!(huge_body.len() > 10 * 1024, "{}", huge_body.len());
    for body in [failed_body(unicode, org, reason), huge_body, odd_body] {
        send(sqs, &queues.interview_completed.source.url, &for_fauxqs(&body)).await;
    }
    let mapping = interview_esm(sqs, queues, 1, w.settings());
    let runs = poll_until(&mapping, Duration::from_secs(10), |s| s.iter().map(|r| r.deleted).sum::<usize>() >= 3).await;
    assert!(runs.iter().all(|r| r.failed_ids.is_empty() && r.batch_error.is_none()), "{runs:?}");
    let sorted = |v: &[(&str, i64)]| {
        let mut v: Vec<(String, i64)> = v.iter().map(|(t, a)| ((*t).to_owned(), *a)).collect();
        v.sort();
        v
    };
    assert_eq!(w.ledger_of(unicode).await, sorted(&[("RESERVE", 10), ("RELEASE", 10)]));
    assert_eq!(w.ledger_of(huge).await, sorted(&[("RESERVE", 10), ("RELEASE", 10)]));
    assert_eq!(w.ledger_of(odd).await, sorted(&[("RESERVE", 10), ("SETTLE", 2), ("RELEASE", 8)]));
    assert_eq!(w.org_credits(org).await, (48, 0));
    let published = drain(sqs, &queues.report_generate.source.url).await;
    assert_eq!(
        published.iter().map(|m| m.body().unwrap().to_owned()).collect::<Vec<_>>(),
        [format!(r#"{{"interviewId":"{odd}","organizationId":"{org}"}}"#)]
    );
    assert_eq!(depth(sqs, &queues.interview_completed.dlq.url).await, (0, 0));
    w.assert_invariants().await;
}
