/**
 * The API's producers of the interview queue (the spec's `sqs.service.ts`):
 * `publishInterviewCompleted` and `publishInterviewFailed`.
 *
 * - `completedAt` / `failedAt` default to now, `durationSeconds` to 0;
 * - every message carries the String attributes `requestId` (`unknown` when the caller has none)
 *   and `eventType`;
 * - the body is validated against the contract before it is sent: what the Rust consumers would
 *   drop is a {@link ContractViolationError} for the caller, never a message on the queue;
 * - without a queue URL (`INTERVIEW_COMPLETED_QUEUE_URL`) the publish is skipped with a warning;
 * - SQS errors are thrown to the caller as the SDK raised them.
 */
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

import type { InterviewCompleted } from "./generated/interview-completed";
import type { InterviewFailed } from "./generated/interview-failed";
import type { EventType } from "./generated/message-attributes";
import { assertValid } from "./validate";

export const INTERVIEW_COMPLETED_QUEUE_URL = "INTERVIEW_COMPLETED_QUEUE_URL";
/** The attribute value when the caller has no request id (the API's `requestIdForPublish`). */
export const UNKNOWN_REQUEST_ID = "unknown";
/** A request id is an identifier: longer input is cut (as the Rust producer does). */
export const REQUEST_ID_MAX_LENGTH = 256;

/** What the publisher logs through; `console` fits. Never given candidate text. */
export interface Logger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
}

/** The part of `SQSClient` the publisher uses (inject a stub in unit tests). */
export interface SqsSender {
  send(command: SendMessageCommand): Promise<{ MessageId?: string | undefined }>;
}

export interface PublisherOptions {
  /** The interview queue's URL; `undefined` or empty: every publish is skipped with a warning. */
  queueUrl: string | undefined;
  /** Default: {@link defaultSqsClient} of `env`. */
  client?: SqsSender;
  /** Where the default client reads `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL`. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Default: `console`. */
  logger?: Logger;
  /** Default: `() => new Date()`; for the `completedAt` / `failedAt` defaults. */
  now?: () => Date;
}

export interface InterviewCompletedInput {
  interviewId: string;
  organizationId: string;
  /** Default: now. */
  completedAt?: Date | string | undefined;
  /** Any finite, non-negative number of seconds (fractions are billed by floor(s / 60)). Default: 0. */
  durationSeconds?: number | undefined;
}

export interface InterviewFailedInput {
  interviewId: string;
  organizationId: string;
  /** Candidate-facing free text: carried in the body, never logged. */
  failureReason: string;
  /** Default: now. */
  failedAt?: Date | string | undefined;
}

export interface PublishContext {
  /** The API request that caused the message; blank or absent becomes `unknown`. */
  requestId?: string | undefined;
}

export type PublishResult =
  | { status: "sent"; messageId: string; eventType: EventType; body: string }
  | { status: "skipped"; eventType: EventType; reason: string };

/** `unknown` for a missing or blank id, the first 256 characters otherwise. */
export function requestIdForPublish(requestId: string | undefined): string {
  const trimmed = requestId?.trim();
  return trimmed ? [...trimmed].slice(0, REQUEST_ID_MAX_LENGTH).join("") : UNKNOWN_REQUEST_ID;
}

function iso(at: Date | string | undefined, now: () => Date): string {
  if (at === undefined) return now().toISOString();
  // An invalid Date would throw a RangeError naming nothing; let the contract name the field.
  if (at instanceof Date) return Number.isNaN(at.getTime()) ? "Invalid Date" : at.toISOString();
  return at;
}

/** The completed body exactly as it goes on the wire, after the defaults; validated. */
export function interviewCompletedBody(input: InterviewCompletedInput, now: () => Date = () => new Date()): InterviewCompleted {
  const body: InterviewCompleted = {
    interviewId: input.interviewId,
    organizationId: input.organizationId,
    completedAt: iso(input.completedAt, now),
    durationSeconds: input.durationSeconds ?? 0,
  };
  assertValid("interview-completed", body);
  return body;
}

/** The failed body exactly as it goes on the wire, after the defaults; validated. */
export function interviewFailedBody(input: InterviewFailedInput, now: () => Date = () => new Date()): InterviewFailed {
  const body: InterviewFailed = {
    type: "interview.failed",
    interviewId: input.interviewId,
    organizationId: input.organizationId,
    failureReason: input.failureReason,
    failedAt: iso(input.failedAt, now),
  };
  assertValid("interview-failed", body);
  return body;
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

export class InterviewQueuePublisher {
  private readonly queueUrl: string | undefined;
  private client: SqsSender | undefined;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly env: Record<string, string | undefined>;

  constructor(options: PublisherOptions) {
    this.queueUrl = options.queueUrl?.trim() || undefined;
    this.client = options.client;
    this.logger = options.logger ?? console;
    this.now = options.now ?? (() => new Date());
    this.env = options.env ?? process.env;
  }

  /** The queue URL from `INTERVIEW_COMPLETED_QUEUE_URL` (as the API's env.ts reads it). */
  static fromEnv(
    env: Record<string, string | undefined> = process.env,
    options: Omit<PublisherOptions, "queueUrl"> = {},
  ): InterviewQueuePublisher {
    return new InterviewQueuePublisher({ env, ...options, queueUrl: env[INTERVIEW_COMPLETED_QUEUE_URL] });
  }

  async publishInterviewCompleted(input: InterviewCompletedInput, context: PublishContext = {}): Promise<PublishResult> {
    const body = interviewCompletedBody(input, this.now);
    return this.send(JSON.stringify(body), "interview.completed", context, input.interviewId);
  }

  async publishInterviewFailed(input: InterviewFailedInput, context: PublishContext = {}): Promise<PublishResult> {
    const body = interviewFailedBody(input, this.now);
    return this.send(JSON.stringify(body), "interview.failed", context, input.interviewId);
  }

  private async send(
    body: string,
    eventType: EventType,
    context: PublishContext,
    interviewId: string,
  ): Promise<PublishResult> {
    const requestId = requestIdForPublish(context.requestId);
    assertValid("message-attributes", { requestId, eventType });
    if (!this.queueUrl) {
      const reason = `${INTERVIEW_COMPLETED_QUEUE_URL} is not set; publish skipped`;
      this.logger.warn(reason, { eventType, requestId, interviewId });
      return { status: "skipped", eventType, reason };
    }
    this.client ??= defaultSqsClient(this.env);
    const out = await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: body,
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

/** The process-wide publisher from the environment, built on first use. */
export function defaultPublisher(): InterviewQueuePublisher {
  return (shared ??= InterviewQueuePublisher.fromEnv());
}

/** `publishInterviewCompleted` of the spec's `sqs.service.ts`, on {@link defaultPublisher}. */
export function publishInterviewCompleted(
  input: InterviewCompletedInput,
  context: PublishContext = {},
): Promise<PublishResult> {
  return defaultPublisher().publishInterviewCompleted(input, context);
}

/** `publishInterviewFailed` of the spec's `sqs.service.ts`, on {@link defaultPublisher}. */
export function publishInterviewFailed(input: InterviewFailedInput, context: PublishContext = {}): Promise<PublishResult> {
  return defaultPublisher().publishInterviewFailed(input, context);
}
