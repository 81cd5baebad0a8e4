/**
 * The API's erasure of a candidate's data (docs/candidate-data.md, "Erasure"), as
 * `sophia-ops erasure request` does it (tools/ops/src/erasure.rs): one request per interview in
 * `erasures` (`_id` = the interview id: who asked, when, why), written first; then the report
 * replaced by its tombstone (`status` `ERASED`: every writer's conditional write skips it, so
 * nothing in flight writes the report back) and the settlement's outbox entries deleted. The
 * request stays `PENDING` on the queues: the operators' `sophia-ops erasure sweep` deletes the
 * DLQ messages naming the interview (the API's role may not read the DLQs) and ends it `DONE`,
 * or `PENDING` with what is left and why. {@link readErasure} is the proof the API shows.
 *
 * As the admin retry, the package brings no MongoDB driver: the collections are the caller's
 * (the `mongodb` driver's `Collection` or Mongoose's `Model.collection`), with its ObjectId.
 */
import { randomBytes } from "node:crypto";

import { type ObjectIdFactory, REPORTS_COLLECTION } from "./admin";
import { ERASURE_REASONS, ERASURE_REFERENCE_PATTERN, type ErasureReason } from "./generated/index";
import { ContractViolationError, assertValid } from "./validate";

/** The erasure requests (one document per interview). */
export const ERASURES_COLLECTION = "erasures";
/** The settlement's transactional outbox. */
export const OUTBOX_COLLECTION = "outbox";
/** `via` of a request made through this package. */
export const API_ERASURE_VIA = "api";
/** The report status of an erasure's tombstone (declared `erased` in declarations/reports.json). */
export const ERASED_STATUS = "ERASED";

/** What the erasure needs of a collection: the driver's `Collection` and Mongoose's `Model.collection` fit. */
export interface ErasureCollection {
  findOne(filter: Record<string, unknown>): Promise<Record<string, unknown> | null>;
  insertOne(doc: Record<string, unknown>): Promise<unknown>;
  updateOne(
    filter: Record<string, unknown>,
    update: Record<string, unknown>,
    options?: { upsert: true },
  ): Promise<{ matchedCount: number; upsertedCount?: number | undefined }>;
  findOneAndReplace(
    filter: Record<string, unknown>,
    replacement: Record<string, unknown>,
    options: { returnDocument: "before"; includeResultMetadata: true },
  ): Promise<{ value: Record<string, unknown> | null }>;
  deleteMany(filter: Record<string, unknown>): Promise<{ deletedCount: number }>;
}

export interface RequestErasureOptions {
  /** Every interview of the candidate the API knows of (at least one). */
  interviewIds: string[];
  /** Their organization (recorded on the request and the tombstone). */
  organizationId: string;
  /** Who asks: a user id or an e-mail of the data-protection team (not candidate data). */
  requestedBy: string;
  /** Why: one declared word (declarations/reports.json erasureReasons); never free text. */
  reason: ErasureReason;
  /** The request's opaque reference (a ticket id such as `DPO-123`): {@link ERASURE_REFERENCE_PATTERN}, no space. */
  reference?: string | undefined;
  /** Shared by the interviews of one request (default `api-erasure-<first interview id>`). */
  requestId?: string | undefined;
  erasures: ErasureCollection;
  reports: ErasureCollection;
  outbox: ErasureCollection;
  /** The API's interviews: each interview must be `organizationId`'s, or nothing is written. */
  interviews: Pick<ErasureCollection, "findOne">;
  objectId: ObjectIdFactory;
  /** Default: `() => new Date()`. */
  now?: (() => Date) | undefined;
}

/** One request as stored, the proof: `state` `DONE` with what was removed and when, or `PENDING` with why. */
export interface ErasureRecord {
  interviewId: string;
  organizationId: string | null;
  requestId: string | null;
  requestedBy: string;
  requestedAt: Date | null;
  reason: string;
  reference: string | null;
  via: string;
  state: "PENDING" | "DONE";
  removed: { report: string | null; outboxEntries: number; dlqMessages: number };
  pending: { what: string; why: string }[];
  queuesSweptAt: Date | null;
  completedAt: Date | null;
  repeats: number;
}

/** How many times the report's replacement looks again when the report changes under it. */
export const ERASURE_REPLACE_TRIES = 5;

/**
 * The erasure refused, nothing written: `notInOrganization` names the interviews that are not
 * `organizationId`'s (another organization's, or no `interviews` document: request the erasure
 * before the API deletes its interview, or ask the operators' `sophia-ops erasure request`).
 */
export class ErasureRefusedError extends Error {
  override readonly name = "ErasureRefusedError";
  readonly code = "INTERVIEW_NOT_IN_ORGANIZATION";
  constructor(readonly notInOrganization: string[]) {
    super(`erasure refused: interview(s) ${notInOrganization.join(", ")} not found in this organization; nothing was erased`);
  }
}

/** The report kept changing under the erasure (created or removed at each try): the request stays `PENDING`; ask again. */
export class ErasureRaceError extends Error {
  override readonly name = "ErasureRaceError";
  constructor(readonly interviewId: string) {
    super(`erasure of interview ${interviewId}: the report changed at each of ${ERASURE_REPLACE_TRIES} tries; the request is recorded, ask again`);
  }
}

/**
 * The erasure refused before anything is written: `reason` is not a declared word, or `reference`
 * does not keep to the declared rule. The message never repeats what was given (it may be a name).
 */
export class ErasureInputError extends Error {
  override readonly name = "ErasureInputError";
  constructor(
    readonly code: "ERASURE_REASON_NOT_DECLARED" | "ERASURE_REFERENCE_INVALID",
    readonly field: "reason" | "reference",
  ) {
    super(
      code === "ERASURE_REASON_NOT_DECLARED"
        ? `erasure refused: reason must be one of ${ERASURE_REASONS.join(", ")} (declarations/reports.json erasureReasons), not free text; nothing was erased`
        : `erasure refused: reference must match ${ERASURE_REFERENCE_PATTERN.source} (a ticket id such as DPO-123), never a sentence or a name; nothing was erased`,
    );
  }
}

/** The reason and reference as declared, else {@link ErasureInputError}. */
export function parseErasureInput(reason: unknown, reference: unknown): { reason: ErasureReason; reference: string | null } {
  if (typeof reason !== "string" || !(ERASURE_REASONS as readonly string[]).includes(reason)) {
    throw new ErasureInputError("ERASURE_REASON_NOT_DECLARED", "reason");
  }
  if (reference !== undefined && (typeof reference !== "string" || !ERASURE_REFERENCE_PATTERN.test(reference))) {
    throw new ErasureInputError("ERASURE_REFERENCE_INVALID", "reference");
  }
  return { reason: reason as ErasureReason, reference: reference ?? null };
}

function isDuplicateKey(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: unknown }).code === 11000;
}

function hex(value: unknown): string | null {
  return value !== null && typeof value === "object" && "toHexString" in value ? String((value as { toHexString(): string }).toHexString()) : null;
}

/** The record of a stored request (the layout `sophia-ops erasure show` reads too). */
export function erasureRecord(d: Record<string, unknown>): ErasureRecord {
  const removed = (d["removed"] ?? {}) as Record<string, unknown>;
  const date = (v: unknown) => (v instanceof Date ? v : null);
  return {
    interviewId: hex(d["_id"]) ?? String(d["_id"]),
    organizationId: hex(d["organizationId"]),
    requestId: typeof d["requestId"] === "string" ? d["requestId"] : null,
    requestedBy: String(d["requestedBy"] ?? ""),
    requestedAt: date(d["requestedAt"]),
    reason: String(d["reason"] ?? ""),
    reference: typeof d["reference"] === "string" ? d["reference"] : null,
    via: String(d["via"] ?? ""),
    state: d["state"] === "DONE" ? "DONE" : "PENDING",
    removed: {
      report: typeof removed["report"] === "string" ? removed["report"] : null,
      outboxEntries: Number(removed["outboxEntries"] ?? 0),
      dlqMessages: Number(removed["dlqMessages"] ?? 0),
    },
    pending: Array.isArray(d["pending"]) ? (d["pending"] as { what: string; why: string }[]).map((p) => ({ what: String(p.what), why: String(p.why) })) : [],
    queuesSweptAt: date(d["queuesSweptAt"]),
    completedAt: date(d["completedAt"]),
    repeats: Array.isArray(d["repeats"]) ? d["repeats"].length : 0,
  };
}

function requireText(field: string, value: unknown): void {
  if (typeof value !== "string" || value.trim() === "") {
    throw new ContractViolationError("report-generate", [{ path: `/${field}`, problem: "must be a non-empty string" }]);
  }
}

/**
 * Requests the erasure of the candidate's data of `interviewIds`, recorded with who, when and
 * why, and removes what the API's role may: the report (replaced by its tombstone) and the
 * outbox entries. Returns each request as stored (`PENDING` until the operators' sweep). A
 * repeated request is recorded as a repeat (`repeats`) and does the removal again.
 */
export async function requestErasure(options: RequestErasureOptions): Promise<ErasureRecord[]> {
  const { interviewIds, organizationId, requestedBy, reason, erasures, objectId } = options;
  const now = options.now ?? (() => new Date());
  if (!Array.isArray(interviewIds) || interviewIds.length === 0) {
    throw new ContractViolationError("report-generate", [{ path: "/interviewIds", problem: "must name at least one interview" }]);
  }
  for (const interviewId of interviewIds) assertValid("report-generate", { interviewId, organizationId });
  requireText("requestedBy", requestedBy);
  parseErasureInput(reason, options.reference);
  const requestId = options.requestId ?? `api-erasure-${interviewIds[0]}`;
  const foreign: string[] = [];
  for (const interviewId of interviewIds) {
    const own = await options.interviews.findOne({ _id: objectId(interviewId), organizationId: objectId(organizationId) });
    if (own === null) foreign.push(interviewId);
  }
  if (foreign.length > 0) throw new ErasureRefusedError(foreign);
  // Every request first (as sophia-ops does): a failure at one interview's stored copies leaves
  // the others recorded, PENDING, for the next sweep.
  const at = now();
  for (const interviewId of interviewIds) await recordRequest(options, interviewId, requestId, at);
  const records: ErasureRecord[] = [];
  for (const interviewId of interviewIds) {
    await eraseStored(options, interviewId, now());
    const stored = await erasures.findOne({ _id: objectId(interviewId) });
    if (stored !== null) records.push(erasureRecord(stored));
  }
  return records;
}

async function recordRequest(options: RequestErasureOptions, interviewId: string, requestId: string, at: Date): Promise<void> {
  const { organizationId, requestedBy, reason, erasures, objectId } = options;
  const reference = options.reference ?? null;
  const id = objectId(interviewId);
  // An upsert on `_id`: the filter names one document, so a second request matches the first (a
  // repeat) instead of inserting next to it, with or without any index but `_id`'s. `_id` is in
  // `$setOnInsert` too: the stored id is the ObjectId, not what a server derives from the filter.
  let first: boolean;
  try {
    const written = await erasures.updateOne({ _id: id }, { $setOnInsert: {
      _id: id,
      interviewId: id,
      organizationId: objectId(organizationId),
      requestId,
      requestedBy,
      requestedAt: at,
      reason,
      reference,
      via: API_ERASURE_VIA,
      state: "PENDING",
      removed: { report: null, outboxEntries: 0, dlqMessages: 0 },
      pending: [
        { what: "report", why: "the report's tombstone is not written yet" },
        { what: "queues", why: "the DLQs are not swept yet (sophia-ops erasure sweep)" },
      ],
      completedAt: null,
      updatedAt: at,
    } }, { upsert: true });
    first = (written.upsertedCount ?? 0) > 0;
  } catch (e) {
    // Two first requests at once: the server's upsert lost the race to the other's insert.
    if (!isDuplicateKey(e)) throw e;
    first = false;
  }
  if (!first) await erasures.updateOne({ _id: id }, { $push: { repeats: { by: requestedBy, at, reason, reference, via: API_ERASURE_VIA } } });
}

/** The tombstone of the report: ids and dates only, no retention date (the TTL index never removes it). */
export function tombstoneDocument(interviewId: unknown, organizationId: unknown, at: Date): Record<string, unknown> {
  return { interviewId, organizationId, status: ERASED_STATUS, attemptCount: 0, erasedAt: at, createdAt: at, updatedAt: at };
}

async function eraseStored(options: RequestErasureOptions, interviewId: string, at: Date): Promise<void> {
  const { organizationId, erasures, outbox, objectId } = options;
  const id = objectId(interviewId);
  const removedReport = await replaceReport(options, id, objectId(organizationId), at);
  if (removedReport === null) throw new ErasureRaceError(interviewId);
  const deleted = await outbox.deleteMany({ interviewId: id });
  await erasures.updateOne({ _id: id, "removed.report": null }, { $set: { "removed.report": removedReport } });
  await erasures.updateOne({ _id: id }, { $inc: { "removed.outboxEntries": deleted.deletedCount }, $set: { updatedAt: at }, $pull: { pending: { what: "report" } } });
}

/**
 * Replaces the organization's report(s) of the interview by the tombstone, first by
 * `interviewId` (never relying on the unique index: without it an insert would sit next to the
 * real report), and inserts the tombstone only where none matched; then looks again, so that a
 * report created meanwhile (next to the tombstone where the index is missing) is replaced too.
 * Returns what was removed, or `null` when the report still changed after the last try.
 */
async function replaceReport(options: RequestErasureOptions, id: unknown, organization: unknown, at: Date): Promise<string | null> {
  const { reports, objectId } = options;
  const tombstone = tombstoneDocument(id, organization, at);
  const mine = { interviewId: id, organizationId: organization };
  let removed: string | null = null;
  let inserted = false;
  for (let attempt = 0; attempt < ERASURE_REPLACE_TRIES; attempt++) {
    const live = { ...mine, status: { $nin: [ERASED_STATUS] } };
    const before = (await reports.findOneAndReplace(live, tombstone, { returnDocument: "before", includeResultMetadata: true })).value;
    if (before !== null) {
      removed = `report ${String(before["status"] ?? "unknown")}`;
      continue;
    }
    if ((await reports.findOne(mine)) !== null) return removed ?? (inserted ? "none" : "already-erased");
    try {
      await reports.insertOne({ _id: objectId(newObjectIdHex()), ...tombstone });
      inserted = true;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
  }
  return null;
}

/** A new ObjectId's hex (seconds, then 8 random bytes), so that the caller's factory builds the id. */
function newObjectIdHex(): string {
  return Math.floor(Date.now() / 1000).toString(16).padStart(8, "0") + randomBytes(8).toString("hex");
}

/** The stored request of one interview (`null`: none), the proof the API shows. */
export async function readErasure(options: { interviewId: string; erasures: Pick<ErasureCollection, "findOne">; objectId: ObjectIdFactory }): Promise<ErasureRecord | null> {
  const stored = await options.erasures.findOne({ _id: options.objectId(options.interviewId) });
  return stored === null ? null : erasureRecord(stored);
}

/** The collection names the erasure touches, for the caller's models. */
export const ERASURE_COLLECTIONS = { erasures: ERASURES_COLLECTION, reports: REPORTS_COLLECTION, outbox: OUTBOX_COLLECTION } as const;
