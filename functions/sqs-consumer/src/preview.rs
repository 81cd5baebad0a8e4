//! The logged shape of a dropped body: enough to see why it was refused and to replay it, and no
//! free text (a `failureReason`, an unknown key's string) that could be candidate data.
//!
//! A JSON object keeps its keys (a key that is not a plain identifier is replaced by its length)
//! and its numbers, booleans and nulls. A string is kept only where the contract puts an id, a
//! timestamp, the `type` or a duration, and only if it looks like one (24 hex digits; an ISO-8601
//! shape; a known event type; a number); any other string becomes `"<string: N chars>"`. Arrays
//! and nested objects are shown the same way, to a bounded depth. A body that is not JSON is
//! `<not JSON: N bytes>`.

use serde_json::{Map, Value};

const ID_KEYS: [&str; 2] = ["interviewId", "organizationId"];
const TIMESTAMP_KEYS: [&str; 2] = ["completedAt", "failedAt"];
const EVENT_TYPES: [&str; 3] = ["interview.completed", "interview.failed", "report.generate"];
const MAX_DEPTH: usize = 4;

/// The redacted preview of `body`, at most `max_chars` characters.
pub fn redacted(body: &str, max_chars: usize) -> String {
    let text = match serde_json::from_str::<Value>(body) {
        Ok(v) => shape(None, &v, 0).to_string(),
        Err(_) => format!("<not JSON: {} bytes>", body.len()),
    };
    if text.chars().count() > max_chars { text.chars().take(max_chars).chain(['…']).collect() } else { text }
}

fn shape(key: Option<&str>, v: &Value, depth: usize) -> Value {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => v.clone(),
        Value::String(s) if key.is_some_and(|k| kept(k, s)) => v.clone(),
        Value::String(s) => Value::String(format!("<string: {} chars>", s.chars().count())),
        Value::Array(items) if depth >= MAX_DEPTH => Value::String(format!("<array: {} items>", items.len())),
        Value::Object(map) if depth >= MAX_DEPTH => Value::String(format!("<object: {} keys>", map.len())),
        Value::Array(items) => Value::Array(items.iter().map(|i| shape(None, i, depth + 1)).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let shown_key = if plain_key(k) { k.clone() } else { format!("<key: {} chars>", k.chars().count()) };
                // Only the top level of a body carries the contract's fields.
                let field = (depth == 0).then_some(k.as_str());
                out.insert(shown_key, shape(field, v, depth + 1));
            }
            Value::Object(out)
        }
    }
}

/// A string worth showing: the contract's id, timestamp, type or duration, well-formed.
fn kept(key: &str, s: &str) -> bool {
    if ID_KEYS.contains(&key) {
        s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit())
    } else if TIMESTAMP_KEYS.contains(&key) {
        s.len() <= 40 && s.bytes().all(|b| b.is_ascii_digit() || b"-:.+TZtz ".contains(&b))
    } else if key == "type" {
        EVENT_TYPES.contains(&s)
    } else if key == "durationSeconds" {
        s.len() <= 32 && s.bytes().all(|b| b.is_ascii_digit() || b"-+.eE".contains(&b))
    } else {
        false
    }
}

fn plain_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= 64 && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: &str = "65a1b2c3d4e5f60718293a4b";

    #[test]
    fn ids_timestamps_types_and_numbers_stay_free_text_does_not() {
        let body = format!(
            r#"{{"type":"interview.failed","interviewId":"{I}","organizationId":"not an id: Jane","failureReason":"Jane Doe cried","failedAt":"2026-12-02T17:30:00.000Z","extra":{{"note":"private","n":[1,"secret"]}},"durationSeconds":"60"}}"#
        );
        let shown = redacted(&body, 1024);
        let v: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(v["type"], "interview.failed");
        assert_eq!(v["interviewId"], I);
        assert_eq!(v["organizationId"], "<string: 15 chars>");
        assert_eq!(v["failureReason"], "<string: 14 chars>");
        assert_eq!(v["failedAt"], "2026-12-02T17:30:00.000Z");
        assert_eq!(v["extra"]["note"], "<string: 7 chars>");
        assert_eq!(v["extra"]["n"], serde_json::json!([1, "<string: 6 chars>"]));
        assert_eq!(v["durationSeconds"], "60");
        for secret in ["Jane", "cried", "private", "secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn not_json_odd_keys_deep_nesting_and_length_are_bounded() {
        assert_eq!(redacted("Jane Doe's transcript", 100), "<not JSON: 21 bytes>");
        assert_eq!(redacted(r#""a string body""#, 100), r#""<string: 13 chars>""#);
        let shown = redacted(r#"{"Jane Doe said hi":1}"#, 100);
        assert_eq!(shown, r#"{"<key: 16 chars>":1}"#);
        let deep = redacted(r#"{"a":{"b":{"c":{"d":{"e":"x"}}}}}"#, 100);
        assert!(deep.contains("<object: 1 keys>"), "{deep}");
        let long = redacted(&format!(r#"{{"a":[{}]}}"#, vec!["1"; 500].join(",")), 50);
        assert_eq!(long.chars().count(), 51);
    }
}
