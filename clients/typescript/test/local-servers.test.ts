// The development servers' commands stop when they are asked to through npm/npx: those run the
// command under `sh -c` and pass a SIGTERM to that shell only (npm's run-script forwards the signals
// it receives to its child); the shell (dash, /bin/sh here) exits without passing it on. These tests
// build the same process tree (`sh -c '<command>; :'`: the `; :` keeps the shell from exec'ing the
// command, as npm's shell line is not always a single command), send SIGTERM to the shell, and
// poll until the server's port refuses connections.
import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import * as path from "node:path";
import { test } from "node:test";

const PACKAGE = path.resolve(__dirname, "..");
const REPO = path.resolve(PACKAGE, "..", "..");

/**
 * Starts `sh -c '<command>; :'` with its output in a file (no pipe: a server left running, the
 * failure this tests for, does not keep the test process waiting on one), polls the file (every
 * 100 ms, 30 s at most) for `ready`, and returns the shell and the match.
 */
async function underShell(command: string, ready: RegExp) {
  const dir = mkdtempSync(path.join(tmpdir(), "sophia-sig-"));
  const log = path.join(dir, "out.log");
  const fd = openSync(log, "w");
  const shell = spawn("sh", ["-c", `${command}; :`], { cwd: PACKAGE, env: process.env, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  shell.unref();
  let exited: number | null | undefined;
  shell.on("exit", (code) => (exited = code));
  for (let i = 0; i < 300 && exited === undefined; i++) {
    const match = ready.exec(readFileSync(log, "utf8"));
    if (match) {
      rmSync(dir, { recursive: true, force: true });
      return { shell, match };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const out = readFileSync(log, "utf8");
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`not ready (shell exit ${exited}): ${out}`);
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => (socket.destroy(), resolve(true)));
    socket.on("error", () => resolve(false));
  });

/** Polls (every 100 ms, 15 s at most) until nothing listens on the port. */
async function closes(port: number): Promise<boolean> {
  for (let i = 0; i < 150; i++) {
    if (!(await accepts(port))) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

test("sophia-local-queue under npx's shell: a SIGTERM to the shell stops the server too (its port closes)", async (t) => {
  if (!existsSync(path.join(REPO, "scripts", "tools", "node_modules", "fauxqs", "package.json"))) {
    t.skip("SKIPPED: fauxqs is not installed (bash scripts/setup-tools)");
    return;
  }
  const { shell, match } = await underShell(`"${process.execPath}" bin/local-queue.mjs --port 0`, /# fauxqs listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const port = Number(match[1]);
  assert.ok(await accepts(port), "listening before the signal");
  shell.kill("SIGTERM");
  assert.ok(await closes(port), `port ${port} still listening after the shell was stopped`);
});

test("npm run local-mongodb under npm's shell: a SIGTERM to the shell stops nx-27017 too (its port closes)", async (t) => {
  if (!existsSync(path.join(REPO, ".local", "venv", "bin", "python"))) {
    t.skip("SKIPPED: nx-27017 is not installed (bash scripts/setup-tools)");
    return;
  }
  const { shell, match } = await underShell(`"${process.execPath}" scripts/local-mongodb.mjs --port 0`, /MONGODB_URI=mongodb:\/\/127\.0\.0\.1:(\d+)/);
  const port = Number(match[1]);
  assert.ok(await accepts(port), "listening before the signal");
  shell.kill("SIGTERM");
  assert.ok(await closes(port), `port ${port} still listening after the shell was stopped`);
});
