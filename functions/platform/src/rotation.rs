//! Clients whose credentials rotate: a call refused for its credentials re-reads the secret and,
//! when Secrets Manager has a new value, the client is rebuilt with it and the call tried once
//! more.
//!
//! A function reads each secret once per process ([`crate::secrets`]). After a rotation (a new
//! `AWSCURRENT` version, the old credential revoked) a warm sandbox would otherwise keep the
//! refused value until Lambda recycles it. [`Rotating`] holds the clients built from the secrets
//! and, on [`Rotating::renew`] (called by a handler whose call was refused: OpenAI's HTTP 401,
//! MongoDB's authentication failure, see [`crate::mongo::credentials_refused`]):
//!
//! - if another record already rebuilt the clients since this record took them, returns the new
//!   ones (no read);
//! - else, at most once per interval (`SECRETS_REFRESH_INTERVAL_MS`, default 30 s) per secret
//!   and per process, re-reads the secret ([`secrets::reread`]); a new value rebuilds the
//!   clients, which every later record uses;
//! - else (the same value: revoked with no replacement; or the interval not over) the record
//!   fails as it would have, and is retried by SQS into the DLQ.
//!
//! Concurrent records that hit the refusal together wait for the one re-read, so a burst of
//! refusals costs one `GetSecretValue`. Every outcome is logged with `errorKind
//! credentials_refused`, the variable and whether the value changed; never a value.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::Mutex;

use crate::config::{self, ConfigError};
use crate::secrets::{self, Secret};

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Milliseconds between two re-reads of one secret by one process (default 30 s).
pub const SECRETS_REFRESH_INTERVAL_MS: &str = crate::env::declared("SECRETS_REFRESH_INTERVAL_MS");
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// The `errorKind` of every log line about a refused credential.
pub const CREDENTIALS_REFUSED: &str = "credentials_refused";

/// The refresh interval from `SECRETS_REFRESH_INTERVAL_MS`.
pub fn interval_from_env() -> Result<Duration, ConfigError> {
    config::millis(SECRETS_REFRESH_INTERVAL_MS, DEFAULT_REFRESH_INTERVAL)
}

type Rebuild<T> =
    Box<dyn Fn(Arc<T>, Secret) -> Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>> + Send + Sync>;

/// What [`Rotating::renew`] did.
pub enum Renewed<T> {
    /// New clients, built from a new value (by this call or by a concurrent one): try again with
    /// them.
    Rebuilt(Arc<T>),
    /// Secrets Manager has the value that was refused (revoked with no new version yet).
    Unchanged,
    /// This secret was re-read less than an interval ago: not read again.
    Throttled,
    /// Nothing to re-read (a plain variable, or clients built without a way to rebuild them).
    NotRenewable,
    /// The re-read or the rebuild failed (logged).
    Failed,
}

impl<T> Renewed<T> {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Rebuilt(_) => "rebuilt",
            Self::Unchanged => "unchanged",
            Self::Throttled => "throttled",
            Self::NotRenewable => "not_renewable",
            Self::Failed => "failed",
        }
    }
}

/// Clients built from secrets, rebuilt when a refused secret has a new value.
pub struct Rotating<T> {
    current: RwLock<Arc<T>>,
    rebuild: Option<Rebuild<T>>,
    interval: Duration,
    /// One renewal at a time per secret (index: [`slot`]).
    renewing: [Mutex<()>; 2],
}

impl<T> std::fmt::Debug for Rotating<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rotating")
            .field("renewable", &self.rebuild.is_some())
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

fn slot(secret: Secret) -> usize {
    match secret {
        Secret::MongoDbUri => 0,
        Secret::OpenAiApiKey => 1,
    }
}

impl<T: Send + Sync + 'static> Rotating<T> {
    /// Clients that are never rebuilt (tests, tools given their clients).
    pub fn fixed(clients: T) -> Self {
        Self {
            current: RwLock::new(Arc::new(clients)),
            rebuild: None,
            interval: DEFAULT_REFRESH_INTERVAL,
            renewing: [Mutex::new(()), Mutex::new(())],
        }
    }

    /// Clients that `rebuild` builds anew (from what [`secrets::get`] returns, after a re-read
    /// changed it), given the clients in use and the secret that changed.
    pub fn renewable<F, Fut>(clients: T, interval: Duration, rebuild: F) -> Self
    where
        F: Fn(Arc<T>, Secret) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, BoxError>> + Send + 'static,
    {
        Self {
            rebuild: Some(Box::new(move |used, secret| -> Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>> {
                Box::pin(rebuild(used, secret))
            })),
            interval,
            ..Self::fixed(clients)
        }
    }

    /// The clients to use now.
    pub fn current(&self) -> Arc<T> {
        self.current.read().expect("clients lock").clone()
    }

    /// After `used` had a call refused for `secret`'s credentials: new clients to try again with,
    /// or why not (see the module docs).
    pub async fn renew(&self, secret: Secret, used: &Arc<T>) -> Renewed<T> {
        let Some(rebuild) = &self.rebuild else { return Renewed::NotRenewable };
        let variable = secret.var();
        // Concurrent refusals wait here for the one re-read, then find its clients.
        let _one_at_a_time = self.renewing[slot(secret)].lock().await;
        let now = self.current();
        if !Arc::ptr_eq(&now, used) {
            tracing::info!(
                errorKind = CREDENTIALS_REFUSED,
                variable,
                "credentials refused; the clients were rebuilt meanwhile with a new value: trying again with them"
            );
            return Renewed::Rebuilt(now);
        }
        match reread_logged(secret, self.interval).await {
            Reread::Changed => match rebuild(used.clone(), secret).await {
                Ok(clients) => {
                    let clients = Arc::new(clients);
                    *self.current.write().expect("clients lock") = clients.clone();
                    tracing::warn!(
                        errorKind = CREDENTIALS_REFUSED,
                        variable,
                        "credentials refused; the secret has a new value: clients rebuilt, trying again"
                    );
                    Renewed::Rebuilt(clients)
                }
                Err(e) => {
                    tracing::error!(errorKind = CREDENTIALS_REFUSED, variable, error = %e, "credentials refused; the secret has a new value but the clients could not be rebuilt with it");
                    Renewed::Failed
                }
            },
            Reread::Unchanged => Renewed::Unchanged,
            Reread::Throttled => Renewed::Throttled,
            Reread::NotFromSecretsManager => Renewed::NotRenewable,
            Reread::Failed => Renewed::Failed,
        }
    }
}

/// [`secrets::reread`], each outcome logged (`errorKind` `credentials_refused`, the variable,
/// never a value); a failed read is [`Reread::Failed`].
pub async fn reread_logged(secret: Secret, interval: Duration) -> Reread {
    let variable = secret.var();
    let interval_ms = interval.as_millis() as u64;
    match secrets::reread(secret, interval).await {
        Ok(secrets::Reread::Changed) => Reread::Changed,
        Ok(secrets::Reread::Unchanged) => {
            tracing::error!(
                errorKind = CREDENTIALS_REFUSED,
                variable,
                changed = false,
                intervalMs = interval_ms,
                "credentials refused and Secrets Manager has no new value (revoked without a replacement?): the call fails"
            );
            Reread::Unchanged
        }
        Ok(secrets::Reread::Throttled) => {
            tracing::warn!(
                errorKind = CREDENTIALS_REFUSED,
                variable,
                intervalMs = interval_ms,
                "credentials refused; the secret was read again less than an interval ago: not read again, the call fails"
            );
            Reread::Throttled
        }
        Ok(secrets::Reread::NotFromSecretsManager) => {
            tracing::error!(
                errorKind = CREDENTIALS_REFUSED,
                variable,
                "credentials refused; the value comes from a plain variable, which cannot change in a running process"
            );
            Reread::NotFromSecretsManager
        }
        Err(e) => {
            tracing::error!(errorKind = CREDENTIALS_REFUSED, variable, error = %e, "credentials refused; the secret could not be read again");
            Reread::Failed
        }
    }
}

/// What [`reread_logged`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reread {
    Changed,
    Unchanged,
    Throttled,
    NotFromSecretsManager,
    Failed,
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn fixed_clients_are_not_renewed_and_a_plain_variable_is_not_reread() {
        let fixed = Rotating::fixed(1);
        assert!(matches!(fixed.renew(Secret::MongoDbUri, &fixed.current()).await, Renewed::NotRenewable));

        // No ARN variable in this test process: the secret is not from Secrets Manager.
        assert!(std::env::var(secrets::OPENAI_API_KEY_SECRET_ARN).is_err());
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = builds.clone();
        let rotating = Rotating::renewable(1, Duration::from_secs(30), move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok(2) }
        });
        let used = rotating.current();
        assert!(matches!(rotating.renew(Secret::OpenAiApiKey, &used).await, Renewed::NotRenewable));
        assert_eq!(builds.load(Ordering::SeqCst), 0);
        assert_eq!(*rotating.current(), 1);
    }

    #[tokio::test]
    async fn clients_rebuilt_meanwhile_are_handed_over_without_a_read() {
        let rotating = Rotating::renewable(1, Duration::from_secs(30), |_, _| async { Ok(2) });
        let stale = rotating.current();
        *rotating.current.write().unwrap() = Arc::new(3);
        let Renewed::Rebuilt(now) = rotating.renew(Secret::MongoDbUri, &stale).await else { panic!("rebuilt") };
        assert_eq!(*now, 3);
    }
}
