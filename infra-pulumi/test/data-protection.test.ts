/**
 * Data protection, infrastructure side, under mocks: the stage key's own policy (administrators and the
 * function roles, no account-root statement), the secrets' resource policies (every other
 * principal denied), the VPC endpoints' policies (the stage's ARNs only), and the policy pack's
 * rules for each, on the program's resources and on the shapes they must refuse.
 * A stack "audit" with password auth (both secrets), a VPC with interface endpoints and named
 * key administrators.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import {
  checkKmsKeyPolicies,
  checkSecretPolicies,
  checkVpcEndpointPolicies,
  DATA_TYPES,
  type ResourceLike,
} from "../policy/rules";
import type * as pulumi from "@pulumi/pulumi";

import { KMS_ADMIN_ACTIONS, keyAdministrators, keyPolicyDocument, secretPolicyDocument } from "../src/secrets";
import { endpointPolicyDocument, SQS_ENDPOINT_ACTIONS } from "../src/vpc-endpoints";
import { arn, names, TYPE } from "./support/expect";
import { ACCOUNT } from "./support/mocks";
import { type ProgramRun, runProgram } from "./support/harness";
import { ofType, plain } from "./support/values";

const STAGE = "audit";
/** sophia:kmsKeyAdministrators (break-glass principals); the stack adds the stage's deploy role before them. */
const CONFIGURED = [`arn:aws:iam::${ACCOUNT}:role/platform-admin`, `arn:aws:iam::${ACCOUNT}:role/ops/break-glass`];
const ADMINS = [`arn:aws:iam::${ACCOUNT}:role/sophia-bootstrap/sophia-bootstrap-${STAGE}-deploy`, ...CONFIGURED];
const VPC = { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111"], securityGroupIds: ["sg-0ccc3333"], interfaceEndpoints: true };
const role = (f: string) => `arn:aws:iam::${ACCOUNT}:role/sophia/${STAGE}/sophia-${STAGE}-${f}`;
const ALL_FUNCTIONS = ["interview-completed", "report-generate", "interview-failed"];
let run: ProgramRun;

before(async () => {
  run = await runProgram({
    stack: STAGE,
    config: { "sophia:kmsKeyAdministrators": JSON.stringify(CONFIGURED), "sophia:vpc": JSON.stringify(VPC) },
  });
});

const custom = () => run.resources.filter((r) => r.custom);
/** Resources as a stack policy sees them after a deploy (inputs + computed outputs). */
const asDeployed = (patch: (r: ResourceLike) => ResourceLike = (r) => r): ResourceLike[] =>
  custom().map((r) => patch({ type: r.type, name: r.name, props: r.state }));
const policyOf = (r: { inputs: Record<string, unknown> }) => JSON.parse(plain(r.inputs["policy"]) as string);

test("KMS: the key's policy names the administrators and the secret-reading roles, never the account root (key-policy-default.html)", () => {
  const [policy] = ofType(run.resources, TYPE.kmsKeyPolicy);
  const doc = policyOf(policy!);
  assert.equal(plain(policy!.inputs["keyId"]), "key-secrets-key", "attached to the stage key");
  assert.deepEqual(doc.Statement.map((s: { Sid: string }) => s.Sid), [
    "KeyAdministrators",
    "AdministratorsWriteSecretsViaSecretsManager",
    "FunctionsDecryptSecretsViaSecretsManager",
  ]);
  const [admin, writers, users] = doc.Statement;
  assert.deepEqual(admin.Principal, { AWS: ADMINS });
  assert.deepEqual(admin.Action, [...KMS_ADMIN_ACTIONS]);
  assert.deepEqual(writers.Action, ["kms:GenerateDataKey", "kms:Decrypt"]);
  assert.deepEqual(writers.Condition, { StringEquals: { "kms:ViaService": "secretsmanager.eu-west-1.amazonaws.com" } });
  // Password auth: every function reads the MongoDB URI; report-generate also the OpenAI key.
  assert.deepEqual([...users.Principal.AWS].sort(), ALL_FUNCTIONS.map(role).sort());
  assert.deepEqual(users.Action, ["kms:Decrypt"]);
  assert.deepEqual(users.Condition, { StringEquals: { "kms:ViaService": "secretsmanager.eu-west-1.amazonaws.com" } });
  const text = JSON.stringify(doc);
  assert.equal(text.includes(":root"), false, "no account-root statement");
  assert.equal(text.includes('"kms:*"'), false);
});

test("Secrets: each secret denies every principal but its readers and the administrators; readers may only read", () => {
  const policies = ofType(run.resources, TYPE.secretPolicy);
  assert.equal(policies.length, 2);
  const bySecret = Object.fromEntries(policies.map((p) => [plain(p.inputs["secretArn"]) as string, policyOf(p)]));
  const expected: Record<string, string[]> = {
    "sophia/audit/mongodb-uri": ALL_FUNCTIONS.map(role),
    "sophia/audit/openai-api-key": [role("report-generate")],
  };
  for (const [name, readers] of Object.entries(expected)) {
    const doc = bySecret[arn.secret(name)];
    assert.ok(doc, `${name} has a resource policy`);
    const [others, readOnly] = doc.Statement;
    assert.deepEqual([others.Effect, others.Principal, others.Action], ["Deny", "*", "secretsmanager:*"], name);
    assert.deepEqual([...others.Condition.StringNotEquals["aws:PrincipalArn"]].sort(), [...ADMINS, ...readers].sort(), name);
    assert.deepEqual([readOnly.Effect, readOnly.NotAction], ["Deny", ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]]);
    assert.deepEqual([...readOnly.Condition.StringEquals["aws:PrincipalArn"]].sort(), [...readers].sort(), name);
    assert.equal(doc.Statement.some((s: { Effect: string }) => s.Effect === "Allow"), false, "a secret policy only denies");
  }
  for (const p of policies) assert.equal(p.inputs["blockPublicPolicy"], true);
});

test("VPC endpoints: SQS scoped to the stage's queues and DLQs, Secrets Manager to its secrets, principals of the account only", () => {
  const byService = Object.fromEntries(
    ofType(run.resources, TYPE.vpcEndpoint).map((e) => [String(plain(e.inputs["serviceName"])).split(".").pop(), policyOf(e)]),
  );
  const n = names(STAGE);
  const sqs = byService["sqs"].Statement;
  assert.equal(sqs.length, 1);
  assert.deepEqual(
    [...sqs[0].Resource].sort(),
    ["interview-completed", "report-generate"].flatMap((q) => [arn.queue(n.queue(q)), arn.queue(n.dlq(q))]).sort(),
  );
  assert.deepEqual(sqs[0].Action, SQS_ENDPOINT_ACTIONS);
  assert.equal(SQS_ENDPOINT_ACTIONS.some((a) => a.includes("*")), false);
  assert.deepEqual(sqs[0].Condition, { StringEquals: { "aws:PrincipalAccount": ACCOUNT } });
  const sm = byService["secretsmanager"].Statement;
  assert.deepEqual([...sm[0].Resource].sort(), [arn.secret("sophia/audit/mongodb-uri"), arn.secret("sophia/audit/openai-api-key")].sort());
  assert.deepEqual(sm[0].Action, ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]);
  assert.deepEqual(sm[0].Condition, { StringEquals: { "aws:PrincipalAccount": ACCOUNT } });
});

test("policy pack: the program's key, secrets and endpoints pass the three rules", () => {
  const resources = asDeployed();
  assert.deepEqual(checkKmsKeyPolicies(resources), []);
  assert.deepEqual(checkSecretPolicies(resources), []);
  assert.deepEqual(checkVpcEndpointPolicies(resources), []);
});

test("policy pack: a key left with AWS's default policy, or given the root's kms:*, is a violation", () => {
  // The key is created with its administrators' policy (the KeyPolicy resource replaces it): without both, AWS's default.
  const withoutKeyPolicy = asDeployed((r) => (r.type === DATA_TYPES.kmsKey ? { ...r, props: { ...r.props, policy: undefined } } : r)).filter(
    (r) => r.type !== DATA_TYPES.kmsKeyPolicy,
  );
  // Left alone, the policy the key is created with keeps AWS's account statement: the KeyPolicy resource is what removes it.
  const creationOnly = checkKmsKeyPolicies(asDeployed().filter((r) => r.type !== DATA_TYPES.kmsKeyPolicy)).map((x) => x.message);
  assert.equal(creationOnly.length, 1, JSON.stringify(creationOnly));
  assert.match(creationOnly[0]!, /allows arn:aws:iam::123456789012:root/);
  const v = checkKmsKeyPolicies(withoutKeyPolicy);
  assert.equal(v.length, 1);
  assert.match(v[0]!.message, /default key policy/);
  const rootPolicy = JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Sid: "Enable IAM User Permissions", Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: "kms:*", Resource: "*" }],
  });
  const rooted = asDeployed((r) => (r.type === DATA_TYPES.kmsKeyPolicy ? { ...r, props: { ...r.props, policy: rootPolicy } } : r));
  const messages = checkKmsKeyPolicies(rooted).map((x) => x.message);
  assert.equal(messages.length, 2, JSON.stringify(messages));
  assert.match(messages[0]!, /allows arn:aws:iam::123456789012:root/);
  assert.match(messages[1]!, /names no administrator/);
});

test("policy pack: a secret without a resource policy, or with one that allows everyone, is a violation", () => {
  const v = checkSecretPolicies(asDeployed().filter((r) => r.type !== DATA_TYPES.secretPolicy));
  assert.equal(v.length, 2);
  for (const x of v) assert.match(x.message, /denies every principal but its readers/);
  const open = JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "secretsmanager:GetSecretValue", Resource: "*" }] });
  const opened = asDeployed((r) => (r.type === DATA_TYPES.secretPolicy ? { ...r, props: { ...r.props, policy: open } } : r));
  assert.equal(checkSecretPolicies(opened).length, 2);
});

test("policy pack: an endpoint with no policy (AWS's default * on *) or a wildcard policy is a violation; an unknown one waits", () => {
  const noPolicy = asDeployed((r) => (r.type === DATA_TYPES.vpcEndpoint ? { ...r, props: { ...r.props, policy: undefined } } : r));
  const v = checkVpcEndpointPolicies(noPolicy);
  assert.equal(v.length, 2);
  assert.match(v[0]!.message, /default endpoint policy/);
  const star = JSON.stringify({ Statement: [{ Effect: "Allow", Principal: "*", Action: "sqs:*", Resource: "*" }] });
  const wide = asDeployed((r) => (r.type === DATA_TYPES.vpcEndpoint ? { ...r, props: { ...r.props, policy: star } } : r));
  assert.equal(checkVpcEndpointPolicies(wide).length, 2);
  const unknown = asDeployed((r) =>
    r.type === DATA_TYPES.vpcEndpoint ? { ...r, props: { ...r.props, policy: "04da6b54-80e4-46f7-96ec-b56ff0331ba9" } } : r,
  );
  assert.deepEqual(checkVpcEndpointPolicies(unknown), [], "a preview's unknown policy is judged once known");
});

test("documents: no administrator, a non-IAM principal, or a wildcard endpoint resource are refused before AWS sees them", () => {
  assert.throws(() => keyPolicyDocument({ administrators: [], functionRoles: [], region: "eu-west-1" }), /at least one administrator/);
  assert.throws(
    () => keyPolicyDocument({ administrators: ["*"], functionRoles: [], region: "eu-west-1" }),
    /not an IAM role or user ARN/,
  );
  assert.throws(() => secretPolicyDocument({ administrators: [], readers: [] }), /at least one administrator/);
  assert.throws(() => endpointPolicyDocument({ sid: "x", actions: ["sqs:SendMessage"], resources: ["*"], account: ACCOUNT }), /exact ARNs/);
});

test("the key's administrators: the stage's deploy role (infra-bootstrap's exact ARN) and the configured break-glass principals, never the caller", () => {
  const policy = run.resources.find((r) => r.type === TYPE.kmsKeyPolicy)!;
  assert.equal(policy.inputs["bypassPolicyLockoutSafetyCheck"], true, "a first deploy by a principal outside the list hands the key over");
  const doc = policyOf(policy);
  assert.deepEqual(doc.Statement[0].Principal.AWS, ADMINS);
  assert.ok(!JSON.stringify(doc).includes("user/test"), "the caller (the mocks' user/test) is never an administrator");
});

test("sophia:kmsKeyAdministrators is required: missing, empty, a session ARN or a name are refused before anything is created", () => {
  const config = (value: unknown) => ({ getObject: () => value }) as unknown as pulumi.Config;
  for (const bad of [undefined, [], [`arn:aws:sts::${ACCOUNT}:assumed-role/admin/alice`], ["break-glass"], [`arn:aws:iam::${ACCOUNT}:group/admins`]]) {
    assert.throws(() => keyAdministrators(STAGE, config(bad)), /sophia:kmsKeyAdministrators must list the stage's break-glass IAM role or user ARNs/, JSON.stringify(bad));
  }
});
