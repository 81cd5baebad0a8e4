/**
 * Runtime validation against the contract's JSON Schemas (the same documents the types are
 * generated from, embedded in src/generated/schemas.ts), so the API cannot publish what the Rust
 * consumers would drop. Problems name the field and the rule, never the value: a failure reason or
 * transcript must not end up in a log line.
 *
 * The validators are compiled AHEAD OF TIME (scripts/compile-validators.ts, ajv standalone code, at
 * every build): no ajv at run time, nothing compiled on the first publish. The README's "Size and
 * first publish" has the measurements.
 */
import type { InterviewReportDocument } from "./generated/interview-report-document";
import type { EventType, MessageAttributes } from "./generated/message-attributes";
import { type QueueKey, queues } from "./generated/queues";
import type { SchemaName } from "./generated/schemas";
import type { InterviewCompleted, InterviewFailed, InterviewQueueMessage, ReportGenerate } from "./types";
import validators = require("./validators.js");

/** The type each contract schema validates (`isValid` and `assertValid` narrow to it). */
export interface SchemaTypes {
  "interview-completed": InterviewCompleted;
  "interview-failed": InterviewFailed;
  "interview-queue-message": InterviewQueueMessage;
  "interview-report-document": InterviewReportDocument;
  "message-attributes": MessageAttributes;
  "report-generate": ReportGenerate;
}
/** Every schema has its type: a schema added to the contract fails the type check here until it is named above. */
type EverySchemaTyped = [SchemaName] extends [keyof SchemaTypes] ? true : never;
const everySchemaTyped: EverySchemaTyped = true;
void everySchemaTyped;

export { isConsumerDateTime } from "./formats";

export interface ContractIssue {
  /** JSON Pointer of the field (`/durationSeconds`), or `` for the body itself. */
  path: string;
  /** The rule that failed, e.g. `must match format "date-time"`. Never the value. */
  problem: string;
}

/** A message that the consumers would drop. The message names fields and rules, never values. */
export class ContractViolationError extends Error {
  override readonly name = "ContractViolationError";
  constructor(
    readonly schema: SchemaName,
    readonly issues: readonly ContractIssue[],
  ) {
    super(`${schema} contract violated: ${issues.map((i) => `${i.path || "(body)"} ${i.problem}`).join("; ")}`);
  }
}

/** The value at a JSON Pointer (`/a/0`), if there is one. */
function at(value: unknown, pointer: string): unknown {
  let current = value;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * The problems of `value` under one contract schema (empty when valid). Each issue names the
 * field itself, ready for a 400 response: a missing field's `path` is the field's own
 * (`/durationSeconds`, "is required"), and NaN or Infinity where a number belongs "must be a
 * finite number" (JSON has neither: `JSON.stringify` would send `null`).
 */
export function check(schema: SchemaName, value: unknown): ContractIssue[] {
  const validate = validators[schema];
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; type?: string };
    if (e.keyword === "required" && typeof params.missingProperty === "string") {
      return { path: `${e.instancePath}/${params.missingProperty.replace(/~/g, "~0").replace(/\//g, "~1")}`, problem: "is required" };
    }
    if (e.keyword === "type" && params.type === "number") {
      const found = at(value, e.instancePath);
      if (typeof found === "number" && !Number.isFinite(found)) return { path: e.instancePath, problem: "must be a finite number" };
    }
    return { path: e.instancePath, problem: e.message ?? e.keyword };
  });
}

/** Whether `value` is valid under `schema`; a type guard (`if (isValid("interview-failed", m)) m.failureReason`). */
export function isValid<S extends SchemaName>(schema: S, value: unknown): value is SchemaTypes[S] {
  return validators[schema](value);
}

/** Throws a {@link ContractViolationError} unless `value` is valid under `schema`; after it, `value` has the schema's type. */
export function assertValid<S extends SchemaName>(schema: S, value: unknown): asserts value is SchemaTypes[S] {
  const issues = check(schema, value);
  if (issues.length > 0) throw new ContractViolationError(schema, issues);
}

/** `value` typed when valid under `schema`, else its issues (`check`'s): parse, don't validate. */
export function parseContract<S extends SchemaName>(schema: S, value: unknown): { ok: true; value: SchemaTypes[S] } | { ok: false; issues: ContractIssue[] } {
  const issues = check(schema, value);
  return issues.length === 0 ? { ok: true, value: value as SchemaTypes[S] } : { ok: false, issues };
}

const BODY_SCHEMA: Record<EventType, SchemaName> = {
  "interview.completed": "interview-completed",
  "interview.failed": "interview-failed",
  "report.generate": "report-generate",
};

/**
 * The messages each declared queue carries, keyed by the generated queue union
 * (declarations/queues.json): a queue added there fails the type check here, after
 * `scripts/regenerate`, until its event types are named; a test checks that every event type has
 * exactly one queue.
 */
export const QUEUE_EVENT_TYPES: Readonly<Record<QueueKey, readonly EventType[]>> = {
  interviewCompleted: ["interview.completed", "interview.failed"],
  reportGenerate: ["report.generate"],
};

/**
 * Checks one queue message as it travels (the raw body text and the String attributes): the
 * attributes under message-attributes, the body under the schema its `eventType` names; with
 * `queue`, also that the queue carries that event type ({@link QUEUE_EVENT_TYPES}).
 */
export function checkWireMessage(body: string, attributes: Record<string, string | undefined>, queue?: QueueKey): ContractIssue[] {
  const attrIssues = check("message-attributes", attributes).map((i) => ({ ...i, path: `attributes${i.path}` }));
  if (attrIssues.length > 0) return attrIssues;
  const eventType = attributes["eventType"] as EventType;
  if (queue !== undefined && !QUEUE_EVENT_TYPES[queue].includes(eventType)) {
    return [{ path: "attributes/eventType", problem: `is not a message the ${queues[queue].name} queue carries` }];
  }
  if (typeof body !== "string") return [{ path: "", problem: "body must be a string" }];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ path: "", problem: "body is not JSON" }];
  }
  return check(BODY_SCHEMA[eventType], parsed);
}
