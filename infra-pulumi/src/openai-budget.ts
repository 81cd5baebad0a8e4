/**
 * The OpenAI capacity check: report-generate's `sophia:maxConcurrency` against the stage's OpenAI
 * rate limits (tokens and requests per minute of its project, OpenAI's limits page), as
 * mongo-budget.ts checks MongoDB connections. With `sophia:openaiLimits` set
 * (`{tokensPerMinute, requestsPerMinute}`), the stack refuses a concurrency whose steady demand
 * exceeds `OPENAI_HEADROOM` of either limit: above it, 429s come back on most reports, each
 * costing a backoff (no attempt, since outages cost none, but time).
 *
 * The demand of one running report-generate instance: `60 / SECONDS_PER_REPORT` reports a minute,
 * each `TOKENS_PER_REPORT` tokens and `REQUESTS_PER_REPORT` requests. OpenAI counts a request
 * against the token limit by its input plus its `max_completion_tokens` when it is sent
 * (https://platform.openai.com/docs/guides/rate-limits), so the figure is the 30-minute
 * interview's measured input (docs/performance.md, "The cost of a report": 6,970 tokens) plus the
 * client's `max_completion_tokens` (`DEFAULT_MAX_COMPLETION_TOKENS` of
 * functions/reports/src/openai.rs, a test keeps them equal): 14,970. Long interviews weigh more
 * (the 4-hour one: 64,170 + 8,000): leave headroom if a stage has many.
 */
import type * as pulumi from "@pulumi/pulumi";

export const OPENAI_LIMITS_KEY = "openaiLimits";
/** Input tokens of the 30-minute fixture interview (docs/performance.md, "The cost of a report"). */
export const INPUT_TOKENS_PER_REPORT = 6_970;
/** `DEFAULT_MAX_COMPLETION_TOKENS` of functions/reports/src/openai.rs. */
export const MAX_COMPLETION_TOKENS = 8_000;
/** What one report counts against the token limit when its request is sent. */
export const TOKENS_PER_REPORT = INPUT_TOKENS_PER_REPORT + MAX_COMPLETION_TOKENS;
/** One chat completion; a repair call (docs/report-quality.md) is a second, on a minority. */
export const REQUESTS_PER_REPORT = 1;
/**
 * Seconds one report holds an instance: the model call (gpt-4.1-mini writing ~1,500 output
 * tokens at about 100 a second, plus the time to its first token) and the database writes.
 */
export const SECONDS_PER_REPORT = 20;
/** The share of a limit the steady demand may use (bursts and other callers of the project). */
export const OPENAI_HEADROOM = 0.8;

export interface OpenAiLimits {
  tokensPerMinute: number;
  requestsPerMinute: number;
}

/** Reports an hour `concurrency` instances complete, and the tokens and requests a minute they use. */
export function openAiDemand(concurrency: number): { reportsPerHour: number; tokensPerMinute: number; requestsPerMinute: number } {
  const reportsPerMinute = (concurrency * 60) / SECONDS_PER_REPORT;
  return {
    reportsPerHour: Math.round(reportsPerMinute * 60),
    tokensPerMinute: Math.round(reportsPerMinute * TOKENS_PER_REPORT),
    requestsPerMinute: Math.round(reportsPerMinute * REQUESTS_PER_REPORT),
  };
}

/** The largest report-generate concurrency the limits carry within the headroom (at least 0). */
export function maxConcurrencyFor(limits: OpenAiLimits): number {
  const perInstance = openAiDemand(1);
  const byTokens = (limits.tokensPerMinute * OPENAI_HEADROOM) / ((60 / SECONDS_PER_REPORT) * TOKENS_PER_REPORT);
  const byRequests = (limits.requestsPerMinute * OPENAI_HEADROOM) / perInstance.requestsPerMinute;
  return Math.floor(Math.min(byTokens, byRequests));
}

/** The problems of the limits for this concurrency (`undefined` limits: nothing to check). */
export function openAiBudgetProblems(limits: unknown, reportConcurrency: number | undefined): string[] {
  if (limits === undefined) return [];
  const key = `sophia:${OPENAI_LIMITS_KEY}`;
  const l = limits as Partial<Record<keyof OpenAiLimits, unknown>>;
  const whole = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 1;
  if (typeof limits !== "object" || limits === null || !whole(l.tokensPerMinute) || !whole(l.requestsPerMinute)) {
    return [`${key} must be {tokensPerMinute: <whole number>, requestsPerMinute: <whole number>} (the stage's OpenAI project limits), got ${JSON.stringify(limits)}`];
  }
  if (reportConcurrency === undefined) return [];
  const ok = limits as OpenAiLimits;
  const demand = openAiDemand(reportConcurrency);
  const most = maxConcurrencyFor(ok);
  if (reportConcurrency <= most) return [];
  return [
    `sophia:maxConcurrency of reportGenerate is ${reportConcurrency}: about ${demand.tokensPerMinute} tokens and ${demand.requestsPerMinute} requests a minute ` +
      `(${TOKENS_PER_REPORT} tokens per report, ${SECONDS_PER_REPORT} s each), over ${OPENAI_HEADROOM * 100}% of ${key} ` +
      `(${ok.tokensPerMinute} TPM, ${ok.requestsPerMinute} RPM); at most ${most} fits: lower sophia:maxConcurrency or raise the project's limits`,
  ];
}

/** Reads `sophia:openaiLimits` (an object, or unset) and checks report-generate's concurrency. */
export function checkOpenAiBudget(config: pulumi.Config, maximumConcurrency: Record<string, number>): string[] {
  let raw: unknown;
  try {
    raw = config.getObject<unknown>(OPENAI_LIMITS_KEY);
  } catch {
    raw = config.get(OPENAI_LIMITS_KEY);
  }
  return openAiBudgetProblems(raw, maximumConcurrency["reportGenerate"]);
}

/**
 * The deploy's warning when `sophia:openaiLimits` is unset: nothing relates report-generate's
 * concurrency to the OpenAI project's limits (too low lags a burst, too high burns requests on 429s).
 */
export function openAiLimitsUnsetWarning(raw: unknown, reportConcurrency: number | undefined): string | null {
  if (raw !== undefined && raw !== null) return null;
  return (
    `sophia:openaiLimits is not set: report-generate's maxConcurrency (${reportConcurrency ?? "unset"}) is not checked against the OpenAI ` +
    `project's tokens and requests per minute; set {tokensPerMinute, requestsPerMinute} from the project's limits page (docs/performance.md)`
  );
}
