// The packed tarball in a scratch API project, as the API team gets it from the registry:
//   1. `npm pack` (its `prepack` builds dist/) into .local/client-ts/;
//   2. the scratch project (test/scratch-api: its own, OLDER @aws-sdk/client-sqs, the mongodb
//      driver, the oldest supported TypeScript) copied to .local/client-ts/scratch-api and
//      installed with `npm ci` from its committed lockfile (again only when the lockfile changed),
//      then the tarball installed next to it (`npm install --no-save`: registry packages only,
//      from the npm cache when they are there);
//   3. exactly one @aws-sdk/client-sqs in its tree (`npm ls`): the scratch project's own;
//   4. `tsc -p .` with the oldest supported TypeScript over typecheck/*.ts (@ts-expect-error cases);
//   5. with --smoke: a local queue (bin/local-queue.mjs: fauxqs, no Rust) and the CommonJS
//      (smoke.cjs) and ESM (publish-all.mjs) entry points publishing every kind with their own client.
// Prints {"dir": <scratch project>, "sdk": <its SDK version>, "tarball": <path>} on the last line.
//   node scripts/scratch.mjs [--smoke] [--prebuilt]
// --prebuilt: pack the dist/ that is there (`npm pack --ignore-scripts`), for a caller that has just
// built it and may be reading it concurrently (tests/typescript_contract.rs); prepack would
// rebuild dist/ under it.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as assert from "node:assert/strict";

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
assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts") && files.includes("bin/local-queue.mjs"), files.join(" "));
assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/")), "only dist/, bin/ and the README are packed");

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
log(`npm install --no-save ${packed.filename}`);
npm(["install", "--no-save", "--prefer-offline", tarball], SCRATCH);

const tree = JSON.parse(npm(["ls", "@aws-sdk/client-sqs", "--all", "--json"], SCRATCH));
const copies = new Set();
(function walk(deps) {
  for (const [name, d] of Object.entries(deps ?? {})) {
    if (name === "@aws-sdk/client-sqs" && d.version) copies.add(d.version);
    walk(d.dependencies);
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
  log("a local queue without Rust (bin/local-queue.mjs) and the CommonJS and ESM entry points");
  const queue = spawn(process.execPath, [path.join(PACKAGE, "bin", "local-queue.mjs"), "--port", "0"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, SOPHIA_EXIT_ON_STDIN_EOF: "1" },
  });
  try {
    const env = await new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`the local queue did not start within 30 s: ${out}`)), 30_000);
      queue.on("exit", (code) => reject(new Error(`the local queue exited with ${code}: ${out}`)));
      queue.stdout.on("data", (chunk) => {
        out += chunk;
        if (out.includes("# fauxqs listening")) {
          clearTimeout(timer);
          resolve(Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]])));
        }
      });
    });
    const run = (file, args = []) =>
      execFileSync(process.execPath, [file, ...args], { cwd: SCRATCH, env: { ...process.env, ...env }, encoding: "utf8" });
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
    queue.kill("SIGTERM");
  }
}
console.log(JSON.stringify({ dir: SCRATCH, sdk: wanted, tarball }));
