/**
 * The stage's CloudWatch dashboard: what an operator looks at first. Queues (depth, age of the
 * oldest message, DLQ depth), functions (errors, throttles, duration, concurrency), and the
 * functions' own metrics in Embedded Metric Format (`sophia_sqs_consumer::metrics`, namespace
 * `Sophia`, dimensions Stage and Function): records by outcome, credits moved, reports by outcome,
 * model latency and tokens per report, the system's main running cost.
 *
 * The body is built from names only (queues and functions have fixed names), so it is plain JSON
 * that the tests can read.
 */
import * as aws from "@pulumi/aws";

/** The namespace and dimensions of the functions' EMF metrics (see the Rust side). */
export const EMF_NAMESPACE = "Sophia";

export interface DashboardInput {
  stage: string;
  region: string;
  /** Source queue and DLQ names. */
  queues: { queue: string; dlq: string }[];
  /** Function names (`sophia-<stage>-...`), and which of them generates reports / settles. */
  functions: string[];
  settlementFunctions: string[];
  reportFunctions: string[];
}

type Metric = (string | Record<string, unknown>)[];

interface Widget {
  type: "metric" | "text";
  x: number;
  y: number;
  width: number;
  height: number;
  properties: Record<string, unknown>;
}

const WIDTH = 8;
const HEIGHT = 6;

function metricWidget(title: string, metrics: Metric[], extra: Record<string, unknown>, region: string): Widget["properties"] {
  return { title, metrics, region, view: "timeSeries", stacked: false, period: 60, ...extra };
}

/** The dashboard's widgets, in reading order (three per row). */
export function dashboardWidgets(input: DashboardInput): Widget[] {
  const { region, stage } = input;
  const sqs = (metric: string, queue: string, stat: string): Metric => ["AWS/SQS", metric, "QueueName", queue, { stat }];
  const lambda = (metric: string, fn: string, stat: string): Metric => ["AWS/Lambda", metric, "FunctionName", fn, { stat }];
  const emf = (metric: string, fn: string, stat: string, label?: string): Metric => [
    EMF_NAMESPACE,
    metric,
    "Stage",
    stage,
    "Function",
    fn,
    { stat, ...(label ? { label } : {}) },
  ];
  const panels: Widget["properties"][] = [
    metricWidget("Queue depth (visible messages)", input.queues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q.queue, "Maximum")), {}, region),
    metricWidget("Age of the oldest message (s)", input.queues.map((q) => sqs("ApproximateAgeOfOldestMessage", q.queue, "Maximum")), {}, region),
    metricWidget("Dead-letter queues (messages; should be 0)", input.queues.map((q) => sqs("ApproximateNumberOfMessagesVisible", q.dlq, "Maximum")), {}, region),
    metricWidget(
      "Function errors and throttles",
      input.functions.flatMap((f) => [lambda("Errors", f, "Sum"), lambda("Throttles", f, "Sum")]),
      { period: 300 },
      region,
    ),
    metricWidget(
      "Function duration p50 / p99 (ms)",
      input.functions.flatMap((f) => [lambda("Duration", f, "p50"), lambda("Duration", f, "p99")]),
      { period: 300 },
      region,
    ),
    metricWidget("Concurrent executions", input.functions.map((f) => lambda("ConcurrentExecutions", f, "Maximum")), {}, region),
    metricWidget(
      "Records by outcome",
      input.functions.flatMap((f) =>
        ["RecordsProcessed", "RecordsFailed", "RecordsDroppedInvalid", "RecordsDropped"].map((m) => emf(m, f, "Sum")),
      ),
      { period: 300 },
      region,
    ),
    metricWidget(
      "Credits settled, released, forfeited",
      input.settlementFunctions.flatMap((f) =>
        ["CreditsConsumed", "CreditsReleased", "CreditsForfeited", "InterviewsSettled"].map((m) => emf(m, f, "Sum")),
      ),
      { period: 300 },
      region,
    ),
    metricWidget(
      "Reports and model latency (ms, p50 / p99)",
      input.reportFunctions.flatMap((f) => [
        emf("ReportsCompleted", f, "Sum"),
        emf("ReportsFailed", f, "Sum"),
        emf("ModelLatencyMs", f, "p50"),
        emf("ModelLatencyMs", f, "p99"),
      ]),
      { period: 300 },
      region,
    ),
    metricWidget(
      "Tokens per report (input, cached, output)",
      input.reportFunctions.flatMap((f, i) => [
        [...emf("PromptTokens", f, "Sum").slice(0, 6), { id: `p${i}`, stat: "Sum", visible: false }],
        [...emf("CachedTokens", f, "Sum").slice(0, 6), { id: `c${i}`, stat: "Sum", visible: false }],
        [...emf("CompletionTokens", f, "Sum").slice(0, 6), { id: `o${i}`, stat: "Sum", visible: false }],
        [...emf("ReportsCompleted", f, "Sum").slice(0, 6), { id: `r${i}`, stat: "Sum", visible: false }],
        [{ expression: `p${i} / r${i}`, label: "input tokens per report", id: `pr${i}` }],
        [{ expression: `c${i} / r${i}`, label: "cached tokens per report", id: `cr${i}` }],
        [{ expression: `o${i} / r${i}`, label: "output tokens per report", id: `or${i}` }],
      ]),
      { period: 3600 },
      region,
    ),
  ];
  return panels.map((properties, i) => ({
    type: "metric",
    x: (i % 3) * WIDTH,
    y: Math.floor(i / 3) * HEIGHT,
    width: WIDTH,
    height: HEIGHT,
    properties,
  }));
}

export function dashboard(name: string, dashboardName: string, input: DashboardInput): aws.cloudwatch.Dashboard {
  return new aws.cloudwatch.Dashboard(
    name,
    { dashboardName, dashboardBody: JSON.stringify({ widgets: dashboardWidgets(input) }) },
    { deleteBeforeReplace: true },
  );
}
