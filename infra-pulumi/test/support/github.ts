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
 * - `gh auth refresh -s <scope>` (the token's scopes, st.scopes; the plan is hidden without them);
 * - users and teams by name; `gh repo view`; `gh variable set NAME --body VALUE` (a repository variable);
 * - the repository (`visibility`, `owner.type`) and its owner's plan (`GET /orgs/{org}` or `/user`:
 *   `plan.name`), and what a plan refuses on a private repository (GitHub's documentation, https://github.com/github/docs/blob/main/data/reusables/gated-features/protected-branches.md
 *   and https://github.com/github/docs/blob/main/data/reusables/gated-features/environments.md): branch protection on
 *   GitHub Free (HTTP 403 "Upgrade to GitHub Pro or make this repository public to enable this
 *   feature.", the API's answer), environments on GitHub Free, required reviewers below Enterprise;
 * - pull requests: `gh pr create|view|checks|review --approve|merge` (github-api.cjs, `pulls`, says
 *   which refusals; `gh pr create --fill` on a branch that is not local is refused by the `gh`
 *   script itself, which sees the caller's checkout);
 * - `gh --version` (FAKE_GH_VERSION, default a gh new enough for the procedure).
 * The caller is FAKE_GH_USER (default alice).
 * `fail` answers every call with that HTTP status; `readOnly` refuses writes. Every call is
 * appended to `gh-calls` (`METHOD path [body]`). The API is github-api.cjs, served in this process.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Worker } from "node:worker_threads";

import { REPO_ROOT } from "../../src/repository";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { bashSend } = require("./cli-wire.cjs") as { bashSend: (port: string) => string };

/** Starts the API server (github-api.cjs) in a worker thread once; its port. */
let port = 0;
function ghServer(): number {
  if (port) return port;
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(path.join(__dirname, "github-api.cjs"), { workerData: { port: shared } });
  worker.unref();
  // The tests call the scripts with spawnSync: the server answers from the worker's own event
  // loop, and the port is awaited synchronously.
  if (Atomics.wait(shared, 0, 0, 30_000) === "timed-out") throw new Error("the gh stand-in's server did not start");
  port = Atomics.load(shared, 0);
  return port;
}

/**
 * The `gh` to put on PATH: a bash client of the stand-in's server (no node start per call). It
 * reads stdin only for `gh api ... --input -`, as the API stand-in does.
 */
export function ghStub(): string {
  return `#!/usr/bin/env bash
${bashSend(String(ghServer()))}read_input=0 skip=""
if [ "\${1:-}" = api ]; then
  for a in "\${@:2}"; do
    case "$skip" in next) skip=""; continue ;; input) if [ "$a" = - ]; then read_input=1; else read_input=0; fi; skip=""; continue ;; esac
    case "$a" in -H | --method) skip=next ;; --input) skip=input ;; esac
  done
fi
# gh --version: the stand-in is a gh new enough for every command the procedure runs (FAKE_GH_VERSION).
if [ "\${1:-}" = --version ]; then echo "gh version \${FAKE_GH_VERSION:-2.60.0} (2024-10-22)"; echo "https://github.com/cli/cli/releases/tag/v\${FAKE_GH_VERSION:-2.60.0}"; exit 0; fi
# gh pr create --fill reads the commits between the base's remote branch and the LOCAL branch named
# by --head (git log --cherry origin/<base>...<head>: cli/cli pkg/cmd/pr/create/create.go,
# initDefaultTitleBody; git/client.go, Commits); a branch that exists only on the remote fails
# (cli/cli#12394). Checked here, in the caller's checkout.
if [ "\${1:-} \${2:-}" = "pr create" ]; then
  fill=0 head="" base=main prev=""
  for a in "$@"; do
    case "$prev" in --head | -H) head=$a ;; --base | -B) base=$a ;; esac
    [ "$a" != --fill ] || fill=1
    prev=$a
  done
  if [ $fill = 1 ] && ! git rev-parse -q --verify "refs/heads/$head" >/dev/null 2>&1; then
    echo "could not compute title or body defaults: failed to run git: fatal: ambiguous argument 'origin/$base...$head': unknown revision or path not in the working tree." >&2
    exit 1
  fi
fi
stdin=""
[ $read_input = 0 ] || IFS= read -r -d '' stdin || true
cli_send "$FAKE_STATE" "\${FAKE_GH_USER:-alice}" "$@" "$stdin"
`;
}

export interface GithubEnvironment {
  reviewers: { type: "User" | "Team"; id: number }[];
  prevent_self_review: boolean;
  deployment_branch_policy: { protected_branches: boolean; custom_branch_policies: boolean } | null;
  branchPolicies: { id: number; name: string; type?: string }[];
  variables: Record<string, string>;
  /** Names of the environment's secrets. */
  secrets?: string[];
  /** "Allow administrators to bypass configured protection rules": on (true) unless a PUT said false. */
  can_admins_bypass?: boolean;
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
  /** The repository's OIDC subject template (absent: GitHub's default, {use_default: true}). */
  oidcSub?: { use_default: boolean; include_claim_keys?: string[] };
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
  /** "public" (the default), "private" or "internal". */
  visibility?: "public" | "private" | "internal";
  /** The owner's plan (default "team"); planVisible false: the token cannot read it. */
  plan?: "free" | "pro" | "team" | "enterprise";
  planVisible?: boolean;
  /** The OAuth scopes of gh's token (unset: every scope); `gh auth refresh -s` adds to them. */
  scopes?: string[];
  ownerType?: "Organization" | "User";
  /** A personal repository: the plan GET /user shows a caller who is not its owner (their own; default free). */
  callerPlan?: "free" | "pro";
  /** Pull requests (`gh pr ...`), merged into the bare repository `origin`; their required checks' result. */
  pulls?: { number: number; head: string; base: string; author: string; state: "OPEN" | "MERGED"; approvals: string[]; checksSeen?: number }[];
  origin?: string;
  checks?: "pass" | "fail";
  fail?: number;
  readOnly?: boolean;
  /** The organization enforces SAML SSO and the token is not authorized for it (403 on its resources). */
  samlUnauthorized?: boolean;
}

export const REPO = "acme/sophia";

export const DEV_ROLE = "arn:aws:iam::222222222222:role/sophia-bootstrap/sophia-dev-deploy";
/** The dev environment as --apply leaves it, with the deploy role's variable. */
export const PROTECTED_DEV: GithubEnvironment = {
  reviewers: [],
  prevent_self_review: false,
  deployment_branch_policy: { protected_branches: false, custom_branch_policies: true },
  branchPolicies: [{ id: 1, name: "main", type: "branch" }],
  variables: { AWS_DEPLOY_ROLE_ARN: DEV_ROLE },
};

/** The checks of rust.yml main requires (the script's REQUIRED_CHECKS). */
export const REQUIRED_CHECKS = ["scripts/test against a MongoDB 7 replica set", "scripts/lint (rustfmt, clippy, cargo deny bans licenses sources, actionlint)"];

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
  oidcSub: { use_default: false, include_claim_keys: ["repo", "context", "ref", "job_workflow_ref"] },
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
export function protect(args: string[], gh: Github, env: Record<string, string> = {}): Protected {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-protect-"));
  const bin = path.join(state, "bin");
  const scripts = path.join(state, "repo", "scripts");
  const declarations = path.join(state, "repo", "declarations");
  for (const d of [bin, scripts, declarations]) fs.mkdirSync(d, { recursive: true });
  for (const script of ["protect-environments", "lib.sh"]) fs.copyFileSync(path.join(REPO_ROOT, "scripts", script), path.join(scripts, script));
  fs.copyFileSync(path.join(REPO_ROOT, "declarations", "stages.json"), path.join(declarations, "stages.json"));
  fs.writeFileSync(path.join(bin, "gh"), ghStub(), { mode: 0o755 });
  fs.writeFileSync(path.join(state, "github.json"), JSON.stringify(gh));
  const r = spawnSync("bash", [path.join(scripts, "protect-environments"), ...args], {
    encoding: "utf8",
    env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, FAKE_STATE: state, GH_REPO: REPO, ...env },
  });
  const read = (f: string) => (fs.existsSync(path.join(state, f)) ? fs.readFileSync(path.join(state, f), "utf8") : "");
  const out = { status: r.status, stdout: r.stdout, output: r.stdout + r.stderr, github: JSON.parse(read("github.json")) as Github, calls: read("gh-calls") };
  fs.rmSync(state, { recursive: true, force: true });
  return out;
}
