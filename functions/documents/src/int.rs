//! Integers as other writers store them: `Int32` (Mongoose), `Int64` (the Rust driver), or a
//! `Double` holding an integral value (the mongo shell writes every number literal as a double).
//! A fractional, non-finite or out-of-range double is an error whose message never quotes it.

use std::fmt;

use serde::de::{self, Deserializer, Unexpected, Visitor};

/// The largest integer a double represents exactly (2^53 - 1): beyond it a double may already
/// have lost the value the writer meant.
pub const MAX_EXACT_DOUBLE: f64 = 9_007_199_254_740_991.0;

/// Why a BSON value is not an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAnInteger {
    Fractional,
    NotFinite,
    OutOfRange,
    NotANumber,
}

impl fmt::Display for NotAnInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Fractional => "a number with a fractional part",
            Self::NotFinite => "a non-finite number",
            Self::OutOfRange => "a number out of the integer range",
            Self::NotANumber => "a value that is not a number",
        })
    }
}

/// The integral value of a double, if it holds one exactly.
pub fn from_f64(v: f64) -> Result<i64, NotAnInteger> {
    if !v.is_finite() {
        Err(NotAnInteger::NotFinite)
    } else if v.fract() != 0.0 {
        Err(NotAnInteger::Fractional)
    } else if v.abs() > MAX_EXACT_DOUBLE {
        Err(NotAnInteger::OutOfRange)
    } else {
        Ok(v as i64)
    }
}

/// The integral value of any BSON numeric (for raw reads of a `bson::Document`).
pub fn from_bson(value: &bson::Bson) -> Result<i64, NotAnInteger> {
    match value {
        bson::Bson::Int32(v) => Ok(i64::from(*v)),
        bson::Bson::Int64(v) => Ok(*v),
        bson::Bson::Double(v) => from_f64(*v),
        _ => Err(NotAnInteger::NotANumber),
    }
}

/// The integer at a dotted `path` of `doc` (`credits.consumed`), read with [`from_bson`]: `None`
/// when the field or one of its parents is absent (or a parent is not a document), `Some(Err)`
/// when the value is not an integer (a fractional double is refused, never truncated).
pub fn at(doc: &bson::Document, path: &str) -> Option<Result<i64, NotAnInteger>> {
    let (parents, leaf) = path.rsplit_once('.').map_or((None, path), |(p, l)| (Some(p), l));
    let mut cur = doc;
    for p in parents.into_iter().flat_map(|p| p.split('.')) {
        cur = cur.get_document(p).ok()?;
    }
    cur.get(leaf).map(from_bson)
}

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer (Int32, Int64 or an integral Double)")
    }
    fn visit_i32<E: de::Error>(self, v: i32) -> Result<i64, E> {
        Ok(i64::from(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Other("an integer out of range"), &self))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        from_f64(v).map_err(|why| E::invalid_value(Unexpected::Other(&why.to_string()), &self))
    }
    // Anything else: say what kind it was, never what it said.
    fn visit_str<E: de::Error>(self, _: &str) -> Result<i64, E> {
        Err(E::invalid_type(Unexpected::Other("a string"), &self))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<i64, E> {
        Err(E::invalid_type(Unexpected::Other("a boolean"), &self))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<i64, A::Error> {
        Err(de::Error::invalid_type(Unexpected::Other("a document"), &self))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<i64, A::Error> {
        Err(de::Error::invalid_type(Unexpected::Other("an array"), &self))
    }
    fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
        Err(E::invalid_type(Unexpected::Other("null"), &self))
    }
    fn visit_none<E: de::Error>(self) -> Result<i64, E> {
        self.visit_unit()
    }
}

struct OptIntVisitor;

impl<'de> Visitor<'de> for OptIntVisitor {
    type Value = Option<i64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer (Int32, Int64 or an integral Double) or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(IntVisitor).map(Some)
    }
}

/// `deserialize_with` for a required integer field.
pub fn i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(IntVisitor)
}

/// `deserialize_with` for an optional integer field (absent needs `#[serde(default)]`; `null`
/// reads as `None`).
pub fn opt_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    deserializer.deserialize_option(OptIntVisitor)
}

/// `deserialize_with` for an integer field whose absence or `null` means 0 (pair it with
/// `#[serde(default)]`).
pub fn i64_or_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    Ok(opt_i64(deserializer)?.unwrap_or(0))
}

/// `deserialize_with` for an `i32` counter (`attemptCount`): any integral numeric in range;
/// `null` reads as 0 (pair it with `#[serde(default)]` for absence).
pub fn i32_or_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let v = opt_i64(deserializer)?.unwrap_or(0);
    i32::try_from(v).map_err(|_| de::Error::invalid_value(Unexpected::Other("an integer out of range"), &"an i32"))
}

#[cfg(test)]
mod tests {
    use bson::Bson;

    use super::*;

    #[test]
    fn doubles_are_integers_only_when_exact() {
        assert_eq!(from_f64(10.0), Ok(10));
        assert_eq!(from_f64(-3.0), Ok(-3));
        assert_eq!(from_f64(2.5), Err(NotAnInteger::Fractional));
        assert_eq!(from_f64(f64::NAN), Err(NotAnInteger::NotFinite));
        assert_eq!(from_f64(f64::NEG_INFINITY), Err(NotAnInteger::NotFinite));
        assert_eq!(from_f64(MAX_EXACT_DOUBLE), Ok(9_007_199_254_740_991));
        assert_eq!(from_f64(9_007_199_254_740_992.0), Err(NotAnInteger::OutOfRange));
        assert_eq!(from_bson(&Bson::Int32(7)), Ok(7));
        assert_eq!(from_bson(&Bson::Int64(i64::MAX)), Ok(i64::MAX));
        assert_eq!(from_bson(&Bson::String("7".into())), Err(NotAnInteger::NotANumber));
        assert_eq!(from_bson(&Bson::Null), Err(NotAnInteger::NotANumber));
    }

    #[test]
    fn an_integer_at_a_dotted_path() {
        let d = bson::doc! {"a": 1.0, "credits": {"consumed": 3_i64, "half": 2.5, "inner": {"n": 4}}, "text": "x"};
        assert_eq!(at(&d, "a"), Some(Ok(1)));
        assert_eq!(at(&d, "credits.consumed"), Some(Ok(3)));
        assert_eq!(at(&d, "credits.inner.n"), Some(Ok(4)));
        assert_eq!(at(&d, "credits.half"), Some(Err(NotAnInteger::Fractional)), "refused, not truncated");
        assert_eq!(at(&d, "credits.absent"), None);
        assert_eq!(at(&d, "text.n"), None, "a parent that is not a document");
        assert_eq!(at(&d, "missing.n"), None);
    }
}
