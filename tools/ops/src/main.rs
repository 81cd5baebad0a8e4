//! `sophia-ops`: see the library ([`sophia_ops`]) for the commands.

use std::io::Write;

use clap::Parser;

fn main() {
    let cli = sophia_ops::Cli::parse();
    // The AWS SDK warns about every credential/region source it probes (IMDS on a laptop), and
    // the MongoDB connection about a standalone server the env file allows (the local
    // pipeline): noise for an operator. LOG_LEVEL overrides this.
    sophia_platform::telemetry::init_for_cli("warn,aws_config=error,sophia_platform::mongo=error");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let rendered = runtime.block_on(sophia_ops::run(&cli));
    let _ = std::io::stdout().write_all(rendered.stdout.as_bytes());
    let _ = std::io::stderr().write_all(rendered.stderr.as_bytes());
    std::process::exit(rendered.exit_code);
}
