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
pub use error::OpsError;
pub use progress::ProgressMode;

use sophia_contracts::{InterviewId, RequestId};

use crate::audit::Identity;
use crate::cli::{
    AuditCommand, Command, DlqCommand, InterviewCommand, InvariantsCommand, OutboxCommand, PublishCommand,
    QueueCommand, ReportCommand,
};
use crate::confirm::{Gate, Plan};
use crate::env::Env;
use crate::publish::PublishRequest;
use crate::queues::QueueLocator;
use crate::queues::QueueName;
use crate::redrive::{RedriveOptions, ResetReports, SqsMoveIo};

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
        match self.locator().await.source_url(QueueName::of(sophia_declarations::Queue::InterviewCompleted)).await {
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

/// Runs one parsed command.
pub async fn execute(command: &Command, ctx: &Context) -> Result<Outcome, OpsError> {
    match command {
        Command::Publish(p) => {
            let name = mutating_name(command).unwrap_or("publish");
            let ops_id = ctx.request_id(name).await;
            let (request, dry_run) = match p {
                PublishCommand::Completed { ids, completed_at, duration_seconds, request_id, dry_run } => (
                    PublishRequest::completed(
                        ids.interview_id,
                        ids.organization_id,
                        *completed_at,
                        Some(*duration_seconds),
                        Some(request_id.as_deref().unwrap_or(&ops_id)),
                    ),
                    *dry_run,
                ),
                PublishCommand::Failed { ids, reason, failed_at, request_id, dry_run } => (
                    PublishRequest::failed(
                        ids.interview_id,
                        ids.organization_id,
                        reason.clone(),
                        *failed_at,
                        Some(request_id.as_deref().unwrap_or(&ops_id)),
                    ),
                    *dry_run,
                ),
                PublishCommand::Report { ids, request_id, dry_run } => (
                    PublishRequest::report(
                        ids.interview_id,
                        ids.organization_id,
                        sophia_contracts::RequestId::from_caller(Some(request_id.as_deref().unwrap_or(&ops_id))),
                    ),
                    *dry_run,
                ),
            };
            let locator = ctx.locator().await;
            let mut plan = request.plan(ctx, locator.source_url(request.queue()).await?);
            if let Some(mongo) = ctx.mongo_for_plan().await {
                let fate = predict::message(Some(&mongo), request.queue(), &request.body(), false).await;
                plan.effects = vec![format!("the consumer, from the state now: {}", fate.text)];
            } else {
                plan.effects.push("(what the consumer will do is not predicted: MONGODB_URI is not set)".into());
            }
            let interview = request.interview_id();
            if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[interview], dry_run).await? {
                return Ok(Outcome::DryRun(plan));
            }
            Ok(Outcome::Publish(publish::publish(&locator, request).await?))
        }
        Command::Dlq(DlqCommand::List { queue, max, show_body }) => {
            Ok(Outcome::DlqList(dlq::list_with(&ctx.locator().await, *queue, *max, ctx.progress, *show_body).await?))
        }
        Command::Dlq(DlqCommand::Show { queue, message_id, show_body }) => {
            let mut shown = dlq::show_with(&ctx.locator().await, *queue, message_id, ctx.progress, *show_body).await?;
            dlq::attach_report(&mut shown, ctx).await;
            Ok(Outcome::DlqShow(shown))
        }
        Command::Dlq(DlqCommand::Redrive { queue, max, dry_run, method, visibility_timeout, keep_attempts }) => {
            let locator = ctx.locator().await;
            let reset = queue.is(sophia_declarations::Queue::ReportGenerate) && !keep_attempts;
            if reset && *method == redrive::RedriveMethod::MoveTask {
                return Err(OpsError::Invalid(format!(
                    "StartMessageMoveTask moves every message server-side, so a {queue} redrive cannot reset each report just before its message moves; use --method auto, or --keep-attempts to move without resets"
                )));
            }
            let plan = redrive_plan(ctx, &locator, *queue, *max, reset).await?;
            let ids: Vec<InterviewId> = plan.1.clone();
            let plan = if *dry_run {
                match confirm::gate(ctx, plan.0, &ids, true).await? {
                    Gate::DryRun(plan) => Some(plan),
                    Gate::Proceed => None,
                }
            } else {
                confirm::gate(ctx, plan.0, &ids, false).await?;
                None
            };
            let options = RedriveOptions {
                max: *max,
                dry_run: *dry_run,
                method: *method,
                visibility: *visibility_timeout,
                progress: ctx.progress,
                ops_request_id: Some(ctx.request_id("dlq-redrive").await),
            };
            let io = SqsMoveIo(locator.client().clone());
            let mut report = if reset && *dry_run {
                redrive::redrive_prepared(&locator, *queue, &options, &io, &redrive::ResetPreview).await?
            } else if reset {
                let db = ctx.mongo().await.map_err(|e| match e {
                    OpsError::NotConfigured { .. } => OpsError::NotConfigured {
                        what: "MongoDB".into(),
                        hint: format!("a {queue} redrive resets each report's attempts before its message moves: set MONGODB_URI (or pass --keep-attempts to move the messages without resets)"),
                    },
                    other => other,
                })?.db;
                let prepare = ResetReports { db, operator: ctx.operator("dlq-redrive") };
                redrive::redrive_prepared(&locator, *queue, &options, &io, &prepare).await?
            } else {
                redrive::redrive_with(&locator, *queue, &options, &io).await?
            };
            report.plan = plan;
            Ok(Outcome::DlqRedrive(report))
        }
        Command::Dlq(DlqCommand::Delete { queue, message_id, dry_run }) => {
            let locator = ctx.locator().await;
            let shown = dlq::show(&locator, *queue, message_id, ProgressMode::Hidden).await?;
            let mut plan =
                Plan::new(ctx, format!("delete message {message_id} from the {queue} DLQ"), shown.dlq_url.clone());
            plan.effects.push(format!(
                "the message is gone for good: it will not be processed (redacted body: {})",
                shown.message.body
            ));
            if let Some(e) = &shown.message.contract_error {
                plan.effects.push(format!("its body breaks the contract: {e}"));
            } else if let Some(mongo) = ctx.mongo_for_plan().await {
                let fate = predict::message(Some(&mongo), *queue, &shown.message.body, false).await;
                plan.effects.push(format!("redriven instead, the consumer would, from the state now: {}", fate.text));
            }
            let ids: Vec<InterviewId> = shown.message.interview_id.iter().filter_map(|i| i.parse().ok()).collect();
            if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &ids, *dry_run).await? {
                return Ok(Outcome::DryRun(plan));
            }
            Ok(Outcome::DlqDelete(dlq::delete(&locator, *queue, message_id, ctx.progress).await?))
        }
        Command::Interview(InterviewCommand::Show { interview_id, dlq_scan, no_receive }) => {
            let scan = if *no_receive { 0 } else { *dlq_scan };
            Ok(Outcome::InterviewShow(Box::new(interview::show(ctx, *interview_id, scan).await?)))
        }
        Command::Queue(QueueCommand::Move { from_url, to, into_dlq, max, dry_run, visibility_timeout }) => {
            let locator = ctx.locator().await;
            let destination = if *into_dlq { locator.dlq_url(*to).await? } else { locator.source_url(*to).await? };
            let what = if *into_dlq { format!("the {to} DLQ") } else { format!("the {to} queue") };
            let mut plan = Plan::new(ctx, format!("move every message of {from_url} into {what}"), destination.clone());
            // The source counts too: an old stack's queue is not local either.
            plan.local = plan.local && ctx.is_local(from_url);
            let peeked = dlq::list_from(&locator, from_url, *to, 10).await?;
            plan.effects.push(format!(
                "about {} message(s) in {from_url}{}; each body is checked against the {to} contract, an invalid one stays there",
                peeked.approximate_visible.map_or("?".into(), |n| n.to_string()),
                max.map_or(String::new(), |m| format!(" (at most {m} moved)"))
            ));
            let mongo = ctx.mongo_for_plan().await;
            for m in &peeked.messages {
                let line = match &m.contract_error {
                    Some(e) => format!("INVALID, stays in place ({e})"),
                    None if mongo.is_some() => {
                        let reset = *into_dlq && to.is(sophia_declarations::Queue::ReportGenerate);
                        let fate = predict::message(mongo.as_ref(), *to, &m.body, reset).await;
                        format!(
                            "valid; interview {}: {}{}",
                            m.interview_id.as_deref().unwrap_or("-"),
                            if *into_dlq { "once redriven (with the reset), " } else { "" },
                            fate.text
                        )
                    }
                    None => "valid".to_owned(),
                };
                plan.effects.push(format!("sample {}: {line}", m.message_id));
            }
            let ids: Vec<InterviewId> =
                peeked.messages.iter().filter_map(|m| m.interview_id.as_deref()?.parse().ok()).collect();
            let plan = match confirm::gate(ctx, plan, &ids, *dry_run).await? {
                Gate::DryRun(plan) => Some(plan),
                Gate::Proceed => None,
            };
            let options = RedriveOptions {
                max: *max,
                dry_run: *dry_run,
                method: redrive::RedriveMethod::ReceiveSendDelete,
                visibility: *visibility_timeout,
                progress: ctx.progress,
                ops_request_id: Some(ctx.request_id("queue-move").await),
            };
            let io = SqsMoveIo(locator.client().clone());
            let mut report = redrive::queue_move_to(&locator, from_url, *to, &destination, &options, &io).await?;
            report.plan = plan;
            Ok(Outcome::QueueMove(report))
        }
        Command::Outbox(OutboxCommand::Flush { older_than, limit }) => {
            let url = ctx.locator().await.source_url(QueueName::of(sophia_declarations::Queue::ReportGenerate)).await?;
            let mut plan = Plan::new(ctx, "publish pending report.generate outbox entries", url);
            plan.effects.push(format!("entries created more than {}s ago, at most {limit}", older_than.as_secs()));
            let ids = match ctx.mongo_for_plan().await {
                Some(mongo) => admin::outbox_plan(&mongo, *older_than, *limit, &mut plan).await?,
                None => Vec::new(),
            };
            confirm::gate(ctx, plan, &ids, false).await?;
            Ok(Outcome::OutboxFlush(admin::outbox_flush(ctx, *older_than, *limit).await?))
        }
        Command::Report(ReportCommand::Retry { ids, reset_attempts, dry_run }) => {
            let ops_id = ctx.request_id("report-retry").await;
            let request =
                PublishRequest::report(ids.interview_id, ids.organization_id, RequestId::from_caller(Some(&ops_id)));
            let mut plan = request.plan(
                ctx,
                ctx.locator().await.source_url(QueueName::of(sophia_declarations::Queue::ReportGenerate)).await?,
            );
            plan.action = "re-publish report.generate (report retry)".into();
            plan.effects.clear();
            let fate = match ctx.mongo_for_plan().await {
                Some(mongo) => Some(predict::report(&mongo.db, request_message(ids), *reset_attempts).await),
                None => None,
            };
            match &fate {
                Some(f) if f.outcome == "already-completed" => {
                    plan.effects.push("report COMPLETED: nothing to do (nothing is reset, nothing is published)".into())
                }
                Some(f) if f.outcome == "dropped" => plan
                    .effects
                    .push(format!("publishes report.generate; the consumer, from the state now: {}", f.text)),
                Some(f) => {
                    if *reset_attempts && f.text.starts_with("attempts reset") {
                        plan.effects.push(format!(
                            "resets the report's attemptCount to 0 first (recorded on the report: lastRetry, by {})",
                            ctx.operator("report-retry").by
                        ));
                    }
                    plan.effects
                        .push(format!("publishes report.generate; the consumer, from the state now: {}", f.text));
                }
                None => {
                    if *reset_attempts {
                        plan.effects.push(format!(
                            "resets a FAILED report's attemptCount to 0 first (recorded on the report: lastRetry, by {})",
                            ctx.operator("report-retry").by
                        ));
                    }
                    plan.effects.push("publishes report.generate (what the consumer will do is not predicted: MONGODB_URI is not set)".into());
                }
            }
            if let Gate::DryRun(plan) = confirm::gate(ctx, plan, &[ids.interview_id], *dry_run).await? {
                return Ok(Outcome::DryRun(plan));
            }
            Ok(Outcome::ReportRetry(
                admin::report_retry(ctx, ids.interview_id, ids.organization_id, *reset_attempts, &ops_id).await?,
            ))
        }
        Command::Invariants(InvariantsCommand::Check { org }) => {
            Ok(Outcome::InvariantsCheck(admin::invariants_check(ctx, *org).await?))
        }
        Command::Migrate => Ok(Outcome::Migrate(admin::migrate(ctx).await?)),
        Command::Queue(QueueCommand::Status { queue, window }) => {
            Ok(Outcome::QueueStatus(Box::new(status::queue_status(ctx, *queue, *window).await?)))
        }
        Command::Interview(InterviewCommand::Unsettled { org, older_than, limit }) => {
            Ok(Outcome::InterviewUnsettled(listing::unsettled(ctx, *org, *older_than, *limit).await?))
        }
        Command::Report(ReportCommand::Failures { since, limit }) => {
            Ok(Outcome::ReportFailures(listing::failures(ctx, *since, *limit).await?))
        }
        Command::Audit(AuditCommand::List { limit, command, since }) => {
            Ok(Outcome::AuditList(audit::list(ctx, *limit, command.as_deref(), *since).await?))
        }
    }
}

fn request_message(ids: &cli::Ids) -> sophia_contracts::ReportGenerate {
    sophia_contracts::ReportGenerate { interview_id: ids.interview_id, organization_id: ids.organization_id }
}

/// The audit name of a command that changes something (`None`: a read-only command).
pub fn mutating_name(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Publish(PublishCommand::Completed { .. }) => "publish-completed",
        Command::Publish(PublishCommand::Failed { .. }) => "publish-failed",
        Command::Publish(PublishCommand::Report { .. }) => "publish-report",
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

/// How many DLQ messages a redrive plan lists, at most.
pub const REDRIVE_PLAN_MESSAGES: usize = 50;

/// The plan of a redrive: what moves where and, per message (the first
/// [`REDRIVE_PLAN_MESSAGES`]), the state that decides what the consumer will do with it: for
/// report-generate the report's status, attempts and errorKind and whether it will be reset; for
/// interview-completed whether the interview is still unsettled. Also the interviews to show.
async fn redrive_plan(
    ctx: &Context,
    locator: &QueueLocator,
    queue: QueueName,
    max: Option<usize>,
    reset: bool,
) -> Result<(Plan, Vec<InterviewId>), OpsError> {
    let (source, dlq_url) = (locator.source_url(queue).await?, locator.dlq_url(queue).await?);
    let mut plan = Plan::new(ctx, format!("redrive the {queue} DLQ ({dlq_url})"), source);
    let peeked = dlq::list(locator, queue, REDRIVE_PLAN_MESSAGES, ProgressMode::Hidden).await?;
    plan.effects.push(format!(
        "about {} message(s) move back to the source queue{}",
        peeked.approximate_visible.map_or("?".into(), |n| n.to_string()),
        max.map_or(String::new(), |m| format!(" (at most {m})"))
    ));
    if queue.is(sophia_declarations::Queue::ReportGenerate) {
        plan.effects.push(if reset {
            "each FAILED (or stuck) report gets a fresh attempt budget just before its message moves, recorded on the report (lastRetry, retries); COMPLETED reports are not touched".into()
        } else {
            "--keep-attempts: reports keep their attempts; a report FAILED at its last attempt stays FAILED (its message is acknowledged without a model call)".into()
        });
    }
    let ids: Vec<InterviewId> =
        peeked.messages.iter().filter_map(|m| m.interview_id.as_deref()?.parse().ok()).collect();
    let mongo = ctx.mongo_for_plan().await;
    for m in &peeked.messages {
        let interview = m.interview_id.as_deref().unwrap_or("-");
        let fate = predict::message(mongo.as_ref(), queue, &m.body, reset).await;
        plan.effects.push(format!("message {}: interview {interview}: {}", m.message_id, fate.text));
    }
    if peeked.truncated {
        plan.effects.push(format!("(only the first {REDRIVE_PLAN_MESSAGES} messages are listed)"));
    }
    // The per-message lines say it all; the plan's interview lines would repeat them.
    Ok((plan, if ctx.has_mongo() || !confirm::is_local_url(&dlq_url) { ids } else { Vec::new() }))
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
