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
