use std::fmt;
use std::str::FromStr;

use bson::oid::ObjectId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A MongoDB ObjectId as the API writes it into messages: exactly 24 hexadecimal characters.
/// Serialized lower-case (what `ObjectId#toHexString()` produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectIdString(ObjectId);

impl ObjectIdString {
    pub fn new(oid: ObjectId) -> Self {
        Self(oid)
    }
    pub fn oid(&self) -> ObjectId {
        self.0
    }
}

/// Why a string is not an ObjectId.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a 24-character hexadecimal ObjectId, got {0:?}")]
pub struct InvalidObjectId(pub String);

impl FromStr for ObjectIdString {
    type Err = InvalidObjectId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let well_formed = s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !well_formed {
            return Err(InvalidObjectId(truncate_for_error(s)));
        }
        ObjectId::parse_str(s).map(Self).map_err(|_| InvalidObjectId(truncate_for_error(s)))
    }
}

fn truncate_for_error(s: &str) -> String {
    s.chars().take(40).collect()
}

impl fmt::Display for ObjectIdString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_hex())
    }
}

impl Serialize for ObjectIdString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_hex())
    }
}

impl<'de> Deserialize<'de> for ObjectIdString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(ObjectIdString);

        impl $name {
            pub fn new(oid: ObjectId) -> Self {
                Self(ObjectIdString::new(oid))
            }
            /// The raw ObjectId, for database queries.
            pub fn oid(&self) -> ObjectId {
                self.0.oid()
            }
        }

        impl FromStr for $name {
            type Err = InvalidObjectId;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<ObjectId> for $name {
            fn from(oid: ObjectId) -> Self {
                Self::new(oid)
            }
        }
    };
}

id_newtype!(
    /// The `_id` of an interview document.
    InterviewId
);
id_newtype!(
    /// The `_id` of an organization document.
    OrganizationId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_24_hex_in_either_case_and_prints_lower_case() {
        let id: InterviewId = "65A1B2C3D4E5F60718293A4B".parse().unwrap();
        assert_eq!(id.to_string(), "65a1b2c3d4e5f60718293a4b");
    }

    #[test]
    fn rejects_wrong_length_and_non_hex() {
        for bad in [
            "",
            "65a1b2c3d4e5f60718293a4",
            "65a1b2c3d4e5f60718293a4bb",
            "zza1b2c3d4e5f60718293a4b",
            " 5a1b2c3d4e5f60718293a4b",
        ] {
            assert!(bad.parse::<OrganizationId>().is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn multibyte_input_of_24_bytes_is_rejected_without_panicking() {
        let s = "é".repeat(12);
        assert_eq!(s.len(), 24);
        assert!(s.parse::<InterviewId>().is_err());
    }
}
