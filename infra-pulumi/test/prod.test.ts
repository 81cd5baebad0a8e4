/**
 * A second stage, `prod`, with every stage setting changed from its default. Runs createSophiaStack()
 * directly (entry "stack") to also inspect the resource objects' Outputs.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import { checkCounts, checkFunctions, checkSixTimesRule, checkSpecNumbers } from "./support/checks";
import { arn, expectedGrants, expectedOutputValues, grants, names, OUTPUT_NAMES, rolePolicyOf, S3_RW, TYPE } from "./support/expect";
import { type ProgramRun, runProgram, TEST_SECRETS } from "./support/harness";
import { at, byName, ofType, plain, resolve } from "./support/values";

const STAGE = "prod";
const TOPIC = "arn:aws:sns:eu-west-1:123456789012:sophia-prod-alerts";
const BUCKET = "sophia-prod-resumes";
let run: ProgramRun;

before(async () => {
  run = await runProgram({
    stack: STAGE,
    entry: "stack",
    config: {
      "aws:allowedAccountIds": JSON.stringify(["123456789012"]),
      "sophia:architecture": "x86_64",
      "sophia:memoryMb": JSON.stringify({ "report-generate": 1024 }),
      "sophia:maxConcurrency": JSON.stringify({ interviewCompleted: 10, reportGenerate: 4 }),
      "sophia:alarmOldestMessageAgeSeconds": "900",
      "sophia:alarmTopicArn": TOPIC,
      "sophia:resumeBucket": BUCKET,
      "sophia:resumeBucketAccess": "read-write",
      "sophia:resumeBucketPrefix": "resumes/",
      "sophia:secretsManagerTtlSeconds": "0",
      "sophia:logRetentionDays": "90",
      "sophia:logLevel": "warn",
      "sophia:recordConcurrency": "2",
      "sophia:openaiModel": "gpt-4.1",
      "sophia:openaiBaseUrl": "https://llm-gateway.example.com/v1",
    },
  });
});

test("same resources as dev, every name carrying the prod stage and none the dev one", () => {
  checkCounts(run.resources, { [TYPE.topic]: -1 });
  const n = names(STAGE);
  assert.deepEqual(ofType(run.resources, TYPE.function).map((f) => plain(f.inputs["name"])).sort(), [...n.functions].sort());
  assert.deepEqual(
    ofType(run.resources, TYPE.queue).map((q) => plain(q.inputs["name"])).sort(),
    ["sophia-prod-interview-completed", "sophia-prod-interview-completed-dlq", "sophia-prod-report-generate", "sophia-prod-report-generate-dlq"],
  );
  for (const r of run.resources) {
    assert.equal(JSON.stringify(plain(r.inputs)).includes("sophia-dev"), false, `${r.type} ${r.name} mentions dev`);
  }
});

test("stage settings never change the replaced system's numbers", () => {
  checkSpecNumbers(run.resources, STAGE);
  checkSixTimesRule(run.resources, STAGE);
});

test("architecture, memory override and log retention come from the stage config", async () => {
  await checkFunctions(run.resources, STAGE, {
    architecture: "x86_64",
    memoryMb: { "interview-completed": 256, "report-generate": 1024, "interview-failed": 256 },
    logRetentionDays: 90,
    artifactsDir: run.artifactsDir,
  });
});

test("ESM maximum concurrency per queue from the stage config", () => {
  const byQueue = Object.fromEntries(
    ofType(run.resources, TYPE.esm).map((e) => [plain(e.inputs["eventSourceArn"]), plain(e.inputs["scalingConfig"])]),
  );
  assert.deepEqual(byQueue, {
    [arn.queue("sophia-prod-interview-completed")]: { maximumConcurrency: 10 },
    [arn.queue("sophia-prod-report-generate")]: { maximumConcurrency: 4 },
  });
});

test("alarms notify the configured SNS topic (no topic of its own) and use the stage's age threshold", () => {
  const alarms = ofType(run.resources, TYPE.alarm);
  assert.equal(alarms.length, 15);
  assert.equal(ofType(run.resources, TYPE.topic).length, 0, "sophia:alarmTopicArn given: no stage topic");
  for (const a of alarms) {
    assert.deepEqual(a.inputs["alarmActions"], [TOPIC]);
    assert.equal(a.inputs["okActions"], undefined, "ALARM only: no OK burst when a new alarm leaves INSUFFICIENT_DATA");
  }
  for (const q of ["interview-completed", "report-generate"]) {
    assert.equal(byName(run.resources, TYPE.alarm, `sophia-prod-${q}-oldest-message-age`).inputs["threshold"], 900);
  }
});

test("IAM: resumeBucketAccess read-write adds Get/PutObject under the prefix for the two consumers only", () => {
  const expected = expectedGrants(STAGE, { bucket: BUCKET, prefix: "resumes/", actions: S3_RW });
  for (const f of Object.keys(expected)) {
    assert.deepEqual(grants(rolePolicyOf(run.resources, names(STAGE).fn(f))), expected[f], `grants of ${f}`);
  }
  assert.ok(expected["interview-completed"]!.includes(`s3:PutObject on arn:aws:s3:::${BUCKET}/resumes/*`));
  assert.ok(!expected["interview-failed"]!.some((g) => g.startsWith("s3:")));
});

test("prod's queues, DLQs, KMS key and secrets are protected and retained on delete", () => {
  const kept = [...ofType(run.resources, TYPE.queue), ...ofType(run.resources, TYPE.kmsKey), ...ofType(run.resources, TYPE.secret)];
  assert.equal(kept.length, 4 + 1 + 2);
  for (const r of kept) assert.deepEqual([r.options.protect, r.options.retainOnDelete], [true, true], `${r.type} ${r.name}`);
  for (const f of ofType(run.resources, TYPE.function)) assert.equal(f.options.protect, false, "functions are replaceable");
  for (const s of ofType(run.resources, TYPE.secret)) assert.equal(s.inputs["recoveryWindowInDays"], 7, `${s.name}: a protected secret keeps AWS's shortest recovery window`);
});

test("x86_64 stage: the x86_64 extension layer; SECRETS_MANAGER_TTL from the stage", () => {
  for (const f of ofType(run.resources, TYPE.function)) {
    assert.deepEqual(plain(f.inputs["layers"]), [
      "arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension:11",
    ]);
    const vars = plain(at(f.inputs, ["environment", "variables"]).value) as Record<string, string>;
    assert.equal(vars["SECRETS_MANAGER_TTL"], "0");
  }
});

test("plain settings reach the environment; OpenAI settings only reach report-generate", () => {
  const vars = (f: string) =>
    plain(at(byName(run.resources, TYPE.function, `sophia-prod-${f}`).inputs, ["environment", "variables"]).value) as Record<
      string,
      string
    >;
  assert.equal(vars("report-generate")["OPENAI_MODEL"], "gpt-4.1");
  assert.equal(vars("report-generate")["OPENAI_BASE_URL"], "https://llm-gateway.example.com/v1");
  for (const f of ["interview-completed", "interview-failed"]) {
    assert.deepEqual(Object.keys(vars(f)).filter((k) => k.startsWith("OPENAI_")), [], `${f} gets no OpenAI settings`);
  }
  assert.equal(vars("interview-completed")["RECORD_CONCURRENCY"], "2");
  assert.equal(vars("interview-failed")["RECORD_CONCURRENCY"], "2");
  assert.equal(vars("report-generate")["RECORD_CONCURRENCY"], undefined, "batch size 1: nothing to run at once");
  for (const f of ["interview-completed", "report-generate", "interview-failed"]) {
    assert.equal(vars(f)["LOG_LEVEL"], "warn");
    assert.equal(vars(f)["MONGODB_DATABASE"], "sophia_prod");
  }
});

test("no function environment holds a secret value (only ARNs); the secret versions hold them, as secrets", async () => {
  const stack = run.stack!;
  for (const [name, fn] of Object.entries(stack.functions)) {
    const env = await resolve(fn.function.environment);
    const text = JSON.stringify(env.value);
    for (const secret of Object.values(TEST_SECRETS)) assert.equal(text.includes(secret), false, `${name} environment`);
    assert.equal(env.value?.variables?.["MONGODB_URI_SECRET_ARN"], arn.secret("sophia/prod/mongodb-uri"));
  }
  for (const [suffix, key] of [["mongodb-uri", "sophia:mongodbUri"], ["openai-api-key", "sophia:openaiApiKey"]] as const) {
    const v = await resolve(stack.secrets.versions[suffix]!.secretString as never);
    assert.deepEqual([v.value, v.secret], [TEST_SECRETS[key], true], suffix);
  }
});

test("outputs carry the prod names", async () => {
  assert.deepEqual(Object.keys(run.outputs).sort(), OUTPUT_NAMES);
  const expected = expectedOutputValues(STAGE, TOPIC);
  for (const name of OUTPUT_NAMES) {
    assert.equal((await resolve(run.outputs[name] as never)).value, expected[name], name);
  }
});
