//! The model's output checked against the interview before it is stored (docs/design.md
//! "Report input and output"), through the report-generate handler, MongoDB (nx-27017) and the
//! OpenAI fake answering as a careless or compromised model would; and the whole interview sent
//! within the token budget, with what was omitted recorded on the report.

use crate::support::report as report_support;

use report_support::*;
use sophia_reports::prompt::{PromptLimits, parse_user_message};

/// `report.validationWarnings` as (code, field).
fn warnings(report: &Document) -> Vec<(String, String)> {
    findings(report).into_iter().map(|(code, _, field)| (code, field)).collect()
}

#[tokio::test]
async fn a_careful_reply_is_stored_without_warnings() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Content(baseline_reply().to_string()));
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let stored = stored(&env, ids.0).await.unwrap();
    assert_eq!(stored.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(warnings(&stored), vec![], "{stored:?}");
    assert_eq!(int(&stored, "transcriptTurnsOmitted"), 0);
}

#[tokio::test]
async fn a_compromised_reply_is_corrected_or_flagged_never_stored_as_said() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    let mut reply = baseline_reply();
    // Obeys "rate me 100" but keeps "no_hire"; invents a quote; assesses a skill the role does
    // not have and leaves one out.
    reply["overallScore"] = json!(100);
    reply["recommendation"] = json!("no_hire");
    let skills = reply["skillAssessments"].as_array_mut().unwrap();
    skills[0]["evidence"] = json!(["I single-handedly rewrote the Linux kernel in Rust over a weekend"]);
    skills[2]["skill"] = json!("Kubernetes");
    // Compromised twice (the first reply and its repair): stored for review (tests/it/report_repair.rs).
    env.fake.push(Behaviour::Content(reply.to_string())).push(Behaviour::Content(reply.to_string()));

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let stored = stored(&env, ids.0).await.unwrap();
    let report = stored.get_document("report").unwrap();
    let labels: Vec<&str> = report
        .get_array("skillAssessments")
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().get_str("skill").unwrap())
        .collect();
    assert_eq!(labels, ["Rust", "Databases"], "Kubernetes dropped, Error handling missing");
    let rust = report.get_array("skillAssessments").unwrap()[0].as_document().unwrap();
    assert!(rust.get_array("evidence").unwrap().is_empty(), "the invented quote is not stored");
    assert!(!format!("{stored:?}").contains("Linux kernel"), "nowhere in the document");
    let found = warnings(&stored);
    for (code, field) in [
        ("quote_not_found", "skillAssessments[0].evidence[0]"),
        ("unexpected_entry", "skillAssessments[2]"),
        ("missing_entry", "skillAssessments"),
        ("recommendation_inconsistent", "recommendation"),
    ] {
        assert!(found.contains(&(code.to_owned(), field.to_owned())), "{code} at {field} in {found:?}");
    }
    assert!(stored.get_bool("needsReview").unwrap(), "a recommendation outside its band is marked");
    assert_eq!(env.fake.request_count(), 2, "one repair");
}

/// Only the allowlisted fields of the proctoring credibility assessment reach the
/// model; an unknown field (and a known one holding free text) carrying a marker does not.
#[tokio::test]
async fn only_allowlisted_proctoring_fields_reach_the_model() {
    const MARKER: &str = "PROCTOR-MARKER-7f3a";
    let env = env().await;
    let fixture = InterviewFixture::new(org());
    let mut document = fixture.document().clone();
    document.insert(
        "credibility",
        doc! {
            "score": 41_i32,
            "level": "medium",
            "flags": ["tab_switch", format!("{MARKER} said the answers aloud from a sheet")],
            "notes": format!("{MARKER} looked away 14 times"),
            "faceCrops": [{"url": format!("https://proctoring.example/{MARKER}.jpg")}],
        },
    );
    env.mongo.db.collection::<Document>("interviews").insert_one(&document).await.unwrap();
    let ids = (fixture.interview_id(), fixture.organization_id());
    env.fake.push(Behaviour::Report);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let body = env.fake.requests()[0].body.to_string();
    assert!(!body.contains(MARKER), "an unlisted field reached the model");
    let sent = parse_user_message(env.fake.requests()[0].message("user").unwrap()).unwrap();
    assert_eq!(sent.credibility, Some(json!({"score": 41, "level": "medium", "flags": ["tab_switch"]})));
    assert_eq!(stored(&env, ids.0).await.unwrap().get_str("status").unwrap(), "COMPLETED");
}

#[tokio::test]
async fn over_the_budget_the_middle_is_omitted_and_the_report_says_so() {
    let mongo = World::without_migration().await.mongo;
    migrations::apply(&mongo.db).await.unwrap();
    let fake = FakeOpenAi::scripted().unwrap();
    let service = ReportService::new(mongo.db.clone(), ReportModel::new(&settings(&fake, Duration::from_secs(10))))
        .with_prompt_limits(PromptLimits { transcript_token_budget: 2_000 });
    let handler = ReportGenerateHandler::with_service(mongo.clone(), service, ConsumerOptions::default());
    let env = Env { mongo, fake, handler };

    let turns: Vec<(String, String)> = (0..200)
        .map(|i| {
            let speaker = if i % 2 == 0 { "interviewer" } else { "candidate" };
            (speaker.to_owned(), format!("turn {i}: {}", "we measured the latency of every path twice ".repeat(3)))
        })
        .collect();
    let refs: Vec<(&str, &str)> = turns.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
    let ids = InterviewFixture::new(org()).transcript(&refs).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);

    assert_eq!(deliver(&env, ids).await, Outcome::Processed);
    let sent = parse_user_message(env.fake.requests()[0].message("user").unwrap()).unwrap();
    assert!(sent.transcript.first().unwrap().text.starts_with("turn 0:"), "the opening is sent");
    assert!(sent.transcript.last().unwrap().text.starts_with("turn 199:"), "the end is sent");

    let stored = stored(&env, ids.0).await.unwrap();
    let omitted = int(&stored, "transcriptTurnsOmitted");
    assert_eq!(omitted, 200 - sent.transcript.len() as i64);
    assert!(omitted > 0);
    let truncation = stored.get_document("generation").unwrap().get_document("truncation").unwrap();
    assert_eq!(int(truncation, "turnsTotal"), 200);
    assert_eq!(int(truncation, "omittedToTurn") - int(truncation, "omittedFromTurn") + 1, omitted);
    assert!(int(truncation, "transcriptSentChars") < int(truncation, "transcriptOriginalChars"));
}

/// The request as OpenAI's prompt caching needs it: the static prefix (instructions, then the
/// schema) byte-identical for two different interviews, one `prompt_cache_key` per prompt
/// version; the second report records the cached tokens the answer reports.
#[tokio::test]
async fn the_static_prefix_is_cacheable_and_cached_tokens_are_recorded() {
    let env = env().await;
    let a = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    let b = InterviewFixture::new(org()).resume("Another candidate's resume").insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Report);
    env.fake.push(Behaviour::Report);
    assert_eq!(deliver(&env, a).await, Outcome::Processed);
    assert_eq!(deliver(&env, b).await, Outcome::Processed);

    let requests = env.fake.requests();
    let (first, second) = (&requests[0].body, &requests[1].body);
    let version = sophia_reports::prompt::prompt_version();
    assert_eq!(first["prompt_cache_key"], version);
    assert_eq!(second["prompt_cache_key"], version);
    assert_eq!(first["messages"][0], second["messages"][0], "the instructions are byte-identical");
    assert_eq!(first["response_format"], second["response_format"], "the schema is byte-identical");
    assert_ne!(first["messages"][1], second["messages"][1], "only the data differs");

    let cached = |ids: (InterviewId, OrganizationId)| {
        let env = &env;
        async move {
            let stored = stored(env, ids.0).await.unwrap();
            int(stored.get_document("generation").unwrap(), "cachedTokens")
        }
    };
    assert_eq!(cached(a).await, 0, "a first request has nothing cached");
    let second_cached = cached(b).await;
    assert!(second_cached >= 1024 && second_cached % 128 == 0, "{second_cached}");
}
