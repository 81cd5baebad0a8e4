//! Report generation (docs/design.md, "Report generation"): the domain core of
//! the `report-generate` consumer, with no AWS or Lambda types.
//!
//! - [`report`]: the model's output type ([`LlmReport`]) and the stored report types;
//! - [`evidence`]: the insufficient-evidence rule;
//! - [`prompt`]: the versioned prompt (instructions and candidate data in separate messages);
//! - [`schema`]: the strict-mode JSON schema generated from [`LlmReport`];
//! - [`openai`]: the chat completion client ([`ReportModel`]);
//! - [`claim`]: who holds a report and until when, the one claim rule (a predicate and the
//!   MongoDB filter, tested to agree);
//! - [`store`] and [`migrations`]: `interviewReports` and its unique index;
//! - [`validate`] and [`repair`]: the output checked against the interview, its findings'
//!   severity, the one repair of a reply with a critical finding; [`injection`]: instructions to
//!   the evaluator in the candidate's turns;
//! - [`service`]: the service, `ReportService::generate_report`;
//! - [`admin`]: the operator's retry (re-publish, optional attempts reset);
//! - [`erasure`]: the tombstone of an erased interview's report, which every writer's
//!   conditional write checks;
//! - [`fixtures`]: interview documents for tests and the local demo.
//!
//! Never logged: resume text, transcript text, the model's reply, the API key.

pub mod admin;
pub mod budget;
pub mod claim;
pub mod erasure;
pub mod error;
pub mod error_kind;
pub mod evidence;
pub mod fixtures;
pub mod injection;
pub mod interview;
pub mod migrations;
pub mod openai;
pub mod prompt;
pub mod repair;
pub mod report;
pub mod schema;
pub mod service;
pub mod store;
pub mod transcript;
pub mod validate;

pub use error::{Disposition, ReportError};
pub use error_kind::ErrorKind;
pub use openai::{ModelError, OpenAiSettings, ReportModel};
pub use report::{LlmReport, Recommendation, ReportStatus};
pub use service::{Generated, ReportService, Usage};
