// Cross-language contract test, TypeScript side (driven by tests/typescript_contract.rs).
// Publishes each case of the JSON array in argv[2] through the BUILT package, imported by its
// package name as the API imports it, configured only from the environment the local runner
// prints (INTERVIEW_COMPLETED_QUEUE_URL, AWS_ENDPOINT_URL_SQS, AWS_REGION, credentials).
// A case: {"kind": "completed"|"failed", "input": {...}, "requestId"?: string}.
// Prints one JSON array of the publish results on stdout; exits 1 on any error.
import { InterviewQueuePublisher } from "@sophia/async-jobs-client";

const cases = JSON.parse(process.argv[2] ?? "[]");
const publisher = InterviewQueuePublisher.fromEnv(process.env, { logger: { warn: (m) => console.error(m) } });
const results = [];
for (const c of cases) {
  const context = c.requestId === undefined ? undefined : { requestId: c.requestId };
  const result =
    c.kind === "failed"
      ? await publisher.publishInterviewFailed(c.input, context)
      : await publisher.publishInterviewCompleted(c.input, context);
  results.push(result);
}
console.log(JSON.stringify(results));
