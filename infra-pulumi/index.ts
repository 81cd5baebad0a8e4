/**
 * Sophia async jobs: SQS pipelines and their Rust Lambda consumers. Stage = stack name.
 * See README.md for the resources, the config keys and how to add a stage.
 *
 * The module's exports are the stack outputs, named so they can be pasted into the API's env
 * (src/outputs.ts names them): per queue of declarations/queues.json its `<NAME>_QUEUE_URL`,
 * `_QUEUE_ARN`, `_DLQ_URL` and `_DLQ_ARN`; per function its `<NAME>_FUNCTION_NAME` and
 * `<NAME>_ROLE_ARN` (the principal of an Atlas AWS IAM database user); `API_PUBLISH_POLICY_ARN`
 * (attach to the API's task role: sqs:SendMessage on the queues the API publishes to),
 * `OPS_POLICY_ARN` (attach to the operator's role: sophia-ops), `ALARM_TOPIC_ARN`; and `apiEnv`,
 * the API's environment as one object (`scripts/stack-env`, or a StackReference: README).
 */
import { apiEnv } from "./src/outputs";
import { createSophiaStack } from "./src/stack";

const stack = createSophiaStack();

export = { ...stack.outputs, apiEnv: apiEnv(stack.settings, stack.outputs) };
