//! JSON logs through `tracing`: one line per event, with the fields of the current span
//! (messageId, requestId, eventType, receiveCount on every record's lines). The level comes from
//! `LOG_LEVEL`: comma-separated `target=level` directives and an optional bare default level,
//! e.g. `info` or `info,sophia_credits=debug` (the most specific target wins).
//!
//! The filter is `tracing_subscriber`'s `Targets`, not `EnvFilter`: `EnvFilter` adds regex
//! matching of span fields that nothing here uses, and its regex engine and Unicode tables weigh
//! about 150 KB in every zip (each is kept under 4 MB: docs/performance.md, "Zip size").

use std::str::FromStr;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LOG_LEVEL, optional};

/// Installs the JSON subscriber for a Lambda binary. Safe to call twice (the second is a no-op).
pub fn init() {
    let json = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .flatten_event(true)
        .with_target(true)
        .with_ansi(false)
        .without_time();
    let _ = tracing_subscriber::registry().with(json).with(filter(optional(LOG_LEVEL).as_deref(), "info")).try_init();
}

/// Human-readable logs for command-line tools (to stderr).
pub fn init_for_cli(default_level: &str) {
    // Compact: one short line per event (no span lists or targets), so a tool's own output (the
    // demo summary, a table) is not lost among its logs.
    let human = tracing_subscriber::fmt::layer().compact().with_target(false).with_writer(std::io::stderr);
    let _ = tracing_subscriber::registry()
        .with(human)
        .with(filter(optional(LOG_LEVEL).as_deref(), default_level))
        .try_init();
}

/// `configured` (the value of `LOG_LEVEL`) if it parses, else `default`, always with the body
/// dumps off.
fn filter(configured: Option<&str>, default: &str) -> Targets {
    let targets = configured
        .and_then(|l| Targets::from_str(l).ok())
        .or_else(|| Targets::from_str(default).ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    without_body_dumps(targets)
}

/// async-openai logs a whole response body it cannot parse (target `async_openai::error`); a
/// chat completion's body can quote candidate text, which must never reach the logs. The error
/// itself still reaches the caller (sophia-reports keeps only its parse position). Always off,
/// whatever `LOG_LEVEL` says.
fn without_body_dumps(targets: Targets) -> Targets {
    targets.with_target("async_openai::error", LevelFilter::OFF)
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn a_bare_level_and_per_target_directives_apply_most_specific_first() {
        let f = filter(Some("info,sophia_credits=debug"), "warn");
        assert!(f.would_enable("sophia_credits::settlement", &Level::DEBUG));
        assert!(!f.would_enable("sophia_reports", &Level::DEBUG));
        assert!(f.would_enable("sophia_reports", &Level::INFO));
    }

    #[test]
    fn unset_or_invalid_falls_back_to_the_default() {
        assert!(!filter(None, "warn").would_enable("sophia_credits", &Level::INFO));
        assert!(filter(None, "warn").would_enable("sophia_credits", &Level::WARN));
        assert!(!filter(Some("loud=???"), "warn").would_enable("sophia_credits", &Level::INFO));
    }

    #[test]
    fn response_body_dumps_stay_off_whatever_the_level() {
        let f = filter(Some("trace,async_openai=trace"), "info");
        assert!(!f.would_enable("async_openai::error", &Level::ERROR));
        assert!(f.would_enable("async_openai::client", &Level::TRACE));
    }
}
