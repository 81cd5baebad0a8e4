/**
 * The release record (RELEASES.json) and its checker, without rebuilding (scripts/test-client-ts
 * runs `npm run verify-release`, which rebuilds every recorded release from its commit): each
 * entry is well formed, names a commit of this history whose package.json has that version, and
 * has its CHANGELOG section of the same date with upgrade steps when it breaks the previous
 * minor; a tarball that is not the release is refused.
 */
import * as assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";

const PACKAGE = path.resolve(__dirname, "..");
const { releases } = JSON.parse(readFileSync(path.join(PACKAGE, "RELEASES.json"), "utf8")) as {
  releases: { version: string; commit: string; date: string; tarball: string; sha256: string; tarSha256: string }[];
};
const changelog = readFileSync(path.join(PACKAGE, "CHANGELOG.md"), "utf8");

test("every recorded release: a version, its commit in this history with that version, its digests, its CHANGELOG section", () => {
  assert.ok(releases.length > 0, "at least one release is recorded");
  for (const r of releases) {
    assert.match(r.version, /^\d+\.\d+\.\d+$/);
    assert.match(r.commit, /^[0-9a-f]{40}$/);
    assert.match(r.sha256, /^[0-9a-f]{64}$/);
    assert.match(r.tarSha256, /^[0-9a-f]{64}$/);
    assert.equal(r.tarball, `sophia-async-jobs-client-${r.version}.tgz`);
    const manifest = JSON.parse(execFileSync("git", ["show", `${r.commit}:./package.json`], { cwd: PACKAGE, encoding: "utf8" }));
    assert.equal(manifest.version, r.version, `package.json at ${r.commit}`);
    const at = changelog.indexOf(`## [${r.version}] - ${r.date}`);
    assert.ok(at >= 0, `CHANGELOG.md has ## [${r.version}] - ${r.date}`);
    // 0.x: a new minor may break; its section says how to upgrade.
    if (r.version.endsWith(".0")) {
      const section = changelog.slice(at, changelog.indexOf("\n## [", at + 1));
      assert.match(section, /### Upgrading from \d+\.\d+\.\d+/, `${r.version}: upgrade steps`);
    }
  }
});

test("verify-release refuses a tarball that is not the recorded release, naming the recorded digest", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sophia-verify-"));
  try {
    const fake = path.join(dir, "fake.tgz");
    writeFileSync(fake, gzipSync(Buffer.from("not the release")));
    const r = releases[releases.length - 1]!;
    const out = spawnSync(process.execPath, [path.join(PACKAGE, "scripts", "verify-release.mjs"), "--tarball", fake, r.version], { encoding: "utf8" });
    assert.equal(out.status, 1, out.stderr);
    assert.match(out.stdout, new RegExp(`^DIFFERS  ${r.version.replaceAll(".", "\\.")}  commit ${r.commit}  tar sha256 [0-9a-f]{64}, recorded ${r.tarSha256}`));
    const unknown = spawnSync(process.execPath, [path.join(PACKAGE, "scripts", "verify-release.mjs"), "--tarball", fake, "9.9.9"], { encoding: "utf8" });
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /9\.9\.9 is not recorded in RELEASES\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
