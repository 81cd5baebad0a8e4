/**
 * Where the repository is: the program reads its declarations, stage files and reference pages from
 * it, and the default build directory is inside it (config.ts, defaultArtifactsDir).
 */
import * as path from "node:path";

/** Repository root (infra-pulumi/..). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..");
