//! `sophia-load`: the load test (see `scripts/load-test` and `sophia_perf::load`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use sophia_perf::burst::{self, BurstOptions};
use sophia_perf::load::{self, LoadOptions};

#[derive(Parser)]
#[command(
    name = "sophia-load",
    about = "Publish thousands of interview events through the local pipeline and audit the outcome"
)]
struct Cli {
    /// Messages published in total: 5% duplicates, 2% malformed, 1% failed, the rest completed.
    #[arg(long, default_value_t = 10_000)]
    events: usize,
    /// Organizations the interviews are spread over.
    #[arg(long, default_value_t = 50)]
    orgs: usize,
    /// Pollers (function instances) of the report-generate mapping.
    #[arg(long, default_value_t = 4)]
    pollers: usize,
    /// Pollers of the interview-completed mapping. nx-27017 runs transactions as savepoints on one
    /// shared connection: more than one settlement at a time makes commits fail there.
    #[arg(long, default_value_t = 1)]
    settle_pollers: usize,
    /// The interview-completed consumer's concurrency per invocation (1 on nx-27017, as above).
    #[arg(long, default_value_t = 1)]
    settle_concurrency: usize,
    /// Concurrent publish calls.
    #[arg(long, default_value_t = 32)]
    publish_concurrency: usize,
    /// Give up waiting for the pipeline after this many seconds.
    #[arg(long, default_value_t = 12 * 3600)]
    timeout_seconds: u64,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Also write the figures as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Also draw the run as an SVG picture here (latency and throughput over the run, receive
    /// counts, outcomes).
    #[arg(long)]
    svg: Option<std::path::PathBuf>,
    /// The burst scenario instead (sophia_perf::burst): one organization's `--busy` reports beside
    /// a quiet one's `--quiet`, report generation only, the OpenAI fake with a realistic latency
    /// and a tokens-per-minute limit; prints each organization's dwell time and any report out
    /// of attempts.
    #[arg(long)]
    burst: bool,
    #[arg(long, default_value_t = 1_000)]
    busy: usize,
    #[arg(long, default_value_t = 10)]
    quiet: usize,
    /// report-generate instances (maxConcurrency of its event source mapping).
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// The fake's typical answer time in milliseconds (scale 1).
    #[arg(long, default_value_t = 15_000)]
    latency_ms: u64,
    /// The fake's tokens-per-minute limit (0: none).
    #[arg(long, default_value_t = 200_000)]
    tpm: u64,
    /// Every duration (latency, rate-limit window, backoffs) divided by this; figures multiplied back.
    #[arg(long, default_value_t = 30)]
    time_scale: u32,
    /// A provider outage (HTTP 500 to everything) from the start, this many hours (scale 1).
    #[arg(long)]
    outage_hours: Option<f64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    sophia_platform::telemetry::init_for_cli("warn,sophia_sqs_consumer=error");
    let cli = Cli::parse();
    if cli.burst {
        let options = BurstOptions {
            busy: cli.busy,
            quiet: cli.quiet,
            concurrency: cli.concurrency,
            latency: Duration::from_millis(cli.latency_ms),
            tokens_per_minute: (cli.tpm > 0).then_some(cli.tpm),
            time_scale: cli.time_scale,
            outage: cli.outage_hours.map(|h| Duration::from_secs_f64(h * 3600.0)),
            timeout: Duration::from_secs(cli.timeout_seconds),
        };
        return match burst::run(&options).await {
            Ok(report) => {
                println!("{report}");
                if let Some(path) = cli.json {
                    let _ = std::fs::write(&path, serde_json::to_string_pretty(&report).expect("report serialises"));
                }
                if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            }
            Err(e) => {
                eprintln!("burst failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let options = LoadOptions {
        events: cli.events,
        orgs: cli.orgs,
        pollers: cli.pollers,
        settle_pollers: cli.settle_pollers,
        settle_concurrency: cli.settle_concurrency,
        publish_concurrency: cli.publish_concurrency,
        timeout: Duration::from_secs(cli.timeout_seconds),
        progress: !cli.no_progress,
        ..LoadOptions::default()
    };
    let started = Instant::now();
    match load::run(&options).await {
        Ok(report) => {
            println!("{report}");
            println!("  whole run (pipeline start to audit end): {:.1} s", started.elapsed().as_secs_f64());
            if let Some(path) = cli.json {
                match std::fs::write(&path, serde_json::to_string_pretty(&report).expect("report serialises")) {
                    Ok(()) => eprintln!("JSON: {}", path.display()),
                    Err(e) => eprintln!("could not write {}: {e}", path.display()),
                }
            }
            if let Some(path) = cli.svg {
                match sophia_perf::charts::load_svg(&report).map(|svg| std::fs::write(&path, svg)) {
                    Ok(Ok(())) => eprintln!("picture: {}", path.display()),
                    Ok(Err(e)) => eprintln!("could not write {}: {e}", path.display()),
                    Err(e) => eprintln!("no picture: {e}"),
                }
            }
            if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("load test failed: {e}");
            ExitCode::FAILURE
        }
    }
}
