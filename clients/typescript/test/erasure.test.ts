/**
 * The API's erasure request against nx-27017 with the `mongodb` driver, as `sophia-ops erasure
 * request` does it (tools/ops/src/erasure.rs). The Rust consumer refusing to write over the
 * tombstone, and the sweep completing the request, are tests/it/erasure.rs.
 */
import * as assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { type Collection, type Db, MongoClient, ObjectId } from "mongodb";

import {
  ContractViolationError,
  ERASURE_COLLECTIONS,
  type ErasureCollection,
  ERASURE_REASONS,
  ERASURE_REFERENCE_MAX_LENGTH,
  ERASURE_REFERENCE_PATTERN,
  ErasureInputError,
  type ErasureReason,
  ErasureRefusedError,
  INTERVIEWS_COLLECTION,
  type PublishResult,
  readErasure,
  requestErasure,
  retryReportGeneration,
} from "../src/index";
import { type Nx, startNx } from "./support/nx";

const REAL_MONGODB = process.env["SOPHIA_TS_MONGODB_URI"];
let nx: Nx | undefined;
let client: MongoClient;
let db: Db;
let erasures: Collection;
let reports: Collection;
let outbox: Collection;
let interviews: Collection;
const NOW = new Date("2026-12-04T06:00:00.000Z");

before(async () => {
  if (!REAL_MONGODB) nx = await startNx();
  client = await new MongoClient(REAL_MONGODB ?? nx!.uri).connect();
  db = client.db(`erasure_${process.pid}`);
  erasures = db.collection(ERASURE_COLLECTIONS.erasures);
  reports = db.collection(ERASURE_COLLECTIONS.reports);
  outbox = db.collection(ERASURE_COLLECTIONS.outbox);
  interviews = db.collection(INTERVIEWS_COLLECTION);
  // No unique index on interviewId: the erasure must not rely on one (an API's database may lack it).
});

after(async () => {
  await client?.close();
  nx?.stop();
});

const oid = (hex: string) => new ObjectId(hex);

async function request(interviewIds: string[], organizationId: string, reportsOf: ErasureCollection = reports) {
  for (const id of interviewIds) {
    await interviews.updateOne({ _id: oid(id) }, { $setOnInsert: { organizationId: oid(organizationId), status: "COMPLETED", deletedAt: null } }, { upsert: true });
  }
  return requestErasure({
    interviewIds,
    organizationId,
    requestedBy: "dpo@example.com",
    reason: "candidate-request",
    reference: "DPO-42",
    erasures,
    reports: reportsOf,
    outbox,
    interviews,
    objectId: oid,
    now: () => NOW,
  });
}

test("every interview of a candidate: the request recorded (who, when, why), the report a tombstone, the outbox entries gone", async () => {
  const org = new ObjectId();
  const [a, b] = [new ObjectId(), new ObjectId()];
  await reports.insertOne({ _id: new ObjectId(), interviewId: a, organizationId: org, status: "COMPLETED", attemptCount: 1, report: { summary: "the candidate said ..." }, createdAt: NOW, updatedAt: NOW });
  const entries = db.collection<{ _id: string; interviewId: ObjectId; organizationId: ObjectId; status: string }>(ERASURE_COLLECTIONS.outbox);
  await entries.insertOne({ _id: `report.generate:${b.toHexString()}`, interviewId: b, organizationId: org, status: "PENDING" });

  const records = await request([a.toHexString(), b.toHexString()], org.toHexString());

  assert.deepEqual(
    records.map((r) => [r.interviewId, r.state, r.requestedBy, r.reason, r.reference, r.via, r.removed]),
    [
      [a.toHexString(), "PENDING", "dpo@example.com", "candidate-request", "DPO-42", "api", { report: "report COMPLETED", outboxEntries: 0, dlqMessages: 0 }],
      [b.toHexString(), "PENDING", "dpo@example.com", "candidate-request", "DPO-42", "api", { report: "none", outboxEntries: 1, dlqMessages: 0 }],
    ],
  );
  assert.deepEqual(records[0]!.requestedAt, NOW);
  assert.deepEqual(records[0]!.pending.map((p) => p.what), ["queues"], "the DLQs are the operators' sweep");
  const tombstone = await reports.findOne({ interviewId: a });
  assert.deepEqual(Object.keys(tombstone!).sort(), ["_id", "attemptCount", "createdAt", "erasedAt", "interviewId", "organizationId", "status", "updatedAt"]);
  assert.equal(tombstone!["status"], "ERASED");
  assert.equal((await reports.findOne({ interviewId: b }))!["status"], "ERASED", "a tombstone even where no report existed yet");
  assert.equal(await outbox.countDocuments({ interviewId: b }), 0);

  const again = await request([a.toHexString()], org.toHexString());
  assert.equal(again[0]!.repeats, 1, "a repeat is recorded, the first request kept");
  assert.equal(again[0]!.removed.report, "report COMPLETED");
  const read = await readErasure({ interviewId: a.toHexString(), erasures, objectId: oid });
  assert.equal(read?.state, "PENDING");
  assert.equal(await readErasure({ interviewId: new ObjectId().toHexString(), erasures, objectId: oid }), null);
});

test("a request says who and why, and names at least one interview", async () => {
  const org = new ObjectId().toHexString();
  await assert.rejects(requestErasure({ interviewIds: [], organizationId: org, requestedBy: "x", reason: "test-data", erasures, reports, outbox, interviews, objectId: oid }), ContractViolationError);
  await assert.rejects(
    requestErasure({ interviewIds: [new ObjectId().toHexString()], organizationId: org, requestedBy: " ", reason: "test-data", erasures, reports, outbox, interviews, objectId: oid }),
    ContractViolationError,
  );
});

test("a reason that is not declared, or a reference with spaces, is refused with a typed error and nothing is written", async () => {
  const org = new ObjectId().toHexString();
  const id = new ObjectId();
  const base = { interviewIds: [id.toHexString()], organizationId: org, requestedBy: "x", erasures, reports, outbox, interviews, objectId: oid };
  for (const [reason, reference, code] of [
    ["Jane Doe asked by phone", undefined, "ERASURE_REASON_NOT_DECLARED"],
    ["", undefined, "ERASURE_REASON_NOT_DECLARED"],
    ["candidate-request", "Jane Doe", "ERASURE_REFERENCE_INVALID"],
    ["candidate-request", "-DPO", "ERASURE_REFERENCE_INVALID"],
    ["candidate-request", "D".repeat(ERASURE_REFERENCE_MAX_LENGTH + 1), "ERASURE_REFERENCE_INVALID"],
  ] as const) {
    await assert.rejects(
      requestErasure({ ...base, reason: reason as ErasureReason, reference }),
      (e: unknown) => e instanceof ErasureInputError && e.code === code && !e.message.includes("Jane") && e.message.includes("nothing was erased"),
    );
  }
  assert.equal(await erasures.countDocuments({ _id: id }), 0, "no request recorded");
  assert.deepEqual([...ERASURE_REASONS], ["candidate-request", "contract-end", "legal-order", "test-data"]);
  assert.ok(ERASURE_REFERENCE_PATTERN.test("jira:DPO/7_a.b") && !ERASURE_REFERENCE_PATTERN.test("a b"));
});

test("a repeated request matches the first by its id, without any index but _id's", async () => {
  const org = new ObjectId();
  const i = new ObjectId();
  await erasures.dropIndexes().catch(() => undefined);
  const both = await Promise.all([request([i.toHexString()], org.toHexString()), request([i.toHexString()], org.toHexString())]);
  assert.equal(both.length, 2);
  assert.deepEqual((await erasures.find({ _id: i }).toArray()).map((d) => [d["interviewId"], d["state"]]), [[i, "PENDING"]], "one request document");
  assert.equal((await readErasure({ interviewId: i.toHexString(), erasures, objectId: oid }))!.repeats, 1, "the other a repeat");
});

test("the admin retry of an erased interview is refused and publishes nothing", async () => {
  const org = new ObjectId();
  const i = new ObjectId();
  await interviews.insertOne({ _id: i, organizationId: org, status: "COMPLETED", deletedAt: null });
  await reports.insertOne({ _id: new ObjectId(), interviewId: i, organizationId: org, status: "FAILED", attemptCount: 3, createdAt: NOW, updatedAt: NOW });
  await request([i.toHexString()], org.toHexString());
  const sent: unknown[] = [];
  const publisher = {
    publishReportGenerate: async (input: unknown): Promise<PublishResult> => {
      sent.push(input);
      return { status: "sent", messageId: "m", eventType: "report.generate", body: "{}" };
    },
  };
  for (const resetAttempts of [false, true]) {
    const result = await retryReportGeneration({ interviewId: i.toHexString(), organizationId: org.toHexString(), resetAttempts, operator: { by: "admin@example.com" }, interviews, reports, objectId: oid, publisher });
    assert.equal(result.kind, "interview-erased");
    assert.equal(result.code, "INTERVIEW_ERASED");
    assert.equal(result.httpStatus, 410);
  }
  assert.equal(sent.length, 0);
  assert.equal((await reports.findOne({ interviewId: i }))!["status"], "ERASED", "untouched");
});

test("without a unique index on interviewId, the real report itself becomes the tombstone (no second document next to it)", async () => {
  const org = new ObjectId();
  const i = new ObjectId();
  await reports.insertOne({ _id: new ObjectId(), interviewId: i, organizationId: org, status: "COMPLETED", attemptCount: 1, report: { summary: "the candidate said ..." }, createdAt: NOW, updatedAt: NOW });

  const [record] = await request([i.toHexString()], org.toHexString());

  assert.equal(record!.removed.report, "report COMPLETED");
  const left = await reports.find({ interviewId: i }).toArray();
  assert.deepEqual(left.map((d) => d["status"]), ["ERASED"], "one document, the tombstone; the report's data gone");
  assert.equal(left[0]!["report"], undefined);
});

test("a report created between the replace and the tombstone's insert is replaced too", async () => {
  const org = new ObjectId();
  const i = new ObjectId();
  let raced = false;
  const racing = new Proxy(reports, {
    get(target, key, receiver) {
      if (key === "insertOne" && !raced) {
        raced = true;
        return async (doc: Record<string, unknown>) => {
          await target.insertOne({ _id: new ObjectId(), interviewId: i, organizationId: org, status: "PROCESSING", attemptCount: 1, createdAt: NOW, updatedAt: NOW });
          return target.insertOne(doc);
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as ErasureCollection;

  const [record] = await request([i.toHexString()], org.toHexString(), racing);

  assert.ok(raced);
  assert.equal(record!.removed.report, "report PROCESSING");
  assert.deepEqual((await reports.find({ interviewId: i }).toArray()).map((d) => d["status"]), ["ERASED", "ERASED"], "no live report left");
});

test("another organization's interview: refused, nothing written, its report untouched", async () => {
  const [mine, theirs] = [new ObjectId(), new ObjectId()];
  const i = new ObjectId();
  await interviews.insertOne({ _id: i, organizationId: theirs, status: "COMPLETED", deletedAt: null });
  await reports.insertOne({ _id: new ObjectId(), interviewId: i, organizationId: theirs, status: "COMPLETED", attemptCount: 1, report: { summary: "theirs" }, createdAt: NOW, updatedAt: NOW });

  const refused = requestErasure({ interviewIds: [i.toHexString()], organizationId: mine.toHexString(), requestedBy: "dpo@example.com", reason: "contract-end", erasures, reports, outbox, interviews, objectId: oid });

  await assert.rejects(refused, (e: unknown) => e instanceof ErasureRefusedError && e.code === "INTERVIEW_NOT_IN_ORGANIZATION" && e.notInOrganization[0] === i.toHexString());
  assert.equal((await reports.findOne({ interviewId: i }))!["status"], "COMPLETED");
  assert.equal(await erasures.countDocuments({ _id: i }), 0, "no request recorded");
});

test("every request is recorded before any copy is erased: a failure at the first interview leaves the others' requests in place", async () => {
  const org = new ObjectId();
  const [a, b] = [new ObjectId(), new ObjectId()];
  // A reports collection that fails every call (a database error at the first tombstone).
  const failing = new Proxy(reports, {
    get: (target, key, receiver) => {
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === "function" ? () => Promise.reject(new Error("database unavailable")) : value;
    },
  });
  await assert.rejects(request([a.toHexString(), b.toHexString()], org.toHexString(), failing), /database unavailable/);
  for (const id of [a, b]) {
    const read = await readErasure({ interviewId: id.toHexString(), erasures, objectId: oid });
    assert.equal(read?.state, "PENDING", `the request of ${id.toHexString()} is recorded`);
  }
});
