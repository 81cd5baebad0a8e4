/**
 * The policy pack end to end, over its real protocol: policy/index.ts is started in a child
 * process the way the Pulumi CLI starts a pack (ts-node, type-checked), and this test plays the
 * engine, calling the pack's gRPC Analyzer service with the program's resources as recorded
 * under mocks. (The pack is never imported here: it serves until it is killed.)
 */
import * as assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { type ProgramRun, runProgram, TEST_BREAK_GLASS_ARN } from "./support/harness";
import type { RecordedResource } from "./support/mocks";
import { isUnknown, SECRET_SIG, SPECIAL_SIG_KEY, UNKNOWN } from "./support/values";

/* eslint-disable @typescript-eslint/no-explicit-any */
const grpc = require("@grpc/grpc-js") as any;
const analyzerPb = require("@pulumi/pulumi/proto/analyzer_pb") as any;
const analyzerGrpc = require("@pulumi/pulumi/proto/analyzer_grpc_pb") as any;
const emptyPb = require("google-protobuf/google/protobuf/empty_pb") as any;
const { Struct } = require("google-protobuf/google/protobuf/struct_pb") as any;

const LOADER = path.join(__dirname, "support", "pulumi-loader.cjs");
const POLICY_DIR = path.join(__dirname, "..", "policy");

let run: ProgramRun;
let pack: ChildProcess;
let client: any;

/** Starts the pack and resolves with the port it prints (what the engine reads). */
function startPack(): Promise<number> {
  pack = spawn(process.execPath, [LOADER, "policy-serve", POLICY_DIR], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`policy pack did not start:\n${stdout}\n${stderr}`)), 180_000);
    pack.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    pack.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
      const m = /^(\d+)\s*$/m.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    pack.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`policy pack exited (${code}):\n${stdout}\n${stderr}`));
    });
  });
}

function call<T>(method: string, request: unknown): Promise<T> {
  return new Promise((resolve, reject) => client[method](request, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))));
}

/** Recorded values as the engine sends them: secrets as signature objects, unknowns as the sentinel. */
function wire(v: unknown): unknown {
  if (isUnknown(v)) return UNKNOWN;
  if (Array.isArray(v)) return v.map(wire);
  if (typeof v === "object" && v !== null) {
    if ("__pulumiArchive" in v || "__pulumiAsset" in v) return undefined;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, wire(x)]).filter(([, x]) => x !== undefined));
  }
  return v;
}

const urnOf = (r: { type: string; name: string }) => `urn:pulumi:dev::sophia::${r.type}::${r.name}`;

function analyzeRequest(r: { type: string; name: string }, props: Record<string, unknown>): any {
  const req = new analyzerPb.AnalyzeRequest();
  req.setType(r.type);
  req.setName(r.name);
  req.setUrn(urnOf(r));
  req.setProperties(Struct.fromJavaScript(wire(props)));
  req.setOptions(new analyzerPb.AnalyzerResourceOptions());
  return req;
}

/** AnalyzeStack sees outputs (inputs + what AWS computed). */
function stackRequest(resources: RecordedResource[], patch: (r: RecordedResource) => Record<string, unknown> = (r) => r.state): any {
  const req = new analyzerPb.AnalyzeStackRequest();
  req.setResourcesList(
    resources
      .filter((r) => r.custom)
      .map((r) => {
        const res = new analyzerPb.AnalyzerResource();
        res.setType(r.type);
        res.setName(r.name);
        res.setUrn(urnOf(r));
        res.setProperties(Struct.fromJavaScript(wire(patch(r))));
        res.setOptions(new analyzerPb.AnalyzerResourceOptions());
        return res;
      }),
  );
  return req;
}

const diagnostics = (res: any) =>
  res.getDiagnosticsList().map((d: any) => ({ policy: d.getPolicyname(), urn: d.getUrn(), message: d.getMessage(), level: d.getEnforcementlevel() }));

before(async () => {
  run = await runProgram({ stack: "dev" });
  const port = await startPack();
  client = new analyzerGrpc.AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
});

after(() => {
  client?.close();
  if (pack && pack.exitCode === null) pack.kill("SIGTERM");
});

test("the pack starts and declares its eight policies with their enforcement levels", async () => {
  const info = await call<any>("getAnalyzerInfo", new emptyPb.Empty());
  assert.equal(info.getName(), "sophia-queues");
  assert.equal(info.getVersion(), "0.1.0");
  const levels = analyzerPb.EnforcementLevel;
  const policies = Object.fromEntries(info.getPoliciesList().map((p: any) => [p.getName(), p.getEnforcementlevel()]));
  assert.deepEqual(policies, {
    "sqs-source-queue-has-dlq": levels.MANDATORY,
    "sqs-esm-reports-batch-item-failures": levels.MANDATORY,
    "sqs-visibility-covers-function-timeout": levels.MANDATORY,
    "no-secret-values-in-function-env": levels.MANDATORY,
    "no-plaintext-secrets-in-function-env": levels.REMEDIATE,
    "kms-key-policy-names-principals": levels.MANDATORY,
    "secret-resource-policy-denies-others": levels.MANDATORY,
    "vpc-endpoint-policy-scoped": levels.MANDATORY,
  });
});

test("AnalyzeStack: the real program has no violation", async () => {
  assert.deepEqual(diagnostics(await call("analyzeStack", stackRequest(run.resources))), []);
});

test("AnalyzeStack: a queue below 6x its consumer's timeout, and a redrive of 6 receives, are mandatory violations", async () => {
  const res = await call("analyzeStack",
    stackRequest(run.resources, (r) => {
      if (r.name === "report-generate-queue") return { ...r.state, visibilityTimeoutSeconds: 1799 };
      if (r.name === "interview-completed-queue") {
        const policy = JSON.parse(r.state["redrivePolicy"] as string);
        return { ...r.state, redrivePolicy: JSON.stringify({ ...policy, maxReceiveCount: 6 }) };
      }
      return r.state;
    }),
  );
  const found = diagnostics(res).sort((a: any, b: any) => a.policy.localeCompare(b.policy));
  assert.equal(found.length, 2, JSON.stringify(found));
  assert.equal(found[0].policy, "sqs-source-queue-has-dlq");
  assert.equal(found[0].urn, urnOf({ type: "aws:sqs/queue:Queue", name: "interview-completed-queue" }));
  assert.equal(found[1].policy, "sqs-visibility-covers-function-timeout");
  assert.equal(found[1].urn, urnOf({ type: "aws:sqs/queue:Queue", name: "report-generate-queue" }));
  assert.match(found[1].message, /6 x 300 \+ 0 = 1800 s/);
  for (const d of found) assert.equal(d.level, analyzerPb.EnforcementLevel.MANDATORY);
});

test("Analyze: every resource of the program passes; a mapping without ReportBatchItemFailures does not", async () => {
  for (const r of run.resources.filter((x) => x.custom)) {
    assert.deepEqual(diagnostics(await call("analyze", analyzeRequest(r, r.inputs))), [], r.name);
  }
  const esm = run.resources.find((r) => r.name === "interview-completed-esm")!;
  const bad = diagnostics(await call("analyze", analyzeRequest(esm, { ...esm.inputs, functionResponseTypes: [] })));
  assert.equal(bad.length, 1);
  assert.equal(bad[0].policy, "sqs-esm-reports-batch-item-failures");
});

test("Remediate: the program's secret environments are left alone; a plaintext key comes back as a secret", async () => {
  for (const fn of run.resources.filter((r) => r.type === "aws:lambda/function:Function")) {
    const res: any = await call("remediate", analyzeRequest(fn, fn.inputs));
    assert.deepEqual(res.getRemediationsList().map((x: any) => x.getPolicyname()), [], fn.name);
  }
  const plaintext = { name: "worker", environment: { variables: { OPENAI_API_KEY: "sk-live-123", LOG_LEVEL: "info" } } };
  const res: any = await call("remediate", analyzeRequest({ type: "aws:lambda/function:Function", name: "worker" }, plaintext));
  const remediations = res.getRemediationsList();
  assert.equal(remediations.length, 1);
  assert.equal(remediations[0].getPolicyname(), "no-plaintext-secrets-in-function-env");
  const props = remediations[0].getProperties().toJavaScript();
  assert.deepEqual(props.environment.variables.OPENAI_API_KEY, { [SPECIAL_SIG_KEY]: SECRET_SIG, value: "sk-live-123" });
  assert.equal(props.environment.variables.LOG_LEVEL, "info");
});

test("Analyze: a function environment holding a secret value, even wrapped as a Pulumi secret, is a mandatory violation", async () => {
  const fn = run.resources.find((r) => r.type === "aws:lambda/function:Function" && r.name === "report-generate")!;
  const secret = (value: string) => ({ [SPECIAL_SIG_KEY]: SECRET_SIG, value });
  const leaky = {
    ...fn.inputs,
    environment: { variables: { OPENAI_API_KEY: secret("sk-proj-abcdefghijklmnop"), MONGODB_URI: secret("mongodb+srv://u:p4ss@h/db") } },
  };
  const found = diagnostics(await call("analyze", analyzeRequest(fn, leaky)));
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.equal(found[0].policy, "no-secret-values-in-function-env");
  assert.equal(found[0].level, analyzerPb.EnforcementLevel.MANDATORY);
  assert.match(found[0].message, /MONGODB_URI \(a URI with a password/);
  assert.equal(found[0].message.includes("p4ss"), false);
});

test("AnalyzeStack: without its key policy and secret policies, the stage key and both secrets are mandatory violations", async () => {
  const stripped = run.resources.filter(
    (r) => r.type !== "aws:kms/keyPolicy:KeyPolicy" && r.type !== "aws:secretsmanager/secretPolicy:SecretPolicy",
  );
  // The key is created with a policy of its own (its administrators): strip that one too.
  const found = diagnostics(await call("analyzeStack", stackRequest(stripped, (r) => (r.type === "aws:kms/key:Key" ? { ...r.state, policy: undefined } : r.state))));
  const byPolicy = (p: string) => found.filter((d: any) => d.policy === p);
  assert.equal(found.length, 3, JSON.stringify(found));
  assert.equal(byPolicy("kms-key-policy-names-principals").length, 1);
  assert.match(byPolicy("kms-key-policy-names-principals")[0].message, /default key policy/);
  assert.equal(byPolicy("secret-resource-policy-denies-others").length, 2);
  for (const d of found) assert.equal(d.level, analyzerPb.EnforcementLevel.MANDATORY);
});

test("dev: the key's administrators are dev's deploy role and the configured break-glass role, not the caller identity", () => {
  const policy = run.resources.find((r) => r.type === "aws:kms/keyPolicy:KeyPolicy")!;
  const doc = JSON.parse(policy.inputs["policy"] as string);
  assert.deepEqual(doc.Statement[0].Principal, { AWS: ["arn:aws:iam::123456789012:role/sophia-bootstrap/sophia-bootstrap-dev-deploy", TEST_BREAK_GLASS_ARN] });
});
