/**
 * The deploy role's table (deploy-permissions.json) and the preview role's actions, checked as
 * policy documents rendered for a stage. The other direction (every resource type the stage program
 * creates has a row) is infra-pulumi/test/deploy-permissions.test.ts, which runs the stage program.
 */
import * as assert from "node:assert/strict";
import { test } from "node:test";

import {
  boundaryStatements,
  deployStatements,
  loadPermissions,
  type PolicyStatement,
  resumePrefixProblems,
  secretsProviderStatement,
  type StageScope,
  stateStatements,
} from "../src/policies";

const table = loadPermissions();
const LAYER = "arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:19";
const VPC = { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111"], securityGroupIds: ["sg-0ccc3333"], interfaceEndpoints: true };
const scope = (stage: string, vpc = false): StageScope => ({ partition: "aws", region: "eu-west-1", account: "012345678901", stage, layerArn: LAYER, vpc: vpc ? VPC : false });
const dev = deployStatements(scope("dev"));
const devVpc = deployStatements(scope("dev", true));
const allows = (statements: PolicyStatement[], action: string) => statements.filter((s) => s.Effect === "Allow" && s.Action.includes(action));

/** The Service Authorization Reference page of every service prefix the table uses. */
const SAR: Record<string, string> = {
  sqs: "list_amazonsqs.html",
  lambda: "list_awslambda.html",
  iam: "list_awsidentityandaccessmanagementiam.html",
  logs: "list_amazoncloudwatchlogs.html",
  cloudwatch: "list_amazoncloudwatch.html",
  sns: "list_amazonsns.html",
  kms: "list_awskeymanagementservice.html",
  secretsmanager: "list_awssecretsmanager.html",
  ec2: "list_amazonec2.html",
  s3: "list_amazons3.html",
  ssm: "list_awssystemsmanager.html",
  scheduler: "list_amazoneventbridgescheduler.html",
};
/** Actions AWS authorizes on no resource type (Resource must be "*"), or scoped by a condition instead. */
const STAR_ALLOWED: Record<string, string> = {
  "logs:DescribeLogGroups": "lists by name prefix; no log group ARN",
  "ec2:DescribeSecurityGroups": "EC2 Describe: no resource-level permissions",
  "ec2:DescribeSubnets": "EC2 Describe",
  "ec2:DescribeVpcs": "EC2 Describe",
  "ec2:DescribeVpcEndpoints": "EC2 Describe",
  "ec2:DescribeVpcEndpointServices": "EC2 Describe",
  "ec2:DescribePrefixLists": "EC2 Describe",
  "kms:ListAliases": "no resource type",
  "kms:CreateKey": "a new key has no ARN; aws:RequestTag/stage condition",
  "kms:TagResource": "tags given with CreateKey; aws:RequestTag/stage condition",
  "lambda:CreateEventSourceMapping": "no resource type; lambda:FunctionArn condition",
  "sns:Unsubscribe": "no required resource type (topic, optional); the request names a subscription",
  "sns:GetSubscriptionAttributes": "no required resource type (topic, optional)",
  "sns:SetSubscriptionAttributes": "no required resource type (topic, optional)",
};

test("every row cites the Service Authorization Reference page of its service", () => {
  for (const [type, row] of Object.entries(table.resourceTypes)) {
    assert.match(row.source, /^https:\/\/docs\.aws\.amazon\.com\/service-authorization\/latest\/reference\/list_[a-z0-9]+\.html$/, type);
    const services = new Set([...row.statements, ...(row.deny ?? [])].flatMap((s) => s.actions.map((a) => a.split(":")[0]!)));
    for (const svc of services) assert.ok(SAR[svc], `${type}: ${svc} has no known reference page`);
    const own = type.split(":")[1]!.split("/")[0]!;
    const expected = { sqs: "sqs", lambda: "lambda", iam: "iam", cloudwatch: type.includes("logGroup") ? "logs" : "cloudwatch", sns: "sns", kms: "kms", secretsmanager: "secretsmanager", ec2: "ec2", ssm: "ssm", scheduler: "scheduler" }[own];
    assert.ok(expected, `${type}: unknown provider module ${own}`);
    assert.ok(row.source.endsWith(SAR[expected]!), `${type} cites ${row.source}`);
  }
});

test("no wildcard action, no kms:*, and '*' only for actions AWS authorizes on no resource (or a tag/function condition)", () => {
  for (const s of devVpc) {
    for (const a of s.Action) assert.doesNotMatch(a, /\*/, `${s.Sid}: ${a}`);
    if (s.Effect === "Allow" && s.Resource.includes("*")) {
      for (const a of s.Action) assert.ok(STAR_ALLOWED[a], `${s.Sid}: ${a} on *`);
      if (s.Action.some((a) => ["kms:CreateKey", "kms:TagResource", "lambda:CreateEventSourceMapping"].includes(a))) {
        assert.ok(s.Condition, `${s.Sid}: ${s.Action.join(",")} on * must be conditioned`);
      }
    }
  }
});

test("dashboard, alarm tags, ListTags, the layer's GetLayerVersion, DescribeLogGroups on *", () => {
  for (const a of ["cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards"]) {
    assert.deepEqual(allows(dev, a).flatMap((s) => s.Resource), ["arn:aws:cloudwatch::012345678901:dashboard/sophia-dev"], a);
  }
  for (const a of ["cloudwatch:TagResource", "cloudwatch:UntagResource", "cloudwatch:ListTagsForResource"]) {
    assert.deepEqual(allows(dev, a).flatMap((s) => s.Resource), ["arn:aws:cloudwatch:eu-west-1:012345678901:alarm:sophia-dev-*"], a);
  }
  assert.ok(allows(dev, "lambda:ListTags").some((s) => s.Resource.includes("arn:aws:lambda:eu-west-1:012345678901:function:sophia-dev-*")));
  assert.deepEqual(allows(dev, "lambda:GetLayerVersion").flatMap((s) => s.Resource), [LAYER], "exactly the extension's layer version");
  assert.deepEqual(allows(dev, "logs:DescribeLogGroups").flatMap((s) => s.Resource), ["*"]);
  assert.deepEqual(
    allows(dev, "lambda:InvokeFunction").flatMap((s) => s.Resource),
    ["arn:aws:lambda:eu-west-1:012345678901:function:sophia-dev-interview-completed", "arn:aws:lambda:eu-west-1:012345678901:function:sophia-dev-interview-completed:$LATEST"],
    "only the migration function, unqualified and as aws.lambda.Invocation calls it (Qualifier $LATEST)",
  );
});

test("KMS: create an untagged symmetric key only; no IAM grant on any key (the stage key's own policy names the deploy role); never tag a key", () => {
  const create = allows(dev, "kms:CreateKey");
  assert.equal(create.length, 1);
  assert.deepEqual(create[0]!.Resource, ["*"]);
  assert.deepEqual(create[0]!.Condition!["Null"], { "aws:TagKeys": "true" }, "no tags with the create: KMS authorizes them as kms:TagResource on every key");
  assert.equal(allows(dev, "kms:TagResource").length, 0);
  const onKeys = dev.filter((x) => x.Effect === "Allow" && x.Action.some((a) => a.startsWith("kms:")) && x.Resource.some((r) => r.includes(":key/")));
  assert.deepEqual(onKeys, [], "every call on the stage's key is allowed by its key policy, none by a tag-conditioned IAM grant");
  for (const s of dev.filter((x) => x.Effect === "Allow" && x.Action.some((a) => a.startsWith("kms:")) && !x.Resource.includes("*"))) {
    assert.ok(s.Resource.every((r) => r.includes(":alias/sophia-dev-")), s.Sid);
  }
  const deny = dev.filter((s) => s.Effect === "Deny" && s.Action.some((a) => a.startsWith("kms:")));
  assert.deepEqual(deny.map((s) => [s.Action, s.Condition]), [
    [["kms:TagResource"], undefined],
    [["kms:UntagResource"], { StringNotEquals: { "aws:ResourceTag/stage": "dev" } }],
  ]);
  assert.equal(allows(dev, "kms:Decrypt").length, 0, "the deploy role decrypts through the key policy only");
});

test("every ARN of the dev role names dev's resources (or the layer, or a stage-tagged or stage-function-conditioned resource), never another stage", () => {
  for (const s of dev.filter((x) => x.Effect === "Allow")) {
    for (const r of s.Resource) {
      if (r === "*" || r === LAYER) continue;
      const named = /sophia-dev\b|sophia-dev-|sophia\/dev\//.test(r);
      const tagged =
        s.Condition?.["StringEquals"]?.["aws:ResourceTag/stage"] === "dev" ||
        s.Condition?.["StringEqualsIfExists"]?.["aws:ResourceTag/stage"] === "dev" ||
        s.Condition?.["ArnLike"]?.["lambda:FunctionArn"]?.includes("sophia-dev-") ||
        // Reading a mapping: its function the stage's, or absent (a mapping already deleted, which the provider's delete polls for).
        (s.Action.every((a) => a === "lambda:GetEventSourceMapping") && s.Condition?.["ArnLikeIfExists"]?.["lambda:FunctionArn"]?.includes("sophia-dev-"));
      // Reading a mapping's tags (a mapping's id says nothing of its stage).
      const readsTags = s.Action.every((a) => a === "lambda:ListTags");
      assert.ok(named || tagged || readsTags, `${s.Sid}: ${r}`);
    }
  }
  assert.doesNotMatch(JSON.stringify(dev), /prod/);
});

test("event source mappings: update only a mapping tagged as the stage's whose function is the stage's; tags only on the stage's mappings, the stage tag never changed", () => {
  const esm = (a: string) => allows(dev, a);
  const fn = { "lambda:FunctionArn": "arn:aws:lambda:eu-west-1:012345678901:function:sophia-dev-*" };
  // UpdateEventSourceMapping names a function of its own (FunctionName): the mapping's tag must hold too.
  for (const a of ["lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping"]) {
    assert.deepEqual(esm(a).map((s) => s.Condition), [{ ArnLike: fn, StringEquals: { "aws:ResourceTag/stage": "dev" } }], a);
  }
  // Get names no function: lambda:FunctionArn is the mapping's own, and absent once the mapping is
  // deleted (the provider's delete polls Get until not-found): IfExists, so that poll is not refused.
  assert.deepEqual(esm("lambda:GetEventSourceMapping").map((s) => s.Condition), [{ ArnLikeIfExists: fn }]);
  assert.deepEqual(esm("lambda:CreateEventSourceMapping").map((s) => s.Condition), [{ ArnLike: fn, StringEquals: { "aws:RequestTag/stage": "dev" } }]);
  const tagging = esm("lambda:TagResource").filter((s) => s.Resource.some((r) => r.includes(":event-source-mapping:")));
  assert.deepEqual(tagging.map((s) => s.Condition), [{ StringEquals: { "aws:ResourceTag/stage": "dev" } }], "never an untagged mapping (adoption)");
  const deny = dev.filter((s) => s.Effect === "Deny" && s.Action.includes("lambda:TagResource"));
  assert.equal(deny.length, 1);
  assert.deepEqual(deny[0]!.Condition!["StringNotEquals"], { "aws:RequestTag/stage": "dev" });
});

test("endpoints only for a stage whose stack creates them (sophia:vpc.interfaceEndpoints): in a VPC the stage shares, none at all", () => {
  const shared = deployStatements({ ...scope("dev", true), vpc: { ...VPC, interfaceEndpoints: false } });
  for (const a of ["ec2:CreateVpcEndpoint", "ec2:ModifyVpcEndpoint", "ec2:DeleteVpcEndpoints", "ec2:CreateTags", "ec2:DeleteTags"]) {
    assert.equal(allows(shared, a).length, 0, a);
    assert.ok(allows(devVpc, a).length > 0, a);
  }
  // Its functions are still placed in the VPC.
  assert.ok(allows(shared, "ec2:DescribeSubnets").length > 0);
  assert.ok(allows(shared, "lambda:CreateFunction").some((s) => s.Condition?.["ForAllValues:StringEquals"]?.["lambda:VpcIds"]));
});

test("VPC statements only for a stage with sophia:vpc", () => {
  assert.equal(allows(dev, "ec2:CreateVpcEndpoint").length, 0);
  assert.equal(allows(dev, "ec2:DescribeSubnets").length, 0);
  assert.ok(allows(devVpc, "ec2:CreateVpcEndpoint").length > 0);
  assert.ok(allows(devVpc, "ec2:DescribeSubnets").length > 0, "a function with a VpcConfig");
});

test("the preview role has no action that writes: every action is Read or List in the reference (kms:Decrypt: filed as Write, changes nothing)", () => {
  const preview = [...stateStatements("aws", "sophia-pulumi-state-012345678901-eu-west-1", "dev", false), secretsProviderStatement("arn:aws:kms:eu-west-1:012345678901:key/k", false)];
  for (const s of preview) {
    assert.equal(s.Effect, "Allow");
    for (const a of s.Action) {
      const known = table.previewActions[a];
      assert.ok(known, `${a} is not a declared preview action`);
      assert.ok(known.accessLevel === "Read" || known.accessLevel === "List" || known.changesNothing === true, `${a}: ${known.accessLevel}`);
      assert.match(a, /^[a-z0-9]+:(Get|List|Describe|Decrypt)/, a);
    }
  }
  for (const [a, v] of Object.entries(table.previewActions)) {
    assert.ok(v.source.endsWith(SAR[a.split(":")[0]!]!), `${a} cites its service's page`);
    assert.doesNotMatch(a, /:(Put|Create|Delete|Update|Tag|Untag|Set|Encrypt|GenerateDataKey)/, a);
  }
  const write = stateStatements("aws", "b", "dev", true).flatMap((s) => s.Action);
  assert.ok(write.includes("s3:PutObject"), "the deploy role writes the state; the preview role does not");
  assert.ok(!preview.flatMap((s) => s.Action).includes("s3:PutObject"));
});

test("the state objects are the stage's own (checkpoint, history, backups, lock)", () => {
  const [own] = stateStatements("aws", "bucket", "dev", true);
  assert.deepEqual(own!.Resource, [
    "arn:aws:s3:::bucket/.pulumi/stacks/sophia/dev.json",
    "arn:aws:s3:::bucket/.pulumi/stacks/sophia/dev.json.*",
    "arn:aws:s3:::bucket/.pulumi/stacks/sophia/dev.pulumi-tags",
    "arn:aws:s3:::bucket/.pulumi/history/sophia/dev/*",
    "arn:aws:s3:::bucket/.pulumi/backups/sophia/dev/*",
    "arn:aws:s3:::bucket/.pulumi/locks/organization/sophia/dev/*",
  ]);
});

test("the resume bucket: the boundary allows the stage's prefix only; two stages of one bucket with overlapping prefixes are refused", () => {
  const base = { partition: "aws", region: "eu-west-1", account: "123456789012", stage: "dev", vpc: false as const };
  const resume = (s: { resumeBucket?: string; resumeBucketPrefix?: string }) => boundaryStatements({ ...base, ...s }).find((x) => x.Sid === "ResumeBucket");
  assert.deepEqual(resume({ resumeBucket: "resumes", resumeBucketPrefix: "dev/" })?.Resource, ["arn:aws:s3:::resumes/dev/*"]);
  assert.equal(resume({ resumeBucket: "resumes" }), undefined, "no prefix, no grant (the stack grants nothing without one either)");
  assert.deepEqual(resumePrefixProblems([{ stage: "dev", resumeBucket: "r", resumeBucketPrefix: "dev/" }, { stage: "prod", resumeBucket: "r", resumeBucketPrefix: "prod/" }]), []);
  assert.deepEqual(resumePrefixProblems([{ stage: "dev", resumeBucket: "r", resumeBucketPrefix: "a/" }, { stage: "prod", resumeBucket: "s", resumeBucketPrefix: "a/" }]), [], "another bucket");
  for (const [a, b] of [["resumes/", "resumes/"], ["resumes/", "resumes/prod/"]]) {
    const problems = resumePrefixProblems([{ stage: "dev", resumeBucket: "r", resumeBucketPrefix: a! }, { stage: "prod", resumeBucket: "r", resumeBucketPrefix: b! }]);
    assert.equal(problems.length, 1, `${a} ${b}`);
    assert.match(problems[0]!, /stages "dev" and "prod" share the resume bucket r/);
  }
});
