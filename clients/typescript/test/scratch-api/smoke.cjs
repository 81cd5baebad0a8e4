// The scratch API, CommonJS: require()s the INSTALLED tarball, publishes every message kind with
// the scratch project's own (older) SQSClient to the local queue named by the environment, reads
// the messages back and checks them with the package's own wire validation. Exits 1 on any
// mismatch. Driven by scripts/scratch.mjs.
const assert = require("node:assert/strict");
const { SQSClient, ReceiveMessageCommand } = require("@aws-sdk/client-sqs");
const pkg = require("@sophia/async-jobs-client");

const I = "65a1b2c3d4e5f60718293a4b";
const O = "65a1b2c3d4e5f60718293a4c";

async function main() {
  const client = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS, region: process.env.AWS_REGION });
  const publisher = pkg.InterviewQueuePublisher.fromEnv(process.env, { client });
  const sent = [
    await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 754.5 }, { requestId: "cjs" }),
    await publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: "bot lost the call" }),
    await publisher.publishReportGenerate({ interviewId: I, organizationId: O }, { requestId: pkg.settlementRequestId(I) }),
  ];
  assert.deepEqual(sent.map((r) => r.status), ["sent", "sent", "sent"]);
  assert.deepEqual(pkg.EVENT_TYPES, ["interview.completed", "interview.failed", "report.generate"]);
  await assert.rejects(publisher.publishInterviewCompleted(null), pkg.ContractViolationError);
  const seen = [];
  for (const [url, want] of [
    [process.env.INTERVIEW_COMPLETED_QUEUE_URL, 2],
    [process.env.REPORT_GENERATE_QUEUE_URL, 1],
  ]) {
    const got = [];
    for (let i = 0; i < 10 && got.length < want; i++) {
      const out = await client.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"] }),
      );
      got.push(...(out.Messages ?? []));
    }
    seen.push(...got);
  }
  client.destroy();
  assert.equal(seen.length, 3, "three messages on the two queues");
  for (const m of seen) {
    const attributes = Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]));
    assert.deepEqual(pkg.checkWireMessage(m.Body, attributes), [], m.Body);
    assert.ok(sent.some((r) => r.messageId === m.MessageId && r.body === m.Body && r.eventType === attributes.eventType));
  }
  console.log(JSON.stringify({ module: "commonjs", published: sent.length, readBack: seen.length }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
