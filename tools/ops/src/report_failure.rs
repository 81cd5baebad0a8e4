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

/// Where a report with failed attempts stands: what `report failures` sorts and labels by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureState {
    /// Nothing retries it any more (out of attempts, given up after a long outage, an
    /// unreadable document): an operator must act.
    NeedsYou,
    /// Its message will be delivered again without anyone acting (`waitingForRetry`).
    WaitingForRetry,
    /// A worker holds it now (`PROCESSING` after a failed attempt).
    RetryingNow,
}

impl FailureState {
    /// From the stored report: `waitingForRetry` when written; for a report written before
    /// that field, the same rule from its kind and attempts
    /// ([`sophia_reports::store::waits_for_retry`]).
    pub fn of(status: Option<&str>, waiting_for_retry: Option<bool>, error_kind: Option<&str>, attempts: i64) -> Self {
        use sophia_reports::ReportStatus;
        if status == Some(ReportStatus::Processing.as_str()) {
            return Self::RetryingNow;
        }
        let derived = || {
            let kind = error_kind.and_then(|k| sophia_reports::ErrorKind::ALL.into_iter().find(|e| e.as_str() == k));
            kind.is_some_and(|k| sophia_reports::store::waits_for_retry(k, i32::try_from(attempts).unwrap_or(i32::MAX)))
        };
        if waiting_for_retry.unwrap_or_else(derived) { Self::WaitingForRetry } else { Self::NeedsYou }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::NeedsYou => "NEEDS YOU",
            Self::WaitingForRetry => "waiting for a retry",
            Self::RetryingNow => "being retried now",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_held_by_an_outage_waits_and_one_out_of_attempts_needs_you() {
        use FailureState::*;
        assert_eq!(FailureState::of(Some("FAILED"), Some(true), Some("rate_limited"), 0), WaitingForRetry);
        assert_eq!(FailureState::of(Some("FAILED"), Some(false), Some("rate_limited"), 0), NeedsYou, "given up");
        assert_eq!(FailureState::of(Some("PROCESSING"), None, Some("timeout"), 1), RetryingNow);
        // Written before `waitingForRetry`: the same rule from the kind and the attempts.
        assert_eq!(FailureState::of(Some("FAILED"), None, Some("server_error"), 0), WaitingForRetry);
        assert_eq!(FailureState::of(Some("FAILED"), None, Some("invalid_output"), 1), WaitingForRetry);
        assert_eq!(FailureState::of(Some("FAILED"), None, Some("invalid_output"), 3), NeedsYou);
        assert_eq!(FailureState::of(Some("FAILED"), None, None, 3), NeedsYou);
        assert!(NeedsYou < WaitingForRetry && WaitingForRetry < RetryingNow, "needing an operator first");
    }

    #[test]
    fn another_writers_last_error_is_shown_as_its_length() {
        assert_eq!(shown_last_error(Some("HTTP 500"), true).as_deref(), Some("HTTP 500"));
        let hidden = shown_last_error(Some("Unexpected token in 'the candidate said...'"), false).unwrap();
        assert!(!hidden.contains("candidate"), "{hidden}");
        assert!(hidden.contains("43 chars"), "{hidden}");
    }
}
