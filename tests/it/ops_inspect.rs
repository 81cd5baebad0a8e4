//! What an operator reads, through the local pipeline: `interview show` (settlement, ledger by
//! lot, outbox entry, report state, the DLQ message) for an interview whose report failed three
//! times; DLQ bodies redacted unless `--show-body`; `dlq delete` of one message the operator has
//! decided to drop. Candidate text never appears in what is printed (human or JSON).

use crate::support::ops as ops_support;

use std::collections::HashMap;
use std::time::Duration;

use harness::World;
use harness::functions::{interview_esm, poll_until};
use harness::sqs::{completed_body, depth, failed_body, send};
use ops_support::{put, run, string_attr, visible, visible_when};
use sophia_openai_fake::{Behaviour, FakeOpenAi};
use sophia_ops::{Outcome, render};

/// Text only a candidate could have said: it must never be printed.
const MARKER: &str = "CANDIDATE-SAID-ZEBRA-7731";

#[tokio::test]
async fn interview_show_tells_the_whole_story_of_one_interview_without_candidate_text() {
    let w = World::fast(1).await;
    let org = w.org_with_credits(50).await;
    let interview = w.reserved_interview(org, 10).await;
    // Candidate text stored on the interview must not leak into the output (nx-27017 has no
    // array-index update paths, so a top-level field stands for the transcript here).
    w.mongo
        .db
        .collection::<bson::Document>("interviews")
        .update_one(bson::doc! {"_id": interview.oid()}, bson::doc! {"$set": {"candidateNotes": MARKER}})
        .await
        .unwrap();
    let (sqs, queues) = (&w.sqs, &w.queues);
    send(sqs, &queues.interview_completed.source.url, &completed_body(interview, org, 240)).await;
    let settlement = interview_esm(sqs, queues, 1, w.settings());
    poll_until(&settlement, Duration::from_secs(20), |s| s.iter().any(|r| r.deleted == 1)).await;

    let fake = FakeOpenAi::scripted().unwrap();
    for _ in 0..3 {
        fake.push(Behaviour::RefusalText(format!("I will not repeat {MARKER}")));
    }
    let reports = ops_support::report_mapping(&w, &fake);
    poll_until(&reports, Duration::from_secs(30), |s| s.len() >= 3).await;
    assert!(reports.poll_once(Duration::from_secs(2)).await.unwrap().is_none());
    assert_eq!(depth(sqs, &queues.report_generate.dlq.url).await, (1, 0));

    let ctx = w.ops_context();
    let id = interview.to_string();
    let result = run(&ctx, &["interview", "show", &id]).await;
    let Ok(Outcome::InterviewShow(shown)) = &result else { panic!("{result:?}") };
    assert!(shown.found);
    assert_eq!(shown.organization_id.as_deref(), Some(org.to_string().as_str()));
    let st = &shown.settlement;
    assert!(st.settled_at.is_some());
    assert_eq!((st.credits_reserved, st.credits_consumed), (Some(10), Some(4)), "240 s bill 4 credits");
    assert_eq!(st.ledger.len(), 1, "one lot");
    let kinds: Vec<(&str, Option<i64>)> = st.ledger[0].lines.iter().map(|l| (l.kind.as_str(), l.amount)).collect();
    assert!(kinds.contains(&("RESERVE", Some(10))) && kinds.iter().any(|(k, _)| *k == "SETTLE"), "{kinds:?}");
    let outbox = st.outbox.as_ref().expect("the report.generate outbox entry");
    assert_eq!(outbox.status, "PUBLISHED");
    assert_eq!(outbox.request_id, format!("settlement-{interview}"));
    let report = shown.report.as_ref().expect("a report");
    assert_eq!((report.status.as_deref(), report.attempt_count), (Some("FAILED"), Some(3)));
    assert_eq!(report.error_kind.as_deref(), Some("refusal"));
    assert!(report.refused, "the refusal is reported, its text is not");
    assert_eq!(shown.dlq.messages.len(), 1, "{:?}", shown.dlq);
    assert_eq!(shown.dlq.messages[0].queue.as_str(), "report-generate");
    assert_eq!(visible(sqs, &queues.report_generate.dlq.url).await, 1, "looking removed nothing");

    let human = render(&result, false).stdout;
    let json = render(&result, true).stdout;
    for text in [&human, &json] {
        assert!(!text.contains(MARKER), "candidate text printed:\n{text}");
    }
    assert!(human.contains("IN THE report-generate DLQ"), "{human}");
    assert!(human.contains("errorKind refusal"), "{human}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["command"], "interview-show");
    assert_eq!(v["report"]["attemptCount"], 3);

    let missing = run(&ctx, &["interview", "show", "65a1b2c3d4e5f60718293a4b", "--dlq-scan", "0"]).await;
    let Ok(Outcome::InterviewShow(none)) = missing else { panic!() };
    assert!(!none.found && none.report.is_none() && none.settlement.outbox.is_none());
}

#[tokio::test]
async fn dlq_bodies_are_redacted_unless_show_body_is_asked_for() {
    let w = World::fast(1).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.queue_context();
    let (i, o) = (ops_support::INTERVIEW.parse().unwrap(), ops_support::ORG.parse().unwrap());
    let body = failed_body(i, o, &format!("bot crashed while the candidate said {MARKER}"));
    let attrs = HashMap::from([("eventType".to_owned(), string_attr("interview.failed"))]);
    let id = put(sqs, &queues.interview_completed.dlq.url, &body, attrs).await;

    for args in [vec!["dlq", "list", "interview-completed"], vec!["dlq", "show", "interview-completed", id.as_str()]] {
        let result = run(&ctx, &args).await;
        for text in [render(&result, false).stdout, render(&result, true).stdout] {
            assert!(!text.contains(MARKER), "{args:?} printed candidate text:\n{text}");
            let reason_len = format!("bot crashed while the candidate said {MARKER}").chars().count();
            assert!(text.contains(&format!("<redacted: {reason_len} chars>")), "{args:?}:\n{text}");
            assert!(text.contains(ops_support::INTERVIEW), "identifiers stay: {text}");
        }
        let mut shown = args.clone();
        shown.push("--show-body");
        let result = run(&ctx, &shown).await;
        let human = render(&result, false).stdout;
        assert!(human.contains(MARKER), "{human}");
        assert!(human.contains("may hold candidate text"), "--show-body says what it shows: {human}");
    }
    assert_eq!(visible(sqs, &queues.interview_completed.dlq.url).await, 1, "nothing removed");
}

#[tokio::test]
async fn dlq_delete_drops_exactly_the_message_named_after_a_dry_run_that_drops_nothing() {
    let w = World::fast(1).await;
    let (sqs, queues) = (&w.sqs, &w.queues);
    let ctx = w.queue_context();
    let dlq = &queues.report_generate.dlq.url;
    let mut keep = Vec::new();
    for n in 0..12 {
        keep.push(put(sqs, dlq, &ops_support::report_body(n), HashMap::new()).await);
    }
    let drop = put(sqs, dlq, "{not json: a poison message", HashMap::new()).await;

    let Outcome::DryRun(plan) = run(&ctx, &["dlq", "delete", "report-generate", &drop, "--dry-run"]).await.unwrap()
    else {
        panic!("a dry run returns the plan")
    };
    assert!(plan.action.contains(&drop), "{}", plan.human());
    assert!(plan.effects.iter().any(|e| e.contains("breaks the contract")), "{}", plan.human());
    assert_eq!(visible_when(sqs, dlq, 13).await, 13, "a dry run deletes nothing");

    let Outcome::DlqDelete(deleted) = run(&ctx, &["dlq", "delete", "report-generate", &drop]).await.unwrap() else {
        panic!()
    };
    assert_eq!(deleted.message.message_id, drop);
    visible_when(sqs, dlq, keep.len() as u64).await;
    let left = ops_support::drain(sqs, dlq).await;
    let mut left_ids: Vec<String> = left.iter().map(|m| m.message_id().unwrap().to_owned()).collect();
    left_ids.sort();
    let mut expected = keep.clone();
    expected.sort();
    assert_eq!(left_ids, expected, "every other message is still there");

    let missing = run(&ctx, &["dlq", "delete", "report-generate", &drop]).await.unwrap_err();
    assert!(matches!(missing, sophia_ops::OpsError::NotFound(_)), "{missing}");
    assert!(missing.to_string().contains("is not in the report-generate DLQ"), "{missing}");
}
