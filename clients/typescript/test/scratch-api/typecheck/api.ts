// Compiled by the oldest supported TypeScript (tsc -p . in the scratch project, see
// package.json) against the INSTALLED tarball's declarations, with skipLibCheck off. Every
// `@ts-expect-error` below is a compile error the package promises; tsc fails if one compiles.
import { SQSClient } from "@aws-sdk/client-sqs";
import { MongoClient, ObjectId } from "mongodb";
import {
  type EventType,
  type InterviewQueueMessage,
  InterviewQueuePublisher,
  type PublishResult,
  REPORTS_COLLECTION,
  INTERVIEWS_COLLECTION,
  retryReportGeneration,
  settlementRequestId,
  type InterviewReportDocument,
  type StoredInterviewReportDocument,
  PublisherConfigurationError,
} from "@sophia/async-jobs-client";

// The API's own client (its SDK version) is what the publisher takes.
const publisher = new InterviewQueuePublisher({ queueUrl: "q", reportQueueUrl: "r", client: new SQSClient({}) });
const id = "65a1b2c3d4e5f60718293a4b";

export async function calls(): Promise<PublishResult[]> {
  return [
    await publisher.publishInterviewCompleted({ interviewId: id, organizationId: id, durationSeconds: 754 }),
    // @ts-expect-error durationSeconds is required: an omission would bill nothing.
    await publisher.publishInterviewCompleted({ interviewId: id, organizationId: id }),
    // @ts-expect-error unknown keys are compile errors too (and runtime ContractViolationErrors).
    await publisher.publishInterviewCompleted({ interviewId: id, organizationId: id, durationSeconds: 1, durationSecond: 1 }),
    // @ts-expect-error a number is not a request id.
    await publisher.publishInterviewFailed({ interviewId: id, organizationId: id, failureReason: "x" }, { requestId: 7 }),
    await publisher.publishReportGenerate({ interviewId: id, organizationId: id }, { requestId: settlementRequestId(id) }),
  ];
}

// The union narrows by `type`.
export function describe(m: InterviewQueueMessage): string {
  if (m.type === "interview.failed") return m.failureReason;
  const seconds: number = m.durationSeconds;
  return String(seconds);
}

export const kinds: EventType[] = ["interview.completed", "interview.failed", "report.generate"];
// @ts-expect-error not an event type.
export const wrong: EventType = "interview.started";

// The driver's collections satisfy the retry's minimal interface, with the driver's ObjectId.
export async function retry(client: MongoClient) {
  const db = client.db("app");
  return retryReportGeneration({
    interviewId: id,
    organizationId: id,
    resetAttempts: true,
    operator: { by: "admin@example.com" },
    interviews: db.collection(INTERVIEWS_COLLECTION),
    reports: db.collection(REPORTS_COLLECTION),
    objectId: (hex) => new ObjectId(hex),
    publisher,
  });
}

// Stored vs wire: the driver's collection of the stored type gives ObjectIds and Dates.
export async function stored(client: MongoClient): Promise<Date | undefined> {
  const reports = client.db("app").collection<StoredInterviewReportDocument<ObjectId>>(REPORTS_COLLECTION);
  const report = await reports.findOne({ interviewId: new ObjectId(id) });
  const oid: ObjectId | undefined = report?.interviewId;
  // @ts-expect-error a stored date is a Date, not the JSON form's string.
  const text: string | undefined = report?.createdAt;
  // @ts-expect-error the JSON form is not the stored shape.
  const wire: StoredInterviewReportDocument<ObjectId> = {} as InterviewReportDocument;
  void [oid, text, wire];
  return report?.createdAt;
}

// Production mode is an option of the typed API; its error is exported.
export const production = InterviewQueuePublisher.fromEnv(process.env, { client: new SQSClient({}), requireQueueUrls: true });
export const isConfigError = (e: unknown): boolean => e instanceof PublisherConfigurationError && e.missing.length > 0;
