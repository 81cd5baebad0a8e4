/**
 * scripts/check-bash32, the lint for macOS's /bin/bash 3.2 (run by scripts/lint): each idiom 3.2
 * lacks, and each GNU coreutils command a Mac lacks (sha256sum, timeout), is flagged on a
 * fixture, the portable forms are not, a corpus of every rule's positive and negative forms gets
 * exactly its recorded findings, the scripts it finds by itself are the bash ones, and every script
 * of the repository passes. bash 3.2 itself is not installable here (no Debian package, no source
 * download), so the scripts are checked for the idioms, not run under 3.2.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { REPO_ROOT } from "../src/repository";

const CHECK = path.join(REPO_ROOT, "scripts", "check-bash32");
const HEADER = "#!/usr/bin/env bash\nset -euo pipefail\n";
function checkText(text: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bash32-"));
  const file = path.join(dir, "script");
  fs.writeFileSync(file, text);
  const r = spawnSync("bash", [CHECK, file], { encoding: "utf8" });
  fs.rmSync(dir, { recursive: true, force: true });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, out: r.stdout + r.stderr, file };
}
function check(script: string) {
  return checkText(`${HEADER}${script}\n`);
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

/** Each rule's name as the check prints it, in the order it checks a line. */
const RULES = {
  mapfile: "mapfile/readarray (bash 4)",
  associative: "associative array (bash 4)",
  nameref: "nameref (bash 4.3)",
  declareG: "declare -g (bash 4.2)",
  caseModification: "case modification ${x,,} ${x^^} (bash 4)",
  transformation: "${x@Q} transformation (bash 4.4)",
  negativeSubscript: "negative array subscript (bash 4.3)",
  pipeAll: "|& pipe (bash 4)",
  appendAll: "&>> append (bash 4)",
  coproc: "coproc (bash 4)",
  waitN: "wait -n (bash 4.3)",
  caseFallThrough: ";& or ;;& in case (bash 4)",
  globstar: "globstar (bash 4)",
  epoch: "$EPOCHSECONDS/$EPOCHREALTIME (bash 5)",
  emptyArray: `"\${arr[@]}" of a possibly empty array under set -u (write \${arr[@]+"\${arr[@]}"} or mark '# bash32: non-empty')`,
  sha256sum: "sha256sum (GNU coreutils, not on macOS: use sha256 of scripts/lib.sh)",
  timeout: "timeout (GNU coreutils, not on macOS: use with_timeout of scripts/lib.sh)",
} as const;
type Rule = keyof typeof RULES;

/**
 * Each rule's positive and negative forms, comments, the markers, CRLF lines, and a last line with
 * no newline, each with exactly the findings the line gets (recorded from the check before it was
 * one awk program, which printed the same).
 */
const CORPUS: [line: string, rules: Rule[]][] = [
  ["mapfile -t lines < <(ls)", ["mapfile"]],
  ["readarray a", ["mapfile"]],
  ["readarray\t-t a", ["mapfile"]],
  ["mapfiles x", []],
  ["x=mapfile", []],
  [";mapfile x", ["mapfile"]],
  ["|readarray x", ["mapfile"]],
  ["&mapfile x", ["mapfile"]],
  ["(mapfile x)", []],
  ["echo x; mapfile -t y", ["mapfile"]],
  ["declare -A seen=()", ["associative"]],
  ["local -rA x", ["associative"]],
  ["typeset -A m", ["associative"]],
  ["declare -a x", []],
  ["declare -aA x", ["associative"]],
  ["local -n ref=$1", ["nameref"]],
  ["declare -n r", ["nameref"]],
  ["typeset -n r", ["nameref"]],
  ["declare -g X=1", ["declareG"]],
  ["declare -gA X", ["associative", "declareG"]],
  ["declare -ig X", ["declareG"]],
  ["local -g x", []],
  ["declare -p x", []],
  ["export -n x", []],
  ["declare  -A x", ["associative"]],
  ["declare -- A", []],
  ["echo \"${name,,}\"", ["caseModification"]],
  ["echo \"${name,}\"", ["caseModification"]],
  ["echo \"${name^}\"", ["caseModification"]],
  ["echo \"${name^^}\"", ["caseModification"]],
  ["echo \"${!name,,}\"", ["caseModification"]],
  ["echo \"${#name^}\"", ["caseModification"]],
  ["echo \"${a[1],,}\"", ["caseModification"]],
  ["echo \"${a[@]^^}\"", ["caseModification"]],
  ["echo \"${x:-a,b}\"", []],
  ["echo \"${x/,/;}\"", []],
  ["echo \"${x,,pattern}\"", ["caseModification"]],
  ["echo \"${x}^^\"", []],
  ["echo \"${name@Q}\"", ["transformation"]],
  ["echo \"${name@q}\"", []],
  ["echo \"${a[0]@A}\"", ["transformation"]],
  ["echo \"${x@}\"", []],
  ["echo \"${x@E}\" \"${x@P}\" \"${x@a}\" \"${x@K}\" \"${x@k}\" \"${x@U}\" \"${x@u}\" \"${x@L}\"", ["transformation"]],
  ["echo \"${arr[-1]}\"", ["negativeSubscript"]],
  ["echo \"${arr[-12]}\"", ["negativeSubscript"]],
  ["echo \"${arr[i-1]}\"", []],
  ["echo \"${arr[ -1]}\"", []],
  ["echo \"${arr[-1]:-x}\"", []],
  ["make |& tee log", ["pipeAll"]],
  ["make || true", []],
  ["make | & x", []],
  ["make &>> log", ["appendAll"]],
  ["make &> log", []],
  ["make >> log", []],
  ["coproc cat", ["coproc"]],
  ["coproc", []],
  ["echo coprocess", []],
  [";coproc x", ["coproc"]],
  ["x=1 coproc y", ["coproc"]],
  ["wait -n", ["waitN"]],
  ["wait -n 1", ["waitN"]],
  ["wait $pid", []],
  ["wait\t-n", ["waitN"]],
  ["wait -f", []],
  ["await -n", []],
  ["case x in a) echo ;&", ["caseFallThrough"]],
  ["case x in a) echo ;;&", ["caseFallThrough"]],
  ["case x in a) echo ;;", []],
  ["  a) echo ;&   ", ["caseFallThrough"]],
  ["echo ';&' x", []],
  ["shopt -s globstar", ["globstar"]],
  ["shopt -s nullglob globstar", ["globstar"]],
  ["shopt -u globstar", []],
  ["shopt -s extglob", []],
  ["shopt -s\tglobstar", ["globstar"]],
  ["echo $EPOCHSECONDS", ["epoch"]],
  ["echo ${EPOCHREALTIME}", ["epoch"]],
  ["EPOCHSECONDS=1", []],
  ["echo $EPOCHSECONDSX", ["epoch"]],
  ["exec pulumi up \"${args[@]}\"", ["emptyArray"]],
  ["exec pulumi up ${args[@]+\"${args[@]}\"}", []],
  ["for f in \"${functions[@]}\"; do echo \"$f\"; done # bash32: non-empty", []],
  ["echo \"${a[@]}\" ${b[@]+\"${b[@]}\"}", ["emptyArray"]],
  ["echo ${a[@]+\"${a[@]}\"} \"${b[@]}\"", ["emptyArray"]],
  ["echo ${a[@]}", []],
  ["echo \"${a[*]}\"", []],
  ["echo \"${#a[@]}\"", []],
  ["echo \"${a[@]:1}\"", []],
  ["echo \"x${a[@]}\"", []],
  ["echo \"${a[@]}\" # a note # bash32: non-empty", []],
  ["echo \"${a[@]}\" #bash32: non-empty", ["emptyArray"]],
  ["echo \"${a[@]}\" \"${b[@]}\"", ["emptyArray"]],
  ["echo ${a[@]+\"${b[@]}\"}", []],
  ["stamp=$(sha256sum \"$file\" | cut -c1-16)", ["sha256sum"]],
  ["sha256sum f", ["sha256sum"]],
  ["`sha256sum f`", ["sha256sum"]],
  ["x|sha256sum", ["sha256sum"]],
  ["sha256sum", ["sha256sum"]],
  ["(sha256sum)", ["sha256sum"]],
  ["sha256sums f", []],
  ["my-sha256sum f", []],
  ["sha256sum f # bash32: portable", []],
  ["{sha256sum;}", []],
  ["!sha256sum", ["sha256sum"]],
  ["echo sha256sum)", ["sha256sum"]],
  ["if timeout 20 git ls-remote origin HEAD; then :; fi", ["timeout"]],
  ["timeout -s KILL 5 cmd", ["timeout"]],
  ["timeout --foreground 5 cmd", ["timeout"]],
  ["timeout cmd", []],
  ["curl --timeout 5", []],
  ["curl --connect-timeout 3 --max-time 10 http://127.0.0.1:1/", []],
  ["(timeout 1 x)", ["timeout"]],
  ["$(timeout 1 x)", ["timeout"]],
  ["timeout 1 x # bash32: portable", []],
  ["timeout 1 sha256sum x", ["sha256sum", "timeout"]],
  ["# mapfile is bash 4: not used here", []],
  ["echo x # mapfile -t", []],
  ["echo x\t#mapfile -t", []],
  ["x=a#b; mapfile -t l", ["mapfile"]],
  ["#!/bin/bash mapfile x", []],
  ["  # mapfile -t", []],
  ["#", []],
  ["echo \"# not a comment ${x,,}\"", ["caseModification"]],
  ["echo \" # ${x,,}\"", []],
  ["echo \\${x,,}", ["caseModification"]],
  ["echo \"%s %d ${x,,} \\n \\\\ %%\"", ["caseModification"]],
  ["-n ${x,,}", ["caseModification"]],
  ["-e mapfile x", ["mapfile"]],
  ["echo \"héllo ${x,,}\" ünïcödé", ["caseModification"]],
  ["mapfile -t x", ["mapfile"]],
  ["echo ok", []],
  ["'ok' ${x^} 'q'", ["caseModification"]],
  ["echo \"${a[@]}\" |& cat; wait -n; echo $EPOCHSECONDS # two comments # bash32: non-empty", ["pipeAll", "waitN", "epoch"]],
  ["declare -An x; coproc y; shopt -s globstar", ["associative", "nameref", "coproc", "globstar"]],
  ["a=(1 2); echo \"${a[-1]}\" \"${a[@]}\"", ["negativeSubscript", "emptyArray"]],
  ["", []],
  ["mapfile -t x\r", ["mapfile"]],
  ["wait -n\r", ["waitN"]],
  ["case x in a) echo ;&\r", ["caseFallThrough"]],
  ["echo \"${a[@]}\"\r", ["emptyArray"]],
  ["# c\r", []],
  ["\tmapfile -t x", ["mapfile"]],
];

test("a corpus of each rule's positive and negative forms gets exactly its findings, printed file:line: rule and the line", () => {
  const r = checkText(HEADER + CORPUS.map(([line]) => line).join("\n"));
  const order = Object.keys(RULES) as Rule[];
  const expected = CORPUS.flatMap(([line, rules], i) =>
    [...rules]
      .sort((a, b) => order.indexOf(a) - order.indexOf(b))
      .map((rule) => `${r.file}:${i + 3}: ${RULES[rule]}\n    ${line}\n`),
  );
  assert.equal(r.stdout, expected.join(""));
  assert.equal(r.stderr, `${expected.length} bash 3.2 or macOS problem(s) above (macOS /bin/bash is 3.2, without GNU coreutils)\n`);
  assert.equal(r.status, 1);
  for (const rule of order) assert.ok(CORPUS.some(([, rules]) => rules.includes(rule)), `${rule} flagged in the corpus`);
});

test("without arguments: scripts/* whose #! names bash, .ci/run and scripts/lib.sh, not itself", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bash32-root-"));
  fs.mkdirSync(path.join(root, "scripts", "a-folder"), { recursive: true });
  fs.mkdirSync(path.join(root, ".ci"));
  fs.copyFileSync(CHECK, path.join(root, "scripts", "check-bash32"));
  const lib = fs.readFileSync(path.join(REPO_ROOT, "scripts", "lib.sh"), "utf8");
  // Named in scripts/ at run time. Flagged in this order: the bash ones, .ci/run, scripts/lib.sh.
  const inScripts: Record<string, string> = {
    "bin-bash": "#!/bin/bash",
    "env-bash": "#!/usr/bin/env bash",
    "env-s-bash": "#!/usr/bin/env -S bash -eu",
    "spaced-bash": "#! /bin/bash -e",
    bash5: "#!/bin/bash5",
    rbash: "#!/bin/rbash",
    sh: "#!/bin/sh",
    python: "#!/usr/bin/env python3",
    "no-shebang": "# bash",
  };
  const bashOnes = ["bin-bash", "env-bash", "env-s-bash", "spaced-bash"].map((name) => path.posix.join("scripts", name));
  const run = (bad: string) => {
    for (const [name, first] of Object.entries(inScripts)) fs.writeFileSync(path.join(root, "scripts", name), `${first}\n${bad}\n`);
    fs.writeFileSync(path.join(root, ".ci", "run"), `#!/usr/bin/env bash\n${bad}\n`);
    fs.writeFileSync(path.join(root, "scripts", "lib.sh"), `${lib}${bad}\n`);
    return spawnSync("bash", [path.join(root, "scripts", "check-bash32")], { encoding: "utf8", cwd: root });
  };
  try {
    const flagged = run("unused() { mapfile -t x; }");
    assert.equal(flagged.status, 1, flagged.stderr);
    const libLine = lib.split("\n").length;
    assert.deepEqual(
      [...flagged.stdout.matchAll(/^(\S+): mapfile\/readarray/gm)].map((m) => m[1]),
      [...bashOnes.map((file) => `${file}:2`), ".ci/run:2", `scripts/lib.sh:${libLine}`],
    );
    const clean = run(": ok");
    assert.equal(clean.status, 0, clean.stdout + clean.stderr);
    assert.match(clean.stderr, /bash 3\.2: 6 scripts checked, nothing 3\.2 lacks/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("a name that is not a readable file fails: a missing one, a folder", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sophia-bash32-"));
  try {
    for (const name of [path.join(dir, "missing"), dir]) {
      const r = spawnSync("bash", [CHECK, name], { encoding: "utf8" });
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.equal(r.stderr, `error: cannot read ${name}\n`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("every script of the repository passes", () => {
  const r = spawnSync("bash", [CHECK], { encoding: "utf8", cwd: REPO_ROOT });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr, /scripts checked, nothing 3\.2 lacks/);
});

test("scripts/lint runs it", () => {
  assert.match(fs.readFileSync(path.join(REPO_ROOT, "scripts", "lint"), "utf8"), /^bash scripts\/check-bash32$/m);
});
