//! Report generation's logs, in a test binary of their own: the capture uses a thread-local
//! subscriber, and tracing's per-callsite interest cache is shared by every thread of a process,
//! so tests running beside it in one binary could make it miss events.

mod report_support;

use report_support::*;

/// Captured log lines (JSON, one per event, with the fields of the current spans).
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn logs_carry_the_generation_fields_and_never_candidate_text_or_the_key() {
    use tracing_subscriber::util::SubscriberInitExt;

    let logs = Captured::default();
    let _guard = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_current_span(true)
        .with_span_list(true)
        .flatten_event(true)
        .with_writer(logs.clone())
        .finish()
        .set_default();
    let env = env().await;
    let resume = "Resume of Jane Doe: private phone 555-0100";
    let ids = InterviewFixture::new(org()).resume(resume).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::MalformedJson).push(Behaviour::Refusal).push(Behaviour::Report);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    assert_eq!(deliver(&env, ids).await, Outcome::Processed);

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    for secret in [SECRET_ANSWER, "We compared row counts", resume, "555-0100", "test-key", "I'm sorry", "The candidate"] {
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
    assert!(lines.iter().any(|l| l["message"] == "report generation failed" && l["kind"] == "malformed"));
    assert!(lines.iter().any(|l| l["message"] == "report generation failed" && l["kind"] == "refusal"));
}
