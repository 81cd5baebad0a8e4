//! Waiting for a condition by polling it: the one place in tests/ that sleeps between two checks
//! (a fixed sleep in place of a condition waits too long on a quiet machine and too little on a
//! loaded one). tests/it/layout.rs fails on a `sleep` anywhere else in tests/ but its named
//! exceptions, where the time passing is itself what the test is about.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`wait_until`] checks.
const EVERY: Duration = Duration::from_millis(200);

/// Reads `probe` every `every` until `done` holds for what it read or `limit` has passed, and
/// returns the last reading (the caller asserts on it, with a message that says what it saw).
pub async fn poll<T, F, Fut>(limit: Duration, every: Duration, mut probe: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    let deadline = Instant::now() + limit;
    loop {
        let value = probe().await;
        if done(&value) || Instant::now() >= deadline {
            return value;
        }
        tokio::time::sleep(every).await;
    }
}

/// Waits until `check` holds; fails the test naming `what` when `limit` passes first. `limit` is
/// a liveness bound (not a timing assertion): far beyond what the step needs.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let reached = poll(limit, EVERY, check, |done| *done).await;
    assert!(reached, "not reached within {limit:?}: {what}");
}

/// [`wait_until`] for a synchronous `check` on a thread of its own (no runtime): checks every
/// `every`.
pub fn blocking_until(what: &str, limit: Duration, every: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "not reached within {limit:?}: {what}");
        std::thread::sleep(every);
    }
}
