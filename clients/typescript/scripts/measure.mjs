// What the package costs the API, measured (the README's "Size and first publish"):
//   1. bundle: esbuild of a small API entry that imports the BUILT package (dist/) and publishes,
//      minified, @aws-sdk/* external (the API has its own SDK), gzipped (-9);
//   2. first publish: in fresh Node processes, the time of the first body validation (what a first
//      publish adds before SQS), with the ahead-of-time validators, next to ajv compiling the same
//      schemas at run time (what the package did before; ajv is a devDependency);
//   3. load: the time to require the package once @aws-sdk/client-sqs is loaded (the API loads it anyway).
// Medians of 15 processes. Run after `npm run build`:  node scripts/measure.mjs
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

import { build } from "esbuild";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(PACKAGE, "dist", "index.js");
const dir = mkdtempSync(path.join(tmpdir(), "sophia-measure-"));
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function bundle(source) {
  writeFileSync(path.join(dir, "entry.js"), source);
  return build({
    entryPoints: [path.join(dir, "entry.js")],
    bundle: true,
    platform: "node",
    format: "cjs",
    minify: true,
    external: ["@aws-sdk/*"],
    outfile: path.join(dir, "out.js"),
    logLevel: "error",
    metafile: true,
  }).then(({ metafile }) => {
    const code = readFileSync(path.join(dir, "out.js"));
    const inputs = Object.keys(metafile.inputs);
    return { bytes: code.length, gzip: gzipSync(code, { level: 9 }).length, ajv: inputs.some((i) => i.includes("node_modules/ajv")) };
  });
}

const api = await bundle(`
  const { InterviewQueuePublisher } = require(${JSON.stringify(DIST)});
  const p = InterviewQueuePublisher.fromEnv();
  exports.publish = (id, org, s) => p.publishInterviewCompleted({ interviewId: id, organizationId: org, durationSeconds: s });
`);

function timed(script) {
  const runs = [];
  for (let i = 0; i < 15; i++) runs.push(Number(execFileSync(process.execPath, ["-e", script], { cwd: PACKAGE, encoding: "utf8" })));
  return median(runs);
}
const body = `{ interviewId: "65a1b2c3d4e5f60718293a4b", organizationId: "65a1b2c3d4e5f60718293a4c", durationSeconds: 754 }`;
// The SDK first: the API loads it anyway.
const load = timed(`require("@aws-sdk/client-sqs"); const t = performance.now(); require(${JSON.stringify(DIST)}); console.log(performance.now() - t)`);
const aot = timed(`
  const m = require(${JSON.stringify(DIST)});
  const t = performance.now(); m.interviewCompletedBody(${body}); console.log(performance.now() - t)`);
const runtime = timed(`
  const { schemas } = require(${JSON.stringify(path.join(PACKAGE, "dist", "generated", "schemas.js"))});
  const { isConsumerDateTime } = require(${JSON.stringify(path.join(PACKAGE, "dist", "formats.js"))});
  const Ajv2020 = require("ajv/dist/2020").default, addFormats = require("ajv-formats").default;
  const t = performance.now();
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
  addFormats(ajv); ajv.addFormat("date-time", { type: "string", validate: isConsumerDateTime });
  ajv.compile(schemas["interview-completed"])({}); ajv.compile(schemas["message-attributes"])({});
  console.log(performance.now() - t)`);
rmSync(dir, { recursive: true, force: true });
const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
console.log(
  JSON.stringify(
    {
      node: process.version,
      bundle: { minified: kib(api.bytes), gzip: kib(api.gzip), containsAjv: api.ajv },
      firstPublishValidationMs: { aheadOfTime: +aot.toFixed(2), ajvAtRunTime: +runtime.toFixed(2) },
      requireAfterSdkMs: +load.toFixed(2),
    },
    null,
    2,
  ),
);
