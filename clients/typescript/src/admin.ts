/**
 * The API's admin "regenerate report", done as the operator CLI does it (`sophia-ops report retry
 * [--reset-attempts]`, functions/reports/src/admin.rs): never a synchronous generation, always a
 * `report.generate` re-publish; a FAILED report that used its attempts gets a fresh budget first,
 * because the consumer acknowledges a message for a report at MAX_ATTEMPTS without trying again.
 *
 * The package brings no MongoDB driver: the reads and the reset are plain data
 * ({@link interviewFilter}, {@link reportFilter}, {@link resetAttemptsOperation}) run through a
 * minimal collection interface ({@link MinimalCollection}) that the `mongodb` driver's
 * `Collection` and Mongoose's `Model.collection` both satisfy, with the caller's ObjectId.
 *
 * Every case is answered as an {@link AdminRetryResult} (./retry-results: a kind, a stable code,
 * an HTTP status and a message), and a second click while the first one's message is on its way
 * publishes nothing: the retry records `retryQueuedAt` in the same compare-and-set as its reset.
 */
// The attempt limit, the lease length and the reset rules, declared once for Rust and this package (exported at the top level from src/generated).
import { MAX_REPORT_ATTEMPTS, REPORT_LEASE_SECONDS, REPORT_RESET_RULES, REPORT_RESET_TRIES, type ResetRule } from "./generated/report-rules";
import { adminRetryRequestId, type PublishContext, type PublishResult, REPORT_GENERATE_QUEUE_URL, type ReportGenerateInput } from "./publish";
import { type AdminRetryResult, adminRetryResult, type RetryStateLeft } from "./retry-results";
import { check, type ContractIssue } from "./validate";

/** The collections the consumers use (the API's Mongoose models map to the same names). */
export const INTERVIEWS_COLLECTION = "interviews";
export const REPORTS_COLLECTION = "interviewReports";
/** The declared reset rule of a read report's status (`undefined` for a status no writer declares). */
function resetRule(report: Record<string, unknown>): ResetRule | undefined {
  const status = report["status"];
  return typeof status === "string" && Object.hasOwn(REPORT_RESET_RULES, status) ? REPORT_RESET_RULES[status as keyof typeof REPORT_RESET_RULES] : undefined;
}

/** Builds the caller's ObjectId from 24 hex characters (`(hex) => new ObjectId(hex)`, `mongoose.Types.ObjectId`). */
export type ObjectIdFactory = (hex: string) => unknown;

/** What the retry needs of a collection: the driver's `Collection` and Mongoose's `Model.collection` fit. */
export interface MinimalCollection {
  findOne(filter: Record<string, unknown>): Promise<Record<string, unknown> | null>;
  updateOne(filter: Record<string, unknown>, update: Record<string, unknown>): Promise<{ matchedCount: number }>;
}

/** What the retry needs of a publisher: `InterviewQueuePublisher` fits. */
export interface ReportGeneratePublisher {
  publishReportGenerate(input: ReportGenerateInput, context?: PublishContext): Promise<PublishResult>;
}

/** The interview the report is for: this organization's, not soft-deleted (as the consumer loads it). */
export function interviewFilter(interviewId: string, organizationId: string, objectId: ObjectIdFactory): Record<string, unknown> {
  return { _id: objectId(interviewId), organizationId: objectId(organizationId), deletedAt: null };
}

/** The interview's report document (one per interview). */
export function reportFilter(interviewId: string, objectId: ObjectIdFactory): Record<string, unknown> {
  return { interviewId: objectId(interviewId) };
}

/** Who retries a report, and through what (recorded on the report as `lastRetry.by` / `.via`). */
export interface RetryOperator {
  /** The admin user (an id or an e-mail: not candidate data). */
  by: string;
  /** Default {@link API_RETRY_VIA}. The operator CLI writes `report-retry` / `dlq-redrive`. */
  via?: string | undefined;
}

/** `lastRetry.via` of a retry from the API. */
export const API_RETRY_VIA = "api-admin-retry";

const asDate = (value: unknown): Date | undefined => (value instanceof Date ? value : undefined);

/**
 * When a read report's claim by a worker ends, by the consumer's claim rule
 * (functions/reports/src/claim.rs `held_until`): for a report whose status is held while its claim
 * runs (PROCESSING: reset rule `whenLeaseExpired`), its `leaseExpiresAt`, or without one its
 * `updatedAt` (else `createdAt`) plus {@link REPORT_LEASE_SECONDS}; `undefined` for any other
 * status, or with none of those dates (nobody holds it). Held up to and including that instant.
 */
export function reportHeldUntil(report: Record<string, unknown>): Date | undefined {
  if (resetRule(report) !== "whenLeaseExpired") return undefined;
  const lease = asDate(report["leaseExpiresAt"]);
  if (lease !== undefined) return lease;
  const lastWrite = asDate(report["updatedAt"]) ?? asDate(report["createdAt"]);
  return lastWrite === undefined ? undefined : new Date(lastWrite.getTime() + REPORT_LEASE_SECONDS * 1000);
}

/**
 * Whether a read report can get a fresh attempt budget now, by the rules the Rust side applies
 * (functions/reports/src/admin.rs `reset_for_retry`), generated from declarations/reports.json
 * ({@link REPORT_RESET_RULES}): a FAILED report, or one PROCESSING whose claim has ended
 * ({@link reportHeldUntil} before `now`: its worker is gone, and the consumer would reclaim it too);
 * never COMPLETED, NOT_STARTED (it has its whole budget) or PROCESSING under a claim that runs
 * (a worker is generating it now).
 */
export function isResettable(report: Record<string, unknown>, now: Date): boolean {
  const rule = resetRule(report);
  const heldUntil = reportHeldUntil(report);
  return rule === "reset" || (rule === "whenLeaseExpired" && (heldUntil === undefined || heldUntil.getTime() < now.getTime()));
}

/** The branches of a PROCESSING report whose claim has ended at `now` (the `$or` of claim.rs `lapsed_filter`, the status pinned by the caller). */
function claimEndedBranches(now: Date): Record<string, unknown>[] {
  const stale = new Date(now.getTime() - REPORT_LEASE_SECONDS * 1000);
  return [
    { leaseExpiresAt: { $lt: now } },
    { leaseExpiresAt: null, updatedAt: { $lt: stale } },
    { leaseExpiresAt: null, updatedAt: null, createdAt: { $lt: stale } },
    { leaseExpiresAt: null, updatedAt: null, createdAt: null },
  ];
}

/** The statuses a worker holds while its claim runs (reset rule `whenLeaseExpired`: PROCESSING). */
const HELD_WHILE_CLAIMED = Object.keys(REPORT_RESET_RULES).filter((s) => REPORT_RESET_RULES[s as keyof typeof REPORT_RESET_RULES] === "whenLeaseExpired");

/**
 * The MongoDB filter of a report whose claim has ended at `now`, as the consumer's claim rule
 * writes it (functions/reports/src/claim.rs `lapsed_filter`): PROCESSING, and past its
 * `leaseExpiresAt`, or without a lease past `updatedAt` (else `createdAt`) plus
 * {@link REPORT_LEASE_SECONDS}, or with none of those dates. The documents it matches are those
 * {@link isResettable} accepts among PROCESSING ones; {@link resetAttemptsOperation} requires it.
 * Plain data: `find(reportClaimEndedFilter(new Date()))` lists the stuck reports.
 */
export function reportClaimEndedFilter(now: Date): Record<string, unknown> {
  return { status: { $in: HELD_WHILE_CLAIMED }, $or: claimEndedBranches(now) };
}

/** The report field an admin retry writes when it queues a message ({@link reportRetryQueuedAt}). */
export const RETRY_QUEUED_FIELD = "retryQueuedAt";

/**
 * When an earlier admin retry queued the `report.generate` that is still on its way to the
 * consumer, or `undefined`: the report's `retryQueuedAt`, as long as it equals `updatedAt` (the
 * retry's write was the last one: the consumer has not claimed the report since) and less than
 * {@link REPORT_LEASE_SECONDS} have passed (a message nobody picked up within a lease length is
 * taken as lost, and a click publishes again: a second message is harmless, the consumer
 * generates a report once). A retry while it is set publishes nothing (`already-queued`).
 */
export function reportRetryQueuedAt(report: Record<string, unknown>, now: Date): Date | undefined {
  const queued = asDate(report[RETRY_QUEUED_FIELD]);
  const updated = asDate(report["updatedAt"]);
  if (queued === undefined || updated === undefined || queued.getTime() !== updated.getTime()) return undefined;
  return now.getTime() - queued.getTime() <= REPORT_LEASE_SECONDS * 1000 ? queued : undefined;
}

/**
 * The compare-and-set filter of a write decided on `report` as read at `now`: the document
 * (`_id`), its `status` and `attemptCount`, and its last write (`updatedAt`, which every writer
 * sets; a claim also writes a new `leaseExpiresAt`), its lease end and queued mark, each as read
 * (`null` when absent); for a PROCESSING report also a claim that has still ended. A consumer
 * writing the report in between (claim, failure, completion) or another click makes it match
 * nothing.
 */
function stateFilter(report: Record<string, unknown>, now: Date): Record<string, unknown> {
  const filter: Record<string, unknown> = {
    _id: report["_id"],
    status: String(report["status"]),
    attemptCount: report["attemptCount"] ?? null,
    updatedAt: report["updatedAt"] ?? null,
    leaseExpiresAt: report["leaseExpiresAt"] ?? null,
    [RETRY_QUEUED_FIELD]: report[RETRY_QUEUED_FIELD] ?? null,
  };
  if (resetRule(report) === "whenLeaseExpired") filter["$or"] = claimEndedBranches(now);
  return filter;
}

/**
 * The attempts reset as the Rust side writes it (`reset_for_retry`), for a report read just
 * before: a compare-and-set on the state read (see the filter below), so a consumer writing the
 * report in between makes it match nothing; it sets `attemptCount` 0, `attemptsResetAt`,
 * `updatedAt` and `lastRetry: {at, by, via, attemptsBefore, statusBefore}`, and appends the same
 * record to `retries`; for a stuck PROCESSING report it also writes the ended claim's end as
 * `leaseExpiresAt` (else the reset's own `updatedAt` would hold a report without a lease for
 * another lease length). The filter pins `_id`, `status`, `attemptCount`, `updatedAt`,
 * `leaseExpiresAt` and `retryQueuedAt` as read (`null` when absent), and for a PROCESSING report
 * a claim that has still ended. Plain data: run it with `updateOne(filter, update)` of any driver.
 */
export function resetAttemptsOperation(
  report: Record<string, unknown>,
  operator: RetryOperator,
  now: Date = new Date(),
): { filter: Record<string, unknown>; update: Record<string, unknown> } {
  const status = String(report["status"]);
  const mark = { at: now, by: operator.by, via: operator.via ?? API_RETRY_VIA, attemptsBefore: count(report["attemptCount"]), statusBefore: status };
  const set: Record<string, unknown> = { attemptCount: 0, attemptsResetAt: now, updatedAt: now, lastRetry: mark };
  if (resetRule(report) === "whenLeaseExpired") set["leaseExpiresAt"] = reportHeldUntil(report) ?? now;
  return { filter: stateFilter(report, now), update: { $set: set, $push: { retries: mark } } };
}

/**
 * The write of an admin retry that is about to publish, decided on `report` as read at `now`:
 * with `resetAttempts` the attempts reset ({@link resetAttemptsOperation}), and in any case the
 * queued mark (`retryQueuedAt` and `updatedAt` set to `now`, for {@link reportRetryQueuedAt}), as
 * one compare-and-set on the state read: of two clicks, one matches; the other reads again and
 * answers `already-queued`. For a PROCESSING report whose claim has ended, the ended claim's end
 * is written as `leaseExpiresAt` (the new `updatedAt` must not hold it again).
 */
export function queueRetryOperation(
  report: Record<string, unknown>,
  options: { resetAttempts: boolean; operator: RetryOperator },
  now: Date = new Date(),
): { filter: Record<string, unknown>; update: Record<string, unknown> } {
  if (options.resetAttempts) {
    const { filter, update } = resetAttemptsOperation(report, options.operator, now);
    return { filter, update: { ...update, $set: { ...(update["$set"] as Record<string, unknown>), [RETRY_QUEUED_FIELD]: now } } };
  }
  const set: Record<string, unknown> = { updatedAt: now, [RETRY_QUEUED_FIELD]: now };
  if (resetRule(report) === "whenLeaseExpired") set["leaseExpiresAt"] = reportHeldUntil(report) ?? now;
  return { filter: stateFilter(report, now), update: { $set: set } };
}

export interface RetryReportGenerationOptions {
  interviewId: string;
  organizationId: string;
  /** Give a FAILED report (or a PROCESSING one whose claim has ended) a fresh attempt budget before re-publishing (`--reset-attempts`). */
  resetAttempts: boolean;
  /** Who asks (recorded with a reset in `lastRetry` and `retries`). */
  operator: RetryOperator;
  interviews: MinimalCollection;
  reports: MinimalCollection;
  objectId: ObjectIdFactory;
  publisher: ReportGeneratePublisher;
  /** Default: `() => new Date()`. */
  now?: (() => Date) | undefined;
}

function count(value: unknown): number {
  return typeof value === "number" ? value : typeof value === "object" && value !== null ? Number(value.valueOf()) : 0;
}

/** What to do with a report as read: answer now, or write (then publish). */
type Decision = { answer: AdminRetryResult } | { write: { filter: Record<string, unknown>; update: Record<string, unknown> } };

/**
 * The decision of a retry on the report as read at `now`, in this order: absent
 * (`report-not-found`), erased (`interview-erased`), COMPLETED (`already-completed`), queued by an earlier click
 * (`already-queued`), held by a worker (`in-progress`, until when), then with `resetAttempts` a
 * status the reset refuses (`not-failed`), without it no attempt left (`attempts-exhausted`);
 * else the write of {@link queueRetryOperation}.
 */
function decide(report: Record<string, unknown> | null, interviewId: string, options: { resetAttempts: boolean; operator: RetryOperator }, now: Date): Decision {
  if (report === null) {
    return { answer: adminRetryResult("report-not-found", "This interview has no report yet, so there is nothing to regenerate.", {}) };
  }
  const rule = resetRule(report);
  if (rule === "erased") {
    return { answer: adminRetryResult("interview-erased", "The candidate's data for this interview was erased; its report is never generated again.", {}) };
  }
  if (rule === "alreadyCompleted") return { answer: adminRetryResult("already-completed", "The report is already generated; nothing was queued.", {}) };
  const queuedAt = reportRetryQueuedAt(report, now);
  if (queuedAt !== undefined) {
    return {
      answer: adminRetryResult("already-queued", `A regeneration was already queued at ${queuedAt.toISOString()}; nothing was queued again.`, {
        requestId: adminRetryRequestId(interviewId),
        queuedAt,
      }),
    };
  }
  const heldUntil = reportHeldUntil(report);
  if (rule === "whenLeaseExpired" && heldUntil !== undefined && heldUntil.getTime() >= now.getTime()) {
    return {
      answer: adminRetryResult("in-progress", `The report is being generated right now (held until ${heldUntil.toISOString()}); try again after that if it fails.`, { heldUntil }),
    };
  }
  const attempts = count(report["attemptCount"]);
  if (options.resetAttempts && rule !== "reset" && rule !== "whenLeaseExpired") {
    const status = String(report["status"]);
    return { answer: adminRetryResult("not-failed", `Only a failed report's attempts can be reset; this one is ${status}. Retry without a reset.`, { status }) };
  }
  if (!options.resetAttempts && attempts >= MAX_REPORT_ATTEMPTS) {
    return {
      answer: adminRetryResult(
        "attempts-exhausted",
        `The report has used its ${attempts} attempts (max ${MAX_REPORT_ATTEMPTS}); a retry needs an attempts reset.`,
        { attempts, maxAttempts: MAX_REPORT_ATTEMPTS },
      ),
    };
  }
  return { write: queueRetryOperation(report, options, now) };
}

/** Who may retry: a non-empty `operator.by`. */
function operatorIssues(operator: RetryOperator | undefined): ContractIssue[] {
  const ok = typeof operator === "object" && operator !== null && typeof operator.by === "string" && operator.by.trim() !== "";
  return ok ? [] : [{ path: "/operator/by", problem: "must name who retries (a non-empty string)" }];
}

/**
 * After a publish that did not reach the queue: removes the queued mark this retry wrote (only
 * if nothing wrote the report since), so that a second click publishes; says what was left.
 */
async function unqueue(reports: MinimalCollection, filter: Record<string, unknown>, queuedAt: Date, attemptsReset: boolean): Promise<RetryStateLeft> {
  let queuedMarkCleared = false;
  try {
    const cleared = await reports.updateOne({ _id: filter["_id"], updatedAt: queuedAt, [RETRY_QUEUED_FIELD]: queuedAt }, { $unset: { [RETRY_QUEUED_FIELD]: "" } });
    queuedMarkCleared = cleared.matchedCount === 1;
  } catch {
    queuedMarkCleared = false;
  }
  const retryableAt = queuedMarkCleared ? undefined : new Date(queuedAt.getTime() + REPORT_LEASE_SECONDS * 1000 + 1);
  return { attemptsReset, queuedMarkCleared, safeToRetry: queuedMarkCleared, retryableAt };
}

/** What a person reads about the state a failed or skipped publish left. */
function leftBehind(left: RetryStateLeft): string {
  const reset = left.attemptsReset ? " The attempts reset stays recorded (the report keeps its fresh attempt budget)." : "";
  const again = left.safeToRetry
    ? " Retrying is safe."
    : ` The report could not be unmarked; a retry before ${left.retryableAt?.toISOString()} answers "already queued".`;
  return reset + again;
}

/**
 * Re-publishes `report.generate` for one interview of one organization, as
 * `sophia-ops report retry [--reset-attempts]` does, and answers an {@link AdminRetryResult}
 * (see its kinds in the README's "Admin retry"); never generates synchronously:
 *
 * - bad ids or no operator: `invalid-request` (400, the fields named);
 * - the interview must exist in that organization, not soft-deleted: else `interview-not-found`;
 * - then, on the report as read: `report-not-found`, `already-completed`, `already-queued` (an
 *   earlier click's message is still on its way: nothing is published again), `in-progress` (a
 *   worker holds it, until `heldUntil`), `not-failed` (a reset asked of a report the reset
 *   refuses), `attempts-exhausted` (no reset asked, no attempt left);
 * - else one compare-and-set write: the attempts reset if asked, and the queued mark
 *   (`retryQueuedAt`); a concurrent writer makes it decide again from the new state
 *   ({@link REPORT_RESET_TRIES} times, then `contended`); then the publish, with request id
 *   `admin-retry-<interviewId>`: `queued`, or `publish-skipped` / `send-failed`, which remove the
 *   queued mark again and say what state was left and whether clicking again is safe.
 *
 * Only the database's own errors (a driver exception) are thrown.
 */
export async function retryReportGeneration(options: RetryReportGenerationOptions): Promise<AdminRetryResult> {
  const { interviewId, organizationId, resetAttempts, operator, interviews, reports, objectId, publisher } = options;
  const now = options.now ?? (() => new Date());
  const issues = [...check("report-generate", { interviewId, organizationId }), ...operatorIssues(operator)];
  if (issues.length > 0) {
    return adminRetryResult("invalid-request", `The request is invalid: ${issues.map((i) => `${i.path} ${i.problem}`).join("; ")}.`, { issues });
  }
  if ((await interviews.findOne(interviewFilter(interviewId, organizationId, objectId))) === null) {
    return adminRetryResult("interview-not-found", "No such interview in this organization (absent, deleted or another organization's).", {});
  }
  for (let tries = 0; tries < REPORT_RESET_TRIES; tries++) {
    const decision = decide(await reports.findOne(reportFilter(interviewId, objectId)), interviewId, { resetAttempts, operator }, now());
    if ("answer" in decision) return decision.answer;
    const { filter, update } = decision.write;
    if ((await reports.updateOne(filter, update)).matchedCount === 1) {
      const queuedAt = (update["$set"] as Record<string, Date>)[RETRY_QUEUED_FIELD]!;
      return publishQueued(options, filter, queuedAt);
    }
    // A consumer (or another click) wrote the report since it was read: decide again.
  }
  return adminRetryResult("contended", `The report changed under ${REPORT_RESET_TRIES} tries in a row (a worker is busy with it); try again in a moment.`, {
    tries: REPORT_RESET_TRIES,
  });
}

/** Names a generic `Error`'s class: a network error's `name` is only `Error` (or `AggregateError`, `TypeError`). */
const GENERIC_ERROR_NAMES = new Set(["Error", "AggregateError", "TypeError"]);

/**
 * What a failed send's `errorName` says: the SDK error's own name (`QueueDoesNotExist`,
 * `TimeoutError`, `AccessDenied`...); for a generic `Error` (a network failure) its system `code`
 * or its `cause`'s (`ECONNREFUSED`, `ENOTFOUND`, `ECONNRESET`...); else the name itself.
 */
function sendErrorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  if (!GENERIC_ERROR_NAMES.has(error.name)) return error.name;
  const codeOf = (e: unknown): string | undefined => {
    const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
    return typeof code === "string" && /^[A-Z][A-Z0-9_]{1,63}$/.test(code) ? code : undefined;
  };
  return codeOf(error) ?? codeOf(error.cause) ?? error.name;
}

/** The publish after the queued mark was written, and its result. */
async function publishQueued(options: RetryReportGenerationOptions, filter: Record<string, unknown>, queuedAt: Date): Promise<AdminRetryResult> {
  const { interviewId, organizationId, resetAttempts, reports, publisher } = options;
  const requestId = adminRetryRequestId(interviewId);
  let publish: PublishResult;
  try {
    publish = await publisher.publishReportGenerate({ interviewId, organizationId }, { requestId });
  } catch (error) {
    const left = await unqueue(reports, filter, queuedAt, resetAttempts);
    const errorName = sendErrorName(error);
    const result = adminRetryResult("send-failed", `Sending the regeneration request failed (${errorName}).${leftBehind(left)}`, { ...left, errorName });
    Object.defineProperty(result, "cause", { value: error, enumerable: false });
    return result;
  }
  if (publish.status === "skipped") {
    const left = await unqueue(reports, filter, queuedAt, resetAttempts);
    return adminRetryResult(
      "publish-skipped",
      `Nothing was sent: ${REPORT_GENERATE_QUEUE_URL} is not set on this server (a development setup).${leftBehind(left)}`,
      { ...left, variable: REPORT_GENERATE_QUEUE_URL },
    );
  }
  return adminRetryResult("queued", resetAttempts ? "The report's attempts were reset and its regeneration was queued." : "The report's regeneration was queued.", {
    requestId,
    queuedAt,
    attemptsReset: resetAttempts,
    messageId: publish.messageId,
  });
}
