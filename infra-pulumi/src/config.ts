/**
 * Typed stage configuration (`sophia:*` keys of `Pulumi.<stage>.yaml`). Every key is validated up
 * front and all problems are reported together, before any resource is registered.
 */
import * as path from "node:path";

import * as pulumi from "@pulumi/pulumi";

import { defaultArtifactsDir, REPO_ROOT } from "./artifacts";
import { checkMongoBudget } from "./mongo-budget";
import type { Settings } from "./settings";
import { FUNCTION_WIRING } from "./wiring";

export const CONFIG_NAMESPACE = "sophia";

export const ARCHITECTURES = ["arm64", "x86_64"] as const;
export type Architecture = (typeof ARCHITECTURES)[number];

/** Defaults for optional keys. Queue and function numbers are not here: they come from queues.json. */
export const DEFAULTS = {
  architecture: "arm64" as Architecture,
  mongodbDatabase: "sophia",
  openaiModel: "gpt-4.1-mini",
  logLevel: "info",
  logRetentionDays: 14,
  /** The lowest value AWS accepts for an SQS event source's maximum concurrency. */
  maximumConcurrency: 2,
} as const;

export const MAXIMUM_CONCURRENCY_RANGE = { min: 2, max: 1000 } as const;
/** RECORD_CONCURRENCY: at least 1; more than SQS's largest batch (10) would change nothing. */
export const RECORD_CONCURRENCY_RANGE = { min: 1, max: 10 } as const;
const LAMBDA_MEMORY_RANGE = { min: 128, max: 10_240 } as const;
/** The retention values CloudWatch Logs accepts. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/** Config keys, so that messages, docs and tests name them the same way. */
export const KEYS = {
  architecture: "architecture",
  memoryMb: "memoryMb",
  maximumConcurrency: "maxConcurrency",
  oldestMessageAgeAlarmSeconds: "alarmOldestMessageAgeSeconds",
  alarmTopicArn: "alarmTopicArn",
  logRetentionDays: "logRetentionDays",
  logLevel: "logLevel",
  recordConcurrency: "recordConcurrency",
  mongodbDatabase: "mongodbDatabase",
  mongodbUri: "mongodbUri",
  openaiApiKey: "openaiApiKey",
  openaiModel: "openaiModel",
  openaiBaseUrl: "openaiBaseUrl",
  resumeBucket: "resumeBucket",
  artifactsDir: "artifactsDir",
} as const;

export interface StageConfig {
  /** Stack name. */
  stage: string;
  architecture: Architecture;
  /** Memory per function name (queues.json value unless overridden). */
  memoryMb: Record<string, number>;
  /** ESM maximum concurrency per queue key. */
  maximumConcurrency: Record<string, number>;
  /** ApproximateAgeOfOldestMessage alarm threshold per queue key. */
  oldestMessageAgeAlarmSeconds: Record<string, number>;
  alarmTopicArn: string | undefined;
  logRetentionDays: number;
  logLevel: string;
  /**
   * RECORD_CONCURRENCY per function that reads it (see `FUNCTION_WIRING`); `undefined` leaves the
   * binary's default (4).
   */
  recordConcurrency: Record<string, number | undefined>;
  mongodbDatabase: string;
  openaiModel: string;
  openaiBaseUrl: string | undefined;
  resumeBucket: string | undefined;
  /** Absolute directory holding `<bin>/bootstrap.zip` and `build-info.json`. */
  artifactsDir: string;
  secrets: {
    mongodbUri: pulumi.Output<string>;
    openaiApiKey: pulumi.Output<string>;
  };
}

export class ConfigError extends pulumi.RunError {
  constructor(
    readonly stage: string,
    readonly problems: string[],
  ) {
    super(`Invalid configuration for stack "${stage}":\n  - ${problems.join("\n  - ")}`);
  }
}

type Validator<T> = (value: unknown) => T | string; // a string is an error message

const integerIn =
  (min: number, max: number): Validator<number> =>
  (v) =>
    typeof v === "number" && Number.isInteger(v) && v >= min && v <= max ? v : `must be an integer in [${min}, ${max}]`;

/**
 * A per-item setting given either as one value for all items or as a map `{ item: value }`.
 * Unknown map keys are errors (a typo must not silently fall back to the default).
 */
function perItem<T>(
  raw: unknown,
  items: string[],
  key: string,
  validate: Validator<T>,
  fallback: (item: string) => T,
  problems: string[],
): Record<string, T> {
  const out: Record<string, T> = {};
  const isMap = typeof raw === "object" && raw !== null && !Array.isArray(raw);
  if (raw !== undefined && !isMap) {
    // One value for every item.
    const r = validate(raw);
    if (typeof r === "string") problems.push(`${CONFIG_NAMESPACE}:${key} ${r}, got ${JSON.stringify(raw)}`);
    for (const item of items) out[item] = typeof r === "string" ? fallback(item) : r;
    return out;
  }
  const map = (raw ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(map)) {
    if (!items.includes(k)) problems.push(`${CONFIG_NAMESPACE}:${key} has unknown key "${k}" (known: ${items.join(", ")})`);
  }
  for (const item of items) {
    const given = map[item];
    if (given === undefined) {
      out[item] = fallback(item);
      continue;
    }
    const r = validate(given);
    if (typeof r === "string") {
      problems.push(`${CONFIG_NAMESPACE}:${key}.${item} ${r}, got ${JSON.stringify(given)}`);
      out[item] = fallback(item);
    } else {
      out[item] = r;
    }
  }
  return out;
}

function readObject(config: pulumi.Config, key: string, problems: string[]): unknown {
  try {
    return config.getObject<unknown>(key);
  } catch (e) {
    problems.push(`${CONFIG_NAMESPACE}:${key} is not valid JSON/YAML: ${(e as Error).message}`);
    return undefined;
  }
}

function optionalString(
  config: pulumi.Config,
  key: string,
  pattern: RegExp,
  what: string,
  problems: string[],
): string | undefined {
  const v = config.get(key);
  if (v === undefined || v === "") return undefined;
  if (!pattern.test(v)) {
    problems.push(`${CONFIG_NAMESPACE}:${key} must be ${what}, got ${JSON.stringify(v)}`);
    return undefined;
  }
  return v;
}

/**
 * Reads the stage configuration. `env` and `repoRoot` only decide the default artifacts directory
 * (`$CARGO_TARGET_DIR/lambda` or `<repo>/target/lambda`, like `scripts/build`).
 */
export function loadStageConfig(
  settings: Settings,
  env: NodeJS.ProcessEnv = process.env,
  repoRoot: string = REPO_ROOT,
): StageConfig {
  const stage = pulumi.getStack();
  const config = new pulumi.Config(CONFIG_NAMESPACE);
  const problems: string[] = [];
  const queueKeys = settings.queues.map((q) => q.key);
  const functionNames = settings.functions.map((f) => f.name);

  const arch = config.get(KEYS.architecture) ?? DEFAULTS.architecture;
  if (!(ARCHITECTURES as readonly string[]).includes(arch)) {
    problems.push(`${CONFIG_NAMESPACE}:${KEYS.architecture} must be one of ${ARCHITECTURES.join(", ")}, got "${arch}"`);
  }

  const memoryMb = perItem(
    readObject(config, KEYS.memoryMb, problems),
    functionNames,
    KEYS.memoryMb,
    integerIn(LAMBDA_MEMORY_RANGE.min, LAMBDA_MEMORY_RANGE.max),
    (fn) => settings.functions.find((f) => f.name === fn)!.memoryMb,
    problems,
  );
  const maximumConcurrency = perItem(
    readObject(config, KEYS.maximumConcurrency, problems),
    queueKeys,
    KEYS.maximumConcurrency,
    integerIn(MAXIMUM_CONCURRENCY_RANGE.min, MAXIMUM_CONCURRENCY_RANGE.max),
    () => DEFAULTS.maximumConcurrency,
    problems,
  );
  // Default: the longest a healthy message can wait while being retried before it reaches the DLQ
  // (maxReceiveCount visibility timeouts). Older than that means the consumer is not keeping up.
  const oldestMessageAgeAlarmSeconds = perItem(
    readObject(config, KEYS.oldestMessageAgeAlarmSeconds, problems),
    queueKeys,
    KEYS.oldestMessageAgeAlarmSeconds,
    integerIn(1, 1_209_600),
    (key) => {
      const q = settings.queues.find((x) => x.key === key)!;
      return q.maxReceiveCount * q.visibilityTimeoutSeconds;
    },
    problems,
  );

  const recordConcurrency = perItem<number | undefined>(
    readObject(config, KEYS.recordConcurrency, problems),
    functionNames.filter((fn) => FUNCTION_WIRING[fn]?.recordConcurrency === true),
    KEYS.recordConcurrency,
    integerIn(RECORD_CONCURRENCY_RANGE.min, RECORD_CONCURRENCY_RANGE.max),
    () => undefined,
    problems,
  );

  const retentionRaw = readObject(config, KEYS.logRetentionDays, problems) ?? DEFAULTS.logRetentionDays;
  let logRetentionDays: number = DEFAULTS.logRetentionDays;
  if (typeof retentionRaw === "number" && (LOG_RETENTION_DAYS as readonly number[]).includes(retentionRaw)) {
    logRetentionDays = retentionRaw;
  } else {
    problems.push(
      `${CONFIG_NAMESPACE}:${KEYS.logRetentionDays} must be one of ${LOG_RETENTION_DAYS.join(", ")}, got ${JSON.stringify(retentionRaw)}`,
    );
  }

  const logLevel =
    optionalString(config, KEYS.logLevel, /^[A-Za-z0-9_=,:.\-]+$/, "a log level or tracing filter", problems) ??
    DEFAULTS.logLevel;
  const mongodbDatabase =
    optionalString(config, KEYS.mongodbDatabase, /^[^\s/\\."$]{1,63}$/, "a MongoDB database name", problems) ??
    DEFAULTS.mongodbDatabase;
  const openaiModel =
    optionalString(config, KEYS.openaiModel, /^[A-Za-z0-9._:\-]+$/, "a model id", problems) ?? DEFAULTS.openaiModel;
  const openaiBaseUrl = optionalString(config, KEYS.openaiBaseUrl, /^https?:\/\/\S+$/, "an http(s) URL", problems);
  const resumeBucket = optionalString(
    config,
    KEYS.resumeBucket,
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
    "an existing S3 bucket name",
    problems,
  );
  const alarmTopicArn = optionalString(
    config,
    KEYS.alarmTopicArn,
    /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/,
    "an SNS topic ARN",
    problems,
  );

  const configuredArtifacts = config.get(KEYS.artifactsDir);
  const artifactsDir = configuredArtifacts
    ? path.resolve(repoRoot, configuredArtifacts)
    : defaultArtifactsDir(repoRoot, env);

  for (const secretKey of [KEYS.mongodbUri, KEYS.openaiApiKey]) {
    if (pulumi.runtime.getConfig(`${CONFIG_NAMESPACE}:${secretKey}`) === undefined) {
      problems.push(
        `${CONFIG_NAMESPACE}:${secretKey} is not set: pulumi config set --secret ${CONFIG_NAMESPACE}:${secretKey} <value> --stack ${stage}`,
      );
    }
  }

  problems.push(...checkMongoBudget(config, maximumConcurrency));
  if (problems.length > 0) throw new ConfigError(stage, problems);

  return {
    stage,
    architecture: arch as Architecture,
    memoryMb,
    maximumConcurrency,
    oldestMessageAgeAlarmSeconds,
    alarmTopicArn,
    logRetentionDays,
    logLevel,
    recordConcurrency,
    mongodbDatabase,
    openaiModel,
    openaiBaseUrl,
    resumeBucket,
    artifactsDir,
    secrets: {
      mongodbUri: config.requireSecret(KEYS.mongodbUri),
      openaiApiKey: config.requireSecret(KEYS.openaiApiKey),
    },
  };
}
