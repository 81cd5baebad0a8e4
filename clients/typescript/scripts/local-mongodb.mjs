#!/usr/bin/env node
// A local MongoDB for the admin retry, in this repository: nx-27017 (a MongoDB wire-protocol server
// over SQLite, installed by scripts/setup-tools into .local/venv) started through the repository's
// launcher, scripts/tools/nx_launcher.py, which fixes the nx-27017 gaps the retry would hit (the
// plain `nx-27017` command stores a `$set` date as a string and matches no ObjectId field by
// equality, so the retry answers `interview-not-found`: docs/testing.md, "The local MongoDB").
// In memory, on 127.0.0.1; prints `export MONGODB_URI=...` and runs until Ctrl-C.
//
//   bash scripts/setup-tools                    (once, at the repository root)
//   npm run --silent local-mongodb [-- --port 27017]   (in clients/typescript; MONGODB_PORT too; 0: a free port)
//
// Any MongoDB 6+ does as well (the package's CI uses mongo:7); this is for a machine without one.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect, createServer } from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const python = path.join(REPO, ".local", "venv", "bin", "python");
if (!existsSync(python)) {
  console.error("local-mongodb: nx-27017 is not installed: run `bash scripts/setup-tools` at the repository root first");
  process.exit(1);
}
const args = process.argv.slice(2);
const at = args.indexOf("--port");
let port = Number.parseInt(at >= 0 ? (args[at + 1] ?? "") : (process.env.MONGODB_PORT ?? "27017"), 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("local-mongodb: --port must be a TCP port (0: any free one)");
  process.exit(2);
}
if (port === 0) {
  port = await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const free = server.address().port;
      server.close(() => resolve(free));
    });
  });
}

const accepts = () =>
  new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
if (await accepts()) {
  console.error(`local-mongodb: 127.0.0.1:${port} is taken (a MongoDB already running?); pick another with --port`);
  process.exit(1);
}

// Its stderr is noisy on shutdown (asyncio CancelledError): kept out of the reader's terminal.
// Stopped by this process (its PID), not by its own stdin watcher.
const { SOPHIA_EXIT_ON_STDIN_EOF: _, ...env } = process.env;
const server = spawn(python, [path.join(REPO, "scripts", "tools", "nx_launcher.py"), "--data-dir", "memory", "--host", "127.0.0.1", "-p", String(port)], {
  stdio: ["ignore", "ignore", "ignore"],
  env,
});
let exited;
server.on("exit", (code) => {
  exited = code;
});
// Polls until the server accepts connections (30 s at most), never a fixed sleep.
for (let i = 0; i < 300 && exited === undefined && !(await accepts()); i++) await new Promise((r) => setTimeout(r, 100));
if (exited !== undefined || !(await accepts())) {
  console.error(`local-mongodb: nx-27017 did not start (exit ${exited}); run scripts/setup-tools again`);
  if (exited === undefined) server.kill("SIGTERM");
  process.exit(1);
}
console.log(`export MONGODB_URI=mongodb://127.0.0.1:${port}/?directConnection=true`);
console.log(`# nx-27017 (in memory) listening on 127.0.0.1:${port}: Ctrl-C stops it`);

const stop = () => {
  if (exited === undefined) server.kill("SIGTERM");
  process.exit(0);
};
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, stop);
// `npm run local-mongodb` starts this under `sh -c` and passes a SIGTERM/SIGINT it receives to that
// shell only, which exits without passing it on: so this also stops (and stops the server) when
// its parent goes (it is then re-parented: its ppid changes).
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(), 250).unref();
server.on("exit", () => process.exit(1));
if (process.env.SOPHIA_EXIT_ON_STDIN_EOF === "1") {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
