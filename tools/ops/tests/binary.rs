//! The built `sophia-ops` binary, as an operator runs it against the local pipeline: settings
//! from an env file (explicit, or the default `.local/sophia.env` of the working directory),
//! JSON on stdout, exit codes 0 / 1 / 2. The library's behaviour is tested in the workspace's
//! `tests/it/ops_*.rs`; this checks the wiring of `main`.
//!
//! Starts its own fauxqs (from `scripts/tools`, installed by `scripts/setup-tools`) on a free
//! loopback port and stops it by PID.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const INTERVIEW: &str = "65a1b2c3d4e5f60718293a4b";
const ORG: &str = "65a1b2c3d4e5f60718293a4c";

/// Variables that would point the binary somewhere else than the env file says.
const CLEARED: [&str; 10] = [
    "AWS_ENDPOINT_URL_SQS",
    "AWS_ENDPOINT_URL",
    "INTERVIEW_COMPLETED_QUEUE_URL",
    "REPORT_GENERATE_QUEUE_URL",
    "INTERVIEW_COMPLETED_DLQ_URL",
    "REPORT_GENERATE_DLQ_URL",
    "MONGODB_URI",
    "SOPHIA_ENV_FILE",
    "AWS_PROFILE",
    "LOG_LEVEL",
];

struct Fauxqs(Child, u16);

impl Drop for Fauxqs {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn start_fauxqs() -> Fauxqs {
    let launcher = repo_root().join("scripts/tools/fauxqs-launcher.mjs");
    assert!(launcher.exists(), "run scripts/setup-tools first ({} missing)", launcher.display());
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("node")
        .arg(&launcher)
        .arg(port.to_string())
        .env("SOPHIA_EXIT_ON_STDIN_EOF", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs the fauxqs launcher");
    let server = Fauxqs(child, port);
    let until = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "fauxqs did not start on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("sophia-ops-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sophia_ops(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sophia-ops"));
    cmd.args(args).current_dir(cwd);
    for v in CLEARED {
        cmd.env_remove(v);
    }
    cmd.output().expect("the binary runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

async fn create(client: &aws_sdk_sqs::Client, name: &str) -> String {
    client.create_queue().queue_name(name).send().await.unwrap().queue_url.unwrap()
}

#[tokio::test]
async fn the_binary_publishes_lists_and_redrives_with_settings_from_an_env_file() {
    let fauxqs = start_fauxqs();
    let endpoint = format!("http://127.0.0.1:{}", fauxqs.1);
    let client = sophia_platform::sqs::local_client(&endpoint);
    let prefix = format!("bin{}", std::process::id());
    let source = create(&client, &format!("{prefix}-report-generate")).await;
    let dlq = create(&client, &format!("{prefix}-report-generate-dlq")).await;
    let dir = temp_dir("envfile");
    let env_file = dir.join("custom.env");
    std::fs::write(
        &env_file,
        format!("# as the local runner writes it\nAWS_ENDPOINT_URL_SQS={endpoint}\nREPORT_GENERATE_QUEUE_URL={source}\nREPORT_GENERATE_DLQ_URL={dlq}\n"),
    )
    .unwrap();
    let env_arg = env_file.to_str().unwrap();

    // publish, with --json: the body comes back, and the message is on the source queue.
    let out = sophia_ops(&dir, &["--env-file", env_arg, "--json", "publish", "report", INTERVIEW, ORG]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["command"], "publish");
    assert_eq!(v["queueUrl"], source.as_str());
    assert_eq!(v["body"]["organizationId"], ORG);

    // A message in the DLQ is listed (and stays), then redriven back to the source.
    client
        .send_message()
        .queue_url(&dlq)
        .message_body(format!(r#"{{"interviewId":"{INTERVIEW}","organizationId":"{ORG}"}}"#))
        .send()
        .await
        .unwrap();
    let out = sophia_ops(&dir, &["--env-file", env_arg, "--json", "dlq", "list", "report-generate"]);
    assert_eq!(json(&out)["messages"].as_array().unwrap().len(), 1);
    let out = sophia_ops(&dir, &["--env-file", env_arg, "dlq", "redrive", "report-generate", "--keep-attempts"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("moved:  1"), "{text}");

    // The default env file of the working directory is used when nothing else is configured.
    let local = dir.join(".local");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::copy(&env_file, local.join("sophia.env")).unwrap();
    let out = sophia_ops(&dir, &["--json", "dlq", "list", "report-generate"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["messages"].as_array().unwrap().len(), 0, "the DLQ is empty after the redrive");
    let out = sophia_ops(&dir, &["dlq", "list", "report-generate"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(".local/sophia.env"), "says which env file it used");

    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_have_exit_codes_and_json_errors_parse() {
    let dir = temp_dir("noenv");
    // Nothing configured: exit 1, and with --json the error is JSON on stdout.
    let out = sophia_ops(&dir, &["--json", "publish", "report", INTERVIEW, ORG]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["kind"], "not-configured");
    assert!(v["error"].as_str().unwrap().contains("REPORT_GENERATE_QUEUE_URL"));
    let out = sophia_ops(&dir, &["publish", "report", INTERVIEW, ORG]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: the report-generate queue is not configured"));
    // Bad input: clap's usage error, exit 2, naming the reason.
    let out = sophia_ops(&dir, &["publish", "report", "not-an-id", ORG]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("24-character hexadecimal ObjectId"));
    // The billed duration has no default: refused before anything is configured or sent.
    let out = sophia_ops(&dir, &["publish", "completed", INTERVIEW, ORG]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--duration-seconds"));
    // An unreadable env file is an error, not silently ignored.
    let out = sophia_ops(&dir, &["--env-file", "missing.env", "publish", "report", INTERVIEW, ORG]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.env"));
    let _ = std::fs::remove_dir_all(&dir);
}
