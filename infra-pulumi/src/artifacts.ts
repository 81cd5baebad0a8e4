/**
 * The Lambda zips that `scripts/build <arch>` (cargo lambda build) leaves in
 * `<target>/lambda/<bin>/bootstrap.zip`, plus `build-info.json`, which records the architecture they
 * were built for. The program checks them before registering anything, so a preview fails with a
 * message that names the build command instead of deploying a binary AWS cannot start.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as pulumi from "@pulumi/pulumi";

import type { Architecture } from "./config";

/** Repository root (infra-pulumi/..). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..");

export const BUILD_INFO_FILE = "build-info.json";
export const ZIP_FILE = "bootstrap.zip";

export interface BuildInfo {
  architecture: Architecture;
  builtAt?: string;
  functions?: string[];
}

/** `$CARGO_TARGET_DIR/lambda` when set (relative to the repo root if relative), else `<repo>/target/lambda`. */
export function defaultArtifactsDir(repoRoot: string, env: NodeJS.ProcessEnv): string {
  const targetDir = env["CARGO_TARGET_DIR"];
  return targetDir ? path.resolve(repoRoot, targetDir, "lambda") : path.join(repoRoot, "target", "lambda");
}

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

/**
 * Checks that every function has a zip and that build-info.json says they were built for
 * `architecture`; returns the zip path per function. Throws ArtifactError listing every problem.
 */
export function checkArtifacts(
  artifactsDir: string,
  architecture: Architecture,
  functionNames: string[],
  stage: string,
): Record<string, string> {
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
  const zips: Record<string, string> = {};
  for (const fn of functionNames) {
    const zip = zipPath(artifactsDir, fn);
    zips[fn] = zip;
    if (!fs.existsSync(zip)) {
      problems.push(`${zip} is missing (function "${fn}")`);
    } else if (typeof info !== "string" && info.functions !== undefined && !info.functions.includes(fn)) {
      problems.push(`${zip} is not from the recorded build (build-info.json lists ${info.functions.join(", ")})`);
    }
  }
  if (problems.length > 0) throw new ArtifactError(problems, buildCommand);
  return zips;
}
