//! Operator commands that move money are explicit: against a stage (`--stage`, here
//! queues named `sophia-<stage>-...` on fauxqs), `publish`, `report retry`, `dlq redrive` and
//! `outbox flush` show the interview's current state from MongoDB and refuse to run without
//! `--yes`, sending nothing; `--dry-run` prints the body, attributes and queue URL and sends
//! nothing; with `--yes` they run and the state shown is kept for the operator.

use crate::support::ops as ops_support;

use harness::World;
use ops_support::{drain, put, run, visible_when};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_local::queues::{QueueSet, create_queue_set};
use sophia_ops::env::Env;
use sophia_ops::{Context, OpsError, Outcome, ProgressMode, render};

/// A world, an interview holding credits in it, and queues named as stage `stage` names them
/// (what `--stage` finds).
struct Stage {
    world: World,
    org: OrganizationId,
    interview: InterviewId,
    queues: QueueSet,
    stage: String,
}

impl Stage {
    async fn new() -> Self {
        let world = World::fresh().await;
        let org = world.org_with_credits(50).await;
        let interview = world.reserved_interview(org, 10).await;
        let stage = harness::unique("prod");
        let queues =
            create_queue_set(&world.sqs, &format!("sophia-{stage}"), sophia_declarations::Declaration::embedded())
                .await
                .unwrap();
        Self { world, org, interview, queues, stage }
    }

    /// A context for `--stage <stage>`, `--yes` or not.
    fn ctx(&self, yes: bool) -> Context {
        Context::new(Env::from_pairs(Vec::<(String, String)>::new()), Some(self.stage.clone()), ProgressMode::Hidden)
            .with_sqs(self.world.sqs.clone())
            .with_mongo(self.world.mongo.clone())
            .confirmed_by(yes)
    }

    fn ids(&self) -> (String, String) {
        (self.interview.to_string(), self.org.to_string())
    }
}

fn refused(result: &Result<Outcome, OpsError>) -> String {
    let err = result.as_ref().expect_err("refused without --yes");
    assert!(matches!(err, OpsError::ConfirmationRequired(_)), "{err:?}");
    let rendered = render(result, false);
    assert_eq!(rendered.exit_code, 1);
    let json: serde_json::Value = serde_json::from_str(&render(result, true).stdout).unwrap();
    assert_eq!(json["kind"], "confirmation-required");
    rendered.stderr
}

#[tokio::test]
async fn publish_against_a_stage_shows_the_state_and_needs_yes() {
    let s = Stage::new().await;
    let (i, o) = s.ids();
    let args = ["publish", "completed", i.as_str(), o.as_str(), "--duration-seconds", "600"];
    let text = refused(&run(&s.ctx(false), &args).await);
    assert!(text.contains(&format!("interview {i} (organization {o})")), "{text}");
    assert!(text.contains("credits reserved 10"), "the reservation at stake is shown: {text}");
    assert!(text.contains("settledAt -"), "{text}");
    assert!(text.contains("settles: 10 credit(s) consumed, 0 released"), "600 s bill 10 of the 10 reserved: {text}");
    assert!(!text.starts_with("error:"), "a plan is not printed as an error: {text}");
    assert!(text.contains("--yes"), "{text}");
    assert!(drain(&s.world.sqs, &s.queues.interview_completed.source.url).await.is_empty(), "nothing was sent");

    let ctx = s.ctx(true);
    let Outcome::Publish(report) = run(&ctx, &args).await.unwrap() else { panic!("a publish") };
    assert_eq!(report.queue_url, s.queues.interview_completed.source.url);
    assert!(ctx.take_notes().contains("credits reserved 10"), "the state is shown before a confirmed publish");
    assert_eq!(drain(&s.world.sqs, &s.queues.interview_completed.source.url).await.len(), 1);
}

#[tokio::test]
async fn dry_run_prints_body_attributes_queue_and_state_and_sends_nothing() {
    let s = Stage::new().await;
    let (i, o) = s.ids();
    for yes in [false, true] {
        let args = ["publish", "failed", i.as_str(), o.as_str(), "--reason", "bot lost the call", "--dry-run"];
        let Outcome::DryRun(plan) = run(&s.ctx(yes), &args).await.unwrap() else { panic!("a dry run") };
        assert_eq!(plan.queue_url, s.queues.interview_completed.source.url);
        assert!(!plan.local);
        let body = plan.body.as_ref().unwrap();
        assert_eq!((body["type"].as_str(), body["interviewId"].as_str()), (Some("interview.failed"), Some(i.as_str())));
        assert_eq!(plan.attributes["eventType"], "interview.failed");
        assert!(plan.attributes["requestId"].starts_with("ops:publish-failed:"), "{:?}", plan.attributes);
        assert!(plan.effects.iter().any(|e| e.contains("settles as failed: nothing consumed, 10 credit(s) released")));
        assert_eq!(plan.interviews.len(), 1);
        assert_eq!(plan.interviews[0].credits_reserved, Some(10));
        let human = Outcome::DryRun(plan).human();
        assert!(human.starts_with("dry run, nothing sent"), "{human}");
    }
    assert!(drain(&s.world.sqs, &s.queues.interview_completed.source.url).await.is_empty());
}

#[tokio::test]
async fn report_retry_redrive_and_outbox_flush_need_yes_on_a_stage() {
    let s = Stage::new().await;
    let (i, o) = s.ids();
    let text = refused(&run(&s.ctx(false), &["report", "retry", i.as_str(), o.as_str(), "--reset-attempts"]).await);
    assert!(text.contains("no report yet") || text.contains("generated: attempt 1 of 3"), "{text}");
    assert!(!text.contains("resets"), "no report to reset, none promised: {text}");
    assert!(text.contains(&format!("interview {i}")), "{text}");
    assert!(drain(&s.world.sqs, &s.queues.report_generate.source.url).await.is_empty());

    refused(&run(&s.ctx(false), &["outbox", "flush"]).await);

    let dlq = &s.queues.interview_completed.dlq.url;
    let body = format!(
        r#"{{"interviewId":"{i}","organizationId":"{o}","completedAt":"2026-12-02T17:30:00.000Z","durationSeconds":60}}"#
    );
    put(&s.world.sqs, dlq, &body, Default::default()).await;
    let text = refused(&run(&s.ctx(false), &["dlq", "redrive", "interview-completed"]).await);
    assert!(text.contains(&format!("interview {i}")) && text.contains("credits reserved 10"), "{text}");
    assert_eq!(visible_when(&s.world.sqs, dlq, 1).await, 1, "the message is still in the DLQ");
    let Outcome::DlqRedrive(report) = run(&s.ctx(true), &["dlq", "redrive", "interview-completed"]).await.unwrap()
    else {
        panic!("a redrive")
    };
    assert_eq!(report.moved, 1);
}

#[tokio::test]
async fn a_stage_without_mongodb_is_refused_naming_mongodb_uri() {
    let s = Stage::new().await;
    let (i, o) = s.ids();
    let ctx =
        Context::new(Env::from_pairs(Vec::<(String, String)>::new()), Some(s.stage.clone()), ProgressMode::Hidden)
            .with_sqs(s.world.sqs.clone())
            .confirmed_by(true);
    let err = run(&ctx, &["publish", "report", i.as_str(), o.as_str()]).await.unwrap_err();
    assert!(matches!(err, OpsError::NotConfigured { .. }) && err.to_string().contains("MONGODB_URI"), "{err}");
    assert!(drain(&s.world.sqs, &s.queues.report_generate.source.url).await.is_empty());
}

#[tokio::test]
async fn dlq_delete_and_queue_move_need_yes_on_a_stage() {
    let s = Stage::new().await;
    let (i, o) = s.ids();
    let dlq = &s.queues.report_generate.dlq.url;
    let body = format!(r#"{{"interviewId":"{i}","organizationId":"{o}"}}"#);
    let id = put(&s.world.sqs, dlq, &body, Default::default()).await;
    let text = refused(&run(&s.ctx(false), &["dlq", "delete", "report-generate", &id]).await);
    assert!(text.contains(&format!("delete message {id}")) && text.contains(&format!("interview {i}")), "{text}");
    assert_eq!(visible_when(&s.world.sqs, dlq, 1).await, 1, "not deleted without --yes");
    let Outcome::DlqDelete(deleted) = run(&s.ctx(true), &["dlq", "delete", "report-generate", &id]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(deleted.message.message_id, id);
    assert_eq!(visible_when(&s.world.sqs, dlq, 0).await, 0);

    let old =
        s.world.sqs.create_queue().queue_name(harness::unique("old-stack")).send().await.unwrap().queue_url.unwrap();
    put(&s.world.sqs, &old, &body, Default::default()).await;
    let text = refused(&run(&s.ctx(false), &["queue", "move", "--from-url", &old, "--to", "report-generate"]).await);
    assert!(text.contains("move every message of") && text.contains("sample"), "{text}");
    assert_eq!(visible_when(&s.world.sqs, &old, 1).await, 1, "nothing moved without --yes");
    let Outcome::QueueMove(moved) =
        run(&s.ctx(true), &["queue", "move", "--from-url", &old, "--to", "report-generate"]).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(moved.moved, 1);
}
