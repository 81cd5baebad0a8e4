//! Running one MongoDB transaction with retries bounded by a deadline.
//!
//! The driver's `with_transaction` helper retries for up to 120 s, longer than the Lambda's 30 s.
//! Here the whole transaction is run again on `TransientTransactionError` (and on a
//! [`CreditsError::Conflict`] seen by a guarded write), and the commit alone is retried on
//! `UnknownTransactionCommitResult`, each time after an exponential backoff with jitter, and only
//! while the deadline leaves room for another attempt.

use std::time::Duration;

use mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT;
use mongodb::options::{ReadConcern, WriteConcern};
use mongodb::{Client, ClientSession};
use tokio::time::Instant;

use crate::error::CreditsError;

/// How a transaction body ends.
#[derive(Debug)]
pub enum Finish<T> {
    /// Commit what the body wrote.
    Commit(T),
    /// Abort: the body decided to write nothing (e.g. the claim found the interview settled).
    Abort(T),
}

/// The retry budget of one transaction.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// When the caller's time runs out (the record's deadline). `None`: `now + fallback_budget`.
    pub deadline: Option<Instant>,
    /// Used when no deadline is known (in-process calls, CLI tools).
    pub fallback_budget: Duration,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// No new attempt is started with less than this left before the deadline.
    pub attempt_margin: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            deadline: None,
            fallback_budget: Duration::from_secs(20),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(500),
            attempt_margin: Duration::from_millis(1500),
        }
    }
}

impl RetryPolicy {
    pub fn with_deadline(deadline: Option<Instant>) -> Self {
        Self { deadline, ..Self::default() }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.initial_backoff.saturating_mul(1u32 << attempt.min(16)).min(self.max_backoff);
        // Full jitter from the clock's nanoseconds: no random-number crate needed for this.
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let frac = f64::from(nanos % 1000) / 1000.0;
        exp.mul_f64(0.5 + frac / 2.0)
    }

    /// Sleeps the backoff if the deadline allows another attempt after it.
    async fn wait_for_another_attempt(&self, deadline: Instant, attempt: u32) -> bool {
        let pause = self.backoff(attempt);
        if Instant::now() + pause + self.attempt_margin >= deadline {
            return false;
        }
        tokio::time::sleep(pause).await;
        true
    }
}

/// Runs `body` in a transaction on a fresh session, retrying as the module docs say.
pub async fn run_transaction<T>(
    client: &Client,
    policy: &RetryPolicy,
    mut body: impl AsyncFnMut(&mut ClientSession) -> Result<Finish<T>, CreditsError>,
) -> Result<T, CreditsError> {
    let deadline = policy.deadline.unwrap_or_else(|| Instant::now() + policy.fallback_budget);
    let mut session = client.start_session().await.map_err(CreditsError::mongo("startSession"))?;
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let max_commit = deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(policy.attempt_margin / 2)
            .max(Duration::from_millis(500));
        session
            .start_transaction()
            .read_concern(ReadConcern::snapshot())
            .write_concern(WriteConcern::majority())
            .max_commit_time(max_commit)
            .await
            .map_err(CreditsError::mongo("startTransaction"))?;
        let finish = match body(&mut session).await {
            Ok(f) => f,
            Err(e) => {
                // Ignores server errors by design (the driver swallows abortTransaction failures).
                let _ = session.abort_transaction().await;
                if e.is_transient_transaction_error() {
                    tracing::warn!(attempt, error = %e, "transient transaction error; retrying the transaction");
                    if policy.wait_for_another_attempt(deadline, attempt).await {
                        continue;
                    }
                    return Err(CreditsError::RetryBudgetExhausted { attempts: attempt, last: Box::new(e) });
                }
                return Err(e);
            }
        };
        let value = match finish {
            Finish::Abort(v) => {
                let _ = session.abort_transaction().await;
                return Ok(v);
            }
            Finish::Commit(v) => v,
        };
        // Commit; retry the commit alone while its result is unknown.
        let mut commit_attempt: u32 = 0;
        loop {
            commit_attempt += 1;
            match session.commit_transaction().await {
                Ok(()) => {
                    if attempt > 1 || commit_attempt > 1 {
                        tracing::info!(attempt, commitAttempt = commit_attempt, "transaction committed after retries");
                    }
                    return Ok(value);
                }
                Err(source) if source.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) => {
                    tracing::warn!(attempt, commitAttempt = commit_attempt, error = %source, "commit result unknown; retrying the commit");
                    if !policy.wait_for_another_attempt(deadline, commit_attempt).await {
                        return Err(CreditsError::RetryBudgetExhausted {
                            attempts: attempt,
                            last: Box::new(CreditsError::Mongo { op: "commitTransaction", source }),
                        });
                    }
                }
                Err(source) => {
                    let e = CreditsError::Mongo { op: "commitTransaction", source };
                    if e.is_transient_transaction_error() {
                        tracing::warn!(attempt, error = %e, "transient error at commit; retrying the transaction");
                        if policy.wait_for_another_attempt(deadline, attempt).await {
                            break;
                        }
                        return Err(CreditsError::RetryBudgetExhausted { attempts: attempt, last: Box::new(e) });
                    }
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy::default();
        assert!(p.backoff(1) <= Duration::from_millis(20));
        assert!(p.backoff(1) >= Duration::from_millis(10));
        assert!(p.backoff(30) <= p.max_backoff);
        assert!(p.backoff(30) >= p.max_backoff / 2);
    }

    #[tokio::test]
    async fn no_attempt_is_started_too_close_to_the_deadline() {
        let p = RetryPolicy::with_deadline(Some(Instant::now() + Duration::from_millis(100)));
        let started = Instant::now();
        assert!(!p.wait_for_another_attempt(p.deadline.unwrap(), 1).await);
        assert!(started.elapsed() < Duration::from_millis(50), "it must not sleep when it will not retry");
        let p = RetryPolicy::with_deadline(Some(Instant::now() + Duration::from_secs(10)));
        assert!(p.wait_for_another_attempt(p.deadline.unwrap(), 1).await);
    }
}
