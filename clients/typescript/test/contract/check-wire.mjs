// Cross-language contract test, reverse direction (driven by tests/it/typescript_contract.rs):
// validates messages captured off the queues from the Rust producers with the BUILT package's
// runtime validation. argv[2]: a JSON file of [{"body": string, "attributes": {name: value}}].
// Prints {"checked": n, "results": [[issues...] per message]} on stdout.
import { readFileSync } from "node:fs";

import { checkWireMessage } from "@sophia/async-jobs-client";

const messages = JSON.parse(readFileSync(process.argv[2], "utf8"));
const results = messages.map((m) => checkWireMessage(m.body, m.attributes));
console.log(JSON.stringify({ checked: messages.length, results }));
