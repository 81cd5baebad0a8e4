//! `sophia-ops dlq redrive` against fauxqs: every message goes back with its body and
//! attributes; `--max` and `--dry-run` do what they say; and when sends or deletes fail midway
//! nothing is lost: afterwards every message is in the DLQ or in the source queue.

use crate::support::ops as ops_support;
use sophia_declarations::Queue;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, Message, MessageAttributeValue, SendMessageBatchRequestEntry,
};
use ops_support::{Ops, drain, ops, put, report_body, run, string_attr, visible, visible_when};
use sophia_ops::queues::QueueName;
use sophia_ops::redrive::{BatchResult, MoveIo, RedriveMethod, RedriveOptions, RedriveReport, SqsMoveIo, redrive_with};
use sophia_ops::{OpsError, Outcome, render};

fn attributes(n: usize) -> HashMap<String, MessageAttributeValue> {
    HashMap::from([
        ("eventType".to_owned(), string_attr("report.generate")),
        ("requestId".to_owned(), string_attr(&format!("settlement-{n}"))),
        (
            "attempt".to_owned(),
            MessageAttributeValue::builder().data_type("Number").string_value(n.to_string()).build().unwrap(),
        ),
        (
            "blob".to_owned(),
            MessageAttributeValue::builder()
                .data_type("Binary")
                .binary_value(Blob::new(vec![n as u8, 0, 255]))
                .build()
                .unwrap(),
        ),
    ])
}

/// Fills the report-generate DLQ with `n` distinct messages; returns body -> attributes.
async fn fill_dlq(o: &Ops, n: usize) -> BTreeMap<String, HashMap<String, MessageAttributeValue>> {
    let mut sent = BTreeMap::new();
    for i in 0..n {
        put(&o.sqs, &o.queues.report_generate.dlq.url, &report_body(i), attributes(i)).await;
        sent.insert(report_body(i), attributes(i));
    }
    sent
}

fn bodies(messages: &[Message]) -> Vec<String> {
    let mut b: Vec<String> = messages.iter().map(|m| m.body().unwrap().to_owned()).collect();
    b.sort();
    b
}

/// Nothing lost, nothing invented: the DLQ and the source together hold every original body
/// (duplicates allowed only where the report says so).
async fn assert_nothing_lost(
    o: &Ops,
    sent: &BTreeMap<String, HashMap<String, MessageAttributeValue>>,
    report: &RedriveReport,
) {
    visible_when(&o.sqs, &o.queues.report_generate.source.url, report.moved + report.duplicated).await;
    visible_when(&o.sqs, &o.queues.report_generate.dlq.url, sent.len() as u64 - report.moved).await;
    let in_source = drain(&o.sqs, &o.queues.report_generate.source.url).await;
    let in_dlq = drain(&o.sqs, &o.queues.report_generate.dlq.url).await;
    assert_eq!(in_source.len() as u64, report.moved + report.duplicated, "the source holds what was sent");
    assert_eq!(in_dlq.len() as u64, sent.len() as u64 - report.moved, "the DLQ holds everything not moved");
    let mut all = bodies(&in_source);
    all.extend(bodies(&in_dlq));
    all.sort();
    all.dedup();
    assert_eq!(all, sent.keys().cloned().collect::<Vec<_>>(), "every message is in one of the two queues");
    for m in in_source.iter().chain(&in_dlq) {
        assert_eq!(m.message_attributes().unwrap(), &sent[m.body().unwrap()], "attributes intact");
    }
}

#[tokio::test]
async fn redrive_moves_every_message_back_with_body_and_attributes_intact() {
    let o = ops().await;
    let sent = fill_dlq(&o, 23).await;
    let Outcome::DlqRedrive(report) =
        run(&o.ctx, &["dlq", "redrive", "report-generate", "--keep-attempts"]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!((report.moved, report.failed, report.duplicated), (23, 0, 0));
    assert!(report.is_clean());
    // fauxqs 1.9.2 does not implement StartMessageMoveTask: auto falls back and says why.
    assert_eq!(report.method, "receive-send-delete");
    assert!(
        report.fallback_reason.as_deref().is_some_and(|r| r.contains("InvalidAction")),
        "{:?}",
        report.fallback_reason
    );
    assert_eq!(visible(&o.sqs, &o.queues.report_generate.dlq.url).await, 0);
    let moved = drain(&o.sqs, &o.queues.report_generate.source.url).await;
    assert_eq!(bodies(&moved), sent.keys().cloned().collect::<Vec<_>>());
    for m in &moved {
        assert_eq!(
            &ops_support::moved_attributes(m, "dlq-redrive"),
            &sent[m.body().unwrap()],
            "attributes intact: {:?}",
            m.body()
        );
    }
}

#[tokio::test]
async fn the_move_task_method_reports_that_fauxqs_does_not_support_it() {
    let o = ops().await;
    fill_dlq(&o, 2).await;
    // Resetting each report just before its message moves rules a move task out.
    let err = run(&o.ctx, &["dlq", "redrive", "report-generate", "--method", "move-task"]).await.unwrap_err();
    assert!(matches!(err, OpsError::Invalid(_)) && err.to_string().contains("--keep-attempts"), "{err}");
    let err = run(&o.ctx, &["dlq", "redrive", "report-generate", "--method", "move-task", "--keep-attempts"])
        .await
        .unwrap_err();
    assert_eq!(err.sqs_code(), Some("InvalidAction"), "{err}");
    assert!(sophia_ops::redrive::is_unsupported(&err));
    assert_eq!(visible(&o.sqs, &o.queues.report_generate.dlq.url).await, 2, "nothing moved");
}

#[tokio::test]
async fn max_moves_at_most_n_and_dry_run_moves_nothing() {
    let o = ops().await;
    fill_dlq(&o, 13).await;
    let Outcome::DlqRedrive(dry) = run(&o.ctx, &["dlq", "redrive", "report-generate", "--dry-run"]).await.unwrap()
    else {
        panic!()
    };
    assert!(dry.dry_run);
    assert_eq!(dry.moved, 0);
    assert_eq!(dry.in_dlq_before, Some(13));
    assert!(dry.human().contains("nothing was moved"));
    assert_eq!(visible(&o.sqs, &o.queues.report_generate.dlq.url).await, 13);

    let Outcome::DlqRedrive(report) =
        run(&o.ctx, &["dlq", "redrive", "report-generate", "--max", "4", "--keep-attempts"]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(report.moved, 4);
    assert_eq!(visible_when(&o.sqs, &o.queues.report_generate.dlq.url, 9).await, 9);
    assert_eq!(visible_when(&o.sqs, &o.queues.report_generate.source.url, 4).await, 4);
}

#[tokio::test]
async fn json_redrive_output_parses() {
    let o = ops().await;
    fill_dlq(&o, 3).await;
    let result = run(&o.ctx, &["--json", "dlq", "redrive", "report-generate", "--keep-attempts"]).await;
    let rendered = render(&result, true);
    assert_eq!(rendered.exit_code, 0);
    let v: serde_json::Value = serde_json::from_str(&rendered.stdout).unwrap();
    assert_eq!(v["command"], "dlq-redrive");
    assert_eq!(v["moved"], 3);
    assert_eq!(v["failed"], 0);
}

/// Fails odd entries of every send batch, and the whole second send call.
struct FlakySends {
    inner: SqsMoveIo,
    calls: AtomicUsize,
}

impl MoveIo for FlakySends {
    async fn send_batch(&self, url: &str, entries: Vec<SendMessageBatchRequestEntry>) -> Result<BatchResult, OpsError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 1 {
            return Err(OpsError::Sqs {
                action: "SendMessageBatch",
                queue: url.into(),
                code: Some("ServiceUnavailable".into()),
                message: "injected".into(),
            });
        }
        let (keep, drop): (Vec<_>, Vec<_>) = entries.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let mut result = self.inner.send_batch(url, keep.into_iter().map(|(_, e)| e).collect()).await?;
        result.failed.extend(drop.into_iter().map(|(_, e)| (e.id, "InternalError: injected".to_owned())));
        Ok(result)
    }
    async fn delete_batch(
        &self,
        url: &str,
        entries: Vec<DeleteMessageBatchRequestEntry>,
    ) -> Result<BatchResult, OpsError> {
        self.inner.delete_batch(url, entries).await
    }
}

#[tokio::test]
async fn failed_sends_midway_lose_nothing_and_stay_in_the_dlq() {
    let o = ops().await;
    let sent = fill_dlq(&o, 25).await;
    let locator = o.ctx.locator().await;
    let io = FlakySends { inner: SqsMoveIo(o.sqs.clone()), calls: AtomicUsize::new(0) };
    let report =
        redrive_with(&locator, QueueName::of(Queue::ReportGenerate), &RedriveOptions::default(), &io).await.unwrap();
    assert!(report.failed > 0 && report.moved > 0, "{report:?}");
    assert_eq!(report.moved + report.failed, 25);
    assert_eq!(report.failures.len() as u64, report.failed);
    assert!(report.failures.iter().all(|f| f.step == "send"));
    assert!(!report.is_clean());
    assert!(report.human().contains("nothing was lost"));
    // The unsent messages were released: visible in the DLQ again now, not after the timeout.
    assert_eq!(visible(&o.sqs, &o.queues.report_generate.dlq.url).await, report.failed);
    assert_nothing_lost(&o, &sent, &report).await;
}

/// Sends to the real queue for the first batch, then to a queue that has been deleted.
struct DestinationDisappears {
    inner: SqsMoveIo,
    dead_url: String,
    calls: AtomicUsize,
}

impl MoveIo for DestinationDisappears {
    async fn send_batch(&self, url: &str, entries: Vec<SendMessageBatchRequestEntry>) -> Result<BatchResult, OpsError> {
        let target = if self.calls.fetch_add(1, Ordering::SeqCst) == 0 { url } else { &self.dead_url };
        self.inner.send_batch(target, entries).await
    }
    async fn delete_batch(
        &self,
        url: &str,
        entries: Vec<DeleteMessageBatchRequestEntry>,
    ) -> Result<BatchResult, OpsError> {
        self.inner.delete_batch(url, entries).await
    }
}

#[tokio::test]
async fn a_destination_deleted_midway_stops_the_run_and_loses_nothing() {
    let o = ops().await;
    let sent = fill_dlq(&o, 45).await;
    let dead = o.sqs.create_queue().queue_name(harness::unique("gone")).send().await.unwrap().queue_url.unwrap();
    o.sqs.delete_queue().queue_url(&dead).send().await.unwrap();
    let locator = o.ctx.locator().await;
    let io = DestinationDisappears { inner: SqsMoveIo(o.sqs.clone()), dead_url: dead, calls: AtomicUsize::new(0) };
    let report =
        redrive_with(&locator, QueueName::of(Queue::ReportGenerate), &RedriveOptions::default(), &io).await.unwrap();
    assert_eq!(report.moved, 10, "{report:?}");
    assert_eq!(report.failed, 30, "three whole batches failed, then the run stopped");
    assert!(report.stopped_early.as_deref().is_some_and(|s| s.contains("unavailable")), "{report:?}");
    assert!(
        report.failures.iter().all(|f| f.reason.contains("QueueDoesNotExist") || f.reason.contains("NonExistentQueue")),
        "{:?}",
        report.failures[0]
    );
    assert_nothing_lost(&o, &sent, &report).await;
}

/// The first delete call fails: those messages were sent, so they are in both queues.
struct FirstDeleteFails {
    inner: SqsMoveIo,
    calls: AtomicUsize,
}

impl MoveIo for FirstDeleteFails {
    async fn send_batch(&self, url: &str, entries: Vec<SendMessageBatchRequestEntry>) -> Result<BatchResult, OpsError> {
        self.inner.send_batch(url, entries).await
    }
    async fn delete_batch(
        &self,
        url: &str,
        entries: Vec<DeleteMessageBatchRequestEntry>,
    ) -> Result<BatchResult, OpsError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(OpsError::Sqs {
                action: "DeleteMessageBatch",
                queue: url.into(),
                code: None,
                message: "injected".into(),
            });
        }
        self.inner.delete_batch(url, entries).await
    }
}

#[tokio::test]
async fn a_failed_delete_after_a_successful_send_duplicates_and_says_it_is_harmless() {
    let o = ops().await;
    let sent = fill_dlq(&o, 15).await;
    let locator = o.ctx.locator().await;
    let io = FirstDeleteFails { inner: SqsMoveIo(o.sqs.clone()), calls: AtomicUsize::new(0) };
    let options = RedriveOptions { visibility: Duration::from_secs(1), ..RedriveOptions::default() };
    let report = redrive_with(&locator, QueueName::of(Queue::ReportGenerate), &options, &io).await.unwrap();
    assert_eq!(report.failed, 0);
    assert_eq!(report.moved + report.duplicated, 15, "{report:?}");
    if report.duplicated > 0 {
        assert!(report.human().contains("harmless, consumers are idempotent"));
    }
    // assert_nothing_lost waits for the undeleted copies to become visible again (1 s), then
    // accounts for every message.
    assert_nothing_lost(&o, &sent, &report).await;
}

#[tokio::test]
async fn the_redrive_method_option_parses() {
    let cli = sophia_ops::parse([
        "sophia-ops",
        "dlq",
        "redrive",
        "interview-completed",
        "--method",
        "receive-send-delete",
        "--visibility-timeout",
        "5m",
    ])
    .unwrap();
    let sophia_ops::cli::Command::Dlq(sophia_ops::cli::DlqCommand::Redrive { method, visibility_timeout, .. }) =
        cli.command
    else {
        panic!()
    };
    assert_eq!(method, RedriveMethod::ReceiveSendDelete);
    assert_eq!(visibility_timeout, Duration::from_secs(300));
}
