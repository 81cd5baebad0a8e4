//! Shared by the `settlement_*` test modules (their database, settlement service, seed shortcuts
//! and invariant check are the [`harness::World`]'s): the settlement context, timestamps and
//! durations, and a recording publisher.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use sophia_contracts::{DurationSeconds, ReportGenerate, RequestId, Timestamp};
use sophia_credits::{BoxError, Published, ReportPublisher, SettleContext};

pub fn ctx() -> SettleContext {
    SettleContext { deadline: None, now: Utc::now() }
}

pub fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

pub fn secs(n: u64) -> DurationSeconds {
    DurationSeconds::new(n).unwrap()
}

/// A publisher that records what it sends; it can be told to fail the next `n` publishes or to
/// skip (as if the queue URL were not configured).
#[derive(Clone, Default)]
pub struct RecordingPublisher {
    pub sent: Arc<Mutex<Vec<(ReportGenerate, RequestId)>>>,
    fail_next: Arc<AtomicUsize>,
    skip: bool,
}

impl RecordingPublisher {
    pub fn skipping() -> Self {
        Self { skip: true, ..Self::default() }
    }
    pub fn fail_next(&self, n: usize) {
        self.fail_next.store(n, Ordering::SeqCst);
    }
    pub fn sent(&self) -> Vec<(ReportGenerate, RequestId)> {
        self.sent.lock().unwrap().clone()
    }
}

impl ReportPublisher for RecordingPublisher {
    async fn publish(&self, message: &ReportGenerate, request_id: &RequestId) -> Result<Published, BoxError> {
        if self.skip {
            return Ok(Published::Skipped { reason: "REPORT_GENERATE_QUEUE_URL is not set".into() });
        }
        if self.fail_next.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err("SQS is unreachable (simulated)".into());
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push((message.clone(), request_id.clone()));
        Ok(Published::Sent { message_id: format!("m-{}", sent.len()) })
    }
}
