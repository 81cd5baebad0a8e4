use std::fmt;
use std::time::Duration;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a handler did not process a record, and what SQS should do about it. Handlers choose the
/// variant from the *kind* of their typed error, never from its text.
pub enum Failure {
    /// A transient failure: report the record as a batch item failure so SQS redelivers it
    /// (and, after maxReceiveCount receives, moves it to the DLQ).
    Retry(BoxError),
    /// A failure of something away for a while (a provider that rate-limits, answers 5xx or does
    /// not answer; a database that is unreachable): redelivered after a backoff (the provider's
    /// `Retry-After` when it gave one, else exponential with jitter: see [`crate::backoff`]), not
    /// after the queue's whole visibility timeout; on the last receive, where a consumer allows
    /// it, requeued as a delayed copy until the give-up age, so an outage does not end in the DLQ.
    Transient { error: BoxError, retry_after: Option<Duration> },
    /// A permanent failure: no retry can succeed. Logged as an error and acknowledged.
    Drop(BoxError),
    /// A permanent failure a person must see (e.g. an interview of another organization than
    /// the message says): the wrapper sends the record to its queue's DLQ on this delivery
    /// (`SendMessage` of the same body and attributes, with why: [`crate::queue::RecordQueue::dead_letter`])
    /// and only then acknowledges it; if that send fails, the record is reported failed as a
    /// [`Failure::Retry`] would be (SQS redelivers it, then moves it to the DLQ), so it is never
    /// lost.
    DeadLetter(BoxError),
}

impl Failure {
    pub fn retry(e: impl Into<BoxError>) -> Self {
        Self::Retry(e.into())
    }
    pub fn drop(e: impl Into<BoxError>) -> Self {
        Self::Drop(e.into())
    }
    pub fn dead_letter(e: impl Into<BoxError>) -> Self {
        Self::DeadLetter(e.into())
    }
    /// A transient failure; `retry_after`: what the provider asked for, if it did.
    pub fn transient(e: impl Into<BoxError>, retry_after: Option<Duration>) -> Self {
        Self::Transient { error: e.into(), retry_after }
    }
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            Self::Retry(e) | Self::Drop(e) | Self::DeadLetter(e) | Self::Transient { error: e, .. } => e.as_ref(),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retry(e) => write!(f, "Retry({e})"),
            Self::Drop(e) => write!(f, "Drop({e})"),
            Self::DeadLetter(e) => write!(f, "DeadLetter({e})"),
            Self::Transient { error, retry_after } => write!(f, "Transient({error}, retry_after: {retry_after:?})"),
        }
    }
}

/// The error chain as one line: `outer: cause: root cause`.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.ends_with(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}
