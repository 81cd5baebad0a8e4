/**
 * @sophia/async-jobs-client: the API's side of the Sophia async jobs contract.
 *
 * - `InterviewQueuePublisher` (`publishInterviewCompleted`, `publishInterviewFailed`);
 * - the message and stored-document types, generated from functions/contracts/schemas;
 * - `check` / `assertValid` / `checkWireMessage`: runtime validation against the same schemas.
 */
export * from "./generated/index";
export * from "./publish";
export {
  assertValid,
  check,
  checkWireMessage,
  ContractViolationError,
  isConsumerDateTime,
  type ContractIssue,
} from "./validate";
