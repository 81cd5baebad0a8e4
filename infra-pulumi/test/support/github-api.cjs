// The `gh` stand-in's API (support/github.ts says what it models), served from a worker thread of
// the test's own process (the tests run the scripts with spawnSync, which blocks the main thread);
// the `gh` on PATH is a bash client of it (cli-wire.cjs).
"use strict";
const { spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");
const { parentPort, workerData } = require("worker_threads");

const { serveFields } = require("./cli-wire.cjs");

class Exit {
  constructor(code) {
    this.code = code;
  }
}

/** `gh <args>` as `user` (FAKE_GH_USER) with FAKE_STATE=stateDir and this stdin, over the JSON state file github.json. */
function gh(stateDir, user, args, stdin) {
  const io = { stdout: "", stderr: "" };
  try {
    run(stateDir, user, args, stdin, io);
    return { code: 0, ...io };
  } catch (e) {
    if (e instanceof Exit) return { code: e.code, ...io };
    return { code: 1, stdout: io.stdout, stderr: `${io.stderr}${e && e.stack ? e.stack : e}\n` };
  }
}

function run(stateDir, user, args, stdin, io) {
  const file = path.join(stateDir, "github.json");
  const st = JSON.parse(fs.readFileSync(file, "utf8"));
  fs.appendFileSync(path.join(stateDir, "gh-argv"), args.join(" ") + "\n");
  const out = (v) => (io.stdout += JSON.stringify(v) + "\n");
  const fail = (code, message) => {
    io.stderr += "gh: " + message + " (HTTP " + code + ")\n";
    throw new Exit(1);
  };
  if (args[0] === "repo" && args[1] === "view") {
    io.stdout += st.repo + "\n";
    throw new Exit(0);
  }
  if (args[0] === "variable" && args[1] === "set") {
    const at = args.indexOf("--body");
    if (at < 0) {
      io.stderr += "gh variable set: --body\n";
      throw new Exit(3);
    }
    // An empty --body is no value: the real gh then asks "Paste your variable" on a terminal, or reads
    // the value from stdin (cli/cli pkg/cmd/variable/set/set.go, getBody: `if opts.Body != ""` ...
    // `opts.IO.CanPrompt()` ... `io.ReadAll(opts.IO.In)`). The stand-in refuses it instead (stricter):
    // a pasted block must never reach it.
    if (args[at + 1] === "") {
      io.stderr += "gh variable set: empty --body: the real gh would prompt \"Paste your variable\" or read stdin (stand-in refuses)\n";
      throw new Exit(1);
    }
    if (st.readOnly || st.fail) fail(st.fail || 403, "Resource not accessible by integration");
    // --env <name>: the environment's variable (it overrides the repository's of the same name).
    const envAt = args.findIndex((x) => x === "--env" || x === "-e");
    if (envAt >= 0) {
      const env = st.environments[args[envAt + 1]];
      if (!env) fail(404, "Not Found");
      env.variables[args[2]] = args[at + 1];
    } else st.repoVariables = { ...(st.repoVariables || {}), [args[2]]: args[at + 1] };
    fs.writeFileSync(file, JSON.stringify(st));
    throw new Exit(0);
  }
  if (args[0] === "auth" && args[1] === "refresh") {
    // `gh auth refresh -s <scope>` adds the scope to the stored OAuth token (cli/cli pkg/cmd/auth/refresh).
    const add = args.flatMap((a, i) => (["-s", "--scopes"].includes(args[i - 1]) ? a.split(",") : []));
    st.scopes = [...new Set([...(st.scopes || []), ...add])];
    fs.writeFileSync(file, JSON.stringify(st));
    throw new Exit(0);
  }
  if (args[0] === "pr") pulls(st, user, args, io, () => fs.writeFileSync(file, JSON.stringify(st)));
  if (args[0] !== "api") {
    io.stderr += "unexpected gh " + args.join(" ") + "\n";
    throw new Exit(3);
  }
  let method = "GET", p = "", input = false;
  for (let i = 1; i < args.length; i++) {
    if (args[i] === "--method") method = args[++i];
    else if (args[i] === "-H") i++;
    else if (args[i] === "--input") input = args[++i] === "-";
    else p = args[i];
  }
  const body = input ? JSON.parse(stdin) : undefined;
  if (st.fail) fail(st.fail, "Bad credentials");
  // An organization with SAML single sign-on and a token not authorized for it: every call on its
  // resources (https://docs.github.com/en/authentication/authenticating-with-saml-single-sign-on/authorizing-a-personal-access-token-for-use-with-saml-single-sign-on).
  if (st.samlUnauthorized && /^(repos|orgs)\//.test(p)) fail(403, "Resource protected by organization SAML enforcement. You must grant your OAuth token access to this organization.");
  if (method !== "GET" && st.readOnly) fail(403, "Resource not accessible by integration");
  fs.appendFileSync(path.join(stateDir, "gh-calls"), method + " " + p + (body ? " " + JSON.stringify(body) : "") + "\n");
  const save = () => fs.writeFileSync(file, JSON.stringify(st));
  const done = (v) => {
    if (v !== undefined) out(v);
    throw new Exit(0);
  };
  route({ st, user, method, p, body, out, fail, save, done });
}

/** The repository's plan allows this protection? (GitHub's documentation: the header of github.ts.) */
function planRefuses(st, what) {
  if ((st.visibility || "public") === "public") return undefined;
  const plan = st.plan || "team";
  if (plan === "free") {
    // The branch-protection answer is GitHub's own text; for environments the rule is the
    // documentation's and the message the stand-in's.
    return what === "branch" ? "Upgrade to GitHub Pro or make this repository public to enable this feature." : "Environments and deployment branches of a private repository need GitHub Pro, Team or Enterprise (stand-in's message)";
  }
  if (what === "reviewers" && plan !== "enterprise") return "Required reviewers on a private repository's environment need GitHub Enterprise (stand-in's message)";
  return undefined;
}

/**
 * `gh pr create|view|checks|review|merge` over st.pulls, the branches in st.origin (a bare git
 * repository; the merge is made there). GitHub's rules modelled: an author cannot approve their own
 * pull request ("Can not approve your own pull request", the API's 422); a merge into a protected
 * branch needs its required checks passed (st.checks, "pass" unless a test says otherwise: the
 * stand-in cannot run rust.yml) and its required approving reviews, by someone other than the last
 * pusher when require_last_push_approval is on, else gh refuses "Pull request #N is not mergeable:
 * the base branch policy prohibits the merge." (cli/cli, pkg/cmd/pr/merge/merge.go).
 */
function pulls(st, user, args, io, save) {
  const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const positional = args.slice(2).filter((a, i, all) => !a.startsWith("-") && !(i > 0 && ["--base", "--head", "--title", "--body", "--json", "--jq", "-B", "-H", "-t", "-b"].includes(all[i - 1])));
  st.pulls = st.pulls || [];
  const find = () => {
    const ref = positional[0];
    const pr = st.pulls.find((x) => x.state === "OPEN" && (ref === undefined || x.head === ref || String(x.number) === ref));
    if (!pr) {
      io.stderr += `no pull requests found for branch "${ref}"\n`;
      throw new Exit(1);
    }
    return pr;
  };
  const git = (...a) => {
    const r = spawnSync("git", ["--git-dir", st.origin, ...a], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const sub = args[1];
  if (sub === "create") {
    const head = opt("--head"), base = opt("--base") || "main";
    if (!head) { io.stderr += "gh pr create: --head (the stand-in needs it)\n"; throw new Exit(1); }
    // Without a terminal, gh needs the title and body given, or --fill (cli/cli pkg/cmd/pr/create/create.go:
    // "must provide `--title` and `--body` (or `--fill` or `fill-first` or `--fillverbose`) when not
    // running interactively"). --fill's local-branch check is the `gh` script's (ghStub): it needs the cwd.
    if (!args.includes("--fill") && !(args.includes("--title") && args.includes("--body"))) {
      io.stderr += "must provide `--title` and `--body` (or `--fill` or `fill-first` or `--fillverbose`) when not running interactively\n";
      throw new Exit(1);
    }
    git("rev-parse", "--verify", `refs/heads/${head}`);
    const pr = { number: st.pulls.length + 1, head, base, author: user, state: "OPEN", approvals: [] };
    st.pulls.push(pr); save();
    io.stdout += `https://github.com/${st.repo}/pull/${pr.number}\n`;
    throw new Exit(0);
  }
  // `gh pr view <branch>` falls back to the branch's most recent closed or merged pull request
  // when none is open (cli/cli pkg/cmd/pr/shared/finder.go); the other subcommands act on it too.
  const ref = positional[0];
  const pr = st.pulls.find((x) => x.state === "OPEN" && (ref === undefined || x.head === ref || String(x.number) === ref)) ?? [...st.pulls].reverse().find((x) => ref !== undefined && (x.head === ref || String(x.number) === ref)) ?? find();
  if (pr.state !== "OPEN" && sub !== "view") {
    io.stderr += `X Pull request ${st.repo}#${pr.number} is not open (${pr.state})\n`;
    throw new Exit(1);
  }
  const protection = (st.protection || {})[pr.base];
  const reviews = protection && protection.required_pull_request_reviews;
  const needed = reviews ? reviews.required_approving_review_count : 0;
  const approvals = pr.approvals.filter((a) => !(reviews && reviews.require_last_push_approval) || a !== pr.author);
  const decision = !reviews ? "" : approvals.length >= needed ? "APPROVED" : "REVIEW_REQUIRED";
  if (sub === "view") {
    if (opt("--json") === "reviewDecision") io.stdout += `${decision}\n`;
    else if (opt("--json") === "state") io.stdout += `${pr.state}\n`;
    else io.stdout += `#${pr.number} ${pr.head} -> ${pr.base} (${pr.state})\n`;
    throw new Exit(0);
  }
  const required = protection && protection.required_status_checks ? protection.required_status_checks.contexts : [];
  const checksPass = (st.checks || "pass") === "pass";
  if (sub === "checks") {
    // Right after `gh pr create` the commit has no check at all: gh fails "no checks reported on
    // the '<branch>' branch", --required or not; once some check has started but no required one,
    // with --required, "no required checks reported on the '<branch>' branch" (cli/cli
    // pkg/cmd/pr/checks/checks.go, --watch or not). The stand-in answers the first to a pull
    // request's first `gh pr checks`, the second to its second.
    pr.checksSeen = (pr.checksSeen || 0) + 1; save();
    if (pr.checksSeen === 1) { io.stderr += `no checks reported on the '${pr.head}' branch\n`; throw new Exit(1); }
    if (pr.checksSeen === 2 && args.includes("--required")) { io.stderr += `no required checks reported on the '${pr.head}' branch\n`; throw new Exit(1); }
    for (const c of required) io.stdout += `${c}\t${checksPass ? "pass" : "fail"}\n`;
    throw new Exit(checksPass ? 0 : 1);
  }
  if (sub === "review") {
    if (!args.includes("--approve")) { io.stderr += "the stand-in models gh pr review --approve only\n"; throw new Exit(1); }
    if (user === pr.author) { io.stderr += "failed to create review: GraphQL: Review Can not approve your own pull request (addPullRequestReview)\n"; throw new Exit(1); }
    pr.approvals.push(user); save();
    io.stdout += `- Approved pull request #${pr.number}\n`;
    throw new Exit(0);
  }
  if (sub === "merge") {
    if (protection && (!checksPass || approvals.length < needed)) {
      io.stderr += `X Pull request ${st.repo}#${pr.number} is not mergeable: the base branch policy prohibits the merge.\n`;
      throw new Exit(1);
    }
    const base = git("rev-parse", `refs/heads/${pr.base}`), head = git("rev-parse", `refs/heads/${pr.head}`);
    const merge = spawnSync("git", ["--git-dir", st.origin, "merge-base", "--is-ancestor", base, head]);
    if (merge.status !== 0) { io.stderr += `X Pull request ${st.repo}#${pr.number} is not mergeable: the merge commit cannot be cleanly created.\n`; throw new Exit(1); }
    const commit = spawnSync("git", ["--git-dir", st.origin, "commit-tree", `${head}^{tree}`, "-p", base, "-p", head, "-m", `Merge pull request #${pr.number} from ${pr.head}`], {
      encoding: "utf8",
      env: { ...process.env, GIT_AUTHOR_NAME: user, GIT_AUTHOR_EMAIL: `${user}@example.com`, GIT_COMMITTER_NAME: "GitHub", GIT_COMMITTER_EMAIL: "noreply@github.com" },
    }).stdout.trim();
    git("update-ref", `refs/heads/${pr.base}`, commit, base);
    if (args.includes("--delete-branch")) git("update-ref", "-d", `refs/heads/${pr.head}`);
    pr.state = "MERGED"; save();
    io.stdout += `✓ Merged pull request ${st.repo}#${pr.number}\n`;
    throw new Exit(0);
  }
  io.stderr += "unexpected gh " + args.join(" ") + "\n";
  throw new Exit(3);
}

function route(c) {
  const { st, user, p, fail, done } = c;
  let m;
  // The plan is shown to a classic or OAuth token only with a scope gh auth login does not ask for
  // (repo, read:org, gist: cli/cli internal/authflow/flow.go, minimumScopes): GET /user's private
  // fields with `user`, GET /orgs/{org}'s `plan` to an owner with `admin:org`
  // (https://docs.github.com/en/rest/users/users#get-the-authenticated-user,
  // https://docs.github.com/en/rest/orgs/orgs#get-an-organization). st.scopes unset: a token with all.
  const scoped = (scope) => st.scopes === undefined || st.scopes.includes(scope);
  // GET /user is the caller's own account: its plan, private, is the repository's owner's only when
  // the caller is a personal repository's owner. A personal account is on Free or Pro, never Team or
  // Enterprise (https://docs.github.com/en/get-started/learning-about-github/githubs-plans).
  if (p === "user") {
    const personal = st.ownerType === "User";
    if (personal && st.plan && !["free", "pro"].includes(st.plan)) throw new Error(`stand-in: a personal account cannot be on ${st.plan}`);
    const ownPlan = personal && user !== st.repo.split("/")[0] ? st.callerPlan || "free" : st.plan || (personal ? "pro" : "team");
    done({ login: user, ...(scoped("user") ? { plan: { name: ownPlan } } : {}) });
  }
  if ((m = /^orgs\/([^/]+)$/.exec(p))) done({ login: m[1], ...(st.planVisible === false || !scoped("admin:org") ? {} : { plan: { name: st.plan || "team" } }) });
  if (p === `repos/${st.repo}`) done({ full_name: st.repo, visibility: st.visibility || "public", private: (st.visibility || "public") !== "public", owner: { login: st.repo.split("/")[0], type: st.ownerType || "Organization" } });
  if ((m = /^users\/(.+)$/.exec(p))) {
    if (!(m[1] in st.users)) fail(404, "Not Found");
    done({ login: m[1], id: st.users[m[1]] });
  }
  if ((m = /^orgs\/[^/]+\/teams\/(.+)$/.exec(p))) {
    if (!(m[1] in st.teams)) fail(404, "Not Found");
    done({ slug: m[1], id: st.teams[m[1]] });
  }
  m = /^repos\/([^/]+\/[^/]+)\/(.*)$/.exec(p);
  if (!m || m[1] !== st.repo) fail(404, "Not Found");
  const r = m[2];
  repositorySettings(c, r);
  environments(c, r);
}

const enabled = (v) => ({ enabled: v === true });

/** Branch protection, Actions permissions, secrets, variables, rulesets. */
function repositorySettings({ st, method, body, fail, save, done }, r) {
  let m;
  if ((m = /^branches\/([^/]+)\/protection$/.exec(r))) {
    st.protection = st.protection || {};
    if (method === "PUT") {
      const refused = planRefuses(st, "branch");
      if (refused) fail(403, refused);
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
  // GET answers the repository's template ({use_default: true} until one is set); PUT refuses a
  // body without use_default and claim keys that are not unique or hold other than alphanumerics
  // and underscores (https://docs.github.com/en/rest/actions/oidc: "Array of unique strings. Each
  // claim key can only contain alphanumeric characters and underscores", HTTP 422).
  if (r === "actions/oidc/customization/sub") {
    if (method === "PUT") {
      const keys = body.include_claim_keys;
      if (typeof body.use_default !== "boolean") fail(422, "Invalid request: use_default is required");
      if (keys !== undefined && (!Array.isArray(keys) || new Set(keys).size !== keys.length || keys.some((k) => !/^[A-Za-z0-9_]+$/.test(k)))) fail(422, "Invalid request: include_claim_keys");
      st.oidcSub = body.use_default ? { use_default: true } : { use_default: false, include_claim_keys: keys };
      save(); done();
    }
    done(st.oidcSub || { use_default: true });
  }
  if (r === "actions/permissions/fork-pr-workflows-private-repos") {
    if (!st.forkPr) fail(422, "This setting only applies to internal and private repositories");
    if (method === "PUT") { st.forkPr = body; save(); done(); }
    done(st.forkPr);
  }
  if ((m = /^actions\/secrets\/(.+)$/.exec(r))) { if (!st.repoSecrets.includes(m[1])) fail(404, "Not Found"); done({ name: m[1] }); }
  if (r === "actions/organization-secrets") done({ total_count: st.orgSecrets.length, secrets: st.orgSecrets.map((name) => ({ name })) });
  if ((m = /^actions\/variables\/(.+)$/.exec(r))) { if (!(m[1] in st.repoVariables)) fail(404, "Not Found"); done({ name: m[1], value: st.repoVariables[m[1]] }); }
  if (r === "rulesets") {
    if (method === "POST") { const rs = { id: 500 + st.rulesets.length, ...body }; st.rulesets.push(rs); save(); done(rs); }
    done(st.rulesets.map((x) => ({ id: x.id, name: x.name, target: x.target, enforcement: x.enforcement })));
  }
  if ((m = /^rulesets\/(\d+)$/.exec(r))) {
    const i = st.rulesets.findIndex((x) => String(x.id) === m[1]);
    if (i < 0) fail(404, "Not Found");
    if (method === "PUT") { st.rulesets[i] = { id: st.rulesets[i].id, ...body }; save(); }
    done(st.rulesets[i]);
  }
}

/** An environment, its deployment policies, secrets and variables. */
function environments({ st, method, body, out, fail, save }, r) {
  let m = /^environments\/([^/]+)(?:\/(.*))?$/.exec(r);
  if (!m) fail(404, "Not Found");
  const name = m[1], rest = m[2] || "";
  let env = st.environments[name];
  if (rest === "" && method === "PUT") {
    const refused = planRefuses(st, "environment") || ((body.reviewers || []).length > 0 ? planRefuses(st, "reviewers") : undefined);
    if (refused) fail(422, refused);
    // GitHub's answer, quoted in https://github.com/github-community-projects/safe-settings/issues/628.
    if (body.prevent_self_review === true && (body.reviewers || []).length === 0) fail(422, "Required reviewers must have at least one reviewer to set prevent_self_review");
    env = st.environments[name] = { branchPolicies: [], variables: {}, secrets: [], ...(env || {}), reviewers: body.reviewers || [], prevent_self_review: body.prevent_self_review === true, deployment_branch_policy: body.deployment_branch_policy || null,
      // Administrators may bypass the rules unless the PUT says can_admins_bypass: false; a PUT without
      // it turns it back on (the setting's default, "Allow administrators to bypass configured
      // protection rules": https://github.com/google/go-github/issues/2725; the stand-in's reading).
      can_admins_bypass: body.can_admins_bypass !== false };
    save();
  }
  if (!env) fail(404, "Not Found");
  if (rest === "") {
    const rules = [];
    if (env.reviewers.length > 0) rules.push({ type: "required_reviewers", prevent_self_review: env.prevent_self_review, reviewers: env.reviewers.map((x) => ({ type: x.type, reviewer: { id: x.id } })) });
    if (env.deployment_branch_policy) rules.push({ type: "branch_policy" });
    out({ name, can_admins_bypass: env.can_admins_bypass !== false, protection_rules: rules, deployment_branch_policy: env.deployment_branch_policy });
  } else if (rest === "deployment-branch-policies" && method === "GET") {
    out({ total_count: env.branchPolicies.length, branch_policies: env.branchPolicies });
  } else if (rest === "deployment-branch-policies" && method === "POST") {
    const policy = { id: 1000 + env.branchPolicies.length, name: body.name, type: body.type };
    env.branchPolicies.push(policy); save(); out(policy);
  } else if ((m = /^deployment-branch-policies\/(\d+)$/.exec(rest)) && method === "DELETE") {
    env.branchPolicies = env.branchPolicies.filter((b) => String(b.id) !== m[1]); save();
  } else if ((m = /^secrets\/(.+)$/.exec(rest)) && method === "GET") {
    if (!(env.secrets || []).includes(m[1])) fail(404, "Not Found");
    out({ name: m[1] });
  } else if ((m = /^variables\/(.+)$/.exec(rest))) {
    if (method === "GET") { if (!(m[1] in env.variables)) fail(404, "Not Found"); out({ name: m[1], value: env.variables[m[1]] }); }
    else if (method === "PATCH") { env.variables[m[1]] = body.value; save(); }
    else fail(405, "Method not allowed");
  } else if (rest === "variables" && method === "POST") {
    env.variables[body.name] = body.value; save();
  } else fail(404, "Not Found");
}

// In the worker: fields FAKE_STATE, the arguments, stdin; the port goes to the parent through
// workerData.port.
if (parentPort) {
  serveFields(
    (fields) => gh(fields[0], fields[1], fields.slice(2, -1), fields[fields.length - 1]),
    (port) => {
      Atomics.store(workerData.port, 0, port);
      Atomics.notify(workerData.port, 0);
    },
  );
}
module.exports = { gh };
