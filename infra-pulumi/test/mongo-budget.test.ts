/**
 * The MongoDB connection budget: maxConcurrency x pool size against sophia:mongoMaxConnections,
 * as a pure rule and through the stage configuration.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import { REPO_ROOT } from "../src/repository";
import { ConfigError, loadStageConfig } from "../src/config";
import { DEFAULT_MONGO_POOL_SIZE, mongoBudgetProblems, mongoConnections } from "../src/mongo-budget";
import { loadSettings } from "../src/settings";
import { TEST_LAYER_ARN, TEST_SECRETS } from "./support/harness";
import { createMocks } from "./support/mocks";

test("the pool size is the binaries' default (functions/platform/src/mongo.rs)", () => {
  const rust = fs.readFileSync(path.join(REPO_ROOT, "functions/platform/src/mongo.rs"), "utf8");
  const m = /pub const DEFAULT_MAX_POOL_SIZE: u32 = (\d+);/.exec(rust);
  assert.ok(m, "DEFAULT_MAX_POOL_SIZE is declared in mongo.rs");
  assert.equal(Number(m[1]), DEFAULT_MONGO_POOL_SIZE);
});

test("connections are maxConcurrency x pool size per queue, summed", () => {
  assert.deepEqual(mongoConnections({ interviewCompleted: 5, reportGenerate: 2 }, 4), {
    perQueue: { interviewCompleted: 20, reportGenerate: 8 },
    total: 28,
  });
});

test("a budget is checked only when set, and must be a whole number", () => {
  const concurrency = { interviewCompleted: 5, reportGenerate: 2 };
  assert.deepEqual(mongoBudgetProblems(undefined, concurrency), []);
  assert.deepEqual(mongoBudgetProblems(28, concurrency, 4), [], "exactly the budget fits");
  const [over] = mongoBudgetProblems(27, concurrency, 4);
  assert.match(over!, /sophia:mongoMaxConnections is 27, but the functions can open 28 MongoDB connections/);
  assert.match(over!, /interviewCompleted 5 x 4 = 20, reportGenerate 2 x 4 = 8/);
  for (const bad of [0, -1, 1.5, "many"]) {
    assert.match(mongoBudgetProblems(bad, concurrency)[0]!, /must be a whole number of connections/);
  }
});

test("the stage configuration refuses a budget the concurrency exceeds", async () => {
  const settings = loadSettings();
  // Every stage also sets its region and the extension layer (see config.test.ts).
  const config = {
    ...TEST_SECRETS,
    "aws:region": "eu-west-1",
    "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.arm64,
    "sophia:maxConcurrency": "50",
    "sophia:mongoMaxConnections": "100",
  };
  pulumi.runtime.setAllConfig(config, Object.keys(TEST_SECRETS));
  await pulumi.runtime.setMocks(createMocks(false).mocks, "sophia", "dev", false);
  assert.throws(
    () => loadStageConfig(settings, {}),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.some((p) => p.includes(`can open ${2 * 50 * DEFAULT_MONGO_POOL_SIZE} MongoDB connections`)),
  );
  pulumi.runtime.setAllConfig({ ...config, "sophia:mongoMaxConnections": "400" }, Object.keys(TEST_SECRETS));
  assert.deepEqual(loadStageConfig(settings, {}).maximumConcurrency, { interviewCompleted: 50, reportGenerate: 50 });
});
