//! `sophia-ops`, the operator CLI of the Sophia async jobs, as a library: every command is a
//! function that returns a serializable report, so tests (and other tools) call them directly and
//! the binary only parses, runs and prints.
//!
//! - [`publish`]: `publish completed|failed|report`;
//! - [`dlq`]: `dlq list`, `dlq show` (peek: nothing is removed; bodies redacted), `dlq delete`;
//! - [`redrive`]: `dlq redrive` (`StartMessageMoveTask`, or receive / send / delete that never
//!   loses a message; for report-generate each report's attempts are reset just before its
//!   message moves) and `queue move` (from another stack's queue, each body checked);
//! - [`interview`]: `interview show` (settlement, ledger, outbox, report, DLQ messages);
//! - [`contract`]: each queue's message contract and the redaction of bodies;
//! - [`reference`]: the command reference (`docs/reference/ops-cli.md`) from the clap definitions;
//! - [`admin`]: `outbox flush`, `report retry`, `invariants check` (MongoDB, via the credits and
//!   reports libraries);
//! - [`predict`]: what a consumer will do with a message, from the state it will read (every
//!   mutating command's plan);
//! - [`status`]: `queue status` (depth, oldest age, the event source mapping, the function's
//!   metrics, a verdict);
//! - [`listing`]: `interview unsettled`, `report failures`;
//! - [`audit`]: the audit trail of mutating commands (`operatorAudit`), `audit list`;
//! - [`env`]: the environment overlaid on an env file (`.local/sophia.env`);
//! - [`queues`]: queue URLs from the environment or, with `--stage`, by name.
//!
//! Output: [`Outcome::human`] by default, [`Outcome::to_json`] with `--json`. Exit codes: 0 done,
//! 1 error, 2 usage, 3 done but incomplete (a redrive that left messages behind, an outbox entry
//! that failed, an invariant violated).

pub mod admin;
pub mod audit;
pub mod cli;
pub mod commands;
pub mod confirm;
pub mod contract;
pub mod dlq;
pub mod env;
mod error;
pub mod interview;
pub mod listing;
pub mod predict;
pub mod progress;
pub mod publish;
pub mod queues;
pub mod redrive;
pub mod reference;
pub mod status;

use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};

pub use cli::Cli;
pub use commands::dlq::REDRIVE_PLAN_MESSAGES;
pub use error::OpsError;
pub use progress::ProgressMode;

use crate::audit::Identity;
use crate::cli::{Command, DlqCommand, OutboxCommand, QueueCommand, ReportCommand};
use crate::env::Env;
use crate::queues::QueueLocator;
use crate::queues::QueueName;

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
    /// `--by`: who acts (recorded on the reports a retry resets).
    by: Option<String>,
    /// Printed on stderr before the result (e.g. the plan a confirmed command ran).
    notes: Mutex<Vec<String>>,
    /// Who acts (see [`Context::identify`]), once known.
    identity: OnceLock<Identity>,
    /// The AWS configuration of the Lambda, CloudWatch and STS clients.
    aws: tokio::sync::OnceCell<aws_config::SdkConfig>,
    /// The request id of this command's messages (`ops:<command>:<who>:<uuid>`), once made.
    request_id: Mutex<Option<String>>,
    /// The last plan shown (for the audit record).
    plan: Mutex<Option<confirm::Plan>>,
}

impl Context {
    pub fn new(env: Env, stage: Option<String>, progress: ProgressMode) -> Self {
        Self { env, stage, progress, ..Self::default() }
    }

    /// From the parsed command line: env file, stage, progress mode.
    pub fn from_cli(cli: &Cli) -> Result<Self, OpsError> {
        let env = Env::load(cli.env_file.as_deref(), !cli.no_env_file)?;
        Ok(Self::new(env, cli.stage.clone(), ProgressMode::for_cli(cli.json))
            .confirmed_by(cli.yes)
            .acting_as(cli.by.clone()))
    }

    /// `--by`.
    pub fn acting_as(mut self, by: Option<String>) -> Self {
        self.by = by.filter(|b| !b.trim().is_empty());
        self
    }

    /// Who acts, through which command: the identity [`Context::identify`] found, else `--by`
    /// (or `SOPHIA_OPERATOR`), else the login name (`$USER`), else the uid.
    pub fn operator(&self, via: &str) -> sophia_reports::admin::Operator {
        let who = self.identity.get().cloned().unwrap_or_else(|| Identity::declared(self.by.as_deref()));
        let by = if who.self_declared { format!("{} (self-declared)", who.who) } else { who.who };
        sophia_reports::admin::Operator::new(by, via)
    }

    /// Whether the command targets AWS rather than the local pipeline: the queue it resolves
    /// (from the environment or, with `--stage`, by name) is not a loopback URL. Nothing is asked
    /// of AWS (no STS, no instance metadata) when the queues are local.
    pub async fn targets_aws(&self) -> bool {
        if self.stage.is_none() && QueueName::all().all(|q| self.env.get(q.source_env()).is_none()) {
            return false;
        }
        match self.locator().await.source_url(QueueName::interview_completed()).await {
            Ok(url) => !confirm::is_local_url(&url),
            Err(_) => false,
        }
    }

    /// Who acts: against AWS, the caller's identity (STS `GetCallerIdentity`: the ARN of the
    /// role session); otherwise, or when STS cannot answer, the self-declared name.
    pub async fn identify(&self) -> Identity {
        if let Some(i) = self.identity.get() {
            return i.clone();
        }
        let declared = Identity::declared(self.by.as_deref());
        let identity = if self.targets_aws().await {
            let sts = aws_sdk_sts::Client::new(&self.aws_config().await);
            match sts.get_caller_identity().send().await {
                Ok(out) => match out.arn {
                    Some(arn) => Identity { who: arn, source: "aws-sts", self_declared: false },
                    None => declared,
                },
                Err(e) => {
                    self.note(format!(
                        "note: no AWS identity (STS GetCallerIdentity: {}); recorded as {} (self-declared)\n",
                        aws_sdk_sts::error::DisplayErrorContext(e),
                        declared.who
                    ));
                    declared
                }
            }
        } else {
            declared
        };
        self.identity.get_or_init(|| identity).clone()
    }

    /// The request id of this command's messages, made once: `ops:<command>:<who>:<uuid>`.
    pub async fn request_id(&self, command: &str) -> String {
        if let Some(r) = self.request_id.lock().expect("lock").clone() {
            return r;
        }
        let who = self.identify().await.who;
        let id = audit::request_id(command, &who);
        *self.request_id.lock().expect("lock") = Some(id.clone());
        id
    }

    /// The request id made so far, if any.
    pub fn current_request_id(&self) -> Option<String> {
        self.request_id.lock().expect("lock").clone()
    }

    /// Keeps the plan shown, for the audit record.
    pub fn keep_plan(&self, plan: &confirm::Plan) {
        *self.plan.lock().expect("lock") = Some(plan.clone());
    }

    pub fn take_plan(&self) -> Option<confirm::Plan> {
        self.plan.lock().expect("lock").take()
    }

    /// The AWS SDK configuration of the usual chain (for Lambda, CloudWatch and STS).
    pub async fn aws_config(&self) -> aws_config::SdkConfig {
        self.aws
            .get_or_init(|| async { aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await })
            .await
            .clone()
    }

    /// MongoDB for a plan's predictions: `None` when it is not configured or cannot be reached
    /// (the plan then says the state was not read).
    pub async fn mongo_for_plan(&self) -> Option<Mongo> {
        if !self.has_mongo() {
            return None;
        }
        match self.mongo().await {
            Ok(m) => Some(m),
            Err(e) => {
                self.note(format!("note: the plan could not read MongoDB: {e}\n"));
                None
            }
        }
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
    DlqDelete(dlq::DlqDelete),
    InterviewShow(Box<interview::InterviewShow>),
    QueueMove(redrive::RedriveReport),
    OutboxFlush(admin::OutboxFlushReport),
    ReportRetry(admin::ReportRetryReport),
    InvariantsCheck(admin::InvariantsReport),
    Migrate(admin::MigrateReport),
    QueueStatus(Box<status::QueueStatus>),
    InterviewUnsettled(listing::UnsettledListing),
    ReportFailures(listing::FailuresListing),
    AuditList(audit::AuditListing),
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
            Self::DlqDelete(r) => r.human(),
            Self::InterviewShow(r) => r.human(),
            Self::QueueMove(r) => {
                r.human().replacen("redrive ", "queue move ", 1).replacen(" DLQ -> source queue", " <- ", 1)
            }
            Self::OutboxFlush(r) => r.human(),
            Self::ReportRetry(r) => r.human(),
            Self::InvariantsCheck(r) => r.human(),
            Self::Migrate(r) => r.human(),
            Self::QueueStatus(r) => r.human(),
            Self::InterviewUnsettled(r) => r.human(),
            Self::ReportFailures(r) => r.human(),
            Self::AuditList(r) => r.human(),
            Self::DryRun(plan) => format!("dry run, nothing sent:\n{}", plan.human()),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialise")
    }

    pub fn exit_code(&self) -> i32 {
        let incomplete = match self {
            Self::DlqRedrive(r) | Self::QueueMove(r) => !r.is_clean(),
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
    }
}

/// The audit name of a command that changes something (`None`: a read-only command).
pub fn mutating_name(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Publish(c) => commands::publish::audit_name(c),
        Command::Dlq(DlqCommand::Redrive { .. }) => "dlq-redrive",
        Command::Dlq(DlqCommand::Delete { .. }) => "dlq-delete",
        Command::Queue(QueueCommand::Move { .. }) => "queue-move",
        Command::Outbox(OutboxCommand::Flush { .. }) => "outbox-flush",
        Command::Report(ReportCommand::Retry { .. }) => "report-retry",
        Command::Migrate => "migrate",
        _ => return None,
    })
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
        // A plan waiting for --yes is not an error: it is printed as the plan it is.
        (Err(e @ OpsError::ConfirmationRequired(_)), false) => {
            Rendered { stdout: String::new(), stderr: format!("{e}\n"), exit_code: EXIT_ERROR }
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
            let result = execute(&cli.command, &ctx).await;
            if let Some(name) = mutating_name(&cli.command) {
                audit_line = Some(record_audit(&ctx, name, &args, started, &result).await);
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

/// Writes the audit record of a mutating command (MongoDB `operatorAudit` when configured) and
/// returns its stderr lines (the record, and a warning if it could not be stored).
pub async fn record_audit(
    ctx: &Context,
    command: &'static str,
    args: &[String],
    started: chrono::DateTime<chrono::Utc>,
    result: &Result<Outcome, OpsError>,
) -> String {
    let who = ctx.identify().await;
    let request_id = match ctx.current_request_id() {
        Some(r) => r,
        None => ctx.request_id(command).await,
    };
    let (kind, exit_code, mut outcome) = match result {
        Ok(Outcome::DryRun(_)) => ("dry-run", EXIT_OK, serde_json::to_value(result.as_ref().ok()).unwrap_or_default()),
        Ok(o) => (
            if o.exit_code() == EXIT_OK { "done" } else { "incomplete" },
            o.exit_code(),
            serde_json::to_value(o).unwrap_or_default(),
        ),
        Err(OpsError::ConfirmationRequired(_)) => {
            ("refused", EXIT_ERROR, serde_json::json!({"error": "not confirmed (--yes)"}))
        }
        Err(e) => ("error", EXIT_ERROR, serde_json::json!({"error": e.to_string(), "kind": error_kind(e)})),
    };
    audit::redact_json(&mut outcome);
    let mut plan = ctx.take_plan().and_then(|p| serde_json::to_value(p).ok());
    if let Some(p) = plan.as_mut() {
        audit::redact_json(p);
    }
    let record = audit::Record {
        command: command.to_owned(),
        args: audit::redact_args(args),
        stage: ctx.stage.clone(),
        who,
        request_id,
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        result: kind,
        exit_code,
        plan,
        outcome,
    };
    let mut lines = record.line() + "\n";
    if ctx.has_mongo() {
        let stored = match ctx.mongo().await {
            Ok(m) => audit::write(&m.db, &record).await,
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = stored {
            lines.push_str(&format!(
                "warning: the audit record was NOT stored in MongoDB ({}): keep the line above\n",
                e
            ));
        }
    }
    lines
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

    #[test]
    fn a_plan_waiting_for_yes_is_not_printed_as_an_error() {
        let ctx = Context::default();
        let plan = confirm::Plan::new(&ctx, "publish interview.completed", "https://sqs.eu-west-1.amazonaws.com/1/q");
        let rendered = render(&Err(OpsError::ConfirmationRequired(Box::new(plan))), false);
        assert!(rendered.stderr.starts_with("publish interview.completed"), "{}", rendered.stderr);
        assert!(!rendered.stderr.contains("error:"), "{}", rendered.stderr);
        assert_eq!(rendered.exit_code, EXIT_ERROR);
    }

    #[test]
    fn without_user_the_operator_is_the_uid_marked_self_declared() {
        let declared = audit::Identity::declared(None);
        if std::env::var("USER").is_ok_and(|u| !u.trim().is_empty()) {
            assert_eq!(declared.source, "USER");
        } else {
            assert!(declared.who.starts_with("uid-") && declared.who != "uid-unknown", "{declared:?}");
        }
        assert!(declared.self_declared);
        let by = Context::default().acting_as(Some("alice".into())).operator("report-retry").by;
        assert_eq!(by, "alice (self-declared)");
    }
}
