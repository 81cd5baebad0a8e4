/**
 * The MongoDB connection budget: every Lambda sandbox holds its own connection pool,
 * so the functions can open up to `maxConcurrency x pool size` connections per subscribed queue.
 * With `sophia:mongoMaxConnections` set (e.g. what the Atlas tier allows this stage, minus what
 * the API and operators need), the stack refuses a configuration whose total exceeds it.
 *
 * The pool size is the binaries' `MONGODB_MAX_POOL_SIZE` default (`DEFAULT_MAX_POOL_SIZE` in
 * functions/platform/src/mongo.rs; a test keeps the two equal). Not counted: the driver's
 * monitoring connections (up to 2 per replica-set member per sandbox) and sandboxes Lambda keeps
 * briefly while scaling down (their idle connections close after `maxIdleTimeMS`, 60 s): leave
 * headroom for them in the budget.
 */
import * as pulumi from "@pulumi/pulumi";

export const MONGO_MAX_CONNECTIONS_KEY = "mongoMaxConnections";
/** `DEFAULT_MAX_POOL_SIZE` of functions/platform/src/mongo.rs. */
export const DEFAULT_MONGO_POOL_SIZE = 4;

/** Connections each subscribed queue's function can hold at once, and their sum. */
export function mongoConnections(
  maximumConcurrency: Record<string, number>,
  poolSize: number = DEFAULT_MONGO_POOL_SIZE,
): { perQueue: Record<string, number>; total: number } {
  const perQueue: Record<string, number> = {};
  for (const [queue, concurrency] of Object.entries(maximumConcurrency)) perQueue[queue] = concurrency * poolSize;
  return { perQueue, total: Object.values(perQueue).reduce((a, b) => a + b, 0) };
}

/** The problems of a budget (`undefined`: no budget set, nothing to check). */
export function mongoBudgetProblems(
  budget: unknown,
  maximumConcurrency: Record<string, number>,
  poolSize: number = DEFAULT_MONGO_POOL_SIZE,
): string[] {
  if (budget === undefined) return [];
  const key = `sophia:${MONGO_MAX_CONNECTIONS_KEY}`;
  if (typeof budget !== "number" || !Number.isInteger(budget) || budget < 1) {
    return [`${key} must be a whole number of connections of at least 1, got ${JSON.stringify(budget)}`];
  }
  const { perQueue, total } = mongoConnections(maximumConcurrency, poolSize);
  if (total <= budget) return [];
  const terms = Object.entries(perQueue)
    .map(([queue, n]) => `${queue} ${maximumConcurrency[queue]} x ${poolSize} = ${n}`)
    .join(", ");
  return [
    `${key} is ${budget}, but the functions can open ${total} MongoDB connections (sophia:maxConcurrency x pool size ${poolSize}: ${terms}); lower sophia:maxConcurrency or raise the budget`,
  ];
}

/** Reads `sophia:mongoMaxConnections` (a number, or unset) and checks it. */
export function checkMongoBudget(config: pulumi.Config, maximumConcurrency: Record<string, number>): string[] {
  let raw: unknown;
  try {
    raw = config.getObject<unknown>(MONGO_MAX_CONNECTIONS_KEY);
  } catch {
    raw = config.get(MONGO_MAX_CONNECTIONS_KEY);
  }
  return mongoBudgetProblems(raw, maximumConcurrency);
}
