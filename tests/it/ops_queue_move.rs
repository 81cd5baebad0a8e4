//! `sophia-ops queue move --from-url <url> --to <queue>` against fauxqs, for a cutover from
//! another stack: every valid message of the other queue reaches this stack's queue with its
//! body and attributes; an invalid body is left where it was and reported (exit code 3);
//! `--dry-run` moves nothing; and a run that stops midway (sends failing, the destination
//! gone) loses nothing: every message is in one of the two queues.

use crate::support::ops as ops_support;
use sophia_declarations::Queue;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, SendMessageBatchRequestEntry};
use ops_support::{drain, ops, put, report_body, run, string_attr, visible, visible_when};
use sophia_ops::queues::QueueName;
use sophia_ops::redrive::{BatchResult, MoveIo, RedriveOptions, SqsMoveIo, queue_move};
use sophia_ops::{OpsError, Outcome, render};

/// A queue of "the old stack", named as the system being replaced names them
/// (`sophia-<stage>-InterviewCompletedQueue-<suffix>`).
async fn old_queue(client: &aws_sdk_sqs::Client, component: &str) -> String {
    let name = format!("sophia-{}-{component}-{}", harness::unique("old"), "a1b2c3");
    client.create_queue().queue_name(name).send().await.unwrap().queue_url.unwrap()
}

fn attrs(n: usize) -> HashMap<String, aws_sdk_sqs::types::MessageAttributeValue> {
    HashMap::from([
        ("eventType".to_owned(), string_attr("report.generate")),
        ("requestId".to_owned(), string_attr(&format!("settlement-{n}"))),
    ])
}

#[tokio::test]
async fn valid_messages_move_and_an_invalid_body_stays_where_it_was() {
    let o = ops().await;
    let old = old_queue(&o.sqs, "ReportGenerateDlq").await;
    for n in 0..14 {
        put(&o.sqs, &old, &report_body(n), attrs(n)).await;
    }
    let poison = put(&o.sqs, &old, r#"{"interviewId":"nope"}"#, attrs(99)).await;

    let Outcome::QueueMove(dry) =
        run(&o.ctx, &["queue", "move", "--from-url", &old, "--to", "report-generate", "--dry-run"]).await.unwrap()
    else {
        panic!()
    };
    assert!(dry.dry_run && dry.moved == 0);
    assert_eq!(dry.in_dlq_before, Some(15));
    let plan = dry.plan.as_ref().unwrap().human();
    assert!(plan.contains("each body is checked against the report-generate contract"), "{plan}");
    assert_eq!(visible_when(&o.sqs, &old, 15).await, 15, "a dry run moves nothing");

    let result = run(&o.ctx, &["queue", "move", "--from-url", &old, "--to", "report-generate"]).await;
    let Ok(Outcome::QueueMove(report)) = &result else { panic!("{result:?}") };
    assert_eq!((report.moved, report.failed, report.duplicated), (14, 0, 0));
    assert_eq!(report.kept.len(), 1);
    assert_eq!((report.kept[0].message_id.as_str(), report.kept[0].step), (poison.as_str(), "invalid"));
    assert!(report.kept[0].reason.contains("not a valid report-generate body"), "{:?}", report.kept);
    assert_eq!(render(&result, false).exit_code, 3, "done, but something was left behind");
    assert!(render(&result, false).stdout.starts_with("queue move "), "{}", render(&result, false).stdout);

    visible_when(&o.sqs, &o.queues.report_generate.source.url, 14).await;
    let moved = drain(&o.sqs, &o.queues.report_generate.source.url).await;
    assert_eq!(moved.len(), 14);
    for m in &moved {
        let n = (0..14).find(|n| report_body(*n) == m.body().unwrap()).expect("an original body");
        assert_eq!(ops_support::moved_attributes(m, "queue-move"), attrs(n), "attributes intact");
    }
    let left = drain(&o.sqs, &old).await;
    assert_eq!(left.len(), 1, "the invalid body is still in the old queue, visible again at once");
    assert_eq!(left[0].message_id(), Some(poison.as_str()));
}

#[tokio::test]
async fn a_body_for_the_other_queue_is_refused_by_the_contract() {
    let o = ops().await;
    let old = old_queue(&o.sqs, "InterviewCompletedQueue").await;
    put(&o.sqs, &old, &report_body(1), attrs(1)).await;
    let Outcome::QueueMove(report) =
        run(&o.ctx, &["queue", "move", "--from-url", &old, "--to", "interview-completed"]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!((report.moved, report.kept.len()), (0, 1), "a report.generate body is not an interview message");
    assert_eq!(visible(&o.sqs, &o.queues.interview_completed.source.url).await, 0);
    let err = run(
        &o.ctx,
        &["queue", "move", "--from-url", &o.queues.interview_completed.source.url, "--to", "interview-completed"],
    )
    .await
    .unwrap_err();
    assert!(matches!(err, OpsError::Invalid(_)), "moving a queue into itself is refused: {err}");
}

/// Fails the second send call whole, then every send after the fourth (the destination gone).
struct Outage {
    inner: SqsMoveIo,
    calls: AtomicUsize,
}

impl MoveIo for Outage {
    async fn send_batch(&self, url: &str, entries: Vec<SendMessageBatchRequestEntry>) -> Result<BatchResult, OpsError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call == 1 || call >= 4 {
            return Err(OpsError::Sqs {
                action: "SendMessageBatch",
                queue: url.into(),
                code: Some("ServiceUnavailable".into()),
                message: "injected".into(),
            });
        }
        self.inner.send_batch(url, entries).await
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
async fn a_move_that_stops_midway_loses_nothing() {
    let o = ops().await;
    let old = old_queue(&o.sqs, "ReportGenerateQueue").await;
    let bodies: Vec<String> = (0..80).map(report_body).collect();
    for (n, b) in bodies.iter().enumerate() {
        put(&o.sqs, &old, b, attrs(n)).await;
    }
    let locator = o.ctx.locator().await;
    let io = Outage { inner: SqsMoveIo(o.sqs.clone()), calls: AtomicUsize::new(0) };
    let report = queue_move(&locator, &old, QueueName::of(Queue::ReportGenerate), &RedriveOptions::default(), &io)
        .await
        .unwrap();
    assert!(report.stopped_early.is_some(), "three failed batches in a row stop the run: {report:?}");
    assert_eq!(report.moved, 30, "batches 1, 3 and 4 of 10 were sent: {report:?}");
    assert!(!report.is_clean());
    visible_when(&o.sqs, &o.queues.report_generate.source.url, report.moved).await;
    let in_new = drain(&o.sqs, &o.queues.report_generate.source.url).await;
    let in_old = drain(&o.sqs, &old).await;
    assert_eq!(in_new.len() as u64, report.moved);
    let mut all: Vec<String> = in_new.iter().chain(&in_old).map(|m| m.body().unwrap().to_owned()).collect();
    all.sort();
    let mut expected = bodies.clone();
    expected.sort();
    assert_eq!(all, expected, "every message is in exactly one of the two queues");
}
