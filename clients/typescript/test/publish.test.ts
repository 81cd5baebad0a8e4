/** The publishers with an injected SQS client and logger: defaults, attributes, skip, errors. */
import * as assert from "node:assert/strict";
import { test } from "node:test";

import type { SendMessageCommand } from "@aws-sdk/client-sqs";

import {
  check,
  ContractViolationError,
  defaultSqsClient,
  DURATION_SECONDS_MAX_PUBLISHED,
  FAILURE_REASON_MAX_LENGTH,
  PublisherConfigurationError,
  type InterviewCompletedInput,
  InterviewQueuePublisher,
  type Logger,
  requestIdForPublish,
  settlementRequestId,
} from "../src/index";

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

test("completed: completedAt defaults to now; attributes requestId 'unknown' and eventType", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger, now: () => NOW });
  const result = await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 0 });
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
  assert.equal(r.sent[0]!.MessageGroupId, O);
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
  await assert.rejects(publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 1 }), (e) => e === boom);
});

test("what the consumer would drop is refused before anything is sent", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  for (const bad of [
    { interviewId: "nope", organizationId: O, durationSeconds: 1 },
    { interviewId: I, organizationId: O, durationSeconds: -1 },
    { interviewId: I, organizationId: O, durationSeconds: Number.NaN },
    { interviewId: I, organizationId: O, durationSeconds: 2 ** 53 },
    { interviewId: I, organizationId: O, durationSeconds: 1, completedAt: "2026-12-02 17:30:00" },
  ]) {
    await assert.rejects(publisher.publishInterviewCompleted(bad as InterviewCompletedInput), ContractViolationError, JSON.stringify(bad));
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

test("plain JavaScript without durationSeconds: the previous producer's default 0, with a warning naming the interview id", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger, now: () => NOW });
  const js = { interviewId: I, organizationId: O } as unknown as InterviewCompletedInput;
  await publisher.publishInterviewCompleted(js, { requestId: "req-js" });
  assert.equal(JSON.parse(r.sent[0]!.MessageBody!).durationSeconds, 0);
  const warnings = r.logs.filter((l) => l.level === "warn");
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!.message, /durationSeconds missing/);
  assert.deepEqual(warnings[0]!.fields, { interviewId: I, requestId: "req-js" });
});

test("report.generate: the body, eventType report.generate, the caller's request id, on the report queue", async () => {
  const r = recorder();
  const REPORT_URL = "http://127.0.0.1:1/000000000000/reports";
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, reportQueueUrl: REPORT_URL, client: r.client, logger: r.logger });
  const result = await publisher.publishReportGenerate({ interviewId: I, organizationId: O }, { requestId: settlementRequestId(I) });
  assert.equal(result.status, "sent");
  assert.equal(r.sent[0]!.QueueUrl, REPORT_URL);
  assert.equal(r.sent[0]!.MessageBody, `{"interviewId":"${I}","organizationId":"${O}"}`);
  assert.deepEqual(r.sent[0]!.MessageAttributes, {
    requestId: { DataType: "String", StringValue: `settlement-${I}` },
    eventType: { DataType: "String", StringValue: "report.generate" },
  });
  const noReportQueue = InterviewQueuePublisher.fromEnv({ INTERVIEW_COMPLETED_QUEUE_URL: URL }, { client: r.client, logger: r.logger });
  const skipped = await noReportQueue.publishReportGenerate({ interviewId: I, organizationId: O });
  assert.deepEqual(skipped, { status: "skipped", eventType: "report.generate", reason: "REPORT_GENERATE_QUEUE_URL is not set; publish skipped" });
  assert.equal(r.sent.length, 1);
  const fromEnv = InterviewQueuePublisher.fromEnv({ REPORT_GENERATE_QUEUE_URL: REPORT_URL }, { client: r.client, logger: r.logger });
  assert.equal((await fromEnv.publishReportGenerate({ interviewId: I, organizationId: O })).status, "sent");
  assert.equal(r.sent[1]!.QueueUrl, REPORT_URL);
});

test("validation runs before the skip: bad input throws even without a queue URL", async () => {
  const r = recorder();
  const publisher = InterviewQueuePublisher.fromEnv({}, { client: r.client, logger: r.logger });
  await assert.rejects(publisher.publishInterviewCompleted({ interviewId: "x", organizationId: O, durationSeconds: 1 }), ContractViolationError);
  await assert.rejects(publisher.publishReportGenerate({ interviewId: I, organizationId: "x" }), ContractViolationError);
  assert.deepEqual(r.logs, [], "no skip warning for a refused input");
});

test("unknown input keys are refused by name (a typo must not bill 0), values never echoed", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  const typo = { interviewId: I, organizationId: O, durationSecond: 754, note: "MARKER private" } as unknown as InterviewCompletedInput;
  await assert.rejects(publisher.publishInterviewCompleted(typo), (e: unknown) => {
    assert.ok(e instanceof ContractViolationError);
    assert.deepEqual(e.issues.map((i) => i.path), ["/durationSecond", "/note"]);
    assert.ok(!e.message.includes("MARKER"), e.message);
    return true;
  });
  await assert.rejects(
    publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: "x", type: "interview.failed" } as never),
    ContractViolationError,
  );
  await assert.rejects(
    publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 1 }, { requestId: "r", traceId: "t" } as never),
    (e: unknown) => e instanceof ContractViolationError && e.issues[0]!.path === "/traceId",
  );
  assert.equal(r.sent.length, 0);
});

// Every JavaScript type, in every position: a ContractViolationError, never a TypeError.
const VALUES: unknown[] = [
  null,
  undefined,
  0,
  -1,
  Number.NaN,
  "",
  "x",
  true,
  [],
  [I],
  {},
  Object.create(null),
  Symbol("s"),
  10n,
  () => I,
  new Date(Number.NaN),
  new Map(),
  Promise.resolve(I),
];

test("bad input of any JavaScript type is a ContractViolationError, never a TypeError", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, reportQueueUrl: URL, client: r.client, logger: r.logger });
  const good = {
    completed: { interviewId: I, organizationId: O, durationSeconds: 60, completedAt: NOW },
    failed: { interviewId: I, organizationId: O, failureReason: "x", failedAt: NOW },
    report: { interviewId: I, organizationId: O },
  };
  const call = (kind: keyof typeof good, input: unknown, context?: unknown) =>
    kind === "completed"
      ? publisher.publishInterviewCompleted(input as never, context as never)
      : kind === "failed"
        ? publisher.publishInterviewFailed(input as never, context as never)
        : publisher.publishReportGenerate(input as never, context as never);
  const isContract = (what: string) => (e: unknown) => {
    assert.ok(e instanceof ContractViolationError, `${what}: ${String(e)}`);
    return true;
  };
  let refused = 0;
  for (const kind of Object.keys(good) as (keyof typeof good)[]) {
    for (const v of VALUES) {
      const what = `${kind} input #${VALUES.indexOf(v)} (${typeof v})`;
      await assert.rejects(call(kind, v), isContract(what), what);
      refused++;
      for (const field of Object.keys(good[kind])) {
        // The valid ones: undefined for the optional fields (and, in plain JS, durationSeconds),
        // any string as a failure reason, 0 seconds.
        if (v === undefined && ["completedAt", "failedAt", "durationSeconds"].includes(field)) continue;
        if ((field === "failureReason" && typeof v === "string") || (field === "durationSeconds" && v === 0)) continue;
        await assert.rejects(call(kind, { ...good[kind], [field]: v }), isContract(`${what} as ${field}`), `${what} as ${field}`);
        refused++;
      }
      const plain = typeof v === "object" && v !== null && [Object.prototype, null].includes(Object.getPrototypeOf(v));
      if (v !== undefined && !plain) {
        await assert.rejects(call(kind, good[kind], v), isContract(`${what} as context`), `${what} as context`);
        refused++;
      }
      if (v !== undefined && v !== "" && typeof v !== "string") {
        await assert.rejects(call(kind, good[kind], { requestId: v }), isContract(`${what} as requestId`), `${what} as requestId`);
        refused++;
      }
    }
  }
  assert.equal(r.sent.length, 0, "nothing refused was sent");
  assert.ok(refused > 200, String(refused));
  assert.throws(() => new InterviewQueuePublisher(null as never), ContractViolationError);
  assert.throws(() => new InterviewQueuePublisher({ queueUrl: 42 as never }), ContractViolationError);
});

test("the default logger is quiet on success and warns on a skip", async () => {
  const seen: string[] = [];
  const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug };
  for (const k of Object.keys(saved) as (keyof typeof saved)[]) console[k] = (...a: unknown[]) => seen.push(`${k}: ${a.join(" ")}`);
  try {
    const r = recorder();
    await new InterviewQueuePublisher({ queueUrl: URL, client: r.client }).publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 60 });
    assert.deepEqual(seen, []);
    await new InterviewQueuePublisher({ queueUrl: undefined, client: r.client }).publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 60 });
    assert.equal(seen.length, 1);
    assert.match(seen[0]!, /^warn: INTERVIEW_COMPLETED_QUEUE_URL is not set/);
  } finally {
    Object.assign(console, saved);
  }
});

test("a request id longer than 256 characters is cut (as the Rust producer does), by code point", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 1 }, { requestId: "é".repeat(300) });
  assert.equal(r.sent[0]!.MessageAttributes!["requestId"]!.StringValue, "é".repeat(256));
});

test("tenant fairness: every message kind carries MessageGroupId = the organization id", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, reportQueueUrl: URL, client: r.client, logger: r.logger });
  const orgs = ["65a1b2c3d4e5f60718293a01", "65a1b2c3d4e5f60718293a02", "65a1b2c3d4e5f60718293a03"];
  await publisher.publishInterviewCompleted({ interviewId: I, organizationId: orgs[0]!, durationSeconds: 60 });
  await publisher.publishInterviewFailed({ interviewId: I, organizationId: orgs[1]!, failureReason: "x" });
  await publisher.publishReportGenerate({ interviewId: I, organizationId: orgs[2]! });
  assert.deepEqual(r.sent.map((m) => m.MessageGroupId), orgs);
  assert.deepEqual(r.sent.map((m) => JSON.parse(m.MessageBody!).organizationId), orgs);
});

test("production mode: requireQueueUrls makes a missing URL an error at construction, naming the variables", () => {
  const r = recorder();
  const both = { INTERVIEW_COMPLETED_QUEUE_URL: URL, REPORT_GENERATE_QUEUE_URL: URL };
  assert.ok(InterviewQueuePublisher.fromEnv(both, { client: r.client, requireQueueUrls: true }));
  for (const [env, missing] of [
    [{}, ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"]],
    [{ ...both, REPORT_GENERATE_QUEUE_URL: " " }, ["REPORT_GENERATE_QUEUE_URL"]],
    [{ REPORT_GENERATE_QUEUE_URL: URL }, ["INTERVIEW_COMPLETED_QUEUE_URL"]],
  ] as const) {
    assert.throws(
      () => InterviewQueuePublisher.fromEnv(env, { client: r.client, logger: r.logger, requireQueueUrls: true }),
      (e: unknown) => e instanceof PublisherConfigurationError && assert.deepEqual(e.missing, missing) === undefined && e.message.startsWith(missing.join(" and ")),
    );
  }
  assert.throws(() => new InterviewQueuePublisher({ queueUrl: undefined, reportQueueUrl: URL, requireQueueUrls: true }), PublisherConfigurationError);
  assert.equal(r.sent.length + r.logs.length, 0, "nothing sent, nothing skipped");
});

test("assertConfigured(): the start-up check of a publisher built without production mode", async () => {
  const r = recorder();
  const dev = InterviewQueuePublisher.fromEnv({ INTERVIEW_COMPLETED_QUEUE_URL: URL }, { client: r.client, logger: r.logger });
  assert.throws(() => dev.assertConfigured(), (e: unknown) => e instanceof PublisherConfigurationError && e.missing.join() === "REPORT_GENERATE_QUEUE_URL");
  // The message names the events each missing variable would skip, not billing for the report queue.
  assert.throws(
    () => dev.assertConfigured(),
    { message: "REPORT_GENERATE_QUEUE_URL is not set: a deployed service must not skip report.generate requests (report generation)" },
  );
  assert.throws(() => new InterviewQueuePublisher({ queueUrl: undefined, reportQueueUrl: URL, requireQueueUrls: true }), {
    message: "INTERVIEW_COMPLETED_QUEUE_URL is not set: a deployed service must not skip interview.completed or interview.failed events (billing: each one settles an interview's credits)",
  });
  // Without the check the development behaviour stays: the report publish is skipped with a warning.
  assert.equal((await dev.publishReportGenerate({ interviewId: I, organizationId: O })).status, "skipped");
  const ok = InterviewQueuePublisher.fromEnv({ INTERVIEW_COMPLETED_QUEUE_URL: URL, REPORT_GENERATE_QUEUE_URL: URL }, { client: r.client });
  assert.equal(ok.assertConfigured(), ok);
});

test("failureReason: sent at FAILURE_REASON_MAX_LENGTH characters, refused one past it with nothing sent", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  const atLimit = "\u{1F600}".repeat(FAILURE_REASON_MAX_LENGTH);
  assert.equal((await publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: atLimit })).status, "sent");
  assert.ok(Buffer.byteLength(r.sent[0]!.MessageBody!) < 256 * 1024, "far below the SQS message limit");
  await assert.rejects(
    publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: "MARKER".repeat(700) }),
    (e: unknown) =>
      e instanceof ContractViolationError &&
      e.message === "interview-failed contract violated: /failureReason must NOT have more than 4096 characters" &&
      !e.message.includes("MARKER"),
  );
  assert.equal(r.sent.length, 1);
});

test("the publisher's bounds: durationSeconds up to a day, a non-blank failureReason; beyond, refused by name with nothing sent", async () => {
  const r = recorder();
  const publisher = new InterviewQueuePublisher({ queueUrl: URL, client: r.client, logger: r.logger });
  const completed = (durationSeconds: number) => publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds }, { requestId: "r" });
  assert.equal((await completed(DURATION_SECONDS_MAX_PUBLISHED)).status, "sent");
  for (const duration of [DURATION_SECONDS_MAX_PUBLISHED + 0.5, 2_700_000, 1e12]) {
    await assert.rejects(completed(duration), {
      name: "ContractViolationError",
      message: "interview-completed contract violated: /durationSeconds must be <= 86400 (24 hours; a longer one is a unit mistake, e.g. milliseconds)",
    });
  }
  for (const failureReason of ["", "   \n"]) {
    await assert.rejects(publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason }), {
      name: "ContractViolationError",
      message: "interview-failed contract violated: /failureReason must not be empty or blank",
    });
  }
  assert.equal(r.sent.length, 1, "only the first");
  // The wire contract itself (what the consumers accept) stays wider: a message already on a queue is never dropped for these.
  assert.deepEqual(check("interview-completed", { interviewId: I, organizationId: O, completedAt: NOW.toISOString(), durationSeconds: 1e12 }), []);
});
