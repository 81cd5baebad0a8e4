#!/usr/bin/env node
// A local SQS for the API's development, without Rust: fauxqs (an npm package) on 127.0.0.1,
// the queues the API publishes to (each with its DLQ, 3 receives as deployed), and the
// variables the API needs printed as `export` lines. Runs until Ctrl-C, a SIGTERM/SIGHUP, or its
// parent process (npx, npm, a shell) exits.
//
//   npx --yes -p fauxqs@1.9.2 sophia-local-queue [--port 4566]   (in the API project: fauxqs stays
//   in npx's cache; installed into the API it would move the API's @aws-sdk/client-sqs)
//   (in this repository, after scripts/setup-tools:  npm run local-queue  in clients/typescript)
//
// The queue URLs it prints name 127.0.0.1 (not fauxqs's default `sqs.<region>.localhost`, which
// does not resolve on most machines): an `SQSClient` uses the queue URL's host as its endpoint
// (`useQueueUrlAsEndpoint`, the SDK's default), so a plain `new SQSClient({})` with the printed
// region and keys reaches this server.
//
// fauxqs is looked up where an API project can have it: next to this package, in the current
// project (its node_modules, upwards), on npx's PATH (`npx -p fauxqs@1.9.2 ...`), and in this
// repository's scripts/tools. fauxqs 1.9.2 is the newest release that runs on Node 20 (2.x needs
// Node 22.5); on Node 20 npm warns EBADENGINE for its transitive `cookie@2` (fastify's
// light-my-request, which a listening server does not use): expected and harmless.
//
// Nothing consumes the messages: read them with the AWS CLI or the SDK (ReceiveMessage). For the
// whole pipeline (consumers, MongoDB, reports) use the repository's `scripts/run-local` (Rust).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SUPPORTED = "1.9"; // the fauxqs minor whose internals (its stores) this launcher uses
const args = process.argv.slice(2);
const portArg = args.indexOf("--port");
const port = Number.parseInt(portArg >= 0 ? args[portArg + 1] ?? "" : process.env.FAUXQS_PORT ?? "4566", 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("sophia-local-queue: --port must be a TCP port (0: any free one)");
  process.exit(2);
}

/** Folders that may hold `fauxqs/`, in the order they are tried. */
function fauxqsCandidates(here, cwd, pathVariable) {
  const dirs = [];
  try {
    // Next to the package (npx -p with both, or a project that has both hoisted).
    dirs.push(path.resolve(fileURLToPath(import.meta.resolve("fauxqs")), "..", "..", ".."));
  } catch {
    // not resolvable from the package's own location
  }
  for (const d of createRequire(path.join(cwd, "package.json")).resolve.paths("fauxqs") ?? []) dirs.push(d);
  for (const entry of (pathVariable ?? "").split(path.delimiter)) {
    if (entry.endsWith(path.join("node_modules", ".bin"))) dirs.push(path.dirname(entry));
  }
  dirs.push(path.join(here, "..", "..", "..", "scripts", "tools", "node_modules"));
  return [...new Set(dirs.map((d) => path.resolve(d)))];
}

async function loadFauxqs() {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const searched = fauxqsCandidates(here, process.cwd(), process.env.PATH);
  const dir = searched.map((d) => path.join(d, "fauxqs")).find((d) => existsSync(path.join(d, "package.json")));
  if (!dir) {
    console.error(
      "sophia-local-queue: fauxqs (the local SQS server) is not installed where this command looks:\n" +
        searched.map((d) => `  ${d}\n`).join("") +
        "Run this command through npx, which fetches it without adding it to your project:\n" +
        "  npx --yes -p fauxqs@1.9.2 sophia-local-queue\n" +
        "or in the repository run scripts/setup-tools.",
    );
    process.exit(2);
  }
  const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  const file = (rel) => pathToFileURL(path.join(dir, rel)).href;
  const stores = ["dist/sqs/sqsStore.js", "dist/sns/snsStore.js", "dist/s3/s3Store.js"];
  if (!manifest.version?.startsWith(`${SUPPORTED}.`) || !stores.every((s) => existsSync(path.join(dir, s)))) {
    console.error(
      `sophia-local-queue: found fauxqs ${manifest.version} at ${dir}; this command needs fauxqs ${SUPPORTED}.x ` +
        "(the newest line that runs on Node 20): npx --yes -p fauxqs@1.9.2 sophia-local-queue",
    );
    process.exit(2);
  }
  const [{ buildApp }, { SqsStore }, { SnsStore }, { S3Store }] = await Promise.all([
    import(file(manifest.exports["."].import.default)),
    ...stores.map((s) => import(file(s))),
  ]);
  return { buildApp, SqsStore, SnsStore, S3Store, version: manifest.version };
}

const { buildApp, SqsStore, SnsStore, S3Store } = await loadFauxqs();
const { SQSClient, CreateQueueCommand, GetQueueAttributesCommand } = await import("@aws-sdk/client-sqs");

// An empty host: fauxqs then names queues after the request's Host header (127.0.0.1:<port>).
const sqsStore = new SqsStore();
sqsStore.host = "";
const app = buildApp({
  logger: false,
  defaultRegion: "us-east-1",
  stores: { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() },
});
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

// Every queue the API publishes to, under its URL variable (declarations/queues.json, generated
// into the package's build as dist/generated/queues.js; in this repository `npm run local-queue`
// builds it first).
const { queues } = createRequire(import.meta.url)("../dist/generated/queues.js");
const env = {};
for (const q of Object.values(queues).filter((q) => q.publishedByApi)) env[q.urlEnv] = await queueWithDlq(q.name);
Object.assign(env, {
  AWS_ENDPOINT_URL_SQS: endpoint,
  // The SDKs and the AWS CLI v2 read AWS_REGION; the AWS CLI v1 reads only AWS_DEFAULT_REGION.
  AWS_REGION: "us-east-1",
  AWS_DEFAULT_REGION: "us-east-1",
  AWS_ACCESS_KEY_ID: "local",
  AWS_SECRET_ACCESS_KEY: "local",
});
sqs.destroy();
for (const q of Object.values(queues).filter((q) => q.publishedByApi)) {
  const url = env[q.urlEnv];
  if (new URL(url).origin !== endpoint) throw new Error(`the ${q.name} queue URL ${url} does not name ${endpoint}`);
}
for (const [k, v] of Object.entries(env)) console.log(`export ${k}=${v}`);
console.log(`# fauxqs listening on ${endpoint}: Ctrl-C stops it`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  // close() waits for the connections still open; a client that keeps one must not keep the port
  // (or this process, orphaned under npx's shell) alive: exit within 2 s whatever they do.
  setTimeout(() => process.exit(0), 2000).unref();
  await app.close();
  process.exit(0);
};
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, stop);
// `npx` (and `npm run`) start this command under `sh -c`, and pass a SIGTERM/SIGINT they receive
// to that shell only: the shell exits without passing it on, and this process would keep the
// port. So it also stops when its parent goes (it is then re-parented: its ppid changes).
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(), 250).unref();
if (process.env.SOPHIA_EXIT_ON_STDIN_EOF === "1") {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
