/**
 * Compile-time promises, checked by `npm run typecheck` (the package's TypeScript; the scratch
 * project checks the same against the packed declarations with the oldest supported TypeScript):
 * every `@ts-expect-error` must be an error, or tsc fails.
 */
import { type EventType, type InterviewQueueMessage, InterviewQueuePublisher } from "../src/index";

const publisher = new InterviewQueuePublisher({ queueUrl: undefined });
const id = "65a1b2c3d4e5f60718293a4b";

export const ok = publisher.publishInterviewCompleted({ interviewId: id, organizationId: id, durationSeconds: 0 });
// @ts-expect-error durationSeconds is required in the typed API.
export const missing = publisher.publishInterviewCompleted({ interviewId: id, organizationId: id });
// @ts-expect-error not an event type.
export const wrong: EventType = "interview.started";

export function narrow(m: InterviewQueueMessage): string | number {
  return m.type === "interview.failed" ? m.failureReason : m.durationSeconds;
}

// Stored vs wire: the driver's shape (ObjectId, Date) is not the JSON form (strings).
import type { ObjectId } from "mongodb";
import type { InterviewReportDocument, StoredInterviewReportDocument } from "../src/index";

export function stored(doc: StoredInterviewReportDocument<ObjectId>, wire: InterviewReportDocument): void {
  const created: Date = doc.createdAt;
  const id: ObjectId = doc.interviewId;
  const wireId: string = wire.interviewId;
  // @ts-expect-error a stored date is a Date, not the JSON form's string.
  const asString: string = doc.createdAt;
  // @ts-expect-error a stored ObjectId is not a string.
  const idString: string = doc._id;
  // @ts-expect-error the JSON form is not what the driver returns.
  const wrong: StoredInterviewReportDocument<ObjectId> = wire;
  const generatedAt: Date | undefined = doc.generation?.generatedAt;
  // What the admin retry (this package's and the operator CLI's) and the consumer write is typed too.
  const retriedAt: Date | undefined = doc.lastRetry?.at;
  const firstBy: string | undefined = doc.retries?.[0]?.by;
  const transient: number | null | undefined = doc.transientFailures;
  // @ts-expect-error a stored retry's date is a Date.
  const retriedAtString: string | undefined = doc.lastRetry?.at;
  // @ts-expect-error no field that no writer declares.
  const unknown = doc.lastRetryBy;
  void [created, id, wireId, asString, idString, wrong, generatedAt, retriedAt, firstBy, transient, retriedAtString, unknown];
}
