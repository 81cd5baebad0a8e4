//! [`World`]: what a test runs against, in one value: a database of its own (migrated as
//! `sophia-ops migrate` leaves a stage's) with its client and the credits store over it, the local
//! SQS client and the four queues of its own, and, for the tests that need one, a MongoDB server of
//! its own. Where a test needs less or another shape, a method builds it from the world (the
//! settlement service, a function's settings or environment, a `sophia-ops` context); there is no
//! second world.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{Document, doc};
use futures::TryStreamExt;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_credits::model::{CreditLot, LedgerEntry, LedgerType, OutboxEntry};
use sophia_credits::{CreditsStore, SettlementService, invariants, migrations, seed};
use sophia_declarations::Declaration;
use sophia_local::queues::QueueSet;
use sophia_local::servers::{LocalServer, free_port, start_nx_mongo};
use sophia_ops::env::{self, Env};
use sophia_ops::{Context, ProgressMode};
use sophia_platform::mongo::{Mongo, MongoSettings};

use crate::mongo::{database_name, int, mongo_settings, mongo_with};

/// The visibility timeout of a world's queues.
#[derive(Clone, Copy, Debug)]
pub enum Visibility {
    /// As declared (180 s and 1800 s; checked elsewhere).
    Declared,
    /// This many seconds, so that a failed message reappears within the test.
    Seconds(u32),
}

/// What a test runs against (see the module docs). Every field is the test's own: no two tests
/// share a database (nx-27017 does not isolate transactions between clients of one) or a queue.
pub struct World {
    /// A client on the database of its own, migrated (credits and reports) unless built
    /// [`World::without_migration`].
    pub mongo: Mongo,
    /// The credits store over [`World::mongo`].
    pub store: CreditsStore,
    /// A client of the local SQS (a fresh one per world: each test has its own runtime).
    pub sqs: aws_sdk_sqs::Client,
    /// The four queues of a pipeline, uniquely prefixed, with the declared attributes.
    pub queues: QueueSet,
    /// Where [`World::mongo`] connects (another client of the database: a function instance's).
    mongo_uri: String,
    /// A MongoDB server of its own, stopped with the world; `None` on the harness's.
    _server: Option<LocalServer>,
}

impl World {
    /// On the harness's MongoDB, with the declared queues.
    pub async fn fresh() -> Self {
        Self::on_harness_mongo(Visibility::Declared).await
    }

    /// On the harness's MongoDB, with queues of a visibility timeout of `seconds`.
    pub async fn fast(seconds: u32) -> Self {
        Self::on_harness_mongo(Visibility::Seconds(seconds)).await
    }

    async fn on_harness_mongo(visibility: Visibility) -> Self {
        Self::assemble(crate::test_mongo().await, crate::mongo_uri(), None, visibility).await
    }

    /// On database `database` of the MongoDB at `uri` (a server the test starts, stops and breaks:
    /// server selection given up after 1 s, so that an unreachable server fails fast).
    pub async fn at(uri: &str, database: &str, visibility: Visibility) -> Self {
        Self::assemble(crate::mongo::mongo_at(uri, database).await, uri.to_owned(), None, visibility).await
    }

    /// On an nx-27017 of its own (a free port, stopped when the world is dropped), for a test
    /// whose functions run as processes of their own against it.
    pub async fn with_own_server() -> Self {
        let server = start_nx_mongo(free_port()).expect("nx-27017 starts (scripts/setup-tools)");
        let uri = server.url();
        let mongo = mongo_with(&uri, &database_name(), Duration::from_secs(5)).await;
        Self::assemble(mongo, uri, Some(server), Visibility::Declared).await
    }

    /// On the harness's MongoDB, with the declared queues, on a database no migration ran on (a
    /// stage's before `sophia-ops migrate`, or one the test lays a previous release's indexes on).
    pub async fn without_migration() -> Self {
        let mongo = crate::test_mongo().await;
        let store = CreditsStore::new(mongo.db.clone());
        Self::with_database(mongo, store, crate::mongo_uri(), None, Visibility::Declared).await
    }

    async fn assemble(mongo: Mongo, mongo_uri: String, server: Option<LocalServer>, visibility: Visibility) -> Self {
        let (mongo, store) = migrated(mongo).await;
        Self::with_database(mongo, store, mongo_uri, server, visibility).await
    }

    async fn with_database(
        mongo: Mongo,
        store: CreditsStore,
        mongo_uri: String,
        server: Option<LocalServer>,
        visibility: Visibility,
    ) -> Self {
        let sqs = crate::sqs_client().await;
        let queues = match visibility {
            Visibility::Declared => crate::test_queues(&sqs).await,
            Visibility::Seconds(seconds) => crate::test_queues_fast(&sqs, seconds).await,
        };
        Self { mongo, store, sqs, queues, mongo_uri, _server: server }
    }

    /// This world's database and queues through a new MongoDB client (after its server was
    /// restarted: the old client's connections are gone), the migrations applied again as a
    /// deployment would. The server is expected up again: server selection is given up after 5 s,
    /// as for the harness's own database, not the 1 s of [`World::at`] (a loaded machine can take
    /// more than a second to answer a new client: a full run failed here once at load 5-6).
    pub async fn reconnected(&self) -> Self {
        let mongo = mongo_with(&self.mongo_uri, self.mongo.db.name(), Duration::from_secs(5)).await;
        let (mongo, store) = migrated(mongo).await;
        let (sqs, queues) = (self.sqs.clone(), self.queues.clone());
        Self { mongo, store, sqs, queues, mongo_uri: self.mongo_uri.clone(), _server: None }
    }

    /// Settings for another client of this database (e.g. a function instance's).
    pub fn settings(&self) -> MongoSettings {
        mongo_settings(&self.mongo_uri, self.mongo.db.name())
    }

    /// The settlement service over this database, as the settlement functions build it.
    pub fn settlement(&self) -> SettlementService {
        SettlementService::new(self.mongo.client.clone(), self.mongo.db.clone())
    }

    /// The environment of a function process on this database (one record at a time, warnings
    /// only), with `extra` after it.
    pub fn function_env(&self, extra: &[(&str, String)]) -> Vec<(String, String)> {
        let mut env = vec![
            ("MONGODB_URI".to_owned(), self.mongo_uri.clone()),
            ("MONGODB_DATABASE".to_owned(), self.mongo.db.name().to_owned()),
            ("MONGODB_ALLOW_STANDALONE".to_owned(), "true".to_owned()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
            ("RECORD_CONCURRENCY".to_owned(), "1".to_owned()),
        ];
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        env
    }

    /// The variables the local runner writes for these queues: the SQS endpoint and every declared
    /// queue's URL and DLQ URL, under the variables the declaration names.
    pub fn queue_env(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = vec![(env::AWS_ENDPOINT_URL_SQS.into(), crate::sqs_endpoint())];
        for pair in self.queues.pairs() {
            let q = Declaration::embedded().queue(&pair.key).expect("declared");
            pairs.push((q.queue_url_env.clone(), pair.source.url.clone()));
            pairs.push((q.dlq_url_env(), pair.dlq.url.clone()));
        }
        pairs
    }

    /// A `sophia-ops` context that sees exactly these queues (no MongoDB, no process environment).
    pub fn queue_context(&self) -> Context {
        Context::new(Env::from_pairs(self.queue_env()), None, ProgressMode::Hidden).with_sqs(self.sqs.clone())
    }

    /// A `sophia-ops` context that sees these queues and this database, as an operator's shell
    /// with the local runner's env file does.
    pub fn ops_context(&self) -> Context {
        let mut pairs = self.queue_env();
        pairs.push(("MONGODB_URI".into(), self.mongo_uri.clone()));
        pairs.push(("MONGODB_DATABASE".into(), self.mongo.db.name().to_owned()));
        pairs.push(("MONGODB_ALLOW_STANDALONE".into(), "true".into()));
        Context::new(Env::from_pairs(pairs), None, ProgressMode::Hidden)
            .with_sqs(self.sqs.clone())
            .with_mongo(self.mongo.clone())
    }

    /// An organization with one lot of `granted` credits expiring in 30 days.
    pub async fn org_with_credits(&self, granted: i64) -> OrganizationId {
        let org = seed::create_organization(&self.store, "Test organization").await.expect("organization");
        seed::grant_lot(&self.store, org, granted, chrono::Utc::now() + chrono::Duration::days(30)).await.expect("lot");
        org
    }

    /// An interview with `amount` credits reserved and enough evidence for a model report.
    pub async fn reserved_interview(&self, org: OrganizationId, amount: i64) -> InterviewId {
        seed::reserved_interview(&self.mongo.client, &self.store, org, amount, report_evidence())
            .await
            .expect("reserved interview")
    }

    /// Every document of `collection`.
    pub async fn all(&self, collection: &str) -> Vec<Document> {
        self.find(collection, doc! {}).await
    }

    /// Documents of `collection` matching `filter` (a `find`: nx-27017's count_documents does
    /// not match ObjectId fields, see tests/it/mongo_wire_gaps.rs).
    pub async fn find(&self, collection: &str, filter: Document) -> Vec<Document> {
        self.mongo
            .db
            .collection::<Document>(collection)
            .find(filter)
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("read")
    }

    /// `(available, reserved)` of the organization.
    pub async fn org_credits(&self, org: OrganizationId) -> (i64, i64) {
        let o =
            self.store.organizations().find_one(doc! {"_id": org.oid()}).await.expect("find").expect("organization");
        (o.credits.available, o.credits.reserved)
    }

    /// The ledger entries of one interview.
    pub async fn ledger(&self, interview: InterviewId) -> Vec<LedgerEntry> {
        self.store
            .ledger()
            .find(doc! {"reference.id": interview.oid()})
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("read")
    }

    /// The sum of one interview's ledger entries of `kind`.
    pub async fn ledger_sum(&self, interview: InterviewId, kind: LedgerType) -> i64 {
        self.ledger(interview).await.iter().filter(|e| e.kind == kind).map(|e| e.amount).sum()
    }

    /// The ledger entries of one interview, as `(type, amount)` sorted (read as stored).
    pub async fn ledger_of(&self, interview: InterviewId) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = self
            .find("creditLedger", doc! {"reference.id": interview.oid()})
            .await
            .iter()
            .map(|d| (d.get_str("type").unwrap_or("?").to_owned(), int(d, "amount").unwrap_or(i64::MIN)))
            .collect();
        v.sort();
        v
    }

    /// The organization's credit lots, soonest expiry first.
    pub async fn lots(&self, org: OrganizationId) -> Vec<CreditLot> {
        self.store
            .lots()
            .find(doc! {"organizationId": org.oid()})
            .sort(doc! {"expiresAt": 1})
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("read")
    }

    /// The interview's `report.generate` outbox entry.
    pub async fn outbox(&self, interview: InterviewId) -> Option<OutboxEntry> {
        let id = OutboxEntry::report_generate_id(interview.oid());
        self.store.outbox().find_one(doc! {"_id": id}).await.expect("read outbox")
    }

    /// Whether the interview's `settledAt` is set.
    pub async fn settled(&self, interview: InterviewId) -> bool {
        self.store.interview(interview.oid()).await.expect("read").expect("interview").settled_at.is_some()
    }

    /// The five invariants of docs/design.md over the whole database: every scenario ends here.
    pub async fn assert_invariants(&self) {
        let violations = invariants::check_all(&self.store).await.expect("invariants can be read");
        assert!(
            violations.is_empty(),
            "invariants broken:\n{}",
            violations.iter().map(|v| format!("  - {v}")).collect::<Vec<_>>().join("\n")
        );
    }

    /// Every collection's documents, by name (for "nothing was written").
    pub async fn snapshot(&self) -> BTreeMap<String, Vec<Document>> {
        let mut out = BTreeMap::new();
        for name in self.mongo.db.list_collection_names().await.expect("list collections") {
            let mut docs = self.all(&name).await;
            docs.sort_by_key(|d| d.get("_id").map(|v| v.to_string()).unwrap_or_default());
            out.insert(name, docs);
        }
        out
    }
}

/// `mongo` with the migrations applied (what `sophia-ops migrate` does before the functions run:
/// every collection's indexes), and the credits store over it.
async fn migrated(mongo: Mongo) -> (Mongo, CreditsStore) {
    migrations::apply(&mongo.db).await.expect("credits migration applies");
    sophia_reports::migrations::apply(&mongo.db).await.expect("reports migration applies");
    let store = CreditsStore::new(mongo.db.clone());
    (mongo, store)
}

/// What report generation reads from an interview (snapshot, transcript, credibility, duration),
/// taken from the reports crate's fixture; merged into a seeded interview.
pub fn report_evidence() -> Document {
    let fixture = sophia_reports::fixtures::InterviewFixture::new(OrganizationId::new(bson::oid::ObjectId::new()));
    let all = fixture.document();
    let mut d = Document::new();
    for key in ["snapshot", "proctoring", "credibility", "durationSeconds"] {
        if let Some(v) = all.get(key) {
            d.insert(key, v.clone());
        }
    }
    d
}
