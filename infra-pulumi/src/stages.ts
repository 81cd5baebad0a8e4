/**
 * The stages CI deploys and which one is production, `declarations/stages.json`, loaded and
 * checked. Production is `prod-rs`, not `prod`: this stack names its functions
 * `sophia-<stage>-<function>` (src/naming.ts) and the system it replaces already runs
 * `sophia-prod-<function>` beside it during the cutover (docs/cutover.md).
 */
import * as fs from "node:fs";
import * as path from "node:path";

export const STAGES_FILE = path.join(__dirname, "..", "..", "declarations", "stages.json");

export interface StageDeclaration {
  production: {
    /** The production stage (the Pulumi stack name, the `<stage>` in every resource name). */
    stage: string;
    /** Its GitHub environment, the one its deploy role trusts (`environment:<name>`). */
    environment: string;
    /** The environment variable holding its deploy role's ARN (.github/workflows/infra.yml). */
    roleVariable: string;
  };
  /** The stages .github/workflows/infra.yml deploys, in order. */
  ciStages: string[];
  /** Stages whose data is protected unless `sophia:protectData` says otherwise. */
  protectedStages: string[];
}

export function loadStages(file: string = STAGES_FILE): StageDeclaration {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as StageDeclaration;
  const p = raw.production;
  const problems: string[] = [];
  for (const key of ["stage", "environment", "roleVariable"] as const) {
    if (typeof p?.[key] !== "string" || p[key].length === 0) problems.push(`production.${key} must be a non-empty string`);
  }
  if (!Array.isArray(raw.ciStages) || !raw.ciStages.includes(p?.stage)) problems.push("ciStages must include production.stage");
  if (!Array.isArray(raw.protectedStages) || !raw.protectedStages.includes(p?.stage)) problems.push("protectedStages must include production.stage");
  if (problems.length > 0) throw new Error(`${file}: ${problems.join("; ")}`);
  return { production: p, ciStages: raw.ciStages, protectedStages: raw.protectedStages };
}

export const STAGES = loadStages();
/** The production stage's name (`prod-rs`). */
export const PRODUCTION_STAGE = STAGES.production.stage;
