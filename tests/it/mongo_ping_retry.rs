//! The per-batch ping after a sandbox thawed: a pooled socket that died while the sandbox was
//! frozen fails the first command sent on it, and the driver never retries a `ping`. A TCP proxy
//! in front of the test MongoDB closes the first connection that carries a `ping` instead of
//! forwarding it (exactly what a dead pooled socket does); the batch must still be processed,
//! because `Mongo::ping` tries once more on a fresh connection. A second failure (the server
//! really is down) still fails the batch.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness::World;
use harness::functions::completed_handler;
use harness::mongo::mongo_at;
use harness::sqs::{completed_body, sqs_event};
use harness::{sqs_client, test_queues_fast};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_sqs_consumer::{BatchError, Outcome};
use sophia_sqs_producer::SqsReportPublisher;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// BSON of the command document's first element `ping: <int32>`: type 0x10, then the name.
const PING: &[u8] = b"\x10ping\x00";

/// A proxy to `upstream` that drops (closes without forwarding) the first `drops` connections on
/// which the client sends a ping. Returns its port and the count of pings dropped.
async fn ping_dropping_proxy(upstream: u16, drops: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else { return };
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)).await else { return };
                let (mut cr, mut cw) = client.split();
                let (mut sr, mut sw) = server.split();
                let up = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = cr.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        let is_ping = buf[..n].windows(PING.len()).any(|w| w == PING);
                        if is_ping && counter.fetch_add(1, Ordering::SeqCst) < drops {
                            return; // the connection dies with the request unanswered
                        }
                        if sw.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                };
                let down = async {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                };
                tokio::select! { _ = up => {}, _ = down => {} }
            });
        }
    });
    (port, dropped)
}

fn port_of(uri: &str) -> u16 {
    let rest = uri.split("://").nth(1).unwrap();
    rest.split(['/', '?']).next().unwrap().rsplit(':').next().unwrap().parse().unwrap()
}

/// A settlement world, and the interview-completed handler on a client whose first `drops`
/// pings die with their connection.
async fn handler_behind_proxy(
    drops: usize,
) -> (World, OrganizationId, InterviewId, Arc<AtomicUsize>, interview_completed::Handler<SqsReportPublisher>) {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let (port, dropped) = ping_dropping_proxy(port_of(&harness::mongo_uri()), drops).await;
    let through_proxy =
        mongo_at(&format!("mongodb://127.0.0.1:{port}/?directConnection=true"), w.mongo.db.name()).await;
    let queues = test_queues_fast(&sqs_client().await, 1).await;
    let handler = completed_handler(through_proxy, &queues.report_generate.source.url).await;
    (w, org, interview, dropped, handler)
}

#[tokio::test]
async fn a_ping_that_fails_once_does_not_fail_the_batch() {
    let (w, org, interview, dropped, handler) = handler_behind_proxy(1).await;
    let event = sqs_event(&[("after-thaw".to_owned(), completed_body(interview, org, 120))]);
    let report = handler.handle_with_report(event).await.expect("the batch is not failed by one dead socket");
    assert_eq!(report.outcomes, [("after-thaw".to_owned(), Outcome::Processed)]);
    assert_eq!(dropped.load(Ordering::SeqCst), 2, "the first ping was dropped, the second went through");
    assert!(w.settled(interview).await);
}

#[tokio::test]
async fn a_ping_that_fails_twice_fails_the_batch() {
    let (w, org, interview, dropped, handler) = handler_behind_proxy(2).await;
    let event = sqs_event(&[("still-down".to_owned(), completed_body(interview, org, 120))]);
    let err = handler.handle_with_report(event).await.expect_err("two failed pings fail the batch");
    assert!(matches!(err, BatchError::Setup(_)), "{err:?}");
    assert_eq!(dropped.load(Ordering::SeqCst), 2, "exactly one retry");
    assert!(!w.settled(interview).await);
}
