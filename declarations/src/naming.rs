//! Names derived from a queue's declared names, shared by `build.rs` (the generated [`Queue`])
//! and the parsed declaration (which may hold queues the enum does not: tests declare a third).
//!
//! [`Queue`]: crate::Queue

/// `INTERVIEW_COMPLETED_QUEUE_URL` -> `INTERVIEW_COMPLETED_DLQ_URL`: the variable that carries a
/// queue's DLQ URL. The declaration's check makes sure every `queueUrlEnv` ends in `_QUEUE_URL`.
pub fn dlq_url_env(queue_url_env: &str) -> String {
    let stem = queue_url_env.strip_suffix("_QUEUE_URL").unwrap_or(queue_url_env);
    format!("{stem}_DLQ_URL")
}
