/**
 * scripts/bootstrap-stage against stub `pulumi` and `aws` CLIs on PATH (neither can run here): it
 * creates the stack, pins it to the credentials' account, pipes the secrets to `pulumi config set
 * --secret` (never on a command line), refuses the wrong account, and never deploys.
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
args=(); secret=0
while [ $# -gt 0 ]; do
  case "$1" in --stack) shift 2 ;; --secret) secret=1; shift ;; --path|--non-interactive) shift ;; *) args+=("$1"); shift ;; esac
done
case "\${args[0]} \${args[1]}" in
  "stack select") [ -f "$FAKE_STATE/stack" ] ;;
  "stack init") touch "$FAKE_STATE/stack" ;;
  "config get") line=$(grep -m1 "^\${args[2]}=" "$FAKE_STATE/config") || exit 1; echo "\${line#*=}" ;;
  "config set")
    if [ $secret = 1 ]; then value=$(cat); echo "\${args[2]}=SECRET:$value" >> "$FAKE_STATE/config"
    else echo "\${args[2]}=\${args[3]}" >> "$FAKE_STATE/config"; fi ;;
  *) echo "unexpected pulumi $*" >&2; exit 3 ;;
esac
`;
const AWS_STUB = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_STATE/aws-argv"
case "$1 $2" in
  "sts get-caller-identity") echo "$FAKE_ACCOUNT" ;;
  "lambda get-layer-version-by-arn") echo arm64 ;;
  *) exit 0 ;;
esac
`;

function bootstrap(account: string, config: string[], extraEnv: Record<string, string> = {}, stackExists = false) {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bootstrap-"));
  const bin = path.join(state, "bin");
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, "pulumi"), PULUMI_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, "aws"), AWS_STUB, { mode: 0o755 });
  fs.writeFileSync(path.join(state, "config"), config.map((l) => `${l}\n`).join(""));
  if (stackExists) fs.writeFileSync(path.join(state, "stack"), "");
  const r = spawnSync("bash", [path.join(REPO_ROOT, "scripts", "bootstrap-stage"), "dev"], {
    encoding: "utf8",
    input: "",
    env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}`, FAKE_STATE: state, FAKE_ACCOUNT: account, ...extraEnv },
  });
  const read = (f: string) => (fs.existsSync(path.join(state, f)) ? fs.readFileSync(path.join(state, f), "utf8") : "");
  const out = { status: r.status, output: r.stdout + r.stderr, argv: read("argv"), config: read("config") };
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
  assert.match(r.config, /^aws:allowedAccountIds\[0\]=222222222222$/m);
  assert.match(r.config, new RegExp(`^sophia:mongodbUri=SECRET:${URI.replace(/[.+?]/g, "\\$&")}$`, "m"));
  assert.match(r.config, new RegExp(`^sophia:openaiApiKey=SECRET:${KEY}$`, "m"));
  for (const secret of [URI, KEY]) {
    assert.equal(r.argv.includes(secret), false, "a secret never reaches a command line");
    assert.equal(r.output.includes(secret), false, "nor the output");
  }
  assert.doesNotMatch(r.argv, /^(up|destroy)\b/m, "never deploys");
  assert.match(r.output, /Left to do:/);
  assert.match(r.output, /read-only preview role trusted for pull_request only/);
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
