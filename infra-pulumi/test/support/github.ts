/**
 * A stand-in `gh` CLI: GitHub's REST API as `gh api` answers it, over a JSON state file, for the
 * tests of scripts/protect-environments (protect-environments.test.ts), of scripts/bootstrap-stage,
 * which calls it (bootstrap.test.ts), and of docs/deploy.md run as written (deploy-doc.test.ts). What it models (api version 2022-11-28):
 * - environments (https://docs.github.com/en/rest/deployments/environments): reviewers,
 *   prevent_self_review, deployment_branch_policy; their branch and tag policies
 *   (.../deployments/branch-policies), variables (.../actions/variables) and secret names
 *   (.../actions/secrets, metadata only);
 * - branch protection of a branch (https://docs.github.com/en/rest/branches/branch-protection):
 *   GET answers what PUT stored, in GitHub's read shape (`{enabled}` objects), 404 when unprotected;
 * - Actions permissions (https://docs.github.com/en/rest/actions/permissions): `workflow`
 *   (default_workflow_permissions, can_approve_pull_request_reviews) and, on a private repository
 *   only, `fork-pr-workflows-private-repos` (HTTP 422 on a public one, as GitHub answers);
 * - repository and organization secrets (names), repository variables;
 * - repository rulesets (https://docs.github.com/en/rest/repos/rules): the list without rules, one
 *   by id with them, POST and PUT;
 * - users and teams by name; `gh repo view`; `gh variable set NAME --body VALUE` (a repository variable).
 * `fail` answers every call with that HTTP status; `readOnly` refuses writes. Every call is
 * appended to `gh-calls` (`METHOD path [body]`).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { REPO_ROOT } from "../../src/repository";

export const GH_STUB = `#!/usr/bin/env node
const fs = require("fs"), path = require("path");
const file = path.join(process.env.FAKE_STATE, "github.json");
const st = JSON.parse(fs.readFileSync(file, "utf8"));
const args = process.argv.slice(2);
fs.appendFileSync(path.join(process.env.FAKE_STATE, "gh-argv"), args.join(" ") + "\\n");
const out = (v) => { console.log(JSON.stringify(v)); };
const fail = (code, message) => { console.error("gh: " + message + " (HTTP " + code + ")"); process.exit(1); };
if (args[0] === "repo" && args[1] === "view") { console.log(st.repo); process.exit(0); }
if (args[0] === "variable" && args[1] === "set") {
  const at = args.indexOf("--body");
  if (at < 0) { console.error("gh variable set: --body"); process.exit(3); }
  if (st.readOnly || st.fail) fail(st.fail || 403, "Resource not accessible by integration");
  st.repoVariables = { ...(st.repoVariables || {}), [args[2]]: args[at + 1] };
  fs.writeFileSync(file, JSON.stringify(st));
  process.exit(0);
}
if (args[0] !== "api") { console.error("unexpected gh " + args.join(" ")); process.exit(3); }
let method = "GET", p = "", input = false;
for (let i = 1; i < args.length; i++) {
  if (args[i] === "--method") method = args[++i];
  else if (args[i] === "-H") i++;
  else if (args[i] === "--input") input = args[++i] === "-";
  else p = args[i];
}
const body = input ? JSON.parse(fs.readFileSync(0, "utf8")) : undefined;
if (st.fail) fail(st.fail, "Bad credentials");
if (method !== "GET" && st.readOnly) fail(403, "Resource not accessible by integration");
fs.appendFileSync(path.join(process.env.FAKE_STATE, "gh-calls"), method + " " + p + (body ? " " + JSON.stringify(body) : "") + "\\n");
const save = () => fs.writeFileSync(file, JSON.stringify(st));
const done = (v) => { if (v !== undefined) out(v); process.exit(0); };
let m;
if ((m = /^users\\/(.+)$/.exec(p))) { if (!(m[1] in st.users)) fail(404, "Not Found"); done({ login: m[1], id: st.users[m[1]] }); }
if ((m = /^orgs\\/[^/]+\\/teams\\/(.+)$/.exec(p))) { if (!(m[1] in st.teams)) fail(404, "Not Found"); done({ slug: m[1], id: st.teams[m[1]] }); }
m = /^repos\\/([^/]+\\/[^/]+)\\/(.*)$/.exec(p);
if (!m || m[1] !== st.repo) fail(404, "Not Found");
const r = m[2];
const enabled = (v) => ({ enabled: v === true });
if ((m = /^branches\\/([^/]+)\\/protection$/.exec(r))) {
  st.protection = st.protection || {};
  if (method === "PUT") {
    const b = body;
    st.protection[m[1]] = {
      required_status_checks: b.required_status_checks && { strict: b.required_status_checks.strict, contexts: b.required_status_checks.contexts || [], checks: (b.required_status_checks.contexts || []).map((c) => ({ context: c, app_id: null })) },
      required_pull_request_reviews: b.required_pull_request_reviews || undefined,
      enforce_admins: enabled(b.enforce_admins), allow_force_pushes: enabled(b.allow_force_pushes), allow_deletions: enabled(b.allow_deletions),
      required_linear_history: enabled(b.required_linear_history), required_conversation_resolution: enabled(b.required_conversation_resolution),
    };
    save(); done(st.protection[m[1]]);
  }
  if (!st.protection[m[1]]) fail(404, "Branch not protected");
  done(st.protection[m[1]]);
}
if (r === "actions/permissions/workflow") {
  if (method === "PUT") { st.workflowPermissions = body; save(); done(); }
  done(st.workflowPermissions);
}
if (r === "actions/permissions/fork-pr-workflows-private-repos") {
  if (!st.forkPr) fail(422, "This setting only applies to internal and private repositories");
  if (method === "PUT") { st.forkPr = body; save(); done(); }
  done(st.forkPr);
}
if ((m = /^actions\\/secrets\\/(.+)$/.exec(r))) { if (!st.repoSecrets.includes(m[1])) fail(404, "Not Found"); done({ name: m[1] }); }
if (r === "actions/organization-secrets") done({ total_count: st.orgSecrets.length, secrets: st.orgSecrets.map((name) => ({ name })) });
if ((m = /^actions\\/variables\\/(.+)$/.exec(r))) { if (!(m[1] in st.repoVariables)) fail(404, "Not Found"); done({ name: m[1], value: st.repoVariables[m[1]] }); }
if (r === "rulesets") {
  if (method === "POST") { const rs = { id: 500 + st.rulesets.length, ...body }; st.rulesets.push(rs); save(); done(rs); }
  done(st.rulesets.map((x) => ({ id: x.id, name: x.name, target: x.target, enforcement: x.enforcement })));
}
if ((m = /^rulesets\\/(\\d+)$/.exec(r))) {
  const i = st.rulesets.findIndex((x) => String(x.id) === m[1]);
  if (i < 0) fail(404, "Not Found");
  if (method === "PUT") { st.rulesets[i] = { id: st.rulesets[i].id, ...body }; save(); }
  done(st.rulesets[i]);
}
m = /^environments\\/([^/]+)(?:\\/(.*))?$/.exec(r);
if (!m) fail(404, "Not Found");
const name = m[1], rest = m[2] || "";
let env = st.environments[name];
if (rest === "" && method === "PUT") {
  env = st.environments[name] = { branchPolicies: [], variables: {}, secrets: [], ...(env || {}), reviewers: body.reviewers || [], prevent_self_review: body.prevent_self_review === true, deployment_branch_policy: body.deployment_branch_policy || null };
  save();
}
if (!env) fail(404, "Not Found");
if (rest === "") {
  const rules = [];
  if (env.reviewers.length > 0) rules.push({ type: "required_reviewers", prevent_self_review: env.prevent_self_review, reviewers: env.reviewers.map((x) => ({ type: x.type, reviewer: { id: x.id } })) });
  if (env.deployment_branch_policy) rules.push({ type: "branch_policy" });
  out({ name, protection_rules: rules, deployment_branch_policy: env.deployment_branch_policy });
} else if (rest === "deployment-branch-policies" && method === "GET") {
  out({ total_count: env.branchPolicies.length, branch_policies: env.branchPolicies });
} else if (rest === "deployment-branch-policies" && method === "POST") {
  const policy = { id: 1000 + env.branchPolicies.length, name: body.name, type: body.type };
  env.branchPolicies.push(policy); save(); out(policy);
} else if ((m = /^deployment-branch-policies\\/(\\d+)$/.exec(rest)) && method === "DELETE") {
  env.branchPolicies = env.branchPolicies.filter((b) => String(b.id) !== m[1]); save();
} else if ((m = /^secrets\\/(.+)$/.exec(rest)) && method === "GET") {
  if (!(env.secrets || []).includes(m[1])) fail(404, "Not Found");
  out({ name: m[1] });
} else if ((m = /^variables\\/(.+)$/.exec(rest))) {
  if (method === "GET") { if (!(m[1] in env.variables)) fail(404, "Not Found"); out({ name: m[1], value: env.variables[m[1]] }); }
  else if (method === "PATCH") { env.variables[m[1]] = body.value; save(); }
  else fail(405, "Method not allowed");
} else if (rest === "variables" && method === "POST") {
  env.variables[body.name] = body.value; save();
} else fail(404, "Not Found");
`;

export interface GithubEnvironment {
  reviewers: { type: "User" | "Team"; id: number }[];
  prevent_self_review: boolean;
  deployment_branch_policy: { protected_branches: boolean; custom_branch_policies: boolean } | null;
  branchPolicies: { id: number; name: string; type?: string }[];
  variables: Record<string, string>;
  /** Names of the environment's secrets. */
  secrets?: string[];
}

/** Branch protection in GitHub's read shape (GET .../branches/{branch}/protection). */
export interface BranchProtection {
  required_status_checks?: { strict: boolean; contexts: string[]; checks?: { context: string; app_id: number | null }[] };
  required_pull_request_reviews?: {
    dismiss_stale_reviews: boolean;
    require_code_owner_reviews: boolean;
    required_approving_review_count: number;
    require_last_push_approval: boolean;
  };
  enforce_admins: { enabled: boolean };
  allow_force_pushes: { enabled: boolean };
  allow_deletions: { enabled: boolean };
  required_linear_history?: { enabled: boolean };
  required_conversation_resolution?: { enabled: boolean };
}

export interface Ruleset {
  id: number;
  name: string;
  target: "branch" | "tag";
  enforcement: "active" | "evaluate" | "disabled";
  bypass_actors: { actor_id: number; actor_type: string; bypass_mode: string }[];
  conditions: { ref_name: { include: string[]; exclude: string[] } };
  rules: { type: string }[];
}

export interface Github {
  repo: string;
  users: Record<string, number>;
  teams: Record<string, number>;
  environments: Record<string, GithubEnvironment>;
  /** Branch protection by branch name (absent: unprotected). */
  protection: Record<string, BranchProtection>;
  workflowPermissions: { default_workflow_permissions: "read" | "write"; can_approve_pull_request_reviews: boolean };
  /** A private repository's fork pull request settings; absent: a public repository (HTTP 422). */
  forkPr?: {
    run_workflows_from_fork_pull_requests: boolean;
    send_write_tokens_to_workflows: boolean;
    send_secrets_and_variables: boolean;
    require_approval_for_fork_pr_workflows: boolean;
  };
  repoSecrets: string[];
  orgSecrets: string[];
  repoVariables: Record<string, string>;
  rulesets: Ruleset[];
  fail?: number;
  readOnly?: boolean;
}

export const REPO = "acme/sophia";

export const DEV_ROLE = "arn:aws:iam::222222222222:role/sophia-bootstrap/sophia-dev-deploy";
/** The dev environment as --apply leaves it, with the deploy role's variable. */
export const PROTECTED_DEV: GithubEnvironment = {
  reviewers: [],
  prevent_self_review: true,
  deployment_branch_policy: { protected_branches: false, custom_branch_policies: true },
  branchPolicies: [{ id: 1, name: "main", type: "branch" }],
  variables: { AWS_DEPLOY_ROLE_ARN: DEV_ROLE },
};

/** The checks of rust.yml main requires (the script's REQUIRED_CHECKS). */
export const REQUIRED_CHECKS = ["scripts/test against a MongoDB 7 replica set", "scripts/lint (rustfmt, clippy, cargo deny, npm audit, actionlint)"];

/** main as --apply leaves it. */
export const PROTECTED_MAIN: BranchProtection = {
  required_status_checks: { strict: false, contexts: REQUIRED_CHECKS, checks: REQUIRED_CHECKS.map((context) => ({ context, app_id: null })) },
  required_pull_request_reviews: {
    dismiss_stale_reviews: true,
    require_code_owner_reviews: false,
    required_approving_review_count: 1,
    require_last_push_approval: true,
  },
  enforce_admins: { enabled: true },
  allow_force_pushes: { enabled: false },
  allow_deletions: { enabled: false },
  required_linear_history: { enabled: false },
  required_conversation_resolution: { enabled: false },
};

/** A repository whose repository-wide settings are in place (public: no fork settings), with these environments. */
export const github = (environments: Record<string, GithubEnvironment> = {}, extra: Partial<Github> = {}): Github => ({
  repo: REPO,
  users: { alice: 101, bob: 102 },
  teams: { platform: 7, releases: 9 },
  environments,
  protection: { main: PROTECTED_MAIN },
  workflowPermissions: { default_workflow_permissions: "read", can_approve_pull_request_reviews: false },
  repoSecrets: [],
  orgSecrets: [],
  repoVariables: {},
  rulesets: [],
  ...extra,
});

export interface Protected {
  status: number | null;
  stdout: string;
  output: string;
  github: Github;
  /** Every call the script made, `METHOD path [body]` per line. */
  calls: string;
}

/** scripts/protect-environments (and lib.sh) in a scratch checkout, the stub `gh` first on PATH. */
export function protect(args: string[], gh: Github): Protected {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-protect-"));
  const bin = path.join(state, "bin");
  const scripts = path.join(state, "repo", "scripts");
  for (const d of [bin, scripts]) fs.mkdirSync(d, { recursive: true });
  for (const script of ["protect-environments", "lib.sh"]) fs.copyFileSync(path.join(REPO_ROOT, "scripts", script), path.join(scripts, script));
  fs.writeFileSync(path.join(bin, "gh"), GH_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(state, "github.json"), JSON.stringify(gh));
  const r = spawnSync("bash", [path.join(scripts, "protect-environments"), ...args], {
    encoding: "utf8",
    env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, FAKE_STATE: state, GH_REPO: REPO },
  });
  const read = (f: string) => (fs.existsSync(path.join(state, f)) ? fs.readFileSync(path.join(state, f), "utf8") : "");
  const out = { status: r.status, stdout: r.stdout, output: r.stdout + r.stderr, github: JSON.parse(read("github.json")) as Github, calls: read("gh-calls") };
  fs.rmSync(state, { recursive: true, force: true });
  return out;
}
