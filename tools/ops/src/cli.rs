//! The command line (clap derive). Every id, timestamp and duration is parsed by the contract
//! types, so a bad value is refused before anything is sent.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use sophia_contracts::{DurationSeconds, InterviewId, OrganizationId, Timestamp};

use crate::queues::QueueName;
use crate::redrive::RedriveMethod;

/// Operator tool of the Sophia async jobs: publish messages, inspect, redrive and delete DLQ
/// messages, show one interview's state, move messages between stacks, flush the report outbox,
/// retry a report, check the credit invariants, apply the indexes.
///
/// Configuration comes from the usual environment (AWS credentials/region, AWS_ENDPOINT_URL_SQS,
/// INTERVIEW_COMPLETED_QUEUE_URL, REPORT_GENERATE_QUEUE_URL, *_DLQ_URL, MONGODB_URI,
/// MONGODB_DATABASE), completed by an env file: `.local/sophia.env` (written by the local runner)
/// is read by default when it exists and the environment targets nothing itself.
#[derive(Debug, Parser)]
#[command(name = "sophia-ops", version, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON on stdout (no progress bars).
    #[arg(long, global = true)]
    pub json: bool,
    /// Read KEY=VALUE settings from this file; real environment variables win.
    #[arg(long, global = true, value_name = "PATH", env = "SOPHIA_ENV_FILE", hide_env_values = true)]
    pub env_file: Option<PathBuf>,
    /// Do not read the default env file (.local/sophia.env).
    #[arg(long, global = true, conflicts_with = "env_file")]
    pub no_env_file: bool,
    /// Find queues by name for this stage (`sophia-<stage>-...`) instead of the *_URL variables.
    #[arg(long, global = true, value_name = "STAGE")]
    pub stage: Option<String>,
    /// Confirm a command that publishes, redrives or resets against a queue that is not local
    /// (without it, such a command prints the interview's current state and what it would send,
    /// and exits non-zero; stdin is never read).
    #[arg(long, global = true)]
    pub yes: bool,
    /// Who is acting, when no AWS identity is at hand (local pipeline, no credentials): recorded
    /// on the audit record and on each report a retry resets, marked self-declared. Against a
    /// stage the AWS identity (STS GetCallerIdentity) is recorded instead, and for a role session
    /// NAME is the source identity its audit stream is named after (default: the session name;
    /// AWS refuses any other). Locally the default is $USER, else the uid.
    #[arg(long, global = true, value_name = "NAME", env = "SOPHIA_OPERATOR", hide_env_values = true)]
    pub by: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish one message (validated by the message contracts).
    #[command(subcommand)]
    Publish(PublishCommand),
    /// Inspect, redrive and delete dead-letter queue messages.
    #[command(subcommand)]
    Dlq(DlqCommand),
    /// One interview's settlement, report and DLQ messages.
    #[command(subcommand)]
    Interview(InterviewCommand),
    /// Move messages from another queue (a cutover from another stack).
    #[command(subcommand)]
    Queue(QueueCommand),
    /// The report.generate outbox of settlements.
    #[command(subcommand)]
    Outbox(OutboxCommand),
    /// Reports.
    #[command(subcommand)]
    Report(ReportCommand),
    /// The five credit invariants (docs/design.md).
    #[command(subcommand)]
    Invariants(InvariantsCommand),
    /// Create the indexes the flow relies on (idempotent; `scripts/deploy` runs it before `pulumi up`).
    Migrate,
    /// The operator audit trail: one record per mutating command (who, what, plan, outcome).
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Erase a candidate's data: a request per interview (who, when, why), every copy this
    /// system holds removed, and the proof (docs/candidate-data.md, Erasure).
    #[command(subcommand)]
    Erasure(ErasureCommand),
}

#[derive(Debug, Subcommand)]
pub enum ErasureCommand {
    /// Request the erasure of the candidate's data of these interviews (a candidate's every
    /// interview: name them all), then remove every copy: the report (a tombstone that no writer
    /// passes), the outbox entries, the DLQ messages naming them. Ends DONE, or PENDING with why.
    Request {
        #[arg(required = true, value_name = "INTERVIEW_ID")]
        interview_ids: Vec<InterviewId>,
        /// Why, as one declared word (declarations/reports.json erasureReasons):
        /// candidate-request, contract-end, legal-order or test-data. Never free text.
        #[arg(long)]
        reason: sophia_declarations::ErasureReason,
        /// The request's opaque reference (a ticket id such as DPO-123): letters, digits and
        /// `._:/-` only, no space (declarations/reports.json erasureReference*).
        #[arg(long)]
        reference: Option<sophia_declarations::ErasureReference>,
        /// The interviews' organization, recorded on the request and the tombstone.
        #[arg(long)]
        organization_id: Option<OrganizationId>,
    },
    /// Complete every PENDING request (those the API made included): the stored copies again,
    /// one sweep of the DLQs, the interview document checked.
    Sweep,
    /// After a MongoDB restore: every erasure requested through sophia-ops since the backup's
    /// time (the append-only audit trail: a stage's `sophia-<stage>-operator-audit` log group)
    /// whose request the restore dropped is recorded again (who, reason, reference as audited)
    /// and completed. docs/runbook.md, "After a MongoDB restore".
    Replay {
        /// How far back: at least the time since the restored backup was taken (e.g. 3d, 36h).
        #[arg(long, value_parser = parse_duration)]
        since: Duration,
    },
    /// One request: its state, what was removed and when, what is pending and why.
    Show { interview_id: InterviewId },
    /// Requests, oldest first.
    List {
        /// Only those not DONE.
        #[arg(long)]
        pending: bool,
        /// Only those PENDING for longer than the completion time (72 hours).
        #[arg(long)]
        overdue: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// The latest audit records, newest first: a stage's from its audit log group
    /// (`sophia-<stage>-operator-audit`, CloudWatch Logs), the local pipeline's from MongoDB
    /// `operatorAudit`. Says so when `--limit` cut the list.
    List {
        /// At most this many records.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Only this command (e.g. dlq-redrive, publish-completed, outbox-flush).
        #[arg(long)]
        command: Option<String>,
        /// Only records of the last (e.g. 24h, 7d).
        #[arg(long, value_parser = parse_duration)]
        since: Option<Duration>,
    },
}

#[derive(Debug, Clone, Copy, Args)]
pub struct Ids {
    /// The interview's ObjectId (24 hex characters).
    pub interview_id: InterviewId,
    /// The organization's ObjectId (24 hex characters).
    pub organization_id: OrganizationId,
}

#[derive(Debug, Subcommand)]
pub enum PublishCommand {
    /// interview.completed to the interview-completed queue.
    Completed {
        #[command(flatten)]
        ids: Ids,
        /// When the interview ended, ISO-8601 with a zone, e.g. 2026-12-02T17:30:00Z (default:
        /// now). Republishing a lost or dropped message: give the interview's own `completedAt`
        /// (`interview show` prints it, and the republish command with it), or the settlement
        /// records the time of the republish.
        #[arg(long)]
        completed_at: Option<Timestamp>,
        /// Whole seconds the interview lasted: what is billed (required, no default; `interview
        /// show` prints the interview's `durationSeconds`).
        #[arg(long, value_parser = parse_duration_seconds)]
        duration_seconds: DurationSeconds,
        /// The requestId attribute (default: unknown).
        #[arg(long)]
        request_id: Option<String>,
        /// Print the body, attributes, queue URL and the interview's state; send nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// interview.failed to the interview-completed queue.
    Failed {
        #[command(flatten)]
        ids: Ids,
        /// The failureReason.
        #[arg(long, visible_alias = "failure-reason")]
        reason: String,
        /// ISO-8601 with a zone (default: now).
        #[arg(long)]
        failed_at: Option<Timestamp>,
        #[arg(long)]
        request_id: Option<String>,
        /// Print the body, attributes, queue URL and the interview's state; send nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// report.generate to the report-generate queue.
    Report {
        #[command(flatten)]
        ids: Ids,
        #[arg(long)]
        request_id: Option<String>,
        /// Print the body, attributes, queue URL and the interview's state; send nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DlqCommand {
    /// List a DLQ's messages without removing them (candidate text in bodies redacted). SQS has
    /// no peek: each message looked at is received once (its receive count +1, harmless in a DLQ,
    /// which has no RedrivePolicy).
    List {
        queue: QueueName,
        /// At most this many messages.
        #[arg(long, default_value_t = 100)]
        max: usize,
        /// Print bodies whole: they may hold candidate text (failureReason).
        #[arg(long)]
        show_body: bool,
    },
    /// Show one DLQ message, without removing it (candidate text in the body redacted); for
    /// report-generate, with its report's state when MONGODB_URI is set.
    Show {
        queue: QueueName,
        message_id: String,
        /// Print the body whole: it may hold candidate text (failureReason).
        #[arg(long)]
        show_body: bool,
    },
    /// Move a DLQ's messages back to its source queue. For report-generate, each report FAILED
    /// (or stuck under an expired lease) first gets a fresh attempt budget, recorded on the
    /// report with who and when; a COMPLETED report is never touched.
    Redrive {
        queue: QueueName,
        /// Move at most this many messages (uses receive/send/delete).
        #[arg(long)]
        max: Option<usize>,
        /// Count what would be moved and how; move nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = RedriveMethod::Auto)]
        method: RedriveMethod,
        /// How long receive/send/delete hides a message while it moves it (e.g. 120s, 5m).
        #[arg(long, default_value = "120s", value_parser = parse_duration)]
        visibility_timeout: Duration,
        /// report-generate: move the messages without resetting their reports' attempts (a
        /// report FAILED at its last attempt then stays FAILED).
        #[arg(long)]
        keep_attempts: bool,
    },
    /// Delete one DLQ message the operator has decided to drop (prints it and the interview's
    /// state first; against a stage it needs --yes).
    Delete {
        queue: QueueName,
        message_id: String,
        /// Print what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum InterviewCommand {
    /// Settlement (settledAt, credits, ledger lines by lot, outbox entry), report (status,
    /// attempts, errorKind, lastError, lease, validation warnings) and the DLQ messages of one
    /// interview. Changes nothing; never prints candidate text.
    Show {
        /// The interview's ObjectId (24 hex characters).
        interview_id: InterviewId,
        /// How many messages of each DLQ to look at (0: do not search the DLQs). Looking
        /// receives each message once (SQS has no peek): see `dlq list`.
        #[arg(long, default_value_t = crate::interview_state::DEFAULT_DLQ_SCAN)]
        dlq_scan: usize,
        /// Do not look in the DLQs (no receive at all); same as --dlq-scan 0.
        #[arg(long)]
        no_receive: bool,
    },
    /// Interviews that hold a reservation and are not settled, oldest first: age, organization,
    /// credits reserved. What a dropped or lost interview.completed leaves behind. Changes
    /// nothing.
    Unsettled {
        /// Only this organization.
        #[arg(long, value_name = "ORGANIZATION_ID")]
        org: Option<OrganizationId>,
        /// Only interviews created (their document's id time) longer ago than this, e.g. 1h.
        /// Default: all, which is what to use after a drop: an interview created minutes
        /// before its message was dropped is hidden by any larger value.
        #[arg(long, value_parser = parse_duration)]
        older_than: Option<Duration>,
        /// At most this many interviews.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// A source queue's state and a verdict (stopped, failing, needs a person, slow, retrying, a
    /// burst, recovering, healthy, undecided) with its evidence: depth, in flight, oldest message age and the retention left for it, the DLQ's
    /// depth, the event source mapping (its state and why) and the function's recent invocations,
    /// errors, throttles and failed records; `failing` names what the errors say. Changes
    /// nothing, receives nothing. Works the same on the local pipeline (the runner's mappings).
    Status {
        queue: QueueName,
        /// The window of the function's metrics (e.g. 15m, 1h).
        #[arg(long, default_value = "15m", value_parser = parse_duration)]
        window: Duration,
    },
    /// Stop the queue's event source mapping (on a stage through its pause switch, an SSM
    /// Automation document that sets Enabled=false and nothing else; or the local runner's):
    /// nothing receives from the queue, messages wait (and age toward the retention). Prints the
    /// plan first; against a stage it needs --yes. Audited.
    Pause {
        queue: QueueName,
        /// Print what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Start the queue's event source mapping again (Enabled=true, through the same switch): the
    /// function receives what waits. Prints the plan first; against a stage it needs --yes. Audited.
    Resume {
        queue: QueueName,
        /// Print what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Move every message of another queue (e.g. the old stack's queue or DLQ) into this stack's
    /// queue: receive, check each body against the queue's contract, send, delete only what was
    /// sent. An invalid body is left where it is and reported; a stop midway loses nothing.
    Move {
        /// The queue to empty (any SQS queue URL the credentials can read and delete from).
        #[arg(long, value_name = "URL")]
        from_url: String,
        /// This stack's queue to send to.
        #[arg(long, value_name = "QUEUE")]
        to: QueueName,
        /// Send to the queue's DLQ instead (for an old report DLQ: then `dlq redrive
        /// report-generate` resets each report and regenerates it).
        #[arg(long)]
        into_dlq: bool,
        /// Move at most this many messages.
        #[arg(long)]
        max: Option<usize>,
        /// Count and sample what would be moved; move nothing.
        #[arg(long)]
        dry_run: bool,
        /// How long a received message is hidden while it is moved (e.g. 120s, 5m).
        #[arg(long, default_value = "120s", value_parser = parse_duration)]
        visibility_timeout: Duration,
    },
}

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// Publish pending report.generate entries older than a threshold.
    Flush {
        /// Only entries created longer ago than this (e.g. 60s, 5m, 1h).
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        older_than: Duration,
        /// At most this many entries.
        #[arg(long, default_value_t = 1000)]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Reports that failed at least one attempt and are not COMPLETED (a report that completed
    /// later leaves the list): those that need you first, then those waiting for a retry (their
    /// message comes back without anyone acting: an outage), then those being retried now;
    /// interview, organization, error kind, attempts, last failure; and the retry schedule, from
    /// the consumer's own values. The reports-failed alarm's first command (no id needed).
    /// Changes nothing.
    Failures {
        /// Only failures of the last (e.g. 1h, 24h; default 24h).
        #[arg(long, default_value = "24h", value_parser = parse_duration)]
        since: Duration,
        /// At most this many reports.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// "Reports are late": the time to report (interview end -> report stored) of the reports
    /// completed in the window against the service level, the interviews still waiting for a
    /// report and where, and each queue's verdict; the first line says where the time goes.
    /// Changes nothing; receives nothing from a source queue, but peeks at the interview-completed
    /// DLQ when it holds messages (as `dlq list`: receive counts include the look).
    Late {
        /// The window of completed reports (e.g. 1h, 24h).
        #[arg(long, default_value = "1h", value_parser = parse_duration)]
        since: Duration,
    },
    /// Re-publish report.generate for one interview (never generates synchronously).
    Retry {
        #[command(flatten)]
        ids: Ids,
        /// Reset a FAILED (or stuck) report's attempt count first, recorded on the report.
        #[arg(long)]
        reset_attempts: bool,
        /// Print what would be published and the interview's state; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum InvariantsCommand {
    /// Check one organization (--org) or all of them.
    Check {
        #[arg(long, value_name = "ORGANIZATION_ID")]
        org: Option<OrganizationId>,
    },
}

/// A non-negative whole number of seconds, as the contract allows.
pub fn parse_duration_seconds(s: &str) -> Result<DurationSeconds, String> {
    let n: u64 = s.trim().parse().map_err(|_| format!("expected a non-negative whole number of seconds, got {s:?}"))?;
    DurationSeconds::new(n).ok_or_else(|| format!("at most {} seconds", DurationSeconds::MAX))
}

/// `90`, `90s`, `5m`, `2h`, `1d`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("expected a duration such as 60s, 5m or 1h, got {s:?}"))?;
    let seconds = match unit {
        "ms" => return Ok(Duration::from_millis(n)),
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("unknown unit {unit:?} in {s:?} (use ms, s, m, h or d)")),
    };
    n.checked_mul(seconds).map(Duration::from_secs).ok_or_else(|| format!("{s:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("5 weeks").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn bad_ids_timestamps_and_durations_are_refused_with_the_reason() {
        let bad = [
            vec!["publish", "completed", "nope", "65a1b2c3d4e5f60718293a4c"],
            vec![
                "publish",
                "completed",
                "65a1b2c3d4e5f60718293a4b",
                "65a1b2c3d4e5f60718293a4c",
                "--completed-at",
                "2026-12-02",
            ],
            vec![
                "publish",
                "completed",
                "65a1b2c3d4e5f60718293a4b",
                "65a1b2c3d4e5f60718293a4c",
                "--duration-seconds",
                "-3",
            ],
            vec!["publish", "failed", "65a1b2c3d4e5f60718293a4b", "65a1b2c3d4e5f60718293a4c"],
            vec!["dlq", "list", "interview-failed"],
        ];
        for args in bad {
            let err = Cli::try_parse_from(std::iter::once("sophia-ops").chain(args.iter().copied())).unwrap_err();
            assert_ne!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
        }
        let no_duration =
            ["sophia-ops", "publish", "completed", "65a1b2c3d4e5f60718293a4b", "65a1b2c3d4e5f60718293a4c"];
        let err = Cli::try_parse_from(no_duration).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument, "the billed duration has no default");
        assert!(err.to_string().contains("--duration-seconds"), "{err}");
        let alias = [
            "sophia-ops",
            "publish",
            "failed",
            "65a1b2c3d4e5f60718293a4b",
            "65a1b2c3d4e5f60718293a4c",
            "--failure-reason",
            "x",
        ];
        assert!(Cli::try_parse_from(alias).is_ok(), "--failure-reason is accepted as the field is named");
        let err =
            Cli::try_parse_from(["sophia-ops", "publish", "report", "xyz", "65a1b2c3d4e5f60718293a4c"]).unwrap_err();
        assert!(err.to_string().contains("24-character hexadecimal ObjectId"), "{err}");
    }
}
