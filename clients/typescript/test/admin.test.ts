/**
 * The admin retry against nx-27017 (the local MongoDB wire server) with the `mongodb` driver (a
 * devDependency: the package itself brings none), mirroring `sophia-ops report retry
 * [--reset-attempts]` (functions/reports/src/admin.rs). The end-to-end path (reset, re-publish,
 * the Rust consumer generating the report) is tests/typescript_contract.rs.
 */
import * as assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { type Collection, type Db, MongoClient, ObjectId } from "mongodb";

import {
  AdminRetryError,
  INTERVIEWS_COLLECTION,
  type PublishContext,
  type PublishResult,
  REPORTS_COLLECTION,
  type ReportGenerateInput,
  resetAttemptsOperation,
  retryReportGeneration,
} from "../src/index";
import { type Nx, startNx } from "./support/nx";

let nx: Nx;
let client: MongoClient;
let db: Db;
let interviews: Collection;
let reports: Collection;
const NOW = new Date("2026-12-04T06:00:00.000Z");

before(async () => {
  nx = await startNx();
  client = await new MongoClient(nx.uri).connect();
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

async function interview(report?: { status: string; attemptCount: number }, extra: Record<string, unknown> = {}) {
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
    interviews,
    reports,
    objectId: (hex) => new ObjectId(hex),
    publisher,
    now: () => NOW,
  });

test("a FAILED report at 3 attempts: refused without a reset; with it, attempts back to 0 and report.generate re-published", async () => {
  const ids = await interview({ status: "FAILED", attemptCount: 3 });
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
});

test("no report yet or attempts left: published without a reset; a reset needs a FAILED report", async () => {
  for (const report of [undefined, { status: "FAILED", attemptCount: 1 }, { status: "PROCESSING", attemptCount: 1 }]) {
    const ids = await interview(report);
    const publisher = recorder();
    const outcome = await retry(ids, false, publisher);
    assert.ok(outcome.outcome === "published" && !outcome.attemptsReset, JSON.stringify(report));
    assert.equal(publisher.sent.length, 1);
  }
  for (const report of [undefined, { status: "PROCESSING", attemptCount: 3 }, { status: "NOT_STARTED", attemptCount: 0 }]) {
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

test("the reset is plain data: the filter matches FAILED only, the update is the Rust side's fields", () => {
  const op = resetAttemptsOperation("65a1b2c3d4e5f60718293a4b", (hex) => `oid(${hex})`, NOW);
  assert.deepEqual(op, {
    filter: { interviewId: "oid(65a1b2c3d4e5f60718293a4b)", status: "FAILED" },
    update: { $set: { attemptCount: 0, attemptsResetAt: NOW, updatedAt: NOW } },
  });
});
