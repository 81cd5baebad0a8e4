/**
 * Sophia async jobs: SQS pipelines and their Rust Lambda consumers. Stage = stack name.
 * See README.md for the resources, the config keys and how to add a stage.
 *
 * The exported names are the stack outputs, named so they can be pasted into the API's env.
 */
import { apiEnv as apiEnvOf } from "./src/outputs";
import { createSophiaStack, output } from "./src/stack";

const stack = createSophiaStack();

export const INTERVIEW_COMPLETED_QUEUE_URL = output(stack, "INTERVIEW_COMPLETED_QUEUE_URL");
export const REPORT_GENERATE_QUEUE_URL = output(stack, "REPORT_GENERATE_QUEUE_URL");
export const INTERVIEW_COMPLETED_QUEUE_ARN = output(stack, "INTERVIEW_COMPLETED_QUEUE_ARN");
export const REPORT_GENERATE_QUEUE_ARN = output(stack, "REPORT_GENERATE_QUEUE_ARN");
export const INTERVIEW_COMPLETED_DLQ_URL = output(stack, "INTERVIEW_COMPLETED_DLQ_URL");
export const REPORT_GENERATE_DLQ_URL = output(stack, "REPORT_GENERATE_DLQ_URL");
export const INTERVIEW_COMPLETED_DLQ_ARN = output(stack, "INTERVIEW_COMPLETED_DLQ_ARN");
export const REPORT_GENERATE_DLQ_ARN = output(stack, "REPORT_GENERATE_DLQ_ARN");
export const INTERVIEW_COMPLETED_FUNCTION_NAME = output(stack, "INTERVIEW_COMPLETED_FUNCTION_NAME");
export const REPORT_GENERATE_FUNCTION_NAME = output(stack, "REPORT_GENERATE_FUNCTION_NAME");
export const INTERVIEW_FAILED_FUNCTION_NAME = output(stack, "INTERVIEW_FAILED_FUNCTION_NAME");
/** Attach to the API's task role: exactly sqs:SendMessage on the interview-completed queue. */
export const API_PUBLISH_POLICY_ARN = output(stack, "API_PUBLISH_POLICY_ARN");
/** Attach to the operator's role: sophia-ops on both queues and DLQs (send; receive/delete/move). */
export const OPS_POLICY_ARN = output(stack, "OPS_POLICY_ARN");
/** The SNS topic the alarms notify. */
export const ALARM_TOPIC_ARN = output(stack, "ALARM_TOPIC_ARN");
/** Function roles: the principals of Atlas AWS IAM database users (sophia:mongodbAuth aws-iam). */
export const INTERVIEW_COMPLETED_ROLE_ARN = output(stack, "INTERVIEW_COMPLETED_ROLE_ARN");
export const REPORT_GENERATE_ROLE_ARN = output(stack, "REPORT_GENERATE_ROLE_ARN");
export const INTERVIEW_FAILED_ROLE_ARN = output(stack, "INTERVIEW_FAILED_ROLE_ARN");
/** The API's environment as one object (`scripts/stack-env`, or a StackReference: README). */
export const apiEnv = apiEnvOf(stack.settings, stack.outputs);
