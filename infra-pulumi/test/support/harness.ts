/**
 * Runs the real program (index.ts) under mocks, once per process: the program module registers
 * its resources when it is loaded, so it must be loaded after `setMocks` and only once. Each test
 * file that needs a run is its own process under `node --test`, which gives every stack (dev, prod,
 * preview) a fresh Pulumi runtime and a fresh module instance.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import * as pulumi from "@pulumi/pulumi";

import type { SophiaStack } from "../../src/stack";
import { createMocks, type RecordedCall, type RecordedResource } from "./mocks";

export const PROJECT = "sophia";
export const FUNCTION_NAMES = ["interview-completed", "report-generate", "interview-failed"];

/** Plaintext test secrets: tests check they only ever appear wrapped as secrets. */
export const TEST_SECRETS = {
  "sophia:mongodbUri": "mongodb+srv://sophia-app:not-a-real-password@cluster0.example.mongodb.net/?retryWrites=true",
  "sophia:openaiApiKey": "sk-test-not-a-real-key-0123456789",
};

/** The smallest valid zip (an empty archive: end-of-central-directory record only). */
const EMPTY_ZIP = Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]);

export interface FakeBuild {
  architecture: "arm64" | "x86_64";
  /** Functions to write a zip for (default: all three). */
  functions?: string[];
  /** Write build-info.json (default true). */
  buildInfo?: boolean;
}

const tempDirs: string[] = [];
process.on("exit", () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A temporary artifacts directory laid out like `target/lambda` after `scripts/build` (removed at exit). */
export function makeArtifactsDir(build: FakeBuild): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-lambda-"));
  tempDirs.push(dir);
  const functions = build.functions ?? FUNCTION_NAMES;
  for (const fn of functions) {
    fs.mkdirSync(path.join(dir, fn), { recursive: true });
    fs.writeFileSync(path.join(dir, fn, "bootstrap.zip"), EMPTY_ZIP);
  }
  if (build.buildInfo ?? true) {
    fs.writeFileSync(
      path.join(dir, "build-info.json"),
      JSON.stringify({ architecture: build.architecture, builtAt: new Date().toISOString(), functions }),
    );
  }
  return dir;
}

export interface RunOptions {
  stack: string;
  preview?: boolean;
  /** Extra `sophia:*` config (strings, as in a stack file; objects as JSON). */
  config?: Record<string, string>;
  /** Architecture of the fake build (default: the stack's `sophia:architecture`, else arm64). */
  build?: FakeBuild;
  /**
   * "index" loads the entry module (its exports are the stack outputs); "stack" calls
   * createSophiaStack() instead, to reach the resource objects (e.g. a function's Output props).
   */
  entry?: "index" | "stack";
}

export interface ProgramRun {
  stackName: string;
  preview: boolean;
  resources: RecordedResource[];
  calls: RecordedCall[];
  /** The entry module's exports (the stack outputs), or createSophiaStack()'s outputs. */
  outputs: Record<string, unknown>;
  /** Only with entry "stack". */
  stack?: SophiaStack;
  artifactsDir: string;
}

export function baseConfig(stack: string, artifactsDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    "aws:region": "eu-west-1",
    "sophia:artifactsDir": artifactsDir,
    ...TEST_SECRETS,
    ...extra,
    // Keep the stage visible in a value too, so cross-stack mix-ups show.
    "sophia:mongodbDatabase": extra["sophia:mongodbDatabase"] ?? `sophia_${stack}`,
  };
}

export async function waitForRPCs(): Promise<void> {
  const runtime = pulumi.runtime as unknown as { waitForRPCs?: () => Promise<void> };
  if (typeof runtime.waitForRPCs !== "function") throw new Error("@pulumi/pulumi no longer exposes runtime.waitForRPCs");
  await runtime.waitForRPCs();
}

let used = false;

/** Loads index.ts under mocks for `opts.stack`. Call once per process. */
export async function runProgram(opts: RunOptions): Promise<ProgramRun> {
  if (used) throw new Error("runProgram may run once per process (index.ts registers resources at load)");
  used = true;
  const preview = opts.preview ?? false;
  const architecture = opts.build?.architecture ?? ((opts.config?.["sophia:architecture"] ?? "arm64") as "arm64" | "x86_64");
  const artifactsDir = makeArtifactsDir({ architecture, ...opts.build });
  const { mocks, resources, calls } = createMocks(preview);

  pulumi.runtime.setAllConfig(baseConfig(opts.stack, artifactsDir, opts.config), Object.keys(TEST_SECRETS));
  await pulumi.runtime.setMocks(mocks, PROJECT, opts.stack, preview);

  let outputs: Record<string, unknown>;
  let stack: SophiaStack | undefined;
  if ((opts.entry ?? "index") === "index") {
    outputs = require("../../index") as Record<string, unknown>;
  } else {
    const { createSophiaStack } = require("../../src/stack") as typeof import("../../src/stack");
    stack = createSophiaStack();
    outputs = stack.outputs;
  }
  await waitForRPCs();
  return { stackName: opts.stack, preview, resources, calls, outputs, artifactsDir, ...(stack ? { stack } : {}) };
}
