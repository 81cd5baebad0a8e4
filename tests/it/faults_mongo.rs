//! MongoDB faults through the local pipeline: fauxqs queues with a 1 s visibility timeout, the
//! event-source-mapping emulator, the interview-completed handler, and an nx-27017 of the test's
//! own whose data is in SQLite files ([`DiskMongo`]), so it can be killed by PID (SIGKILL, a
//! crash) and restarted on the same port with what it had committed.
//!
//! Each case ends with the state of the queues and the database, and the five invariants.
//! (`settlement_handler.rs::an_unreachable_mongodb_fails_the_whole_batch` shows the setup error
//! in-process; here the batch goes through SQS and comes back.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use bson::doc;
use harness::World;
use harness::faults::DiskMongo;
use harness::functions::{esm, interview_esm};
use harness::mongo::database_name;
use harness::sqs::{assert_queues_empty, completed_body, depth, drain, failed_body};
use harness::world::Visibility;
use interview_completed::SqsReportPublisher;
use lambda_runtime::LambdaEvent;
use mongodb::event::EventHandler;
use mongodb::event::command::CommandEvent;
use sophia_contracts::InterviewQueueMessage;
use sophia_credits::model::{OutboxEntry, OutboxStatus};
use sophia_credits::{SettleContext, SettlementService};
use sophia_local::invoke::{BoxError, Instances};
use sophia_local::servers::free_port;
use sophia_sqs_consumer::{ConsumerOptions, RecordMeta, SqsConsumer};
use sophia_sqs_producer::{QueueUrls, SqsProducer};

/// The production settlement inside the production consumer wrapper, as
/// `interview_completed::Handler` runs it, on a client of the test's choosing.
struct Doomed {
    service: SettlementService,
    publisher: SqsReportPublisher,
    consumer: SqsConsumer,
}

impl Doomed {
    async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, BoxError> {
        let handler = |m: InterviewQueueMessage, meta: RecordMeta| async move {
            match m {
                InterviewQueueMessage::Completed(c) => self
                    .service
                    .settle_completed_and_publish(&c, &self.publisher, SettleContext::now_with_deadline(meta.deadline))
                    .await
                    .map(|_| ())
                    .map_err(interview_completed::failure_of),
                InterviewQueueMessage::Failed(f) => interview_completed::settle_failed(&self.service, &f, &meta).await,
            }
        };
        self.consumer.process(event, || async { Ok::<(), BoxError>(()) }, handler).await.map_err(BoxError::from)
    }
}

fn ledger(entries: &[(&str, i64)]) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = entries.iter().map(|(t, a)| ((*t).to_owned(), *a)).collect();
    v.sort();
    v
}

/// The batch arrives while MongoDB is down (its server was killed after the data was seeded):
/// the per-batch ping fails, the invocation fails, nothing is deleted, and all three records
/// come back after the visibility timeout; by then MongoDB is back (same port, same data) and
/// the redelivered batch settles every record once.
#[tokio::test]
async fn mongodb_unreachable_at_batch_start_retries_the_whole_batch_and_it_succeeds_when_mongodb_returns() {
    let mut server = DiskMongo::start(free_port());
    let db = database_name();
    let w = World::at(&server.uri(), &db, Visibility::Seconds(1)).await;
    let org = w.org_with_credits(100).await;
    let (long, short, failed) =
        (w.reserved_interview(org, 20).await, w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await);
    let (sqs, queues) = (&w.sqs, &w.queues);
    let source = &queues.interview_completed.source.url;
    for body in
        [completed_body(long, org, 754), completed_body(short, org, 120), failed_body(failed, org, "bot lost the call")]
    {
        harness::sqs::send(sqs, source, &body).await;
    }
    let mapping = interview_esm(sqs, queues, 1, server.settings(&db));

    server.kill();
    let down = mapping.poll_once(Duration::from_secs(2)).await.unwrap().expect("the batch is delivered");
    assert_eq!(down.message_ids.len(), 3, "one batch of three: {down:?}");
    assert_eq!(down.deleted, 0, "nothing acknowledged");
    let error = down.batch_error.expect("the invocation failed as a whole");
    assert!(error.contains("batch setup failed") && error.contains("MongoDB is unreachable"), "{error}");
    assert_eq!(depth(sqs, source).await, (0, 3), "all three wait for their visibility timeout");

    server.restart();
    let up = mapping.poll_once(Duration::from_secs(3)).await.unwrap().expect("the batch comes back");
    assert_eq!(
        (up.message_ids.len(), up.deleted, up.failed_ids.len(), up.batch_error.as_deref()),
        (3, 3, 0, None),
        "{up:?}"
    );
    assert_eq!(
        up.message_ids.iter().collect::<std::collections::BTreeSet<_>>(),
        down.message_ids.iter().collect(),
        "the same three messages"
    );

    let w = w.reconnected().await;
    assert!(w.settled(long).await && w.settled(short).await && w.settled(failed).await);
    assert_eq!(w.ledger_of(long).await, ledger(&[("RESERVE", 20), ("SETTLE", 12), ("RELEASE", 8)]));
    assert_eq!(w.ledger_of(short).await, ledger(&[("RESERVE", 10), ("SETTLE", 2), ("RELEASE", 8)]));
    assert_eq!(w.ledger_of(failed).await, ledger(&[("RESERVE", 10), ("RELEASE", 10)]));
    assert_eq!(w.org_credits(org).await, (86, 0));
    assert_eq!(depth(sqs, source).await, (0, 0));
    assert_eq!(depth(sqs, &queues.interview_completed.dlq.url).await, (0, 0));
    let mut published: Vec<String> =
        drain(sqs, &queues.report_generate.source.url).await.iter().map(|m| m.body().unwrap().to_owned()).collect();
    published.sort();
    let mut expected = vec![
        format!(r#"{{"interviewId":"{long}","organizationId":"{org}"}}"#),
        format!(r#"{{"interviewId":"{short}","organizationId":"{org}"}}"#),
    ];
    expected.sort();
    assert_eq!(published, expected, "one report.generate per completed interview, none for the failed one");
    w.assert_invariants().await;
}

/// The server is killed (SIGKILL) at the instant the settlement sends `commitTransaction`: the
/// claim, the lot, the organization, the ledger entries and the outbox entry have all been
/// written inside the open transaction, and the commit never arrives. The hook is the driver's
/// command monitoring (no production change): the first delivery runs the production
/// settlement (`settle_completed_and_publish` inside the production consumer wrapper, as the
/// handler does) on a client with that hook. After the restart nothing of the settlement is
/// visible; the redelivery, through the production handler, settles exactly once and publishes
/// one `report.generate`.
#[tokio::test]
async fn mongodb_killed_between_claim_and_commit_leaves_no_partial_settlement_and_the_redelivery_settles_once() {
    kill_mid_settlement("commitTransaction", 1, &["find", "update", "find", "update", "update", "insert", "insert"])
        .await;
}

/// The same with the kill right after the claim matched (when the lots are about to be read):
/// the claim is the only write inside the open transaction; after the restart the interview is
/// still unsettled, and the redelivery settles it once.
#[tokio::test]
async fn mongodb_killed_right_after_the_claim_leaves_the_interview_unsettled_and_the_redelivery_settles_once() {
    kill_mid_settlement("find", 2, &["find", "update"]).await;
}

/// Kills the server when the settlement starts its `nth` command named `trigger`; `reached` are
/// the commands that must have succeeded by then (so the writes did reach the server).
async fn kill_mid_settlement(trigger: &'static str, nth: usize, reached: &[&str]) {
    let server = Arc::new(Mutex::new(DiskMongo::start(free_port())));
    let uri = server.lock().unwrap().uri();
    let db = database_name();
    let db_name = db.clone();
    let w = World::at(&uri, &db, Visibility::Seconds(1)).await;
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 30).await;
    let before = w.snapshot().await;
    assert_eq!(w.org_credits(org).await, (70, 30));
    let (sqs, queues) = (&w.sqs, &w.queues);
    let source = &queues.interview_completed.source.url;
    harness::sqs::send(sqs, source, &completed_body(interview, org, 600)).await;

    // A client whose command monitor kills the server when the commit is about to be sent.
    let killed = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let succeeded: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut options = mongodb::options::ClientOptions::parse(&uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_millis(300));
    options.command_event_handler = Some({
        let (server, killed, succeeded, seen) = (server.clone(), killed.clone(), succeeded.clone(), seen.clone());
        EventHandler::callback(move |e: CommandEvent| match e {
            CommandEvent::Started(s)
                if s.command_name == trigger
                    && seen.fetch_add(1, Ordering::SeqCst) + 1 == nth
                    && !killed.swap(true, Ordering::SeqCst) =>
            {
                server.lock().unwrap().kill()
            }
            CommandEvent::Succeeded(s) if !killed.load(Ordering::SeqCst) => {
                succeeded.lock().unwrap().push(s.command_name)
            }
            _ => {}
        })
    });
    let report_url = queues.report_generate.source.url.clone();
    let doomed = Instances::spawn(
        "interview-completed-doomed",
        1,
        move || {
            let (options, db, report_url) = (options.clone(), db_name.clone(), report_url.clone());
            async move {
                let client = mongodb::Client::with_options(options)?;
                let service = SettlementService::new(client.clone(), client.database(&db));
                let sqs = harness::sqs_client().await;
                let urls = QueueUrls::default().with(sophia_sqs_producer::Queue::ReportGenerate, report_url);
                let consumer = SqsConsumer::new(ConsumerOptions {
                    deadline_margin: Duration::from_millis(200),
                    ..ConsumerOptions::default()
                });
                Ok::<_, BoxError>(Doomed {
                    service,
                    publisher: SqsReportPublisher(SqsProducer::new(sqs, urls)),
                    consumer,
                })
            }
        },
        |d, event| Box::pin(d.handle(event)),
    )
    .unwrap();
    let mut first = esm(sqs, &queues.interview_completed.source, "interviewCompleted", Arc::new(doomed));
    // A short function timeout bounds the retries against the dead server.
    first.function_timeout = Duration::from_secs(5);
    let crashed = first.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
    assert!(killed.load(Ordering::SeqCst), "the server was killed at {trigger} #{nth}");
    assert_eq!(crashed.deleted, 0, "not acknowledged: {crashed:?}");
    assert!(crashed.failed_ids.len() == 1 || crashed.batch_error.is_some(), "retried: {crashed:?}");
    assert_eq!(*succeeded.lock().unwrap(), reached, "these commands reached the server before the kill");

    server.lock().unwrap().restart();
    let w = w.reconnected().await;
    assert_eq!(w.snapshot().await, before, "after recovery nothing of the settlement is visible");
    assert!(!w.settled(interview).await);
    assert_eq!(w.ledger_of(interview).await, ledger(&[("RESERVE", 30)]));
    assert!(w.find("outbox", doc! {"_id": OutboxEntry::report_generate_id(interview.oid())}).await.is_empty());
    w.assert_invariants().await;

    let mapping = interview_esm(sqs, queues, 1, server.lock().unwrap().settings(&db));
    let redelivered = mapping.poll_once(Duration::from_secs(3)).await.unwrap().expect("the message comes back");
    assert_eq!(
        (redelivered.deleted, redelivered.failed_ids.len(), redelivered.batch_error.as_deref()),
        (1, 0, None),
        "{redelivered:?}"
    );
    assert!(w.settled(interview).await);
    assert_eq!(
        w.ledger_of(interview).await,
        ledger(&[("RESERVE", 30), ("SETTLE", 10), ("RELEASE", 20)]),
        "settled exactly once"
    );
    assert_eq!(w.org_credits(org).await, (90, 0));
    let outbox = w.outbox(interview).await.unwrap();
    assert_eq!(outbox.status, OutboxStatus::Published);
    assert_eq!(drain(sqs, &queues.report_generate.source.url).await.len(), 1, "one report.generate");
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// The same at the report consumer's batch start: its per-batch ping fails while MongoDB is
/// down, the invocation fails, the model is not called and the message is not deleted; once
/// MongoDB is back the redelivery generates the report, once.
#[tokio::test]
async fn report_generation_with_mongodb_unreachable_at_batch_start_is_retried_and_completes_when_it_returns() {
    let mut server = DiskMongo::start(free_port());
    let db = database_name();
    let w = World::at(&server.uri(), &db, Visibility::Seconds(1)).await;
    let fixture = sophia_reports::fixtures::InterviewFixture::new(sophia_contracts::OrganizationId::new(
        bson::oid::ObjectId::new(),
    ));
    let (interview, org) = fixture.insert(&w.mongo.db).await.unwrap();
    let (sqs, queues) = (&w.sqs, &w.queues);
    harness::sqs::send(
        sqs,
        &queues.report_generate.source.url,
        &format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#),
    )
    .await;
    let fake = sophia_openai_fake::FakeOpenAi::scripted().unwrap();
    fake.push(sophia_openai_fake::Behaviour::Report);
    let instance = harness::functions::report_instance(
        server.settings(&db),
        harness::functions::fake_openai(&fake, Duration::from_secs(10)),
        Duration::from_secs(300),
        ConsumerOptions::default(),
    );
    let reports = esm(sqs, &queues.report_generate.source, "reportGenerate", instance);

    server.kill();
    let down = reports.poll_once(Duration::from_secs(2)).await.unwrap().expect("delivered");
    assert_eq!(down.deleted, 0);
    assert!(down.batch_error.as_deref().is_some_and(|e| e.contains("MongoDB is unreachable")), "{down:?}");
    assert_eq!(fake.request_count(), 0, "no model call without the database");

    server.restart();
    let up = reports.poll_once(Duration::from_secs(3)).await.unwrap().expect("the message comes back");
    assert_eq!((up.deleted, up.failed_ids.len(), up.batch_error.as_deref()), (1, 0, None), "{up:?}");
    let w = w.reconnected().await;
    let stored = harness::mongo::reports_of(&w.mongo.db, interview).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0].get_str("status").unwrap(), harness::mongo::int(&stored[0], "attemptCount")),
        ("COMPLETED", Some(1))
    );
    assert_eq!(fake.request_count(), 1);
    assert_queues_empty(sqs, queues).await;
    w.assert_invariants().await;
}

/// Inconsistent data (`credits.reserved > 0` with no allocations: the reservation would be held
/// for ever) through fauxqs and the event-source-mapping emulator: the record fails on each of
/// its 3 receives and SQS moves the message to the DLQ, where an operator sees it; it is never
/// dropped, and nothing is written.
#[tokio::test]
async fn a_reservation_without_allocations_is_retried_and_ends_in_the_dlq() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = bson::oid::ObjectId::new();
    w.mongo
        .db
        .collection::<bson::Document>("interviews")
        .insert_one(
            doc! {"_id": interview, "organizationId": org.oid(), "credits": {"reserved": 10.0, "allocations": []}},
        )
        .await
        .unwrap();
    let interview = sophia_contracts::InterviewId::new(interview);
    let before = w.snapshot().await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let body = completed_body(interview, org, 600);
    harness::sqs::send(sqs, &queues.interview_completed.source.url, &body).await;
    let mapping = interview_esm(sqs, queues, 1, w.settings());
    let runs = harness::functions::poll_until(&mapping, Duration::from_secs(30), |runs| {
        runs.iter().map(|r| r.failed_ids.len()).sum::<usize>() >= 3
    })
    .await;
    assert!(runs.iter().all(|r| r.deleted == 0 && r.batch_error.is_none()), "retried, never acknowledged: {runs:?}");
    // The fourth receive would exceed maxReceiveCount 3: SQS moves the message to the DLQ.
    let mut moved = Vec::new();
    for _ in 0..10 {
        moved = drain(sqs, &queues.interview_completed.dlq.url).await;
        if !moved.is_empty() {
            break;
        }
        let _ = mapping.poll_once(Duration::from_secs(1)).await.unwrap();
    }
    assert_eq!(moved.iter().map(|m| m.body().unwrap()).collect::<Vec<_>>(), [body.as_str()], "in the DLQ");
    assert_eq!(depth(sqs, &queues.interview_completed.source.url).await, (0, 0));
    assert_eq!(w.snapshot().await, before, "nothing written");
    assert!(!w.settled(interview).await);
    w.assert_invariants().await;
}

/// MongoDB is lost right after `report.generate` was sent (the publisher kills the server, as
/// a crash would): marking the outbox entry published fails, and the record is acknowledged
/// anyway (failing it would only publish a second time); the entry stays pending, for the
/// operator's flush once MongoDB is back.
#[tokio::test]
async fn a_failure_to_mark_the_outbox_entry_published_after_the_send_is_logged_and_acknowledged() {
    let server = Arc::new(Mutex::new(DiskMongo::start(free_port())));
    let uri = server.lock().unwrap().uri();
    let db = database_name();
    let w = World::at(&uri, &db, Visibility::Declared).await;
    let org = w.org_with_credits(40).await;
    let interview = w.reserved_interview(org, 10).await;
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let publisher = sophia_credits::FnPublisher({
        let (server, sent) = (server.clone(), sent.clone());
        move |_m, _r| {
            let (server, sent) = (server.clone(), sent.clone());
            async move {
                sent.fetch_add(1, Ordering::SeqCst);
                server.lock().unwrap().kill();
                Ok::<_, sophia_credits::BoxError>(sophia_credits::Published::Sent { message_id: "sqs-1".into() })
            }
        }
    });
    let message = sophia_contracts::InterviewCompleted {
        interview_id: interview,
        organization_id: org,
        completed_at: harness::sqs::COMPLETED_AT.parse().unwrap(),
        duration_seconds: sophia_contracts::DurationSeconds::new(300).unwrap(),
    };
    let service = w.settlement();
    let result = service
        .settle_completed_and_publish(&message, &publisher, SettleContext::now_with_deadline(None))
        .await
        .expect("acknowledged although the outbox mark failed");
    assert!(result.outcome.settled());
    assert_eq!(result.publish, sophia_credits::FlushOutcome::Published { message_id: "sqs-1".into() });
    assert_eq!(sent.load(Ordering::SeqCst), 1, "published once");

    server.lock().unwrap().restart();
    let w = w.reconnected().await;
    assert!(w.settled(interview).await, "the settlement was committed before the publish");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Pending, "left for a later flush");
    w.assert_invariants().await;
}
