/**
 * The bootstrap program under Pulumi's mocks, for an account holding `dev` (previewed by pull
 * requests) and `prod-rs` (production), with the S3 backend: what it creates and how each role is trusted and scoped.
 * A real `pulumi up` of it needs an AWS account: docs/deploy.md gives the command and the checks.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import type { Bootstrap } from "../src/bootstrap";
import { MAPPING_UUID_PATTERN } from "../src/policies";

const ACCOUNT = "012345678901";
const REPO = "acme/sophia-async-jobs";
interface Recorded {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}
const resources: Recorded[] = [];
let bootstrap: Bootstrap;
let repoRoot: string;

const BREAK_GLASS = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_BreakGlass_0123456789abcdef`;
const LAYER = "arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:19";

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply((v) => resolve(v)));
}
const ofType = (t: string) => resources.filter((r) => r.type === t);
const byName = (t: string, n: string) => {
  const r = resources.find((x) => x.type === t && x.name === n);
  assert.ok(r, `${t} ${n}`);
  return r;
};

before(async () => {
  // A repository root with the two stage files the bootstrap reads.
  repoRoot = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bootstrap-repo-"));
  fs.writeFileSync(path.join(repoRoot, "Pulumi.dev.yaml"), `config:\n  aws:region: eu-west-1\n  sophia:secretsExtensionLayerArn: ${LAYER}\n`);
  fs.writeFileSync(
    path.join(repoRoot, "Pulumi.prod-rs.yaml"),
    `config:\n  aws:region: eu-west-1\n  sophia:secretsExtensionLayerArn: ${LAYER}\n  sophia:vpc:\n    vpcId: vpc-0abc1234\n    subnetIds: [subnet-0aaa1111]\n    securityGroupIds: [sg-0ccc3333]\n`,
  );
  process.env["SOPHIA_BOOTSTRAP_REPO_ROOT"] = repoRoot;
  pulumi.runtime.setAllConfig({
    "aws:region": "eu-west-1",
    "sophia-bootstrap:githubRepository": REPO,
    "sophia-bootstrap:stages": JSON.stringify(["dev", "prod-rs"]),
    "sophia-bootstrap:protect": "false",
    "sophia-bootstrap:keyAdministrators": JSON.stringify([BREAK_GLASS]),
  });
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        resources.push({ type: args.type, name: args.name, inputs: args.inputs as Record<string, unknown> });
        const name = (args.inputs["name"] ?? args.inputs["bucket"] ?? args.name) as string;
        const state: Record<string, unknown> = { ...args.inputs };
        if (args.type === "aws:iam/openIdConnectProvider:OpenIdConnectProvider") state["arn"] = `arn:aws:iam::${ACCOUNT}:oidc-provider/token.actions.githubusercontent.com`;
        if (args.type === "aws:iam/role:Role") state["arn"] = `arn:aws:iam::${ACCOUNT}:role${args.inputs["path"] ?? "/"}${name}`;
        if (args.type === "aws:iam/policy:Policy") state["arn"] = `arn:aws:iam::${ACCOUNT}:policy${args.inputs["path"] ?? "/"}${name}`;
        if (args.type === "aws:kms/key:Key") Object.assign(state, { arn: `arn:aws:kms:eu-west-1:${ACCOUNT}:key/${args.name}`, keyId: args.name });
        if (args.type === "aws:s3/bucket:Bucket") Object.assign(state, { arn: `arn:aws:s3:::${name}`, bucket: name });
        return { id: `${args.name}-id`, state };
      },
      call(args) {
        if (args.token === "aws:index/getCallerIdentity:getCallerIdentity") return { accountId: ACCOUNT, arn: "arn:aws:iam::012345678901:user/admin", id: ACCOUNT, userId: "AIDA" };
        if (args.token === "aws:index/getPartition:getPartition") return { partition: "aws", dnsSuffix: "amazonaws.com", id: "aws" };
        throw new Error(`unexpected invoke ${args.token}`);
      },
    },
    "sophia-bootstrap",
    "account-main",
    false,
  );
  const { createBootstrap } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  bootstrap = createBootstrap();
  await (pulumi.runtime as unknown as { waitForRPCs(): Promise<void> }).waitForRPCs();
});

test("the account's IAM Access Analyzer for external access (the residuals' detection)", () => {
  const analyzers = ofType("aws:accessanalyzer/analyzer:Analyzer");
  assert.equal(analyzers.length, 1);
  assert.equal(analyzers[0]!.inputs["type"], "ACCOUNT");
  assert.equal(analyzers[0]!.inputs["analyzerName"], "sophia-bootstrap-external-access");
  assert.ok(bootstrap.accessAnalyzer, "created: sophia-bootstrap:accessAnalyzerArn names none");
});

test("the operator audit trail is the bootstrap's: 400 days, deletion protection on, and every deploy role is denied any logs action on it", () => {
  for (const stage of ["dev", "prod-rs"]) {
    const group = byName("aws:cloudwatch/logGroup:LogGroup", `${stage}-operator-audit`);
    assert.equal(group.inputs["name"], `sophia-${stage}-operator-audit`);
    assert.equal(group.inputs["retentionInDays"], 400);
    assert.equal(group.inputs["deletionProtectionEnabled"], true);
    const deny = deployDoc(stage).Statement.find((s) => s.Sid === "DenyOperatorAuditTrail")!;
    assert.deepEqual([deny.Effect, deny.Action, deny.Resource], [
      "Deny",
      ["logs:*"],
      [`arn:aws:logs:eu-west-1:${ACCOUNT}:log-group:sophia-${stage}-operator-audit`, `arn:aws:logs:eu-west-1:${ACCOUNT}:log-group:sophia-${stage}-operator-audit:*`],
    ]);
    assert.ok(!JSON.stringify(deployDoc(stage).Statement.filter((s) => s.Effect === "Allow")).includes("operator-audit"), "no grant names it");
  }
});

test("the GitHub OIDC provider: GitHub's issuer, audience sts.amazonaws.com", () => {
  const p = ofType("aws:iam/openIdConnectProvider:OpenIdConnectProvider");
  assert.equal(p.length, 1);
  assert.equal(p[0]!.inputs["url"], "https://token.actions.githubusercontent.com");
  assert.deepEqual(p[0]!.inputs["clientIdLists"], ["sts.amazonaws.com"]);
});

test("one deploy role per stage, trusted only for that stage's GitHub environment (prod-rs, the production stage of declarations/stages.json: production)", async () => {
  for (const [stage, env] of [["dev", "dev"], ["prod-rs", "production"]] as const) {
    const role = byName("aws:iam/role:Role", `${stage}-deploy`);
    assert.equal(role.inputs["name"], `sophia-bootstrap-${stage}-deploy`);
    assert.equal(role.inputs["path"], "/sophia-bootstrap/", "outside every stage's IAM path");
    const trust = JSON.parse(role.inputs["assumeRolePolicy"] as string);
    assert.equal(trust.Statement.length, 1);
    assert.deepEqual(trust.Statement[0].Principal, { Federated: `arn:aws:iam::${ACCOUNT}:oidc-provider/token.actions.githubusercontent.com` });
    assert.equal(trust.Statement[0].Action, "sts:AssumeRoleWithWebIdentity");
    // The customised subject (scripts/protect-environments sets the repository's claim keys): the
    // environment, the ref main and infra.yml as on main; never the environment alone.
    assert.deepEqual(trust.Statement[0].Condition, {
      StringEquals: {
        "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
        "token.actions.githubusercontent.com:sub": `repo:${REPO}:environment:${env}:ref:refs/heads/main:job_workflow_ref:${REPO}/.github/workflows/infra.yml@refs/heads/main`,
      },
    });
  }
});

/** A deploy role's statements: its inline policy and the managed policies attached to it. */
function deployDoc(stage: string): { Statement: { Sid: string; Effect: string; Action: string[]; Resource: string[] }[] } {
  const inline = JSON.parse(byName("aws:iam/rolePolicy:RolePolicy", `${stage}-deploy-policy`).inputs["policy"] as string);
  const managed = ofType("aws:iam/policy:Policy")
    .filter((p) => p.name.startsWith(`${stage}-deploy-`))
    .map((p) => JSON.parse(p.inputs["policy"] as string));
  const attached = ofType("aws:iam/rolePolicyAttachment:RolePolicyAttachment").filter((a) => a.inputs["role"] === `sophia-bootstrap-${stage}-deploy`);
  assert.equal(attached.length, managed.length, "every managed part is attached");
  assert.ok(managed.length >= 1 && managed.length <= 8);
  return { Statement: [inline, ...managed].flatMap((d) => d.Statement) };
}

test("the deploy policy: the table for its stage, its own state objects and secrets-provider key", () => {
  const doc = deployDoc("dev");
  const grants = (action: string) => doc.Statement.filter((s: { Action: string[] }) => s.Action.includes(action)).flatMap((s: { Resource: string[] }) => s.Resource);
  assert.deepEqual(grants("lambda:GetLayerVersion"), [LAYER], "the layer of Pulumi.dev.yaml");
  assert.deepEqual(grants("cloudwatch:PutDashboard"), [`arn:aws:cloudwatch::${ACCOUNT}:dashboard/sophia-dev`]);
  assert.ok(grants("s3:PutObject").includes(`arn:aws:s3:::sophia-pulumi-state-${ACCOUNT}-eu-west-1/.pulumi/stacks/sophia/dev.json`));
  assert.deepEqual(grants("kms:Encrypt"), [`arn:aws:kms:eu-west-1:${ACCOUNT}:key/dev-pulumi-secrets`]);
  assert.equal(grants("ec2:CreateVpcEndpoint").length, 0, "dev has no sophia:vpc");
  assert.doesNotMatch(JSON.stringify(doc), /sophia-prod|sophia\/prod|prod-pulumi-secrets|bootstrap-prod/);
  const prod = deployDoc("prod-rs");
  // prod sets sophia:vpc without interfaceEndpoints: its functions in the VPC, no endpoint of its own.
  assert.ok(JSON.stringify(prod).includes(`"lambda:VpcIds":["vpc-0abc1234"]`), "prod sets sophia:vpc");
  assert.ok(!JSON.stringify(prod).includes("ec2:CreateVpcEndpoint"), "prod's stack creates no endpoint (interfaceEndpoints unset)");
  assert.doesNotMatch(JSON.stringify(prod), /sophia-dev|sophia\/dev|dev-pulumi-secrets|bootstrap-dev/);
});

test("the preview role: jobs of the preview environment only; reads dev's state and decrypts dev's config, nothing else", () => {
  const role = byName("aws:iam/role:Role", "preview");
  const trust = JSON.parse(role.inputs["assumeRolePolicy"] as string);
  // Not `pull_request`: any pull-request job of any workflow a branch adds would match it.
  assert.deepEqual(trust.Statement[0].Condition, {
    StringEquals: { "token.actions.githubusercontent.com:aud": "sts.amazonaws.com" },
    StringLike: { "token.actions.githubusercontent.com:sub": `repo:${REPO}:environment:preview:ref:refs/pull/*/merge:job_workflow_ref:${REPO}/.github/workflows/infra.yml@refs/pull/*/merge` },
  });
  const doc = JSON.parse(byName("aws:iam/rolePolicy:RolePolicy", "preview-policy").inputs["policy"] as string);
  const actions = [...new Set(doc.Statement.flatMap((s: { Action: string[] }) => s.Action))].sort();
  assert.deepEqual(actions, ["kms:Decrypt", "s3:GetObject", "s3:ListBucket"]);
  const decrypt = doc.Statement.filter((s: { Action: string[] }) => s.Action.includes("kms:Decrypt")).flatMap((s: { Resource: string[] }) => s.Resource);
  assert.deepEqual(decrypt.sort(), [`arn:aws:kms:eu-west-1:${ACCOUNT}:key/dev-pulumi-secrets`, `arn:aws:kms:eu-west-1:${ACCOUNT}:key/state-key`]);
  assert.doesNotMatch(JSON.stringify(doc), /prod/, "never prod's state or key");
});

test("the state bucket: versioning, SSE-KMS with its own key, public access blocked, owner-enforced, TLS only", () => {
  const bucket = ofType("aws:s3/bucket:Bucket");
  assert.equal(bucket.length, 1);
  assert.equal(bucket[0]!.inputs["bucket"], `sophia-pulumi-state-${ACCOUNT}-eu-west-1`);
  assert.deepEqual(ofType("aws:s3/bucketVersioning:BucketVersioning")[0]!.inputs["versioningConfiguration"], { status: "Enabled" });
  const sse = ofType("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")[0]!.inputs["rules"] as Record<string, unknown>[];
  assert.deepEqual(sse[0]!["applyServerSideEncryptionByDefault"], { sseAlgorithm: "aws:kms", kmsMasterKeyId: `arn:aws:kms:eu-west-1:${ACCOUNT}:key/state-key` });
  const pab = ofType("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")[0]!.inputs;
  for (const k of ["blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"]) assert.equal(pab[k], true, k);
  assert.deepEqual(ofType("aws:s3/bucketOwnershipControls:BucketOwnershipControls")[0]!.inputs["rule"], { objectOwnership: "BucketOwnerEnforced" });
  const policy = JSON.parse(ofType("aws:s3/bucketPolicy:BucketPolicy")[0]!.inputs["policy"] as string);
  assert.deepEqual(policy.Statement[0].Condition, { Bool: { "aws:SecureTransport": "false" } });
  assert.equal(policy.Statement[0].Effect, "Deny");
});

test("one secrets-provider key per stage, rotation on, alias named for `pulumi stack init --secrets-provider`", async () => {
  const aliases = ofType("aws:kms/alias:Alias").map((a) => a.inputs["name"]).sort();
  assert.deepEqual(aliases, ["alias/sophia-dev-pulumi-secrets", "alias/sophia-prod-rs-pulumi-secrets", "alias/sophia-pulumi-state"]);
  for (const k of ofType("aws:kms/key:Key")) assert.equal(k.inputs["enableKeyRotation"], true, k.name);
  assert.equal(await unwrap(bootstrap.outputs["DEV_SECRETS_PROVIDER"]!), "awskms://alias/sophia-dev-pulumi-secrets?region=eu-west-1");
  assert.equal(await unwrap(bootstrap.outputs["PULUMI_BACKEND_URL"]!), `s3://sophia-pulumi-state-${ACCOUNT}-eu-west-1?region=eu-west-1`);
});

test("stage files are checked: a missing file, another region, a missing layer are all reported", () => {
  const { stageFacts } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  assert.deepEqual(stageFacts("staging", "eu-west-1", {}, repoRoot), ["no Pulumi.staging.yaml at the repository root: write the stage's file first (docs/deploy.md, step 1)"]);
  fs.writeFileSync(path.join(repoRoot, "Pulumi.qa.yaml"), "config:\n  aws:region: us-east-1\n");
  const problems = stageFacts("qa", "eu-west-1", {}, repoRoot) as string[];
  assert.equal(problems.length, 2);
  assert.match(problems[0]!, /deploys to us-east-1, but this bootstrap stack is in eu-west-1/);
  assert.match(problems[1]!, /sophia:secretsExtensionLayerArn must be a layer version ARN/);
});

test("stage-file values written into ARNs are the stack's own forms: a bucket, a prefix ending in '/' without '*', hex VPC, subnet and security group ids", () => {
  const { stageFacts, STAGE_FILE_PATTERNS } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  const good = "config:\n  aws:region: eu-west-1\n  sophia:secretsExtensionLayerArn: arn:aws:lambda:eu-west-1:123456789012:layer:ext:1\n";
  const facts = (extra: string) => {
    fs.writeFileSync(path.join(repoRoot, "Pulumi.qa.yaml"), good + extra);
    return stageFacts("qa", "eu-west-1", {}, repoRoot);
  };
  const ok = facts("  sophia:resumeBucket: my-resumes\n  sophia:resumeBucketPrefix: resumes/qa/\n  sophia:vpc:\n    vpcId: vpc-0abc1234\n    subnetIds: [subnet-0aaa1111]\n    securityGroupIds: [sg-0ccc3333]\n");
  assert.ok(!Array.isArray(ok), JSON.stringify(ok));
  assert.equal(ok.resumeBucketPrefix, "resumes/qa/");
  for (const [extra, message] of [
    ["  sophia:resumeBucket: '*'\n", /sophia:resumeBucket must be an S3 bucket name/],
    ["  sophia:resumeBucket: my-resumes/x\n", /sophia:resumeBucket must be an S3 bucket name/],
    ["  sophia:resumeBucketPrefix: '*'\n", /sophia:resumeBucketPrefix must be an object key prefix ending in '\/'/],
    ["  sophia:resumeBucketPrefix: resumes\n", /sophia:resumeBucketPrefix must be an object key prefix/],
    ["  sophia:resumeBucketPrefix: resumes/*/\n", /sophia:resumeBucketPrefix must be an object key prefix/],
    ["  sophia:vpc:\n    vpcId: '*'\n    subnetIds: [subnet-0aaa1111]\n    securityGroupIds: [sg-0ccc3333]\n", /sophia:vpc must name vpcId/],
    ["  sophia:vpc:\n    vpcId: vpc-0abc1234\n    subnetIds: [subnet-*]\n    securityGroupIds: [sg-0ccc3333]\n", /sophia:vpc must name vpcId/],
    ["  sophia:vpc:\n    vpcId: vpc-0abc1234\n    subnetIds: [subnet-0aaa1111]\n    securityGroupIds: ['sg-*']\n", /sophia:vpc must name vpcId/],
  ] as const) {
    const problems = facts(extra);
    assert.ok(Array.isArray(problems) && problems.length === 1, `${extra}: ${JSON.stringify(problems)}`);
    assert.match(problems[0]!, message);
  }
  // One rule, two packages: each pattern is infra-pulumi/src/config.ts's own.
  const stack = fs.readFileSync(path.join(__dirname, "..", "..", "infra-pulumi", "src", "config.ts"), "utf8");
  for (const p of [STAGE_FILE_PATTERNS.resumeBucket, STAGE_FILE_PATTERNS.resumeBucketPrefix, STAGE_FILE_PATTERNS.vpcId]) assert.ok(stack.includes(`/${p.source}/`), p.source);
  assert.ok(stack.includes("new RegExp(`^${prefix}-[0-9a-f]{8,17}$`)"), "config.ts's subnet and security group id pattern");
  assert.equal(STAGE_FILE_PATTERNS.subnetId.source, "^subnet-[0-9a-f]{8,17}$");
  assert.equal(STAGE_FILE_PATTERNS.securityGroupId.source, "^sg-[0-9a-f]{8,17}$");
});

test("a protected stage cannot be the previewed one (a pull request's code reads the previewed stage's config)", () => {
  const { loadBootstrapConfig } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  pulumi.runtime.setAllConfig({
    "aws:region": "eu-west-1",
    "sophia-bootstrap:githubRepository": REPO,
    "sophia-bootstrap:stages": JSON.stringify(["prod-rs"]),
    "sophia-bootstrap:previewStage": "prod-rs",
  });
  assert.throws(() => loadBootstrapConfig(), /previewStage must not be a protected stage/);
});

test("the deploy role's policies are exactly policies.ts's deployRolePolicies (what the rehearsal evaluates), its managed parts attached", () => {
  const { deployRolePolicies } = require("../src/policies") as typeof import("../src/policies");
  const prodVpc = { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111"], securityGroupIds: ["sg-0ccc3333"] };
  for (const [stage, vpc] of [["dev", false], ["prod-rs", prodVpc]] as const) {
    const expected = deployRolePolicies({
      scope: { partition: "aws", region: "eu-west-1", account: ACCOUNT, stage, layerArn: LAYER, vpc },
      state: { bucket: `sophia-pulumi-state-${ACCOUNT}-eu-west-1`, keyArn: `arn:aws:kms:eu-west-1:${ACCOUNT}:key/state-key` },
      secretsKeyArn: `arn:aws:kms:eu-west-1:${ACCOUNT}:key/${stage}-pulumi-secrets`,
    });
    assert.deepEqual(JSON.parse(byName("aws:iam/rolePolicy:RolePolicy", `${stage}-deploy-policy`).inputs["policy"] as string), expected.inline);
    expected.managed.forEach((doc, i) => {
      const policy = byName("aws:iam/policy:Policy", `${stage}-deploy-${i + 1}`);
      assert.deepEqual(JSON.parse(policy.inputs["policy"] as string), doc);
      assert.equal(policy.inputs["path"], "/sophia-bootstrap/");
      assert.equal(byName("aws:iam/rolePolicyAttachment:RolePolicyAttachment", `${stage}-deploy-${i + 1}`).inputs["policyArn"], `arn:aws:iam::${ACCOUNT}:policy/sophia-bootstrap/sophia-bootstrap-${stage}-deploy-${i + 1}`);
    });
    assert.equal(ofType("aws:iam/policy:Policy").filter((p) => p.name.startsWith(`${stage}-deploy-`)).length, expected.managed.length);
  }
});

test("the guard: every deploy role denies itself IAM on the bootstrap's path, boundary removal, and role writes without its stage's boundary", () => {
  const inline = JSON.parse(byName("aws:iam/rolePolicy:RolePolicy", "dev-deploy-policy").inputs["policy"] as string);
  const deny = inline.Statement.filter((s: { Effect: string }) => s.Effect === "Deny");
  assert.deepEqual(deny.map((s: { Sid: string }) => s.Sid), ["DenyBootstrapIdentities", "DenyBoundaryRemoval", "DenyManagedPolicyWrites", "DenyOperatorAuditTrail", "DenyBootstrapDocuments", "DenyRoleWritesOutsideBoundary", "DenyRolesNotNamedForTheStage"]);
  assert.deepEqual(deny[0].Resource, [`arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/*`, `arn:aws:iam::${ACCOUNT}:policy/sophia-bootstrap/*`, `arn:aws:iam::${ACCOUNT}:oidc-provider/*`]);
  // The pause switch's documents: no SSM action of a deploy role on the bootstrap's names.
  assert.deepEqual(deny[4].Resource, [`arn:aws:ssm:eu-west-1:${ACCOUNT}:document/sophia-bootstrap-*`, `arn:aws:ssm:eu-west-1:${ACCOUNT}:automation-definition/sophia-bootstrap-*`]);
  assert.deepEqual(deny[5].Condition, { StringNotEquals: { "iam:PermissionsBoundary": `arn:aws:iam::${ACCOUNT}:policy/sophia-bootstrap/sophia-bootstrap-dev-boundary` } });
  // Role names: exactly the stack's function roles and the scheduled erasure check's, under the stage's path (NotResource).
  assert.deepEqual(deny[6].NotResource, ["interview-completed", "report-generate", "interview-failed", "erasure-check"].map((f) => `arn:aws:iam::${ACCOUNT}:role/sophia/dev/sophia-dev-${f}`));
});

test("the boundary per stage: under the bootstrap's path, only the stage's queues, logs, secrets and key (prod: its VPC's ENIs)", () => {
  const dev = byName("aws:iam/policy:Policy", "dev-boundary");
  assert.equal(dev.inputs["name"], "sophia-bootstrap-dev-boundary");
  assert.equal(dev.inputs["path"], "/sophia-bootstrap/");
  const doc = JSON.parse(dev.inputs["policy"] as string);
  // No role of the stage may touch a mapping: the pause switch's role is the bootstrap's.
  assert.deepEqual(doc.Statement.map((s: { Sid: string }) => s.Sid), ["StageQueues", "StageLogs", "StageSecrets", "StageKeyViaSecretsManager", "StageErasureCheck"]);
  assert.doesNotMatch(JSON.stringify(doc), /EventSourceMapping/);
  // The scheduled erasure check's role (infra-pulumi/src/erasure-check.ts): the stage's report-generate, no other function.
  assert.deepEqual(doc.Statement.find((s: { Sid: string }) => s.Sid === "StageErasureCheck").Resource, [`arn:aws:lambda:eu-west-1:${ACCOUNT}:function:sophia-dev-report-generate`]);
  assert.doesNotMatch(JSON.stringify(doc), /prod|ec2:/);
  const prod = JSON.parse(byName("aws:iam/policy:Policy", "prod-rs-boundary").inputs["policy"] as string);
  assert.ok(JSON.stringify(prod).includes("ec2:CreateNetworkInterface"), "prod sets sophia:vpc");
});

test("the bootstrap's keys: explicit key policies, no account-root statement, the break-glass administrators, each role exactly its use", () => {
  const state = JSON.parse(byName("aws:kms/key:Key", "state-key").inputs["policy"] as string);
  const text = JSON.stringify(state);
  assert.ok(!text.includes(":root") && !text.includes('"kms:*"'), "no root kms:*");
  const sid = (doc: { Statement: { Sid: string }[] }, s: string) => doc.Statement.find((x) => x.Sid === s) as unknown as { Principal: { AWS: string[] }; Action: string[]; Condition?: unknown };
  assert.deepEqual(sid(state, "KeyAdministrators").Principal.AWS, [BREAK_GLASS]);
  assert.deepEqual(sid(state, "WriteStateViaS3").Principal.AWS, [BREAK_GLASS, `arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-dev-deploy`, `arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-prod-rs-deploy`]);
  assert.deepEqual(sid(state, "ReadStateViaS3").Principal.AWS, [`arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-dev-preview`]);
  assert.deepEqual(sid(state, "ReadStateViaS3").Action, ["kms:Decrypt"]);
  const prod = JSON.parse(byName("aws:kms/key:Key", "prod-rs-pulumi-secrets").inputs["policy"] as string);
  assert.deepEqual(sid(prod, "StackSecretsEncryptDecrypt").Principal.AWS, [BREAK_GLASS, `arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-prod-rs-deploy`]);
  assert.equal(sid(prod, "StackSecretsDecrypt"), undefined, "no preview of prod");
  const dev = JSON.parse(byName("aws:kms/key:Key", "dev-pulumi-secrets").inputs["policy"] as string);
  assert.deepEqual(sid(dev, "StackSecretsDecrypt").Principal.AWS, [`arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-dev-preview`]);
});

test("the configuration: break-glass key administrators required with the S3 backend; stages whose names extend each other refused", () => {
  const { loadBootstrapConfig } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  const base = { "aws:region": "eu-west-1", "sophia-bootstrap:githubRepository": REPO };
  pulumi.runtime.setAllConfig({ ...base, "sophia-bootstrap:stages": JSON.stringify(["dev"]) });
  assert.throws(() => loadBootstrapConfig(), /keyAdministrators must list the break-glass/);
  pulumi.runtime.setAllConfig({ ...base, "sophia-bootstrap:stages": JSON.stringify(["dev"]), "sophia-bootstrap:keyAdministrators": JSON.stringify(["alice"]) });
  assert.throws(() => loadBootstrapConfig(), /keyAdministrators/);
  pulumi.runtime.setAllConfig({ ...base, "sophia-bootstrap:stages": JSON.stringify(["dev", "dev-eu"]), "sophia-bootstrap:keyAdministrators": JSON.stringify([BREAK_GLASS]) });
  assert.throws(() => loadBootstrapConfig(), /stages "dev" and "dev-eu"/);
  pulumi.runtime.setAllConfig({ ...base, "sophia-bootstrap:stages": JSON.stringify(["dev"]), "sophia-bootstrap:backend": "pulumi-cloud" });
  assert.equal(loadBootstrapConfig().keyAdministrators.length, 0, "Pulumi Cloud: no bootstrap key");
});

test("the API's and the operators' policies are the bootstrap's: per stage, under its path (no deploy role can write them), exact names from declarations/queues.json", async () => {
  for (const stage of ["dev", "prod-rs"]) {
    const api = byName("aws:iam/policy:Policy", `${stage}-api-publish`);
    const ops = byName("aws:iam/policy:Policy", `${stage}-ops`);
    assert.equal(api.inputs["name"], `sophia-bootstrap-${stage}-api-publish`);
    assert.equal(ops.inputs["name"], `sophia-bootstrap-${stage}-ops`);
    for (const p of [api, ops]) assert.equal(p.inputs["path"], "/sophia-bootstrap/");
    const apiDoc = JSON.parse(api.inputs["policy"] as string);
    assert.deepEqual(apiDoc.Statement, [
      {
        Sid: "ApiPublish",
        Effect: "Allow",
        Action: ["sqs:SendMessage"],
        Resource: [`arn:aws:sqs:eu-west-1:${ACCOUNT}:sophia-${stage}-interview-completed`, `arn:aws:sqs:eu-west-1:${ACCOUNT}:sophia-${stage}-report-generate`],
      },
    ]);
    const opsDoc = JSON.parse(ops.inputs["policy"] as string) as { Statement: { Sid: string; Resource: string[] }[] };
    assert.deepEqual(opsDoc.Statement.map((s) => s.Sid), ["OpsQueues", "OpsDeadLetterQueues", "OpsFunctions", "OpsQueueStatus", "OpsPauseSwitch", "OpsPauseSwitchDocument", "OpsPauseSwitchStatus", "OpsPassSwitchRole", "OpsAuditAppendSourceIdentity", "OpsAuditAppendUser", "OpsAuditRead"]);
    // Pause and resume through the bootstrap's switch document only: never UpdateEventSourceMapping.
    assert.ok(!JSON.stringify(opsDoc).includes("lambda:UpdateEventSourceMapping"));
    const sid = (x: string) => (opsDoc.Statement as unknown as { Sid: string; Resource: string[]; Condition?: unknown }[]).find((s) => s.Sid === x)!;
    assert.deepEqual(sid("OpsPauseSwitch").Resource, [
      `arn:aws:ssm:eu-west-1:${ACCOUNT}:document/sophia-bootstrap-${stage}-mapping-enabled`,
      `arn:aws:ssm:eu-west-1:${ACCOUNT}:automation-definition/sophia-bootstrap-${stage}-mapping-enabled:*`,
      `arn:aws:ssm:eu-west-1:${ACCOUNT}:automation-execution/*`,
    ]);
    assert.deepEqual(sid("OpsPauseSwitchDocument").Resource, [`arn:aws:ssm:eu-west-1:${ACCOUNT}:document/sophia-bootstrap-${stage}-mapping-enabled`]);
    assert.deepEqual(sid("OpsPassSwitchRole").Resource, [`arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-${stage}-mapping-switch`]);
    assert.deepEqual(sid("OpsPassSwitchRole").Condition, { StringEquals: { "iam:PassedToService": "ssm.amazonaws.com" } });
    for (const s of opsDoc.Statement.filter((x) => !["OpsQueueStatus", "OpsPauseSwitch", "OpsPauseSwitchDocument", "OpsPauseSwitchStatus", "OpsPassSwitchRole"].includes(x.Sid))) {
      for (const r of s.Resource) assert.match(r, new RegExp(`:sophia-${stage}-[a-z-]+(:\\*|:log-stream:(source/\\$\\{aws:SourceIdentity\\}|user/\\$\\{aws:username\\})/\\*)?$`), `${s.Sid}: ${r}`);
    }
    // The audit trail: a session appends only under the name AWS fills in (infra-pulumi/test/rehearsal/confinement.test.ts simulates it).
    assert.deepEqual(sid("OpsAuditAppendSourceIdentity").Resource, [`arn:aws:logs:eu-west-1:${ACCOUNT}:log-group:sophia-${stage}-operator-audit:log-stream:source/\${aws:SourceIdentity}/*`]);
    assert.deepEqual(sid("OpsAuditAppendUser").Resource, [`arn:aws:logs:eu-west-1:${ACCOUNT}:log-group:sophia-${stage}-operator-audit:log-stream:user/\${aws:username}/*`]);
    assert.match(await unwrap(bootstrap.outputs[`${stage.toUpperCase().replace(/-/g, "_")}_OPS_POLICY_ARN`]!), new RegExp(`:policy/sophia-bootstrap/sophia-bootstrap-${stage}-ops$`));
  }
});

test("the pause switch is the bootstrap's, per stage: its document (one request, Enabled on the UUID given, a UUID's form only) runs with its role, which sets the stage's tagged mappings only", () => {
  for (const stage of ["dev", "prod-rs"]) {
    const role = byName("aws:iam/role:Role", `${stage}-mapping-switch`);
    assert.equal(role.inputs["name"], `sophia-bootstrap-${stage}-mapping-switch`);
    assert.equal(role.inputs["path"], "/sophia-bootstrap/", "under the path every deploy role is denied IAM on");
    const trust = JSON.parse(role.inputs["assumeRolePolicy"] as string);
    assert.deepEqual(trust.Statement[0].Principal, { Service: "ssm.amazonaws.com" });
    assert.deepEqual(trust.Statement[0].Condition.StringEquals, { "aws:SourceAccount": ACCOUNT });
    const policy = JSON.parse(byName("aws:iam/rolePolicy:RolePolicy", `${stage}-mapping-switch`).inputs["policy"] as string);
    assert.deepEqual(policy.Statement, [
      {
        Sid: "StageMappingsEnabled",
        Effect: "Allow",
        Action: ["lambda:UpdateEventSourceMapping"],
        Resource: [`arn:aws:lambda:eu-west-1:${ACCOUNT}:event-source-mapping:*`],
        Condition: {
          ArnEqualsIfExists: { "lambda:FunctionArn": ["interview-completed", "report-generate", "interview-failed"].map((f) => `arn:aws:lambda:eu-west-1:${ACCOUNT}:function:sophia-${stage}-${f}`) },
          StringEquals: { "aws:ResourceTag/stage": stage },
        },
      },
    ]);
    const doc = byName("aws:ssm/document:Document", `${stage}-mapping-enabled`);
    assert.equal(doc.inputs["name"], `sophia-bootstrap-${stage}-mapping-enabled`, "outside every stage's sophia-<stage>-* names");
    assert.equal(doc.inputs["documentType"], "Automation");
    const content = JSON.parse(doc.inputs["content"] as string);
    assert.equal(content.assumeRole, `arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-${stage}-mapping-switch`);
    assert.deepEqual(Object.keys(content.parameters).sort(), ["Enabled", "MappingUuid"]);
    assert.equal(content.parameters.Enabled.type, "Boolean");
    const uuid = new RegExp(content.parameters.MappingUuid.allowedPattern);
    assert.ok(uuid.test("0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b"));
    for (const bad of ["0b5f8c2e", "0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b\n", "{{ssm:x}}", "0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b-x"]) assert.ok(!uuid.test(bad), bad);
    assert.equal(content.mainSteps.length, 1);
    assert.deepEqual(content.mainSteps[0].inputs, { Service: "lambda", Api: "UpdateEventSourceMapping", UUID: "{{ MappingUuid }}", Enabled: "{{ Enabled }}" });
  }  // sophia-ops refuses any other form (tools/ops/src/pause_switch.rs, check_document): the same pattern.
  const rust = fs.readFileSync(path.join(__dirname, "..", "..", "tools", "ops", "src", "pause_switch.rs"), "utf8");
  assert.ok(rust.includes(`const UUID_PATTERN: &str = "${MAPPING_UUID_PATTERN}";`), "pause_switch.rs's UUID_PATTERN is policies.ts's MAPPING_UUID_PATTERN");
});

test("the outputs: exactly outputNames (what docs/deploy.md may name), with each stage's extension layer", async () => {
  const { outputNames } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  assert.deepEqual(Object.keys(bootstrap.outputs).sort(), outputNames({ stages: ["dev", "prod-rs"], previewStage: "dev", backend: "s3" }).sort());
  assert.equal(await unwrap(bootstrap.outputs["DEV_EXTENSION_LAYER_ARN"]!), LAYER);
});

test("break-glass roles by pattern: an account principal limited by aws:PrincipalArn; a pattern that is not a role's stable name refused", () => {
  const { breakGlassProblems, withBreakGlassRoles } = require("../src/bootstrap") as typeof import("../src/bootstrap");
  const { stateKeyPolicy, KMS_ADMIN_ACTIONS } = require("../src/policies") as typeof import("../src/policies");
  const pattern = `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_BreakGlass_*`;
  assert.deepEqual(breakGlassProblems([pattern]), []);
  for (const bad of [`arn:aws:iam::${ACCOUNT}:role/*`, `arn:aws:iam::${ACCOUNT}:role/aws-reserved/*`, BREAK_GLASS, `arn:aws:iam::${ACCOUNT}:user/ab*`, "*"]) {
    assert.equal(breakGlassProblems([bad]).length, 1, bad);
  }
  const base = stateKeyPolicy({ admins: [BREAK_GLASS], writers: [], readers: [], region: "eu-west-1" });
  assert.equal(withBreakGlassRoles(base, [], "aws", ACCOUNT), base, "no pattern: the policy is unchanged (no account principal)");
  const doc = withBreakGlassRoles(base, [pattern], "aws", ACCOUNT);
  assert.deepEqual(doc.Statement.at(-1), {
    Sid: "BreakGlassRoles",
    Effect: "Allow",
    Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` },
    Action: KMS_ADMIN_ACTIONS,
    Resource: "*",
    Condition: { ArnLike: { "aws:PrincipalArn": [pattern] } },
  });
  assert.throws(() => withBreakGlassRoles(base, [pattern.replace(ACCOUNT, "999999999999")], "aws", ACCOUNT), /roles of this account/);
});

/**
 * What `pulumi up` keys the bootstrap's resources by (no component: every URN is its type and
 * logical name) and their physical names: reshaping createBootstrap must leave them as they are, or
 * the up replaces a role, a key or the state bucket. After a deliberate change, rewrite
 * test/fixtures/resource-identity.json with `UPDATE_RESOURCE_SNAPSHOT=1 npm run test:unit` and read its
 * diff. `RESOURCE_INPUTS_FILE=<file>.txt` also writes every resource's inputs and the outputs, to
 * compare a refactor's before and after.
 */
test("every resource keeps its type, logical name and physical name (the snapshot)", async () => {
  const snapshot = path.join(__dirname, "fixtures", "resource-identity.json");
  const key = (r: Recorded) => `${r.type}::${r.name}`;
  const sorted = [...resources].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const actual = sorted.map((r) => {
    const name = r.inputs["name"] ?? r.inputs["bucket"];
    return { type: r.type, name: r.name, ...(name === undefined ? {} : { physicalName: name }) };
  });
  assert.equal(new Set(actual.map((r) => `${r.type}::${r.name}`)).size, actual.length, "two resources with one URN");
  if (process.env["UPDATE_RESOURCE_SNAPSHOT"] === "1") fs.writeFileSync(snapshot, `${JSON.stringify(actual, null, 2)}\n`);
  assert.deepEqual(actual, JSON.parse(fs.readFileSync(snapshot, "utf8")), "a resource's URN or name changed: `pulumi up` would replace it");
  const file = process.env["RESOURCE_INPUTS_FILE"];
  if (file) {
    const outputs: [string, unknown][] = [];
    for (const [k, v] of Object.entries(bootstrap.outputs)) outputs.push([k, await unwrap(v)]);
    fs.writeFileSync(file, `${JSON.stringify({ resources: sorted, outputs }, null, 2).split(repoRoot).join("<repo>")}\n`);
  }
});
