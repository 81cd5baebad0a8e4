/**
 * The scheduled erasure check: an EventBridge Scheduler schedule of the stage,
 * `<app>-<stage>-erasure-check` in the account's `default` group, invokes the function that emits
 * `ErasuresOverdue` (declarations/metrics.json: report-generate) every ERASURE_CHECK_RATE_MINUTES
 * with exactly the declared payload (declarations/reports.json `erasureCheckInvocation`, which the
 * function parses into its scheduled task). The function counts the erasure requests still PENDING
 * past their completion time and emits the metric whatever the traffic, so an idle stage has a data
 * point every period and the erasures-overdue alarm treats a period without one as breaching (the
 * schedule or the function is broken: docs/runbook.md, "Erasures not completed in time").
 *
 * The schedule invokes with its own role, `<app>-<stage>-erasure-check`: under the stage's IAM path,
 * with the stage's permissions boundary (the bootstrap's, whose `StageErasureCheck` statement allows
 * lambda:InvokeFunction on this one function of the stage and no other), assumable by EventBridge
 * Scheduler of this account only, allowed lambda:InvokeFunction on that function only. Whatever
 * target a schedule names, Scheduler calls it as the role it is given, so the role's boundary holds
 * the target to the stage (infra-bootstrap/parameter-targets.json, `scheduler:CreateSchedule
 * Target.Arn`). Schedules carry no tags (CreateSchedule has no Tags parameter: only schedule groups
 * are taggable, https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import { policyJson, type StageRoleScope, type Statement } from "./iam";
import { type MetricsDeclaration } from "./metrics";
import type { Naming } from "./naming";
import { DEFAULT_SETTINGS_PATH, type Settings } from "./settings";

/** The logical names of the role, its policy and the schedule (their physical name: `<app>-<stage>-erasure-check`). */
export const ERASURE_CHECK = "erasure-check";
/** The metric the check emits; its one emitting function is the schedule's target. */
export const ERASURE_CHECK_METRIC = "ErasuresOverdue";
/** The account's default schedule group: a schedule of the stage is `schedule/default/<app>-<stage>-erasure-check`. */
export const ERASURE_CHECK_GROUP = "default";
/** How often the check runs. */
export const ERASURE_CHECK_RATE_MINUTES = 15;
/**
 * The erasures-overdue alarm's period: four checks. A period without a data point (missing data is
 * breaching) is four missed checks in a row, never one late or throttled invocation.
 */
export const ERASURE_ALARM_PERIOD_SECONDS = 3600;

/** declarations/reports.json, beside queues.json. */
const REPORTS_PATH = path.join(path.dirname(DEFAULT_SETTINGS_PATH), "reports.json");

/** The payload the schedule sends, as declared once (declarations/reports.json `erasureCheckInvocation`). */
export function erasureCheckPayload(file: string = REPORTS_PATH): Record<string, string> {
  const raw = (JSON.parse(fs.readFileSync(file, "utf8")) as { erasureCheckInvocation?: unknown }).erasureCheckInvocation;
  const ok = typeof raw === "object" && raw !== null && !Array.isArray(raw) && Object.values(raw).every((v) => typeof v === "string");
  if (!ok || Object.keys(raw as object).length === 0) throw new Error(`${file}: erasureCheckInvocation must be an object of strings (the scheduled payload)`);
  return raw as Record<string, string>;
}

/** The one function that emits ErasuresOverdue (metrics.json `emittedBy`): what the schedule invokes. */
export function erasureCheckFunction(settings: Settings, metrics: MetricsDeclaration): string {
  const spec = metrics.metrics.find((m) => m.name === ERASURE_CHECK_METRIC);
  const by = spec?.emittedBy;
  if (!Array.isArray(by) || by.length !== 1 || !settings.functions.some((f) => f.name === by[0])) {
    throw new Error(`declarations/metrics.json: ${ERASURE_CHECK_METRIC} must be emitted by exactly one function of queues.json (the scheduled erasure check's target)`);
  }
  return by[0]!;
}

/** EventBridge Scheduler of this account only (the confused-deputy condition AWS recommends for an execution role: https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html). */
export function erasureCheckTrustPolicy(account: string): string {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Service: "scheduler.amazonaws.com" },
        Action: "sts:AssumeRole",
        Condition: { StringEquals: { "aws:SourceAccount": account } },
      },
    ],
  });
}

/** lambda:InvokeFunction on exactly the checked function (Scheduler invokes its unqualified ARN). */
export function invokeStatement(functionArn: pulumi.Input<string>): Statement {
  return { Sid: "InvokeTheErasureCheck", Effect: "Allow", Action: ["lambda:InvokeFunction"], Resource: [functionArn] };
}

export interface ErasureCheck {
  role: aws.iam.Role;
  rolePolicy: aws.iam.RolePolicy;
  schedule: aws.scheduler.Schedule;
}

/** The role, its policy and the schedule. */
export function erasureCheck(args: { naming: Naming; roleScope: StageRoleScope; functionName: string; functionArn: pulumi.Output<string> }): ErasureCheck {
  const { naming } = args;
  // The schedule and its role share one name; the literal lets tools/ops/tests/runbook.rs find it.
  const name = naming.roleName("erasure-check");
  const account = aws.getCallerIdentityOutput().accountId;
  const role = new aws.iam.Role(
    ERASURE_CHECK,
    {
      name,
      path: args.roleScope.path,
      permissionsBoundary: args.roleScope.permissionsBoundary,
      description: `Invokes ${args.functionName} with the scheduled erasure check, assumed by EventBridge Scheduler only`,
      assumeRolePolicy: account.apply(erasureCheckTrustPolicy),
      tags: naming.tags,
    },
    { deleteBeforeReplace: true },
  );
  const rolePolicy = new aws.iam.RolePolicy(
    `${ERASURE_CHECK}-policy`,
    { role: role.id, name: naming.policyName(ERASURE_CHECK), policy: policyJson([invokeStatement(args.functionArn)]) },
    { deleteBeforeReplace: true },
  );
  const schedule = new aws.scheduler.Schedule(
    ERASURE_CHECK,
    {
      name,
      groupName: ERASURE_CHECK_GROUP,
      description: `Counts the overdue erasure requests of ${naming.prefix} (ErasuresOverdue) whatever the traffic`,
      scheduleExpression: `rate(${ERASURE_CHECK_RATE_MINUTES} minutes)`,
      flexibleTimeWindow: { mode: "OFF" },
      target: {
        arn: args.functionArn,
        roleArn: role.arn,
        input: JSON.stringify(erasureCheckPayload()),
        // A check older than the next one is worth nothing: the next one counts again.
        retryPolicy: { maximumEventAgeInSeconds: ERASURE_CHECK_RATE_MINUTES * 60, maximumRetryAttempts: 2 },
      },
    },
    // The role's policy first: Scheduler checks it can assume the role, and the first run must be allowed to invoke.
    { dependsOn: [rolePolicy], deleteBeforeReplace: true },
  );
  return { role, rolePolicy, schedule };
}
