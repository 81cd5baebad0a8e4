//! What a function builds once per process: at init when its secrets are plain variables, at the
//! first invocation when they come from Secrets Manager.
//!
//! The AWS Parameters and Secrets extension is reported to answer HTTP 400 "not ready to serve
//! traffic, please wait" to calls made during init (aws-sdk-rust#905,
//! Kralizek/AWSSecretsManagerConfigurationExtensions#87): Lambda starts the function's init as
//! soon as the extension has registered, before it serves (the vault-lambda-extension maintainers
//! had this confirmed by AWS, hashicorp/vault-lambda-extension#31), and AWS's guides read the
//! extension from the handler. Waiting for it at init cost 2.8 s of billed init per cold start
//! with a stand-in that behaves so. So a function whose secrets come from an ARN does not call
//! the extension at init at all: its clients are built at the first invocation, where the
//! extension serves, and init takes what it takes with plain variables (docs/secrets.md has the
//! figures, from `scripts/bench`). With plain variables (local runs) the clients are built at
//! init, as before.
//!
//! A build that fails at an invocation fails that invocation (the whole batch comes back, as when
//! MongoDB is down at batch start), and the next invocation tries again. One that fails at init
//! (a bad setting) stops init with its message.

use std::future::Future;

use tokio::sync::OnceCell;

use crate::mongo::MongoError;
use crate::secrets::{self, Secret, SecretError};

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Whether `error` (or one of its sources) says the secrets extension did not answer in time.
pub fn is_secret_unavailable(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        // `MongoError::Secret` is transparent (its `source` is the secret error's own source), so
        // it is looked into explicitly.
        let secret = e.downcast_ref::<SecretError>().or(match e.downcast_ref::<MongoError>() {
            Some(MongoError::Secret(inner)) => Some(inner),
            _ => None,
        });
        if let Some(SecretError::Unavailable { .. }) = secret {
            return true;
        }
        current = e.source();
    }
    false
}

/// A value built by `build`, at init when it can be, else at the first invocation.
pub struct Deferred<T, F> {
    cell: OnceCell<T>,
    build: F,
}

impl<T, F, Fut> Deferred<T, F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, BoxError>>,
{
    /// Builds now, unless one of the `needed` secrets is to be read through the extension (its ARN is set,
    /// its plain variable is not): then at the first invocation, without a call to the
    /// extension during init. Also defers when a build made now finds the extension not serving.
    pub async fn at_init(needed: &[Secret], build: F) -> Result<Self, BoxError> {
        let cell = OnceCell::new();
        let unread: Vec<&'static str> = needed.iter().filter(|s| secrets::unread(**s)).map(|s| s.arn_var()).collect();
        if !unread.is_empty() {
            tracing::info!(
                secrets = ?unread,
                "secrets come from Secrets Manager: read at the first invocation, where the extension serves; the clients are built then"
            );
            return Ok(Self { cell, build });
        }
        match build().await {
            Ok(value) => {
                let _ = cell.set(value);
            }
            Err(e) if is_secret_unavailable(e.as_ref()) => {
                tracing::warn!(
                    error = %e,
                    "the secrets extension did not answer during init; the clients are built at the first invocation"
                );
            }
            Err(e) => return Err(e),
        }
        Ok(Self { cell, build })
    }

    /// The value, built now if init could not.
    pub async fn get(&self) -> Result<&T, BoxError> {
        self.cell.get_or_try_init(|| (self.build)()).await
    }

    /// Whether the value exists already.
    pub fn is_built(&self) -> bool {
        self.cell.initialized()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn unavailable() -> BoxError {
        Box::new(SecretError::Unavailable {
            var: "MONGODB_URI",
            arn: "arn:aws:secretsmanager:eu-west-1:1:secret:x".into(),
            endpoint: "http://localhost:2773".into(),
            attempts: 3,
            waited_ms: 2000,
            last: "HTTP 400: the extension is not ready yet".into(),
        })
    }

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped: {0}")]
    struct Wrapper(#[source] SecretError);

    #[tokio::test]
    async fn an_unavailable_extension_defers_the_build_to_the_first_invocation() {
        let calls = AtomicUsize::new(0);
        let deferred = Deferred::at_init(&[], || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(unavailable()),
                n => Ok(n),
            }
        })
        .await
        .expect("init goes on");
        assert!(!deferred.is_built());
        assert_eq!(*deferred.get().await.unwrap(), 1, "built at the first invocation");
        assert_eq!(*deferred.get().await.unwrap(), 1, "once");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn any_other_error_stops_init() {
        let result = Deferred::at_init(&[], || async {
            Err::<(), BoxError>(Box::new(SecretError::Refused {
                var: "MONGODB_URI",
                arn: "arn".into(),
                status: 403,
                code: "AccessDeniedException".into(),
            }))
        })
        .await;
        assert!(result.is_err());
    }

    #[tokio::test]
    async fn a_failed_build_at_an_invocation_is_tried_again_at_the_next() {
        let calls = AtomicUsize::new(0);
        let deferred = Deferred::at_init(&[], || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(unavailable()),
                n => Ok(n),
            }
        })
        .await
        .unwrap();
        assert!(deferred.get().await.is_err(), "this invocation fails");
        assert_eq!(*deferred.get().await.unwrap(), 2, "the next one builds");
    }

    #[test]
    fn unavailable_is_found_through_sources_and_nothing_else_matches() {
        assert!(is_secret_unavailable(unavailable().as_ref()));
        let SecretError::Unavailable { .. } = *unavailable().downcast::<SecretError>().unwrap() else { unreachable!() };
        let wrapped = Wrapper(SecretError::Unavailable {
            var: "OPENAI_API_KEY",
            arn: "a".into(),
            endpoint: "e".into(),
            attempts: 1,
            waited_ms: 1,
            last: "l".into(),
        });
        assert!(is_secret_unavailable(&wrapped));
        let other = Wrapper(SecretError::Malformed { var: "MONGODB_URI", arn: "a".into(), problem: "empty" });
        assert!(!is_secret_unavailable(&other));
        // As `Mongo::from_env` returns it (a transparent variant).
        let mongo: BoxError = Box::new(MongoError::from(SecretError::Unavailable {
            var: "MONGODB_URI",
            arn: "a".into(),
            endpoint: "e".into(),
            attempts: 1,
            waited_ms: 1,
            last: "l".into(),
        }));
        assert!(is_secret_unavailable(mongo.as_ref()));
    }
}
