/**
 * The first `up` of a stage writes the functions' role policies, the secrets' resource policies and
 * the stage key's policy moments before the migration invokes interview-completed (stack.ts,
 * migrationInvocation). IAM and KMS apply such writes eventually ("changes ... are not immediately
 * visible ... eventually consistent": https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html#troubleshoot_general_eventual-consistency),
 * so the function's GetSecretValue, or the provider's Invoke, can be refused for a few seconds on a
 * fresh account. The AWS provider invokes once (`aws.lambda.Invocation`), so a refusal fails the
 * `up`. An error hook (Pulumi's `onError`, @pulumi/pulumi >= 3.19x: "return true to retry the
 * operation") retries the invocation a bounded number of times, waiting longer each time, when the
 * error carries one of AWS's access-refusal error codes; any other error (a database that cannot
 * be reached, an index conflict) fails the `up` at once, as before. The code is in the message
 * both ways the refusal reaches the provider: Lambda's own refusal of the Invoke
 * (`AccessDeniedException: ...`), and the function's error when the Parameters and Secrets
 * extension is refused the secret, whose message names the code and nothing of the answer
 * (functions/platform/src/secrets.rs, `SecretError::Refused`: "... the extension answered HTTP 400
 * (AccessDeniedException) ...").
 */
import * as pulumi from "@pulumi/pulumi";

/** The AWS error codes eventual consistency of IAM and KMS produces (the error's kind, as AWS names it). */
export const PROPAGATION_ERROR_CODES = ["AccessDeniedException", "AccessDenied", "KMSAccessDeniedException", "UnrecognizedClientException"] as const;
/** Retries after the first failure; the waits before them, in seconds (about two minutes in all). */
export const MIGRATION_RETRY_WAITS_SECONDS = [5, 10, 20, 30, 60] as const;

/** The AWS error code an error message names (`... AccessDeniedException: ...`, `"errorType":"..."`), if any of PROPAGATION_ERROR_CODES. */
export function propagationErrorCode(message: string): string | undefined {
  return PROPAGATION_ERROR_CODES.find((code) => new RegExp(`(^|[^A-Za-z])${code}([^A-Za-z]|$)`).test(message));
}

/**
 * Whether to retry, given the errors so far (newest first, as Pulumi passes them), and how long to
 * wait first: undefined when the newest error is not a propagation error or the retries are spent.
 */
export function migrationRetryWait(errors: string[]): number | undefined {
  const attempt = errors.length; // failures so far
  if (attempt === 0 || attempt > MIGRATION_RETRY_WAITS_SECONDS.length) return undefined;
  return propagationErrorCode(errors[0]!) ? MIGRATION_RETRY_WAITS_SECONDS[attempt - 1] : undefined;
}

/** The hook's callback, with the wait injected (tests scale time). */
export function migrationRetryCallback(sleep: (seconds: number) => Promise<void>): pulumi.ErrorHookFunction {
  return async (args) => {
    const wait = migrationRetryWait(args.errors);
    if (wait === undefined) return false;
    pulumi.log.warn(`the migration invocation was refused (${propagationErrorCode(args.errors[0]!)}), likely a policy written moments ago and not yet in force: retry ${args.errors.length} of ${MIGRATION_RETRY_WAITS_SECONDS.length} in ${wait} s`);
    await sleep(wait);
    return true;
  };
}

let hook: pulumi.ErrorHook | undefined;
/** The named error hook the migration's invocation registers (created once per program run). */
export function migrationRetryHook(): pulumi.ErrorHook {
  hook ??= new pulumi.ErrorHook("sophia-migration-retry", migrationRetryCallback((s) => new Promise((resolve) => setTimeout(resolve, s * 1000))));
  return hook;
}
