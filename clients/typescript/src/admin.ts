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
 */
// The attempt limit, the lease length and the reset rules, declared once for Rust and this package (exported at the top level from src/generated).
import { MAX_REPORT_ATTEMPTS, REPORT_LEASE_SECONDS, REPORT_RESET_RULES, REPORT_RESET_TRIES, type ResetRule } from "./generated/report-rules";
import { adminRetryRequestId, type PublishContext, type PublishResult, type ReportGenerateInput } from "./publish";
import { assertValid, ContractViolationError } from "./validate";

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

/**
 * The attempts reset as the Rust side writes it (`reset_for_retry`), for a report read just
 * before: a compare-and-set on the state read (`_id`, `status`, `attemptCount`, and for a stuck
 * PROCESSING report its `leaseId` and a claim that has still ended), so a consumer claiming the
 * report in between makes it match nothing; it sets `attemptCount` 0, `attemptsResetAt`,
 * `updatedAt` and `lastRetry: {at, by, via, attemptsBefore, statusBefore}`, and appends the same
 * record to `retries`; for a stuck PROCESSING report it also writes the ended claim's end as
 * `leaseExpiresAt` (else the reset's own `updatedAt` would hold a report without a lease for
 * another lease length). Plain data: run it with `updateOne(filter, update)` of any driver.
 */
export function resetAttemptsOperation(
  report: Record<string, unknown>,
  operator: RetryOperator,
  now: Date = new Date(),
): { filter: Record<string, unknown>; update: Record<string, unknown> } {
  const status = String(report["status"]);
  const filter: Record<string, unknown> = { _id: report["_id"], status, attemptCount: report["attemptCount"] ?? null };
  const mark = { at: now, by: operator.by, via: operator.via ?? API_RETRY_VIA, attemptsBefore: count(report["attemptCount"]), statusBefore: status };
  const set: Record<string, unknown> = { attemptCount: 0, attemptsResetAt: now, updatedAt: now, lastRetry: mark };
  if (resetRule(report) === "whenLeaseExpired") {
    filter["leaseId"] = report["leaseId"] ?? null;
    filter["$or"] = claimEndedBranches(now);
    set["leaseExpiresAt"] = reportHeldUntil(report) ?? now;
  }
  return { filter, update: { $set: set, $push: { retries: mark } } };
}

export type AdminRetryErrorKind = "interview-not-found" | "attempts-exhausted" | "not-failed" | "contended" | "erased";

/** Why a retry was refused (nothing was published); `kind` is what to branch on. */
export class AdminRetryError extends Error {
  override readonly name = "AdminRetryError";
  constructor(
    readonly kind: AdminRetryErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export interface RetryReportGenerationOptions {
  interviewId: string;
  organizationId: string;
  /** Give a FAILED report a fresh attempt budget before re-publishing (`--reset-attempts`). */
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

export type RetryOutcome =
  | { outcome: "published"; requestId: string; attemptsReset: boolean; publish: PublishResult }
  | { outcome: "already-completed" };

function count(value: unknown): number {
  return typeof value === "number" ? value : typeof value === "object" && value !== null ? Number(value.valueOf()) : 0;
}

/**
 * Re-publishes `report.generate` for one interview of one organization, as
 * `sophia-ops report retry [--reset-attempts]`:
 *
 * - the interview must exist in that organization (else `interview-not-found`);
 * - a COMPLETED report: nothing is published (`already-completed`);
 * - `resetAttempts`: the report must be FAILED, or PROCESSING whose claim has ended (else
 *   `not-failed`); its attempts are reset (recorded with `operator`), then the message is
 *   published; a consumer racing the reset makes it decide again ({@link REPORT_RESET_TRIES}
 *   times, then `contended`);
 * - without it, a report at MAX_ATTEMPTS is refused (`attempts-exhausted`: a re-publish would be
 *   acknowledged without a retry);
 * - the request id is `admin-retry-<interviewId>`.
 *
 * The reset comes before the publish: if the publish then fails (or is skipped for a missing
 * REPORT_GENERATE_QUEUE_URL), the report is FAILED with 0 attempts and a plain retry publishes.
 */
export async function retryReportGeneration(options: RetryReportGenerationOptions): Promise<RetryOutcome> {
  const { interviewId, organizationId, resetAttempts, operator, interviews, reports, objectId, publisher } = options;
  const now = options.now ?? (() => new Date());
  assertValid("report-generate", { interviewId, organizationId });
  if (typeof operator !== "object" || operator === null || typeof operator.by !== "string" || operator.by.trim() === "") {
    throw new ContractViolationError("report-generate", [{ path: "/operator/by", problem: "must name who retries (a non-empty string)" }]);
  }
  if ((await interviews.findOne(interviewFilter(interviewId, organizationId, objectId))) === null) {
    throw new AdminRetryError(
      "interview-not-found",
      `interview ${interviewId} not found in organization ${organizationId} (absent, soft-deleted or another organization's)`,
    );
  }
  let attemptsReset = false;
  for (let tries = 0; ; tries++) {
    const report = await reports.findOne(reportFilter(interviewId, objectId));
    const status = report === null ? "absent" : String(report["status"]);
    if (report !== null && resetRule(report) === "erased") {
      throw new AdminRetryError("erased", `interview ${interviewId}: the candidate's data was erased; a report is never generated again`);
    }
    if (report !== null && resetRule(report) === "alreadyCompleted") return { outcome: "already-completed" };
    if (!resetAttempts) {
      if (report !== null && count(report["attemptCount"]) >= MAX_REPORT_ATTEMPTS) {
        throw new AdminRetryError(
          "attempts-exhausted",
          `the report has used its ${count(report["attemptCount"])} attempts (max ${MAX_REPORT_ATTEMPTS}): a re-publish would be acknowledged without a retry; ask for an attempts reset`,
        );
      }
      break;
    }
    if (report === null || !isResettable(report, now())) {
      throw new AdminRetryError("not-failed", `only a FAILED report's attempts can be reset; this one is ${status}`);
    }
    const { filter, update } = resetAttemptsOperation(report, operator, now());
    if ((await reports.updateOne(filter, update)).matchedCount === 1) {
      attemptsReset = true;
      break;
    }
    // A consumer changed the report since it was read: decide again from the new state.
    if (tries + 1 >= REPORT_RESET_TRIES) {
      throw new AdminRetryError("contended", `the report changed under ${REPORT_RESET_TRIES} reset attempts in a row (a consumer is working on it); try again`);
    }
  }
  const requestId = adminRetryRequestId(interviewId);
  const publish = await publisher.publishReportGenerate({ interviewId, organizationId }, { requestId });
  return { outcome: "published", requestId, attemptsReset, publish };
}
