//! How a report's failure is shown to an operator (`interview show`, `dlq show`, `report
//! failures`): where the report stands ([`FailureState`]) and its stored `lastError`
//! ([`shown_last_error`]).

use serde::Serialize;

/// A `lastError` as it may be shown: whole when this implementation wrote it (it has an
/// `errorKind`), otherwise as a length marker.
pub fn shown_last_error(last_error: Option<&str>, has_error_kind: bool) -> Option<String> {
    last_error.map(|e| {
        if has_error_kind {
            e.to_owned()
        } else {
            format!("<not shown: written by another writer, may quote model output; {} chars>", e.chars().count())
        }
    })
}

/// Where a report stands, as [`crate::report_state::report_now`] decides it: what `report
/// failures` sorts and labels by (needing an operator first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureState {
    /// Nothing retries it any more (out of attempts, given up after a long outage, an
    /// unreadable document), or every delivery spends an attempt on a kind no retry fixes: an
    /// operator must act.
    NeedsYou,
    /// Its message will be delivered again without anyone acting (`waitingForRetry`, or a lease
    /// that ended without an answer).
    WaitingForRetry,
    /// A worker holds it now (`PROCESSING` under a live lease).
    RetryingNow,
    /// `NOT_STARTED`: its first attempt is to come.
    NotStarted,
    /// `COMPLETED`, or `ERASED` (the candidate's data erased: nothing is generated again).
    Done,
}

impl FailureState {
    pub fn label(self) -> &'static str {
        match self {
            Self::NeedsYou => "NEEDS YOU",
            Self::WaitingForRetry => "waiting for a retry",
            Self::RetryingNow => "in flight",
            Self::NotStarted => "not started",
            Self::Done => "done",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_writers_last_error_is_shown_as_its_length() {
        assert_eq!(shown_last_error(Some("HTTP 500"), true).as_deref(), Some("HTTP 500"));
        let hidden = shown_last_error(Some("Unexpected token in 'the candidate said...'"), false).unwrap();
        assert!(!hidden.contains("candidate"), "{hidden}");
        assert!(hidden.contains("43 chars"), "{hidden}");
    }
}
