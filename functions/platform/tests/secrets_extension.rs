//! Reading secrets at init through a local stand-in for the AWS Parameters and Secrets Lambda
//! Extension (axum on 127.0.0.1, a free port): the request it receives, success, a refusal, an
//! extension that is not ready yet, one that never answers, and a secret whose value must appear
//! in no error and no log line.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use sophia_platform::secrets::{
    self, AWS_SESSION_TOKEN, Extension, OPENAI_API_KEY_SECRET_ARN, PARAMETERS_SECRETS_EXTENSION_HTTP_PORT,
    SECRETS_EXTENSION_TIMEOUT_MS, Secret, SecretError,
};

const ARN: &str = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sophia-prod/mongodb-uri-AbCdEf";
const MARKER: &str = "hunter2-SECRET-MARKER";
const TOKEN: &str = "session-token-xyz";

#[derive(Clone)]
enum Reply {
    Answer(u16, String),
    Hang,
}

/// What the fake received: the decoded `secretId` and the token header.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

#[derive(Clone, Default)]
struct Fake {
    script: Arc<Mutex<VecDeque<Reply>>>,
    seen: Seen,
}

async fn serve(fake: Fake) -> String {
    async fn handler(State(fake): State<Fake>, RawQuery(q): RawQuery, headers: HeaderMap) -> (StatusCode, String) {
        let token = headers.get("X-Aws-Parameters-Secrets-Token").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let secret_id = q.as_deref().and_then(|q| q.strip_prefix("secretId=")).map(percent_decode).unwrap_or_default();
        fake.seen.lock().unwrap().push((secret_id, token));
        let reply = {
            let mut script = fake.script.lock().unwrap();
            if script.len() > 1 { script.pop_front().unwrap() } else { script.front().cloned().unwrap() }
        };
        match reply {
            Reply::Answer(status, body) => (StatusCode::from_u16(status).unwrap(), body),
            Reply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                (StatusCode::OK, String::new())
            }
        }
    }
    let app = axum::Router::new().route("/secretsmanager/get", get(handler)).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn fake(replies: Vec<Reply>) -> Fake {
    Fake { script: Arc::new(Mutex::new(replies.into())), ..Fake::default() }
}

fn secret_json(value: &str) -> String {
    serde_json::json!({"ARN": ARN, "Name": "sophia-prod/mongodb-uri", "SecretString": value, "VersionId": "v1",
        "VersionStages": ["AWSCURRENT"], "CreatedDate": "2026-12-03T10:00:00Z"})
    .to_string()
}

/// Log lines written while `f` runs (a JSON subscriber for this thread only).
async fn with_logs<T>(f: impl std::future::Future<Output = T>) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let out = f.await;
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

#[tokio::test(flavor = "current_thread")]
async fn the_secret_string_is_read_with_the_session_token_and_never_logged() {
    let value = format!("mongodb+srv://sophia:{MARKER}@cluster0.example.mongodb.net/?retryWrites=true");
    let f = fake(vec![Reply::Answer(200, secret_json(&value))]);
    let url = serve(f.clone()).await;
    let (got, logs) = with_logs(Extension::new(&url, TOKEN, Duration::from_secs(5)).get(Secret::MongoDbUri, ARN)).await;
    let got = got.expect("the secret is read");
    assert_eq!(got.expose(), value);
    assert!(!format!("{got:?}").contains(MARKER), "Debug never shows the value");
    assert_eq!(*f.seen.lock().unwrap(), [(ARN.to_owned(), Some(TOKEN.to_owned()))], "ARN decoded, token sent");
    assert!(logs.contains("secret read through the Parameters and Secrets extension"), "{logs}");
    assert!(logs.contains(ARN), "the ARN is logged: {logs}");
    assert!(!logs.contains(MARKER) && !logs.contains(TOKEN), "neither the value nor the token is logged: {logs}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_refusal_fails_at_once_naming_variable_arn_and_aws_code_only() {
    let body = format!(r#"{{"__type":"AccessDeniedException","message":"not authorized to read {MARKER}"}}"#);
    let f = fake(vec![Reply::Answer(400, body)]);
    let url = serve(f.clone()).await;
    let (err, logs) =
        with_logs(Extension::new(&url, TOKEN, Duration::from_secs(5)).get(Secret::OpenAiApiKey, ARN)).await;
    let err = err.unwrap_err();
    assert!(matches!(err, SecretError::Refused { status: 400, .. }), "{err:?}");
    let text = err.to_string();
    for needle in ["OPENAI_API_KEY", ARN, "AccessDeniedException", "secretsmanager:GetSecretValue"] {
        assert!(text.contains(needle), "{needle:?} missing from {text}");
    }
    assert!(!text.contains(MARKER) && !format!("{err:?}").contains(MARKER), "the body is not echoed: {text}");
    assert!(!logs.contains(MARKER));
    assert_eq!(f.seen.lock().unwrap().len(), 1, "a refusal is not retried");
}

#[tokio::test(flavor = "current_thread")]
async fn an_extension_that_is_not_ready_yet_is_retried_until_it_answers() {
    let value = format!("sk-{MARKER}");
    let f = fake(vec![
        Reply::Answer(400, "not ready to serve traffic, please wait".into()),
        Reply::Answer(503, String::new()),
        Reply::Answer(400, "not ready to serve traffic, please wait".into()),
        Reply::Answer(200, secret_json(&value)),
    ]);
    let url = serve(f.clone()).await;
    let (got, logs) =
        with_logs(Extension::new(&url, TOKEN, Duration::from_secs(10)).get(Secret::OpenAiApiKey, ARN)).await;
    assert_eq!(got.unwrap().expose(), value);
    assert_eq!(f.seen.lock().unwrap().len(), 4);
    assert!(!logs.contains(MARKER));
}

#[tokio::test(flavor = "current_thread")]
async fn nothing_listening_yet_then_listening_is_retried() {
    // Reserve a port, release it, start the fake on it only after the first attempts failed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let ext = Extension::new(&url, TOKEN, Duration::from_secs(20));
    let reader = tokio::spawn(async move { ext.get(Secret::MongoDbUri, ARN).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    async fn handler() -> (StatusCode, String) {
        (StatusCode::OK, secret_json("mongodb://late"))
    }
    let app = axum::Router::new().route("/secretsmanager/get", get(handler));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    assert_eq!(reader.await.unwrap().unwrap().expose(), "mongodb://late");
}

#[tokio::test(flavor = "current_thread")]
async fn an_extension_that_never_answers_fails_init_within_the_budget() {
    let f = fake(vec![Reply::Hang]);
    let url = serve(f.clone()).await;
    let err = Extension::new(&url, TOKEN, Duration::from_millis(400)).get(Secret::MongoDbUri, ARN).await.unwrap_err();
    assert!(matches!(err, SecretError::Unavailable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("MONGODB_URI") && text.contains(ARN) && text.contains("extension"), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_without_secret_string_is_malformed_and_not_echoed() {
    let body = format!(r#"{{"ARN":"{ARN}","SecretBinary":"{MARKER}"}}"#);
    let url = serve(fake(vec![Reply::Answer(200, body)])).await;
    let err = Extension::new(&url, TOKEN, Duration::from_secs(5)).get(Secret::MongoDbUri, ARN).await.unwrap_err();
    assert!(matches!(err, SecretError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("SecretString") && !err.to_string().contains(MARKER), "{err}");
    let url = serve(fake(vec![Reply::Answer(200, format!("<html>{MARKER}"))])).await;
    let err = Extension::new(&url, TOKEN, Duration::from_secs(5)).get(Secret::MongoDbUri, ARN).await.unwrap_err();
    assert!(!err.to_string().contains(MARKER), "{err}");
}

/// The variables as the stack sets them: the ARN, the extension's port, the session token; the
/// value is then what `get` returns for the process.
#[tokio::test(flavor = "current_thread")]
async fn load_reads_the_arn_from_the_environment_and_get_returns_the_value() {
    let f = fake(vec![Reply::Answer(200, secret_json(&format!("sk-{MARKER}")))]);
    let url = serve(f.clone()).await;
    let port = url.rsplit(':').next().unwrap().to_owned();
    let vars: HashMap<&'static str, String> = [
        (OPENAI_API_KEY_SECRET_ARN, ARN.to_owned()),
        (PARAMETERS_SECRETS_EXTENSION_HTTP_PORT, port),
        (AWS_SESSION_TOKEN, TOKEN.to_owned()),
        (SECRETS_EXTENSION_TIMEOUT_MS, "5000".to_owned()),
    ]
    .into();
    assert!(std::env::var("OPENAI_API_KEY").is_err(), "this test needs OPENAI_API_KEY unset");
    secrets::load_with(Secret::OpenAiApiKey, &|name| vars.get(name).cloned()).await.unwrap();
    assert_eq!(secrets::get(Secret::OpenAiApiKey).unwrap().expose(), format!("sk-{MARKER}"));
    // Once per process: a second load does not ask again.
    secrets::load_with(Secret::OpenAiApiKey, &|name| vars.get(name).cloned()).await.unwrap();
    assert_eq!(f.seen.lock().unwrap().len(), 1);
}
