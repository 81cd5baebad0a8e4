/**
 * The admin retry against nx-27017 (the local MongoDB wire server) with the `mongodb` driver (a
 * devDependency: the package itself brings none), mirroring `sophia-ops report retry
 * [--reset-attempts]` (functions/reports/src/admin.rs). The end-to-end path (reset, re-publish,
 * the Rust consumer generating the report) is tests/it/typescript_contract.rs.
 *
 * Every case runs on both servers the tests have: nx-27017 by default, a real MongoDB with
 * SOPHIA_TS_MONGODB_URI (CI's service). No case is skipped on nx-27017: the retry's
 * compare-and-set pins ObjectId, string, number and date fields by equality plus, for PROCESSING,
 * date comparisons, which nx-27017 (through scripts/tools/nx_launcher.py) matches as MongoDB does.
 */
import * as assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { SQSClient } from "@aws-sdk/client-sqs";
import { type Collection, type Db, MongoClient, ObjectId } from "mongodb";

import { readFileSync } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";

import {
  ADMIN_RETRY_RESULT_KINDS,
  type AdminRetryResult,
  adminRetryResponseBody,
  check,
  InterviewQueuePublisher,
  MAX_REPORT_ATTEMPTS,
  INTERVIEWS_COLLECTION,
  isResettable,
  queueRetryOperation,
  REPORT_LEASE_SECONDS,
  reportHeldUntil,
  reportRetryQueuedAt,
  type PublishContext,
  type PublishResult,
  REPORTS_COLLECTION,
  type ReportGenerateInput,
  type ReportGeneratePublisher,
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

const retry = (ids: { interviewId: string; organizationId: string }, resetAttempts: boolean, publisher: ReportGeneratePublisher = recorder(), now = NOW) =>
  retryReportGeneration({
    ...ids,
    resetAttempts,
    operator: { by: "admin@example.com" },
    interviews,
    reports,
    objectId: (hex) => new ObjectId(hex),
    publisher,
    now: () => now,
  });

/** The result's kind, code and status, and whether the code and status are the declared ones. */
function expectKind<K extends AdminRetryResult["kind"]>(result: AdminRetryResult, kind: K): Extract<AdminRetryResult, { kind: K }> {
  assert.equal(result.kind, kind, JSON.stringify(result));
  assert.equal(result.code, ADMIN_RETRY_RESULT_KINDS[kind].code);
  assert.equal(result.httpStatus, ADMIN_RETRY_RESULT_KINDS[kind].httpStatus);
  assert.ok(result.message.length > 0 && !/undefined|\[object/.test(result.message), result.message);
  return result as Extract<AdminRetryResult, { kind: K }>;
}

const failingPublisher = (error: Error) => ({
  calls: 0,
  async publishReportGenerate(): Promise<PublishResult> {
    this.calls++;
    throw error;
  },
});

test("a FAILED report at 3 attempts: refused without a reset; with it, attempts back to 0, marked queued, and report.generate published once", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: MAX_REPORT_ATTEMPTS, createdAt: NOW, updatedAt: NOW, lastError: "openai: rate limited", errorKind: "rate_limited", transientFailures: 1 });
  const publisher = recorder();
  const exhausted = expectKind(await retry(ids, false, publisher), "attempts-exhausted");
  assert.deepEqual([exhausted.attempts, exhausted.maxAttempts, publisher.sent.length], [3, MAX_REPORT_ATTEMPTS, 0]);

  const queued = expectKind(await retry(ids, true, publisher), "queued");
  assert.deepEqual([queued.attemptsReset, queued.requestId, queued.messageId, queued.queuedAt], [true, `admin-retry-${ids.interviewId}`, "m-1", NOW]);
  assert.deepEqual(publisher.sent, [
    { input: { interviewId: ids.interviewId, organizationId: ids.organizationId }, context: { requestId: `admin-retry-${ids.interviewId}` } },
  ]);
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.equal(stored!["status"], "FAILED", "the consumer's claim moves it on, not the reset");
  assert.equal(stored!["attemptCount"], 0);
  assert.deepEqual([stored!["attemptsResetAt"], stored!["updatedAt"], stored!["retryQueuedAt"]], [NOW, NOW, NOW]);
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
  const queuedAt: Date | null | undefined = typed.retryQueuedAt;
  assert.deepEqual([at, queuedAt, typed.retries?.map((r) => r.via)], [NOW, NOW, ["api-admin-retry"]]);
});

test("a second click, after the first or at the same time: already-queued, nothing published again, the reset recorded once", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const publisher = recorder();
  expectKind(await retry(ids, true, publisher), "queued");
  const later = new Date(NOW.getTime() + 5_000);
  for (const reset of [true, false]) {
    const again = expectKind(await retry(ids, reset, publisher, later), "already-queued");
    assert.deepEqual([again.queuedAt, again.requestId, again.httpStatus], [NOW, `admin-retry-${ids.interviewId}`, 202]);
  }
  assert.equal(publisher.sent.length, 1, "one message");
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.equal((stored!["retries"] as unknown[]).length, 1);
  assert.equal((stored!["lastRetry"] as { attemptsBefore: number }).attemptsBefore, 3, "not overwritten by a second reset at 0");

  // Two clicks at once: the compare-and-set lets one through; the other reads again and sees it queued.
  const both = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const concurrent = recorder();
  const results = await Promise.all([retry(both, true, concurrent), retry(both, true, concurrent)]);
  assert.deepEqual(results.map((r) => r.kind).sort(), ["already-queued", "queued"]);
  assert.equal(concurrent.sent.length, 1);
  assert.equal(((await reports.findOne({ interviewId: both.oid }))!["retries"] as unknown[]).length, 1);
});

test("once the consumer has the message (any write since), or a lease length later, a retry is decided anew", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const publisher = recorder();
  expectKind(await retry(ids, true, publisher), "queued");
  // The consumer claims it: held, with the time a UI can show.
  const claimedAt = new Date(NOW.getTime() + 1_000);
  const leaseEnd = new Date(claimedAt.getTime() + REPORT_LEASE_SECONDS * 1000);
  await reports.updateOne({ interviewId: ids.oid }, { $set: { status: "PROCESSING", attemptCount: 1, leaseId: new ObjectId(), leaseExpiresAt: leaseEnd, updatedAt: claimedAt } });
  const held = expectKind(await retry(ids, false, publisher, new Date(claimedAt.getTime() + 1)), "in-progress");
  assert.deepEqual(held.heldUntil, leaseEnd);
  // It fails that attempt: a plain retry publishes again.
  const failedAt = new Date(claimedAt.getTime() + 2_000);
  await reports.updateOne({ interviewId: ids.oid }, { $set: { status: "FAILED", leaseId: null, leaseExpiresAt: null, updatedAt: failedAt } });
  expectKind(await retry(ids, false, publisher, new Date(failedAt.getTime() + 1)), "queued");
  assert.equal(publisher.sent.length, 2);
  // A queued mark nobody acted on for more than a lease length: taken as lost.
  const stored = await reports.findOne({ interviewId: ids.oid });
  const queuedAt = stored!["retryQueuedAt"] as Date;
  assert.deepEqual(reportRetryQueuedAt(stored!, new Date(queuedAt.getTime() + REPORT_LEASE_SECONDS * 1000)), queuedAt, "within the lease: queued");
  const lapsed = new Date(queuedAt.getTime() + REPORT_LEASE_SECONDS * 1000 + 1);
  assert.equal(reportRetryQueuedAt(stored!, lapsed), undefined);
  expectKind(await retry(ids, false, publisher, lapsed), "queued");
  assert.equal(publisher.sent.length, 3);
});

/** A driver's document in its JSON form (ObjectIds as hex, Dates as ISO-8601), as the schema states it. */
function jsonForm(value: unknown): unknown {
  if (value instanceof ObjectId) return value.toHexString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(jsonForm);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonForm(v)]));
  return value;
}

test("PROCESSING under a live lease (a worker is generating it): in-progress with the time it is held until, untouched, with or without a reset", async () => {
  const until = new Date(NOW.getTime() + 60_000);
  const live = await interview({ status: "PROCESSING", attemptCount: 1, leaseId: new ObjectId(), leaseExpiresAt: until, updatedAt: NOW });
  for (const reset of [true, false]) {
    const publisher = recorder();
    const held = expectKind(await retry(live, reset, publisher), "in-progress");
    assert.deepEqual([held.heldUntil, publisher.sent.length], [until, 0]);
    assert.match(held.message, new RegExp(until.toISOString()));
  }
  const stored = await reports.findOne({ interviewId: live.oid });
  assert.deepEqual([stored!["attemptCount"], stored!["updatedAt"], stored!["retryQueuedAt"]], [1, NOW, undefined]);
  assert.ok(isResettable({ status: "PROCESSING", leaseExpiresAt: new Date(NOW.getTime() - 1) }, NOW), "expired: resettable");
  assert.ok(!isResettable({ status: "PROCESSING", leaseExpiresAt: NOW }, NOW), "a lease ending now still holds it (the filter's $lt)");
  expectKind(await retry(await interview({ status: "PROCESSING", attemptCount: 1, leaseExpiresAt: NOW }), true), "in-progress");
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
  const recent = expectKind(await retry(await interview({ status: "PROCESSING", attemptCount: 3, updatedAt: at(-1000) }), true), "in-progress");
  assert.deepEqual(recent.heldUntil, at(leaseMs - 1000));
  // End to end on the server: the reset writes the ended claim's end as leaseExpiresAt, so its
  // own updatedAt does not hold the report again.
  const lastWrite = at(-leaseMs - 60_000);
  const stuck = await interview({ status: "PROCESSING", attemptCount: 3, leaseId: null, leaseExpiresAt: null, updatedAt: lastWrite });
  assert.equal(expectKind(await retry(stuck, true), "queued").attemptsReset, true);
  const stored = await reports.findOne({ interviewId: stuck.oid });
  assert.equal(stored!["attemptCount"], 0);
  assert.deepEqual(stored!["leaseExpiresAt"], new Date(lastWrite.getTime() + leaseMs));
  assert.ok(isResettable(stored!, NOW), "still nobody's after the reset");
});

test("PROCESSING under an expired lease (its worker is gone): reset and queued by the claim rule, not contended, on either server", async () => {
  const lease = new ObjectId();
  const ended = new Date(NOW.getTime() - 1000);
  const expired = await interview({ status: "PROCESSING", attemptCount: 3, leaseId: lease, leaseExpiresAt: ended, updatedAt: new Date(NOW.getTime() - 2000) });
  const queued = expectKind(await retry(expired, true), "queued");
  assert.equal(queued.attemptsReset, true);
  const stored = await reports.findOne({ interviewId: expired.oid });
  assert.deepEqual([stored!["attemptCount"], stored!["leaseExpiresAt"], stored!["retryQueuedAt"]], [0, ended, NOW]);
  assert.equal((stored!["lastRetry"] as Record<string, unknown>)["statusBefore"], "PROCESSING");
  // Without a reset, attempts left: queued as well (the consumer reclaims it).
  const plain = await interview({ status: "PROCESSING", attemptCount: 1, leaseId: new ObjectId(), leaseExpiresAt: ended, updatedAt: ended });
  assert.equal(expectKind(await retry(plain, false), "queued").attemptsReset, false);
});

test("a consumer claiming the report between the read and the write: decided again from the new state (in-progress)", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  // A collection whose first write finds the report claimed by a worker (live lease).
  let writes = 0;
  const until = new Date(NOW.getTime() + 60_000);
  const racing = {
    findOne: (f: Record<string, unknown>) => reports.findOne(f),
    updateOne: async (f: Record<string, unknown>, u: Record<string, unknown>) => {
      if (writes++ === 0) {
        await reports.updateOne({ interviewId: ids.oid }, { $set: { status: "PROCESSING", attemptCount: 4, leaseId: new ObjectId(), leaseExpiresAt: until, updatedAt: NOW } });
      }
      return reports.updateOne(f, u);
    },
  };
  const publisher = recorder();
  const result = await retryReportGeneration({ ...ids, resetAttempts: true, operator: { by: "a" }, interviews, reports: racing, objectId: (h) => new ObjectId(h), publisher, now: () => NOW });
  assert.deepEqual(expectKind(result, "in-progress").heldUntil, until);
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.equal(stored!["attemptCount"], 4, "the worker's claim stands");
  assert.equal(stored!["lastRetry"], undefined);
  assert.equal(publisher.sent.length, 0);
  // A report that changes under every try: contended.
  const busy = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  let n = 0;
  const churning = {
    findOne: (f: Record<string, unknown>) => reports.findOne(f),
    updateOne: async (f: Record<string, unknown>, u: Record<string, unknown>) => {
      // Whole seconds apart: nx-27017 compares dates to the second (see the next test).
      await reports.updateOne({ interviewId: busy.oid }, { $set: { updatedAt: new Date(NOW.getTime() + ++n * 1000) } });
      return reports.updateOne(f, u);
    },
  };
  const contended = await retryReportGeneration({ ...busy, resetAttempts: true, operator: { by: "a" }, interviews, reports: churning, objectId: (h) => new ObjectId(h), publisher, now: () => NOW });
  assert.equal(expectKind(contended, "contended").tries, n);
});

// nx-27017 gap (measured): it compares dates to the whole second, so a filter date 999 ms off
// still matches there. The compare-and-set pins `updatedAt` as read; on nx-27017 a write within the
// same second as the read is not told apart by that date (the pinned status, attemptCount,
// leaseExpiresAt and retryQueuedAt still are: a claim moves leaseExpiresAt by a lease length, a
// click sets retryQueuedAt). Run this one on a real MongoDB (a replica set, as CI's service):
//   SOPHIA_TS_MONGODB_URI=mongodb://localhost:27017 npm test
test(
  "a write 1 ms after the read (updatedAt only) makes the compare-and-set miss",
  { skip: REAL_MONGODB ? false : "SKIPPED on nx-27017, which compares dates to the second: run `SOPHIA_TS_MONGODB_URI=mongodb://<a real MongoDB> npm test` (CI's MongoDB service does)" },
  async () => {
    const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
    const read = await reports.findOne({ interviewId: ids.oid });
    await reports.updateOne({ interviewId: ids.oid }, { $set: { updatedAt: new Date(NOW.getTime() + 1) } });
    const { filter, update } = queueRetryOperation(read!, { resetAttempts: true, operator: { by: "a" } }, NOW);
    assert.equal((await reports.updateOne(filter, update)).matchedCount, 0);
  },
);

test("no report: report-not-found with or without a reset; a reset of a NOT_STARTED report: not-failed; attempts left: queued without a reset", async () => {
  for (const reset of [true, false]) expectKind(await retry(await interview(), reset), "report-not-found");
  const notStarted = await interview({ status: "NOT_STARTED", attemptCount: 0, updatedAt: NOW });
  assert.equal(expectKind(await retry(notStarted, true), "not-failed").status, "NOT_STARTED");
  for (const report of [{ status: "FAILED", attemptCount: 1 }, { status: "NOT_STARTED", attemptCount: 0 }, { status: "FAILED", attemptCount: 2, updatedAt: NOW }]) {
    const publisher = recorder();
    assert.equal(expectKind(await retry(await interview(report), false, publisher), "queued").attemptsReset, false, JSON.stringify(report));
    assert.equal(publisher.sent.length, 1);
  }
});

test("a COMPLETED report: already-completed, nothing published, with or without a reset", async () => {
  const ids = await interview({ status: "COMPLETED", attemptCount: 1 });
  for (const reset of [false, true]) {
    const publisher = recorder();
    expectKind(await retry(ids, reset, publisher), "already-completed");
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
    expectKind(await retry(ids, true), "interview-not-found");
  }
  assert.equal((await reports.findOne({ interviewId: other.oid }))!["attemptCount"], 3);
});

test("REPORT_GENERATE_QUEUE_URL unset outside production mode: publish-skipped (not queued), the queued mark removed, a second click publishes", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const warnings: string[] = [];
  const unconfigured = new InterviewQueuePublisher({ queueUrl: undefined, reportQueueUrl: undefined, env: {}, logger: { warn: (m) => warnings.push(m), info: () => {} } });
  const skipped = expectKind(await retry(ids, true, unconfigured), "publish-skipped");
  assert.deepEqual(
    { variable: skipped.variable, attemptsReset: skipped.attemptsReset, cleared: skipped.queuedMarkCleared, safe: skipped.safeToRetry, ok: skipped.ok },
    { variable: "REPORT_GENERATE_QUEUE_URL", attemptsReset: true, cleared: true, safe: true, ok: false },
  );
  assert.equal(warnings.length, 1);
  const stored = await reports.findOne({ interviewId: ids.oid });
  assert.deepEqual([stored!["attemptCount"], stored!["retryQueuedAt"]], [0, undefined], "the reset stays; the queued mark is gone");
  const publisher = recorder();
  expectKind(await retry(ids, true, publisher, new Date(NOW.getTime() + 1)), "queued");
  assert.equal(publisher.sent.length, 1);
});

test("a send that fails after the reset: send-failed with the state left and whether a second click is safe; the SDK error kept out of JSON", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const error = Object.assign(new Error("The specified queue does not exist."), { name: "QueueDoesNotExist" });
  const failed = expectKind(await retry(ids, true, failingPublisher(error)), "send-failed");
  assert.deepEqual(
    { errorName: failed.errorName, attemptsReset: failed.attemptsReset, cleared: failed.queuedMarkCleared, safe: failed.safeToRetry },
    { errorName: "QueueDoesNotExist", attemptsReset: true, cleared: true, safe: true },
  );
  assert.equal(failed.cause, error);
  assert.ok(!JSON.stringify(failed).includes("does not exist"), "cause is not enumerable");
  assert.equal((await reports.findOne({ interviewId: ids.oid }))!["retryQueuedAt"], undefined);
  const publisher = recorder();
  expectKind(await retry(ids, true, publisher, new Date(NOW.getTime() + 1)), "queued");

  // The mark cannot be removed either (the database went away too): not safe, until when.
  const stuck = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  const flaky = {
    findOne: (f: Record<string, unknown>) => reports.findOne(f),
    updateOne: async (f: Record<string, unknown>, u: Record<string, unknown>) => {
      if ("$unset" in u) throw new Error("connection reset");
      return reports.updateOne(f, u);
    },
  };
  const unsafe = await retryReportGeneration({ ...stuck, resetAttempts: true, operator: { by: "a" }, interviews, reports: flaky, objectId: (h) => new ObjectId(h), publisher: failingPublisher(error), now: () => NOW });
  const left = expectKind(unsafe, "send-failed");
  assert.deepEqual([left.queuedMarkCleared, left.safeToRetry, left.retryableAt], [false, false, new Date(NOW.getTime() + REPORT_LEASE_SECONDS * 1000 + 1)]);
  expectKind(await retry(stuck, true, recorder(), new Date(NOW.getTime() + 1)), "already-queued");
  expectKind(await retry(stuck, true, recorder(), left.retryableAt!), "queued");
});

test("a send refused by the network (nothing listening): send-failed names the system code (ECONNREFUSED), not \"Error\"", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  // A port that was free a moment ago: bound, then closed, so the SDK's connection is refused.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const client = new SQSClient({ endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", maxAttempts: 1, credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  const publisher = new InterviewQueuePublisher({ client, queueUrl: `http://127.0.0.1:${port}/000000000000/interview-completed`, reportQueueUrl: `http://127.0.0.1:${port}/000000000000/report-generate`, env: {} });
  try {
    const failed = expectKind(await retry(ids, true, publisher), "send-failed");
    assert.equal(failed.errorName, "ECONNREFUSED");
    assert.match(failed.message, /\(ECONNREFUSED\)/);
    assert.equal((adminRetryResponseBody(failed) as { errorName?: unknown }).errorName, "ECONNREFUSED");
    assert.deepEqual([failed.queuedMarkCleared, failed.safeToRetry], [true, true]);
  } finally {
    client.destroy();
  }
  // The same fallback for an error that carries the code only in its cause (undici's "fetch failed").
  const wrapped = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ENOTFOUND"), { code: "ENOTFOUND" }) });
  const again = await interview({ status: "FAILED", attemptCount: 3, updatedAt: NOW });
  assert.equal(expectKind(await retry(again, true, failingPublisher(wrapped)), "send-failed").errorName, "ENOTFOUND");
});

test("bad ids or no operator: invalid-request naming the fields, nothing read", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3 });
  const bad = expectKind(await retry({ interviewId: "nope", organizationId: ids.organizationId }, true), "invalid-request");
  assert.deepEqual(bad.issues.map((i) => i.path), ["/interviewId"]);
  for (const operator of [undefined, null, {}, { by: "" }, { by: 7 }]) {
    const result = await retryReportGeneration({ ...ids, resetAttempts: true, operator: operator as never, interviews, reports, objectId: (h) => new ObjectId(h), publisher: recorder() });
    assert.deepEqual(expectKind(result, "invalid-request").issues.map((i) => i.path), ["/operator/by"]);
  }
});

test("a result is a response: adminRetryResponseBody is JSON (ISO dates, no cause); every kind has a unique code, and the README's table says the same", () => {
  const codes = Object.values(ADMIN_RETRY_RESULT_KINDS).map((k) => k.code);
  assert.equal(new Set(codes).size, codes.length);
  const until = new Date("2026-12-04T06:15:00.000Z");
  const body = adminRetryResponseBody({ kind: "in-progress", code: "REPORT_IN_PROGRESS", httpStatus: 409, ok: false, message: "m", heldUntil: until });
  assert.deepEqual(body, { kind: "in-progress", code: "REPORT_IN_PROGRESS", httpStatus: 409, ok: false, message: "m", heldUntil: "2026-12-04T06:15:00.000Z" });
  const readme = readFileSync(path.join(__dirname, "..", "README.md"), "utf8");
  const rows = [...readme.matchAll(/^\| `([a-z-]+)` \| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], m[2], Number(m[3])]);
  assert.deepEqual(
    rows.sort(),
    Object.entries(ADMIN_RETRY_RESULT_KINDS).map(([kind, k]) => [kind, k.code, k.httpStatus]).sort(),
    "the README's result table lists every kind with its code and status",
  );
});

test("the writes are plain data: a compare-and-set on the state read, the Rust side's fields", () => {
  const op = resetAttemptsOperation({ _id: "id-1", status: "FAILED", attemptCount: 3, updatedAt: NOW }, { by: "ops", via: "report-retry" }, NOW);
  const mark = { at: NOW, by: "ops", via: "report-retry", attemptsBefore: 3, statusBefore: "FAILED" };
  assert.deepEqual(op, {
    filter: { _id: "id-1", status: "FAILED", attemptCount: 3, updatedAt: NOW, leaseExpiresAt: null, retryQueuedAt: null },
    update: { $set: { attemptCount: 0, attemptsResetAt: NOW, updatedAt: NOW, lastRetry: mark }, $push: { retries: mark } },
  });
  const expired = new Date(NOW.getTime() - 1);
  const processing = resetAttemptsOperation({ _id: "id-2", status: "PROCESSING", leaseId: "l", leaseExpiresAt: expired }, { by: "x" }, NOW);
  const stale = new Date(NOW.getTime() - REPORT_LEASE_SECONDS * 1000);
  assert.deepEqual(processing.filter, {
    _id: "id-2",
    status: "PROCESSING",
    attemptCount: null,
    updatedAt: null,
    leaseExpiresAt: expired,
    retryQueuedAt: null,
    $or: [
      { leaseExpiresAt: { $lt: NOW } },
      { leaseExpiresAt: null, updatedAt: { $lt: stale } },
      { leaseExpiresAt: null, updatedAt: null, createdAt: { $lt: stale } },
      { leaseExpiresAt: null, updatedAt: null, createdAt: null },
    ],
  });
  assert.deepEqual((processing.update["$set"] as { leaseExpiresAt: Date }).leaseExpiresAt, expired, "the ended claim's end, unchanged");
  assert.equal((processing.update["$set"] as { lastRetry: { via: string } }).lastRetry.via, "api-admin-retry");
  const plain = queueRetryOperation({ _id: "id-3", status: "FAILED", attemptCount: 1, updatedAt: stale }, { resetAttempts: false, operator: { by: "x" } }, NOW);
  assert.deepEqual(plain.update, { $set: { updatedAt: NOW, retryQueuedAt: NOW } });
  const withReset = queueRetryOperation({ _id: "id-3", status: "FAILED", attemptCount: 3 }, { resetAttempts: true, operator: { by: "x" } }, NOW);
  assert.deepEqual((withReset.update["$set"] as Record<string, unknown>)["retryQueuedAt"], NOW);
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
    retryQueuedAt: at,
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
  assert.deepEqual(sameDates.sort(), ["attemptsResetAt", "completedAt", "createdAt", "erasedAt", "lastErrorAt", "leaseExpiresAt", "retentionExpiresAt", "retryQueuedAt", "updatedAt"]);
  assert.deepEqual(sameIds.sort(), ["_id", "interviewId", "leaseId", "organizationId"]);
  const raw = got as unknown as Record<string, unknown>;
  for (const k of dates) assert.ok(raw[k] === null || raw[k] instanceof Date, `${k}: ${typeof raw[k]}`);
  for (const k of ids) assert.ok(raw[k] instanceof ObjectId, `${k}: ${typeof raw[k]}`);
  assert.equal(typeof raw["attemptCount"], "number");
  await typed.deleteOne({ _id: doc._id });
});
