//! The local pipeline a drill runs on (docs/local.md, docs/runbook.md): the real runner (fauxqs,
//! nx-27017, the functions' handler code, the event-source-mapping emulator) with its control
//! channel, found from the env file the runner writes as `sophia-local fault|pause|resume|status`
//! finds it, and `sophia-ops` reading the same env file, as an operator's shell does. Shared by
//! `local_drills`, `ops_drills` and `ops_status_drills`.

use std::path::PathBuf;
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures::TryStreamExt;
use harness::wait_until;
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, RequestId, Timestamp};
use sophia_credits::{CreditsStore, seed};
use sophia_local::control::{ControlClient, FunctionStatus, Status};
use sophia_local::queues::QueueOverrides;
use sophia_local::runner::{Runner, RunnerOptions};
use sophia_ops::{Context, Outcome, ProgressMode};
use sophia_sqs_producer::{CompletedInput, QueueUrls, SqsProducer};

/// A liveness bound for each wait of a drill (not a timing assertion).
pub(crate) const LIMIT: Duration = Duration::from_secs(120);

/// Credits reserved per interview and the duration published: 600 s consume all 10.
pub(crate) const RESERVED: i64 = 10;
pub(crate) const DURATION_SECONDS: u64 = 600;

pub(crate) struct Drill {
    pub(crate) runner: Runner,
    pub(crate) control: ControlClient,
    pub(crate) env_file: PathBuf,
    /// `sophia-ops --env-file <env file>`: the runner's queues and database.
    pub(crate) ops: Context,
}

impl Drill {
    /// The pipeline with a visibility timeout of `visibility` seconds (a failed message comes
    /// back within the test) and the offline OpenAI endpoint unless `openai_key` is given.
    pub(crate) async fn start(visibility: u32, openai_key: Option<&str>) -> Self {
        Self::start_with(visibility, openai_key, Default::default()).await
    }

    /// [`Drill::start`] with more environment for the functions (e.g. `OPENAI_TIMEOUT_MS`).
    pub(crate) async fn start_with(
        visibility: u32,
        openai_key: Option<&str>,
        function_env: std::collections::BTreeMap<String, String>,
    ) -> Self {
        let env_file = std::env::temp_dir().join(harness::unique("sophia-drill")).join("sophia.env");
        let runner = Runner::start(RunnerOptions {
            overrides: QueueOverrides { visibility_timeout_seconds: Some(visibility) },
            env_file: Some(env_file.clone()),
            openai_api_key: openai_key.map(str::to_owned),
            function_env,
            ..RunnerOptions::default()
        })
        .await
        .expect("the local pipeline starts (scripts/setup-tools)");
        // As `sophia-local fault ...` finds the runner: from its env file.
        let control = ControlClient::from_env_file(&env_file).expect("the env file names the control channel");
        let env = sophia_ops::env::Env::load(Some(&env_file), false).expect("the env file reads");
        let ops = Context::new(env, None, ProgressMode::Hidden);
        Self { runner, control, env_file, ops }
    }

    pub(crate) async fn stop(self) {
        let dir = self.env_file.parent().map(PathBuf::from);
        self.runner.stop().await;
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    pub(crate) fn store(&self) -> CreditsStore {
        CreditsStore::new(self.runner.mongo.db.clone())
    }

    /// An organization with enough credits and `n` interviews holding a reservation each,
    /// marked completed as the API does before it publishes.
    pub(crate) async fn completed_interviews(&self, n: usize) -> (OrganizationId, Vec<InterviewId>) {
        self.interviews_ended_at(n, Timestamp::now()).await
    }

    /// [`Drill::completed_interviews`], the interviews having ended at `ended`.
    pub(crate) async fn interviews_ended_at(&self, n: usize, ended: Timestamp) -> (OrganizationId, Vec<InterviewId>) {
        let store = self.store();
        let org = seed::create_organization(&store, "Drill organization").await.unwrap();
        seed::grant_lot(&store, org, 1000, chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..n {
            let id = seed::reserved_interview(
                &self.runner.mongo.client,
                &store,
                org,
                RESERVED,
                sophia_local::demo::transcript(true),
            )
            .await
            .unwrap();
            seed::mark_completed(&store, id, ended, DurationSeconds::new(DURATION_SECONDS).unwrap()).await.unwrap();
            ids.push(id);
        }
        (org, ids)
    }

    /// `interview.completed` for each interview, as the API publishes it, without `completedAt`.
    pub(crate) async fn publish_completed(&self, org: OrganizationId, ids: &[InterviewId]) {
        self.publish(org, ids, None).await;
    }

    /// `interview.completed` for each interview, as the API publishes it, with its end `ended`.
    pub(crate) async fn publish_ended(&self, org: OrganizationId, ids: &[InterviewId], ended: Timestamp) {
        self.publish(org, ids, Some(ended)).await;
    }

    async fn publish(&self, org: OrganizationId, ids: &[InterviewId], completed_at: Option<Timestamp>) {
        let env = self.runner.env();
        let producer = SqsProducer::new(self.runner.sqs.clone(), QueueUrls::from_lookup(|name| env.get(name).cloned()));
        for id in ids {
            let input = CompletedInput {
                interview_id: *id,
                organization_id: org,
                completed_at,
                duration_seconds: DurationSeconds::new(DURATION_SECONDS),
            };
            producer
                .publish_interview_completed(input, &RequestId::from_caller(Some("drill")))
                .await
                .expect("published");
        }
    }

    /// `body` sent straight to the interview-completed queue (a message the API would not send),
    /// with a request id.
    pub(crate) async fn send_interview_message(&self, body: &str) {
        let url = &self.runner.env()["INTERVIEW_COMPLETED_QUEUE_URL"];
        self.runner
            .sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .message_attributes("requestId", crate::support::ops::string_attr("drill"))
            .send()
            .await
            .expect("sent");
    }

    /// An `interview.completed` for `id` naming another organization: its consumer sends it to
    /// the DLQ on its first delivery ("can never succeed"); answers once it is there.
    pub(crate) async fn dead_letter_for_another_organization(&self, id: InterviewId) {
        let other = seed::create_organization(&self.store(), "Another organization").await.unwrap();
        self.send_interview_message(&format!(
            r#"{{"interviewId":"{id}","organizationId":"{other}","completedAt":"2026-12-02T17:30:00Z","durationSeconds":600}}"#
        ))
        .await;
        wait_until("the message reaches the DLQ", LIMIT, || async {
            self.function("interview-completed").await.dlq_visible == Some(1)
        })
        .await;
    }

    /// Runs the `sophia-ops` command line `line` as printed (after the program name), against the
    /// runner's env file.
    pub(crate) async fn run_printed(&self, line: &str) -> Outcome {
        let args: Vec<&str> = line.split_whitespace().skip_while(|a| *a == "sophia-ops").collect();
        // The printed line names `--stage <stage>`; the local pipeline has none.
        let args: Vec<&str> = match args.as_slice() {
            ["--stage", "<stage>", rest @ ..] => rest.to_vec(),
            other => other.to_vec(),
        };
        crate::support::ops::ok(&self.ops, &args).await
    }

    pub(crate) async fn interview(&self, id: InterviewId) -> Document {
        self.runner
            .mongo
            .db
            .collection::<Document>("interviews")
            .find_one(doc! {"_id": id.oid()})
            .await
            .unwrap()
            .unwrap()
    }

    pub(crate) async fn report(&self, id: InterviewId) -> Option<Document> {
        self.runner
            .mongo
            .db
            .collection::<Document>("interviewReports")
            .find_one(doc! {"interviewId": id.oid()})
            .await
            .unwrap()
    }

    pub(crate) async fn settled(&self, id: InterviewId) -> bool {
        matches!(self.interview(id).await.get("settledAt"), Some(Bson::DateTime(_)))
    }

    pub(crate) async fn function(&self, name: &str) -> FunctionStatus {
        let status: Status = self.control.status().await.expect("status answers");
        status.functions.into_iter().find(|f| f.name == name).expect("the function is listed")
    }

    /// Waits until `function`'s queue is empty, then checks that its DLQ is too.
    pub(crate) async fn drained_without_dlq(&self, function: &str) {
        wait_until(&format!("{function}'s queue is empty"), LIMIT, || async {
            let f = self.function(function).await;
            f.visible == Some(0) && f.in_flight == Some(0)
        })
        .await;
        assert_eq!(self.function(function).await.dlq_visible, Some(0), "nothing in the DLQ");
    }

    /// The amounts of one interview's SETTLE lines (what was charged).
    pub(crate) async fn settle_lines(&self, id: InterviewId) -> Vec<i64> {
        let lines: Vec<Document> = self
            .runner
            .mongo
            .db
            .collection::<Document>("creditLedger")
            .find(doc! {"reference.id": id.oid(), "type": "SETTLE"})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        lines.iter().map(|l| harness::mongo::int(l, "amount").expect("an integer amount")).collect()
    }
}

/// `sophia-ops --env-file <the drill's env file> <args>`, as the operator runs it: parsed,
/// executed and rendered in this process (`sophia_ops::run_with_args`), audit record included.
pub(crate) async fn ops(drill: &Drill, args: &[&str]) -> sophia_ops::Rendered {
    ops_with(&drill.env_file, args).await
}

/// `sophia-ops --env-file <env_file> <args>`, as the binary runs it.
pub(crate) async fn ops_with(env_file: &std::path::Path, args: &[&str]) -> sophia_ops::Rendered {
    let env_file = env_file.to_string_lossy().into_owned();
    let argv: Vec<String> =
        ["--env-file", env_file.as_str()].iter().chain(args.iter()).map(|s| (*s).to_owned()).collect();
    let cli = sophia_ops::parse(std::iter::once("sophia-ops".to_owned()).chain(argv.iter().cloned()))
        .unwrap_or_else(|e| panic!("sophia-ops {args:?}: {e}"));
    sophia_ops::run_with_args(&cli, argv).await
}

/// The verdict line of `queue status`.
pub(crate) fn verdict_line(out: &sophia_ops::Rendered) -> &str {
    out.stdout.lines().find(|l| l.starts_with("verdict: ")).unwrap_or_else(|| panic!("no verdict: {}", out.stdout))
}
