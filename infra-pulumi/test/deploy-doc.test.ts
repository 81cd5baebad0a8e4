/**
 * docs/deploy.md, run. Its `<!-- deploy-doc: ... -->` blocks are extracted and run with bash, in
 * the order a person follows them, from an empty HOME, in a scratch checkout (a git repository with
 * a bare `origin`), against stand-in `pulumi` and `aws` commands (support/deploy-world.ts: what each
 * does and where that was read) and the `gh` stand-in of support/github.ts. Every AWS request of
 * every step, and of the CI deploy a push starts, is decided by the IAM policy simulator as the
 * principal making it: the break-glass administrator who follows the doc, an administrator outside
 * the key lists (refused by scripts/preflight before anything changes; what the refused deploy
 * would have met is evaluated too), CI's deploy role, and a re-provisioned break-glass role.
 *
 * The scratch checkout starts from the repository as a new user gets it: its stack files are this
 * checkout's with what step 3 writes for a person and an account removed (`templateStackFile`), so
 * the test never depends on what someone committed after following the doc (CI runs this test on
 * every pull request, the one step 5 opens included). `origin` is GitHub as the stand-ins model it:
 * a push to a protected branch is refused (`pushRefusal`), pull requests merge through `gh pr`
 * (support/github-api.cjs), and a merge into (or a push to) main runs CI's deploy.
 *
 * Stubbed, and why: `scripts/build` (a Rust cross-build takes minutes; the stand-in pulumi does not
 * read the zips: the program's artifacts checks have their own tests), `cargo` (the build's), `npm`
 * (node_modules are linked from this checkout; the stand-in fails `npm ci` without
 * --ignore-scripts). Each principal has AdministratorAccess but the deploy role, whose policies are
 * the bootstrap's, rendered for the layer the bootstrap last read.
 */
import * as assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, test } from "node:test";

import * as yaml from "js-yaml";

import { outputNames } from "../../infra-bootstrap/src/bootstrap";
import { deployRoleArn, stateKeyPolicy } from "../../infra-bootstrap/src/policies";
import { REPO_ROOT } from "../src/repository";
import { PRODUCTION_STAGE } from "../src/stages";
import { type Github, ghStub, github as newRepository } from "./support/github";
import { ADMINISTRATOR_ACCESS, type CliResult, P, World } from "./support/deploy-world";
import { type ProgramRun, runProgram, TEST_BREAK_GLASS_ARN } from "./support/harness";
import { ACCOUNT, registeredErrorHooks } from "./support/mocks";
import { MIGRATION_RETRY_WAITS_SECONDS, migrationRetryCallback, migrationRetryWait } from "../src/migration-retry";
import { decide, type Doc } from "./rehearsal/simulate";
import { loadWorkflow } from "./support/workflow-file";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { bashSend, serveFields } = require("./support/cli-wire.cjs") as {
  bashSend: (port: string) => string;
  serveFields: (answer: (fields: string[]) => Promise<CliResult>, listening: (port: number) => void) => { close: () => void };
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { missingKeys } = require("../ci/check-stack-file.cjs") as { missingKeys: (stage: string, doc: unknown, o?: { pulumiCloud?: boolean }) => string[] };

/** Where the stack files come from: this checkout, or step 3's output (the CI run below, SOPHIA_TEST_STACK_FILES). */
const STACK_FILES = process.env["SOPHIA_TEST_STACK_FILES"] ?? REPO_ROOT;
/** Step 3's Pulumi.dev.yaml, as the person commits it (set by the walk below). */
let committedAtStep3: string | undefined;
const DOC = fs.readFileSync(path.join(REPO_ROOT, "docs", "deploy.md"), "utf8");
const SSO = `arn:${P}:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-west-1`;
/** The person following the doc: the break-glass role the program's tests name. */
const ME = TEST_BREAK_GLASS_ARN;
/** An administrator outside both key lists. */
const OTHER = `${SSO}/AWSReservedSSO_AdministratorAccess_0123456789abcdef`;
/** The break-glass permission set's role after re-provisioning: a new suffix (the doc's NEW_ADMIN). */
const REPROVISIONED = `${SSO}/AWSReservedSSO_BreakGlass_fedcba9876543210`;
const PEOPLE = Object.fromEntries([ME, OTHER, REPROVISIONED].map((a) => [a.split("/").pop()!, a]));
/** What step 3 writes into a stack file for one person and one account (scripts/bootstrap-stage). */
export const PERSONAL_KEYS = ["aws:allowedAccountIds", "sophia:kmsKeyAdministrators", "sophia:mongodbUri", "sophia:openaiApiKey"];
/** A stack file as a new user gets it: the secrets provider, the account pin, the administrators and the secrets of step 3 removed. */
export function templateStackFile(text: string): string {
  const doc = (yaml.load(text) ?? {}) as Record<string, unknown> & { config?: Record<string, unknown> };
  for (const k of ["secretsprovider", "encryptedkey", "encryptionsalt"]) delete doc[k];
  for (const k of PERSONAL_KEYS) delete doc.config?.[k];
  return yaml.dump(doc, { lineWidth: -1 });
}

/**
 * GitHub's answer to a push (the pre-receive check of branch protection): a branch whose protection
 * requires pull requests refuses every direct update, administrators included when enforce_admins
 * is on ("remote: error: GH006: Protected branch update failed for refs/heads/main. / remote: error:
 * Changes must be made through a pull request.", then "! [remote rejected] ... (protected branch hook
 * declined)"; https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-protected-branches/about-protected-branches).
 * Returns the refusal, or undefined; `branch` is the pushed ref's short name.
 */
export function pushRefusal(gh: Github, branch: string): string | undefined {
  const p = gh.protection[branch];
  if (!p) return undefined;
  const why = p.required_pull_request_reviews ? "Changes must be made through a pull request." : p.required_status_checks && p.required_status_checks.contexts.length > 0 ? `${p.required_status_checks.contexts.length} of ${p.required_status_checks.contexts.length} required status checks are expected.` : undefined;
  if (!why) return undefined;
  return `remote: error: GH006: Protected branch update failed for refs/heads/${branch}.\nremote: error: ${why}\nTo origin\n ! [remote rejected] HEAD -> ${branch} (protected branch hook declined)\nerror: failed to push some refs to 'origin'\n`;
}

/** The branches `git push <args>` updates (refspecs' destinations; HEAD alone is the current branch). */
function pushedBranches(args: string[], current: string): string[] {
  const rest = args.slice(1).filter((a) => !a.startsWith("-"));
  const specs = rest.slice(1);
  if (specs.length === 0) return [current];
  return specs.map((spec) => {
    const dst = spec.includes(":") ? spec.slice(spec.indexOf(":") + 1) : spec === "HEAD" ? current : spec;
    return dst.replace(/^\+/, "").replace(/^refs\/heads\//, "");
  });
}

const SECRETS = { SOPHIA_MONGODB_URI: "mongodb+srv://u:not-a-password@h.example.net/?retryWrites=true", SOPHIA_OPENAI_API_KEY: "sk-not-a-key" };

/** The doc's runnable blocks by name ("facts", "first 2", "later layer", ...), in document order. */
export function docBlocks(doc: string): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const m of doc.matchAll(/<!-- deploy-doc: ([a-z0-9 ]+) -->\n```bash\n([\s\S]*?)```/g)) {
    assert.ok(!blocks.has(m[1]!), `two blocks named ${m[1]}`);
    blocks.set(m[1]!, m[2]!);
  }
  return blocks;
}
const BLOCKS = docBlocks(DOC);
const block = (name: string) => {
  const b = BLOCKS.get(name);
  assert.ok(b, `docs/deploy.md has no block <!-- deploy-doc: ${name} -->`);
  return b;
};

let run: ProgramRun;
before(async () => {
  run = await runProgram({ stack: "dev", stackFile: true });
});

/** The program's resources for a stage: dev's run, renamed for another stage. */
function programFor(stage: string) {
  if (stage === "dev") return run.resources;
  const text = JSON.stringify(run.resources).replace(/(?<=[-_/:"])dev(?=[-_/"])/g, stage);
  return JSON.parse(text) as ProgramRun["resources"];
}

interface Scratch {
  root: string;
  home: string;
  repo: string;
  bin: string;
  state: string;
}

const git = (cwd: string, ...args: string[]) => {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  assert.equal(r.status, 0, `git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};

/** A scratch checkout: what the doc's commands read, node_modules linked, `origin` a bare repository. */
function scratch(): Scratch {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-deploy-doc-"));
  const sc = { root, home: path.join(root, "home"), repo: path.join(root, "repo"), bin: path.join(root, "bin"), state: path.join(root, "state") };
  for (const d of [sc.home, sc.repo, sc.bin, sc.state]) fs.mkdirSync(d);
  const files = git(REPO_ROOT, "ls-files", "scripts", "declarations/stages.json", "Pulumi.yaml", "Pulumi.dev.yaml", "infra-pulumi/ci", "infra-pulumi/package.json", "infra-pulumi/package-lock.json", "infra-bootstrap/Pulumi.yaml", "infra-bootstrap/package.json", "infra-bootstrap/package-lock.json")
    .split("\n")
    .filter(Boolean);
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(sc.repo, f)), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, f), path.join(sc.repo, f));
  }
  for (const f of files.filter((x) => /(^|\/)Pulumi\.[a-z0-9-]+\.yaml$/.test(x) && !x.startsWith("infra-bootstrap/"))) {
    fs.writeFileSync(path.join(sc.repo, f), templateStackFile(fs.readFileSync(path.join(STACK_FILES, f), "utf8")));
  }
  fs.writeFileSync(path.join(sc.repo, "scripts", "build"), '#!/usr/bin/env bash\necho "SKIPPED: scripts/build (the Rust build takes minutes; the stand-in pulumi reads no zip)" >&2\n');
  fs.writeFileSync(path.join(sc.repo, ".gitignore"), "node_modules\n.local\n");
  for (const p of ["infra-pulumi", "infra-bootstrap"]) fs.symlinkSync(path.join(REPO_ROOT, p, "node_modules"), path.join(sc.repo, p, "node_modules"));
  git(sc.repo, "init", "-q", "-b", "main");
  git(sc.repo, "add", "-A");
  // The checkout's first commit is the repository's; the person's identity is theirs to configure ("Needs").
  git(sc.repo, "-c", "user.email=platform@example.com", "-c", "user.name=Platform", "commit", "-qm", "the repository");
  git(root, "init", "-q", "--bare", "origin.git");
  git(sc.repo, "remote", "add", "origin", path.join(root, "origin.git"));
  git(sc.repo, "push", "-q", "origin", "HEAD:main");

  // The stand-ins: bash clients of serve()'s server (cli-wire.cjs), not a node start per call.
  const forward = `#!/usr/bin/env bash
${bashSend("$FAKE_SERVER_PORT")}stdin=""
IFS= read -r -d '' stdin || true
env=()
for name in $(compgen -e); do env+=("$name=\${!name}"); done
cli_send "\${0##*/}" "$(pwd -P)" "$#" "$@" "\${env[@]}" "$stdin"
`;
  const realGit = spawnSync("bash", ["-c", "command -v git"], { encoding: "utf8" }).stdout.trim();
  const stubs: Record<string, string> = {
    pulumi: forward,
    aws: forward,
    // gh: the stand-in (support/github.ts); a merge into main is a push to main, which runs CI.
    "gh-api": ghStub(),
    gh: `#!/usr/bin/env bash\n${bashSend("$FAKE_SERVER_PORT")}"${path.join(sc.bin, "gh-api")}" "$@" || exit $?\nif [ "$1 $2" = "pr merge" ]; then cli_send push; fi\n`,
    // git: a push is checked as GitHub checks it (pushRefusal) before the real push to the bare origin;
    // a commit without a configured identity is refused as git's ident.c refuses it when it cannot
    // make one up (stricter: the stand-in never makes one up).
    git: `#!/usr/bin/env bash\n${bashSend("$FAKE_SERVER_PORT")}if [ "\${1:-}" = commit ] && { [ -z "$("${realGit}" config user.name)" ] || [ -z "$("${realGit}" config user.email)" ]; }; then { echo "Author identity unknown"; echo; echo "*** Please tell me who you are."; echo; echo "fatal: unable to auto-detect email address"; } >&2; exit 128; fi\nif [ "\${1:-}" != push ]; then exec "${realGit}" "$@"; fi\nmain=$(cli_send git-push "$("${realGit}" rev-parse --abbrev-ref HEAD)" "$@") || exit $?\n"${realGit}" "$@" || exit $?\nif [ "$main" = main ]; then cli_send push; fi\n`,
    npm: `#!/usr/bin/env bash\necho "$*" >> "$FAKE_STATE/npm-argv"\ncase " $* " in *" ci "*) case " $* " in *" --ignore-scripts "*) ;; *) echo "npm ci without --ignore-scripts: install scripts would run where credentials are held" >&2; exit 1 ;; esac ;; esac\n`,
    cargo: "#!/usr/bin/env bash\nexit 0\n",
  };
  for (const [name, text] of Object.entries(stubs)) fs.writeFileSync(path.join(sc.bin, name), text, { mode: 0o755 });
  // A new repository: main unprotected, GitHub's default workflow token (read and write).
  const gh: Github = newRepository({}, { users: { alice: 101, bob: 102 }, protection: {}, workflowPermissions: { default_workflow_permissions: "write", can_approve_pull_request_reviews: true }, origin: path.join(root, "origin.git") });
  fs.writeFileSync(path.join(sc.state, "github.json"), JSON.stringify(gh));
  return sc;
}

/** Answers the stand-ins: a push (CI's run of it), else a `pulumi` or `aws` call. */
async function serve(world: World, sc: Scratch): Promise<{ port: number; close: () => void }> {
  const answer = async (fields: string[]): Promise<CliResult> => {
    if (fields[0] === "git-push") {
      const gh = github(sc);
      const branches = pushedBranches(fields.slice(2), fields[1]!);
      for (const b of branches) {
        const refused = pushRefusal(gh, b);
        if (refused) return { code: 1, stdout: "", stderr: refused };
      }
      return { code: 0, stdout: branches.includes("main") ? "main" : "", stderr: "" };
    }
    if (fields[0] === "push") {
      const r = await world.push(async (stage) => (await sh(sc, world, ME, `node infra-pulumi/ci/check-stack-file.cjs ${stage}`, {}, false)).code === 0);
      return { code: 0, stdout: "", stderr: `CI: ${r.ok ? "deployed" : "failed"}: ${r.detail}\n` };
    }
    // tool, cwd, argc, the arguments, the environment's NAME=value entries, stdin
    const [tool, cwd, argc] = fields as [string, string, string];
    const argv = fields.slice(3, 3 + Number(argc));
    const env = Object.fromEntries(fields.slice(3 + Number(argc), -1).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
    return world.cli(tool, argv, cwd, env, fields.at(-1)!);
  };
  let server: { close: () => void } | undefined;
  const port = await new Promise<number>((resolve) => (server = serveFields(answer, resolve)));
  return { port, close: () => server!.close() };
}

let serverPort = 0;

/**
 * Runs a script as `principal` in the scratch checkout (the facts block first, unless `facts` is
 * false) as a person's paste runs: an interactive bash (`-i`: no errexit, a failed command or
 * expansion does not stop the lines after it, history expansion on), reading the text command by
 * command, with no startup file and an empty prompt. Stopping on a failure is the blocks' own
 * doing (their `&&` chains and `( set -e ... )` subshells). Its stdin is not the text (a command
 * reading stdin would eat the rest of the paste; the stand-ins read their own).
 */
let shCount = 0;
async function sh(sc: Scratch, world: World, principal: string, script: string, env: Record<string, string> = {}, facts = true): Promise<{ code: number; out: string }> {
  const file = path.join(sc.root, `paste-${++shCount}.sh`);
  fs.writeFileSync(file, `${facts ? block("facts") : ""}\n${script}\n`);
  const child = spawn("bash", ["--norc", "--noprofile", "--noediting", "-i", file], {
    cwd: sc.repo,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PS1: "",
      PS2: "",
      HISTFILE: "",
      PATH: `${sc.bin}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: sc.home,
      GIT_CONFIG_NOSYSTEM: "1",
      LANG: "C.UTF-8",
      FAKE_SERVER_PORT: String(serverPort),
      FAKE_STATE: sc.state,
      FAKE_PRINCIPAL: world.sessionOf(principal),
      // The person at the terminal: answers pulumi's "Do you want to perform this update?" with yes.
      FAKE_TERMINAL_ANSWER: "yes",
      PULUMI_CONFIG_PASSPHRASE: "the bootstrap stack's passphrase",
      // One administrator (the doc's APPROVALS=0) unless a test says otherwise.
      APPROVALS: "0",
      // land's wait between polls of a new pull request's checks: time scaled to nothing.
      LAND_POLL_SECONDS: "0",
      GH_TOKEN: "a token that administers acme/sophia",
      ...SECRETS,
      ...env,
    },
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
  return { code, out };
}

const github = (sc: Scratch) => JSON.parse(fs.readFileSync(path.join(sc.state, "github.json"), "utf8")) as Github;
const stackFile = (sc: Scratch, stage: string) => yaml.load(fs.readFileSync(path.join(sc.repo, `Pulumi.${stage}.yaml`), "utf8")) as { secretsprovider?: string; config: Record<string, unknown> };
const refusedIn = (world: World, step: string) => world.decided.filter((d) => d.step === step && d.decision !== "Allowed").map((d) => `${d.action} on ${d.resource} as ${d.principal}`);
const madeIn = (world: World, step: string) => world.decided.filter((d) => d.step.startsWith(step));
/** The requests of a step that could change something (not a Get, List, Describe or Head). */
const writesIn = (world: World, step: string) => madeIn(world, step).filter((d) => !/^[a-z0-9-]+:(Get|List|Describe|Head)/.test(d.action)).map((d) => `${d.action} on ${d.resource}`);

test("docs/deploy.md, run as written: the first deploy from an empty HOME, then the later procedures", async (t) => {
  const sc = scratch();
  const requests = JSON.parse(fs.readFileSync(path.join(__dirname, "rehearsal", "requests.json"), "utf8"));
  const world = new World(ACCOUNT, sc.repo, sc.state, PEOPLE, programFor, requests, [TEST_BREAK_GLASS_ARN]);
  const server = await serve(world, sc);
  serverPort = server.port;
  const step = async (name: string, principal: string, script: string, env: Record<string, string> = {}) => {
    world.step = name;
    return sh(sc, world, principal, script, env);
  };
  try {
    await t.test("a fresh laptop: pulumi login to the bootstrap's file backend fails until its directory exists", async () => {
      assert.deepEqual(fs.readdirSync(sc.home), [], "HOME starts empty");
      const r = await step("fresh login", ME, 'pulumi login "$BOOTSTRAP_BACKEND"');
      assert.notEqual(r.code, 0);
      assert.match(r.out, /no such file or directory/);
      assert.ok(block("first 2").indexOf("mkdir -p") < block("first 2").indexOf("bootstrap_pulumi stack"), "step 2 creates the directory before any pulumi command");
    });

    await t.test("a fresh laptop: git has no identity, so a commit is refused; the preflight names the fix of \"Needs\"", async () => {
      const commit = await step("fresh identity", ME, "git commit -q --allow-empty -m x");
      assert.equal(commit.code, 128);
      assert.match(commit.out, /Author identity unknown/);
      const refused = await step("fresh identity", ME, 'scripts/preflight "$STAGE" --for bootstrap --approvals "$APPROVALS"');
      assert.notEqual(refused.code, 0);
      assert.match(refused.out, /git does not know who you are \(user\.name, user\.email\), and the procedure commits: git config --global user\.name "Your Name" && git config --global user\.email you@example\.com/);
      assert.match(DOC, /`git config --global user\.name "Your\s+Name"` and `git config --global user\.email you@example\.com`/, "Needs says it");
      const fixed = await step("fresh identity", ME, 'git config --global user.name "A Person" && git config --global user.email person@example.com');
      assert.equal(fixed.code, 0, fixed.out);
    });

    await t.test("the facts stop without APPROVALS, and step 2 pasted after them runs nothing (an interactive shell goes on after a failed line)", async () => {
      const calls = () => (fs.existsSync(path.join(sc.state, "gh-argv")) ? fs.readFileSync(path.join(sc.state, "gh-argv"), "utf8") : "");
      const before = calls();
      // What a paste without the && chain and the ( set -e ) would do: the next line runs anyway.
      const unchained = await sh(sc, world, ME, 'X=${APPROVALS:?unset}\necho "the next line ran"', { APPROVALS: "" }, false);
      assert.match(unchained.out, /the next line ran/, "bash -i goes on after a failed expansion");
      const r = await step("facts without APPROVALS", ME, block("first 2"), { APPROVALS: "" });
      assert.notEqual(r.code, 0);
      assert.match(r.out, /set APPROVALS=1 when someone else reviews your pull requests, 0 when you are alone/);
      assert.match(r.out, /FACTS_OK: paste the facts block first: it stopped, or this is a new shell/);
      assert.doesNotMatch(r.out, /the next line ran/);
      assert.equal(calls(), before, "no gh call: the facts stopped before gh repo view, step 2 before protect-environments");
      assert.ok(!fs.existsSync(path.join(sc.home, ".sophia-bootstrap-state")), "step 2's first line did not run");
      assert.equal(world.bootstrap, undefined);
    });

    await t.test("a push before the environment is set up: GitHub creates `dev` unprotected, the deploy has no role", async () => {
      const r = await step("early push", ME, "git commit -q --allow-empty -m early && git push -q origin HEAD:main", {});
      assert.equal(r.code, 0, r.out);
      const ci = world.ci.at(-1)!;
      assert.deepEqual([ci.environmentCreatedOnFirstUse, ci.ok], [true, false]);
      assert.match(ci.detail, /AWS_DEPLOY_ROLE_ARN is empty/);
      assert.equal(github(sc).environments["dev"]!.deployment_branch_policy, null, "any branch could name it");
      const first = [...BLOCKS.keys()].filter((k) => k.startsWith("first "));
      const landAt = first.findIndex((k) => /^land /m.test(block(k)));
      const variablesAt = first.findIndex((k) => /^set_variable /m.test(block(k)));
      assert.ok(variablesAt >= 0 && variablesAt < landAt, `the repository variables come before the first merge (${first.join(", ")})`);
      const two = block("first 2");
      const protectAt = two.indexOf('scripts/protect-environments "$STAGE" --apply');
      assert.ok(protectAt >= 0 && protectAt < two.indexOf("bootstrap_pulumi up"), "no trust before protection: step 2 protects the environment before the bootstrap creates the role that trusts it");
      assert.ok(!/git push origin HEAD:main|git push[^\n]*\bmain\b/.test([...BLOCKS.values()].join("\n").replace(/^land\(\) \{[\s\S]*?^\}/m, "")), "no block pushes to main: main is protected from step 2 on");
    });

    await t.test("step 2 with GitHub not yet protected: the preflight refuses the bootstrap (no role trusts an unprotected environment)", async () => {
      const unprotected = block("first 2").split("\n").filter((l) => !l.startsWith("scripts/protect-environments")).join("\n");
      const r = await step("first 2 unprotected", ME, unprotected, { APPROVALS: "0" });
      assert.notEqual(r.code, 0);
      assert.match(r.out, /the GitHub environment of dev is not protected yet, and the bootstrap would create a role that trusts it/);
      assert.equal(world.bootstrap, undefined, "no bootstrap ran");
      // Step 5 pasted now: its preflight refuses, and land (the pull request whose merge deploys) does not run.
      const five = await step("first 5 early", ME, block("first 5"), { APPROVALS: "0" });
      assert.notEqual(five.code, 0);
      assert.match(five.out, /preflight dev \(push\): refused/);
      assert.equal((github(sc).pulls ?? []).length, 0, "no pull request: the refusal stopped the block");
    });

    await t.test("step 2, the account, as the break-glass administrator, alone (APPROVALS=0): GitHub protected first, every request allowed, KMS's lockout check passed", async () => {
      const r = await step("first 2", ME, block("first 2"), { APPROVALS: "0" });
      assert.equal(r.code, 0, r.out);
      const gh = github(sc);
      assert.deepEqual(gh.environments["dev"]!.branchPolicies.map((b) => b.name), ["main"]);
      assert.equal(gh.protection["main"]!.required_pull_request_reviews!.required_approving_review_count, 0);
      assert.equal(gh.protection["main"]!.enforce_admins.enabled, true);
      assert.ok(fs.existsSync(path.join(sc.home, ".sophia-bootstrap-state")));
      assert.match(r.out, new RegExp(deployRoleArn(P, ACCOUNT, "dev").replace(/[/.]/g, "\\$&")));
      assert.deepEqual(refusedIn(world, "first 2"), []);
      // pulumi stack output loads the bootstrap stack's passphrase provider too (stack_output.go):
      const blind = await sh(sc, world, ME, '(cd infra-bootstrap && PULUMI_BACKEND_URL="file://$HOME/.sophia-bootstrap-state" pulumi stack output --json --stack account-main)', { PULUMI_CONFIG_PASSPHRASE: "" }, false);
      assert.notEqual(blind.code, 0);
      assert.match(blind.out, /passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE/);
      assert.ok(madeIn(world, "first 2").filter((d) => d.action === "kms:PutKeyPolicy").length >= 2, "the lockout check of both keys");
      assert.ok(fs.readFileSync(path.join(sc.state, "npm-argv"), "utf8").split("\n").filter(Boolean).every((l) => l.includes("--ignore-scripts")));
    });

    await t.test("step 3 by an administrator outside the bootstrap's key list: refused before anything changes, naming the fix", async () => {
      const r = await step("first 3 other", OTHER, block("first 3"));
      assert.notEqual(r.code, 0);
      assert.match(r.out, /not in sophia-bootstrap:keyAdministrators/);
      assert.match(r.out, /Add arn:aws:iam::\d{12}:role\/<path>\/AWSReservedSSO_AdministratorAccess_0123456789abcdef/);
      assert.deepEqual(writesIn(world, "first 3 other"), [], "nothing but reads");
      assert.equal(git(sc.repo, "status", "--porcelain", "--", "Pulumi.dev.yaml"), "");
    });

    await t.test("step 3 as the administrator of step 2: the stack under the stage's key, the environment protected, nothing pushed", async () => {
      const pushes = world.ci.length;
      const r = await step("first 3", ME, block("first 3"));
      assert.equal(r.code, 0, r.out);
      assert.deepEqual(refusedIn(world, "first 3"), []);
      const file = stackFile(sc, "dev");
      assert.match(file.secretsprovider ?? "", /^awskms:\/\/alias\/sophia-dev-pulumi-secrets/);
      assert.deepEqual(file.config["sophia:kmsKeyAdministrators"], [ME]);
      assert.deepEqual(file.config["aws:allowedAccountIds"], [ACCOUNT]);
      assert.deepEqual(missingKeys("dev", file), []);
      const gh = github(sc);
      assert.deepEqual(gh.environments["dev"]!.branchPolicies.map((b) => b.name), ["main"]);
      assert.equal(gh.environments["dev"]!.variables["AWS_DEPLOY_ROLE_ARN"], deployRoleArn(P, ACCOUNT, "dev"));
      assert.deepEqual(Object.keys(gh.repoVariables).sort(), ["AWS_PREVIEW_ROLE_ARN", "AWS_REGION", "PULUMI_BACKEND_URL"]);
      assert.match(git(sc.repo, "log", "-1", "--format=%s"), /Stage dev: bootstrap config/);
      committedAtStep3 = fs.readFileSync(path.join(sc.repo, "Pulumi.dev.yaml"), "utf8");
      assert.equal(world.ci.length, pushes, "nothing deployed yet");
    });

    await t.test("step 4 by an administrator outside the key lists: the preflight refuses; without it the deploy would stop half done", async () => {
      const r = await step("first 4 other", OTHER, block("first 4"));
      assert.notEqual(r.code, 0);
      assert.match(r.out, /not in sophia:kmsKeyAdministrators of Pulumi\.dev\.yaml/);
      assert.deepEqual(writesIn(world, "first 4 other"), [], "nothing but reads");
      // What `pulumi up` would have met without the preflight (evaluated, nothing changed):
      world.step = "first 4 other, unchecked";
      const refused = await world.stageRequests("dev", stackFile(sc, "dev"), OTHER, ["create"], true);
      const made = madeIn(world, "first 4 other, unchecked");
      assert.ok(made.some((d) => d.action === "kms:PutKeyPolicy" && d.decision === "Allowed"), "the stage key's policy would land");
      for (const readBack of ["kms:GetKeyPolicy", "kms:DescribeKey", "kms:GetKeyRotationStatus", "kms:ListResourceTags", "secretsmanager:GetResourcePolicy", "secretsmanager:PutSecretValue"]) {
        assert.ok(refused.some((x) => x.startsWith(`${readBack} `)), `${readBack} refused after the policies land: ${refused.join("; ")}`);
      }
      assert.ok(refused.some((x) => x.startsWith("kms:Decrypt on arn:aws:kms:eu-west-1:") && x.includes("state-key")), "the state key names no such administrator either");
    });

    await t.test("step 4 as you: preview and deploy, every request allowed", async () => {
      const r = await step("first 4", ME, block("first 4"));
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /preflight dev \(deploy\): ready/);
      assert.deepEqual(refusedIn(world, "first 4"), []);
      assert.ok(madeIn(world, "first 4").length > 300, `${madeIn(world, "first 4").length} requests`);
    });

    await t.test("step 5 as a push to main, as the doc once said: GitHub refuses it (GH006), nothing deploys", async () => {
      const deploys = world.ci.length;
      const r = await step("push to main", ME, "git push origin HEAD:main");
      assert.notEqual(r.code, 0);
      assert.match(r.out, /GH006: Protected branch update failed for refs\/heads\/main\.\nremote: error: Changes must be made through a pull request\./);
      assert.equal(world.ci.length, deploys);
    });

    await t.test("gh pr create --fill on a branch pushed as HEAD:refs/heads/<branch> (no local branch): gh fails computing the defaults; land gives the title and body", async () => {
      const r = await step("fill", ME, 'git push -q origin HEAD:refs/heads/stage-fill && gh pr create --base main --head stage-fill --fill');
      assert.notEqual(r.code, 0);
      assert.match(r.out, /could not compute title or body defaults: failed to run git: fatal: ambiguous argument 'origin\/main\.\.\.stage-fill'/);
      const bare = await step("fill", ME, "gh pr create --base main --head stage-fill");
      assert.match(bare.out, /must provide `--title` and `--body` \(or `--fill`/, "without a terminal gh needs one or the other");
      assert.equal((github(sc).pulls ?? []).length, 0);
      assert.match(block("facts"), /gh pr create --base main --head "\$1" --title "[^"]+" --body "[^"]+"/);
      assert.doesNotMatch(block("facts"), /^\s*gh pr create[^\n]*--fill/m);
      git(path.join(sc.root, "origin.git"), "update-ref", "-d", "refs/heads/stage-fill");
    });

    await t.test("step 5: a pull request, merged by its author alone (APPROVALS=0), hands over to CI, which deploys as the deploy role", async () => {
      const r = await step("first 5", ME, block("first 5"), { APPROVALS: "0" });
      assert.equal(r.code, 0, r.out);
      const gh = github(sc);
      assert.deepEqual(gh.pulls!.map((p) => [p.head, p.state, p.author]), [["stage-dev", "MERGED", "alice"]]);
      const polls = fs.readFileSync(path.join(sc.state, "gh-argv"), "utf8").split("\n").filter((l) => l.startsWith("pr checks stage-dev"));
      assert.equal(polls.length, 3, "land met gh's 'no checks reported' (no workflow started), then 'no required checks reported' (none required yet), and polled again");
      assert.match(r.out, /^scripts\/test against a MongoDB 7 replica set\tpass$/m, "land lets gh's watch of the checks reach the terminal");
      assert.match(git(path.join(sc.root, "origin.git"), "show", "main:Pulumi.dev.yaml"), /^secretsprovider: awskms:/m, "step 3's commit is on main");
      // Step 2's commit too: the bootstrap's settings (no secret), so a new clone can run the later procedures.
      const settings = git(path.join(sc.root, "origin.git"), "show", "main:infra-bootstrap/Pulumi.account-main.yaml");
      assert.match(settings, /sophia-bootstrap:keyAdministrators/);
      assert.doesNotMatch(settings, /secure:/, "the bootstrap's settings hold no secret");
      const ci = world.ci.at(-1)!;
      assert.ok(ci.ok, ci.detail);
      const asRole = madeIn(world, "first 5 / CI");
      assert.ok(asRole.length > 300, `${asRole.length} requests as the deploy role`);
      assert.deepEqual([...new Set(asRole.map((d) => d.principal))], [deployRoleArn(P, ACCOUNT, "dev")]);
      assert.deepEqual(refusedIn(world, "first 5 / CI"), []);
    });

    await t.test("after the first merge `production` exists, unprotected (infra.yml's deploy-prod named it): a bootstrap whose list holds prod is refused until it is protected", async () => {
      const production = github(sc).environments["production"];
      assert.ok(production, "deploy-prod created it");
      assert.equal(production.deployment_branch_policy, null, "unprotected: any branch could name it");
      const file = path.join(sc.repo, "infra-bootstrap", "Pulumi.account-main.yaml");
      const kept = fs.readFileSync(file, "utf8");
      try {
        const r = await step("production unprotected", ME, `bootstrap_add_stage ${PRODUCTION_STAGE}\nscripts/preflight dev --for bootstrap --approvals "$APPROVALS"`, { APPROVALS: "0" });
        assert.notEqual(r.code, 0);
        assert.match(r.out, new RegExp(`the GitHub environment of ${PRODUCTION_STAGE} is not protected yet, and the bootstrap would create a role that trusts it`));
        assert.match(r.out, /environment 'production'/, "the production stage's environment is production");
        assert.doesNotMatch(r.out, /the GitHub environment of dev is not protected/, "dev is");
        // The trust's repository is the checkout's: a hand-edited one is refused.
        const other = await step("production unprotected", ME, 'bootstrap_pulumi config set sophia-bootstrap:githubRepository acme/other\nscripts/preflight dev --for bootstrap --approvals "$APPROVALS"', { APPROVALS: "0" });
        assert.match(other.out, /sophia-bootstrap:githubRepository is acme\/other, but this checkout is acme\/sophia/);
      } finally {
        fs.writeFileSync(file, kept);
      }
    });

    await t.test("later: a code-only deploy from a laptop", async () => {
      const r = await step("later code", ME, block("later code"));
      assert.equal(r.code, 0, r.out);
      assert.deepEqual(refusedIn(world, "later code"), []);
    });

    await t.test("later: a new layer without rerunning the bootstrap is refused by the preflight; CI would be refused GetLayerVersion", async () => {
      const layer = /^NEW_LAYER=(\S+)$/m.exec(block("later layer"))![1]!;
      const plain = await step("layer, no --plaintext", ME, `pulumi config set sophia:secretsExtensionLayerArn ${layer} --stack dev`);
      assert.notEqual(plain.code, 0, "pulumi refuses a plaintext value for a key named like a secret");
      assert.match(plain.out, /config value for 'sophia:secretsExtensionLayerArn' looks like a secret; rerun with --secret to encrypt it, or --plaintext/);
      const r = await step("layer, no bootstrap", ME, `pulumi config set --plaintext sophia:secretsExtensionLayerArn ${layer} --stack dev\ngit commit -qm layer -- Pulumi.dev.yaml\nscripts/preflight dev --for push --approvals 0`);
      assert.notEqual(r.code, 0);
      assert.match(r.out, /grants the dev deploy role \S+:19, but Pulumi\.dev\.yaml uses \S+:20: rerun step 2's pulumi up.*Bumping the extension layer/);
      world.step = "layer, no bootstrap, CI";
      const refused = await world.stageRequests("dev", stackFile(sc, "dev"), deployRoleArn(P, ACCOUNT, "dev"), ["read", "update"], true);
      assert.ok(refused.some((x) => x.startsWith(`lambda:GetLayerVersion on ${layer}`)), refused.join("; "));
      git(sc.repo, "reset", "-q", "--hard", "HEAD~1");
    });

    await t.test("later: bumping the extension layer, as written, by a team (APPROVALS=1): the author cannot approve, a second person does, then it lands", async () => {
      const team = await step("team", ME, 'scripts/protect-environments dev --apply --approvals 1 --deploy-role-arn "arn:aws:iam::$ACCOUNT:role/sophia-bootstrap/sophia-bootstrap-dev-deploy"');
      assert.equal(team.code, 0, team.out);
      const deploys = world.ci.length;
      const first = await step("later layer", ME, block("later layer"), { APPROVALS: "1" });
      assert.notEqual(first.code, 0, "land stops at the review");
      assert.match(first.out, /land: stage-dev-layer-20 needs an approving review by someone else/);
      assert.equal(world.ci.length, deploys, "nothing merged, nothing deployed");
      const self = await step("later layer", ME, "gh pr review stage-dev-layer-20 --approve");
      assert.notEqual(self.code, 0);
      assert.match(self.out, /Can not approve your own pull request/);
      const merge = await step("later layer", ME, "gh pr merge stage-dev-layer-20 --merge");
      assert.match(merge.out, /is not mergeable: the base branch policy prohibits the merge/);
      const bob = await step("later layer", ME, "gh pr review stage-dev-layer-20 --approve", { FAKE_GH_USER: "bob" });
      assert.equal(bob.code, 0, bob.out);
      const r = await step("later layer", ME, 'land "stage-dev-layer-20"', { APPROVALS: "1" });
      assert.equal(r.code, 0, r.out);
      assert.equal(world.ci.length, deploys + 1);
      assert.ok(world.ci.at(-1)!.ok, world.ci.at(-1)!.detail);
      // The branch's name again later: gh pr view finds the merged pull request, land opens a new one.
      const again = await step("later layer, again", ME, 'git commit -q --allow-empty -m again\ngh pr view stage-dev-layer-20 --json state --jq .state\nland stage-dev-layer-20 || echo "stopped at the review"', { APPROVALS: "1" });
      assert.equal(again.code, 0, again.out);
      assert.match(again.out, /^MERGED$/m);
      assert.match(again.out, /stopped at the review/);
      assert.deepEqual(github(sc).pulls!.filter((p) => p.head === "stage-dev-layer-20").map((p) => p.state), ["MERGED", "OPEN"]);
      assert.deepEqual(refusedIn(world, "later layer"), []);
      assert.deepEqual(refusedIn(world, "later layer / CI"), []);
    });

    await t.test("later: rotating the break-glass principal, run by the re-provisioned role (the pattern keeps the bootstrap's keys)", async () => {
      const state = world.bootstrap!;
      // Without breakGlassRoles the re-provisioned role would be locked out of the state key:
      const exact = stateKeyPolicy({ admins: [ME], writers: [], readers: [], region: state.region }) as unknown as Doc;
      assert.notEqual((await decide({ principal: REPROVISIONED, action: "kms:PutKeyPolicy", resource: state.stateKey }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: exact })).decision, "Allowed");
      const review = 'land "stage-dev-administrator" || echo "waiting for a review"';
      const opened = await step("later rotate", REPROVISIONED, block("later rotate").replace(/^land .*$/m, review), { APPROVALS: "1" });
      assert.equal(opened.code, 0, opened.out);
      assert.equal((await step("later rotate", REPROVISIONED, "gh pr review stage-dev-administrator --approve", { FAKE_GH_USER: "bob" })).code, 0);
      const r = await step("later rotate", REPROVISIONED, 'land "stage-dev-administrator"', { APPROVALS: "1" });
      assert.equal(r.code, 0, r.out);
      assert.deepEqual(refusedIn(world, "later rotate"), []);
      assert.ok(world.ci.at(-1)!.ok, world.ci.at(-1)!.detail);
      assert.ok(JSON.stringify(world.stages.get("dev")!.keyPolicy).includes(REPROVISIONED), "CI wrote the new administrator into the stage key's policy");
      assert.ok(!JSON.stringify(world.stages.get("dev")!.keyPolicy).includes(ME));
    });

    await t.test("later: adding a stage", async () => {
      const r = await step("later stage", REPROVISIONED, block("later stage"), { APPROVALS: "1" });
      assert.equal(r.code, 0, r.out);
      assert.deepEqual(refusedIn(world, "later stage"), []);
      assert.deepEqual(world.bootstrap!.stages, ["dev", "qa"]);
      assert.deepEqual(missingKeys("qa", stackFile(sc, "qa")), []);
      assert.ok(world.stages.has("qa"));
      assert.ok(github(sc).environments["qa"]!.branchPolicies.some((b) => b.name === "main"));
    });

    await t.test("prod-rs in dev's account: its settings, then steps 2 to 5 with STAGE=prod-rs (declarations/stages.json) and REVIEWER, every request allowed, dev and qa kept", async () => {
      const who = REPROVISIONED; // the administrator since the rotation
      const env = { APPROVALS: "1", REVIEWER: "user:bob" };
      const PROD = PRODUCTION_STAGE;
      const prod = (b: string) => `STAGE=${PROD}\n${block(b)}`;
      assert.equal((await step("prod 1", who, block("prod 1"), env)).code, 0);
      assert.deepEqual(Object.keys(stackFile(sc, PROD).config).sort(), ["aws:region", "sophia:architecture", "sophia:mongodbDatabase", "sophia:secretsExtensionLayerArn"], "only what a person writes");
      const two = await step("prod 2", who, prod("first 2"), env);
      assert.equal(two.code, 0, two.out);
      assert.deepEqual(world.bootstrap!.stages, ["dev", "qa", PROD], "step 2 adds the production stage, keeping the stages before it");
      // What `pulumi config get --json` prints (pulumi's configValueJSON): an object, the list in objectValue.
      const got = await step("prod 2", who, 'bootstrap_pulumi config get sophia-bootstrap:stages --json --stack "$BOOTSTRAP_STACK"', env);
      assert.deepEqual(JSON.parse(got.out.slice(got.out.indexOf("{"))), { value: JSON.stringify(["dev", "qa", PROD]), objectValue: ["dev", "qa", PROD], secret: false });
      const production = github(sc).environments["production"]!;
      assert.deepEqual([production.reviewers, production.prevent_self_review], [[{ type: "User", id: 102 }], true]);
      assert.deepEqual(production.branchPolicies.map((b) => b.name), ["main"]);
      const three = await step("prod 3", who, prod("first 3"), env);
      assert.equal(three.code, 0, three.out);
      assert.deepEqual(missingKeys(PROD, stackFile(sc, PROD)), [], "the template and step 3's keys pass check-stack-file");
      assert.equal(github(sc).environments["production"]!.variables["AWS_PROD_DEPLOY_ROLE_ARN"], deployRoleArn(P, ACCOUNT, PROD));
      const four = await step("prod 4", who, prod("first 4"), env);
      assert.equal(four.code, 0, four.out);
      assert.ok(world.stages.has(PROD));
      const five = await step("prod 5", who, prod("first 5").replace(/^land .*$/m, 'land "stage-$STAGE" || echo "waiting for a review"'), env);
      assert.equal(five.code, 0, five.out);
      assert.match(five.out, new RegExp(`land: stage-${PROD} needs an approving review by someone else`));
      assert.equal((await step("prod 5", who, `gh pr review stage-${PROD} --approve`, { FAKE_GH_USER: "bob" })).code, 0);
      const landed = await step("prod 5", who, `land "stage-${PROD}"`, env);
      assert.equal(landed.code, 0, landed.out);
      assert.match(git(path.join(sc.root, "origin.git"), "show", `main:Pulumi.${PROD}.yaml`), /^secretsprovider: awskms:/m);
      assert.match(git(path.join(sc.root, "origin.git"), "show", "main:infra-bootstrap/Pulumi.account-main.yaml"), /- prod-rs$/m, "prod's step 2 commits the bootstrap's stage list");
      for (const s of ["prod 1", "prod 2", "prod 3", "prod 4", "prod 5"]) assert.deepEqual(refusedIn(world, s), [], s);
    });

    await t.test("prod in its own account: the doc's production-environment variables override the repository's (dev's) for prod's job only", async () => {
      const own = /\*\*In its own account\*\*[\s\S]*?```bash\n([\s\S]*?)```/.exec(DOC)![1]!;
      assert.match(own, /^export AWS_PROFILE=\S+ BOOTSTRAP_STACK=account-prod BOOTSTRAP_BACKEND="file:\/\/\$HOME\/\.sophia-bootstrap-state-prod"\s/m, "a second bootstrap stack and backend, before the facts");
      const lines = own.split("\n").filter((l) => l.startsWith("set_variable "));
      assert.deepEqual(lines.map((l) => l.split(" ")[1]), ["PULUMI_BACKEND_URL", "AWS_REGION"]);
      assert.ok(lines.every((l) => l.endsWith(" --env production")), "both on the production environment");
      // Run here against this account's bootstrap (the stand-in world has one account): the values land on production.
      const before = { ...github(sc).repoVariables };
      const r = await step("prod own account", REPROVISIONED, lines.join("\n"));
      assert.equal(r.code, 0, r.out);
      const gh = github(sc);
      assert.deepEqual(gh.repoVariables, before, "the repository's variables stay dev's");
      assert.equal(gh.environments["production"]!.variables["PULUMI_BACKEND_URL"], before["PULUMI_BACKEND_URL"]);
      assert.equal(gh.environments["production"]!.variables["AWS_REGION"], "eu-west-1");
    });

    await t.test("land with APPROVALS=0 on a main that needs a review: gh refuses the merge and land fails; an explicit --approvals 0 lowers main's count, then it lands", async () => {
      const deploys = world.ci.length;
      const refused = await step("land refused", REPROVISIONED, 'git commit -q --allow-empty -m solo\nland stage-solo', { APPROVALS: "0" });
      assert.notEqual(refused.code, 0, "a refused merge fails land");
      assert.match(refused.out, /is not mergeable: the base branch policy prohibits the merge/);
      assert.equal(world.ci.length, deploys);
      const lowered = await step("land refused", REPROVISIONED, 'scripts/protect-environments dev --apply --approvals "$APPROVALS" --deploy-role-arn "arn:aws:iam::$ACCOUNT:role/sophia-bootstrap/sophia-bootstrap-dev-deploy"\nland stage-solo', { APPROVALS: "0" });
      assert.equal(lowered.code, 0, lowered.out);
      assert.equal(github(sc).protection["main"]!.required_pull_request_reviews!.required_approving_review_count, 0);
      assert.equal(world.ci.length, deploys + 1);
    });

    await t.test("land names the required check that failed (gh pr checks --watch exits 1 with nothing on stderr), and set_variable refuses an empty value before gh runs", async () => {
      const gh = github(sc);
      fs.writeFileSync(path.join(sc.state, "github.json"), JSON.stringify({ ...gh, checks: "fail" }));
      const deploys = world.ci.length;
      const failed = await step("land, a check fails", REPROVISIONED, "git commit -q --allow-empty -m broken\nland stage-broken", { APPROVALS: "0" });
      assert.notEqual(failed.code, 0);
      assert.match(failed.out, /land: a required check of stage-broken failed:\n {2}scripts\/test against a MongoDB 7 replica set \(fail\)\n {2}scripts\/lint [^\n]* \(fail\)\n/);
      assert.match(failed.out, /fix it, commit, then: land stage-broken/);
      assert.equal(world.ci.length, deploys, "nothing merged");
      fs.writeFileSync(path.join(sc.state, "github.json"), JSON.stringify({ ...github(sc), checks: "pass" }));
      // A failed $(bootstrap_output ...) inside the arguments: set_variable stops, gh is never asked.
      const before = { ...github(sc).repoVariables };
      const empty = await step("set_variable, empty", REPROVISIONED, "set_variable AWS_PREVIEW_ROLE_ARN \"$(bootstrap_output NO_SUCH_OUTPUT)\"");
      assert.notEqual(empty.code, 0);
      assert.match(empty.out, /refusing to set AWS_PREVIEW_ROLE_ARN to an empty value/);
      assert.deepEqual(github(sc).repoVariables, before);
      // The stand-in refuses the empty --body the real gh would prompt for (or read from stdin).
      const bare = await step("gh variable set, empty", REPROVISIONED, 'gh variable set AWS_REGION --body ""');
      assert.notEqual(bare.code, 0);
      assert.match(bare.out, /empty --body: the real gh would prompt "Paste your variable" or read stdin/);
    });
  } finally {
    server.close();
    fs.rmSync(sc.root, { recursive: true, force: true });
  }
});

test("CI after step 3's commit: every test of the test job that reads a stack file passes on step 3's Pulumi.dev.yaml", async (t) => {
  if (process.env["SOPHIA_TEST_STACK_FILES"]) {
    t.skip("SKIPPED: this is the nested run on step 3's stack file");
    return;
  }
  assert.ok(committedAtStep3, "the walk above ran step 3");
  assert.match(committedAtStep3, /^secretsprovider: awskms:/m);
  assert.match(committedAtStep3, /aws:allowedAccountIds/);
  assert.match(committedAtStep3, /sophia:kmsKeyAdministrators/);
  assert.match(committedAtStep3, /secure: /);
  // The test job (.github/workflows/infra.yml: scripts/test-infra, npm test) reads stack files only
  // through these files; any other test naming a stack file must join them.
  const testDir = __dirname;
  const readers = fs.readdirSync(testDir).filter((f) => f.endsWith(".test.ts")).filter((f) => {
    const text = fs.readFileSync(path.join(testDir, f), "utf8");
    return /stackFile: true|stackFileConfig\(|SOPHIA_TEST_STACK_FILES/.test(text);
  });
  for (const f of fs.readdirSync(testDir).filter((x) => x.endsWith(".test.ts") && !readers.includes(x))) {
    assert.doesNotMatch(fs.readFileSync(path.join(testDir, f), "utf8"), /REPO_ROOT, "Pulumi\.dev\.yaml"|"\.\.", "Pulumi\.dev\.yaml"/, `${f} reads Pulumi.dev.yaml outside SOPHIA_TEST_STACK_FILES`);
  }
  assert.ok(readers.includes("dev.test.ts") && readers.includes("config.test.ts") && readers.includes("deploy-doc.test.ts"), readers.join(" "));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-step3-"));
  try {
    fs.writeFileSync(path.join(dir, "Pulumi.dev.yaml"), committedAtStep3);
    // The other jobs' steps that read the committed stack file, run on step 3's: the build job's
    // architecture check (shell, in a directory holding only that file) and the preview and deploy
    // jobs' check-stack-file.
    const { workflow } = loadWorkflow("infra.yml");
    const archStep = workflow.jobs["build"]!.steps.find((st) => st.name?.startsWith("One artifact for every stage"));
    assert.ok(archStep?.run, "infra.yml's build job checks the stages' architecture");
    // The step reads the workflow's env (PRODUCTION_STAGE), as GitHub gives it.
    const workflowEnv = (workflow as unknown as { env: Record<string, string> }).env;
    const arch = spawnSync("bash", ["-euo", "pipefail", "-c", archStep.run], { cwd: dir, encoding: "utf8", env: { ...process.env, PRODUCTION_STAGE: workflowEnv["PRODUCTION_STAGE"]! } });
    assert.equal(arch.status, 0, arch.stdout + arch.stderr);
    const checked = spawnSync(process.execPath, [path.join(REPO_ROOT, "infra-pulumi", "ci", "check-stack-file.cjs"), "dev", "--file", path.join(dir, "Pulumi.dev.yaml")], { encoding: "utf8" });
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    const child = spawn(process.execPath, ["--import", "tsx", "--test", ...readers.map((f) => path.join(testDir, f))], {
      cwd: path.join(testDir, ".."),
      // Not NODE_TEST_CONTEXT: the runner would then report to this process in its own protocol.
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NODE_TEST_CONTEXT")), SOPHIA_TEST_STACK_FILES: dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
    assert.equal(code, 0, out.split("\n").filter((l) => /not ok|Error|expected|actual/.test(l)).slice(0, 40).join("\n"));
    assert.match(out, /# fail 0/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------------
// What the doc says, held to the code.

test("the doc's tool list is scripts/preflight's", () => {
  const preflight = fs.readFileSync(path.join(REPO_ROOT, "scripts", "preflight"), "utf8");
  const tools = /^# TOOLS: (.+)$/m.exec(preflight)![1]!.split(" ");
  const listed = [...preflight.matchAll(/tools(?:=\(|\+=\()([a-z0-9 ]+)\)/g)].flatMap((m) => m[1]!.split(" "));
  assert.deepEqual([...new Set(listed)].sort(), [...tools].sort(), "TOOLS names what the script checks");
  const needs = /Needs \(what `scripts\/preflight` checks[\s\S]*?\n\n/.exec(DOC)![0];
  const named = [...needs.matchAll(/`([a-z0-9]+)`/g)].map((m) => m[1]!).filter((w) => w !== "venv");
  assert.deepEqual([...new Set(named)].sort(), [...tools].sort());
});

test("a missing tool is refused with the fix, all refusals at once, before anything runs", () => {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-preflight-bin-"));
  try {
    for (const tool of ["node", "npm", "git", "python3", "sed", "awk", "cut", "tr", "dirname", "head", "cat", "grep", "basename"]) {
      const found = spawnSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
      if (found) fs.symlinkSync(found, path.join(bin, tool));
    }
    const r = spawnSync("/bin/bash", [path.join(REPO_ROOT, "scripts", "preflight"), "dev", "--for", "deploy"], { encoding: "utf8", env: { PATH: bin, HOME: bin } });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /pulumi is not installed: install the Pulumi CLI/);
    assert.match(r.stderr, /aws is not installed: install the AWS CLI v2/);
    assert.match(r.stderr, /cargo is not installed: install Rust with rustup/);
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
});

test("every bootstrap output the docs name exists (outputNames)", () => {
  const names = new Set(outputNames({ stages: ["dev", "prod"], previewStage: "dev", backend: "s3" }));
  for (const file of ["docs/deploy.md", "infra-pulumi/README.md", "README.md"]) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), "utf8");
    for (const m of text.matchAll(/\b((?:DEV|PROD|QA)_(?:DEPLOY_ROLE_ARN|SECRETS_PROVIDER|EXTENSION_LAYER_ARN)|PREVIEW_ROLE_ARN|OIDC_PROVIDER_ARN)\b/g)) {
      assert.ok(names.has(m[1]!.replace(/^QA_/, "DEV_")), `${file} names ${m[1]}, not an output of infra-bootstrap`);
    }
  }
});

test("every stack-file block of the docs passes check-stack-file", () => {
  let count = 0;
  for (const file of ["docs/deploy.md", "infra-pulumi/README.md", "README.md", "docs/runbook.md"]) {
    const p = path.join(REPO_ROOT, file);
    if (!fs.existsSync(p)) continue;
    for (const m of fs.readFileSync(p, "utf8").matchAll(/```yaml\n# Pulumi\.([a-z0-9-]+)\.yaml\n([\s\S]*?)```/g)) {
      count++;
      assert.deepEqual(missingKeys(m[1]!, yaml.load(m[2]!)), [], `${file}: the Pulumi.${m[1]}.yaml block`);
    }
  }
  assert.ok(count >= 1);
});

test("the docs' commands: npm ci --ignore-scripts; the bootstrap's outputs and commands on the bootstrap's backend", () => {
  for (const file of ["docs/deploy.md", "infra-pulumi/README.md"]) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), "utf8");
    for (const line of text.split("\n").filter((l) => /\bnpm ci\b/.test(l) && !l.trimStart().startsWith("|"))) {
      if (/`npm ci --ignore-scripts`|npm ci --ignore-scripts/.test(line)) continue;
      assert.fail(`${file}: npm ci without --ignore-scripts: ${line}`);
    }
    for (const line of text.split("\n").filter((l) => /cd infra-bootstrap.*pulumi |infra-bootstrap && pulumi/.test(l))) {
      assert.match(line, /PULUMI_BACKEND_URL=/, `${file}: a bootstrap pulumi command without the bootstrap's backend: ${line}`);
    }
  }
  const steps = [...BLOCKS.keys()];
  assert.deepEqual(steps.slice(0, 7), ["facts", "first 2", "first 3", "first 4", "first 5", "prod 1", "later code"]);
  assert.ok(steps.includes("later layer") && steps.includes("later rotate") && steps.includes("later stage"));
});

test("every platform the doc says the build runs on has a hashed wheel of each build tool (scripts/requirements-build.txt)", () => {
  const named = /^The build runs on: (.+)\.$/m.exec(DOC);
  assert.ok(named, "docs/deploy.md names the build's platforms");
  const platforms = named[1]!.split(", ").map((p) => {
    const m = /^(Linux|macOS (\d+)\+) (x86_64|aarch64|arm64)$/.exec(p);
    assert.ok(m, `a platform as "Linux <arch>" or "macOS <version>+ <arch>": ${p}`);
    return { name: p, os: m[1]!.startsWith("Linux") ? "linux" : "macos", macos: Number(m[2] ?? 0), arch: m[3]! };
  });
  assert.deepEqual(platforms.map((p) => `${p.os} ${p.arch}`).sort(), ["linux aarch64", "linux x86_64", "macos arm64", "macos x86_64"]);
  const req = fs.readFileSync(path.join(REPO_ROOT, "scripts", "requirements-build.txt"), "utf8");
  const wheels = [...req.matchAll(/^# wheel: ([0-9a-f]{64}) (\S+\.whl)$/gm)].map((m) => ({ hash: m[1]!, file: m[2]! }));
  const pins = [...req.matchAll(/^([a-z0-9-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n?)+)/gm)].map((m) => ({ name: m[1]!, version: m[2]!, hashes: [...m[3]!.matchAll(/sha256:([0-9a-f]{64})/g)].map((h) => h[1]!) }));
  assert.deepEqual(pins.map((p) => p.name), ["cargo-lambda", "ziglang"]);
  // A wheel's platform tags (PEP 425: the last dash-separated field, dot-separated alternatives).
  const fits = (file: string, p: (typeof platforms)[number]) =>
    file.replace(/\.whl$/, "").split("-").pop()!.split(".").some((tag) => {
      if (p.os === "linux") return /^manylinux/.test(tag) && tag.endsWith(`_${p.arch}`);
      const m = /^macosx_(\d+)_\d+_(\w+)$/.exec(tag);
      return !!m && Number(m[1]) <= p.macos && (m[2] === p.arch || m[2] === "universal2");
    });
  for (const pin of pins) {
    const own = wheels.filter((w) => w.file.startsWith(`${pin.name.replace(/-/g, "_")}-${pin.version}-`));
    assert.deepEqual(own.map((w) => w.hash).sort(), [...pin.hashes].sort(), `${pin.name}: every hash is a listed wheel and every listed wheel is hashed`);
    for (const p of platforms) assert.ok(own.some((w) => fits(w.file, p)), `${pin.name}==${pin.version} has no hashed wheel for ${p.name}: pip --require-hashes --only-binary=:all: would refuse the build there`);
  }
});

test("the preflight refuses, with the fix: the account's root user, a Pulumi CLI other than @pulumi/pulumi's, Node.js outside engines, no passphrase for the bootstrap's stack, a gh older than the procedure's commands, an extension layer that does not exist, before step 2", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-preflight-"));
  try {
    const repo = path.join(dir, "repo");
    const bin = path.join(dir, "bin");
    for (const d of ["scripts", "infra-pulumi", "infra-bootstrap"]) fs.mkdirSync(path.join(repo, d), { recursive: true });
    fs.mkdirSync(bin);
    for (const f of ["scripts/preflight", "scripts/lib.sh", "infra-pulumi/package.json"]) fs.copyFileSync(path.join(REPO_ROOT, f), path.join(repo, f));
    fs.writeFileSync(path.join(repo, "Pulumi.dev.yaml"), templateStackFile(fs.readFileSync(path.join(STACK_FILES, "Pulumi.dev.yaml"), "utf8")));
    // The bootstrap's stack as `pulumi stack init --secrets-provider passphrase` writes it.
    fs.writeFileSync(path.join(repo, "infra-bootstrap", "Pulumi.account-main.yaml"), "encryptionsalt: v1:ZmFrZXNhbHQ=:v1:ZmFrZQ==:ZmFrZQ==\nconfig:\n  aws:region: eu-west-1\n");
    const realNode = process.execPath;
    const stubs: Record<string, string> = {
      node: `#!/usr/bin/env bash\nif [ "$1" = --version ]; then echo v23.1.0; exit 0; fi\nexec "${realNode}" "$@"\n`,
      npm: "#!/usr/bin/env bash\nexit 0\n",
      pulumi: '#!/usr/bin/env bash\ncase "$1" in version) echo v3.100.0 ;; *) exit 1 ;; esac\n',
      aws: '#!/usr/bin/env bash\ncase "$*" in *get-caller-identity*) echo "arn:aws:iam::123456789012:root" ;; *) exit 254 ;; esac\n',
      // Debian 12's apt package: older than `gh variable` (v2.25.0).
      gh: '#!/usr/bin/env bash\ncase "$1" in --version) echo "gh version 2.23.0 (2023-02-20)" ;; *) exit 1 ;; esac\n',
    };
    for (const [name, text] of Object.entries(stubs)) fs.writeFileSync(path.join(bin, name), text, { mode: 0o755 });
    fs.mkdirSync(path.join(dir, "home", ".sophia-bootstrap-state"), { recursive: true });
    const r = spawnSync("bash", [path.join(repo, "scripts", "preflight"), "dev", "--for", "bootstrap"], {
      encoding: "utf8",
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: path.join(dir, "home") },
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /you are the account's root user: the key policies name roles, never root\. Make yourself an administrator role once \(IAM Identity Center/);
    assert.match(r.stderr, /the Pulumi CLI is 3\.100\.0, not 3\.248\.0 .*--version 3\.248\.0/);
    assert.match(r.stderr, /Node\.js v23\.1\.0 is outside >=20 <23 .*install Node\.js 22/);
    assert.match(r.stderr, /PULUMI_CONFIG_PASSPHRASE is not set: the bootstrap's stack \(infra-bootstrap\/Pulumi\.account-main\.yaml\) uses the passphrase provider/);
    assert.match(r.stderr, /the GitHub CLI is 2\.23\.0, older than 2\.25\.0 \(gh variable set, step 3; Debian 12's apt gh is 2\.23\.0\): install it from GitHub's apt repository \(https:\/\/github\.com\/cli\/cli\/blob\/trunk\/docs\/install_linux\.md\)/);
    assert.match(r.stderr, /the extension layer \S+ of Pulumi\.dev\.yaml cannot be read .*the bootstrap would grant the deploy role exactly this version/, "the layer is checked before step 2's bootstrap grants it");
    assert.match(r.stderr, /brew install node@22, which is keg-only \(brew puts it on no PATH\): then brew link --overwrite --force node@22/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("break-glass patterns: a role with a region segment and one without (Identity Center in us-east-1); the doc's pattern is derived from ME's real path, the preflight matches the full ARN", () => {
  const two = block("first 2");
  assert.match(two, /case "\$ME" in \*\/aws-reserved\/sso\.amazonaws\.com\/\*\) bootstrap_pulumi config set --path 'sophia-bootstrap:breakGlassRoles\[0\]' "\$\{ME%_\*\}_\*" ;; esac/);
  const derive = (me: string) => spawnSync("bash", ["-c", 'ME="$1"; echo "${ME%_*}_*"', "-", me], { encoding: "utf8" }).stdout.trim();
  const regional = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_BreakGlass_0123456789abcdef`;
  const global = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_BreakGlass_0123456789abcdef`;
  const old = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_BreakGlass_*`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-breakglass-"));
  try {
    const repo = path.join(dir, "repo");
    const bin = path.join(dir, "bin");
    const home = path.join(dir, "home");
    for (const d of ["scripts", "infra-pulumi", "infra-bootstrap"]) fs.mkdirSync(path.join(repo, d), { recursive: true });
    fs.mkdirSync(bin);
    fs.mkdirSync(path.join(home, ".sophia-bootstrap-state"), { recursive: true });
    for (const f of ["scripts/preflight", "scripts/lib.sh", "infra-pulumi/package.json"]) fs.copyFileSync(path.join(REPO_ROOT, f), path.join(repo, f));
    fs.writeFileSync(path.join(repo, "Pulumi.dev.yaml"), templateStackFile(fs.readFileSync(path.join(STACK_FILES, "Pulumi.dev.yaml"), "utf8")));
    const stubs: Record<string, string> = {
      npm: "#!/usr/bin/env bash\nexit 0\n",
      pulumi: `#!/usr/bin/env bash\ncase "$1" in version) echo v${/"@pulumi\/pulumi": "([^"]+)"/.exec(fs.readFileSync(path.join(REPO_ROOT, "infra-pulumi", "package.json"), "utf8"))![1]} ;; *) exit 1 ;; esac\n`,
      // The caller's session names the role without its path; get-role answers the path (FAKE_ROLE_ARN).
      aws: '#!/usr/bin/env bash\ncase "$*" in *get-caller-identity*) echo "arn:aws:sts::' + ACCOUNT + ':assumed-role/${FAKE_ROLE_ARN##*/}/me" ;; *"iam get-role"*) echo "$FAKE_ROLE_ARN" ;; *) exit 254 ;; esac\n',
    };
    for (const [name, text] of Object.entries(stubs)) fs.writeFileSync(path.join(bin, name), text, { mode: 0o755 });
    const preflight = (me: string, pattern: string, identity: boolean) => {
      fs.writeFileSync(path.join(repo, "infra-bootstrap", "Pulumi.account-main.yaml"), `config:\n  aws:region: eu-west-1\n  sophia-bootstrap:keyAdministrators:\n    - arn:aws:iam::${ACCOUNT}:role/someone-else\n  sophia-bootstrap:breakGlassRoles:\n    - ${pattern}\n`);
      fs.rmSync(path.join(home, ".gitconfig"), { force: true });
      if (identity) fs.writeFileSync(path.join(home, ".gitconfig"), "[user]\n\tname = A Person\n\temail = person@example.com\n");
      return spawnSync("bash", [path.join(repo, "scripts", "preflight"), "dev", "--for", "bootstrap"], {
        encoding: "utf8",
        env: { PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, GIT_CONFIG_NOSYSTEM: "1", FAKE_ROLE_ARN: me, PULUMI_CONFIG_PASSPHRASE: "x" },
      }).stderr;
    };
    const listed = /is one of sophia-bootstrap:keyAdministrators/;
    assert.match(preflight(regional, derive(regional), true), listed);
    assert.match(preflight(global, derive(global), true), listed);
    assert.equal(derive(global), `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_BreakGlass_*`);
    assert.match(preflight(regional, old, true), listed, "the old pattern matches a regional path");
    const missed = preflight(global, old, true);
    assert.match(missed, /you \(\S+\) are not in sophia-bootstrap:keyAdministrators/, "the old pattern misses us-east-1's path, as KMS's ArnLike would");
    // git's identity: refused with the fix, then accepted.
    assert.match(preflight(regional, derive(regional), false), /git does not know who you are \(user\.name, user\.email\)/);
    assert.doesNotMatch(preflight(regional, derive(regional), true), /git does not know/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the first up survives IAM propagation: the migration's invocation retries a refused invoke a bounded number of times, nothing else", async () => {
  const migrate = run.resources.find((r) => r.type === "aws:lambda/invocation:Invocation" && r.name === "migrate");
  assert.ok(migrate, "the program registers the migration's invocation");
  assert.deepEqual(migrate.options.onError, ["sophia-migration-retry"], "its error hook");
  assert.ok(registeredErrorHooks.includes("sophia-migration-retry"), "the hook is registered with the engine");
  // As the engine calls it: the errors so far, newest first; messages shaped as a function error
  // (the function's errorType) and a refused Invoke (AWS's error code) are reported.
  // The function's error when the extension is refused the secret (functions/platform/src/secrets.rs, SecretError::Refused).
  const refusedSecret = 'invoking Lambda Function (sophia-dev-interview-completed): {"errorType":"&alloc::boxed::Box<dyn core::error::Error>","errorMessage":"cannot read MONGODB_URI from secret arn:aws:secretsmanager:eu-west-1:123456789012:secret:sophia/dev/mongodb-uri-AbCdEf: the extension answered HTTP 400 (AccessDeniedException); check that the secret exists and that the function\'s role has secretsmanager:GetSecretValue on it and kms:Decrypt on its key"}';
  const refusedInvoke = "invoking Lambda Function (sophia-dev-interview-completed): operation error Lambda: Invoke, https response error StatusCode: 403, AccessDeniedException: ...";
  const unreachable = 'invoking Lambda Function (sophia-dev-interview-completed): {"errorType":"ServerSelectionError","errorMessage":"connection timed out"}';
  assert.equal(migrationRetryWait([refusedSecret]), MIGRATION_RETRY_WAITS_SECONDS[0]);
  assert.equal(migrationRetryWait([refusedInvoke, refusedSecret]), MIGRATION_RETRY_WAITS_SECONDS[1]);
  assert.equal(migrationRetryWait([unreachable]), undefined, "a database that cannot be reached fails at once");
  assert.equal(migrationRetryWait(Array(MIGRATION_RETRY_WAITS_SECONDS.length + 1).fill(refusedSecret)), undefined, "bounded");
  assert.equal(migrationRetryWait(["NotAccessDeniedExceptionX"]), undefined, "the code as a word, not a substring");
  // The callback, with time scaled to nothing: it waits the stated seconds, then retries.
  const waited: number[] = [];
  const callback = migrationRetryCallback(async (s) => void waited.push(s));
  const args = (errors: string[]) => ({ urn: "urn", id: "", name: "migrate", type: "aws:lambda/invocation:Invocation", failedOperation: "create", errors });
  const answers: boolean[] = [];
  const errors: string[] = [];
  for (;;) {
    errors.unshift(refusedSecret);
    const retry = await callback(args(errors));
    answers.push(retry);
    if (!retry) break;
  }
  assert.deepEqual(waited, [...MIGRATION_RETRY_WAITS_SECONDS]);
  assert.equal(answers.length, MIGRATION_RETRY_WAITS_SECONDS.length + 1);
  assert.equal(await callback(args([unreachable])), false);
});
