/**
 * The program and the policy pack load under the TypeScript loader that `pulumi preview` uses
 * (ts-node with type checking and Pulumi's compiler options), not only under tsx. Child processes.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";

import { ALL_OUTPUT_NAMES, EXPECTED_COUNTS } from "./support/expect";

const ROOT = path.resolve(__dirname, "..");
const LOADER = path.join(__dirname, "support", "pulumi-loader.cjs");

function load(mode: "program" | "policy", dir: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, [LOADER, mode, dir], { encoding: "utf8", timeout: 180_000 });
  assert.equal(r.status, 0, `loader failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

test("index.ts compiles (type-checked) and runs under Pulumi's ts-node with the project's TypeScript", () => {
  const out = load("program", ROOT);
  assert.equal(out["typescript"], require("typescript/package.json").version);
  assert.deepEqual(out["types"], EXPECTED_COUNTS);
  assert.deepEqual(out["outputs"], ALL_OUTPUT_NAMES);
});

test("the policy pack's rules compile under the policy-pack loader (PulumiPolicy.yaml dir)", () => {
  const out = load("policy", path.join(ROOT, "policy"));
  for (const name of ["checkSourceQueuesHaveDlq", "checkEsmReportsBatchItemFailures", "checkVisibilityCoversTimeout", "secretPlaintextVariables"]) {
    assert.ok((out["exports"] as string[]).includes(name), name);
  }
});
