//! `sophia-bench`: the benchmark table (see `scripts/bench` and `sophia_perf::bench`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sophia_perf::bench::{self, BenchOptions};
use sophia_perf::charts;

#[derive(Parser)]
#[command(
    name = "sophia-bench",
    about = "Zip sizes, cold starts, peak RSS, MongoDB round trips and batch latency of the Sophia functions"
)]
struct Cli {
    /// Release binaries (`cargo build --release`); default `<target>/release`.
    #[arg(long)]
    release_dir: Option<PathBuf>,
    /// cargo-lambda output (`scripts/build`); default `<target>/lambda`.
    #[arg(long)]
    lambda_dir: Option<PathBuf>,
    /// Fresh processes per binary for the cold start (median).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Batches per concurrency setting.
    #[arg(long, default_value_t = 5)]
    batch_repeats: usize,
    /// Only the zip sizes: print them and update the `zips` of an existing JSON file.
    #[arg(long)]
    zips_only: bool,
    /// Only the secrets figures: cold start and first event with plain variables vs Secrets
    /// Manager behind an extension that is not ready during init (docs/secrets.md).
    #[arg(long)]
    secrets_only: bool,
    /// Only the cost of a report (token counts and list-price cost, before and now).
    #[arg(long)]
    costs_only: bool,
    /// Only redraw the picture from the recorded JSON (and `<name>.previous.json`, if any).
    #[arg(long)]
    picture_only: bool,
    /// Run the MongoDB figures against this server (a replica set, where concurrent
    /// transactions commit) instead of a local nx-27017.
    #[arg(long, env = "SOPHIA_BENCH_MONGODB_URI")]
    mongo_uri: Option<String>,
    /// Where the JSON goes. The one found there is kept as `<name>.previous.json`, and the
    /// picture compares with it.
    #[arg(long, default_value = ".local/bench.json")]
    json: PathBuf,
    /// Where the picture goes (SVG): each figure per function, this run beside the previous one.
    #[arg(long, default_value = ".local/bench.svg")]
    svg: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    sophia_platform::telemetry::init_for_cli("warn,sophia_sqs_consumer=error");
    let cli = Cli::parse();
    let target = bench::target_dir();
    let options = BenchOptions {
        release_dir: cli.release_dir.unwrap_or_else(|| target.join("release")),
        lambda_dir: cli.lambda_dir.unwrap_or_else(|| target.join("lambda")),
        runs: cli.runs,
        batch_repeats: cli.batch_repeats,
        mongo_uri: cli.mongo_uri,
    };
    let in_repo = |p: &PathBuf| if p.is_absolute() { p.clone() } else { sophia_local::servers::repo_root().join(p) };
    let (json, svg) = (in_repo(&cli.json), in_repo(&cli.svg));
    if cli.secrets_only {
        return match bench::run_secrets(&options).await {
            Ok(rows) => {
                print!("{}", bench::secrets_table(&rows));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cli.costs_only {
        return match sophia_perf::cost::report_costs() {
            Ok(rows) => {
                print!("{}", sophia_perf::cost::table(&rows));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cli.picture_only {
        let Some(now) = bench::read_run(&json) else {
            eprintln!("error: no bench run recorded in {} (run scripts/bench first)", json.display());
            return ExitCode::FAILURE;
        };
        let previous = bench::read_run(&bench::previous_path(&json)).map(|v| charts::BenchFigures::from_json(&v));
        return draw_bench(&charts::BenchFigures::from_json(&now), previous.as_ref(), &svg);
    }
    if cli.zips_only {
        let (zips, arch) = bench::zip_figures(&options);
        print!("{}", bench::zip_table(&zips, arch.as_deref()));
        if let Ok(text) = std::fs::read_to_string(&json)
            && let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&text)
        {
            value["zips"] = serde_json::to_value(&zips).expect("serialises");
            value["lambda_architecture"] = serde_json::to_value(&arch).expect("serialises");
            let _ = std::fs::write(&json, serde_json::to_string_pretty(&value).expect("serialises"));
            eprintln!("updated {}", json.display());
        }
        return ExitCode::SUCCESS;
    }
    match bench::run(&options).await {
        Ok(report) => {
            println!("{report}");
            let previous = bench::keep_previous(&json);
            match bench::write_json(&report, &json) {
                Ok(()) => eprintln!("JSON: {}", json.display()),
                Err(e) => eprintln!("could not write {}: {e}", json.display()),
            }
            let now = serde_json::to_value(&report).map(|v| charts::BenchFigures::from_json(&v)).unwrap_or_default();
            let previous = previous.as_ref().map(charts::BenchFigures::from_json);
            draw_bench(&now, previous.as_ref(), &svg)
        }
        Err(e) => {
            eprintln!("benchmarks failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Draws the bench's picture to `path`; a picture that cannot be drawn or written is an error.
fn draw_bench(now: &charts::BenchFigures, previous: Option<&charts::BenchFigures>, path: &std::path::Path) -> ExitCode {
    match charts::bench_svg(now, previous).map(|picture| std::fs::write(path, picture)) {
        Ok(Ok(())) => {
            eprintln!("picture: {}", path.display());
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("could not write {}: {e}", path.display());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("no picture: {e}");
            ExitCode::FAILURE
        }
    }
}
