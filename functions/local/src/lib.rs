//! The whole pipeline on one machine.
//!
//! - [`servers`]: fauxqs (SQS) and nx-27017 (MongoDB wire protocol) as child processes on
//!   127.0.0.1, stopped by PID;
//! - [`queues`]: the four queues created from the shared declaration (`infra-pulumi/queues.json`)
//!   with their real attributes (visibility, retention, RedrivePolicy, RedriveAllowPolicy).

pub mod queues;
pub mod servers;
