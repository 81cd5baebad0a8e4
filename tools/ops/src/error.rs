//! Every way a command can fail, with a message an operator can act on.

use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::env::EnvError;

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Env(#[from] EnvError),
    /// A queue URL, database or other setting could not be found.
    #[error("{what} is not configured: {hint}")]
    NotConfigured { what: String, hint: String },
    #[error("SQS {action} on {queue} failed: {message}")]
    Sqs { action: &'static str, queue: String, code: Option<String>, message: String },
    #[error(transparent)]
    Publish(Box<sophia_sqs_producer::PublishError>),
    #[error(transparent)]
    Mongo(Box<sophia_platform::mongo::MongoError>),
    /// MongoDB refused the credentials of `MONGODB_URI` (`errorKind` `credentials_refused`): a
    /// rotated secret, an old value in the operator's environment (docs/secrets.md).
    #[error(
        "MongoDB refused the credentials of MONGODB_URI (credentials_refused): the secret was probably rotated. \
         Take its current version: aws secretsmanager get-secret-value --secret-id sophia/<stage>/mongodb-uri \
         --query SecretString --output text"
    )]
    CredentialsRefused,
    #[error("{0}")]
    NotFound(String),
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The command exists but the library it needs does not provide the operation yet.
    #[error("`{command}` is not yet available: {reason}")]
    Unavailable { command: &'static str, reason: String },
    /// A domain library (credits, reports) returned an error.
    #[error("{context}: {message}")]
    Domain { context: &'static str, message: String },
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
    /// A command that changes something, refused before it did anything: its audit record could
    /// not be written where the operator cannot change it, or its identity could be forged.
    #[error("refused, nothing was done: {0}")]
    AuditRefused(String),
    /// A command that moves money, against a queue that is not local, without `--yes`.
    #[error(
        "{}not sent: {} is not a local queue. Check the state above, then re-run with --yes to confirm (or --dry-run to only print this)",
        .0.human(),
        .0.queue_url
    )]
    ConfirmationRequired(Box<crate::confirm::Plan>),
}

impl From<sophia_sqs_producer::PublishError> for OpsError {
    fn from(e: sophia_sqs_producer::PublishError) -> Self {
        Self::Publish(Box::new(e))
    }
}

impl From<sophia_platform::mongo::MongoError> for OpsError {
    fn from(e: sophia_platform::mongo::MongoError) -> Self {
        if sophia_platform::mongo::credentials_refused(&e) {
            return Self::CredentialsRefused;
        }
        Self::Mongo(Box::new(e))
    }
}

impl OpsError {
    /// An SQS call's error, keeping the service's error code (for fallback decisions) and the full
    /// chain of causes (the SDK's own `Display` is terse).
    pub fn sqs<E, R>(action: &'static str, queue: &str, e: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: std::fmt::Debug,
    {
        let code = e.code().map(str::to_owned);
        let detail = e.message().map(str::to_owned);
        let message = match (&code, detail) {
            (Some(code), Some(detail)) => format!("{code}: {detail}"),
            (Some(code), None) => code.clone(),
            _ => DisplayErrorContext(&e).to_string(),
        };
        Self::Sqs { action, queue: queue.to_owned(), code, message }
    }

    /// The SQS error code, if this is an SQS error that carried one.
    pub fn sqs_code(&self) -> Option<&str> {
        match self {
            Self::Sqs { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    pub fn domain(context: &'static str, e: impl std::fmt::Display) -> Self {
        Self::Domain { context, message: e.to_string() }
    }

    /// The error's kind, as `--json` prints it (`{"error": ..., "kind": ...}`) and the audit
    /// record stores it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Env(_) => "env-file",
            Self::NotConfigured { .. } => "not-configured",
            Self::Sqs { .. } | Self::Publish(_) => "sqs",
            Self::Mongo(_) => "mongodb",
            Self::CredentialsRefused => "credentials-refused",
            Self::NotFound(_) => "not-found",
            Self::Invalid(_) => "invalid-input",
            Self::Unavailable { .. } => "not-yet-available",
            Self::Domain { .. } => "domain",
            Self::Io(_) => "io",
            Self::AuditRefused(_) => "audit-refused",
            Self::ConfirmationRequired(_) => "confirmation-required",
        }
    }
}

#[cfg(test)]
mod tests {
    use sophia_platform::mongo::MongoError;

    use super::*;

    #[test]
    fn refused_mongodb_credentials_say_so_and_how_to_take_the_current_secret() {
        let reply = bson::doc! {"code": 18, "codeName": "AuthenticationFailed", "errmsg": "Authentication failed."};
        let command: mongodb::error::CommandError = bson::from_document(reply).unwrap();
        let refused = mongodb::error::Error::from(mongodb::error::ErrorKind::Command(command));
        let e = OpsError::from(MongoError::Unreachable(refused));
        assert!(matches!(e, OpsError::CredentialsRefused), "{e}");
        assert!(e.to_string().contains("credentials_refused") && e.to_string().contains("get-secret-value"), "{e}");
        let other = OpsError::from(MongoError::BadUri("x".into()));
        assert!(matches!(other, OpsError::Mongo(_)), "{other}");
    }
}
