//! Who holds a report, and until when: the one claim rule, read by the consumer's claim
//! ([`crate::store`]), the admin retry's reset ([`crate::admin`]) and the operator's plans
//! (sophia-ops' `predict`). It is written twice here, on purpose and side by side: as a predicate
//! over a report as read ([`hold`], [`claimable`]) and as the MongoDB filter the store's
//! conditional writes use ([`free_filter`], [`claimable_filter`]); a test evaluates both on a
//! table of reports (every status, a lease absent, `null`, live, expired or ending now, `updatedAt`
//! and `createdAt` absent, recent or stale, `attemptCount` of every numeric type) and requires
//! them to agree. The table and the evaluator are [`crate::fixtures::claim_cases`] and
//! [`crate::fixtures::filter_matches`]; tests/it/report_claim_languages.rs holds the API package's
//! TypeScript copy of the rule (clients/typescript/src/admin.ts) to this one on the same table.
//!
//! The rule (docs/design.md, "Report states"):
//! - `COMPLETED` is done: never claimed again; `ERASED` (an erasure's tombstone) neither.
//! - `PROCESSING` is held by its worker until `leaseExpiresAt`; a report written before leases
//!   existed (no `leaseExpiresAt`) until `updatedAt` (else `createdAt`) plus the lease length; with
//!   neither date, not at all. At the instant it ends it is still held (the filter's `$lt`).
//! - `NOT_STARTED` and `FAILED` are held by nobody.
//! - A report nobody holds is claimed while `attemptCount` (absent: 0) is below [`MAX_ATTEMPTS`].
//!
//! The lease length is the report-generate function's declared timeout ([`lease`]): a crashed or
//! timed-out worker's claim ends when its invocation must have ended.

use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use sophia_declarations::Declaration;

use crate::report::{ReportStatus, StoredReport};

/// Attempts after which a report stays `FAILED` and further deliveries are acknowledged
/// (`declarations/reports.json`, shared with the API's TypeScript package).
pub const MAX_ATTEMPTS: i32 = sophia_declarations::MAX_REPORT_ATTEMPTS;

/// The declared function whose timeout is the lease length (`declarations/reports.json`
/// `leaseFunction`).
pub const FUNCTION_NAME: &str = sophia_declarations::REPORT_LEASE_FUNCTION;

/// The lease of a claim: the report-generate function's timeout (from the shared declaration).
pub fn lease() -> Duration {
    let f = Declaration::embedded().function(FUNCTION_NAME).expect("report-generate is declared");
    Duration::from_secs(u64::from(f.timeout_seconds))
}

/// Who holds a report at a given instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// `COMPLETED`: nobody claims it again.
    Completed,
    /// `ERASED`, the tombstone of an erasure: nobody claims it again, nothing is written to it.
    Erased,
    /// `PROCESSING` under a claim that runs until `until` (inclusive).
    Held { until: DateTime },
    /// No live worker holds it: `NOT_STARTED`, `FAILED`, or `PROCESSING` whose claim has ended.
    Free,
}

/// When a `PROCESSING` report's current claim ends: `leaseExpiresAt`, or without one
/// `updatedAt` (else `createdAt`) + `lease`; `None` for another status or a `PROCESSING` report
/// with none of those dates (held by nobody).
pub fn held_until(report: &StoredReport, lease: Duration) -> Option<DateTime> {
    if report.status != ReportStatus::Processing {
        return None;
    }
    report.lease_expires_at.or_else(|| report.updated_at.or(report.created_at).map(|t| after(t, lease)))
}

/// Who holds `report` at `now`.
pub fn hold(report: &StoredReport, now: DateTime, lease: Duration) -> Hold {
    match report.status {
        ReportStatus::Completed => Hold::Completed,
        ReportStatus::Erased => Hold::Erased,
        ReportStatus::NotStarted | ReportStatus::Failed => Hold::Free,
        ReportStatus::Processing => match held_until(report, lease) {
            Some(until) if until >= now => Hold::Held { until },
            _ => Hold::Free,
        },
    }
}

/// Attempts are left (`attemptCount` below [`MAX_ATTEMPTS`]).
pub fn has_attempts_left(report: &StoredReport) -> bool {
    report.attempt_count < MAX_ATTEMPTS
}

/// Whether the consumer's claim takes `report` at `now`: held by nobody, attempts left.
pub fn claimable(report: &StoredReport, now: DateTime, lease: Duration) -> bool {
    hold(report, now, lease) == Hold::Free && has_attempts_left(report)
}

/// The filter of [`Hold::Free`] at `now`: an `$or` of NOT_STARTED and FAILED with
/// [`lapsed_filter`]. `{field: null}` matches an absent field and a `null` alike, on MongoDB and
/// on nx-27017.
pub fn free_filter(now: DateTime, lease: Duration) -> Bson {
    let mut free = vec![Bson::Document(
        doc! {"status": {"$in": [ReportStatus::NotStarted.as_str(), ReportStatus::Failed.as_str()]}},
    )];
    free.extend(lapsed_branches(now, lease).into_iter().map(Bson::Document));
    Bson::Array(free)
}

/// The filter of a `PROCESSING` report whose claim has ended at `now` (an `$or`): what an
/// attempts reset of a stuck report requires.
pub fn lapsed_filter(now: DateTime, lease: Duration) -> Bson {
    Bson::Array(lapsed_branches(now, lease).into_iter().map(Bson::Document).collect())
}

fn lapsed_branches(now: DateTime, lease: Duration) -> [Document; 4] {
    let stale = before(now, lease);
    let processing = ReportStatus::Processing.as_str();
    [
        doc! {"status": processing, "leaseExpiresAt": {"$lt": now}},
        doc! {"status": processing, "leaseExpiresAt": Bson::Null, "updatedAt": {"$lt": stale}},
        doc! {"status": processing, "leaseExpiresAt": Bson::Null, "updatedAt": Bson::Null, "createdAt": {"$lt": stale}},
        doc! {"status": processing, "leaseExpiresAt": Bson::Null, "updatedAt": Bson::Null, "createdAt": Bson::Null},
    ]
}

/// The filter of [`has_attempts_left`]: `attemptCount` below the maximum (any numeric type), or
/// absent (a report the API wrote: 0 attempts). A `null` is not matched: `$inc` refuses it, so
/// the store's claim sets it to 0 first.
pub fn attempts_left_filter() -> Document {
    doc! {"$or": [
        {"attemptCount": {"$lt": MAX_ATTEMPTS}},
        {"attemptCount": {"$exists": false}},
    ]}
}

/// The filter of [`claimable`] at `now`.
pub fn claimable_filter(now: DateTime, lease: Duration) -> Document {
    doc! {"$and": [attempts_left_filter(), {"$or": free_filter(now, lease)}]}
}

/// `t` + `lease`, saturating.
pub fn after(t: DateTime, lease: Duration) -> DateTime {
    DateTime::from_millis(t.timestamp_millis().saturating_add(millis(lease)))
}

fn before(t: DateTime, lease: Duration) -> DateTime {
    DateTime::from_millis(t.timestamp_millis().saturating_sub(millis(lease)))
}

fn millis(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use bson::oid::ObjectId;

    use super::*;
    use crate::fixtures::filter_matches as matches;

    const LEASE: Duration = Duration::from_secs(900);

    fn read(d: &Document) -> StoredReport {
        sophia_documents::decode("interviewReports", d.clone()).unwrap()
    }

    #[test]
    fn the_predicate_and_the_filter_agree_on_every_case() {
        let now = DateTime::now();
        let cases = crate::fixtures::claim_cases(now, LEASE);
        assert_eq!(cases.len(), 4 * 5 * 5 * 5 * 6);
        let free = doc! {"$or": free_filter(now, LEASE)};
        let claimable_filter = claimable_filter(now, LEASE);
        let mut disagreements = Vec::new();
        let (mut free_count, mut claimable_count) = (0, 0);
        for d in &cases {
            let report = read(d);
            let is_free = hold(&report, now, LEASE) == Hold::Free;
            if is_free != matches(d, &free) {
                disagreements.push(format!("free: predicate {is_free}, filter {}: {d}", !is_free));
            }
            let is_claimable = claimable(&report, now, LEASE);
            if is_claimable != matches(d, &claimable_filter) {
                disagreements.push(format!("claimable: predicate {is_claimable}, filter {}: {d}", !is_claimable));
            }
            free_count += usize::from(is_free);
            claimable_count += usize::from(is_claimable);
        }
        assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
        // Neither side is trivially true or false.
        assert!(free_count > 0 && free_count < cases.len(), "{free_count}");
        assert!(claimable_count > 0 && claimable_count < free_count, "{claimable_count}");
    }

    #[test]
    fn a_processing_report_is_held_until_its_lease_or_its_last_write_plus_the_lease() {
        let now = DateTime::now();
        let lease_ms = LEASE.as_millis() as i64;
        let at = |delta: i64| DateTime::from_millis(now.timestamp_millis() + delta);
        let report = |d: Document| {
            let mut base = doc! {"_id": ObjectId::new(), "interviewId": ObjectId::new(), "status": "PROCESSING"};
            base.extend(d);
            read(&base)
        };
        assert_eq!(hold(&report(doc! {"leaseExpiresAt": at(5)}), now, LEASE), Hold::Held { until: at(5) });
        assert_eq!(hold(&report(doc! {"leaseExpiresAt": now}), now, LEASE), Hold::Held { until: now }, "inclusive");
        assert_eq!(hold(&report(doc! {"leaseExpiresAt": at(-1), "updatedAt": now}), now, LEASE), Hold::Free);
        // Without a lease (written before leases existed): the last write plus the lease.
        assert_eq!(
            hold(&report(doc! {"updatedAt": at(-1_000), "createdAt": at(-lease_ms * 10)}), now, LEASE),
            Hold::Held { until: at(lease_ms - 1_000) }
        );
        assert_eq!(hold(&report(doc! {"updatedAt": at(-lease_ms - 1)}), now, LEASE), Hold::Free, "lapsed");
        assert_eq!(
            hold(&report(doc! {"createdAt": at(-1_000)}), now, LEASE),
            Hold::Held { until: at(lease_ms - 1_000) }
        );
        assert_eq!(hold(&report(doc! {}), now, LEASE), Hold::Free, "no date at all: nobody holds it");
        let done = read(
            &doc! {"_id": ObjectId::new(), "interviewId": ObjectId::new(), "status": "COMPLETED", "leaseExpiresAt": at(5)},
        );
        assert_eq!(hold(&done, now, LEASE), Hold::Completed);
        assert_eq!(
            lease(),
            Duration::from_secs(u64::from(Declaration::embedded().function(FUNCTION_NAME).unwrap().timeout_seconds))
        );
    }

    #[test]
    fn the_evaluator_follows_mongodb_on_the_operators_used() {
        let d = doc! {"a": 2.0, "n": Bson::Null, "t": DateTime::from_millis(5)};
        assert!(matches(&d, &doc! {"a": {"$lt": 3_i32}}) && !matches(&d, &doc! {"a": {"$lt": 2_i64}}));
        assert!(matches(&d, &doc! {"n": Bson::Null}) && matches(&d, &doc! {"absent": Bson::Null}));
        assert!(!matches(&d, &doc! {"n": {"$lt": DateTime::from_millis(9)}}), "null is below nothing");
        assert!(!matches(&d, &doc! {"absent": {"$lt": 3}}) && matches(&d, &doc! {"absent": {"$exists": false}}));
        assert!(matches(&d, &doc! {"t": {"$lt": DateTime::from_millis(6)}}) && !matches(&d, &doc! {"t": {"$lt": 6}}));
        assert!(matches(&d, &doc! {"$or": [{"a": 1}, {"a": {"$in": [2_i64]}}]}));
    }
}
