/**
 * Environment variables of the functions (names fixed by DESIGN.md). Secrets stay Outputs marked
 * secret from `config.requireSecret`, so they are encrypted in the state and never printed.
 */
import * as pulumi from "@pulumi/pulumi";

import type { StageConfig } from "./config";
import type { FunctionSpec, QueueSpec } from "./settings";
import { wiringFor } from "./wiring";

export const ENV = {
  mongodbUri: "MONGODB_URI",
  mongodbDatabase: "MONGODB_DATABASE",
  openaiApiKey: "OPENAI_API_KEY",
  openaiModel: "OPENAI_MODEL",
  openaiBaseUrl: "OPENAI_BASE_URL",
  logLevel: "LOG_LEVEL",
  recordConcurrency: "RECORD_CONCURRENCY",
} as const;

/**
 * @param publishTargets the queues `fn` publishes to, with their URLs
 */
export function functionEnvironment(
  fn: FunctionSpec,
  cfg: StageConfig,
  publishTargets: { queue: QueueSpec; url: pulumi.Input<string> }[],
): Record<string, pulumi.Input<string>> {
  const env: Record<string, pulumi.Input<string>> = {
    [ENV.mongodbUri]: cfg.secrets.mongodbUri,
    [ENV.mongodbDatabase]: cfg.mongodbDatabase,
    [ENV.logLevel]: cfg.logLevel,
  };
  const recordConcurrency = cfg.recordConcurrency[fn.name];
  if (wiringFor(fn.name).recordConcurrency && recordConcurrency !== undefined) {
    env[ENV.recordConcurrency] = String(recordConcurrency);
  }
  if (wiringFor(fn.name).openai) {
    env[ENV.openaiApiKey] = cfg.secrets.openaiApiKey;
    env[ENV.openaiModel] = cfg.openaiModel;
    if (cfg.openaiBaseUrl !== undefined) env[ENV.openaiBaseUrl] = cfg.openaiBaseUrl;
  }
  for (const t of publishTargets) env[t.queue.queueUrlEnv] = t.url;
  return env;
}
