/**
 * Writes docs/reference/alarms.md and docs/reference/metrics.md from the program's alarm list and
 * the metrics declaration (src/reference.ts). Run from anywhere, after
 * `scripts/test-infra --install-only`:  node --import tsx infra-pulumi/ci/write-reference.ts
 */
import * as fs from "node:fs";
import * as path from "node:path";

import { loadMetrics } from "../src/metrics";
import { ALARMS_REFERENCE, METRICS_REFERENCE, renderAlarmsReference, renderMetricsReference } from "../src/reference";
import { loadSettings } from "../src/settings";

const settings = loadSettings();
const metrics = loadMetrics(settings);
for (const [file, text] of [
  [ALARMS_REFERENCE, renderAlarmsReference(settings, metrics)],
  [METRICS_REFERENCE, renderMetricsReference(metrics)],
] as const) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
