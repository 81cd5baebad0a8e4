// `npm pack` / `npm publish` build dist/ first (prepack), with the devDependencies (TypeScript,
// tsx, ajv): in a fresh clone they are not there until `npm ci`. Say so, instead of the shell's
// `tsc: not found`.
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const missing = ["typescript", "tsx", "ajv"].filter((p) => !existsSync(path.join(root, "node_modules", p, "package.json")));
if (missing.length > 0) {
  console.error(
    `prepack: the build needs the devDependencies (${missing.join(", ")} missing). In clients/typescript run \`npm ci\` ` +
      "(with the devDependencies: not --omit=dev, NODE_ENV not production), then pack again.",
  );
  process.exit(1);
}
