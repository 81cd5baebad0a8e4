/**
 * The stage's dashboard and the "invalid messages dropped" alarm, under mocks (dev's real config):
 * every widget names this stage's queues and functions, the EMF metrics use the namespace and
 * dimensions the Rust side writes, and tokens per report are shown.
 */
import * as assert from "node:assert/strict";
import { before, test } from "node:test";

import { EMF_NAMESPACE } from "../src/dashboard";
import { names, TYPE } from "./support/expect";
import { type ProgramRun, runProgram } from "./support/harness";
import { byName, ofType, plain } from "./support/values";

const STAGE = "dev";
let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: STAGE, stackFile: true });
});

type Widget = { properties: { title: string; metrics: unknown[][] } };

function widgets(): Widget[] {
  const [d] = ofType(run.resources, TYPE.dashboard);
  assert.ok(d, "one dashboard");
  assert.equal(d.inputs["dashboardName"], `sophia-${STAGE}`);
  return (JSON.parse(plain(d.inputs["dashboardBody"]) as string) as { widgets: Widget[] }).widgets;
}

function metricsOf(title: string): unknown[][] {
  const w = widgets().find((x) => x.properties.title.startsWith(title));
  assert.ok(w, `a "${title}" widget`);
  return w.properties.metrics;
}

test("queue depth, age and the DLQs of both pipelines, by their stage names", () => {
  const n = names(STAGE);
  const named = (title: string) => metricsOf(title).map((m) => m[3]);
  assert.deepEqual(named("Queue depth"), [n.queue("interview-completed"), n.queue("report-generate")]);
  assert.deepEqual(named("Age of the oldest message"), [n.queue("interview-completed"), n.queue("report-generate")]);
  assert.deepEqual(named("Dead-letter queues"), [n.dlq("interview-completed"), n.dlq("report-generate")]);
});

test("function errors, throttles, duration and concurrency for the three functions", () => {
  const n = names(STAGE);
  const fns = ["interview-completed", "report-generate", "interview-failed"].map((f) => n.fn(f));
  const errors = metricsOf("Function errors").filter((m) => m[1] === "Errors").map((m) => m[3]);
  assert.deepEqual(errors.sort(), [...fns].sort());
  assert.equal(metricsOf("Function errors").filter((m) => m[1] === "Throttles").length, 3);
  assert.equal(metricsOf("Function duration").length, 6, "p50 and p99 of each");
  assert.equal(metricsOf("Concurrent executions").length, 3);
});

test("the EMF metrics: namespace, dimensions Stage and Function, and tokens per report", () => {
  const n = names(STAGE);
  for (const title of ["Records by outcome", "Credits settled", "Reports and model latency"]) {
    for (const m of metricsOf(title)) {
      assert.equal(m[0], EMF_NAMESPACE, title);
      assert.deepEqual([m[2], m[3], m[4]], ["Stage", STAGE, "Function"], title);
    }
  }
  const credits = metricsOf("Credits settled").map((m) => m[5]);
  assert.ok(credits.includes(n.fn("interview-completed")) && !credits.includes(n.fn("report-generate")));
  const tokens = metricsOf("Tokens per report");
  const expressions = tokens.map((m) => (m[0] as { expression?: string }).expression).filter(Boolean);
  assert.deepEqual(expressions, ["p0 / r0", "c0 / r0", "o0 / r0"]);
  assert.deepEqual(
    tokens.filter((m) => typeof m[0] === "string").map((m) => m[1]),
    ["PromptTokens", "CachedTokens", "CompletionTokens", "ReportsCompleted"],
  );
});

test("an alarm on invalid messages dropped, per function, on the EMF metric", () => {
  const n = names(STAGE);
  for (const f of ["interview-completed", "report-generate"]) {
    const a = byName(run.resources, TYPE.alarm, `sophia-${STAGE}-${f}-dropped-invalid`).inputs;
    assert.equal(a["namespace"], "Sophia");
    assert.equal(a["metricName"], "RecordsDroppedInvalid");
    assert.deepEqual(plain(a["dimensions"]), { Stage: STAGE, Function: n.fn(f) });
    assert.equal(a["threshold"], 0);
    assert.equal(a["comparisonOperator"], "GreaterThanThreshold");
  }
});
