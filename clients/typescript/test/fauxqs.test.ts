/**
 * Against fauxqs (the project's local SQS) with the real @aws-sdk/client-sqs: what a publish
 * reports is what lands on the queue, body and attributes; a queue that does not exist is an SDK
 * error for the caller. Also checks the built package (dist/) loads from CommonJS and from ESM.
 */
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

import { InterviewQueuePublisher } from "../src/index";
import { type Fauxqs, startFauxqs } from "./support/fauxqs";

const I = "65a1b2c3d4e5f60718293a4b";
const O = "65a1b2c3d4e5f60718293a4c";
let fauxqs: Fauxqs;
let sqs: SQSClient;

before(async () => {
  fauxqs = await startFauxqs();
  sqs = new SQSClient({
    endpoint: fauxqs.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
});

after(() => {
  sqs?.destroy();
  fauxqs?.stop();
});

async function queue(name: string): Promise<string> {
  const out = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-${process.pid}-${Date.now()}` }));
  return out.QueueUrl!;
}

async function receiveAll(url: string) {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"] }),
  );
  for (const m of out.Messages ?? []) await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
  return out.Messages ?? [];
}

test("both publishes land on the queue with the body and attributes they report", async () => {
  const url = await queue("ts-client");
  const logs: string[] = [];
  const publisher = new InterviewQueuePublisher({ queueUrl: url, client: sqs, logger: { warn: (m) => logs.push(m) } });
  const completed = await publisher.publishInterviewCompleted(
    { interviewId: I, organizationId: O, durationSeconds: 59.999 },
    { requestId: "req-fauxqs" },
  );
  const failed = await publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: "bot lost the call" });
  assert.equal(completed.status, "sent");
  assert.equal(failed.status, "sent");
  const messages = await receiveAll(url);
  assert.equal(messages.length, 2);
  const byId = new Map(messages.map((m) => [m.MessageId, m]));
  for (const [result, eventType, requestId] of [
    [completed, "interview.completed", "req-fauxqs"],
    [failed, "interview.failed", "unknown"],
  ] as const) {
    assert.ok(result.status === "sent");
    const m = byId.get(result.messageId)!;
    assert.equal(m.Body, result.body);
    assert.equal(m.MessageAttributes!["eventType"]!.StringValue, eventType);
    assert.equal(m.MessageAttributes!["requestId"]!.StringValue, requestId);
  }
  assert.deepEqual(logs, []);
});

test("tenant fairness: fauxqs (a standard queue) accepts MessageGroupId; the request on the wire carries the organization id", async () => {
  // fauxqs 1.9.2 accepts MessageGroupId on a standard queue and does not keep it (it returns no
  // MessageGroupId attribute on receive), so the request the SDK serialised is what is checked.
  const url = await queue("ts-client-fair");
  const wire: Record<string, unknown>[] = [];
  const client = new SQSClient({ endpoint: fauxqs.endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  client.middlewareStack.add(
    (next) => async (args) => {
      const body = (args.request as { body?: unknown }).body;
      const text = typeof body === "string" ? body : body instanceof Uint8Array ? Buffer.from(body).toString("utf8") : String(body);
      wire.push(JSON.parse(text) as Record<string, unknown>);
      return next(args);
    },
    { step: "finalizeRequest", name: "captureBody" },
  );
  try {
    const publisher = new InterviewQueuePublisher({ queueUrl: url, reportQueueUrl: url, client, logger: { warn: () => {} } });
    const results = [
      await publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 60 }),
      await publisher.publishInterviewFailed({ interviewId: I, organizationId: O, failureReason: "x" }),
      await publisher.publishReportGenerate({ interviewId: I, organizationId: O }),
    ];
    assert.deepEqual(results.map((r) => r.status), ["sent", "sent", "sent"]);
    assert.deepEqual(wire.map((w) => w["MessageGroupId"]), [O, O, O]);
    assert.equal((await receiveAll(url)).length, 3, "all three accepted and delivered");
  } finally {
    client.destroy();
  }
});

test("a queue that does not exist is an SDK error for the caller", async () => {
  const publisher = new InterviewQueuePublisher({
    queueUrl: `${fauxqs.endpoint}/000000000000/does-not-exist-${process.pid}`,
    client: sqs,
    logger: { warn: () => {} },
  });
  await assert.rejects(publisher.publishInterviewCompleted({ interviewId: I, organizationId: O, durationSeconds: 60 }), (e: Error) =>
    /QueueDoesNotExist|does not exist/i.test(`${e.name} ${e.message}`),
  );
});

test("the built package loads through its exports from CommonJS and ESM", () => {
  const root = path.resolve(__dirname, "..");
  const cjs = execFileSync(process.execPath, ["-e", `console.log(typeof require(${JSON.stringify(root)}).InterviewQueuePublisher)`]);
  assert.equal(cjs.toString().trim(), "function");
  const esm = execFileSync(process.execPath, [
    "--input-type=module",
    "-e",
    `const m = await import(${JSON.stringify(path.join(root, "dist", "index.js"))}); console.log(typeof m.publishInterviewCompleted, typeof m.check);`,
  ]);
  assert.equal(esm.toString().trim(), "function function");
});

test("assertPublisherConfigured(): a deployed service without a queue URL stops at start-up (the built package)", () => {
  const root = path.resolve(__dirname, "..");
  const env = { PATH: process.env["PATH"] ?? "", INTERVIEW_COMPLETED_QUEUE_URL: "http://127.0.0.1:1/000000000000/q" };
  const script = `try { require(${JSON.stringify(root)}).assertPublisherConfigured(); console.log("configured"); } catch (e) { console.log(e.name, e.missing.join()); }`;
  assert.equal(execFileSync(process.execPath, ["-e", script], { env }).toString().trim(), "PublisherConfigurationError REPORT_GENERATE_QUEUE_URL");
  const both = { ...env, REPORT_GENERATE_QUEUE_URL: env.INTERVIEW_COMPLETED_QUEUE_URL };
  assert.equal(execFileSync(process.execPath, ["-e", script], { env: both }).toString().trim(), "configured");
});

test("sophia-local-queue without fauxqs anywhere: says where it looked and how to install it, without repeating itself", () => {
  // The bin alone in an empty folder: not next to fauxqs, no project, no npx PATH, no repository.
  const dir = mkdtempSync(path.join(tmpdir(), "sophia-lq-"));
  try {
    mkdirSync(path.join(dir, "bin"));
    copyFileSync(path.resolve(__dirname, "..", "bin", "local-queue.mjs"), path.join(dir, "bin", "local-queue.mjs"));
    const out = spawnSync(process.execPath, [path.join(dir, "bin", "local-queue.mjs"), "--port", "0"], {
      cwd: dir,
      env: { PATH: "/usr/bin:/bin" },
      encoding: "utf8",
    });
    assert.equal(out.status, 2, out.stderr);
    assert.match(out.stderr, /fauxqs \(the local SQS server\) is not installed where this command looks/);
    // The way that keeps the API's pins: through npx, fauxqs in npx's cache (never --save-dev into the API).
    assert.match(out.stderr, /npx --yes -p fauxqs@1\.9\.2 sophia-local-queue/);
    assert.doesNotMatch(out.stderr, /npm install|--save-dev/, "nothing that would change the API's package.json");
    assert.ok(out.stderr.includes(path.join(dir, "node_modules")), "the folders searched are named");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
