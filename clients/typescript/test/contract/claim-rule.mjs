// Cross-language claim rule (driven by tests/it/report_claim_languages.rs): what the BUILT package
// decides about each stored report. argv[2]: a JSON file {"now": epoch milliseconds, "cases":
// [canonical Extended JSON documents]}, read as the MongoDB driver returns them (dates as Date,
// every number as a number). Prints {"checked": n, "claimEndedFilter": the filter, "results":
// [{"heldUntil": ms | null, "resettable", "resetFilter": filter | null}]}: reportHeldUntil,
// isResettable, and resetAttemptsOperation's compare-and-set filter (null for a status the reset
// never writes), the filters in canonical Extended JSON as the driver would send them.
import { readFileSync } from "node:fs";

import { BSON } from "mongodb";
import { isResettable, REPORT_RESET_RULES, reportClaimEndedFilter, reportHeldUntil, resetAttemptsOperation } from "@sophia/async-jobs-client";

const wire = (value) => BSON.EJSON.serialize(value, { relaxed: false });
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const now = new Date(input.now);
const results = input.cases.map((ejson) => {
  const report = BSON.EJSON.deserialize(ejson, { relaxed: true });
  const rule = REPORT_RESET_RULES[report.status];
  const reset = rule === "reset" || rule === "whenLeaseExpired" ? resetAttemptsOperation(report, { by: "claim-rule-contract" }, now) : undefined;
  const heldUntil = reportHeldUntil(report);
  return {
    heldUntil: heldUntil === undefined ? null : heldUntil.getTime(),
    resettable: isResettable(report, now),
    resetFilter: reset === undefined ? null : wire(reset.filter),
  };
});
console.log(JSON.stringify({ checked: results.length, claimEndedFilter: wire(reportClaimEndedFilter(now)), results }));
