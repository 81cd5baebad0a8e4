// Starts fauxqs (local SQS, AWS JSON 1.0 protocol) bound to 127.0.0.1 only.
// fauxqs's own CLI listens on 0.0.0.0; this launcher uses its buildApp() and listens on loopback.
// Usage: node fauxqs-launcher.mjs <port>
import { buildApp } from "fauxqs";

const port = Number.parseInt(process.argv[2] ?? process.env.FAUXQS_PORT ?? "4566", 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`fauxqs-launcher: invalid port ${process.argv[2]}`);
  process.exit(2);
}
const app = buildApp({ logger: process.env.FAUXQS_LOGGER === "true", defaultRegion: "us-east-1" });
await app.listen({ port, host: "127.0.0.1" });
console.log(`fauxqs listening on http://127.0.0.1:${port}`);
const stop = async () => {
  await app.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
// When started by a harness with a stdin pipe, exit as soon as the parent goes away (the pipe
// closes), so that a test run or local runner killed hard never leaves a server behind.
if (process.env.SOPHIA_EXIT_ON_STDIN_EOF === "1") {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
