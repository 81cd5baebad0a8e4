// The `gh` stand-in's API (support/github.ts says what it models), served from a worker thread of
// the test's own process (the tests run the scripts with spawnSync, which blocks the main thread);
// the `gh` on PATH is a bash client of it (cli-wire.cjs).
"use strict";
const fs = require("fs");
const path = require("path");
const { parentPort, workerData } = require("worker_threads");

const { serveFields } = require("./cli-wire.cjs");

class Exit {
  constructor(code) {
    this.code = code;
  }
}

/** `gh <args>` with FAKE_STATE=stateDir and this stdin, over the JSON state file github.json. */
function gh(stateDir, args, stdin) {
  const io = { stdout: "", stderr: "" };
  try {
    run(stateDir, args, stdin, io);
    return { code: 0, ...io };
  } catch (e) {
    if (e instanceof Exit) return { code: e.code, ...io };
    return { code: 1, stdout: io.stdout, stderr: `${io.stderr}${e && e.stack ? e.stack : e}\n` };
  }
}

function run(stateDir, args, stdin, io) {
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
    if (st.readOnly || st.fail) fail(st.fail || 403, "Resource not accessible by integration");
    st.repoVariables = { ...(st.repoVariables || {}), [args[2]]: args[at + 1] };
    fs.writeFileSync(file, JSON.stringify(st));
    throw new Exit(0);
  }
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
  if (method !== "GET" && st.readOnly) fail(403, "Resource not accessible by integration");
  fs.appendFileSync(path.join(stateDir, "gh-calls"), method + " " + p + (body ? " " + JSON.stringify(body) : "") + "\n");
  const save = () => fs.writeFileSync(file, JSON.stringify(st));
  const done = (v) => {
    if (v !== undefined) out(v);
    throw new Exit(0);
  };
  route({ st, method, p, body, out, fail, save, done });
}

function route(c) {
  const { st, p, fail, done } = c;
  let m;
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
    (fields) => gh(fields[0], fields.slice(1, -1), fields[fields.length - 1]),
    (port) => {
      Atomics.store(workerData.port, 0, port);
      Atomics.notify(workerData.port, 0);
    },
  );
}
module.exports = { gh };
