/**
 * Environment variables of the functions (each one the Rust side reads is declared in
 * functions/env/src/lib.rs, rendered as docs/reference/configuration.md). On AWS no secret is an environment variable: a function gets the ARN of each Secrets
 * Manager secret it needs (`*_SECRET_ARN`) and reads the value at its first invocation through the Parameters and
 * Secrets Lambda Extension on localhost. With `sophia:mongodbAuth aws-iam` the MongoDB URI carries
 * no password and is passed as plain `MONGODB_URI`.
 */
import type * as pulumi from "@pulumi/pulumi";

import type { StageConfig } from "./config";
import type { FunctionSpec, QueueSpec } from "./settings";
import { wiringFor } from "./wiring";

export const ENV = {
  mongodbUri: "MONGODB_URI",
  mongodbUriSecretArn: "MONGODB_URI_SECRET_ARN",
  mongodbDatabase: "MONGODB_DATABASE",
  openaiApiKeySecretArn: "OPENAI_API_KEY_SECRET_ARN",
  openaiModel: "OPENAI_MODEL",
  openaiBaseUrl: "OPENAI_BASE_URL",
  logLevel: "LOG_LEVEL",
  recordConcurrency: "RECORD_CONCURRENCY",
  extensionHttpPort: "PARAMETERS_SECRETS_EXTENSION_HTTP_PORT",
  secretsManagerTtl: "SECRETS_MANAGER_TTL",
  /** The Stage dimension of the functions' EMF metrics (`sophia_sqs_consumer::metrics`). */
  stage: "SOPHIA_STAGE",
} as const;

/** The extension's default port, set explicitly so the Rust side and the layer agree. */
export const SECRETS_EXTENSION_HTTP_PORT = 2773;

/**
 * The extension's cache TTL when `sophia:secretsManagerTtlSeconds` is unset: 0, no cache. Each
 * execution environment has its own extension and cache
 * (https://docs.aws.amazon.com/secretsmanager/latest/userguide/retrieving-secrets_lambda.html),
 * and a function reads each secret once per process, so the cache saves nothing; without it, the
 * read a function makes after a refused credential (docs/secrets.md) reaches Secrets Manager
 * instead of the cached old value. 0 disables the cache
 * (https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_lambda.ParamsAndSecretsOptions.html).
 */
export const DEFAULT_SECRETS_MANAGER_TTL_SECONDS = 0;

/** Secret name suffixes (`sophia/<stage>/<suffix>`). */
export const SECRET = { mongodbUri: "mongodb-uri", openaiApiKey: "openai-api-key" } as const;

/** The secrets `fn` reads, by suffix (the IAM grant covers exactly these). */
export function secretsOf(fn: FunctionSpec, cfg: StageConfig): string[] {
  const out: string[] = [];
  if (cfg.mongodbAuth === "password") out.push(SECRET.mongodbUri);
  if (wiringFor(fn.name).openai) out.push(SECRET.openaiApiKey);
  return out;
}

/**
 * @param publishTargets the queues `fn` publishes to, with their URLs
 * @param secretArn the ARN of a stage secret by suffix
 */
export function functionEnvironment(
  fn: FunctionSpec,
  cfg: StageConfig,
  publishTargets: { queue: QueueSpec; url: pulumi.Input<string> }[],
  secretArn: (suffix: string) => pulumi.Input<string>,
): Record<string, pulumi.Input<string>> {
  const env: Record<string, pulumi.Input<string>> = {
    [ENV.mongodbDatabase]: cfg.mongodbDatabase,
    [ENV.logLevel]: cfg.logLevel,
    [ENV.stage]: cfg.stage,
  };
  if (cfg.mongodbAuth === "aws-iam") env[ENV.mongodbUri] = cfg.mongodbIamUri!;
  else env[ENV.mongodbUriSecretArn] = secretArn(SECRET.mongodbUri);
  const recordConcurrency = cfg.recordConcurrency[fn.name];
  if (wiringFor(fn.name).recordConcurrency && recordConcurrency !== undefined) {
    env[ENV.recordConcurrency] = String(recordConcurrency);
  }
  if (wiringFor(fn.name).openai) {
    env[ENV.openaiApiKeySecretArn] = secretArn(SECRET.openaiApiKey);
    env[ENV.openaiModel] = cfg.openaiModel;
    if (cfg.openaiBaseUrl !== undefined) env[ENV.openaiBaseUrl] = cfg.openaiBaseUrl;
  }
  if (secretsOf(fn, cfg).length > 0) {
    env[ENV.extensionHttpPort] = String(SECRETS_EXTENSION_HTTP_PORT);
    env[ENV.secretsManagerTtl] = String(cfg.secretsManagerTtlSeconds ?? DEFAULT_SECRETS_MANAGER_TTL_SECONDS);
  }
  for (const t of publishTargets) env[t.queue.queueUrlEnv] = t.url;
  return env;
}
