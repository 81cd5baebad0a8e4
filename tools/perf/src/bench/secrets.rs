//! Cold start and first event of the release binaries with their secrets as plain variables, or in
//! Secrets Manager behind a stand-in for the Parameters and Secrets extension that is not ready
//! during init (docs/secrets.md); also run alone by `sophia-bench --secrets-only`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use sophia_declarations::Function;
use sophia_local::invoke::Invoke;
use sophia_local::runtime_api::RuntimeApi;
use sophia_platform::config;
use sophia_platform::stand_in::ExtensionStandIn;

use super::cold_start::FirstEvent;
use super::release::{invoke_context, item_failures, release_function};
use super::stats::{median, min_max, ms};
use super::world::World;
use super::{BenchError, BenchOptions, other};

/// Cold start and first event of one release binary with its secrets as plain variables, or
/// in Secrets Manager behind a stand-in for the Parameters and Secrets extension that answers
/// HTTP 400 "not ready to serve traffic, please wait" until the function asks for its first
/// event (as the real one is reported to do during init).
#[derive(Debug, Clone, Serialize)]
pub struct SecretStart {
    pub function: String,
    /// `plain` or `secrets-manager`.
    pub case: String,
    pub runs: usize,
    pub ready_ms_median: f64,
    pub ready_ms_max: f64,
    pub first_event_ms_median: f64,
    pub first_event_ms_max: f64,
    /// Requests to the extension before the first `/next`, the most over the runs.
    pub extension_reads_during_init: usize,
    pub first_events_ok: bool,
}

pub const SECRET_ARNS: [(&str, &str); 2] = [
    (config::MONGODB_URI, "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-bench/mongodb-uri-AbCdEf"),
    (config::OPENAI_API_KEY, "arn:aws:secretsmanager:us-east-1:000000000000:secret:sophia-bench/openai-api-key-AbCdEf"),
];

/// The functions whose secrets the bench moves to Secrets Manager, in declaration order.
pub fn secret_functions() -> impl Iterator<Item = Function> {
    Function::ALL.into_iter().filter(|&f| measures_secrets(f))
}

/// Whether the bench measures `function` with its secrets in Secrets Manager. A `match` with no
/// catch-all: a function added to `declarations/queues.json` stops the build here until decided.
fn measures_secrets(function: Function) -> bool {
    match function {
        Function::InterviewCompleted | Function::ReportGenerate => true,
        // The same binary start and secrets as interview-completed's: measured there.
        Function::InterviewFailed => false,
    }
}

/// What one fresh process gave in one case.
struct SecretRun {
    ready_ms: f64,
    first_event_ms: f64,
    /// Requests to the extension before the first `/next`.
    extension_reads: usize,
    /// Records of the first event reported failed (1 when the invocation itself failed).
    failures: usize,
}

/// [`SecretStart`] of `function`, `runs` fresh processes per case.
pub(super) async fn secret_starts(
    world: &World,
    options: &BenchOptions,
    function: Function,
) -> Result<Vec<SecretStart>, BenchError> {
    let first_event = FirstEvent::of(function);
    let function = function.name();
    let (binary, memory, timeout) = release_function(options, function).map_err(other)?;
    let orgs = world.orgs(10).await?;
    let mut out = Vec::new();
    for case in ["plain", "secrets-manager"] {
        let mut runs = Vec::new();
        for _ in 0..options.runs.max(1) {
            let event = first_event.prepare(world, &orgs).await?;
            runs.push(one_secret_start(world, &binary, function, case, memory, timeout, event).await?);
        }
        out.push(summarise(function, case, &runs));
    }
    Ok(out)
}

/// One fresh process of `case`: the extension stand-in started (not ready until the first
/// `/next`), the binary started with its variables, ready, its first event invoked, stopped.
async fn one_secret_start(
    world: &World,
    binary: &Path,
    function: &str,
    case: &str,
    memory: u32,
    timeout: Duration,
    event: serde_json::Value,
) -> Result<SecretRun, BenchError> {
    let extension = ExtensionStandIn::start(true).await.map_err(other)?;
    let mut env = world.env.clone();
    if case == "secrets-manager" {
        move_secrets_to_extension(&extension, &mut env);
    }
    let mut api = RuntimeApi::serve().await.map_err(other)?;
    let started = Instant::now();
    api.start_function(binary, function, memory, &env).map_err(other)?;
    api.wait_ready(Duration::from_secs(30)).await.map_err(|e| other(format!("{function}: {e}")))?;
    let ready_ms = ms(started.elapsed());
    let extension_reads = extension.heads().len();
    extension.serve_from_now();
    let invoked = Instant::now();
    let response = api.invoke(event, invoke_context(function, timeout)).await;
    let first_event_ms = ms(invoked.elapsed());
    let failures = response.as_ref().map_or(1, item_failures);
    api.stop().await;
    Ok(SecretRun { ready_ms, first_event_ms, extension_reads, failures })
}

/// The secrets of [`SECRET_ARNS`] put in the extension and blanked in `env`, which names their
/// ARNs and the extension's port instead.
fn move_secrets_to_extension(extension: &ExtensionStandIn, env: &mut Vec<(String, String)>) {
    for (var, arn) in SECRET_ARNS {
        let Some(entry) = env.iter_mut().find(|(k, _)| k.as_str() == var) else { continue };
        extension.put(arn, &entry.1);
        // Blank: unset for the binary.
        entry.1 = String::new();
        env.push((format!("{var}_SECRET_ARN"), arn.to_owned()));
    }
    env.push(("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT".to_owned(), extension.port().to_string()));
}

/// The figures of one case's runs.
fn summarise(function: &str, case: &str, runs: &[SecretRun]) -> SecretStart {
    let ready: Vec<f64> = runs.iter().map(|r| r.ready_ms).collect();
    let first: Vec<f64> = runs.iter().map(|r| r.first_event_ms).collect();
    let (_, rmax) = min_max(&ready);
    let (_, fmax) = min_max(&first);
    SecretStart {
        function: function.to_owned(),
        case: case.to_owned(),
        runs: ready.len(),
        ready_ms_median: median(&ready),
        ready_ms_max: rmax,
        first_event_ms_median: median(&first),
        first_event_ms_max: fmax,
        extension_reads_during_init: runs.iter().map(|r| r.extension_reads).max().unwrap_or(0),
        first_events_ok: runs.iter().all(|r| r.failures == 0),
    }
}

/// The secrets table: each function's plain and Secrets Manager rows, with the ratio of their
/// ready times and the first event's extra time.
pub fn secrets_table(rows: &[SecretStart]) -> String {
    let mut out = String::from(
        "\nSecrets: plain variables vs Secrets Manager through an extension answering \"not ready\" until the first /next\n",
    );
    out += &format!(
        "  {:<22} {:<16} {:>5} {:>12} {:>10} {:>12} {:>14} {:>16}\n",
        "function", "case", "runs", "ready p50", "x plain", "first p50", "+first event", "init ext. calls"
    );
    for r in rows {
        let plain = rows.iter().find(|p| p.function == r.function && p.case == "plain");
        let ratio = plain.map_or(f64::NAN, |p| r.ready_ms_median / p.ready_ms_median);
        let extra = plain.map_or(f64::NAN, |p| r.first_event_ms_median - p.first_event_ms_median);
        out += &format!(
            "  {:<22} {:<16} {:>5} {:>9.1} ms {:>9.2}x {:>9.1} ms {:>11.1} ms {:>16}{}\n",
            r.function,
            r.case,
            r.runs,
            r.ready_ms_median,
            ratio,
            r.first_event_ms_median,
            extra,
            r.extension_reads_during_init,
            if r.first_events_ok { "" } else { "  (first events failed)" }
        );
    }
    out
}

/// Only the secrets figures (`sophia-bench --secrets-only`).
pub async fn run_secrets(options: &BenchOptions) -> Result<Vec<SecretStart>, BenchError> {
    let world = World::start(options).await?;
    let mut rows = Vec::new();
    let mut result = Ok(());
    for f in secret_functions() {
        eprintln!("secrets: {f} ({} runs per case)", options.runs);
        match secret_starts(&world, options, f).await {
            Ok(r) => rows.extend(r),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    world.stop().await;
    result.map(|()| rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(function: &str, case: &str, ready: f64, first: f64, ok: bool) -> SecretStart {
        SecretStart {
            function: function.to_owned(),
            case: case.to_owned(),
            runs: 3,
            ready_ms_median: ready,
            ready_ms_max: ready,
            first_event_ms_median: first,
            first_event_ms_max: first,
            extension_reads_during_init: usize::from(case != "plain"),
            first_events_ok: ok,
        }
    }

    #[test]
    fn the_secrets_table_compares_each_case_with_its_functions_plain_row() {
        let table = secrets_table(&[
            row("interview-completed", "plain", 20.0, 100.0, true),
            row("interview-completed", "secrets-manager", 50.0, 130.0, false),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        let cells = |line: &str| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            cells(lines[3])[..9],
            ["interview-completed", "plain", "3", "20.0", "ms", "1.00x", "100.0", "ms", "0.0"]
        );
        assert_eq!(
            cells(lines[4]),
            [
                "interview-completed",
                "secrets-manager",
                "3",
                "50.0",
                "ms",
                "2.50x",
                "130.0",
                "ms",
                "30.0",
                "ms",
                "1",
                "(first",
                "events",
                "failed)"
            ]
        );
    }

    #[tokio::test]
    async fn secrets_manager_blanks_the_secrets_and_names_their_arns_and_the_extensions_port() {
        let extension = ExtensionStandIn::start(true).await.expect("stand-in");
        let mut env = vec![
            (config::MONGODB_URI.to_owned(), "mongodb://127.0.0.1:1".to_owned()),
            ("LOG_LEVEL".to_owned(), "warn".to_owned()),
        ];
        move_secrets_to_extension(&extension, &mut env);
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get(config::MONGODB_URI).as_deref(), Some(""), "blank: unset for the binary");
        assert_eq!(get(&format!("{}_SECRET_ARN", config::MONGODB_URI)).as_deref(), Some(SECRET_ARNS[0].1));
        assert_eq!(get(&format!("{}_SECRET_ARN", config::OPENAI_API_KEY)), None, "no variable, no secret");
        assert_eq!(get("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT"), Some(extension.port().to_string()));
        assert_eq!(get("LOG_LEVEL").as_deref(), Some("warn"));
    }
}
