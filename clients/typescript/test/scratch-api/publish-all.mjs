// The scratch API, ESM: publishes each case of the JSON array in argv[2] through the INSTALLED
// tarball (import "@sophia/async-jobs-client"), with the scratch project's OWN SQSClient (its older
// @aws-sdk/client-sqs, injected) and, for an admin retry, its own mongodb driver. Configured only
// from the variables a local queue or `sophia-local up` prints (INTERVIEW_COMPLETED_QUEUE_URL,
// REPORT_GENERATE_QUEUE_URL, AWS_ENDPOINT_URL_SQS, AWS_REGION, credentials; MONGODB_URI and
// MONGODB_DATABASE for a retry).
// A case: {"kind": "completed"|"failed"|"report"|"retry", "input": {...}, "requestId"?, "resetAttempts"?}.
// Prints {"sdk": version, "results": [...]} on stdout (a retry: its result, as JSON; an error: {"error": {name, kind, message}}).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import { SQSClient } from "@aws-sdk/client-sqs";
import { InterviewQueuePublisher, retryReportGeneration, INTERVIEWS_COLLECTION, REPORTS_COLLECTION } from "@sophia/async-jobs-client";

const require = createRequire(import.meta.url);
const sdk = JSON.parse(readFileSync(require.resolve("@aws-sdk/client-sqs/package.json"), "utf8")).version;
const cases = JSON.parse(process.argv[2] ?? "[]");
const client = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS, region: process.env.AWS_REGION ?? "us-east-1" });
const publisher = InterviewQueuePublisher.fromEnv(process.env, { client, logger: { warn: (m, f) => console.error(m, JSON.stringify(f)) } });

let mongo;
async function db() {
  const { MongoClient } = await import("mongodb");
  mongo ??= await new MongoClient(process.env.MONGODB_URI).connect();
  return mongo.db(process.env.MONGODB_DATABASE);
}

const results = [];
try {
  for (const c of cases) {
    const context = c.requestId === undefined ? undefined : { requestId: c.requestId };
    try {
      if (c.kind === "failed") results.push(await publisher.publishInterviewFailed(c.input, context));
      else if (c.kind === "report") results.push(await publisher.publishReportGenerate(c.input, context));
      else if (c.kind === "retry") {
        const { ObjectId } = await import("mongodb");
        const d = await db();
        results.push(
          await retryReportGeneration({
            ...c.input,
            resetAttempts: c.resetAttempts === true,
            operator: { by: "scratch-api-admin" },
            interviews: d.collection(INTERVIEWS_COLLECTION),
            reports: d.collection(REPORTS_COLLECTION),
            objectId: (hex) => new ObjectId(hex),
            publisher,
          }),
        );
      } else results.push(await publisher.publishInterviewCompleted(c.input, context));
    } catch (e) {
      results.push({ error: { name: e.name, kind: e.kind, message: e.message } });
    }
  }
} finally {
  client.destroy();
  await mongo?.close();
}
console.log(JSON.stringify({ sdk, results }));
