//! The erasure request (`erasures`, one document per interview, `_id` = the interview's id):
//! written by `sophia-ops erasure request` and by the API's package (`requestErasure`), read by
//! every writer that must not bring an erased candidate's data back (the report consumer's claim
//! and store, the admin retry, the redrive, the settlement's outbox publish). The names live here
//! once, for every crate of the workspace (docs/candidate-data.md, "Erasure").

use bson::oid::ObjectId;
use bson::{Document, doc};

/// The collection of erasure requests.
pub const ERASURES: &str = "erasures";

/// `state` of a request whose copies are not all gone yet (`pending` says which and why).
pub const PENDING: &str = "PENDING";
/// `state` of a request whose every copy this system holds is gone (`removed`, `completedAt`).
pub const DONE: &str = "DONE";

/// How long after its request an erasure should be `DONE` (docs/candidate-data.md, "Erasure"):
/// `sophia-ops erasure list --overdue` lists, and the `ErasuresOverdue` metric counts, the ones
/// still `PENDING` after it. Declared once: `declarations/reports.json` `erasureCompletionHours`.
pub const COMPLETION_TIME: std::time::Duration =
    std::time::Duration::from_secs(sophia_declarations::ERASURE_COMPLETION_HOURS * 3600);

/// The filter of the requests still `PENDING` past [`COMPLETION_TIME`] at `now`.
pub fn overdue_filter(now: bson::DateTime) -> Document {
    let cutoff = bson::DateTime::from_millis(now.timestamp_millis().saturating_sub(COMPLETION_TIME.as_millis() as i64));
    doc! {"state": PENDING, "requestedAt": {"$lt": cutoff}}
}

/// The filter of an interview's erasure request: its presence is the erasure (never undone).
pub fn request_filter(interview_id: ObjectId) -> Document {
    doc! {"_id": interview_id}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_keyed_by_the_interview() {
        let id = ObjectId::new();
        assert_eq!(request_filter(id), doc! {"_id": id});
        assert_ne!(PENDING, DONE);
    }
}
