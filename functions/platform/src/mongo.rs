//! The MongoDB client, created once in `main` and reused by every invocation.
//!
//! The driver connects lazily; the consumers' per-batch setup calls [`Mongo::ping`], whose failure
//! fails the whole batch (so SQS retries it). At start-up [`Mongo::check_deployment`] refuses a
//! deployment that cannot run multi-document transactions (no replica set, not mongos), unless
//! `MONGODB_ALLOW_STANDALONE=true` says this is local use.
//!
//! Made for Lambda ([`PoolSettings`]): a sandbox is frozen between invocations and its pooled
//! sockets may be dead when it thaws (NAT and load balancers drop idle flows after a few
//! minutes). So idle connections are closed after `maxIdleTimeMS` (default 60 s), the pool is
//! small (`maxPoolSize`, default 4: a batch runs at most `RECORD_CONCURRENCY` records at once),
//! every write is acknowledged by a majority unless the URI says otherwise, and the per-batch
//! ping, which the driver never retries, is tried twice before the batch fails.

use std::time::Duration;

use bson::doc;
use mongodb::options::{Acknowledgment, ClientOptions};
use mongodb::{Client, Database};

use crate::config::{self, ConfigError};
use crate::secrets::{self, Secret, SecretError};

pub const MONGODB_MAX_POOL_SIZE: &str = crate::env::declared("MONGODB_MAX_POOL_SIZE");
pub const MONGODB_MAX_IDLE_TIME_MS: &str = crate::env::declared("MONGODB_MAX_IDLE_TIME_MS");
pub const DEFAULT_MAX_POOL_SIZE: u32 = 4;
/// Well below the idle timeouts of AWS NAT gateways (350 s) and typical freezes between batches.
pub const DEFAULT_MAX_IDLE_TIME: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum MongoError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("MONGODB_URI does not parse: {0}")]
    BadUri(String),
    /// TLS off or unverified outside local mode (`crate::uri_policy`); names the parameter, never the URI.
    #[error(transparent)]
    InsecureUri(#[from] crate::uri_policy::UriPolicyError),
    #[error("MongoDB is unreachable: {0}")]
    Unreachable(#[source] mongodb::error::Error),
    #[error(
        "MongoDB at {hosts} is a standalone server: settlement needs transactions (a replica set or mongos). Set MONGODB_ALLOW_STANDALONE=true only for local use"
    )]
    NoTransactions { hosts: String },
}

/// What the `hello` command said about the deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    ReplicaSet,
    Sharded,
    Standalone,
}

impl Topology {
    pub fn supports_transactions(self) -> bool {
        !matches!(self, Self::Standalone)
    }
}

/// Where and how to connect. `Debug` shows the URI's hosts only: the URI may hold a password.
#[derive(Clone)]
pub struct MongoSettings {
    pub uri: String,
    pub database: String,
    pub server_selection_timeout: Duration,
    pub allow_standalone: bool,
}

impl std::fmt::Debug for MongoSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MongoSettings")
            .field("uri", &format_args!("<redacted; hosts {}>", uri_hosts(&self.uri)))
            .field("database", &self.database)
            .field("server_selection_timeout", &self.server_selection_timeout)
            .field("allow_standalone", &self.allow_standalone)
            .finish()
    }
}

/// The host list of a connection string, without scheme, credentials, path or options.
fn uri_hosts(uri: &str) -> &str {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or("")
}

/// The connection pool and write concern of a client made for Lambda (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    pub max_pool_size: u32,
    pub max_idle_time: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self { max_pool_size: DEFAULT_MAX_POOL_SIZE, max_idle_time: DEFAULT_MAX_IDLE_TIME }
    }
}

impl PoolSettings {
    /// From `MONGODB_MAX_POOL_SIZE` (a whole number of at least 1) and `MONGODB_MAX_IDLE_TIME_MS`.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(config::optional)
    }

    pub fn from_lookup(var: impl Fn(&'static str) -> Option<String>) -> Result<Self, ConfigError> {
        let pool = config::positive(
            MONGODB_MAX_POOL_SIZE,
            var(MONGODB_MAX_POOL_SIZE).as_deref(),
            DEFAULT_MAX_POOL_SIZE as usize,
        )?;
        let max_pool_size = u32::try_from(pool).map_err(|_| ConfigError::Invalid {
            name: MONGODB_MAX_POOL_SIZE,
            reason: format!("at most {}, got {pool}", u32::MAX),
        })?;
        let max_idle_time = match var(MONGODB_MAX_IDLE_TIME_MS) {
            None => DEFAULT_MAX_IDLE_TIME,
            Some(ms) => match ms.parse::<u64>() {
                Ok(0) | Err(_) => {
                    return Err(ConfigError::Invalid {
                        name: MONGODB_MAX_IDLE_TIME_MS,
                        reason: format!("expected milliseconds of at least 1, got {ms:?}"),
                    });
                }
                Ok(ms) => Duration::from_millis(ms),
            },
        };
        Ok(Self { max_pool_size, max_idle_time })
    }

    /// Applies the pool settings, and majority writes unless the URI set a write concern.
    pub fn apply(&self, options: &mut ClientOptions) {
        options.max_pool_size = Some(self.max_pool_size);
        options.max_idle_time = Some(self.max_idle_time);
        let mut write_concern = options.write_concern.take().unwrap_or_default();
        write_concern.w.get_or_insert(Acknowledgment::Majority);
        options.write_concern = Some(write_concern);
    }
}

impl MongoSettings {
    /// From `MONGODB_URI` (or what [`secrets::load`] read from `MONGODB_URI_SECRET_ARN`),
    /// `MONGODB_DATABASE` (default `sophia`), `MONGODB_ALLOW_STANDALONE`,
    /// and `MONGODB_SERVER_SELECTION_TIMEOUT_MS` (default 5 s: well inside the function timeout,
    /// where the driver's own default is 30 s).
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            uri: secrets::required(Secret::MongoDbUri)?.into_inner(),
            database: config::optional(config::MONGODB_DATABASE).unwrap_or_else(|| config::DEFAULT_DATABASE.to_owned()),
            server_selection_timeout: config::millis(
                config::MONGODB_SERVER_SELECTION_TIMEOUT_MS,
                Duration::from_secs(5),
            )?,
            allow_standalone: config::flag(config::MONGODB_ALLOW_STANDALONE, false)?,
        })
    }
}

/// One client and its database handle.
#[derive(Debug, Clone)]
pub struct Mongo {
    pub client: Client,
    pub db: Database,
    hosts: String,
    allow_standalone: bool,
}

impl Mongo {
    /// Builds the client (no I/O beyond DNS for SRV URIs). The URI, which may hold a password,
    /// is never logged; only its hosts are.
    pub async fn connect(settings: &MongoSettings) -> Result<Self, MongoError> {
        Self::connect_with(settings, &PoolSettings::default()).await
    }

    /// As [`connect`](Self::connect), with these pool settings.
    pub async fn connect_with(settings: &MongoSettings, pool: &PoolSettings) -> Result<Self, MongoError> {
        let mut options = client_options(&settings.uri).await?;
        pool.apply(&mut options);
        options.server_selection_timeout = Some(settings.server_selection_timeout);
        options.connect_timeout.get_or_insert(settings.server_selection_timeout);
        options.app_name.get_or_insert_with(|| "sophia".to_owned());
        let hosts = options.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(",");
        let client = Client::with_options(options).map_err(|e| MongoError::BadUri(redacted(&e)))?;
        let db = client.database(&settings.database);
        Ok(Self { client, db, hosts, allow_standalone: settings.allow_standalone })
    }

    /// From the environment, in one call: the URI (plain, or read once through the secrets
    /// extension), settings, pool settings, client, deployment check.
    ///
    /// A URI whose credentials MongoDB refuses (rotated since it was read) is read again, at most
    /// once per `SECRETS_REFRESH_INTERVAL_MS` ([`crate::rotation`]); a new value is connected
    /// with at once.
    pub async fn from_env() -> Result<Self, MongoError> {
        secrets::load(Secret::MongoDbUri).await?;
        match Self::from_current_env().await {
            Err(e) if credentials_refused(&e) => {
                let interval = crate::rotation::interval_from_env()?;
                match crate::rotation::reread_logged(Secret::MongoDbUri, interval).await {
                    crate::rotation::Reread::Changed => Self::from_current_env().await,
                    _ => Err(e),
                }
            }
            result => result,
        }
    }

    async fn from_current_env() -> Result<Self, MongoError> {
        let mongo = Self::connect_with(&MongoSettings::from_env()?, &PoolSettings::from_env()?).await?;
        mongo.check_deployment().await?;
        Ok(mongo)
    }

    /// The per-batch setup step: a round trip that proves the server answers. The driver never
    /// retries a command like `ping`, and the first use of a socket pooled before a sandbox
    /// froze can fail; that failure clears the pool, so one more try on a fresh connection
    /// tells a dead socket from a dead server.
    pub async fn ping(&self) -> Result<(), MongoError> {
        match self.ping_once().await {
            Ok(()) => Ok(()),
            Err(first) => {
                tracing::warn!(hosts = %self.hosts, error = %first, "MongoDB ping failed; trying once more on a fresh connection");
                self.ping_once().await.map_err(MongoError::Unreachable)
            }
        }
    }

    async fn ping_once(&self) -> Result<(), mongodb::error::Error> {
        self.db.run_command(doc! {"ping": 1}).await.map(|_| ())
    }

    /// Asks `hello` what the deployment is.
    pub async fn topology(&self) -> Result<Topology, MongoError> {
        let hello = self.db.run_command(doc! {"hello": 1}).await.map_err(MongoError::Unreachable)?;
        Ok(if hello.get_str("msg").is_ok_and(|m| m == "isdbgrid") {
            Topology::Sharded
        } else if hello.get_str("setName").is_ok() {
            Topology::ReplicaSet
        } else {
            Topology::Standalone
        })
    }

    /// Refuses a deployment without transactions unless standalone was explicitly allowed.
    pub async fn check_deployment(&self) -> Result<Topology, MongoError> {
        let topology = self.topology().await?;
        if !topology.supports_transactions() {
            if !self.allow_standalone {
                return Err(MongoError::NoTransactions { hosts: self.hosts.clone() });
            }
            tracing::warn!(hosts = %self.hosts, "MongoDB is standalone: transactions are not isolated (allowed by MONGODB_ALLOW_STANDALONE for local use)");
        }
        Ok(topology)
    }

    pub fn hosts(&self) -> &str {
        &self.hosts
    }
}

/// MongoDB's `AuthenticationFailed` server error code.
pub const AUTHENTICATION_FAILED: i32 = 18;

/// Whether the driver's error says the server refused the connection's credentials: the
/// driver's authentication error (SCRAM and the other mechanisms report a server's
/// `AuthenticationFailed` as `ErrorKind::Authentication`, with the server's error as its
/// source), or a command failing with code 18 itself; looked for through the error's sources.
pub fn is_auth_failure(e: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    let mut current = Some(e);
    while let Some(e) = current {
        match e.kind.as_ref() {
            ErrorKind::Authentication { .. } => return true,
            ErrorKind::Command(c) if c.code == AUTHENTICATION_FAILED => return true,
            _ => {}
        }
        current = std::error::Error::source(e).and_then(|s| s.downcast_ref::<mongodb::error::Error>());
    }
    false
}

/// Whether `error`, or one of its sources, is MongoDB refusing the credentials
/// ([`is_auth_failure`]): the test a handler makes before [`crate::rotation::Rotating::renew`].
pub fn credentials_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(m) = e.downcast_ref::<mongodb::error::Error>()
            && is_auth_failure(m)
        {
            return true;
        }
        if let Some(MongoError::Unreachable(m)) = e.downcast_ref::<MongoError>()
            && is_auth_failure(m)
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// Parses a connection string after its TLS policy check ([`crate::uri_policy::enforce`]);
/// errors never echo it.
pub async fn client_options(uri: &str) -> Result<ClientOptions, MongoError> {
    crate::uri_policy::enforce(uri)?;
    ClientOptions::parse(uri).await.map_err(|e| {
        let mut reason = redacted(&e);
        if reason.contains("MONGODB-AWS") {
            reason.push_str(" (build the functions with `--features aws-iam-auth`)");
        }
        MongoError::BadUri(reason)
    })
}

/// Driver errors about a URI can echo it; keep only the error kind's first clause.
fn redacted(e: &mongodb::error::Error) -> String {
    let text = e.to_string();
    if text.contains('@') {
        "invalid connection string (details withheld: it contains credentials)".to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use mongodb::options::AuthMechanism;

    use super::*;

    fn pool(vars: &[(&'static str, &str)]) -> Result<PoolSettings, ConfigError> {
        let vars: HashMap<&'static str, String> = vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        PoolSettings::from_lookup(|name| vars.get(name).cloned())
    }

    async fn options(uri: &str, p: PoolSettings) -> ClientOptions {
        let mut o = client_options(uri).await.unwrap();
        p.apply(&mut o);
        o
    }

    #[tokio::test]
    async fn the_client_is_made_for_lambda_by_default_and_from_the_environment() {
        let o = options("mongodb://127.0.0.1:27017/", pool(&[]).unwrap()).await;
        assert_eq!(o.max_pool_size, Some(4));
        assert_eq!(o.max_idle_time, Some(Duration::from_secs(60)));
        assert_eq!(o.write_concern.and_then(|w| w.w), Some(Acknowledgment::Majority));

        let p = pool(&[(MONGODB_MAX_POOL_SIZE, "2"), (MONGODB_MAX_IDLE_TIME_MS, "15000")]).unwrap();
        let o = options("mongodb://127.0.0.1:27017/?journal=true", p).await;
        assert_eq!(o.max_pool_size, Some(2));
        assert_eq!(o.max_idle_time, Some(Duration::from_secs(15)));
        let w = o.write_concern.unwrap();
        assert_eq!((w.w, w.journal), (Some(Acknowledgment::Majority), Some(true)), "the URI's journal is kept");
    }

    #[tokio::test]
    async fn a_write_concern_in_the_uri_is_respected() {
        let o = options("mongodb://127.0.0.1:27017/?w=2", PoolSettings::default()).await;
        assert_eq!(o.write_concern.and_then(|w| w.w), Some(Acknowledgment::Nodes(2)));
    }

    #[test]
    fn bad_pool_settings_are_refused_naming_the_variable() {
        for (name, value) in [
            (MONGODB_MAX_POOL_SIZE, "0"),
            (MONGODB_MAX_POOL_SIZE, "many"),
            (MONGODB_MAX_IDLE_TIME_MS, "0"),
            (MONGODB_MAX_IDLE_TIME_MS, "1m"),
        ] {
            let err = pool(&[(name, value)]).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn settings_debug_shows_hosts_and_never_the_password() {
        let s = MongoSettings {
            uri: "mongodb+srv://sophia:hunter2@cluster0.example.mongodb.net/sophia?authSource=admin".into(),
            database: "sophia".into(),
            server_selection_timeout: Duration::from_secs(5),
            allow_standalone: false,
        };
        let text = format!("{s:?}");
        assert!(!text.contains("hunter2") && !text.contains("sophia:"), "{text}");
        assert!(text.contains("cluster0.example.mongodb.net"), "{text}");
    }

    /// Atlas AWS IAM authentication (the stack's `aws-iam` option): no password in the URI; the
    /// driver signs with the function role's credentials (its `aws-auth` feature).
    #[tokio::test]
    async fn an_aws_iam_uri_parses() {
        let uri = "mongodb+srv://cluster0.example.mongodb.net/?authSource=%24external&authMechanism=MONGODB-AWS";
        // SRV needs DNS; the same options on a plain host list.
        let plain = "mongodb://cluster0-shard-00-00.example.mongodb.net:27017/?authSource=%24external&authMechanism=MONGODB-AWS&tls=true";
        let o = client_options(plain).await.expect("MONGODB-AWS parses (mongodb's aws-auth feature)");
        let credential = o.credential.expect("a credential");
        assert_eq!(credential.mechanism, Some(AuthMechanism::MongoDbAws));
        assert_eq!(credential.source.as_deref(), Some("$external"));
        assert!(credential.password.is_none());
        assert!(uri.contains("MONGODB-AWS"));
    }

    fn command_error(code: i32, name: &str) -> mongodb::error::Error {
        // `CommandError` is non-exhaustive: built as the driver builds it, from the server's reply.
        let reply = doc! {"code": code, "codeName": name, "errmsg": "as the server says"};
        let command: mongodb::error::CommandError = bson::from_document(reply).unwrap();
        mongodb::error::Error::from(mongodb::error::ErrorKind::Command(command))
    }

    #[test]
    fn code_18_is_refused_credentials_and_other_server_errors_are_not() {
        let refused = command_error(18, "AuthenticationFailed");
        assert!(is_auth_failure(&refused));
        assert!(credentials_refused(&refused));
        assert!(credentials_refused(&MongoError::Unreachable(refused.clone())));
        #[derive(Debug, thiserror::Error)]
        #[error("MongoDB settle failed: {source}")]
        struct Wrapped {
            source: mongodb::error::Error,
        }
        assert!(credentials_refused(&Wrapped { source: refused }), "found through sources");

        for (code, name) in [(13, "Unauthorized"), (11000, "DuplicateKey"), (112, "WriteConflict")] {
            let e = command_error(code, name);
            assert!(!is_auth_failure(&e) && !credentials_refused(&e), "{code} {name}");
        }
        let io = mongodb::error::Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(!is_auth_failure(&io));
        assert!(!credentials_refused(&MongoError::BadUri("x".into())));
    }

    #[test]
    fn hosts_are_cut_out_of_any_uri_shape() {
        assert_eq!(uri_hosts("mongodb://u:p@a:1,b:2/db?x=1"), "a:1,b:2");
        assert_eq!(uri_hosts("mongodb+srv://c.example.net/?w=1"), "c.example.net");
        assert_eq!(uri_hosts("mongodb://p@ss@h/"), "h");
    }
}
