use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{ContractError, InterviewId};

/// The `eventType` message attribute: which message a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum EventType {
    #[serde(rename = "interview.completed")]
    InterviewCompleted,
    #[serde(rename = "interview.failed")]
    InterviewFailed,
    #[serde(rename = "report.generate")]
    ReportGenerate,
}

impl EventType {
    pub const ALL: [EventType; 3] = [Self::InterviewCompleted, Self::InterviewFailed, Self::ReportGenerate];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InterviewCompleted => "interview.completed",
            Self::InterviewFailed => "interview.failed",
            Self::ReportGenerate => "report.generate",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = ContractError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| ContractError::UnknownEventType(s.chars().take(64).collect()))
    }
}

/// The `requestId` message attribute: the API request that caused the message, for tracing.
/// Never empty; `unknown` when the producer had none (as the API's `requestIdForPublish` does).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// SQS allows long attribute values, but a request id is an identifier: longer input is cut.
    pub const MAX_LEN: usize = 256;
    pub const UNKNOWN: &'static str = "unknown";

    /// The caller's request id, or `unknown` when absent or blank.
    pub fn from_caller(id: Option<&str>) -> Self {
        match id.map(str::trim) {
            Some(s) if !s.is_empty() => Self(s.chars().take(Self::MAX_LEN).collect()),
            _ => Self::unknown(),
        }
    }

    pub fn unknown() -> Self {
        Self(Self::UNKNOWN.to_owned())
    }

    /// The request id of a settlement-triggered publish: `settlement-<interviewId>`.
    pub fn settlement(interview_id: InterviewId) -> Self {
        Self(format!("settlement-{interview_id}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Both attributes that every publish carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageAttributes {
    pub request_id: RequestId,
    pub event_type: EventType,
}

impl MessageAttributes {
    pub const REQUEST_ID: &'static str = "requestId";
    pub const EVENT_TYPE: &'static str = "eventType";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_round_trip_through_their_wire_names() {
        for e in EventType::ALL {
            assert_eq!(e.as_str().parse::<EventType>().unwrap(), e);
            assert_eq!(serde_json::to_string(&e).unwrap(), format!("\"{}\"", e.as_str()));
        }
        assert!("interview.started".parse::<EventType>().is_err());
    }

    #[test]
    fn blank_or_missing_request_ids_become_unknown() {
        assert_eq!(RequestId::from_caller(None).as_str(), "unknown");
        assert_eq!(RequestId::from_caller(Some("   ")).as_str(), "unknown");
        assert_eq!(RequestId::from_caller(Some("req-1")).as_str(), "req-1");
        assert_eq!(RequestId::from_caller(Some(&"x".repeat(1000))).as_str().len(), RequestId::MAX_LEN);
    }

    #[test]
    fn settlement_request_id_names_the_interview() {
        let id: InterviewId = "65a1b2c3d4e5f60718293a4b".parse().unwrap();
        assert_eq!(RequestId::settlement(id).as_str(), "settlement-65a1b2c3d4e5f60718293a4b");
    }
}
