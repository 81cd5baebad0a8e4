//! The wrapper against every row of the replaced wrapper's (docs/design.md, "Its consumer wrapper") "Retry behaviour" and "Failure behaviour
//! (summary)" tables that belongs to it, fed with SQS event JSON in the shape AWS delivers.
//! Rows that belong to SQS itself (DLQ after 3 receives) are shown in `tests/it/producers.rs` and the
//! ESM emulator tests; rows that belong to settlement (publish after settle) in its own tests.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{Context, LambdaEvent};
use sophia_contracts::{InterviewQueueMessage, QueueMessage};
use sophia_sqs_consumer::{BatchError, BoxError, ConsumerOptions, Failure, Outcome, RecordMeta, SqsConsumer};

const FIXTURE: &str = include_str!("fixtures/interview-completed-batch.json");
const COMPLETED_ID: &str = "059f36b4-87a3-44ab-83d2-661975830a7d";
const FAILED_ID: &str = "2e1424d4-f796-459a-8184-9c92662be6da";
const INVALID_ID: &str = "a7d5c9e2-1b3f-4c6d-9e8f-0a1b2c3d4e5f";

fn fixture_event() -> LambdaEvent<SqsEvent> {
    LambdaEvent::new(serde_json::from_str(FIXTURE).unwrap(), Context::default())
}

fn consumer() -> SqsConsumer {
    SqsConsumer::new(ConsumerOptions::default())
}

async fn ok_setup() -> Result<(), BoxError> {
    Ok(())
}

#[derive(Debug, thiserror::Error)]
#[error("simulated transient failure")]
struct Transient;

/// A handler that fails the fixture's completed message with `failure()` and processes its failed
/// one.
fn failing_completed(
    failure: fn() -> Failure,
) -> impl Fn(InterviewQueueMessage, RecordMeta) -> std::future::Ready<Result<(), Failure>> {
    move |m, _meta| {
        std::future::ready(match m {
            InterviewQueueMessage::Completed(_) => Err(failure()),
            InterviewQueueMessage::Failed(_) => Ok(()),
        })
    }
}

#[tokio::test]
async fn retry_row_handler_throw_puts_only_that_message_in_batch_item_failures() {
    let report = consumer()
        .process_with_report(fixture_event(), ok_setup, failing_completed(|| Failure::retry(Transient)))
        .await
        .unwrap();
    assert_eq!(report.failed_ids(), [COMPLETED_ID]);
    assert_eq!(report.outcomes[1], (FAILED_ID.to_owned(), Outcome::Processed));
}

#[tokio::test]
async fn retry_row_invalid_schema_is_acknowledged_without_calling_the_handler() {
    let calls = AtomicUsize::new(0);
    let report = consumer()
        .process_with_report(fixture_event(), ok_setup, |_m: InterviewQueueMessage, _meta| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "only the two valid records reach the handler");
    assert_eq!(report.outcomes[2], (INVALID_ID.to_owned(), Outcome::DroppedInvalid));
    assert!(report.failed_ids().is_empty(), "an invalid body is never a batch item failure");
}

#[tokio::test]
async fn failure_row_malformed_json_is_dropped() {
    let mut event: SqsEvent = serde_json::from_str(FIXTURE).unwrap();
    event.records[0].body = Some("{not json".into());
    event.records[1].body = Some(r#"{"type":"interview.started","interviewId":"65a1b2c3d4e5f60718293a4b"}"#.into());
    let report = consumer()
        .process_with_report(
            LambdaEvent::new(event, Context::default()),
            ok_setup,
            |_m: InterviewQueueMessage, _| async { panic!("the handler must not see malformed bodies") },
        )
        .await
        .unwrap();
    assert_eq!(report.count(Outcome::DroppedInvalid), 3);
    assert!(report.response.batch_item_failures.is_empty());
}

#[tokio::test]
async fn retry_row_setup_failure_fails_the_whole_invocation() {
    let calls = AtomicUsize::new(0);
    let result = consumer()
        .process(
            fixture_event(),
            || async { Err::<(), BoxError>("MongoDB is unreachable".into()) },
            |_m: InterviewQueueMessage, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            },
        )
        .await;
    assert!(matches!(result, Err(BatchError::Setup(_))), "{result:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no record is processed when setup fails");
}

#[tokio::test]
async fn failure_row_transient_error_is_retried_per_message() {
    let report = consumer()
        .process_with_report(fixture_event(), ok_setup, |_m: InterviewQueueMessage, _| async {
            Err(Failure::retry(Transient))
        })
        .await
        .unwrap();
    assert_eq!(report.failed_ids(), [COMPLETED_ID, FAILED_ID]);
}

#[tokio::test]
async fn a_permanent_handler_error_is_logged_and_acknowledged() {
    let report = consumer()
        .process_with_report(fixture_event(), ok_setup, |_m: InterviewQueueMessage, _| async {
            Err(Failure::drop(Transient))
        })
        .await
        .unwrap();
    assert_eq!(report.count(Outcome::DroppedByHandler), 2);
    assert!(report.failed_ids().is_empty());
}

#[tokio::test]
async fn a_panic_fails_that_record_only() {
    let report = consumer()
        .process_with_report(fixture_event(), ok_setup, |m: InterviewQueueMessage, _| async move {
            if matches!(m, InterviewQueueMessage::Failed(_)) {
                panic!("bug in the failed path");
            }
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(report.failed_ids(), [FAILED_ID]);
    assert_eq!(report.outcomes[0].1, Outcome::Processed);
    assert_eq!(report.outcomes[1].1, Outcome::Panicked);
}

#[tokio::test]
async fn a_record_without_message_id_fails_the_invocation_before_any_work() {
    for missing in [None, Some(String::new()), Some("  ".to_owned())] {
        let mut event: SqsEvent = serde_json::from_str(FIXTURE).unwrap();
        event.records[1].message_id = missing;
        let calls = AtomicUsize::new(0);
        let result = consumer()
            .process(LambdaEvent::new(event, Context::default()), ok_setup, |_m: InterviewQueueMessage, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            })
            .await;
        assert!(matches!(result, Err(BatchError::MissingMessageId { index: 1 })), "{result:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn record_meta_carries_the_attributes_and_receive_count() {
    let seen = Mutex::new(Vec::new());
    consumer()
        .process(fixture_event(), ok_setup, |_m: InterviewQueueMessage, meta: RecordMeta| {
            seen.lock().unwrap().push((
                meta.message_id,
                meta.request_id.to_string(),
                meta.event_type_attribute,
                meta.receive_count,
            ));
            async { Ok(()) }
        })
        .await
        .unwrap();
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert_eq!(
        seen,
        [
            (COMPLETED_ID.to_owned(), "req-7f3a".to_owned(), Some("interview.completed".to_owned()), 1),
            (FAILED_ID.to_owned(), "req-8b1c".to_owned(), Some("interview.failed".to_owned()), 2),
        ]
    );
}

#[tokio::test]
async fn records_past_the_deadline_margin_are_returned_as_failures_without_running() {
    let mut context = Context::default();
    // 2 s left, margin 5 s: nothing may start.
    context.deadline = (std::time::SystemTime::now() + Duration::from_secs(2))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let calls = AtomicUsize::new(0);
    let report = consumer()
        .process_with_report(
            LambdaEvent::new(serde_json::from_str(FIXTURE).unwrap(), context),
            ok_setup,
            |_m: InterviewQueueMessage, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            },
        )
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(report.count(Outcome::DeadlineSkipped), 2);
    assert_eq!(report.failed_ids(), [COMPLETED_ID, FAILED_ID]);
}

#[tokio::test]
async fn a_record_that_runs_into_the_margin_stops_later_records_of_its_group() {
    let mut context = Context::default();
    context.deadline = (std::time::SystemTime::now() + Duration::from_millis(1500))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // Two records of one organization (same ordering key): the first takes 1 s, which leaves
    // less than the 1 s margin for the second.
    let body = |i: &str| {
        format!(
            r#"{{"interviewId":"{i}","organizationId":"65a1b2c3d4e5f60718293a4c","completedAt":"2026-12-02T17:30:00Z","durationSeconds":60}}"#
        )
    };
    let mut event: SqsEvent = serde_json::from_str(FIXTURE).unwrap();
    event.records.truncate(2);
    event.records[0].body = Some(body("65a1b2c3d4e5f60718293a01"));
    event.records[1].body = Some(body("65a1b2c3d4e5f60718293a02"));
    // Cancellation 100 ms before the deadline: the first record (1 s) finishes before it.
    let options = ConsumerOptions {
        deadline_margin: Duration::from_secs(1),
        cancel_margin: Duration::from_millis(100),
        ..ConsumerOptions::default()
    };
    let report = SqsConsumer::new(options)
        .process_with_report(LambdaEvent::new(event, context), ok_setup, |_m: InterviewQueueMessage, _| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(report.outcomes[0].1, Outcome::Processed);
    assert_eq!(report.outcomes[1].1, Outcome::DeadlineSkipped);
}

/// A handler that never returns (a MongoDB primary or SQS endpoint that stopped answering):
/// the record is cancelled shortly before the deadline and reported as a failure, the other
/// records keep their outcomes, and the invocation answers before its deadline.
#[tokio::test]
async fn a_record_still_running_near_the_deadline_is_cancelled_and_the_batch_is_answered() {
    let mut context = Context::default();
    let deadline = std::time::SystemTime::now() + Duration::from_millis(2500);
    context.deadline = deadline.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let options = ConsumerOptions {
        deadline_margin: Duration::from_millis(500),
        cancel_margin: Duration::from_millis(1000),
        ..ConsumerOptions::default()
    };
    let report = SqsConsumer::new(options)
        .process_with_report(
            LambdaEvent::new(serde_json::from_str(FIXTURE).unwrap(), context),
            ok_setup,
            |m: InterviewQueueMessage, _| async move {
                match m {
                    InterviewQueueMessage::Completed(_) => std::future::pending::<Result<(), Failure>>().await,
                    InterviewQueueMessage::Failed(_) => Ok(()),
                }
            },
        )
        .await
        .unwrap();
    assert!(std::time::SystemTime::now() < deadline, "answered before the invocation's deadline");
    assert_eq!(report.outcomes[0], (COMPLETED_ID.to_owned(), Outcome::DeadlineCancelled));
    assert_eq!(report.outcomes[1], (FAILED_ID.to_owned(), Outcome::Processed));
    assert_eq!(report.outcomes[2].1, Outcome::DroppedInvalid);
    assert_eq!(report.failed_ids(), [COMPLETED_ID]);
}

fn batch_of(bodies: &[String]) -> SqsEvent {
    let records: Vec<serde_json::Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| serde_json::json!({"messageId": format!("m{i}"), "receiptHandle": format!("r{i}"), "body": b, "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}, "eventSource": "aws:sqs"}))
        .collect();
    serde_json::from_value(serde_json::json!({"Records": records})).unwrap()
}

fn completed(interview: usize, org: usize) -> String {
    format!(
        r#"{{"interviewId":"{interview:024x}","organizationId":"{:024x}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":60}}"#,
        org + 0x1000
    )
}

/// Records of one organization never overlap; records of different organizations do run
/// concurrently (up to the bound).
#[tokio::test]
async fn same_organization_records_run_one_after_another_and_others_concurrently() {
    let bodies: Vec<String> = (0..8).map(|i| completed(i, i % 2)).collect();
    let running: Arc<Mutex<Vec<String>>> = Arc::default();
    let max_parallel = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let report = SqsConsumer::new(ConsumerOptions { concurrency: 8, ..ConsumerOptions::default() })
        .process_with_report(
            LambdaEvent::new(batch_of(&bodies), Context::default()),
            ok_setup,
            |m: InterviewQueueMessage, _| {
                let (running, max_parallel, overlaps) = (running.clone(), max_parallel.clone(), overlaps.clone());
                async move {
                    let org = m.organization_id().to_string();
                    {
                        let mut r = running.lock().unwrap();
                        if r.contains(&org) {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        r.push(org.clone());
                        max_parallel.fetch_max(r.len(), Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    running.lock().unwrap().retain(|o| o != &org);
                    Ok(())
                }
            },
        )
        .await
        .unwrap();
    assert_eq!(report.count(Outcome::Processed), 8);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two records of one organization overlapped");
    assert_eq!(max_parallel.load(Ordering::SeqCst), 2, "the two organizations should run side by side");
}

mod property {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone, Copy)]
    enum Planned {
        Succeed,
        Retry,
        Drop,
        Panic,
        Invalid,
    }

    fn planned() -> impl Strategy<Value = Planned> {
        prop_oneof![
            Just(Planned::Succeed),
            Just(Planned::Retry),
            Just(Planned::Drop),
            Just(Planned::Panic),
            Just(Planned::Invalid)
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// For any batch (1 to 10 records over up to 3 organizations) and any pattern of
        /// outcomes, batchItemFailures is exactly the set of records whose handler asked for a
        /// retry or panicked: never an invalid or dropped one, never a succeeded one.
        #[test]
        fn batch_item_failures_are_exactly_the_failed_records(plan in proptest::collection::vec((planned(), 0usize..3), 1..=10), concurrency in 1usize..5) {
            let bodies: Vec<String> = plan
                .iter()
                .enumerate()
                .map(|(i, (p, org))| match p {
                    Planned::Invalid => format!("{{\"interviewId\":{i}}}"),
                    _ => completed(i, *org),
                })
                .collect();
            let plan_by_interview: std::collections::HashMap<String, Planned> =
                plan.iter().enumerate().map(|(i, (p, _))| (format!("{i:024x}"), *p)).collect();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let report = rt.block_on(SqsConsumer::new(ConsumerOptions { concurrency, ..ConsumerOptions::default() }).process_with_report(
                LambdaEvent::new(batch_of(&bodies), Context::default()),
                ok_setup,
                |m: InterviewQueueMessage, _| {
                    let p = plan_by_interview[&m.interview_id().to_string()];
                    async move {
                        match p {
                            Planned::Succeed => Ok(()),
                            Planned::Retry => Err(Failure::retry(Transient)),
                            Planned::Drop => Err(Failure::drop(Transient)),
                            Planned::Panic => panic!("planned panic"),
                            Planned::Invalid => unreachable!("invalid bodies never reach the handler"),
                        }
                    }
                },
            )).unwrap();
            let expected: BTreeSet<String> = plan
                .iter()
                .enumerate()
                .filter(|(_, (p, _))| matches!(p, Planned::Retry | Planned::Panic))
                .map(|(i, _)| format!("m{i}"))
                .collect();
            let actual: BTreeSet<String> = report.failed_ids().into_iter().map(str::to_owned).collect();
            prop_assert_eq!(actual.len(), report.response.batch_item_failures.len(), "no duplicate identifiers");
            prop_assert!(report.response.batch_item_failures.iter().all(|f| !f.item_identifier.is_empty()));
            prop_assert_eq!(actual, expected);
            prop_assert_eq!(report.outcomes.len(), plan.len());
        }
    }
}

/// A queue that records what the wrapper sends to the DLQ (or refuses to).
#[derive(Debug, Default)]
struct DeadLetters {
    sent: Mutex<Vec<(String, String)>>,
    refuse: bool,
}

impl sophia_sqs_consumer::queue::RecordQueue for DeadLetters {
    fn change_visibility<'a>(
        &'a self,
        _record: &'a sophia_sqs_consumer::queue::RecordRef,
        _timeout: Duration,
    ) -> futures::future::BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
    fn requeue<'a>(
        &'a self,
        _record: &'a sophia_sqs_consumer::queue::RecordRef,
        _delay: Duration,
        _since: u64,
    ) -> futures::future::BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
    fn dead_letter<'a>(
        &'a self,
        record: &'a sophia_sqs_consumer::queue::RecordRef,
        reason: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            if self.refuse {
                return Err("AccessDenied".into());
            }
            self.sent.lock().unwrap().push((record.message_id.clone(), reason.to_owned()));
            Ok("dlq-copy-1".to_owned())
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("interview 1 belongs to organization 2, not to 3 as the message says")]
struct Permanent;

/// A failure no retry can change goes to the DLQ on this delivery and is acknowledged; if that
/// send fails it is retried as before, so it is never lost.
#[tokio::test]
async fn a_record_that_can_never_succeed_is_dead_lettered_on_its_first_delivery_or_else_retried() {
    for refuse in [false, true] {
        let queue = Arc::new(DeadLetters { refuse, ..DeadLetters::default() });
        let consumer = SqsConsumer::new(ConsumerOptions::default().with_queue(queue.clone()));
        let report = consumer
            .process_with_report(fixture_event(), ok_setup, failing_completed(|| Failure::dead_letter(Permanent)))
            .await
            .unwrap();
        if refuse {
            assert_eq!(report.failed_ids(), [COMPLETED_ID], "the send failed: retried, not lost");
            assert_eq!(report.outcomes[0].1, Outcome::Failed);
        } else {
            assert!(report.failed_ids().is_empty(), "acknowledged once in the DLQ");
            assert_eq!(report.outcomes[0], (COMPLETED_ID.to_owned(), Outcome::DeadLettered));
            let sent = queue.sent.lock().unwrap().clone();
            assert_eq!(sent, [(COMPLETED_ID.to_owned(), Permanent.to_string())]);
        }
    }
}

/// A queue not declared `deadLettersPermanentFailures` (queues.json): the wrapper does not send a
/// record that can never succeed to the DLQ (its role has no SendMessage there); SQS shows it
/// again and the redrive policy dead-letters it, so it is not lost. The declared queues' options
/// carry their own property.
#[tokio::test]
async fn a_queue_not_declared_to_dead_letter_leaves_the_record_to_the_redrive_policy() {
    let queue = Arc::new(DeadLetters::default());
    let options = ConsumerOptions { dead_letters: false, ..ConsumerOptions::default() }.with_queue(queue.clone());
    let report = SqsConsumer::new(options)
        .process_with_report(fixture_event(), ok_setup, failing_completed(|| Failure::dead_letter(Permanent)))
        .await
        .unwrap();
    assert_eq!(report.failed_ids(), [COMPLETED_ID], "retried by SQS, not lost");
    assert_eq!(report.outcomes[0].1, Outcome::Failed);
    assert!(queue.sent.lock().unwrap().is_empty(), "nothing sent to the DLQ");

    let d = sophia_declarations::Declaration::embedded();
    for q in &d.queues {
        assert_eq!(ConsumerOptions::for_queue(&q.key).dead_letters, q.dead_letters_permanent_failures, "{}", q.key);
    }
}
