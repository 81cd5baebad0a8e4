/**
 * @sophia/async-jobs-client: the API's side of the Sophia async jobs contract.
 *
 * - `InterviewQueuePublisher` (`publishInterviewCompleted`, `publishInterviewFailed`,
 *   `publishReportGenerate`);
 * - `retryReportGeneration`: the admin "regenerate report", with the attempts reset as data and
 *   one result per case (`AdminRetryResult`: kind, code, HTTP status, message);
 * - `requestErasure` / `readErasure`: a candidate's erasure requested (who, when, why) and its proof;
 * - the message and document types, generated from functions/contracts/schemas: the wire (JSON)
 *   types, and the stored types the MongoDB driver returns (`StoredInterviewReportDocument`);
 * - `check` / `isValid` / `assertValid` / `parseContract` / `checkWireMessage`: runtime validation
 *   against the same schemas (`isValid` and `assertValid` narrow the value to the schema's type;
 *   `QUEUE_EVENT_TYPES`: which messages each declared queue carries).
 */
export * from "./generated/index";
// Explicit exports win over the generated `export *` of the same names: these narrow by `type`.
export { EVENT_TYPES, type EventType, type InterviewCompleted, type InterviewQueueMessage, type MessageAttributes, type RequestId } from "./types";
export * from "./publish";
export * from "./admin";
export * from "./retry-results";
export * from "./erasure";
export type {
  ObjectIdLike,
  StoredGenerationMetadata,
  StoredInterviewReportDocument,
  StoredRetryMark,
  StoredReportDateField,
  StoredReportObjectIdField,
} from "./stored";
export {
  assertValid,
  check,
  checkWireMessage,
  ContractViolationError,
  isConsumerDateTime,
  isValid,
  parseContract,
  QUEUE_EVENT_TYPES,
  type ContractIssue,
  type SchemaTypes,
} from "./validate";
export { DURATION_SECONDS_MAX_PUBLISHED } from "./bounds";
