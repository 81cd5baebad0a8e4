/**
 * Observability under mocks (dev's real config): the dashboard and the alarms name only metrics
 * and dimension sets the functions emit (declarations/metrics.json, the declaration the Rust side
 * embeds), ReportsFailed shows, failing reports alarm within minutes, the stage's ERROR lines are
 * listed; every alarm says the first command and names an existing runbook section; the program
 * creates exactly the one list of alarms, and docs/reference/{alarms,metrics}.md match what that
 * list and the declaration render.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";

import { ALARM_DESCRIPTION_MAX, plannedAlarms, RUNBOOK_PATH, withDeclaredFacts } from "../src/alarms";
import { REPO_ROOT } from "../src/repository";
import { EMF_NAMESPACE, ERROR_LINES_LIMIT } from "../src/dashboard";
import { checkDimensionSet, emfMetric, loadMetrics, type MetricsDeclaration, parseSearchExpression, serviceLevel } from "../src/metrics";
import { ALARMS_REFERENCE, METRICS_REFERENCE, renderAlarmsReference, renderMetricsReference } from "../src/reference";
import { loadSettings } from "../src/settings";
import { names, TYPE } from "./support/expect";
import { type ProgramRun, runProgram } from "./support/harness";
import { byName, ofType, plain } from "./support/values";

const STAGE = "dev";
let run: ProgramRun;
const settings = loadSettings();
const declaration: MetricsDeclaration = loadMetrics(settings);

before(async () => {
  run = await runProgram({ stack: STAGE, stackFile: true });
});

type Widget = { type: string; width: number; properties: { title: string; metrics?: unknown[][]; query?: string } };

function widgets(): Widget[] {
  const [d] = ofType(run.resources, TYPE.dashboard);
  assert.ok(d, "one dashboard");
  assert.equal(d.inputs["dashboardName"], `sophia-${STAGE}`);
  return (JSON.parse(plain(d.inputs["dashboardBody"]) as string) as { widgets: Widget[] }).widgets;
}

function metricsOf(title: string): unknown[][] {
  const w = widgets().find((x) => x.properties.title.startsWith(title));
  assert.ok(w, `a "${title}" widget`);
  return w.properties.metrics!;
}

/** A dashboard metric row's namespace, name and dimensions (`[ns, name, k, v, ..., {options}]`). */
function rowMetric(row: unknown[]): { namespace: string; name: string; dimensions: Record<string, string> } | undefined {
  if (typeof row[0] !== "string") return undefined;
  const strings = row.filter((x): x is string => typeof x === "string");
  const dimensions: Record<string, string> = {};
  for (let i = 2; i + 1 < strings.length; i += 2) dimensions[strings[i]!] = strings[i + 1]!;
  return { namespace: strings[0]!, name: strings[1]!, dimensions };
}

test("queue depth, age and the DLQs of both pipelines, by their stage names", () => {
  const n = names(STAGE);
  const named = (title: string) => metricsOf(title).map((m) => m[3]);
  assert.deepEqual(named("Queue depth"), [n.queue("interview-completed"), n.queue("report-generate")]);
  assert.deepEqual(named("Age of the oldest message"), [n.queue("interview-completed"), n.queue("report-generate")]);
  assert.deepEqual(named("Dead-letter queues"), [n.dlq("interview-completed"), n.dlq("report-generate")]);
});

test("function errors, throttles, duration and concurrency for the two functions that can run, not interview-failed", () => {
  const n = names(STAGE);
  const fns = ["interview-completed", "report-generate"].map((f) => n.fn(f));
  const errors = metricsOf("Function errors").filter((m) => m[1] === "Errors").map((m) => m[3]);
  assert.deepEqual(errors.sort(), [...fns].sort());
  assert.equal(metricsOf("Function errors").filter((m) => m[1] === "Throttles").length, 2);
  assert.equal(metricsOf("Function duration").length, 4, "p50 and p99 of each");
  assert.equal(metricsOf("Concurrent executions").length, 2);
  const body = JSON.stringify(widgets());
  assert.ok(!body.includes(n.fn("interview-failed")), "reserved concurrency 0, no queue: no series can ever have data");
});

test("every EMF series and SEARCH of the dashboard names a declared metric with a declared dimension set, from a function that emits it", () => {
  const n = names(STAGE);
  let series = 0;
  let searches = 0;
  for (const w of widgets().filter((x) => x.type === "metric")) {
    for (const row of w.properties.metrics!) {
      const m = rowMetric(row);
      if (m && m.namespace === EMF_NAMESPACE) {
        series++;
        checkDimensionSet(declaration, m.name, Object.keys(m.dimensions));
        assert.equal(m.dimensions["Stage"], STAGE, w.properties.title);
        const fn = settings.functions.find((f) => n.fn(f.name) === m.dimensions["Function"]);
        assert.ok(fn, `${m.name}: ${m.dimensions["Function"]} is a function of the stage`);
        const spec = declaration.metrics.find((x) => x.name === m.name)!;
        assert.ok(spec.emittedBy === "*" || spec.emittedBy.includes(fn.name), `${fn.name} does not emit ${m.name}`);
      }
      const expression = (row[0] as { expression?: string } | undefined)?.expression;
      const search = expression ? parseSearchExpression(expression) : undefined;
      if (search) {
        searches++;
        assert.equal(search.namespace, EMF_NAMESPACE);
        checkDimensionSet(declaration, search.name, search.dimensionSet);
      }
    }
  }
  assert.ok(series >= 20 && searches === 1, `${series} series, ${searches} searches`);
  // The guard itself: the old widget's [Stage, Function, ErrorKind]-less read of an undeclared set is refused.
  assert.throws(() => emfMetric(declaration, "ReportsFailed", { Stage: "dev", Function: "f", Kind: "x" }), /is not emitted with the dimension set/);
  assert.throws(() => emfMetric(declaration, "ReportsSkipped", { Stage: "dev", Function: "f" }), /not declared in declarations\/metrics\.json/);
});

test("reports: completed, failed (the [Stage, Function] total the functions now emit), needing review, repair calls; failures by kind; tokens per report", () => {
  const n = names(STAGE);
  const reports = metricsOf("Reports:").map(rowMetric);
  assert.deepEqual(
    reports.map((m) => m!.name),
    ["ReportsCompleted", "ReportsFailed", "ReportsNeedingReview", "ReportRepairCalls", "ModelLatencyMs", "ModelLatencyMs"],
  );
  for (const m of reports) assert.deepEqual(m!.dimensions, { Stage: STAGE, Function: n.fn("report-generate") });
  const [kinds] = metricsOf("Report failures by error kind");
  assert.equal(
    (kinds![0] as { expression: string }).expression,
    `SEARCH('{Sophia,Stage,Function,ErrorKind} MetricName="ReportsFailed" Stage="dev" Function="${n.fn("report-generate")}"', 'Sum', 300)`,
  );
  const credits = metricsOf("Credits settled").map((m) => m[5]);
  assert.deepEqual([...new Set(credits)], [n.fn("interview-completed")], "only interview-completed emits credit metrics");
  const tokens = metricsOf("Tokens per report");
  const expressions = tokens.map((m) => (m[0] as { expression?: string }).expression).filter(Boolean);
  assert.deepEqual(expressions, ["p0 / r0", "c0 / r0", "o0 / r0"]);
  assert.deepEqual(
    tokens.filter((m) => typeof m[0] === "string").map((m) => m[1]),
    ["PromptTokens", "CachedTokens", "CompletionTokens", "ReportsCompleted"],
  );
});

test("time to report: p50 and the service level's p95 of TimeToReportMs (report-generate) with the level drawn, and the p95 of TimeToSettlementMs (interview-completed)", () => {
  const n = names(STAGE);
  const rows = metricsOf("Time to report");
  assert.deepEqual(
    rows.map((r) => [rowMetric(r)!.name, rowMetric(r)!.dimensions["Function"], (r[r.length - 1] as { stat: string }).stat]),
    [
      ["TimeToReportMs", n.fn("report-generate"), "p50"],
      ["TimeToReportMs", n.fn("report-generate"), "p95"],
      ["TimeToSettlementMs", n.fn("interview-completed"), "p95"],
    ],
  );
  const w = widgets().find((x) => x.properties.title.startsWith("Time to report"))!;
  assert.match(w.properties.title, /level p95 <= 15 min/);
  assert.deepEqual((w.properties as { annotations?: unknown }).annotations, { horizontal: [{ label: "time to report level", value: 900_000 }] });
});

test("a Logs Insights widget lists the stage's ERROR lines from the log groups of the functions that can run", () => {
  const n = names(STAGE);
  const logs = widgets().filter((w) => w.type === "log");
  assert.equal(logs.length, 1);
  const q = logs[0]!.properties.query!;
  assert.equal(logs[0]!.width, 24);
  assert.ok(q.startsWith(`SOURCE '/aws/lambda/${n.fn("interview-completed")}' | SOURCE '/aws/lambda/${n.fn("report-generate")}' | fields `), q);
  assert.match(q, /\| filter level = "ERROR" \| sort @timestamp desc \| limit 100$/);
  assert.equal(ERROR_LINES_LIMIT, 100);
  assert.ok(!q.includes("interview-failed"));
});

test("every alarm on an EMF metric names a declared metric and dimension set; reports failing alarms within 5 minutes", () => {
  const n = names(STAGE);
  const emf = ofType(run.resources, TYPE.alarm).filter((a) => a.inputs["namespace"] === EMF_NAMESPACE);
  assert.equal(emf.length, 6, "dropped-invalid x2, reports-failed, transient-give-up, time-to-report, erasures-overdue");
  for (const a of emf) {
    checkDimensionSet(declaration, a.inputs["metricName"] as string, Object.keys(plain(a.inputs["dimensions"]) as object));
  }
  const failing = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-report-generate-reports-failed`).inputs;
  assert.equal(failing["metricName"], "ReportsFailed");
  assert.deepEqual(plain(failing["dimensions"]), { Stage: STAGE, Function: n.fn("report-generate") });
  assert.deepEqual([failing["statistic"], failing["period"], failing["evaluationPeriods"], failing["threshold"]], ["Sum", 300, 1, 0]);
  assert.equal(failing["comparisonOperator"], "GreaterThanThreshold");
  const givenUp = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-report-generate-transient-give-up`).inputs;
  assert.equal(givenUp["metricName"], "RecordsGivenUp");
  assert.deepEqual(plain(givenUp["dimensions"]), { Stage: STAGE, Function: n.fn("report-generate") });
  // Erasures not completed in time: any request PENDING past its completion time.
  const erasures = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-report-generate-erasures-overdue`).inputs;
  assert.equal(erasures["metricName"], "ErasuresOverdue");
  assert.deepEqual(plain(erasures["dimensions"]), { Stage: STAGE, Function: n.fn("report-generate") });
  // Over an hour (four scheduled checks, src/erasure-check.ts); an hour without a count pages too.
  assert.deepEqual([erasures["statistic"], erasures["period"], erasures["evaluationPeriods"], erasures["threshold"]], ["Maximum", 3600, 1, 0]);
  assert.equal(erasures["treatMissingData"], "breaching", "the schedule makes the count arrive whatever the traffic: silence is the schedule or the function broken");
  assert.match(plain(erasures["alarmDescription"]) as string, /Or no count arrived for 60 min: the scheduled erasure check \(every 15 minutes\) or report-generate is broken\. First: sophia-ops --stage dev erasure list --overdue\./);
  // Reports are late: the declared service level's percentile (an ExtendedStatistic) over its period.
  const late = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-report-generate-time-to-report`).inputs;
  assert.equal(late["metricName"], "TimeToReportMs");
  assert.deepEqual(plain(late["dimensions"]), { Stage: STAGE, Function: n.fn("report-generate") });
  assert.deepEqual(
    [late["statistic"], late["extendedStatistic"], late["period"], late["evaluationPeriods"], late["threshold"]],
    [undefined, "p95", 900, 1, 900_000],
    "p95 over 15 minutes above 15 minutes",
  );
  assert.deepEqual(serviceLevel(declaration, "TimeToReportMs"), { ...serviceLevel(declaration, "TimeToReportMs"), statistic: "p95", thresholdMs: 900_000, periodSeconds: 900 });
  assert.match(plain(late["alarmDescription"]) as string, /^Reports are late: the p95 of the time from an interview's end to its report stored, .* is over 15 min\. First: sophia-ops --stage dev report late\./);
  for (const f of ["interview-completed", "report-generate"]) {
    const a = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-${f}-dropped-invalid`).inputs;
    assert.equal(a["metricName"], "RecordsDroppedInvalid");
    assert.deepEqual(plain(a["dimensions"]), { Stage: STAGE, Function: n.fn(f) });
  }
});

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to '-'. */
function runbookAnchors(): Set<string> {
  const text = fs.readFileSync(path.join(REPO_ROOT, RUNBOOK_PATH), "utf8");
  const anchors = new Set<string>();
  for (const line of text.split("\n")) {
    const m = /^#{1,6}\s+(.+?)\s*$/.exec(line);
    if (m) anchors.add(m[1]!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-"));
  }
  return anchors;
}

// What each command parses to is checked on the Rust side (tools/ops/tests/runbook.rs runs
// every first command of docs/reference/alarms.md through the CLI's parser).
const QUEUE_NAMES = loadSettings().queues.map((q) => q.name).join("|");
const COMMANDS = [new RegExp(`^dlq list (${QUEUE_NAMES})$`), new RegExp(`^queue status (${QUEUE_NAMES})$`), /^interview unsettled$/, /^report failures$/, /^report late$/, /^dlq show /, /^dlq redrive /, /^interview show <interviewId>$/, /^report retry /, /^invariants check$/, /^erasure list --overdue$/];

test("every alarm says what happened, the first sophia-ops command and an existing runbook section; ALARM only, quiet when idle (but the scheduled erasure check's)", () => {
  const anchors = runbookAnchors();
  const alarms = ofType(run.resources, TYPE.alarm);
  for (const a of alarms) {
    const name = plain(a.inputs["name"]) as string;
    const description = plain(a.inputs["alarmDescription"]) as string;
    assert.ok(description.length <= ALARM_DESCRIPTION_MAX, name);
    const command = /First: sophia-ops --stage dev (.+?)\. Runbook: /.exec(description);
    assert.ok(command, `${name}: names the first command: ${description}`);
    assert.ok(COMMANDS.some((c) => c.test(command[1]!)), `${name}: ${command[1]} is a sophia-ops command`);
    const link = new RegExp(`Runbook: ${RUNBOOK_PATH.replace(".", "\\.")}#([a-z0-9-]+)$`).exec(description);
    assert.ok(link, `${name}: links the runbook`);
    assert.ok(anchors.has(link[1]!), `${name}: docs/runbook.md has no section #${link[1]}`);
    assert.equal(a.inputs["okActions"], undefined, `${name}: no OK action (first deploy: INSUFFICIENT_DATA -> OK for every alarm)`);
    // Idle is quiet, except where a schedule makes the data arrive whatever the traffic.
    assert.equal(a.inputs["treatMissingData"], name.endsWith("-erasures-overdue") ? "breaching" : "notBreaching", name);
  }
  // The report DLQ's notification warns about the redrive trap.
  const reportDlq = plain(byName(run.resources, TYPE.alarm, "sophia-dev-report-generate-dlq-not-empty").inputs["alarmDescription"]) as string;
  assert.match(reportDlq, /FAILED, at 3 attempts for answers that were wrong \(redrive with the reset\), or with their attempts left after a day of transient failures/);
});

test("the program creates exactly the one list of alarms (plannedAlarms), none for interview-failed in dev", () => {
  const registered = ofType(run.resources, TYPE.alarm).map((a) => plain(a.inputs["name"]) as string).sort();
  const planned = plannedAlarms(settings, declaration, { stage: STAGE, invocableUnsubscribed: false }).map((p) => `sophia-${STAGE}-${p.suffix}`).sort();
  assert.deepEqual(registered, planned);
  assert.ok(!registered.some((r) => r.includes("interview-failed")));
  assert.equal(
    plannedAlarms(settings, declaration, { stage: STAGE, invocableUnsubscribed: true }).filter((p) => p.subject.name === "interview-failed").length,
    3,
    "invocable: errors, throttles, dropped-invalid",
  );
});

test("docs/reference/alarms.md and metrics.md are what the alarm list and metrics.json render (regenerate: scripts/regenerate)", () => {
  assert.equal(fs.readFileSync(ALARMS_REFERENCE, "utf8"), renderAlarmsReference(settings, declaration));
  assert.equal(fs.readFileSync(METRICS_REFERENCE, "utf8"), renderMetricsReference(declaration));
});

test("metrics.json: the report metrics the reports engineer emits are declared with [Stage, Function] for report-generate", () => {
  for (const name of ["ReportsNeedingReview", "ReportRepairCalls"]) {
    const m = declaration.metrics.find((x) => x.name === name);
    assert.ok(m, name);
    assert.deepEqual([m.unit, m.dimensionSets, m.emittedBy], ["Count", [["Stage", "Function"]], ["report-generate"]]);
  }
  const failed = declaration.metrics.find((x) => x.name === "ReportsFailed")!;
  assert.deepEqual(failed.dimensionSets, [["Stage", "Function", "ErrorKind"], ["Stage", "Function"]]);
  const badLevel = path.join(REPO_ROOT, "infra-pulumi", "test", "support", "bad-level.tmp.json");
  fs.writeFileSync(
    badLevel,
    JSON.stringify({
      ...JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "declarations", "metrics.json"), "utf8")),
      serviceLevels: [
        { metric: "ReportsFailed", statistic: "p95", thresholdMs: 1, periodSeconds: 60, description: "" },
        { metric: "TimeToReportMs", statistic: "Average", thresholdMs: 0, periodSeconds: 90, description: "" },
      ],
    }),
  );
  try {
    assert.throws(
      () => loadMetrics(settings, badLevel),
      (e: unknown) =>
        e instanceof Error &&
        /service level: ReportsFailed is not a Milliseconds metric/.test(e.message) &&
        /TimeToReportMs: statistic Average is not a whole percentile/.test(e.message) &&
        /TimeToReportMs: thresholdMs is a positive integer/.test(e.message) &&
        /TimeToReportMs: periodSeconds is a multiple of 60/.test(e.message),
    );
  } finally {
    fs.rmSync(badLevel);
  }
  const bad = path.join(REPO_ROOT, "infra-pulumi", "test", "support", "bad-metrics.tmp.json");
  fs.writeFileSync(
    bad,
    JSON.stringify({
      namespace: "Sophia",
      dimensions: { Stage: "", Function: "" },
      metrics: [{ name: "A", unit: "Bytes", dimensionSets: [["Function", "Stage"]], emittedBy: ["nobody"], description: "" }],
    }),
  );
  try {
    assert.throws(
      () => loadMetrics(settings, bad),
      (e: unknown) =>
        e instanceof Error &&
        /A: unit Bytes is not one of Count, Milliseconds/.test(e.message) &&
        /A: every dimension set starts with Stage, Function/.test(e.message) &&
        /A: emittedBy names "nobody", not a function of queues\.json/.test(e.message),
    );
  } finally {
    fs.rmSync(bad);
  }
});

test("a DLQ's declared meaning names the attempt limit as {maxReportAttempts}, filled in from reports.json, never as a number of its own", () => {
  const limit = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "declarations/reports.json"), "utf8")).maxAttempts;
  const reportDlq = plain(byName(run.resources, TYPE.alarm, "sophia-dev-report-generate-dlq-not-empty").inputs["alarmDescription"]) as string;
  assert.match(reportDlq, new RegExp(`FAILED, at ${limit} attempts for answers that were wrong`));
  assert.equal(withDeclaredFacts("at {maxReportAttempts} attempts", "t"), `at ${limit} attempts`);
  const hours = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "declarations/reports.json"), "utf8")).erasureCompletionHours;
  assert.equal(withDeclaredFacts("after {erasureCompletionHours} hours", "t"), `after ${hours} hours`, "the erasure completion time, declared once");
  assert.throws(() => withDeclaredFacts("at 3 attempts", "x's dlqMeaning"), /x's dlqMeaning: write the attempt limit as \{maxReportAttempts\}/);
  assert.throws(() => withDeclaredFacts("after {maxReportTries}", "x"), /\{maxReportTries\} names no declared fact/);
});
