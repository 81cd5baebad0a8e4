//! Realistic traffic options for load tests: a latency on every answer, and OpenAI's
//! tokens-per-minute limit (HTTP 429 `rate_limit_exceeded` with `Retry-After` when a request
//! would go over it). OpenAI counts a request against the limit by its input plus its
//! `max_completion_tokens` when it arrives (<https://platform.openai.com/docs/guides/rate-limits>);
//! here the input is estimated as the answers' `usage` estimates it (4 characters a token).
//!
//! Set from Rust ([`crate::FakeOpenAi::set_latency`], [`crate::FakeOpenAi::set_token_limit`]) or,
//! for a fake the local runner starts in deterministic mode, from the environment:
//! [`SOPHIA_OPENAI_FAKE_LATENCY_MS`] and [`SOPHIA_OPENAI_FAKE_TPM`] (with
//! [`SOPHIA_OPENAI_FAKE_WINDOW_MS`] for a scaled minute).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Environment variable: every answer waits this many milliseconds (± 25 %, drawn per request).
pub const SOPHIA_OPENAI_FAKE_LATENCY_MS: &str = sophia_env::declared("SOPHIA_OPENAI_FAKE_LATENCY_MS");
/// Environment variable: the tokens-per-minute limit.
pub const SOPHIA_OPENAI_FAKE_TPM: &str = sophia_env::declared("SOPHIA_OPENAI_FAKE_TPM");
/// Environment variable: the limit's window in milliseconds (60,000 unless time is scaled).
pub const SOPHIA_OPENAI_FAKE_WINDOW_MS: &str = sophia_env::declared("SOPHIA_OPENAI_FAKE_WINDOW_MS");

/// A latency on every answer: `typical` ± `jitter` (a share of it, 0..1), drawn per request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub typical: Duration,
    pub jitter: f64,
}

impl Latency {
    /// gpt-4.1-mini writing a report of about 1,500 output tokens: about 15 s.
    pub fn realistic() -> Self {
        Self { typical: Duration::from_secs(15), jitter: 0.25 }
    }

    pub(crate) fn draw(&self, n: u64) -> Duration {
        // A fixed spread over requests (no randomness: runs compare).
        let unit = ((n.wrapping_mul(2_654_435_761) % 1_000) as f64 / 1_000.0) * 2.0 - 1.0;
        self.typical.mul_f64((1.0 + self.jitter.clamp(0.0, 1.0) * unit).max(0.0))
    }
}

/// A tokens-per-minute limit over a sliding `window` (a minute, or a scaled one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLimit {
    pub tokens_per_window: u64,
    pub window: Duration,
}

impl TokenLimit {
    pub fn per_minute(tokens: u64) -> Self {
        Self { tokens_per_window: tokens, window: Duration::from_secs(60) }
    }
}

/// The requests counted in the window.
#[derive(Debug, Default)]
pub(crate) struct Window {
    used: VecDeque<(Instant, u64)>,
}

impl Window {
    /// Counts `cost` if it fits, else answers how long until it would.
    pub(crate) fn admit(&mut self, limit: &TokenLimit, cost: u64, now: Instant) -> Result<(), Duration> {
        while self.used.front().is_some_and(|(t, _)| now.duration_since(*t) >= limit.window) {
            self.used.pop_front();
        }
        let total: u64 = self.used.iter().map(|(_, c)| c).sum();
        if total + cost <= limit.tokens_per_window || self.used.is_empty() {
            self.used.push_back((now, cost));
            return Ok(());
        }
        // Wait until enough of the window has expired.
        let mut freed = 0;
        for (t, c) in &self.used {
            freed += c;
            if total - freed + cost <= limit.tokens_per_window {
                return Err((*t + limit.window).saturating_duration_since(now).max(Duration::from_millis(1)));
            }
        }
        Err(limit.window)
    }
}

pub(crate) fn env_ms(name: &str) -> Option<u64> {
    sophia_env::var(name).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_admits_up_to_the_limit_then_says_when_to_come_back() {
        let limit = TokenLimit { tokens_per_window: 100, window: Duration::from_secs(60) };
        let mut w = Window::default();
        let t0 = Instant::now();
        assert_eq!(w.admit(&limit, 60, t0), Ok(()));
        assert_eq!(w.admit(&limit, 40, t0 + Duration::from_secs(10)), Ok(()));
        assert_eq!(w.admit(&limit, 30, t0 + Duration::from_secs(20)), Err(Duration::from_secs(40)));
        assert_eq!(w.admit(&limit, 30, t0 + Duration::from_secs(60)), Ok(()), "the first request left the window");
        let mut empty = Window::default();
        assert_eq!(empty.admit(&limit, 500, t0), Ok(()), "a request larger than the limit alone is admitted");
    }

    #[test]
    fn latency_spreads_around_its_typical_value() {
        let l = Latency { typical: Duration::from_secs(10), jitter: 0.25 };
        let draws: Vec<Duration> = (0..100).map(|n| l.draw(n)).collect();
        assert!(draws.iter().all(|d| (7_500..=12_500).contains(&d.as_millis())), "{draws:?}");
        assert!(draws.iter().collect::<std::collections::HashSet<_>>().len() > 10);
    }
}
