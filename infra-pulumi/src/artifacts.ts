/**
 * The Lambda zips that `scripts/build <arch>` (cargo lambda build) leaves in
 * `<target>/lambda/<bin>/bootstrap.zip`, plus `build-info.json`, which records the architecture,
 * the commit and each zip's SHA-256. The program checks them before registering anything: every
 * zip is the recorded one (checksum), holds an executable `bootstrap` ELF for the stack's
 * architecture, and a build of another commit than HEAD is reported. A preview thus fails with a
 * message naming the build command instead of deploying a binary AWS cannot start, and CI deploys
 * to prod exactly the bytes it deployed to dev.
 */
import { execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";

import * as pulumi from "@pulumi/pulumi";

import type { Architecture } from "./config";
import { REPO_ROOT } from "./repository";

export const BUILD_INFO_FILE = "build-info.json";
export const ZIP_FILE = "bootstrap.zip";

export interface BuildInfo {
  architecture: Architecture;
  builtAt?: string;
  gitCommit?: string;
  functions?: string[];
  /** Cargo features the functions were built with (`scripts/build`: aws-iam-auth for `mongodbAuth aws-iam`). */
  features?: string[];
  zips?: Record<string, { bytes?: number; sha256?: string }>;
}

/** ELF e_machine of each Lambda architecture. */
export const ELF_MACHINE: Record<Architecture, number> = { arm64: 183, x86_64: 62 };
export const BOOTSTRAP = "bootstrap";

export function zipPath(artifactsDir: string, functionName: string): string {
  return path.join(artifactsDir, functionName, ZIP_FILE);
}

export class ArtifactError extends pulumi.RunError {
  constructor(
    readonly problems: string[],
    readonly buildCommand: string,
  ) {
    super(`Lambda build artifacts are not usable:\n  - ${problems.join("\n  - ")}\nRun \`${buildCommand}\` and try again.`);
  }
}

function readBuildInfo(file: string): BuildInfo | string {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT"
      ? `${file} does not exist (no build has been recorded)`
      : `${file} is not valid JSON: ${(e as Error).message}`;
  }
  if (typeof raw !== "object" || raw === null) return `${file} is not a JSON object`;
  const info = raw as Record<string, unknown>;
  if (info["architecture"] !== "arm64" && info["architecture"] !== "x86_64") {
    return `${file} has no valid "architecture" (arm64 or x86_64)`;
  }
  return info as unknown as BuildInfo;
}

export function sha256File(file: string): string {
  return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

/** The current commit of the repository, or undefined outside a git checkout. */
export function headCommit(repoRoot: string = REPO_ROOT): string | undefined {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

/**
 * The `bootstrap` entry of a zip: its bytes (inflated) and whether its Unix mode is executable.
 * Reads the central directory (end record within the last 64 KiB + 22 bytes); no Zip64.
 */
export function readZipEntry(zip: Buffer, name: string): { data: Buffer; executable: boolean } | string {
  const EOCD = 0x06054b50;
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return "is not a zip archive";
  const count = zip.readUInt16LE(eocd + 10);
  let off = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < count; n++) {
    if (off + 46 > zip.length || zip.readUInt32LE(off) !== 0x02014b50) return "has a damaged central directory";
    const madeBy = zip.readUInt16LE(off + 4) >> 8;
    const method = zip.readUInt16LE(off + 10);
    const compressed = zip.readUInt32LE(off + 20);
    const nameLen = zip.readUInt16LE(off + 28);
    const extraLen = zip.readUInt16LE(off + 30);
    const commentLen = zip.readUInt16LE(off + 32);
    const mode = zip.readUInt32LE(off + 38) >>> 16;
    const local = zip.readUInt32LE(off + 42);
    if (zip.toString("utf8", off + 46, off + 46 + nameLen) === name) {
      if (local + 30 > zip.length || zip.readUInt32LE(local) !== 0x04034b50) return `has a damaged entry ${name}`;
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const raw = zip.subarray(start, start + compressed);
      let data: Buffer;
      try {
        if (method === 0) data = raw;
        else if (method === 8) data = zlib.inflateRawSync(raw);
        else return `stores ${name} with compression method ${method} (only stored and deflate are read)`;
      } catch {
        return `has a corrupt ${name}`;
      }
      // Host 3 = Unix: the high 16 bits of the external attributes are st_mode.
      return { data, executable: madeBy === 3 && (mode & 0o111) !== 0 };
    }
    off += 46 + nameLen + extraLen + commentLen;
  }
  return `has no ${name} at its root`;
}

/** A 64-bit little-endian ELF executable for `architecture`, or the reason it is not. */
export function checkElf(data: Buffer, architecture: Architecture): string | undefined {
  if (data.length < 64 || data.readUInt32BE(0) !== 0x7f454c46) return "is not an ELF binary";
  if (data[4] !== 2 || data[5] !== 1) return "is not a 64-bit little-endian ELF binary";
  const type = data.readUInt16LE(16);
  if (type !== 2 && type !== 3) return `is an ELF file of type ${type}, not an executable`;
  const machine = data.readUInt16LE(18);
  if (machine !== ELF_MACHINE[architecture]) {
    const built = Object.entries(ELF_MACHINE).find(([, m]) => m === machine)?.[0] ?? `e_machine ${machine}`;
    return `is built for ${built}, not ${architecture} (ELF e_machine ${machine}, expected ${ELF_MACHINE[architecture]})`;
  }
  return undefined;
}

/**
 * Checks every function's zip against build-info.json (architecture, checksum, executable
 * `bootstrap` ELF for `architecture`); returns the zip path per function and warnings (a build of
 * another commit than HEAD). Throws ArtifactError listing every problem.
 */
export function checkArtifacts(
  artifactsDir: string,
  architecture: Architecture,
  functionNames: string[],
  stage: string,
  /** HEAD's commit; null when unknown (no warning). */
  head: string | null = headCommit() ?? null,
  /** Cargo features the stack needs in the binaries (e.g. aws-iam-auth for Atlas AWS IAM). */
  requiredFeatures: string[] = [],
): { zips: Record<string, string>; warnings: string[] } {
  const buildCommand = `scripts/build ${architecture}`;
  const problems: string[] = [];
  const info = readBuildInfo(path.join(artifactsDir, BUILD_INFO_FILE));
  if (typeof info === "string") {
    problems.push(info);
  } else if (info.architecture !== architecture) {
    problems.push(
      `the zips in ${artifactsDir} were built for ${info.architecture}, but stack "${stage}" deploys ${architecture} ` +
        `(config sophia:architecture); either rebuild, or run \`pulumi config set sophia:architecture ${info.architecture} --stack ${stage}\``,
    );
  }
  if (typeof info !== "string") {
    const missing = requiredFeatures.filter((f) => !(info.features ?? []).includes(f));
    if (missing.length > 0) {
      problems.push(
        `the zips in ${artifactsDir} were built without the feature(s) ${missing.join(", ")} that stack "${stage}" needs ` +
          `(aws-iam-auth: sophia:mongodbAuth aws-iam, the driver's MONGODB-AWS); build with \`scripts/build --stage ${stage}\``,
      );
    }
  }
  const warnings: string[] = [];
  if (typeof info !== "string" && head !== null && info.gitCommit !== head) {
    warnings.push(
      `the zips in ${artifactsDir} were built from commit ${info.gitCommit ?? "(not recorded)"}, but HEAD is ${head}: ` +
        `they may not contain the code being deployed (run \`${buildCommand}\`, or deploy the commit they were built from)`,
    );
  }
  const zips: Record<string, string> = {};
  for (const fn of functionNames) {
    const zip = zipPath(artifactsDir, fn);
    zips[fn] = zip;
    if (!fs.existsSync(zip)) {
      problems.push(`${zip} is missing (function "${fn}")`);
      continue;
    }
    if (typeof info !== "string" && info.functions !== undefined && !info.functions.includes(fn)) {
      problems.push(`${zip} is not from the recorded build (build-info.json lists ${info.functions.join(", ")})`);
      continue;
    }
    if (typeof info !== "string") {
      const recorded = info.zips?.[fn]?.sha256;
      const actual = sha256File(zip);
      if (recorded === undefined) problems.push(`build-info.json records no sha256 for ${fn}: the zip cannot be verified`);
      else if (recorded !== actual) {
        problems.push(`${zip} has sha256 ${actual}, but build-info.json records ${recorded}: it is not the recorded build`);
      }
    }
    const entry = readZipEntry(fs.readFileSync(zip), BOOTSTRAP);
    if (typeof entry === "string") {
      problems.push(`${zip} ${entry}`);
      continue;
    }
    if (!entry.executable) problems.push(`${zip}: ${BOOTSTRAP} is not executable (Unix mode without x bits)`);
    const elf = checkElf(entry.data, architecture);
    if (elf !== undefined) problems.push(`${zip}: ${BOOTSTRAP} ${elf}`);
  }
  if (problems.length > 0) throw new ArtifactError(problems, buildCommand);
  return { zips, warnings };
}
