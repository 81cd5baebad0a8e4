/**
 * scripts/bootstrap-stage against stub `pulumi`, `aws` and `git` CLIs on PATH (the first two cannot
 * run here): it creates the stack (named as CI names it, `$PULUMI_ORG/<stage>`), pins it to the
 * credentials' account as a string (a leading zero kept), pipes the secrets to `pulumi config set
 * --secret` (never on a command line), refuses the wrong account, flags a stale extension layer,
 * never deploys, and ends with the stack file committed (--commit) or the command to commit it.
 *
 * The pulumi stub stores `--path` values as Pulumi does (https://www.pulumi.com/docs/iac/cli/commands/pulumi_config_set/):
 * digits become a number (leading zeros lost) unless `--type string`, which keeps a quoted string.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { REPO_ROOT } from "../src/artifacts";

const PULUMI_STUB = `#!/usr/bin/env bash
# Records argv; keeps config as key=value lines; "config set --secret k" reads the value from stdin.
echo "$*" >> "$FAKE_STATE/argv"
args=(); secret=0; path=0; type=""
while [ $# -gt 0 ]; do
  case "$1" in
    --stack) echo "$2" >> "$FAKE_STATE/stacks"; shift 2 ;;
    --secret) secret=1; shift ;;
    --path) path=1; shift ;;
    --type) type="$2"; shift 2 ;;
    --non-interactive) shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "\${args[0]} \${args[1]}" in
  "stack select") [ -f "$FAKE_STATE/stack" ] ;;
  "stack init") touch "$FAKE_STATE/stack" ;;
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
  "sts get-caller-identity") echo "$FAKE_ACCOUNT" ;;
  "lambda get-layer-version-by-arn") arn="$4"; [ "\${arn##*:}" -le "\${FAKE_LATEST_LAYER:-999}" ] || exit 254; echo arm64 ;;
  *) exit 0 ;;
esac
`;
// git: \`status --porcelain\` reports the stack file as changed; add and commit are recorded.
const GIT_STUB = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_STATE/git-argv"
case "$1" in status) echo " M Pulumi.dev.yaml" ;; *) exit 0 ;; esac
`;

function bootstrap(account: string, config: string[], extraEnv: Record<string, string> = {}, stackExists = false, extraArgs: string[] = []) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bootstrap-"));
  const bin = path.join(state, "bin");
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, "pulumi"), PULUMI_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "aws"), AWS_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "git"), GIT_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(state, "config"), config.map((l) => `${l}\n`).join(""));
  if (stackExists) fs.writeFileSync(path.join(state, "stack"), "");
  const r = spawnSync("bash", [path.join(REPO_ROOT, "scripts", "bootstrap-stage"), "dev", ...extraArgs], {
    encoding: "utf8",
    input: "",
    env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, FAKE_STATE: state, FAKE_ACCOUNT: account, ...extraEnv },
  });
  const read = (f: string) => (fs.existsSync(path.join(state, f)) ? fs.readFileSync(path.join(state, f), "utf8") : "");
  const out = { status: r.status, output: r.stdout + r.stderr, argv: read("argv"), config: read("config"), stacks: read("stacks"), git: read("git-argv"), aws: read("aws-argv") };
  fs.rmSync(state, { recursive: true, force: true });
  return out;
}

const URI = "mongodb+srv://app:s3cret-pw@cluster0.example.net/";
const KEY = "sk-test-bootstrap-0123456789";

test("fresh stage: stack init, pinned to the credentials' account, secrets piped in, a to-do list, no deploy", () => {
  const r = bootstrap("222222222222", ["aws:region=eu-west-1", "sophia:secretsExtensionLayerArn=arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:11"], {
    SOPHIA_MONGODB_URI: URI,
    SOPHIA_OPENAI_API_KEY: KEY,
  });
  assert.equal(r.status, 0, r.output);
  assert.match(r.argv, /^stack init dev$/m);
  assert.match(r.config, /^aws:allowedAccountIds\[0\]="222222222222"$/m, "stored as a string");
  assert.match(r.config, new RegExp(`^sophia:mongodbUri=SECRET:${URI.replace(/[.+?]/g, "\\$&")}$`, "m"));
  assert.match(r.config, new RegExp(`^sophia:openaiApiKey=SECRET:${KEY}$`, "m"));
  for (const secret of [URI, KEY]) {
    assert.equal(r.argv.includes(secret), false, "a secret never reaches a command line");
    assert.equal(r.output.includes(secret), false, "nor the output");
  }
  assert.doesNotMatch(r.argv, /^(up|destroy)\b/m, "never deploys");
  assert.match(r.output, /Left to do:/);
  assert.match(r.output, /read-only preview role trusted for pull_request only/);
  assert.match(r.output, /infra-bootstrap/);
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
  assert.match(r.argv, /^stack init acme\/dev$/m);
  assert.deepEqual([...new Set(r.stacks.trim().split("\n"))], ["acme/dev"], "every --stack names acme/dev");
});

test("a newer extension layer version than the configured one is flagged", () => {
  const stale = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, FAKE_LATEST_LAYER: "12" });
  assert.equal(stale.status, 0, stale.output);
  assert.match(stale.output, /a newer extension layer exists \(arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:12\)/);
  const current = bootstrap("222222222222", ["aws:region=eu-west-1", LAYER_11], { ...SECRETS, FAKE_LATEST_LAYER: "11" });
  assert.doesNotMatch(current.output, /a newer extension layer exists/);
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
