/**
 * docs/reference/alarms.md and docs/reference/metrics.md, rendered from the program's one list of
 * alarms (alarms.ts `plannedAlarms` / `ALARM_KINDS`) and from the metrics declaration
 * (metrics.json). A test fails when the committed files differ from what this renders;
 * `scripts/regenerate` writes them (through ci/write-reference.ts).
 */
import * as path from "node:path";

import { ALARM_KINDS, alarmDescription, alarmKind, plannedAlarms, RUNBOOK_PATH } from "./alarms";
import { REPO_ROOT } from "./repository";
import { humanMs, type MetricsDeclaration } from "./metrics";
import type { Settings } from "./settings";

export const ALARMS_REFERENCE = path.join(REPO_ROOT, "docs", "reference", "alarms.md");
export const METRICS_REFERENCE = path.join(REPO_ROOT, "docs", "reference", "metrics.md");
const STAGE = "<stage>";

const generated = (source: string) =>
  `<!-- Generated from ${source} by infra-pulumi/src/reference.ts: do not edit; run\n` +
  `     scripts/regenerate  (a test fails when this file drifts). -->\n`;

const cell = (s: string) => s.replace(/\|/g, "\\|");

export function renderAlarmsReference(settings: Settings, metrics: MetricsDeclaration): string {
  // Every alarm a stage can have: interview-failed's only when it may be invoked.
  const all = plannedAlarms(settings, metrics, { stage: STAGE, invocableUnsubscribed: true });
  const unsubscribed = new Set(settings.functions.filter((f) => f.subscribedTo === null).map((f) => f.name));
  const lines = [
    generated("infra-pulumi/src/alarms.ts (plannedAlarms, ALARM_KINDS)"),
    "# Alarms",
    "",
    "Every alarm of a stage, named `" + `${settings.appName}-<stage>-<suffix>` + "`. Each notifies the stage's alarm topic",
    "(`sophia:alarmTopicArn`, or the stage's own `" + `${settings.appName}-<stage>-alarms` + "` with `sophia:alarmSubscription`) when it",
    "enters ALARM; none sends an OK message (a new alarm leaves INSUFFICIENT_DATA on the first deploy:",
    "OK actions would send one message per alarm). Missing data is not breaching: an idle stage stays quiet,",
    "except for the erasures-overdue alarm, whose count a schedule of the stage makes arrive whatever the",
    "traffic (infra-pulumi/src/erasure-check.ts): for it, a period without a data point is ALARM.",
    "A protected stage (production, `prod-rs`) without a topic or a subscription does not deploy.",
    "",
    `What to do for each: [the runbook](../runbook.md). The description of every alarm (what the`,
    "notification says) names the first command and the runbook section.",
    "",
    "## Kinds",
    "",
    "| kind | metric | condition | runbook |",
    "| --- | --- | --- | --- |",
    ...ALARM_KINDS.map(
      (k) =>
        `| ${k.title} | ${cell(k.metric)} | ${cell(k.condition)} | ${[...new Set(all.filter((a) => a.kind === k.id).map((a) => k.anchor(a.subject)))]
          .map((a) => `[${a}](../runbook.md#${a})`)
          .join(", ")} |`,
    ),
    "",
    "## Alarms",
    "",
    "| alarm (suffix) | kind | description (what the notification says) |",
    "| --- | --- | --- |",
    ...all.map((a) => {
      const note = unsubscribed.has(a.subject.name) ? " (only with `sophia:invocableUnsubscribedFunctions: true`)" : "";
      return `| \`${a.suffix}\`${note} | ${alarmKind(a.kind).title} | ${cell(alarmDescription(a.kind, a.subject))} |`;
    }),
    "",
    `Links in descriptions are paths in this repository (\`${RUNBOOK_PATH}#<section>\`).`,
    "",
  ];
  return lines.join("\n");
}

export function renderMetricsReference(decl: MetricsDeclaration): string {
  const lines = [
    generated("declarations/metrics.json"),
    "# Metrics",
    "",
    `The functions write their metrics as CloudWatch Embedded Metric Format lines (namespace \`${decl.namespace}\`),`,
    "declared once in `declarations/metrics.json`: the Rust functions embed it (every line carries exactly the",
    "declared dimension sets) and the Pulumi program builds the dashboard and the alarms from it.",
    "CloudWatch matches whole dimension sets: a metric can be read only with a set it is emitted with.",
    "",
    "## Dimensions",
    "",
    "| dimension | value |",
    "| --- | --- |",
    ...Object.entries(decl.dimensions).map(([d, what]) => `| \`${d}\` | ${cell(what)} |`),
    "",
    "## Metrics",
    "",
    "| metric | unit | dimension sets | emitted by | meaning |",
    "| --- | --- | --- | --- | --- |",
    ...decl.metrics.map(
      (m) =>
        `| \`${m.name}\` | ${m.unit} | ${m.dimensionSets.map((s) => `[${s.join(", ")}]`).join("<br>")} | ${
          m.emittedBy === "*" ? "every function" : m.emittedBy.join(", ")
        } | ${cell(m.description)} |`,
    ),
    "",
    "## Service levels",
    "",
    "What the stage alarms on (`infra-pulumi/src/alarms.ts`) and the load test compares its figures with.",
    "",
    "| metric | statistic | at most | over | meaning |",
    "| --- | --- | --- | --- | --- |",
    ...(decl.serviceLevels ?? []).map(
      (l) => `| \`${l.metric}\` | ${l.statistic} | ${humanMs(l.thresholdMs)} | ${humanMs(l.periodSeconds * 1000)} | ${cell(l.description)} |`,
    ),
    "",
    "Adding a metric: its line in `declarations/metrics.json`. The Rust `Metric` enum is generated from",
    "it (`declarations/build.rs`, used by `functions/sqs-consumer/src/metrics.rs`); the code that emits it is yours to write.",
    "",
  ];
  return lines.join("\n");
}
