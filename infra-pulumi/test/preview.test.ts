/**
 * The program in preview mode (`setMocks(..., preview = true)`): the mocks return no computed
 * outputs, so ARNs and URLs stay unknown, as in a `pulumi preview` of a stack that does not exist
 * yet. Every resource must still be registered (none may hide inside an `apply`).
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import { checkCounts, checkSpecNumbers } from "./support/checks";
import { ALL_OUTPUT_NAMES, names, OUTPUT_NAMES, TYPE } from "./support/expect";
import { type ProgramRun, runProgram } from "./support/harness";
import { at, byName, isUnknown, ofType, plain, resolve } from "./support/values";

const STAGE = "dev";
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE, preview: true });
});

test("registers every resource in preview mode", () => {
  checkCounts(run.resources);
});

test("the replaced system's numbers are known in a preview", () => {
  checkSpecNumbers(run.resources, STAGE, true);
});

test("values computed by AWS are unknown, not missing", () => {
  for (const esm of ofType(run.resources, TYPE.esm)) {
    assert.ok(isUnknown(esm.inputs["eventSourceArn"]), "eventSourceArn");
    assert.ok(isUnknown(esm.inputs["functionName"]), "functionName");
  }
  for (const p of ofType(run.resources, TYPE.rolePolicy)) assert.ok(isUnknown(p.inputs["policy"]), "role policy document");
  // A DLQ's names its source queue's ARN (unknown); a source queue's is denyAll (known).
  const redrive = ofType(run.resources, TYPE.redriveAllow);
  assert.equal(redrive.filter((p) => isUnknown(p.inputs["redriveAllowPolicy"])).length, redrive.length / 2);
  for (const f of ofType(run.resources, TYPE.function)) assert.ok(isUnknown(f.inputs["role"]), "function role ARN");
  const ic = byName(run.resources, TYPE.function, names(STAGE).fn("interview-completed"));
  const url = at(ic.inputs, ["environment", "variables", "REPORT_GENERATE_QUEUE_URL"]);
  assert.ok(isUnknown(url.value) || isUnknown(plain(ic.inputs["environment"])), "queue URL in the environment");
});

test("secret values stay wrapped in a preview (in the secret versions), and no function gets one", () => {
  for (const v of ofType(run.resources, TYPE.secretVersion)) assert.equal(at(v.inputs, ["secretString"]).secret, true, v.name);
  for (const f of ofType(run.resources, TYPE.function)) {
    assert.equal(at(f.inputs, ["environment", "variables", "MONGODB_URI"]).value, undefined, f.name);
    assert.ok(isUnknown(at(f.inputs, ["environment", "variables", "MONGODB_URI_SECRET_ARN"]).value) || isUnknown(plain(f.inputs["environment"])), f.name);
  }
});

test("stack outputs exist under their names and are unknown until deployed", async () => {
  assert.deepEqual(Object.keys(run.outputs).sort(), ALL_OUTPUT_NAMES);
  for (const name of OUTPUT_NAMES) {
    const r = await resolve(run.outputs[name] as never);
    // Function names are inputs (known), and so are the bootstrap's access policies' ARNs (the
    // account, the stage and fixed names); everything AWS assigns (URLs, ARNs) is unknown.
    const known = name.endsWith("_FUNCTION_NAME") || name === "API_PUBLISH_POLICY_ARN" || name === "OPS_POLICY_ARN";
    assert.equal(r.known, known, `${name} known=${r.known}`);
  }
});
