use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::{ContractError, EventType, InterviewId, OrganizationId, Timestamp};

/// A message that a consumer can take off a queue.
pub trait QueueMessage: Sized + Send + 'static {
    /// Parses a raw SQS body. The only way to obtain the message from the wire.
    fn parse(body: &str) -> Result<Self, ContractError>;
    /// What this message is, for routing and logs.
    fn event_type(&self) -> EventType;
    /// Records that share any of these keys must not be processed concurrently (they write the
    /// same organization's balances or the same interview).
    fn ordering_keys(&self) -> [OrderingKey; 2];
    fn interview_id(&self) -> InterviewId;
    fn organization_id(&self) -> OrganizationId;
}

/// A key that serialises processing: two records with an equal key run one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrderingKey {
    Organization(OrganizationId),
    Interview(InterviewId),
}

fn keys(org: OrganizationId, interview: InterviewId) -> [OrderingKey; 2] {
    [OrderingKey::Organization(org), OrderingKey::Interview(interview)]
}

/// Seconds an interview lasted: any finite, non-negative JSON number no larger than JavaScript's
/// `Number.MAX_SAFE_INTEGER`, fractions included (the API computes `(end - start) / 1000`).
/// Billing uses the whole seconds ([`DurationSeconds::get`], floored), and
/// `floor(floor(s) / 60) == floor(s / 60)`, so minutes are `floor(durationSeconds / 60)`.
/// Negative numbers, strings, `null` and other non-numbers are refused; `-0` is 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct DurationSeconds(f64);

impl DurationSeconds {
    pub const MAX: u64 = 9_007_199_254_740_991;

    /// Whole seconds; `None` above [`Self::MAX`].
    pub fn new(seconds: u64) -> Option<Self> {
        (seconds <= Self::MAX).then_some(Self(seconds as f64))
    }

    /// Any finite number of seconds in `0..=MAX`, fractions included; `None` otherwise
    /// (negative, NaN, infinite, too large). `-0.0` becomes `0`.
    pub fn from_secs_f64(seconds: f64) -> Option<Self> {
        let ok = seconds.is_finite() && seconds >= 0.0 && seconds <= Self::MAX as f64;
        // `+ 0.0` turns -0.0 into 0.0, so equal durations have equal bits.
        ok.then_some(Self(seconds + 0.0))
    }

    /// The whole seconds (floored): what billing divides by 60.
    pub fn get(self) -> u64 {
        self.0.floor() as u64
    }

    /// The duration as received, fraction included.
    pub fn as_secs_f64(self) -> f64 {
        self.0
    }

    fn is_whole(self) -> bool {
        self.0.fract() == 0.0
    }
}

// The value is never NaN and never -0.0 (see the constructors), so bit equality is numeric
// equality and the order is total.
impl PartialEq for DurationSeconds {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for DurationSeconds {}
impl std::hash::Hash for DurationSeconds {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}
impl PartialOrd for DurationSeconds {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for DurationSeconds {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl fmt::Display for DurationSeconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_whole() { self.get().fmt(f) } else { self.0.fmt(f) }
    }
}

/// A whole value is written as an integer (`754`, as JavaScript's `JSON.stringify` does), a
/// fractional one as the shortest number that reads back the same (`119.5`).
impl Serialize for DurationSeconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_whole() { s.serialize_u64(self.get()) } else { s.serialize_f64(self.0) }
    }
}

impl<'de> Deserialize<'de> for DurationSeconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl V {
            // Refusals say what kind of value came, never the value itself (a string could be
            // anything the producer put there).
            fn refuse<E: de::Error>(&self, what: &str) -> E {
                E::custom(format_args!("expected {}, got {what}", Expecting))
            }
        }
        struct Expecting;
        impl fmt::Display for Expecting {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a finite, non-negative number of seconds up to {}", DurationSeconds::MAX)
            }
        }
        impl<'de> Visitor<'de> for V {
            type Value = DurationSeconds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{Expecting}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                DurationSeconds::new(v).ok_or_else(|| self.refuse("a number above the maximum"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(self.refuse("a negative number")),
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                DurationSeconds::from_secs_f64(v).ok_or_else(|| {
                    self.refuse(if v.is_nan() {
                        "NaN"
                    } else if v < 0.0 {
                        "a negative number"
                    } else {
                        "a number above the maximum"
                    })
                })
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Err(self.refuse("a string"))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Err(self.refuse("a boolean"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(self.refuse("null"))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(self.refuse("null"))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
                Err(self.refuse("an array"))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
                Err(self.refuse("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

/// `interview.completed`: the bot reported a finished interview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterviewCompleted {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    pub completed_at: Timestamp,
    pub duration_seconds: DurationSeconds,
}

/// The literal `"interview.failed"` of the failed shape's `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FailedTag {
    #[default]
    #[serde(rename = "interview.failed")]
    InterviewFailed,
}

/// The longest `failureReason` the contract carries, in characters (Unicode code points; JSON
/// Schema's `maxLength` counts the same way). A failure reason is a sentence from the bot or the
/// API ("bot could not join the call"); 4096 characters leave room for an error message with
/// context, and even escaped to 6 bytes each they stay at 24 KiB, far below SQS's 256 KiB message
/// limit. The producers refuse a longer reason (the TypeScript package before sending); a longer
/// reason already on a queue fails the parse like any other contract violation: the consumer drops
/// it with the `invalid message dropped` warning (ids and timestamps in its redacted preview, for a
/// replay with a shorter reason) and counts it in `RecordsDroppedInvalid`, which alarms.
pub const FAILURE_REASON_MAX_CHARS: usize = 4096;

/// `interview.failed`: the bot reported an interview that could not be held.
/// `failure_reason` is carried for the record and not used by settlement (as in the replaced system, docs/design.md#the-system-it-replaces); it is at
/// most [`FAILURE_REASON_MAX_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterviewFailed {
    #[serde(rename = "type")]
    pub tag: FailedTag,
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
    #[serde(deserialize_with = "bounded_failure_reason")]
    pub failure_reason: String,
    pub failed_at: Timestamp,
}

/// A `failureReason` of at most [`FAILURE_REASON_MAX_CHARS`] characters; the error names the bound
/// and the length found, never the text.
fn bounded_failure_reason<'de, D: de::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let reason = String::deserialize(d)?;
    let chars = reason.chars().count();
    if chars > FAILURE_REASON_MAX_CHARS {
        return Err(de::Error::custom(format_args!(
            "expected a string of at most {FAILURE_REASON_MAX_CHARS} characters, got a string of {chars} characters"
        )));
    }
    Ok(reason)
}

/// `report.generate`: build the report of a settled, completed interview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportGenerate {
    pub interview_id: InterviewId,
    pub organization_id: OrganizationId,
}

/// What the interview queue carries: the Zod union of the API's schemas (docs/design.md, "Its consumer wrapper"). A body with a `type` key is the
/// failed shape (and `type` must then be `"interview.failed"`); any other body is the completed
/// shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum InterviewQueueMessage {
    Completed(InterviewCompleted),
    Failed(InterviewFailed),
}

fn json_object(body: &str) -> Result<serde_json::Map<String, Value>, ContractError> {
    let value: Value = serde_json::from_str(body).map_err(|e| ContractError::NotJson(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Err(ContractError::NotAnObject("null")),
        Value::Bool(_) => Err(ContractError::NotAnObject("a boolean")),
        Value::Number(_) => Err(ContractError::NotAnObject("a number")),
        Value::String(_) => Err(ContractError::NotAnObject("a string")),
        Value::Array(_) => Err(ContractError::NotAnObject("an array")),
    }
}

fn from_object<T: DeserializeOwned + schemars::JsonSchema>(
    schema: &'static str,
    map: serde_json::Map<String, Value>,
) -> Result<T, ContractError> {
    let mut rest = map.clone();
    let first = match one_error::<T>(Value::Object(map.clone())) {
        Ok(message) => return Ok(message),
        Err(first) => first,
    };
    // Every invalid field, not only the first: without each field found invalid, parse what is
    // left again, until it parses or a field is missing (each round removes one top-level field,
    // so this ends); then every required field the body lacks, from the message's schema.
    let mut reasons = Vec::new();
    let mut found = first;
    while !found.missing {
        reasons.push(found.reason.clone());
        let Some(field) = found.field.clone().filter(|f| rest.contains_key(f)) else { break };
        rest.remove(&field);
        match one_error::<T>(Value::Object(rest.clone())) {
            Ok(_) => break,
            Err(next) => found = next,
        }
    }
    let required = schemars::schema_for!(T).to_value();
    for field in required.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if !map.contains_key(field) {
            reasons.push(format!("missing field `{field}`"));
        }
    }
    if reasons.is_empty() {
        // Only a missing field, which the schema does not list (cannot happen for the contract's
        // messages): serde's own words.
        reasons.push(found.reason);
    }
    Err(ContractError::Schema { schema, reason: reasons.join("; ") })
}

/// One parse error: why (naming the field, never its value), the top-level field it is in, and
/// whether it is a missing field.
struct FieldError {
    reason: String,
    field: Option<String>,
    /// A missing field (reported at the object).
    missing: bool,
}

fn one_error<T: DeserializeOwned>(value: Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // Missing-field errors are reported at the object (`.`) and name the field only. Every
        // other error names the field's path, what was expected and the kind of value found,
        // never the value: a message's strings can be candidate text (docs/design.md).
        if path == "." && inner.starts_with("missing field") {
            return FieldError { reason: inner, field: None, missing: true };
        }
        let found = pointer(&value, &path).map_or_else(|| "an invalid value".to_owned(), kind_of);
        let field = path.split(['.', '[']).find(|s| !s.is_empty()).map(str::to_owned);
        FieldError { reason: format!("{path}: {}, got {found}", expected(&inner)), field, missing: false }
    })
}

/// The "expected ..." clause of a serde error, which comes from the types' own descriptions:
/// serde's `invalid type: <value>, expected <what>` (the value comes first, so the last
/// `, expected ` starts the clause) or the contract types' `expected <what>, got <value>`.
fn expected(message: &str) -> String {
    let clause = if message.starts_with("expected ") {
        message.split(", got ").next().unwrap_or(message)
    } else if let Some(at) = message.rfind(", expected ") {
        &message[at + 2..]
    } else {
        "expected a valid value"
    };
    clause.chars().take(160).collect()
}

/// The value at a serde path (`a.b[0]`), if there is one.
fn pointer<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = value;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indexes) = segment.split_once('[').map_or((segment, ""), |(k, rest)| (k, rest));
        if !key.is_empty() {
            current = current.get(key)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            current = current.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(current)
}

/// What a JSON value is, without its content: `a string of 12 characters`, `a number`, ...
pub(crate) fn kind_of(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Number(n) if n.is_f64() => "a fractional or out-of-range number".to_owned(),
        Value::Number(n) if n.as_i64().is_some_and(|i| i < 0) => "a negative number".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object with {} keys", o.len()),
    }
}

/// A `type` value: named when it is one of the contract's event types, else only its kind.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) if crate::EventType::ALL.iter().any(|t| t.as_str() == s) => format!("{s:?}"),
        other => kind_of(other),
    }
}

impl InterviewCompleted {
    pub const SCHEMA_NAME: &'static str = "interview.completed";
}
impl InterviewFailed {
    pub const SCHEMA_NAME: &'static str = "interview.failed";
}
impl ReportGenerate {
    pub const SCHEMA_NAME: &'static str = "report.generate";
}

impl QueueMessage for InterviewQueueMessage {
    fn parse(body: &str) -> Result<Self, ContractError> {
        let map = json_object(body)?;
        match map.get("type") {
            None => from_object(InterviewCompleted::SCHEMA_NAME, map).map(Self::Completed),
            Some(Value::String(t)) if t == "interview.failed" => {
                from_object(InterviewFailed::SCHEMA_NAME, map).map(Self::Failed)
            }
            Some(other) => Err(ContractError::UnknownType(describe(other))),
        }
    }
    fn event_type(&self) -> EventType {
        match self {
            Self::Completed(_) => EventType::InterviewCompleted,
            Self::Failed(_) => EventType::InterviewFailed,
        }
    }
    fn ordering_keys(&self) -> [OrderingKey; 2] {
        keys(self.organization_id(), self.interview_id())
    }
    fn interview_id(&self) -> InterviewId {
        match self {
            Self::Completed(m) => m.interview_id,
            Self::Failed(m) => m.interview_id,
        }
    }
    fn organization_id(&self) -> OrganizationId {
        match self {
            Self::Completed(m) => m.organization_id,
            Self::Failed(m) => m.organization_id,
        }
    }
}

/// The failed-only handler's message: exactly the failed shape.
impl QueueMessage for InterviewFailed {
    fn parse(body: &str) -> Result<Self, ContractError> {
        match InterviewQueueMessage::parse(body)? {
            InterviewQueueMessage::Failed(m) => Ok(m),
            InterviewQueueMessage::Completed(_) => {
                Err(ContractError::Schema { schema: Self::SCHEMA_NAME, reason: "missing field `type`".to_owned() })
            }
        }
    }
    fn event_type(&self) -> EventType {
        EventType::InterviewFailed
    }
    fn ordering_keys(&self) -> [OrderingKey; 2] {
        keys(self.organization_id, self.interview_id)
    }
    fn interview_id(&self) -> InterviewId {
        self.interview_id
    }
    fn organization_id(&self) -> OrganizationId {
        self.organization_id
    }
}

impl QueueMessage for ReportGenerate {
    fn parse(body: &str) -> Result<Self, ContractError> {
        from_object(Self::SCHEMA_NAME, json_object(body)?)
    }
    fn event_type(&self) -> EventType {
        EventType::ReportGenerate
    }
    fn ordering_keys(&self) -> [OrderingKey; 2] {
        keys(self.organization_id, self.interview_id)
    }
    fn interview_id(&self) -> InterviewId {
        self.interview_id
    }
    fn organization_id(&self) -> OrganizationId {
        self.organization_id
    }
}

impl InterviewFailed {
    pub fn new(
        interview_id: InterviewId,
        organization_id: OrganizationId,
        failure_reason: String,
        failed_at: Timestamp,
    ) -> Self {
        Self { tag: FailedTag::InterviewFailed, interview_id, organization_id, failure_reason, failed_at }
    }
}

/// The wire body of a message: compact JSON, fields in the order the API's producers write them (docs/design.md, "Its producers").
pub fn to_body<T: Serialize>(message: &T) -> String {
    serde_json::to_string(message).expect("contract types always serialise")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const I: &str = "65a1b2c3d4e5f60718293a4b";
    const O: &str = "65a1b2c3d4e5f60718293a4c";

    fn completed_body(duration: &str) -> String {
        format!(
            r#"{{"interviewId":"{I}","organizationId":"{O}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":{duration}}}"#
        )
    }

    #[test]
    fn completed_shape_parses_and_serialises_byte_for_byte() {
        let body = completed_body("754");
        let m = InterviewQueueMessage::parse(&body).unwrap();
        assert_eq!(m.event_type(), EventType::InterviewCompleted);
        assert_eq!(to_body(&m), body);
    }

    #[test]
    fn failed_shape_is_chosen_by_the_type_key() {
        let body = format!(
            r#"{{"type":"interview.failed","interviewId":"{I}","organizationId":"{O}","failureReason":"bot crashed","failedAt":"2026-12-02T17:30:00.000Z"}}"#
        );
        let m = InterviewQueueMessage::parse(&body).unwrap();
        assert!(matches!(&m, InterviewQueueMessage::Failed(f) if f.failure_reason == "bot crashed"));
        assert_eq!(to_body(&m), body);
        assert_eq!(to_body(&InterviewFailed::parse(&body).unwrap()), body);
    }

    #[test]
    fn a_type_other_than_interview_failed_is_rejected_not_treated_as_completed() {
        for t in [r#""interview.completed""#, "null", "1", r#""""#] {
            let body = format!(
                r#"{{"type":{t},"interviewId":"{I}","organizationId":"{O}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":1}}"#
            );
            assert!(matches!(InterviewQueueMessage::parse(&body), Err(ContractError::UnknownType(_))), "{t}");
        }
    }

    #[test]
    fn unknown_fields_are_ignored_as_zod_does() {
        let body = format!(
            r#"{{"interviewId":"{I}","organizationId":"{O}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":5,"extra":{{"x":1}}}}"#
        );
        assert!(InterviewQueueMessage::parse(&body).is_ok());
    }

    fn duration_of(body: &str) -> DurationSeconds {
        match InterviewQueueMessage::parse(body) {
            Ok(InterviewQueueMessage::Completed(m)) => m.duration_seconds,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn duration_accepts_any_finite_non_negative_number_up_to_max_safe_integer() {
        // (wire value, whole seconds billed from, value as received)
        let max = DurationSeconds::MAX as f64;
        for (wire, whole, exact) in [
            ("0", 0, 0.0),
            ("-0.0", 0, 0.0),
            ("59.999", 59, 59.999),
            ("60", 60, 60.0),
            ("119.5", 119, 119.5),
            ("120.0", 120, 120.0),
            ("1.2e2", 120, 120.0),
            ("0.001", 0, 0.001),
            ("9007199254740991", DurationSeconds::MAX, max),
            ("86399.75", 86_399, 86_399.75),
        ] {
            let d = duration_of(&completed_body(wire));
            assert_eq!((d.get(), d.as_secs_f64()), (whole, exact), "{wire}");
            // Billing divides the whole seconds: floor(floor(s) / 60) == floor(s / 60).
            assert_eq!(d.get() / 60, (d.as_secs_f64() / 60.0).floor() as u64, "{wire}");
        }
        assert_eq!(duration_of(&completed_body("-0.0")), DurationSeconds::new(0).unwrap(), "-0 is 0");
    }

    #[test]
    fn a_fractional_duration_round_trips_and_a_whole_one_is_written_as_an_integer() {
        for (wire, written) in [("119.5", "119.5"), ("59.999", "59.999"), ("120.0", "120"), ("0", "0"), ("-0.0", "0")] {
            let m = InterviewQueueMessage::parse(&completed_body(wire)).unwrap();
            assert_eq!(to_body(&m), completed_body(written), "{wire}");
        }
        assert_eq!(DurationSeconds::from_secs_f64(119.5).unwrap().to_string(), "119.5");
        assert_eq!(DurationSeconds::new(754).unwrap().to_string(), "754");
    }

    #[test]
    fn duration_refuses_negatives_non_numbers_and_values_beyond_max_safe_integer() {
        for bad in ["-1", "-0.5", "\"60\"", "null", "true", "[60]", "{\"s\":60}", "9007199254740992", "1e300"] {
            let err = InterviewQueueMessage::parse(&completed_body(bad)).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, ContractError::Schema { .. }), "{bad}: {err:?}");
            assert!(text.contains("durationSeconds"), "the reason names the field: {text}");
        }
        // 1e400 is not a JSON number any parser keeps (JavaScript reads Infinity; JSON.stringify
        // writes null): not JSON here.
        assert!(matches!(InterviewQueueMessage::parse(&completed_body("1e400")), Err(ContractError::NotJson(_))));
        for v in [f64::NAN, f64::INFINITY, -1.0, 9_007_199_254_740_992.0] {
            assert_eq!(DurationSeconds::from_secs_f64(v), None, "{v}");
        }
    }

    #[test]
    fn a_refused_duration_never_echoes_a_string_value() {
        let marker = "MARKER-candidate-said-something";
        let err = InterviewQueueMessage::parse(&completed_body(&format!("\"{marker}\""))).unwrap_err().to_string();
        assert!(!err.contains(marker), "{err}");
        assert!(err.contains("durationSeconds") && err.contains("a string"), "{err}");
    }

    #[test]
    fn every_field_of_the_completed_shape_is_required() {
        for field in ["interviewId", "organizationId", "completedAt", "durationSeconds"] {
            let mut v: Value = serde_json::from_str(&completed_body("1")).unwrap();
            v.as_object_mut().unwrap().remove(field);
            let err = InterviewQueueMessage::parse(&v.to_string()).unwrap_err();
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn non_objects_and_non_json_are_rejected_with_what_they_were() {
        assert!(matches!(InterviewQueueMessage::parse("not json"), Err(ContractError::NotJson(_))));
        assert_eq!(ReportGenerate::parse("[1]").unwrap_err(), ContractError::NotAnObject("an array"));
        assert_eq!(ReportGenerate::parse("null").unwrap_err(), ContractError::NotAnObject("null"));
    }

    #[test]
    fn report_generate_round_trips() {
        let body = format!(r#"{{"interviewId":"{I}","organizationId":"{O}"}}"#);
        let m = ReportGenerate::parse(&body).unwrap();
        assert_eq!(to_body(&m), body);
        assert_eq!(m.ordering_keys()[0], OrderingKey::Organization(O.parse().unwrap()));
    }

    /// docs/design.md: errors name the field, never its value. A marker in every position where a
    /// producer could put free text, with every wrong type, never reaches the error.
    #[test]
    fn schema_errors_name_the_field_and_what_was_expected_never_the_value() {
        const MARKER: &str = "Jane Doe said MARKER-7f3a";
        let long = format!("{MARKER} {}", "x".repeat(100));
        let cases: Vec<(Value, &str, &str)> = vec![
            (
                json!({"interviewId": MARKER}),
                "interviewId: expected a 24-character hexadecimal ObjectId",
                "a string of 25 characters",
            ),
            (
                json!({"organizationId": long}),
                "organizationId: expected a 24-character hexadecimal ObjectId",
                "a string of",
            ),
            (json!({"completedAt": MARKER}), "completedAt: expected an ISO-8601 datetime", "a string of 25"),
            (json!({"durationSeconds": MARKER}), "durationSeconds: expected a finite, non-negative", "a string of 25"),
            (json!({"durationSeconds": [MARKER]}), "durationSeconds: expected", "an array of 1 items"),
            (json!({"durationSeconds": {"k": MARKER}}), "durationSeconds: expected", "an object with 1 keys"),
            (json!({"durationSeconds": -5}), "durationSeconds: expected", "a negative number"),
        ];
        let base =
            json!({"interviewId": I, "organizationId": O, "completedAt": "2026-12-02T17:30:00Z", "durationSeconds": 1});
        for (patch, says, found) in cases {
            let mut body = base.clone();
            for (k, v) in patch.as_object().unwrap() {
                body[k] = v.clone();
            }
            let err = InterviewQueueMessage::parse(&body.to_string()).unwrap_err().to_string();
            assert!(!err.contains("MARKER"), "the value leaked: {err}");
            assert!(err.contains(says) && err.contains(found), "{err:?} should say {says:?} and {found:?}");
        }
        let failed = |reason: Value, kind: Value| {
            json!({"type": kind, "interviewId": I, "organizationId": O, "failureReason": reason, "failedAt": MARKER})
                .to_string()
        };
        for body in [
            failed(json!(MARKER), json!("interview.failed")),
            failed(json!([MARKER]), json!("interview.failed")),
            failed(json!({"text": MARKER}), json!("interview.failed")),
            failed(json!(MARKER), json!(MARKER)),
            failed(json!(MARKER), json!({"t": MARKER})),
        ] {
            let err = InterviewQueueMessage::parse(&body).unwrap_err().to_string();
            assert!(!err.contains("MARKER"), "the value leaked: {err}");
        }
        let err = InterviewQueueMessage::parse(&failed(json!(1), json!("interview.failed"))).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "body does not match the interview.failed schema: failureReason: expected a string, got a number; failedAt: expected"
            ) && err.ends_with("got a string of 25 characters"),
            "both invalid fields are named: {err}"
        );
        let err = InterviewQueueMessage::parse(&failed(json!("x"), json!(MARKER))).unwrap_err().to_string();
        assert!(err.ends_with("got a string of 25 characters"), "{err}");
        let err = InterviewQueueMessage::parse(&failed(json!("x"), json!("report.generate"))).unwrap_err().to_string();
        assert!(err.ends_with(r#"got "report.generate""#), "a known event type is named: {err}");
    }

    /// The drop reason names every invalid field, not only the first (docs/runbook.md, "Invalid
    /// messages dropped"); a field that is only missing is named as missing.
    #[test]
    fn every_invalid_field_is_named() {
        let body =
            json!({"interviewId": "nope", "organizationId": O, "completedAt": "yesterday", "durationSeconds": -5});
        let err = InterviewQueueMessage::parse(&body.to_string()).unwrap_err().to_string();
        for field in ["interviewId: expected", "completedAt: expected", "durationSeconds: expected"] {
            assert!(err.contains(field), "{field} is named: {err}");
        }
        assert_eq!(err.matches("; ").count(), 2, "three reasons, each once: {err}");
        let missing = json!({"interviewId": I, "organizationId": O, "completedAt": "yesterday"});
        let err = InterviewQueueMessage::parse(&missing.to_string()).unwrap_err().to_string();
        assert!(err.contains("completedAt: expected") && err.contains("missing field `durationSeconds`"), "{err}");
    }

    #[test]
    fn a_failure_reason_is_accepted_at_its_limit_and_refused_past_it() {
        let body = |reason: &str| {
            json!({"type": "interview.failed", "interviewId": I, "organizationId": O, "failureReason": reason, "failedAt": "2026-12-02T17:30:00.000Z"})
                .to_string()
        };
        // Code points, not bytes: a 4-byte character counts once.
        let at_limit = "\u{1F600}".repeat(FAILURE_REASON_MAX_CHARS);
        match InterviewQueueMessage::parse(&body(&at_limit)).unwrap() {
            InterviewQueueMessage::Failed(f) => assert_eq!(f.failure_reason.chars().count(), FAILURE_REASON_MAX_CHARS),
            other => panic!("{other:?}"),
        }
        let past = "M".repeat(FAILURE_REASON_MAX_CHARS + 1);
        let err = InterviewQueueMessage::parse(&body(&past)).unwrap_err().to_string();
        assert_eq!(
            err,
            "body does not match the interview.failed schema: failureReason: expected a string of at most 4096 characters, got a string of 4097 characters"
        );
        assert!(InterviewFailed::parse(&body(&past)).is_err(), "the failed-only parser applies the same bound");
    }

    #[test]
    fn the_failed_only_parser_refuses_the_completed_shape() {
        assert!(InterviewFailed::parse(&completed_body("1")).is_err());
    }
}
