//! What the flow relies on from the MongoDB under test, shown over the real Rust driver and wire
//! protocol. On the harness's nx-27017 these pass thanks to the fixes of
//! `scripts/tools/nx_launcher.py` (see its docstring); on a real MongoDB
//! (`SOPHIA_TEST_MONGODB_URI`) they pass as they are. The last test documents the gap that
//! remains on nx-27017 (counts and aggregation `$match` on ObjectId fields), which is why tests
//! count with `find`.
//!
//! Related: `settlement_flow.rs` (`nested_inc_updates_the_nested_field`,
//! `object_id_fields_match_by_equality`) and `report_generation.rs` (`nx_updates_by_object_id_fields`)
//! check the same fixes in their own flows; here each property is shown once, on its own.

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};
use futures::TryStreamExt;
use harness::World;
use harness::mongo::int;
use mongodb::Collection;

async fn collection(name: &str) -> Collection<Document> {
    World::without_migration().await.mongo.db.collection::<Document>(name)
}

async fn found(coll: &Collection<Document>, filter: Document) -> Vec<Document> {
    coll.find(filter).await.unwrap().try_collect().await.unwrap()
}

fn ms_from_now(ms: i64) -> DateTime {
    DateTime::from_millis(DateTime::now().timestamp_millis() + ms)
}

/// The report lease (`leaseExpiresAt`) and `settledAt` are written with `$set`: they must stay
/// BSON dates (stock nx-27017 stored a string) so that `{leaseExpiresAt: {$lt: now}}` matches
/// an expired lease and not a live one. Booleans keep their type too.
#[tokio::test]
async fn set_of_a_date_keeps_a_bson_date_and_lt_now_matches_only_the_past() {
    let coll = collection("gap_dates").await;
    coll.insert_many([doc! {"_id": "expired"}, doc! {"_id": "live"}]).await.unwrap();
    coll.update_one(doc! {"_id": "expired"}, doc! {"$set": {"lease": ms_from_now(-5_000), "flag": true}})
        .await
        .unwrap();
    coll.update_one(doc! {"_id": "live"}, doc! {"$set": {"lease": ms_from_now(60_000), "flag": false}}).await.unwrap();

    let expired = coll.find_one(doc! {"_id": "expired"}).await.unwrap().unwrap();
    assert!(matches!(expired.get("lease"), Some(Bson::DateTime(_))), "a BSON date, not a string: {expired}");
    assert_eq!(expired.get("flag"), Some(&Bson::Boolean(true)), "a bool, not an int: {expired}");

    let past = found(&coll, doc! {"lease": {"$lt": DateTime::now()}}).await;
    assert_eq!(past.iter().map(|d| d.get_str("_id").unwrap()).collect::<Vec<_>>(), ["expired"]);
    // The same comparison inside an update's filter (the report claim's `$or`).
    let r =
        coll.update_many(doc! {"lease": {"$lt": DateTime::now()}}, doc! {"$set": {"reclaimed": true}}).await.unwrap();
    assert_eq!(r.matched_count, 1);
}

/// The settlement claim is `{settledAt: null}`: it must match an explicit null (seeded
/// interviews) and a missing field (interviews written by other code), in `find` and in
/// `update_one`, and stop matching once a date is set.
#[tokio::test]
async fn settled_at_null_matches_an_explicit_null_and_a_missing_field_in_find_and_update() {
    let coll = collection("gap_null").await;
    coll.insert_many([
        doc! {"_id": "explicit", "settledAt": Bson::Null},
        doc! {"_id": "missing"},
        doc! {"_id": "set", "settledAt": DateTime::now()},
    ])
    .await
    .unwrap();
    let mut ids: Vec<String> = found(&coll, doc! {"settledAt": Bson::Null})
        .await
        .iter()
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["explicit", "missing"]);
    for id in ["explicit", "missing"] {
        let claim = coll
            .update_one(doc! {"_id": id, "settledAt": Bson::Null}, doc! {"$set": {"settledAt": DateTime::now()}})
            .await
            .unwrap();
        assert_eq!(claim.matched_count, 1, "{id}: the first claim matches");
        let again = coll
            .update_one(doc! {"_id": id, "settledAt": Bson::Null}, doc! {"$set": {"settledAt": DateTime::now()}})
            .await
            .unwrap();
        assert_eq!(again.matched_count, 0, "{id}: a second claim matches nothing");
    }
    assert_eq!(
        coll.update_one(doc! {"_id": "set", "settledAt": Bson::Null}, doc! {"$set": {"x": 1}})
            .await
            .unwrap()
            .matched_count,
        0
    );
}

/// `organizationId`, `interviewId`, `leaseId`, `reference.id` are ObjectIds other than `_id`:
/// equality on them must select the right documents in `find`, `update_one` and `update_many`.
#[tokio::test]
async fn object_id_valued_fields_match_in_find_and_updates() {
    let coll = collection("gap_oid").await;
    let (org, other) = (ObjectId::new(), ObjectId::new());
    coll.insert_many([
        doc! {"_id": 1, "organizationId": org, "reference": {"id": org}},
        doc! {"_id": 2, "organizationId": org, "reference": {"id": other}},
        doc! {"_id": 3, "organizationId": other, "reference": {"id": other}},
    ])
    .await
    .unwrap();
    assert_eq!(found(&coll, doc! {"organizationId": org}).await.len(), 2);
    assert_eq!(found(&coll, doc! {"reference.id": org}).await.len(), 1, "dotted path to an ObjectId");
    assert_eq!(found(&coll, doc! {"organizationId": {"$in": [other]}}).await.len(), 1);
    assert_eq!(found(&coll, doc! {"organizationId": ObjectId::new()}).await.len(), 0);
    let one = coll.update_one(doc! {"_id": 3, "organizationId": other}, doc! {"$set": {"x": 1}}).await.unwrap();
    assert_eq!(one.matched_count, 1);
    let wrong = coll.update_one(doc! {"_id": 3, "organizationId": org}, doc! {"$set": {"x": 2}}).await.unwrap();
    assert_eq!(wrong.matched_count, 0, "the wrong organization matches nothing");
    let many = coll.update_many(doc! {"organizationId": org}, doc! {"$set": {"y": 1}}).await.unwrap();
    assert_eq!(many.matched_count, 2);
}

/// The launcher narrows rows by the ObjectIds a filter requires (SQLite `instr` on the stored
/// JSON) before its matcher runs, also on the path filters with a date take (the report claim):
/// the narrowing must only ever be a superset. An ObjectId held by another field, inside an
/// array, under `$and` or `$in`, and next to a date comparison must all select exactly what
/// MongoDB selects.
#[tokio::test]
async fn filters_anchored_on_object_ids_select_exactly_the_matching_documents() {
    let coll = collection("gap_anchor").await;
    let (a, b, c) = (ObjectId::new(), ObjectId::new(), ObjectId::new());
    coll.insert_many([
        doc! {"_id": 1, "k": a, "other": b, "lease": ms_from_now(-5_000), "status": "PROCESSING"},
        doc! {"_id": 2, "k": b, "other": a, "lease": ms_from_now(60_000), "status": "PROCESSING"},
        doc! {"_id": 3, "k": c, "list": [a, b], "status": "FAILED"},
        doc! {"_id": 4, "k": c.to_hex(), "status": "FAILED"},
    ])
    .await
    .unwrap();
    let ids = |docs: Vec<Document>| docs.iter().map(|d| d.get_i32("_id").unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(found(&coll, doc! {"k": a}).await), [1], "b's document holds a in another field");
    assert_eq!(ids(found(&coll, doc! {"list": a}).await), [3], "an array holding the ObjectId");
    assert_eq!(ids(found(&coll, doc! {"k": {"$in": [a, b]}}).await), [1, 2]);
    assert_eq!(ids(found(&coll, doc! {"$and": [{"k": c}, {"list": b}]}).await), [3]);
    // A 24-hex string value is anchored too (neosqlite hands ObjectIds on as strings). nx-27017's
    // matcher also counts the ObjectId c equal to its hex string (MongoDB does not); the flow
    // never filters ObjectId fields with strings, so only the string's own document is asserted.
    assert!(ids(found(&coll, doc! {"k": c.to_hex()}).await).contains(&4));
    // The report claim's shape: an ObjectId, a status and a date under `$or`.
    let claimable = doc! {
        "k": {"$in": [a, b]},
        "$or": [{"status": "FAILED"}, {"status": "PROCESSING", "lease": {"$lt": DateTime::now()}}],
    };
    assert_eq!(ids(found(&coll, claimable.clone()).await), [1], "only the expired lease");
    let r = coll.update_many(claimable, doc! {"$set": {"reclaimed": true}}).await.unwrap();
    assert_eq!(r.matched_count, 1);
}

/// A settlement writes all its lots with one `update` command carrying a statement per lot (the
/// wire protocol's `updates` array): each statement applies, `n` counts the matches, and a
/// statement whose guard no longer holds matches nothing.
#[tokio::test]
async fn an_update_command_with_several_statements_applies_each_and_counts_matches() {
    let db = World::without_migration().await.mongo.db;
    let coll = db.collection::<Document>("gap_multi_update");
    coll.insert_many([doc! {"_id": 1, "reserved": 5}, doc! {"_id": 2, "reserved": 15}]).await.unwrap();
    let update = |guard_2: i32| {
        doc! {
            "update": "gap_multi_update",
            "updates": [
                {"q": {"_id": 1, "reserved": 5}, "u": {"$set": {"reserved": 0}}, "multi": false, "upsert": false},
                {"q": {"_id": 2, "reserved": guard_2}, "u": {"$set": {"reserved": 0}}, "multi": false, "upsert": false},
            ],
            "ordered": true,
        }
    };
    let reply = db.run_command(update(15)).await.unwrap();
    assert_eq!(int(&reply, "n"), Some(2), "{reply}");
    let all = found(&coll, doc! {}).await;
    assert!(all.iter().all(|d| int(d, "reserved") == Some(0)), "{all:?}");
    let stale = db.run_command(update(15)).await.unwrap();
    assert_eq!(int(&stale, "n"), Some(0), "the guards no longer hold: {stale}");
}

/// Balances are `$inc` of dotted paths (`credits.available`, `credits.reserved`): the nested
/// fields must change (stock nx-27017 added a top-level key named `credits.available`), also
/// with negative amounts, two paths at once, and a nested field that does not exist yet.
#[tokio::test]
async fn dotted_inc_updates_the_nested_fields() {
    let coll = collection("gap_inc").await;
    coll.insert_one(doc! {"_id": 1, "credits": {"available": 10_i64, "reserved": 0_i64}}).await.unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"credits.available": -4_i64, "credits.reserved": 4_i64}})
        .await
        .unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"credits.consumed": 3_i64}}).await.unwrap();
    let d = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(
        (int(&d, "credits.available"), int(&d, "credits.reserved"), int(&d, "credits.consumed")),
        (Some(6), Some(4), Some(3)),
        "{d}"
    );
    assert!(d.keys().all(|k| !k.contains('.')), "no literal dotted keys: {d}");
}

/// KNOWN GAP, asserted as it is today: on nx-27017 (even patched), `count_documents` and an
/// aggregation `$match` on an ObjectId-valued field other than `_id` count nothing, where MongoDB
/// counts the matching documents. Tests therefore count with `find` (see `harness::World::find`).
/// Against a real MongoDB (`SOPHIA_TEST_MONGODB_URI` set) the correct answers are asserted
/// instead; if a future launcher fix closes the gap, this test fails and must be updated.
#[tokio::test]
async fn known_gap_on_nx_count_and_aggregate_match_on_object_id_fields_find_nothing() {
    let coll = collection("gap_count").await;
    let org = ObjectId::new();
    coll.insert_many([
        doc! {"organizationId": org},
        doc! {"organizationId": org},
        doc! {"organizationId": ObjectId::new()},
    ])
    .await
    .unwrap();
    assert_eq!(found(&coll, doc! {"organizationId": org}).await.len(), 2, "find is right");
    let counted = coll.count_documents(doc! {"organizationId": org}).await;
    let aggregated: Result<Vec<Document>, _> = match coll.aggregate([doc! {"$match": {"organizationId": org}}]).await {
        Ok(cursor) => cursor.try_collect().await,
        Err(e) => Err(e),
    };
    let real_mongodb = std::env::var("SOPHIA_TEST_MONGODB_URI").is_ok_and(|u| !u.is_empty());
    if real_mongodb {
        assert_eq!(counted.unwrap(), 2);
        assert_eq!(aggregated.unwrap().len(), 2);
    } else {
        println!(
            "nx-27017 gap: count_documents -> {counted:?}, aggregate $match -> {:?}",
            aggregated.as_ref().map(Vec::len)
        );
        // Today: both answer 0, silently (no error). A change here means the gap moved.
        assert_eq!(
            counted.ok(),
            Some(0),
            "count_documents on an ObjectId filter no longer answers 0: update this test and the helpers that avoid it"
        );
        assert_eq!(
            aggregated.ok().map(|v| v.len()),
            Some(0),
            "aggregate $match on an ObjectId no longer answers nothing: update this test"
        );
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3, "an unfiltered count is right");
    }
}

/// The report claim and the records of a failure match reports other writers left (docs/design.md,
/// "Documents written by other services"): `attemptCount` absent (`$exists: false`) or any
/// numeric type below 3 (`$lt` across Int32, Int64 and Double), a lease absent or `null`
/// (`{leaseExpiresAt: null}`) combined with an `updatedAt` comparison, and a status other than
/// COMPLETED (`$ne`), in `update_one` filters as in `find`.
#[tokio::test]
async fn report_claim_filters_match_documents_lacking_fields_and_any_numeric_type() {
    let coll = collection("gap_claim").await;
    let old = ms_from_now(-3_600_000);
    coll.insert_many([
        doc! {"_id": "absent", "status": "NOT_STARTED"},
        doc! {"_id": "double", "status": "FAILED", "attemptCount": 2.0},
        doc! {"_id": "long", "status": "FAILED", "attemptCount": 2_i64},
        doc! {"_id": "spent", "status": "FAILED", "attemptCount": 3.0},
        doc! {"_id": "text", "status": "FAILED", "attemptCount": "two"},
        doc! {"_id": "stale", "status": "PROCESSING", "attemptCount": 1, "updatedAt": old},
        doc! {"_id": "fresh", "status": "PROCESSING", "attemptCount": 1, "leaseExpiresAt": Bson::Null, "updatedAt": DateTime::now()},
        doc! {"_id": "done", "status": "COMPLETED", "attemptCount": 1},
    ])
    .await
    .unwrap();
    let ids = |docs: Vec<Document>| {
        let mut v: Vec<String> = docs.iter().map(|d| d.get_str("_id").unwrap().to_owned()).collect();
        v.sort();
        v
    };
    let left = doc! {"$or": [{"attemptCount": {"$lt": 3}}, {"attemptCount": {"$exists": false}}]};
    assert_eq!(ids(found(&coll, left.clone()).await), ["absent", "done", "double", "fresh", "long", "stale"]);
    let lease_less_stale =
        doc! {"status": "PROCESSING", "leaseExpiresAt": Bson::Null, "updatedAt": {"$lt": ms_from_now(-60_000)}};
    assert_eq!(ids(found(&coll, lease_less_stale.clone()).await), ["stale"]);
    let r = coll.update_one(lease_less_stale, doc! {"$set": {"claimed": true}}).await.unwrap();
    assert_eq!(r.matched_count, 1, "the same filter in an update");
    // The record of an unreadable report: not COMPLETED, lease absent/null or expired. Written
    // with `$nin`: on nx-27017 the same filter with `$ne` (or with the `$or` alone) misses the
    // document lacking `leaseExpiresAt` (its date-filter path); MongoDB matches all three forms.
    let unreadable = doc! {
        "_id": {"$in": ["text", "done"]},
        "status": {"$nin": ["COMPLETED"]},
        "$or": [{"leaseExpiresAt": Bson::Null}, {"leaseExpiresAt": {"$lt": DateTime::now()}}],
    };
    assert_eq!(ids(found(&coll, unreadable.clone()).await), ["text"]);
    let r = coll.update_one(unreadable, doc! {"$set": {"marked": true}}).await.unwrap();
    assert_eq!(r.matched_count, 1, "the same filter in an update");
    let r = coll
        .update_one(doc! {"_id": "absent", "attemptCount": {"$exists": false}}, doc! {"$inc": {"attemptCount": 1}})
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        int(&coll.find_one(doc! {"_id": "absent"}).await.unwrap().unwrap(), "attemptCount"),
        Some(1),
        "$inc of an absent field starts at 0"
    );
}
