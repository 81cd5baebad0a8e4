//! When a record that failed transiently ([`crate::Failure::Transient`]) is seen again.
//!
//! Without this, a failed record reappears after the queue's visibility timeout (30 minutes on
//! the report queue) and its third failure sends it to the DLQ, so an outage of the provider
//! longer than about an hour ends in the DLQ. With it:
//!
//! - **Backoff**: before the record is reported as a batch item failure, its visibility is set to
//!   the provider's `Retry-After` when it gave one, else `base × 2^(receive − 1)` with equal jitter
//!   (half fixed, half drawn from the message id and the receive count), never longer than the
//!   queue's visibility timeout: about a minute after the first failure, two after the second.
//! - **Requeue** (queues that allow it: the report queue): on the last receive before the DLQ, a
//!   delayed copy of the message is sent (`DelaySeconds` ≤ 900, the SQS maximum), carrying in the
//!   [`TRANSIENT_SINCE`] attribute when its transient failures began, and only then is the
//!   original acknowledged, so nothing is lost (a failed send leaves the original to SQS). The
//!   copy starts again at receive 1.
//! - **Give-up**: once the transient failures are older than the give-up age (24 hours), the last
//!   receive's failure goes to the DLQ as any other, counted as `RecordsGivenUp` (an alarm).
//!
//! Local measurements run with scaled time: [`SOPHIA_RETRY_TIME_SCALE`] divides every duration
//! here (1 by default).
//!
//! [`policy_of`] is each declared queue's policy (the consumers run with it) and
//! [`Backoff::schedule`] says it in words: `sophia-ops report failures` prints it, so the
//! runbook's timings are the code's.

use std::hash::{Hash, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The message attribute (String, milliseconds since the epoch) a requeued copy carries: when the
/// record's transient failures began.
pub const TRANSIENT_SINCE: &str = "transientSince";
/// Environment variable: a whole number dividing every backoff, requeue delay and the give-up age
/// (local measurements with scaled time). 1 (no scaling) when unset.
pub const SOPHIA_RETRY_TIME_SCALE: &str = sophia_env::declared("SOPHIA_RETRY_TIME_SCALE");

/// The first backoff before jitter (receive 1), doubled per receive.
pub const DEFAULT_BASE: Duration = Duration::from_secs(60);
/// The delay of a requeued copy: the longest a report waits after the provider is back.
pub const DEFAULT_REQUEUE_DELAY: Duration = Duration::from_secs(600);
/// Transient failures older than this go to the DLQ on their last receive.
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);
/// SQS's largest `DelaySeconds`.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// Requeue on the last receive (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requeue {
    /// The copy's `DelaySeconds` (at most [`MAX_DELAY`]).
    pub delay: Duration,
    /// Transient failures older than this are not requeued: the record goes to the DLQ.
    pub give_up_after: Duration,
}

impl Default for Requeue {
    fn default() -> Self {
        Self { delay: DEFAULT_REQUEUE_DELAY, give_up_after: DEFAULT_GIVE_UP_AFTER }
    }
}

/// One queue's policy for transient failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    /// The queue's visibility timeout: no backoff is longer.
    pub visibility_timeout: Duration,
    /// `None`: the last receive's failure goes to the DLQ (after its backoff).
    pub requeue: Option<Requeue>,
    /// Divides every duration (see [`SOPHIA_RETRY_TIME_SCALE`]); at least 1.
    pub time_scale: u32,
}

/// What to do with a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Make the record visible again after this long, then report it failed.
    Backoff(Duration),
    /// Send a copy delayed this long, then acknowledge the record.
    Requeue(Duration),
    /// The last receive, transient for longer than the give-up age: back off this long (so that
    /// SQS moves it soon), then report it failed: the DLQ.
    GiveUp(Duration),
}

impl Backoff {
    /// A queue of this visibility timeout, with the default base and no requeue, scaled by
    /// [`SOPHIA_RETRY_TIME_SCALE`] when set.
    pub fn new(visibility_timeout: Duration) -> Self {
        Self { base: DEFAULT_BASE, visibility_timeout, requeue: None, time_scale: time_scale_from_env() }
    }

    pub fn with_requeue(mut self, requeue: Requeue) -> Self {
        self.requeue = Some(Requeue { delay: requeue.delay.min(MAX_DELAY), ..requeue });
        self
    }

    fn scaled(&self, d: Duration) -> Duration {
        d / self.time_scale.max(1)
    }

    /// How long the record stays invisible after its `receive_count`-th receive failed:
    /// `retry_after` when given, else exponential with equal jitter drawn from `jitter_key` (the
    /// message id); whole seconds (SQS's unit), at least 1 s, at most the visibility timeout.
    pub fn visibility(&self, receive_count: u32, retry_after: Option<Duration>, jitter_key: &str) -> Duration {
        let wanted = match retry_after {
            Some(after) => self.scaled(after),
            None => {
                let exp = self.scaled(self.base).saturating_mul(1 << receive_count.clamp(1, 16).saturating_sub(1));
                let half = exp / 2;
                let mut h = std::hash::DefaultHasher::new();
                (jitter_key, receive_count).hash(&mut h);
                let span = half.as_millis().max(1) as u64;
                half + Duration::from_millis(h.finish() % span)
            }
        };
        whole_seconds(wanted).clamp(Duration::from_secs(1), self.visibility_timeout.max(Duration::from_secs(1)))
    }

    /// The decision for a transient failure on this receive, transient for `age` already.
    pub fn decide(
        &self,
        receive_count: u32,
        max_receive_count: u32,
        age: Duration,
        retry_after: Option<Duration>,
        jitter_key: &str,
    ) -> Decision {
        if receive_count >= max_receive_count
            && let Some(requeue) = self.requeue
        {
            return if age < self.scaled(requeue.give_up_after) {
                Decision::Requeue(whole_seconds(self.scaled(requeue.delay)).min(MAX_DELAY))
            } else {
                Decision::GiveUp(self.visibility(receive_count, retry_after, jitter_key))
            };
        }
        Decision::Backoff(self.visibility(receive_count, retry_after, jitter_key))
    }
}

/// The transient-failure policy of the consumer of `queue`, with its declared visibility timeout
/// and its declared `requeuesTransientFailures` (the same property gives the consumer's role
/// SendMessage on its queue): the report queue's consumer requeues on the last receive (an outage
/// of the model's provider must not end in the DLQ); the interview queue's backs off only
/// (MongoDB away for three receives is an incident an operator sees in its DLQ).
pub fn policy_of(queue: sophia_declarations::Queue) -> Backoff {
    let settings = queue.settings();
    let backoff = Backoff::new(Duration::from_secs(u64::from(settings.visibility_timeout_seconds)));
    if settings.requeues_transient_failures { backoff.with_requeue(Requeue::default()) } else { backoff }
}

/// What a transiently failing record goes through, from a [`Backoff`] and its queue's
/// maxReceiveCount (its `Display` is one paragraph).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Per receive before the last: the backoff's band (without `Retry-After`), shortest and
    /// longest.
    pub backoffs: Vec<(Duration, Duration)>,
    /// The last receive: a delayed copy's delay, or `None` (the DLQ after its backoff).
    pub requeue_delay: Option<Duration>,
    /// Transient failures older than this go to the DLQ (with a requeue only).
    pub give_up_after: Option<Duration>,
    pub max_receive_count: u32,
    pub time_scale: u32,
}

impl Backoff {
    /// This policy's schedule on a queue of `max_receive_count` receives.
    pub fn schedule(&self, max_receive_count: u32) -> Schedule {
        let bound = |d: Duration| {
            whole_seconds(d).clamp(Duration::from_secs(1), self.visibility_timeout.max(Duration::from_secs(1)))
        };
        let backoffs = (1..max_receive_count.max(1))
            .map(|receive| {
                let exp = self.scaled(self.base).saturating_mul(1 << receive.clamp(1, 16).saturating_sub(1));
                (bound(exp / 2), bound(exp))
            })
            .collect();
        Schedule {
            backoffs,
            requeue_delay: self.requeue.map(|r| whole_seconds(self.scaled(r.delay)).min(MAX_DELAY)),
            give_up_after: self.requeue.map(|r| self.scaled(r.give_up_after)),
            max_receive_count,
            time_scale: self.time_scale.max(1),
        }
    }
}

/// A duration in the largest whole unit (`90 s`, `10 min`, `24 h`).
pub fn words(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// `30 s-1 min`, `1-2 min` (the unit once when both ends share it).
fn band(lo: Duration, hi: Duration) -> String {
    let (lo, hi) = (words(lo), words(hi));
    match (lo.split_once(' '), hi.split_once(' ')) {
        (Some((n, unit)), Some((_, hi_unit))) if unit == hi_unit => format!("{n}-{hi}"),
        _ => format!("{lo}-{hi}"),
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bands: Vec<String> = self
            .backoffs
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| format!("{} after receive {}", band(*lo, *hi), i + 1))
            .collect();
        write!(f, "visible again {} (or after the provider's Retry-After)", bands.join(", "))?;
        match (self.requeue_delay, self.give_up_after) {
            (Some(delay), Some(give_up)) => write!(
                f,
                "; on receive {} a copy is sent delayed {} and the cycle starts again, until the failures are {} old: then the DLQ",
                self.max_receive_count,
                words(delay),
                words(give_up)
            )?,
            _ => write!(f, "; receive {} fails into the DLQ", self.max_receive_count)?,
        }
        if self.time_scale > 1 {
            write!(f, " (every duration divided by {}: {SOPHIA_RETRY_TIME_SCALE})", self.time_scale)?;
        }
        Ok(())
    }
}

fn whole_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

fn time_scale_from_env() -> u32 {
    sophia_env::var(SOPHIA_RETRY_TIME_SCALE).and_then(|v| v.trim().parse::<u32>().ok()).filter(|n| *n >= 1).unwrap_or(1)
}

/// Milliseconds since the epoch (a [`TRANSIENT_SINCE`] value).
pub fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A time from milliseconds since the epoch (SQS's timestamps and [`TRANSIENT_SINCE`]).
pub fn from_epoch_ms(text: &str) -> Option<SystemTime> {
    text.trim().parse::<u64>().ok().map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_queue() -> Backoff {
        Backoff {
            base: DEFAULT_BASE,
            visibility_timeout: Duration::from_secs(1800),
            requeue: Some(Requeue::default()),
            time_scale: 1,
        }
    }

    #[test]
    fn backoffs_grow_with_the_receive_count_within_their_jitter_band() {
        let b = report_queue();
        for id in ["m-1", "m-2", "m-3", "another"] {
            let first = b.visibility(1, None, id);
            let second = b.visibility(2, None, id);
            assert!((30..=60).contains(&first.as_secs()), "{first:?}");
            assert!((60..=120).contains(&second.as_secs()), "{second:?}");
        }
        let spread: std::collections::HashSet<_> =
            (0..20).map(|i| b.visibility(1, None, &format!("message-{i}"))).collect();
        assert!(spread.len() > 5, "jitter spreads a burst: {spread:?}");
    }

    #[test]
    fn retry_after_is_honoured_and_nothing_exceeds_the_visibility_timeout() {
        let b = report_queue();
        assert_eq!(b.visibility(1, Some(Duration::from_millis(7_200)), "m"), Duration::from_secs(8));
        assert_eq!(b.visibility(1, Some(Duration::ZERO), "m"), Duration::from_secs(1));
        assert_eq!(b.visibility(2, Some(Duration::from_secs(99_999)), "m"), Duration::from_secs(1800));
        let short = Backoff { visibility_timeout: Duration::from_secs(180), ..b };
        assert_eq!(short.visibility(9, None, "m"), Duration::from_secs(180));
    }

    #[test]
    fn the_last_receive_requeues_until_the_give_up_age_and_without_requeue_backs_off() {
        let b = report_queue();
        let hour = Duration::from_secs(3600);
        assert!(matches!(b.decide(1, 3, hour, None, "m"), Decision::Backoff(_)));
        assert!(matches!(b.decide(2, 3, 6 * hour, None, "m"), Decision::Backoff(_)));
        assert_eq!(b.decide(3, 3, 6 * hour, None, "m"), Decision::Requeue(Duration::from_secs(600)));
        assert!(matches!(b.decide(3, 3, 25 * hour, None, "m"), Decision::GiveUp(_)));
        let no_requeue = Backoff { requeue: None, ..b };
        assert!(matches!(no_requeue.decide(3, 3, hour, None, "m"), Decision::Backoff(_)));
        let long = report_queue().with_requeue(Requeue { delay: Duration::from_secs(5_000), ..Requeue::default() });
        assert_eq!(long.decide(3, 3, hour, None, "m"), Decision::Requeue(MAX_DELAY), "SQS's maximum delay");
    }

    #[test]
    fn the_schedule_says_the_policys_own_numbers() {
        let text = report_queue().schedule(3).to_string();
        assert_eq!(
            text,
            "visible again 30 s-1 min after receive 1, 1-2 min after receive 2 (or after the provider's Retry-After); \
             on receive 3 a copy is sent delayed 10 min and the cycle starts again, until the failures are 24 h old: then the DLQ"
        );
        let plain = Backoff { requeue: None, visibility_timeout: Duration::from_secs(180), ..report_queue() };
        assert!(plain.schedule(3).to_string().ends_with("; receive 3 fails into the DLQ"), "{}", plain.schedule(3));
        let scaled = Backoff { time_scale: 60, ..report_queue() }.schedule(3);
        assert_eq!(
            scaled.backoffs,
            vec![(Duration::from_secs(1), Duration::from_secs(1)), (Duration::from_secs(1), Duration::from_secs(2))]
        );
        assert!(scaled.to_string().ends_with("(every duration divided by 60: SOPHIA_RETRY_TIME_SCALE)"), "{scaled}");
    }

    #[test]
    fn scaled_time_divides_every_duration() {
        let b = Backoff { time_scale: 60, ..report_queue() };
        assert_eq!(b.visibility(1, None, "m"), Duration::from_secs(1));
        assert_eq!(b.decide(3, 3, Duration::from_secs(60), None, "m"), Decision::Requeue(Duration::from_secs(10)));
        assert!(matches!(b.decide(3, 3, Duration::from_secs(24 * 60), None, "m"), Decision::GiveUp(_)));
    }
}
