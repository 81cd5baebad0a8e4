//! A standing fault: what the fake does to every chat completion until it is cleared, as an
//! OpenAI outage or a revoked key does. Set from Rust ([`crate::FakeOpenAi::set_fault`]) or over
//! HTTP on the fake's own server:
//!
//! - `PUT /__sophia/fault` with `{"kind": "none"|"unauthorized"|"quota"|"rate_limited"|
//!   "server_error"|"unavailable"|"timeout"|"slow", "retryAfterSeconds": u64 (rate_limited, optional), "delayMs": u64 (slow)}`
//!   answers 204 (400 with a reason for a body it cannot read);
//! - `GET /__sophia/fault` answers the standing fault in the same shape (`{"kind":"none"}`);
//! - both need `Authorization: Bearer <`[`crate::FakeOpenAi::fault_token`]`>` (a new token for
//!   every start); without it they answer 401 and change nothing.
//!
//! Precedence: the standing fault comes first. `unauthorized`, `quota`, `rate_limited`,
//! `server_error`, `unavailable` and `timeout` answer every request without looking at it (as a provider that is away does) and
//! without taking a scripted [`crate::Behaviour`]; the script waits for the fault to clear.
//! `slow` waits `delayMs`, then the request goes on as without a fault (strict checks, key, script
//! or deterministic report). A request that hangs under `timeout` is released when the fault
//! changes or the fake stops, with an HTTP 500 that takes no scripted behaviour (its client has
//! given up long before).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The standing fault's kinds. `None` (no fault) is `Option<Fault>::None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 401 `invalid_api_key` (a revoked key).
    Unauthorized,
    /// HTTP 429 `insufficient_quota` (credits exhausted, a spend limit reached).
    Quota,
    /// HTTP 429 `rate_limit_exceeded`, with `Retry-After` when given.
    RateLimited { retry_after: Option<Duration> },
    /// HTTP 500 `server_error` (an outage).
    ServerError,
    /// HTTP 503 `server_is_overloaded` (the engine overloaded).
    Unavailable,
    /// No answer until the client gives up (or the fault changes).
    Timeout,
    /// A normal answer after `delay`.
    Slow { delay: Duration },
}

/// The default `delayMs` of a `slow` fault sent without one.
pub const DEFAULT_SLOW_MS: u64 = 5_000;

/// The JSON shape of `PUT`/`GET /__sophia/fault`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultBody {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

impl FaultBody {
    pub fn from_fault(fault: Option<Fault>) -> Self {
        let (kind, retry_after_seconds, delay_ms) = match fault {
            None => ("none", None, None),
            Some(Fault::Unauthorized) => ("unauthorized", None, None),
            Some(Fault::Quota) => ("quota", None, None),
            Some(Fault::Unavailable) => ("unavailable", None, None),
            Some(Fault::RateLimited { retry_after }) => ("rate_limited", retry_after.map(|d| d.as_secs()), None),
            Some(Fault::ServerError) => ("server_error", None, None),
            Some(Fault::Timeout) => ("timeout", None, None),
            Some(Fault::Slow { delay }) => ("slow", None, Some(delay.as_millis() as u64)),
        };
        Self { kind: kind.to_owned(), retry_after_seconds, delay_ms }
    }

    /// The fault this body asks for, or why it cannot be read.
    pub fn to_fault(&self) -> Result<Option<Fault>, String> {
        let fault = match self.kind.as_str() {
            "none" => None,
            "unauthorized" => Some(Fault::Unauthorized),
            "quota" => Some(Fault::Quota),
            "unavailable" => Some(Fault::Unavailable),
            "rate_limited" => {
                Some(Fault::RateLimited { retry_after: self.retry_after_seconds.map(Duration::from_secs) })
            }
            "server_error" => Some(Fault::ServerError),
            "timeout" => Some(Fault::Timeout),
            "slow" => Some(Fault::Slow { delay: Duration::from_millis(self.delay_ms.unwrap_or(DEFAULT_SLOW_MS)) }),
            other => {
                return Err(format!(
                    "unknown fault kind {other:?}: none, unauthorized, quota, rate_limited, server_error, unavailable, timeout or slow"
                ));
            }
        };
        if self.retry_after_seconds.is_some() && !matches!(fault, Some(Fault::RateLimited { .. })) {
            return Err("retryAfterSeconds is for kind rate_limited only".into());
        }
        if self.delay_ms.is_some() && !matches!(fault, Some(Fault::Slow { .. })) {
            return Err("delayMs is for kind slow only".into());
        }
        Ok(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_json() {
        for fault in [
            None,
            Some(Fault::Unauthorized),
            Some(Fault::Quota),
            Some(Fault::Unavailable),
            Some(Fault::RateLimited { retry_after: Some(Duration::from_secs(20)) }),
            Some(Fault::RateLimited { retry_after: None }),
            Some(Fault::ServerError),
            Some(Fault::Timeout),
            Some(Fault::Slow { delay: Duration::from_millis(250) }),
        ] {
            let json = serde_json::to_string(&FaultBody::from_fault(fault)).unwrap();
            let back: FaultBody = serde_json::from_str(&json).unwrap();
            assert_eq!(back.to_fault().unwrap(), fault, "{json}");
        }
        assert_eq!(serde_json::to_string(&FaultBody::from_fault(None)).unwrap(), r#"{"kind":"none"}"#);
    }

    #[test]
    fn unknown_kinds_and_misplaced_fields_are_refused() {
        let body = |s: &str| serde_json::from_str::<FaultBody>(s).unwrap().to_fault();
        assert!(body(r#"{"kind":"outage"}"#).unwrap_err().contains("unknown fault kind"));
        assert!(body(r#"{"kind":"server_error","delayMs":5}"#).is_err());
        assert!(body(r#"{"kind":"slow","retryAfterSeconds":5}"#).is_err());
        assert!(serde_json::from_str::<FaultBody>(r#"{"kind":"none","extra":1}"#).is_err());
        assert_eq!(
            body(r#"{"kind":"slow"}"#).unwrap(),
            Some(Fault::Slow { delay: Duration::from_millis(DEFAULT_SLOW_MS) })
        );
    }
}
