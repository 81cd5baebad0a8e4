/**
 * Stage configuration: defaults, overrides, and errors that list every problem at once.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";

import { checkAlarmDelivery } from "../src/alarms";
import { REPO_ROOT } from "../src/repository";
import { ConfigError, loadStageConfig, type StageConfig } from "../src/config";
import { loadSettings } from "../src/settings";
import { TEST_LAYER_ARN, TEST_SECRETS } from "./support/harness";
import { createMocks } from "./support/mocks";
import { resolve } from "./support/values";

const settings = loadSettings();

/** What every stage sets besides the secrets: its region and the extension layer for it. */
const BASE = { "aws:region": "eu-west-1", "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.arm64 };

async function load(stack: string, config: Record<string, string>, env: NodeJS.ProcessEnv = {}): Promise<StageConfig> {
  pulumi.runtime.setAllConfig({ ...BASE, ...config }, Object.keys(TEST_SECRETS));
  await pulumi.runtime.setMocks(createMocks(false).mocks, "sophia", stack, false);
  return loadStageConfig(settings, env);
}

async function loadError(stack: string, config: Record<string, string>): Promise<ConfigError> {
  try {
    await load(stack, config);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    assert.ok(pulumi.RunError.isInstance(e), "a RunError: printed without a stack trace");
    return e;
  }
  return assert.fail("expected a ConfigError");
}

test("defaults: arm64, queues.json memory, concurrency 2, age alarms at maxReceiveCount x visibility", async () => {
  const c = await load("dev", { ...TEST_SECRETS });
  assert.equal(c.stage, "dev");
  assert.equal(c.architecture, "arm64");
  assert.deepEqual(c.memoryMb, { "interview-completed": 256, "report-generate": 512, "interview-failed": 256 });
  assert.deepEqual(c.maximumConcurrency, { interviewCompleted: 2, reportGenerate: 2 });
  assert.deepEqual(c.oldestMessageAgeAlarmSeconds, { interviewCompleted: 3 * 180, reportGenerate: 3 * 1800 });
  assert.equal(c.logRetentionDays, 14);
  assert.equal(c.logLevel, "info");
  assert.equal(c.mongodbDatabase, "sophia");
  assert.equal(c.openaiModel, "gpt-4.1-mini");
  assert.equal(c.openaiBaseUrl, undefined);
  assert.equal(c.resumeBucket, undefined);
  assert.equal(c.alarmTopicArn, undefined);
  assert.equal(c.artifactsDir, path.join(REPO_ROOT, "target", "lambda"));
  assert.equal(c.mongodbAuth, "password");
  assert.equal(c.resumeBucketAccess, "none", "no S3 grant unless asked for");
  assert.equal(c.invocableUnsubscribed, false);
  assert.equal(c.protectData, false, "dev is not protected");
  assert.equal(c.vpc, undefined, "no VPC placement by default");
  assert.equal(c.secretsManagerTtlSeconds, undefined);
});

test("secrets come back as secret Outputs", async () => {
  const c = await load("dev", { ...TEST_SECRETS });
  const uri = await resolve(c.secrets.mongodbUri);
  const key = await resolve(c.secrets.openaiApiKey);
  assert.deepEqual([uri.secret, uri.value], [true, TEST_SECRETS["sophia:mongodbUri"]]);
  assert.deepEqual([key.secret, key.value], [true, TEST_SECRETS["sophia:openaiApiKey"]]);
});

test("one number applies to every queue; a map sets some and leaves the rest at the default", async () => {
  const c = await load("dev", {
    ...TEST_SECRETS,
    "sophia:maxConcurrency": "5",
    "sophia:alarmOldestMessageAgeSeconds": JSON.stringify({ reportGenerate: 7200 }),
    "sophia:memoryMb": JSON.stringify({ "interview-failed": 128 }),
  });
  assert.deepEqual(c.maximumConcurrency, { interviewCompleted: 5, reportGenerate: 5 });
  assert.deepEqual(c.oldestMessageAgeAlarmSeconds, { interviewCompleted: 540, reportGenerate: 7200 });
  assert.deepEqual(c.memoryMb, { "interview-completed": 256, "report-generate": 512, "interview-failed": 128 });
});

test("artifactsDir: a relative config path is relative to the repo; CARGO_TARGET_DIR moves the default", async () => {
  assert.equal((await load("dev", { ...TEST_SECRETS, "sophia:artifactsDir": "out/lambda" })).artifactsDir, path.join(REPO_ROOT, "out/lambda"));
  assert.equal((await load("dev", { ...TEST_SECRETS }, { CARGO_TARGET_DIR: "/ci/cache/target" })).artifactsDir, "/ci/cache/target/lambda");
});

test("every invalid key is reported in one error, with the command to set missing secrets", async () => {
  const e = await loadError("staging", {
    "sophia:architecture": "amd64",
    "sophia:maxConcurrency": "1",
    "sophia:memoryMb": JSON.stringify({ reportgenerate: 512, "report-generate": 64 }),
    "sophia:logRetentionDays": "10",
    "sophia:alarmTopicArn": "my-topic",
    "sophia:resumeBucket": "Not_A_Bucket",
    "sophia:openaiBaseUrl": "ftp://x",
  });
  const expected = [
    "sophia:architecture must be one of arm64, x86_64",
    "sophia:maxConcurrency must be an integer in [2, 1000], got 1",
    'sophia:memoryMb has unknown key "reportgenerate"',
    "sophia:memoryMb.report-generate must be an integer in [128, 10240]",
    "sophia:logRetentionDays must be one of",
    "sophia:alarmTopicArn must be an SNS topic ARN",
    "sophia:resumeBucket must be an existing S3 bucket name",
    "sophia:openaiBaseUrl must be an https URL",
    "pulumi config set --secret sophia:mongodbUri <value> --stack staging",
    "pulumi config set --secret sophia:openaiApiKey <value> --stack staging",
  ];
  for (const fragment of expected) assert.ok(e.message.includes(fragment), `missing "${fragment}" in:\n${e.message}`);
  assert.equal(e.problems.length, expected.length);
});

test("maximum concurrency above AWS's 1000 is refused", async () => {
  const e = await loadError("dev", { ...TEST_SECRETS, "sophia:maxConcurrency": JSON.stringify({ interviewCompleted: 1001 }) });
  assert.match(e.message, /sophia:maxConcurrency\.interviewCompleted must be an integer in \[2, 1000\], got 1001/);
});

test("recordConcurrency: unset leaves the binaries' default; one number or a map, for the functions that read it", async () => {
  const unset = await load("dev", { ...TEST_SECRETS });
  assert.deepEqual(unset.recordConcurrency, { "interview-completed": undefined, "interview-failed": undefined });
  const one = await load("dev", { ...TEST_SECRETS, "sophia:recordConcurrency": "1" });
  assert.deepEqual(one.recordConcurrency, { "interview-completed": 1, "interview-failed": 1 });
  const map = await load("dev", { ...TEST_SECRETS, "sophia:recordConcurrency": JSON.stringify({ "interview-completed": 10 }) });
  assert.deepEqual(map.recordConcurrency, { "interview-completed": 10, "interview-failed": undefined });
});

test("recordConcurrency outside [1, 10], or for a function that does not read it, is refused", async () => {
  const zero = await loadError("dev", { ...TEST_SECRETS, "sophia:recordConcurrency": "0" });
  assert.match(zero.message, /sophia:recordConcurrency must be an integer in \[1, 10\], got 0/);
  const e = await loadError("dev", {
    ...TEST_SECRETS,
    "sophia:recordConcurrency": JSON.stringify({ "report-generate": 2, "interview-completed": 11 }),
  });
  assert.match(e.message, /sophia:recordConcurrency has unknown key "report-generate" \(known: interview-completed, interview-failed\)/);
  assert.match(e.message, /sophia:recordConcurrency\.interview-completed must be an integer in \[1, 10\], got 11/);
  assert.equal(e.problems.length, 2);
});

// ---------------------------------------------------------------------------------------------
// Stack files: what the Pulumi CLI would hand the program for each committed stage.

const SECRET_KEYS = ["sophia:mongodbUri", "sophia:openaiApiKey"];

/** A stack file's `config:` as the CLI passes it to the program (objects as JSON strings). */
function stackConfig(doc: unknown, where: string): Record<string, string> {
  const config = (doc as { config?: Record<string, unknown> } | null)?.config;
  assert.ok(config && typeof config === "object", `${where} has a config: map`);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (SECRET_KEYS.includes(key)) {
      assert.ok(typeof value === "object" && value !== null && "secure" in value, `${where}: ${key} must be a secure (encrypted) value`);
      continue;
    }
    out[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return out;
}

test("every committed Pulumi.<stage>.yaml is accepted by the program and holds no plaintext secret", async () => {
  // The checkout's stack files, or step 3's (deploy-doc.test.ts runs this test on them: SOPHIA_TEST_STACK_FILES).
  const STACK_DIR = process.env["SOPHIA_TEST_STACK_FILES"] ?? REPO_ROOT;
  const files = fs.readdirSync(STACK_DIR).filter((f) => /^Pulumi\.[a-z0-9-]+\.yaml$/.test(f));
  assert.ok(files.includes("Pulumi.dev.yaml"), "the dev stage is committed");
  for (const file of files) {
    const stage = file.replace(/^Pulumi\.|\.yaml$/g, "");
    const text = fs.readFileSync(path.join(STACK_DIR, file), "utf8");
    for (const secret of Object.values(TEST_SECRETS)) assert.ok(!text.includes(secret));
    // A value on the key's own line is plaintext; `secure:` on the next line is how the CLI stores a secret.
    assert.doesNotMatch(text, /^[ \t]*sophia:(mongodbUri|openaiApiKey):[ \t]*[^\s#]/m, `${file}: secrets only as secure values`);
    const c = await load(stage, { ...stackConfig(yaml.load(text), file), ...TEST_SECRETS });
    assert.equal(c.stage, stage);
  }
  const dev = await load("dev", { ...stackConfig(yaml.load(fs.readFileSync(path.join(STACK_DIR, "Pulumi.dev.yaml"), "utf8")), "dev"), ...TEST_SECRETS });
  assert.equal(dev.architecture, "arm64");
  assert.deepEqual(dev.maximumConcurrency, { interviewCompleted: 2, reportGenerate: 2 });
  assert.ok(dev.resumeBucket);
});

test("the README's prod example is a valid stack file", async () => {
  const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");
  const block = /```yaml\n(# Pulumi\.prod-rs\.yaml\n[\s\S]*?)```/.exec(readme);
  assert.ok(block, "README has a ```yaml block starting with # Pulumi.prod-rs.yaml");
  const c = await load("prod-rs", { ...stackConfig(yaml.load(block[1]!), "README prod block"), ...TEST_SECRETS });
  assert.equal(c.memoryMb["report-generate"], 1024);
  assert.deepEqual(c.maximumConcurrency, { interviewCompleted: 20, reportGenerate: 5 });
  assert.ok(c.alarmTopicArn);
});

test("docs/deploy.md's prod template (only the keys a person writes), with what scripts/bootstrap-stage adds, is a valid prod stack file", async () => {
  const doc = fs.readFileSync(path.join(REPO_ROOT, "docs", "deploy.md"), "utf8");
  const block = /<!-- deploy-doc: prod 1 -->\n```bash\n[\s\S]*?<<EOF[^\n]*\n([\s\S]*?)\nEOF\n/.exec(doc);
  assert.ok(block, "deploy.md's prod 1 block writes the stack file with a heredoc");
  const text = block[1]!.replace(/\$AWS_REGION/g, "eu-west-1").replace(/\$STAGE/g, "prod-rs");
  const written = yaml.load(text) as { config: Record<string, unknown> };
  const added = {
    "aws:allowedAccountIds": JSON.stringify(["222222222222"]),
    "sophia:kmsKeyAdministrators": JSON.stringify(["arn:aws:iam::222222222222:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_BreakGlass_0123456789abcdef"]),
  };
  const c = await load("prod-rs", { ...stackConfig(written, "deploy.md prod template"), ...added, ...TEST_SECRETS });
  assert.equal(c.architecture, "arm64");
  assert.equal(c.protectData, true, "prod-rs's data is protected by its name (declarations/stages.json)");
  for (const placeholder of ["123456789012", "sophia-prod-rs-resumes", "alarmTopicArn", "resumeBucket"]) assert.ok(!text.includes(placeholder), placeholder);
});

test("Pulumi.yaml: project sophia, Node.js runtime, main infra-pulumi/ whose package.json names index.ts", () => {
  const project = yaml.load(fs.readFileSync(path.join(REPO_ROOT, "Pulumi.yaml"), "utf8")) as Record<string, any>;
  assert.equal(project["name"], "sophia");
  assert.equal(project["runtime"]?.name ?? project["runtime"], "nodejs");
  assert.equal(project["main"], "infra-pulumi/");
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "infra-pulumi", "package.json"), "utf8"));
  assert.equal(pkg.main, "index.ts");
  assert.ok(fs.existsSync(path.join(REPO_ROOT, "infra-pulumi", "index.ts")));
  const settings = loadSettings();
  assert.equal(settings.appName, project["name"], "the app name in queues.json is the project name");
});

test("openaiBaseUrl: https, or plain http only on loopback", async () => {
  for (const ok of ["https://llm.example.com/v1", "http://127.0.0.1:8080/v1", "http://localhost:4010", "http://[::1]:9000/v1"]) {
    assert.equal((await load("dev", { ...TEST_SECRETS, "sophia:openaiBaseUrl": ok })).openaiBaseUrl, ok);
  }
  for (const bad of ["http://llm.example.com/v1", "http://10.0.0.5/v1", "http://localhost.evil.com/v1"]) {
    const e = await loadError("dev", { ...TEST_SECRETS, "sophia:openaiBaseUrl": bad });
    assert.match(e.message, /sophia:openaiBaseUrl must be an https URL \(plain http only for a loopback gateway/);
  }
});

test("secretsExtensionLayerArn: required, in the stage's region, the variant of its architecture", async () => {
  const missing = await loadError("dev", { ...TEST_SECRETS, "sophia:secretsExtensionLayerArn": "" });
  assert.match(missing.message, /sophia:secretsExtensionLayerArn is not set: .*eu-west-1\/arm64.*AWS-Parameters-and-Secrets-Lambda-Extension-Arm64.*pulumi config set sophia:secretsExtensionLayerArn <arn>/);
  const region = await loadError("dev", {
    ...TEST_SECRETS,
    "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.arm64.replace("eu-west-1", "us-east-1"),
  });
  assert.match(region.message, /is in us-east-1, but the stage deploys to eu-west-1/);
  const arch = await loadError("dev", { ...TEST_SECRETS, "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.x86_64 });
  assert.match(arch.message, /names the layer AWS-Parameters-and-Secrets-Lambda-Extension, but the stage deploys arm64: use AWS-Parameters-and-Secrets-Lambda-Extension-Arm64/);
  const x86 = await load("dev", { ...TEST_SECRETS, "sophia:architecture": "x86_64", "sophia:secretsExtensionLayerArn": TEST_LAYER_ARN.x86_64 });
  assert.equal(x86.secretsExtensionLayerArn, TEST_LAYER_ARN.x86_64);
  const junk = await loadError("dev", { ...TEST_SECRETS, "sophia:secretsExtensionLayerArn": "AWS-Parameters-and-Secrets-Lambda-Extension-Arm64" });
  assert.match(junk.message, /must be a Lambda layer version ARN/);
});

test("mongodbAuth aws-iam: a password-less URI gets authMechanism=MONGODB-AWS and authSource=$external", async () => {
  const c = await load("dev", {
    ...TEST_SECRETS,
    "sophia:mongodbAuth": "aws-iam",
    "sophia:mongodbUri": "mongodb+srv://cluster0.example.mongodb.net/?retryWrites=true",
  });
  assert.equal(c.mongodbAuth, "aws-iam");
  assert.equal(c.mongodbIamUri, "mongodb+srv://cluster0.example.mongodb.net/?retryWrites=true&authMechanism=MONGODB-AWS&authSource=%24external");
  const given = await load("dev", {
    ...TEST_SECRETS,
    "sophia:mongodbAuth": "aws-iam",
    "sophia:mongodbUri": "mongodb+srv://cluster0.example.mongodb.net/app?authSource=%24external&authMechanism=MONGODB-AWS",
  });
  assert.equal(given.mongodbIamUri, "mongodb+srv://cluster0.example.mongodb.net/app?authSource=%24external&authMechanism=MONGODB-AWS");
});

test("mongodbAuth aws-iam refuses a URI with a user or password, or another mechanism; unknown modes are refused", async () => {
  const withPassword = await loadError("dev", { ...TEST_SECRETS, "sophia:mongodbAuth": "aws-iam" });
  assert.match(withPassword.message, /sophia:mongodbUri with mongodbAuth aws-iam must not carry a user or password/);
  assert.equal(withPassword.message.includes("not-a-real-password"), false, "the error never quotes the URI");
  const scram = await loadError("dev", {
    ...TEST_SECRETS,
    "sophia:mongodbAuth": "aws-iam",
    "sophia:mongodbUri": "mongodb://db.example.com/?authMechanism=SCRAM-SHA-256",
  });
  assert.match(scram.message, /must use authMechanism=MONGODB-AWS, not SCRAM-SHA-256/);
  const mode = await loadError("dev", { ...TEST_SECRETS, "sophia:mongodbAuth": "x509" });
  assert.match(mode.message, /sophia:mongodbAuth must be one of password, aws-iam, got "x509"/);
});

test("resumeBucketAccess: none by default; read/read-write need the bucket and a prefix; other values refused", async () => {
  const e = await loadError("dev", { ...TEST_SECRETS, "sophia:resumeBucketAccess": "read" });
  assert.match(e.message, /sophia:resumeBucketAccess read needs sophia:resumeBucket/);
  assert.match(e.message, /sophia:resumeBucketAccess read needs sophia:resumeBucketPrefix/);
  const bad = await loadError("dev", { ...TEST_SECRETS, "sophia:resumeBucketAccess": "all", "sophia:resumeBucketPrefix": "*" });
  assert.match(bad.message, /sophia:resumeBucketAccess must be one of none, read, read-write, got "all"/);
  assert.match(bad.message, /sophia:resumeBucketPrefix must be an object key prefix ending in '\/'/);
  const c = await load("dev", {
    ...TEST_SECRETS,
    "sophia:resumeBucket": "b-resumes",
    "sophia:resumeBucketAccess": "read",
    "sophia:resumeBucketPrefix": "candidates/resumes/",
  });
  assert.deepEqual([c.resumeBucketAccess, c.resumeBucketPrefix], ["read", "candidates/resumes/"]);
});

test("alarmSubscription: email or https; not together with an external topic", async () => {
  const c = await load("dev", { ...TEST_SECRETS, "sophia:alarmSubscription": JSON.stringify({ protocol: "email", endpoint: "oncall@example.com" }) });
  assert.deepEqual(c.alarmSubscription, { protocol: "email", endpoint: "oncall@example.com" });
  const e = await loadError("dev", {
    ...TEST_SECRETS,
    "sophia:alarmSubscription": JSON.stringify({ protocol: "https", endpoint: "http://hook.example.com" }),
  });
  assert.match(e.message, /sophia:alarmSubscription must be \{protocol: email/);
  const both = await loadError("dev", {
    ...TEST_SECRETS,
    "sophia:alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops",
    "sophia:alarmSubscription": JSON.stringify({ protocol: "email", endpoint: "oncall@example.com" }),
  });
  assert.match(both.message, /with sophia:alarmTopicArn set, subscribe that topic instead/);
});

const PINNED = { "aws:allowedAccountIds": JSON.stringify(["123456789012"]) };

test("protectData: on for prod by default, off for other stages, overridable; a protected stage must pin its account", async () => {
  assert.equal((await load("prod", { ...TEST_SECRETS, ...PINNED })).protectData, true);
  const unpinned = await loadError("prod", { ...TEST_SECRETS });
  assert.match(unpinned.message, /aws:allowedAccountIds must pin stack "prod" \(protected data\) to its AWS account: scripts\/bootstrap-stage prod sets it/);
  assert.equal((await load("staging", { ...TEST_SECRETS })).protectData, false);
  assert.equal((await load("staging", { ...TEST_SECRETS, ...PINNED, "sophia:protectData": "true" })).protectData, true);
  assert.equal((await load("prod", { ...TEST_SECRETS, "sophia:protectData": "false" })).protectData, false);
});

test("vpc: ids are checked; interface endpoints off unless asked", async () => {
  const c = await load("dev", {
    ...TEST_SECRETS,
    "sophia:vpc": JSON.stringify({ vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111", "subnet-0bbb2222"], securityGroupIds: ["sg-0ccc3333"] }),
  });
  assert.deepEqual(c.vpc, { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111", "subnet-0bbb2222"], securityGroupIds: ["sg-0ccc3333"], interfaceEndpoints: false });
  const e = await loadError("dev", { ...TEST_SECRETS, "sophia:vpc": JSON.stringify({ subnetIds: [], securityGroupIds: ["default"] }) });
  assert.match(e.message, /sophia:vpc.subnetIds must be a non-empty list of subnet-... ids/);
  assert.match(e.message, /sophia:vpc.securityGroupIds must be a non-empty list of sg-... ids/);
  assert.match(e.message, /sophia:vpc.vpcId must be a vpc-... id/);
});

test("logLevel: debug and trace are refused (release builds keep INFO and above only); info/warn/error and directives pass", async () => {
  for (const level of ["debug", "trace", "info,sophia_credits=debug", "TRACE"]) {
    const e = await loadError("dev", { ...TEST_SECRETS, "sophia:logLevel": level });
    assert.match(e.message, /asks for debug\/trace lines, which the release binaries do not contain/, level);
  }
  for (const level of ["info", "warn", "error", "warn,sophia_reports=info"]) {
    assert.equal((await load("dev", { ...TEST_SECRETS, "sophia:logLevel": level })).logLevel, level);
  }
});

test("alarms reach a person: a protected stage without topic or subscription is refused; another stage is warned", async () => {
  const prod = await load("prod", { ...TEST_SECRETS, ...PINNED });
  assert.throws(
    () => checkAlarmDelivery(prod),
    (e: unknown) => e instanceof ConfigError && /alarms of protected stage "prod" would reach nobody: set sophia:alarmSubscription/.test(e.message),
  );
  const subscribed = await load("prod", { ...TEST_SECRETS, ...PINNED, "sophia:alarmSubscription": JSON.stringify({ protocol: "email", endpoint: "oncall@example.com" }) });
  assert.equal(checkAlarmDelivery(subscribed), undefined);
  const topic = await load("prod", { ...TEST_SECRETS, ...PINNED, "sophia:alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops" });
  assert.equal(checkAlarmDelivery(topic), undefined);
  const dev = await load("dev", { ...TEST_SECRETS });
  assert.match(checkAlarmDelivery(dev)!, /^ALARMS REACH NOBODY on stage "dev"/);
  // The program checks it before registering anything (stack.ts), and logs the warning.
  const stack = fs.readFileSync(path.join(REPO_ROOT, "infra-pulumi", "src", "stack.ts"), "utf8");
  assert.match(stack, /const unrouted = checkAlarmDelivery\(config\);\n  if \(unrouted\) void pulumi\.log\.warn\(unrouted\);/);
});
