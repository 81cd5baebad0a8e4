// Loads TypeScript the way the Pulumi CLI's Node.js language runtime does, without the CLI:
// the same ts-node (the project's, else the one vendored in @pulumi/pulumi) and the same compiler
// options as @pulumi/pulumi/cmd/run/run.js (programs) and cmd/run-policy-pack/run.js (policy packs).
// tsx (used by the unit tests) only strips types; this catches what only `pulumi preview` would
// hit, e.g. a tsconfig that the TypeScript + ts-node pair rejects.
//
//   node pulumi-loader.cjs program <infra-pulumi dir>   -> runs index.ts under mocks, prints a summary
//   node pulumi-loader.cjs policy  <policy dir>         -> compiles rules.ts, prints its exports
//   node pulumi-loader.cjs policy-serve <policy dir>    -> loads index.ts: the pack's gRPC server
//                                                         prints its port and serves until killed
"use strict";
const path = require("path");

const [mode, dir] = process.argv.slice(2);
process.chdir(dir);
const pulumiDir = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [process.cwd()] }));
const tsutils = require(path.join(pulumiDir, "tsutils"));
const semver = require(require.resolve("semver", { paths: [pulumiDir] }));

const { tsnodeRequire, typescriptRequire } = tsutils.typeScriptRequireStrings();
const ts = require(typescriptRequire);
const useNodeNext = semver.gte(ts.version, "4.7.0");
const compilerOptions = tsutils.loadTypeScriptCompilerOptions("tsconfig.json");
const defaults = {
  target: "ES2020",
  module: useNodeNext ? "nodenext" : "commonjs",
  moduleResolution: useNodeNext ? "nodenext" : "node",
  sourceMap: "true",
};

if (mode === "program") {
  require(tsnodeRequire).register({
    compiler: typescriptRequire,
    transpileOnly: compilerOptions.noCheck,
    project: "tsconfig.json",
    skipProject: false,
    compilerOptions: { ...defaults, ...compilerOptions },
  });
  const { runProgram } = require(path.join(process.cwd(), "test", "support", "harness.ts"));
  runProgram({ stack: "dev" }).then(
    (run) => {
      const types = {};
      for (const r of run.resources) types[r.type] = (types[r.type] || 0) + 1;
      console.log(JSON.stringify({ typescript: ts.version, tsnode: tsnodeRequire, types, outputs: Object.keys(run.outputs).sort() }));
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else if (mode === "policy" || mode === "policy-serve") {
  require(tsnodeRequire).register({
    typeCheck: true,
    skipProject: false,
    compiler: typescriptRequire,
    compilerOptions: { ...defaults, ...compilerOptions },
  });
  if (mode === "policy-serve") {
    require(path.join(process.cwd(), "index.ts"));
  } else {
    const rules = require(path.join(process.cwd(), "rules.ts"));
    console.log(JSON.stringify({ typescript: ts.version, exports: Object.keys(rules).sort() }));
  }
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
