/**
 * The stage's CloudWatch dashboard: what an operator looks at first. Queues (depth, age of the
 * oldest message, DLQ depth), functions (errors, throttles, duration, concurrency), the functions'
 * own metrics in Embedded Metric Format (records by outcome, credits moved, reports by outcome and
 * by error kind, the time to report against its service level, model latency and tokens per
 * report, the system's main running cost), and the
 * stage's ERROR log lines (a Logs Insights widget).
 *
 * EMF metrics come from the declaration (declarations/metrics.json, read by the Rust functions
 * too): a series is drawn only for a function that emits the metric, with a dimension set it is
 * emitted with (`emfMetric` refuses anything else). Functions that cannot run (reserved
 * concurrency 0, no queue) get no series. The body is built from names only, so it is plain JSON
 * that the tests can read. Body syntax:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html
 */
import * as aws from "@pulumi/aws";

import { emfMetric, emits, humanMs, type MetricsDeclaration, searchExpression, serviceLevel } from "./metrics";

/** The namespace of the functions' EMF metrics (metrics.json `namespace`). */
export const EMF_NAMESPACE = "Sophia";

export interface DashboardFunction {
  /** queues.json name (`report-generate`). */
  name: string;
  /** Deployed name (`sophia-<stage>-report-generate`). */
  functionName: string;
  logGroupName: string;
}

export interface DashboardInput {
  stage: string;
  region: string;
  metrics: MetricsDeclaration;
  /** Source queue and DLQ names. */
  queues: { queue: string; dlq: string }[];
  /** The functions that can run (see alarms.ts `canRun`). */
  functions: DashboardFunction[];
}

type Metric = (string | Record<string, unknown>)[];

interface Widget {
  type: "metric" | "log";
  x: number;
  y: number;
  width: number;
  height: number;
  properties: Record<string, unknown>;
}

const WIDTH = 8;
const HEIGHT = 6;
/** The dashboard grid is 24 units wide. */
const FULL_WIDTH = 24;
/** The Logs Insights widget's row limit. */
export const ERROR_LINES_LIMIT = 100;

function metricWidget(title: string, metrics: Metric[], extra: Record<string, unknown>, region: string): Widget["properties"] {
  return { title, metrics, region, view: "timeSeries", stacked: false, period: 60, ...extra };
}

/**
 * The stage's ERROR lines (JSON logs: `level`, `message`, the current span's fields under `span`),
 * newest first. Query syntax: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax.html
 */
export function errorLinesQuery(logGroups: string[]): string {
  return [
    ...logGroups.map((g) => `SOURCE '${g}'`),
    "fields @timestamp, @log, message, kind, span.messageId, span.interviewId, error",
    'filter level = "ERROR"',
    "sort @timestamp desc",
    `limit ${ERROR_LINES_LIMIT}`,
  ].join(" | ");
}

/** The dashboard's widgets, in reading order (three per row, the log widget full width last). */
export function dashboardWidgets(input: DashboardInput): Widget[] {
  const panels = [...awsPanels(input), ...emfPanels(input)];
  const widgets: Widget[] = panels.map((properties, i) => ({
    type: "metric",
    x: (i % 3) * WIDTH,
    y: Math.floor(i / 3) * HEIGHT,
    width: WIDTH,
    height: HEIGHT,
    properties,
  }));
  widgets.push({
    type: "log",
    x: 0,
    y: Math.ceil(panels.length / 3) * HEIGHT,
    width: FULL_WIDTH,
    height: HEIGHT,
    properties: {
      title: `ERROR log lines of stage ${input.stage} (newest ${ERROR_LINES_LIMIT})`,
      query: errorLinesQuery(input.functions.map((f) => f.logGroupName)),
      region: input.region,
      view: "table",
    },
  });
  return widgets;
}

const sqs = (metric: string, queue: string, stat: string): Metric => ["AWS/SQS", metric, "QueueName", queue, { stat }];
const lambda = (metric: string, fn: string, stat: string): Metric => ["AWS/Lambda", metric, "FunctionName", fn, { stat }];

/** The panels of AWS's own metrics: the queues' and the DLQs' (SQS), the functions' (Lambda). */
function awsPanels(input: DashboardInput): Widget["properties"][] {
  const { region } = input;
  const fns = input.functions.map((f) => f.functionName);
  return [
    metricWidget("Queue depth (visible messages)", input.queues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q.queue, "Maximum")), {}, region),
    metricWidget("Age of the oldest message (s)", input.queues.map((q) => sqs("ApproximateAgeOfOldestMessage", q.queue, "Maximum")), {}, region),
    metricWidget("Dead-letter queues (messages; should be 0)", input.queues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q.dlq, "Maximum")), {}, region),
    metricWidget("Function errors and throttles", fns.flatMap((f) => [lambda("Errors", f, "Sum"), lambda("Throttles", f, "Sum")]), { period: 300 }, region),
    metricWidget("Function duration p50 / p99 (ms)", fns.flatMap((f) => [lambda("Duration", f, "p50"), lambda("Duration", f, "p99")]), { period: 300 }, region),
    metricWidget("Concurrent executions", fns.map((f) => lambda("ConcurrentExecutions", f, "Maximum")), {}, region),
  ];
}

/** The panels of the functions' EMF metrics: outcomes, credits, reports, time to report, tokens. */
function emfPanels(input: DashboardInput): Widget["properties"][] {
  const { region, stage, metrics: decl } = input;
  const emf = (metric: string, fn: DashboardFunction, options: Record<string, unknown>): Metric => [
    ...emfMetric(decl, metric, { Stage: stage, Function: fn.functionName }),
    options,
  ];
  /** Every (function, metric) pair the declaration says exists, function by function. */
  const emitted = (names: string[], build: (metric: string, fn: DashboardFunction) => Metric[]): Metric[] =>
    input.functions.flatMap((fn) => names.filter((m) => emits(decl, m, fn.name)).flatMap((m) => build(m, fn)));
  const emitters = (metric: string) => input.functions.filter((fn) => emits(decl, metric, fn.name));
  const sum = (names: string[]) => emitted(names, (m, f) => [emf(m, f, { stat: "Sum" })]);
  const level = () => serviceLevel(decl, "TimeToReportMs");

  return [
    metricWidget("Records by outcome", sum(["RecordsProcessed", "RecordsFailed", "RecordsDroppedInvalid", "RecordsDropped"]), { period: 300 }, region),
    metricWidget("Credits settled, released, forfeited", sum(["CreditsConsumed", "CreditsReleased", "CreditsForfeited", "InterviewsSettled"]), { period: 300 }, region),
    metricWidget(
      "Reports: completed, failed, needing review, repair calls; model latency (ms, right axis)",
      emitted(["ReportsCompleted", "ReportsFailed", "ReportsNeedingReview", "ReportRepairCalls", "ModelLatencyMs"], (m, f) =>
        m === "ModelLatencyMs"
          ? [emf(m, f, { stat: "p50", yAxis: "right" }), emf(m, f, { stat: "p99", yAxis: "right" })]
          : [emf(m, f, { stat: "Sum" })],
      ),
      { period: 300 },
      region,
    ),
    metricWidget(
      "Report failures by error kind",
      emitters("ReportsFailed").map((f, i) => [
        {
          expression: searchExpression(decl, "ReportsFailed", ["Stage", "Function", "ErrorKind"], { Stage: stage, Function: f.functionName }, "Sum", 300),
          id: `kinds${i}`,
          label: "",
        },
      ]),
      { period: 300 },
      region,
    ),
    metricWidget(
      `Time to report: interview end -> report stored, p50 / ${level().statistic} (ms; level ${level().statistic} <= ${humanMs(level().thresholdMs)}); publish -> settled p95`,
      [
        ...emitted(["TimeToReportMs"], (m, f) => [emf(m, f, { stat: "p50" }), emf(m, f, { stat: serviceLevel(decl, m).statistic })]),
        ...emitted(["TimeToSettlementMs"], (m, f) => [emf(m, f, { stat: "p95" })]),
      ],
      { period: 300, annotations: { horizontal: [{ label: "time to report level", value: level().thresholdMs }] } },
      region,
    ),
    metricWidget(
      "Tokens per report (input, cached, output)",
      emitters("PromptTokens").flatMap((f, i) => [
        emf("PromptTokens", f, { id: `p${i}`, stat: "Sum", visible: false }),
        emf("CachedTokens", f, { id: `c${i}`, stat: "Sum", visible: false }),
        emf("CompletionTokens", f, { id: `o${i}`, stat: "Sum", visible: false }),
        emf("ReportsCompleted", f, { id: `r${i}`, stat: "Sum", visible: false }),
        [{ expression: `p${i} / r${i}`, label: "input tokens per report", id: `pr${i}` }],
        [{ expression: `c${i} / r${i}`, label: "cached tokens per report", id: `cr${i}` }],
        [{ expression: `o${i} / r${i}`, label: "output tokens per report", id: `or${i}` }],
      ]),
      { period: 3600 },
      region,
    ),
  ];
}

export function dashboard(name: string, dashboardName: string, input: DashboardInput): aws.cloudwatch.Dashboard {
  return new aws.cloudwatch.Dashboard(
    name,
    { dashboardName, dashboardBody: JSON.stringify({ widgets: dashboardWidgets(input) }) },
    { deleteBeforeReplace: true },
  );
}
