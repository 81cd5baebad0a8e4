/**
 * The stage program against the deploy role's table (infra-bootstrap/deploy-permissions.json): the
 * program runs under mocks with every opt-in that adds resource types (VPC endpoints, an alarm
 * subscription), and every resource type it registers must have a row, so a type the stage starts
 * creating fails here until its actions are granted (and cited). Also: the migration step that
 * runs before traffic, and an unprotected stage's secrets that can be re-created at once.
 */
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";

import { REPO_ROOT } from "../src/repository";
import { MIGRATION_FUNCTION, MIGRATION_PAYLOAD } from "../src/wiring";
import { names, TYPE } from "./support/expect";
import { EVERY_OPTION_CONFIG, type ProgramRun, runProgram } from "./support/harness";
import { byName, ofType, plain } from "./support/values";

const STAGE = "qa";
const TABLE = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "infra-bootstrap", "deploy-permissions.json"), "utf8")) as {
  migrateFunction: string;
  resourceTypes: Record<string, { source: string; viaResourcePolicy?: string; statements: { actions: string[]; resources: string[] }[] }>;
};
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE, config: EVERY_OPTION_CONFIG });
});

test("every AWS resource type the stage creates has a row in the deploy role's table", () => {
  const types = [...new Set(run.resources.filter((r) => r.custom && r.type.startsWith("aws:")).map((r) => r.type))].sort();
  assert.ok(types.length >= 15, types.join(", "));
  const missing = types.filter((t) => !(t in TABLE.resourceTypes));
  assert.deepEqual(missing, [], `add a row (actions + the Service Authorization Reference page) to infra-bootstrap/deploy-permissions.json for: ${missing.join(", ")}`);
  // A row without statements says which resource policy grants the deploy role instead.
  for (const t of types) assert.ok(TABLE.resourceTypes[t]!.statements.length > 0 || TABLE.resourceTypes[t]!.viaResourcePolicy, t);
});

test("the program and the table name the same migration function", () => {
  assert.equal(TABLE.migrateFunction, MIGRATION_FUNCTION);
  const invoke = TABLE.resourceTypes[TYPE.invocation]!.statements.flatMap((s) => s.resources);
  // Unqualified, and qualified: aws.lambda.Invocation invokes with Qualifier=$LATEST.
  assert.deepEqual(invoke, [
    "arn:${partition}:lambda:${region}:${account}:function:${migrateFunction}",
    "arn:${partition}:lambda:${region}:${account}:function:${migrateFunction}:$LATEST",
  ]);
});

test("the migration: one invocation of interview-completed with {sophiaOps: migrate}, re-run when the code, database or connection changes", () => {
  const [inv] = ofType(run.resources, TYPE.invocation);
  assert.ok(inv);
  assert.equal(plain(inv.inputs["functionName"]), names(STAGE).fn(MIGRATION_FUNCTION));
  assert.deepEqual(JSON.parse(inv.inputs["input"] as string), MIGRATION_PAYLOAD);
  assert.deepEqual(JSON.parse(inv.inputs["input"] as string), { sophiaOps: "migrate" });
  const triggers = plain(inv.inputs["triggers"]) as Record<string, string>;
  const zip = fs.readFileSync(path.join(run.artifactsDir, MIGRATION_FUNCTION, "bootstrap.zip"));
  assert.equal(triggers["codeSha256"], crypto.createHash("sha256").update(zip).digest("hex"));
  assert.equal(triggers["database"], `sophia_${STAGE}`);
  assert.equal(triggers["connection"], "version-of-secrets-mongodb-uri-value", "a new connection string (secret version) re-runs it");
  assert.equal(inv.inputs["lifecycleScope"], undefined, "CREATE_ONLY (default): runs on create and on a trigger change");
});

test("before traffic: every event source mapping depends on the migration", () => {
  const esms = ofType(run.resources, TYPE.esm);
  assert.equal(esms.length, 2);
  for (const esm of esms) {
    assert.ok(
      esm.options.dependsOn.some((urn) => urn.endsWith(`::${TYPE.invocation}::migrate`)),
      `${esm.name} waits for the migration: ${esm.options.dependsOn.join(", ")}`,
    );
  }
  const fn = byName(run.resources, TYPE.function, names(STAGE).fn(MIGRATION_FUNCTION));
  assert.ok(fn, "the invoked function exists in the stage");
});

test("an unprotected stage's secrets are deleted without recovery, so destroy then up works at once", () => {
  const secrets = ofType(run.resources, TYPE.secret);
  assert.ok(secrets.length > 0);
  for (const s of secrets) assert.equal(s.inputs["recoveryWindowInDays"], 0, s.name);
});
