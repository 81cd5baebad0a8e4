// The packed tarball in a scratch API project, as the API team gets it from the registry:
//   1. `npm pack` (its `prepack` builds dist/) into .local/client-ts/;
//   2. the scratch project (test/scratch-api: its own, OLDER @aws-sdk/client-sqs, the mongodb
//      driver, the oldest supported TypeScript) copied to .local/client-ts/scratch-api and
//      installed with `npm ci` from its committed lockfile (again only when the lockfile changed),
//      then the tarball installed next to it (`npm install --no-save`: registry packages only,
//      from the npm cache when they are there);
//   3. exactly one @aws-sdk/client-sqs in its tree (`npm ls`): the scratch project's own;
//   4. `tsc -p .` with the oldest supported TypeScript over typecheck/*.ts (@ts-expect-error cases);
//   5. with --smoke: the package README run AS WRITTEN (scripts/readme-blocks.mjs): its local-queue
//      block (`npm install --save-dev fauxqs@1.9.2`, `npx sophia-local-queue`: the installed
//      package's bin, inside this project), then its publish and admin-retry blocks (compiled by
//      tsc, run with only the printed variables and, for the retry, nx-27017), the messages read
//      back off the queues; then the CommonJS (smoke.cjs) and ESM (publish-all.mjs) entry points
//      publishing every kind with their own client to the same queue.
// Prints {"dir": <scratch project>, "sdk": <its SDK version>, "tarball": <path>} on the last line.
//   node scripts/scratch.mjs [--smoke] [--prebuilt]
// --prebuilt: pack the dist/ that is there (`npm pack --ignore-scripts`), for a caller that has just
// built it and may be reading it concurrently (tests/it/typescript_contract.rs); prepack would
// rebuild dist/ under it.
import { execFileSync, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as assert from "node:assert/strict";

import { readmeBlocks } from "./readme-blocks.mjs";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO = path.resolve(PACKAGE, "..", "..");
const WORK = path.join(REPO, ".local", "client-ts");
const TEMPLATE = path.join(PACKAGE, "test", "scratch-api");
const SCRATCH = path.join(WORK, "scratch-api");
const log = (m) => console.error(`scratch: ${m}`);
const npm = (args, cwd) =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });

mkdirSync(WORK, { recursive: true });
const prebuilt = process.argv.includes("--prebuilt");
log(prebuilt ? "npm pack --ignore-scripts (dist/ as built)" : "npm pack (prepack builds dist/)");
const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", WORK, ...(prebuilt ? ["--ignore-scripts"] : [])], PACKAGE));
const tarball = path.join(WORK, packed.filename);
const files = packed.files.map((f) => f.path);
for (const f of ["dist/index.js", "dist/index.d.ts", "dist/index.js.map", "dist/index.d.ts.map", "src/index.ts", "bin/local-queue.mjs", "CHANGELOG.md", "README.md"]) {
  assert.ok(files.includes(f), `${f} is packed: ${files.join(" ")}`);
}
assert.ok(!files.some((f) => f.startsWith("test/") || f.startsWith("scripts/") || f.endsWith(".js") && f.startsWith("src/")), "no tests, scripts or generated src/*.js are packed");
// Source and declaration maps resolve inside the tarball (../src/*.ts next to dist/).
for (const map of files.filter((f) => f.endsWith(".map"))) {
  const { sources } = JSON.parse(execFileSync("tar", ["-xOzf", path.join(WORK, packed.filename), `package/${map}`], { encoding: "utf8" }));
  for (const src of sources) assert.ok(files.includes(path.posix.join(path.posix.dirname(map), src)), `${map} -> ${src}`);
}

const lock = readFileSync(path.join(TEMPLATE, "package-lock.json"));
const stamp = path.join(SCRATCH, `.installed-${createHash("sha256").update(lock).digest("hex").slice(0, 16)}`);
if (!existsSync(stamp)) {
  log("npm ci in the scratch project (its lockfile changed or it is new)");
  rmSync(SCRATCH, { recursive: true, force: true });
  cpSync(TEMPLATE, SCRATCH, { recursive: true });
  npm(["ci", "--prefer-offline"], SCRATCH);
  writeFileSync(stamp, "");
} else {
  cpSync(TEMPLATE, SCRATCH, { recursive: true });
}
// Saved in the scratch copy's package.json (as the API would have it), so the README's own
// `npm install --save-dev fauxqs@...` keeps it.
log(`npm install ${packed.filename}`);
npm(["install", "--prefer-offline", tarball], SCRATCH);

const tree = JSON.parse(npm(["ls", "@aws-sdk/client-sqs", "--all", "--json"], SCRATCH));
const copies = new Set();
(function walk(deps) {
  for (const [name, d] of Object.entries(deps ?? {})) {
    if (name === "@aws-sdk/client-sqs" && d.version) copies.add(d.version);
    // fauxqs (a devDependency: the README's local queue) brings its own SDK for its own use.
    if (name !== "fauxqs") walk(d.dependencies);
  }
})(tree.dependencies);
const wanted = JSON.parse(readFileSync(path.join(TEMPLATE, "package.json"), "utf8")).dependencies["@aws-sdk/client-sqs"];
assert.deepEqual([...copies], [wanted], `one @aws-sdk/client-sqs in the API's tree, its own: ${JSON.stringify(tree)}`);
const installed = tree.dependencies["@sophia/async-jobs-client"];
assert.ok(installed, "the tarball is installed");
assert.ok(
  !existsSync(path.join(SCRATCH, "node_modules", "@sophia", "async-jobs-client", "node_modules", "@aws-sdk")),
  "the package has no nested SDK of its own (npm ls lists the peer as deduped)",
);

log("tsc -p . (the oldest supported TypeScript, against the installed declarations)");
execFileSync(path.join(SCRATCH, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: SCRATCH, stdio: "inherit" });

if (process.argv.includes("--smoke")) {
  log("the README's blocks as written: the local queue from inside the project, the publish, the admin retry");
  const blocks = readmeBlocks(readFileSync(path.join(PACKAGE, "README.md"), "utf8"));
  assert.deepEqual([...blocks.keys()].sort(), ["admin-retry.mts", "local-queue", "publish.mts"], "the README's tested blocks");
  rmSync(path.join(SCRATCH, "readme"), { recursive: true, force: true });
  rmSync(path.join(SCRATCH, "readme-dist"), { recursive: true, force: true });
  mkdirSync(path.join(SCRATCH, "readme"));
  for (const [name, code] of blocks) if (name.endsWith(".mts")) writeFileSync(path.join(SCRATCH, "readme", name), code);
  execFileSync(path.join(SCRATCH, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.readme.json"], { cwd: SCRATCH, stdio: "inherit" });

  // The local-queue block in bash, in its own process group (npx starts node under it), on a free
  // port (FAUXQS_PORT=0); stopped by its group id. npm's EBADENGINE warning for cookie@2 on Node 20
  // goes to stderr (the README says why it is harmless).
  const queue = spawn("bash", ["-euo", "pipefail", "-c", blocks.get("local-queue")], {
    cwd: SCRATCH,
    detached: true,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, FAUXQS_PORT: "0", SOPHIA_EXIT_ON_STDIN_EOF: "1", npm_config_prefer_offline: "true", npm_config_fund: "false", npm_config_audit: "false" },
  });
  let mongo;
  try {
    const env = await new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`the README's local queue did not start within 120 s: ${out}`)), 120_000);
      queue.on("exit", (code) => reject(new Error(`the README's local queue exited with ${code}: ${out}`)));
      queue.stdout.on("data", (chunk) => {
        out += chunk;
        if (out.includes("# fauxqs listening")) {
          clearTimeout(timer);
          resolve(Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]])));
        }
      });
    });
    assert.deepEqual(
      Object.keys(env).sort(),
      ["AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL_SQS", "AWS_REGION", "AWS_SECRET_ACCESS_KEY", "INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"],
    );
    for (const k of ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"]) {
      assert.equal(new URL(env[k]).origin, env.AWS_ENDPOINT_URL_SQS, `${k} names the server a default SQSClient reaches`);
    }
    // Only the printed variables: nothing of this machine's AWS configuration.
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_") && !k.startsWith("MONGODB_")));
    const run = (file, args = [], extra = {}) =>
      execFileSync(process.execPath, [file, ...args], { cwd: SCRATCH, env: { ...clean, ...env, ...extra }, encoding: "utf8" });
    const sdk = createRequire(path.join(SCRATCH, "package.json"))("@aws-sdk/client-sqs");
    const client = new sdk.SQSClient({ endpoint: env.AWS_ENDPOINT_URL_SQS, region: env.AWS_REGION, credentials: { accessKeyId: "local", secretAccessKey: "local" } });
    const drain = async (url) => {
      const got = [];
      for (let i = 0; i < 5; i++) {
        const out = await client.send(new sdk.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"] }));
        for (const m of out.Messages ?? []) {
          got.push({ body: JSON.parse(m.Body), attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])) });
          await client.send(new sdk.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
        }
        if ((out.Messages ?? []).length === 0 && got.length > 0) break;
      }
      return got;
    };

    const published = run(path.join("readme-dist", "publish.mjs"));
    assert.equal((published.match(/status: 'sent'/g) ?? []).length, 3, published);
    const interview = await drain(env.INTERVIEW_COMPLETED_QUEUE_URL);
    const report = await drain(env.REPORT_GENERATE_QUEUE_URL);
    assert.deepEqual(interview.map((m) => m.attributes.eventType).sort(), ["interview.completed", "interview.failed"]);
    assert.deepEqual(report.map((m) => [m.attributes.eventType, m.attributes.requestId]), [["report.generate", "settlement-65a1b2c3d4e5f60718293a4b"]]);
    assert.equal(interview.find((m) => m.attributes.eventType === "interview.completed").body.durationSeconds, 754.5);
    log("README publish block: 3 messages on the README's local queue with a default SQSClient");

    const nx = path.join(REPO, ".local", "venv", "bin", "python");
    assert.ok(existsSync(nx), "nx-27017 is not installed: run scripts/setup-tools");
    mongo = await startNx(nx);
    const retried = run(path.join("readme-dist", "admin-retry.mjs"), [], { MONGODB_URI: mongo.uri, MONGODB_DATABASE: "readme" });
    assert.match(retried, /outcome: 'published'/, retried);
    assert.match(retried, /attemptsReset: true/, retried);
    assert.deepEqual((await drain(env.REPORT_GENERATE_QUEUE_URL)).map((m) => m.attributes.requestId), ["admin-retry-65a1b2c3d4e5f60718293a4b"]);
    client.destroy();
    log("README admin-retry block: the report's attempts reset and report.generate re-published (nx-27017)");

    log(run("smoke.cjs").trim());
    const I = "65a1b2c3d4e5f60718293a4b";
    const input = { interviewId: I, organizationId: I };
    const esm = JSON.parse(
      run("publish-all.mjs", [
        JSON.stringify([
          { kind: "completed", input: { ...input, durationSeconds: 60 } },
          { kind: "failed", input: { ...input, failureReason: "x" } },
          { kind: "report", input },
        ]),
      ]),
    );
    assert.equal(esm.sdk, wanted);
    assert.deepEqual(esm.results.map((r) => r.status), ["sent", "sent", "sent"], JSON.stringify(esm));
    log(`ESM: ${esm.results.length} sent with @aws-sdk/client-sqs ${esm.sdk}`);
  } finally {
    mongo?.stop();
    try {
      process.kill(-queue.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

/** nx-27017 (in memory, 127.0.0.1, a free port) through the project's launcher; stopped by its PID. */
async function startNx(python) {
  const { createServer, connect } = await import("node:net");
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const child = spawn(python, [path.join(REPO, "scripts", "tools", "nx_launcher.py"), "--data-dir", "memory", "--host", "127.0.0.1", "-p", String(port)], {
    stdio: "ignore",
  });
  const accepts = () =>
    new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
  for (let i = 0; i < 300 && child.exitCode === null && !(await accepts()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(child.exitCode, null, "nx-27017 started");
  return { uri: `mongodb://127.0.0.1:${port}/?directConnection=true`, stop: () => child.exitCode === null && child.kill("SIGTERM") };
}
if (process.argv.includes("--smoke")) {
  // `npm pack` from a clean checkout (the package's tracked files only): without `npm ci` it says
  // what to run (not `tsc: not found`); after `npm ci` prepack builds and the tarball has dist/.
  log("npm pack from a clean checkout: refused with a clear message, then packed after npm ci");
  const clean = path.join(WORK, "clean-checkout");
  rmSync(clean, { recursive: true, force: true });
  const tracked = execFileSync("git", ["ls-files", "-z", "--", "."], { cwd: PACKAGE, encoding: "utf8" }).split("\0").filter(Boolean);
  for (const f of tracked) if (existsSync(path.join(PACKAGE, f))) cpSync(path.join(PACKAGE, f), path.join(clean, f));
  let refused;
  try {
    execFileSync("npm", ["pack", "--dry-run", "--loglevel=error"], { cwd: clean, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    refused = `${e.stdout}${e.stderr}`;
  }
  assert.ok(refused, "npm pack without the devDependencies must fail");
  assert.match(refused, /prepack: the build needs the devDependencies .* run `npm ci`/);
  assert.doesNotMatch(refused, /not found/);
  npm(["ci", "--prefer-offline"], clean);
  const [cleanPack] = JSON.parse(npm(["pack", "--json", "--dry-run"], clean));
  assert.ok(cleanPack.files.some((f) => f.path === "dist/index.js"), "the clean checkout's tarball has dist/");
  rmSync(clean, { recursive: true, force: true });
}
console.log(JSON.stringify({ dir: SCRATCH, sdk: wanted, tarball }));
