/** The publishers with an injected SQS client and logger: defaults, attributes, skip, errors. */
import * as assert from "node:assert/strict";
import { test } from "node:test";

import type { SendMessageCommand } from "@aws-sdk/client-sqs";

import { ContractViolationError, defaultSqsClient, InterviewQueuePublisher, type Logger, requestIdForPublish } from "../src/index";

const I = "65a1b2c3d4e5f60718293a4b";
const O = "65a1b2c3d4e5f60718293a4c";
const NOW = new Date("2026-12-03T10:00:00.000Z");
const URL = "http://127.0.0.1:1/000000000000/q";

function recorder(fail?: Error) {
  const sent: SendMessageCommand["input"][] = [];
  const logs: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const client = {
    send: async (command: SendMessageCommand) => {
      if (fail) throw fail;
      sent.push(command.input);
      return { MessageId: `m-${sent.length}` };
    },
  };
  const logger: Logger = {
    warn: (message, fields) => logs.push({ level: "warn", message, ...(fields ? { fields } : {}) }),
    info: (message, fields) => logs.push({ level: "info", message, ...(fields ? { fields } : {}) }),
  };
  return { sent, logs, client, logger };
}

test("completed: completedAt defaults to now, durationSeconds to 0; attributes requestId 'unknown' and eventType", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger, now: () => NOW });
  const result = await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O });
  assert.equal(result.status, "sent");
  assert.equal(r.sent.length, 1);
  assert.equal(r.sent[0]!.QueueUrl, URL);
  assert.equal(
    r.sent[0]!.MessageBody,
    `{"interviewId":"${I}","organizationId":"${O}","completedAt":"2026-12-03T10:00:00.000Z","durationSeconds":0}`,
  );
  assert.deepEqual(r.sent[0]!.MessageAttributes, {
    requestId: { DataType: "String", StringValue: "unknown" },
    eventType: { DataType: "String", StringValue: "interview.completed" },
  });
});

test("completed: given values are sent as given (a Date becomes toISOString, a fraction stays)", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  await publisher.publishInterviewCompleted(
    { interviewId: I, organizationId: O, completedAt: new Date("2026-12-02T17:30:00Z"), durationSeconds: 119.5 },
    { requestId: " req-42 " },
  );
  assert.equal(JSON.parse(r.sent[0]!.MessageBody!).completedAt, "2026-12-02T17:30:00.000Z");
  assert.equal(JSON.parse(r.sent[0]!.MessageBody!).durationSeconds, 119.5);
  assert.equal(r.sent[0]!.MessageAttributes!["requestId"]!.StringValue, "req-42");
});

test("failed: type, failedAt default, eventType interview.failed; the reason is never logged", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger, now: () => NOW });
  const reason = "MARKER candidate said something private";
  await publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: reason }, { requestId: "req-1" });
  assert.deepEqual(JSON.parse(r.sent[0]!.MessageBody!), {
    type: "interview.failed",
    interviewId: I,
    organizationId: O,
    failureReason: reason,
    failedAt: "2026-12-03T10:00:00.000Z",
  });
  assert.equal(r.sent[0]!.MessageAttributes!["eventType"]!.StringValue, "interview.failed");
  assert.ok(!JSON.stringify(r.logs).includes("MARKER"), JSON.stringify(r.logs));
});

test("no queue URL: skipped with a warning naming the variable, nothing sent", async () => {
  const r = recorder();
  for (const publisher of [
    InterviewQueuePublisher.fromEnv({}, { client: r.client, logger: r.logger }),
    InterviewQueuePublisher.fromEnv({ INTERVIEW_COMPLETED_QUEUE_URL: "  " }, { client: r.client, logger: r.logger }),
  ]) {
    const result = await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 60 });
    assert.equal(result.status, "skipped");
  }
  assert.equal(r.sent.length, 0);
  assert.equal(r.logs.filter((l) => l.level === "warn").length, 2);
  assert.match(r.logs[0]!.message, /INTERVIEW_COMPLETED_QUEUE_URL is not set/);
});

test("SDK errors reach the caller unchanged", async () => {
  const boom = Object.assign(new Error("The specified queue does not exist."), { name: "QueueDoesNotExist" });
  const r = recorder(boom);
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  await assert.rejects(publisher.publishInterviewCompleted({ interviewId: I, organizationId: O }), (e) => e === boom);
});

test("what the consumer would drop is refused before anything is sent", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  for (const bad of [
    { interviewId: "nope", organizationId: O },
    { interviewId: I, organizationId: O, durationSeconds: -1 },
    { interviewId: I, organizationId: O, durationSeconds: Number.NaN },
    { interviewId: I, organizationId: O, durationSeconds: 2 ** 53 },
    { interviewId: I, organizationId: O, completedAt: "2026-12-02 17:30:00" },
  ]) {
    await assert.rejects(publisher.publishInterviewCompleted(bad), ContractViolationError, JSON.stringify(bad));
  }
  assert.equal(r.sent.length, 0);
});

test("requestIdForPublish: blank or absent is 'unknown'; long ids are cut to 256 characters", () => {
  assert.equal(requestIdForPublish(undefined), "unknown");
  assert.equal(requestIdForPublish("   "), "unknown");
  assert.equal(requestIdForPublish("x".repeat(1000)).length, 256);
});

test("the default client sends to AWS_ENDPOINT_URL_SQS, not to the queue URL's host, when it is set", async () => {
  const local = defaultSqsClient({ AWS_ENDPOINT_URL_SQS: "http://127.0.0.1:4566" });
  assert.equal(local.config.useQueueUrlAsEndpoint, false);
  const endpoint = await local.config.endpoint!();
  assert.equal(`${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}`, "http://127.0.0.1:4566");
  assert.notEqual(defaultSqsClient({}).config.useQueueUrlAsEndpoint, false, "on AWS the queue URL's host is used");
});
