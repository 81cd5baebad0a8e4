// Rebuilds releases recorded in RELEASES.json from the commits they name and compares the sha256:
// what a team does to trust a release without its tag (git tags may not travel with a copy of the
// repository). For each release: a detached `git worktree` of its commit (this checkout's history
// must contain it), `npm ci` there, `npm run pack:source -- --release`, and the tarball's sha256
// against the recorded one; the worktree is removed afterwards.
//   npm run verify-release [-- <version>...]   (no version: every recorded release)
//   npm run verify-release -- --tarball FILE <version>   (a tarball you have, e.g. `npm pack
//                                                        @sophia/async-jobs-client@<version>`)
//   npm run verify-release -- --record <commit>   (a release owner, once the version's commit is
//                                                 on main: builds it the same way and appends its
//                                                 entry to RELEASES.json; commit that file)
//   --releases-from REV: read RELEASES.json as of a git revision (e.g. origin/main: a release's own
//   commit precedes its record)
// Two digests are recorded: `sha256`, of the .tgz as packed, and `tarSha256`, of the tar inside it
// (gunzipped). The tar is the package's content, byte for byte (npm fixes every file's time, mode
// and order); the gzip layer around it may differ with another Node (zlib) or npm than the one
// that recorded the release. A match of `tarSha256` is a match; the report says whether the .tgz
// bytes matched too. Exit 0 when every one matches; 1 with the differences otherwise.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const tarball = option("--tarball") === undefined ? undefined : path.resolve(option("--tarball"));
const from = option("--releases-from");
const RELEASES = JSON.parse(
  from === undefined
    ? readFileSync(path.join(PACKAGE, "RELEASES.json"), "utf8")
    : execFileSync("git", ["show", `${from}:./RELEASES.json`], { cwd: PACKAGE, encoding: "utf8" }),
).releases;
const versions = args.filter((a, i) => !a.startsWith("--") && !["--tarball", "--releases-from", "--record"].includes(args[i - 1]));
const git = (a, cwd = PACKAGE) => execFileSync("git", a, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
/** The two digests of a packed tarball: the .tgz's and its tar's. */
const digests = (file) => {
  const tgz = readFileSync(file);
  return { sha256: sha256(tgz), tarSha256: sha256(gunzipSync(tgz)) };
};

function fail(message) {
  console.error(`verify-release: ${message}`);
  process.exit(1);
}

let bad = 0;
const recordCommit = option("--record");
if (recordCommit !== undefined) {
  record(git(["rev-parse", `${recordCommit}^{commit}`]));
  process.exit(0);
}
const wanted = versions.length === 0 ? RELEASES : versions.map((v) => RELEASES.find((r) => r.version === v) ?? fail(`${v} is not recorded in RELEASES.json`));
if (wanted.length === 0) fail("RELEASES.json records no release");
for (const release of wanted) {
  const got = digests(tarball ?? rebuild(release));
  const ok = got.tarSha256 === release.tarSha256;
  if (!ok) bad++;
  const gz = got.sha256 === release.sha256 ? "the .tgz bytes too" : `the content only (.tgz sha256 ${got.sha256}: another gzip)`;
  console.log(`${ok ? "ok" : "DIFFERS"}  ${release.version}  commit ${release.commit}  ${ok ? `matches: ${gz}` : `tar sha256 ${got.tarSha256}, recorded ${release.tarSha256}`}`);
}
process.exit(bad === 0 ? 0 : 1);

/** The sha256 of the release built from its recorded commit, in a detached worktree. */
function rebuild({ version, commit }) {
  try {
    git(["cat-file", "-e", `${commit}^{commit}`]);
  } catch {
    fail(`${version}: commit ${commit} is not in this checkout's history (git fetch, or a clone with full history)`);
  }
  const root = git(["rev-parse", "--show-toplevel"]);
  const relative = path.relative(root, PACKAGE);
  const tree = mkdtempSync(path.join(tmpdir(), `sophia-release-${version}-`));
  const out = mkdtempSync(path.join(tmpdir(), "sophia-release-out-"));
  try {
    git(["worktree", "add", "--detach", tree, commit]);
    const dir = path.join(tree, relative);
    const npm = (a) => execFileSync("npm", [...a, "--loglevel=error", "--no-audit", "--no-fund"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    npm(["ci", "--prefer-offline", "--ignore-scripts"]); // the build needs no install script (the publish job installs so too)
    const packed = JSON.parse(npm(["run", "--silent", "pack:source", "--", "--release", "--destination", out]));
    if (packed.version !== version) fail(`${version}: commit ${commit} builds version ${packed.version}`);
    const kept = path.join(mkdtempSync(path.join(tmpdir(), "sophia-release-tgz-")), path.basename(packed.tarball));
    execFileSync("cp", [packed.tarball, kept]);
    return kept;
  } finally {
    try {
      git(["worktree", "remove", "--force", tree]);
    } catch {
      rmSync(tree, { recursive: true, force: true });
      git(["worktree", "prune"]);
    }
    rmSync(out, { recursive: true, force: true });
  }
}

/** Builds the release at `commit` and appends its entry to RELEASES.json (a version is recorded once). */
function record(commit) {
  const file = path.join(PACKAGE, "RELEASES.json");
  const doc = JSON.parse(readFileSync(file, "utf8"));
  const version = JSON.parse(git(["show", `${commit}:./package.json`])).version;
  if (doc.releases.some((r) => r.version === version)) fail(`${version} is already recorded`);
  const built = rebuild({ version, commit });
  const npmVersion = execFileSync("npm", ["--version"], { encoding: "utf8" }).trim();
  const date = new Date().toISOString().slice(0, 10);
  doc.releases.push({ version, commit, date, tarball: path.basename(built), ...digests(built), builtWith: { node: process.version, npm: npmVersion } });
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`recorded ${version} (commit ${commit}) in RELEASES.json`);
}
