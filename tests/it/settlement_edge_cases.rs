//! Settlement against the edge cases of real data (docs/design.md "Settlement decisions"),
//! through the real settlement over the wire (nx-27017 here, or `SOPHIA_TEST_MONGODB_URI`):
//! nothing reserved, inconsistent reservations, numbers as other writers store them (mongo shell
//! doubles, Mongoose Int32, null vs absent), sums that overflow, anchors outside their window,
//! soft-deleted interviews, the record's deadline, and the outbox's TTL index. The five
//! invariants are checked after every scenario that writes.

use crate::support::settlement as settlement_common;
use harness::World;
use harness::mongo::int;

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use chrono::Utc;
use settlement_common::{RecordingPublisher, at, ctx, secs};
use sophia_contracts::{InterviewCompleted, InterviewId, OrganizationId};
use sophia_credits::arithmetic::PlanError;
use sophia_credits::model::{LedgerType, OutboxStatus};
use sophia_credits::{CreditsError, Disposition, SettleContext, SettleOutcome};
use tokio::time::Instant;

const COMPLETED_AT: &str = "2026-12-02T17:30:00.000Z";

fn completed(interview: InterviewId, org: OrganizationId, duration: u64) -> InterviewCompleted {
    InterviewCompleted {
        interview_id: interview,
        organization_id: org,
        completed_at: at(COMPLETED_AT),
        duration_seconds: secs(duration),
    }
}

async fn raw(w: &World, collection: &str, id: ObjectId) -> Document {
    w.mongo.db.collection::<Document>(collection).find_one(doc! {"_id": id}).await.unwrap().unwrap()
}

async fn insert(w: &World, collection: &str, d: Document) {
    w.mongo.db.collection::<Document>(collection).insert_one(d).await.unwrap();
}

/// How one writer stores a number.
#[derive(Debug, Clone, Copy)]
enum Writer {
    /// The mongo shell: every number literal is a double.
    MongoShell,
    /// Mongoose: `Number` fields of small values as Int32.
    Mongoose,
    /// The Rust driver: Int64.
    RustDriver,
}

impl Writer {
    fn n(self, v: i64) -> Bson {
        match self {
            Self::MongoShell => Bson::Double(v as f64),
            Self::Mongoose => Bson::Int32(v as i32),
            Self::RustDriver => Bson::Int64(v),
        }
    }
}

/// An organization, one lot of 100 credits and an interview holding 30 of them, all written by
/// `writer` (the RESERVE ledger entry is ours). `extra` is merged into the interview.
async fn seed_as(w: &World, writer: Writer, extra: Document) -> (OrganizationId, ObjectId, InterviewId) {
    let (org, lot, interview) = (ObjectId::new(), ObjectId::new(), ObjectId::new());
    let n = |v| writer.n(v);
    insert(
        w,
        "organizations",
        doc! {"_id": org, "name": "Shell Co", "credits": {"available": n(70), "reserved": n(30)}},
    )
    .await;
    insert(
        w,
        "creditLots",
        doc! {
            "_id": lot, "organizationId": org, "granted": n(100), "remaining": n(100), "reserved": n(30),
            "expiresAt": DateTime::from_chrono(Utc::now() + chrono::Duration::days(30)), "status": "ACTIVE",
        },
    )
    .await;
    let mut d = doc! {
        "_id": interview, "organizationId": org, "status": "COMPLETED", "durationSeconds": n(754),
        "credits": {"reserved": n(30), "allocations": [{"lotId": lot, "credits": n(30)}]},
    };
    d.extend(extra);
    insert(w, "interviews", d).await;
    insert(
        w,
        "creditLedger",
        doc! {
            "_id": ObjectId::new(), "organizationId": org, "lotId": lot, "type": "RESERVE", "amount": 30_i64,
            "reference": {"kind": "INTERVIEW", "id": interview}, "createdAt": DateTime::now(),
        },
    )
    .await;
    (OrganizationId::new(org), lot, InterviewId::new(interview))
}

/// Documents written by the mongo shell (doubles), Mongoose (Int32) and the Rust driver
/// (Int64), with optional fields `null` or absent, all settle the same way and keep the
/// invariants; a second settlement of the same documents (now partly rewritten as Int64, the
/// organization's `$inc` leaving a double a double) reads them as well.
#[tokio::test]
async fn integer_fields_in_every_numeric_type_and_null_or_absent_optionals_settle_the_same() {
    let cases: [(&str, Writer, Document); 5] = [
        ("mongo shell", Writer::MongoShell, doc! {}),
        ("Mongoose", Writer::Mongoose, doc! {"__v": 0_i32}),
        ("Rust driver", Writer::RustDriver, doc! {}),
        (
            "nulls",
            Writer::MongoShell,
            doc! {"settledAt": null, "credits.consumed": null, "deletedAt": null, "proctoring": null, "snapshot": null},
        ),
        ("soft-deleted", Writer::Mongoose, doc! {"deletedAt": DateTime::now()}),
    ];
    for (name, writer, extra) in cases {
        let w = World::fresh().await;
        // "credits.consumed": null means a null inside `credits`, as Mongoose writes it.
        let (extra, consumed_null) = match extra.get("credits.consumed") {
            Some(_) => {
                let mut e = extra.clone();
                e.remove("credits.consumed");
                (e, true)
            }
            None => (extra, false),
        };
        let (org, lot, interview) = seed_as(&w, writer, extra).await;
        if consumed_null {
            w.mongo
                .db
                .collection::<Document>("interviews")
                .update_one(doc! {"_id": interview.oid()}, doc! {"$set": {"credits.consumed": Bson::Null}})
                .await
                .unwrap();
        }
        let publisher = RecordingPublisher::default();
        let result = w
            .settlement()
            .settle_completed_and_publish(&completed(interview, org, 754), &publisher, ctx())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let SettleOutcome::Settled(s) = &result.outcome else { panic!("{name}: {result:?}") };
        assert_eq!((s.reserved, s.consumed, s.released), (30, 12, 18), "{name}");
        let d = raw(&w, "interviews", interview.oid()).await;
        assert_eq!(int(&d, "credits.consumed"), Some(12), "{name}: {d}");
        let l = raw(&w, "creditLots", lot).await;
        assert_eq!((int(&l, "remaining"), int(&l, "reserved")), (Some(88), Some(0)), "{name}: {l}");
        let o = raw(&w, "organizations", org.oid()).await;
        assert_eq!((int(&o, "credits.available"), int(&o, "credits.reserved")), (Some(88), Some(0)), "{name}: {o}");
        assert_eq!(publisher.sent().len(), 1, "{name}: the report is requested (the report side skips deleted ones)");
        w.assert_invariants().await;

        // Another interview of the same organization and lot, seeded the writer's way: the
        // organization's balances are what `$inc` left (a double stays a double).
        let second = ObjectId::new();
        let n = |v| writer.n(v);
        insert(
            &w,
            "interviews",
            doc! {"_id": second, "organizationId": org.oid(), "credits": {"reserved": n(0), "allocations": []}},
        )
        .await;
        let again =
            w.settlement().settle_failed_interview(InterviewId::new(second), org, at(COMPLETED_AT), ctx()).await;
        assert!(matches!(again, Ok(SettleOutcome::Settled(_))), "{name}: {again:?}");
        w.assert_invariants().await;
    }
}

/// A credit amount with a fractional part, or of a non-numeric type, is inconsistent data: the
/// record is retried (then the DLQ), the error names the collection and the field but never
/// the value, and nothing is written.
#[tokio::test]
async fn a_fractional_or_non_numeric_credit_amount_is_inconsistent_data_naming_the_field() {
    let cases: [(&str, &str, Bson, &str); 4] = [
        ("creditLots", "remaining", Bson::Double(99.5), "remaining"),
        ("interviews", "credits.reserved", Bson::Double(29.5), "credits.reserved"),
        ("interviews", "credits", Bson::Null, "credits.allocations"),
        ("creditLots", "reserved", Bson::String("thirty".into()), "reserved"),
    ];
    for (collection, path, value, field) in cases {
        let w = World::fresh().await;
        let (org, lot, interview) = seed_as(&w, Writer::MongoShell, doc! {}).await;
        // The allocation's amount (a whole `credits` sub-document, as an operator would write it).
        let value = match path {
            "credits" => Bson::from(doc! {"reserved": 30.0, "allocations": [{"lotId": lot, "credits": 30.25}]}),
            _ => value,
        };
        let id = if collection == "creditLots" { lot } else { interview.oid() };
        w.mongo
            .db
            .collection::<Document>(collection)
            .update_one(doc! {"_id": id}, doc! {"$set": {path: value.clone()}})
            .await
            .unwrap();
        let before = raw(&w, "interviews", interview.oid()).await;
        let err = w
            .settlement()
            .settle_completed_interview(interview, org, at(COMPLETED_AT), secs(754), ctx())
            .await
            .expect_err(path);
        let CreditsError::Unreadable(doc_err) = &err else { panic!("{path}: {err:?}") };
        assert_eq!(doc_err.collection, collection, "{path}");
        assert!(doc_err.field.starts_with(field), "{path}: {doc_err:?}");
        let text = err.to_string();
        assert!(text.contains("inconsistent data") && text.contains(field), "{path}: {text}");
        for quoted in ["99.5", "29.5", "30.25", "thirty"] {
            assert!(!text.contains(quoted), "{path}: the value is not quoted: {text}");
        }
        assert_eq!(err.disposition(), Disposition::Retry, "{path}");
        assert_eq!(raw(&w, "interviews", interview.oid()).await, before, "{path}: nothing written");
    }
}

/// docs/design.md: an interview with nothing reserved (`credits.reserved` 0, absent or `null`, no
/// allocations) is still settled: claimed, consumed 0, retention, the `report.generate` outbox
/// entry for a completed one; no credit writes.
#[tokio::test]
async fn an_interview_with_nothing_reserved_is_settled_without_credit_writes() {
    let shapes: [(&str, Option<Document>); 5] = [
        ("credits absent", None),
        ("credits null", Some(doc! {"credits": null})),
        ("reserved null, allocations null", Some(doc! {"credits": {"reserved": null, "allocations": null}})),
        ("reserved 0 (shell double), no allocations", Some(doc! {"credits": {"reserved": 0.0, "allocations": []}})),
        ("reserved absent, allocations empty", Some(doc! {"credits": {"allocations": []}})),
    ];
    for (name, credits) in shapes {
        let w = World::fresh().await;
        let org = w.org_with_credits(50).await;
        let (completed_id, failed_id) = (ObjectId::new(), ObjectId::new());
        for id in [completed_id, failed_id] {
            let mut d = doc! {"_id": id, "organizationId": org.oid(), "status": "COMPLETED"};
            if let Some(c) = &credits {
                d.extend(c.clone());
            }
            insert(&w, "interviews", d).await;
        }
        let publisher = RecordingPublisher::default();
        let done = w
            .settlement()
            .settle_completed_and_publish(&completed(InterviewId::new(completed_id), org, 900), &publisher, ctx())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let SettleOutcome::Settled(s) = &done.outcome else { panic!("{name}: {done:?}") };
        assert_eq!((s.reserved, s.consumed, s.released, s.lots), (0, 0, 0, 0), "{name}");
        let failed =
            w.settlement().settle_failed_interview(InterviewId::new(failed_id), org, at(COMPLETED_AT), ctx()).await;
        assert!(matches!(failed, Ok(SettleOutcome::Settled(_))), "{name}: {failed:?}");

        for id in [completed_id, failed_id] {
            let d = raw(&w, "interviews", id).await;
            assert!(d.get_datetime("settledAt").is_ok(), "{name}: claimed: {d}");
            assert_eq!(int(&d, "credits.consumed"), Some(0), "{name}: {d}");
            assert_eq!(
                d.get_datetime("retentionExpiresAt").unwrap().to_chrono(),
                at(COMPLETED_AT).as_datetime() + chrono::Duration::days(60),
                "{name}"
            );
            assert!(w.ledger(InterviewId::new(id)).await.is_empty(), "{name}: no ledger entry");
        }
        assert_eq!(w.outbox(InterviewId::new(completed_id)).await.unwrap().status, OutboxStatus::Published, "{name}");
        assert!(w.outbox(InterviewId::new(failed_id)).await.is_none(), "{name}: no report for a failed interview");
        assert_eq!(publisher.sent().len(), 1, "{name}");
        assert_eq!(w.org_credits(org).await, (50, 0), "{name}: no credit writes");
        let again = w
            .settlement()
            .settle_completed_and_publish(&completed(InterviewId::new(completed_id), org, 900), &publisher, ctx())
            .await
            .unwrap();
        assert_eq!(again.outcome, SettleOutcome::AlreadySettled, "{name}: exactly once");
        w.assert_invariants().await;
    }
}

/// `reserved > 0` with no allocations, allocations that do not add up to it, and allocations
/// whose sum overflows are inconsistent data: retried (then the DLQ, see
/// `faults_mongo.rs`), never dropped, nothing written.
#[tokio::test]
async fn a_reservation_without_matching_allocations_is_inconsistent_and_retried() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let lot = w.lots(org).await[0].id;
    let cases = [
        ("no allocations", doc! {"reserved": 10_i64, "allocations": []}),
        ("allocations null", doc! {"reserved": 10_i64, "allocations": null}),
        ("do not add up", doc! {"reserved": 10_i64, "allocations": [{"lotId": lot, "credits": 4_i64}]}),
        (
            "sum overflows",
            doc! {"reserved": 10_i64, "allocations": [{"lotId": lot, "credits": i64::MAX}, {"lotId": lot, "credits": 2_i64}]},
        ),
    ];
    for (name, credits) in cases {
        let id = ObjectId::new();
        insert(&w, "interviews", doc! {"_id": id, "organizationId": org.oid(), "credits": credits}).await;
        let err = w
            .settlement()
            .settle_completed_interview(InterviewId::new(id), org, at(COMPLETED_AT), secs(600), ctx())
            .await
            .expect_err(name);
        match (&err, name) {
            (
                CreditsError::Inconsistent { source: PlanError::NoAllocations { reserved: 10 }, .. },
                "no allocations",
            )
            | (
                CreditsError::Inconsistent { source: PlanError::NoAllocations { reserved: 10 }, .. },
                "allocations null",
            )
            | (CreditsError::Inconsistent { source: PlanError::ReservationMismatch { .. }, .. }, "do not add up")
            | (
                CreditsError::Inconsistent { source: PlanError::SumOverflow("credits.allocations"), .. },
                "sum overflows",
            ) => {}
            _ => panic!("{name}: {err:?}"),
        }
        assert!(err.to_string().contains("credits."), "{name}: the message names the field: {err}");
        assert_eq!(err.disposition(), Disposition::Retry, "{name}");
        assert!(raw(&w, "interviews", id).await.get_datetime("settledAt").is_err(), "{name}: not claimed");
    }
    assert_eq!(w.org_credits(org).await, (50, 0));
    w.assert_invariants().await;
}

/// docs/design.md, "Settlement decisions": another organization's interview goes to the DLQ on its
/// first delivery (no retry can change it) and changes nothing.
#[tokio::test]
async fn another_organizations_interview_is_dead_lettered_and_changes_nothing() {
    let w = World::fresh().await;
    let org = w.org_with_credits(10).await;
    let other = w.org_with_credits(10).await;
    let interview = w.reserved_interview(org, 5).await;
    let err = w
        .settlement()
        .settle_completed_interview(interview, other, at(COMPLETED_AT), secs(60), ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, CreditsError::WrongOrganization { .. }), "{err}");
    assert_eq!(err.disposition(), Disposition::DeadLetter);
    assert!(raw(&w, "interviews", interview.oid()).await.get_datetime("settledAt").is_err());
    assert_eq!((w.org_credits(org).await, w.org_credits(other).await), ((5, 5), (10, 0)));
    w.assert_invariants().await;
}

/// docs/design.md, "Message contract decisions": a completion or failure anchor earlier than the
/// interview's `createdAt`, or more than 5 minutes in the future, is inconsistent data naming
/// the field (retention is computed from it); an old but possible anchor is accepted.
#[tokio::test]
async fn an_anchor_outside_its_window_is_inconsistent_data_naming_the_field() {
    let w = World::fresh().await;
    let org = w.org_with_credits(100).await;
    let created = Utc::now() - chrono::Duration::days(1);
    let extra = doc! {"createdAt": DateTime::from_chrono(created)};
    let new_interview = async || {
        sophia_credits::seed::reserved_interview(&w.mongo.client, &w.store, org, 10, extra.clone()).await.unwrap()
    };
    let before_creation = sophia_contracts::Timestamp::from(created - chrono::Duration::minutes(1));
    let far_future = sophia_contracts::Timestamp::from(Utc::now() + chrono::Duration::minutes(30));
    let near_future = sophia_contracts::Timestamp::from(Utc::now() + chrono::Duration::minutes(2));
    let just_after = sophia_contracts::Timestamp::from(created + chrono::Duration::hours(1));

    for (anchor, why) in [(before_creation, "earlier than"), (far_future, "future")] {
        let i = new_interview().await;
        let err = w.settlement().settle_completed_interview(i, org, anchor, secs(600), ctx()).await.unwrap_err();
        assert!(matches!(err, CreditsError::AnchorOutOfWindow { field: "completedAt", .. }), "{why}: {err:?}");
        assert!(err.to_string().contains("`completedAt`") && err.to_string().contains(why), "{err}");
        assert_eq!(err.disposition(), Disposition::Retry);
        let err = w.settlement().settle_failed_interview(i, org, anchor, ctx()).await.unwrap_err();
        assert!(matches!(err, CreditsError::AnchorOutOfWindow { field: "failedAt", .. }), "{why}: {err:?}");
        assert!(raw(&w, "interviews", i.oid()).await.get_datetime("settledAt").is_err(), "not claimed");
    }
    for anchor in [near_future, just_after] {
        let i = new_interview().await;
        let s = w.settlement().settle_completed_interview(i, org, anchor, secs(600), ctx()).await.unwrap();
        assert!(s.settled(), "{anchor:?}");
    }
    // Without a createdAt an old but possible anchor is accepted as it is; one before the
    // absolute floor (2024-01-01; a 1970 `new Date(0)`) is out of its window.
    let old = w.reserved_interview(org, 10).await;
    let err = w.settlement().settle_failed_interview(old, org, at("1970-01-01T00:00:00Z"), ctx()).await.unwrap_err();
    assert!(matches!(err, CreditsError::AnchorOutOfWindow { field: "failedAt", .. }), "{err:?}");
    assert!(err.to_string().contains("2024-01-01"), "{err}");
    assert!(
        w.settlement().settle_failed_interview(old, org, at("2024-06-01T00:00:00Z"), ctx()).await.unwrap().settled()
    );
    w.assert_invariants().await;
}

/// A MongoDB that accepts connections and never answers (a stuck primary): the settlement
/// gives up at the record's deadline with its own retryable error instead of running into the
/// function's timeout (the driver would wait for its 30 s server selection).
#[tokio::test]
async fn a_mongodb_that_never_answers_ends_the_settlement_at_the_records_deadline() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept and hold connections without a byte in reply, until the test ends (drops `release`).
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(4) {
            open.push(stream);
        }
        let _ = released.recv();
    });
    let mut options =
        mongodb::options::ClientOptions::parse(format!("mongodb://127.0.0.1:{port}/?directConnection=true"))
            .await
            .unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(30));
    let client = mongodb::Client::with_options(options).unwrap();
    let service = sophia_credits::SettlementService::new(client.clone(), client.database("stuck"));
    let deadline = Instant::now() + Duration::from_millis(1500) + sophia_credits::settlement::OPERATION_MARGIN;
    let org = OrganizationId::new(ObjectId::new());
    let interview = InterviewId::new(ObjectId::new());
    let err = service
        .settle_completed_interview(
            interview,
            org,
            at(COMPLETED_AT),
            secs(60),
            SettleContext { deadline: Some(deadline), now: Utc::now() },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CreditsError::DeadlineExceeded { op: "find interview" }), "{err:?}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(Instant::now() < deadline, "ended before the record's deadline");
    drop(release);
}

/// The post-commit publish checks the deadline first: with too little time left it is not
/// started, the settlement stays committed, the entry stays pending and the record fails; the
/// redelivery flushes it.
#[tokio::test]
async fn a_publish_without_time_left_leaves_the_entry_pending_for_the_redelivery() {
    let w = World::fresh().await;
    let org = w.org_with_credits(40).await;
    let interview = w.reserved_interview(org, 10).await;
    let publisher = RecordingPublisher::default();
    let message = completed(interview, org, 300);
    // Settle with time to spare, then publish as a record whose deadline is near.
    assert!(
        w.settlement()
            .settle_completed_interview(interview, org, at(COMPLETED_AT), secs(300), ctx())
            .await
            .unwrap()
            .settled()
    );
    let entry = w.outbox(interview).await.unwrap();
    assert_eq!(entry.status, OutboxStatus::Pending);
    let near = Instant::now() + sophia_credits::settlement::OPERATION_MARGIN + Duration::from_millis(300);
    let store = w.store.with_deadline(Some(near - sophia_credits::settlement::OPERATION_MARGIN));
    let err = sophia_credits::outbox::publish_entry(&store, &entry, &publisher).await.unwrap_err();
    assert!(matches!(err, CreditsError::PublishDeferred { .. }), "{err:?}");
    assert_eq!(err.disposition(), Disposition::Retry);
    assert!(publisher.sent().is_empty(), "not started");
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Pending);

    let redelivery = w.settlement().settle_completed_and_publish(&message, &publisher, ctx()).await.unwrap();
    assert_eq!(redelivery.outcome, SettleOutcome::AlreadySettled);
    assert_eq!(publisher.sent().len(), 1);
    assert_eq!(w.outbox(interview).await.unwrap().status, OutboxStatus::Published);
    assert_eq!(w.ledger_sum(interview, LedgerType::Settle).await, 5);
    w.assert_invariants().await;
}

/// Published outbox entries expire through a TTL index on `publishedAt`; pending
/// entries have no `publishedAt` and never expire.
#[tokio::test]
async fn published_outbox_entries_expire_through_a_ttl_index_and_pending_ones_never() {
    use futures::TryStreamExt;
    use sophia_credits::migrations::{OUTBOX_TTL_INDEX, PUBLISHED_OUTBOX_TTL};

    let w = World::fresh().await;
    let indexes: Vec<mongodb::IndexModel> =
        w.mongo.db.collection::<Document>("outbox").list_indexes().await.unwrap().try_collect().await.unwrap();
    // By its keys: nx-27017 names indexes its own way (a real MongoDB keeps OUTBOX_TTL_INDEX).
    let ttl = indexes
        .iter()
        .find(|i| i.keys == doc! {"publishedAt": 1})
        .unwrap_or_else(|| panic!("no {OUTBOX_TTL_INDEX} index: {indexes:?}"));
    assert_eq!(ttl.options.as_ref().unwrap().expire_after, Some(PUBLISHED_OUTBOX_TTL));
    assert_eq!(PUBLISHED_OUTBOX_TTL, Duration::from_secs(7 * 24 * 3600));

    let org = w.org_with_credits(40).await;
    let (published, pending) = (w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await);
    w.settlement()
        .settle_completed_and_publish(&completed(published, org, 120), &RecordingPublisher::default(), ctx())
        .await
        .unwrap();
    w.settlement()
        .settle_completed_and_publish(&completed(pending, org, 120), &RecordingPublisher::skipping(), ctx())
        .await
        .unwrap();
    let outbox = w.mongo.db.collection::<Document>("outbox");
    let entry = |i: InterviewId| {
        let outbox = outbox.clone();
        async move {
            outbox
                .find_one(doc! {"_id": sophia_credits::model::OutboxEntry::report_generate_id(i.oid())})
                .await
                .unwrap()
                .unwrap()
        }
    };
    let done = entry(published).await;
    assert!(matches!(done.get("publishedAt"), Some(Bson::DateTime(_))), "a date the TTL index acts on: {done}");
    let waiting = entry(pending).await;
    assert_eq!(waiting.get_str("status").unwrap(), "PENDING");
    assert!(waiting.get("publishedAt").is_none(), "a pending entry never expires: {waiting}");
}
