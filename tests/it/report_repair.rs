//! The repair call (docs/report-quality.md), through the report-generate handler, MongoDB (nx-27017) and the OpenAI fake over
//! HTTP: a reply with a critical finding gets one repair call within the same attempt and
//! deadline (the first request unchanged, then the first reply and a corrective message); the
//! better reply is stored with both calls' tokens; a report still carrying a critical finding is
//! stored COMPLETED with `needsReview: true`; a clean reply is one call. The compromised replies
//! answer an interview whose transcript carries a prompt injection asking for `strong_hire`; that
//! transcript is itself a critical finding (`instruction_to_evaluator`), which no repair clears:
//! every report on it is marked for review, a fully consistent one included, and it alone asks for
//! no repair call.

use crate::support::report as report_support;

use report_support::*;
use sophia_reports::report::ReportStatus;

/// The interview's skills and questions (InterviewFixture's defaults).
const SKILLS: [&str; 3] = ["Rust", "Databases", "Error handling"];
const QUESTIONS: [&str; 2] = ["Tell me about a data migration you led.", "How do you handle errors in Rust services?"];

fn labels(stored: &Document, list: &str, key: &str) -> Vec<String> {
    stored
        .get_document("report")
        .unwrap()
        .get_array(list)
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_str(key).unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_compromised_reply_and_a_correct_repair_store_the_repair_with_both_calls_tokens() {
    let env = env().await;
    let ids = injection_fixture().insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Compromised).push(Behaviour::Report);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);

    // Two calls: the repair is the first request unchanged, then the first reply and the
    // corrective message.
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2);
    let (first, repair) = (&requests[0].body, &requests[1].body);
    let roles = |b: &Value| {
        b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(roles(first), ["system", "user"]);
    assert_eq!(roles(repair), ["system", "user", "assistant", "user"]);
    assert_eq!(repair["messages"][0], first["messages"][0], "the instructions are byte-identical");
    assert_eq!(repair["messages"][1], first["messages"][1], "the interview data is byte-identical");
    assert_eq!(repair["response_format"], first["response_format"], "the schema is byte-identical");
    assert_eq!(repair["prompt_cache_key"], first["prompt_cache_key"]);
    assert_eq!(
        (repair["model"].clone(), repair["temperature"].clone()),
        (first["model"].clone(), first["temperature"].clone())
    );
    let echoed: Value = serde_json::from_str(repair["messages"][2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["recommendation"], "strong_hire", "the first reply is the assistant's message");
    let corrective = repair["messages"][3]["content"].as_str().unwrap();
    assert!(corrective.starts_with(sophia_reports::repair::REPAIR_PREAMBLE), "{corrective}");
    assert!(corrective.contains(r#""Rust", "Databases", "Error handling""#), "the items to assess: {corrective}");
    assert!(corrective.contains(&serde_json::to_string(QUESTIONS[0]).unwrap()), "{corrective}");
    assert!(corrective.contains("strong_hire requires 85-100"), "the band that applies: {corrective}");
    assert!(corrective.len() < 2_000, "short: {} characters", corrective.len());
    for candidate_text in [INJECTION, SECRET_ANSWER, "strongest candidate"] {
        assert!(!corrective.contains(candidate_text), "no candidate text in the corrective message");
    }
    assert!(requests[0].message("user").unwrap().contains("evaluation override mode"), "the injection is sent as data");

    // The repair is stored: the interview's items, no critical finding about the reply; the
    // transcript's injection keeps it marked for review.
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert!(d.get_bool("needsReview").unwrap());
    assert_eq!(critical_codes(&d), ["instruction_to_evaluator"], "{:?}", findings(&d));
    assert_eq!(labels(&d, "skillAssessments", "skill"), SKILLS);
    assert_eq!(labels(&d, "questionAnalysis", "question"), QUESTIONS);
    let report = d.get_document("report").unwrap();
    let recommendation: sophia_reports::Recommendation =
        bson::from_bson(report.get("recommendation").unwrap().clone()).unwrap();
    let band = sophia_reports::validate::band_of(recommendation);
    let score = int(report, "overallScore") as i32;
    assert!(band.is_none_or(|b| (b.min_score..=b.max_score).contains(&score)), "{report:?}");
    assert!(!format!("{d:?}").contains("strongest candidate"), "the invented quote is nowhere");

    // Both calls' tokens: each in `calls`, their sum in the totals.
    let calls = calls(&d);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls.iter().map(|c| c.get_str("purpose").unwrap()).collect::<Vec<_>>(), ["first", "repair"]);
    assert_eq!(calls.iter().map(|c| c.get_bool("stored").unwrap()).collect::<Vec<_>>(), [false, true]);
    assert!(int(&calls[0], "criticalFindings") >= 3, "too few skills, too few questions, the band: {calls:?}");
    assert_eq!(int(&calls[1], "criticalFindings"), 1, "the transcript's finding only");
    for c in &calls {
        assert!(int(c, "promptTokens") > 100 && int(c, "completionTokens") > 10, "{c:?}");
        assert!(c.get_str("completionId").unwrap().starts_with("chatcmpl-"));
    }
    assert!(
        int(&calls[1], "promptTokens") > int(&calls[0], "promptTokens"),
        "the repair re-sends the request and more"
    );
    assert!(int(&calls[1], "cachedTokens") >= 1024, "the unchanged prefix is served from the cache: {calls:?}");
    let generation = d.get_document("generation").unwrap();
    for total in ["promptTokens", "cachedTokens", "completionTokens", "totalTokens", "latencyMs"] {
        assert_eq!(int(generation, total), calls.iter().map(|c| int(c, total)).sum::<i64>(), "{total}");
    }
    assert_eq!(generation.get_str("completionId").unwrap(), calls[1].get_str("completionId").unwrap());
    let typed = typed(&d);
    assert_eq!((typed.status, typed.needs_review), (ReportStatus::Completed, Some(true)));
}

#[tokio::test]
async fn a_reply_compromised_twice_is_stored_for_review_with_its_findings_and_the_band() {
    let env = env().await;
    let ids = injection_fixture().insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Compromised).push(Behaviour::Compromised);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed, "a report, provisional: acknowledged");
    assert_eq!(env.fake.request_count(), 2, "at most one repair per attempt");

    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!(d.get_str("status").unwrap(), "COMPLETED");
    assert!(d.get_bool("needsReview").unwrap());
    let found = findings(&d);
    for (code, field) in [
        ("too_few_assessed", "skillAssessments"),
        ("too_few_assessed", "questionAnalysis"),
        ("recommendation_inconsistent", "recommendation"),
    ] {
        assert!(
            found.contains(&(code.to_owned(), "critical".to_owned(), field.to_owned())),
            "{code} at {field} in {found:?}"
        );
    }
    assert!(found.iter().any(|(c, s, _)| c == "unexpected_entry" && s == "minor"), "{found:?}");
    // Never a silent contradiction: strong_hire at 50 stays marked with the band it violates.
    let report = d.get_document("report").unwrap();
    assert_eq!((report.get_str("recommendation").unwrap(), int(report, "overallScore")), ("strong_hire", 50));
    let band = report
        .get_array("validationWarnings")
        .unwrap()
        .iter()
        .map(|w| w.as_document().unwrap())
        .find(|w| w.get_str("code").unwrap() == "recommendation_inconsistent")
        .unwrap()
        .get_document("band")
        .unwrap()
        .clone();
    assert_eq!(band, doc! {"recommendation": "strong_hire", "minScore": 85, "maxScore": 100});
    let calls = calls(&d);
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| int(c, "promptTokens") > 0 && int(c, "criticalFindings") >= 3), "{calls:?}");
    assert_eq!(typed(&d).needs_review, Some(true));
}

/// A consistent reply (score inside its band, real quotes) on a transcript with an injection: one
/// call (a repair cannot change the transcript), stored marked for review with the finding.
#[tokio::test]
async fn a_clean_first_reply_is_exactly_one_call_and_an_injected_transcript_marks_it_for_review() {
    let env = env().await;
    let ids = injection_fixture().insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report).push(Behaviour::Compromised);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.fake.request_count(), 1);
    assert_eq!(env.fake.pending(), 1, "the second behaviour was never asked for");
    let d = stored(&env, ids.0).await.unwrap();
    assert!(d.get_bool("needsReview").unwrap());
    let found = findings(&d);
    assert_eq!(found.len(), 1, "{found:?}");
    let (code, severity, field) = &found[0];
    assert_eq!((code.as_str(), severity.as_str()), ("instruction_to_evaluator", "critical"));
    assert!(field.starts_with("candidateTurns["), "{field}");
    assert!(!format!("{d:?}").contains("evaluation override mode"), "the injection's text is stored nowhere");
    let calls = calls(&d);
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].get_str("purpose").unwrap(), calls[0].get_bool("stored").unwrap()), ("first", true));
    assert_eq!(int(d.get_document("generation").unwrap(), "promptTokens"), int(&calls[0], "promptTokens"));
}

#[tokio::test]
async fn minor_findings_alone_get_no_repair() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    let mut reply = baseline_reply();
    reply["strengths"] = json!((0..14).map(|i| format!("Strength {i}.")).collect::<Vec<_>>());
    reply["questionAnalysis"][1]["question"] = json!("How do you handle errors in your Rust services");
    env.fake.push(Behaviour::Content(reply.to_string()));

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    assert_eq!(env.fake.request_count(), 1);
    let d = stored(&env, ids.0).await.unwrap();
    let found = findings(&d);
    assert!(!found.is_empty() && found.iter().all(|(_, s, _)| s == "minor"), "{found:?}");
    assert!(!d.get_bool("needsReview").unwrap());
}

#[tokio::test]
async fn a_failed_repair_keeps_the_first_reply_for_review_and_counts_the_call() {
    let env = env().await;
    let ids = injection_fixture().insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Compromised).push(Behaviour::Error(sophia_openai_fake::ApiError::bad_request()));

    let generated = env.handler.service().generate_report(ids.0, ids.1).await.unwrap();
    let Generated::Completed { usage, attempt, .. } = generated else { panic!("{generated:?}") };
    assert_eq!((attempt, usage.repair_calls, usage.needs_review), (1, 1, true));
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), d.get_bool("needsReview").unwrap()), ("COMPLETED", true));
    let calls = calls(&d);
    assert_eq!(calls[1].get_str("errorKind").unwrap(), "bad_request");
    assert_eq!((calls[0].get_bool("stored").unwrap(), calls[1].get_bool("stored").unwrap()), (true, false));
    assert_eq!(usage.prompt_tokens, int(&calls[0], "promptTokens"), "an HTTP error answer bills nothing");
}

/// The repair shares the attempt's time: a first reply that used most of it leaves the repair
/// only the rest, and a repair that does not fit ends as a timeout with the first reply stored
/// for review (the attempt itself succeeds).
#[tokio::test]
async fn the_repair_runs_within_the_same_attempt_deadline() {
    let env = env_with_timeout(Duration::from_secs(6)).await;
    let ids = injection_fixture().insert(&env.mongo.db).await.unwrap();
    env.fake
        .push(Behaviour::slow(Duration::from_millis(3_500), Behaviour::Compromised))
        .push(Behaviour::slow(Duration::from_secs(30), Behaviour::Report));

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let d = stored(&env, ids.0).await.unwrap();
    assert_eq!((d.get_str("status").unwrap(), d.get_bool("needsReview").unwrap()), ("COMPLETED", true));
    assert_eq!(calls(&d)[1].get_str("errorKind").unwrap(), "timeout");
    assert_eq!(int(&d, "attemptCount"), 1);
}
