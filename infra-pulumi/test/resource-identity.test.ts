/**
 * What `pulumi up` keys a resource by: its URN (its parents' types, then its logical name), its
 * parent, its physical name, and the options that decide how it is replaced or kept. Reshaping the
 * program (stack.ts assembled from named pieces) must leave every one of them as it was: a changed
 * name or parent replaces the resource, a queue and its messages or a secret with it.
 *
 * The snapshot is test/fixtures/resource-identity.qa.json, the stage with every option on. After a
 * deliberate change (a new resource, a rename with its aliases), rewrite it with
 * `UPDATE_RESOURCE_SNAPSHOT=1 node --import tsx --test test/resource-identity.test.ts` and read its diff.
 * `RESOURCE_INPUTS_FILE=<file>.txt` also writes every resource with all its inputs (build paths
 * normalised) and the stack outputs in their order, to compare a refactor's before and after.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";

import * as pulumi from "@pulumi/pulumi";

import { EVERY_OPTION_CONFIG, type ProgramRun, runProgram } from "./support/harness";
import type { RecordedResource } from "./support/mocks";
import { plain, resolve } from "./support/values";

const SNAPSHOT = path.join(__dirname, "fixtures", "resource-identity.qa.json");

let run: ProgramRun;

before(async () => {
  run = await runProgram({ stack: "qa", config: EVERY_OPTION_CONFIG });
  const file = process.env["RESOURCE_INPUTS_FILE"];
  if (file) {
    const normalised = (v: unknown) => JSON.parse(JSON.stringify(plain(v)).split(run.artifactsDir).join("<artifacts>")) as unknown;
    const all = run.resources.map((r) => ({ ...identity(r), type: r.type, inputs: normalised(r.inputs) })).sort(byUrn);
    const outputs: [string, unknown][] = [];
    for (const [k, v] of Object.entries(run.outputs)) outputs.push([k, pulumi.Output.isInstance(v) ? (await resolve(v)).value : v]);
    fs.writeFileSync(file, `${JSON.stringify({ resources: all, outputs: normalised(outputs) }, null, 2)}\n`);
  }
});

interface Identity {
  urn: string;
  parent: string;
  /** The physical name, where the resource has one (`name`, a dashboard's `dashboardName`). */
  name?: unknown;
  protect: boolean;
  retainOnDelete: boolean;
  deleteBeforeReplace: boolean;
  dependsOn: string[];
}

function identity(r: RecordedResource): Identity {
  const name = plain(r.inputs["name"] ?? r.inputs["dashboardName"]);
  return {
    urn: r.urn,
    parent: r.options.parent,
    ...(name === undefined ? {} : { name }),
    protect: r.options.protect,
    retainOnDelete: r.options.retainOnDelete,
    deleteBeforeReplace: r.options.deleteBeforeReplace,
    dependsOn: [...r.options.dependsOn].sort(),
  };
}

const byUrn = (a: { urn: string }, b: { urn: string }) => (a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0);

test("every resource keeps its URN, parent, physical name and replacement options (the snapshot)", () => {
  const actual = run.resources.map(identity).sort(byUrn);
  assert.equal(new Set(actual.map((r) => r.urn)).size, actual.length, "two resources with one URN");
  if (process.env["UPDATE_RESOURCE_SNAPSHOT"] === "1") fs.writeFileSync(SNAPSHOT, `${JSON.stringify(actual, null, 2)}\n`);
  const expected = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as Identity[];
  assert.deepEqual(actual, expected, "a resource's URN, parent or name changed: `pulumi up` would replace it (see this file's header)");
});

test("the snapshot holds the components' children under their component", () => {
  const expected = JSON.parse(fs.readFileSync(SNAPSHOT, "utf8")) as Identity[];
  const parented = expected.filter((r) => r.parent !== "");
  assert.ok(parented.length > 10, `${parented.length} resources with a parent`);
  for (const r of parented) assert.ok(expected.some((p) => p.urn === r.parent), `${r.urn}'s parent ${r.parent} is in the snapshot`);
});
