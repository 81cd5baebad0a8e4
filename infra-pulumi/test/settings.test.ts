/**
 * queues.json (the declaration shared with the Rust side) and the pure helpers: naming, the IAM
 * guard, the wiring table.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import { test } from "node:test";

import { assertLeastPrivilege } from "../src/iam";
import { requiredVisibilityTimeoutSeconds } from "../src/invariants";
import { Naming } from "../src/naming";
import { functionOutputName, queueOutputNames } from "../src/outputs";
import {
  DEFAULT_SETTINGS_PATH,
  functionByName,
  loadSettings,
  parseSettings,
  queueByKey,
  queuesInCreationOrder,
  SettingsError,
} from "../src/settings";
import { checkWiring, FUNCTION_WIRING } from "../src/wiring";

const settings = loadSettings();
const raw = (): Record<string, any> => JSON.parse(fs.readFileSync(DEFAULT_SETTINGS_PATH, "utf8"));

test("queues.json declares the replaced system's numbers", () => {
  const ic = queueByKey(settings, "interviewCompleted");
  const rg = queueByKey(settings, "reportGenerate");
  assert.deepEqual(
    [ic.visibilityTimeoutSeconds, ic.batchSize, ic.maxReceiveCount, ic.dlqMessageRetentionSeconds, ic.reportBatchItemFailures],
    [180, 10, 3, 1_209_600, true],
  );
  assert.deepEqual(
    [rg.visibilityTimeoutSeconds, rg.batchSize, rg.maxReceiveCount, rg.dlqMessageRetentionSeconds, rg.reportBatchItemFailures],
    [1800, 1, 3, 1_209_600, true],
  );
  assert.equal(ic.dlqMessageRetentionSeconds, 60 * 60 * 24 * 14, "14 days");
  assert.equal(functionByName(settings, "interview-completed").timeoutSeconds, 30);
  assert.equal(functionByName(settings, "report-generate").timeoutSeconds, 300);
  assert.equal(functionByName(settings, "interview-failed").subscribedTo, null);
  assert.deepEqual(functionByName(settings, "interview-completed").publishesTo, ["reportGenerate"]);
});

test("the 6x rule holds for every queue of queues.json", () => {
  for (const q of settings.queues) {
    const consumer = functionByName(settings, q.consumer);
    const required = requiredVisibilityTimeoutSeconds(consumer.timeoutSeconds, q.maximumBatchingWindowSeconds);
    assert.equal(required, 6 * consumer.timeoutSeconds + q.maximumBatchingWindowSeconds);
    assert.ok(q.visibilityTimeoutSeconds >= required, `${q.key}: ${q.visibilityTimeoutSeconds} < ${required}`);
  }
});

test("a declaration that breaks the 6x rule is refused with the numbers in the message", () => {
  const bad = raw();
  bad.queues[0].visibilityTimeoutSeconds = 179;
  assert.throws(() => parseSettings(bad), (e: unknown) => {
    assert.ok(e instanceof SettingsError);
    assert.match(e.message, /visibilityTimeoutSeconds 179 < 6 x 30 s .* = 180/);
    return true;
  });
  const withWindow = raw();
  withWindow.queues[0].maximumBatchingWindowSeconds = 5; // now needs 185
  assert.throws(() => parseSettings(withWindow), /visibilityTimeoutSeconds 180 < .* = 185/);
});

test("broken references and values are all reported", () => {
  const bad = raw();
  bad.queues[1].consumer = "report-generator";
  bad.functions[0].publishesTo = ["reportGenerat"];
  bad.queues[0].batchSize = 0;
  assert.throws(() => parseSettings(bad), (e: unknown) => {
    assert.ok(e instanceof SettingsError);
    assert.ok(e.problems.some((p) => p.includes("batchSize must be an integer in [1, 10000], got 0")), e.message);
    return true;
  });
  const refs = raw();
  refs.queues[1].consumer = "report-generator";
  refs.functions[0].publishesTo = ["reportGenerat"];
  assert.throws(() => parseSettings(refs), (e: unknown) => {
    assert.ok(e instanceof SettingsError);
    assert.ok(e.problems.some((p) => p.includes('consumer "report-generator" is not a declared function')));
    assert.ok(e.problems.some((p) => p.includes('publishesTo "reportGenerat" is not a declared queue')));
    return true;
  });
});

test("queues are created after the queues their consumer publishes to; a cycle is refused", () => {
  assert.deepEqual(queuesInCreationOrder(settings).map((q) => q.key), ["reportGenerate", "interviewCompleted"]);
  const cyclic = raw();
  cyclic.functions[1].publishesTo = ["interviewCompleted"];
  assert.throws(() => queuesInCreationOrder(parseSettings(cyclic)), /publish cycle/);
});

test("every function of queues.json has wiring (secrets, bucket); OpenAI only for report-generate", () => {
  checkWiring(settings);
  assert.deepEqual(
    Object.entries(FUNCTION_WIRING).filter(([, w]) => w.openai).map(([f]) => f),
    ["report-generate"],
  );
  const extra = raw();
  extra.functions.push({ name: "new-fn", unfinishedWorkCommand: "interview unsettled", timeoutSeconds: 10, memoryMb: 128, subscribedTo: null, publishesTo: [] });
  assert.throws(() => checkWiring(parseSettings(extra)), /"new-fn" from queues.json has no entry in FUNCTION_WIRING/);
});

test("names: sophia-<stage>-<name>, stage validated, AWS length limits enforced", () => {
  const n = new Naming("sophia", "dev");
  assert.equal(n.functionName("interview-completed"), "sophia-dev-interview-completed");
  assert.equal(n.queueName("report-generate-dlq"), "sophia-dev-report-generate-dlq");
  assert.equal(n.logGroupName("sophia-dev-interview-failed"), "/aws/lambda/sophia-dev-interview-failed");
  assert.throws(() => new Naming("sophia", "Dev"), /cannot be used as a stage/);
  assert.throws(() => new Naming("sophia", "feature_x"), /cannot be used as a stage/);
  assert.throws(() => new Naming("sophia", "x".repeat(40)).functionName("interview-completed"), /AWS allows 64/);
});

test("output names derive from queueUrlEnv and function names", () => {
  assert.deepEqual(queueOutputNames(queueByKey(settings, "interviewCompleted")), {
    url: "INTERVIEW_COMPLETED_QUEUE_URL",
    arn: "INTERVIEW_COMPLETED_QUEUE_ARN",
    dlqUrl: "INTERVIEW_COMPLETED_DLQ_URL",
    dlqArn: "INTERVIEW_COMPLETED_DLQ_ARN",
  });
  assert.equal(functionOutputName(functionByName(settings, "interview-failed")), "INTERVIEW_FAILED_FUNCTION_NAME");
});

test("the IAM guard refuses wildcard actions and resources", () => {
  const doc = (Action: string[], Resource: string[]) => ({ Statement: [{ Action, Resource }] });
  assert.doesNotThrow(() => assertLeastPrivilege(doc(["sqs:SendMessage"], ["arn:aws:sqs:eu-west-1:123456789012:q"])));
  assert.doesNotThrow(() =>
    assertLeastPrivilege(doc(["logs:PutLogEvents"], ["arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/f:*"])),
  );
  assert.doesNotThrow(() => assertLeastPrivilege(doc(["s3:GetObject"], ["arn:aws:s3:::bucket/*"])));
  assert.throws(() => assertLeastPrivilege(doc(["sqs:*"], ["arn:aws:sqs:eu-west-1:123456789012:q"])), /wildcard/);
  assert.throws(() => assertLeastPrivilege(doc(["*"], ["arn:aws:sqs:eu-west-1:123456789012:q"])), /wildcard/);
  assert.throws(() => assertLeastPrivilege(doc(["sqs:SendMessage"], ["*"])), /not a specific ARN/);
  assert.throws(() => assertLeastPrivilege(doc(["sqs:SendMessage"], ["arn:aws:sqs:*:*:*"])), /not a specific ARN/);
  assert.throws(() => assertLeastPrivilege(doc(["s3:GetObject"], ["arn:aws:s3:::*"])), /not a specific ARN/);
});
