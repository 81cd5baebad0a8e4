/**
 * A `staging` stack with every opt-in option of the security review switched on: MongoDB Atlas AWS
 * IAM authentication (no Mongo secret at all), a read-only resume bucket grant under a prefix, the
 * unsubscribed function made invocable, a VPC placement with interface endpoints, and an e-mail
 * subscription on the stage's alarm topic.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import { checkCounts } from "./support/checks";
import { arn, expectedGrants, grants, names, rolePolicyOf, TYPE } from "./support/expect";
import { ACCOUNT } from "./support/mocks";
import { type ProgramRun, runProgram } from "./support/harness";
import { at, byName, ofType, plain } from "./support/values";

const STAGE = "staging";
const IAM_URI = "mongodb+srv://cluster0.example.mongodb.net/?retryWrites=true";
const VPC = { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111", "subnet-0bbb2222"], securityGroupIds: ["sg-0ccc3333"], interfaceEndpoints: true };
let run: ProgramRun;

before(async () => {
  run = await runProgram({
    stack: STAGE,
    config: {
      "sophia:mongodbAuth": "aws-iam",
      "sophia:mongodbUri": IAM_URI,
      "sophia:resumeBucket": "sophia-staging-resumes",
      "sophia:resumeBucketAccess": "read",
      "sophia:resumeBucketPrefix": "resumes/",
      "sophia:invocableUnsubscribedFunctions": "true",
      "sophia:vpc": JSON.stringify(VPC),
      "sophia:alarmSubscription": JSON.stringify({ protocol: "email", endpoint: "oncall@example.com" }),
    },
  });
});

test("aws-iam: no MongoDB secret; one secret (the OpenAI key), plus the subscription and two endpoints", () => {
  // interview-failed is invocable here: its errors, throttles and dropped-invalid alarms exist.
  checkCounts(run.resources, { [TYPE.secret]: -1, [TYPE.secretVersion]: -1, [TYPE.secretPolicy]: -1, [TYPE.subscription]: 1, [TYPE.vpcEndpoint]: 2, [TYPE.alarm]: 3 });
  assert.deepEqual(ofType(run.resources, TYPE.secret).map((s) => plain(s.inputs["name"])), ["sophia/staging/openai-api-key"]);
});

test("aws-iam: MONGODB_URI is the password-less URI with MONGODB-AWS, in plain; only report-generate needs the extension", () => {
  const n = names(STAGE);
  for (const f of ["interview-completed", "report-generate", "interview-failed"]) {
    const fn = byName(run.resources, TYPE.function, n.fn(f));
    const vars = plain(at(fn.inputs, ["environment", "variables"]).value) as Record<string, string>;
    assert.equal(vars["MONGODB_URI"], `${IAM_URI}&authMechanism=MONGODB-AWS&authSource=%24external`, f);
    assert.equal(at(fn.inputs, ["environment", "variables", "MONGODB_URI"]).secret, false, `${f}: nothing secret in it`);
    assert.equal(vars["MONGODB_URI_SECRET_ARN"], undefined, f);
    const needsExtension = f === "report-generate";
    assert.equal((plain(fn.inputs["layers"]) as string[]).length, needsExtension ? 1 : 0, `${f} layers`);
    assert.equal(vars["PARAMETERS_SECRETS_EXTENSION_HTTP_PORT"], needsExtension ? "2773" : undefined, f);
  }
});

test("IAM: read-only S3 under the prefix, no Mongo secret grants, and the VPC's ENI statements scoped to its ids", () => {
  const base = expectedGrants(STAGE, { bucket: "sophia-staging-resumes", prefix: "resumes/", actions: ["s3:GetObject"] }, "aws-iam");
  const ec2 = (rest: string) => `arn:aws:ec2:eu-west-1:${ACCOUNT}:${rest}`;
  const eni = ["ec2:AssignPrivateIpAddresses", "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:UnassignPrivateIpAddresses"];
  const vpc = [
    ...[ec2("network-interface/*"), ...VPC.subnetIds.map((s) => ec2(`subnet/${s}`)), ...VPC.securityGroupIds.map((g) => ec2(`security-group/${g}`))].flatMap(
      (r) => eni.map((a) => `${a} on ${r}`),
    ),
    "ec2:DescribeNetworkInterfaces on *",
    "ec2:DescribeSubnets on *",
  ];
  for (const f of Object.keys(base)) {
    assert.deepEqual(grants(rolePolicyOf(run.resources, names(STAGE).fn(f))), [...base[f]!, ...vpc].sort(), `grants of ${f}`);
  }
  assert.ok(!base["interview-completed"]!.some((g) => g.startsWith("s3:PutObject")), "read means no PutObject");
});

test("VPC: every function in the subnets and security groups; SQS and Secrets Manager interface endpoints", () => {
  for (const f of ofType(run.resources, TYPE.function)) {
    assert.deepEqual(plain(f.inputs["vpcConfig"]), { subnetIds: VPC.subnetIds, securityGroupIds: VPC.securityGroupIds }, f.name);
  }
  const endpoints = ofType(run.resources, TYPE.vpcEndpoint).map((e) => plain(e.inputs) as Record<string, unknown>);
  assert.deepEqual(endpoints.map((e) => e["serviceName"]).sort(), ["com.amazonaws.eu-west-1.secretsmanager", "com.amazonaws.eu-west-1.sqs"]);
  for (const e of endpoints) {
    assert.deepEqual([e["vpcId"], e["vpcEndpointType"], e["privateDnsEnabled"]], [VPC.vpcId, "Interface", true]);
    assert.deepEqual([e["subnetIds"], e["securityGroupIds"]], [VPC.subnetIds, VPC.securityGroupIds]);
  }
});

test("invocableUnsubscribedFunctions: interview-failed keeps unreserved concurrency", () => {
  assert.equal(byName(run.resources, TYPE.function, names(STAGE).fn("interview-failed")).inputs["reservedConcurrentExecutions"], undefined);
});

test("the stage's alarm topic gets the configured e-mail subscription", () => {
  const sub = ofType(run.resources, TYPE.subscription);
  assert.equal(sub.length, 1);
  assert.deepEqual(plain(sub[0]!.inputs), { topic: arn.topic("sophia-staging-alarms"), protocol: "email", endpoint: "oncall@example.com" });
});
