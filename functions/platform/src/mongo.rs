//! The MongoDB client, created once in `main` and reused by every invocation.
//!
//! The driver connects lazily; the consumers' per-batch setup calls [`Mongo::ping`], whose failure
//! fails the whole batch (so SQS retries it). At start-up [`Mongo::check_deployment`] refuses a
//! deployment that cannot run multi-document transactions (no replica set, not mongos), unless
//! `MONGODB_ALLOW_STANDALONE=true` says this is local use.

use std::time::Duration;

use bson::doc;
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

use crate::config::{self, ConfigError};

#[derive(Debug, thiserror::Error)]
pub enum MongoError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("MONGODB_URI does not parse: {0}")]
    BadUri(String),
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

#[derive(Debug, Clone)]
pub struct MongoSettings {
    pub uri: String,
    pub database: String,
    pub server_selection_timeout: Duration,
    pub allow_standalone: bool,
}

impl MongoSettings {
    /// From `MONGODB_URI`, `MONGODB_DATABASE` (default `sophia`), `MONGODB_ALLOW_STANDALONE`,
    /// and `MONGODB_SERVER_SELECTION_TIMEOUT_MS` (default 5 s: well inside the function timeout,
    /// where the driver's own default is 30 s).
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            uri: config::required(config::MONGODB_URI)?,
            database: config::optional(config::MONGODB_DATABASE).unwrap_or_else(|| config::DEFAULT_DATABASE.to_owned()),
            server_selection_timeout: config::millis("MONGODB_SERVER_SELECTION_TIMEOUT_MS", Duration::from_secs(5))?,
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
        let mut options = ClientOptions::parse(&settings.uri).await.map_err(|e| MongoError::BadUri(redacted(&e)))?;
        options.server_selection_timeout = Some(settings.server_selection_timeout);
        options.connect_timeout.get_or_insert(settings.server_selection_timeout);
        options.app_name.get_or_insert_with(|| "sophia".to_owned());
        let hosts = options.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(",");
        let client = Client::with_options(options).map_err(|e| MongoError::BadUri(redacted(&e)))?;
        let db = client.database(&settings.database);
        Ok(Self { client, db, hosts, allow_standalone: settings.allow_standalone })
    }

    /// From the environment, in one call: settings, client, deployment check.
    pub async fn from_env() -> Result<Self, MongoError> {
        let mongo = Self::connect(&MongoSettings::from_env()?).await?;
        mongo.check_deployment().await?;
        Ok(mongo)
    }

    /// The per-batch setup step: one round trip that proves the server answers.
    pub async fn ping(&self) -> Result<(), MongoError> {
        self.db.run_command(doc! {"ping": 1}).await.map(|_| ()).map_err(MongoError::Unreachable)
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

/// Driver errors about a URI can echo it; keep only the error kind's first clause.
fn redacted(e: &mongodb::error::Error) -> String {
    let text = e.to_string();
    if text.contains('@') {
        "invalid connection string (details withheld: it contains credentials)".to_owned()
    } else {
        text
    }
}
