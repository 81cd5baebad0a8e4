/**
 * The scheduled erasure check (src/erasure-check.ts), under mocks for a stage with every option on
 * (one program per process; test/dev.test.ts checks dev's schedule by name, test/prod.test.ts that
 * production has the same resources): one EventBridge Scheduler schedule invoking report-generate
 * with exactly the declared payload (declarations/reports.json `erasureCheckInvocation`, which the
 * Rust side parses: tests/it/erasure.rs sends the same declaration), with a role of the stage that
 * may invoke that one function; and the erasures-overdue alarm that, because of it, pages on silence.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";

import { boundaryStatements, loadPermissions } from "../../infra-bootstrap/src/policies";
import { ERASURE_ALARM_PERIOD_SECONDS, ERASURE_CHECK_RATE_MINUTES, erasureCheckFunction, erasureCheckPayload } from "../src/erasure-check";
import { loadMetrics } from "../src/metrics";
import { REPO_ROOT } from "../src/repository";
import { loadSettings } from "../src/settings";
import { ACCOUNT, PARTITION, REGION } from "./support/fixtures";
import { arn, grants, names, parseDoc, TYPE } from "./support/expect";
import { EVERY_OPTION_CONFIG, type ProgramRun, runProgram } from "./support/harness";
import { byName, ofType, plain } from "./support/values";

const DECLARED = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "declarations", "reports.json"), "utf8")) as { erasureCheckInvocation: unknown }).erasureCheckInvocation;

const runs: Record<string, ProgramRun> = {};
before(async () => {
  runs["qa"] = await runProgram({ stack: "qa", config: EVERY_OPTION_CONFIG });
});

test("the declaration: the payload is an object, and its target is the one function that emits ErasuresOverdue (report-generate)", () => {
  assert.deepEqual(erasureCheckPayload(), DECLARED);
  assert.equal(erasureCheckFunction(loadSettings(), loadMetrics()), "report-generate");
  // The bootstrap's table names the same function: the boundary lets the stage's roles invoke it and no other.
  assert.equal(loadPermissions().erasureCheckFunction, erasureCheckFunction(loadSettings(), loadMetrics()));
});

for (const stage of ["qa"]) {
  test(`${stage}: one schedule invokes ${stage}'s report-generate every ${ERASURE_CHECK_RATE_MINUTES} minutes with exactly the declared payload, as the erasure-check role`, () => {
    const run = runs[stage]!;
    const n = names(stage);
    const schedules = ofType(run.resources, TYPE.schedule);
    assert.equal(schedules.length, 1);
    const s = schedules[0]!.inputs;
    assert.equal(s["name"], `sophia-${stage}-erasure-check`);
    assert.equal(s["groupName"], "default");
    assert.equal(s["scheduleExpression"], "rate(15 minutes)");
    assert.deepEqual(plain(s["flexibleTimeWindow"]), { mode: "OFF" });
    const target = plain(s["target"]) as Record<string, unknown>;
    assert.equal(target["arn"], arn.fn(n.fn("report-generate")));
    assert.equal(target["roleArn"], arn.role(`sophia-${stage}-erasure-check`, `/sophia/${stage}/`));
    // Exactly the declared payload: nothing added, nothing renamed.
    assert.deepEqual(JSON.parse(target["input"] as string), DECLARED);
    assert.deepEqual(target["retryPolicy"], { maximumEventAgeInSeconds: 900, maximumRetryAttempts: 2 });
    // The role's policy before the schedule: its first run may invoke.
    assert.ok(schedules[0]!.options.dependsOn.some((urn) => urn.endsWith(`::${TYPE.rolePolicy}::erasure-check-policy`)), schedules[0]!.options.dependsOn.join(", "));
  });

  test(`${stage}: the erasure-check role is the stage's (path, boundary), assumed by EventBridge Scheduler of the account only, and may invoke report-generate only`, () => {
    const run = runs[stage]!;
    const role = byName(run.resources, TYPE.role, `sophia-${stage}-erasure-check`).inputs;
    assert.equal(role["path"], `/sophia/${stage}/`);
    assert.equal(plain(role["permissionsBoundary"]), `arn:${PARTITION}:iam::${ACCOUNT}:policy/sophia-bootstrap/sophia-bootstrap-${stage}-boundary`);
    assert.deepEqual(JSON.parse(plain(role["assumeRolePolicy"]) as string).Statement, [
      { Effect: "Allow", Principal: { Service: "scheduler.amazonaws.com" }, Action: "sts:AssumeRole", Condition: { StringEquals: { "aws:SourceAccount": ACCOUNT } } },
    ]);
    const policies = ofType(run.resources, TYPE.rolePolicy).filter((p) => plain(p.inputs["role"]) === `sophia-${stage}-erasure-check`);
    assert.equal(policies.length, 1);
    assert.deepEqual(grants(parseDoc(policies[0]!.inputs["policy"])), [`lambda:InvokeFunction on ${arn.fn(names(stage).fn("report-generate"))}`]);
    // The stage's boundary allows the same invocation and no other function's.
    const boundary = boundaryStatements({ partition: PARTITION, region: REGION, account: ACCOUNT, stage, vpc: false });
    const invokes = boundary.filter((s) => s.Action.includes("lambda:InvokeFunction"));
    assert.deepEqual(invokes.map((s) => [s.Sid, s.Action, s.Resource, s.Condition]), [["StageErasureCheck", ["lambda:InvokeFunction"], [arn.fn(names(stage).fn("report-generate"))], undefined]]);
  });

  test(`${stage}: the erasures-overdue alarm treats missing data as breaching over an hour (four checks); every other alarm stays quiet when idle`, () => {
    const run = runs[stage]!;
    const alarms = ofType(run.resources, TYPE.alarm);
    const erasures = byName(run.resources, TYPE.alarm, `sophia-${stage}-report-generate-erasures-overdue`).inputs;
    assert.equal(erasures["treatMissingData"], "breaching");
    assert.equal(erasures["period"], ERASURE_ALARM_PERIOD_SECONDS);
    assert.equal(ERASURE_ALARM_PERIOD_SECONDS / (ERASURE_CHECK_RATE_MINUTES * 60), 4, "four checks per period: one late run is never a page");
    const others = alarms.filter((a) => plain(a.inputs["name"]) !== `sophia-${stage}-report-generate-erasures-overdue`);
    assert.ok(others.length > 10);
    for (const a of others) assert.equal(a.inputs["treatMissingData"], "notBreaching", plain(a.inputs["name"]) as string);
  });
}
