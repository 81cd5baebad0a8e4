//! Every mutating `sophia-ops` command plans from the state the consumer will read, and the plan
//! comes true: each test prints a plan (`--dry-run`), runs the command, then drives the real
//! consumer code (the interview-completed and report-generate functions as their `main` builds
//! them, behind the event-source-mapping emulator, on fauxqs queues with a 1 s visibility
//! timeout, nx-27017 and the OpenAI fake) and checks that what happened is what the plan said:
//! a wrong organization, a missing interview, a settled one, an unsettled one, a COMPLETED report.
//! The audit record of each command and the request id of the messages it sends are checked too.

use crate::support::ops as ops_support;

use std::time::Duration;

use bson::doc;
use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::mongo::reports_of;
use harness::sqs::{completed_body, depth, failed_body, send};
use ops_support::ok;
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, Timestamp};
use sophia_credits::{SettleContext, SettlementService};
use sophia_openai_fake::FakeOpenAi;
use sophia_ops::Outcome;

/// The plan's line for `interview`.
fn line_of(plan: &sophia_ops::confirm::Plan, interview: InterviewId) -> String {
    let id = interview.to_string();
    plan.effects.iter().find(|e| e.contains(&id)).cloned().unwrap_or_else(|| panic!("no line for {id}: {plan:#?}"))
}

async fn settle_now(w: &World, interview: InterviewId, org: OrganizationId, seconds: u64) {
    settle_at(w, interview, org, seconds, SettleContext::now_with_deadline(None)).await;
}

async fn settle_at(w: &World, interview: InterviewId, org: OrganizationId, seconds: u64, context: SettleContext) {
    let service = SettlementService::new(w.mongo.client.clone(), w.mongo.db.clone());
    let at: Timestamp = harness::sqs::COMPLETED_AT.parse().unwrap();
    let outcome = service
        .settle_completed_interview(interview, org, at, DurationSeconds::new(seconds).unwrap(), context)
        .await
        .unwrap();
    assert!(outcome.settled());
}

#[tokio::test]
async fn the_interview_dlq_redrive_plan_comes_true_for_each_message() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let other_org = w.org_with_credits(100).await;
    let settled = w.reserved_interview(org, 10).await;
    let unsettled = w.reserved_interview(org, 10).await;
    let wrong_org = w.reserved_interview(org, 10).await;
    let missing: InterviewId = bson::oid::ObjectId::new().to_hex().parse().unwrap();
    settle_now(&w, settled, org, 300).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let dlq = &queues.interview_completed.dlq.url;
    send(sqs, dlq, &completed_body(settled, org, 300)).await;
    send(sqs, dlq, &completed_body(unsettled, org, 300)).await;
    send(sqs, dlq, &completed_body(wrong_org, other_org, 300)).await;
    send(sqs, dlq, &failed_body(missing, org, "the call dropped")).await;

    let ctx = w.ops_context();
    let Outcome::DlqRedrive(dry) = ok(&ctx, &["dlq", "redrive", "interview-completed", "--dry-run"]).await else {
        panic!("a redrive")
    };
    let plan = dry.plan.as_ref().unwrap();
    assert!(line_of(plan, settled).contains("already settled: acknowledged, nothing charged"), "{plan:#?}");
    assert!(
        line_of(plan, unsettled).contains("settles: 5 credit(s) consumed, 5 released"),
        "300 s bill 5 of the 10 reserved: {plan:#?}"
    );
    let wrong = line_of(plan, wrong_org);
    assert!(
        wrong.contains("the interview belongs to another organization") && wrong.contains("back in the DLQ"),
        "{wrong}"
    );
    let gone = line_of(plan, missing);
    assert!(gone.contains("the interview does not exist") && gone.contains("back in the DLQ"), "{gone}");

    let Outcome::DlqRedrive(done) = ok(&ctx, &["dlq", "redrive", "interview-completed"]).await else { panic!() };
    assert_eq!(done.moved, 4);
    // The moved messages carry the operator's request id and their organization as group.
    let interviews = interview_esm(sqs, queues, 1, w.settings());
    let started = std::time::Instant::now();
    while depth(sqs, dlq).await.0 < 2 {
        assert!(started.elapsed() < Duration::from_secs(60), "the two failing messages did not come back");
        interviews.poll_once(Duration::from_secs(1)).await.expect("poll");
    }
    assert!(w.settled(unsettled).await, "the unsettled interview was settled, as planned");
    assert_eq!(
        w.org_credits(org).await,
        (100 - 5 - 5 - 10, 10),
        "each 300 s interview charged 5, once; the wrong organization's 10 stay reserved"
    );
    assert!(!w.settled(wrong_org).await, "the wrong organization's message did not settle");
    let back = harness::drain(sqs, dlq).await;
    let mut back_ids: Vec<String> = back
        .iter()
        .filter_map(|m| sophia_ops::contract::interview_named(m.body().unwrap()).map(|i| i.to_string()))
        .collect();
    back_ids.sort();
    let mut expected = vec![wrong_org.to_string(), missing.to_string()];
    expected.sort();
    assert_eq!(back_ids, expected, "exactly the two messages the plan said would fail are back in the DLQ");
    for m in &back {
        let attrs = m.message_attributes().unwrap();
        let ops_id = attrs["opsRequestId"].string_value().unwrap();
        assert!(ops_id.starts_with("ops:dlq-redrive:"), "{ops_id}");
    }
    w.assert_invariants().await;
}

#[tokio::test]
async fn publish_plans_read_the_interview_and_come_true() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let other_org = w.org_with_credits(100).await;
    let settled = w.reserved_interview(org, 10).await;
    let fresh = w.reserved_interview(org, 10).await;
    settle_now(&w, settled, org, 600).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.ops_context();
    let (s, f, o, other) = (settled.to_string(), fresh.to_string(), org.to_string(), other_org.to_string());

    let Outcome::DryRun(plan) =
        ok(&ctx, &["publish", "completed", &s, &o, "--duration-seconds", "300", "--dry-run"]).await
    else {
        panic!()
    };
    assert!(plan.effects.iter().any(|e| e.contains("already settled: acknowledged, nothing charged")), "{plan:#?}");
    assert!(!plan.effects.iter().any(|e| e.contains("billed")), "no bill is promised for a settled interview");
    assert!(plan.attributes["requestId"].starts_with("ops:publish-completed:"), "{plan:#?}");
    let Outcome::DryRun(plan) = ok(&ctx, &["publish", "failed", &f, &other, "--reason", "x", "--dry-run"]).await else {
        panic!()
    };
    assert!(plan.effects.iter().any(|e| e.contains("belongs to another organization")), "{plan:#?}");
    let Outcome::DryRun(plan) = ok(&ctx, &["publish", "failed", &f, &o, "--reason", "x", "--dry-run"]).await else {
        panic!()
    };
    assert!(
        plan.effects.iter().any(|e| e.contains("settles as failed: nothing consumed, 10 credit(s) released")),
        "{plan:#?}"
    );

    // Now both for real, through the consumer.
    let started = chrono::Utc::now();
    let result = sophia_ops::execute(
        &sophia_ops::parse(["sophia-ops", "publish", "completed", &s, &o, "--duration-seconds", "300"])
            .unwrap()
            .command,
        &ctx,
    )
    .await;
    let Ok(Outcome::Publish(sent)) = &result else { panic!("{result:?}") };
    assert!(sent.request_id.starts_with("ops:publish-completed:"), "{}", sent.request_id);
    let line = sophia_ops::record_audit(&ctx, "publish-completed", &["publish".into()], started, &result).await;
    assert!(line.starts_with("{\"audit\":"), "{line}");
    ok(&ctx, &["publish", "failed", &f, &o, "--reason", "the candidate said something"]).await;
    let interviews = interview_esm(sqs, queues, 1, w.settings());
    poll_until(&interviews, Duration::from_secs(30), |runs| runs.iter().map(|r| r.deleted).sum::<usize>() >= 2).await;
    assert_eq!(w.ledger_of(settled).await.iter().filter(|(t, _)| t == "SETTLE").count(), 1, "charged once");
    assert!(w.settled(fresh).await);
    let mut ledger = w.ledger_of(fresh).await;
    ledger.sort();
    assert_eq!(ledger, vec![("RELEASE".to_owned(), 10), ("RESERVE".to_owned(), 10)], "the whole reservation released");

    // The audit record is in operatorAudit, readable by `audit list`, candidate text redacted.
    let Outcome::AuditList(listing) = ok(&ctx, &["audit", "list", "--command", "publish-completed"]).await else {
        panic!()
    };
    assert_eq!(listing.records.len(), 1, "{listing:#?}");
    let record = &listing.records[0];
    assert_eq!(record["result"], "done");
    assert_eq!(record["requestId"].as_str(), Some(sent.request_id.as_str()));
    assert_eq!(record["who"]["selfDeclared"], true, "the local pipeline has no AWS identity");
    assert!(!serde_json::to_string(record).unwrap().contains("candidate said"));
    w.assert_invariants().await;
}

#[tokio::test]
async fn report_plans_for_a_completed_report_and_a_missing_interview_come_true() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let done = w.reserved_interview(org, 10).await;
    let missing: InterviewId = bson::oid::ObjectId::new().to_hex().parse().unwrap();
    w.mongo
        .db
        .collection::<bson::Document>("interviewReports")
        .insert_one(
            doc! {"interviewId": done.oid(), "organizationId": org.oid(), "status": "COMPLETED", "attemptCount": 1},
        )
        .await
        .unwrap();
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.ops_context();
    let (d, m, o) = (done.to_string(), missing.to_string(), org.to_string());

    let Outcome::DryRun(plan) = ok(&ctx, &["report", "retry", &d, &o, "--reset-attempts", "--dry-run"]).await else {
        panic!()
    };
    assert!(plan.effects.iter().any(|e| e.contains("report COMPLETED: nothing to do")), "{plan:#?}");
    assert!(!plan.effects.iter().any(|e| e.contains("resets")), "no reset is promised: {plan:#?}");
    let Outcome::ReportRetry(retry) = ok(&ctx, &["report", "retry", &d, &o, "--reset-attempts"]).await else {
        panic!()
    };
    assert_eq!(retry.outcome, "already-completed", "as planned: nothing published");

    let Outcome::DryRun(plan) = ok(&ctx, &["publish", "report", &d, &o, "--dry-run"]).await else { panic!() };
    assert!(plan.effects.iter().any(|e| e.contains("report COMPLETED: acknowledged, nothing to do")), "{plan:#?}");
    let Outcome::DryRun(plan) = ok(&ctx, &["publish", "report", &m, &o, "--dry-run"]).await else { panic!() };
    assert!(plan.effects.iter().any(|e| e.contains("dropped: interview not found")), "{plan:#?}");
    ok(&ctx, &["publish", "report", &d, &o]).await;
    ok(&ctx, &["publish", "report", &m, &o]).await;

    let fake = FakeOpenAi::scripted().unwrap();
    let reports = ops_support::report_mapping(&w, &fake);
    poll_until(&reports, Duration::from_secs(30), |runs| runs.iter().map(|r| r.deleted).sum::<usize>() >= 2).await;
    assert!(fake.requests().is_empty(), "no model call for either");
    assert!(reports_of(&w.mongo.db, missing).await.is_empty(), "nothing written for the missing interview");
    let report = &reports_of(&w.mongo.db, done).await[0];
    assert_eq!(report.get_str("status").unwrap(), "COMPLETED");
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (0, 0), "both acknowledged");
}

#[tokio::test]
async fn outbox_flush_counts_its_entries_and_dlq_delete_says_what_the_message_would_have_done() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(100).await;
    let interview = w.reserved_interview(org, 10).await;
    // Settled two minutes ago, as tests/it/ops_admin.rs does: an entry only milliseconds old was
    // missed by nx-27017's `createdAt $lt now` in the one test binary (MongoDB does not miss it).
    let two_minutes_ago = SettleContext { deadline: None, now: chrono::Utc::now() - chrono::Duration::minutes(2) };
    settle_at(&w, interview, org, 120, two_minutes_ago).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.ops_context();
    let cli = sophia_ops::parse(["sophia-ops", "outbox", "flush", "--older-than", "0s"]).unwrap();
    let plan = match sophia_ops::execute(&cli.command, &ctx).await {
        Ok(Outcome::OutboxFlush(report)) => {
            assert_eq!(report.published, 1, "{report:?}");
            ctx.take_plan().expect("the plan is kept")
        }
        other => panic!("{other:?}"),
    };
    assert!(plan.effects.iter().any(|e| e == "1 pending entry will be published"), "{plan:#?}");
    assert!(line_of(&plan, interview).contains("generated: attempt 1 of 3"), "{plan:#?}");

    let dlq = &queues.interview_completed.dlq.url;
    send(sqs, dlq, &completed_body(interview, org, 120)).await;
    let listed = ok(&ctx, &["dlq", "list", "interview-completed"]).await;
    let Outcome::DlqList(listing) = listed else { panic!() };
    let id = listing.messages[0].message_id.clone();
    let Outcome::DryRun(plan) = ok(&ctx, &["dlq", "delete", "interview-completed", &id, "--dry-run"]).await else {
        panic!()
    };
    assert!(plan.effects.iter().any(|e| e.contains("redriven instead") && e.contains("already settled")), "{plan:#?}");

    // queue move: each sample says what the destination's consumer will do with it.
    let old_queue =
        sqs.create_queue().queue_name(harness::unique("old-stack")).send().await.unwrap().queue_url.unwrap();
    send(sqs, &old_queue, &completed_body(interview, org, 120)).await;
    let Outcome::QueueMove(dry) =
        ok(&ctx, &["queue", "move", "--from-url", &old_queue, "--to", "interview-completed", "--dry-run"]).await
    else {
        panic!()
    };
    let plan = dry.plan.expect("the dry run carries its plan");
    assert!(
        plan.effects
            .iter()
            .any(|e| e.starts_with("sample ") && e.contains("already settled: acknowledged, nothing charged")),
        "{plan:#?}"
    );
}
