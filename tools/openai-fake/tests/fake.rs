//! The fake over HTTP: OpenAI's statuses, error bodies and headers for every scripted failure,
//! its strict checks before any script, and the project's client classifying each answer.

use std::time::Duration;

use serde_json::{Value, json};
use sophia_openai_fake::{ApiError, Behaviour, FakeOpenAi};
use sophia_reports::ErrorKind;
use sophia_reports::openai::{ModelError, OpenAiSettings, ReportModel};
use sophia_reports::prompt::Prompt;

/// A plain HTTP client (the TLS provider installed first: reqwest is built without one).
fn http() -> reqwest::Client {
    sophia_platform::tls::install_default_provider();
    reqwest::Client::new()
}

async fn post(fake: &FakeOpenAi, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = http()
        .post(format!("{}/chat/completions", fake.base_url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap_or(Value::Null);
    (status, headers, body)
}

fn minimal() -> Value {
    json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello"}]})
}

fn model(fake: &FakeOpenAi) -> ReportModel {
    let mut s = OpenAiSettings::for_endpoint(fake.base_url(), "gpt-4.1-mini");
    s.timeout = Duration::from_secs(5);
    ReportModel::new(&s)
}

fn prompt() -> Prompt {
    Prompt { system: "s".into(), user: "u".into(), truncation: Default::default() }
}

#[tokio::test]
async fn scripted_errors_answer_with_openai_statuses_bodies_and_headers() {
    let fake = FakeOpenAi::scripted().unwrap();
    let cases = [
        (ApiError::bad_request(), 400, "invalid_request_error", Some("invalid_value")),
        (ApiError::invalid_api_key(), 401, "invalid_request_error", Some("invalid_api_key")),
        (ApiError::unsupported_region(), 403, "request_forbidden", Some("unsupported_country_region_territory")),
        (ApiError::model_not_found("gpt-9"), 404, "invalid_request_error", Some("model_not_found")),
        (ApiError::rate_limited(Duration::from_millis(1500)), 429, "requests", Some("rate_limit_exceeded")),
        (ApiError::insufficient_quota(), 429, "insufficient_quota", Some("insufficient_quota")),
        (ApiError::server_error(), 500, "server_error", None),
        (ApiError::overloaded(), 503, "service_unavailable_error", Some("server_is_overloaded")),
    ];
    for (error, ..) in &cases {
        fake.push(Behaviour::Error(error.clone()));
    }
    for (_, status, error_type, code) in cases {
        let (got, headers, body) = post(&fake, &minimal()).await;
        assert_eq!(got, status);
        assert_eq!(body["error"]["type"], error_type, "{body}");
        assert_eq!(body["error"]["code"].as_str(), code, "{body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        if status == 429 && code == Some("rate_limit_exceeded") {
            assert_eq!(headers["retry-after"], "2", "whole seconds, rounded up");
            assert_eq!(headers["retry-after-ms"], "1500");
        }
    }
}

#[tokio::test]
async fn what_openai_rejects_is_rejected_before_any_script() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    let mut unknown = minimal();
    unknown["temprature"] = json!(0.2);
    let (status, _, body) = post(&fake, &unknown).await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("invalid_request_error")));
    assert_eq!(body["error"]["message"], "Unrecognized request argument supplied: temprature");
    let (status, _, body) = post(&fake, &json!({"messages": [{"role": "user", "content": "x"}]})).await;
    assert_eq!((status, body["error"]["message"].as_str()), (400, Some("you must provide a model parameter")));
    let mut loose = minimal();
    loose["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "r", "strict": true,
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": []}}});
    let (status, _, body) = post(&fake, &loose).await;
    assert_eq!((status, body["error"]["param"].as_str()), (400, Some("response_format")));
    assert_eq!(fake.pending(), 1, "a rejected request uses no script");
    assert_eq!(fake.request_count(), 3, "rejected requests are recorded too");
}

/// The project's own client sends what the fake (so OpenAI) accepts, and classifies each
/// scripted answer into its kind.
#[tokio::test]
async fn the_client_classifies_every_scripted_answer() {
    let fake = FakeOpenAi::scripted().unwrap();
    let model = model(&fake);
    let cases: Vec<(Behaviour, ErrorKind)> = vec![
        (Behaviour::Error(ApiError::bad_request()), ErrorKind::BadRequest),
        (Behaviour::Error(ApiError::invalid_api_key()), ErrorKind::CredentialsRefused),
        (Behaviour::Error(ApiError::unsupported_region()), ErrorKind::Auth),
        (Behaviour::Error(ApiError::model_not_found("gpt-4.1-mini")), ErrorKind::ModelNotFound),
        (Behaviour::Error(ApiError::insufficient_quota()), ErrorKind::Quota),
        (Behaviour::Length, ErrorKind::Truncated),
        (Behaviour::ContentFilter, ErrorKind::ContentFilter),
        (Behaviour::Refusal, ErrorKind::Refusal),
        (Behaviour::MalformedJson, ErrorKind::InvalidOutput),
        (Behaviour::WrongSchema, ErrorKind::InvalidOutput),
    ];
    for (behaviour, kind) in cases {
        fake.push(behaviour.clone());
        let before = fake.request_count();
        let e = model.generate(&prompt(), None).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{behaviour:?}: {e}");
        assert_eq!(fake.request_count(), before + 1, "{behaviour:?}: a permanent answer is not retried in the attempt");
    }
    // Transient answers are retried within the attempt (MAX_RETRIES times), then fail.
    for _ in 0..=sophia_reports::openai::MAX_RETRIES {
        fake.push(Behaviour::Error(ApiError::overloaded()));
    }
    let e = model.generate(&prompt(), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ServerError);
    assert_eq!(fake.pending(), 0);
    fake.push(Behaviour::Error(ApiError::rate_limited(Duration::from_millis(50)))).push(Behaviour::Report);
    let reply = model.generate(&prompt(), None).await.unwrap();
    assert_eq!(reply.retries, 1, "Retry-After honoured, then the report");
}

#[tokio::test]
async fn a_retry_after_longer_than_the_time_left_fails_at_once_as_rate_limited() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Error(ApiError::rate_limited(Duration::from_secs(600)))).push(Behaviour::Report);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let e = model(&fake).generate(&prompt(), Some(deadline)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    assert!(matches!(e, ModelError::Api { status: 429, .. }));
    assert_eq!((fake.request_count(), fake.pending()), (1, 1), "no wait past the deadline, no second call");
}

#[tokio::test]
async fn a_refusal_keeps_its_text_and_a_wrong_schema_names_the_path_not_the_value() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::RefusalText("I can't assess this candidate.".into()));
    match model(&fake).generate(&prompt(), None).await.unwrap_err() {
        ModelError::Refusal { text } => assert_eq!(text, "I can't assess this candidate."),
        other => panic!("{other}"),
    }
    let wrong = json!({
        "skillAssessments": [{"skill": "Rust", "evidence": [], "rationale": "r", "score": "SECRET-QUOTE", "confidence": "low"}],
        "questionAnalysis": [], "strengths": [], "concerns": [], "summary": "s", "overallScore": 50, "recommendation": "hire"
    });
    fake.push(Behaviour::Content(wrong.to_string()));
    let e = model(&fake).generate(&prompt(), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOutput);
    let text = e.to_string();
    assert!(text.contains("skillAssessments[0].score") && !text.contains("SECRET"), "{text}");
}

async fn put_fault(fake: &FakeOpenAi, body: &str) -> u16 {
    put_fault_with(fake, Some(fake.fault_token()), body).await
}

/// `PUT /__sophia/fault` with this bearer token (`None`: no Authorization header).
async fn put_fault_with(fake: &FakeOpenAi, token: Option<&str>, body: &str) -> u16 {
    let mut request = http().put(format!("http://{}/__sophia/fault", fake.addr()));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let r = request.header("content-type", "application/json").body(body.to_owned()).send().await.unwrap();
    r.status().as_u16()
}

async fn get_fault(fake: &FakeOpenAi) -> Value {
    let r = http()
        .get(format!("http://{}/__sophia/fault", fake.addr()))
        .bearer_auth(fake.fault_token())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_standing_fault_set_over_http_answers_every_request_and_keeps_the_script_for_after() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    assert_eq!(get_fault(&fake).await, json!({"kind": "none"}));

    assert_eq!(put_fault(&fake, r#"{"kind":"server_error"}"#).await, 204);
    assert_eq!(get_fault(&fake).await, json!({"kind": "server_error"}));
    for _ in 0..3 {
        let (status, _, body) = post(&fake, &minimal()).await;
        assert_eq!(status, 500);
        assert_eq!(body["error"]["type"], "server_error");
    }
    assert_eq!(fake.pending(), 1, "a standing fault takes no scripted behaviour");

    assert_eq!(put_fault(&fake, r#"{"kind":"rate_limited","retryAfterSeconds":7}"#).await, 204);
    assert_eq!(get_fault(&fake).await, json!({"kind": "rate_limited", "retryAfterSeconds": 7}));
    let (status, headers, body) = post(&fake, &minimal()).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "7");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");

    assert_eq!(put_fault(&fake, r#"{"kind":"unauthorized"}"#).await, 204);
    let (status, _, body) = post(&fake, &minimal()).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "invalid_api_key");

    assert_eq!(put_fault(&fake, r#"{"kind":"slow","delayMs":50}"#).await, 204);
    assert_eq!(get_fault(&fake).await, json!({"kind": "slow", "delayMs": 50}));
    let (status, _, body) = post(&fake, &minimal()).await;
    assert_eq!(status, 200, "slow answers normally: {body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(fake.pending(), 0, "slow goes on to the script");

    assert_eq!(put_fault(&fake, r#"{"kind":"none"}"#).await, 204);
    assert_eq!(fake.fault(), None);
    let (status, _, body) = post(&fake, &minimal()).await;
    assert_eq!(status, 500, "back to the script: nothing scripted");
    assert!(body["error"]["message"].as_str().unwrap().contains("no behaviour was scripted"));
    assert_eq!(fake.request_count(), 7, "every request is recorded, fault or not");
}

#[tokio::test]
async fn a_bad_fault_body_is_refused_and_changes_nothing() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.set_fault(Some(sophia_openai_fake::Fault::ServerError));
    for bad in
        [r#"{"kind":"outage"}"#, r#"{"kind":"server_error","delayMs":5}"#, "not json", r#"{"kind":"none","x":1}"#]
    {
        assert_eq!(put_fault(&fake, bad).await, 400, "{bad}");
    }
    assert_eq!(get_fault(&fake).await, json!({"kind": "server_error"}));
}

#[tokio::test]
async fn a_timeout_fault_hangs_until_the_client_gives_up_and_the_client_calls_it_a_timeout() {
    let fake = FakeOpenAi::scripted().unwrap();
    fake.set_fault(Some(sophia_openai_fake::Fault::Timeout));
    let mut s = OpenAiSettings::for_endpoint(fake.base_url(), "gpt-4.1-mini");
    s.timeout = Duration::from_millis(300);
    let err = ReportModel::new(&s).generate(&prompt(), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:?}");
    fake.set_fault(None);
    fake.push(Behaviour::Report);
    let (status, _, _) = post(&fake, &minimal()).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_fault_interface_requires_the_per_run_token() {
    let fake = FakeOpenAi::scripted().unwrap();
    let other = FakeOpenAi::scripted().unwrap();
    assert_ne!(fake.fault_token(), other.fault_token(), "a new token for every start");
    assert_eq!(fake.fault_token().len(), 32);
    let wrong = other.fault_token().to_owned();
    let truncated = &fake.fault_token()[..31];
    for token in [None, Some(wrong.as_str()), Some(truncated), Some("")] {
        assert_eq!(put_fault_with(&fake, token, r#"{"kind":"server_error"}"#).await, 401, "{token:?}");
        let mut get = http().get(format!("http://{}/__sophia/fault", fake.addr()));
        if let Some(t) = token {
            get = get.bearer_auth(t);
        }
        let r = get.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "GET with {token:?}");
        let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert!(!body.to_string().contains(fake.fault_token()), "the answer never holds the token");
    }
    assert_eq!(fake.fault(), None, "nothing set without the token");
    assert_eq!(put_fault(&fake, r#"{"kind":"server_error"}"#).await, 204);
    assert_eq!(fake.fault(), Some(sophia_openai_fake::Fault::ServerError));
}
