/**
 * Assertions on a program run that hold for every stage; the stack tests call them for dev, prod
 * and preview so that the same facts are checked under different stack names and config.
 */
import * as assert from "node:assert/strict";

import { loadSettings } from "../../src/settings";
import { arn, countsByType, EXPECTED_COUNTS, names, SPEC, TYPE } from "./expect";
import type { RecordedResource } from "./mocks";
import { byName, isUnknown, ofType, plain } from "./values";

/** `delta` adjusts the expected counts (e.g. no stage topic when `sophia:alarmTopicArn` is given). */
export function checkCounts(resources: RecordedResource[], delta: Record<string, number> = {}): void {
  const expected: Record<string, number> = { ...EXPECTED_COUNTS };
  for (const [type, d] of Object.entries(delta)) {
    expected[type] = (expected[type] ?? 0) + d;
    if (expected[type] === 0) delete expected[type];
  }
  assert.deepEqual(countsByType(resources), expected);
}

/** Queue, DLQ, ESM and function numbers of the replaced system (docs/design.md#the-system-it-replaces), on the registered inputs. */
export function checkSpecNumbers(resources: RecordedResource[], stage: string, preview = false): void {
  const n = names(stage);
  for (const spec of Object.values(SPEC)) {
    const queue = byName(resources, TYPE.queue, n.queue(spec.queue));
    const dlq = byName(resources, TYPE.queue, n.dlq(spec.queue));
    const fn = byName(resources, TYPE.function, n.fn(spec.fn));

    assert.equal(queue.inputs["visibilityTimeoutSeconds"], spec.visibilityTimeoutSeconds, `${spec.queue} visibility`);
    assert.equal(fn.inputs["timeout"], spec.functionTimeoutSeconds, `${spec.fn} timeout`);
    assert.equal(dlq.inputs["messageRetentionSeconds"], spec.dlqRetentionSeconds, `${spec.queue} DLQ retention`);
    assert.equal(queue.inputs["sqsManagedSseEnabled"], true);
    assert.equal(dlq.inputs["sqsManagedSseEnabled"], true);
    assert.equal(dlq.inputs["redrivePolicy"], undefined, "a DLQ has no DLQ of its own");

    if (preview) {
      assert.ok(isUnknown(queue.inputs["redrivePolicy"]), "redrive policy waits for the DLQ's ARN in a preview");
    } else {
      assert.deepEqual(JSON.parse(plain(queue.inputs["redrivePolicy"]) as string), {
        deadLetterTargetArn: arn.queue(n.dlq(spec.queue)),
        maxReceiveCount: spec.maxReceiveCount,
      });
    }

    const esms = ofType(resources, TYPE.esm).filter((e) =>
      preview ? e.name === `${spec.queue}-esm` : plain(e.inputs["eventSourceArn"]) === arn.queue(n.queue(spec.queue)),
    );
    assert.equal(esms.length, 1, `one event source mapping on ${spec.queue}`);
    const esm = esms[0]!;
    assert.equal(esm.inputs["batchSize"], spec.batchSize, `${spec.queue} batch size`);
    assert.equal(esm.inputs["maximumBatchingWindowInSeconds"], 0);
    assert.deepEqual(esm.inputs["functionResponseTypes"], ["ReportBatchItemFailures"]);
    assert.equal(esm.inputs["enabled"], true);
    if (!preview) assert.equal(plain(esm.inputs["functionName"]), arn.fn(n.fn(spec.fn)));
  }
}

/** The 6x rule on what was registered, with every operand taken from queues.json. */
export function checkSixTimesRule(resources: RecordedResource[], stage: string): void {
  const settings = loadSettings();
  const n = names(stage);
  for (const q of settings.queues) {
    const consumer = settings.functions.find((f) => f.name === q.consumer)!;
    const queue = byName(resources, TYPE.queue, n.queue(q.name));
    const fn = byName(resources, TYPE.function, n.fn(consumer.name));
    const esm = ofType(resources, TYPE.esm).find((e) => e.name === `${q.name}-esm`)!;
    // Registered values are the declared ones...
    assert.equal(queue.inputs["visibilityTimeoutSeconds"], q.visibilityTimeoutSeconds);
    assert.equal(fn.inputs["timeout"], consumer.timeoutSeconds);
    assert.equal(esm.inputs["maximumBatchingWindowInSeconds"], q.maximumBatchingWindowSeconds);
    assert.equal(esm.inputs["batchSize"], q.batchSize);
    // ...and they satisfy the rule.
    const visibility = queue.inputs["visibilityTimeoutSeconds"] as number;
    const required = 6 * (fn.inputs["timeout"] as number) + (esm.inputs["maximumBatchingWindowInSeconds"] as number);
    assert.ok(visibility >= required, `${q.name}: visibility ${visibility} < 6 x timeout + window = ${required}`);
  }
}

/** Every function: custom runtime, handler, one architecture, memory, code zip, own log group. */
export function checkFunctions(
  resources: RecordedResource[],
  stage: string,
  expected: { architecture: string; memoryMb: Record<string, number>; logRetentionDays: number; artifactsDir: string },
): Promise<void[]> {
  const n = names(stage);
  return Promise.all(
    loadSettings().functions.map(({ name: f }) => f).map(async (f) => {
      const fn = byName(resources, TYPE.function, n.fn(f));
      assert.equal(fn.inputs["runtime"], "provided.al2023");
      assert.equal(fn.inputs["handler"], "bootstrap");
      assert.deepEqual(fn.inputs["architectures"], [expected.architecture]);
      assert.equal(fn.inputs["memorySize"], expected.memoryMb[f], `${f} memory`);
      const code = fn.inputs["code"] as { path: Promise<string> | string };
      assert.equal(await code.path, `${expected.artifactsDir}/${f}/bootstrap.zip`);
      const logGroup = byName(resources, TYPE.logGroup, `/aws/lambda/${n.fn(f)}`);
      assert.equal(logGroup.inputs["retentionInDays"], expected.logRetentionDays);
      assert.deepEqual(plain(fn.inputs["loggingConfig"]), { logFormat: "Text", logGroup: `/aws/lambda/${n.fn(f)}` });
      assert.deepEqual(plain(fn.inputs["tags"]), { app: "sophia", stage, "managed-by": "pulumi" });
    }),
  );
}
