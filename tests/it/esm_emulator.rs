//! The event-source-mapping emulator against fauxqs: batch size, the SQS event shape, partial
//! batch responses, whole-batch failures, visibility timeout, and maxReceiveCount (a poison
//! message reaches the DLQ after exactly three receives).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use harness::{sqs_client, test_queues_fast};
use lambda_runtime::LambdaEvent;
use sophia_local::invoke::{BoxError, InProcess};

async fn send(client: &aws_sdk_sqs::Client, url: &str, body: &str) {
    client.send_message().queue_url(url).message_body(body).send().await.unwrap();
}

/// A function that records what it saw and fails the records whose body starts with "fail".
fn recording_function(seen: Arc<Mutex<Vec<SqsEvent>>>) -> InProcess {
    InProcess::new(move |event: LambdaEvent<SqsEvent>| {
        let seen = seen.clone();
        async move {
            let mut response = SqsBatchResponse::default();
            for r in &event.payload.records {
                if r.body.as_deref().unwrap_or("").starts_with("fail") {
                    let mut f = aws_lambda_events::event::sqs::BatchItemFailure::default();
                    f.item_identifier = r.message_id.clone().unwrap();
                    response.batch_item_failures.push(f);
                }
            }
            assert!(event.context.deadline > 0, "the emulator passes a deadline");
            seen.lock().unwrap().push(event.payload);
            Ok::<_, BoxError>(response)
        }
    })
}

#[tokio::test]
async fn batches_respect_the_declared_size_and_carry_the_lambda_event_shape() {
    let client = sqs_client().await;
    let queues = test_queues_fast(&client, 1).await;
    for i in 0..13 {
        send(&client, &queues.interview_completed.source.url, &format!("ok-{i}")).await;
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let esm = harness::functions::esm(
        &client,
        &queues.interview_completed.source,
        "interviewCompleted",
        Arc::new(recording_function(seen.clone())),
    );
    let mut total = 0;
    while total < 13 {
        let summary = esm.poll_once(Duration::from_secs(1)).await.unwrap().expect("messages are waiting");
        assert!(summary.message_ids.len() <= 10, "batch size is 10");
        assert_eq!(summary.deleted, summary.message_ids.len());
        total += summary.message_ids.len();
    }
    assert_eq!(total, 13);
    let first = seen.lock().unwrap()[0].clone();
    let record = &first.records[0];
    assert_eq!(record.event_source.as_deref(), Some("aws:sqs"));
    assert_eq!(record.event_source_arn.as_deref(), Some(queues.interview_completed.source.arn.as_str()));
    assert_eq!(record.attributes["ApproximateReceiveCount"], "1");
    assert!(record.receipt_handle.is_some() && record.md5_of_body.is_some());
    // The report queue's mapping takes one record per invocation.
    for i in 0..2 {
        send(&client, &queues.report_generate.source.url, &format!("ok-{i}")).await;
    }
    let esm = harness::functions::esm(
        &client,
        &queues.report_generate.source,
        "reportGenerate",
        Arc::new(recording_function(Arc::default())),
    );
    let summary = esm.poll_once(Duration::from_secs(1)).await.unwrap().unwrap();
    assert_eq!(summary.message_ids.len(), 1);
}

#[tokio::test]
async fn partial_failures_come_back_after_the_visibility_timeout_and_poison_reaches_the_dlq_after_three_receives() {
    let client = sqs_client().await;
    let queues = test_queues_fast(&client, 1).await;
    send(&client, &queues.interview_completed.source.url, "ok-1").await;
    send(&client, &queues.interview_completed.source.url, "fail-poison").await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let esm = harness::functions::esm(
        &client,
        &queues.interview_completed.source,
        "interviewCompleted",
        Arc::new(recording_function(seen.clone())),
    );
    let mut poison_receives = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        if esm.poll_once(Duration::from_secs(1)).await.unwrap().is_none() {
            let dlq = client
                .receive_message()
                .queue_url(&queues.interview_completed.dlq.url)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            if let Some(dead) = dlq.messages.filter(|m| !m.is_empty()) {
                assert_eq!(dead[0].body(), Some("fail-poison"));
                break;
            }
        }
    }
    for event in seen.lock().unwrap().iter() {
        for r in &event.records {
            if r.body.as_deref() == Some("fail-poison") {
                poison_receives.push(r.attributes["ApproximateReceiveCount"].clone());
            }
        }
    }
    assert_eq!(poison_receives, ["1", "2", "3"], "exactly three receives before the DLQ");
    // The mapping's receive-count histogram (the load test's picture) counts the same deliveries:
    // both records once at receive 1, the poison again at 2 and 3.
    assert_eq!(esm.stats.receive_counts(), std::collections::BTreeMap::from([(1, 2), (2, 1), (3, 1)]));
    let ok_deliveries = seen
        .lock()
        .unwrap()
        .iter()
        .flat_map(|e| e.records.iter())
        .filter(|r| r.body.as_deref() == Some("ok-1"))
        .count();
    assert_eq!(ok_deliveries, 1, "the succeeded record was deleted, not redelivered");
}

#[tokio::test]
async fn an_error_or_an_unknown_identifier_fails_the_whole_batch() {
    let client = sqs_client().await;
    let queues = test_queues_fast(&client, 1).await;
    send(&client, &queues.interview_completed.source.url, "a").await;
    let failing = InProcess::new(|_event: LambdaEvent<SqsEvent>| async {
        Err::<SqsBatchResponse, BoxError>("MongoDB is unreachable".into())
    });
    let esm =
        harness::functions::esm(&client, &queues.interview_completed.source, "interviewCompleted", Arc::new(failing));
    let summary = esm.poll_once(Duration::from_secs(1)).await.unwrap().unwrap();
    assert_eq!(summary.deleted, 0);
    assert!(summary.batch_error.unwrap().contains("unreachable"));

    let bogus = InProcess::new(|_event: LambdaEvent<SqsEvent>| async {
        let mut response = SqsBatchResponse::default();
        let mut f = aws_lambda_events::event::sqs::BatchItemFailure::default();
        f.item_identifier = String::new();
        response.batch_item_failures.push(f);
        Ok::<_, BoxError>(response)
    });
    let esm =
        harness::functions::esm(&client, &queues.interview_completed.source, "interviewCompleted", Arc::new(bogus));
    // A long poll past the 1 s visibility timeout: the message comes back during it.
    let summary = esm
        .poll_once(Duration::from_secs(3))
        .await
        .unwrap()
        .expect("the message came back after the visibility timeout");
    assert_eq!(summary.deleted, 0, "an empty itemIdentifier fails the whole batch");
    assert_eq!(summary.batch_error.as_deref().map(|e| e.contains("itemIdentifier")), Some(true));
}

#[tokio::test]
async fn a_function_that_outlives_its_timeout_fails_the_batch() {
    let client = sqs_client().await;
    let queues = test_queues_fast(&client, 1).await;
    send(&client, &queues.interview_completed.source.url, "slow").await;
    let slow = InProcess::new(|_event: LambdaEvent<SqsEvent>| async {
        // Not a wait: the function's slowness is what this test is about (tests/it/layout.rs
        // names this sleep as an exception).
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<_, BoxError>(SqsBatchResponse::default())
    });
    let mut esm =
        harness::functions::esm(&client, &queues.interview_completed.source, "interviewCompleted", Arc::new(slow));
    esm.function_timeout = Duration::from_millis(300);
    let summary = esm.poll_once(Duration::from_secs(1)).await.unwrap().unwrap();
    assert_eq!(summary.deleted, 0);
    assert_eq!(summary.batch_error.as_deref(), Some("the function timed out"));
}
