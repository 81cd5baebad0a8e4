/**
 * The API's producers (replacing its previous `sqs.service.ts`, described in the Rust
 * repository's docs/design.md, "Its producers"): `publishInterviewCompleted`,
 * `publishInterviewFailed` and `publishReportGenerate`. Every behaviour below is a decision written
 * down in the package README ("Behaviour"):
 *
 * - the input is checked first, whatever the configuration: bad input of any JavaScript type
 *   (`null`, a number, an unknown key, an invalid Date...) is a {@link ContractViolationError}
 *   naming the field, never a `TypeError`, and it throws even when the queue URL is missing;
 * - unknown input keys are refused (a typo such as `durationSecond` must not bill 0);
 * - `completedAt` / `failedAt` default to now; `durationSeconds` is required by the types, and a
 *   plain-JavaScript call that omits it keeps the previous `sqs.service.ts`'s default 0 with a warning naming the
 *   interview id;
 * - every message carries the String attributes `requestId` (`unknown` when the caller has none;
 *   longer than 256 characters: cut, as the Rust producer does) and `eventType`;
 * - every message carries `MessageGroupId` = the organization id (SQS fair queues: tenant fairness);
 * - without the queue's URL the publish is skipped with a warning (as the previous `sqs.service.ts` did), unless
 *   the publisher is in production mode (`requireQueueUrls: true`, `assertConfigured()`): then a
 *   missing URL is a {@link PublisherConfigurationError} at start-up;
 * - the default logger is quiet on success (warnings only);
 * - SQS errors are thrown to the caller as the SDK raised them.
 */
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

import { publishBoundIssues } from "./bounds";
import type { EventType } from "./generated/message-attributes";
import { type QueueKey, queues } from "./generated/queues";
import { schemas, type SchemaName } from "./generated/schemas";
import type { InterviewCompleted, InterviewFailed, ReportGenerate } from "./types";
import { assertValid, ContractViolationError, type ContractIssue, QUEUE_EVENT_TYPES } from "./validate";

/** The variables that carry the queues' URLs (declarations/queues.json, `queueUrlEnv`). */
export const INTERVIEW_COMPLETED_QUEUE_URL = queues.interviewCompleted.urlEnv;
export const REPORT_GENERATE_QUEUE_URL = queues.reportGenerate.urlEnv;
/** The attribute value when the caller has no request id (the API's `requestIdForPublish`). */
export const UNKNOWN_REQUEST_ID = "unknown";
/** A request id is an identifier: longer input is cut (as the Rust producer does). */
export const REQUEST_ID_MAX_LENGTH = 256;
/**
 * The longest `failureReason` the contract carries, in characters (Unicode code points), read from
 * the contract's schema (the Rust consumers refuse a longer one). A longer reason is a
 * {@link ContractViolationError} before anything is sent: cut it yourself if you must send it.
 */
export const FAILURE_REASON_MAX_LENGTH: number = schemas["interview-failed"].properties.failureReason.maxLength;

/**
 * A publisher that cannot do its job: a queue URL is missing where it is required
 * (`requireQueueUrls: true`, or {@link InterviewQueuePublisher.assertConfigured}). Names the
 * variables, never a value.
 */
export class PublisherConfigurationError extends Error {
  override readonly name = "PublisherConfigurationError";
  constructor(readonly missing: readonly string[]) {
    super(`${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} not set: a deployed service must not skip ${missing.map(skippedBy).join(", nor ")}`);
  }
}

/** What a deployed service would skip without `variable`: the events its queue carries and what they are for (`apiSkipsWithoutUrl` of declarations/queues.json). */
function skippedBy(variable: string): string {
  const key = (Object.keys(queues) as QueueKey[]).find((k) => queues[k].urlEnv === variable);
  if (key === undefined) return variable;
  const events = QUEUE_EVENT_TYPES[key].join(" or ");
  return `${events} ${queues[key].skippedWithoutUrl ?? "messages"}`;
}

/** What the publisher logs through. Never given candidate text. */
export interface Logger {
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Called once per successful publish when present; the default logger has none. */
  info?(message: string, fields?: Record<string, unknown>): void;
}

/** Warnings to `console.warn`; nothing on success. */
export const defaultLogger: Logger = {
  warn: (message, fields) => console.warn(message, fields ?? {}),
};

/**
 * The part of `SQSClient` the publisher uses (inject the API's own client, or a stub in unit
 * tests). The command is built from the `@aws-sdk/client-sqs` the API installed (a peer
 * dependency: one copy of the SDK), so an injected client always matches it.
 */
export interface SqsSender {
  send(command: SendMessageCommand): Promise<{ MessageId?: string | undefined }>;
}

export interface PublisherOptions {
  /**
   * Production mode. `true`: both queue URLs must be set, or the constructor (and `fromEnv`) throws
   * a {@link PublisherConfigurationError}: a deployed service fails at start-up instead of skipping
   * billing events. Default `false`: a missing URL skips that publish with a warning (local
   * development only).
   */
  requireQueueUrls?: boolean | undefined;
  /** The interview queue's URL; `undefined` or blank: its publishes are skipped with a warning. */
  queueUrl: string | undefined;
  /** The report queue's URL (`REPORT_GENERATE_QUEUE_URL`); absent: `publishReportGenerate` is skipped. */
  reportQueueUrl?: string | undefined;
  /** Default: {@link defaultSqsClient} of `env`, built on the first send. */
  client?: SqsSender | undefined;
  /** Where the default client reads `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL`. Default: `process.env`. */
  env?: Record<string, string | undefined> | undefined;
  /** Default: {@link defaultLogger} (warnings only). */
  logger?: Logger | undefined;
  /** Default: `() => new Date()`; for the `completedAt` / `failedAt` defaults. */
  now?: (() => Date) | undefined;
}

export interface InterviewCompletedInput {
  interviewId: string;
  organizationId: string;
  /** Default: now. */
  completedAt?: Date | string | undefined;
  /**
   * Any finite, non-negative number of seconds (billed by floor(s / 60)). Required: an omission
   * would bill nothing and release the whole reservation.
   */
  durationSeconds: number;
}

export interface InterviewFailedInput {
  interviewId: string;
  organizationId: string;
  /** Candidate-facing free text: carried in the body, never logged. */
  failureReason: string;
  /** Default: now. */
  failedAt?: Date | string | undefined;
}

export interface ReportGenerateInput {
  interviewId: string;
  organizationId: string;
}

export interface PublishContext {
  /** The API request that caused the message; blank or absent becomes `unknown`. */
  requestId?: string | undefined;
}

export type PublishResult =
  | { status: "sent"; messageId: string; eventType: EventType; body: string }
  | { status: "skipped"; eventType: EventType; reason: string };

/** The request id of a settlement-triggered `report.generate` (the previous `sqs.service.ts`'s `settlement-${interviewId}`). */
export function settlementRequestId(interviewId: string): string {
  return `settlement-${interviewId}`;
}

/** The request id of an admin re-publish (as `sophia-ops report retry`): `admin-retry-<interviewId>`. */
export function adminRetryRequestId(interviewId: string): string {
  return `admin-retry-${interviewId}`;
}

/** `unknown` for a missing or blank id, the first 256 characters (code points) otherwise. */
export function requestIdForPublish(requestId: string | undefined): string {
  if (requestId !== undefined && typeof requestId !== "string") {
    throw new ContractViolationError("message-attributes", [{ path: "/requestId", problem: "must be a string" }]);
  }
  const trimmed = requestId?.trim();
  return trimmed ? [...trimmed].slice(0, REQUEST_ID_MAX_LENGTH).join("") : UNKNOWN_REQUEST_ID;
}

// --- input checks: any JavaScript value in, a ContractViolationError (never a TypeError) out ---

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

type FieldKind = "value" | "time";

/**
 * The input's own fields, checked: a plain object with known keys only. Field values are checked by
 * the body's schema afterwards (except datetimes, which may be a Date here).
 */
function fieldsOf(schema: SchemaName, input: unknown, fields: Record<string, FieldKind>): Record<string, unknown> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new ContractViolationError(schema, [{ path: "", problem: `input must be an object, got ${describe(input)}` }]);
  }
  const issues: ContractIssue[] = [];
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(input)) {
    if (!Object.hasOwn(fields, key)) issues.push({ path: `/${key}`, problem: "is not a field of this input" });
  }
  for (const [key, kind] of Object.entries(fields)) {
    const value = (input as Record<string, unknown>)[key];
    if (kind === "time" && value !== undefined && typeof value !== "string" && !(value instanceof Date)) {
      issues.push({ path: `/${key}`, problem: `must be a Date or an RFC 3339 string, got ${describe(value)}` });
    }
    out[key] = value;
  }
  if (issues.length > 0) throw new ContractViolationError(schema, issues);
  return out;
}

function contextOf(context: unknown): string {
  if (context === undefined) return requestIdForPublish(undefined);
  const proto: unknown = typeof context === "object" && context !== null ? Object.getPrototypeOf(context) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    throw new ContractViolationError("message-attributes", [
      { path: "", problem: `context must be a plain object ({ requestId }), got ${describe(context)}` },
    ]);
  }
  const extra = Object.keys(context as object).filter((k) => k !== "requestId");
  if (extra.length > 0) {
    throw new ContractViolationError(
      "message-attributes",
      extra.map((k) => ({ path: `/${k}`, problem: "is not a field of the publish context" })),
    );
  }
  return requestIdForPublish((context as { requestId?: string }).requestId);
}

function iso(at: unknown, now: () => Date): unknown {
  if (at === undefined) return now().toISOString();
  // An invalid Date would throw a RangeError naming nothing; let the contract name the field.
  if (at instanceof Date) return Number.isNaN(at.getTime()) ? "Invalid Date" : at.toISOString();
  return at;
}

/** The publisher's bounds (./bounds), after the contract's: a {@link ContractViolationError} of the same schema. */
function assertWithinPublishBounds(schema: SchemaName, body: object): void {
  const issues = publishBoundIssues(body);
  if (issues.length > 0) throw new ContractViolationError(schema, issues);
}

/** The completed body exactly as it goes on the wire, after the defaults; validated. */
export function interviewCompletedBody(input: InterviewCompletedInput, now: () => Date = () => new Date()): InterviewCompleted {
  const f = fieldsOf("interview-completed", input, {
    interviewId: "value",
    organizationId: "value",
    completedAt: "time",
    durationSeconds: "value",
  });
  const body = {
    interviewId: f["interviewId"],
    organizationId: f["organizationId"],
    completedAt: iso(f["completedAt"], now),
    // Only an absent value takes the default: `null` is a mistake the contract names.
    durationSeconds: f["durationSeconds"] === undefined ? 0 : f["durationSeconds"],
  };
  assertValid("interview-completed", body);
  assertWithinPublishBounds("interview-completed", body);
  return body as InterviewCompleted;
}

/** The failed body exactly as it goes on the wire, after the defaults; validated. */
export function interviewFailedBody(input: InterviewFailedInput, now: () => Date = () => new Date()): InterviewFailed {
  const f = fieldsOf("interview-failed", input, {
    interviewId: "value",
    organizationId: "value",
    failureReason: "value",
    failedAt: "time",
  });
  const body = {
    type: "interview.failed",
    interviewId: f["interviewId"],
    organizationId: f["organizationId"],
    failureReason: f["failureReason"],
    failedAt: iso(f["failedAt"], now),
  };
  assertValid("interview-failed", body);
  assertWithinPublishBounds("interview-failed", body);
  return body as InterviewFailed;
}

/** The report.generate body exactly as it goes on the wire; validated. */
export function reportGenerateBody(input: ReportGenerateInput): ReportGenerate {
  const f = fieldsOf("report-generate", input, { interviewId: "value", organizationId: "value" });
  const body = { interviewId: f["interviewId"], organizationId: f["organizationId"] };
  assertValid("report-generate", body);
  return body as ReportGenerate;
}

/**
 * An `SQSClient` with region and credentials from the environment. With an endpoint override
 * (`AWS_ENDPOINT_URL_SQS`, else `AWS_ENDPOINT_URL`: a local SQS such as fauxqs or LocalStack),
 * requests go to that endpoint and not to the queue URL's host, which a local server may name
 * without it resolving (fauxqs answers `http://sqs.us-east-1.localhost:<port>/...`).
 */
export function defaultSqsClient(env: Record<string, string | undefined> = process.env): SQSClient {
  const endpoint = env["AWS_ENDPOINT_URL_SQS"]?.trim() || env["AWS_ENDPOINT_URL"]?.trim();
  return new SQSClient(endpoint ? { endpoint, useQueueUrlAsEndpoint: false } : {});
}

function optionalString(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw new ContractViolationError("message-attributes", [{ path: `/${name}`, problem: `option must be a string, got ${describe(value)}` }]);
  }
  return value.trim() || undefined;
}

export class InterviewQueuePublisher {
  private readonly queueUrl: string | undefined;
  private readonly reportQueueUrl: string | undefined;
  private client: SqsSender | undefined;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly env: Record<string, string | undefined>;

  constructor(options: PublisherOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ContractViolationError("message-attributes", [{ path: "", problem: `options must be an object, got ${describe(options)}` }]);
    }
    this.queueUrl = optionalString("queueUrl", options.queueUrl);
    this.reportQueueUrl = optionalString("reportQueueUrl", options.reportQueueUrl);
    if (options.requireQueueUrls === true) this.assertConfigured();
    this.client = options.client;
    this.logger = options.logger ?? defaultLogger;
    this.now = options.now ?? (() => new Date());
    this.env = options.env ?? process.env;
  }

  /**
   * Throws a {@link PublisherConfigurationError} naming every missing queue URL variable; call it at
   * start-up (or pass `requireQueueUrls: true`) so that a deployed service never skips a billing
   * event or a report request. Returns the publisher.
   */
  assertConfigured(): this {
    const missing = [
      ...(this.queueUrl ? [] : [INTERVIEW_COMPLETED_QUEUE_URL]),
      ...(this.reportQueueUrl ? [] : [REPORT_GENERATE_QUEUE_URL]),
    ];
    if (missing.length > 0) throw new PublisherConfigurationError(missing);
    return this;
  }

  /** The queue URLs from `INTERVIEW_COMPLETED_QUEUE_URL` and `REPORT_GENERATE_QUEUE_URL` (as the API's env.ts reads them). */
  static fromEnv(
    env: Record<string, string | undefined> = process.env,
    options: Omit<PublisherOptions, "queueUrl" | "reportQueueUrl"> = {},
  ): InterviewQueuePublisher {
    return new InterviewQueuePublisher({
      env,
      ...options,
      queueUrl: env[INTERVIEW_COMPLETED_QUEUE_URL],
      reportQueueUrl: env[REPORT_GENERATE_QUEUE_URL],
    });
  }

  async publishInterviewCompleted(input: InterviewCompletedInput, context?: PublishContext): Promise<PublishResult> {
    const requestId = contextOf(context);
    const body = interviewCompletedBody(input, this.now);
    if ((input as Partial<InterviewCompletedInput>).durationSeconds === undefined) {
      // Plain JavaScript only (the types require it): the previous producer's default, said out loud.
      this.logger.warn("durationSeconds missing: the previous producer's default 0 is used (nothing is billed, the whole reservation is released)", {
        interviewId: body.interviewId,
        requestId,
      });
    }
    return this.send(this.queueUrl, INTERVIEW_COMPLETED_QUEUE_URL, JSON.stringify(body), "interview.completed", requestId, body);
  }

  async publishInterviewFailed(input: InterviewFailedInput, context?: PublishContext): Promise<PublishResult> {
    const requestId = contextOf(context);
    const body = interviewFailedBody(input, this.now);
    return this.send(this.queueUrl, INTERVIEW_COMPLETED_QUEUE_URL, JSON.stringify(body), "interview.failed", requestId, body);
  }

  /**
   * `report.generate` on the report queue. The previous producer's request ids: {@link settlementRequestId}
   * after a settlement, {@link adminRetryRequestId} for an admin retry (see `retryReportGeneration`:
   * a FAILED report needs its attempts reset first, or the consumer acknowledges without a retry).
   */
  async publishReportGenerate(input: ReportGenerateInput, context?: PublishContext): Promise<PublishResult> {
    const requestId = contextOf(context);
    const body = reportGenerateBody(input);
    return this.send(this.reportQueueUrl, REPORT_GENERATE_QUEUE_URL, JSON.stringify(body), "report.generate", requestId, body);
  }

  private async send(
    queueUrl: string | undefined,
    variable: string,
    body: string,
    eventType: EventType,
    requestId: string,
    ids: { interviewId: string; organizationId: string },
  ): Promise<PublishResult> {
    const { interviewId, organizationId } = ids;
    assertValid("message-attributes", { requestId, eventType });
    if (!queueUrl) {
      const reason = `${variable} is not set; publish skipped`;
      this.logger.warn(reason, { eventType, requestId, interviewId });
      return { status: "skipped", eventType, reason };
    }
    this.client ??= defaultSqsClient(this.env);
    const out = await this.client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: body,
        // Tenant fairness: SQS fair queues (standard queues) keep one organization's burst from
        // delaying every other organization's messages when the group id is the tenant.
        // https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues.html
        MessageGroupId: organizationId,
        MessageAttributes: {
          requestId: { DataType: "String", StringValue: requestId },
          eventType: { DataType: "String", StringValue: eventType },
        },
      }),
    );
    const messageId = out.MessageId ?? "";
    this.logger.info?.("published", { eventType, requestId, interviewId, sqsMessageId: messageId });
    return { status: "sent", messageId, eventType, body };
  }
}

let shared: InterviewQueuePublisher | undefined;

/**
 * {@link InterviewQueuePublisher.assertConfigured} of the process-wide publisher that the
 * module-level functions use: call it at start-up in a deployed service.
 */
export function assertPublisherConfigured(): void {
  defaultPublisher().assertConfigured();
}

/** The process-wide publisher from the environment, built on first use. */
export function defaultPublisher(): InterviewQueuePublisher {
  return (shared ??= InterviewQueuePublisher.fromEnv());
}

/** `publishInterviewCompleted` of the previous `sqs.service.ts`, on {@link defaultPublisher}. */
export function publishInterviewCompleted(input: InterviewCompletedInput, context?: PublishContext): Promise<PublishResult> {
  return defaultPublisher().publishInterviewCompleted(input, context);
}

/** `publishInterviewFailed` of the previous `sqs.service.ts`, on {@link defaultPublisher}. */
export function publishInterviewFailed(input: InterviewFailedInput, context?: PublishContext): Promise<PublishResult> {
  return defaultPublisher().publishInterviewFailed(input, context);
}

/** `publishReportGenerate` of the previous `sqs.service.ts`, on {@link defaultPublisher}. */
export function publishReportGenerate(input: ReportGenerateInput, context?: PublishContext): Promise<PublishResult> {
  return defaultPublisher().publishReportGenerate(input, context);
}
