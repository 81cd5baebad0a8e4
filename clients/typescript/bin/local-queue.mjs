#!/usr/bin/env node
// A local SQS for the API's development, without Rust: fauxqs (an npm package) on 127.0.0.1,
// the two queues the API publishes to (each with its DLQ, 3 receives as deployed), and the
// variables the API needs printed as `export` lines. Runs until Ctrl-C.
//
//   npx -y -p fauxqs@1.9.2 -p @sophia/async-jobs-client sophia-local-queue [--port 4566]
//   (in this repository, after scripts/setup-tools:  npm run local-queue  in clients/typescript)
//
// Nothing consumes the messages: read them with the AWS CLI or the SDK (ReceiveMessage). For the
// whole pipeline (consumers, MongoDB, reports) use the repository's `scripts/run-local` (Rust).
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const portArg = args.indexOf("--port");
const port = Number.parseInt(portArg >= 0 ? args[portArg + 1] ?? "" : process.env.FAUXQS_PORT ?? "4566", 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("sophia-local-queue: --port must be a TCP port (0: any free one)");
  process.exit(2);
}

async function loadFauxqs() {
  try {
    return await import("fauxqs");
  } catch {
    // In the repository: the pinned copy that scripts/setup-tools installs.
    const here = path.dirname(fileURLToPath(import.meta.url));
    const dir = path.join(here, "..", "..", "..", "scripts", "tools", "node_modules", "fauxqs");
    try {
      const { exports } = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
      return await import(pathToFileURL(path.join(dir, exports["."].import.default)).href);
    } catch {
      console.error(
        "sophia-local-queue: fauxqs is not installed. Run it with npx:\n" +
          "  npx -y -p fauxqs@1.9.2 -p @sophia/async-jobs-client sophia-local-queue\n" +
          "or, in the repository, run scripts/setup-tools first.",
      );
      process.exit(2);
    }
  }
}

const { buildApp } = await loadFauxqs();
const { SQSClient, CreateQueueCommand, GetQueueAttributesCommand } = await import("@aws-sdk/client-sqs");

const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
await app.listen({ port, host: "127.0.0.1" });
const endpoint = `http://127.0.0.1:${app.server.address().port}`;
const sqs = new SQSClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });

async function queueWithDlq(name) {
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }));
  const source = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes.QueueArn, maxReceiveCount: 3 }) },
    }),
  );
  return source.QueueUrl;
}

const env = {
  INTERVIEW_COMPLETED_QUEUE_URL: await queueWithDlq("interview-completed"),
  REPORT_GENERATE_QUEUE_URL: await queueWithDlq("report-generate"),
  AWS_ENDPOINT_URL_SQS: endpoint,
  AWS_REGION: "us-east-1",
  AWS_ACCESS_KEY_ID: "local",
  AWS_SECRET_ACCESS_KEY: "local",
};
sqs.destroy();
for (const [k, v] of Object.entries(env)) console.log(`export ${k}=${v}`);
console.log(`# fauxqs listening on ${endpoint}: Ctrl-C stops it`);

const stop = async () => {
  await app.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (process.env.SOPHIA_EXIT_ON_STDIN_EOF === "1") {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
