/**
 * The policy pack's rules (policy/rules.ts). policy/index.ts is never imported here: `new
 * PolicyPack` starts a server. Resources are fed to the rules twice over: as recorded by the mocks,
 * and after a round trip through @pulumi/policy's own deserializer and proxies, which is how the
 * policy server hands them to policies.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import { Secret } from "@pulumi/policy";

import {
  checkEsmReportsBatchItemFailures,
  checkNoPlaintextSecrets,
  checkNoSecretValuesInFunctionEnv,
  checkSourceQueuesHaveDlq,
  checkVisibilityCoversTimeout,
  deadLetterQueues,
  plaintextSecretVariables,
  type ResourceLike,
  secretPlaintextVariables,
  TYPES,
} from "../policy/rules";
import { arn, TYPE } from "./support/expect";
import { type ProgramRun, runProgram } from "./support/harness";
import type { RecordedResource } from "./support/mocks";
import { isUnknown, SECRET_SIG, SPECIAL_SIG_KEY, UNKNOWN } from "./support/values";

// @pulumi/policy internals (pinned 1.21.0): what its gRPC server does to a request's properties.
const sdkDeserialize = require("@pulumi/policy/deserialize") as {
  deserializeProperties(struct: unknown, proxySecrets: boolean): Record<string, unknown>;
  serializeProperties(obj: unknown): Promise<Record<string, unknown>>;
};
const sdkProxy = require("@pulumi/policy/proxy") as { unknownCheckingProxy<T>(o: T): T };
const { Struct } = require("google-protobuf/google/protobuf/struct_pb") as {
  Struct: { fromJavaScript(o: unknown): unknown };
};

/** Recorded values in wire form: unknowns as the sentinel, assets/archives dropped. */
function wire(v: unknown): unknown {
  if (isUnknown(v)) return UNKNOWN;
  if (Array.isArray(v)) return v.map(wire);
  if (typeof v === "object" && v !== null) {
    if ("__pulumiArchive" in v || "__pulumiAsset" in v) return undefined;
    return Object.fromEntries(
      Object.entries(v)
        .map(([k, x]) => [k, wire(x)] as const)
        .filter(([, x]) => x !== undefined),
    );
  }
  return v;
}

/** Props as a policy sees them: validations get secrets unwrapped, remediations get `Secret`s. */
function sdkProps(props: Record<string, unknown>, mode: "validate" | "remediate"): Record<string, unknown> {
  const struct = Struct.fromJavaScript(wire(props));
  return sdkProxy.unknownCheckingProxy(sdkDeserialize.deserializeProperties(struct, mode === "remediate"));
}

const custom = (rs: RecordedResource[]) => rs.filter((r) => r.custom);

/** Stack policies see every resource's outputs. */
function stackView(rs: RecordedResource[]): ResourceLike[] {
  return custom(rs).map((r) => ({ type: r.type, name: r.name, urn: `urn:${r.name}`, props: sdkProps(r.state, "validate") }));
}

let run: ProgramRun;
before(async () => {
  run = await runProgram({ stack: "dev" });
});

test("the real program passes every rule", () => {
  const view = stackView(run.resources);
  assert.deepEqual(checkSourceQueuesHaveDlq(view), []);
  assert.deepEqual(checkVisibilityCoversTimeout(view), []);
  for (const r of custom(run.resources)) {
    assert.deepEqual(checkEsmReportsBatchItemFailures({ ...r, props: sdkProps(r.inputs, "validate") }), [], r.name);
    assert.deepEqual(plaintextSecretVariables(sdkProps(r.inputs, "remediate")), [], r.name);
    assert.equal(secretPlaintextVariables(sdkProps(r.inputs, "remediate")), undefined, "nothing to remediate");
    assert.deepEqual(checkNoPlaintextSecrets({ ...r, props: r.inputs }), [], r.name);
    assert.deepEqual(checkNoSecretValuesInFunctionEnv({ ...r, props: sdkProps(r.inputs, "validate") }), [], r.name);
  }
  // Not vacuous: the rules did find the DLQs and the two queue/function pairs of the program.
  assert.deepEqual(
    [...deadLetterQueues(view)].map((q) => q.name).sort(),
    ["interview-completed-dlq", "report-generate-dlq"],
  );
});

test("the real program with a queue's visibility cut below 6x its consumer's timeout is flagged", () => {
  const view = stackView(run.resources).map((r) =>
    r.type === TYPES.queue && r.name === "report-generate-queue"
      ? { ...r, props: { ...r.props, visibilityTimeoutSeconds: 1799 } }
      : r,
  );
  const violations = checkVisibilityCoversTimeout(view);
  assert.equal(violations.length, 1);
  assert.equal(violations[0]!.resource, "urn:report-generate-queue");
  assert.match(violations[0]!.message, /visibility timeout 1799 s .* needs >= 6 x 300 \+ 0 = 1800 s/);
});

test("the real program with maxReceiveCount 6, or without its redrive policy, is flagged", () => {
  const withRedrive = (redrivePolicy: unknown) =>
    stackView(run.resources).map((r) =>
      r.type === TYPES.queue && r.name === "interview-completed-queue" ? { ...r, props: { ...r.props, redrivePolicy } } : r,
    );
  const dlqArn = arn.queue("sophia-dev-interview-completed-dlq");
  const tooMany = checkSourceQueuesHaveDlq(withRedrive(JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 6 })));
  assert.equal(tooMany.length, 1);
  assert.match(tooMany[0]!.message, /maxReceiveCount must be between 1 and 5, got 6/);
  // Without the redrive policy its DLQ is still known as a DLQ (through the redrive-allow policy).
  const none = checkSourceQueuesHaveDlq(withRedrive(undefined));
  assert.deepEqual(none.map((v) => v.resource), ["urn:interview-completed-queue"]);
  assert.match(none[0]!.message, /has no redrive policy/);
});

const queue = (name: string, props: Record<string, unknown>): ResourceLike => ({
  type: TYPES.queue,
  name,
  props: { name, arn: `arn:aws:sqs:eu-west-1:111111111111:${name}`, url: `https://sqs/${name}`, ...props },
});

test("hand-built: a lone queue without a DLQ is flagged; a DLQ is not asked for one", () => {
  const dlq = queue("jobs-dlq", {});
  const src = queue("jobs", { redrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.props["arn"], maxReceiveCount: 3 }) });
  const lonely = queue("lonely", {});
  const violations = checkSourceQueuesHaveDlq([dlq, src, lonely]);
  assert.deepEqual(violations.map((v) => v.resource), ["lonely"]);
});

test("hand-built: an SQS mapping without ReportBatchItemFailures is flagged; a Kinesis one is not", () => {
  const sqs: ResourceLike = {
    type: TYPES.eventSourceMapping,
    name: "esm",
    props: { eventSourceArn: "arn:aws:sqs:eu-west-1:111111111111:jobs", functionName: "f", batchSize: 10 },
  };
  assert.equal(checkEsmReportsBatchItemFailures(sqs).length, 1);
  assert.match(checkEsmReportsBatchItemFailures(sqs)[0]!.message, /ReportBatchItemFailures/);
  assert.equal(checkEsmReportsBatchItemFailures({ ...sqs, props: { ...sqs.props, functionResponseTypes: [] } }).length, 1);
  const kinesis: ResourceLike = {
    type: TYPES.eventSourceMapping,
    name: "stream",
    props: { eventSourceArn: "arn:aws:kinesis:eu-west-1:111111111111:stream/s", startingPosition: "LATEST" },
  };
  assert.deepEqual(checkEsmReportsBatchItemFailures(kinesis), []);
  // In a preview the source ARN is unknown: still an SQS mapping (no stream settings), still checked.
  assert.equal(checkEsmReportsBatchItemFailures({ ...sqs, props: { ...sqs.props, eventSourceArn: UNKNOWN } }).length, 1);
});

test("hand-built: visibility < 6 x timeout + batching window is flagged, also through property dependencies", () => {
  const q = queue("jobs", { visibilityTimeoutSeconds: 180 });
  const fn: ResourceLike = { type: TYPES.function, name: "worker", props: { name: "worker", arn: "arn:aws:lambda:x:1:function:worker", timeout: 30 } };
  const esm: ResourceLike = {
    type: TYPES.eventSourceMapping,
    name: "esm",
    props: { eventSourceArn: q.props["arn"], functionName: "worker", maximumBatchingWindowInSeconds: 5 },
  };
  assert.match(checkVisibilityCoversTimeout([q, fn, esm])[0]!.message, /needs >= 6 x 30 \+ 5 = 185 s/);
  assert.deepEqual(checkVisibilityCoversTimeout([q, fn, { ...esm, props: { ...esm.props, maximumBatchingWindowInSeconds: 0 } }]), []);
  // Preview of a new stack: ARNs unknown, but the engine passes the property dependencies.
  const previewEsm: ResourceLike = {
    ...esm,
    props: { eventSourceArn: UNKNOWN, functionName: UNKNOWN, maximumBatchingWindowInSeconds: 5 },
    propertyDependencies: { eventSourceArn: [q], functionName: [fn] },
  };
  assert.equal(checkVisibilityCoversTimeout([q, fn, previewEsm]).length, 1);
});

test("unknown values are skipped, not guessed", () => {
  const src = queue("jobs", { redrivePolicy: UNKNOWN });
  assert.deepEqual(checkSourceQueuesHaveDlq([src]), []);
  const esm: ResourceLike = { type: TYPES.eventSourceMapping, name: "e", props: { eventSourceArn: UNKNOWN, functionResponseTypes: UNKNOWN } };
  assert.deepEqual(checkEsmReportsBatchItemFailures(esm), []);
});

const fnWithEnv = (variables: Record<string, unknown>): ResourceLike => ({
  type: TYPES.function,
  name: "worker",
  props: { name: "worker", environment: { variables } },
});
const wireSecret = (value: string) => ({ [SPECIAL_SIG_KEY]: SECRET_SIG, value });

test("hand-built: plaintext credentials in a function environment are flagged", () => {
  const violations = checkNoPlaintextSecrets(
    fnWithEnv({
      OPENAI_API_KEY: "sk-live-123",
      MONGODB_URI: "mongodb+srv://app:hunter2@cluster.example.net/db",
      STRIPE_SECRET: "x",
      GITHUB_TOKEN: "y",
      DB_PASSWORD: "z",
      REPORT_GENERATE_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/1/q",
      MONGODB_DATABASE: "sophia",
      LOCAL_URI: "mongodb://127.0.0.1:27017/",
      OPENAI_MODEL: "gpt-4.1-mini",
    }),
  );
  assert.equal(violations.length, 1);
  assert.match(violations[0]!.message, /DB_PASSWORD, GITHUB_TOKEN, MONGODB_URI, OPENAI_API_KEY, STRIPE_SECRET\./);
});

test("secret (wire wrapper or policy Secret) and unknown values are not flagged, nor a whole secret environment", () => {
  assert.deepEqual(
    plaintextSecretVariables(
      fnWithEnv({ OPENAI_API_KEY: wireSecret("sk"), MONGODB_URI: new Secret("mongodb://a:b@h/"), API_TOKEN: UNKNOWN }).props,
    ),
    [],
  );
  assert.deepEqual(plaintextSecretVariables({ environment: wireSecret({ variables: { OPENAI_API_KEY: "sk" } } as never) }), []);
  assert.deepEqual(plaintextSecretVariables({ environment: new Secret({ variables: { OPENAI_API_KEY: "sk" } }) }), []);
});

test("remediation, through the policy SDK's own (de)serialization: plaintext becomes a secret, secrets stay", async () => {
  const props = sdkProps(
    { name: "worker", environment: { variables: { OPENAI_API_KEY: "sk-live-123", MONGODB_URI: wireSecret("mongodb://a:b@h/"), LOG_LEVEL: "info" } } },
    "remediate",
  );
  assert.deepEqual(plaintextSecretVariables(props), ["OPENAI_API_KEY"]);
  const remediated = secretPlaintextVariables(props);
  assert.ok(remediated);
  const out = (await sdkDeserialize.serializeProperties(remediated)) as { environment: { variables: Record<string, unknown> } };
  assert.deepEqual(out.environment.variables["OPENAI_API_KEY"], wireSecret("sk-live-123"));
  assert.deepEqual(out.environment.variables["MONGODB_URI"], wireSecret("mongodb://a:b@h/"));
  assert.equal(out.environment.variables["LOG_LEVEL"], "info");
});

test("why the plaintext rule is a remediation: validations receive secrets decrypted and unmarked", () => {
  // A (correctly wrapped) secret environment: a remediation sees the secret, a validation cannot.
  const props = { name: "worker", environment: { variables: { OPENAI_API_KEY: wireSecret("sk-live-1234567890") } } };
  assert.deepEqual(plaintextSecretVariables(sdkProps(props, "remediate")), []);
  assert.deepEqual(plaintextSecretVariables(sdkProps(props, "validate")), ["OPENAI_API_KEY"]);
});

test("no-secret-values: the old program's environment (secret-wrapped URI and key) is rejected, naming variables, never values", () => {
  // What the program used to register: MONGODB_URI / OPENAI_API_KEY as Pulumi secrets in the env.
  const old = fnWithEnv({
    MONGODB_URI: wireSecret("mongodb+srv://app:hunter2@cluster.example.net/db"),
    OPENAI_API_KEY: wireSecret("sk-proj-abcdefghijklmnop"),
    MONGODB_DATABASE: "sophia",
  });
  const v = checkNoSecretValuesInFunctionEnv({ ...old, props: sdkProps(old.props, "validate") });
  assert.equal(v.length, 1);
  assert.match(v[0]!.message, /MONGODB_URI \(a URI with a password \(user:password@\)\), OPENAI_API_KEY \(an OpenAI key \(sk-\.\.\.\)\)/);
  assert.equal(v[0]!.message.includes("hunter2"), false);
  assert.equal(v[0]!.message.includes("abcdefghijklmnop"), false);
});

test("no-secret-values: each shape is caught; ARNs, extension settings, password-less URIs and plain settings pass", () => {
  const bad = {
    ANY_URL: "https://user:pw@hooks.example.com/x",
    SOMETHING: "prefix sk-abcdefghijkl",
    STRIPE_SECRET: "whsec_123",
    GITHUB_TOKEN: "ghp_x",
    DB_PASSWORD: "z",
    OPENAI_API_KEY: "not-even-sk",
    SIGNING_KEY: "k",
  };
  const good = {
    MONGODB_URI_SECRET_ARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sophia/dev/mongodb-uri-AbCdEf",
    OPENAI_API_KEY_SECRET_ARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sophia/dev/openai-api-key-AbCdEf",
    PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: "2773",
    SECRETS_MANAGER_TTL: "300",
    MONGODB_URI: "mongodb+srv://cluster0.example.net/?authMechanism=MONGODB-AWS&authSource=%24external",
    REPORT_GENERATE_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
    OPENAI_MODEL: "gpt-4.1-mini",
    MONKEY_BUSINESS: "x",
    TASK_MASK: "y",
    API_TOKEN: UNKNOWN,
  };
  const v = checkNoSecretValuesInFunctionEnv(fnWithEnv({ ...bad, ...good }));
  assert.equal(v.length, 1);
  const list = v[0]!.message.split(". Store")[0]!;
  const named = [...list.matchAll(/([A-Z_]+) \(/g)].map((m) => m[1]);
  assert.deepEqual(named, Object.keys(bad).sort());
  assert.deepEqual(checkNoSecretValuesInFunctionEnv(fnWithEnv(good)), []);
});
