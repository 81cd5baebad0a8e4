/**
 * Second targets: a request names a resource (the confinement sweep tries every out-of-stage one),
 * and its parameters may name others: the function a mapping invokes, a queue's dead-letter
 * target, an alarm's actions, an endpoint's policy, a grant's grantee, a trust policy's principal.
 *
 * Every input parameter of every action the deploy role, the preview role, the operators' and the
 * API's policies hold is listed from AWS's API models (infra-bootstrap/test/fixtures/
 * second-targets.json, generated from a pinned botocore by infra-bootstrap/scripts/
 * regenerate-second-targets) and classified in infra-bootstrap/parameter-targets.json. Here:
 * the fixture is the one of what the principals hold today; every parameter is classified (a new
 * one fails this test); a condition holds (out-of-stage values simulated for every principal that
 * holds the action: denied; the stage's own: allowed); an authorizing action is denied on
 * out-of-stage targets (to the caller, or to the stage's boundary for what Lambda does with the
 * function's role and EventBridge Scheduler with a schedule's execution role); a residual is written
 * in docs/threat-model.md.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import {
  boundaryArn,
  boundaryStatements,
  deployRoleArn,
  policyDocument,
  previewRoleArn,
  type PolicyStatement,
} from "../../../infra-bootstrap/src/policies";
import { REPO_ROOT } from "../../src/repository";
import { ACCOUNT, EVERY_OPTION_VPC } from "../support/fixtures";
import { heldActions, heldStatements, HELD_REGION, HELD_STAGE, type Holder } from "./held-actions";
import { actionFacts, decide, type Doc } from "./simulate";

type Context = Record<string, string | string[]>;
interface Attempt {
  holder?: Holder;
  resource: string;
  context: Context;
}
interface Classification {
  class: "request" | "inert" | "condition" | "authorized" | "owned" | "residual";
  why: string;
  key?: string;
  attempts?: Attempt[];
  allowed?: Attempt[];
  by?: string;
  on?: string[];
  as?: "caller" | "functionRole" | "scheduleRole";
  context?: Context;
  residual?: string;
}
interface Targets {
  inertTypes: string[];
  byName: Record<string, Classification>;
  byParameter: Record<string, Classification>;
}
interface Fixture {
  botocore: { version: string; sha256: string };
  operations: Record<string, { holders: Holder[]; operation: string | null; parameters?: Record<string, string> }>;
}

const read = (rel: string) => fs.readFileSync(path.join(REPO_ROOT, rel), "utf8");
const TARGETS = JSON.parse(read("infra-bootstrap/parameter-targets.json")) as Targets;
const FIXTURE = JSON.parse(read("infra-bootstrap/test/fixtures/second-targets.json")) as Fixture;

const P = "aws";
const PRINCIPALS: Record<Holder, string> = {
  deploy: deployRoleArn(P, ACCOUNT, HELD_STAGE),
  preview: previewRoleArn(P, ACCOUNT, HELD_STAGE),
  ops: `arn:${P}:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/${HELD_REGION}/AWSReservedSSO_Operator_0123456789abcdef`,
  api: `arn:${P}:iam::${ACCOUNT}:role/ecs/sophia-api-task`,
};
const STATEMENTS = heldStatements();
const identity = (statements: PolicyStatement[]): Doc[] => [policyDocument(statements) as unknown as Doc];
/** What Lambda does with a function's role is bounded by the stage's boundary (the bootstrap's). */
const FUNCTION_ROLE = `arn:${P}:iam::${ACCOUNT}:role/sophia/${HELD_STAGE}/sophia-${HELD_STAGE}-interview-completed`;
/** What EventBridge Scheduler does with a schedule's execution role is bounded by the same boundary (infra-pulumi/src/erasure-check.ts). */
const SCHEDULE_ROLE = `arn:${P}:iam::${ACCOUNT}:role/sophia/${HELD_STAGE}/sophia-${HELD_STAGE}-erasure-check`;
const BOUNDARY = boundaryStatements({ partition: P, region: HELD_REGION, account: ACCOUNT, stage: HELD_STAGE, vpc: EVERY_OPTION_VPC, resumeBucket: "sophia-qa-resumes", resumeBucketPrefix: "resumes/" });

const VALUES: Record<string, string> = {
  stage: HELD_STAGE,
  region: HELD_REGION,
  account: ACCOUNT,
  vpcId: EVERY_OPTION_VPC.vpcId,
  subnetId: EVERY_OPTION_VPC.subnetIds[0]!,
  securityGroupId: EVERY_OPTION_VPC.securityGroupIds[0]!,
  boundaryArn: boundaryArn(P, ACCOUNT, HELD_STAGE),
};
const fill = (s: string) => s.replace(/\$\{(\w+)\}/g, (_, k: string) => VALUES[k] ?? `\${${k}}`);
const fillContext = (c: Context): Context => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Array.isArray(v) ? v.map(fill) : fill(v)]));

/** The parameter's last name; for a map of free keys (`Tags.*`), its last two. */
function leaf(param: string): string {
  const parts = param.split(".");
  return parts[parts.length - 1] === "*" ? parts.slice(-2).join(".") : parts[parts.length - 1]!.replace("[]", "");
}

function classify(action: string, param: string): Classification | undefined {
  return TARGETS.byParameter[`${action} ${param}`] ?? TARGETS.byName[leaf(param)];
}

test("second targets: the fixture lists exactly the actions the principals hold, each with its API operation (regenerate it with infra-bootstrap/scripts/regenerate-second-targets)", async () => {
  const held = await heldActions();
  const expected: Record<string, Holder[]> = {};
  for (const [holder, actions] of Object.entries(held) as [Holder, string[]][]) for (const a of actions) (expected[a] ??= []).push(holder);
  const got = Object.fromEntries(Object.entries(FIXTURE.operations).map(([a, e]) => [a, e.holders]));
  const want = Object.fromEntries(Object.keys(expected).sort().map((a) => [a, [...expected[a]!].sort()]));
  assert.deepEqual(got, want);
  // A permission no API operation is named after: what it authorizes is classified where it is named.
  assert.deepEqual(Object.entries(FIXTURE.operations).filter(([, e]) => e.operation === null).map(([a]) => a), ["iam:PassRole"]);
  assert.match(FIXTURE.botocore.version, /^\d+\.\d+\.\d+$/);
  assert.match(read("infra-bootstrap/scripts/regenerate-second-targets"), new RegExp(`BOTOCORE_VERSION=${FIXTURE.botocore.version.replace(/\./g, "\\.")}\\nBOTOCORE_SHA256=${FIXTURE.botocore.sha256}\\n`));
});

test("second targets: every parameter of every held action is classified, and no classification is stale", () => {
  const unclassified: string[] = [];
  const used = new Set<string>();
  let total = 0;
  const byClass: Record<string, number> = {};
  for (const [action, entry] of Object.entries(FIXTURE.operations)) {
    for (const [param, type] of Object.entries(entry.parameters ?? {})) {
      total++;
      if (TARGETS.inertTypes.includes(type)) {
        byClass["value (number, time, bytes)"] = (byClass["value (number, time, bytes)"] ?? 0) + 1;
        continue;
      }
      const exact = `${action} ${param}`;
      if (TARGETS.byParameter[exact]) used.add(exact);
      const c = classify(action, param);
      if (!c) unclassified.push(`${exact} (${type})`);
      else byClass[c.class] = (byClass[c.class] ?? 0) + 1;
    }
  }
  console.log(`second targets: ${Object.keys(FIXTURE.operations).length} actions, ${total} parameters (botocore ${FIXTURE.botocore.version}): ${JSON.stringify(byClass)}`);
  assert.deepEqual(unclassified, [], "classify each in infra-bootstrap/parameter-targets.json (byParameter, or byName when the name means the same everywhere)");
  assert.deepEqual(Object.keys(TARGETS.byParameter).filter((k) => !used.has(k)), [], "a classification of a parameter no held action has");
  for (const [k, c] of [...Object.entries(TARGETS.byName), ...Object.entries(TARGETS.byParameter)]) {
    assert.ok(c.why && c.why.length > 10, `${k}: say why`);
    assert.ok(["request", "inert"].includes(c.class) || k.includes(" "), `${k}: a ${c.class} classification names its action (byParameter)`);
  }
});

/** Every principal that holds the action, with its identity policies. */
function holdersOf(action: string): Holder[] {
  return FIXTURE.operations[action]?.holders ?? [];
}

test("second targets held by a condition key: out-of-stage values denied to every principal holding the action; the stage's own allowed", async () => {
  const reached: string[] = [];
  let n = 0;
  for (const [k, c] of Object.entries(TARGETS.byParameter).filter(([, c]) => c.class === "condition")) {
    const action = k.split(" ")[0]!;
    const facts = await actionFacts(action);
    assert.ok(facts.conditionKeys.includes(c.key!), `${k}: AWS's data gives ${action} no condition key ${c.key}`);
    assert.ok((c.attempts ?? []).length > 0, `${k}: no attempt`);
    for (const holder of holdersOf(action)) {
      for (const a of c.attempts!) {
        n++;
        const req = { principal: PRINCIPALS[holder], action, resource: fill(a.resource), context: fillContext(a.context) };
        if ((await decide(req, { identity: identity(STATEMENTS[holder]) })).decision === "Allowed") reached.push(`${holder}: ${k} ${JSON.stringify(req.context)} on ${req.resource}`);
      }
    }
    for (const a of c.allowed ?? []) {
      const req = { principal: PRINCIPALS[a.holder!], action, resource: fill(a.resource), context: fillContext(a.context) };
      assert.equal((await decide(req, { identity: identity(STATEMENTS[a.holder!]) })).decision, "Allowed", `${k}: the stage's own ${JSON.stringify(req.context)}`);
    }
  }
  console.log(`second targets: ${n} condition attempts, allowed=${reached.length}`);
  assert.deepEqual(reached, []);
});

test("second targets AWS authorizes as another action (of the caller, or of the function's or the schedule's role): denied on out-of-stage targets", async () => {
  const reached: string[] = [];
  for (const [k, c] of Object.entries(TARGETS.byParameter).filter(([, c]) => c.class === "authorized")) {
    const action = k.split(" ")[0]!;
    assert.ok((await actionFacts(c.by!)).exists, `${k}: ${c.by} is not an action AWS knows`);
    const who: [string, Doc[]][] =
      c.as === "functionRole"
        ? [[FUNCTION_ROLE, identity(BOUNDARY)]]
        : c.as === "scheduleRole"
          ? [[SCHEDULE_ROLE, identity(BOUNDARY)]]
          : holdersOf(action).map((h) => [PRINCIPALS[h], identity(STATEMENTS[h])] as [string, Doc[]]);
    for (const [principal, docs] of who) {
      for (const on of c.on ?? []) {
        const req = { principal, action: c.by!, resource: fill(on), context: fillContext(c.context ?? {}) };
        if ((await decide(req, { identity: docs })).decision === "Allowed") reached.push(`${k}: ${c.by} on ${req.resource} by ${principal}`);
      }
    }
  }
  assert.deepEqual(reached, []);
});

test("second targets with no control: each is a row of docs/threat-model.md's residuals, with its detection", () => {
  const doc = read("docs/threat-model.md");
  const table = doc.slice(doc.indexOf("## Residuals"), doc.indexOf("## CI, the repository"));
  for (const [k, c] of Object.entries(TARGETS.byParameter).filter(([, c]) => c.class === "residual")) {
    const row = table.split("\n").find((l) => l.startsWith("|") && l.includes(c.residual!));
    assert.ok(row, `${k}: docs/threat-model.md's residuals table has no row naming "${c.residual}"`);
    assert.ok(row.split("|").filter((x) => x.trim()).length >= 4, `${k}: the row says why, its bound and its detection`);
  }
});
