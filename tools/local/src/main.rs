//! `sophia-local`: the whole pipeline on this machine (see `scripts/run-local`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use sophia_local::control::{ControlClient, MongoState};
use sophia_local::demo;
use sophia_local::queues::QueueOverrides;
use sophia_local::runner::{FunctionMode, Runner, RunnerOptions};

#[derive(Parser)]
#[command(
    name = "sophia-local",
    about = "Run the Sophia async jobs pipeline locally: fauxqs, nx-27017, the consumers, a demo"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start everything and keep it running until Ctrl-C (runs the demo first unless --no-demo).
    Up {
        /// SQS (fauxqs) port on 127.0.0.1; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        sqs_port: u16,
        /// MongoDB (nx-27017) port on 127.0.0.1; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        mongo_port: u16,
        /// Run the built binaries behind a local Lambda Runtime API instead of in-process:
        /// a directory with `<function>/bootstrap` (cargo-lambda, x86_64) or `<function>`.
        #[arg(long)]
        bootstrap: Option<PathBuf>,
        /// Do not run the demo.
        #[arg(long)]
        no_demo: bool,
        /// Stop after the demo (for scripts and tests).
        #[arg(long)]
        exit_after_demo: bool,
        /// Print the demo summary as JSON.
        #[arg(long)]
        json: bool,
        /// Pollers per event source mapping.
        #[arg(long, default_value_t = 1)]
        pollers: usize,
        /// Where to write the endpoints (default: .local/sophia.env).
        #[arg(long)]
        env_file: Option<PathBuf>,
        /// Shorten the queues' visibility timeout (seconds) so failed messages come back sooner.
        /// The declared values (180 s / 1800 s) are used when unset.
        #[arg(long)]
        visibility_timeout: Option<u32>,
    },
    /// Drill: inject a fault into the running pipeline (see docs/local.md#4-drills-rehearse-the-runbook).
    Fault {
        #[command(subcommand)]
        target: FaultTarget,
        /// The runner's env file (default: .local/sophia.env of this checkout).
        #[arg(long, global = true)]
        env_file: Option<PathBuf>,
    },
    /// Drill: stop a function's event source mapping (it receives nothing; messages wait), as
    /// disabling the mapping does.
    Pause {
        /// interview-completed or report-generate.
        function: String,
        #[arg(long)]
        env_file: Option<PathBuf>,
    },
    /// Drill: start a paused event source mapping again.
    Resume {
        function: String,
        #[arg(long)]
        env_file: Option<PathBuf>,
    },
    /// Drill material: a new organization with interviews that hold a reservation and are
    /// marked COMPLETED (not published); prints the ids and the publish command.
    Seed {
        /// How many interviews (1 to 50).
        #[arg(long, default_value_t = 1)]
        interviews: usize,
        /// As JSON.
        #[arg(long)]
        json: bool,
        #[arg(long)]
        env_file: Option<PathBuf>,
    },
    /// Drill: send to the interview-completed queue an `interview.completed` for these ids that
    /// the contract rejects (completedAt "yesterday", durationSeconds -5), as a broken producer
    /// would; the consumer drops it and the interview keeps its reservation.
    PublishInvalid {
        interview_id: String,
        organization_id: String,
        #[arg(long)]
        env_file: Option<PathBuf>,
    },
    /// What is injected or paused now, and per function its queue, DLQ and counters.
    Status {
        /// As JSON.
        #[arg(long)]
        json: bool,
        #[arg(long)]
        env_file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum FaultTarget {
    /// The offline OpenAI endpoint answers every chat completion with this until `none`.
    Openai {
        #[arg(value_enum)]
        kind: OpenAiFault,
        /// rate_limited: the Retry-After header, in seconds.
        #[arg(long)]
        retry_after_seconds: Option<u64>,
        /// slow: how long each answer waits, in milliseconds (default 5000).
        #[arg(long)]
        delay_ms: Option<u64>,
    },
    /// MongoDB unreachable for the functions (`down`) or reachable again (`up`); the operator's
    /// MONGODB_URI (nx-27017 itself) keeps working.
    Mongo {
        #[arg(value_enum)]
        state: MongoArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
enum OpenAiFault {
    None,
    /// HTTP 401 `invalid_api_key`.
    Unauthorized,
    /// HTTP 429 `insufficient_quota` (billing: each attempt spends one of a report's three).
    Quota,
    /// HTTP 429 `rate_limit_exceeded`.
    RateLimited,
    /// HTTP 500.
    ServerError,
    /// HTTP 503 `server_is_overloaded`.
    Unavailable,
    /// No answer until the attempt's timeout.
    Timeout,
    /// A normal answer after `--delay-ms`.
    Slow,
}

impl OpenAiFault {
    fn kind(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Unauthorized => "unauthorized",
            Self::Quota => "quota",
            Self::RateLimited => "rate_limited",
            Self::ServerError => "server_error",
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::Slow => "slow",
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum MongoArg {
    Down,
    Up,
}

/// The control client of the runner whose env file is `env_file` (default: this checkout's).
fn control(env_file: Option<PathBuf>) -> Result<ControlClient, String> {
    let path = match env_file {
        Some(p) => p,
        None => sophia_local::envfile::try_default_path()?,
    };
    ControlClient::from_env_file(&path)
}

/// Runs a drill command: prints `done` on success, the reason on failure.
async fn drill<F, Fut>(env_file: Option<PathBuf>, done: &str, f: F) -> ExitCode
where
    F: FnOnce(ControlClient) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let outcome = match control(env_file) {
        Ok(client) => f(client).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => {
            println!("{done}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    // The runner's own lines at INFO; the functions running in it only when something needs a
    // look (WARN and up), as their CloudWatch logs would be read. LOG_LEVEL overrides it.
    sophia_platform::telemetry::init_for_cli("warn,sophia_local=info");
    let cli = Cli::parse();
    match cli.command {
        Command::Up {
            sqs_port,
            mongo_port,
            bootstrap,
            no_demo,
            exit_after_demo,
            json,
            pollers,
            env_file,
            visibility_timeout,
        } => {
            let up =
                Up { sqs_port, mongo_port, bootstrap, no_demo, exit_after_demo, json, pollers, visibility_timeout };
            up.run(env_file).await
        }
        Command::Fault { target: FaultTarget::Openai { kind, retry_after_seconds, delay_ms }, env_file } => {
            fault_openai(env_file, kind, retry_after_seconds, delay_ms).await
        }
        Command::Fault { target: FaultTarget::Mongo { state }, env_file } => {
            let (state, done) = match state {
                MongoArg::Down => (
                    MongoState::Down,
                    "MongoDB is DOWN for the functions (open connections cut, new ones closed) until `sophia-local fault mongo up`",
                ),
                MongoArg::Up => (MongoState::Up, "MongoDB is up for the functions again"),
            };
            drill(env_file, done, |c| async move { c.mongo(state).await }).await
        }
        Command::Pause { function, env_file } => {
            let done = format!(
                "{function}: event source mapping PAUSED (its messages wait) until `sophia-local resume {function}`"
            );
            drill(env_file, &done, |c| async move { c.pause(&function).await }).await
        }
        Command::Resume { function, env_file } => {
            let done = format!("{function}: event source mapping polling again");
            drill(env_file, &done, |c| async move { c.resume(&function).await }).await
        }
        Command::Seed { interviews, json, env_file } => {
            let seeded = match control(env_file) {
                Ok(c) => c.seed(interviews).await,
                Err(e) => Err(e),
            };
            printed(seeded, |s| print_seeded(&s, json))
        }
        Command::PublishInvalid { interview_id, organization_id, env_file } => {
            let sent = match control(env_file) {
                Ok(c) => c.send_invalid(&interview_id, &organization_id).await,
                Err(e) => Err(e),
            };
            printed(sent, |body| println!("sent to interview-completed (the contract rejects it): {body}"))
        }
        Command::Status { json, env_file } => {
            let status = match control(env_file) {
                Ok(c) => c.status().await,
                Err(e) => Err(e),
            };
            printed(status, |s| {
                if json {
                    println!("{}", serde_json::to_string(&s).expect("status serialises"));
                } else {
                    print!("{s}");
                }
            })
        }
    }
}

/// `fault openai <kind>`: sets (or, with `none`, clears) the OpenAI endpoint's fault.
async fn fault_openai(
    env_file: Option<PathBuf>,
    kind: OpenAiFault,
    retry_after_seconds: Option<u64>,
    delay_ms: Option<u64>,
) -> ExitCode {
    let done = match kind {
        OpenAiFault::None => "OpenAI fault cleared: the endpoint answers normally".to_owned(),
        k => {
            format!("OpenAI fault set: every chat completion gets {} until `sophia-local fault openai none`", k.kind())
        }
    };
    drill(env_file, &done, |c| async move { c.openai_fault(kind.kind(), retry_after_seconds, delay_ms).await }).await
}

/// A control command's answer: printed by `print` on success, the reason on failure.
fn printed<T>(answer: Result<T, String>, print: impl FnOnce(T)) -> ExitCode {
    match answer {
        Ok(answer) => {
            print(answer);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `seed`'s answer: the ids, and the command that publishes each interview's completion.
fn print_seeded(s: &sophia_local::control::Seeded, json: bool) {
    if json {
        println!("{}", serde_json::to_string(s).expect("serialises"));
        return;
    }
    println!(
        "organization {} with {} interview(s), each holding {} credits, COMPLETED after {} s (not published):",
        s.organization_id,
        s.interview_ids.len(),
        s.reserved_per_interview,
        s.duration_seconds
    );
    for id in &s.interview_ids {
        println!(
            "  sophia-ops --stage local publish completed {id} {} --duration-seconds {}",
            s.organization_id, s.duration_seconds
        );
    }
}

/// `up`'s options (its env file apart).
struct Up {
    sqs_port: u16,
    mongo_port: u16,
    bootstrap: Option<PathBuf>,
    no_demo: bool,
    exit_after_demo: bool,
    json: bool,
    pollers: usize,
    visibility_timeout: Option<u32>,
}

impl Up {
    /// Starts the pipeline, runs the demo (unless `no_demo`), waits for Ctrl-C (unless
    /// `exit_after_demo`), prints each function's counters and stops everything.
    async fn run(self, env_file: Option<PathBuf>) -> ExitCode {
        // Everything (tools, logs, the env file) lives in the checkout this is run from.
        if let Err(e) = sophia_local::servers::try_repo_root() {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        let env_file = env_file.unwrap_or_else(sophia_local::envfile::default_path);
        let started = Instant::now();
        let runner = match Runner::start(self.runner_options(&env_file)).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        print_endpoints(&runner, started, &env_file);
        let code = if self.no_demo { ExitCode::SUCCESS } else { run_demo(&runner, started, self.json).await };
        if !self.exit_after_demo {
            eprintln!("running; Ctrl-C stops everything");
            let _ = tokio::signal::ctrl_c().await;
            eprintln!("stopping");
        }
        for (function, [invocations, records, deleted, item_failures, batch_failures]) in runner.stats() {
            eprintln!(
                "{function}: {invocations} invocations, {records} records, {deleted} deleted, {item_failures} item failures, {batch_failures} batch failures"
            );
        }
        runner.stop().await;
        code
    }

    fn runner_options(&self, env_file: &std::path::Path) -> RunnerOptions {
        // A drill may shorten report-generate's attempt timeout (as on a stage).
        let function_env = sophia_platform::config::optional(sophia_reports::openai::OPENAI_TIMEOUT_MS)
            .map(|v| (sophia_reports::openai::OPENAI_TIMEOUT_MS.to_owned(), v))
            .into_iter()
            .collect();
        RunnerOptions {
            sqs_port: self.sqs_port,
            mongo_port: self.mongo_port,
            functions: self.bootstrap.clone().map(FunctionMode::Bootstrap).unwrap_or(FunctionMode::InProcess),
            openai_api_key: sophia_platform::config::optional(sophia_platform::config::OPENAI_API_KEY),
            overrides: QueueOverrides { visibility_timeout_seconds: self.visibility_timeout },
            pollers: self.pollers,
            env_file: Some(env_file.to_path_buf()),
            function_env,
            ..RunnerOptions::default()
        }
    }
}

/// Where the started pipeline is: the servers, the drills' control channel, the API's variables.
fn print_endpoints(runner: &Runner, started: Instant, env_file: &std::path::Path) {
    eprintln!(
        "pipeline up in {:.1} s: SQS {} (fauxqs pid {}), MongoDB {} (nx-27017 pid {}), OpenAI {}; endpoints in {}",
        started.elapsed().as_secs_f64(),
        runner.fauxqs().url(),
        runner.fauxqs().pid(),
        runner.nx_mongo().url(),
        runner.nx_mongo().pid(),
        runner.openai().describe(),
        env_file.display()
    );
    eprintln!(
        "drills (another shell): sophia-local status | fault openai <kind> | fault mongo down|up | pause|resume <function> (control channel {}, docs/local.md#4-drills-rehearse-the-runbook)",
        runner.control_url()
    );
    eprintln!("for the API (e.g. its .env) to publish into this pipeline and read its reports:");
    for (k, v) in sophia_local::runner::api_env(runner.env()) {
        eprintln!("  {k}={v}");
    }
}

/// The demo on the started pipeline: its summary printed; FAILURE when an expectation is not met.
async fn run_demo(runner: &Runner, started: Instant, json: bool) -> ExitCode {
    match demo::run(&runner.mongo, &runner.sqs, runner.env()).await {
        Ok(report) => {
            if json {
                println!("{}", serde_json::to_string(&report).expect("report serialises"));
            } else {
                println!("{report}");
            }
            eprintln!(
                "first report stored {:.1} s after the command started",
                report.first_report_after(started).as_secs_f64()
            );
            if report.all_expectations_met() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}
