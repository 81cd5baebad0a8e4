//! Shared by the `settlement_*` test modules: a database of its own with the migration applied,
//! the settlement service over it, a recording publisher, seed shortcuts, and the one invariant
//! check every scenario ends with.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bson::doc;
use chrono::Utc;
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, ReportGenerate, RequestId, Timestamp};
use sophia_credits::model::{CreditLot, LedgerEntry, LedgerType, OutboxEntry};
use sophia_credits::{
    BoxError, CreditsStore, Published, ReportPublisher, SettleContext, SettlementService, migrations, seed,
};
use sophia_platform::mongo::Mongo;

pub struct World {
    pub mongo: Mongo,
    pub store: CreditsStore,
    pub service: SettlementService,
}

/// A fresh database (one per test: nx-27017 does not isolate transactions) with the indexes.
pub async fn world() -> World {
    let mongo = harness::test_mongo().await;
    migrations::apply(&mongo.db).await.expect("migration applies");
    let store = CreditsStore::new(mongo.db.clone());
    let service = SettlementService::new(mongo.client.clone(), mongo.db.clone());
    World { mongo, store, service }
}

impl World {
    /// An organization with one lot of `granted` credits expiring in 30 days.
    pub async fn org_with_credits(&self, granted: i64) -> OrganizationId {
        harness::faults::org_with_credits(&self.store, "Acme", granted).await
    }

    pub async fn reserved_interview(&self, org: OrganizationId, amount: i64) -> InterviewId {
        seed::reserved_interview(&self.mongo.client, &self.store, org, amount, doc! {}).await.unwrap()
    }

    pub async fn ledger(&self, interview: InterviewId) -> Vec<LedgerEntry> {
        use futures::TryStreamExt;
        self.store.ledger().find(doc! {"reference.id": interview.oid()}).await.unwrap().try_collect().await.unwrap()
    }

    pub async fn ledger_sum(&self, interview: InterviewId, kind: LedgerType) -> i64 {
        self.ledger(interview).await.iter().filter(|e| e.kind == kind).map(|e| e.amount).sum()
    }

    pub async fn lots(&self, org: OrganizationId) -> Vec<CreditLot> {
        use futures::TryStreamExt;
        self.store
            .lots()
            .find(doc! {"organizationId": org.oid()})
            .sort(doc! {"expiresAt": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    }

    pub async fn outbox(&self, interview: InterviewId) -> Option<OutboxEntry> {
        harness::faults::outbox(&self.store, interview).await
    }

    pub async fn org_credits(&self, org: OrganizationId) -> (i64, i64) {
        harness::faults::org_credits(&self.store, org).await
    }

    /// The five invariants of docs/design.md over the whole database: every scenario ends here.
    pub async fn assert_invariants(&self) {
        harness::faults::assert_invariants(&self.store).await;
    }
}

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
