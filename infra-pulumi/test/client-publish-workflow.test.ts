/**
 * The release of the API team's package (.github/workflows/client-publish.yml): no single person
 * can publish it. Checked on the file, as the deploy workflows are (workflow.test.ts; GitHub itself
 * is not available here): the publish job's environment, its credentials, the main-ancestry check,
 * the tag rule, the pinning, and the verification the package README gives the API team.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as yaml from "js-yaml";

import { REPO_ROOT } from "../src/repository";
import { loadWorkflow, type WorkflowJob as Job, type WorkflowStep as Step } from "./support/workflow-file";

const { text, workflow } = loadWorkflow("client-publish.yml");
const publish = workflow.jobs["publish"]!;
const test_ = workflow.jobs["test"]!;
const stepIndex = (job: Job, match: (s: Step) => boolean) => {
  const i = job.steps.findIndex(match);
  assert.ok(i >= 0, `no such step in ${JSON.stringify(job.steps.map((s) => s.name ?? s.uses))}`);
  return i;
};
const jobText = (job: Job) => yaml.dump(job);

test("the publish job runs in its own environment, npm-publish, only for a pushed client-ts-v* tag, after the tests", () => {
  const env = typeof publish.environment === "string" ? publish.environment : publish.environment?.name;
  assert.equal(env, "npm-publish");
  // A release tag only: pushed, or created by the tag job, which starts the workflow on it as
  // github-actions[bot] (a person's manual run is not a release).
  assert.equal(
    publish.if,
    "startsWith(github.ref, 'refs/tags/client-ts-v') && (github.event_name == 'push' || (github.event_name == 'workflow_dispatch' && github.actor == 'github-actions[bot]'))",
  );
  assert.deepEqual(publish.needs, "test");
  assert.deepEqual((workflow.on["push"] as { tags: string[] }).tags, ["client-ts-v*"]);
  // The environment's settings (required reviewers, prevent self-review, the tag rule) are GitHub
  // settings, written down where the next maintainer looks.
  for (const said of ["required reviewers", "prevent self-review", "deployment tag rule `client-ts-v*`", "tag ruleset"]) {
    assert.ok(text.includes(said), `the header says: ${said}`);
  }
});

test("the registry credential exists only in the publish job: trusted publishing (OIDC) on npmjs, the environment's token elsewhere", () => {
  assert.deepEqual(workflow.permissions, { contents: "read" }, "the workflow's default: read only");
  assert.deepEqual(publish.permissions, { contents: "read", "id-token": "write", attestations: "write" });
  assert.ok(!Object.keys(publish.permissions ?? {}).includes("packages"), "no packages: write (a GITHUB_TOKEN any branch's workflow gets cannot publish)");
  assert.ok(!/GITHUB_TOKEN|github\.token/.test(jobText(publish)), "the job's GITHUB_TOKEN never publishes");
  for (const [name, job] of Object.entries(workflow.jobs)) {
    if (name === "publish") continue;
    assert.ok(!/secrets\./.test(jobText(job)), `${name}: no secret in a job that runs untrusted (PR) code`);
    assert.ok(!["write"].includes(String(job.permissions?.["id-token"])), `${name}: no id-token`);
  }
  const npmjs = publish.steps.find((s) => s.if === "startsWith(env.REGISTRY, 'https://registry.npmjs.org')")!;
  assert.ok(npmjs.run?.startsWith("npm publish"), "registry.npmjs.org: trusted publishing");
  assert.equal(npmjs.env?.["NODE_AUTH_TOKEN"], undefined, "no token on npmjs: OIDC only");
  const other = publish.steps.find((s) => s.if === "${{ !startsWith(env.REGISTRY, 'https://registry.npmjs.org') }}")!;
  assert.equal(other.env?.["NODE_AUTH_TOKEN"], "${{ secrets.CLIENT_NPM_TOKEN }}");
  assert.deepEqual([...jobText(publish).matchAll(/secrets\.(\w+)/g)].map((m) => m[1]), ["CLIENT_NPM_TOKEN"], "one secret, in one step");
  assert.ok(text.includes("an ENVIRONMENT secret of npm-publish (never a repository secret)"));
  // Trusted publishing needs npm 11.5.1+: a pinned npm, installed before the publish.
  const npm = publish.steps.find((s) => /npm install --global .*npm@/.test(s.run ?? ""))!;
  const [major, minor] = /npm@(\d+)\.(\d+)\.(\d+)$/.exec(npm.run!.trim())!.slice(1).map(Number) as [number, number];
  assert.ok(major > 11 || (major === 11 && minor >= 5), npm.run);
});

test("the tagged commit must be on main, checked before anything is installed or built", () => {
  const checkout = publish.steps[0]!;
  assert.ok(checkout.uses?.startsWith("actions/checkout@"));
  assert.equal(checkout.with?.["fetch-depth"], 0, "main's history is fetched");
  assert.equal(checkout.with?.["persist-credentials"], false);
  const onMain = stepIndex(publish, (s) => /git merge-base --is-ancestor "\$GITHUB_SHA" refs\/remotes\/origin\/main/.test(s.run ?? ""));
  assert.match(publish.steps[onMain]!.run!, /exit 1/);
  assert.ok(onMain < stepIndex(publish, (s) => /npm ci/.test(s.run ?? "")));
  assert.ok(onMain < stepIndex(publish, (s) => /npm pack/.test(s.run ?? "")));
  const version = stepIndex(publish, (s) => /client-ts-v\$version/.test(s.run ?? ""));
  assert.ok(version < stepIndex(publish, (s) => /npm pack/.test(s.run ?? "")), "the tag equals package.json's version");
});

test("the bytes attested are the bytes published; every uses: is a full commit SHA", () => {
  const pack = stepIndex(publish, (s) => /npm pack --json/.test(s.run ?? ""));
  const attest = stepIndex(publish, (s) => s.uses?.startsWith("actions/attest-build-provenance@") === true);
  assert.equal(publish.steps[attest]!.with?.["subject-path"], "${{ steps.pack.outputs.tarball }}");
  for (const s of publish.steps.filter((s) => /npm publish/.test(s.run ?? ""))) {
    assert.ok(publish.steps.indexOf(s) > attest && attest > pack);
    assert.match(s.run!, /npm publish "\$TARBALL"/);
    assert.equal(s.env?.["TARBALL"], "${{ steps.pack.outputs.file }}");
  }
  const uses = [...text.matchAll(/^\s*(?:-\s*)?uses:\s*(\S+)@(\S+)/gm)];
  assert.ok(uses.length >= 6, `${uses.length} uses:`);
  for (const [, action, ref] of uses) assert.match(ref!, /^[0-9a-f]{40}$/, `${action}@${ref}`);
  assert.deepEqual(test_.permissions, undefined, "the test job keeps the workflow's read-only default");
});

test("the package README's verification names the signer workflow and the source ref", () => {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "clients", "typescript", "README.md"), "utf8");
  const verify = /gh attestation verify [^\n]*(?:\n[^\n]*\\?)*/.exec(readme.slice(readme.indexOf("gh attestation verify")))?.[0] ?? "";
  assert.match(verify, /--signer-workflow <owner>\/<repo>\/\.github\/workflows\/client-publish\.yml/);
  assert.match(verify, /--source-ref refs\/tags\/client-ts-v<version>/);
  assert.match(verify, /--deny-self-hosted-runners/);
  assert.ok(fs.existsSync(path.join(REPO_ROOT, ".github", "workflows", "client-publish.yml")), "the workflow the README names");
});

test("the tag job: only on main, tags a recorded release only after rebuilding it to its recorded digests, no secret", () => {
  const tag = workflow.jobs["tag"]!;
  assert.equal(tag.if, "github.event_name == 'push' && github.ref == 'refs/heads/main'");
  assert.deepEqual(tag.needs, "test");
  assert.deepEqual(tag.permissions, { contents: "write", actions: "write" });
  assert.deepEqual((workflow.on["push"] as { branches: string[]; paths: string[] }).paths, ["clients/typescript/RELEASES.json"]);
  const verify = stepIndex(tag, (s) => /npm run --silent verify-release -- "\$version"/.test(s.run ?? ""));
  const tagging = stepIndex(tag, (s) => /git\/refs/.test(s.run ?? "") && /gh workflow run client-publish\.yml/.test(s.run ?? ""));
  assert.ok(verify < tagging, "rebuilt before it is tagged");
  assert.match(tag.steps[verify]!.run!, /merge-base --is-ancestor "\$commit" HEAD/);
  assert.equal(tag.steps[verify]!.env, undefined, "no token where the devDependencies are installed");
  assert.ok(!/secrets\./.test(jobText(tag)));
  // The publish job compares the packed tarball with the record (as of main) before attesting it.
  const check = stepIndex(publish, (s) => /verify-release -- --releases-from refs\/remotes\/origin\/main --tarball/.test(s.run ?? ""));
  assert.ok(check > stepIndex(publish, (s) => /npm pack --json/.test(s.run ?? "")));
  assert.ok(check < stepIndex(publish, (s) => s.uses?.startsWith("actions/attest-build-provenance@") === true));
});
