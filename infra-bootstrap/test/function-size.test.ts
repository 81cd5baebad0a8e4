/**
 * Production functions fit a screen: scripts/check-function-size (shared with infra-pulumi's suite,
 * which also tests the check itself) fails on a function of index.ts or src/ longer than 80 lines,
 * outside the exceptions it names with their reasons.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";

test("no production function of infra-bootstrap is over 80 lines (scripts/check-function-size)", () => {
  const root = path.resolve(__dirname, "..", "..");
  const r = spawnSync("node", [path.join(root, "scripts", "check-function-size"), "infra-bootstrap"], { encoding: "utf8", cwd: path.join(root, "infra-bootstrap") });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\d+ files: no function over 80 lines/);
});
