/**
 * Runtime validation against the contract's JSON Schemas (the same documents the types are
 * generated from, embedded in src/generated/schemas.ts), so the API cannot publish what the Rust
 * consumers would drop. Problems name the field and the rule, never the value: a failure reason or
 * transcript must not end up in a log line.
 */
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import addFormatsModule from "ajv-formats";

import { schemas, type SchemaName } from "./generated/schemas";
import type { EventType } from "./generated/message-attributes";

/**
 * What the Rust consumers accept as a datetime (sophia_contracts::Timestamp): RFC 3339 with an
 * upper-case `T` and a time zone (`Z` or `+hh:mm`). Stricter than ajv-formats' `date-time`, which
 * also takes a space, a lower-case `t` or `+hhmm`, all of which the consumer refuses.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

export function isConsumerDateTime(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const zoneOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  return (
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59 && zoneOk
  );
}

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

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as typeof addFormatsModule.default;

function buildAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false, verbose: false });
  addFormats(ajv);
  ajv.addFormat("date-time", { type: "string", validate: isConsumerDateTime });
  return ajv;
}

let ajv: Ajv2020 | undefined;
const compiled = new Map<SchemaName, ValidateFunction>();

/** Compiled on first use, one schema at a time (a publish never depends on the other schemas). */
function validator(schema: SchemaName): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    ajv ??= buildAjv();
    validate = ajv.compile(schemas[schema] as object);
    compiled.set(schema, validate);
  }
  return validate;
}

function issuesOf(errors: readonly ErrorObject[] | null | undefined): ContractIssue[] {
  return (errors ?? []).map((e) => ({ path: e.instancePath, problem: e.message ?? e.keyword }));
}

/** The problems of `value` under one contract schema (empty when valid). */
export function check(schema: SchemaName, value: unknown): ContractIssue[] {
  const validate = validator(schema);
  return validate(value) ? [] : issuesOf(validate.errors);
}

/** Throws a {@link ContractViolationError} unless `value` is valid under `schema`. */
export function assertValid(schema: SchemaName, value: unknown): void {
  const issues = check(schema, value);
  if (issues.length > 0) throw new ContractViolationError(schema, issues);
}

const BODY_SCHEMA: Record<EventType, SchemaName> = {
  "interview.completed": "interview-completed",
  "interview.failed": "interview-failed",
  "report.generate": "report-generate",
};

/**
 * Checks one queue message as it travels (the raw body text and the String attributes): the
 * attributes under message-attributes, the body under the schema its `eventType` names.
 */
export function checkWireMessage(body: string, attributes: Record<string, string | undefined>): ContractIssue[] {
  const attrIssues = check("message-attributes", attributes).map((i) => ({ ...i, path: `attributes${i.path}` }));
  if (attrIssues.length > 0) return attrIssues;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ path: "", problem: "body is not JSON" }];
  }
  return check(BODY_SCHEMA[attributes["eventType"] as EventType], parsed);
}
