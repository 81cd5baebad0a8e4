// How the stand-in CLIs (`gh`, and deploy-doc.test.ts's `pulumi` and `aws`) reach the test process
// that answers them: each stand-in on PATH is a bash script that sends its call over TCP on
// 127.0.0.1 (bash's /dev/tcp, no other process) to a server in the test's process. A node start
// per call (some 50 ms of CPU, hundreds of calls per test file) was most of those tests' CPU.
//
// The request: NUL-terminated fields, the first one the number of fields that follow. The answer:
// NUL-terminated fields: exit code, stdout, stderr. (A field holds no NUL: none of these calls'
// arguments, environments or inputs do.)
"use strict";
const net = require("net");

/**
 * A bash function `cli_send FIELD...`: sends the request to the port (a number, or a bash
 * expression such as "$FAKE_SERVER_PORT"), writes the answer's stdout and stderr, returns its code.
 */
function bashSend(port) {
  return `cli_send() {
  local code="" out="" err=""
  exec 3<>"/dev/tcp/127.0.0.1/${port}" || return 70
  printf '%s\\0' "$#" "$@" >&3
  IFS= read -r -d '' code <&3; IFS= read -r -d '' out <&3; IFS= read -r -d '' err <&3
  exec 3<&-
  printf '%s' "$out"; printf '%s' "$err" >&2
  return "\${code:-70}"
}
`;
}

/** Serves requests: `answer(fields)` returns (or resolves to) {code, stdout, stderr}; calls `listening(port)`. */
function serveFields(answer, listening) {
  const server = net.createServer((socket) => {
    const chunks = [];
    let answered = false;
    socket.on("data", async (chunk) => {
      chunks.push(chunk);
      if (answered) return;
      const fields = Buffer.concat(chunks).toString("utf8").split("\0");
      // Complete: the count, that many fields, and the empty rest after the last NUL.
      if (fields.length < 2 || fields.length < Number(fields[0]) + 2) return;
      answered = true;
      let r;
      try {
        r = await answer(fields.slice(1, 1 + Number(fields[0])));
      } catch (e) {
        r = { code: 1, stdout: "", stderr: `${e && e.stack ? e.stack : e}\n` };
      }
      socket.end(`${r.code}\0${r.stdout}\0${r.stderr}\0`);
    });
  });
  server.listen(0, "127.0.0.1", () => listening(server.address().port));
  return server;
}

module.exports = { bashSend, serveFields };
