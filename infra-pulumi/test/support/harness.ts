/**
 * Runs the real program (index.ts) under mocks, once per process: the program module registers
 * its resources when it is loaded, so it must be loaded after `setMocks` and only once. Each test
 * file that needs a run is its own process under `node --test`, which gives every stack (dev, prod,
 * preview) a fresh Pulumi runtime and a fresh module instance.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";

import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";

import { ELF_MACHINE, headCommit } from "../../src/artifacts";
import { loadSettings } from "../../src/settings";
import type { SophiaStack } from "../../src/stack";
import { EVERY_OPTION_ALARM, EVERY_OPTION_VPC, TEST_LAYER_ARN } from "./fixtures";
import { createMocks, type RecordedCall, type RecordedResource } from "./mocks";

export { EVERY_OPTION_ALARM, EVERY_OPTION_VPC, TEST_LAYER_ARN };

export const PROJECT = "sophia";
/** Every function of declarations/queues.json (the fake zips are built for these). */
export const FUNCTION_NAMES = loadSettings().functions.map((f) => f.name);

/** Plaintext test secrets: tests check they only ever appear wrapped as secrets. */
export const TEST_SECRETS = {
  "sophia:mongodbUri": "mongodb+srv://sophia-app:not-a-real-password@cluster0.example.mongodb.net/?retryWrites=true",
  "sophia:openaiApiKey": "sk-test-not-a-real-key-0123456789",
};

/** The break-glass administrator of the stage key the tests configure (an SSO role: a path). */
export const TEST_BREAK_GLASS_ARN = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_BreakGlass_0123456789abcdef";

/** With EVERY_OPTION_VPC (fixtures.ts), every option that adds a resource type or a grant. */
export const EVERY_OPTION_CONFIG: Record<string, string> = {
  "sophia:vpc": JSON.stringify(EVERY_OPTION_VPC),
  "sophia:alarmSubscription": JSON.stringify(EVERY_OPTION_ALARM.subscription),
  "sophia:resumeBucket": "sophia-qa-resumes",
  "sophia:resumeBucketAccess": "read-write",
  "sophia:resumeBucketPrefix": "resumes/",
};

export interface FakeBuild {
  architecture: "arm64" | "x86_64";
  /** Functions to write a zip for (default: all three). */
  functions?: string[];
  /** Write build-info.json (default true). */
  buildInfo?: boolean;
  /** ELF e_machine of the fake `bootstrap` (default: the architecture's). */
  elfMachine?: number;
  /** Unix mode of `bootstrap` in the zip (default 0o755). */
  mode?: number;
  /** Commit recorded in build-info.json (default: HEAD). */
  gitCommit?: string;
  /** Cargo features recorded in build-info.json (default none). */
  features?: string[];
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(b: Buffer): number {
  let c = 0xffffffff;
  for (const byte of b) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The first 64 bytes of a 64-bit little-endian ELF executable (ET_EXEC) for `machine`, plus padding. */
export function elfBinary(machine: number, type = 2): Buffer {
  const b = Buffer.alloc(4096, 0x90);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little-endian
  b[6] = 1; // EV_CURRENT
  b.fill(0, 7, 16);
  b.writeUInt16LE(type, 16);
  b.writeUInt16LE(machine, 18);
  b.writeUInt32LE(1, 20);
  return b;
}

/** A real zip (deflate) with one entry per file, made on Unix with the given modes, like cargo-lambda's. */
export function zipOf(files: { name: string; data: Buffer; mode?: number }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name);
    const packed = zlib.deflateRawSync(f.data);
    const crc = crc32(f.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(f.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(f.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((((f.mode ?? 0o100755) & 0xffff) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += 30 + name.length + packed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** Writes build-info.json for the zips in `dir` as scripts/build does (sha256 of each zip). */
export function writeBuildInfo(
  dir: string,
  architecture: string,
  functions: string[],
  gitCommit: string | undefined,
  features: string[] = [],
): void {
  const zips = Object.fromEntries(
    functions
      .filter((f) => fs.existsSync(path.join(dir, f, "bootstrap.zip")))
      .map((f) => {
        const bytes = fs.readFileSync(path.join(dir, f, "bootstrap.zip"));
        return [f, { bytes: bytes.length, sha256: crypto.createHash("sha256").update(bytes).digest("hex") }];
      }),
  );
  fs.writeFileSync(
    path.join(dir, "build-info.json"),
    JSON.stringify({ architecture, builtAt: new Date().toISOString(), gitCommit, functions, features, zips }),
  );
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
  const machine = build.elfMachine ?? ELF_MACHINE[build.architecture];
  for (const fn of functions) {
    fs.mkdirSync(path.join(dir, fn), { recursive: true });
    const zip = zipOf([{ name: "bootstrap", data: elfBinary(machine), mode: 0o100000 | (build.mode ?? 0o755) }]);
    fs.writeFileSync(path.join(dir, fn, "bootstrap.zip"), zip);
  }
  if (build.buildInfo ?? true) {
    writeBuildInfo(dir, build.architecture, functions, build.gitCommit ?? headCommit(), build.features);
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
  /** Start from the committed `Pulumi.<stack>.yaml`'s config (its real values), then `config`. */
  stackFile?: boolean;
}

/**
 * What docs/deploy.md's step 3 writes into a stack file for one person and one account: the tests
 * give their own (TEST_BREAK_GLASS_ARN, the mocks' account), whatever a person committed.
 */
export const PERSONAL_CONFIG_KEYS = ["aws:allowedAccountIds", "sophia:kmsKeyAdministrators"];

/**
 * The `config:` of a committed stack file, as the CLI hands it to the program (objects as JSON),
 * without PERSONAL_CONFIG_KEYS and the secrets. The file is the checkout's, or the one in
 * SOPHIA_TEST_STACK_FILES (a directory; deploy-doc.test.ts points it at step 3's output to show CI
 * stays green after that commit).
 */
export function stackFileConfig(stack: string): Record<string, string> {
  const file = path.join(process.env["SOPHIA_TEST_STACK_FILES"] ?? path.join(__dirname, "..", "..", ".."), `Pulumi.${stack}.yaml`);
  const doc = yaml.load(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> };
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(doc.config ?? {})) {
    if (PERSONAL_CONFIG_KEYS.includes(k)) continue;
    if (typeof v === "object" && v !== null && "secure" in v) continue; // ciphertext: tests use TEST_SECRETS
    out[k] = typeof v === "string" ? v : JSON.stringify(v);
  }
  return out;
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
  const arch = (extra["sophia:architecture"] ?? "arm64") as "arm64" | "x86_64";
  return {
    "aws:region": "eu-west-1",
    "sophia:artifactsDir": artifactsDir,
    "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN[arch],
    ...TEST_SECRETS,
    "sophia:kmsKeyAdministrators": JSON.stringify([TEST_BREAK_GLASS_ARN]),
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
  const config = { ...(opts.stackFile ? stackFileConfig(opts.stack) : {}), ...opts.config };
  const architecture = opts.build?.architecture ?? ((config["sophia:architecture"] ?? "arm64") as "arm64" | "x86_64");
  // As scripts/build --stage does: the aws-iam-auth feature for Atlas AWS IAM authentication.
  const features = config["sophia:mongodbAuth"] === "aws-iam" ? ["aws-iam-auth"] : [];
  const artifactsDir = makeArtifactsDir({ architecture, features, ...opts.build });
  const { mocks, resources, calls } = createMocks(preview);

  pulumi.runtime.setAllConfig(baseConfig(opts.stack, artifactsDir, config), Object.keys(TEST_SECRETS));
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
