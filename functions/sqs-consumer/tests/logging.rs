//! Every record's log lines are JSON and carry messageId, requestId, eventType and receiveCount
//! from its span, and its final line the outcome and duration. Invalid bodies are logged with the
//! reason.

use std::io::Write;
use std::sync::{Arc, Mutex};

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::InterviewQueueMessage;
use sophia_sqs_consumer::{BoxError, ConsumerOptions, Failure, SqsConsumer};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("settlement store timed out")]
struct Timeout;

/// The JSON lines the consumer logs for `event`, whose failed interviews fail with a retry.
fn lines_for(event: SqsEvent) -> Vec<serde_json::Value> {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .flatten_event(true)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(SqsConsumer::new(ConsumerOptions::default()).process(
        LambdaEvent::new(event, Context::default()),
        || async { Ok::<(), BoxError>(()) },
        |m: InterviewQueueMessage, _| async move {
            match m {
                InterviewQueueMessage::Completed(_) => Ok(()),
                InterviewQueueMessage::Failed(_) => Err(Failure::retry(Timeout)),
            }
        },
    ))
    .unwrap();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    text.lines().map(|l| serde_json::from_str(l).expect("every line is JSON")).collect()
}

fn fixture() -> SqsEvent {
    serde_json::from_str(include_str!("fixtures/interview-completed-batch.json")).unwrap()
}

#[test]
fn record_lines_are_json_with_the_span_fields() {
    let lines = lines_for(fixture());
    let text = format!("{lines:#?}");
    let line = |message: &str| {
        lines.iter().find(|l| l["message"] == message).unwrap_or_else(|| panic!("no {message:?} line in {text}"))
    };
    let processed = line("record processed");
    assert_eq!(processed["span"]["messageId"], "059f36b4-87a3-44ab-83d2-661975830a7d");
    assert_eq!(processed["span"]["requestId"], "req-7f3a");
    assert_eq!(processed["span"]["eventType"], "interview.completed");
    assert_eq!(processed["span"]["receiveCount"], 1);
    assert_eq!(processed["span"]["outcome"], "processed");
    assert!(processed["span"]["durationMs"].is_u64());
    let failed = line("record failed; SQS will redeliver it");
    assert_eq!(failed["span"]["eventType"], "interview.failed");
    assert_eq!(failed["span"]["receiveCount"], 2);
    assert_eq!(failed["error"], "settlement store timed out");
    // Levels mean something: a retry SQS will make and a dropped invalid body need nobody.
    assert_eq!(processed["level"], "INFO");
    assert_eq!(failed["level"], "WARN");
    let invalid = line("invalid message dropped");
    assert_eq!(invalid["span"]["messageId"], "a7d5c9e2-1b3f-4c6d-9e8f-0a1b2c3d4e5f");
    assert_eq!(invalid["span"]["requestId"], "unknown");
    assert!(invalid["reason"].as_str().unwrap().contains("interviewId"), "{invalid}");
    assert_eq!(invalid["level"], "WARN");
}

/// A failure on the queue's last receive (maxReceiveCount, 3) sends the message to the DLQ: that
/// needs a person, so it is the one failure logged at ERROR.
#[test]
fn a_failure_on_the_last_receive_is_an_error() {
    let mut event = serde_json::to_value(fixture()).unwrap();
    for record in event["Records"].as_array_mut().unwrap() {
        record["attributes"]["ApproximateReceiveCount"] = serde_json::json!("3");
    }
    let lines = lines_for(serde_json::from_value(event).unwrap());
    let last = lines
        .iter()
        .find(|l| l["message"] == "record failed on its last receive; it goes to the DLQ")
        .unwrap_or_else(|| panic!("no last-receive line in {lines:#?}"));
    assert_eq!(last["level"], "ERROR");
    assert_eq!(last["maxReceiveCount"], 3);
    assert!(!lines.iter().any(|l| l["message"] == "record failed; SQS will redeliver it"));
}
