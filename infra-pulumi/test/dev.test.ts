/**
 * The `dev` stack, loaded through the real entry module (index.ts) under mocks.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

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
import { type ProgramRun, runProgram, TEST_SECRETS } from "./support/harness";
import { at, byName, containsPlaintext, ofType, plain, resolve } from "./support/values";

const STAGE = "dev";
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE });
});

test("registers the expected number of resources of each type", () => {
  checkCounts(run.resources);
});

test("queues, DLQs and mappings carry the spec's numbers (180/1800, 30/300, 10/1, 3, 1209600)", () => {
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
    [...n.functions].sort(),
    "one role per function, named after it",
  );
});

test("each DLQ's redrive-allow policy admits only its own source queue", () => {
  const n = names(STAGE);
  const policies = ofType(run.resources, TYPE.redriveAllow);
  for (const spec of Object.values(SPEC)) {
    const matching = policies.filter((p) => plain(p.inputs["queueUrl"]) === arn.queueUrl(n.dlq(spec.queue)));
    assert.equal(matching.length, 1);
    assert.deepEqual(JSON.parse(plain(matching[0]!.inputs["redriveAllowPolicy"]) as string), {
      redrivePermission: "byQueue",
      sourceQueueArns: [arn.queue(n.queue(spec.queue))],
    });
  }
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

test("function environments: secrets wrapped as secrets, plain settings, the URLs of the queues they publish to", () => {
  const n = names(STAGE);
  const env = (f: string) => byName(run.resources, TYPE.function, n.fn(f)).inputs;
  const reportQueueUrl = arn.queueUrl(n.queue("report-generate"));
  const expected: Record<string, Record<string, string>> = {
    "interview-completed": {
      MONGODB_URI: TEST_SECRETS["sophia:mongodbUri"],
      MONGODB_DATABASE: "sophia_dev",
      LOG_LEVEL: "info",
      REPORT_GENERATE_QUEUE_URL: reportQueueUrl,
    },
    "report-generate": {
      MONGODB_URI: TEST_SECRETS["sophia:mongodbUri"],
      MONGODB_DATABASE: "sophia_dev",
      LOG_LEVEL: "info",
      OPENAI_API_KEY: TEST_SECRETS["sophia:openaiApiKey"],
      OPENAI_MODEL: "gpt-4.1-mini",
    },
    "interview-failed": {
      MONGODB_URI: TEST_SECRETS["sophia:mongodbUri"],
      MONGODB_DATABASE: "sophia_dev",
      LOG_LEVEL: "info",
    },
  };
  for (const [f, vars] of Object.entries(expected)) {
    assert.deepEqual(plain(at(env(f), ["environment", "variables"]).value), vars, `${f} environment`);
    assert.equal(at(env(f), ["environment", "variables", "MONGODB_URI"]).secret, true, `${f}: MONGODB_URI is a secret`);
  }
  assert.equal(at(env("report-generate"), ["environment", "variables", "OPENAI_API_KEY"]).secret, true);
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

test("IAM: no wildcard action and no bare * resource in any policy document", () => {
  const docs = [
    ...ofType(run.resources, TYPE.rolePolicy).map((p) => parseDoc(p.inputs["policy"])),
    ...ofType(run.resources, TYPE.policy).map((p) => parseDoc(p.inputs["policy"])),
  ];
  assert.equal(docs.length, 4);
  for (const g of docs.flatMap(grants)) {
    const [action, resource] = g.split(" on ");
    assert.ok(!action!.includes("*"), g);
    assert.ok(resource !== "*" && !resource!.startsWith("arn:aws:sqs:*"), g);
    assert.ok(!resource!.includes("*") || resource!.endsWith(":*") || resource!.endsWith("/*"), g);
  }
});

test("the API's managed policy grants exactly sqs:SendMessage on the interview-completed queue", () => {
  const policy = byName(run.resources, TYPE.policy, "sophia-dev-api-publish");
  assert.deepEqual(grants(parseDoc(policy.inputs["policy"])), grant(["sqs:SendMessage"], arn.queue("sophia-dev-interview-completed")));
});

test("alarms: DLQ has visible messages > 0; oldest message older than maxReceiveCount x visibility by default", () => {
  const alarms = ofType(run.resources, TYPE.alarm);
  const n = names(STAGE);
  for (const spec of Object.values(SPEC)) {
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
    assert.equal(ageAlarm.inputs["threshold"], spec.maxReceiveCount * spec.visibilityTimeoutSeconds);
  }
  for (const a of alarms) {
    assert.deepEqual(a.inputs["alarmActions"], [], "no SNS topic configured for dev");
    assert.deepEqual(a.inputs["okActions"], []);
  }
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
