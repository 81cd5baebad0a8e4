//! Running one MongoDB transaction with retries bounded by a deadline.
//!
//! The driver's `with_transaction` helper retries for up to 120 s, longer than the Lambda's 30 s.
//! Here the whole transaction is run again on `TransientTransactionError` (and on a
//! [`CreditsError::Conflict`] seen by a guarded write), and the commit alone is retried on
//! `UnknownTransactionCommitResult`, each time after an exponential backoff with jitter, and only
//! while the deadline leaves room for another attempt.

use std::future::Future;
use std::time::Duration;

use mongodb::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
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

/// The seam between the retry policy and the driver: start, commit and abort of one session's
/// transaction, and the server's error labels. [`ClientSession`] is the production
/// implementation; unit tests drive [`run_in`] with a scripted session that returns
/// label-bearing errors, so every branch of the policy runs without a server.
pub trait TransactionSession {
    /// `startTransaction` with snapshot reads, majority writes and this commit time limit.
    fn start(&mut self, max_commit: Duration) -> impl Future<Output = Result<(), CreditsError>> + Send;
    fn commit(&mut self) -> impl Future<Output = Result<(), CreditsError>> + Send;
    /// Best effort: the driver itself swallows `abortTransaction` failures.
    fn abort(&mut self) -> impl Future<Output = ()> + Send;
    /// Whether `e` carries the server's error label `label`.
    fn has_label(&self, e: &CreditsError, label: &str) -> bool;
}

impl TransactionSession for ClientSession {
    async fn start(&mut self, max_commit: Duration) -> Result<(), CreditsError> {
        self.start_transaction()
            .read_concern(ReadConcern::snapshot())
            .write_concern(WriteConcern::majority())
            .max_commit_time(max_commit)
            .await
            .map_err(CreditsError::mongo("startTransaction"))
    }

    async fn commit(&mut self) -> Result<(), CreditsError> {
        self.commit_transaction().await.map_err(CreditsError::mongo("commitTransaction"))
    }

    async fn abort(&mut self) {
        let _ = self.abort_transaction().await;
    }

    fn has_label(&self, e: &CreditsError, label: &str) -> bool {
        matches!(e, CreditsError::Mongo { source, .. } if source.contains_label(label))
    }
}

/// Runs `body` in a transaction on a fresh session, retrying as the module docs say.
pub async fn run_transaction<T>(
    client: &Client,
    policy: &RetryPolicy,
    body: impl AsyncFnMut(&mut ClientSession) -> Result<Finish<T>, CreditsError>,
) -> Result<T, CreditsError> {
    let deadline = policy.deadline.unwrap_or_else(|| Instant::now() + policy.fallback_budget);
    let mut session = bounded(deadline, "startSession", async {
        client.start_session().await.map_err(CreditsError::mongo("startSession"))
    })
    .await?;
    run_in(&mut session, policy, body).await
}

/// `fut`, or [`CreditsError::DeadlineExceeded`] at `deadline`.
async fn bounded<T>(
    deadline: Instant,
    op: &'static str,
    fut: impl Future<Output = Result<T, CreditsError>>,
) -> Result<T, CreditsError> {
    tokio::time::timeout_at(deadline, fut).await.unwrap_or(Err(CreditsError::DeadlineExceeded { op }))
}

/// The retry policy over any [`TransactionSession`]: the whole transaction again on a
/// `TransientTransactionError` (from the body or from the commit) or a guarded write's
/// [`CreditsError::Conflict`]; the commit alone again on `UnknownTransactionCommitResult`; each
/// retry only while the deadline leaves room for it (else [`CreditsError::RetryBudgetExhausted`]);
/// the start, the commit and the abort each bounded by the deadline.
pub async fn run_in<S: TransactionSession, T>(
    session: &mut S,
    policy: &RetryPolicy,
    mut body: impl AsyncFnMut(&mut S) -> Result<Finish<T>, CreditsError>,
) -> Result<T, CreditsError> {
    let deadline = policy.deadline.unwrap_or_else(|| Instant::now() + policy.fallback_budget);
    let mut attempt: u32 = 0;
    'transaction: loop {
        attempt += 1;
        let max_commit = deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(policy.attempt_margin / 2)
            .max(Duration::from_millis(500));
        bounded(deadline, "startTransaction", session.start(max_commit)).await?;
        let finish = match body(session).await {
            Ok(f) => f,
            Err(e) => {
                let _ = tokio::time::timeout_at(deadline, session.abort()).await;
                if matches!(e, CreditsError::Conflict { .. }) || session.has_label(&e, TRANSIENT_TRANSACTION_ERROR) {
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
                let _ = tokio::time::timeout_at(deadline, session.abort()).await;
                return Ok(v);
            }
            Finish::Commit(v) => v,
        };
        // Commit; retry the commit alone while its result is unknown.
        let mut commit_attempt: u32 = 0;
        loop {
            commit_attempt += 1;
            let e = match bounded(deadline, "commitTransaction", session.commit()).await {
                Ok(()) => {
                    if attempt > 1 || commit_attempt > 1 {
                        tracing::info!(attempt, commitAttempt = commit_attempt, "transaction committed after retries");
                    }
                    return Ok(value);
                }
                Err(e) => e,
            };
            if session.has_label(&e, UNKNOWN_TRANSACTION_COMMIT_RESULT) {
                tracing::warn!(attempt, commitAttempt = commit_attempt, error = %e, "commit result unknown; retrying the commit");
                if policy.wait_for_another_attempt(deadline, commit_attempt).await {
                    continue;
                }
                return Err(CreditsError::RetryBudgetExhausted { attempts: attempt, last: Box::new(e) });
            }
            if session.has_label(&e, TRANSIENT_TRANSACTION_ERROR) {
                tracing::warn!(attempt, error = %e, "transient error at commit; retrying the transaction");
                if policy.wait_for_another_attempt(deadline, attempt).await {
                    continue 'transaction;
                }
                return Err(CreditsError::RetryBudgetExhausted { attempts: attempt, last: Box::new(e) });
            }
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// Server error labels carried by a scripted error (`mongodb::error::Error` has no public
    /// constructor with labels; `Error::custom` carries this payload instead).
    #[derive(Debug)]
    struct Labels(&'static [&'static str]);

    fn labelled(op: &'static str, labels: &'static [&'static str]) -> CreditsError {
        CreditsError::Mongo { op, source: mongodb::error::Error::custom(Labels(labels)) }
    }

    const TRANSIENT: &[&str] = &[TRANSIENT_TRANSACTION_ERROR];
    const UNKNOWN: &[&str] = &[UNKNOWN_TRANSACTION_COMMIT_RESULT];

    enum Commit {
        Ok,
        Fail(&'static [&'static str]),
        Hang,
    }

    /// A session whose commits follow a script; it counts every call.
    #[derive(Default)]
    struct Scripted {
        commits: VecDeque<Commit>,
        calls: Vec<&'static str>,
    }

    impl Scripted {
        fn committing(script: impl IntoIterator<Item = Commit>) -> Self {
            Self { commits: script.into_iter().collect(), calls: Vec::new() }
        }
        fn count(&self, call: &str) -> usize {
            self.calls.iter().filter(|c| **c == call).count()
        }
    }

    impl TransactionSession for Scripted {
        async fn start(&mut self, _max_commit: Duration) -> Result<(), CreditsError> {
            self.calls.push("start");
            Ok(())
        }
        async fn commit(&mut self) -> Result<(), CreditsError> {
            self.calls.push("commit");
            match self.commits.pop_front().unwrap_or(Commit::Ok) {
                Commit::Ok => Ok(()),
                Commit::Fail(labels) => Err(labelled("commitTransaction", labels)),
                Commit::Hang => std::future::pending().await,
            }
        }
        async fn abort(&mut self) {
            self.calls.push("abort");
        }
        fn has_label(&self, e: &CreditsError, label: &str) -> bool {
            matches!(e, CreditsError::Mongo { source, .. }
                if source.get_custom::<Labels>().is_some_and(|l| l.0.contains(&label)))
        }
    }

    fn quick(budget: Duration) -> RetryPolicy {
        RetryPolicy {
            deadline: Some(Instant::now() + budget),
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            attempt_margin: Duration::from_millis(20),
            ..RetryPolicy::default()
        }
    }

    /// The body fails with the given labels on its first `failures` runs, then commits.
    async fn run_body(
        session: &mut Scripted,
        policy: &RetryPolicy,
        failures: u32,
        labels: &'static [&'static str],
    ) -> (Result<u32, CreditsError>, u32) {
        let mut runs = 0;
        let result = run_in(session, policy, async |_s: &mut Scripted| {
            runs += 1;
            if runs <= failures { Err(labelled("update lots", labels)) } else { Ok(Finish::Commit(runs)) }
        })
        .await;
        (result, runs)
    }

    #[tokio::test]
    async fn a_transient_transaction_error_in_the_body_runs_the_whole_transaction_again() {
        let mut session = Scripted::default();
        let (result, runs) = run_body(&mut session, &quick(Duration::from_secs(10)), 2, TRANSIENT).await;
        assert_eq!((result.unwrap(), runs), (3, 3));
        assert_eq!((session.count("start"), session.count("abort"), session.count("commit")), (3, 2, 1));
    }

    #[tokio::test]
    async fn an_error_without_the_label_is_returned_at_once_after_an_abort() {
        let mut session = Scripted::default();
        let (result, runs) = run_body(&mut session, &quick(Duration::from_secs(10)), 5, &[]).await;
        assert!(matches!(result, Err(CreditsError::Mongo { op: "update lots", .. })), "{result:?}");
        assert_eq!(runs, 1);
        assert_eq!(session.calls, ["start", "abort"]);
    }

    #[tokio::test]
    async fn an_unknown_commit_result_retries_the_commit_alone() {
        let mut session = Scripted::committing([Commit::Fail(UNKNOWN), Commit::Fail(UNKNOWN), Commit::Ok]);
        let (result, runs) = run_body(&mut session, &quick(Duration::from_secs(10)), 0, &[]).await;
        assert_eq!((result.unwrap(), runs), (1, 1), "the body ran once");
        assert_eq!(session.calls, ["start", "commit", "commit", "commit"]);
    }

    #[tokio::test]
    async fn a_transient_error_at_commit_runs_the_whole_transaction_again() {
        let mut session = Scripted::committing([Commit::Fail(TRANSIENT), Commit::Ok]);
        let (result, runs) = run_body(&mut session, &quick(Duration::from_secs(10)), 0, &[]).await;
        assert_eq!((result.unwrap(), runs), (2, 2));
        assert_eq!(session.calls, ["start", "commit", "start", "commit"]);
    }

    #[tokio::test]
    async fn a_commit_error_without_labels_is_returned_without_retry() {
        let mut session = Scripted::committing([Commit::Fail(&[])]);
        let (result, runs) = run_body(&mut session, &quick(Duration::from_secs(10)), 0, &[]).await;
        assert!(matches!(result, Err(CreditsError::Mongo { op: "commitTransaction", .. })), "{result:?}");
        assert_eq!((runs, session.count("commit")), (1, 1));
    }

    #[tokio::test]
    async fn an_abort_finish_aborts_and_never_commits() {
        let mut session = Scripted::default();
        let value = run_in(&mut session, &quick(Duration::from_secs(10)), async |_s: &mut Scripted| {
            Ok(Finish::Abort("claim lost"))
        })
        .await
        .unwrap();
        assert_eq!(value, "claim lost");
        assert_eq!(session.calls, ["start", "abort"]);
    }

    #[tokio::test]
    async fn every_retry_branch_gives_up_when_the_deadline_leaves_no_room() {
        // The attempt margin (20 ms) exceeds the budget: no retry may start.
        let tight = || quick(Duration::from_millis(15));
        let mut session = Scripted::default();
        let (result, runs) = run_body(&mut session, &tight(), 99, TRANSIENT).await;
        assert!(matches!(result, Err(CreditsError::RetryBudgetExhausted { attempts: 1, .. })), "{result:?}");
        assert_eq!(runs, 1);

        let mut session = Scripted::committing([Commit::Fail(UNKNOWN), Commit::Ok]);
        let (result, _) = run_body(&mut session, &tight(), 0, &[]).await;
        match result {
            Err(CreditsError::RetryBudgetExhausted { last, .. }) => {
                assert!(matches!(*last, CreditsError::Mongo { op: "commitTransaction", .. }))
            }
            other => panic!("expected an exhausted budget, got {other:?}"),
        }
        assert_eq!(session.count("commit"), 1);

        let mut session = Scripted::committing([Commit::Fail(TRANSIENT), Commit::Ok]);
        let (result, runs) = run_body(&mut session, &tight(), 0, &[]).await;
        assert!(matches!(result, Err(CreditsError::RetryBudgetExhausted { .. })), "{result:?}");
        assert_eq!((runs, session.count("commit")), (1, 1));
    }

    #[tokio::test]
    async fn a_commit_that_never_answers_ends_at_the_deadline() {
        let mut session = Scripted::committing([Commit::Hang]);
        let (result, _) = run_body(&mut session, &quick(Duration::from_millis(200)), 0, &[]).await;
        assert!(matches!(result, Err(CreditsError::DeadlineExceeded { op: "commitTransaction" })), "{result:?}");
    }

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
