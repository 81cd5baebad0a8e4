/**
 * The CI workflow and the scripts it calls: the properties issue 7 asks for, checked on the files
 * (GitHub itself is not available here).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as yaml from "js-yaml";

import { REPO_ROOT } from "../src/artifacts";

interface Step {
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  if?: string;
  needs?: string | string[];
  environment?: string | { name: string };
  permissions?: Record<string, string>;
  steps: Step[];
}
const workflow = yaml.load(fs.readFileSync(path.join(REPO_ROOT, ".github", "workflows", "infra.yml"), "utf8")) as {
  on: Record<string, unknown>;
  jobs: Record<string, Job>;
};
const jobs = workflow.jobs;
const pulumiStep = (job: Job) => job.steps.find((s) => s.uses?.startsWith("pulumi/actions@"))!;
const runs = (job: Job) => job.steps.map((s) => s.run ?? "").join("\n");

test("runs on pull requests and on pushes to main", () => {
  assert.ok("pull_request" in workflow.on);
  assert.deepEqual((workflow.on["push"] as { branches: string[] }).branches, ["main"]);
});

test("every PR runs scripts/test-infra, forks included", () => {
  assert.equal(jobs["test"]!.if, undefined);
  assert.match(runs(jobs["test"]!), /bash scripts\/test-infra$/m);
});

test("the PR preview: same-repository PRs only, zips built first, comment on the PR, outputs suppressed", () => {
  const preview = jobs["preview"]!;
  assert.match(preview.if!, /github\.event\.pull_request\.head\.repo\.full_name == github\.repository/);
  assert.match(runs(preview), /scripts\/build --stage dev/);
  const step = pulumiStep(preview);
  assert.equal(step.uses, "pulumi/actions@v6");
  assert.equal(step.with!["command"], "preview");
  assert.equal(step.with!["comment-on-pr"], true);
  assert.equal(step.with!["suppress-outputs"], true);
  assert.equal(step.with!["policyPacks"], "infra-pulumi/policy");
  assert.equal(preview.permissions!["pull-requests"], "write");
  const buildIndex = preview.steps.findIndex((s) => s.run?.includes("scripts/build"));
  assert.ok(buildIndex >= 0 && buildIndex < preview.steps.indexOf(step), "build before preview");
});

test("pushes to main: pulumi up for dev, then prod behind the production environment", () => {
  const dev = jobs["deploy-dev"]!;
  assert.match(dev.if!, /github\.ref == 'refs\/heads\/main'/);
  assert.equal(pulumiStep(dev).with!["command"], "up");
  assert.match(String(pulumiStep(dev).with!["stack-name"]), /dev/);
  const prod = jobs["deploy-prod"]!;
  assert.equal(prod.environment, "production");
  assert.equal(prod.needs, "deploy-dev");
  assert.equal(pulumiStep(prod).with!["command"], "up");
  assert.match(String(pulumiStep(prod).with!["stack-name"]), /prod/);
  assert.match(runs(prod), /scripts\/build --stage prod/);
});

test("the scripts the workflow and the README call exist and are executable", () => {
  for (const script of ["build", "deploy", "preview", "test-infra"]) {
    const file = path.join(REPO_ROOT, "scripts", script);
    assert.ok(fs.existsSync(file), script);
    assert.ok((fs.statSync(file).mode & 0o111) !== 0, `${script} is executable`);
  }
  const deploy = fs.readFileSync(path.join(REPO_ROOT, "scripts", "deploy"), "utf8");
  assert.match(deploy, /command -v pulumi/, "deploy checks for the Pulumi CLI");
  assert.match(deploy, /scripts\/build --stage "\$stage"/);
  assert.match(deploy, /pulumi up --stack "\$stage"/);
});
