//! Report generation's logs: every line JSON with the generation fields, and never candidate
//! text, refusal text or the API key. Captured by the harness's process-wide subscriber.

use crate::support::report as report_support;

use harness::logs::LogCapture;
use report_support::*;

#[tokio::test]
async fn logs_carry_the_generation_fields_and_never_candidate_text_or_the_key() {
    let logs = LogCapture::global();
    let env = env().await;
    let resume = "Resume of Jane Doe: private phone 555-0100";
    let ids = InterviewFixture::new(org()).resume(resume).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::MalformedJson).push(Behaviour::Refusal).push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);

    let text = logs.text();
    for secret in
        [SECRET_ANSWER, "We compared row counts", resume, "555-0100", "test-key", "I'm sorry", "The candidate"]
    {
        assert!(!text.contains(secret), "{secret:?} was logged");
    }
    let all: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Every module's tests log into the one capture of the test process: this interview's lines.
    let lines: Vec<&Value> = all.iter().filter(|l| l["span"]["interviewId"] == ids.0.to_string()).collect();
    let received = lines.iter().find(|l| l["message"] == "chat completion received").expect("a completion line");
    for field in ["promptTokens", "completionTokens", "totalTokens", "latencyMs", "respondingModel"] {
        assert!(!received[field].is_null(), "{field} missing from {received}");
    }
    let span = &received["span"];
    assert_eq!(span["interviewId"], ids.0.to_string());
    assert_eq!(span["organizationId"], ids.1.to_string());
    assert_eq!(span["attempt"], 3);
    assert_eq!(span["model"], MODEL);
    assert!(lines.iter().any(|l| l["message"] == "report generation failed" && l["kind"] == "invalid_output"));
    assert!(lines.iter().any(|l| l["message"] == "report generation failed" && l["kind"] == "refusal"));
}

/// What the dashboard's ERROR widget shows (infra-pulumi/src/dashboard.ts: `level = "ERROR"`,
/// `kind`, `span.interviewId`): every failed report attempt from the FIRST one, a transient kind
/// included, with its interview id and kind, and never candidate text.
#[tokio::test]
async fn every_failed_attempt_is_an_error_line_with_its_interview_id_and_kind_from_the_first() {
    let logs = LogCapture::global();
    let env = env().await;
    let ids =
        InterviewFixture::new(org()).resume("Resume of Ann Roe, phone 555-0142").insert(&env.mongo.db).await.unwrap();
    for _ in 0..=CLIENT_RETRIES {
        env.fake.push(Behaviour::ServerError);
    }
    env.fake.push(Behaviour::MalformedJson);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);

    let failed: Vec<Value> = logs
        .lines()
        .into_iter()
        .filter(|l| l["message"] == "report generation failed" && l["span"]["interviewId"] == ids.0.to_string())
        .collect();
    let kinds: Vec<(&str, &str)> =
        failed.iter().map(|l| (l["level"].as_str().unwrap(), l["kind"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("ERROR", "server_error"), ("ERROR", "invalid_output")], "{failed:#?}");
    assert_eq!(failed[0]["span"]["attempt"], 1, "the first attempt");
    for line in &failed {
        let text = line.to_string();
        assert!(!text.contains("555-0142") && !text.contains(SECRET_ANSWER), "candidate text logged: {text}");
    }
}

/// A fresh stage whose migrations never ran: the first invocation of a cold start logs one
/// ERROR per missing required unique index (not one per batch), and every batch is refused whole
/// (retried by SQS: without the index a redelivery could store a second report); after
/// `sophia-ops migrate`'s step, a new cold start logs none and processes the batch.
#[tokio::test]
async fn a_missing_unique_index_is_logged_once_per_cold_start_and_every_batch_is_refused_until_it_exists() {
    let logs = LogCapture::global();
    let mongo = World::without_migration().await.mongo;
    let database = mongo.db.name().to_owned();
    let fake = FakeOpenAi::scripted().unwrap();
    let cold_start = || {
        let service = ReportService::new(mongo.db.clone(), ReportModel::new(&settings(&fake, Duration::from_secs(5))));
        ReportGenerateHandler::with_service(mongo.clone(), service, ConsumerOptions::default())
    };
    let errors = || {
        logs.lines()
            .into_iter()
            .filter(|l| l["level"] == "ERROR" && l["database"] == database.as_str())
            .filter(|l| l["message"].as_str().is_some_and(|m| m.starts_with("required unique index missing")))
            .collect::<Vec<_>>()
    };
    let absent = (InterviewId::new(bson::oid::ObjectId::new()), org());
    let handler = cold_start();
    for _ in 0..3 {
        let refused = handler.handle_with_report(event(&[absent])).await.expect_err("the batch is refused");
        let message = refused.to_string();
        assert!(message.contains("the whole batch will be retried"), "{message}");
        assert!(message.contains("interviewReports(interviewId)"), "{message}");
    }
    let lines = errors();
    assert_eq!(lines.len(), 1, "once per cold start: {lines:#?}");
    assert_eq!(lines[0]["index"], "interviewReports(interviewId)");
    assert_eq!(lines[0]["function"], "report-generate");
    assert_eq!(report_count_in(&mongo).await, 0, "nothing written while refused");

    migrations::apply(&mongo.db).await.unwrap();
    handler.handle_with_report(event(&[absent])).await.expect("the same process goes on once the index exists");
    cold_start().handle_with_report(event(&[absent])).await.expect("no batch error");
    assert_eq!(errors().len(), 1, "nothing more once the index exists");
}

async fn report_count_in(mongo: &Mongo) -> u64 {
    mongo.db.collection::<Document>(INTERVIEW_REPORTS).count_documents(doc! {}).await.unwrap()
}

/// Candidate text and OpenAI error bodies never reach a log line or a stored field
/// other than the interview itself. The marker is in the transcript, the resume and the
/// credibility, and in every error body and non-conforming reply of the fake.
#[tokio::test]
async fn a_marker_in_candidate_data_and_openai_error_bodies_reaches_no_log_line_and_no_stored_field() {
    const MARKER: &str = "ZZ-MARKER-7f3c-CANDIDATE";
    let logs = LogCapture::global();
    let env = env().await;
    let answer = format!("{MARKER} I migrated the billing tables with dual writes and nightly checksums per tenant.");
    let fixture = InterviewFixture::new(org()).resume(&format!("Resume {MARKER} phone 555-0199")).transcript(&[
        ("candidate", answer.as_str()),
        ("interviewer", MARKER),
        ("candidate", answer.as_str()),
    ]);
    let mut raw = fixture.document().clone();
    raw.insert("credibility", doc! {"score": 40_i32, "notes": format!("{MARKER} looked away")});
    env.mongo.db.collection::<Document>("interviews").insert_one(&raw).await.unwrap();
    let ids = (fixture.interview_id(), fixture.organization_id());

    let body = format!("upstream said: {MARKER}");
    for _ in 0..=CLIENT_RETRIES {
        env.fake.push(Behaviour::Error(sophia_openai_fake::ApiError::server_error().with_message(body.clone())));
    }
    env.fake.push(Behaviour::Error(sophia_openai_fake::ApiError::invalid_api_key().with_message(body.clone())));
    let not_json = format!("Sure! The candidate said \"{MARKER}\" {{");
    env.fake.push(Behaviour::Content(not_json));
    for _ in 0..MAX_ATTEMPTS {
        assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    }
    let wrong = json!({"skillAssessments": [{"skill": MARKER, "evidence": [MARKER], "rationale": MARKER, "score": MARKER, "confidence": "low"}],
        "questionAnalysis": [], "strengths": [MARKER], "concerns": [], "summary": MARKER, "overallScore": 1, "recommendation": "no_hire"});
    let store = sophia_reports::store::ReportStore::new(&env.mongo.db);
    store.reset_attempts(ids.0).await.unwrap();
    env.fake.push(Behaviour::Content(wrong.to_string()));
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);

    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("errorKind").unwrap(), "invalid_output");
    assert!(d.get_str("lastError").unwrap().contains("skillAssessments[0].score"), "{d}");
    assert!(!d.to_string().contains(MARKER), "the marker is stored on the report: {d}");
    for collection in env.mongo.db.list_collection_names().await.unwrap() {
        let docs: Vec<Document> = futures::TryStreamExt::try_collect(
            env.mongo.db.collection::<Document>(&collection).find(doc! {}).await.unwrap(),
        )
        .await
        .unwrap();
        for doc in docs {
            let is_the_input = collection == "interviews" && doc.get_object_id("_id").ok() == Some(ids.0.oid());
            assert!(is_the_input || !doc.to_string().contains(MARKER), "marker stored in {collection}: {doc}");
        }
    }
    let text = logs.text();
    assert!(!text.contains(MARKER), "the marker was logged: {}", text.lines().find(|l| l.contains(MARKER)).unwrap());
    assert!(!text.contains("555-0199"));
    assert_eq!(env.fake.pending(), 0);
}
