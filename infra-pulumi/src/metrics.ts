/**
 * The functions' metrics, `declarations/metrics.json`: the one declaration of names, units,
 * dimension sets and emitting functions, which the Rust functions embed
 * (`sophia_sqs_consumer::metrics`). The dashboard and the alarms name EMF metrics only through
 * `emfMetric` / `searchExpression`, which refuse a metric or a dimension set the functions do not
 * emit: CloudWatch matches whole dimension sets, so a graph or an alarm on an undeclared
 * combination is silently empty
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#dimension-combinations).
 */
import * as fs from "node:fs";
import * as path from "node:path";

import type { Settings } from "./settings";

export const DEFAULT_METRICS_PATH = path.join(__dirname, "..", "..", "declarations", "metrics.json");

export const UNITS = ["Count", "Milliseconds"] as const;
export type Unit = (typeof UNITS)[number];

export interface MetricSpec {
  name: string;
  unit: Unit;
  /** Each set is written on every line carrying the metric. */
  dimensionSets: string[][];
  /** `"*"`: every function of queues.json (the batch counts of the SQS consumer). */
  emittedBy: "*" | string[];
  description: string;
}

/**
 * A service level (`serviceLevels`): the `statistic` percentile of a Milliseconds metric over
 * `periodSeconds` stays at or under `thresholdMs`. The stage alarms on it (alarms.ts) and the load
 * test compares its figures with it (tools/perf).
 */
export interface ServiceLevel {
  metric: string;
  /** `p95`: CloudWatch's percentile statistic (an alarm's ExtendedStatistic). */
  statistic: string;
  thresholdMs: number;
  periodSeconds: number;
  description: string;
}

export interface MetricsDeclaration {
  namespace: string;
  /** Dimension name -> what its value is. */
  dimensions: Record<string, string>;
  metrics: MetricSpec[];
  serviceLevels?: ServiceLevel[];
}

/** Loads and checks metrics.json (against queues.json's functions when `settings` is given). */
export function loadMetrics(settings?: Settings, file: string = DEFAULT_METRICS_PATH): MetricsDeclaration {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as MetricsDeclaration;
  const problems: string[] = [];
  if (typeof raw.namespace !== "string" || !Array.isArray(raw.metrics) || typeof raw.dimensions !== "object") {
    problems.push("needs namespace (string), dimensions (object) and metrics (array)");
  }
  const dims = Object.keys(raw.dimensions ?? {});
  const seen = new Set<string>();
  for (const m of raw.metrics ?? []) {
    if (seen.has(m.name)) problems.push(`${m.name} is declared twice`);
    seen.add(m.name);
    if (!(UNITS as readonly string[]).includes(m.unit)) problems.push(`${m.name}: unit ${m.unit} is not one of ${UNITS.join(", ")}`);
    if (!Array.isArray(m.dimensionSets) || m.dimensionSets.length === 0) problems.push(`${m.name}: no dimension set`);
    for (const set of m.dimensionSets ?? []) {
      if (set[0] !== "Stage" || set[1] !== "Function") problems.push(`${m.name}: every dimension set starts with Stage, Function`);
      for (const d of set) if (!dims.includes(d)) problems.push(`${m.name}: undeclared dimension ${d}`);
    }
    if (m.emittedBy !== "*") {
      if (!Array.isArray(m.emittedBy) || m.emittedBy.length === 0) problems.push(`${m.name}: emittedBy is "*" or a list of functions`);
      else if (settings) {
        for (const f of m.emittedBy) {
          if (!settings.functions.some((x) => x.name === f)) problems.push(`${m.name}: emittedBy names "${f}", not a function of queues.json`);
        }
      }
    }
  }
  for (const l of raw.serviceLevels ?? []) {
    const m = (raw.metrics ?? []).find((x) => x.name === l.metric);
    if (!m) problems.push(`service level: ${l.metric} is not a declared metric`);
    else if (m.unit !== "Milliseconds") problems.push(`service level: ${l.metric} is not a Milliseconds metric`);
    if (!/^p([1-9]|[1-9][0-9])$/.test(l.statistic)) problems.push(`service level of ${l.metric}: statistic ${l.statistic} is not a whole percentile (p95)`);
    for (const k of ["thresholdMs", "periodSeconds"] as const) {
      if (!Number.isInteger(l[k]) || l[k] <= 0) problems.push(`service level of ${l.metric}: ${k} is a positive integer`);
    }
    if (l.periodSeconds % 60 !== 0) problems.push(`service level of ${l.metric}: periodSeconds is a multiple of 60 (an alarm's period)`);
  }
  if (problems.length > 0) throw new Error(`${file} is invalid:\n  - ${problems.join("\n  - ")}`);
  return raw;
}

/** The service level declared on `metric`. */
export function serviceLevel(decl: MetricsDeclaration, metric: string): ServiceLevel {
  const l = (decl.serviceLevels ?? []).find((x) => x.metric === metric);
  if (!l) throw new Error(`no service level is declared on ${metric} (declarations/metrics.json serviceLevels)`);
  return l;
}

/** "15 min" / "90 s". */
export function humanMs(ms: number): string {
  const s = Math.round(ms / 1000);
  return s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}

export function metricSpec(decl: MetricsDeclaration, name: string): MetricSpec {
  const m = decl.metrics.find((x) => x.name === name);
  if (!m) throw new Error(`metric ${name} is not declared in declarations/metrics.json: the functions do not emit it`);
  return m;
}

/** Whether `fn` (a queues.json function name) emits the metric. */
export function emits(decl: MetricsDeclaration, name: string, fn: string): boolean {
  const m = metricSpec(decl, name);
  return m.emittedBy === "*" || m.emittedBy.includes(fn);
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join("\u0000") === [...b].sort().join("\u0000");

/** Throws unless `dimensionNames` is exactly one of the metric's declared sets. */
export function checkDimensionSet(decl: MetricsDeclaration, name: string, dimensionNames: string[]): void {
  const m = metricSpec(decl, name);
  if (!m.dimensionSets.some((s) => sameSet(s, dimensionNames))) {
    throw new Error(
      `metric ${name} is not emitted with the dimension set [${dimensionNames.join(", ")}] ` +
        `(declared: ${m.dimensionSets.map((s) => `[${s.join(", ")}]`).join(" ")}); CloudWatch matches whole dimension sets`,
    );
  }
}

/** A dashboard metric row `[namespace, name, dim, value, ...]` for a declared metric and set. */
export function emfMetric(decl: MetricsDeclaration, name: string, dimensions: Record<string, string>): string[] {
  checkDimensionSet(decl, name, Object.keys(dimensions));
  return [decl.namespace, name, ...Object.entries(dimensions).flat()];
}

/** An alarm's metric fields for a declared metric and set. */
export function emfAlarmMetric<V>(
  decl: MetricsDeclaration,
  name: string,
  dimensions: Record<string, V>,
): { namespace: string; metricName: string; dimensions: Record<string, V> } {
  checkDimensionSet(decl, name, Object.keys(dimensions));
  return { namespace: decl.namespace, metricName: name, dimensions };
}

/**
 * A metric-math `SEARCH` over one declared metric and set, the set's other dimensions fixed
 * (e.g. ReportsFailed by ErrorKind for one function):
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/search-expression-syntax.html
 */
export function searchExpression(
  decl: MetricsDeclaration,
  name: string,
  dimensionSet: string[],
  fixed: Record<string, string>,
  stat: string,
  periodSeconds: number,
): string {
  checkDimensionSet(decl, name, dimensionSet);
  const schema = [decl.namespace, ...dimensionSet].join(",");
  const terms = Object.entries(fixed).map(([k, v]) => `${k}="${v}"`);
  return `SEARCH('{${schema}} MetricName="${name}" ${terms.join(" ")}', '${stat}', ${periodSeconds})`;
}

/** Parses what `searchExpression` writes: the metric and the dimension set it searches. */
export function parseSearchExpression(expression: string): { namespace: string; name: string; dimensionSet: string[] } | undefined {
  const m = /SEARCH\('\{([^}]+)\}\s+MetricName="([^"]+)"/.exec(expression);
  if (!m) return undefined;
  const [namespace, ...dimensionSet] = m[1]!.split(",").map((s) => s.trim());
  return { namespace: namespace!, name: m[2]!, dimensionSet };
}
