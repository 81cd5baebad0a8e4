//! The report claim rule in both languages: functions/reports/src/claim.rs (the one home of the
//! rule) and the API package's restatement in clients/typescript/src/admin.ts (`reportHeldUntil`,
//! `isResettable`, `reportClaimEndedFilter`, the compare-and-set of `resetAttemptsOperation`) must
//! decide alike on every case of [`sophia_reports::fixtures::claim_cases`] (every status, a lease
//! absent, `null`, live, ending now or expired, `updatedAt` and `createdAt` each absent, `null`,
//! recent, ending now or stale, `attemptCount` of every numeric type: 3,000 reports).
//!
//! The BUILT package (`clients/typescript/test/contract/claim-rule.mjs`) reads the cases as the
//! MongoDB driver returns them and prints its decisions and its filters as the driver sends them
//! (canonical Extended JSON); the filters are evaluated here with
//! [`sophia_reports::fixtures::filter_matches`] (MongoDB's semantics, the evaluator claim.rs's own
//! test holds its filters to), not on nx-27017, whose `find` and `count` answer some of these
//! filters differently from each other. The Rust side decides with [`claim::hold`] and
//! [`claim::held_until`]. A disagreement names the case (its fields, dates relative to `now`) and
//! the functions that disagree. Needs Node 20+ as the other TypeScript contract tests do
//! (tests/it/typescript_contract.rs).

use std::collections::BTreeMap;

use bson::{Bson, DateTime, Document};
use sophia_declarations::ResetRule;
use sophia_reports::claim::{self, Hold};
use sophia_reports::fixtures::filter_matches;
use sophia_reports::report::StoredReport;

use crate::typescript_contract::node_script;

/// A case as a reader of the disagreement sees it: the fields the rule reads, dates relative to `now`.
fn describe(d: &Document, now: DateTime) -> String {
    let fields: Vec<String> = ["status", "leaseExpiresAt", "updatedAt", "createdAt", "attemptCount"]
        .into_iter()
        .map(|key| {
            let value = match d.get(key) {
                None => "absent".to_owned(),
                Some(Bson::DateTime(t)) => format!("now{:+}ms", t.timestamp_millis() - now.timestamp_millis()),
                Some(v @ (Bson::String(_) | Bson::Null)) => v.to_string(),
                // A number with its type (`Int32(3)`, `Int64(2)`, `Double(2.0)`).
                Some(number) => format!("{number:?}"),
            };
            format!("{key}: {value}")
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// What the Rust side decides about one report, in the package's terms.
fn rust_verdict(report: &StoredReport, now: DateTime, lease: std::time::Duration) -> serde_json::Value {
    let rule = report.status.reset_rule();
    let ended = claim::hold(report, now, lease) == Hold::Free;
    let resettable = match rule {
        ResetRule::Reset => true,
        ResetRule::WhenLeaseExpired => ended,
        ResetRule::Refused | ResetRule::AlreadyCompleted | ResetRule::Erased => false,
    };
    serde_json::json!({
        "heldUntil": claim::held_until(report, lease).map(|t| t.timestamp_millis()),
        "resettable": resettable,
        "claimEnded": rule == ResetRule::WhenLeaseExpired && ended,
        // The reset's compare-and-set matches the unchanged report exactly when the reset applies.
        "resetMatches": matches!(rule, ResetRule::Reset | ResetRule::WhenLeaseExpired).then_some(resettable),
    })
}

/// A filter the package printed (canonical Extended JSON), as the server would receive it.
fn filter(ejson: &serde_json::Value) -> Document {
    match Bson::try_from(ejson.clone()) {
        Ok(Bson::Document(d)) => d,
        other => panic!("not a filter document: {ejson} ({other:?})"),
    }
}

#[test]
fn the_typescript_package_and_claim_rs_decide_alike_on_every_case() {
    let lease = claim::lease();
    let now = DateTime::now();
    let cases = sophia_reports::fixtures::claim_cases(now, lease);
    assert_eq!(cases.len(), 3_000);
    let input = serde_json::json!({
        "now": now.timestamp_millis(),
        "cases": cases.iter().map(|d| Bson::Document(d.clone()).into_canonical_extjson()).collect::<Vec<_>>(),
    });
    let file = std::env::temp_dir().join(format!("{}.json", harness::unique("sophia-claim-cases")));
    std::fs::write(&file, input.to_string()).unwrap();
    let verdict = node_script("claim-rule.mjs", &[file.to_str().unwrap()], &BTreeMap::new());
    let _ = std::fs::remove_file(&file);
    assert_eq!(verdict["checked"], cases.len(), "{verdict}");
    let claim_ended = filter(&verdict["claimEndedFilter"]);
    let lapsed = bson::doc! {"$or": claim::lapsed_filter(now, lease)};

    let mut disagreements = Vec::new();
    let mut counts = BTreeMap::<&str, usize>::new();
    for (d, ts) in cases.iter().zip(verdict["results"].as_array().expect("one result per case")) {
        let report: StoredReport = sophia_documents::decode("interviewReports", d.clone()).unwrap();
        let rust = rust_verdict(&report, now, lease);
        let typescript = serde_json::json!({
            "heldUntil": ts["heldUntil"],
            "resettable": ts["resettable"],
            "claimEnded": filter_matches(d, &claim_ended),
            "resetMatches": ts["resetFilter"].as_object().map(|_| filter_matches(d, &filter(&ts["resetFilter"]))),
        });
        if rust["claimEnded"].as_bool() != Some(filter_matches(d, &lapsed)) {
            disagreements.push(format!("claim.rs lapsed_filter vs claim::hold: {}", describe(d, now)));
        }
        for (key, what) in [
            ("heldUntil", "reportHeldUntil vs claim::held_until"),
            ("resettable", "isResettable vs claim::hold and the declared reset rule"),
            ("claimEnded", "reportClaimEndedFilter vs claim::hold"),
            ("resetMatches", "resetAttemptsOperation's filter on the report as read vs a reset that applies"),
        ] {
            if typescript[key] != rust[key] {
                let shown = |v: &serde_json::Value| match v.as_i64() {
                    Some(ms) => format!("now{:+}ms", ms - now.timestamp_millis()),
                    None => v.to_string(),
                };
                disagreements.push(format!(
                    "{what}: TypeScript {}, Rust {}: {}",
                    shown(&typescript[key]),
                    shown(&rust[key]),
                    describe(d, now)
                ));
            }
            if rust[key].as_bool() == Some(true) {
                *counts.entry(key).or_default() += 1;
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements between admin.ts and claim.rs:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Neither side is trivially true or false on the table.
    for key in ["resettable", "claimEnded", "resetMatches"] {
        let n = counts.get(key).copied().unwrap_or(0);
        assert!(n > 0 && n < cases.len(), "{key}: {n} of {}", cases.len());
    }
}
