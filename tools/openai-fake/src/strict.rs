//! What the real Chat Completions API rejects before it runs a model, checked here with the same
//! status and error body: a body that is not a JSON object, an unknown parameter, a missing
//! `model` or `messages`, a `temperature` out of range, and a `response_format` `json_schema`
//! with `strict: true` that breaks the documented strict-mode rules and limits
//! (OpenAI's Structured Outputs guide, https://platform.openai.com/docs/guides/structured-outputs):
//!
//! - the root is an object schema, not `anyOf`;
//! - every object has `additionalProperties: false` and lists every property in `required`;
//! - no unsupported keyword (`allOf`, `not`, `if`/`then`/`else`, `dependentRequired`,
//!   `dependentSchemas`, `patternProperties`, `minLength`/`maxLength`, ...);
//! - at most 5,000 properties and 10 levels of nesting; at most 1,000 enum values; the property
//!   names, enum values and const values together at most 120,000 characters;
//! - `$ref` to `#` or `#/$defs/...` is followed (recursion is allowed).

use serde_json::{Map, Value};

/// A rejection: HTTP 400 with OpenAI's error body.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub message: String,
    pub param: Option<String>,
    pub code: Option<String>,
}

impl Rejection {
    fn new(message: impl Into<String>, param: Option<&str>, code: Option<&str>) -> Self {
        Self { message: message.into(), param: param.map(str::to_owned), code: code.map(str::to_owned) }
    }
}

/// The request parameters of `POST /v1/chat/completions` (API reference, 2026).
pub const KNOWN_PARAMETERS: &[&str] = &[
    "model",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

/// Keywords strict mode does not support.
pub const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "contains",
    "uniqueItems",
];

/// The most output tokens of the models this project may be configured with (OpenAI's model
/// pages, https://platform.openai.com/docs/models); `max_completion_tokens` above it is rejected as the API does.
pub const MODEL_MAX_OUTPUT_TOKENS: &[(&str, u64)] = &[
    ("gpt-4.1-mini", 32_768),
    ("gpt-4.1", 32_768),
    ("gpt-4.1-nano", 32_768),
    ("gpt-4o-mini", 16_384),
    ("gpt-4o", 16_384),
];

pub const MAX_PROPERTIES: usize = 5_000;
pub const MAX_NESTING: usize = 10;
pub const MAX_ENUM_VALUES: usize = 1_000;
pub const MAX_SCHEMA_STRING_CHARS: usize = 120_000;

/// Checks a request body as the API does. `Ok(())`: a model would run.
pub fn check_request(body: &Value) -> Result<(), Rejection> {
    let Some(obj) = body.as_object() else {
        return Err(Rejection::new(
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
            None,
            None,
        ));
    };
    if let Some(unknown) = obj.keys().find(|k| !KNOWN_PARAMETERS.contains(&k.as_str())) {
        return Err(Rejection::new(format!("Unrecognized request argument supplied: {unknown}"), None, None));
    }
    match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => {}
        _ => return Err(Rejection::new("you must provide a model parameter", None, None)),
    }
    check_messages(obj)?;
    check_temperature(obj)?;
    check_max_completion_tokens(obj)?;
    if let Some(format) = obj.get("response_format") {
        check_response_format(format)?;
    }
    Ok(())
}

/// `messages`: a non-empty array, each with a known role.
fn check_messages(obj: &Map<String, Value>) -> Result<(), Rejection> {
    match obj.get("messages") {
        Some(Value::Array(ms)) if !ms.is_empty() => {
            for (i, m) in ms.iter().enumerate() {
                let role = m["role"].as_str().unwrap_or_default();
                if !["system", "developer", "user", "assistant", "tool", "function"].contains(&role) {
                    let param = format!("messages.[{i}].role");
                    return Err(Rejection::new(
                        format!("Invalid value for '{param}'."),
                        Some(&param),
                        Some("invalid_value"),
                    ));
                }
            }
        }
        Some(Value::Array(_)) => {
            return Err(Rejection::new("[] is too short - 'messages'", Some("messages"), Some("empty_array")));
        }
        _ => return Err(Rejection::new("Missing required parameter: 'messages'.", Some("messages"), None)),
    }
    Ok(())
}

/// `temperature`, when given: 0 to 2.
fn check_temperature(obj: &Map<String, Value>) -> Result<(), Rejection> {
    if let Some(t) = obj.get("temperature").filter(|t| !t.is_null()) {
        match t.as_f64() {
            Some(t) if (0.0..=2.0).contains(&t) => {}
            Some(t) if t > 2.0 => {
                return Err(Rejection::new(
                    format!(
                        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got {t} instead."
                    ),
                    Some("temperature"),
                    Some("decimal_above_max_value"),
                ));
            }
            _ => {
                return Err(Rejection::new(
                    "Invalid 'temperature': expected a number between 0 and 2.",
                    Some("temperature"),
                    Some("invalid_value"),
                ));
            }
        }
    }
    Ok(())
}

/// `max_completion_tokens`, when given: at least 1, at most what the model supports.
fn check_max_completion_tokens(obj: &Map<String, Value>) -> Result<(), Rejection> {
    if let Some(n) = obj.get("max_completion_tokens").filter(|n| !n.is_null())
        && n.as_u64().is_none_or(|n| n < 1)
    {
        return Err(Rejection::new(
            "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1.",
            Some("max_completion_tokens"),
            Some("integer_below_min_value"),
        ));
    }
    let model = obj.get("model").and_then(Value::as_str).unwrap_or_default();
    let limit = MODEL_MAX_OUTPUT_TOKENS.iter().find(|(m, _)| *m == model).map(|(_, l)| *l);
    if let (Some(limit), Some(n)) = (limit, obj.get("max_completion_tokens").and_then(Value::as_u64))
        && n > limit
    {
        return Err(Rejection::new(
            format!(
                "max_tokens is too large: {n}. This model supports at most {limit} completion tokens, whereas you provided {n}."
            ),
            Some("max_tokens"),
            Some("invalid_value"),
        ));
    }
    Ok(())
}

fn check_response_format(format: &Value) -> Result<(), Rejection> {
    match format["type"].as_str() {
        Some("text" | "json_object") => Ok(()),
        Some("json_schema") => {
            let js = &format["json_schema"];
            let name = js["name"].as_str().unwrap_or_default();
            let valid_name = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid_name {
                return Err(Rejection::new(
                    "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                    Some("response_format.json_schema.name"),
                    Some("invalid_value"),
                ));
            }
            if js["strict"] != Value::Bool(true) {
                return Ok(());
            }
            let schema = &js["schema"];
            let problems = strict_problems(schema);
            match problems.first() {
                None => Ok(()),
                Some(first) => Err(Rejection::new(
                    format!("Invalid schema for response_format '{name}': {first}"),
                    Some("response_format"),
                    None,
                )),
            }
        }
        _ => Err(Rejection::new(
            "Invalid value for 'response_format.type'.",
            Some("response_format.type"),
            Some("invalid_value"),
        )),
    }
}

struct Walk<'a> {
    root: &'a Value,
    problems: Vec<String>,
    properties: usize,
    enum_values: usize,
    string_chars: usize,
    /// `$ref`s being expanded (a recursive schema is walked once per reference chain).
    expanding: Vec<String>,
}

fn is_object_type(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    }
}

/// Every strict-mode violation of `schema`, as OpenAI words them (`In context=(...)`).
pub fn strict_problems(schema: &Value) -> Vec<String> {
    let mut w = Walk {
        root: schema,
        problems: Vec::new(),
        properties: 0,
        enum_values: 0,
        string_chars: 0,
        expanding: Vec::new(),
    };
    match schema.as_object() {
        Some(root) if is_object_type(root) && !root.contains_key("anyOf") => {}
        _ => w.problems.push("schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.".to_owned()),
    }
    w.node(schema, &[], 1);
    if w.properties > MAX_PROPERTIES {
        w.problems.push(format!("too many object properties: {} (at most {MAX_PROPERTIES}).", w.properties));
    }
    if w.enum_values > MAX_ENUM_VALUES {
        w.problems.push(format!("too many enum values: {} (at most {MAX_ENUM_VALUES}).", w.enum_values));
    }
    if w.string_chars > MAX_SCHEMA_STRING_CHARS {
        w.problems.push(format!(
            "the total string length of property names, enum values and const values is {} (at most {MAX_SCHEMA_STRING_CHARS}).",
            w.string_chars
        ));
    }
    w.problems
}

impl Walk<'_> {
    fn context(path: &[String]) -> String {
        format!("In context=({})", path.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(", "))
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        if reference == "#" {
            return Some(self.root);
        }
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn node(&mut self, node: &Value, path: &[String], depth: usize) {
        let Some(obj) = node.as_object() else {
            self.problems.push(format!("{}, schema must be an object.", Self::context(path)));
            return;
        };
        if depth > MAX_NESTING {
            self.problems.push(format!("{}, too many levels of nesting (at most {MAX_NESTING}).", Self::context(path)));
            return;
        }
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            if self.expanding.iter().any(|r| r == reference) {
                return;
            }
            match self.resolve(reference).cloned() {
                Some(target) => {
                    self.expanding.push(reference.to_owned());
                    self.node(&target, path, depth);
                    self.expanding.pop();
                }
                None => {
                    self.problems.push(format!("{}, reference to {reference} can't be resolved.", Self::context(path)))
                }
            }
            return;
        }
        for k in obj.keys() {
            if UNSUPPORTED_KEYWORDS.contains(&k.as_str()) {
                self.problems.push(format!("{}, '{k}' is not permitted.", Self::context(path)));
            }
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            self.enum_values += values.len();
            self.string_chars += values.iter().filter_map(Value::as_str).map(|s| s.chars().count()).sum::<usize>();
        }
        if let Some(Value::String(c)) = obj.get("const") {
            self.string_chars += c.chars().count();
        }
        if is_object_type(obj) {
            self.object(obj, path, depth);
        }
        if let Some(items) = obj.get("items") {
            let mut sub_path = path.to_vec();
            sub_path.push("items".to_owned());
            self.node(items, &sub_path, depth + 1);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(variants) = obj.get(key).and_then(Value::as_array) {
                for (i, v) in variants.iter().enumerate() {
                    let mut sub_path = path.to_vec();
                    sub_path.extend([key.to_owned(), i.to_string()]);
                    self.node(v, &sub_path, depth);
                }
            }
        }
        if let Some(defs) = obj.get("$defs").and_then(Value::as_object) {
            for (name, def) in defs {
                let mut sub_path = path.to_vec();
                sub_path.extend(["$defs".to_owned(), name.clone()]);
                self.node(def, &sub_path, depth);
            }
        }
    }

    /// An object schema: `additionalProperties: false`, every property required, each property's
    /// schema one level deeper.
    fn object(&mut self, obj: &Map<String, Value>, path: &[String], depth: usize) {
        let props = obj.get("properties").and_then(Value::as_object);
        if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
            self.problems.push(format!(
                "{}, 'additionalProperties' is required to be supplied and to be false.",
                Self::context(path)
            ));
        }
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = props {
            self.properties += props.len();
            for (name, sub) in props {
                self.string_chars += name.chars().count();
                if !required.contains(&name.as_str()) {
                    self.problems.push(format!(
                        "{}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{name}'.",
                        Self::context(path)
                    ));
                }
                let mut sub_path = path.to_vec();
                sub_path.extend(["properties".to_owned(), name.clone()]);
                self.node(sub, &sub_path, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(schema: Value) -> Value {
        json!({
            "model": "gpt-4.1-mini",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "strict": true, "schema": schema}},
        })
    }

    fn object(props: Value) -> Value {
        let required: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
        json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
    }

    #[test]
    fn the_project_schema_is_accepted() {
        let body = request(sophia_reports::schema::report_schema());
        assert_eq!(check_request(&body), Ok(()));
    }

    #[test]
    fn each_strict_mode_rule_is_enforced() {
        let cases = [
            (json!({"anyOf": [object(json!({"a": {"type": "string"}}))]}), "type: \"object\""),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
                "'additionalProperties' is required",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
                "Missing 'b'",
            ),
            (object(json!({"a": {"type": "string", "minLength": 1}})), "'minLength' is not permitted"),
            (object(json!({"a": {"allOf": [{"type": "string"}]}})), "'allOf' is not permitted"),
            (object(json!({"a": {"$ref": "#/$defs/missing"}})), "can't be resolved"),
        ];
        for (schema, expected) in cases {
            let e = check_request(&request(schema.clone())).unwrap_err();
            assert!(e.message.contains(expected), "{expected:?} not in {e:?} for {schema}");
            assert_eq!(e.param.as_deref(), Some("response_format"));
        }
    }

    #[test]
    fn the_documented_limits_are_enforced() {
        let mut deep = json!({"type": "string"});
        for _ in 0..MAX_NESTING {
            deep = object(json!({"x": deep}));
        }
        assert!(check_request(&request(deep)).unwrap_err().message.contains("nesting"));
        let values: Vec<String> = (0..=MAX_ENUM_VALUES).map(|i| format!("v{i}")).collect();
        let e = check_request(&request(object(json!({"e": {"type": "string", "enum": values}})))).unwrap_err();
        assert!(e.message.contains("enum values"), "{e:?}");
        let props: Map<String, Value> =
            (0..=MAX_PROPERTIES).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
        let e = check_request(&request(object(Value::Object(props)))).unwrap_err();
        assert!(e.message.contains("too many object properties"), "{e:?}");
        let long: Vec<String> = (0..100).map(|i| format!("{i}{}", "x".repeat(1_300))).collect();
        let e = check_request(&request(object(json!({"e": {"type": "string", "enum": long}})))).unwrap_err();
        assert!(e.message.contains("total string length"), "{e:?}");
    }

    #[test]
    fn recursion_through_defs_is_allowed() {
        let schema = json!({
            "type": "object", "properties": {"node": {"$ref": "#/$defs/node"}}, "required": ["node"], "additionalProperties": false,
            "$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["children"], "additionalProperties": false}}
        });
        assert_eq!(check_request(&request(schema)), Ok(()));
    }

    #[test]
    fn unknown_parameters_a_missing_model_and_bad_values_are_rejected() {
        let ok = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
        assert_eq!(check_request(&ok), Ok(()));
        let mut unknown = ok.clone();
        unknown["reasoning_budget"] = json!(3);
        assert_eq!(
            check_request(&unknown).unwrap_err().message,
            "Unrecognized request argument supplied: reasoning_budget"
        );
        let no_model = json!({"messages": [{"role": "user", "content": "x"}]});
        assert_eq!(check_request(&no_model).unwrap_err().message, "you must provide a model parameter");
        let mut hot = ok.clone();
        hot["temperature"] = json!(2.5);
        assert_eq!(check_request(&hot).unwrap_err().code.as_deref(), Some("decimal_above_max_value"));
        let mut zero = ok.clone();
        zero["max_completion_tokens"] = json!(0);
        assert_eq!(check_request(&zero).unwrap_err().param.as_deref(), Some("max_completion_tokens"));
        assert!(check_request(&json!({"model": "m", "messages": []})).is_err());
        let mut long = ok.clone();
        (long["model"], long["max_completion_tokens"]) = (json!("gpt-4.1-mini"), json!(40_000));
        assert!(check_request(&long).unwrap_err().message.contains("at most 32768 completion tokens"));
        long["max_completion_tokens"] = json!(32_768);
        assert_eq!(check_request(&long), Ok(()));
        assert!(check_request(&json!([1, 2])).is_err());
    }
}
