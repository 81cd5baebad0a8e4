/**
 * Drift: src/generated/ is exactly what the generator makes of functions/contracts/schemas today.
 * A schema changed (e.g. by scripts/regenerate, or SOPHIA_BLESS_SCHEMAS=1 cargo test -p sophia-contracts) without
 * `npm run generate` fails here.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFile, cp, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { schemas } from "../src/generated/schemas";
import { drift, generate, GENERATED_DIR, pascal, QUEUE_DECLARATION, REPORT_RULES_DECLARATION, SCHEMA_DIR } from "../scripts/generate";
import { API_QUEUE_URL_VARIABLES, queues } from "../src/generated/queues";
import { MAX_REPORT_ATTEMPTS, REPORT_LEASE_SECONDS, REPORT_RESET_RULES, REPORT_RESET_TRIES } from "../src/generated/report-rules";

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
  assert.match(files.get("queues.ts")!, /auditExport: \{ name: "audit-export", dlqName: "audit-export-dlq", urlEnv: "AUDIT_EXPORT_QUEUE_URL", publishedByApi: true, skippedWithoutUrl: "events \(billing: each one settles an interview's credits\)" \}/);
});

test("report-rules.ts follows declarations/reports.json: a changed limit or rule is drift until regenerated", async () => {
  const declared = JSON.parse(await readFile(REPORT_RULES_DECLARATION, "utf8"));
  assert.equal(MAX_REPORT_ATTEMPTS, declared.maxAttempts);
  assert.equal(REPORT_RESET_TRIES, declared.resetTries);
  const { functions } = JSON.parse(await readFile(QUEUE_DECLARATION, "utf8")) as { functions: { name: string; timeoutSeconds: number }[] };
  assert.equal(REPORT_LEASE_SECONDS, functions.find((f) => f.name === declared.leaseFunction)?.timeoutSeconds, "the lease is the declared function's timeout");
  assert.deepEqual(REPORT_RESET_RULES, Object.fromEntries(declared.resetRules.map((r: { status: string; rule: string }) => [r.status, r.rule])));
  assert.deepEqual(Object.keys(REPORT_RESET_RULES).sort(), ["COMPLETED", "ERASED", "FAILED", "NOT_STARTED", "PROCESSING"]);
  const dir = await mkdtemp(path.join(tmpdir(), "sophia-rules-"));
  await writeFile(path.join(dir, "reports.json"), JSON.stringify({ ...declared, maxAttempts: 4 }));
  const files = await generate(SCHEMA_DIR, QUEUE_DECLARATION, path.join(dir, "reports.json"));
  assert.deepEqual(await drift(files), ["report-rules.ts"]);
  assert.match(files.get("report-rules.ts")!, /export const MAX_REPORT_ATTEMPTS = 4;/);
});

/**
 * The attempt limit and the reset rules are declared once (declarations/reports.json) for Rust and
 * for this package: a number or a status rule typed by hand anywhere else in the package is a copy
 * that would drift. (The Rust side has its own scan: sophia-declarations'
 * `no_rust_source_copies_a_report_rule_number`.)
 */
test("no hand copy of the report rules outside src/generated", async () => {
  const root = path.resolve(GENERATED_DIR, "..", "..");
  const files: string[] = [];
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!["node_modules", "generated", "dist", ".local"].includes(e.name)) await walk(p);
      } else if (/\.(ts|mts|mjs|cjs|js)$/.test(e.name) && !SCAN_SKIPS.includes(path.relative(root, p))) files.push(p);
    }
  };
  for (const d of ["src", "bin", "scripts", "test"]) await walk(path.join(root, d));
  assert.ok(files.some((f) => f.endsWith(path.join("src", "admin.ts"))), "the package's sources were scanned");
  const copies: string[] = [];
  for (const f of files) {
    const lines = (await readFile(f, "utf8")).split("\n");
    lines.forEach((line, i) => {
      if (isRuleCopy(line, path.relative(root, f))) copies.push(`${path.relative(root, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(copies, [], "read MAX_REPORT_ATTEMPTS, REPORT_RESET_TRIES and REPORT_RESET_RULES from src/generated");
  // The scan finds what it is for.
  assert.ok(isRuleCopy("export const MAX_REPORT_ATTEMPTS = 3;", "src/admin.ts"));
  assert.ok(isRuleCopy("const RESET_TRIES = 5;", "src/admin.ts"));
  assert.ok(isRuleCopy('  if (report["status"] === "FAILED") return true;', "src/admin.ts"));
  assert.ok(!isRuleCopy("const MAX_REPORT_ATTEMPTS_SHOWN = MAX_REPORT_ATTEMPTS;", "src/admin.ts"));
});

/**
 * admin.ts applies the report rules the Rust side applies (functions/reports/src/claim.rs and
 * admin.rs); every number they share is read from src/generated/report-rules.ts. Each number that
 * file exports, written as a literal anywhere in admin.ts (code or comment), is a copy that would
 * not follow a changed declaration.
 */
test("admin.ts carries no literal copy of a number of src/generated/report-rules.ts", async () => {
  const generated = await readFile(path.join(GENERATED_DIR, "report-rules.ts"), "utf8");
  const shared = new Map([...generated.matchAll(/^export const (\w+) = (\d+);$/gm)].map((m) => [m[2]!, m[1]!]));
  assert.deepEqual([...shared.values()].sort(), ["ERASURE_COMPLETION_HOURS", "ERASURE_REFERENCE_MAX_LENGTH", "MAX_REPORT_ATTEMPTS", "REPORT_LEASE_SECONDS", "REPORT_RESET_TRIES"]);
  const copies = (text: string) =>
    text.split("\n").flatMap((line, i) =>
      [...line.matchAll(/(?<![\w.])\d+(?![\w.])/g)].filter((m) => shared.has(m[0])).map((m) => `src/admin.ts:${i + 1}: ${m[0]} (${shared.get(m[0])}): ${line.trim()}`),
    );
  const admin = await readFile(path.resolve(GENERATED_DIR, "..", "admin.ts"), "utf8");
  assert.deepEqual(copies(admin), [], "read the number from src/generated/report-rules.ts");
  // The scan finds what it is for.
  assert.equal(copies(`const stale = now - ${REPORT_LEASE_SECONDS} * 1000;\n// decide again (${REPORT_RESET_TRIES} times)`).length, 2);
  assert.deepEqual(copies("now - REPORT_LEASE_SECONDS * 1000; // 24 hex characters"), []);
});

/** Not scanned: the compiled validators (generated at build) and this file (its examples are copies on purpose). */
const SCAN_SKIPS = [path.join("src", "validators.js"), path.join("test", "generated.test.ts")];

/** A `const` of an attempt limit or reset-tries number given a literal, or (in the package's
 * sources) a report status compared with a literal: the rules are decided in report-rules.ts. */
function isRuleCopy(line: string, file: string): boolean {
  const number = /\b(?:const|let|var)\s+\w*(?:MAX_(?:REPORT_)?ATTEMPTS|RESET_TRIES)\w*\s*(?::[^=]+)?=\s*\d/.test(line);
  const status = file.startsWith("src") && /(?:===|!==|==|!=)\s*"(?:NOT_STARTED|PROCESSING|COMPLETED|FAILED)"/.test(line);
  return number || status;
}

test("the rehearsal: a third queue in queues.json, once generated, fails the package's type check at QUEUE_EVENT_TYPES until its event types are named", async (t) => {
  const packageRoot = path.join(GENERATED_DIR, "..", "..");
  const root = await mkdtemp(path.join(tmpdir(), "sophia-third-queue-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  await cp(path.join(packageRoot, "src"), path.join(root, "src"), { recursive: true });
  await copyFile(path.join(packageRoot, "tsconfig.json"), path.join(root, "tsconfig.json"));
  await symlink(path.join(packageRoot, "node_modules"), path.join(root, "node_modules"), "dir");
  const declared = JSON.parse(await readFile(QUEUE_DECLARATION, "utf8"));
  declared.queues.push({ ...declared.queues[0], key: "auditExport", name: "audit-export", dlqName: "audit-export-dlq", queueUrlEnv: "AUDIT_EXPORT_QUEUE_URL" });
  await writeFile(path.join(root, "queues.json"), JSON.stringify(declared));
  for (const [name, text] of await generate(SCHEMA_DIR, path.join(root, "queues.json"))) {
    await writeFile(path.join(root, "src", "generated", name), text);
  }
  const tsc = () =>
    spawnSync(process.execPath, [path.join(packageRoot, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", root], { cwd: root, encoding: "utf8" });
  const refused = tsc();
  assert.notEqual(refused.status, 0, "the type check refuses the third queue");
  const errors = refused.stdout.split("\n").filter((l) => l.includes("error TS"));
  assert.ok(errors.length > 0 && errors.every((l) => l.startsWith("src/validate.ts") && l.includes("auditExport")), errors.join("\n"));
  const validate = path.join(root, "src", "validate.ts");
  const source = await readFile(validate, "utf8");
  await writeFile(validate, source.replace('  reportGenerate: ["report.generate"],\n', '  reportGenerate: ["report.generate"],\n  auditExport: [],\n'));
  const accepted = tsc();
  assert.equal(accepted.status, 0, accepted.stdout);
});
