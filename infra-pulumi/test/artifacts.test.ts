/**
 * Build artifacts: the program must stop before registering anything, with a message naming
 * `scripts/build <arch>`, when a zip is missing, is not the recorded build (checksum), or does not
 * hold an executable `bootstrap` ELF for the stack's architecture. The fixtures are real zips
 * (deflate, Unix modes) holding ELF headers, like cargo-lambda's.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import { ArtifactError, checkArtifacts, headCommit } from "../src/artifacts";
import { defaultArtifactsDir } from "../src/config";
import { REPO_ROOT } from "../src/repository";
import { baseConfig, elfBinary, FUNCTION_NAMES, makeArtifactsDir, writeBuildInfo, zipOf } from "./support/harness";
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

const HEAD = "0123456789abcdef0123456789abcdef01234567";

test("a complete build for the stack's architecture passes and yields each function's zip, no warning", () => {
  for (const arch of ["arm64", "x86_64"] as const) {
    const dir = makeArtifactsDir({ architecture: arch, gitCommit: HEAD });
    assert.deepEqual(checkArtifacts(dir, arch, FUNCTION_NAMES, "dev", HEAD), {
      zips: Object.fromEntries(FUNCTION_NAMES.map((f) => [f, path.join(dir, f, "bootstrap.zip")])),
      warnings: [],
    });
  }
});

test("a zip that is not the one build-info.json records (sha256) is refused", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", gitCommit: HEAD });
  // Same architecture, still a valid bootstrap, but other bytes: a stale or swapped zip.
  fs.writeFileSync(path.join(dir, "report-generate", "bootstrap.zip"), zipOf([{ name: "bootstrap", data: elfBinary(183).fill(1, 64) }]));
  assertClearError(
    (() => {
      try {
        checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", HEAD);
      } catch (e) {
        return e;
      }
      return assert.fail("should throw");
    })(),
    "report-generate/bootstrap.zip has sha256",
    "it is not the recorded build",
  );
});

test("build-info.json without checksums (an older build) cannot be verified: refused", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", gitCommit: HEAD });
  fs.writeFileSync(path.join(dir, "build-info.json"), JSON.stringify({ architecture: "arm64", functions: FUNCTION_NAMES }));
  assert.throws(() => checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", HEAD), /records no sha256 for interview-completed/);
});

function refusal(dir: string, arch: "arm64" | "x86_64" = "arm64"): string {
  try {
    checkArtifacts(dir, arch, FUNCTION_NAMES, "dev", HEAD);
  } catch (e) {
    assert.ok(e instanceof ArtifactError, String(e));
    return e.message;
  }
  return assert.fail("should throw");
}

test("a bootstrap ELF for x86-64 (e_machine 62) labelled arm64 is refused, whatever build-info says", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", elfMachine: 62, gitCommit: HEAD });
  assert.match(refusal(dir), /bootstrap is built for x86_64, not arm64 \(ELF e_machine 62, expected 183\)/);
});

test("a bootstrap for aarch64 on an x86_64 stack is refused (e_machine 183, expected 62)", () => {
  const dir = makeArtifactsDir({ architecture: "x86_64", elfMachine: 183, gitCommit: HEAD });
  assert.match(refusal(dir, "x86_64"), /bootstrap is built for arm64, not x86_64 \(ELF e_machine 183, expected 62\)/);
});

test("a bootstrap without execute bits is refused (Lambda could not start it)", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", mode: 0o644, gitCommit: HEAD });
  assert.match(refusal(dir), /bootstrap is not executable/);
});

test("an empty zip, a zip without bootstrap, a non-ELF bootstrap, and a file that is no zip are refused", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", gitCommit: HEAD });
  const write = (fn: string, bytes: Buffer) => fs.writeFileSync(path.join(dir, fn, "bootstrap.zip"), bytes);
  write("interview-completed", Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]));
  write("report-generate", zipOf([{ name: "target/bootstrap", data: elfBinary(183) }]));
  write("interview-failed", zipOf([{ name: "bootstrap", data: Buffer.from("#!/bin/sh\necho hi\n".padEnd(80, " ")) }]));
  writeBuildInfo(dir, "arm64", FUNCTION_NAMES, HEAD);
  const msg = refusal(dir);
  assert.match(msg, /interview-completed\/bootstrap\.zip has no bootstrap at its root/);
  assert.match(msg, /report-generate\/bootstrap\.zip has no bootstrap at its root/);
  assert.match(msg, /interview-failed\/bootstrap\.zip: bootstrap is not an ELF binary/);
  write("interview-failed", Buffer.from("not a zip at all"));
  writeBuildInfo(dir, "arm64", FUNCTION_NAMES, HEAD);
  assert.match(refusal(dir), /interview-failed\/bootstrap\.zip is not a zip archive/);
});

test("zips built from another commit than HEAD pass with a warning naming both commits", () => {
  const dir = makeArtifactsDir({ architecture: "arm64", gitCommit: "feedfacefeedfacefeedfacefeedfacefeedface" });
  const { warnings } = checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", HEAD);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /built from commit feedfacefeedfacefeedfacefeedfacefeedface, but HEAD is 0123456789abcdef/);
  assert.equal(checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", null).warnings.length, 0, "outside git: no claim");
});

test("headCommit() is this checkout's HEAD", () => {
  assert.match(headCommit() ?? "", /^[0-9a-f]{40}$/);
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
  const { error } = await programError("prod", dir, { "sophia:architecture": "x86_64", "aws:allowedAccountIds": '["123456789012"]' });
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
    checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", HEAD);
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
  assert.throws(() => checkArtifacts(dir, "arm64", FUNCTION_NAMES, "dev", HEAD), /interview-failed\/bootstrap\.zip is not from the recorded build/);
});

test("the default artifacts directory follows CARGO_TARGET_DIR like scripts/build", () => {
  assert.equal(defaultArtifactsDir("/repo", {}), "/repo/target/lambda");
  assert.equal(defaultArtifactsDir("/repo", { CARGO_TARGET_DIR: "/cache/target" }), "/cache/target/lambda");
  assert.equal(defaultArtifactsDir("/repo", { CARGO_TARGET_DIR: "build/t" }), "/repo/build/t/lambda");
  assert.equal(REPO_ROOT, path.resolve(__dirname, "..", ".."));
});

test("a stack on Atlas AWS IAM refuses zips built without aws-iam-auth, and takes those built with it", () => {
  const without = makeArtifactsDir({ architecture: "arm64", gitCommit: HEAD });
  assert.throws(
    () => checkArtifacts(without, "arm64", FUNCTION_NAMES, "dev", HEAD, ["aws-iam-auth"]),
    (e: unknown) => e instanceof Error && e.message.includes("without the feature(s) aws-iam-auth") && e.message.includes("scripts/build --stage dev"),
  );
  const withIt = makeArtifactsDir({ architecture: "arm64", gitCommit: HEAD, features: ["aws-iam-auth"] });
  assert.equal(checkArtifacts(withIt, "arm64", FUNCTION_NAMES, "dev", HEAD, ["aws-iam-auth"]).warnings.length, 0);
  // A password stack needs no feature: either build passes.
  assert.equal(checkArtifacts(withIt, "arm64", FUNCTION_NAMES, "dev", HEAD, []).warnings.length, 0);
});
