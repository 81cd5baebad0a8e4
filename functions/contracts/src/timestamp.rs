use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant carried in a message as an ISO-8601 (RFC 3339) datetime string.
///
/// Accepted: `2026-12-02T17:30:00Z`, with any fraction of a second and a `Z` or numeric offset
/// (normalised to UTC). Rejected: dates without a time, times without a zone, anything else.
/// Written as JavaScript's `Date#toISOString()` does: UTC with milliseconds and `Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(at)
    }
    pub fn now() -> Self {
        Self(Utc::now())
    }
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an ISO-8601 datetime with a time zone (e.g. 2026-12-02T17:30:00.000Z), got {0:?}")]
pub struct InvalidTimestamp(pub String);

impl FromStr for Timestamp {
    type Err = InvalidTimestamp;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // RFC 3339 requires the `T` (or a space, which we refuse as ISO-8601 does not allow it).
        if !s.contains('T') {
            return Err(InvalidTimestamp(s.chars().take(40).collect()));
        }
        DateTime::parse_from_rfc3339(s)
            .map(|dt| Self(dt.with_timezone(&Utc)))
            .map_err(|_| InvalidTimestamp(s.chars().take(40).collect()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Self {
        Self(at)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_like_to_iso_string() {
        let t: Timestamp = "2026-12-02T17:30:00Z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-12-02T17:30:00.000Z");
        let t: Timestamp = "2026-12-02T18:30:00.123456+01:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-12-02T17:30:00.123Z");
    }

    #[test]
    fn rejects_partial_or_zoneless_values() {
        for bad in
            ["2026-12-02", "2026-12-02T17:30:00", "2026-12-02 17:30:00Z", "yesterday", "2026-13-02T17:30:00Z", ""]
        {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad:?} must be rejected");
        }
    }
}
