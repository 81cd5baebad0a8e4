//! Shared by the `ops_*` tests: a CLI context wired to this test's own queues on fauxqs, and
//! helpers to put messages into queues and take every one back out.

#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::MessageAttributeValue;
use sophia_local::queues::QueueSet;
use sophia_ops::env::{self, Env};
use sophia_ops::{Context, OpsError, Outcome, ProgressMode};

pub const INTERVIEW: &str = "65a1b2c3d4e5f60718293a4b";
pub const ORG: &str = "65a1b2c3d4e5f60718293a4c";

pub struct Ops {
    pub client: Client,
    pub queues: QueueSet,
    pub ctx: Context,
}

/// The env the local runner writes, as pairs, for `queues`.
pub fn env_pairs(queues: &QueueSet) -> Vec<(&'static str, String)> {
    vec![
        (env::AWS_ENDPOINT_URL_SQS, harness::sqs_endpoint()),
        ("INTERVIEW_COMPLETED_QUEUE_URL", queues.interview_completed.source.url.clone()),
        ("REPORT_GENERATE_QUEUE_URL", queues.report_generate.source.url.clone()),
        ("INTERVIEW_COMPLETED_DLQ_URL", queues.interview_completed.dlq.url.clone()),
        ("REPORT_GENERATE_DLQ_URL", queues.report_generate.dlq.url.clone()),
    ]
}

/// Fresh queues and a context that sees exactly them (no process environment).
pub async fn ops() -> Ops {
    let client = harness::sqs_client().await;
    let queues = harness::test_queues(&client).await;
    let ctx = Context::new(Env::from_pairs(env_pairs(&queues)), None, ProgressMode::Hidden).with_sqs(client.clone());
    Ops { client, queues, ctx }
}

/// Runs a command that must succeed.
pub async fn ok(ctx: &Context, args: &[&str]) -> Outcome {
    run(ctx, args).await.unwrap_or_else(|e| panic!("sophia-ops {args:?}: {e}"))
}

/// The report queue's mapping invoking one report-generate function (as its `main` builds it)
/// against the OpenAI fake, with a 300 s lease.
pub fn report_mapping(
    sqs: &Client,
    queues: &QueueSet,
    w: &harness::faults::World,
    fake: &sophia_openai_fake::FakeOpenAi,
) -> sophia_local::esm::EventSourceMapping {
    let instance = harness::faults::report_instance(
        w.settings(),
        harness::faults::fake_openai(fake, Duration::from_secs(10)),
        Duration::from_secs(300),
        sophia_sqs_consumer::ConsumerOptions::default(),
    );
    harness::faults::esm(sqs, &queues.report_generate.source, "reportGenerate", instance)
}

/// Parses `args` as the binary would (after the program name) and runs the command.
pub async fn run(ctx: &Context, args: &[&str]) -> Result<Outcome, OpsError> {
    let cli = sophia_ops::parse(std::iter::once("sophia-ops").chain(args.iter().copied())).expect("valid command line");
    sophia_ops::execute(&cli.command, ctx).await
}

pub fn string_attr(v: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder().data_type("String").string_value(v).build().unwrap()
}

/// Sends `body` with `attributes` straight to `url` (as the RedrivePolicy would leave it).
pub async fn put(client: &Client, url: &str, body: &str, attributes: HashMap<String, MessageAttributeValue>) -> String {
    client
        .send_message()
        .queue_url(url)
        .message_body(body)
        .set_message_attributes(Some(attributes))
        .send()
        .await
        .expect("send")
        .message_id
        .unwrap()
}

/// A report.generate body for the n-th test interview.
pub fn report_body(n: usize) -> String {
    format!(r#"{{"interviewId":"{:024x}","organizationId":"{ORG}"}}"#, 0x65a1_0000 + n)
}

pub use harness::drain;

/// A moved message's attributes without the `opsRequestId` the move added (checked: it names the
/// command, `ops:<command>:<who>:<uuid>`).
pub fn moved_attributes(m: &aws_sdk_sqs::types::Message, command: &str) -> HashMap<String, MessageAttributeValue> {
    let mut attrs = m.message_attributes().cloned().unwrap_or_default();
    let ops = attrs.remove("opsRequestId").expect("a moved message names the operator command");
    let ops = ops.string_value().unwrap_or_default();
    assert!(ops.starts_with(&format!("ops:{command}:")), "{ops}");
    attrs
}

/// Visible messages of a queue, counted without receiving.
pub async fn visible(client: &Client, url: &str) -> u64 {
    let attrs = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    attrs.values().next().unwrap().parse().unwrap()
}

/// [`visible`] once it shows `expected`: a message another receive released (a dry run, a refused
/// command, a move's read) is counted again a moment later, so this polls (every 20 ms, for up to
/// 10 s) and returns the last count, which the caller asserts.
pub async fn visible_when(client: &Client, url: &str, expected: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = visible(client, url).await;
        if n == expected || tokio::time::Instant::now() >= deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A context for the local pipeline's `queues` (every declared queue's URL and DLQ URL, under the
/// variables the declaration names), and MongoDB when `world` is given.
pub fn pipeline_context(queues: &QueueSet, world: Option<&harness::faults::World>, client: &Client) -> Context {
    let mut pairs: Vec<(String, String)> = vec![(env::AWS_ENDPOINT_URL_SQS.into(), harness::sqs_endpoint())];
    for pair in queues.pairs() {
        let q = sophia_declarations::Declaration::embedded().queue(&pair.key).expect("declared");
        pairs.push((q.queue_url_env.clone(), pair.source.url.clone()));
        pairs.push((q.dlq_url_env(), pair.dlq.url.clone()));
    }
    if let Some(w) = world {
        pairs.push(("MONGODB_URI".into(), harness::mongo_uri()));
        pairs.push(("MONGODB_DATABASE".into(), w.mongo.db.name().to_owned()));
        pairs.push(("MONGODB_ALLOW_STANDALONE".into(), "true".into()));
    }
    let ctx = Context::new(Env::from_pairs(pairs), None, ProgressMode::Hidden).with_sqs(client.clone());
    match world {
        Some(w) => ctx.with_mongo(w.mongo.clone()),
        None => ctx,
    }
}
