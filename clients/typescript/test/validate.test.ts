/** Runtime validation: accepts exactly what the Rust consumers accept, names fields, never values. */
import * as assert from "node:assert/strict";
import { test } from "node:test";

import { schemas, type SchemaName } from "../src/generated/schemas";
import { check, checkWireMessage, interviewCompletedBody, interviewFailedBody, ContractViolationError } from "../src/index";

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
    assert.match(check("interview-completed", body)[0]!.problem, new RegExp(field));
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
  assert.deepEqual(checkWireMessage(body, { eventType: "interview.completed" }).map((i) => i.path), ["attributes"]);
  assert.deepEqual(checkWireMessage("{", { requestId: "r", eventType: "interview.completed" }), [{ path: "", problem: "body is not JSON" }]);
  assert.deepEqual(
    checkWireMessage(JSON.stringify({ interviewId: I, organizationId: O }), { requestId: "settlement-x", eventType: "report.generate" }),
    [],
  );
});

test("every contract schema compiles under ajv's strict mode (a new schema with an unknown keyword or format fails here)", () => {
  for (const name of Object.keys(schemas) as SchemaName[]) {
    assert.doesNotThrow(() => check(name, {}), name);
  }
});
