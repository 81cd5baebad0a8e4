/**
 * What the admin retry ({@link retryReportGeneration} of ./admin) answers: one result per case,
 * each with a stable `code` for the UI to branch on, the HTTP status an admin endpoint answers
 * with, and a `message` for a person. Returned, never thrown (except the database's own errors):
 * `res.status(r.httpStatus).json(adminRetryResponseBody(r))` is a whole endpoint.
 *
 * A new case is one row in {@link ADMIN_RETRY_RESULT_KINDS} and one member of
 * {@link AdminRetryResult}; the README's table is checked against the rows.
 */
import type { ContractIssue } from "./validate";

/** Every result kind: its stable code, its HTTP status, and whether the retry is (or already was) on its way. */
export const ADMIN_RETRY_RESULT_KINDS = {
  queued: { code: "REPORT_RETRY_QUEUED", httpStatus: 202, ok: true },
  "already-queued": { code: "REPORT_RETRY_ALREADY_QUEUED", httpStatus: 202, ok: true },
  "already-completed": { code: "REPORT_ALREADY_COMPLETED", httpStatus: 409, ok: false },
  "in-progress": { code: "REPORT_IN_PROGRESS", httpStatus: 409, ok: false },
  "attempts-exhausted": { code: "REPORT_ATTEMPTS_EXHAUSTED", httpStatus: 409, ok: false },
  "not-failed": { code: "REPORT_NOT_FAILED", httpStatus: 409, ok: false },
  "interview-not-found": { code: "INTERVIEW_NOT_FOUND", httpStatus: 404, ok: false },
  "report-not-found": { code: "REPORT_NOT_FOUND", httpStatus: 404, ok: false },
  "interview-erased": { code: "INTERVIEW_ERASED", httpStatus: 410, ok: false },
  "invalid-request": { code: "REPORT_RETRY_INVALID_REQUEST", httpStatus: 400, ok: false },
  contended: { code: "REPORT_RETRY_CONTENDED", httpStatus: 503, ok: false },
  "publish-skipped": { code: "REPORT_RETRY_PUBLISH_SKIPPED", httpStatus: 503, ok: false },
  "send-failed": { code: "REPORT_RETRY_SEND_FAILED", httpStatus: 502, ok: false },
} as const;

export type AdminRetryResultKind = keyof typeof ADMIN_RETRY_RESULT_KINDS;

type Base<K extends AdminRetryResultKind> = {
  readonly kind: K;
  readonly code: (typeof ADMIN_RETRY_RESULT_KINDS)[K]["code"];
  readonly httpStatus: (typeof ADMIN_RETRY_RESULT_KINDS)[K]["httpStatus"];
  readonly ok: (typeof ADMIN_RETRY_RESULT_KINDS)[K]["ok"];
  /** For a person (an admin), in English; names no candidate data. */
  readonly message: string;
};

/** The state a retry that did not reach the queue left behind, and what a second click does. */
export interface RetryStateLeft {
  /** The attempts reset stays written (`attemptCount` 0, `lastRetry`): harmless, the report keeps its fresh budget. */
  readonly attemptsReset: boolean;
  /** The report is no longer marked as queued (`retryQueuedAt` removed): a second click publishes. */
  readonly queuedMarkCleared: boolean;
  /** Clicking again now publishes (`true`), or answers `already-queued` until `retryableAt`. */
  readonly safeToRetry: boolean;
  /** Without `safeToRetry`: when a click publishes again (the queued mark lapses). */
  readonly retryableAt?: Date | undefined;
}

/** The result of an admin retry, discriminated by `kind` (or by `code`). */
export type AdminRetryResult =
  | (Base<"queued"> & {
      readonly requestId: string;
      /** When it was queued (also the report's `retryQueuedAt`). */
      readonly queuedAt: Date;
      /** The attempt budget was reset first (`resetAttempts: true`). */
      readonly attemptsReset: boolean;
      /** SQS's id of the message. */
      readonly messageId: string;
    })
  | (Base<"already-queued"> & {
      readonly requestId: string;
      /** When the earlier click queued it; nothing was published now. */
      readonly queuedAt: Date;
    })
  | Base<"already-completed">
  | (Base<"in-progress"> & {
      /** A worker holds the report until this instant (inclusive); after it, a retry with a reset applies. */
      readonly heldUntil: Date;
    })
  | (Base<"attempts-exhausted"> & { readonly attempts: number; readonly maxAttempts: number })
  | (Base<"not-failed"> & { readonly status: string })
  | Base<"interview-not-found">
  | Base<"report-not-found">
  /** The candidate's data was erased (the report is an `ERASED` tombstone): a report is never generated again. */
  | Base<"interview-erased">
  | (Base<"invalid-request"> & { readonly issues: readonly ContractIssue[] })
  | (Base<"contended"> & { readonly tries: number })
  | (Base<"publish-skipped"> & RetryStateLeft & {
      /** The variable that is unset (`REPORT_GENERATE_QUEUE_URL`). */
      readonly variable: string;
    })
  | (Base<"send-failed"> & RetryStateLeft & {
      /** The SDK error's name (e.g. `QueueDoesNotExist`, `TimeoutError`), or for a network error (a plain `Error`) its `code` / `cause.code` (e.g. `ECONNREFUSED`); the error itself is `cause`, not enumerable (kept out of JSON). */
      readonly errorName: string;
      readonly cause?: unknown;
    });

type Details<K extends AdminRetryResultKind> = Omit<Extract<AdminRetryResult, { kind: K }>, keyof Base<K> | "cause">;

/** Builds the result of `kind` with its code, status and message. */
export function adminRetryResult<K extends AdminRetryResultKind>(kind: K, message: string, details: Details<K>): Extract<AdminRetryResult, { kind: K }> {
  const { code, httpStatus, ok } = ADMIN_RETRY_RESULT_KINDS[kind];
  return { kind, code, httpStatus, ok, message, ...details } as unknown as Extract<AdminRetryResult, { kind: K }>;
}

type Jsonified<T> = { [P in keyof T]: T[P] extends Date ? string : T[P] extends Date | undefined ? string | undefined : T[P] };
/** A result as JSON (dates as ISO-8601 strings, no `cause`): the body an admin endpoint sends to a browser. */
export type AdminRetryResponseBody = AdminRetryResult extends infer R ? (R extends unknown ? Jsonified<Omit<R, "cause">> : never) : never;

/** The response body of a result: every field but `cause`, dates as ISO-8601 strings. */
export function adminRetryResponseBody(result: AdminRetryResult): AdminRetryResponseBody {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) if (k !== "cause" && v !== undefined) body[k] = v instanceof Date ? v.toISOString() : v;
  return body as AdminRetryResponseBody;
}
