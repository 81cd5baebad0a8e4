//! The erasure of a candidate's data (docs/candidate-data.md, "Erasure") against the local
//! pipeline (fauxqs queues with a 1 s visibility timeout, the event-source-mapping emulator
//! invoking the functions as their `main` builds them, nx-27017, the scripted OpenAI fake). Each
//! race the issue names, and that nothing brings the data back:
//! - erased while the report is being generated (the fake answers after 2 s: scaled time for a
//!   model call of minutes): the late answer stores nothing, the message is acknowledged `erased`;
//! - erased while report.generate waits in the report DLQ (and an interview.failed with its
//!   `failureReason` in the interview DLQ): no redrive moves it (with or without the resets, from
//!   either DLQ: kept, reason `erased`); the sweep deletes both;
//! - an outbox entry written after the erasure (the settlement of a redelivered
//!   interview.completed) is deleted, not published; the billing is kept;
//! - the admin retry after the erasure is refused and publishes nothing;
//! - the request ends DONE (what was removed, when) only once the API's interview document holds
//!   no candidate field; `erasure show` and `list` read it; the erasure's logs hold no candidate text.

use std::time::Duration;

use bson::{Bson, Document, doc};
use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::logs::LogCapture;
use harness::sqs::{completed_body, depth, failed_body, send};
use harness::world::report_evidence;
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_declarations::{ErasureReason, ErasureReference};
use sophia_openai_fake::{Behaviour, FakeOpenAi};
use sophia_ops::Outcome;
use sophia_ops::erasure::{self, Requester};
use sophia_reports::store::MAX_ATTEMPTS;

use crate::support::ops as ops_support;

pub(crate) fn report_body(interview: InterviewId, org: OrganizationId) -> String {
    format!(r#"{{"interviewId":"{interview}","organizationId":"{org}"}}"#)
}

pub(crate) async fn report_of(w: &World, interview: InterviewId) -> Document {
    let mut all = harness::mongo::reports_of(&w.mongo.db, interview).await;
    assert_eq!(all.len(), 1, "one report document");
    all.remove(0)
}

/// The report is the tombstone: ids and dates only.
pub(crate) async fn assert_tombstone(w: &World, interview: InterviewId) {
    let report = report_of(w, interview).await;
    let mut keys: Vec<&str> = report.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["_id", "attemptCount", "createdAt", "erasedAt", "interviewId", "organizationId", "status", "updatedAt"],
        "{report:?}"
    );
    assert_eq!(report.get_str("status").unwrap(), "ERASED");
}

/// What the API does with its own copy: the candidate fields of the interview removed.
pub(crate) async fn api_erases_its_interview(w: &World, interview: InterviewId) {
    w.mongo
        .db
        .collection::<Document>("interviews")
        .update_one(
            doc! {"_id": interview.oid()},
            doc! {"$unset": {"proctoring": "", "snapshot": "", "credibility": ""}},
        )
        .await
        .unwrap();
}

/// The API's requester: a declared reason and an opaque reference.
fn requester(reference: &str) -> Requester {
    Requester {
        by: "dpo@example.com".into(),
        reason: ErasureReason::CandidateRequest,
        reference: Some(ErasureReference::parse(reference).unwrap()),
        via: "api".into(),
        replay_of: None,
    }
}

/// The erasure as the API's package requests it: the request and the stored copies, no sweep.
async fn api_request(w: &World, interview: InterviewId, org: OrganizationId) {
    let requester = requester("DPO-7");
    erasure::record_request(&w.mongo.db, interview, Some(org.oid()), &requester, "api-erasure-test").await.unwrap();
    erasure::erase_stored(&w.mongo.db, interview).await.unwrap();
}

/// The candidate's texts of the fixture every interview here is seeded with.
pub(crate) fn candidate_texts() -> Vec<String> {
    let evidence = report_evidence();
    let mut texts = vec![evidence.get_document("snapshot").unwrap().get_str("resumeText").unwrap().to_owned()];
    for turn in evidence.get_document("proctoring").unwrap().get_array("transcript").unwrap() {
        texts.push(turn.as_document().unwrap().get_str("text").unwrap().to_owned());
    }
    texts
}

#[tokio::test]
async fn erased_while_its_report_is_generated_the_late_answer_stores_nothing() {
    // Installed first: the process-wide capture sees only lines logged after it exists.
    let logs = LogCapture::global();
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::slow(Duration::from_secs(2), Behaviour::Report));
    let reports = ops_support::report_mapping(&w, &fake);
    send(&w.sqs, &w.queues.report_generate.source.url, &report_body(interview, org)).await;
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let (run, requested) = tokio::join!(reports.poll_once(Duration::from_secs(5)), async {
        // The worker has claimed the report and its model call is under way.
        harness::wait::wait_until("the model call", Duration::from_secs(20), || async { fake.request_count() == 1 })
            .await;
        let args =
            ["erasure", "request", &interview.to_string(), "--reason", "candidate-request", "--reference", "DPO-1"];
        ops_support::ok(&ctx, &args).await
    });
    let run = run.unwrap().expect("one invocation");
    assert!(run.failed_ids.is_empty(), "acknowledged, not a failure: {run:?}");
    assert_eq!(fake.request_count(), 1, "one model call, no retry");
    assert_tombstone(&w, interview).await;
    let id = interview.to_string();
    assert!(
        logs.lines().iter().any(|l| l["span"]["interviewId"] == id.as_str() && l["outcome"] == "erased"),
        "the consumer says why it acknowledged"
    );

    // PENDING until the API has erased its interview document; then the sweep ends it DONE.
    let Outcome::ErasureRequest(first) = requested else { panic!("{requested:?}") };
    let record = &first.erasures[0];
    assert_eq!((record.state.as_str(), record.requested_by.as_str()), ("PENDING", "dpo@example.com (self-declared)"));
    assert_eq!(record.removed.report.as_deref(), Some("report PROCESSING"));
    assert_eq!(record.pending.iter().map(|p| p.what.as_str()).collect::<Vec<_>>(), ["interview"]);
    api_erases_its_interview(&w, interview).await;
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    let done = &swept.erasures[0];
    assert_eq!((done.state.as_str(), done.pending.len()), ("DONE", 0));
    assert!(done.completed_at.is_some() && done.queues_swept_at.is_some());
    let Outcome::ErasureShow(shown) = ops_support::ok(&ctx, &["erasure", "show", &interview.to_string()]).await else {
        panic!()
    };
    assert_eq!(shown.erasures, swept.erasures);

    // Nothing brings it back: a redelivered report.generate is acknowledged, nothing written.
    send(&w.sqs, &w.queues.report_generate.source.url, &report_body(interview, org)).await;
    let again = reports.poll_once(Duration::from_secs(5)).await.unwrap().expect("one invocation");
    assert!(again.failed_ids.is_empty());
    assert_eq!(fake.request_count(), 1, "no model call");
    assert_tombstone(&w, interview).await;
    // The erasure's own log lines (and every other line of this test) hold no candidate text.
    let text = logs.text();
    assert!(!text.contains("could not count the overdue erasure requests"), "the ErasuresOverdue count runs");
    for candidate in candidate_texts() {
        assert!(!text.contains(&candidate), "a log line holds candidate text");
    }
}

#[tokio::test]
async fn erased_while_its_message_waits_in_the_dlq_a_redrive_writes_nothing_and_the_sweep_deletes_it() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let fake = FakeOpenAi::scripted().unwrap();
    for _ in 0..MAX_ATTEMPTS {
        fake.push(Behaviour::MalformedJson);
    }
    let reports = ops_support::report_mapping(&w, &fake);
    send(&w.sqs, &w.queues.report_generate.source.url, &report_body(interview, org)).await;
    poll_until(&reports, Duration::from_secs(30), |s| s.len() >= 3).await;
    assert!(reports.poll_once(Duration::from_secs(2)).await.unwrap().is_none(), "no fourth delivery");
    assert_eq!(depth(&w.sqs, &w.queues.report_generate.dlq.url).await, (1, 0), "report.generate in the DLQ");
    let reason = "the candidate disclosed a medical condition";
    send(&w.sqs, &w.queues.interview_completed.dlq.url, &failed_body(interview, org, reason)).await;

    api_request(&w, interview, org).await;
    assert_tombstone(&w, interview).await;

    // The redrive keeps it, saying why; nothing is reset, nothing written.
    let ctx = w.ops_context().acting_as(Some("alice@example.com".into()));
    let Outcome::DlqRedrive(redrive) = ops_support::ok(&ctx, &["dlq", "redrive", "report-generate"]).await else {
        panic!()
    };
    assert_eq!((redrive.moved, redrive.kept.len()), (0, 1), "{redrive:?}");
    assert_eq!(redrive.kept[0].step, "erased");
    assert_tombstone(&w, interview).await;

    // Without the resets (--keep-attempts), and from the interview DLQ (its failureReason):
    // nothing moves either, the reason printed.
    let redrives: [&[&str]; 2] = [
        &["dlq", "redrive", "report-generate", "--keep-attempts"],
        &["dlq", "redrive", "interview-completed", "--method", "auto"],
    ];
    for args in redrives {
        let Outcome::DlqRedrive(kept) = ops_support::ok(&ctx, args).await else { panic!() };
        assert_eq!((kept.moved, kept.kept.len()), (0, 1), "{args:?}: {kept:?}");
        assert_eq!(kept.kept[0].step, "erased");
        assert!(kept.human().contains("erasure sweep"), "{}", kept.human());
    }
    assert_eq!(depth(&w.sqs, &w.queues.interview_completed.source.url).await, (0, 0), "the failureReason not moved");
    assert!(reports.poll_once(Duration::from_secs(2)).await.unwrap().is_none(), "nothing moved to report-generate");
    assert_eq!(fake.request_count(), MAX_ATTEMPTS as usize, "no model call after the erasure");
    assert_tombstone(&w, interview).await;

    // The sweep deletes the interview.failed (its failureReason) from the interview DLQ.
    api_erases_its_interview(&w, interview).await;
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    let done = &swept.erasures[0];
    assert_eq!((done.state.as_str(), done.via.as_str(), done.removed.dlq_messages), ("DONE", "api", 2));
    assert_eq!(depth(&w.sqs, &w.queues.interview_completed.dlq.url).await, (0, 0));
    assert_eq!(depth(&w.sqs, &w.queues.report_generate.dlq.url).await, (0, 0));
    let Outcome::ErasureShow(listed) = ops_support::ok(&ctx, &["erasure", "list", "--pending"]).await else { panic!() };
    assert!(listed.erasures.is_empty(), "nothing pending");
}

#[tokio::test]
async fn an_outbox_entry_written_after_the_erasure_is_deleted_not_published() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    api_request(&w, interview, org).await;
    // The interview.completed the API published before the erasure, consumed after it.
    let settle = interview_esm(&w.sqs, &w.queues, 1, w.settings());
    send(&w.sqs, &w.queues.interview_completed.source.url, &completed_body(interview, org, 600)).await;
    let run = settle.poll_once(Duration::from_secs(5)).await.unwrap().expect("one invocation");
    assert!(run.failed_ids.is_empty(), "{run:?}");
    assert!(!w.ledger(interview).await.is_empty(), "settled: billing keeps its records");
    assert!(w.outbox(interview).await.is_none(), "the outbox entry is deleted");
    assert_eq!(depth(&w.sqs, &w.queues.report_generate.source.url).await, (0, 0), "nothing published");
    assert_tombstone(&w, interview).await;
}

#[tokio::test]
async fn the_admin_retry_after_the_erasure_is_refused_and_publishes_nothing() {
    use sophia_reports::admin::{AdminError, RetryRequest, retry_report_generation};
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    api_request(&w, interview, org).await;
    for reset_attempts in [false, true] {
        let request = RetryRequest { interview_id: interview, organization_id: org, reset_attempts };
        let refused = retry_report_generation(&w.mongo.db, request, |_, _| async {
            Err::<(), _>(std::io::Error::other("nothing may be published"))
        })
        .await;
        assert!(matches!(refused, Err(AdminError::Erased { .. })), "{refused:?}");
    }
    let ctx = w.ops_context();
    let args = ["report", "retry", &interview.to_string(), &org.to_string()];
    let refused = ops_support::run(&ctx, &args).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(depth(&w.sqs, &w.queues.report_generate.source.url).await, (0, 0));
    assert_tombstone(&w, interview).await;
}

#[tokio::test]
async fn one_request_for_every_interview_of_a_candidate_is_recorded_with_who_when_and_why() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let (a, b) = (w.reserved_interview(org, 5).await, w.reserved_interview(org, 5).await);
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let args =
        ["erasure", "request", &a.to_string(), &b.to_string(), "--reason", "candidate-request", "--reference", "DPO-9"];
    let started = chrono::Utc::now();
    let result = ops_support::run(&ctx, &args).await;
    // The audit record, as the binary writes it after a mutating command (locally `operatorAudit`).
    let argv: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    sophia_ops::record_audit(&ctx, "erasure-request", &argv, started, &result).await;
    let Ok(Outcome::ErasureRequest(report)) = result else { panic!("{result:?}") };
    let audit = w.find("operatorAudit", doc! {"command": "erasure-request"}).await;
    assert_eq!(audit.len(), 1, "one audit record");
    assert_eq!(
        audit[0].get_str("requestId").ok(),
        report.erasures[0].request_id.as_deref(),
        "the audit record and the requests share their id"
    );
    assert_eq!(report.erasures.len(), 2);
    let request_ids: Vec<_> = report.erasures.iter().map(|e| e.request_id.clone()).collect();
    assert!(request_ids[0].is_some() && request_ids[0] == request_ids[1], "one request id for both: {request_ids:?}");
    for e in &report.erasures {
        assert_eq!(
            (e.reason.as_str(), e.reference.as_deref(), e.via.as_str(), e.removed.report.as_deref()),
            ("candidate-request", Some("DPO-9"), "sophia-ops", Some("none"))
        );
        assert!(e.requested_at.is_some());
    }
    assert_eq!(
        w.find("erasures", doc! {"organizationId": org.oid()}).await.len(),
        2,
        "the organization found from the interview"
    );
    // A repeat is recorded, the first request kept.
    ops_support::ok(&ctx, &["erasure", "request", &a.to_string(), "--reason", "legal-order", "--reference", "DPO-10"])
        .await;
    let stored = w.find("erasures", doc! {"_id": a.oid()}).await;
    assert_eq!(
        (stored[0].get_str("reason").unwrap(), stored[0].get_str("reference").unwrap()),
        ("candidate-request", "DPO-9")
    );
    let repeat = stored[0].get_array("repeats").unwrap()[0].as_document().unwrap().clone();
    assert_eq!((repeat.get_str("reason").unwrap(), repeat.get_str("reference").unwrap()), ("legal-order", "DPO-10"));
    assert_eq!(stored[0].get_array("repeats").map(Vec::len).unwrap_or(0), 1);
    assert!(matches!(stored[0].get("completedAt"), Some(Bson::Null)), "PENDING: the interviews hold candidate fields");
    let indexes = w.mongo.db.collection::<Document>("erasures").list_index_names().await.unwrap();
    assert!(indexes.iter().any(|n| n.contains("state_requestedAt")), "migrate indexes the overdue count: {indexes:?}");
    let Outcome::ErasureShow(overdue) = ops_support::ok(&ctx, &["erasure", "list", "--overdue"]).await else {
        panic!()
    };
    assert!(overdue.erasures.is_empty(), "none older than the completion time");
}

/// A report of `org` for `interview`, as the consumer stores a completed one.
pub(crate) async fn seed_report(w: &World, interview: InterviewId, org: OrganizationId, status: &str) {
    let now = bson::DateTime::now();
    let report = doc! {
        "interviewId": interview.oid(), "organizationId": org.oid(), "status": status, "attemptCount": 1_i32,
        "report": {"summary": "the candidate said ..."}, "createdAt": now, "updatedAt": now,
    };
    w.mongo.db.collection::<Document>("interviewReports").insert_one(report).await.unwrap();
}

#[tokio::test]
async fn without_the_unique_index_the_real_report_itself_becomes_the_tombstone() {
    let w = World::fresh().await;
    let reports = w.mongo.db.collection::<Document>("interviewReports");
    for name in reports.list_index_names().await.unwrap() {
        if name != "_id_" {
            reports.drop_index(name).await.unwrap();
        }
    }
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    seed_report(&w, interview, org, "COMPLETED").await;
    api_request(&w, interview, org).await;
    assert_tombstone(&w, interview).await;
    let stored = w.find("erasures", doc! {"_id": interview.oid()}).await;
    assert_eq!(stored[0].get_document("removed").unwrap().get_str("report").unwrap(), "report COMPLETED");
    // A repeat finds the tombstone and writes no second one.
    erasure::erase_stored(&w.mongo.db, interview).await.unwrap();
    assert_tombstone(&w, interview).await;
}

#[tokio::test]
async fn another_organizations_interview_is_refused_and_its_report_untouched() {
    let w = World::fresh().await;
    let (mine, theirs) = (w.org_with_credits(50).await, w.org_with_credits(50).await);
    let interview = w.reserved_interview(theirs, 10).await;
    seed_report(&w, interview, theirs, "COMPLETED").await;
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let args = [
        "erasure",
        "request",
        &interview.to_string(),
        "--organization-id",
        &mine.to_string(),
        "--reason",
        "candidate-request",
    ];
    let refused = ops_support::run(&ctx, &args).await;
    let Err(sophia_ops::OpsError::Invalid(why)) = &refused else { panic!("{refused:?}") };
    assert!(why.contains("is not organization") && why.contains("nothing was erased"), "{why}");
    assert_eq!(report_of(&w, interview).await.get_str("status").unwrap(), "COMPLETED", "untouched");
    assert!(w.find("erasures", doc! {"_id": interview.oid()}).await.is_empty(), "no request recorded");
}

#[tokio::test]
async fn a_requested_erasure_before_its_tombstone_sends_nothing_to_the_model() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    let fake = FakeOpenAi::scripted().unwrap();
    fake.push(Behaviour::Report);
    let reports = ops_support::report_mapping(&w, &fake);
    // The request recorded, its tombstone not written yet (the API's request between its two steps).
    let requester = requester("DPO-12");
    erasure::record_request(&w.mongo.db, interview, Some(org.oid()), &requester, "api-erasure-test").await.unwrap();
    let stored = w.find("erasures", doc! {"_id": interview.oid()}).await;
    let pending: Vec<&str> = stored[0]
        .get_array("pending")
        .unwrap()
        .iter()
        .map(|p| p.as_document().unwrap().get_str("what").unwrap())
        .collect();
    assert_eq!(pending, ["report", "queues"], "the report is pending until its tombstone is written");
    send(&w.sqs, &w.queues.report_generate.source.url, &report_body(interview, org)).await;
    let run = reports.poll_once(Duration::from_secs(5)).await.unwrap().expect("one invocation");
    assert!(run.failed_ids.is_empty(), "acknowledged: {run:?}");
    assert_eq!(fake.request_count(), 0, "the candidate's data was not sent to the model");
    erasure::erase_stored(&w.mongo.db, interview).await.unwrap();
    let stored = w.find("erasures", doc! {"_id": interview.oid()}).await;
    assert_eq!(stored[0].get_array("pending").unwrap().len(), 1, "the report no longer pending");
    assert_tombstone(&w, interview).await;
}

#[tokio::test]
async fn a_dlq_message_in_flight_elsewhere_keeps_the_erasure_pending_until_a_sweep_sees_it() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    api_request(&w, interview, org).await;
    api_erases_its_interview(&w, interview).await;
    let dlq = w.queues.interview_completed.dlq.url.clone();
    send(&w.sqs, &dlq, &failed_body(interview, org, "the candidate disclosed a medical condition")).await;
    // Received elsewhere (a redrive under way, a `dlq show`): the sweep cannot read it.
    let held = w.sqs.receive_message().queue_url(&dlq).visibility_timeout(300).send().await.unwrap();
    let handle = held.messages()[0].receipt_handle().unwrap().to_owned();
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    let record = &swept.erasures[0];
    assert_eq!(record.state.as_str(), "PENDING", "{record:?}");
    assert!(record.pending.iter().any(|p| p.what == "queues" && p.why.contains("in flight")), "{record:?}");
    // Back in the DLQ: the next sweep deletes it and ends the request DONE.
    w.sqs
        .change_message_visibility()
        .queue_url(&dlq)
        .receipt_handle(handle)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let Outcome::ErasureRequest(swept) = ops_support::ok(&ctx, &["erasure", "sweep"]).await else { panic!() };
    let done = &swept.erasures[0];
    assert_eq!((done.state.as_str(), done.removed.dlq_messages), ("DONE", 1), "{done:?}");
    assert_eq!(depth(&w.sqs, &dlq).await, (0, 0));
}

#[test]
fn a_reason_that_is_not_declared_or_a_reference_with_spaces_is_refused_and_nothing_is_recorded() {
    let id = InterviewId::new(bson::oid::ObjectId::new()).to_string();
    for (flag, typed) in [("--reason", "Jane Doe asked by phone"), ("--reference", "Jane Doe")] {
        let mut argv = vec!["sophia-ops", "erasure", "request", id.as_str(), "--reason", "candidate-request"];
        if flag == "--reason" {
            argv[5] = typed;
        } else {
            argv.extend([flag, typed]);
        }
        let refused = sophia_ops::parse(&argv).unwrap_err().to_string();
        assert!(refused.contains(flag), "{refused}");
        let why =
            if flag == "--reason" { "candidate-request, contract-end, legal-order, test-data" } else { "DPO-123" };
        assert!(refused.contains(why), "the declared rule is said: {refused}");
        assert!(refused.contains("never"), "{refused}");
    }
}

#[tokio::test]
async fn a_repeated_request_matches_the_first_by_its_id_without_any_other_index() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 5).await;
    // Whatever indexes `erasures` has beyond `_id`'s, none is relied on.
    let _ = w.mongo.db.collection::<Document>("erasures").drop_indexes().await;
    let (first, again) = (requester("DPO-20"), requester("DPO-21"));
    let db = &w.mongo.db;
    let (a, b) = tokio::join!(
        erasure::record_request(db, interview, Some(org.oid()), &first, "r-1"),
        erasure::record_request(db, interview, Some(org.oid()), &again, "r-2"),
    );
    a.unwrap();
    b.unwrap();
    erasure::record_request(db, interview, Some(org.oid()), &again, "r-3").await.unwrap();
    let stored = w.find("erasures", doc! {"interviewId": interview.oid()}).await;
    assert_eq!(stored.len(), 1, "one request document: {stored:?}");
    assert_eq!(stored[0].get_array("repeats").unwrap().len(), 2, "the two others recorded as repeats");
    assert_eq!(stored[0].get_object_id("_id").unwrap(), interview.oid(), "keyed by the interview's ObjectId");
    let pending = erasure::pending_interviews(db).await.unwrap();
    assert!(pending.contains(&interview), "the sweep finds it: {pending:?}");
}

/// The scheduled erasure check's payload (report_generate::ScheduledRequest), as declared once
/// (declarations/reports.json `erasureCheckInvocation`): what the stage's schedule sends
/// (infra-pulumi/src/erasure-check.ts reads the same declaration).
fn erasure_check() -> String {
    let declared: serde_json::Value =
        serde_json::from_str(sophia_declarations::REPORTS_JSON).expect("reports.json parses");
    declared["erasureCheckInvocation"].to_string()
}

#[tokio::test]
async fn the_scheduled_check_counts_overdue_erasures_without_any_traffic_in_a_declared_emf_line() {
    // The metrics sink is process-wide: this test runs alone in its own process.
    const TEST: &str = "the_scheduled_check_counts_overdue_erasures_without_any_traffic_in_a_declared_emf_line";
    if !crate::support::alone::is_alone(module_path!(), TEST) {
        return crate::support::alone::run_alone(module_path!(), TEST, &[], &[]);
    }
    use report_generate::{Answer, ErasureChecked, Invocation, ReportGenerateHandler};
    use sophia_sqs_consumer::metrics::{self, Declaration, EmittedBy};
    use std::sync::{Arc, Mutex};
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let (old, fresh) = (w.reserved_interview(org, 5).await, w.reserved_interview(org, 5).await);
    for id in [old, fresh] {
        erasure::record_request(&w.mongo.db, id, Some(org.oid()), &requester("DPO-30"), "r-30").await.unwrap();
    }
    // One request made longer ago than the declared completion time, still PENDING.
    let hours = sophia_declarations::ERASURE_COMPLETION_HOURS as i64 + 1;
    let past = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - hours * 3_600_000);
    w.mongo
        .db
        .collection::<Document>("erasures")
        .update_one(doc! {"_id": old.oid()}, doc! {"$set": {"requestedAt": past}})
        .await
        .unwrap();

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = lines.clone();
    metrics::set_sink(Some(Arc::new(move |l: &str| kept.lock().unwrap().push(l.to_owned()))));
    let fake = FakeOpenAi::scripted().unwrap();
    let settings = harness::functions::fake_openai(&fake, Duration::from_secs(5));
    let service = sophia_reports::ReportService::new(w.mongo.db.clone(), sophia_reports::ReportModel::new(&settings));
    let handler = ReportGenerateHandler::with_service(w.mongo.clone(), service, Default::default());
    // Parsed at the boundary, as the runtime parses the payload.
    let payload: Invocation = serde_json::from_str(&erasure_check()).unwrap();
    let answer = handler.handle_invocation(lambda_runtime::LambdaEvent::new(payload, Default::default())).await;
    metrics::set_sink(None);
    let Ok(Answer::ErasureChecked(checked)) = answer else { panic!("{answer:?}") };
    assert_eq!(checked, ErasureChecked { erasures_overdue: 1 });
    assert_eq!(fake.request_count(), 0, "no model call");

    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "one line, no traffic: {lines:?}");
    let line: serde_json::Value = serde_json::from_str(&lines[0]).expect("an EMF document");
    assert_eq!(line["ErasuresOverdue"], 1.0);
    let spec = Declaration::embedded();
    let declared = spec.metric("ErasuresOverdue").expect("declared in metrics.json");
    let directive = &line["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(directive["Namespace"], spec.namespace.as_str());
    assert_eq!(directive["Dimensions"], serde_json::json!(declared.dimension_sets), "the declared dimensions");
    assert_eq!(directive["Metrics"][0]["Unit"], declared.unit.as_str());
    for name in directive["Dimensions"][0].as_array().unwrap() {
        assert!(line[name.as_str().unwrap()].is_string(), "dimension {name} on the line: {line}");
    }
    let EmittedBy::Functions(by) = &declared.emitted_by else { panic!("declared per function") };
    assert!(by.iter().any(|f| f == "report-generate"));
    assert!(!lines[0].contains(&old.to_string()), "no id in a metric line");

    // Anything else with the key is refused at the boundary, never read as an empty batch.
    for bad in [r#"{"sophiaScheduled":"sweep-everything"}"#, r#"{"sophiaScheduled":"erasure-check","extra":1}"#] {
        let e = serde_json::from_str::<Invocation>(bad).unwrap_err().to_string();
        assert!(e.contains("not a valid scheduled request"), "{e}");
    }
}

#[tokio::test]
async fn after_a_restore_the_replay_records_again_and_completes_every_audited_request_the_restore_dropped() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 5).await;
    let ctx = w.ops_context().acting_as(Some("dpo@example.com".into()));
    let id = interview.to_string();
    let args = ["erasure", "request", id.as_str(), "--reason", "contract-end", "--reference", "DPO-40"];
    let started = chrono::Utc::now();
    let result = ops_support::run(&ctx, &args).await;
    // The append-only record, as the binary writes it (locally `operatorAudit`; a stage's log group).
    let argv: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    sophia_ops::record_audit(&ctx, "erasure-request", &argv, started, &result).await;
    let Ok(Outcome::ErasureRequest(requested)) = &result else { panic!("{result:?}") };

    simulate_restore(&w, interview, org).await;

    let Outcome::ErasureRequest(replayed) = ops_support::ok(&ctx, &["erasure", "replay", "--since", "1h"]).await else {
        panic!()
    };
    assert_eq!(replayed.erasures.len(), 1, "{replayed:?}");
    let e = &replayed.erasures[0];
    assert_eq!(
        (e.interview_id.as_str(), e.reason.as_str(), e.reference.as_deref(), e.via.as_str()),
        (id.as_str(), "contract-end", Some("DPO-40"), "sophia-ops replay")
    );
    assert_eq!(e.requested_by, "dpo@example.com (self-declared)", "who asked, as audited");
    let original = requested.erasures[0].requested_at.clone();
    assert!(original.is_some());
    assert_eq!(e.requested_at, original, "when it was asked, as audited (not the replay's time)");
    let replayed_at = e.replayed_at.as_deref().expect("the replay's time recorded as replayedAt");
    assert!(Some(replayed_at) >= original.as_deref(), "{replayed_at} before {original:?}");
    assert_eq!(e.removed.report.as_deref(), Some("report COMPLETED"), "the restored report erased again");
    assert_tombstone(&w, interview).await;
    // A second replay finds every request in place and records nothing new.
    let Outcome::ErasureRequest(again) = ops_support::ok(&ctx, &["erasure", "replay", "--since", "1h"]).await else {
        panic!()
    };
    assert!(again.erasures.is_empty(), "{again:?}");
}

#[tokio::test]
async fn a_request_that_fails_does_not_stop_the_sweep_of_the_others_and_the_sweep_exits_incomplete() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let good = w.reserved_interview(org, 5).await;
    let bad = w.reserved_interview(org, 5).await;
    for interview in [bad, good] {
        api_request(&w, interview, org).await;
        api_erases_its_interview(&w, interview).await;
    }
    // A request no step can complete: it names another organization than its report's (the
    // tombstone of that organization's report can never be written next to the real one).
    w.mongo
        .db
        .collection::<Document>("erasures")
        .update_one(doc! {"_id": bad.oid()}, doc! {"$set": {"organizationId": bson::oid::ObjectId::new()}})
        .await
        .unwrap();

    let ctx = w.ops_context();
    let outcome = ops_support::ok(&ctx, &["erasure", "sweep"]).await;
    assert_ne!(outcome.exit_code(), 0, "a failed request makes the sweep exit non-zero");
    let Outcome::ErasureRequest(swept) = outcome else { panic!() };
    assert_eq!(swept.erasures.len(), 1, "{swept:?}");
    assert_eq!(
        (swept.erasures[0].interview_id.as_str(), swept.erasures[0].state.as_str()),
        (good.to_string().as_str(), "DONE")
    );
    assert_eq!(swept.failed.len(), 1, "{swept:?}");
    let f = &swept.failed[0];
    assert_eq!((f.interview_id.as_str(), f.step, f.kind), (bad.to_string().as_str(), "stored copies", "invalid-input"));
    assert!(
        swept.human().contains(&format!("erasure of interview {bad}: FAILED at stored copies (invalid-input)")),
        "{}",
        swept.human()
    );
    let shown = erasure::show(&w.mongo.db, bad).await.unwrap();
    assert_eq!(shown.state, "PENDING", "the failed request is not finished");
}

#[tokio::test]
async fn after_a_restore_the_replay_records_again_the_apis_requests_a_sweep_listed() {
    let w = World::fresh().await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 5).await;
    api_request(&w, interview, org).await;
    let ctx = w.ops_context();
    let args = ["erasure", "sweep"];
    let started = chrono::Utc::now();
    let result = ops_support::run(&ctx, &args).await;
    let argv: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    sophia_ops::record_audit(&ctx, "erasure-sweep", &argv, started, &result).await;
    assert!(result.is_ok(), "{result:?}");

    simulate_restore(&w, interview, org).await;

    let Outcome::ErasureRequest(replayed) = ops_support::ok(&ctx, &["erasure", "replay", "--since", "1h"]).await else {
        panic!()
    };
    assert_eq!(replayed.erasures.len(), 1, "{replayed:?}");
    let e = &replayed.erasures[0];
    assert_eq!((e.interview_id.as_str(), e.reference.as_deref()), (interview.to_string().as_str(), Some("DPO-7")));
    assert_eq!(e.requested_by, "dpo@example.com", "who asked, as the sweep's record holds it");
    assert_tombstone(&w, interview).await;
}

/// A restore from a backup before the request: the report back, no request.
async fn simulate_restore(w: &World, interview: InterviewId, org: OrganizationId) {
    w.mongo.db.collection::<Document>("erasures").delete_many(doc! {}).await.unwrap();
    w.mongo
        .db
        .collection::<Document>("interviewReports")
        .delete_many(doc! {"interviewId": interview.oid()})
        .await
        .unwrap();
    seed_report(w, interview, org, "COMPLETED").await;
}
