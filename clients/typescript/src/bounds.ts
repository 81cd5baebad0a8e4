/**
 * Bounds the publisher holds its input to, stricter than the wire contract: the Rust consumers
 * accept any finite `durationSeconds` up to 2^53 - 1 and any `failureReason` up to its length
 * limit (docs/design.md, "Message contract decisions": dropping a completion or failure on a queue
 * would hold the interview's reserved credits for ever), so a value that is valid on the wire but
 * certainly a mistake is refused here, before it is sent, with the field named:
 *
 * - `durationSeconds` above {@link DURATION_SECONDS_MAX_PUBLISHED} (a day): an interview that long
 *   is a unit mistake (milliseconds for seconds: 45 minutes in ms is 31 days), and it would bill
 *   the whole reservation;
 * - a blank `failureReason` (empty or only whitespace): the record of why the interview failed
 *   would say nothing.
 */
import type { ContractIssue } from "./validate";

/** The longest interview the publisher sends, in seconds (24 hours). */
export const DURATION_SECONDS_MAX_PUBLISHED = 86_400;

/** The publisher's own problems with a body the contract accepts (empty: none). */
export function publishBoundIssues(message: object): ContractIssue[] {
  const body = message as Record<string, unknown>;
  const issues: ContractIssue[] = [];
  const duration = body["durationSeconds"];
  if (typeof duration === "number" && duration > DURATION_SECONDS_MAX_PUBLISHED) {
    issues.push({ path: "/durationSeconds", problem: `must be <= ${DURATION_SECONDS_MAX_PUBLISHED} (24 hours; a longer one is a unit mistake, e.g. milliseconds)` });
  }
  const reason = body["failureReason"];
  if (typeof reason === "string" && reason.trim() === "") issues.push({ path: "/failureReason", problem: "must not be empty or blank" });
  return issues;
}
