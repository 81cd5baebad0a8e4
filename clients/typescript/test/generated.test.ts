/**
 * Drift: src/generated/ is exactly what the generator makes of functions/contracts/schemas today.
 * A schema changed (e.g. by scripts/regenerate, or SOPHIA_BLESS_SCHEMAS=1 cargo test -p sophia-contracts) without
 * `npm run generate` fails here.
 */
import * as assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, writeFile, copyFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { schemas } from "../src/generated/schemas";
import { drift, generate, GENERATED_DIR, pascal, QUEUE_DECLARATION, SCHEMA_DIR } from "../scripts/generate";
import { API_QUEUE_URL_VARIABLES, queues } from "../src/generated/queues";

test("src/generated/ is what the contract schemas generate (run `npm run generate` after a schema change)", async () => {
  assert.deepEqual(await drift(await generate()), []);
});

test("every *.schema.json of the contract folder has its generated types and its embedded document", async () => {
  const stems = (await readdir(SCHEMA_DIR)).filter((n) => n.endsWith(".schema.json")).map((n) => n.replace(".schema.json", ""));
  assert.ok(stems.includes("interview-completed") && stems.includes("message-attributes"), stems.join(","));
  const index = await readFile(path.join(GENERATED_DIR, "index.ts"), "utf8");
  for (const stem of stems) {
    assert.ok(index.includes(`from "./${stem}.js"`), `${stem} is exported`);
    const doc = JSON.parse(await readFile(path.join(SCHEMA_DIR, `${stem}.schema.json`), "utf8"));
    assert.deepEqual((schemas as Record<string, unknown>)[stem], doc, `${stem} embedded as written`);
  }
});

test("a schema change is detected as drift, and a new schema file is picked up", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "sophia-schemas-"));
  for (const n of await readdir(SCHEMA_DIR)) await copyFile(path.join(SCHEMA_DIR, n), path.join(dir, n));
  const completed = JSON.parse(await readFile(path.join(dir, "interview-completed.schema.json"), "utf8"));
  completed.properties.durationSeconds.type = "integer";
  completed.required = completed.required.filter((r: string) => r !== "durationSeconds");
  await writeFile(path.join(dir, "interview-completed.schema.json"), JSON.stringify(completed));
  await writeFile(
    path.join(dir, "extra-document.schema.json"),
    JSON.stringify({ title: "ExtraDocument", type: "object", properties: { a: { type: "string" } }, required: ["a"] }),
  );
  const stale = await drift(await generate(dir));
  assert.deepEqual(stale, ["extra-document.ts (missing)", "index.ts", "interview-completed.ts", "schemas.ts"]);
  assert.equal(pascal("interview-report-document"), "InterviewReportDocument");
});

test("queues.ts follows declarations/queues.json: a queue added there is drift until regenerated", async () => {
  const declared = JSON.parse(await readFile(QUEUE_DECLARATION, "utf8"));
  assert.deepEqual(Object.keys(queues), declared.queues.map((q: { key: string }) => q.key));
  assert.equal(queues.reportGenerate.urlEnv, "REPORT_GENERATE_QUEUE_URL");
  assert.deepEqual([...API_QUEUE_URL_VARIABLES], ["INTERVIEW_COMPLETED_QUEUE_URL", "REPORT_GENERATE_QUEUE_URL"]);
  const dir = await mkdtemp(path.join(tmpdir(), "sophia-queues-"));
  declared.queues.push({ ...declared.queues[0], key: "auditExport", name: "audit-export", dlqName: "audit-export-dlq", queueUrlEnv: "AUDIT_EXPORT_QUEUE_URL" });
  await writeFile(path.join(dir, "queues.json"), JSON.stringify(declared));
  const files = await generate(SCHEMA_DIR, path.join(dir, "queues.json"));
  assert.deepEqual(await drift(files), ["queues.ts"]);
  assert.match(files.get("queues.ts")!, /auditExport: \{ name: "audit-export", dlqName: "audit-export-dlq", urlEnv: "AUDIT_EXPORT_QUEUE_URL", publishedByApi: true \}/);
});
