/**
 * scripts/protect-environments against a stand-in `gh` (support/github.ts): the settings CI's
 * credentials rest on beyond the deploy environments (bootstrap.test.ts covers those through
 * scripts/bootstrap-stage): branch protection of main, the Actions settings (read-only default
 * token that cannot approve, fork pull requests without write tokens or secrets), credentials
 * that must not be repository or organization secrets, the `preview` environment, and the client
 * package's publish path (environment npm-publish, its tag rule, the release-tag ruleset, its
 * registry token). Checks write nothing; --apply writes, then reads everything back.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import * as yaml from "js-yaml";

import { deploySubject, OIDC_SUB_CLAIM_KEYS } from "../../infra-bootstrap/src/policies";
import { REPO_ROOT } from "../src/repository";
import { DEV_ROLE, type GithubEnvironment, PROTECTED_DEV, PROTECTED_MAIN, type Protected, REPO, REQUIRED_CHECKS, github, protect } from "./support/github";

const scriptText = () => fs.readFileSync(path.join(REPO_ROOT, "scripts", "protect-environments"), "utf8");
/** The lint check's name while it ran the advisories: main must stop requiring it (no job reports it). */
const RETIRED_LINT = "scripts/lint (rustfmt, clippy, cargo deny, npm audit, actionlint)";

const PREVIEW_ROLE = "arn:aws:iam::222222222222:role/sophia-bootstrap/sophia-preview";
const DEV = PROTECTED_DEV;
const writes = (calls: string) => calls.split("\n").filter((l) => /^(PUT|POST|PATCH|DELETE) /.test(l));

test("the checks main requires are the jobs of rust.yml (which runs on every pull request)", () => {
  const rust = yaml.load(fs.readFileSync(path.join(REPO_ROOT, ".github", "workflows", "rust.yml"), "utf8")) as {
    on: Record<string, unknown>;
    jobs: Record<string, { name: string }>;
  };
  assert.equal(rust.on["pull_request"], null, "no paths filter: a required check that never runs would block every merge");
  assert.deepEqual(Object.values(rust.jobs).map((j) => j.name).sort(), [...REQUIRED_CHECKS].sort());
  const script = fs.readFileSync(path.join(REPO_ROOT, "scripts", "protect-environments"), "utf8");
  assert.ok(script.includes(`REQUIRED_CHECKS='${JSON.stringify(REQUIRED_CHECKS)}'`), "the script's list is this one");
});

test("a repository with everything in place: every target passes and nothing is written", () => {
  const ok = protect(["dev", "--check", "--deploy-role-arn", DEV_ROLE], github({ dev: DEV }));
  assert.equal(ok.status, 0, ok.output);
  assert.match(ok.output, /deployments from main only, AWS_DEPLOY_ROLE_ARN set; main protected; Actions settings and credentials in place/);
  assert.deepEqual(writes(ok.calls), []);
  assert.match(ok.calls, /^GET repos\/acme\/sophia\/branches\/main\/protection$/m, "main is read for a stage too");
});

test("main: unprotected or weakened, each gap named; --apply protects it and keeps what is stricter", () => {
  const none = protect(["dev"], github({ dev: DEV }, { protection: {} }));
  assert.equal(none.status, 1);
  assert.match(none.stdout, /^branch main is not protected \(anyone who can push lands a commit on main, which the dev environment deploys\)$/m);

  const weak = protect(["dev"], github({ dev: DEV }, {
    protection: {
      main: {
        ...PROTECTED_MAIN,
        required_status_checks: { strict: true, contexts: [REQUIRED_CHECKS[1]!, RETIRED_LINT] },
        required_pull_request_reviews: { ...PROTECTED_MAIN.required_pull_request_reviews!, require_last_push_approval: false, dismiss_stale_reviews: false },
        enforce_admins: { enabled: false },
        allow_force_pushes: { enabled: true },
        allow_deletions: { enabled: true },
      },
    },
  }));
  assert.equal(weak.status, 1);
  assert.deepEqual(weak.stdout.trim().split("\n"), [
    "branch main: the last pusher may approve their own push (require_last_push_approval is off)",
    "branch main: an approval survives new commits (dismiss_stale_reviews is off)",
    "branch main: administrators bypass the protection (enforce_admins is off)",
    "branch main: force pushes are allowed",
    "branch main: the branch may be deleted",
    "branch main: required checks missing: scripts/test against a MongoDB 7 replica set",
    `branch main: required checks no job reports any more (every merge would wait for them): ${RETIRED_LINT}`,
  ]);
  const noReview = protect(["dev"], github({ dev: DEV }, { protection: { main: { ...PROTECTED_MAIN, required_pull_request_reviews: undefined } } }));
  assert.match(noReview.stdout, /^branch main: changes need no pull request \(required_pull_request_reviews is off\)$/m);

  // --apply: from nothing, and from a stricter main (two reviews, another check, linear history) it keeps.
  const applied = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], github({ dev: DEV }, { protection: {} }));
  assert.equal(applied.status, 0, applied.output);
  const main = applied.github.protection["main"]!;
  assert.deepEqual(main.required_pull_request_reviews, { dismiss_stale_reviews: true, require_code_owner_reviews: false, required_approving_review_count: 1, require_last_push_approval: true });
  assert.deepEqual([main.enforce_admins, main.allow_force_pushes, main.allow_deletions], [{ enabled: true }, { enabled: false }, { enabled: false }]);
  assert.deepEqual(main.required_status_checks!.contexts, REQUIRED_CHECKS);
  const stricter = protect(["dev", "--apply"], github({ dev: DEV }, {
    protection: {
      main: {
        ...PROTECTED_MAIN,
        // "infra" is kept; the lint check's former name (advisories included), which no job reports, is dropped.
        required_status_checks: { strict: true, contexts: ["infra", RETIRED_LINT] },
        required_pull_request_reviews: { ...PROTECTED_MAIN.required_pull_request_reviews!, required_approving_review_count: 2, require_code_owner_reviews: true },
        required_linear_history: { enabled: true },
        enforce_admins: { enabled: false },
      },
    },
  }));
  assert.equal(stricter.status, 0, stricter.output);
  const kept = stricter.github.protection["main"]!;
  assert.equal(kept.required_pull_request_reviews!.required_approving_review_count, 2);
  assert.equal(kept.required_pull_request_reviews!.require_code_owner_reviews, true);
  assert.deepEqual(kept.required_status_checks, { strict: true, contexts: ["infra", ...REQUIRED_CHECKS], checks: ["infra", ...REQUIRED_CHECKS].map((context) => ({ context, app_id: null })) });
  assert.deepEqual([kept.required_linear_history, kept.enforce_admins], [{ enabled: true }, { enabled: true }]);
});

test("Actions: a writing or approving default token and fork pull requests with write tokens or secrets are named; --apply fixes them", () => {
  const open = github({ dev: DEV }, {
    workflowPermissions: { default_workflow_permissions: "write", can_approve_pull_request_reviews: true },
    forkPr: { run_workflows_from_fork_pull_requests: true, send_write_tokens_to_workflows: true, send_secrets_and_variables: true, require_approval_for_fork_pr_workflows: false },
  });
  const check = protect(["dev"], open);
  assert.equal(check.status, 1);
  assert.deepEqual(check.stdout.trim().split("\n"), [
    "Actions: the default GITHUB_TOKEN may write (default_workflow_permissions is not read)",
    "Actions: workflows may approve pull requests (can_approve_pull_request_reviews), which would satisfy main's required review",
    "Actions: fork pull requests get write tokens (send_write_tokens_to_workflows): a fork's code could take the preview role",
    "Actions: fork pull requests get the repository's secrets (send_secrets_and_variables)",
    "Actions: fork pull requests run workflows without an approval (require_approval_for_fork_pr_workflows is off)",
  ]);
  assert.deepEqual(writes(check.calls), [], "a check writes nothing");
  const applied = protect(["dev", "--apply"], open);
  assert.equal(applied.status, 0, applied.output);
  assert.deepEqual(applied.github.workflowPermissions, { default_workflow_permissions: "read", can_approve_pull_request_reviews: false });
  // A private repository's fork pull requests do not run at all (the preview's credentials are not theirs to reach).
  assert.deepEqual(applied.github.forkPr, { run_workflows_from_fork_pull_requests: false, send_write_tokens_to_workflows: false, send_secrets_and_variables: false, require_approval_for_fork_pr_workflows: true });
  // A public repository: GitHub answers 422 (fork pull requests never get write tokens or secrets there); nothing to set.
  const publicRepo = protect(["dev", "--apply"], github({ dev: DEV }));
  assert.equal(publicRepo.status, 0, publicRepo.output);
  assert.doesNotMatch(publicRepo.calls, /^PUT repos\/acme\/sophia\/actions\/permissions\/fork-pr-workflows-private-repos/m);
});

test("the OIDC subject: GitHub's default (an environment's job, whatever ran it) is named; --apply customises it to the claim keys the deploy roles' trust names", () => {
  assert.equal(scriptText().match(/^OIDC_SUB_CLAIM_KEYS='(.*)'$/m)?.[1], JSON.stringify(OIDC_SUB_CLAIM_KEYS), "the script's keys are infra-bootstrap's");
  for (const oidcSub of [{ use_default: true }, { use_default: false, include_claim_keys: ["repo", "context"] }, { use_default: false, include_claim_keys: ["repo", "job_workflow_ref", "context", "ref"] }]) {
    const state = github({ dev: DEV }, { oidcSub });
    const check = protect(["dev"], state);
    assert.equal(check.status, 1, JSON.stringify(oidcSub));
    assert.deepEqual(check.stdout.trim().split("\n"), [
      `Actions: the OIDC subject is not customised to the claim keys ${JSON.stringify(OIDC_SUB_CLAIM_KEYS)} (the deploy roles trust only an environment's job of infra.yml as on main, run for main: no deploy can take its role until it is)`,
    ]);
    assert.deepEqual(writes(check.calls), []);
    const applied = protect(["dev", "--apply"], state);
    assert.equal(applied.status, 0, applied.output);
    assert.deepEqual(applied.github.oidcSub, { use_default: false, include_claim_keys: [...OIDC_SUB_CLAIM_KEYS] });
  }
  // The subject GitHub then writes for dev's deploy job is the one the deploy role trusts exactly.
  const sub = OIDC_SUB_CLAIM_KEYS.map((k) => ({ repo: `repo:${REPO}`, context: "environment:dev", ref: "ref:refs/heads/main", job_workflow_ref: `job_workflow_ref:${REPO}/.github/workflows/infra.yml@refs/heads/main` })[k]).join(":");
  assert.equal(sub, deploySubject(REPO, "dev"));
});

test("credentials held as repository or organization secrets are named with the fix; --apply never deletes them and fails", () => {
  const shared = github({ dev: DEV }, { repoSecrets: ["PULUMI_PREVIEW_ACCESS_TOKEN", "UNRELATED"], orgSecrets: ["CLIENT_NPM_TOKEN"] });
  const check = protect(["dev"], shared);
  assert.equal(check.status, 1);
  assert.deepEqual(check.stdout.trim().split("\n"), [
    "secret PULUMI_PREVIEW_ACCESS_TOKEN is a repository secret (any branch's workflow can read it): set it on its environment, then gh secret delete PULUMI_PREVIEW_ACCESS_TOKEN --repo acme/sophia",
    "secret CLIENT_NPM_TOKEN is an organization secret this repository can read: make it an environment secret instead",
  ]);
  const applied = protect(["dev", "--apply"], shared);
  assert.notEqual(applied.status, 0);
  assert.match(applied.output, /GitHub still reports the above after --apply/);
  assert.doesNotMatch(applied.calls, /^DELETE repos\/acme\/sophia\/actions\/secrets/m, "a secret is never deleted: its value could not be moved");
});

test("--preview: the preview environment (no branch rule: pull requests come from any branch), its role variable, the note without reviewers", () => {
  const missing = protect(["--preview"], github());
  assert.equal(missing.status, 1);
  assert.deepEqual(missing.stdout.trim().split("\n"), ["the GitHub environment 'preview' does not exist"]);
  const applied = protect(["--preview", "--apply", "--role-arn", PREVIEW_ROLE], github());
  assert.equal(applied.status, 0, applied.output);
  const preview = applied.github.environments["preview"]!;
  assert.deepEqual([preview.deployment_branch_policy, preview.branchPolicies, preview.prevent_self_review], [null, [], false], "no prevent self-review without reviewers (GitHub refuses it)");
  assert.match(applied.calls, /^PUT repos\/acme\/sophia\/environments\/preview \{"prevent_self_review":false,"reviewers":\[\]/m);
  assert.equal(preview.variables["AWS_PREVIEW_ROLE_ARN"], PREVIEW_ROLE);
  assert.match(applied.output, /note: 'preview' has no required reviewers, so a same-repository pull request's code gets the preview role and token without anyone's approval/);
  const reviewed = protect(["--preview", "--apply", "--reviewer", "team:platform"], applied.github);
  assert.equal(reviewed.status, 0, reviewed.output);
  assert.deepEqual(reviewed.github.environments["preview"]!.reviewers, [{ type: "Team", id: 7 }]);
  assert.equal(reviewed.github.environments["preview"]!.prevent_self_review, true, "with reviewers, self-review is prevented");
  assert.doesNotMatch(reviewed.output, /note: 'preview'/);
  const selfReview = protect(["--preview"], github({ preview: { ...reviewed.github.environments["preview"]!, prevent_self_review: false } }));
  assert.match(selfReview.stdout, /^environment 'preview': prevent self-review is off/m);
});

test("--publish: npm-publish with reviewers and exactly the tag rule, the release-tag ruleset, the registry token; read back", () => {
  const nothing = protect(["--publish"], github());
  assert.equal(nothing.status, 1);
  assert.deepEqual(nothing.stdout.trim().split("\n"), [
    "the GitHub environment 'npm-publish' does not exist",
    "no active tag ruleset on refs/tags/client-ts-v* restricts creating, moving and deleting release tags to the release owners (anyone who can push could tag a release)",
    "environment 'npm-publish': secret CLIENT_NPM_TOKEN is not set (the registry https://npm.pkg.github.com takes it)",
  ]);
  const noReviewers = protect(["--publish", "--apply", "--release-team", "releases"], github());
  assert.notEqual(noReviewers.status, 0);
  assert.match(noReviewers.output, /environment 'npm-publish' has no required reviewers and none were given/);
  const noTeam = protect(["--publish", "--apply", "--reviewer", "team:releases"], github());
  assert.notEqual(noTeam.status, 0);
  assert.match(noTeam.output, /the release-tag ruleset needs the team that may create release tags: --release-team <slug>/);

  // A branch policy left on the environment is removed: only the tag rule deploys.
  const stale: GithubEnvironment = { ...DEV, reviewers: [{ type: "User", id: 101 }], variables: {}, branchPolicies: [{ id: 3, name: "main", type: "branch" }] };
  const applied = protect(["--publish", "--apply", "--reviewer", "team:releases", "--release-team", "releases"], github({ "npm-publish": stale }));
  assert.notEqual(applied.status, 0, "the token is still missing: set by hand, never by the script");
  assert.deepEqual(applied.stdout.trim().split("\n"), ["environment 'npm-publish': secret CLIENT_NPM_TOKEN is not set (the registry https://npm.pkg.github.com takes it)"]);
  const env = applied.github.environments["npm-publish"]!;
  assert.deepEqual(env.reviewers, [{ type: "Team", id: 9 }]);
  assert.equal(env.prevent_self_review, true);
  assert.deepEqual(env.branchPolicies.map((b) => `${b.type}:${b.name}`), ["tag:client-ts-v*"]);
  assert.match(applied.calls, /^DELETE repos\/acme\/sophia\/environments\/npm-publish\/deployment-branch-policies\/3$/m);
  const [ruleset] = applied.github.rulesets;
  assert.deepEqual(
    { target: ruleset!.target, enforcement: ruleset!.enforcement, include: ruleset!.conditions.ref_name.include, rules: ruleset!.rules.map((r) => r.type), bypass: ruleset!.bypass_actors },
    { target: "tag", enforcement: "active", include: ["refs/tags/client-ts-v*"], rules: ["creation", "update", "deletion"], bypass: [{ actor_id: 9, actor_type: "Team", bypass_mode: "always" }] },
  );

  // The token set on the environment: the check passes; a second --apply updates the same ruleset.
  const withToken = { ...applied.github, environments: { "npm-publish": { ...env, secrets: ["CLIENT_NPM_TOKEN"] } } };
  const check = protect(["--publish", "--check"], withToken);
  assert.equal(check.status, 0, check.output);
  assert.match(check.output, /tag rule client-ts-v\* only; release tags restricted by ruleset/);
  assert.match(check.output, /'Manage Actions access' must give this repository read only/, "what no API sets is said");
  const again = protect(["--publish", "--apply"], withToken);
  assert.equal(again.status, 0, again.output);
  assert.equal(again.github.rulesets.length, 1);
  assert.match(again.calls, new RegExp(`^PUT repos/acme/sophia/rulesets/${ruleset!.id} `, "m"));

  // npmjs (trusted publishing): no stored token is expected.
  const npmjs = protect(["--publish"], { ...withToken, environments: { "npm-publish": env }, repoVariables: { CLIENT_NPM_REGISTRY: "https://registry.npmjs.org" } });
  assert.equal(npmjs.status, 0, npmjs.output);
  // A ruleset only evaluated (not enforced), or with nobody allowed to tag, does not count.
  for (const broken of [{ enforcement: "evaluate" as const }, { bypass_actors: [] }]) {
    const r = protect(["--publish"], { ...withToken, rulesets: [{ ...ruleset!, ...broken }] });
    assert.equal(r.status, 1, JSON.stringify(broken));
    assert.match(r.stdout, /no active tag ruleset on refs\/tags\/client-ts-v\*/);
  }
});

/** One `gh` call to the stand-in on a repository's state; the state after it. */
function ghCli(state: ReturnType<typeof github>, args: string[]): ReturnType<typeof github> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { gh } = require("./support/github-api.cjs") as { gh: (dir: string, user: string, args: string[], stdin: string) => { code: number; stderr: string } };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-gh-"));
  try {
    fs.writeFileSync(path.join(dir, "github.json"), JSON.stringify(state));
    const r = gh(dir, "alice", args, "");
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(fs.readFileSync(path.join(dir, "github.json"), "utf8")) as ReturnType<typeof github>;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("GitHub refuses prevent_self_review without reviewers: dev and preview are sent neither, prod-rs both", () => {
  const refused = github();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { gh } = require("./support/github-api.cjs") as { gh: (dir: string, user: string, args: string[], stdin: string) => { code: number; stderr: string } };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-gh-"));
  try {
    fs.writeFileSync(path.join(dir, "github.json"), JSON.stringify(refused));
    const r = gh(dir, "alice", ["api", "--method", "PUT", "repos/acme/sophia/environments/dev", "--input", "-"], JSON.stringify({ prevent_self_review: true, reviewers: [], deployment_branch_policy: null }));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Required reviewers must have at least one reviewer to set prevent_self_review \(HTTP 422\)/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const dev = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], github());
  assert.equal(dev.status, 0, dev.output);
  assert.match(dev.calls, /^PUT repos\/acme\/sophia\/environments\/dev \{"prevent_self_review":false,"reviewers":\[\]/m);
  const prod = protect(["prod-rs", "--apply", "--reviewer", "team:platform"], github());
  assert.equal(prod.status, 0, prod.output);
  assert.match(prod.calls, /^PUT repos\/acme\/sophia\/environments\/production \{"prevent_self_review":true,"reviewers":\[\{"type":"Team","id":7\}\]/m);
});

test("prod-rs for one person (--approvals 0): its one reviewer may approve a deploy they triggered, said as the risk it is; with --approvals 1 self-review is prevented again", () => {
  const alone = protect(["prod-rs", "--apply", "--approvals", "0", "--reviewer", "user:alice"], github());
  assert.equal(alone.status, 0, alone.output);
  const prod = alone.github.environments["production"]!;
  assert.deepEqual([prod.reviewers, prod.prevent_self_review], [[{ type: "User", id: 101 }], false]);
  assert.match(alone.output, /note: --approvals 0: 'production' lets its reviewer approve a deploy they triggered \(prevent self-review off\)\. The approval is a pause before prod, not a second person's check/);
  assert.equal(protect(["prod-rs", "--approvals", "0"], alone.github).status, 0, "checked as one person: accepted");
  const asTeam = protect(["prod-rs", "--approvals", "1"], alone.github);
  assert.equal(asTeam.status, 1);
  assert.match(asTeam.stdout, /^environment 'production': prevent self-review is off/m);
  const team = protect(["prod-rs", "--apply", "--approvals", "1"], alone.github);
  assert.equal(team.status, 0, team.output);
  assert.equal(team.github.environments["production"]!.prevent_self_review, true);
});

test("usage: a target is required; --role-arn only where the environment holds a role", () => {
  assert.notEqual(protect([], github()).status, 0);
  const r = protect(["--publish", "--role-arn", PREVIEW_ROLE], github());
  assert.notEqual(r.status, 0);
  assert.match(r.output, /--role-arn: the npm-publish environment holds no role/);
});

test("--approvals 0, for a repository with one person: pull requests still required, no approval (an author cannot approve their own)", () => {
  const one = protect(["dev", "--apply", "--approvals", "0", "--deploy-role-arn", DEV_ROLE], github({ dev: DEV }, { protection: {} }));
  assert.equal(one.status, 0, one.output);
  assert.deepEqual(one.github.protection["main"]!.required_pull_request_reviews, { dismiss_stale_reviews: true, require_code_owner_reviews: false, required_approving_review_count: 0, require_last_push_approval: false });
  assert.equal(protect(["dev", "--approvals", "0", "--deploy-role-arn", DEV_ROLE], one.github).status, 0, "checked with the same count");
  const team = protect(["dev", "--deploy-role-arn", DEV_ROLE], one.github);
  assert.equal(team.status, 1);
  assert.match(team.stdout, /^branch main: a merge needs 0 approving review\(s\), not 1$/m);
  assert.match(protect(["dev", "--approvals", "7"], one.github).output, /--approvals: 0 to 6/);
  // An explicit --approvals sets the count, lower included (a team that became one person); without it a higher count is kept.
  const two = { ...one.github, protection: { main: { ...PROTECTED_MAIN, required_pull_request_reviews: { ...PROTECTED_MAIN.required_pull_request_reviews!, required_approving_review_count: 2 } } } };
  assert.equal(protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], two).github.protection["main"]!.required_pull_request_reviews!.required_approving_review_count, 2);
  const lowered = protect(["dev", "--apply", "--approvals", "0", "--deploy-role-arn", DEV_ROLE], two);
  assert.equal(lowered.status, 0, lowered.output);
  assert.deepEqual(lowered.github.protection["main"]!.required_pull_request_reviews, { dismiss_stale_reviews: true, require_code_owner_reviews: false, required_approving_review_count: 0, require_last_push_approval: false });
});

test("the plan: a personal repository's is its owner's, read with the owner's token (GET /user is the caller's own account); a personal account never has Enterprise, so production cannot require reviewers on a private one", () => {
  const personal = (plan: "free" | "pro") => github({}, { protection: {}, visibility: "private", ownerType: "User", plan });
  const as = (user: string, run: () => Protected) => {
    const before = process.env["FAKE_GH_USER"];
    process.env["FAKE_GH_USER"] = user;
    try {
      return run();
    } finally {
      if (before === undefined) delete process.env["FAKE_GH_USER"];
      else process.env["FAKE_GH_USER"] = before;
    }
  };
  // alice administers nothing of acme's personal repository and sees her own plan, not acme's.
  const collaborator = as("alice", () => protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], personal("pro")));
  assert.equal(collaborator.status, 1);
  assert.match(collaborator.output, /repository acme\/sophia is private and personal: its plan is acme's, and GET \/user shows only this token's own account \(alice\): run this with acme's token/);
  assert.ok(!/^(PUT|POST|PATCH|DELETE) /m.test(collaborator.calls), "nothing written");
  // The owner's token on Pro: dev (no reviewers) is protected; production's reviewers are refused before any write.
  assert.equal(as("acme", () => protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], personal("pro"))).status, 0);
  const prod = as("acme", () => protect(["prod-rs", "--apply", "--reviewer", "team:platform"], personal("pro")));
  assert.equal(prod.status, 1);
  assert.match(prod.output, /is private and personal \(GitHub pro\): required reviewers on an environment of a private repository need GitHub Enterprise, which a personal account cannot have/);
  assert.ok(!/^(PUT|POST|PATCH|DELETE) /m.test(prod.calls), "nothing written");
  const free = as("acme", () => protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], personal("free")));
  assert.equal(free.status, 1);
  assert.match(free.output, /is private on GitHub Free: GitHub offers no branch protection, environments or deployment branch policies there.*Pro \(a personal account\)/);
  // The stand-in holds a personal account to Free or Pro, as GitHub does.
  assert.throws(() => ghCli(github({}, { ownerType: "User", plan: "team" }), ["api", "user"]), /a personal account cannot be on team/);
});

test("the plan: a private repository on GitHub Free is refused before any write; required reviewers need Enterprise there", () => {
  const free = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], github({}, { protection: {}, visibility: "private", plan: "free" }));
  assert.equal(free.status, 1);
  assert.match(free.output, /is private on GitHub Free: GitHub offers no branch protection, environments or deployment branch policies there/);
  assert.ok(!/PUT|POST|PATCH|DELETE/.test(free.calls), `nothing written: ${free.calls}`);
  const team = github({}, { protection: {}, visibility: "private", plan: "team" });
  assert.equal(protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], team).status, 0, "dev needs no reviewers: GitHub Team is enough");
  const prod = protect(["prod-rs", "--apply", "--reviewer", "team:platform"], team);
  assert.equal(prod.status, 1);
  assert.match(prod.output, /required reviewers on an environment of a private repository need GitHub Enterprise/);
  assert.equal(protect(["prod-rs", "--apply", "--reviewer", "team:platform"], { ...team, plan: "enterprise" }).status, 0);
  const hidden = protect(["dev"], github({ dev: DEV }, { visibility: "private", planVisible: false }));
  assert.match(hidden.stdout, /its owner's plan cannot be read with this token/);
  // gh auth login's token (repo, read:org, gist) does not see an organization's plan: the fix is named, and works.
  const login = github({ dev: DEV }, { visibility: "private", plan: "team", scopes: ["repo", "read:org", "gist"] });
  const scoped = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], login);
  assert.equal(scoped.status, 1);
  assert.match(scoped.output, /plan cannot be read with this token \(GET \/orgs\/acme shows the plan to the organization's owners, and to a classic or OAuth token only with the admin:org scope, which gh auth login does not ask for; a fine-grained token needs the organization permission "Plan" \(read\)\): run gh auth refresh -s admin:org as an owner of acme/);
  assert.ok(!/^(PUT|POST|PATCH|DELETE) /m.test(scoped.calls), "nothing written");
  const personal = protect(["dev"], { ...login, ownerType: "User", plan: "pro" });
  assert.match(personal.stdout, /GET \/user shows the plan only with the user scope.*run gh auth refresh -s user/);
  const refreshed = ghCli(login, ["auth", "refresh", "-h", "github.com", "-s", "admin:org"]);
  assert.deepEqual(refreshed.scopes, ["repo", "read:org", "gist", "admin:org"]);
  assert.equal(protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], refreshed).status, 0, "with admin:org the plan is read");
  // A repository administrator who is not an owner: admin:org or not, GET /orgs/{org} shows no plan.
  const notOwner = { ...refreshed, planVisible: false };
  const refused = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], notOwner);
  assert.equal(refused.status, 1);
  assert.match(refused.output, /Not an owner \(a repository administrator\)\? Ask an owner to run: gh api orgs\/acme --jq \.plan\.name, then run this with SOPHIA_GITHUB_PLAN=<what it printed>/);
  const stated = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], notOwner, { SOPHIA_GITHUB_PLAN: "team" });
  assert.equal(stated.status, 0, stated.output);
  assert.match(stated.output, /using SOPHIA_GITHUB_PLAN=team, as an owner stated it/);
  const statedProd = protect(["prod", "--apply", "--reviewer", "team:platform"], notOwner, { SOPHIA_GITHUB_PLAN: "team" });
  assert.match(statedProd.output, /required reviewers on an environment of a private repository need GitHub Enterprise/, "the stated plan is held to what it offers");
  assert.match(protect(["dev"], notOwner, { SOPHIA_GITHUB_PLAN: "gold" }).output, /SOPHIA_GITHUB_PLAN=gold: one of free, pro, team, enterprise/);
  // The stand-in refuses what GitHub refuses, so a script that skipped the check would fail too.
  const unchecked = github({}, { protection: {}, visibility: "private", plan: "free" });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { gh } = require("./support/github-api.cjs") as { gh: (dir: string, user: string, args: string[], stdin: string) => { code: number; stderr: string } };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-gh-"));
  try {
    fs.writeFileSync(path.join(dir, "github.json"), JSON.stringify(unchecked));
    const r = gh(dir, "alice", ["api", "--method", "PUT", "repos/acme/sophia/branches/main/protection", "--input", "-"], JSON.stringify({ enforce_admins: true }));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Upgrade to GitHub Pro or make this repository public to enable this feature\. \(HTTP 403\)/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("production: --apply turns off 'Allow administrators to bypass configured protection rules' (can_admins_bypass false); a PUT without it turns it back on, and the check names it", () => {
  const applied = protect(["prod-rs", "--apply", "--reviewer", "user:alice"], github());
  assert.equal(applied.status, 0, applied.output);
  assert.equal(applied.github.environments["production"]!.can_admins_bypass, false);
  assert.match(applied.calls, /^PUT repos\/acme\/sophia\/environments\/production .*"can_admins_bypass":false/m);
  assert.equal(protect(["prod-rs"], applied.github).status, 0, "checked: in place");
  // dev has no reviewers to bypass; its PUT leaves the default on.
  const dev = protect(["dev", "--apply", "--deploy-role-arn", DEV_ROLE], github());
  assert.equal(dev.status, 0, dev.output);
  assert.equal(dev.github.environments["dev"]!.can_admins_bypass, true);
  // Someone's later PUT without the field (a client library, another script) turns it back on.
  const reset = { ...applied.github, environments: { ...applied.github.environments, production: { ...applied.github.environments["production"]!, can_admins_bypass: true } } };
  const found = protect(["prod-rs"], reset);
  assert.equal(found.status, 1);
  assert.match(found.stdout, /^environment 'production': administrators may bypass its protection rules \(can_admins_bypass is on: an administrator could deploy prod-rs without an approval\)$/m);
  assert.equal(protect(["prod-rs", "--apply"], reset).github.environments["production"]!.can_admins_bypass, false, "--apply turns it off again");
});

test("an organization with SAML single sign-on: a token not authorized for it is refused (403), and the script names the fix", () => {
  const r = protect(["dev", "--deploy-role-arn", DEV_ROLE], { ...github({ dev: DEV }), samlUnauthorized: true });
  assert.notEqual(r.status, 0);
  assert.match(r.output, /Resource protected by organization SAML enforcement/);
  assert.match(r.output, /this token is not authorized for it: with gh's own token run gh auth refresh .*Configure SSO/);
});
