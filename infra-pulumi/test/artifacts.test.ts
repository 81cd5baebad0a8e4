/**
 * Build artifacts: the program must stop before registering anything, with a message naming
 * `scripts/build <arch>`, when a zip is missing or was built for the other architecture.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import { ArtifactError, checkArtifacts, defaultArtifactsDir, REPO_ROOT } from "../src/artifacts";
import { baseConfig, FUNCTION_NAMES, makeArtifactsDir } from "./support/harness";
import { createMocks, type RecordedResource } from "./support/mocks";

/** Runs createSophiaStack() for `stack` with the given artifacts; returns the error it threw. */
async function programError(
  stack: string,
  artifactsDir: string,
  config: Record<string, string> = {},
): Promise<{ error: unknown; resources: RecordedResource[] }> {
  const { mocks, resources } = createMocks(true);
  pulumi.runtime.setAllConfig(baseConfig(stack, artifactsDir, config));
  await pulumi.runtime.setMocks(mocks, "sophia", stack, true);
  const { createSophiaStack } = require("../src/stack") as typeof import("../src/stack");
  try {
    createSophiaStack();
  } catch (error) {
    return { error, resources };
  }
  assert.fail("createSophiaStack() should have thrown");
}

function assertClearError(error: unknown, ...fragments: string[]): string {
  assert.ok(error instanceof ArtifactError, `expected ArtifactError, got ${String(error)}`);
  // A RunError makes the Pulumi CLI print the message alone, without a stack trace.
  assert.ok(pulumi.RunError.isInstance(error));
  for (const f of fragments) assert.ok(error.message.includes(f), `message should mention "${f}":\n${error.message}`);
  return error.message;
}

test("a complete build for the stack's architecture passes and yields each function's zip", () => {
  const dir = makeArtifactsDir({ architecture: "arm64" });
  assert.deepEqual(
    checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev"),
    Object.fromEntries(FUNCTION_NAMES.map((f) => [f, path.join(dir, f, "bootstrap.zip")])),
  );
});

test("missing zip: the program fails before registering anything and names `scripts/build arm64`", async () => {
  const dir = makeArtifactsDir({ architecture: "arm64", functions: ["interview-completed", "interview-failed"] });
  const { error, resources } = await programError("dev", dir);
  assertClearError(error, `${dir}/report-generate/bootstrap.zip is missing`, "Run `scripts/build arm64`");
  assert.equal(resources.length, 0, "nothing registered");
});

test("zips built for x86_64 on an arm64 stack: clear error naming both architectures and the command", async () => {
  const dir = makeArtifactsDir({ architecture: "x86_64" });
  const { error, resources } = await programError("dev", dir);
  assertClearError(error, "built for x86_64", 'stack "dev" deploys arm64', "Run `scripts/build arm64`");
  assert.equal(resources.length, 0);
});

test("zips built for arm64 on an x86_64 stack: the command names x86_64", async () => {
  const dir = makeArtifactsDir({ architecture: "arm64" });
  const { error } = await programError("prod", dir, { "sophia:architecture": "x86_64" });
  assertClearError(error, "built for arm64", "deploys x86_64", "Run `scripts/build x86_64`");
});

test("no build-info.json (zips of unknown architecture): refused", async () => {
  const dir = makeArtifactsDir({ architecture: "arm64", buildInfo: false });
  const { error } = await programError("dev", dir);
  assertClearError(error, "build-info.json does not exist", "Run `scripts/build arm64`");
});

test("an empty artifacts directory lists every missing zip at once", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-empty-"));
  try {
    checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev");
    assert.fail("should throw");
  } catch (e) {
    const msg = assertClearError(e, "scripts/build arm64");
    for (const f of FUNCTION_NAMES) assert.ok(msg.includes(`${f}/bootstrap.zip is missing`), f);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a zip that build-info.json does not list is stale", () => {
  const dir = makeArtifactsDir({ architecture: "arm64" });
  fs.writeFileSync(
    path.join(dir, "build-info.json"),
    JSON.stringify({ architecture: "arm64", functions: ["interview-completed", "report-generate"] }),
  );
  assert.throws(() => checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev"), /interview-failed\/bootstrap\.zip is not from the recorded build/);
});

test("the default artifacts directory follows CARGO_TARGET_DIR like scripts/build", () => {
  assert.equal(defaultArtifactsDir("/repo", {}), "/repo/target/lambda");
  assert.equal(defaultArtifactsDir("/repo", { CARGO_TARGET_DIR: "/cache/target" }), "/cache/target/lambda");
  assert.equal(defaultArtifactsDir("/repo", { CARGO_TARGET_DIR: "build/t" }), "/repo/build/t/lambda");
  assert.equal(REPO_ROOT, path.resolve(__dirname, "..", ".."));
});
