/**
 * The admin retry against nx-27017 (the local MongoDB wire server) with the `mongodb` driver (a
 * devDependency: the package itself brings none), mirroring `sophia-ops report retry
 * [--reset-attempts]` (functions/reports/src/admin.rs). The end-to-end path (reset, re-publish,
 * the Rust consumer generating the report) is tests/it/typescript_contract.rs.
 */
import * as assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { type Collection, type Db, MongoClient, ObjectId } from "mongodb";

import {
  AdminRetryError,
  check,
  ContractViolationError,
  MAX_REPORT_ATTEMPTS,
  INTERVIEWS_COLLECTION,
  isResettable,
  REPORT_LEASE_SECONDS,
  reportHeldUntil,
  type PublishContext,
  type PublishResult,
  REPORTS_COLLECTION,
  type ReportGenerateInput,
  resetAttemptsOperation,
  retryReportGeneration,
  schemas,
  type StoredInterviewReportDocument,
  type StoredReportDateField,
  type StoredReportObjectIdField,
} from "../src/index";
import { type Nx, startNx } from "./support/nx";

let client: MongoClient;
let db: Db;
let interviews: Collection;
let reports: Collection;
const NOW = new Date("2026-12-04T06:00:00.000Z");

// SOPHIA_TS_MONGODB_URI: a real MongoDB instead of nx-27017 (e.g. CI's, mongodb://localhost:27017).
const REAL_MONGODB = process.env["SOPHIA_TS_MONGODB_URI"];
let nx: Nx | undefined;

before(async () => {
  if (!REAL_MONGODB) nx = await startNx();
  client = await new MongoClient(REAL_MONGODB ?? nx!.uri).connect();
  db = client.db(`admin_${process.pid}`);
  interviews = db.collection(INTERVIEWS_COLLECTION);
  reports = db.collection(REPORTS_COLLECTION);
});

after(async () => {
  await client?.close();
  nx?.stop();
});

function recorder() {
  const sent: { input: ReportGenerateInput; context: PublishContext | undefined }[] = [];
  return {
    sent,
    publishReportGenerate: async (input: ReportGenerateInput, context?: PublishContext): Promise<PublishResult> => {
      sent.push({ input, context });
      return { status: "sent", messageId: `m-${sent.length}`, eventType: "report.generate", body: JSON.stringify(input) };
    },
  };
}

async function interview(report?: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const i = new ObjectId();
  const o = new ObjectId();
  await interviews.insertOne({ _id: i, organizationId: o, status: "COMPLETED", deletedAt: null, ...extra });
  if (report) await reports.insertOne({ _id: new ObjectId(), interviewId: i, organizationId: o, ...report });
  return { interviewId: i.toHexString(), organizationId: o.toHexString(), oid: i };
}

const retry = (ids: { interviewId: string; organizationId: string }, resetAttempts: boolean, publisher = recorder()) =>
  retryReportGeneration({
    ...ids,
    resetAttempts,
    operator: { by: "admin@example.com" },
    interviews,
    reports,
    objectId: (hex) => new ObjectId(hex),
    publisher,
    now: () => NOW,
  });

test("a FAILED report at 3 attempts: refused without a reset; with it, attempts back to 0 and report.generate re-published", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: MAX_REPORT_ATTEMPTS, createdAt: NOW, lastError: "openai: rate limited", errorKind: "rate_limited", transientFailures: 1 });
  const publisher = recorder();
  await assert.rejects(retry(ids, false, publisher), (e: unknown) => e instanceof AdminRetryError && e.kind === "attempts-exhausted");
  assert.equal(publisher.sent.length, 0, "nothing published");

  const outcome = await retry(ids, true, publisher);
  assert.equal(outcome.outcome, "published");
  assert.ok(outcome.outcome === "published" && outcome.attemptsReset && outcome.requestId === `admin-retry-${ids.interviewId}`);
  assert.deepEqual(publisher.sent, [
    { input: { interviewId: ids.interviewId, organizationId: ids.organizationId }, context: { requestId: `admin-retry-${ids.interviewId}` } },
  ]);
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.equal(stored!["status"], "FAILED", "the consumer's claim moves it on, not the reset");
  assert.equal(stored!["attemptCount"], 0);
  assert.deepEqual(stored!["attemptsResetAt"], NOW);
  assert.deepEqual(stored!["updatedAt"], NOW);
  // Who and when, as `sophia-ops report retry --reset-attempts` records it.
  const mark = { at: NOW, by: "admin@example.com", via: "api-admin-retry", attemptsBefore: 3, statusBefore: "FAILED" };
  assert.deepEqual(stored!["lastRetry"], mark);
  assert.deepEqual(stored!["retries"], [mark]);
  // What the retry wrote is the documented layout: the schema generated from the Rust type (which
  // refuses any field it does not declare: additionalProperties false) and the stored type.
  assert.deepEqual(check("interview-report-document", jsonForm(stored)), []);
  assert.deepEqual(check("interview-report-document", jsonForm({ ...stored, lastRetryBy: "x" })).map((i) => i.problem), ["must NOT have additional properties"]);
  const typed = stored as unknown as StoredInterviewReportDocument<ObjectId>;
  const at: Date | undefined = typed.lastRetry?.at;
  assert.deepEqual([at, typed.retries?.map((r) => r.via)], [NOW, ["api-admin-retry"]]);
});

/** A driver's document in its JSON form (ObjectIds as hex, Dates as ISO-8601), as the schema states it. */
function jsonForm(value: unknown): unknown {
  if (value instanceof ObjectId) return value.toHexString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(jsonForm);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonForm(v)]));
  return value;
}

test("PROCESSING under a live lease (a worker is generating it) is refused, untouched", async () => {
  const live = await interview({ status: "PROCESSING", attemptCount: 1, leaseId: new ObjectId(), leaseExpiresAt: new Date(NOW.getTime() + 60_000) });
  await assert.rejects(retry(live, true), (e: unknown) => e instanceof AdminRetryError && e.kind === "not-failed");
  assert.equal((await reports.findOne({ interviewId: live.oid }))!["attemptCount"], 1);
  assert.ok(isResettable({ status: "PROCESSING", leaseExpiresAt: new Date(NOW.getTime() - 1) }, NOW), "expired: resettable");
  assert.ok(!isResettable({ status: "PROCESSING", leaseExpiresAt: NOW }, NOW), "a lease ending now still holds it (the filter's $lt)");
});

test("a PROCESSING report without a lease is held until its last write plus the lease, as the consumer's claim rule says", async () => {
  const leaseMs = REPORT_LEASE_SECONDS * 1000;
  const at = (delta: number) => new Date(NOW.getTime() + delta);
  assert.deepEqual(reportHeldUntil({ status: "PROCESSING", updatedAt: at(-1000), createdAt: at(-10 * leaseMs) }), at(leaseMs - 1000));
  assert.deepEqual(reportHeldUntil({ status: "PROCESSING", createdAt: at(-1000) }), at(leaseMs - 1000));
  assert.equal(reportHeldUntil({ status: "PROCESSING" }), undefined, "no date at all: nobody holds it");
  assert.equal(reportHeldUntil({ status: "FAILED", leaseExpiresAt: at(5) }), undefined, "only PROCESSING is held");
  assert.ok(!isResettable({ status: "PROCESSING", updatedAt: at(-1000) }, NOW), "written within the lease: held");
  assert.ok(isResettable({ status: "PROCESSING", updatedAt: at(-leaseMs - 1) }, NOW), "lapsed: the consumer would reclaim it, so a reset applies");
  assert.ok(isResettable({ status: "PROCESSING" }, NOW), "no date: nobody holds it");
  // End to end on the server: the reset writes the ended claim's end as leaseExpiresAt, so its
  // own updatedAt does not hold the report again.
  const lastWrite = at(-leaseMs - 60_000);
  const stuck = await interview({ status: "PROCESSING", attemptCount: 3, leaseId: null, leaseExpiresAt: null, updatedAt: lastWrite });
  const outcome = await retry(stuck, true);
  assert.ok(outcome.outcome === "published" && outcome.attemptsReset, JSON.stringify(outcome));
  const stored = await reports.findOne({ interviewId: stuck.oid });
  assert.equal(stored!["attemptCount"], 0);
  assert.deepEqual(stored!["leaseExpiresAt"], new Date(lastWrite.getTime() + leaseMs));
  assert.ok(isResettable(stored!, NOW), "still nobody's after the reset");
});

// nx-27017 gap: a filter with an ObjectId equality AND a date comparison ({leaseId: <oid>,
// leaseExpiresAt: {$lt: <date>}}) matches nothing there, so the compare-and-set of an expired
// PROCESSING report cannot be run against it. Run it on a real MongoDB:
//   SOPHIA_TS_MONGODB_URI=mongodb://localhost:27017 npm test
test("PROCESSING under an expired lease (its worker is gone) is reset", { skip: REAL_MONGODB ? false : "SKIPPED: needs a real MongoDB (nx-27017 does not match {leaseId: <oid>, leaseExpiresAt: {$lt: <date>}}); set SOPHIA_TS_MONGODB_URI" }, async () => {
  const expired = await interview({ status: "PROCESSING", attemptCount: 3, leaseId: new ObjectId(), leaseExpiresAt: new Date(NOW.getTime() - 1000) });
  const outcome = await retry(expired, true);
  assert.ok(outcome.outcome === "published" && outcome.attemptsReset);
  const stored = await reports.findOne({ interviewId: expired.oid });
  assert.equal(stored!["attemptCount"], 0);
  assert.equal((stored!["lastRetry"] as Record<string, unknown>)["statusBefore"], "PROCESSING");
});

test("a consumer claiming the report between the read and the reset: decided again from the new state", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3 });
  // A collection whose first write finds the report claimed by a worker (live lease).
  let writes = 0;
  const racing = {
    findOne: (f: Record<string, unknown>) => reports.findOne(f),
    updateOne: async (f: Record<string, unknown>, u: Record<string, unknown>) => {
      if (writes++ === 0) {
        await reports.updateOne(
          { interviewId: ids.oid },
          { $set: { status: "PROCESSING", attemptCount: 4, leaseId: new ObjectId(), leaseExpiresAt: new Date(NOW.getTime() + 60_000) } },
        );
      }
      return reports.updateOne(f, u);
    },
  };
  await assert.rejects(
    retryReportGeneration({ ...ids, resetAttempts: true, operator: { by: "a" }, interviews, reports: racing, objectId: (h) => new ObjectId(h), publisher: recorder(), now: () => NOW }),
    (e: unknown) => e instanceof AdminRetryError && e.kind === "not-failed",
  );
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.equal(stored!["attemptCount"], 4, "the worker's claim stands");
  assert.equal(stored!["lastRetry"], undefined);
});

test("no report yet or attempts left: published without a reset; a reset needs a FAILED report", async () => {
  for (const report of [undefined, { status: "FAILED", attemptCount: 1 }, { status: "PROCESSING", attemptCount: 1 }]) {
    const ids = await interview(report);
    const publisher = recorder();
    const outcome = await retry(ids, false, publisher);
    assert.ok(outcome.outcome === "published" && !outcome.attemptsReset, JSON.stringify(report));
    assert.equal(publisher.sent.length, 1);
  }
  for (const report of [undefined, { status: "PROCESSING", attemptCount: 3, updatedAt: NOW }, { status: "NOT_STARTED", attemptCount: 0 }]) {
    const ids = await interview(report);
    await assert.rejects(retry(ids, true), (e: unknown) => e instanceof AdminRetryError && e.kind === "not-failed", JSON.stringify(report));
  }
});

test("a COMPLETED report: nothing published, with or without a reset", async () => {
  const ids = await interview({ status: "COMPLETED", attemptCount: 1 });
  for (const reset of [false, true]) {
    const publisher = recorder();
    assert.deepEqual(await retry(ids, reset, publisher), { outcome: "already-completed" });
    assert.equal(publisher.sent.length, 0);
  }
});

test("an interview absent, soft-deleted or another organization's: interview-not-found, nothing written", async () => {
  const deleted = await interview({ status: "FAILED", attemptCount: 3 }, { deletedAt: NOW });
  const other = await interview({ status: "FAILED", attemptCount: 3 });
  for (const ids of [
    { interviewId: new ObjectId().toHexString(), organizationId: new ObjectId().toHexString() },
    deleted,
    { interviewId: other.interviewId, organizationId: new ObjectId().toHexString() },
  ]) {
    await assert.rejects(retry(ids, true), (e: unknown) => e instanceof AdminRetryError && e.kind === "interview-not-found");
  }
  assert.equal((await reports.findOne({ interviewId: other.oid }))!["attemptCount"], 3);
});

test("the reset is plain data: a compare-and-set on the state read, the Rust side's fields", () => {
  const op = resetAttemptsOperation({ _id: "id-1", status: "FAILED", attemptCount: 3 }, { by: "ops", via: "report-retry" }, NOW);
  const mark = { at: NOW, by: "ops", via: "report-retry", attemptsBefore: 3, statusBefore: "FAILED" };
  assert.deepEqual(op, {
    filter: { _id: "id-1", status: "FAILED", attemptCount: 3 },
    update: { $set: { attemptCount: 0, attemptsResetAt: NOW, updatedAt: NOW, lastRetry: mark }, $push: { retries: mark } },
  });
  const expired = new Date(NOW.getTime() - 1);
  const processing = resetAttemptsOperation({ _id: "id-2", status: "PROCESSING", leaseId: "l", leaseExpiresAt: expired }, { by: "x" }, NOW);
  const stale = new Date(NOW.getTime() - REPORT_LEASE_SECONDS * 1000);
  assert.deepEqual(processing.filter, {
    _id: "id-2",
    status: "PROCESSING",
    attemptCount: null,
    leaseId: "l",
    $or: [
      { leaseExpiresAt: { $lt: NOW } },
      { leaseExpiresAt: null, updatedAt: { $lt: stale } },
      { leaseExpiresAt: null, updatedAt: null, createdAt: { $lt: stale } },
      { leaseExpiresAt: null, updatedAt: null, createdAt: null },
    ],
  });
  assert.deepEqual((processing.update["$set"] as { leaseExpiresAt: Date }).leaseExpiresAt, expired, "the ended claim's end, unchanged");
  assert.equal((processing.update["$set"] as { lastRetry: { via: string } }).lastRetry.via, "api-admin-retry");
});

test("the operator is required: who retried is recorded", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3 });
  for (const operator of [undefined, null, {}, { by: "" }, { by: 7 }]) {
    await assert.rejects(
      retryReportGeneration({ ...ids, resetAttempts: true, operator: operator as never, interviews, reports, objectId: (h) => new ObjectId(h), publisher: recorder() }),
      ContractViolationError,
    );
  }
});

/** The document schema's fields by kind, at run time (the types take the same lists from it). */
function fieldsOf(kind: "date" | "objectId"): string[] {
  const props = schemas["interview-report-document"].properties as Record<string, { format?: string; pattern?: string }>;
  return Object.keys(props).filter((k) => (kind === "date" ? props[k]!.format === "date-time" : props[k]!.pattern === "^[0-9a-fA-F]{24}$"));
}

test("stored types: what the driver returns for a report is StoredInterviewReportDocument (ObjectId and Date), not the JSON form", async () => {
  const typed = db.collection<StoredInterviewReportDocument<ObjectId>>(`${REPORTS_COLLECTION}_types`);
  const at = new Date("2026-12-04T05:00:00.000Z");
  const doc: StoredInterviewReportDocument<ObjectId> = {
    _id: new ObjectId(),
    interviewId: new ObjectId(),
    organizationId: new ObjectId(),
    status: "FAILED",
    attemptCount: 3,
    leaseId: new ObjectId(),
    leaseExpiresAt: at,
    lastError: "openai: rate limited",
    errorKind: "rate_limited",
    lastErrorAt: at,
    retentionExpiresAt: at,
    createdAt: at,
    updatedAt: at,
    completedAt: null,
    attemptsResetAt: at,
    erasedAt: at,
  };
  await typed.insertOne(doc);
  const got = await typed.findOne({ _id: doc._id });
  assert.ok(got);
  // Compile time: the driver's result is the stored type; its fields are a Date and an ObjectId.
  const createdAt: Date = got.createdAt;
  const interviewId: ObjectId = got.interviewId;
  assert.equal(createdAt.getTime(), at.getTime());
  assert.equal(interviewId.toHexString(), doc.interviewId.toHexString());
  // Run time: every field the schema calls a date / an ObjectId comes back as one.
  const dates = fieldsOf("date");
  const ids = fieldsOf("objectId");
  const sameDates: StoredReportDateField[] = dates as StoredReportDateField[];
  const sameIds: StoredReportObjectIdField[] = ids as StoredReportObjectIdField[];
  assert.deepEqual(sameDates.sort(), ["attemptsResetAt", "completedAt", "createdAt", "erasedAt", "lastErrorAt", "leaseExpiresAt", "retentionExpiresAt", "updatedAt"]);
  assert.deepEqual(sameIds.sort(), ["_id", "interviewId", "leaseId", "organizationId"]);
  const raw = got as unknown as Record<string, unknown>;
  for (const k of dates) assert.ok(raw[k] === null || raw[k] instanceof Date, `${k}: ${typeof raw[k]}`);
  for (const k of ids) assert.ok(raw[k] instanceof ObjectId, `${k}: ${typeof raw[k]}`);
  assert.equal(typeof raw["attemptCount"], "number");
  await typed.deleteOne({ _id: doc._id });
});
