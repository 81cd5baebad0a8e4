//! The erasure across the language boundary (docs/candidate-data.md, "Erasure"): the BUILT
//! TypeScript package (`clients/typescript`, built as the other cross-language tests build it,
//! imported by its package name) requests the erasure with the `mongodb` driver as the API does
//! (`clients/typescript/test/contract/erasure.mjs`), on the database of a local pipeline (nx-27017
//! started by the harness on a free port, fauxqs, the event-source-mapping emulator, the OpenAI
//! fake); the Rust side completes it: the report-generate consumer acknowledges a redelivered
//! `report.generate` as `erased`, `sophia-ops erasure sweep` deletes the DLQ message and ends the
//! request DONE; the package's `readErasure` then shows DONE with what was removed. And the
//! refusals, across the same boundary: an undeclared reason and another organization's interview
//! write nothing the Rust side reads.
//!
//! Needs Node 20+ and the package's node_modules (`scripts/test` installs them before the Rust
//! tests; alone: `npm ci` in clients/typescript). Without them the tests say SKIPPED, and fail
//! where `CI` is set (a CI run cannot skip them silently).

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use bson::doc;
use harness::World;
use harness::functions::interview_esm;
use harness::sqs::{completed_body, depth, failed_body, send};
use serde_json::{Value, json};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_openai_fake::{Behaviour, FakeOpenAi};
use sophia_ops::Outcome;

use crate::erasure::{
    api_erases_its_interview, assert_tombstone, candidate_texts, report_body, report_of, seed_report,
};
use crate::support::ops as ops_support;
use crate::typescript_contract::{built_package, node_script, package_dir};

/// Whether the built package can run here; else a SKIPPED line, or a failure where `CI` is set.
fn package_runs(test: &str) -> bool {
    let node = Command::new("node").arg("--version").output().ok().filter(|o| o.status.success());
    let major = node.as_ref().map(|o| String::from_utf8_lossy(&o.stdout).trim().trim_start_matches('v').to_owned());
    let major: u32 = major.as_deref().and_then(|v| v.split('.').next()?.parse().ok()).unwrap_or(0);
    let modules = package_dir().join("node_modules/.package-lock.json").is_file();
    let why = match (node.is_some(), major >= 20, modules) {
        (true, true, true) => {
            built_package();
            return true;
        }
        (false, _, _) => "node is not on PATH (Node.js 20+ is required)".to_owned(),
        (true, false, _) => format!("Node.js 20+ is required, found major version {major}"),
        (true, true, false) => "clients/typescript/node_modules is missing (npm ci in clients/typescript)".to_owned(),
    };
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(!in_ci, "{test}: {why} (CI is set: the built package's erasure must run here)");
    harness::skipped(test, &why);
    false
}

/// One call of the package's erasure script on `w`'s database.
fn package(w: &World, action: &str, interviews: &[InterviewId], org: OrganizationId, reason: &str) -> Value {
    let input = json!({
        "action": action,
        "uri": harness::mongo_uri(),
        "database": w.mongo.db.name(),
        "interviewIds": interviews.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "organizationId": org.to_string(),
        "requestedBy": "dpo@example.com",
        "reason": reason,
        "reference": "DPO-77",
    });
    node_script("erasure.mjs", &[&input.to_string()], &BTreeMap::new())
}

#[tokio::test]
async fn the_packages_request_is_completed_by_the_rust_side_and_read_back_done_with_what_was_removed() {
    const TEST: &str = "the_packages_request_is_completed_by_the_rust_side_and_read_back_done_with_what_was_removed";
    if !package_runs(TEST) {
        return;
    }
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    // The pipeline before the erasure: settled (billing, the outbox entry, report.generate
    // published), the report generated; a copy of an interview.failed with its failureReason in
    // the interview DLQ.
    let settle = interview_esm(&w.sqs, &w.queues, 1, w.settings());
    send(&w.sqs, &w.queues.interview_completed.source.url, &completed_body(interview, org, 600)).await;
    let settled = settle.poll_once(Duration::from_secs(5)).await.unwrap().expect("one invocation");
    assert!(settled.failed_ids.is_empty(), "{settled:?}");
    assert!(w.outbox(interview).await.is_some(), "the settlement's outbox entry");
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    let reports = ops_support::report_mapping(&w, &fake);
    let generated = reports.poll_once(Duration::from_secs(5)).await.unwrap().expect("report.generate consumed");
    assert!(generated.failed_ids.is_empty(), "{generated:?}");
    assert_eq!(report_of(&w, interview).await.get_str("status").unwrap(), "COMPLETED");
    let dlq = w.queues.interview_completed.dlq.url.clone();
    send(&w.sqs, &dlq, &failed_body(interview, org, "the candidate disclosed a medical condition")).await;

    // The API's request, through the built package.
    let requested = package(&w, "request", &[interview], org, "candidate-request");
    let records = requested["records"].as_array().unwrap_or_else(|| panic!("{requested}"));
    assert_eq!(records.len(), 1, "{requested}");
    let first = &records[0];
    assert_eq!(
        (&first["interviewId"], &first["state"], &first["via"], &first["reason"], &first["reference"]),
        (
            &json!(interview.to_string()),
            &json!("PENDING"),
            &json!("api"),
            &json!("candidate-request"),
            &json!("DPO-77")
        ),
        "{first}"
    );
    assert_eq!(first["removed"], json!({"report": "report COMPLETED", "outboxEntries": 1, "dlqMessages": 0}));
    assert_eq!(first["pending"].as_array().unwrap().iter().map(|p| &p["what"]).collect::<Vec<_>>(), [&json!("queues")]);
    assert_tombstone(&w, interview).await;
    assert!(w.outbox(interview).await.is_none(), "the outbox entry deleted");
    assert!(!w.ledger(interview).await.is_empty(), "billing keeps its records");

    // A redelivered report.generate: the Rust consumer acknowledges it, no model call, nothing written.
    send(&w.sqs, &w.queues.report_generate.source.url, &report_body(interview, org)).await;
    let again = reports.poll_once(Duration::from_secs(5)).await.unwrap().expect("one invocation");
    assert!(again.failed_ids.is_empty(), "acknowledged, not a failure: {again:?}");
    assert_eq!(fake.request_count(), 1, "no model call after the erasure");
    assert_tombstone(&w, interview).await;

    // The operators' sweep: PENDING while the API's interview holds candidate fields, then DONE.
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    let record = &swept.erasures[0];
    assert_eq!(record.state.as_str(), "PENDING", "{record:?}");
    assert_eq!(record.pending.iter().map(|p| p.what.as_str()).collect::<Vec<_>>(), ["interview"], "{record:?}");
    let half = package(&w, "read", &[interview], org, "candidate-request");
    assert_eq!(half["record"]["state"], "PENDING", "the package reads the same state: {half}");
    assert_eq!(half["record"]["pending"][0]["what"], "interview", "{half}");
    api_erases_its_interview(&w, interview).await;
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    assert_eq!(swept.erasures[0].state.as_str(), "DONE", "{swept:?}");
    assert_eq!(depth(&w.sqs, &dlq).await, (0, 0), "the failureReason deleted from the DLQ");

    // The proof the API shows: the built package's readErasure.
    let read = package(&w, "read", &[interview], org, "candidate-request");
    let done = &read["record"];
    assert_eq!(
        (&done["state"], &done["via"], &done["requestedBy"], &done["reason"], &done["reference"], &done["pending"]),
        (
            &json!("DONE"),
            &json!("api"),
            &json!("dpo@example.com"),
            &json!("candidate-request"),
            &json!("DPO-77"),
            &json!([])
        ),
        "{read}"
    );
    assert_eq!(done["removed"], json!({"report": "report COMPLETED", "outboxEntries": 1, "dlqMessages": 1}), "{read}");
    assert!(done["completedAt"].is_string() && done["queuesSweptAt"].is_string(), "when: {read}");
    assert_eq!(done["requestId"], json!(format!("api-erasure-{interview}")));
    // The same request as `erasure show` reads it.
    let Outcome::ErasureShow(shown) = ops_support::ok(&ctx, &["erasure", "show", &interview.to_string()]).await else {
        panic!()
    };
    let shown = &shown.erasures[0];
    assert_eq!((shown.state.as_str(), shown.via.as_str(), shown.removed.dlq_messages), ("DONE", "api", 1));
    assert_eq!(shown.removed.report.as_deref(), done["removed"]["report"].as_str());
    // Nothing the package printed holds the candidate's text.
    for text in candidate_texts() {
        assert!(!read.to_string().contains(&text) && !requested.to_string().contains(&text));
    }
}

#[tokio::test]
async fn the_packages_refusals_write_nothing_the_rust_side_reads() {
    const TEST: &str = "the_packages_refusals_write_nothing_the_rust_side_reads";
    if !package_runs(TEST) {
        return;
    }
    let w = World::fresh().await;
    let (mine, theirs) = (w.org_with_credits(50).await, w.org_with_credits(50).await);
    let (own, foreign) = (w.reserved_interview(mine, 5).await, w.reserved_interview(theirs, 5).await);
    seed_report(&w, own, mine, "COMPLETED").await;
    seed_report(&w, foreign, theirs, "COMPLETED").await;

    // An undeclared reason (a sentence naming someone): refused before writing, never repeated.
    let typed = "Jane Doe asked by phone";
    let refused = package(&w, "request", &[own], mine, typed);
    let why = &refused["refused"];
    assert_eq!(
        (&why["name"], &why["code"], &why["field"]),
        (&json!("ErasureInputError"), &json!("ERASURE_REASON_NOT_DECLARED"), &json!("reason")),
        "{refused}"
    );
    assert!(!refused.to_string().contains("Jane Doe"), "the refusal never repeats what was given: {refused}");

    // Another organization's interview: ErasureRefusedError naming it.
    let refused = package(&w, "request", &[own, foreign], mine, "candidate-request");
    let why = &refused["refused"];
    assert_eq!(
        (&why["name"], &why["code"]),
        (&json!("ErasureRefusedError"), &json!("INTERVIEW_NOT_IN_ORGANIZATION")),
        "{refused}"
    );
    assert_eq!(why["notInOrganization"], json!([foreign.to_string()]));

    // The Rust side: no request, both reports as they were, nothing for the sweep or the consumer.
    assert!(w.find("erasures", doc! {}).await.is_empty(), "no document in `erasures`");
    for interview in [own, foreign] {
        assert_eq!(report_of(&w, interview).await.get_str("status").unwrap(), "COMPLETED", "untouched");
    }
    let ctx = w.ops_context();
    let Outcome::ErasureShow(listed) = ops_support::ok(&ctx, &["erasure", "list"]).await else { panic!() };
    assert!(listed.erasures.is_empty(), "{listed:?}");
    assert!(sophia_ops::erasure::pending_interviews(&w.mongo.db).await.unwrap().is_empty(), "nothing to sweep");
    assert!(!sophia_reports::erasure::is_erased(&w.mongo.db, own).await.unwrap(), "the consumer would write");
    let read = package(&w, "read", &[own], mine, "candidate-request");
    assert_eq!(read, json!({"record": null}), "the package reads no request");
}
