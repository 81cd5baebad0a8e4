//! What the OpenAI client does not trust, through the report-generate handler and the
//! fake over HTTP. A 307/308 is not followed (reqwest's default policy follows up to 10
//! redirects and re-sends the body, the transcript, to the `Location`): the attempt fails as
//! `bad_request` and the other host receives nothing. An answer body longer than
//! `MAX_RESPONSE_BYTES` is not read further, with or without a `Content-Length`.

use crate::support::report as report_support;

use report_support::*;
use sophia_reports::openai::MAX_RESPONSE_BYTES;

#[tokio::test]
async fn a_redirect_is_not_followed_and_the_transcript_goes_nowhere_else() {
    for status in [307_u16, 308, 302] {
        let env = env().await;
        let elsewhere = FakeOpenAi::scripted().unwrap();
        elsewhere.push(Behaviour::Report);
        let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
        let location = format!("{}/chat/completions", elsewhere.base_url());
        env.fake.push(Behaviour::Redirect { status, location });

        assert_eq!(deliver(&env, ids).await, Outcome::Failed, "HTTP {status}");
        assert_eq!(env.fake.request_count(), 1, "not retried within the attempt");
        assert_eq!(elsewhere.request_count(), 0, "HTTP {status}: the request was re-sent to the Location");
        let d = stored(&env, ids.0).await.unwrap();
        assert_eq!((d.get_str("status").unwrap(), d.get_str("errorKind").unwrap()), ("FAILED", "bad_request"));
        let last_error = d.get_str("lastError").unwrap();
        assert!(last_error.contains(&format!("HTTP {status}")) && last_error.contains("not followed"), "{last_error}");
        assert!(!last_error.contains("127.0.0.1"), "the Location is not recorded: {last_error}");
    }
}

#[tokio::test]
async fn an_oversize_answer_is_not_read_beyond_the_cap() {
    for chunked in [false, true] {
        let env = env().await;
        let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
        env.fake.push(Behaviour::Oversize { bytes: MAX_RESPONSE_BYTES + 64 * 1024, chunked });

        assert_eq!(deliver(&env, ids).await, Outcome::Failed, "chunked {chunked}");
        let d = stored(&env, ids.0).await.unwrap();
        assert_eq!((d.get_str("status").unwrap(), d.get_str("errorKind").unwrap()), ("FAILED", "invalid_output"));
        let last_error = d.get_str("lastError").unwrap();
        assert!(last_error.contains(&format!("longer than {MAX_RESPONSE_BYTES} bytes")), "{last_error}");
    }
}

/// Just under the cap is read whole: the cap refuses only what no real answer is.
#[tokio::test]
async fn an_answer_under_the_cap_is_read() {
    let env = env().await;
    let ids = InterviewFixture::new(org()).insert(&env.mongo.db).await.unwrap();
    env.fake.push(Behaviour::Oversize { bytes: MAX_RESPONSE_BYTES - 1024, chunked: true });
    assert_eq!(deliver(&env, ids).await, Outcome::Failed);
    let d = stored(&env, ids.0).await.unwrap();
    // Read whole, then refused as content that is not a report (a run of `x`), not as too long.
    assert_eq!(d.get_str("errorKind").unwrap(), "invalid_output");
    assert!(!d.get_str("lastError").unwrap().contains("longer than"), "{d:?}");
}
