use std::fmt;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a handler did not process a record, and what SQS should do about it. Handlers choose the
/// variant from the *kind* of their typed error, never from its text.
pub enum Failure {
    /// A transient failure: report the record as a batch item failure so SQS redelivers it
    /// (and, after maxReceiveCount receives, moves it to the DLQ).
    Retry(BoxError),
    /// A permanent failure: no retry can succeed. Logged as an error and acknowledged.
    Drop(BoxError),
}

impl Failure {
    pub fn retry(e: impl Into<BoxError>) -> Self {
        Self::Retry(e.into())
    }
    pub fn drop(e: impl Into<BoxError>) -> Self {
        Self::Drop(e.into())
    }
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            Self::Retry(e) | Self::Drop(e) => e.as_ref(),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retry(e) => write!(f, "Retry({e})"),
            Self::Drop(e) => write!(f, "Drop({e})"),
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
