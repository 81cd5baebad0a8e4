//! `queue pause|resume` on a stage: through the bootstrap's pause switch, never
//! `UpdateEventSourceMapping` (the operators' policy does not grant it: whoever may call it may also
//! re-point or filter the mapping). Each stage has one SSM Automation document of the bootstrap,
//! `sophia-bootstrap-<stage>-mapping-enabled` (infra-bootstrap/src/policies.ts,
//! `mappingSwitchDocument`), whose one request sets `Enabled` on the mapping whose UUID it is given,
//! run by the bootstrap's switch role `sophia-bootstrap-<stage>-mapping-switch`, which may set only
//! the stage's own mappings. No deploy role of any stage may write it; still, a document runs with
//! the rights of whoever starts it when it names no `assumeRole`, so this reads the document first
//! (`GetDocument`), refuses it unless it is exactly one `UpdateEventSourceMapping` with the
//! `MappingUuid` and `Enabled` it is given, run with the stage's switch role, and starts the version
//! it read, and only for a mapping whose function is one of the stage's (`check_mapping_function`).
//! Then it waits for the execution and reads the mapping back (`ListEventSourceMappings`).
//!
//! Not run on a development machine (no SSM there; the local pipeline's mappings are paused through
//! its control channel, `status::Observer::Local`). On a stage:
//! `sophia-ops --stage <stage> --yes queue pause interview-completed`, then
//! `aws ssm describe-automation-executions --filters Key=DocumentNamePrefix,Values=sophia-bootstrap-<stage>-`.

use std::time::{Duration, Instant};

use crate::Context;
use crate::status::{Mapping, Observer};

/// How long a start may take before the command says it did not finish (SSM runs one API call).
const WAIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_secs(2);

/// The stage's switch document (the bootstrap's).
pub fn document_name(stage: &str) -> String {
    format!("sophia-bootstrap-{stage}-mapping-enabled")
}

/// The stage's switch role, the only `assumeRole` a switch document may name.
pub fn switch_role_arn(partition: &str, account: &str, stage: &str) -> String {
    format!("arn:{partition}:iam::{account}:role/sophia-bootstrap/sophia-bootstrap-{stage}-mapping-switch")
}

/// The stage of the queue `sophia-<stage>-<queue>` at `queue_url`.
pub fn stage_of(queue_url: &str, queue: &str) -> Result<String, String> {
    let arn = queue_arn(queue_url)?;
    let name = arn.rsplit(':').next().unwrap_or_default();
    name.strip_prefix("sophia-")
        .and_then(|rest| rest.strip_suffix(&format!("-{queue}")))
        .filter(|stage| !stage.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("{name} is not a stage's {queue} queue (sophia-<stage>-{queue})"))
}

/// Refuses a mapping whose function is not one of the stage's (`sophia-<stage>-<function>`): the
/// switch role would refuse it too, this says so before anything starts.
pub fn check_mapping_function(function_arn: Option<&str>, stage: &str) -> Result<(), String> {
    let name = function_arn.and_then(|arn| arn.rsplit(':').next()).unwrap_or_default();
    let function = name.strip_prefix(&format!("sophia-{stage}-")).unwrap_or_default();
    if sophia_declarations::Function::from_name(function).is_some() {
        Ok(())
    } else {
        Err(format!("the mapping invokes {}, not a function of the stage {stage}", function_arn.unwrap_or("nothing")))
    }
}

/// Refuses a switch document that could do more than set `Enabled` on the mapping it is given, with
/// the stage's switch role: its content must be exactly the bootstrap's form (one
/// `aws:executeAwsApi` step calling `lambda` `UpdateEventSourceMapping` with `UUID` and `Enabled`
/// from its two parameters, `MappingUuid` held to a UUID's form; `assumeRole` the switch role).
pub fn check_document(content: &str, role_arn: &str) -> Result<(), String> {
    use serde_json::{Value, json};
    let doc: Value = serde_json::from_str(content).map_err(|e| format!("its content is not JSON: {e}"))?;
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        k.sort();
        k
    };
    if keys(&doc) != ["assumeRole", "description", "mainSteps", "parameters", "schemaVersion"] {
        return Err(format!("its content has the keys {:?}, not the pause switch's", keys(&doc)));
    }
    if doc["assumeRole"] != json!(role_arn) {
        return Err(format!("it runs as {}, not as the stage's switch role {role_arn}", doc["assumeRole"]));
    }
    if keys(&doc["parameters"]) != ["Enabled", "MappingUuid"]
        || doc["parameters"]["Enabled"]["type"] != json!("Boolean")
        || doc["parameters"]["MappingUuid"]["type"] != json!("String")
        || doc["parameters"]["MappingUuid"]["allowedPattern"] != json!(UUID_PATTERN)
    {
        return Err(format!("its parameters are {}, not MappingUuid (a UUID) and Enabled", doc["parameters"]));
    }
    let steps = doc["mainSteps"].as_array().map(Vec::as_slice).unwrap_or_default();
    let inputs = json!({"Service": "lambda", "Api": "UpdateEventSourceMapping", "UUID": "{{ MappingUuid }}", "Enabled": "{{ Enabled }}"});
    match steps {
        [step] if step["action"] == json!("aws:executeAwsApi") && step["inputs"] == inputs => Ok(()),
        _ => {
            Err(format!("its steps are {}, not the one UpdateEventSourceMapping of UUID and Enabled", doc["mainSteps"]))
        }
    }
}

/// infra-bootstrap/src/policies.ts `MAPPING_UUID_PATTERN`.
const UUID_PATTERN: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

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

/// Sets `enabled` on the mapping `uuid` of the queue at `queue_url` through the stage's switch
/// document, after checking it (`check_document`); answers the mapping as Lambda shows it afterwards
/// (`Disabling` / `Enabling` until Lambda is done).
pub async fn set_enabled(
    ctx: &Context,
    queue_url: &str,
    queue: &str,
    mapping: &Mapping,
    enabled: bool,
) -> Result<Mapping, String> {
    let uuid = mapping.uuid.as_str();
    let arn = queue_arn(queue_url)?;
    let stage = match &ctx.stage {
        Some(stage) => stage.clone(),
        None => stage_of(queue_url, queue)?,
    };
    check_mapping_function(mapping.function_arn.as_deref(), &stage)?;
    let document = document_name(&stage);
    let mut parts = arn.split(':');
    let (partition, account) = (parts.nth(1).unwrap_or("aws"), parts.nth(2).unwrap_or_default());
    let ssm = aws_sdk_ssm::Client::new(&ctx.aws_config().await);
    let read = ssm
        .get_document()
        .name(&document)
        .send()
        .await
        .map_err(|e| format!("ssm GetDocument {document}: {}", aws_sdk_ssm::error::DisplayErrorContext(e)))?;
    let version = read.document_version.ok_or_else(|| format!("{document}: SSM answered no document version"))?;
    check_document(read.content.as_deref().unwrap_or_default(), &switch_role_arn(partition, account, &stage))
        .map_err(|e| format!("{document} version {version} is not the pause switch, not started: {e}"))?;
    let started = ssm
        .start_automation_execution()
        .document_name(&document)
        .document_version(&version)
        .parameters("MappingUuid", vec![uuid.to_owned()])
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

    const ROLE: &str = "arn:aws:iam::123456789012:role/sophia-bootstrap/sophia-bootstrap-dev-mapping-switch";

    /// The bootstrap's document (infra-bootstrap/src/policies.ts `mappingSwitchDocument`).
    fn switch_document() -> serde_json::Value {
        serde_json::json!({
            "schemaVersion": "0.3",
            "description": "Pause (Enabled false) or resume (Enabled true) one event source mapping of the stage; nothing else.",
            "assumeRole": ROLE,
            "parameters": {
                "MappingUuid": {"type": "String", "description": "the mapping's UUID", "allowedPattern": UUID_PATTERN},
                "Enabled": {"type": "Boolean", "description": "false pauses the mapping, true resumes it"}
            },
            "mainSteps": [{
                "name": "SetEnabled",
                "action": "aws:executeAwsApi",
                "inputs": {"Service": "lambda", "Api": "UpdateEventSourceMapping", "UUID": "{{ MappingUuid }}", "Enabled": "{{ Enabled }}"},
                "outputs": [{"Name": "State", "Selector": "$.State", "Type": "String"}]
            }]
        })
    }

    #[test]
    fn the_switch_document_and_role_are_the_stages_bootstrap_names() {
        assert_eq!(document_name("dev"), "sophia-bootstrap-dev-mapping-enabled");
        assert_eq!(switch_role_arn("aws", "123456789012", "dev"), ROLE);
        let url = "https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-dev-eu-interview-completed";
        assert_eq!(stage_of(url, "interview-completed").unwrap(), "dev-eu");
        assert!(stage_of(url, "report-generate").is_err());
        assert!(
            stage_of(
                "https://sqs.eu-west-1.amazonaws.com/123456789012/teamb-interview-completed",
                "interview-completed"
            )
            .is_err()
        );
    }

    #[test]
    fn only_a_mapping_of_the_stages_function_is_switched() {
        let arn = |name: &str| format!("arn:aws:lambda:eu-west-1:123456789012:function:{name}");
        assert_eq!(check_mapping_function(Some(&arn("sophia-dev-interview-completed")), "dev"), Ok(()));
        for other in
            ["sophia-prod-interview-completed", "sophia-dev-eu-interview-completed", "teamb-orders", "sophia-dev-"]
        {
            assert!(check_mapping_function(Some(&arn(other)), "dev").is_err(), "{other}");
        }
        assert!(check_mapping_function(None, "dev").is_err());
    }

    #[test]
    fn only_the_bootstraps_pause_switch_is_started() {
        assert_eq!(check_document(&switch_document().to_string(), ROLE), Ok(()));
        let mut changed = Vec::new();
        // No assumeRole: it would run with the operator's own rights.
        let mut d = switch_document();
        d.as_object_mut().unwrap().remove("assumeRole");
        changed.push(("no assumeRole", d));
        let mut d = switch_document();
        d["assumeRole"] = "arn:aws:iam::123456789012:role/sophia-bootstrap/sophia-bootstrap-prod-mapping-switch".into();
        changed.push(("another stage's role", d));
        let mut d = switch_document();
        d["mainSteps"][0]["inputs"]["FunctionName"] = "sophia-dev-report-generate".into();
        changed.push(("a re-point", d));
        let mut d = switch_document();
        d["mainSteps"][0]["inputs"]["Api"] = "DeleteEventSourceMapping".into();
        changed.push(("another API", d));
        let mut d = switch_document();
        let step = d["mainSteps"][0].clone();
        d["mainSteps"].as_array_mut().unwrap().push(step);
        changed.push(("a second step", d));
        let mut d = switch_document();
        d["parameters"]["MappingUuid"]["allowedPattern"] = ".*".into();
        changed.push(("any UUID text", d));
        let mut d = switch_document();
        d["parameters"]["AutomationAssumeRole"] = serde_json::json!({"type": "String"});
        changed.push(("a role parameter", d));
        for (what, doc) in changed {
            assert!(check_document(&doc.to_string(), ROLE).is_err(), "{what}");
        }
        assert!(check_document("schemaVersion: '0.3'", ROLE).is_err(), "YAML or anything not the JSON form");
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
