/**
 * The API's environment: the structured `apiEnv` output (dev stack through index.ts, under mocks)
 * and scripts/stack-env on a recorded `pulumi stack output --json` (test/fixtures; the Pulumi CLI
 * cannot run here, so the file is written in the shape it prints, and checked below to name
 * exactly the outputs this program exports); and the package README's StackReference example
 * (clients/typescript/README.md, "Deploying"), type-checked against this program's Pulumi packages.
 */
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, test } from "node:test";

import * as ts from "typescript";

import { ALL_OUTPUT_NAMES, expectedOutputValues } from "./support/expect";
import { type ProgramRun, runProgram } from "./support/harness";
import { resolve } from "./support/values";

const STAGE = "dev";
const REPO = path.resolve(__dirname, "..", "..");
const STACK_ENV = path.join(REPO, "scripts", "stack-env");
const RECORDED = path.join(__dirname, "fixtures", "stack-output.dev.json");
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE });
});

function stackEnv(file: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync("bash", [STACK_ENV, STAGE, "--from-file", file, ...args], { encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function withOutputs(outputs: Record<string, unknown>): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sophia-stack-env-")), "outputs.json");
  fs.writeFileSync(file, JSON.stringify(outputs));
  return file;
}

test("apiEnv: the URL of each queue the API publishes to (interview events, report retries) under its env name, equal to the flat output, known and not secret", async () => {
  const r = await resolve(run.outputs["apiEnv"] as never);
  assert.equal(r.known, true);
  assert.equal(r.secret, false);
  const expected = expectedOutputValues(STAGE);
  assert.deepEqual(r.value, {
    INTERVIEW_COMPLETED_QUEUE_URL: expected["INTERVIEW_COMPLETED_QUEUE_URL"],
    REPORT_GENERATE_QUEUE_URL: expected["REPORT_GENERATE_QUEUE_URL"],
  });
});

test("the recorded stack output names exactly this program's outputs, apiEnv with the same keys", async () => {
  const recorded = JSON.parse(fs.readFileSync(RECORDED, "utf8")) as Record<string, unknown>;
  assert.deepEqual(Object.keys(recorded).sort(), ALL_OUTPUT_NAMES);
  const apiEnv = (await resolve(run.outputs["apiEnv"] as never)).value as Record<string, string>;
  assert.deepEqual(Object.keys(recorded["apiEnv"] as object).sort(), Object.keys(apiEnv).sort());
});

test("scripts/stack-env writes dotenv (default) and json from the recorded output", () => {
  const url = "https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-dev-interview-completed";
  const reports = "https://sqs.eu-west-1.amazonaws.com/123456789012/sophia-dev-report-generate";
  assert.equal(
    execFileSync("bash", [STACK_ENV, STAGE, "--from-file", RECORDED], { encoding: "utf8" }),
    `INTERVIEW_COMPLETED_QUEUE_URL=${url}\nREPORT_GENERATE_QUEUE_URL=${reports}\n`,
  );
  const json = stackEnv(RECORDED, "--format", "json");
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { INTERVIEW_COMPLETED_QUEUE_URL: url, REPORT_GENERATE_QUEUE_URL: reports });
});

test("scripts/stack-env falls back to the flat outputs of a stack without apiEnv", () => {
  const recorded = JSON.parse(fs.readFileSync(RECORDED, "utf8")) as Record<string, unknown>;
  delete recorded["apiEnv"];
  const r = stackEnv(withOutputs(recorded));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `INTERVIEW_COMPLETED_QUEUE_URL=${recorded["INTERVIEW_COMPLETED_QUEUE_URL"]}\nREPORT_GENERATE_QUEUE_URL=${recorded["REPORT_GENERATE_QUEUE_URL"]}\n`,
  );
});

test("scripts/stack-env refuses outputs without the variable, secrets/objects and bad formats, printing nothing", () => {
  for (const [outputs, message] of [
    [{ API_PUBLISH_POLICY_ARN: "arn:x" }, /no INTERVIEW_COMPLETED_QUEUE_URL/],
    [{ apiEnv: { INTERVIEW_COMPLETED_QUEUE_URL: "https://q" } }, /no REPORT_GENERATE_QUEUE_URL/],
    [{ apiEnv: { INTERVIEW_COMPLETED_QUEUE_URL: { "4dabf18193072939515e22adb298388d": "secret" }, REPORT_GENERATE_QUEUE_URL: "https://r" } }, /not a one-line/],
    [{ apiEnv: { INTERVIEW_COMPLETED_QUEUE_URL: "a\nB=c", REPORT_GENERATE_QUEUE_URL: "https://r" } }, /not a one-line/],
  ] as const) {
    const r = stackEnv(withOutputs(outputs));
    assert.equal(r.code, 1, JSON.stringify(outputs));
    assert.equal(r.stdout, "");
    assert.match(r.stderr, message);
  }
  const bad = stackEnv(RECORDED, "--format", "yaml");
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /dotenv or json/);
});

test("the package README's StackReference example type-checks against this program's Pulumi packages and reads outputs this stack exports", () => {
  const readme = fs.readFileSync(path.join(REPO, "clients", "typescript", "README.md"), "utf8");
  const block = /^```ts readme-test=stack-reference\.ts\n([\s\S]*?)^```$/m.exec(readme)?.[1];
  assert.ok(block, "the README's stack-reference.ts block");
  const read = [...block.matchAll(/requireOutput\("(\w+)"\)/g)].map((m) => m[1]!);
  assert.deepEqual(read.sort(), ["API_PUBLISH_POLICY_ARN", "apiEnv"]);
  for (const name of read) assert.ok(ALL_OUTPUT_NAMES.includes(name), `${name} is an output of this stack`);
  // Saved inside this package, so that @pulumi/pulumi and @pulumi/aws resolve from its node_modules.
  const dir = fs.mkdtempSync(path.join(__dirname, ".readme-"));
  try {
    const file = path.join(dir, "stack-reference.ts");
    fs.writeFileSync(file, block);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      types: ["node"],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    assert.deepEqual(problems, []);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
