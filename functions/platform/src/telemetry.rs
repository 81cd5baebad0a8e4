//! JSON logs through `tracing`: one line per event, with the fields of the current span
//! (messageId, requestId, eventType, receiveCount on every record's lines). The level comes from
//! `LOG_LEVEL` (a `tracing` filter such as `info` or `info,sophia_credits=debug`).

use tracing_subscriber::EnvFilter;

use crate::config::{LOG_LEVEL, optional};

/// Installs the JSON subscriber for a Lambda binary. Safe to call twice (the second is a no-op).
pub fn init() {
    let filter = without_body_dumps(
        optional(LOG_LEVEL).and_then(|l| EnvFilter::try_new(l).ok()).unwrap_or_else(|| EnvFilter::new("info")),
    );
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_span_list(false)
        .flatten_event(true)
        .with_target(true)
        .with_ansi(false)
        .without_time()
        .try_init();
}

/// Human-readable logs for command-line tools (to stderr).
pub fn init_for_cli(default_level: &str) {
    let filter = without_body_dumps(
        optional(LOG_LEVEL).and_then(|l| EnvFilter::try_new(l).ok()).unwrap_or_else(|| EnvFilter::new(default_level)),
    );
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// async-openai logs a whole response body it cannot parse (target `async_openai::error`); a
/// chat completion's body can quote candidate text, which must never reach the logs. The error
/// itself still reaches the caller (sophia-reports keeps only its parse position). Always off,
/// whatever `LOG_LEVEL` says.
fn without_body_dumps(filter: EnvFilter) -> EnvFilter {
    filter.add_directive("async_openai::error=off".parse().expect("a valid directive"))
}
