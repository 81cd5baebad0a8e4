//! A stand-in for the AWS Parameters and Secrets Lambda Extension, for tests and the bench
//! (feature `stand-in`): `GET /secretsmanager/get?secretId=<ARN>` on a free 127.0.0.1 port,
//! answering `GetSecretValue` JSON with the value set for that ARN.
//!
//! Like the real extension as reported publicly (an HTTP 400 "not ready to serve traffic, please
//! wait" to calls made during init, e.g. aws-sdk-rust#905 and
//! Kralizek/AWSSecretsManagerConfigurationExtensions#87), it can answer "not ready" until the
//! function asks the Runtime API for its first event: [`ExtensionStandIn::serve_from_now`] is
//! what the caller flips then. It counts the reads of each ARN (answered or not), so a test can
//! assert how often the function asked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Default)]
struct State {
    values: Mutex<HashMap<String, String>>,
    /// Requests per decoded ARN (every request, whatever the answer).
    reads: Mutex<HashMap<String, usize>>,
    /// Each request's head (request line and headers).
    heads: Mutex<Vec<String>>,
    not_ready: AtomicBool,
    /// An AWS error to answer instead of a value (`(status, __type)`).
    refusal: Mutex<Option<(u16, String)>>,
}

/// A running stand-in (stops with the test's runtime).
#[derive(Clone)]
pub struct ExtensionStandIn {
    port: u16,
    state: Arc<State>,
}

impl ExtensionStandIn {
    /// Starts serving on a free 127.0.0.1 port; "not ready" until [`serve_from_now`](Self::serve_from_now)
    /// when `not_ready_at_first`.
    pub async fn start(not_ready_at_first: bool) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State { not_ready: AtomicBool::new(not_ready_at_first), ..State::default() });
        let served = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(answer(socket, served.clone()));
            }
        });
        Ok(Self { port, state })
    }

    /// The port, for `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sets (or rotates) the `AWSCURRENT` value of `arn`.
    pub fn put(&self, arn: &str, value: &str) {
        self.state.values.lock().expect("values lock").insert(arn.to_owned(), value.to_owned());
    }

    /// Answers `status` with this AWS error name from now on (`None`: values again).
    pub fn refuse(&self, refusal: Option<(u16, &str)>) {
        *self.state.refusal.lock().expect("refusal lock") = refusal.map(|(s, t)| (s, t.to_owned()));
    }

    /// Serves values from now on (as the extension does once the runtime asked for an event).
    pub fn serve_from_now(&self) {
        self.state.not_ready.store(false, Ordering::SeqCst);
    }

    /// How many requests asked for `arn`.
    pub fn reads(&self, arn: &str) -> usize {
        self.state.reads.lock().expect("reads lock").get(arn).copied().unwrap_or(0)
    }

    /// Every request's head so far.
    pub fn heads(&self) -> Vec<String> {
        self.state.heads.lock().expect("heads lock").clone()
    }
}

async fn answer(mut socket: tokio::net::TcpStream, state: Arc<State>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let arn = head
        .split_whitespace()
        .nth(1)
        .and_then(|target| target.split_once("secretId="))
        .map(|(_, id)| percent_decode(id.split('&').next().unwrap_or_default()))
        .unwrap_or_default();
    state.heads.lock().expect("heads lock").push(head);
    *state.reads.lock().expect("reads lock").entry(arn.clone()).or_default() += 1;
    let refusal = state.refusal.lock().expect("refusal lock").clone();
    let (status, body) = if state.not_ready.load(Ordering::SeqCst) {
        ("400 Bad Request".to_owned(), "not ready to serve traffic, please wait".to_owned())
    } else if let Some((status, name)) = refusal {
        (format!("{status} Error"), serde_json::json!({"__type": name, "message": "refused"}).to_string())
    } else {
        match state.values.lock().expect("values lock").get(&arn) {
            Some(value) => (
                "200 OK".to_owned(),
                serde_json::json!({"ARN": arn, "Name": "stand-in", "SecretString": value,
                    "VersionId": "v", "VersionStages": ["AWSCURRENT"]})
                .to_string(),
            ),
            None => (
                "400 Bad Request".to_owned(),
                serde_json::json!({"__type": "ResourceNotFoundException", "message": "no such secret"}).to_string(),
            ),
        }
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(reply.as_bytes()).await;
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
