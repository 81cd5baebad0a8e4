//! Message contracts of the Sophia async jobs: the bodies and attributes that travel on the
//! `interview-completed` and `report-generate` queues, as typed values.
//!
//! Parsing is the only way to obtain a message from the wire, and it enforces what the API's Zod
//! schemas enforce (24-hex ObjectIds, ISO-8601 datetimes, finite non-negative durations (fractions billed by floor), the
//! `type` discriminator of the interview queue's union). After parsing, invalid states cannot be
//! represented. Unknown extra fields are ignored, as Zod does.
//!
//! No AWS, Lambda or database types appear here.

mod attributes;
mod error;
mod ids;
mod messages;
pub mod reference;
pub mod schema;
mod timestamp;

pub use attributes::{EventType, MessageAttributes, RequestId};
pub use error::ContractError;
pub use ids::{InterviewId, ObjectIdString, OrganizationId};
// Every public item of messages.rs is the crate's: a new message type needs no line here.
pub use messages::*;
pub use timestamp::Timestamp;
