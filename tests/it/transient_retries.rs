//! Transient failures through the local SQS (fauxqs) with the declared visibility timeout
//! (1,800 s on the report queue): the report-generate instance as its `main` builds it, with the
//! record's own queue reached over SQS, and the OpenAI fake's standing fault as the outage.
//!
//! - a 5xx outage sets the failed record's visibility to a backoff: it reappears after seconds,
//!   not after the 1,800 s visibility timeout, and the report's attempt is given back;
//! - on the last receive, a delayed copy is sent (with `transientSince`) and the original
//!   acknowledged; after recovery the copy completes the report with its attempts intact, the
//!   DLQ empty;
//! - past the give-up age, the last receive's failure goes to the DLQ.
//!
//! Time is scaled (`Backoff::time_scale`, what `SOPHIA_RETRY_TIME_SCALE` sets) so that the
//! backoffs of about a minute take about a second.

use std::time::{Duration, Instant};

use crate::support::scaled_reports::{ScaledReports, scaled_options};
use bson::Document;
use harness::World;
use harness::mongo::{int, reports_of};
use harness::sqs::{depth, drain};
use sophia_contracts::InterviewId;
use sophia_local::esm::EventSourceMapping;
use sophia_openai_fake::Behaviour;
use sophia_sqs_consumer::backoff::Requeue;

/// The report consumer, time scaled, with a delayed copy on the last receive only when
/// `requeue` is given, during an OpenAI outage, the interview's report requested.
async fn setup(requeue: Option<Requeue>) -> ScaledReports {
    let mut options = scaled_options();
    options.backoff.requeue = None;
    if let Some(r) = requeue {
        options.backoff = options.backoff.with_requeue(r);
    }
    ScaledReports::during_an_outage(options).await
}

async fn report(w: &World, interview: InterviewId) -> Document {
    let mut stored = reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1, "one report document");
    stored.remove(0)
}

/// Polls until a delivery happens; returns it and when it came.
async fn next_delivery(
    reports: &EventSourceMapping,
    limit: Duration,
) -> (sophia_local::esm::InvocationSummary, Instant) {
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < limit, "no delivery within {limit:?} (the visibility timeout is 1,800 s)");
        if let Some(s) = reports.poll_once(Duration::from_secs(1)).await.expect("poll") {
            return (s, Instant::now());
        }
    }
}

#[tokio::test]
async fn an_outage_backs_the_record_off_for_seconds_not_the_visibility_timeout_and_costs_no_attempt() {
    let ScaledReports { world: w, interview, fake, reports, .. } = setup(None).await;
    let (sqs, queues) = (&w.sqs, &w.queues);

    let (first, _) = next_delivery(&reports, Duration::from_secs(30)).await;
    assert_eq!(first.failed_ids.len(), 1, "a batch item failure: {first:?}");
    let d = report(&w, interview).await;
    assert_eq!(d.get_str("status").unwrap(), "FAILED");
    assert_eq!(d.get_str("errorKind").unwrap(), "server_error");
    assert_eq!(int(&d, "attemptCount"), Some(0), "the provider's absence gives the attempt back: {d}");
    assert_eq!(int(&d, "transientFailures"), Some(1));

    // Back within the scaled backoff (receive 1: 30-60 s, here 1 s), far inside 1,800 s.
    fake.set_fault(None);
    fake.push(Behaviour::Report);
    let (second, _) = next_delivery(&reports, Duration::from_secs(60)).await;
    assert_eq!((second.failed_ids.len(), second.deleted), (0, 1), "{second:?}");
    let d = report(&w, interview).await;
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(int(&d, "attemptCount"), Some(1), "only the successful attempt counts: {d}");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (0, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn the_last_receive_requeues_a_delayed_copy_that_completes_after_recovery_with_the_dlq_empty() {
    let requeue = Requeue { delay: Duration::from_secs(600), give_up_after: Duration::from_secs(24 * 3600) };
    let ScaledReports { world: w, interview, fake, reports, .. } = setup(Some(requeue)).await;
    let (sqs, queues) = (&w.sqs, &w.queues);

    // Receives 1 and 2 back off; receive 3 sends the copy and acknowledges the original.
    for receive in 1..=3 {
        let (s, _) = next_delivery(&reports, Duration::from_secs(60)).await;
        if receive < 3 {
            assert_eq!(s.failed_ids.len(), 1, "receive {receive}: {s:?}");
        } else {
            assert_eq!((s.failed_ids.len(), s.deleted), (0, 1), "receive 3: requeued and acknowledged: {s:?}");
        }
    }
    let d = report(&w, interview).await;
    assert_eq!((int(&d, "attemptCount"), int(&d, "transientFailures")), (Some(0), Some(3)), "{d}");

    // The copy is delayed (600 s scaled: 10 s) and carries when the failures began.
    let peek =
        sqs.receive_message().queue_url(&queues.report_generate.source.url).wait_time_seconds(1).send().await.unwrap();
    assert!(peek.messages.unwrap_or_default().is_empty(), "the copy is delayed");
    fake.set_fault(None);
    fake.push(Behaviour::Report);
    let (copy, _) = next_delivery(&reports, Duration::from_secs(60)).await;
    assert_eq!((copy.failed_ids.len(), copy.deleted), (0, 1), "{copy:?}");
    let d = report(&w, interview).await;
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(int(&d, "attemptCount"), Some(1), "{d}");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (0, 0), "nothing in the DLQ");
    assert_eq!(depth(sqs, &queues.report_generate.source.url).await, (0, 0));
    w.assert_invariants().await;
}

#[tokio::test]
async fn past_the_give_up_age_the_last_receive_goes_to_the_dlq_with_the_attempts_still_available() {
    let requeue = Requeue { delay: Duration::from_secs(60), give_up_after: Duration::ZERO };
    // The fake bound for the whole test: the outage lasts as long as it is running.
    let ScaledReports { world: w, interview, fake: _fake, reports, .. } = setup(Some(requeue)).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    for receive in 1..=3 {
        let (s, _) = next_delivery(&reports, Duration::from_secs(60)).await;
        assert_eq!(s.failed_ids.len(), 1, "receive {receive}: {s:?}");
    }
    // The fourth receive attempt moves it to the DLQ (after the last backoff).
    let started = Instant::now();
    let moved = loop {
        assert!(started.elapsed() < Duration::from_secs(60), "not moved to the DLQ");
        let _ = reports.poll_once(Duration::from_secs(1)).await.expect("poll");
        let dlq = drain(sqs, &queues.report_generate.dlq.url).await;
        if !dlq.is_empty() {
            break dlq;
        }
    };
    assert_eq!(moved.len(), 1);
    let d = report(&w, interview).await;
    assert_eq!(d.get_str("status").unwrap(), "FAILED");
    assert_eq!(int(&d, "attemptCount"), Some(0), "a redrive needs no reset: {d}");
    assert_eq!(
        d.get_bool("waitingForRetry"),
        Ok(false),
        "given up: nothing retries it any more, it needs an operator: {d}"
    );
}
