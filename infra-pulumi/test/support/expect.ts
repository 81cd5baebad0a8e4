/**
 * Expectations shared by the stack tests (dev, prod, preview). The numbers here are the replaced
 * system's (docs/design.md#the-system-it-replaces), written out on purpose: changing one in queues.json must fail a test.
 */
import * as assert from "node:assert/strict";

import { ACCOUNT, PARTITION, REGION, type RecordedResource } from "./mocks";
import { byName, ofType, plain } from "./values";

export const TYPE = {
  queue: "aws:sqs/queue:Queue",
  redriveAllow: "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy",
  function: "aws:lambda/function:Function",
  esm: "aws:lambda/eventSourceMapping:EventSourceMapping",
  logGroup: "aws:cloudwatch/logGroup:LogGroup",
  role: "aws:iam/role:Role",
  rolePolicy: "aws:iam/rolePolicy:RolePolicy",
  ssmDocument: "aws:ssm/document:Document",
  policy: "aws:iam/policy:Policy",
  alarm: "aws:cloudwatch/metricAlarm:MetricAlarm",
  pipeline: "sophia:queues:QueuePipeline",
  rustFunction: "sophia:lambda:RustFunction",
  kmsKey: "aws:kms/key:Key",
  kmsAlias: "aws:kms/alias:Alias",
  secret: "aws:secretsmanager/secret:Secret",
  secretVersion: "aws:secretsmanager/secretVersion:SecretVersion",
  stageSecrets: "sophia:secrets:StageSecrets",
  topic: "aws:sns/topic:Topic",
  subscription: "aws:sns/topicSubscription:TopicSubscription",
  vpcEndpoint: "aws:ec2/vpcEndpoint:VpcEndpoint",
  kmsKeyPolicy: "aws:kms/keyPolicy:KeyPolicy",
  secretPolicy: "aws:secretsmanager/secretPolicy:SecretPolicy",
  dashboard: "aws:cloudwatch/dashboard:Dashboard",
  invocation: "aws:lambda/invocation:Invocation",
  schedule: "aws:scheduler/schedule:Schedule",
} as const;

/**
 * The replaced system's shape (docs/design.md#the-system-it-replaces): two pipelines, three functions (one not subscribed) (the API and ops policies are the bootstrap's); the
 * stage's KMS key and its two secrets, the key's policy and the secrets' resource policies; the stage's alarm topic; 4 queue alarms + errors and
 * throttles per function + report-generate's duration.
 */
export const EXPECTED_COUNTS: Record<string, number> = {
  [TYPE.queue]: 4,
  // Per pipeline: the DLQ's (byQueue, its source) and the source queue's (denyAll).
  [TYPE.redriveAllow]: 4,
  [TYPE.function]: 3,
  [TYPE.esm]: 2,
  // one per function (the operator audit trail's is the bootstrap's)
  [TYPE.logGroup]: 3,
  // one per function and the scheduled erasure check's (src/erasure-check.ts); the pause switch's role and document are the bootstrap's
  [TYPE.role]: 4,
  [TYPE.rolePolicy]: 4,
  // 2 DLQ + 2 age + 5 function alarms (errors and throttles of the 2 functions that can run,
  // report-generate's duration), one "invalid messages dropped" per function that can run and
  // report-generate's "reports failing", "records given up after transient failures", "reports
  // are late" and "erasures not completed in time" (EMF metrics). interview-failed (reserved concurrency 0, no queue) gets none unless
  // sophia:invocableUnsubscribedFunctions is true.
  [TYPE.alarm]: 15,
  [TYPE.dashboard]: 1,
  [TYPE.pipeline]: 2,
  [TYPE.rustFunction]: 3,
  [TYPE.kmsKey]: 1,
  [TYPE.kmsAlias]: 1,
  [TYPE.secret]: 2,
  [TYPE.secretVersion]: 2,
  // Data protection: the key's own policy, and one resource policy per secret.
  [TYPE.kmsKeyPolicy]: 1,
  [TYPE.secretPolicy]: 2,
  [TYPE.stageSecrets]: 1,
  [TYPE.topic]: 1,
  // The migration step: one `{"sophiaOps":"migrate"}` invocation before any mapping delivers.
  [TYPE.invocation]: 1,
  // The scheduled erasure check: report-generate with the declared payload, every 15 minutes.
  [TYPE.schedule]: 1,
};

export function countsByType(resources: RecordedResource[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of resources) counts[r.type] = (counts[r.type] ?? 0) + 1;
  return counts;
}

/** The replaced system's numbers per pipeline (docs/design.md#the-system-it-replaces). */
export const SPEC = {
  interviewCompleted: {
    queue: "interview-completed",
    fn: "interview-completed",
    visibilityTimeoutSeconds: 180,
    functionTimeoutSeconds: 30,
    batchSize: 10,
    maxReceiveCount: 3,
    dlqRetentionSeconds: 1_209_600,
  },
  reportGenerate: {
    queue: "report-generate",
    fn: "report-generate",
    visibilityTimeoutSeconds: 1800,
    functionTimeoutSeconds: 300,
    batchSize: 1,
    maxReceiveCount: 3,
    dlqRetentionSeconds: 1_209_600,
  },
} as const;

export function names(stage: string) {
  const p = `sophia-${stage}`;
  return {
    functions: [`${p}-interview-completed`, `${p}-report-generate`, `${p}-interview-failed`],
    queues: [`${p}-interview-completed`, `${p}-report-generate`],
    dlqs: [`${p}-interview-completed-dlq`, `${p}-report-generate-dlq`],
    fn: (f: string) => `${p}-${f}`,
    queue: (q: string) => `${p}-${q}`,
    dlq: (q: string) => `${p}-${q}-dlq`,
  };
}

export const arn = {
  queue: (name: string) => `arn:${PARTITION}:sqs:${REGION}:${ACCOUNT}:${name}`,
  queueUrl: (name: string) => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`,
  fn: (name: string) => `arn:${PARTITION}:lambda:${REGION}:${ACCOUNT}:function:${name}`,
  /** A stage's roles and policies live under the IAM path /sophia/<stage>/. */
  role: (name: string, path = "/") => `arn:${PARTITION}:iam::${ACCOUNT}:role${path}${name}`,
  logStreams: (fnName: string) => `arn:${PARTITION}:logs:${REGION}:${ACCOUNT}:log-group:/aws/lambda/${fnName}:*`,
  logGroup: (name: string) => `arn:${PARTITION}:logs:${REGION}:${ACCOUNT}:log-group:${name}`,
  policy: (name: string, path = "/") => `arn:${PARTITION}:iam::${ACCOUNT}:policy${path}${name}`,
  secret: (name: string) => `arn:${PARTITION}:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`,
  key: `arn:${PARTITION}:kms:${REGION}:${ACCOUNT}:key/key-secrets-key`,
  topic: (name: string) => `arn:${PARTITION}:sns:${REGION}:${ACCOUNT}:${name}`,
};

/** No sqs:ChangeMessageVisibility: no handler calls it. */
export const CONSUME = [
  "sqs:ChangeMessageVisibility",
  "sqs:DeleteMessage",
  "sqs:GetQueueAttributes",
  "sqs:ReceiveMessage",
];
export const LOGS = ["logs:CreateLogStream", "logs:PutLogEvents"];
export const S3_RW = ["s3:GetObject", "s3:PutObject"];

interface Doc {
  Version: string;
  Statement: { Effect: string; Action: string | string[]; Resource: string | string[]; Principal?: unknown; Condition?: unknown }[];
}

export function parseDoc(policy: unknown): Doc {
  const text = plain(policy);
  assert.equal(typeof text, "string", "policy document must be a known JSON string");
  return JSON.parse(text as string) as Doc;
}

/** Every (action, resource) pair a document allows, as "action on resource[ if condition]", sorted. */
export function grants(doc: Doc): string[] {
  const out: string[] = [];
  for (const s of doc.Statement) {
    assert.equal(s.Effect, "Allow");
    assert.equal(s.Principal, undefined);
    const actions = Array.isArray(s.Action) ? s.Action : [s.Action];
    const resources = Array.isArray(s.Resource) ? s.Resource : [s.Resource];
    const cond = s.Condition === undefined ? "" : ` if ${JSON.stringify(s.Condition)}`;
    for (const a of actions) for (const r of resources) out.push(`${a} on ${r}${cond}`);
  }
  return out.sort();
}

/** GetSecretValue on exactly these secrets + Decrypt on the stage key via Secrets Manager only. */
export function secretGrants(stage: string, suffixes: string[]): string[] {
  return [
    ...suffixes.map((x) => `secretsmanager:GetSecretValue on ${arn.secret(`sophia/${stage}/${x}`)}`),
    `kms:Decrypt on ${arn.key} if {"StringEquals":{"kms:ViaService":"secretsmanager.${REGION}.amazonaws.com"}}`,
  ];
}

export function grant(actions: string[], resource: string): string[] {
  return actions.map((a) => `${a} on ${resource}`);
}

/** The inline policy document attached to the role of `functionName`. */
export function rolePolicyOf(resources: RecordedResource[], functionName: string): Doc {
  const fn = byName(resources, TYPE.function, functionName);
  const roleArn = plain(fn.inputs["role"]);
  const roles = ofType(resources, TYPE.role).filter((r) => arn.role(plain(r.inputs["name"]) as string, (plain(r.inputs["path"]) as string | undefined) ?? "/") === roleArn);
  assert.equal(roles.length, 1, `one role for ${functionName}`);
  const roleName = plain(roles[0]!.inputs["name"]);
  const policies = ofType(resources, TYPE.rolePolicy).filter((p) => plain(p.inputs["role"]) === roleName);
  assert.equal(policies.length, 1, `one inline policy on the role of ${functionName}`);
  return parseDoc(policies[0]!.inputs["policy"]);
}

/**
 * The grants each function must have: exactly these, nothing else. `s3` is the expected resume
 * bucket grant (actions on `arn:aws:s3:::<bucket>/<prefix>*`), none by default.
 */
export function expectedGrants(
  stage: string,
  s3?: { bucket: string; prefix: string; actions: string[] },
  mongodbAuth: "password" | "aws-iam" = "password",
): Record<string, string[]> {
  const n = names(stage);
  const bucket = () => (s3 ? grant(s3.actions, `arn:aws:s3:::${s3.bucket}/${s3.prefix}*`) : []);
  const mongo = mongodbAuth === "password" ? ["mongodb-uri"] : [];
  return {
    "interview-completed": [
      ...grant(LOGS, arn.logStreams(n.fn("interview-completed"))),
      ...grant(CONSUME, arn.queue(n.queue("interview-completed"))),
      // A record that can never succeed goes to its own DLQ on the first delivery (queues.json deadLettersPermanentFailures).
      ...grant(["sqs:SendMessage"], arn.queue(n.dlq("interview-completed"))),
      ...grant(["sqs:SendMessage"], arn.queue(n.queue("report-generate"))),
      ...bucket(),
      ...(mongo.length > 0 ? secretGrants(stage, mongo) : []),
    ].sort(),
    "report-generate": [
      ...grant(LOGS, arn.logStreams(n.fn("report-generate"))),
      ...grant([...CONSUME, "sqs:SendMessage"], arn.queue(n.queue("report-generate"))),
      ...bucket(),
      ...secretGrants(stage, [...mongo, "openai-api-key"]),
    ].sort(),
    "interview-failed": [
      ...grant(LOGS, arn.logStreams(n.fn("interview-failed"))),
      ...(mongo.length > 0 ? secretGrants(stage, mongo) : []),
    ].sort(),
  };
}

/** Stack outputs the API's env config consumes, and the rest of what the stack exports. */
export const OUTPUT_NAMES = [
  "ALARM_TOPIC_ARN",
  "API_PUBLISH_POLICY_ARN",
  "INTERVIEW_COMPLETED_DLQ_ARN",
  "INTERVIEW_COMPLETED_DLQ_URL",
  "INTERVIEW_COMPLETED_FUNCTION_NAME",
  "INTERVIEW_COMPLETED_QUEUE_ARN",
  "INTERVIEW_COMPLETED_QUEUE_URL",
  "INTERVIEW_COMPLETED_ROLE_ARN",
  "INTERVIEW_FAILED_FUNCTION_NAME",
  "INTERVIEW_FAILED_ROLE_ARN",
  "OPS_POLICY_ARN",
  "REPORT_GENERATE_DLQ_ARN",
  "REPORT_GENERATE_DLQ_URL",
  "REPORT_GENERATE_FUNCTION_NAME",
  "REPORT_GENERATE_QUEUE_ARN",
  "REPORT_GENERATE_QUEUE_URL",
  "REPORT_GENERATE_ROLE_ARN",
];

/** Every exported output: the flat names and the structured `apiEnv` (sorted as Object.keys().sort() is). */
export const ALL_OUTPUT_NAMES = [...OUTPUT_NAMES, "apiEnv"].sort();

export function expectedOutputValues(stage: string, alarmTopicArn?: string): Record<string, string> {
  const n = names(stage);
  return {
    ALARM_TOPIC_ARN: alarmTopicArn ?? arn.topic(`sophia-${stage}-alarms`),
    OPS_POLICY_ARN: arn.policy(`sophia-bootstrap-${stage}-ops`, "/sophia-bootstrap/"),
    INTERVIEW_COMPLETED_ROLE_ARN: arn.role(n.fn("interview-completed"), `/sophia/${stage}/`),
    REPORT_GENERATE_ROLE_ARN: arn.role(n.fn("report-generate"), `/sophia/${stage}/`),
    INTERVIEW_FAILED_ROLE_ARN: arn.role(n.fn("interview-failed"), `/sophia/${stage}/`),
    API_PUBLISH_POLICY_ARN: arn.policy(`sophia-bootstrap-${stage}-api-publish`, "/sophia-bootstrap/"),
    INTERVIEW_COMPLETED_DLQ_ARN: arn.queue(n.dlq("interview-completed")),
    INTERVIEW_COMPLETED_DLQ_URL: arn.queueUrl(n.dlq("interview-completed")),
    INTERVIEW_COMPLETED_FUNCTION_NAME: n.fn("interview-completed"),
    INTERVIEW_COMPLETED_QUEUE_ARN: arn.queue(n.queue("interview-completed")),
    INTERVIEW_COMPLETED_QUEUE_URL: arn.queueUrl(n.queue("interview-completed")),
    INTERVIEW_FAILED_FUNCTION_NAME: n.fn("interview-failed"),
    REPORT_GENERATE_DLQ_ARN: arn.queue(n.dlq("report-generate")),
    REPORT_GENERATE_DLQ_URL: arn.queueUrl(n.dlq("report-generate")),
    REPORT_GENERATE_FUNCTION_NAME: n.fn("report-generate"),
    REPORT_GENERATE_QUEUE_ARN: arn.queue(n.queue("report-generate")),
    REPORT_GENERATE_QUEUE_URL: arn.queueUrl(n.queue("report-generate")),
  };
}
