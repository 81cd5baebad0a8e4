//! Environment variables: the names this crate reads (each declared in [`sophia_env::VARIABLES`],
//! the queues' URL variables in `declarations/queues.json`,
//! the one list docs/reference/configuration.md is rendered from) and their parsing.

use std::time::Duration;

pub const MONGODB_URI: &str = crate::env::declared("MONGODB_URI");
pub const MONGODB_DATABASE: &str = crate::env::declared("MONGODB_DATABASE");
/// Local use only: accept a MongoDB that cannot run transactions (e.g. nx-27017).
pub const MONGODB_ALLOW_STANDALONE: &str = crate::env::declared("MONGODB_ALLOW_STANDALONE");
pub const OPENAI_API_KEY: &str = crate::env::declared("OPENAI_API_KEY");
pub const OPENAI_MODEL: &str = crate::env::declared("OPENAI_MODEL");
pub const OPENAI_BASE_URL: &str = crate::env::declared("OPENAI_BASE_URL");
pub const LOG_LEVEL: &str = crate::env::declared("LOG_LEVEL");
/// How many records of one batch the interview consumers work on at once.
/// MongoDB server selection timeout in milliseconds.
pub const MONGODB_SERVER_SELECTION_TIMEOUT_MS: &str = crate::env::declared("MONGODB_SERVER_SELECTION_TIMEOUT_MS");
pub const RECORD_CONCURRENCY: &str = crate::env::declared("RECORD_CONCURRENCY");
pub const DEFAULT_DATABASE: &str = "sophia";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is required")]
    Missing(&'static str),
    #[error("environment variable {name}: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// A set, non-blank variable.
pub fn optional(name: &'static str) -> Option<String> {
    crate::env::var(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

pub fn required(name: &'static str) -> Result<String, ConfigError> {
    optional(name).ok_or(ConfigError::Missing(name))
}

/// `true`/`1`/`yes` (any case) is true; unset is `default`; anything else is an error.
pub fn flag(name: &'static str, default: bool) -> Result<bool, ConfigError> {
    match optional(name).map(|v| v.to_ascii_lowercase()) {
        None => Ok(default),
        Some(v) if ["true", "1", "yes"].contains(&v.as_str()) => Ok(true),
        Some(v) if ["false", "0", "no"].contains(&v.as_str()) => Ok(false),
        Some(v) => Err(ConfigError::Invalid { name, reason: format!("expected true or false, got {v:?}") }),
    }
}

/// A number of milliseconds, or `default`.
pub fn millis(name: &'static str, default: Duration) -> Result<Duration, ConfigError> {
    match optional(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|e| ConfigError::Invalid { name, reason: format!("expected milliseconds: {e}") }),
    }
}

/// The value of `name` (from this process's environment, [`optional`], or a function
/// environment held elsewhere) as a whole number of at least 1, or `default` when unset.
pub fn positive(name: &'static str, value: Option<&str>, default: usize) -> Result<usize, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid { name, reason };
    match value.map(str::parse::<usize>) {
        None => Ok(default),
        Some(Ok(0)) => Err(invalid("must be at least 1, got 0".into())),
        Some(Ok(n)) => Ok(n),
        Some(Err(e)) => Err(invalid(format!("expected a whole number of at least 1: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults docs/reference/configuration.md states (from `sophia_env::VARIABLES`) are the
    /// ones this crate applies.
    #[test]
    fn the_declared_defaults_are_the_ones_applied() {
        let declared = |name: &str| crate::env::lookup(name).map(|v| v.default).unwrap_or_default();
        let millis = |d: std::time::Duration| format!("`{}`", d.as_millis());
        for (name, applied) in [
            (MONGODB_DATABASE, format!("`{DEFAULT_DATABASE}`")),
            (OPENAI_MODEL, format!("`{DEFAULT_OPENAI_MODEL}`")),
            (crate::mongo::MONGODB_MAX_POOL_SIZE, format!("`{}`", crate::mongo::DEFAULT_MAX_POOL_SIZE)),
            (crate::mongo::MONGODB_MAX_IDLE_TIME_MS, millis(crate::mongo::DEFAULT_MAX_IDLE_TIME)),
            (
                crate::secrets::PARAMETERS_SECRETS_EXTENSION_HTTP_PORT,
                format!("`{}`", crate::secrets::DEFAULT_EXTENSION_PORT),
            ),
            (crate::secrets::SECRETS_EXTENSION_TIMEOUT_MS, millis(crate::secrets::DEFAULT_EXTENSION_BUDGET)),
            (crate::rotation::SECRETS_REFRESH_INTERVAL_MS, millis(crate::rotation::DEFAULT_REFRESH_INTERVAL)),
        ] {
            assert_eq!(declared(name), applied, "{name}");
        }
    }

    #[test]
    fn a_positive_count_is_its_value_or_the_default_and_zero_or_text_is_refused() {
        assert_eq!(positive(RECORD_CONCURRENCY, None, 4), Ok(4));
        assert_eq!(positive(RECORD_CONCURRENCY, Some("1"), 4), Ok(1));
        assert_eq!(positive(RECORD_CONCURRENCY, Some("10"), 4), Ok(10));
        let zero = positive(RECORD_CONCURRENCY, Some("0"), 4).unwrap_err();
        assert_eq!(zero.to_string(), "environment variable RECORD_CONCURRENCY: must be at least 1, got 0");
        let text = positive(RECORD_CONCURRENCY, Some("four"), 4).unwrap_err().to_string();
        assert!(text.starts_with("environment variable RECORD_CONCURRENCY: expected a whole number"), "{text}");
        assert!(positive(RECORD_CONCURRENCY, Some("-1"), 4).is_err());
    }
}
