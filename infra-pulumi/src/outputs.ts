/**
 * Stack output names, chosen so they can be pasted into the API's environment as they are:
 * `<NAME>_QUEUE_URL` is the queue's `queueUrlEnv` from queues.json.
 */
import * as pulumi from "@pulumi/pulumi";

import { apiPublishedQueues, type FunctionSpec, type QueueSpec, type Settings } from "./settings";

export const API_PUBLISH_POLICY_ARN = "API_PUBLISH_POLICY_ARN";
/** The structured output: the API's environment variables, name -> value (scripts/stack-env). */
export const API_ENV = "apiEnv";

/**
 * The variables the API's service needs, as one object: the `<NAME>_QUEUE_URL` of every queue the
 * API publishes to (`publishedByApi` in queues.json), with the same values as the flat outputs of those names.
 * The publish policy is not an environment variable: it stays the flat API_PUBLISH_POLICY_ARN.
 */
export function apiEnv(
  settings: Settings,
  outputs: Record<string, pulumi.Output<string>>,
): pulumi.Output<Record<string, string>> {
  const entries = apiPublishedQueues(settings).map((q) => {
    const name = q.queueUrlEnv;
    const value = outputs[name];
    if (!value) throw new Error(`apiEnv: no flat output named ${name}`);
    return [name, value] as const;
  });
  return pulumi.all(Object.fromEntries(entries)) as pulumi.Output<Record<string, string>>;
}

/** INTERVIEW_COMPLETED_QUEUE_URL -> INTERVIEW_COMPLETED */
function queueStem(q: QueueSpec): string {
  return q.queueUrlEnv.replace(/_QUEUE_URL$/, "");
}

export function queueOutputNames(q: QueueSpec): { url: string; arn: string; dlqUrl: string; dlqArn: string } {
  const stem = queueStem(q);
  return { url: q.queueUrlEnv, arn: `${stem}_QUEUE_ARN`, dlqUrl: `${stem}_DLQ_URL`, dlqArn: `${stem}_DLQ_ARN` };
}

/** interview-failed -> INTERVIEW_FAILED_FUNCTION_NAME */
export function functionOutputName(fn: FunctionSpec): string {
  return `${fn.name.toUpperCase().replace(/-/g, "_")}_FUNCTION_NAME`;
}

/** Attach to the operator's role/user: sophia-ops's SQS calls on the queues and DLQs. */
export const OPS_POLICY_ARN = "OPS_POLICY_ARN";
/** The SNS topic the alarms notify (the stage's own, or `sophia:alarmTopicArn`). */
export const ALARM_TOPIC_ARN = "ALARM_TOPIC_ARN";

/** interview-failed -> INTERVIEW_FAILED_ROLE_ARN (the principal of an Atlas AWS IAM database user). */
export function functionRoleOutputName(fn: FunctionSpec): string {
  return `${fn.name.toUpperCase().replace(/-/g, "_")}_ROLE_ARN`;
}
