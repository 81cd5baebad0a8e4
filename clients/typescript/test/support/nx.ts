/**
 * nx-27017 (the project's local MongoDB wire server, installed by scripts/setup-tools into
 * .local/venv) on 127.0.0.1 and a free port, in memory, through the project's launcher, as the Rust
 * harness starts it (tools/local/src/servers.rs); stopped by its PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { connect } from "node:net";
import * as path from "node:path";

import { REPO_ROOT, freePort } from "./fauxqs";

export interface Nx {
  uri: string;
  stop(): void;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

export async function startNx(): Promise<Nx> {
  const python = path.join(REPO_ROOT, ".local", "venv", "bin", "python");
  if (!existsSync(python)) throw new Error("nx-27017 is not installed: run scripts/setup-tools (it installs .local/venv)");
  const port = await freePort();
  const runDir = path.join(REPO_ROOT, ".local", "run");
  mkdirSync(runDir, { recursive: true });
  const child: ChildProcess = spawn(
    python,
    [
      path.join(REPO_ROOT, "scripts", "tools", "nx_launcher.py"),
      "--data-dir",
      "memory",
      "--host",
      "127.0.0.1",
      "--pid-file",
      path.join(runDir, `nx-27017-${port}.pid`),
      "-p",
      String(port),
    ],
    // Its stderr is noisy on shutdown (asyncio CancelledError); a start failure is reported below.
    { stdio: ["ignore", "ignore", "ignore"] },
  );
  let exited: number | null | undefined;
  child.on("exit", (code) => (exited = code));
  for (let i = 0; i < 300 && !(await accepts(port)); i++) {
    if (exited !== undefined) throw new Error(`nx-27017 exited with ${exited}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    stop: () => {
      if (child.pid !== undefined && exited === undefined) process.kill(child.pid, "SIGTERM");
    },
  };
}
