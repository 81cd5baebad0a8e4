//! The root integration tests, as one test binary: one module per area (the former
//! `tests/<name>.rs` files), the shared helpers in [`support`], and the `harness` library (the
//! package's lib: local servers, databases and queues of each test's own).
//!
//! One binary instead of one per file: every file used to link mongodb, the AWS SDK and every
//! crate of the workspace again (docs/testing.md, "Build time"). In one process, what separate
//! processes used to isolate is shared: the local servers (started once, each test on its own
//! database and queues), the JSON log capture (one process-wide subscriber; tests select their own
//! lines) and the process environment (no test sets a variable: a test that needs one runs itself
//! again as a child process with it, see `tls_clients`).
//!
//! Run one module: `cargo test --test it settlement_flow::`.

mod support;

mod arm64_bootstraps;
mod bad_input;
mod contract_leniency;
mod credit_overflow;
mod cutover_overlap;
mod deploy_before_migration;
mod erasure;
mod erasure_from_package;
mod esm_emulator;
mod faults_mongo;
mod faults_pipeline;
mod function_size;
mod harness_checks;
mod layout;
mod load_pipeline;
mod local_drills;
mod log_redaction;
mod metrics_emf;
mod mongo_ping_retry;
mod mongo_wire_gaps;
mod new_queue_checklist;
mod ops_admin;
mod ops_confirm;
mod ops_declared_queues;
mod ops_diagnose;
mod ops_dlq;
mod ops_drills;
mod ops_inspect;
mod ops_plans;
mod ops_publish;
mod ops_queue_move;
mod ops_redrive;
mod ops_redrive_reset;
mod ops_runbook_drills;
mod ops_status_drills;
mod ops_verdict_drills;
mod outage_recovery;
mod producers;
mod report_claim_languages;
mod report_documents;
mod report_generation;
mod report_logging;
mod report_output_checks;
mod report_repair;
mod report_retention;
mod report_transport;
mod report_ttl_index;
mod settlement_edge_cases;
mod settlement_flow;
mod settlement_handler;
mod settlement_transactions;
mod supply_chain;
mod tenant_fairness;
mod tls_clients;
mod transient_retries;
mod typescript_contract;
mod uri_policy_log;
