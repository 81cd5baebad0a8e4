//! Report generation's logs: every line JSON with the generation fields, and never candidate
//! text, refusal text or the API key. Captured by the harness's process-wide subscriber.

mod report_support;

use harness::faults::LogCapture;
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
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
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
