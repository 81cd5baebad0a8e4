//! `sophia-ops`, the operator CLI of the Sophia async jobs, as a library: every command is a
//! function that returns a serializable report, so tests (and other tools) call them directly and
//! the binary only parses, runs and prints.
//!
//! - [`publish`]: `publish completed|failed|report`;
//! - [`dlq`]: `dlq list`, `dlq show` (peek: nothing is removed);
//! - [`redrive`]: `dlq redrive` (`StartMessageMoveTask`, or receive / send / delete that never
//!   loses a message);
//! - [`admin`]: `outbox flush`, `report retry`, `invariants check` (MongoDB, via the credits and
//!   reports libraries);
//! - [`env`]: the environment overlaid on an env file (`.local/sophia.env`);
//! - [`queues`]: queue URLs from the environment or, with `--stage`, by name.
//!
//! Output: [`Outcome::human`] by default, [`Outcome::to_json`] with `--json`. Exit codes: 0 done,
//! 1 error, 2 usage, 3 done but incomplete (a redrive that left messages behind, an outbox entry
//! that failed, an invariant violated).

pub mod admin;
pub mod cli;
pub mod confirm;
pub mod dlq;
pub mod env;
mod error;
pub mod progress;
pub mod publish;
pub mod queues;
pub mod redrive;

use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};

pub use cli::Cli;
pub use error::OpsError;
pub use progress::ProgressMode;

use sophia_contracts::{InterviewId, RequestId};

use crate::cli::{Command, DlqCommand, InvariantsCommand, OutboxCommand, PublishCommand, ReportCommand};
use crate::confirm::{Gate, Plan};
use crate::env::Env;
use crate::publish::PublishRequest;
use crate::queues::QueueLocator;
use crate::queues::QueueName;
use crate::redrive::RedriveOptions;

pub const EXIT_OK: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_INCOMPLETE: i32 = 3;

/// What a command needs from its surroundings. The clients are built on first use (a `publish`
/// never connects to MongoDB) or injected by tests.
#[derive(Debug, Default)]
pub struct Context {
    pub env: Env,
    pub stage: Option<String>,
    pub progress: ProgressMode,
    sqs: OnceLock<aws_sdk_sqs::Client>,
    mongo: OnceLock<Mongo>,
    /// `--yes`: commands that move money may run against a non-local queue.
    confirmed: bool,
    /// Printed on stderr before the result (e.g. the plan a confirmed command ran).
    notes: Mutex<Vec<String>>,
}

impl Context {
    pub fn new(env: Env, stage: Option<String>, progress: ProgressMode) -> Self {
        Self { env, stage, progress, ..Self::default() }
    }

    /// From the parsed command line: env file, stage, progress mode.
    pub fn from_cli(cli: &Cli) -> Result<Self, OpsError> {
        let env = Env::load(cli.env_file.as_deref(), !cli.no_env_file)?;
        Ok(Self::new(env, cli.stage.clone(), ProgressMode::for_cli(cli.json)).confirmed_by(cli.yes))
    }

    /// `--yes` (see [`confirm`]).
    pub fn confirmed_by(mut self, yes: bool) -> Self {
        self.confirmed = yes;
        self
    }

    pub fn confirmed(&self) -> bool {
        self.confirmed
    }

    /// The local pipeline: no `--stage`, and a loopback queue URL.
    pub fn is_local(&self, queue_url: &str) -> bool {
        self.stage.is_none() && confirm::is_local_url(queue_url)
    }

    /// Whether MongoDB is configured (or injected).
    pub fn has_mongo(&self) -> bool {
        self.mongo.get().is_some() || self.env.get(config::MONGODB_URI).is_some()
    }

    pub fn note(&self, text: String) {
        self.notes.lock().expect("notes lock").push(text);
    }

    /// What was noted so far, taken.
    pub fn take_notes(&self) -> String {
        self.notes.lock().expect("notes lock").drain(..).collect()
    }

    pub fn with_sqs(self, client: aws_sdk_sqs::Client) -> Self {
        let _ = self.sqs.set(client);
        self
    }

    pub fn with_mongo(self, mongo: Mongo) -> Self {
        let _ = self.mongo.set(mongo);
        self
    }

    /// The SQS client: for an endpoint from the env file it is passed explicitly (the SDK only
    /// reads the process environment); otherwise the SDK's usual chain applies.
    pub async fn sqs(&self) -> aws_sdk_sqs::Client {
        if let Some(c) = self.sqs.get() {
            return c.clone();
        }
        let endpoint = [env::AWS_ENDPOINT_URL_SQS, env::AWS_ENDPOINT_URL]
            .into_iter()
            .find(|name| self.env.get(name).is_some())
            .filter(|name| self.env.from_file(name))
            .and_then(|name| self.env.get(name));
        let client = sophia_platform::sqs::client_from_default_chain(endpoint.as_deref()).await;
        self.sqs.get_or_init(|| client).clone()
    }

    pub async fn locator(&self) -> QueueLocator {
        QueueLocator::new(self.sqs().await, self.env.clone(), self.stage.clone())
    }

    /// The MongoDB handle, from `MONGODB_URI`, `MONGODB_DATABASE` and `MONGODB_ALLOW_STANDALONE`
    /// of the environment or env file; a deployment without transactions is refused unless
    /// standalone is allowed (as the Lambdas do).
    pub async fn mongo(&self) -> Result<Mongo, OpsError> {
        if let Some(m) = self.mongo.get() {
            return Ok(m.clone());
        }
        let settings = self.mongo_settings()?;
        let mongo = Mongo::connect(&settings).await?;
        mongo.check_deployment().await?;
        Ok(self.mongo.get_or_init(|| mongo).clone())
    }

    fn mongo_settings(&self) -> Result<MongoSettings, OpsError> {
        let uri = self.env.get(config::MONGODB_URI).ok_or_else(|| OpsError::NotConfigured {
            what: "MongoDB".into(),
            hint: "set MONGODB_URI (or --env-file .local/sophia.env)".into(),
        })?;
        let allow = self.env.get(config::MONGODB_ALLOW_STANDALONE).map(|v| v.to_ascii_lowercase());
        let allow_standalone = match allow.as_deref() {
            None | Some("false" | "0" | "no") => false,
            Some("true" | "1" | "yes") => true,
            Some(other) => {
                return Err(OpsError::Invalid(format!(
                    "MONGODB_ALLOW_STANDALONE: expected true or false, got {other:?}"
                )));
            }
        };
        Ok(MongoSettings {
            uri,
            database: self.env.get(config::MONGODB_DATABASE).unwrap_or_else(|| config::DEFAULT_DATABASE.to_owned()),
            server_selection_timeout: std::time::Duration::from_secs(5),
            allow_standalone,
        })
    }
}

/// What a command produced. Serialized with its command name: `{"command": "dlq-redrive", ...}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum Outcome {
    Publish(publish::PublishReport),
    DlqList(dlq::DlqListing),
    DlqShow(dlq::DlqShow),
    DlqRedrive(redrive::RedriveReport),
    OutboxFlush(admin::OutboxFlushReport),
    ReportRetry(admin::ReportRetryReport),
    InvariantsCheck(admin::InvariantsReport),
    Migrate(admin::MigrateReport),
    /// `--dry-run`: what would have been sent; nothing was.
    DryRun(confirm::Plan),
}

impl Outcome {
    pub fn human(&self) -> String {
        match self {
            Self::Publish(r) => r.human(),
            Self::DlqList(r) => r.human(),
            Self::DlqShow(r) => r.human(),
            Self::DlqRedrive(r) => r.human(),
            Self::OutboxFlush(r) => r.human(),
            Self::ReportRetry(r) => r.human(),
            Self::InvariantsCheck(r) => r.human(),
            Self::Migrate(r) => r.human(),
            Self::DryRun(plan) => format!("dry run, nothing sent:\n{}", plan.human()),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialise")
    }

    pub fn exit_code(&self) -> i32 {
        let incomplete = match self {
            Self::DlqRedrive(r) => !r.is_clean(),
            Self::OutboxFlush(r) => !r.failed.is_empty(),
            Self::InvariantsCheck(r) => !r.ok,
            _ => false,
        };
        if incomplete { EXIT_INCOMPLETE } else { EXIT_OK }
    }
}

/// Parses a command line (the program name first), as the binary does.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    <Cli as clap::Parser>::try_parse_from(args)
}

/// Runs one parsed command.
pub async fn execute(command: &Command, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        Command::Publish(p) => {
            let (request, dry_run) = match p {
                PublishCommand::Completed { ids, completed_at, duration_seconds, request_id, dry_run } => (
                    PublishRequest::completed(
                        ids.interview_id,
                        ids.organization_id,
                        *completed_at,
                        Some(*duration_seconds),
                        request_id.as_deref(),
                    ),
                    *dry_run,
                ),
                PublishCommand::Failed { ids, reason, failed_at, request_id, dry_run } => (
                    PublishRequest::failed(
                        ids.interview_id,
                        ids.organization_id,
                        reason.clone(),
                        *failed_at,
                        request_id.as_deref(),
                    ),
                    *dry_run,
                ),
                PublishCommand::Report { ids, request_id, dry_run } => (
                    PublishRequest::report(
                        ids.interview_id,
                        ids.organization_id,
                        sophia_contracts::RequestId::from_caller(request_id.as_deref()),
                    ),
                    *dry_run,
                ),
            };
            let locator = ctx.locator().await;
            let plan = request.plan(ctx, locator.source_url(request.queue()).await?);
            let interview = request.interview_id();
            if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[interview], dry_run).await? {
                return Ok(Outcome::DryRun(plan));
            }
            Ok(Outcome::Publish(publish::publish(&locator, request).await?))
        }
        Command::Dlq(DlqCommand::List { queue, max }) => {
            Ok(Outcome::DlqList(dlq::list(&ctx.locator().await, *queue, *max, ctx.progress).await?))
        }
        Command::Dlq(DlqCommand::Show { queue, message_id }) => {
            let mut shown = dlq::show(&ctx.locator().await, *queue, message_id, ctx.progress).await?;
            dlq::attach_report(&mut shown, ctx).await;
            Ok(Outcome::DlqShow(shown))
        }
        Command::Dlq(DlqCommand::Redrive { queue, max, dry_run, method, visibility_timeout }) => {
            if !dry_run {
                let locator = ctx.locator().await;
                let (source, dlq) = (locator.source_url(*queue).await?, locator.dlq_url(*queue).await?);
                let mut plan = Plan::new(ctx, format!("redrive the {queue} DLQ ({dlq})"), source);
                let peeked = dlq::list(&locator, *queue, 10, ProgressMode::Hidden).await?;
                plan.effects.push(format!(
                    "about {} message(s) move back to the source queue{}",
                    peeked.approximate_visible.map_or("?".into(), |n| n.to_string()),
                    max.map_or(String::new(), |m| format!(" (at most {m})"))
                ));
                let ids: Vec<InterviewId> = peeked.messages.iter().filter_map(|m| interview_of(&m.body)).collect();
                if !plan.local && ids.len() < peeked.messages.len() {
                    plan.effects.push("some peeked messages name no interview (see `dlq list`)".into());
                }
                confirm::gate(ctx, plan, &ids, false).await?;
            }
            let options = RedriveOptions {
                max: *max,
                dry_run: *dry_run,
                method: *method,
                visibility: *visibility_timeout,
                progress: ctx.progress,
            };
            Ok(Outcome::DlqRedrive(redrive::redrive(&ctx.locator().await, *queue, &options).await?))
        }
        Command::Outbox(OutboxCommand::Flush { older_than, limit }) => {
            let url = ctx.locator().await.source_url(QueueName::ReportGenerate).await?;
            let mut plan = Plan::new(ctx, "publish pending report.generate outbox entries", url);
            plan.effects.push(format!("entries created more than {}s ago, at most {limit}", older_than.as_secs()));
            confirm::gate(ctx, plan, &[], false).await?;
            Ok(Outcome::OutboxFlush(admin::outbox_flush(ctx, *older_than, *limit).await?))
        }
        Command::Report(ReportCommand::Retry { ids, reset_attempts, dry_run }) => {
            let request = PublishRequest::report(ids.interview_id, ids.organization_id, RequestId::from_caller(None));
            let mut plan = request.plan(ctx, ctx.locator().await.source_url(QueueName::ReportGenerate).await?);
            plan.action = "re-publish report.generate (report retry)".into();
            plan.attributes.remove("requestId");
            if *reset_attempts {
                plan.effects.push("resets the FAILED report's attemptCount to 0 first".into());
            }
            if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[ids.interview_id], *dry_run).await? {
                return Ok(Outcome::DryRun(plan));
            }
            Ok(Outcome::ReportRetry(
                admin::report_retry(ctx, ids.interview_id, ids.organization_id, *reset_attempts).await?,
            ))
        }
        Command::Invariants(InvariantsCommand::Check { org }) => {
            Ok(Outcome::InvariantsCheck(admin::invariants_check(ctx, *org).await?))
        }
        Command::Migrate => Ok(Outcome::Migrate(admin::migrate(ctx).await?)),
    }
}

/// What to print and the exit code: stdout text, stderr text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// Formats a command's result: human text, or JSON with `json` (errors too, as
/// `{"error": ..., "kind": ...}` on stdout, so scripts always get JSON).
pub fn render(result: &Result<Outcome, OpsError>, json: bool) -> Rendered {
    match (result, json) {
        (Ok(outcome), false) => {
            Rendered { stdout: outcome.human(), stderr: String::new(), exit_code: outcome.exit_code() }
        }
        (Ok(outcome), true) => {
            Rendered { stdout: outcome.to_json() + "\n", stderr: String::new(), exit_code: outcome.exit_code() }
        }
        (Err(e), false) => Rendered { stdout: String::new(), stderr: format!("error: {e}\n"), exit_code: EXIT_ERROR },
        (Err(e), true) => {
            let body = serde_json::json!({"error": e.to_string(), "kind": error_kind(e)});
            Rendered { stdout: format!("{body}\n"), stderr: String::new(), exit_code: EXIT_ERROR }
        }
    }
}

fn error_kind(e: &OpsError) -> &'static str {
    match e {
        OpsError::Env(_) => "env-file",
        OpsError::NotConfigured { .. } => "not-configured",
        OpsError::Sqs { .. } | OpsError::Publish(_) => "sqs",
        OpsError::Mongo(_) => "mongodb",
        OpsError::CredentialsRefused => "credentials-refused",
        OpsError::NotFound(_) => "not-found",
        OpsError::Invalid(_) => "invalid-input",
        OpsError::Unavailable { .. } => "not-yet-available",
        OpsError::Domain { .. } => "domain",
        OpsError::Io(_) => "io",
        OpsError::ConfirmationRequired(_) => "confirmation-required",
    }
}

/// The `interviewId` of a message body, if it names one.
fn interview_of(body: &str) -> Option<InterviewId> {
    serde_json::from_str::<serde_json::Value>(body).ok()?.get("interviewId")?.as_str()?.parse().ok()
}

/// Parses nothing: runs an already parsed command line end to end (env file, clients, command,
/// rendering). The binary is this plus argument parsing and printing.
pub async fn run(cli: &Cli) -> Rendered {
    let mut note = String::new();
    let result = match Context::from_cli(cli) {
        Ok(ctx) => {
            if let Some(file) = ctx.env.file().filter(|_| !cli.json) {
                note = format!("(settings completed from {})\n", file.display());
            }
            let result = execute(&cli.command, &ctx).await;
            note.push_str(&ctx.take_notes());
            result
        }
        Err(e) => Err(e),
    };
    let mut rendered = render(&result, cli.json);
    rendered.stderr.insert_str(0, &note);
    rendered
}
