/**
 * scripts/bootstrap-stage against stub `pulumi`, `aws`, `git` and `gh` CLIs on PATH (none can run
 * here), in a scratch checkout (the scripts, a stack file, infra-bootstrap/): it reads the
 * bootstrap's outputs from the bootstrap's own backend BEFORE logging in to the stage's bucket, and
 * stops, changing nothing, when they cannot be read (never a passphrase stack); it creates the stack
 * (named as CI names it, `$PULUMI_ORG/<stage>`) under the stage's awskms provider, or re-encrypts an
 * existing one; pins it to the credentials' account as a string (a leading zero kept), pipes the
 * secrets to `pulumi config set --secret` (never on a command line), refuses the wrong account, flags
 * a stale extension layer, checks or applies the stage's GitHub environment
 * (scripts/protect-environments through a stub of GitHub's REST API), never deploys, and ends with
 * the stack file committed (--commit) or the command to commit it.
 *
 * The pulumi stub stores `--path` values as Pulumi does (https://www.pulumi.com/docs/iac/cli/commands/pulumi_config_set/):
 * digits become a number (leading zeros lost) unless `--type string`, which keeps a quoted string.
 * Like the DIY backend, it finds the bootstrap's stack only in the bootstrap's backend
 * (`PULUMI_BACKEND_URL` for the one command, else the last `pulumi login`), and `stack init` writes
 * `secretsprovider:` (or, without one, the passphrase provider's `encryptionsalt:`) to the stack file.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";

import { REPO_ROOT } from "../src/repository";
import { DEV_ROLE, type Github, type GithubEnvironment, PROTECTED_DEV, ghStub, github, protect } from "./support/github";

const PULUMI_STUB = `#!/usr/bin/env bash
# Records argv (and, in calls, the backend each command ran against); keeps config as key=value lines;
# "config set --secret k" reads the value from stdin.
echo "$*" >> "$FAKE_STATE/argv"
# Builtins, not cat and basename: a bootstrap-stage run makes a dozen calls.
login=""; [ ! -f "$FAKE_STATE/login" ] || IFS= read -r login < "$FAKE_STATE/login"
backend="\${PULUMI_BACKEND_URL:-$login}"
echo "[$backend] [\${PWD##*/}] $*" >> "$FAKE_STATE/calls"
args=(); secret=0; path=0; type=""; provider=""; stack=""
while [ $# -gt 0 ]; do
  case "$1" in
    --stack) stack="$2"; echo "$2" >> "$FAKE_STATE/stacks"; shift 2 ;;
    --secrets-provider) provider="$2"; shift 2 ;;
    --secret) secret=1; shift ;;
    --path) path=1; shift ;;
    --type) type="$2"; shift 2 ;;
    --non-interactive|--json) shift ;;
    *) args+=("$1"); shift ;;
  esac
done
stack_file() { echo "Pulumi.\${1##*/}.yaml"; }
case "\${args[0]} \${args[1]}" in
  "login "*) echo "\${args[1]}" > "$FAKE_STATE/login" ;;
  "stack output")
    [ "$backend" = "$FAKE_BOOTSTRAP_BACKEND" ] && [ "\${PWD##*/}" = infra-bootstrap ] && [ "$stack" = account-main ] \
      || { echo "error: no stack named '$stack' found" >&2; exit 255; }
    printf '%s\n' "$FAKE_OUTPUTS" ;;
  "stack select") [ -f "$FAKE_STATE/stack" ] ;;
  "stack init")
    touch "$FAKE_STATE/stack"
    if [ -n "$provider" ]; then echo "secretsprovider: $provider" >> "$(stack_file "\${args[2]}")"
    else echo "encryptionsalt: v1:fakesalt" >> "$(stack_file "\${args[2]}")"; fi ;;
  "stack change-secrets-provider")
    f=$(stack_file "$stack"); grep -v -E '^(secretsprovider|encryptionsalt|encryptedkey):' "$f" > "$f.new"
    echo "secretsprovider: \${args[2]}" >> "$f.new"; mv "$f.new" "$f" ;;
  "config get") line=$(grep -m1 "^\${args[2]}=" "$FAKE_STATE/config") || exit 1; echo "\${line#*=}" ;;
  "config set")
    value="\${args[3]}"
    if [ $secret = 1 ]; then value=$(cat); echo "\${args[2]}=SECRET:$value" >> "$FAKE_STATE/config"
    elif [ $path = 1 ] && [ "$type" = string ]; then echo "\${args[2]}=\\"$value\\"" >> "$FAKE_STATE/config"
    elif [ $path = 1 ] && [[ "$value" =~ ^[0-9]+$ ]]; then echo "\${args[2]}=$((10#$value))" >> "$FAKE_STATE/config"
    else echo "\${args[2]}=$value" >> "$FAKE_STATE/config"; fi ;;
  *) echo "unexpected pulumi $*" >&2; exit 3 ;;
esac
`;
const AWS_STUB = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_STATE/aws-argv"
case "$1 $2" in
  "sts get-caller-identity") case "$*" in *Arn*) echo "arn:aws:sts::$FAKE_ACCOUNT:assumed-role/BreakGlass/admin" ;; *) echo "$FAKE_ACCOUNT" ;; esac ;;
  "lambda get-layer-version-by-arn") arn="$4"; v="\${arn##*:}"
    # FAKE_LAYER_VERSIONS: the versions that exist, with AWS's gaps; else every one up to FAKE_LATEST_LAYER.
    if [ -n "\${FAKE_LAYER_VERSIONS:-}" ]; then case " $FAKE_LAYER_VERSIONS " in *" $v "*) ;; *) exit 254 ;; esac
    else [ "$v" -le "\${FAKE_LATEST_LAYER:-999}" ] || exit 254; fi
    echo arm64 ;;
  *) exit 0 ;;
esac
`;
// git: \`status --porcelain\` reports the stack file as changed; add and commit are recorded; the
// identity is configured (the preflight refuses without one: deploy-doc.test.ts shows that).
const GIT_STUB = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_STATE/git-argv"
case "$1 \${2:-}" in "config user.name") echo "A Person" ;; "config user.email") echo person@example.com ;; status*) echo " M Pulumi.dev.yaml" ;; *) exit 0 ;; esac
`;


// An existing directory: the file backend needs one (scripts/preflight checks it first).
const BOOTSTRAP_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bootstrap-state-"));
const BOOTSTRAP_BACKEND = `file://${BOOTSTRAP_DIR}`;
after(() => fs.rmSync(BOOTSTRAP_DIR, { recursive: true, force: true }));
const STATE_BUCKET = "s3://sophia-state-222222222222?region=eu-west-1";
const DEV_PROVIDER = "awskms://alias/sophia-dev-pulumi-secrets?region=eu-west-1";
/** `pulumi stack output --json` of infra-bootstrap (index.ts: three named outputs and `all`). */
const OUTPUTS = {
  OIDC_PROVIDER_ARN: "arn:aws:iam::222222222222:oidc-provider/token.actions.githubusercontent.com",
  PREVIEW_ROLE_ARN: "arn:aws:iam::222222222222:role/sophia-bootstrap/sophia-preview",
  PULUMI_BACKEND_URL: STATE_BUCKET,
  all: { DEV_DEPLOY_ROLE_ARN: DEV_ROLE, DEV_SECRETS_PROVIDER: DEV_PROVIDER, PULUMI_BACKEND_URL: STATE_BUCKET },
};
// The caller (the aws stub's BreakGlass role, in each account the tests use) is a key administrator:
// scripts/preflight refuses anyone else before anything changes.
const STACK_FILE = `config:\n  aws:region: eu-west-1\n  sophia:kmsKeyAdministrators:\n${["222222222222", "333333333333", "012345678901"].map((a) => `    - arn:aws:iam::${a}:role/BreakGlass\n`).join("")}`;

interface Run {
  status: number | null;
  output: string;
  stdout: string;
  argv: string;
  calls: string;
  config: string;
  stacks: string;
  git: string;
  aws: string;
  ghCalls: string;
  stackFile: string;
  github: Github;
}

/** A scratch checkout (the scripts, Pulumi.dev.yaml, infra-bootstrap/) with the stubs first on PATH. */
function scratch(stackFile: string, gh: Github) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bootstrap-"));
  const bin = path.join(state, "bin");
  const repo = path.join(state, "repo");
  for (const d of [bin, path.join(repo, "scripts"), path.join(repo, "infra-bootstrap"), path.join(repo, "declarations")]) fs.mkdirSync(d, { recursive: true });
  for (const script of ["bootstrap-stage", "preflight", "protect-environments", "lib.sh"]) {
    fs.copyFileSync(path.join(REPO_ROOT, "scripts", script), path.join(repo, "scripts", script));
  }
  fs.copyFileSync(path.join(REPO_ROOT, "declarations", "stages.json"), path.join(repo, "declarations", "stages.json"));
  fs.writeFileSync(path.join(repo, "Pulumi.dev.yaml"), stackFile);
  fs.writeFileSync(path.join(bin, "pulumi"), PULUMI_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "aws"), AWS_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "git"), GIT_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "gh"), ghStub(), { mode: 0o755 });
  fs.writeFileSync(path.join(state, "github.json"), JSON.stringify(gh));
  const read = (f: string) => (fs.existsSync(path.join(state, f)) ? fs.readFileSync(path.join(state, f), "utf8") : "");
  return { state, bin, repo, read };
}

function bootstrap(
  account: string,
  config: string[],
  extraEnv: Record<string, string> = {},
  stackExists = false,
  extraArgs: string[] = [],
  opts: { stackFile?: string; github?: Github; outputs?: unknown; noGh?: boolean } = {},
): Run {
  const { state, bin, repo, read } = scratch(opts.stackFile ?? STACK_FILE, opts.github ?? github({ dev: PROTECTED_DEV }));
  if (opts.noGh) fs.rmSync(path.join(bin, "gh"));
  fs.writeFileSync(path.join(state, "config"), config.map((l) => `${l}\n`).join(""));
  if (stackExists) fs.writeFileSync(path.join(state, "stack"), "");
  const r = spawnSync("bash", [path.join(repo, "scripts", "bootstrap-stage"), "dev", "--bootstrap-backend", BOOTSTRAP_BACKEND, ...extraArgs], {
    encoding: "utf8",
    input: "",
    env: {
      ...process.env,
      PATH: `${bin}:${process.env["PATH"]}`,
      FAKE_STATE: state,
      FAKE_ACCOUNT: account,
      FAKE_BOOTSTRAP_BACKEND: BOOTSTRAP_BACKEND,
      FAKE_OUTPUTS: JSON.stringify(opts.outputs ?? OUTPUTS),
      PULUMI_BACKEND_URL: "",
      GH_REPO: "",
      ...extraEnv,
    },
  });
  const out: Run = {
    status: r.status,
    output: r.stdout + r.stderr,
    stdout: r.stdout,
    argv: read("argv"),
    calls: read("calls"),
    config: read("config"),
    stacks: read("stacks"),
    git: read("git-argv"),
    aws: read("aws-argv"),
    ghCalls: read("gh-calls"),
    stackFile: fs.readFileSync(path.join(repo, "Pulumi.dev.yaml"), "utf8"),
    github: JSON.parse(read("github.json")) as Github,
  };
  fs.rmSync(state, { recursive: true, force: true });
  return out;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const URI = "mongodb+srv://app:s3cret-pw@cluster0.example.net/";
const KEY = "sk-test-bootstrap-0123456789";

test("fresh stage: stack init, pinned to the credentials' account, secrets piped in, a to-do list, no deploy", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", "sophia:secretsExtensionLayerArn=arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:11"], {
    SOPHIA_MONGODB_URI: URI,
    SOPHIA_OPENAI_API_KEY: KEY,
  });
  assert.equal(r.status, 0, r.output);
  assert.match(r.argv, new RegExp(`^stack init dev --secrets-provider ${esc(DEV_PROVIDER)}$`, "m"));
  assert.match(r.config, /^aws:allowedAccountIds\[0\]="222222222222"$/m, "stored as a string");
  assert.match(r.config, new RegExp(`^sophia:mongodbUri=SECRET:${URI.replace(/[.+?]/g, "\\$&")}$`, "m"));
  assert.match(r.config, new RegExp(`^sophia:openaiApiKey=SECRET:${KEY}$`, "m"));
  for (const secret of [URI, KEY]) {
    assert.equal(r.argv.includes(secret), false, "a secret never reaches a command line");
    assert.equal(r.output.includes(secret), false, "nor the output");
  }
  assert.doesNotMatch(r.argv, /^(up|destroy)\b/m, "never deploys");
  assert.match(r.output, /Left to do:/);
  assert.match(r.output, new RegExp(`AWS_PREVIEW_ROLE_ARN=${esc(OUTPUTS.PREVIEW_ROLE_ARN)}, PULUMI_BACKEND_URL=${esc(STATE_BUCKET)}`));
  assert.match(r.output, /nobody is subscribed to the stage's alarm topic/);
});

test("a stack pinned to another account is refused before anything is set", () => {
  const r = bootstrap("333333333333", ['aws:allowedAccountIds=["222222222222"]', "aws:region=eu-west-1"], { SOPHIA_MONGODB_URI: URI, SOPHIA_OPENAI_API_KEY: KEY }, true);
  assert.notEqual(r.status, 0);
  assert.match(r.output, /only deploys into account\(s\) \["222222222222"\], but your credentials are for 333333333333/);
  assert.doesNotMatch(r.config, /SECRET:/, "no secret was set");
  assert.doesNotMatch(r.argv, /stack init/);
});

test("a missing secret without a terminal stops with the variable to export", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1"], {}, true);
  assert.notEqual(r.status, 0);
  assert.match(r.output, /sophia:mongodbUri is not set: export SOPHIA_MONGODB_URI or run interactively/);
});

const LAYER_11 = "sophia:secretsExtensionLayerArn=arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:11";
const SECRETS = { SOPHIA_MONGODB_URI: URI, SOPHIA_OPENAI_API_KEY: KEY };

test("an account id with a leading zero is stored as a string, and a re-run accepts the pinned account", () => {
  const first = bootstrap("012345678901", ["aws:region=eu-west-1", LAYER_11], SECRETS);
  assert.equal(first.status, 0, first.output);
  assert.match(first.argv, /config set --path --type string aws:allowedAccountIds\[0\] 012345678901/);
  assert.match(first.config, /^aws:allowedAccountIds\[0\]="012345678901"$/m, "the leading zero is kept");
  // What \`pulumi config get aws:allowedAccountIds\` prints for the list written above.
  const rerun = bootstrap("012345678901", ['aws:allowedAccountIds=["012345678901"]', "aws:region=eu-west-1", LAYER_11], SECRETS, true);
  assert.equal(rerun.status, 0, rerun.output);
  assert.match(rerun.output, /stack dev is pinned to account 012345678901/);
});

test("a pin stored as a number (the old bug) is named, with the command that fixes it", () => {
  const r = bootstrap("012345678901", ["aws:allowedAccountIds=[12345678901]", "aws:region=eu-west-1"], SECRETS, true);
  assert.notEqual(r.status, 0);
  assert.match(r.output, /stored as a number \(leading zeros lost\)/);
  assert.match(r.output, /pulumi config set --path --type string 'aws:allowedAccountIds\[0\]' 012345678901 --stack dev/);
});

test("PULUMI_ORG: the stack is <org>/<stage>, the name CI uses, for init and every config call", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, PULUMI_ORG: "acme" });
  assert.equal(r.status, 0, r.output);
  assert.match(r.argv, /^stack init acme\/dev --secrets-provider awskms:/m);
  const stacks = [...new Set(r.stacks.trim().split("\n"))].filter((s) => s !== "account-main");
  assert.deepEqual(stacks, ["acme/dev"], "every --stack of the stage names acme/dev (account-main is the bootstrap's)");
});

test("a newer extension layer version than the configured one is flagged", () => {
  const stale = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, FAKE_LATEST_LAYER: "12" });
  assert.equal(stale.status, 0, stale.output);
  assert.match(stale.output, /a newer extension layer exists \(arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:12\)/);
  const current = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, FAKE_LATEST_LAYER: "11" });
  assert.doesNotMatch(current.output, /a newer extension layer exists/);
  // AWS skips version numbers: the probe walks past gaps and names the highest it finds.
  const gaps = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, FAKE_LAYER_VERSIONS: "11 14 19 33" });
  assert.match(gaps.output, /a newer extension layer exists \(arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:33\): the highest version found above 11/);
});

test("last step: the stack file is committed with --commit, else the exact command to commit it is printed", () => {
  const told = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS);
  assert.equal(told.status, 0, told.output);
  assert.match(told.output, /Pulumi\.dev\.yaml has changes CI does not have yet/);
  assert.match(told.output, /git add Pulumi\.dev\.yaml && git commit -m "Stage dev: bootstrap config" && git push$/m);
  assert.doesNotMatch(told.git, /^commit/m, "nothing committed without --commit");
  const committed = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--commit"]);
  assert.equal(committed.status, 0, committed.output);
  assert.match(committed.git, /^add -- Pulumi\.dev\.yaml$/m);
  assert.match(committed.git, /^commit -q -m Stage dev: bootstrap config \(account pin, encrypted secrets\) -- Pulumi\.dev\.yaml$/m);
});

test("the bootstrap's outputs are read from the bootstrap's own backend, then the stage's bucket is logged in to", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS);
  assert.equal(r.status, 0, r.output);
  const calls = r.calls.trim().split("\n");
  const read = calls.findIndex((c) => c.startsWith(`[${BOOTSTRAP_BACKEND}] [infra-bootstrap] stack output --json --stack account-main`));
  const login = calls.findIndex((c) => c.endsWith(`login ${STATE_BUCKET}`));
  const init = calls.findIndex((c) => c.includes("stack init"));
  assert.ok(read >= 0, r.calls);
  assert.ok(read < login && login < init, `outputs, then login, then init:\n${r.calls}`);
  assert.ok(calls[init]!.startsWith(`[${STATE_BUCKET}] [repo] stack init dev --secrets-provider ${DEV_PROVIDER}`), calls[init]);
  for (const c of calls.slice(login + 1)) assert.ok(c.startsWith(`[${STATE_BUCKET}]`), `every later command in the stage's bucket: ${c}`);
  assert.match(r.stackFile, new RegExp(`^secretsprovider: ${esc(DEV_PROVIDER)}$`, "m"));
  assert.doesNotMatch(r.stackFile, /encryptionsalt/);
  assert.match(r.output, /stack dev encrypts its secrets with awskms:\/\/alias\/sophia-dev-pulumi-secrets/);
});

test("bootstrap outputs that cannot be read stop everything: no login, no stack, no passphrase provider", () => {
  const wrong = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--bootstrap-backend", STATE_BUCKET]);
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.output, /cannot read the bootstrap's outputs \(stack account-main in s3:\/\/sophia-state-222222222222\?region=eu-west-1\): error: no stack named 'account-main' found/);
  assert.match(wrong.output, /Nothing was changed: without them the stack would get the passphrase provider, which CI cannot decrypt/);
  assert.doesNotMatch(wrong.argv, /^(login|stack init|config set)/m, "nothing after the failed read");
  assert.equal(wrong.stackFile, STACK_FILE, "the stack file is untouched");
  assert.doesNotMatch(wrong.config, /SECRET:/, "no secret set");
  // The bootstrap knows no such stage: stop as well, naming the fix.
  const noStage = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], {
    outputs: { ...OUTPUTS, all: { PULUMI_BACKEND_URL: STATE_BUCKET } },
  });
  assert.notEqual(noStage.status, 0);
  assert.match(noStage.output, /has no deploy role for stage dev: add dev to sophia-bootstrap:stages/);
  assert.doesNotMatch(noStage.argv, /^(login|stack init)/m);
  // A bucket but no key for the stage: never a stack without the awskms provider.
  const noKey = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], {
    outputs: { ...OUTPUTS, all: { DEV_DEPLOY_ROLE_ARN: DEV_ROLE, PULUMI_BACKEND_URL: STATE_BUCKET } },
  });
  assert.notEqual(noKey.status, 0);
  assert.match(noKey.output, /no awskms secrets provider for dev \(DEV_SECRETS_PROVIDER\)/);
  assert.doesNotMatch(noKey.argv, /^stack init/m);
});

test("an existing stack under the passphrase provider is re-encrypted under the stage's key", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, true, [], {
    stackFile: `encryptionsalt: v1:oldsalt\n${STACK_FILE}`,
  });
  assert.equal(r.status, 0, r.output);
  assert.match(r.argv, new RegExp(`^stack change-secrets-provider ${esc(DEV_PROVIDER)} --stack dev$`, "m"));
  assert.match(r.output, /re-encrypting stack dev under awskms:.* \(it had: the passphrase provider\)/);
  assert.match(r.stackFile, new RegExp(`^secretsprovider: ${esc(DEV_PROVIDER)}$`, "m"));
  assert.doesNotMatch(r.stackFile, /encryptionsalt/);
  const current = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, true, [], {
    stackFile: `secretsprovider: ${DEV_PROVIDER}\n${STACK_FILE}`,
  });
  assert.equal(current.status, 0, current.output);
  assert.doesNotMatch(current.argv, /change-secrets-provider/, "already under the key: nothing to do");
});

test("a Pulumi Cloud bootstrap (no bucket): no login, the stack keeps Pulumi Cloud's provider", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], {
    outputs: { PREVIEW_ROLE_ARN: OUTPUTS.PREVIEW_ROLE_ARN, all: { DEV_DEPLOY_ROLE_ARN: DEV_ROLE } },
  });
  assert.equal(r.status, 0, r.output);
  assert.doesNotMatch(r.argv, /^login/m);
  assert.match(r.argv, /^stack init dev$/m);
  assert.match(r.output, /the bootstrap uses Pulumi Cloud \(no state bucket\)/);
});

test("GitHub: a protected dev environment is checked and reported; a missing one is named as to-do", () => {
  const ok = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS);
  assert.equal(ok.status, 0, ok.output);
  assert.match(ok.output, /GitHub environment 'dev' is protected \(deployments from main only\)/);
  assert.doesNotMatch(ok.ghCalls, /^(PUT|POST|PATCH|DELETE) /m, "a check writes nothing");
  const missing = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], { github: github() });
  assert.equal(missing.status, 0, "GitHub is a to-do, not a failure, without --github apply");
  assert.match(missing.stdout, /^ {2}- the GitHub environment 'dev' does not exist$/m);
  assert.match(missing.stdout, /--github apply/);
  const open = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], {
    github: github({ dev: { ...PROTECTED_DEV, deployment_branch_policy: null, branchPolicies: [], variables: {} } }),
  });
  assert.match(open.stdout, /deployment branches are not limited to selected branches \(any branch could deploy\)/);
  assert.match(open.stdout, /the deployment branch policies are 'none', not exactly the branch main/);
  assert.match(open.stdout, new RegExp(`variable AWS_DEPLOY_ROLE_ARN is 'unset', not ${esc(DEV_ROLE)}`));
  const denied = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], { github: github({}, { fail: 401 }) });
  assert.equal(denied.status, 0);
  assert.match(denied.stdout, /GitHub environment 'dev' could not be read: error: gh api repos\/acme\/sophia failed: gh: Bad credentials \(HTTP 401\)/);
  const skipped = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "skip"]);
  assert.equal(skipped.ghCalls, "", "--github skip calls nothing");
  assert.match(skipped.stdout, /GitHub environment 'dev': deployments from main only, required reviewers and prevent self-review on production/);
});

test("GitHub --apply: main only, prevent self-review, the deploy role's variable; read back", () => {
  const before: GithubEnvironment = {
    reviewers: [{ type: "User", id: 102 }],
    prevent_self_review: false,
    deployment_branch_policy: { protected_branches: false, custom_branch_policies: true },
    branchPolicies: [{ id: 5, name: "release/*", type: "branch" }],
    variables: { AWS_DEPLOY_ROLE_ARN: "arn:aws:iam::222222222222:role/old" },
  };
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "apply"], { github: github({ dev: before }) });
  assert.equal(r.status, 0, r.output);
  const dev = r.github.environments["dev"]!;
  assert.equal(dev.prevent_self_review, true);
  assert.deepEqual(dev.reviewers, [{ type: "User", id: 102 }], "the environment's reviewers are kept");
  assert.deepEqual(dev.deployment_branch_policy, { protected_branches: false, custom_branch_policies: true });
  assert.deepEqual(dev.branchPolicies.map((b) => `${b.type}:${b.name}`), ["branch:main"], "release/* removed, main added");
  assert.equal(dev.variables["AWS_DEPLOY_ROLE_ARN"], DEV_ROLE);
  assert.match(r.ghCalls, /^DELETE repos\/acme\/sophia\/environments\/dev\/deployment-branch-policies\/5$/m);
  assert.match(r.output, /GitHub environment 'dev' is protected/);
  const refused = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "apply"], {
    github: github({}, { readOnly: true }),
  });
  assert.notEqual(refused.status, 0, "--github apply fails loudly when GitHub refuses");
  assert.match(refused.output, /Resource not accessible by integration \(HTTP 403\).*Administration and Variables write/);
});

test("GitHub --apply without the gh CLI fails (the environment was not set); without --apply it is a to-do", () => {
  const apply = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "apply"], { noGh: true });
  assert.notEqual(apply.status, 0, "--github apply promises the environment is set");
  assert.match(apply.output, /--github apply needs the GitHub CLI \(gh, https:\/\/cli\.github\.com\/, then gh auth login\): GitHub environment 'dev' was not set/);
  const check = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, [], { noGh: true });
  assert.equal(check.status, 0, check.output);
  assert.match(check.stdout, /GitHub environment 'dev' not checked \(no gh CLI\)/);
});

test("GitHub --apply --approvals 0 (one person): main takes pull requests without a required approval; the default is one", () => {
  const alone = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "apply", "--approvals", "0"], { github: github({}, { protection: {} }) });
  assert.equal(alone.status, 0, alone.output);
  assert.equal(alone.github.protection["main"]!.required_pull_request_reviews!.required_approving_review_count, 0);
  const team = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], SECRETS, false, ["--github", "apply"], { github: github({}, { protection: {} }) });
  assert.equal(team.status, 0, team.output);
  assert.equal(team.github.protection["main"]!.required_pull_request_reviews!.required_approving_review_count, 1);
});

test("protect-environments: production needs reviewers; --reviewer resolves users and teams; self-review prevented", () => {
  const none = protect(["prod-rs", "--apply"], github());
  assert.notEqual(none.status, 0);
  assert.match(none.output, /environment 'production' has no required reviewers and none were given: --reviewer user:<login>/);
  assert.doesNotMatch(none.calls, /^PUT/m, "nothing written");
  const PROD_ROLE = "arn:aws:iam::333333333333:role/sophia-bootstrap/sophia-bootstrap-prod-rs-deploy";
  const r = protect(["prod-rs", "--apply", "--reviewer", "user:alice", "--reviewer", "team:platform", "--deploy-role-arn", PROD_ROLE], github());
  assert.equal(r.status, 0, r.output);
  const prod = r.github.environments["production"]!;
  assert.deepEqual(prod.reviewers, [{ type: "User", id: 101 }, { type: "Team", id: 7 }]);
  assert.equal(prod.prevent_self_review, true);
  assert.deepEqual(prod.branchPolicies.map((b) => b.name), ["main"]);
  assert.equal(prod.variables["AWS_PROD_DEPLOY_ROLE_ARN"], PROD_ROLE, "the variable deploy-prod reads");
  const check = protect(["prod-rs", "--deploy-role-arn", PROD_ROLE], r.github);
  assert.equal(check.status, 0, check.output);
  const selfReview = protect(["prod-rs"], github({ production: { ...prod, prevent_self_review: false } }));
  assert.equal(selfReview.status, 1);
  assert.match(selfReview.stdout, /environment 'production': prevent self-review is off \(whoever pushed could approve their own deploy\)/);
  const noReviewers = protect(["prod-rs"], github({ production: { ...prod, reviewers: [] } }));
  assert.match(noReviewers.stdout, /environment 'production': no required reviewers/);
  const unknown = protect(["prod-rs", "--apply", "--reviewer", "user:mallory"], github());
  assert.notEqual(unknown.status, 0);
  assert.match(unknown.output, /user:mallory/);
});
