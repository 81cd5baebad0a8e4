//! `sophia-local`: the whole pipeline on this machine (see `scripts/run-local`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
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
            let env_file = env_file.unwrap_or_else(sophia_local::envfile::default_path);
            let started = Instant::now();
            let options = RunnerOptions {
                sqs_port,
                mongo_port,
                functions: bootstrap.map(FunctionMode::Bootstrap).unwrap_or(FunctionMode::InProcess),
                openai_api_key: sophia_platform::config::optional(sophia_platform::config::OPENAI_API_KEY),
                overrides: QueueOverrides { visibility_timeout_seconds: visibility_timeout },
                pollers,
                env_file: Some(env_file.clone()),
                ..RunnerOptions::default()
            };
            let runner = match Runner::start(options).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
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
            eprintln!("for the API (e.g. its .env) to publish into this pipeline and read its reports:");
            for (k, v) in sophia_local::runner::api_env(runner.env()) {
                eprintln!("  {k}={v}");
            }
            let mut code = ExitCode::SUCCESS;
            if !no_demo {
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
                        if !report.all_expectations_met() {
                            code = ExitCode::FAILURE;
                        }
                    }
                    Err(e) => {
                        eprintln!("demo failed: {e}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            if !exit_after_demo {
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
    }
}
