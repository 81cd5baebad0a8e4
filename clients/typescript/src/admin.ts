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
import { adminRetryRequestId, type PublishContext, type PublishResult, type ReportGenerateInput } from "./publish";
import { assertValid } from "./validate";

/** The collections the consumers use (the API's Mongoose models map to the same names). */
export const INTERVIEWS_COLLECTION = "interviews";
export const REPORTS_COLLECTION = "interviewReports";
/** The consumer's MAX_ATTEMPTS: at this `attemptCount` a delivery marks the report FAILED and acknowledges. */
export const MAX_REPORT_ATTEMPTS = 3;

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

/**
 * The attempts reset as the Rust side writes it (ReportStore::reset_attempts): only a FAILED
 * report matches; `attemptCount` back to 0, `attemptsResetAt` and `updatedAt` now.
 */
export function resetAttemptsOperation(
  interviewId: string,
  objectId: ObjectIdFactory,
  now: Date = new Date(),
): { filter: Record<string, unknown>; update: Record<string, unknown> } {
  return {
    filter: { interviewId: objectId(interviewId), status: "FAILED" },
    update: { $set: { attemptCount: 0, attemptsResetAt: now, updatedAt: now } },
  };
}

export type AdminRetryErrorKind = "interview-not-found" | "attempts-exhausted" | "not-failed";

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
 * - `resetAttempts`: the report must be FAILED (else `not-failed`); its attempts are reset, then
 *   the message is published;
 * - without it, a report at MAX_ATTEMPTS is refused (`attempts-exhausted`: a re-publish would be
 *   acknowledged without a retry);
 * - the request id is `admin-retry-<interviewId>`.
 *
 * The reset comes before the publish: if the publish then fails (or is skipped for a missing
 * REPORT_GENERATE_QUEUE_URL), the report is FAILED with 0 attempts and a plain retry publishes.
 */
export async function retryReportGeneration(options: RetryReportGenerationOptions): Promise<RetryOutcome> {
  const { interviewId, organizationId, resetAttempts, interviews, reports, objectId, publisher } = options;
  assertValid("report-generate", { interviewId, organizationId });
  if ((await interviews.findOne(interviewFilter(interviewId, organizationId, objectId))) === null) {
    throw new AdminRetryError(
      "interview-not-found",
      `interview ${interviewId} not found in organization ${organizationId} (absent, soft-deleted or another organization's)`,
    );
  }
  const report = await reports.findOne(reportFilter(interviewId, objectId));
  const status = report === null ? "absent" : String(report["status"]);
  let attemptsReset = false;
  if (status === "COMPLETED") return { outcome: "already-completed" };
  if (resetAttempts) {
    if (status !== "FAILED") throw new AdminRetryError("not-failed", `only a FAILED report's attempts can be reset; this one is ${status}`);
    const { filter, update } = resetAttemptsOperation(interviewId, objectId, (options.now ?? (() => new Date()))());
    if ((await reports.updateOne(filter, update)).matchedCount !== 1) {
      throw new AdminRetryError("not-failed", "the report changed while it was reset: it is no longer FAILED");
    }
    attemptsReset = true;
  } else if (report !== null && count(report["attemptCount"]) >= MAX_REPORT_ATTEMPTS) {
    throw new AdminRetryError(
      "attempts-exhausted",
      `the report has used its ${count(report["attemptCount"])} attempts (max ${MAX_REPORT_ATTEMPTS}): a re-publish would be acknowledged without a retry; ask for an attempts reset`,
    );
  }
  const requestId = adminRetryRequestId(interviewId);
  const publish = await publisher.publishReportGenerate({ interviewId, organizationId }, { requestId });
  return { outcome: "published", requestId, attemptsReset, publish };
}
