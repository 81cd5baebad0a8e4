/**
 * The shape of a GitHub Actions workflow file as the workflow tests read it (js-yaml), and the
 * loader. client-publish-workflow.test.ts uses it; workflow.test.ts declares the same shapes.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as yaml from "js-yaml";

import { REPO_ROOT } from "../../src/repository";

export interface WorkflowStep {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}

export interface WorkflowJob {
  if?: string;
  needs?: string | string[];
  environment?: string | { name: string };
  permissions?: Record<string, string>;
  steps: WorkflowStep[];
}

export interface WorkflowFile {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  jobs: Record<string, WorkflowJob>;
}

/** `.github/workflows/<file>`: its text and its parsed form. */
export function loadWorkflow(file: string): { text: string; workflow: WorkflowFile } {
  const text = fs.readFileSync(path.join(REPO_ROOT, ".github", "workflows", file), "utf8");
  return { text, workflow: yaml.load(text) as WorkflowFile };
}
