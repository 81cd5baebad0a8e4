/**
 * Typed stage configuration (`sophia:*` keys of `Pulumi.<stage>.yaml`). Every key is validated up
 * front and all problems are reported together, before any resource is registered.
 */
import * as path from "node:path";

import * as pulumi from "@pulumi/pulumi";

import { checkMongoBudget } from "./mongo-budget";
import { checkOpenAiBudget } from "./openai-budget";
import { REPO_ROOT } from "./repository";
import { STAGES } from "./stages";
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
  mongodbAuth: "mongodbAuth",
  secretsExtensionLayerArn: "secretsExtensionLayerArn",
  secretsManagerTtlSeconds: "secretsManagerTtlSeconds",
  resumeBucketAccess: "resumeBucketAccess",
  resumeBucketPrefix: "resumeBucketPrefix",
  invocableUnsubscribed: "invocableUnsubscribedFunctions",
  alarmSubscription: "alarmSubscription",
  protectData: "protectData",
  vpc: "vpc",
} as const;

export const MONGODB_AUTH_MODES = ["password", "aws-iam"] as const;
export type MongodbAuth = (typeof MONGODB_AUTH_MODES)[number];
export const RESUME_BUCKET_ACCESS = ["none", "read", "read-write"] as const;
export type ResumeBucketAccess = (typeof RESUME_BUCKET_ACCESS)[number];
/** The extension's cache TTL range (SECRETS_MANAGER_TTL, seconds; 0 disables the cache). */
export const SECRETS_MANAGER_TTL_RANGE = { min: 0, max: 300 } as const;
/** Stages whose queues, DLQs, key and secrets are protected unless `sophia:protectData` says otherwise (declarations/stages.json). */
export const PROTECTED_STAGES: readonly string[] = STAGES.protectedStages;

export interface AlarmSubscription {
  protocol: "email" | "https";
  endpoint: string;
}

export interface VpcPlacement {
  vpcId: string;
  subnetIds: string[];
  securityGroupIds: string[];
  /** Create interface endpoints for SQS and Secrets Manager in the subnets (no NAT needed for them). */
  interfaceEndpoints: boolean;
}

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
  /** `aws:region`: the region of the stage (the KMS `kms:ViaService` condition names it). */
  region: string;
  /** `password`: the URI is a Secrets Manager secret; `aws-iam`: a password-less URI in plain env. */
  mongodbAuth: MongodbAuth;
  /** With `aws-iam`: the URI (no userinfo) with authMechanism=MONGODB-AWS and authSource=$external. */
  mongodbIamUri: string | undefined;
  /** AWS Parameters and Secrets Lambda Extension layer for the stage's region and architecture. */
  secretsExtensionLayerArn: string;
  secretsManagerTtlSeconds: number | undefined;
  resumeBucketAccess: ResumeBucketAccess;
  /** Object key prefix the grant is scoped to (ends with `/`). */
  resumeBucketPrefix: string | undefined;
  /** Functions without a queue may be invoked (otherwise reserved concurrency 0). */
  invocableUnsubscribed: boolean;
  alarmSubscription: AlarmSubscription | undefined;
  /** protect + retainOnDelete on queues, DLQs, the KMS key and the secrets. */
  protectData: boolean;
  vpc: VpcPlacement | undefined;
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
 * (`$CARGO_TARGET_DIR/lambda` or `<repo>/target/lambda`, like `scripts/build`). Each group of keys
 * is read by its own function below, in this order, each adding its problems to the one list.
 */
export function loadStageConfig(
  settings: Settings,
  env: NodeJS.ProcessEnv = process.env,
  repoRoot: string = REPO_ROOT,
): StageConfig {
  const stage = pulumi.getStack();
  const config = new pulumi.Config(CONFIG_NAMESPACE);
  const problems: string[] = [];
  const arch = readArchitecture(config, problems);
  const sizes = readPerItemNumbers(config, settings, problems);
  const logging = readLogging(config, problems);
  const names = readNames(config, problems);
  const artifactsDir = artifactsDirOf(config, env, repoRoot);
  const region = readRegion(problems);
  const mongodb = readMongodbAuth(config, problems);
  const extension = readSecretsExtension(config, region, arch, problems);
  const resume = readResumeBucketAccess(config, names.resumeBucket, problems);
  const protection = readProtection(config, stage, problems);
  const alarmSubscription = readAlarmSubscription(config, names.alarmTopicArn, problems);
  const vpc = parseVpc(readObject(config, KEYS.vpc, problems), problems);
  checkSecretsSet(stage, problems);
  problems.push(...checkMongoBudget(config, sizes.maximumConcurrency));
  problems.push(...checkOpenAiBudget(config, sizes.maximumConcurrency));
  if (problems.length > 0) throw new ConfigError(stage, problems);

  return {
    stage,
    architecture: arch as Architecture,
    memoryMb: sizes.memoryMb,
    maximumConcurrency: sizes.maximumConcurrency,
    oldestMessageAgeAlarmSeconds: sizes.oldestMessageAgeAlarmSeconds,
    alarmTopicArn: names.alarmTopicArn,
    logRetentionDays: logging.logRetentionDays,
    logLevel: logging.logLevel,
    recordConcurrency: sizes.recordConcurrency,
    mongodbDatabase: names.mongodbDatabase,
    openaiModel: names.openaiModel,
    openaiBaseUrl: names.openaiBaseUrl,
    resumeBucket: names.resumeBucket,
    artifactsDir,
    region,
    mongodbAuth: mongodb.mongodbAuth,
    mongodbIamUri: mongodb.mongodbIamUri,
    secretsExtensionLayerArn: extension.secretsExtensionLayerArn ?? "",
    secretsManagerTtlSeconds: extension.secretsManagerTtlSeconds,
    resumeBucketAccess: resume.resumeBucketAccess,
    resumeBucketPrefix: resume.resumeBucketPrefix,
    invocableUnsubscribed: protection.invocable === true,
    alarmSubscription,
    protectData: protection.protectRaw === true,
    vpc,
    secrets: {
      mongodbUri: config.requireSecret(KEYS.mongodbUri),
      openaiApiKey: config.requireSecret(KEYS.openaiApiKey),
    },
  };
}

/** `sophia:architecture`, as given (checked against ARCHITECTURES). */
function readArchitecture(config: pulumi.Config, problems: string[]): string {
  const arch = config.get(KEYS.architecture) ?? DEFAULTS.architecture;
  if (!(ARCHITECTURES as readonly string[]).includes(arch)) {
    problems.push(`${CONFIG_NAMESPACE}:${KEYS.architecture} must be one of ${ARCHITECTURES.join(", ")}, got "${arch}"`);
  }
  return arch;
}

/** The per-function and per-queue numbers: one value for all, or a map by function name or queue key. */
function readPerItemNumbers(
  config: pulumi.Config,
  settings: Settings,
  problems: string[],
): Pick<StageConfig, "memoryMb" | "maximumConcurrency" | "oldestMessageAgeAlarmSeconds" | "recordConcurrency"> {
  const queueKeys = settings.queues.map((q) => q.key);
  const functionNames = settings.functions.map((f) => f.name);
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
  return { memoryMb, maximumConcurrency, oldestMessageAgeAlarmSeconds, recordConcurrency };
}

/** `sophia:logRetentionDays` (a value CloudWatch Logs accepts) and `sophia:logLevel`. */
function readLogging(config: pulumi.Config, problems: string[]): Pick<StageConfig, "logRetentionDays" | "logLevel"> {
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
  // Release builds keep INFO and above only (workspace Cargo.toml: tracing and log with
  // release_max_level_info): a debug or trace directive would silently log nothing more.
  if (/(^|[,=])(debug|trace)($|,)/i.test(logLevel)) {
    problems.push(
      `${CONFIG_NAMESPACE}:${KEYS.logLevel} ${JSON.stringify(logLevel)} asks for debug/trace lines, which the release binaries do not contain (compiled out: release_max_level_info); use info, warn or error`,
    );
  }
  return { logRetentionDays, logLevel };
}

/** The names and addresses the stage is given: database, model, gateway, resume bucket, alarm topic. */
function readNames(
  config: pulumi.Config,
  problems: string[],
): Pick<StageConfig, "mongodbDatabase" | "openaiModel" | "openaiBaseUrl" | "resumeBucket" | "alarmTopicArn"> {
  const mongodbDatabase =
    optionalString(config, KEYS.mongodbDatabase, /^[^\s/\\."$]{1,63}$/, "a MongoDB database name", problems) ??
    DEFAULTS.mongodbDatabase;
  const openaiModel =
    optionalString(config, KEYS.openaiModel, /^[A-Za-z0-9._:\-]+$/, "a model id", problems) ?? DEFAULTS.openaiModel;
  const openaiBaseUrl = optionalString(
    config,
    KEYS.openaiBaseUrl,
    /^(https:\/\/\S+|http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?(\/\S*)?)$/,
    "an https URL (plain http only for a loopback gateway: localhost, 127.0.0.1, [::1])",
    problems,
  );
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
  return { mongodbDatabase, openaiModel, openaiBaseUrl, resumeBucket, alarmTopicArn };
}

/** `$CARGO_TARGET_DIR/lambda` when set (relative to the repo root if relative), else `<repo>/target/lambda`. */
export function defaultArtifactsDir(repoRoot: string, env: NodeJS.ProcessEnv): string {
  const targetDir = env["CARGO_TARGET_DIR"];
  return targetDir ? path.resolve(repoRoot, targetDir, "lambda") : path.join(repoRoot, "target", "lambda");
}

/** `sophia:artifactsDir` (relative to the repository root), else defaultArtifactsDir. */
function artifactsDirOf(config: pulumi.Config, env: NodeJS.ProcessEnv, repoRoot: string): string {
  const configuredArtifacts = config.get(KEYS.artifactsDir);
  return configuredArtifacts
    ? path.resolve(repoRoot, configuredArtifacts)
    : defaultArtifactsDir(repoRoot, env);
}

/** `aws:region`, required. */
function readRegion(problems: string[]): string {
  const region = new pulumi.Config("aws").get("region") ?? "";
  if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) problems.push(`aws:region must be set to the stage's region, got ${JSON.stringify(region)}`);
  return region;
}

/** `sophia:mongodbAuth` and, with aws-iam, the password-less connection string made of `sophia:mongodbUri`. */
function readMongodbAuth(config: pulumi.Config, problems: string[]): Pick<StageConfig, "mongodbAuth" | "mongodbIamUri"> {
  const mongodbAuth = (config.get(KEYS.mongodbAuth) ?? "password") as MongodbAuth;
  if (!(MONGODB_AUTH_MODES as readonly string[]).includes(mongodbAuth)) {
    problems.push(`${CONFIG_NAMESPACE}:${KEYS.mongodbAuth} must be one of ${MONGODB_AUTH_MODES.join(", ")}, got "${mongodbAuth}"`);
  }
  let mongodbIamUri: string | undefined;
  const rawUri = pulumi.runtime.getConfig(`${CONFIG_NAMESPACE}:${KEYS.mongodbUri}`);
  if (mongodbAuth === "aws-iam" && rawUri !== undefined) {
    const r = mongodbIamConnectionString(rawUri);
    if (r.ok) mongodbIamUri = r.uri;
    else problems.push(`${CONFIG_NAMESPACE}:${KEYS.mongodbUri} with ${KEYS.mongodbAuth} aws-iam ${r.problem}`);
  }
  return { mongodbAuth, mongodbIamUri };
}

/** The secrets extension: its layer (checkLayerArn) and its cache TTL. */
function readSecretsExtension(
  config: pulumi.Config,
  region: string,
  arch: string,
  problems: string[],
): { secretsExtensionLayerArn: string | undefined; secretsManagerTtlSeconds: number | undefined } {
  const secretsExtensionLayerArn = checkLayerArn(config.get(KEYS.secretsExtensionLayerArn), region, arch, problems);
  const ttlRaw = readObject(config, KEYS.secretsManagerTtlSeconds, problems);
  let secretsManagerTtlSeconds: number | undefined;
  if (ttlRaw !== undefined) {
    const r = integerIn(SECRETS_MANAGER_TTL_RANGE.min, SECRETS_MANAGER_TTL_RANGE.max)(ttlRaw);
    if (typeof r === "string") problems.push(`${CONFIG_NAMESPACE}:${KEYS.secretsManagerTtlSeconds} ${r}, got ${JSON.stringify(ttlRaw)}`);
    else secretsManagerTtlSeconds = r;
  }
  return { secretsExtensionLayerArn, secretsManagerTtlSeconds };
}

/** `sophia:resumeBucketAccess` and its prefix; access other than none needs the bucket and the prefix. */
function readResumeBucketAccess(
  config: pulumi.Config,
  resumeBucket: string | undefined,
  problems: string[],
): Pick<StageConfig, "resumeBucketAccess" | "resumeBucketPrefix"> {
  const resumeBucketAccess = (config.get(KEYS.resumeBucketAccess) ?? "none") as ResumeBucketAccess;
  if (!(RESUME_BUCKET_ACCESS as readonly string[]).includes(resumeBucketAccess)) {
    problems.push(
      `${CONFIG_NAMESPACE}:${KEYS.resumeBucketAccess} must be one of ${RESUME_BUCKET_ACCESS.join(", ")}, got "${resumeBucketAccess}"`,
    );
  }
  const resumeBucketPrefix = optionalString(
    config,
    KEYS.resumeBucketPrefix,
    /^[A-Za-z0-9!_.'()-]+(\/[A-Za-z0-9!_.'()-]+)*\/$/,
    "an object key prefix ending in '/' (no '*'), e.g. resumes/",
    problems,
  );
  if (resumeBucketAccess !== "none") {
    if (!resumeBucket) problems.push(`${CONFIG_NAMESPACE}:${KEYS.resumeBucketAccess} ${resumeBucketAccess} needs ${CONFIG_NAMESPACE}:${KEYS.resumeBucket}`);
    if (!resumeBucketPrefix) {
      problems.push(`${CONFIG_NAMESPACE}:${KEYS.resumeBucketAccess} ${resumeBucketAccess} needs ${CONFIG_NAMESPACE}:${KEYS.resumeBucketPrefix} (the grant is scoped to it)`);
    }
  }
  return { resumeBucketAccess, resumeBucketPrefix };
}

/**
 * `sophia:invocableUnsubscribedFunctions` and `sophia:protectData` as given (true/false when
 * valid); protected data needs the stack pinned to its account.
 */
function readProtection(config: pulumi.Config, stage: string, problems: string[]): { invocable: unknown; protectRaw: unknown } {
  const invocable = readObject(config, KEYS.invocableUnsubscribed, problems) ?? false;
  if (typeof invocable !== "boolean") problems.push(`${CONFIG_NAMESPACE}:${KEYS.invocableUnsubscribed} must be true or false`);
  const protectRaw = readObject(config, KEYS.protectData, problems) ?? PROTECTED_STAGES.includes(stage);
  if (typeof protectRaw !== "boolean") problems.push(`${CONFIG_NAMESPACE}:${KEYS.protectData} must be true or false`);

  if (protectRaw === true && pulumi.runtime.getConfig("aws:allowedAccountIds") === undefined) {
    problems.push(
      `aws:allowedAccountIds must pin stack "${stage}" (protected data) to its AWS account: scripts/bootstrap-stage ${stage} sets it`,
    );
  }
  return { invocable, protectRaw };
}

/** `sophia:alarmSubscription`, which subscribes the stack's own topic: not with `sophia:alarmTopicArn`. */
function readAlarmSubscription(config: pulumi.Config, alarmTopicArn: string | undefined, problems: string[]): AlarmSubscription | undefined {
  const alarmSubscription = parseAlarmSubscription(readObject(config, KEYS.alarmSubscription, problems), problems);
  if (alarmSubscription && alarmTopicArn) {
    problems.push(
      `${CONFIG_NAMESPACE}:${KEYS.alarmSubscription} subscribes the stack's own topic; with ${CONFIG_NAMESPACE}:${KEYS.alarmTopicArn} set, subscribe that topic instead`,
    );
  }
  return alarmSubscription;
}

/** The two secrets must be set (`pulumi config set --secret`). */
function checkSecretsSet(stage: string, problems: string[]): void {
  for (const secretKey of [KEYS.mongodbUri, KEYS.openaiApiKey]) {
    if (pulumi.runtime.getConfig(`${CONFIG_NAMESPACE}:${secretKey}`) === undefined) {
      problems.push(
        `${CONFIG_NAMESPACE}:${secretKey} is not set: pulumi config set --secret ${CONFIG_NAMESPACE}:${secretKey} <value> --stack ${stage}`,
      );
    }
  }
}

/** The AWS-published extension layer: name per architecture (the x86_64 one has no suffix). */
export const SECRETS_EXTENSION_LAYER_NAME: Record<Architecture, string> = {
  arm64: "AWS-Parameters-and-Secrets-Lambda-Extension-Arm64",
  x86_64: "AWS-Parameters-and-Secrets-Lambda-Extension",
};
const LAYER_ARN = /^arn:aws[a-z-]*:lambda:([a-z0-9-]+):(\d{12}):layer:([A-Za-z0-9_-]+):(\d+)$/;

/**
 * `sophia:secretsExtensionLayerArn` is required (AWS publishes one ARN per region, architecture and
 * version; docs/secrets.md, "Where a function gets a secret"): a layer version ARN in the stage's region, and, when it is the
 * AWS-published layer, the variant for the stage's architecture.
 */
function checkLayerArn(value: string | undefined, region: string, arch: string, problems: string[]): string | undefined {
  const key = `${CONFIG_NAMESPACE}:${KEYS.secretsExtensionLayerArn}`;
  const wanted = SECRETS_EXTENSION_LAYER_NAME[arch as Architecture] ?? SECRETS_EXTENSION_LAYER_NAME.arm64;
  if (value === undefined || value === "") {
    problems.push(
      `${key} is not set: the AWS Parameters and Secrets Lambda Extension layer for ${region || "<region>"}/${arch} ` +
        `(arn:aws:lambda:${region || "<region>"}:<AWS account of the region>:layer:${wanted}:<version>, see infra-pulumi/README.md "Secrets"): ` +
        `pulumi config set ${key} <arn>`,
    );
    return undefined;
  }
  const m = LAYER_ARN.exec(value);
  if (!m) {
    problems.push(`${key} must be a Lambda layer version ARN (arn:aws:lambda:<region>:<account>:layer:<name>:<version>), got ${JSON.stringify(value)}`);
    return undefined;
  }
  if (m[1] !== region) problems.push(`${key} is in ${m[1]}, but the stage deploys to ${region} (aws:region): a layer must be in the function's region`);
  const name = m[3]!;
  if (name.startsWith("AWS-Parameters-and-Secrets-Lambda-Extension") && name !== wanted) {
    problems.push(`${key} names the layer ${name}, but the stage deploys ${arch}: use ${wanted}`);
  }
  return value;
}

/**
 * The connection string for Atlas AWS IAM authentication: no userinfo (no password anywhere), and
 * `authMechanism=MONGODB-AWS` + `authSource=$external` (added when absent; another mechanism is refused).
 */
export function mongodbIamConnectionString(uri: string): { ok: true; uri: string } | { ok: false; problem: string } {
  const m = /^(mongodb(?:\+srv)?:\/\/)([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/.exec(uri);
  if (!m) return { ok: false, problem: "must be a mongodb:// or mongodb+srv:// URI" };
  if (m[2]!.includes("@")) return { ok: false, problem: "must not carry a user or password (the function role authenticates)" };
  const params = (m[4] ?? "").replace(/^\?/, "").split("&").filter((p) => p !== "");
  const value = (name: string) => params.find((p) => p.toLowerCase().startsWith(`${name.toLowerCase()}=`))?.split("=")[1];
  const mechanism = value("authMechanism");
  if (mechanism !== undefined && mechanism !== "MONGODB-AWS") return { ok: false, problem: `must use authMechanism=MONGODB-AWS, not ${mechanism}` };
  if (mechanism === undefined) params.push("authMechanism=MONGODB-AWS");
  if (value("authSource") === undefined) params.push("authSource=%24external");
  return { ok: true, uri: `${m[1]}${m[2]}${m[3] ?? "/"}?${params.join("&")}` };
}

function parseAlarmSubscription(raw: unknown, problems: string[]): AlarmSubscription | undefined {
  if (raw === undefined) return undefined;
  const key = `${CONFIG_NAMESPACE}:${KEYS.alarmSubscription}`;
  const o = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const protocol = o["protocol"];
  const endpoint = o["endpoint"];
  if (protocol === "email" && typeof endpoint === "string" && /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(endpoint)) {
    return { protocol, endpoint };
  }
  if (protocol === "https" && typeof endpoint === "string" && /^https:\/\/\S+$/.test(endpoint)) return { protocol, endpoint };
  problems.push(`${key} must be {protocol: email, endpoint: <address>} or {protocol: https, endpoint: https://...}`);
  return undefined;
}

function parseVpc(raw: unknown, problems: string[]): VpcPlacement | undefined {
  if (raw === undefined) return undefined;
  const key = `${CONFIG_NAMESPACE}:${KEYS.vpc}`;
  const o = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const ids = (field: string, prefix: string): string[] => {
    const v = o[field];
    if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== "string" || !new RegExp(`^${prefix}-[0-9a-f]{8,17}$`).test(x))) {
      problems.push(`${key}.${field} must be a non-empty list of ${prefix}-... ids`);
      return [];
    }
    return v as string[];
  };
  const vpcId = typeof o["vpcId"] === "string" && /^vpc-[0-9a-f]{8,17}$/.test(o["vpcId"]) ? o["vpcId"] : undefined;
  if (!vpcId) problems.push(`${key}.vpcId must be a vpc-... id`);
  const endpoints = o["interfaceEndpoints"] ?? false;
  if (typeof endpoints !== "boolean") problems.push(`${key}.interfaceEndpoints must be true or false`);
  return {
    vpcId: vpcId ?? "",
    subnetIds: ids("subnetIds", "subnet"),
    securityGroupIds: ids("securityGroupIds", "sg"),
    interfaceEndpoints: endpoints === true,
  };
}
