/**
 * The OpenAI capacity check: report-generate's maxConcurrency against sophia:openaiLimits, as a
 * pure rule and through the stage configuration.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import { REPO_ROOT } from "../src/repository";
import { ConfigError, loadStageConfig } from "../src/config";
import {
  MAX_COMPLETION_TOKENS,
  TOKENS_PER_REPORT,
  maxConcurrencyFor,
  openAiBudgetProblems,
  openAiDemand,
  openAiLimitsUnsetWarning,
} from "../src/openai-budget";
import { loadSettings } from "../src/settings";
import { FUNCTION_WIRING } from "../src/wiring";
import { TEST_LAYER_ARN, TEST_SECRETS } from "./support/harness";
import { createMocks } from "./support/mocks";

test("max_completion_tokens is the client's default (functions/reports/src/openai.rs)", () => {
  const rust = fs.readFileSync(path.join(REPO_ROOT, "functions/reports/src/openai.rs"), "utf8");
  const m = /pub const DEFAULT_MAX_COMPLETION_TOKENS: u32 = ([\d_]+);/.exec(rust);
  assert.ok(m, "DEFAULT_MAX_COMPLETION_TOKENS is declared in openai.rs");
  assert.equal(Number(m[1]!.replaceAll("_", "")), MAX_COMPLETION_TOKENS);
});

test("demand: reports an hour and tokens and requests a minute per concurrency", () => {
  assert.deepEqual(openAiDemand(2), { reportsPerHour: 360, tokensPerMinute: 6 * TOKENS_PER_REPORT, requestsPerMinute: 6 });
  // gpt-4.1-mini at usage tier 1 (200,000 TPM, 500 RPM): 80% carries 3 instances.
  assert.equal(maxConcurrencyFor({ tokensPerMinute: 200_000, requestsPerMinute: 500 }), 3);
  // Tier 3 (4,000,000 TPM, 5,000 RPM): 71.
  assert.equal(maxConcurrencyFor({ tokensPerMinute: 4_000_000, requestsPerMinute: 5_000 }), 71);
  // A tight request limit decides.
  assert.equal(maxConcurrencyFor({ tokensPerMinute: 10_000_000, requestsPerMinute: 30 }), 8);
});

test("limits are checked only when set, must be whole numbers, and refuse a concurrency over them", () => {
  const tier1 = { tokensPerMinute: 200_000, requestsPerMinute: 500 };
  assert.deepEqual(openAiBudgetProblems(undefined, 50), []);
  assert.deepEqual(openAiBudgetProblems(tier1, 3), [], "3 fits");
  const [over] = openAiBudgetProblems(tier1, 4);
  assert.match(over!, /maxConcurrency of reportGenerate is 4/);
  assert.match(over!, /at most 3 fits/);
  for (const bad of [5, { tokensPerMinute: 1.5, requestsPerMinute: 10 }, { tokensPerMinute: 100 }, null]) {
    assert.match(openAiBudgetProblems(bad, 2)[0]!, /must be \{tokensPerMinute/);
  }
});

test("the stage configuration refuses a report concurrency its OpenAI limits cannot carry", async () => {
  const settings = loadSettings();
  const config = {
    ...TEST_SECRETS,
    "aws:region": "eu-west-1",
    "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.arm64,
    "sophia:maxConcurrency": JSON.stringify({ interviewCompleted: 2, reportGenerate: 20 }),
    "sophia:openaiLimits": JSON.stringify({ tokensPerMinute: 200_000, requestsPerMinute: 500 }),
  };
  pulumi.runtime.setAllConfig(config, Object.keys(TEST_SECRETS));
  await pulumi.runtime.setMocks(createMocks(false).mocks, "sophia", "dev", false);
  assert.throws(
    () => loadStageConfig(settings, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.includes("at most 3 fits")),
  );
  pulumi.runtime.setAllConfig(
    { ...config, "sophia:openaiLimits": JSON.stringify({ tokensPerMinute: 4_000_000, requestsPerMinute: 5_000 }) },
    Object.keys(TEST_SECRETS),
  );
  assert.equal(loadStageConfig(settings, {}).maximumConcurrency["reportGenerate"], 20);
});

test("an unset sophia:openaiLimits is a deploy warning that names the unchecked concurrency; a set one is none", () => {
  assert.match(openAiLimitsUnsetWarning(undefined, 2) ?? "", /sophia:openaiLimits is not set: report-generate's maxConcurrency \(2\) is not checked/);
  assert.equal(openAiLimitsUnsetWarning({ tokensPerMinute: 200_000, requestsPerMinute: 500 }, 2), null);
});

test("the budget covers every queue whose consumer calls OpenAI: reportGenerate's maxConcurrency, the only one (a new OpenAI consumer fails here until the budget counts it)", () => {
  const settings = loadSettings();
  const openAiQueues = settings.queues.filter((q) => FUNCTION_WIRING[q.consumer]?.openai).map((q) => q.key);
  assert.deepEqual(openAiQueues, ["reportGenerate"], "checkOpenAiBudget and stack.ts read maximumConcurrency[\"reportGenerate\"] only");
  const unsubscribed = settings.functions.filter((f) => f.subscribedTo === null && FUNCTION_WIRING[f.name]?.openai);
  assert.deepEqual(unsubscribed, [], "a function that calls OpenAI without a queue has no concurrency the budget could read");
});
