//! The whole pipeline on one machine.
//!
//! - [`servers`]: fauxqs (SQS) and nx-27017 (MongoDB wire protocol) as child processes on
//!   127.0.0.1, stopped by PID;
//! - [`queues`]: the four queues created from the shared declaration (`declarations/queues.json`)
//!   with their real attributes (visibility, retention, RedrivePolicy, RedriveAllowPolicy);
//! - [`esm`]: the event-source-mapping emulator (batches, partial batch responses, timeouts);
//! - [`invoke`] / [`runtime_api`]: calling a function in-process, or its built `bootstrap`
//!   binary behind a local Lambda Runtime API;
//! - [`runner`] / [`handlers`]: the whole pipeline, started and stopped as one; [`envfile`]: its
//!   endpoints for other tools; [`demo`]: the scenarios and their summary;
//! - [`control`] / [`proxy`]: drills, i.e. OpenAI faults, MongoDB cut off from the functions and
//!   paused consumers, set from another shell while the pipeline runs.

pub mod control;
pub mod demo;
pub mod envfile;
pub mod esm;
pub mod handlers;
pub mod invoke;
pub mod proxy;
pub mod queues;
pub mod runner;
pub mod runtime_api;
pub mod servers;
