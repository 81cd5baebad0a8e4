/**
 * The message types the API works with, on top of the generated ones (src/generated, from the
 * contract schemas):
 *
 * - {@link InterviewQueueMessage}: the interview queue's union, narrowable by `type`
 *   (`m.type === "interview.failed"`). The generated union is not: the completed shape has no
 *   `type` key, so TypeScript refuses the comparison. Here the completed shape declares
 *   `type?: undefined`, which is exactly what the schema and the consumer accept (a completed body
 *   has no `type`; a body with a `type` is the failed shape).
 * - {@link EventType}, {@link RequestId}: the attributes' types, at the top level.
 */
import type { InterviewCompleted as GeneratedCompleted } from "./generated/interview-completed";
import type { InterviewFailed } from "./generated/interview-failed";
import type { ReportGenerate } from "./generated/report-generate";

export type { EventType, MessageAttributes, RequestId } from "./generated/message-attributes";
export type { InterviewFailed, ReportGenerate };

/** interview.completed body: no `type` key (declared `undefined` so the union narrows). */
export type InterviewCompleted = GeneratedCompleted & { type?: undefined };

/** Any body on the interview queue; `m.type === "interview.failed"` tells the two apart. */
export type InterviewQueueMessage = InterviewCompleted | InterviewFailed;

/** Every `eventType` value, in the contract's order. */
export const EVENT_TYPES = ["interview.completed", "interview.failed", "report.generate"] as const;
