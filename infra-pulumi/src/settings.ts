/**
 * The one declaration of queue and function settings, `declarations/queues.json`, loaded and
 * validated. The Rust side reads the same file (the `sophia-declarations` crate in that folder);
 * nothing in this program repeats its numbers.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import { requiredVisibilityTimeoutSeconds } from "./invariants";

export const DEFAULT_SETTINGS_PATH = path.join(__dirname, "..", "..", "declarations", "queues.json");

export interface QueueSpec {
  /** camelCase key used for cross references (`subscribedTo`, `publishesTo`, config maps). */
  key: string;
  /** Component name in the original SST program (kept for traceability). */
  component: string;
  /** Queue name without the `<app>-<stage>-` prefix. */
  name: string;
  dlqName: string;
  /** Environment variable that carries this queue's URL (API and functions). */
  queueUrlEnv: string;
  /** What the queue carries (documentation: the Rust enum, the configuration page). */
  description: string;
  /** The API sends to it: its URL is in `apiEnv` and the API publish policy covers it. */
  publishedByApi: boolean;
  /** Name of the function subscribed to this queue. */
  consumer: string;
  visibilityTimeoutSeconds: number;
  messageRetentionSeconds: number;
  maxReceiveCount: number;
  dlqMessageRetentionSeconds: number;
  batchSize: number;
  maximumBatchingWindowSeconds: number;
  reportBatchItemFailures: boolean;
  /**
   * Its consumer requeues a delayed copy of a transiently failing record on its last receive (the
   * Rust backoff policy reads the same property): SendMessage on its own queue (pipeline.ts), and
   * the `transient-give-up` alarm (alarms.ts).
   */
  requeuesTransientFailures: boolean;
  /** Its consumer sends a record that can never succeed to its DLQ at once: SendMessage on that DLQ. */
  deadLettersPermanentFailures: boolean;
  /** What a message in its DLQ means, for whoever is paged: the DLQ alarm's text (alarms.ts). */
  dlqMeaning: string;
}

export interface FunctionSpec {
  /** Function and binary name without the `<app>-<stage>-` prefix (`target/lambda/<name>/`). */
  name: string;
  timeoutSeconds: number;
  memoryMb: number;
  /**
   * The `sophia-ops` command (without `--stage`) that lists this function's unfinished work: the
   * first command of its alarms (alarms.ts); sophia-ops' tests parse it with the real CLI.
   */
  unfinishedWorkCommand: string;
  /** Key of the queue this function consumes, or null for a function that is deployed only. */
  subscribedTo: string | null;
  /** Keys of the queues this function sends messages to. */
  publishesTo: string[];
}

export interface Settings {
  appName: string;
  /** The operator audit trail's log group, `<app>-<stage>-<this>` (sophia-ops appends to it only). */
  operatorAuditLogGroup: string;
  queues: QueueSpec[];
  functions: FunctionSpec[];
}

/** Raised when queues.json is malformed or breaks a rule; lists every problem at once. */
export class SettingsError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is invalid:\n  - ${problems.join("\n  - ")}`);
    this.name = "SettingsError";
  }
}

// AWS limits (SQS and Lambda service quotas that are not adjustable).
const SQS_VISIBILITY_TIMEOUT_MAX = 43_200;
const SQS_RETENTION_MIN = 60;
const SQS_RETENTION_MAX = 1_209_600;
const SQS_MAX_RECEIVE_COUNT_MAX = 1_000;
const SQS_BATCH_SIZE_MAX = 10_000;
const SQS_BATCH_SIZE_WITHOUT_WINDOW_MAX = 10;
const SQS_BATCHING_WINDOW_MAX = 300;
const LAMBDA_TIMEOUT_MAX = 900;
const LAMBDA_MEMORY_MIN = 128;
const LAMBDA_MEMORY_MAX = 10_240;

type Json = unknown;

class Checker {
  readonly problems: string[] = [];

  str(obj: Record<string, Json>, field: string, where: string): string {
    const v = obj[field];
    if (typeof v !== "string" || v.length === 0) {
      this.problems.push(`${where}.${field} must be a non-empty string`);
      return "";
    }
    return v;
  }

  int(obj: Record<string, Json>, field: string, where: string, min: number, max: number): number {
    const v = obj[field];
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
      this.problems.push(`${where}.${field} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
      return Number.NaN;
    }
    return v;
  }

  bool(obj: Record<string, Json>, field: string, where: string): boolean {
    const v = obj[field];
    if (typeof v !== "boolean") {
      this.problems.push(`${where}.${field} must be a boolean`);
      return false;
    }
    return v;
  }

  record(v: Json, where: string): Record<string, Json> {
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      this.problems.push(`${where} must be an object`);
      return {};
    }
    return v as Record<string, Json>;
  }

  array(v: Json, where: string): Json[] {
    if (!Array.isArray(v) || v.length === 0) {
      this.problems.push(`${where} must be a non-empty array`);
      return [];
    }
    return v;
  }
}

function parseQueue(c: Checker, raw: Json, i: number): QueueSpec {
  const where = `queues[${i}]`;
  const o = c.record(raw, where);
  return {
    key: c.str(o, "key", where),
    component: c.str(o, "component", where),
    name: c.str(o, "name", where),
    dlqName: c.str(o, "dlqName", where),
    queueUrlEnv: c.str(o, "queueUrlEnv", where),
    description: c.str(o, "description", where),
    publishedByApi: c.bool(o, "publishedByApi", where),
    consumer: c.str(o, "consumer", where),
    visibilityTimeoutSeconds: c.int(o, "visibilityTimeoutSeconds", where, 0, SQS_VISIBILITY_TIMEOUT_MAX),
    messageRetentionSeconds: c.int(o, "messageRetentionSeconds", where, SQS_RETENTION_MIN, SQS_RETENTION_MAX),
    maxReceiveCount: c.int(o, "maxReceiveCount", where, 1, SQS_MAX_RECEIVE_COUNT_MAX),
    dlqMessageRetentionSeconds: c.int(o, "dlqMessageRetentionSeconds", where, SQS_RETENTION_MIN, SQS_RETENTION_MAX),
    batchSize: c.int(o, "batchSize", where, 1, SQS_BATCH_SIZE_MAX),
    maximumBatchingWindowSeconds: c.int(o, "maximumBatchingWindowSeconds", where, 0, SQS_BATCHING_WINDOW_MAX),
    reportBatchItemFailures: c.bool(o, "reportBatchItemFailures", where),
    requeuesTransientFailures: c.bool(o, "requeuesTransientFailures", where),
    deadLettersPermanentFailures: c.bool(o, "deadLettersPermanentFailures", where),
    dlqMeaning: c.str(o, "dlqMeaning", where),
  };
}

function parseFunction(c: Checker, raw: Json, i: number): FunctionSpec {
  const where = `functions[${i}]`;
  const o = c.record(raw, where);
  const subscribedTo = o["subscribedTo"];
  if (subscribedTo !== null && typeof subscribedTo !== "string") {
    c.problems.push(`${where}.subscribedTo must be a queue key or null`);
  }
  const publishesTo = o["publishesTo"];
  if (!Array.isArray(publishesTo) || publishesTo.some((p) => typeof p !== "string")) {
    c.problems.push(`${where}.publishesTo must be an array of queue keys`);
  }
  return {
    name: c.str(o, "name", where),
    timeoutSeconds: c.int(o, "timeoutSeconds", where, 1, LAMBDA_TIMEOUT_MAX),
    memoryMb: c.int(o, "memoryMb", where, LAMBDA_MEMORY_MIN, LAMBDA_MEMORY_MAX),
    unfinishedWorkCommand: c.str(o, "unfinishedWorkCommand", where),
    subscribedTo: typeof subscribedTo === "string" ? subscribedTo : null,
    publishesTo: Array.isArray(publishesTo) ? publishesTo.filter((p): p is string => typeof p === "string") : [],
  };
}

function duplicates(values: string[]): string[] {
  return [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
}

/** Cross-field rules: references resolve, names are unique, the 6x rule holds. */
function checkConsistency(c: Checker, s: Settings): void {
  const queueKeys = new Set(s.queues.map((q) => q.key));
  const functionsByName = new Map(s.functions.map((f) => [f.name, f]));

  for (const d of duplicates(s.queues.map((q) => q.key))) c.problems.push(`duplicate queue key "${d}"`);
  for (const d of duplicates(s.queues.flatMap((q) => [q.name, q.dlqName]))) {
    c.problems.push(`duplicate queue name "${d}"`);
  }
  for (const d of duplicates(s.queues.map((q) => q.queueUrlEnv))) c.problems.push(`duplicate queueUrlEnv "${d}"`);
  for (const d of duplicates(s.functions.map((f) => f.name))) c.problems.push(`duplicate function name "${d}"`);

  for (const q of s.queues) {
    if (!/^[A-Z][A-Z0-9_]*_QUEUE_URL$/.test(q.queueUrlEnv)) {
      c.problems.push(`queue "${q.key}": queueUrlEnv "${q.queueUrlEnv}" must look like <NAME>_QUEUE_URL`);
    }
    if (q.batchSize > SQS_BATCH_SIZE_WITHOUT_WINDOW_MAX && q.maximumBatchingWindowSeconds < 1) {
      c.problems.push(`queue "${q.key}": batchSize > ${SQS_BATCH_SIZE_WITHOUT_WINDOW_MAX} needs maximumBatchingWindowSeconds >= 1`);
    }
    const consumer = functionsByName.get(q.consumer);
    if (!consumer) {
      c.problems.push(`queue "${q.key}": consumer "${q.consumer}" is not a declared function`);
      continue;
    }
    if (consumer.subscribedTo !== q.key) {
      c.problems.push(`queue "${q.key}": its consumer "${q.consumer}" must declare subscribedTo "${q.key}"`);
    }
    const required = requiredVisibilityTimeoutSeconds(consumer.timeoutSeconds, q.maximumBatchingWindowSeconds);
    if (q.visibilityTimeoutSeconds < required) {
      c.problems.push(
        `queue "${q.key}": visibilityTimeoutSeconds ${q.visibilityTimeoutSeconds} < 6 x ${consumer.timeoutSeconds} s ` +
          `(timeout of "${consumer.name}") + ${q.maximumBatchingWindowSeconds} s batching window = ${required}`,
      );
    }
  }
  for (const f of s.functions) {
    if (f.subscribedTo !== null) {
      const q = s.queues.find((x) => x.key === f.subscribedTo);
      if (!q) c.problems.push(`function "${f.name}": subscribedTo "${f.subscribedTo}" is not a declared queue`);
      else if (q.consumer !== f.name) {
        c.problems.push(`function "${f.name}": queue "${q.key}" names "${q.consumer}" as its consumer`);
      }
    }
    for (const p of f.publishesTo) {
      if (!queueKeys.has(p)) c.problems.push(`function "${f.name}": publishesTo "${p}" is not a declared queue`);
      if (p === f.subscribedTo) c.problems.push(`function "${f.name}" must not publish to the queue it consumes`);
    }
  }
}

/** Parses and validates the declaration; throws SettingsError listing every problem. */
export function parseSettings(raw: unknown, file = "queues.json"): Settings {
  const c = new Checker();
  const root = c.record(raw, "queues.json");
  const settings: Settings = {
    appName: c.str(root, "appName", "queues.json"),
    operatorAuditLogGroup: c.str(root, "operatorAuditLogGroup", "queues.json"),
    queues: c.array(root["queues"], "queues").map((q, i) => parseQueue(c, q, i)),
    functions: c.array(root["functions"], "functions").map((f, i) => parseFunction(c, f, i)),
  };
  if (c.problems.length === 0) checkConsistency(c, settings);
  if (c.problems.length > 0) throw new SettingsError(file, c.problems);
  return settings;
}

export function loadSettings(file: string = DEFAULT_SETTINGS_PATH): Settings {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new SettingsError(file, [`cannot be read as JSON: ${(e as Error).message}`]);
  }
  return parseSettings(raw, file);
}

export function queueByKey(settings: Settings, key: string): QueueSpec {
  const q = settings.queues.find((x) => x.key === key);
  if (!q) throw new Error(`unknown queue key "${key}"`);
  return q;
}

/** The queues the API sends to (`publishedByApi`), in declaration order. */
export function apiPublishedQueues(settings: Settings): QueueSpec[] {
  return settings.queues.filter((q) => q.publishedByApi);
}

export function functionByName(settings: Settings, name: string): FunctionSpec {
  const f = settings.functions.find((x) => x.name === name);
  if (!f) throw new Error(`unknown function "${name}"`);
  return f;
}

/**
 * Queues in an order where every queue comes after the queues its consumer publishes to, so that
 * their URLs exist when the consumer's environment is built. Throws on a cycle.
 */
export function queuesInCreationOrder(settings: Settings): QueueSpec[] {
  const ordered: QueueSpec[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (q: QueueSpec, trail: string[]): void => {
    const s = state.get(q.key);
    if (s === "done") return;
    if (s === "visiting") throw new Error(`publish cycle between queues: ${[...trail, q.key].join(" -> ")}`);
    state.set(q.key, "visiting");
    for (const target of functionByName(settings, q.consumer).publishesTo) {
      visit(queueByKey(settings, target), [...trail, q.key]);
    }
    state.set(q.key, "done");
    ordered.push(q);
  };
  for (const q of settings.queues) visit(q, []);
  return ordered;
}
