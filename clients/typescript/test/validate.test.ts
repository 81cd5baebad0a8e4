/** Runtime validation: accepts exactly what the Rust consumers accept, names fields, never values. */
import * as assert from "node:assert/strict";
import { test } from "node:test";

import { schemas, type SchemaName } from "../src/generated/schemas";
// ajv and ajv-formats are devDependencies: the reference the compiled validators are held to.
import Ajv2020 from "ajv/dist/2020";
import addFormatsModule from "ajv-formats";
import { fullFormats } from "ajv-formats/dist/formats";

import { codePointLength, formats } from "../src/formats";
import {
  assertValid,
  isValid,
  parseContract,
  check,
  checkWireMessage,
  interviewCompletedBody,
  interviewFailedBody,
  ContractViolationError,
  FAILURE_REASON_MAX_LENGTH,
  isConsumerDateTime,
  EVENT_TYPES,
  QUEUE_EVENT_TYPES,
  queues,
} from "../src/index";
import validators = require("../src/validators.js");

const I = "65a1b2c3d4e5f60718293a4b";
const O = "65a1b2c3d4e5f60718293a4c";
const completed = (durationSeconds: unknown, completedAt: unknown = "2026-12-02T17:30:00.000Z") => ({
  interviewId: I,
  organizationId: O,
  completedAt,
  durationSeconds,
});

test("durationSeconds: any finite non-negative number up to 2^53-1, fractions included", () => {
  for (const d of [0, 59, 59.999, 60, 119.5, 0.001, Number.MAX_SAFE_INTEGER]) {
    assert.deepEqual(check("interview-completed", completed(d)), [], String(d));
  }
  for (const d of [-1, -0.5, 2 ** 53, 1e300, Number.NaN, Number.POSITIVE_INFINITY, "60", null, true]) {
    const issues = check("interview-completed", completed(d));
    assert.equal(issues.length, 1, String(d));
    assert.equal(issues[0]!.path, "/durationSeconds");
  }
});

test("datetimes: what the consumer parses (RFC 3339, upper-case T, a zone), nothing it refuses", () => {
  for (const t of ["2026-12-02T17:30:00Z", "2026-12-02T17:30:00.123Z", "2026-12-02T18:30:00.123456+01:00"]) {
    assert.deepEqual(check("interview-completed", completed(1, t)), [], t);
  }
  for (const t of ["2026-12-02", "2026-12-02T17:30:00", "2026-12-02 17:30:00Z", "2026-12-02t17:30:00Z", "2026-12-02T17:30:00+0100", "2026-02-30T17:30:00Z", "2026-13-02T17:30:00Z", "yesterday", ""]) {
    assert.deepEqual(check("interview-completed", completed(1, t)).map((i) => i.path), ["/completedAt"], t);
  }
});

test("ids are 24 hex characters; every field is required; the union tells the two shapes apart", () => {
  assert.deepEqual(check("interview-completed", { ...completed(1), interviewId: "65a1b2c3" }).map((i) => i.path), ["/interviewId"]);
  for (const field of ["interviewId", "organizationId", "completedAt", "durationSeconds"]) {
    const body: Record<string, unknown> = completed(1);
    delete body[field];
    // The field's own path, ready for a 400 response (ajv reports it at the object, `""`).
    assert.deepEqual(check("interview-completed", body), [{ path: `/${field}`, problem: "is required" }]);
  }
  const failed = { type: "interview.failed", interviewId: I, organizationId: O, failureReason: "x", failedAt: "2026-12-02T17:30:00Z" };
  assert.deepEqual(check("interview-queue-message", failed), []);
  assert.deepEqual(check("interview-queue-message", completed(1)), []);
  assert.notDeepEqual(check("interview-queue-message", { ...completed(1), type: "interview.completed" }), []);
});

test("the schemas accept extra keys (the consumer ignores them); the publishers' inputs refuse them (publish.test.ts)", () => {
  assert.deepEqual(check("interview-completed", { ...completed(1), extra: { x: 1 } }), []);
});

test("a violation names the field and the rule, never the value", () => {
  const marker = "MARKER-candidate-text";
  assert.throws(
    () => interviewFailedBody({ interviewId: marker, organizationId: O, failureReason: marker, failedAt: marker }),
    (e: unknown) => {
      assert.ok(e instanceof ContractViolationError);
      assert.ok(!e.message.includes(marker), e.message);
      assert.deepEqual(e.issues.map((i) => i.path).sort(), ["/failedAt", "/interviewId"]);
      return true;
    },
  );
  assert.throws(() => interviewCompletedBody({ interviewId: I, organizationId: O, durationSeconds: Number.NaN }), ContractViolationError);
  assert.throws(() => interviewCompletedBody({ interviewId: I, organizationId: O, durationSeconds: 1, completedAt: new Date(Number.NaN) }), /completedAt/);
});

test("checkWireMessage: attributes and the body its eventType names", () => {
  const body = JSON.stringify(completed(119.5));
  assert.deepEqual(checkWireMessage(body, { requestId: "r", eventType: "interview.completed" }), []);
  assert.deepEqual(checkWireMessage(body, { requestId: "r", eventType: "interview.failed" }).length > 0, true);
  assert.deepEqual(checkWireMessage(body, { eventType: "interview.completed" }).map((i) => i.path), ["attributes/requestId"]);
  assert.deepEqual(checkWireMessage("{", { requestId: "r", eventType: "interview.completed" }), [{ path: "", problem: "body is not JSON" }]);
  assert.deepEqual(
    checkWireMessage(JSON.stringify({ interviewId: I, organizationId: O }), { requestId: "settlement-x", eventType: "report.generate" }),
    [],
  );
});

test("checkWireMessage with a queue: only the event types that queue carries; every event type has exactly one queue", () => {
  const body = JSON.stringify(completed(119.5));
  const attributes = { requestId: "r", eventType: "interview.completed" };
  assert.deepEqual(checkWireMessage(body, attributes, "interviewCompleted"), []);
  assert.deepEqual(checkWireMessage(body, attributes, "reportGenerate"), [
    { path: "attributes/eventType", problem: "is not a message the report-generate queue carries" },
  ]);
  assert.deepEqual(Object.keys(QUEUE_EVENT_TYPES).sort(), Object.keys(queues).sort());
  const carried = Object.values(QUEUE_EVENT_TYPES).flat();
  assert.deepEqual([...carried].sort(), [...EVENT_TYPES].sort());
});

test("every contract schema has its ahead-of-time validator (strict mode: an unknown keyword or format fails the build)", () => {
  for (const name of Object.keys(schemas) as SchemaName[]) {
    assert.doesNotThrow(() => check(name, {}), name);
  }
});

test("the ahead-of-time validators give the verdicts and the issues of ajv compiling the schemas at run time (no check lost)", () => {
  // What the package did at run time before the validators were compiled at build time.
  const addFormats = ((addFormatsModule as { default?: unknown }).default ?? addFormatsModule) as (ajv: unknown) => void;
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false, verbose: false });
  addFormats(ajv);
  ajv.addFormat("date-time", { type: "string", validate: isConsumerDateTime });
  const failed = { type: "interview.failed", interviewId: I, organizationId: O, failureReason: "x", failedAt: "2026-12-02T17:30:00Z" };
  const values: unknown[] = [
    null, 0, "x", [], {}, true,
    completed(0), completed(59.999), completed(-1), completed(2 ** 53), completed("60"), completed(Number.NaN),
    completed(1, "2026-12-02 17:30:00Z"), completed(1, "2026-02-30T17:30:00Z"), completed(1, "2026-12-02T18:30:00.1+01:00"),
    { ...completed(1), interviewId: "65a1" }, { ...completed(1), extra: 1 }, { ...completed(1), type: "interview.completed" },
    failed, { ...failed, type: "INTERVIEW.FAILED" }, { ...failed, failureReason: 3 }, { ...failed, failedAt: undefined },
    { interviewId: I, organizationId: O }, { interviewId: I }, { requestId: "r", eventType: "report.generate" },
    { requestId: "", eventType: "interview.completed" }, { requestId: "r", eventType: "interview.started" },
    { attemptCount: 2 ** 31, status: "FAILED" }, { attemptCount: 1.5 }, { attemptCount: 3, status: "COMPLETED" },
    { ...failed, failureReason: "\u{1F600}".repeat(4096) }, { ...failed, failureReason: "x".repeat(4097) },
    { ...failed, failureReason: "\uD800".repeat(4097) },
  ];
  let compared = 0;
  for (const name of Object.keys(schemas) as SchemaName[]) {
    const runtime = ajv.compile(schemas[name] as object);
    for (const value of values) {
      const raw = (errors: typeof runtime.errors) => (errors ?? []).map((e) => ({ path: e.instancePath, keyword: e.keyword, message: e.message, params: e.params }));
      const expected = runtime(value) ? [] : raw(runtime.errors);
      const compiled = validators[name];
      assert.deepEqual(compiled(value) ? [] : raw(compiled.errors as typeof runtime.errors), expected, `${name}: ${JSON.stringify(value)}`);
      compared++;
    }
  }
  assert.ok(compared >= Object.keys(schemas).length * values.length);
});

test("a 400 can use the issues: a missing field's path names it; NaN and Infinity are 'not a finite number'", () => {
  for (const missing of ["failureReason", "organizationId"]) {
    const body: Record<string, unknown> = { type: "interview.failed", interviewId: I, organizationId: O, failureReason: "x", failedAt: "2026-12-02T17:30:00Z" };
    delete body[missing];
    assert.deepEqual(check("interview-failed", body), [{ path: `/${missing}`, problem: "is required" }]);
  }
  for (const n of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.deepEqual(check("interview-completed", completed(n)), [{ path: "/durationSeconds", problem: "must be a finite number" }], String(n));
    assert.throws(
      () => interviewCompletedBody({ interviewId: I, organizationId: O, durationSeconds: n }),
      (e: unknown) => e instanceof ContractViolationError && e.message === "interview-completed contract violated: /durationSeconds must be a finite number",
    );
  }
  assert.deepEqual(check("interview-completed", completed("60")), [{ path: "/durationSeconds", problem: "must be number" }], "a string keeps ajv's words");
});

test("failureReason: at most FAILURE_REASON_MAX_LENGTH (4096) code points, as the Rust contract counts them", () => {
  assert.equal(FAILURE_REASON_MAX_LENGTH, 4096);
  const failed = (failureReason: string) => ({ type: "interview.failed", interviewId: I, organizationId: O, failureReason, failedAt: "2026-12-02T17:30:00Z" });
  assert.deepEqual(check("interview-failed", failed("x".repeat(4096))), []);
  assert.deepEqual(check("interview-failed", failed("\u{1F600}".repeat(4096))), [], "a surrogate pair is one character");
  assert.deepEqual(check("interview-failed", failed("x".repeat(4097))), [{ path: "/failureReason", problem: "must NOT have more than 4096 characters" }]);
  assert.equal(codePointLength("a\u{1F600}\uD800b"), 4);
});

test("int32 and int64 are ajv-formats' own definitions", () => {
  for (const v of [0, 1.5, -(2 ** 31), 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY]) {
    for (const name of ["int32", "int64"] as const) {
      assert.equal(formats[name].validate(v), (fullFormats[name] as { validate: (v: number) => boolean }).validate(v), `${name} ${v}`);
    }
  }
});

test("isValid, assertValid and parseContract narrow a checked value to the schema's type", () => {
  const raw: unknown = JSON.parse(JSON.stringify({ type: "interview.failed", interviewId: "65a1b2c3d4e5f60718293a4b", organizationId: "65a1b2c3d4e5f60718293a4c", failureReason: "bot could not join", failedAt: "2026-12-02T17:30:00.000Z" }));
  assert.ok(isValid("interview-failed", raw));
  // Compile time: after the guard `raw` is an InterviewFailed (a string field, no cast).
  const reason: string = raw.failureReason;
  assert.equal(reason, "bot could not join");
  const queued: unknown = raw;
  assertValid("interview-queue-message", queued);
  assert.equal(queued.type === "interview.failed" ? queued.failedAt : queued.completedAt, "2026-12-02T17:30:00.000Z");
  const parsed = parseContract("report-generate", { interviewId: "x", organizationId: "65a1b2c3d4e5f60718293a4c" });
  assert.deepEqual(parsed.ok ? [] : parsed.issues.map((i) => i.path), ["/interviewId"]);
  const good = parseContract("report-generate", { interviewId: "65a1b2c3d4e5f60718293a4b", organizationId: "65a1b2c3d4e5f60718293a4c" });
  assert.equal(good.ok ? good.value.interviewId : undefined, "65a1b2c3d4e5f60718293a4b");
  assert.equal(isValid("interview-failed", { ...(raw as object), failedAt: "yesterday" }), false);
});
