//! `queue pause|resume` on a stage: through the stack's pause switch, never
//! `UpdateEventSourceMapping` (the operators' policy does not grant it: whoever may call it may also
//! re-point or filter the mapping). Each source queue `<app>-<stage>-<queue>` has an SSM Automation
//! document `<app>-<stage>-<queue>-mapping-enabled` (infra-pulumi/src/mapping-switch.ts) whose one
//! request sets `Enabled` on that queue's mapping, with the mapping's UUID baked in, run by the
//! stack's switch role. This starts it with `Enabled`, waits for it to finish, and reads the
//! mapping back (`ListEventSourceMappings`).
//!
//! Not run on a development machine (no SSM there; the local pipeline's mappings are paused through
//! its control channel, `status::Observer::Local`). On a stage:
//! `sophia-ops --stage <stage> --yes queue pause interview-completed`, then
//! `aws ssm describe-automation-executions --filters Key=DocumentNamePrefix,Values=sophia-<stage>-`.

use std::time::{Duration, Instant};

use crate::Context;
use crate::status::{Mapping, Observer};

/// How long a start may take before the command says it did not finish (SSM runs one API call).
const WAIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_secs(2);

/// The switch document of the queue at `queue_url`: its name plus `-mapping-enabled`.
pub fn document_name(queue_url: &str) -> Result<String, String> {
    let arn = queue_arn(queue_url)?;
    let name = arn.rsplit(':').next().unwrap_or_default();
    Ok(format!("{name}-mapping-enabled"))
}

/// The queue's ARN from its URL (`https://sqs.<region>.amazonaws.com[.cn]/<account>/<name>`).
pub fn queue_arn(queue_url: &str) -> Result<String, String> {
    let bad = || format!("{queue_url} is not an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)");
    let rest = queue_url.strip_prefix("https://").ok_or_else(bad)?;
    let mut parts = rest.trim_end_matches('/').split('/');
    let (host, account, name) =
        (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?);
    if parts.next().is_some() || account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let region =
        host.strip_prefix("sqs.").and_then(|h| h.split('.').next()).filter(|r| !r.is_empty()).ok_or_else(bad)?;
    let partition = if host.ends_with(".amazonaws.com.cn") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    };
    Ok(format!("arn:{partition}:sqs:{region}:{account}:{name}"))
}

/// What an execution's status means for the command: done, still running, or failed.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    Done,
    Running,
    Failed,
}

fn progress(status: &aws_sdk_ssm::types::AutomationExecutionStatus) -> Progress {
    use aws_sdk_ssm::types::AutomationExecutionStatus as S;
    match status {
        S::Success | S::CompletedWithSuccess => Progress::Done,
        S::Pending
        | S::Inprogress
        | S::Waiting
        | S::PendingApproval
        | S::Approved
        | S::Scheduled
        | S::RunbookInprogress => Progress::Running,
        _ => Progress::Failed,
    }
}

/// Sets `enabled` on the mapping of the queue at `queue_url` through its switch document; answers
/// the mapping as Lambda shows it afterwards (`Disabling` / `Enabling` until Lambda is done).
pub async fn set_enabled(ctx: &Context, queue_url: &str, uuid: &str, enabled: bool) -> Result<Mapping, String> {
    let document = document_name(queue_url)?;
    let arn = queue_arn(queue_url)?;
    let ssm = aws_sdk_ssm::Client::new(&ctx.aws_config().await);
    let started = ssm
        .start_automation_execution()
        .document_name(&document)
        .parameters("Enabled", vec![enabled.to_string()])
        .send()
        .await
        .map_err(|e| {
            format!("ssm StartAutomationExecution {document}: {}", aws_sdk_ssm::error::DisplayErrorContext(e))
        })?;
    let id = started.automation_execution_id.ok_or_else(|| format!("{document}: SSM answered no execution id"))?;
    // The audit record names it: SSM's ExecutedBy is AWS's word for who paused (audit_trail::executed_by).
    ctx.keep_automation_execution(&id);
    let deadline = Instant::now() + WAIT;
    loop {
        let out =
            ssm.get_automation_execution().automation_execution_id(&id).send().await.map_err(|e| {
                format!("ssm GetAutomationExecution {id}: {}", aws_sdk_ssm::error::DisplayErrorContext(e))
            })?;
        let execution = out.automation_execution;
        let status = execution.as_ref().and_then(|e| e.automation_execution_status.clone());
        match status.as_ref().map(progress) {
            Some(Progress::Done) => break,
            Some(Progress::Failed) => {
                return Err(format!(
                    "{document} (execution {id}) ended {}: {}",
                    status.map_or("?".into(), |s| s.as_str().to_owned()),
                    execution.and_then(|e| e.failure_message).unwrap_or_default()
                ));
            }
            Some(Progress::Running) | None if Instant::now() < deadline => tokio::time::sleep(POLL).await,
            _ => {
                return Err(format!(
                    "{document} (execution {id}) has not finished after {}s: check it with `aws ssm get-automation-execution --automation-execution-id {id}`",
                    WAIT.as_secs()
                ));
            }
        }
    }
    match Observer::Aws.mapping(ctx, &arn).await? {
        Some(m) if m.uuid == uuid => Ok(m),
        Some(m) => Err(format!(
            "{document} ran, but the queue's mapping is now {} (was {uuid}): run `sophia-ops queue status`",
            m.uuid
        )),
        None => Err(format!("{document} ran, but {arn} has no mapping any more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_document_is_named_after_the_queue() {
        assert_eq!(
            document_name("https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-dev-interview-completed").unwrap(),
            "sophia-dev-interview-completed-mapping-enabled"
        );
        assert!(document_name("https://sqs.eu-west-1.amazonaws.com/").is_err());
    }

    #[test]
    fn a_queue_url_gives_its_arn() {
        assert_eq!(
            queue_arn("https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-dev-report-generate").unwrap(),
            "arn:aws:sqs:eu-west-1:123456789012:sophia-dev-report-generate"
        );
        assert_eq!(
            queue_arn("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q").unwrap(),
            "arn:aws-cn:sqs:cn-north-1:123456789012:q"
        );
        for bad in [
            "http://sqs.eu-west-1.amazonaws.com/123456789012/q",
            "https://sqs.eu-west-1.amazonaws.com/12/q",
            "https://example.com/123456789012/q/x",
        ] {
            assert!(queue_arn(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_success_is_done_and_every_end_but_success_fails() {
        use aws_sdk_ssm::types::AutomationExecutionStatus as S;
        assert_eq!(progress(&S::Success), Progress::Done);
        for s in [S::Inprogress, S::Pending, S::Waiting] {
            assert_eq!(progress(&s), Progress::Running, "{s:?}");
        }
        for s in [S::Failed, S::Timedout, S::Cancelled, S::Cancelling, S::CompletedWithFailure, S::Rejected] {
            assert_eq!(progress(&s), Progress::Failed, "{s:?}");
        }
    }
}
