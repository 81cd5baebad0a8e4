// Builds the package from a checkout and packs it under a version that says what it is:
//   - the commit tagged `client-ts-v<version>` (package.json's version): that version, a release;
//   - any other commit: `<next patch>-dev.<commit time, UTC yyyymmddhhmmss>.g<commit, 12 hex>`, a
//     pre-release that sorts after the last release and before the next one, and names its commit
//     (plus `.dirty` when the package's tracked files differ from the commit).
// The same commit packs to the same bytes (npm pack fixes every file's time and mode; the build is
// deterministic; scripts/scratch.mjs --smoke packs twice and compares). Prints the tarball's path,
// its sha256 and its npm integrity as JSON on stdout; the release notes carry the sha256: with
// --notes FILE it also writes them (the CHANGELOG's section of the version, `Unreleased` for a
// pre-release, and the tarball's name and sha256), for `gh release create --notes-file FILE`.
//   npm run pack:source [-- --destination DIR] [--notes FILE] [--release]   (after `npm ci`)
// --release: package.json's version as it is, at a commit that is not (yet) tagged: how a release
// is built for RELEASES.json, and how `npm run verify-release` rebuilds a recorded one (tags may
// not travel with a copy of the repository). Refused with uncommitted changes or a pre-release
// version.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const at = args.indexOf("--destination");
const destination = path.resolve(at >= 0 ? args[at + 1] : process.cwd());
const notesAt = args.indexOf("--notes");
const notes = notesAt >= 0 ? path.resolve(args[notesAt + 1]) : undefined;
const git = (...a) => execFileSync("git", a, { cwd: PACKAGE, encoding: "utf8" }).trim();
const npm = (a, cwd) => execFileSync("npm", [...a, "--loglevel=error", "--no-audit", "--no-fund"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });

const manifest = JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8"));
function sourceVersion(release, { tagged, commit, committedAt, dirty }) {
  if (tagged && !dirty) return release;
  const [major, minor, patch] = release.split("-")[0].split(".").map(Number);
  const stamp = committedAt.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return `${major}.${minor}.${patch + 1}-dev.${stamp}.g${commit.slice(0, 12)}${dirty ? ".dirty" : ""}`;
}

const commit = git("rev-parse", "HEAD");
const committedAt = new Date(Number(git("show", "-s", "--format=%ct", "HEAD")) * 1000);
const dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".") !== "";
const asRelease = args.includes("--release");
if (asRelease && (dirty || manifest.version.includes("-"))) {
  console.error(`pack:source --release: ${dirty ? "the package has uncommitted changes" : `${manifest.version} is a pre-release version`}; a release is built from a clean commit`);
  process.exit(1);
}
const tagged = asRelease || git("tag", "--points-at", "HEAD").split("\n").includes(`client-ts-v${manifest.version}`);
const version = sourceVersion(manifest.version, { tagged, commit, committedAt, dirty });

// Build here (prepack: it refuses clearly without `npm ci`), then pack a staging copy of exactly
// the files `npm pack` would take, with the version set: the checkout itself is not modified.
npm(["run", "prepack", "--silent"], PACKAGE);
const [listed] = JSON.parse(npm(["pack", "--dry-run", "--json", "--ignore-scripts"], PACKAGE));
const staging = mkdtempSync(path.join(tmpdir(), "sophia-pack-"));
try {
  for (const { path: f } of listed.files) if (f !== "package.json") cpSync(path.join(PACKAGE, f), path.join(staging, f));
  // A release packs package.json as it is (the bytes `npm pack` at the tag packs); any other commit
  // with its version set.
  if (version === manifest.version) cpSync(path.join(PACKAGE, "package.json"), path.join(staging, "package.json"));
  else writeFileSync(path.join(staging, "package.json"), `${JSON.stringify({ ...manifest, version }, null, 2)}\n`);
  const [packed] = JSON.parse(npm(["pack", "--json", "--ignore-scripts", "--pack-destination", staging], staging));
  mkdirSync(destination, { recursive: true });
  const tarball = path.join(destination, packed.filename);
  renameSync(path.join(staging, packed.filename), tarball);
  const sha256 = createHash("sha256").update(readFileSync(tarball)).digest("hex");
  const what = asRelease ? `the release ${version} built from commit ${commit}` : tagged ? `the release tagged client-ts-v${version}` : `not a release: commit ${commit}`;
  console.error(`pack:source: ${packed.filename} (${what}${dirty ? ", with uncommitted changes" : ""})`);
  if (notes) writeFileSync(notes, releaseNotes(tagged && !dirty ? version : "Unreleased", packed.filename, sha256, commit));
  console.log(JSON.stringify({ tarball, version, commit, sha256, integrity: packed.integrity }));
} finally {
  rmSync(staging, { recursive: true, force: true });
}

/** The CHANGELOG's section `## [<heading>]` (its body), then the tarball's checksum line. */
function releaseNotes(heading, filename, sha256, commit) {
  const changelog = readFileSync(path.join(PACKAGE, "CHANGELOG.md"), "utf8");
  const start = changelog.indexOf(`## [${heading}]`);
  if (start < 0) throw new Error(`CHANGELOG.md has no section ## [${heading}]`);
  const next = changelog.indexOf("\n## [", start + 1);
  const section = changelog.slice(changelog.indexOf("\n", start) + 1, next < 0 ? undefined : next).trim();
  return `${section}\n\n## Checksum\n\nBuilt from commit ${commit} (\`npm run pack:source\`; the same commit packs to the same bytes):\n\n\`\`\`text\nsha256  ${filename}  ${sha256}\n\`\`\`\n`;
}
