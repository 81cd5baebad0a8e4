//! What a stage's function log says that its metrics cannot: the text of the last whole-batch
//! error (the `batch setup failed` ERROR line: MongoDB unreachable or refused, with the driver's
//! reason) and each record dropped as invalid (the `invalid message dropped` WARN line: its
//! messageId and the contract's reason). Read with CloudWatch Logs `FilterLogEvents` on
//! `/aws/lambda/<function>` over the window (the on-call role's log read access,
//! docs/runbook.md#aws-access); the local runner answers the same through its control channel.
//!
//! The lines' shape is the functions' JSON log (functions/sqs-consumer, `message`, `level`, the
//! span's fields under `span`); no candidate text is ever in them.

use std::time::Duration;

use serde::Serialize;

/// A record the function dropped because its contract rejects the body: the message is gone (not
/// in the queue, not in the DLQ) and no report or settlement state records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedMessage {
    pub at: Option<String>,
    pub message_id: String,
    /// The contract's reason: every invalid field, never its value.
    pub reason: String,
}

/// The message of the consumer's whole-batch failure line (functions/sqs-consumer, batch.rs).
const BATCH_SETUP_FAILED: &str = "batch setup failed";
/// The message of the consumer's drop line (functions/sqs-consumer, batch.rs).
const INVALID_DROPPED: &str = "invalid message dropped";

/// What one log line says of a whole-batch failure, when it is one.
pub fn batch_error_of(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let message = v["message"].as_str()?;
    if v["level"] != "ERROR" || !message.starts_with(BATCH_SETUP_FAILED) {
        return None;
    }
    Some(match v["error"].as_str() {
        Some(error) => format!("{message}: {error}"),
        None => message.to_owned(),
    })
}

/// The drop one log line records, when it is one.
pub fn dropped_of(line: &str, at: Option<String>) -> Option<DroppedMessage> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v["message"] != INVALID_DROPPED {
        return None;
    }
    Some(DroppedMessage {
        at,
        message_id: v["span"]["messageId"].as_str().unwrap_or("?").to_owned(),
        reason: v["reason"].as_str().unwrap_or("?").to_owned(),
    })
}

/// At most this many pages of events are read per pass.
const MAX_PAGES: usize = 10;
/// How many times a pass that did not reach the end is retried over the later half of what is
/// left: the newest lines are the ones that matter.
const NARROWINGS: usize = 4;

/// The lines of `function`'s log over `window` that match `pattern`, oldest first, with their
/// time. FilterLogEvents reads oldest first: when [`MAX_PAGES`] do not reach the end, the window
/// is narrowed to its later half and read again, so the newest lines are kept; then `Some(since)`
/// says that lines before `since` were not read.
async fn lines(
    ctx: &crate::Context,
    function: &str,
    pattern: &str,
    window: Duration,
) -> Result<(Vec<(String, Option<String>)>, Option<String>), String> {
    let client = aws_sdk_cloudwatchlogs::Client::new(&ctx.aws_config().await);
    let now = chrono::Utc::now().timestamp_millis();
    let mut start = now - i64::try_from(window.as_millis()).unwrap_or(i64::MAX / 2);
    let mut skipped = None;
    for pass in 0..=NARROWINGS {
        let (out, complete) = pages(&client, function, pattern, start).await?;
        if complete || pass == NARROWINGS {
            let unread =
                if complete { skipped } else { Some(format!("{} (and lines after the last shown)", at_of(start))) };
            return Ok((out, unread));
        }
        start += (now - start) / 2;
        skipped = Some(at_of(start));
    }
    unreachable!("the last pass returns")
}

fn at_of(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis).map_or_else(|| millis.to_string(), |t| t.to_rfc3339())
}

/// Up to [`MAX_PAGES`] pages from `start`; whether they reached the end.
async fn pages(
    client: &aws_sdk_cloudwatchlogs::Client,
    function: &str,
    pattern: &str,
    start: i64,
) -> Result<(Vec<(String, Option<String>)>, bool), String> {
    let mut out = Vec::new();
    let mut token = None;
    for _ in 0..MAX_PAGES {
        let page = client
            .filter_log_events()
            .log_group_name(format!("/aws/lambda/{function}"))
            .filter_pattern(pattern)
            .start_time(start)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e).to_string())?;
        for e in page.events() {
            out.push((e.message().unwrap_or_default().to_owned(), e.timestamp().map(at_of)));
        }
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            return Ok((out, true));
        }
    }
    Ok((out, false))
}

/// The last whole-batch error of `function` within `window`, from its ERROR lines.
pub async fn last_batch_error(
    ctx: &crate::Context,
    function: &str,
    window: Duration,
) -> Result<Option<String>, String> {
    let pattern = format!("{{ $.level = \"ERROR\" && $.message = \"{BATCH_SETUP_FAILED}*\" }}");
    let (found, unread) = lines(ctx, function, &pattern, window).await?;
    let note = unread.map_or(String::new(), |since| format!("; lines before {since} not read"));
    Ok(found.iter().rev().find_map(|(line, at)| {
        batch_error_of(line)
            .map(|e| format!("{e} (the function's ERROR line at {}{note})", at.as_deref().unwrap_or("?")))
    }))
}

/// The records `function` dropped as invalid within `window`, oldest first.
/// With `Some(since)` when lines before `since` were not read.
pub async fn dropped(
    ctx: &crate::Context,
    function: &str,
    window: Duration,
) -> Result<(Vec<DroppedMessage>, Option<String>), String> {
    let pattern = format!("{{ $.message = \"{INVALID_DROPPED}\" }}");
    let (found, unread) = lines(ctx, function, &pattern, window).await?;
    Ok((found.into_iter().filter_map(|(line, at)| dropped_of(&line, at)).collect(), unread))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines as functions/sqs-consumer writes them (functions/sqs-consumer/tests/logging.rs
    /// checks the shape).
    #[test]
    fn the_consumers_lines_read_as_a_batch_error_and_a_drop() {
        let setup = r#"{"level":"ERROR","message":"batch setup failed; the whole batch will be retried","error":"connecting to MongoDB: Server selection timeout: No available servers"}"#;
        assert_eq!(
            batch_error_of(setup).as_deref(),
            Some(
                "batch setup failed; the whole batch will be retried: connecting to MongoDB: Server selection timeout: No available servers"
            )
        );
        assert_eq!(batch_error_of(r#"{"level":"WARN","message":"batch setup failed; x"}"#), None);
        let drop = r#"{"level":"WARN","message":"invalid message dropped","reason":"interviewId: not an ObjectId","bodyBytes":40,"bodyPreview":"{...}","span":{"messageId":"m-1","requestId":"unknown"}}"#;
        assert_eq!(
            dropped_of(drop, Some("2026-12-07T03:00:00Z".into())),
            Some(DroppedMessage {
                at: Some("2026-12-07T03:00:00Z".into()),
                message_id: "m-1".into(),
                reason: "interviewId: not an ObjectId".into()
            })
        );
        assert_eq!(dropped_of(setup, None), None);
    }
}
