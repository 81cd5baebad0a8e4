use thiserror::Error;

/// Why a message body or attribute was rejected. Every variant is permanent: the same bytes will
/// never parse on a retry, so consumers drop (acknowledge) such messages after logging the reason.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ContractError {
    #[error("body is not valid JSON: {0}")]
    NotJson(String),
    #[error("body must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    #[error("field `type` must be \"interview.failed\", got {0}")]
    UnknownType(String),
    #[error("body does not match the {schema} schema: {reason}")]
    Schema { schema: &'static str, reason: String },
    #[error("unknown eventType {0:?}")]
    UnknownEventType(String),
}
