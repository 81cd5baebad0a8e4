//! The report-generate function as a stage runs it, with time scaled: the report queue's declared
//! retry policy (backoffs, then a delayed copy) with every duration divided by [`SCALE`]
//! (`Backoff::time_scale`, what `SOPHIA_RETRY_TIME_SCALE` sets: a 30-60 s backoff is 1 s, the
//! 10 min requeue delay 10 s), the record's own queue reached over the local SQS, invoked from a
//! world's report queue (the declared 1,800 s visibility timeout) by the event-source-mapping
//! emulator, against the OpenAI fake. Shared by `transient_retries` and `ops_drills`'s OpenAI
//! outage.

use std::sync::Arc;
use std::time::Duration;

use harness::World;
use harness::functions::{esm, fake_openai, report_instance};
use sophia_contracts::{InterviewId, OrganizationId};
use sophia_local::esm::EventSourceMapping;
use sophia_openai_fake::{FakeOpenAi, Fault};
use sophia_sqs_consumer::ConsumerOptions;
use sophia_sqs_consumer::queue::SqsRecordQueue;

/// Every retry duration divided by this.
pub const SCALE: u32 = 60;

/// The report queue's declared consumer options, time scaled, with the record's own queue
/// reached over the local SQS (to change a failed record's visibility, to send a delayed copy).
pub fn scaled_options() -> ConsumerOptions {
    let endpoint = harness::sqs_endpoint();
    let queue = SqsRecordQueue::with_client(sophia_platform::sqs::local_client(&endpoint), Some(endpoint));
    let mut options = ConsumerOptions::for_queue("reportGenerate").with_queue(Arc::new(queue));
    options.backoff.time_scale = SCALE;
    options
}

/// A world with an organization of 50 credits and one interview holding 10 of them, the OpenAI
/// fake (scripted), and the report queue's mapping invoking one report-generate function (its
/// OpenAI client giving up after 5 s, a 300 s lease) with the given consumer options.
pub struct ScaledReports {
    pub world: World,
    pub org: OrganizationId,
    pub interview: InterviewId,
    pub fake: FakeOpenAi,
    pub reports: EventSourceMapping,
}

impl ScaledReports {
    pub async fn start(options: ConsumerOptions) -> Self {
        let world = World::fresh().await;
        let org = world.org_with_credits(50).await;
        let interview = world.reserved_interview(org, 10).await;
        let fake = FakeOpenAi::scripted().expect("the OpenAI fake starts");
        let instance = report_instance(
            world.settings(),
            fake_openai(&fake, Duration::from_secs(5)),
            Duration::from_secs(300),
            options,
        );
        let reports = esm(&world.sqs, &world.queues.report_generate.source, "reportGenerate", instance);
        Self { world, org, interview, fake, reports }
    }

    /// [`ScaledReports::start`], then an OpenAI outage (the fake answers every call with a 5xx)
    /// and the interview's `report.generate` sent to the report queue, as the settlement publishes
    /// it.
    pub async fn during_an_outage(options: ConsumerOptions) -> Self {
        let this = Self::start(options).await;
        this.fake.set_fault(Some(Fault::ServerError));
        let body = format!(r#"{{"interviewId":"{}","organizationId":"{}"}}"#, this.interview, this.org);
        harness::sqs::send(&this.world.sqs, &this.world.queues.report_generate.source.url, &body).await;
        this
    }
}
