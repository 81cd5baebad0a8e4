import { test } from "node:test";
import { runProgram } from "./support/harness";
test("probe", async () => {
  const run = await runProgram({ stack: "dev", preview: true });
  for (const r of run.resources) console.log(r.type, r.name, JSON.stringify(r.inputs).slice(0, 400));
  console.log(Object.keys(run.outputs));
});
