//! Corrupt lot numbers never wrap. Two expired lots whose unreserved remainders add up
//! past `i64::MAX`: settling the interview that holds the last reservations on both would forfeit
//! both remainders, and an unchecked `+` (the release profile has no overflow checks) would write
//! a wrapped, plausible-looking `credits.available` change. Through the real settlement service,
//! the sum is checked: inconsistent data naming the field, retried (then the DLQ), as every other
//! inconsistent credit data is. The pure arithmetic is covered by the property test in
//! `functions/credits/src/arithmetic.rs`.

use crate::support::settlement as settlement_common;
use harness::World;

use bson::oid::ObjectId;
use bson::{DateTime, Document, doc};
use chrono::{Duration, Utc};
use settlement_common::{at, ctx, secs};
use sophia_contracts::InterviewId;
use sophia_credits::arithmetic::{LOT_REMAINING, PlanError};
use sophia_credits::{CreditsError, Disposition};

#[tokio::test]
async fn expired_lots_whose_remainders_overflow_are_inconsistent_data_retried_never_a_wrapped_balance() {
    let w = World::fresh().await;
    let org = sophia_credits::seed::create_organization(&w.store, "Overflow").await.unwrap();
    let expired = DateTime::from_chrono(Utc::now() - Duration::days(1));
    let half = i64::MAX / 2 + 10;
    let lots: Vec<ObjectId> = (0..2).map(|_| ObjectId::new()).collect();
    for lot in &lots {
        let d = doc! {
            "_id": lot, "organizationId": org.oid(), "granted": i64::MAX, "remaining": half, "reserved": 1_i64,
            "expiresAt": expired, "status": "ACTIVE",
        };
        w.mongo.db.collection::<Document>("creditLots").insert_one(d).await.unwrap();
    }
    let interview = ObjectId::new();
    let credits = doc! {"reserved": 2_i64, "allocations": [{"lotId": lots[0], "credits": 1_i64}, {"lotId": lots[1], "credits": 1_i64}]};
    w.mongo
        .db
        .collection::<Document>("interviews")
        .insert_one(doc! {"_id": interview, "organizationId": org.oid(), "status": "COMPLETED", "credits": credits})
        .await
        .unwrap();

    let err = w
        .settlement()
        .settle_completed_interview(InterviewId::new(interview), org, at("2026-12-02T17:30:00.000Z"), secs(0), ctx())
        .await
        .expect_err("the forfeits of both lots do not fit in 64 bits");
    assert!(
        matches!(&err, CreditsError::Inconsistent { source: PlanError::SumOverflow(field), .. } if *field == LOT_REMAINING),
        "{err:?}"
    );
    assert_eq!(err.disposition(), Disposition::Retry, "retried, then the DLQ: the data needs an operator");
    let text = err.to_string();
    assert!(text.contains("creditLots.remaining") && text.contains("credit data is inconsistent"), "{text}");
    assert!(!text.contains(&half.to_string()), "the message names the field, not the stored values: {text}");

    let org_doc =
        w.mongo.db.collection::<Document>("organizations").find_one(doc! {"_id": org.oid()}).await.unwrap().unwrap();
    let available = org_doc.get_document("credits").ok().and_then(|c| c.get("available").cloned());
    assert_ne!(
        available,
        Some(bson::Bson::Int64(2_i64.wrapping_sub(half.wrapping_add(half)))),
        "never the wrapped value"
    );
    if harness::requires_transactions(&w.mongo, "credit_overflow: nothing committed").await {
        let doc =
            w.mongo.db.collection::<Document>("interviews").find_one(doc! {"_id": interview}).await.unwrap().unwrap();
        assert!(doc.get_datetime("settledAt").is_err(), "the claim was rolled back with the transaction: {doc}");
        for lot in &lots {
            let l = w.mongo.db.collection::<Document>("creditLots").find_one(doc! {"_id": lot}).await.unwrap().unwrap();
            assert_eq!(l.get_i64("remaining").unwrap(), half, "lot untouched");
        }
    }
}
