//! Shared by the `ops_*` tests: a CLI context wired to this test's own queues on fauxqs, and
//! helpers to put messages into queues and take every one back out.

#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::MessageAttributeValue;
use harness::World;
use sophia_ops::{Context, OpsError, Outcome};

pub const INTERVIEW: &str = "65a1b2c3d4e5f60718293a4b";
pub const ORG: &str = "65a1b2c3d4e5f60718293a4c";

/// A world whose `sophia-ops` context sees exactly its queues (no MongoDB, no process
/// environment): what the `ops_*` tests run commands in. Its world's fields read through it
/// (`o.sqs`, `o.queues`).
pub struct Ops {
    pub world: World,
    pub ctx: Context,
}

impl std::ops::Deref for Ops {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

/// A fresh world and a context that sees exactly its queues.
pub async fn ops() -> Ops {
    let world = World::fresh().await;
    let ctx = world.queue_context();
    Ops { world, ctx }
}

/// Runs a command that must succeed.
pub async fn ok(ctx: &Context, args: &[&str]) -> Outcome {
    run(ctx, args).await.unwrap_or_else(|e| panic!("sophia-ops {args:?}: {e}"))
}

/// The report queue's mapping invoking one report-generate function (as its `main` builds it)
/// against the OpenAI fake, with a 300 s lease.
pub fn report_mapping(w: &World, fake: &sophia_openai_fake::FakeOpenAi) -> sophia_local::esm::EventSourceMapping {
    let instance = harness::functions::report_instance(
        w.settings(),
        harness::functions::fake_openai(fake, Duration::from_secs(10)),
        Duration::from_secs(300),
        sophia_sqs_consumer::ConsumerOptions::default(),
    );
    harness::functions::esm(&w.sqs, &w.queues.report_generate.source, "reportGenerate", instance)
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

pub use harness::sqs::{drain, visible, visible_when};

/// A moved message's attributes without the `opsRequestId` the move added (checked: it names the
/// command, `ops:<command>:<who>:<uuid>`).
pub fn moved_attributes(m: &aws_sdk_sqs::types::Message, command: &str) -> HashMap<String, MessageAttributeValue> {
    let mut attrs = m.message_attributes().cloned().unwrap_or_default();
    let ops = attrs.remove("opsRequestId").expect("a moved message names the operator command");
    let ops = ops.string_value().unwrap_or_default();
    assert!(ops.starts_with(&format!("ops:{command}:")), "{ops}");
    attrs
}
