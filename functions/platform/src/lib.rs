//! What every Sophia binary shares: configuration from the environment, JSON logs through
//! `tracing`, and the clients (SQS, MongoDB) that `main` builds once per process and every
//! invocation reuses.

pub mod config;
pub mod deferred;
/// The declaration of every environment variable (the `sophia-env` crate).
pub use sophia_env as env;
pub mod indexes;
pub mod loopback;
pub mod mongo;
pub mod rotation;
pub mod secrets;
pub mod sqs;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod telemetry;
pub mod tls;
pub mod uri_policy;
