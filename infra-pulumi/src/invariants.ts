/**
 * Rules shared by the program (which refuses to build a stack that breaks them) and by the policy
 * pack (which checks the resources that were actually registered). No queue numbers live here: the
 * numbers are in `queues.json`.
 */

/** AWS guidance for SQS event sources: visibility timeout >= 6 x function timeout (+ batching window). */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** Highest maxReceiveCount the policy pack accepts on a source queue's redrive policy. */
export const MAX_RECEIVE_COUNT_LIMIT = 5;

/** The smallest visibility timeout an SQS queue may have when the given function consumes it. */
export function requiredVisibilityTimeoutSeconds(
  functionTimeoutSeconds: number,
  maximumBatchingWindowSeconds: number,
): number {
  return VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + maximumBatchingWindowSeconds;
}
