//! A retention date on every report write path (docs/design.md, "Documents written by other
//! services"; the TTL index on `interviewReports.retentionExpiresAt` deletes the report).
//!
//! The write paths of `sophia_reports` (store.rs), each exercised here through the
//! report-generate handler against nx-27017 and the OpenAI fake:
//! 1. the first claim inserts the report (`insert_claimed`);
//! 2. the claim of an existing report (`claim`: an API placeholder, a FAILED retry, an expired
//!    lease), with its `attemptCount: null` normalisation;
//! 3. completion (`complete`: the model's report or the insufficient-evidence rule);
//! 4. failure under the lease (`fail`), including a FAILED report claimed from an API
//!    placeholder that had no retention date;
//! 5. out of attempts (`mark_exhausted`);
//! 6. an unreadable report (`fail_unreadable`).
//!
//! The last test runs the whole local pipeline (fauxqs, the event-source-mapping emulator,
//! interview-completed settling the interview, report-generate) and checks every report written.

use crate::support::ops as ops_support;
use crate::support::report as report_support;

use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::mongo::reports_of;
use harness::sqs::{completed_body, send};
use report_support::*;
use sophia_reports::store::FALLBACK_RETENTION_DAYS;

const DAY_MS: i64 = 24 * 3600 * 1000;

fn retention(d: &Document) -> DateTime {
    match d.get("retentionExpiresAt") {
        Some(Bson::DateTime(t)) => *t,
        other => panic!("no retention date ({other:?}) on {d:?}"),
    }
}

fn interview_retention(fixture: &InterviewFixture) -> DateTime {
    fixture.document().get_datetime("retentionExpiresAt").copied().unwrap()
}

/// A report the API wrote before any attempt: NOT_STARTED, no retention date.
async fn placeholder(env: &Env, ids: (InterviewId, OrganizationId), extra: Document) {
    let mut d = doc! {
        "interviewId": ids.0.oid(), "organizationId": ids.1.oid(), "status": "NOT_STARTED",
        "createdAt": DateTime::now(), "updatedAt": DateTime::now(),
    };
    d.extend(extra);
    env.mongo.db.collection::<Document>(INTERVIEW_REPORTS).insert_one(d).await.unwrap();
}

#[test]
fn the_fallback_is_the_settlements_retention() {
    assert_eq!(FALLBACK_RETENTION_DAYS, sophia_credits::settlement::RETENTION_DAYS);
}

#[tokio::test]
async fn a_completed_report_and_a_rule_report_carry_the_interviews_retention() {
    let env = env().await;
    let model = InterviewFixture::new(org());
    let rule = InterviewFixture::new(org()).duration_seconds(30);
    let (a, b) = (model.insert(&env.mongo.db).await.unwrap(), rule.insert(&env.mongo.db).await.unwrap());
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, a).await, Outcome::Processed);
    assert_eq!(deliver(&env, b).await, Outcome::Processed);
    assert_eq!(retention(&stored(&env, a.0).await.unwrap()), interview_retention(&model));
    let d = stored(&env, b.0).await.unwrap();
    assert_eq!(d.get_document("report").unwrap().get_str("recommendation").unwrap(), "insufficient_evidence");
    assert_eq!(retention(&d), interview_retention(&rule));
}

#[tokio::test]
async fn a_failed_report_claimed_from_an_api_placeholder_gets_the_interviews_retention() {
    let env = env().await;
    let fixture = InterviewFixture::new(org());
    let ids = fixture.insert(&env.mongo.db).await.unwrap();
    placeholder(&env, ids, doc! {}).await;
    env.fake.push(Behaviour::RefusalText("I can't assess this.".into()));

    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), d.get_str("errorKind").unwrap()), ("FAILED", "refusal"));
    assert_eq!(retention(&d), interview_retention(&fixture), "the refusal text is kept no longer than the interview");
}

#[tokio::test]
async fn a_failed_first_attempt_and_a_completed_placeholder_with_a_null_count_carry_it_too() {
    let env = env().await;
    let (f1, f2) = (InterviewFixture::new(org()), InterviewFixture::new(org()));
    let (a, b) = (f1.insert(&env.mongo.db).await.unwrap(), f2.insert(&env.mongo.db).await.unwrap());
    env.fake.push(Behaviour::Error(sophia_openai_fake::ApiError::bad_request()));
    assert_eq!(deliver(&env, a).await, Outcome::Failed);
    assert_eq!(retention(&stored(&env, a.0).await.unwrap()), interview_retention(&f1));

    placeholder(&env, b, doc! {"attemptCount": Bson::Null, "retentionExpiresAt": Bson::Null}).await;
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, b).await, Outcome::Processed);
    let d = stored(&env, b.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(retention(&d), interview_retention(&f2));
}

#[tokio::test]
async fn out_of_attempts_and_unreadable_reports_are_given_a_retention_date() {
    let env = env().await;
    let (f1, f2) = (InterviewFixture::new(org()), InterviewFixture::new(org()));
    let (a, b) = (f1.insert(&env.mongo.db).await.unwrap(), f2.insert(&env.mongo.db).await.unwrap());
    // Out of attempts, written before retention dates were copied: acknowledged, no call.
    seed_report(&env, a, "FAILED", MAX_ATTEMPTS, None).await;
    assert_eq!(deliver(&env, a).await, Outcome::Processed);
    assert_eq!(retention(&stored(&env, a.0).await.unwrap()), interview_retention(&f1));
    // A status no reader knows: recorded FAILED (invalid_document) and returned.
    placeholder(&env, b, doc! {"status": "ARCHIVED"}).await;
    assert_eq!(deliver(&env, b).await, Outcome::Failed);
    let d = stored(&env, b.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), d.get_str("errorKind").unwrap()), ("FAILED", "invalid_document"));
    assert_eq!(retention(&d), interview_retention(&f2));
    assert_eq!(env.fake.request_count(), 0);
}

#[tokio::test]
async fn an_unreadable_interview_and_one_without_retention_still_give_the_report_one() {
    let env = env().await;
    let unreadable = InterviewFixture::new(org());
    let mut document = unreadable.document().clone();
    document.insert("snapshot", "not a document");
    env.mongo.db.collection::<Document>("interviews").insert_one(&document).await.unwrap();
    let a = (unreadable.interview_id(), unreadable.organization_id());
    assert_eq!(deliver(&env, a).await, Outcome::Failed);
    let d = stored(&env, a.0).await.unwrap();
    assert_eq!(d.get_str("errorKind").unwrap(), "invalid_document");
    assert_eq!(retention(&d), interview_retention(&unreadable));

    // No retentionExpiresAt on the interview: the fallback, FALLBACK_RETENTION_DAYS from the write.
    let bare = InterviewFixture::new(org());
    let mut document = bare.document().clone();
    document.remove("retentionExpiresAt");
    env.mongo.db.collection::<Document>("interviews").insert_one(&document).await.unwrap();
    let b = (bare.interview_id(), bare.organization_id());
    env.fake.push(Behaviour::Report);
    let before = DateTime::now().timestamp_millis();
    assert_eq!(deliver(&env, b).await, Outcome::Processed);
    let after = DateTime::now().timestamp_millis();
    let at = retention(&stored(&env, b.0).await.unwrap()).timestamp_millis();
    let days = FALLBACK_RETENTION_DAYS * DAY_MS;
    assert!((before + days..=after + days).contains(&at), "{at} not {FALLBACK_RETENTION_DAYS} days after the write");
}

/// The whole local pipeline: interview.completed settles the interview (which sets its
/// retention date) and publishes report.generate through the outbox; report-generate writes the
/// report. The second interview's report starts as an API placeholder without a date. Every
/// stored report has the retention date of its interview.
#[tokio::test]
async fn through_the_local_pipeline_every_stored_report_has_a_retention_date() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let (direct, placeheld) = (w.reserved_interview(org, 10).await, w.reserved_interview(org, 10).await);
    let (sqs, queues) = (&w.sqs, &w.queues);
    for interview in [direct, placeheld] {
        send(sqs, &queues.interview_completed.source.url, &completed_body(interview, org, 300)).await;
    }
    // The API's placeholder for the second report, written before the report is generated.
    w.mongo
        .db
        .collection::<Document>(INTERVIEW_REPORTS)
        .insert_one(doc! {
            "interviewId": placeheld.oid(), "organizationId": org.oid(), "status": "NOT_STARTED",
            "createdAt": DateTime::now(), "updatedAt": DateTime::now(),
        })
        .await
        .unwrap();

    let settlements = interview_esm(sqs, queues, 1, w.settings());
    poll_until(&settlements, Duration::from_secs(30), |runs| runs.iter().map(|r| r.deleted).sum::<usize>() >= 2).await;

    let fake = FakeOpenAi::scripted().unwrap();
    let reports = ops_support::report_mapping(&w, &fake);
    // The two messages may come in either order: both answers are decided by the interview.
    for _ in 0..2 {
        fake.push(Behaviour::Report);
    }
    let runs =
        poll_until(&reports, Duration::from_secs(30), |runs| runs.iter().map(|r| r.deleted).sum::<usize>() >= 2).await;
    assert!(runs.iter().all(|r| r.failed_ids.is_empty()), "{runs:?}");

    let interviews: Vec<Document> = w.all("interviews").await;
    let reports_written: Vec<Document> = w.all(INTERVIEW_REPORTS).await;
    assert_eq!(reports_written.len(), 2);
    for report in &reports_written {
        let interview = interviews
            .iter()
            .find(|i| i.get_object_id("_id").ok() == report.get_object_id("interviewId").ok())
            .expect("its interview");
        let expected = interview.get_datetime("retentionExpiresAt").copied().expect("set by the settlement");
        assert_eq!(retention(report), expected, "{report:?}");
    }
    for interview in [direct, placeheld] {
        assert_eq!(reports_of(&w.mongo.db, interview).await[0].get_str("status").unwrap(), "COMPLETED");
    }
}
