//! What a command needs from its surroundings ([`Context`]): the environment (overlaid on an env
//! file), `--stage`, `--yes`, `--by`, the SQS and MongoDB clients (built on first use or injected
//! by tests), who acts, the request id of the command's messages, the plan shown and the notes
//! printed on stderr before the result.

use sophia_declarations::Queue;
use std::sync::{Mutex, OnceLock};

use sophia_platform::config;
use sophia_platform::mongo::{Mongo, MongoSettings};

use crate::audit_trail::{self, Identity};
use crate::confirm;
use crate::env::{self, Env};
use crate::queues::{QueueLocator, QueueName};
use crate::{Cli, OpsError, ProgressMode};

/// What a command needs from its surroundings. The clients are built on first use (a `publish`
/// never connects to MongoDB) or injected by tests.
#[derive(Debug, Default)]
pub struct Context {
    pub env: Env,
    pub stage: Option<String>,
    pub progress: ProgressMode,
    sqs: OnceLock<aws_sdk_sqs::Client>,
    mongo: OnceLock<Mongo>,
    /// Why MongoDB could not be reached, once it could not: later asks in the same command
    /// answer at once instead of waiting for the server selection again.
    mongo_failed: OnceLock<String>,
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
    /// The SSM Automation execution this command started (the pause switch), for the audit record:
    /// SSM keeps who ran it (`ExecutedBy`), which `audit list` reads back.
    automation_execution: Mutex<Option<String>>,
    /// Where this run's audit record goes, opened before a command that changes something runs
    /// (see [`audit_trail::open`]); the error is why the command was refused.
    audit_sink: tokio::sync::OnceCell<Result<audit_trail::Sink, String>>,
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

    /// `--by` (or `SOPHIA_OPERATOR`), as given.
    pub fn declared_name(&self) -> Option<String> {
        self.by.clone()
    }

    /// Who acts, through which command: the identity [`Context::identify`] found, else `--by`
    /// (or `SOPHIA_OPERATOR`), else the login name (`$USER`), else the uid.
    pub fn operator(&self, via: &str) -> sophia_reports::admin::Operator {
        let who = self.identity.get().cloned().unwrap_or_else(|| Identity::declared(self.by.as_deref()));
        let by = if who.self_declared { format!("{} (self-declared)", who.who) } else { who.who };
        sophia_reports::admin::Operator::new(by, via)
    }

    /// A next command as the operator types it: `sophia-ops`, this run's `--stage`, then `rest`.
    pub fn ops_command(&self, rest: &str) -> String {
        match &self.stage {
            Some(stage) => format!("sophia-ops --stage {stage} {rest}"),
            None => format!("sophia-ops {rest}"),
        }
    }

    /// Whether the command targets AWS rather than the local pipeline: the queue it resolves
    /// (from the environment or, with `--stage`, by name) is not a loopback URL. Nothing is asked
    /// of AWS (no STS, no instance metadata) when the queues are local.
    pub async fn targets_aws(&self) -> bool {
        if self.stage.is_none() && QueueName::all().all(|q| self.env.get(q.source_env()).is_none()) {
            return false;
        }
        match self.locator().await.source_url(QueueName::of(Queue::InterviewCompleted)).await {
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
            // AWS's own STS endpoint, whatever the environment or profile says (an overridden one
            // could answer any identity; a command that changes something is refused before it
            // gets here: `audit_trail::open`).
            let mut config = aws_sdk_sts::config::Builder::from(&self.aws_config().await);
            config.set_endpoint_url(None);
            let sts = aws_sdk_sts::Client::from_conf(config.build());
            match sts.get_caller_identity().send().await {
                Ok(out) => match out.arn {
                    Some(arn) => Identity { who: arn, source: "aws-sts", self_declared: false, stream_owner: None },
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

    /// This run's audit trail, opened once (before a command that changes something runs: a
    /// refusal there means the command must not run).
    pub async fn audit_sink(&self, command: &str) -> Result<audit_trail::Sink, OpsError> {
        self.audit_sink
            .get_or_init(|| async { audit_trail::open(self, command).await.map_err(|e| e.to_string()) })
            .await
            .clone()
            .map_err(OpsError::AuditRefused)
    }

    /// The request id of this command's messages, made once: `ops:<command>:<who>:<uuid>`.
    pub async fn request_id(&self, command: &str) -> String {
        if let Some(r) = self.request_id.lock().expect("lock").clone() {
            return r;
        }
        let who = self.identify().await.who;
        let id = audit_trail::request_id(command, &who);
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

    /// Keeps the id of the SSM Automation execution this command started, for the audit record.
    pub fn keep_automation_execution(&self, id: &str) {
        *self.automation_execution.lock().expect("lock") = Some(id.to_owned());
    }

    pub fn take_automation_execution(&self) -> Option<String> {
        self.automation_execution.lock().expect("lock").take()
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
        if let Some(e) = self.mongo_failed.get() {
            return Err(OpsError::Domain { context: "MongoDB (asked earlier in this command)", message: e.clone() });
        }
        let settings = self.mongo_settings()?;
        let connected = async {
            let mongo = Mongo::connect(&settings).await?;
            mongo.check_deployment().await?;
            Ok::<_, OpsError>(mongo)
        };
        match connected.await {
            Ok(mongo) => Ok(self.mongo.get_or_init(|| mongo).clone()),
            Err(e) => {
                let _ = self.mongo_failed.set(e.to_string());
                Err(e)
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_user_the_operator_is_the_uid_marked_self_declared() {
        let declared = audit_trail::Identity::declared(None);
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
