/**
 * Writes docs/reference/alarms.md and docs/reference/metrics.md from the program's alarm list and
 * the metrics declaration (src/reference.ts). `scripts/regenerate` runs it (after
 * `scripts/test-infra --install-only`):
 *   node --import tsx infra-pulumi/ci/write-reference.ts           rewrite both pages
 *   node --import tsx infra-pulumi/ci/write-reference.ts --check   exit 1 when a page differs, write nothing
 */
import * as fs from "node:fs";
import * as path from "node:path";

import { loadMetrics } from "../src/metrics";
import { ALARMS_REFERENCE, METRICS_REFERENCE, renderAlarmsReference, renderMetricsReference } from "../src/reference";
import { loadSettings } from "../src/settings";

const check = process.argv.includes("--check");
const settings = loadSettings();
const metrics = loadMetrics(settings);
let drifted = 0;
for (const [file, text] of [
  [ALARMS_REFERENCE, renderAlarmsReference(settings, metrics)],
  [METRICS_REFERENCE, renderMetricsReference(metrics)],
] as const) {
  if (check) {
    const onDisk = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
    if (onDisk !== text) {
      console.error(`${file} is out of date with the alarm list / declarations/metrics.json`);
      drifted += 1;
    }
    continue;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
if (drifted > 0) process.exit(1);
