//! Report generation end to end, in-process: the report-generate handler (consumer wrapper +
//! `generate_report`) against nx-27017 and the OpenAI-compatible fake over real HTTP, with the
//! real async-openai client.

use crate::support::report as report_support;

use report_support::*;
use sophia_reports::report::ReportStatus;

#[tokio::test]
async fn a_full_report_is_persisted_with_its_metadata_from_a_strict_schema_request() {
    let env = env().await;
    let fixture = InterviewFixture::new(org());
    let ids = fixture.insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);

    // The request the project sent.
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.authorization.as_deref(), Some("Bearer test-key"));
    assert_eq!(r.body["model"], MODEL);
    assert_eq!(r.body["response_format"]["type"], "json_schema");
    assert_eq!(r.body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(r.body["response_format"]["json_schema"]["name"], SCHEMA_NAME);
    assert_eq!(r.body["response_format"]["json_schema"]["schema"], report_schema());
    let messages = r.body["messages"].as_array().unwrap();
    assert_eq!(messages.iter().map(|m| m["role"].as_str().unwrap()).collect::<Vec<_>>(), ["system", "user"]);
    let system = r.message("system").unwrap();
    let user = r.message("user").unwrap();
    for candidate_text in [SECRET_ANSWER, "Jane Doe", "Senior Backend Engineer"] {
        assert!(!system.contains(candidate_text), "candidate data in the system message: {candidate_text}");
        assert!(user.contains(candidate_text), "candidate data missing from the user message: {candidate_text}");
    }
    assert!(user.contains(DATA_OPEN) && user.contains(DATA_CLOSE));

    // The persisted document.
    let d = stored(&env, ids.0).await.expect("report written");
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(int(&d, "attemptCount"), 1);
    assert_eq!(d.get_object_id("organizationId").unwrap(), ids.1.oid());
    assert_eq!(d.get("leaseExpiresAt"), Some(&Bson::Null));
    assert_eq!(d.get("lastError"), Some(&Bson::Null));
    assert!(matches!(d.get("completedAt"), Some(Bson::DateTime(_))));
    assert_eq!(
        d.get_datetime("retentionExpiresAt").unwrap(),
        fixture.document().get_datetime("retentionExpiresAt").unwrap()
    );
    let report = d.get_document("report").unwrap();
    assert!(report.get_str("summary").unwrap().starts_with(OFFLINE_LABEL));
    assert!((0..=100).contains(&int(report, "overallScore")));
    assert_eq!(report.get_array("skillAssessments").unwrap().len(), 3);
    assert_eq!(report.get_array("questionAnalysis").unwrap().len(), 2);
    let skill = report.get_array("skillAssessments").unwrap()[0].as_document().unwrap();
    assert_eq!(skill.get_str("skill").unwrap(), "Rust");
    assert!(!skill.get_array("evidence").unwrap().is_empty());
    let generation = d.get_document("generation").unwrap();
    assert_eq!(generation.get_str("source").unwrap(), "model");
    assert_eq!(generation.get_str("model").unwrap(), FAKE_MODEL);
    assert_eq!(generation.get_str("requestedModel").unwrap(), MODEL);
    assert_eq!(generation.get_str("promptVersion").unwrap(), prompt_version());
    assert!(generation.get_str("completionId").unwrap().starts_with("chatcmpl-"));
    assert!(int(generation, "promptTokens") > 100);
    assert!(int(generation, "completionTokens") > 10);
    assert_eq!(int(generation, "totalTokens"), int(generation, "promptTokens") + int(generation, "completionTokens"));
    assert!(int(generation, "latencyMs") >= 0);
    assert!(!generation.get_document("truncation").unwrap().get_bool("resumeTruncated").unwrap());

    // Exactly the layout of the checked-in schema (`ReportDocument` denies unknown fields).
    let typed: sophia_reports::report::ReportDocument = bson::from_document(d.clone()).expect("the documented layout");
    assert_eq!((typed.status, typed.error_kind), (ReportStatus::Completed, None));
    println!("PERSISTED REPORT DOCUMENT:\n{:#}", Bson::Document(d).into_relaxed_extjson());
    println!("REQUEST BODY:\n{:#}", r.body);
}

#[tokio::test]
async fn a_long_resume_is_truncated_and_the_truncation_recorded() {
    let env = env().await;
    let resume = format!("{} END-OF-RESUME-MARKER", "experience ".repeat(2_000));
    let ids = InterviewFixture::new(org()).resume(&resume).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let user = env.fake.requests()[0].message("user").unwrap().to_owned();
    assert!(!user.contains("END-OF-RESUME-MARKER"));
    assert!(user.contains("[truncated]"));
    let d = stored(&env, ids.0).await.unwrap();
    let t = d.get_document("generation").unwrap().get_document("truncation").unwrap();
    assert!(t.get_bool("resumeTruncated").unwrap());
    assert_eq!(int(t, "resumeOriginalChars"), resume.chars().count() as i64);
}

#[tokio::test]
async fn insufficient_evidence_by_duration_completes_without_a_model_call() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).duration_seconds(59).insert(&env.mongo.db).await.unwrap();
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.fake.request_count(), 0, "no HTTP call");
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    let report = d.get_document("report").unwrap();
    assert_eq!(report.get_str("recommendation").unwrap(), "insufficient_evidence");
    assert_eq!(report.get("overallScore"), Some(&Bson::Null));
    assert!(report.get_str("insufficientEvidenceReason").unwrap().contains("59 s"));
    let generation = d.get_document("generation").unwrap();
    assert_eq!(generation.get_str("source").unwrap(), "insufficient_evidence_rule");
    assert_eq!(generation.get("model"), Some(&Bson::Null));
    assert_eq!(generation.get_str("promptVersion").unwrap(), prompt_version());
}

#[tokio::test]
async fn insufficient_evidence_by_answers_completes_without_a_model_call() {
    let env = env().await;
    let ids = InterviewFixture::new(org())
        .transcript(&[
            ("interviewer", "Tell me about a data migration you led in your last role."),
            ("candidate", SECRET_ANSWER),
            ("interviewer", "How do you handle errors?"),
            ("candidate", "Sorry, could you repeat the question?"),
            ("candidate", "I am not sure."),
        ])
        .insert(&env.mongo.db)
        .await
        .unwrap();
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.fake.request_count(), 0, "no HTTP call");
    let report = stored(&env, ids.0).await.unwrap().get_document("report").unwrap().clone();
    assert_eq!(report.get_str("recommendation").unwrap(), "insufficient_evidence");
    assert!(report.get_str("insufficientEvidenceReason").unwrap().starts_with("1 substantive"));
}

#[tokio::test]
async fn a_completed_report_redelivered_is_a_no_op() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let first = stored(&env, ids.0).await.unwrap();
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.handler.service().generate_report(ids.0, ids.1).await.unwrap(), Generated::AlreadyCompleted);
    assert_eq!(env.fake.request_count(), 1, "no second HTTP call");
    assert_eq!(stored(&env, ids.0).await.unwrap(), first, "nothing rewritten");
    assert_eq!(report_count(&env).await, 1);
}

/// docs/design.md: every attempt's error is returned, the third included (SQS then moves the message
/// to the DLQ); only a delivery that finds the report already FAILED at 3 attempts is
/// acknowledged, without a model call. Attempts count answers that were wrong.
#[tokio::test]
async fn three_failures_leave_the_report_failed_and_every_one_is_returned_for_the_dlq() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Refusal).push(Behaviour::Length).push(Behaviour::MalformedJson);
    let expected = [("refused", "refusal"), ("length", "truncated"), ("not JSON", "invalid_output")];
    for (attempt, (error, kind)) in (1..=MAX_ATTEMPTS).zip(expected) {
        assert_eq!(deliver(&env, ids).await, Outcome::Failed, "attempt {attempt}: returned for SQS, the last one too");
        let d = stored(&env, ids.0).await.unwrap();
        assert_eq!(d.get_str("status").unwrap(), "FAILED", "FAILED before the error was returned");
        assert_eq!(int(&d, "attemptCount"), i64::from(attempt));
        assert_eq!(d.get_str("errorKind").unwrap(), kind, "attempt {attempt}");
        let last_error = d.get_str("lastError").unwrap();
        assert!(last_error.contains(error), "attempt {attempt}: {last_error}");
        assert!(!last_error.contains("The candidate"), "no model content in lastError");
        assert_eq!(d.get("leaseExpiresAt"), Some(&Bson::Null));
    }
    assert_eq!(deliver(&env, ids).await, Outcome::Processed, "a later delivery (duplicate, redrive) is acknowledged");
    assert_eq!(env.fake.request_count(), 3, "no model call after the third attempt");
    assert_eq!(env.fake.pending(), 0);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "FAILED");
    assert_eq!(int(&d, "attemptCount"), 3);
}

/// The provider away (HTTP 500 and 429 through the client's own retries) costs no attempt: each
/// failure is returned for SQS (a transient failure: backed off, requeued on the last receive),
/// the attempt given back and counted in `transientFailures`; the report's three attempts are
/// still there for answers that are wrong.
#[tokio::test]
async fn server_errors_and_rate_limits_give_the_attempt_back() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    for _ in 0..=CLIENT_RETRIES {
        env.fake.push(Behaviour::ServerError);
    }
    for _ in 0..=CLIENT_RETRIES {
        env.fake.push(Behaviour::RateLimited);
    }
    for (n, kind) in [(1, "server_error"), (2, "rate_limited")] {
        assert_eq!(deliver(&env, ids).await, Outcome::Failed);
        let d = stored(&env, ids.0).await.unwrap();
        assert_eq!((d.get_str("status").unwrap(), d.get_str("errorKind").unwrap()), ("FAILED", kind));
        assert_eq!((int(&d, "attemptCount"), int(&d, "transientFailures")), (0, n), "{d}");
    }
    env.fake.push(Behaviour::MalformedJson).push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(int(&stored(&env, ids.0).await.unwrap(), "attemptCount"), 1, "a wrong answer counts");
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("COMPLETED", 2));
    assert_eq!(typed(&d).transient_failures, Some(2), "transientFailures is in the documented layout");
}

#[tokio::test]
async fn a_transient_server_error_is_retried_by_the_client_within_one_attempt() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::ServerError).push(Behaviour::RateLimited).push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.fake.request_count(), 3);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("COMPLETED", 1));
}

#[tokio::test]
async fn a_refusal_and_an_out_of_range_report_are_failures_to_retry() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Refusal);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    let failed = stored(&env, ids.0).await.unwrap();
    let last_error = failed.get_str("lastError").unwrap().to_owned();
    assert!(last_error.contains("refused") && !last_error.contains("I'm sorry"), "{last_error}");
    let typed: sophia_reports::report::ReportDocument = bson::from_document(failed).expect("the documented layout");
    assert_eq!(typed.error_kind, Some(sophia_reports::ErrorKind::Refusal));
    assert_eq!(typed.refusal.as_deref(), Some("I'm sorry, but I can't help with that request."), "kept on the report");

    let out_of_range = json!({
        "overallScore": 140, "recommendation": "hire", "summary": "s", "strengths": [], "concerns": [],
        "skillAssessments": [], "questionAnalysis": []
    });
    env.fake.push(Behaviour::Content(out_of_range.to_string()));
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    let last_error = stored(&env, ids.0).await.unwrap().get_str("lastError").unwrap().to_owned();
    assert!(last_error.contains("overallScore = 140"), "{last_error}");

    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed, "the third attempt succeeds");
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("COMPLETED", 3));
    assert_eq!(d.get("lastError"), Some(&Bson::Null));
    assert!(d.get("errorKind").is_none() && d.get("refusal").is_none(), "the failure's fields are cleared: {d}");
}

#[tokio::test]
async fn a_reply_slower_than_the_client_timeout_fails_the_attempt() {
    let env = env_with_timeout(Duration::from_millis(500)).await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::slow(Duration::from_secs(3), Behaviour::Report));
    let started = std::time::Instant::now();
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert!(started.elapsed() < Duration::from_secs(3), "gave up at the client timeout");
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "FAILED");
    assert!(d.get_str("lastError").unwrap().contains("timed out"));
}

#[tokio::test]
async fn a_live_processing_holder_is_skipped() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    seed_report(&env, ids, "PROCESSING", 1, Some(in_ms(240_000))).await;
    let before = stored(&env, ids.0).await.unwrap();
    assert_eq!(deliver(&env, ids).await, Outcome::Processed, "acknowledged: the holder has its own message");
    assert_eq!(env.handler.service().generate_report(ids.0, ids.1).await.unwrap(), Generated::HeldByAnother);
    assert_eq!(env.fake.request_count(), 0);
    assert_eq!(stored(&env, ids.0).await.unwrap(), before, "untouched");
}

#[tokio::test]
async fn an_expired_lease_is_reclaimed() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    seed_report(&env, ids, "PROCESSING", 1, Some(in_ms(-1_000))).await;
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("COMPLETED", 2));
    assert_eq!(env.fake.request_count(), 1);
}

/// A report document written by someone else before the first delivery (the API may create a
/// NOT_STARTED placeholder): the insert-claim finds it there and the atomic claim takes it.
#[tokio::test]
async fn a_not_started_report_made_elsewhere_is_claimed_and_completed() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    seed_report(&env, ids, "NOT_STARTED", 0, None).await;
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("COMPLETED", 1));
    assert_eq!(env.fake.request_count(), 1);
    assert_eq!(report_count(&env).await, 1);
}

#[tokio::test]
async fn an_expired_lease_on_the_last_attempt_is_marked_failed_and_acknowledged() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    seed_report(&env, ids, "PROCESSING", MAX_ATTEMPTS, Some(in_ms(-1_000))).await;
    assert_eq!(env.handler.service().generate_report(ids.0, ids.1).await.unwrap(), Generated::AttemptsExhausted);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "FAILED");
    assert_eq!(env.fake.request_count(), 0);
}

#[tokio::test]
async fn soft_deleted_and_other_organization_interviews_write_nothing() {
    let env = env().await;
    let deleted = InterviewFixture::new(org()).deleted().insert(&env.mongo.db).await.unwrap();
    let (interview, _) = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    let absent = (InterviewId::new(bson::oid::ObjectId::new()), org());
    for ids in [deleted, (interview, org()), absent] {
        assert_eq!(deliver(&env, ids).await, Outcome::DroppedByHandler, "logged and acknowledged");
    }
    assert_eq!(report_count(&env).await, 0, "nothing written");
    assert_eq!(env.fake.request_count(), 0);
}

#[tokio::test]
async fn concurrent_deliveries_make_one_model_call() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    migrations::apply(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::slow(Duration::from_millis(400), Behaviour::Report));
    let service = env.handler.service();
    let (a, b) = tokio::join!(service.generate_report(ids.0, ids.1), service.generate_report(ids.0, ids.1));
    let mut outcomes = [a.unwrap().as_str(), b.unwrap().as_str()];
    outcomes.sort();
    assert_eq!(outcomes, ["completed", "held_by_another"]);
    assert_eq!(env.fake.request_count(), 1);
    assert_eq!(report_count(&env).await, 1);
}

#[tokio::test]
async fn migrations_are_idempotent_and_enforce_one_report_per_interview() {
    let env = env().await;
    migrations::apply(&env.mongo.db).await.unwrap();
    migrations::apply(&env.mongo.db).await.unwrap();
    let ids = (InterviewId::new(bson::oid::ObjectId::new()), org());
    let store = sophia_reports::store::ReportStore::new(&env.mongo.db);
    let lease = Duration::from_secs(60);
    let first = store.insert_claimed(ids.0, ids.1, DateTime::now(), lease).await.unwrap();
    assert_eq!(first.map(|l| l.attempt), Some(1), "the first insert is the claim");
    assert_eq!(
        store.insert_claimed(ids.0, ids.1, DateTime::now(), lease).await.unwrap(),
        None,
        "duplicate key tolerated"
    );
    assert_eq!(report_count(&env).await, 1);
    let stored = store.find(ids.0).await.unwrap().expect("the report");
    assert_eq!(stored.status, ReportStatus::Processing);
    assert_eq!((stored.attempt_count, stored.lease_id), (1, first.map(|l| l.id)));
}

/// An nx-27017 gap that `scripts/tools/nx_launcher.py` fix 4 (every filter evaluated by the Python
/// matcher) closes: `update_one` filtered by an ObjectId-valued field other than `_id` (the report
/// store's `{interviewId, leaseId, status}`) matched nothing, though `find_one` did. Real MongoDB
/// matches.
#[tokio::test]
async fn nx_updates_by_object_id_fields() {
    let env = env().await;
    let coll = env.mongo.db.collection::<Document>("gap");
    let (a, b) = (bson::oid::ObjectId::new(), bson::oid::ObjectId::new());
    coll.insert_one(doc! {"interviewId": a, "leaseId": b, "status": "PROCESSING"}).await.unwrap();
    let r = coll
        .update_one(
            doc! {"interviewId": a, "leaseId": b, "status": "PROCESSING"},
            doc! {"$set": {"status": "COMPLETED"}},
        )
        .await
        .unwrap();
    assert_eq!(r.matched_count, 1);
    let other = coll
        .update_one(doc! {"interviewId": a, "leaseId": bson::oid::ObjectId::new()}, doc! {"$set": {"status": "X"}})
        .await
        .unwrap();
    assert_eq!(other.matched_count, 0, "a different ObjectId still does not match");
    assert_eq!(coll.find_one(doc! {"interviewId": a}).await.unwrap().unwrap().get_str("status").unwrap(), "COMPLETED");
}

#[tokio::test]
async fn admin_retry_republishes_and_resets_attempts_only_when_asked() {
    use sophia_contracts::{ReportGenerate, RequestId};
    use sophia_reports::admin::{AdminError, RetryOutcome, RetryRequest, retry_report_generation};
    use std::sync::{Arc, Mutex};

    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    seed_report(&env, ids, "FAILED", MAX_ATTEMPTS, None).await;
    let sent: Arc<Mutex<Vec<(ReportGenerate, RequestId)>>> = Arc::default();
    let publisher = |sent: Arc<Mutex<Vec<(ReportGenerate, RequestId)>>>| {
        move |m: ReportGenerate, r: RequestId| async move {
            sent.lock().unwrap().push((m, r));
            Ok::<(), std::io::Error>(())
        }
    };
    let request = RetryRequest { interview_id: ids.0, organization_id: ids.1, reset_attempts: false };

    let refused = retry_report_generation(&env.mongo.db, request, publisher(sent.clone())).await;
    assert!(matches!(refused, Err(AdminError::AttemptsExhausted { attempts: 3 })), "{refused:?}");
    assert!(sent.lock().unwrap().is_empty(), "nothing published without the reset");

    let done = retry_report_generation(
        &env.mongo.db,
        RetryRequest { reset_attempts: true, ..request },
        publisher(sent.clone()),
    )
    .await
    .unwrap();
    assert!(matches!(done, RetryOutcome::Published { attempts_reset: true, .. }));
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), int(&d, "attemptCount")), ("FAILED", 0));
    let published = sent.lock().unwrap().clone();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].0, ReportGenerate { interview_id: ids.0, organization_id: ids.1 });
    assert_eq!(published[0].1.as_str(), format!("admin-retry-{}", ids.0));

    // The re-published message now generates the report.
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    // The reset's record and the completion, in the documented layout (the API's stored type).
    let retried = typed(&stored(&env, ids.0).await.unwrap());
    assert_eq!(retried.status, ReportStatus::Completed);
    let mark = retried.last_retry.expect("lastRetry");
    assert_eq!(
        (mark.via.as_str(), mark.attempts_before, mark.status_before),
        ("report-retry", 3, ReportStatus::Failed)
    );
    assert_eq!(retried.retries.map(|r| r.len()), Some(1));
    let again = retry_report_generation(&env.mongo.db, request, publisher(sent.clone())).await.unwrap();
    assert_eq!(again, RetryOutcome::AlreadyCompleted);
    let other_org = RetryRequest { organization_id: org(), ..request };
    assert!(matches!(
        retry_report_generation(&env.mongo.db, other_org, publisher(sent.clone())).await,
        Err(AdminError::InterviewNotFound { .. })
    ));
    assert_eq!(sent.lock().unwrap().len(), 1);
}
