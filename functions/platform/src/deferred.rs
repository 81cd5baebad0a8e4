//! What a function builds once per process: at init, or at the first invocation when a secret
//! cannot be read yet.
//!
//! Lambda starts the function's init as soon as the Parameters and Secrets extension has
//! registered, before the extension has finished its own init (the vault-lambda-extension
//! maintainers had this confirmed by AWS), and AWS's guides describe reading the extension from
//! the handler. So init tries, for a short budget ([`crate::secrets`]); when the extension has
//! not answered (`SecretError::Unavailable`), the clients are built at the first invocation
//! instead, where the extension serves. Any other error (no such secret, access denied, a bad
//! setting) still stops init at once, with its message, as it should.
//!
//! A build that fails at an invocation fails that invocation (the whole batch comes back, as when
//! MongoDB is down at batch start), and the next invocation tries again.

use std::future::Future;

use tokio::sync::OnceCell;

use crate::mongo::MongoError;
use crate::secrets::SecretError;

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
    /// Builds now; defers only when a secret could not be read yet.
    pub async fn at_init(build: F) -> Result<Self, BoxError> {
        let cell = OnceCell::new();
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
        let deferred = Deferred::at_init(|| async {
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
        let result = Deferred::at_init(|| async {
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
        let deferred = Deferred::at_init(|| async {
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
