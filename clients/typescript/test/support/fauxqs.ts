/**
 * fauxqs (the project's local SQS, installed by scripts/setup-tools into scripts/tools) started on
 * 127.0.0.1 and a free port through the project's launcher, as the Rust harness does; stopped by
 * its PID. Missing fauxqs fails loudly: run scripts/setup-tools.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import * as path from "node:path";

export const REPO_ROOT = path.resolve(__dirname, "..", "..", "..", "..");
const LAUNCHER = path.join(REPO_ROOT, "scripts", "tools", "fauxqs-launcher.mjs");

export interface Fauxqs {
  endpoint: string;
  stop(): void;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startFauxqs(): Promise<Fauxqs> {
  if (!existsSync(path.join(REPO_ROOT, "scripts", "tools", "node_modules", "fauxqs", "package.json"))) {
    throw new Error("fauxqs is not installed: run scripts/setup-tools (it installs scripts/tools/node_modules)");
  }
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [LAUNCHER, String(port)], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, SOPHIA_EXIT_ON_STDIN_EOF: "1" },
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("fauxqs did not start within 20 s")), 20_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("listening")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on("exit", (code) => reject(new Error(`fauxqs exited with ${code}`)));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () => {
      if (child.pid !== undefined) process.kill(child.pid, "SIGTERM");
    },
  };
}
