/**
 * Infrastructure-only facts that queues.json (shared with the Rust side) does not carry: which
 * function needs which secret or bucket, and which queues the API publishes to. Keyed by the names
 * and keys of queues.json; `checkWiring` fails when the two drift apart.
 */
import type { Settings } from "./settings";

export interface FunctionWiring {
  /** Gets OPENAI_API_KEY / OPENAI_MODEL (/ OPENAI_BASE_URL). */
  openai: boolean;
  /** Gets read/write on the configured resume bucket (the SST program linked it to the consumers). */
  resumeBucket: boolean;
  /** Reads RECORD_CONCURRENCY (records of one batch settled at once; `sophia:recordConcurrency`). */
  recordConcurrency: boolean;
  /** Gets an alarm when its duration nears its timeout (long OpenAI calls). */
  durationAlarm: boolean;
}

export const FUNCTION_WIRING: Readonly<Record<string, FunctionWiring>> = {
  "interview-completed": { openai: false, resumeBucket: true, recordConcurrency: true, durationAlarm: false },
  "report-generate": { openai: true, resumeBucket: true, recordConcurrency: false, durationAlarm: true },
  "interview-failed": { openai: false, resumeBucket: false, recordConcurrency: true, durationAlarm: false },
};

/**
 * The function the stack invokes once per deploy with `{"sophiaOps":"migrate"}` to create the
 * MongoDB indexes before any event source mapping delivers a message (it links both domains'
 * migrations, the same ones `sophia-ops migrate` runs). infra-bootstrap grants the deploy role
 * lambda:InvokeFunction on this function only (deploy-permissions.json, `migrateFunction`).
 */
export const MIGRATION_FUNCTION = "interview-completed";
export const MIGRATION_PAYLOAD = { sophiaOps: "migrate" } as const;

/** Queues the API (Fargate service) sends to; the managed policy API_PUBLISH_POLICY_ARN covers exactly these. */
export const API_PUBLISHES_TO: readonly string[] = ["interviewCompleted"];

export function checkWiring(settings: Settings): void {
  const names = settings.functions.map((f) => f.name);
  const missing = names.filter((n) => !(n in FUNCTION_WIRING));
  const extra = Object.keys(FUNCTION_WIRING).filter((n) => !names.includes(n));
  const badQueues = API_PUBLISHES_TO.filter((k) => !settings.queues.some((q) => q.key === k));
  const problems = [
    ...missing.map((n) => `function "${n}" from queues.json has no entry in FUNCTION_WIRING (src/wiring.ts)`),
    ...extra.map((n) => `FUNCTION_WIRING names "${n}", which queues.json does not declare`),
    ...badQueues.map((k) => `API_PUBLISHES_TO names queue "${k}", which queues.json does not declare`),
  ];
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

export function wiringFor(functionName: string): FunctionWiring {
  const w = FUNCTION_WIRING[functionName];
  if (!w) throw new Error(`no wiring for function "${functionName}"`);
  return w;
}
