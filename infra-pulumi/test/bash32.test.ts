/**
 * scripts/check-bash32, the lint for macOS's /bin/bash 3.2 (run by scripts/lint): each idiom 3.2
 * lacks, and each GNU coreutils command a Mac lacks (sha256sum, timeout), is flagged on a
 * fixture, the portable forms are not, and every script of the repository passes. bash 3.2 itself is not installable here (no Debian package, no source download), so the
 * scripts are checked for the idioms, not run under 3.2.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { REPO_ROOT } from "../src/repository";

const CHECK = path.join(REPO_ROOT, "scripts", "check-bash32");
function check(script: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bash32-"));
  const file = path.join(dir, "script");
  fs.writeFileSync(file, `#!/usr/bin/env bash\nset -euo pipefail\n${script}\n`);
  const r = spawnSync("bash", [CHECK, file], { encoding: "utf8" });
  fs.rmSync(dir, { recursive: true, force: true });
  return { status: r.status, out: r.stdout + r.stderr };
}

const BAD: Record<string, string> = {
  "mapfile/readarray": "mapfile -t lines < <(ls)",
  "associative array": "declare -A seen=()",
  nameref: "local -n ref=$1",
  "declare -g": "declare -g X=1",
  "case modification": 'echo "${name,,}"',
  "transformation": 'echo "${name@Q}"',
  "negative array subscript": 'echo "${arr[-1]}"',
  "|& pipe": "make |& tee log",
  "&>> append": "make &>> log",
  coproc: "coproc cat",
  "wait -n": "wait -n",
  "globstar": "shopt -s globstar",
  EPOCHSECONDS: "echo $EPOCHSECONDS",
  "possibly empty array": 'exec pulumi up "${args[@]}"',
  // GNU coreutils commands a Mac lacks (scripts/lib.sh has the portable helpers).
  sha256sum: 'stamp=$(sha256sum "$file" | cut -c1-16)',
  timeout: "if timeout 20 git ls-remote origin HEAD; then :; fi",
};

for (const [rule, line] of Object.entries(BAD)) {
  test(`flags ${rule}: ${line}`, () => {
    const r = check(line);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, new RegExp(rule.replace(/[|&]/g, "\\$&")), r.out);
    assert.match(r.out, /:3: /, "names the line");
  });
}

test("the portable forms pass: a guarded expansion, a marked non-empty array, a comment, lib.sh's sha256 and with_timeout", () => {
  const r = check(
    [
      'exec pulumi up ${args[@]+"${args[@]}"}',
      'for f in "${functions[@]}"; do echo "$f"; done # bash32: non-empty',
      "# mapfile is bash 4: not used here",
      'echo "${#arr[@]}" "${x:-default}" "${x#prefix}"',
      'while read -r f; do list+=("$f"); done < <(ls)',
      'stamp=$(sha256 "$file" | cut -c1-16)',
      "if with_timeout 20 git ls-remote origin HEAD; then :; fi",
      "curl --connect-timeout 3 --max-time 10 http://127.0.0.1:1/",
    ].join("\n"),
  );
  assert.equal(r.status, 0, r.out);
});

test("every script of the repository passes", () => {
  const r = spawnSync("bash", [CHECK], { encoding: "utf8", cwd: REPO_ROOT });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr, /scripts checked, nothing 3\.2 lacks/);
});

test("scripts/lint runs it", () => {
  assert.match(fs.readFileSync(path.join(REPO_ROOT, "scripts", "lint"), "utf8"), /^bash scripts\/check-bash32$/m);
});
