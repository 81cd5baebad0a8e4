//! `sophia-ops`, the operator CLI of the Sophia async jobs, as a library: every command is a
//! function that returns a serializable report, so tests (and other tools) call them directly and
//! the binary only parses, runs and prints.
//!
//! A command's way through the crate: [`parse`] (the clap definitions of [`cli`]), a [`Context`]
//! (environment, env file, clients), [`execute`] (one line per command family) to its handler in
//! [`commands`] (the plan, the confirmation gate of [`confirm`], the work), an [`Outcome`], then
//! [`render`]; [`run`] does all of it and, for a mutating command ([`mutating_name`]), writes the
//! audit record ([`record_audit`]).
//!
//! The handlers, one module per command family: [`commands::publish`], [`commands::dlq`],
//! [`commands::interview`], [`commands::queue`], [`commands::outbox`], [`commands::report`],
//! [`commands::invariants`], [`commands::migrate`], [`commands::audit`]. The work they call:
//!
//! - [`publish_message`]: one message through the project's producer (`publish`, `report retry`);
//! - [`dlq_messages`]: peek at a DLQ (nothing is removed; bodies redacted), delete one message;
//! - [`redrive`]: `dlq redrive` (`StartMessageMoveTask`, or receive / send / delete that never
//!   loses a message; for report-generate each report's attempts are reset just before its
//!   message moves) and `queue move` (from another stack's queue, each body checked);
//! - [`interview_state`]: `interview show` (settlement, ledger, outbox, report, DLQ messages);
//! - [`contract`]: each queue's message contract and the redaction of bodies;
//! - [`reference`](mod@reference): the command reference (`docs/reference/ops-cli.md`) from the clap definitions;
//! - [`admin`]: `outbox flush`, `report retry`, `invariants check`, `migrate` (MongoDB, via the
//!   credits and reports libraries);
//! - [`predict`]: what a consumer will do with a message, from the state it will read (every
//!   mutating command's plan);
//! - [`status`]: `queue status` (depth, oldest age, the event source mapping, the function's
//!   metrics, a verdict naming what failing batches say) and `queue pause|resume` (the mapping,
//!   on a stage or the local runner);
//! - [`listing`]: `interview unsettled`, `report failures`;
//! - [`report_failure`]: the states a report can be in and how its stored `lastError` is shown;
//! - [`report_state`]: what a report is now (one function every command reads, on the consumer's
//!   claim rule) and what `queue status report-generate` adds from MongoDB;
//! - [`duration_text`]: durations as an operator reads them;
//! - [`late`]: `report late` (the time to report against its service level, what waits, where);
//! - [`audit_trail`]: the audit trail of mutating commands (a stage's append-only CloudWatch Logs
//!   group; locally `operatorAudit`), `audit list`;
//! - [`env`](mod@env): the environment overlaid on an env file (`.local/sophia.env`);
//! - [`queues`]: queue URLs from the environment or, with `--stage`, by name;
//! - [`erasure`]: `erasure request|sweep|show|list` (a candidate's data erased, with its proof).
//!
//! Output: [`Outcome::human`] by default, [`Outcome::to_json`] with `--json`. Exit codes: 0 done,
//! 1 error, 2 usage, 3 done but incomplete (a redrive that left messages behind, an outbox entry
//! that failed, an invariant violated).

pub mod admin;
pub mod audit_trail;
pub mod cli;
pub mod commands;
pub mod confirm;
mod context;
pub mod contract;
pub mod dlq_messages;
pub mod duration_text;
pub mod env;
pub mod erasure;
mod error;
pub mod function_log;
pub mod interview_state;
pub mod late;
pub mod listing;
mod outcome;
pub mod pause_switch;
pub mod predict;
pub mod progress;
pub mod publish_message;
pub mod queues;
pub mod redrive;
pub mod reference;
pub mod report_failure;
pub mod report_state;
pub mod status;

pub use audit_trail::record_audit;
pub use cli::Cli;
pub use commands::dlq::REDRIVE_PLAN_MESSAGES;
pub use context::Context;
pub use error::OpsError;
pub use outcome::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, Outcome, Rendered, render};
pub use progress::ProgressMode;

use crate::cli::{Command, DlqCommand, ErasureCommand, OutboxCommand, QueueCommand, ReportCommand};

/// Parses a command line (the program name first), as the binary does.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    <Cli as clap::Parser>::try_parse_from(args)
}

/// Runs one parsed command: the handler of its family (see [`commands`]).
pub async fn execute(command: &Command, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        Command::Publish(c) => commands::publish::run(c, ctx).await,
        Command::Dlq(c) => commands::dlq::run(c, ctx).await,
        Command::Interview(c) => commands::interview::run(c, ctx).await,
        Command::Queue(c) => commands::queue::run(c, ctx).await,
        Command::Outbox(c) => commands::outbox::run(c, ctx).await,
        Command::Report(c) => commands::report::run(c, ctx).await,
        Command::Invariants(c) => commands::invariants::run(c, ctx).await,
        Command::Migrate => commands::migrate::run(ctx).await,
        Command::Audit(c) => commands::audit::run(c, ctx).await,
        Command::Erasure(c) => commands::erasure::run(c, ctx).await,
    }
}

/// The audit name of a command that changes something (`None`: a read-only command).
pub fn mutating_name(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Publish(c) => commands::publish::audit_name(c),
        Command::Dlq(DlqCommand::Redrive { .. }) => "dlq-redrive",
        Command::Dlq(DlqCommand::Delete { .. }) => "dlq-delete",
        Command::Queue(QueueCommand::Move { .. }) => "queue-move",
        Command::Queue(QueueCommand::Pause { .. }) => "queue-pause",
        Command::Queue(QueueCommand::Resume { .. }) => "queue-resume",
        Command::Outbox(OutboxCommand::Flush { .. }) => "outbox-flush",
        Command::Report(ReportCommand::Retry { .. }) => "report-retry",
        Command::Migrate => "migrate",
        Command::Erasure(ErasureCommand::Request { .. }) => "erasure-request",
        Command::Erasure(ErasureCommand::Sweep) => "erasure-sweep",
        Command::Erasure(ErasureCommand::Replay { .. }) => "erasure-replay",
        _ => return None,
    })
}

/// Parses nothing: runs an already parsed command line end to end (env file, clients, command,
/// rendering). The binary is this plus argument parsing and printing.
pub async fn run(cli: &Cli) -> Rendered {
    run_with_args(cli, std::env::args().skip(1).collect()).await
}

/// [`run`], with the arguments to record in the audit trail.
pub async fn run_with_args(cli: &Cli, args: Vec<String>) -> Rendered {
    let mut note = String::new();
    let mut audit_line = None;
    let result = match Context::from_cli(cli) {
        Ok(ctx) => {
            if let Some(file) = ctx.env.file().filter(|_| !cli.json) {
                note = format!("(settings completed from {})\n", file.display());
            }
            let started = chrono::Utc::now();
            // A command that changes something runs only once its audit record has a place.
            let opened = match mutating_name(&cli.command) {
                Some(name) => ctx.audit_sink(name).await.map(|_| ()),
                None => Ok(()),
            };
            let result = match opened {
                Ok(()) => execute(&cli.command, &ctx).await,
                Err(e) => Err(e),
            };
            if let Some(name) = mutating_name(&cli.command) {
                // The record as JSON only when asked (`--json`) or when it is nowhere else (not
                // stored, or stored on stderr only); a person reads one line.
                let (record, warnings) = audit_trail::store_audit(&ctx, name, &args, started, &result).await;
                let line = if cli.json || !warnings.is_empty() { record.line() } else { record.summary() };
                audit_line = Some(line + "\n" + &warnings);
            }
            note.push_str(&ctx.take_notes());
            result
        }
        Err(e) => Err(e),
    };
    let mut rendered = render(&result, cli.json);
    rendered.stderr.insert_str(0, &note);
    if let Some(line) = audit_line {
        rendered.stderr.push_str(&line);
    }
    if let Some(stage) = &cli.stage {
        rendered = for_stage(rendered, stage);
    }
    rendered
}

/// The hints name `sophia/<stage>/...` (the credentials hint's secret): with `--stage` the
/// operator gave the stage, so it is written in.
pub fn for_stage(mut rendered: Rendered, stage: &str) -> Rendered {
    rendered.stderr = rendered.stderr.replace("sophia/<stage>/", &format!("sophia/{stage}/"));
    rendered.stdout = rendered.stdout.replace("sophia/<stage>/", &format!("sophia/{stage}/"));
    rendered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credentials_hint_names_the_stage_given() {
        let rendered = for_stage(render(&Err(OpsError::CredentialsRefused), false), "prod");
        assert!(rendered.stderr.contains("--secret-id sophia/prod/mongodb-uri"), "{}", rendered.stderr);
        let json = for_stage(render(&Err(OpsError::CredentialsRefused), true), "prod");
        assert!(json.stdout.contains("sophia/prod/mongodb-uri"), "{}", json.stdout);
    }
}
