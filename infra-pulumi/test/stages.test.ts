/**
 * One production stage everywhere. declarations/stages.json declares it (`prod-rs`: the system this
 * stack replaces runs functions named `sophia-prod-<function>`, the names a stage `prod` would give
 * this stack's, docs/cutover.md) with its GitHub environment and role variable. Every place that
 * names the production stage is read here and the set of names it yields must be exactly the
 * declared one: the deploy workflow, the bootstrap's environment trust, scripts/protect-environments
 * and scripts/lib.sh, the program's protected stages, check-stack-file, and the docs a person follows
 * (deploy.md's "Prod, after dev", cutover.md, runbook.md, infra-pulumi/README.md).
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { environmentOf, loadStageNames } from "../../infra-bootstrap/src/policies";
import { PROTECTED_STAGES } from "../src/config";
import { REPO_ROOT } from "../src/repository";
import { loadStages, STAGES } from "../src/stages";
import { github, protect } from "./support/github";
import { loadWorkflow } from "./support/workflow-file";

const PROD = STAGES.production.stage;
const read = (f: string) => fs.readFileSync(path.join(REPO_ROOT, f), "utf8");
/** Every capture of `re` in `text` (group 1). */
const all = (text: string, re: RegExp) => [...text.matchAll(re)].map((m) => m[1]!);
const only = (names: string[], where: string) => assert.deepEqual([...new Set(names)], [PROD], `${where} names the production stage ${JSON.stringify(PROD)} only, found ${JSON.stringify([...new Set(names)])}`);

function libSh(fn: string, ...args: string[]): string {
  const r = spawnSync("bash", ["-c", `. scripts/lib.sh && ${fn} "$@"`, "lib", ...args], { cwd: REPO_ROOT, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

test("the declaration: production is prod-rs, not prod (the replaced system's function names), in environment production, protected and deployed by CI", () => {
  assert.equal(PROD, "prod-rs");
  assert.equal(STAGES.production.environment, "production");
  assert.ok(STAGES.ciStages.includes(PROD) && STAGES.protectedStages.includes(PROD));
  assert.ok(!STAGES.ciStages.includes("prod"), "CI never deploys a stage named prod: its functions would take the replaced system's names");
  // The declaration's own checks refuse a production stage that is neither deployed nor protected.
  const bad = path.join(fs.mkdtempSync(path.join(require("node:os").tmpdir(), "sophia-stages-")), "stages.json");
  fs.writeFileSync(bad, JSON.stringify({ ...STAGES, protectedStages: ["prod"] }));
  assert.throws(() => loadStages(bad), /protectedStages must include production.stage/);
  fs.rmSync(path.dirname(bad), { recursive: true, force: true });
});

test("the workflow deploys the declared stages: PRODUCTION_STAGE, the production environment and role variable, dev before it", () => {
  const { text, workflow } = loadWorkflow("infra.yml");
  only(all(text, /^\s+PRODUCTION_STAGE:\s*(\S+)\s*$/gm), "infra.yml's env.PRODUCTION_STAGE");
  const prod = workflow.jobs["deploy-prod"]!;
  assert.equal(prod.environment, STAGES.production.environment);
  const assume = prod.steps.find((s) => s.uses?.startsWith("aws-actions/configure-aws-credentials"))!;
  assert.equal(assume.with!["role-to-assume"], `\${{ vars.${STAGES.production.roleVariable} }}`);
  const prodText = JSON.stringify(prod);
  assert.doesNotMatch(prodText, /Pulumi\.prod\.yaml|check-stack-file\.cjs prod\b|'prod'|\/prod'/, "no literal stage in deploy-prod: it reads PRODUCTION_STAGE");
  // Every stage a deploy job names: dev's literally, production's through PRODUCTION_STAGE.
  const deployed = Object.entries(workflow.jobs)
    .filter(([name]) => name.startsWith("deploy-"))
    .map(([, job]) => /PRODUCTION_STAGE/.test(JSON.stringify(job)) ? PROD : /check-stack-file\.cjs (\S+)/.exec(JSON.stringify(job))![1]!);
  assert.deepEqual(deployed, STAGES.ciStages);
});

test("the bootstrap trusts the production environment for the production stage only; lib.sh and protect-environments agree", () => {
  assert.deepEqual(loadStageNames().production, { stage: PROD, environment: STAGES.production.environment });
  assert.deepEqual(loadStageNames().protectedStages, STAGES.protectedStages);
  assert.equal(environmentOf(PROD), STAGES.production.environment);
  for (const other of ["dev", "qa", "prod"]) assert.equal(environmentOf(other), other, `${other}'s environment is its name, never production`);
  for (const stage of [...STAGES.ciStages, "prod"]) assert.equal(libSh("stage_environment", stage), environmentOf(stage), `lib.sh: ${stage}`);
  assert.deepEqual(libSh("stage_fact", "protectedStages").split("\n"), STAGES.protectedStages);
  assert.deepEqual([...PROTECTED_STAGES], STAGES.protectedStages, "the program's protected stages are the declaration's");
  const ROLE = "arn:aws:iam::333333333333:role/sophia-bootstrap/sophia-bootstrap-prod-rs-deploy";
  const r = protect([PROD, "--apply", "--reviewer", "team:platform", "--deploy-role-arn", ROLE], github());
  assert.equal(r.status, 0, r.output);
  assert.equal(r.github.environments[STAGES.production.environment]!.variables[STAGES.production.roleVariable], ROLE);
  assert.equal(r.github.environments[PROD], undefined, "no environment named after the stage");
});

test("check-stack-file: the production stage is protected (its account pin required)", () => {
  const dir = fs.mkdtempSync(path.join(require("node:os").tmpdir(), "sophia-stages-"));
  const file = path.join(dir, `Pulumi.${PROD}.yaml`);
  fs.writeFileSync(file, "config:\n  aws:region: eu-west-1\n");
  const r = spawnSync("node", [path.join(REPO_ROOT, "infra-pulumi", "ci", "check-stack-file.cjs"), PROD, "--file", file], { encoding: "utf8" });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /aws:allowedAccountIds is missing on a protected stage/);
});

test("the docs name one production stage: deploy.md's prod block and CI line, cutover.md's commands, runbook.md's stages, the README's stack file", () => {
  const deploy = read("docs/deploy.md");
  // The block sets STAGE once REVIEWER is set (`REVIEWER=${REVIEWER:?...} && STAGE=<stage> && ...`).
  only(all(deploy, /<!-- deploy-doc: prod 1 -->\n```bash\n(?:REVIEWER=[^\n]*\n)?STAGE=([a-z0-9-]+)/g), "deploy.md's \"Prod, after dev\" block");
  only(all(deploy, /CI\s+deploys only `dev` and `([^`]+)`/g), "deploy.md's \"Adding a stage\"");
  only(all(deploy, /scripts\/protect-environments (\S+) (?:--apply|   # check only)/g).filter((s) => s !== "dev" && s !== "--preview" && s !== '"$STAGE"' && s !== "<stage>"), "deploy.md's protect-environments lines for production");
  only([...all(deploy, /`([^`]+)`\s+\(its environment is `production`\)/g), ...all(deploy, /environment \(`production` for `([^`]+)`\)/g)], "deploy.md's environment lines");
  // The old SST stack's own `sst remove --stage prod` is the replaced system's stage, not this one's.
  const cutover = read("docs/cutover.md").replace("`npx sst remove --stage prod`", "");
  only(
    [...all(cutover, /--stage ([a-z0-9-]+)/g), ...all(cutover, /scripts\/(?:deploy|stack-env) ([a-z0-9-]+)/g), ...all(cutover, /--stack ([a-z0-9-]+)/g), ...all(cutover, /--secret-id sophia\/([^/]+)\//g)],
    "cutover.md's commands",
  );
  only(all(read("docs/runbook.md"), /the Pulumi stack name: `dev`, production `([^`]+)`/g), "runbook.md's stage list");
  only(all(read("infra-pulumi/README.md"), /^# Pulumi\.(\S+)\.yaml$/gm), "infra-pulumi/README.md's production stack file");
});

test("the declaration's comment points at what exists: every file it names, every scripts/lib.sh function, and no stage list that leaves out prod-rs", () => {
  const comment = (JSON.parse(read("declarations/stages.json")) as { $comment: string }).$comment;
  for (const f of all(comment, /((?:infra-pulumi|infra-bootstrap|scripts|docs|\.github)\/[\w./-]+\w)/g)) assert.ok(fs.existsSync(path.join(REPO_ROOT, f)), `declarations/stages.json names ${f}, which does not exist`);
  const lib = read("scripts/lib.sh");
  const named = /scripts\/lib\.sh \(([^:)]*)/.exec(comment)![1]!;
  for (const fn of all(named, /\b([a-z_]+(?:_[a-z]+)+)\b/g)) assert.match(lib, new RegExp(`^${fn}\\(\\)`, "m"), `declarations/stages.json says scripts/lib.sh provides ${fn}`);
  // A stage list written as an example names production by its real name (prod-rs, never prod).
  for (const f of ["Pulumi.yaml", "docs/design.md"]) assert.doesNotMatch(read(f), /\(`?dev`?, `?prod`?, \.\.\./, `${f} lists the stages as (dev, prod, ...)`);
});
