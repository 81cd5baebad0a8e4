/**
 * Stand-in CLIs the script tests put first on PATH (scripts/bootstrap-stage's test and the deploy
 * documentation's). \`gh\`: GitHub's REST API as \`gh api\` answers it (https://docs.github.com/en/rest/deployments/environments,
 * .../deployments/branch-policies, .../actions/variables), over a JSON state file: environments with
 * reviewers, prevent_self_review and deployment_branch_policy, their branch policies and variables;
 * users and teams by name; \`gh repo view\` and \`gh variable set\` (repository variables). \`fail\` answers every call with that HTTP status; \`readOnly\` refuses writes.
 */
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
  const body = args.indexOf("--body");
  if (body < 0) { console.error("gh variable set: --body"); process.exit(3); }
  if (st.readOnly || st.fail) fail(st.fail || 403, "Resource not accessible by integration");
  st.variables = { ...(st.variables || {}), [args[2]]: args[body + 1] };
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
let m;
if ((m = /^users\\/(.+)$/.exec(p))) { if (!(m[1] in st.users)) fail(404, "Not Found"); out({ login: m[1], id: st.users[m[1]] }); process.exit(0); }
if ((m = /^orgs\\/[^/]+\\/teams\\/(.+)$/.exec(p))) { if (!(m[1] in st.teams)) fail(404, "Not Found"); out({ slug: m[1], id: st.teams[m[1]] }); process.exit(0); }
m = /^repos\\/([^/]+\\/[^/]+)\\/environments\\/([^/]+)(?:\\/(.*))?$/.exec(p);
if (!m || m[1] !== st.repo) fail(404, "Not Found");
const name = m[2], rest = m[3] || "";
let env = st.environments[name];
if (rest === "" && method === "PUT") {
  env = st.environments[name] = { branchPolicies: [], variables: {}, ...(env || {}), reviewers: body.reviewers || [], prevent_self_review: body.prevent_self_review === true, deployment_branch_policy: body.deployment_branch_policy || null };
  save();
}
if (!env) fail(404, "Not Found");
if (rest === "") {
  const rules = [];
  if (env.reviewers.length > 0) rules.push({ type: "required_reviewers", prevent_self_review: env.prevent_self_review, reviewers: env.reviewers.map((r) => ({ type: r.type, reviewer: { id: r.id } })) });
  if (env.deployment_branch_policy) rules.push({ type: "branch_policy" });
  out({ name, protection_rules: rules, deployment_branch_policy: env.deployment_branch_policy });
} else if (rest === "deployment-branch-policies" && method === "GET") {
  out({ total_count: env.branchPolicies.length, branch_policies: env.branchPolicies });
} else if (rest === "deployment-branch-policies" && method === "POST") {
  const policy = { id: 1000 + env.branchPolicies.length, name: body.name, type: body.type };
  env.branchPolicies.push(policy); save(); out(policy);
} else if ((m = /^deployment-branch-policies\\/(\\d+)$/.exec(rest)) && method === "DELETE") {
  env.branchPolicies = env.branchPolicies.filter((b) => String(b.id) !== m[1]); save();
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
}
export interface Github {
  repo: string;
  users: Record<string, number>;
  teams: Record<string, number>;
  environments: Record<string, GithubEnvironment>;
  fail?: number;
  readOnly?: boolean;
  /** Repository variables (`gh variable set`). */
  variables?: Record<string, string>;
}
