/**
 * Infrastructure-only facts that queues.json (shared with the Rust side) does not carry: which
 * function needs which secret or bucket, and which function runs the migration. Keyed by the
 * function names of queues.json; `checkWiring` fails when the two drift apart. (Which queues the
 * API publishes to is in queues.json, `publishedByApi`: the TypeScript package reads it too.)
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

export function checkWiring(settings: Settings): void {
  const names = settings.functions.map((f) => f.name);
  const missing = names.filter((n) => !(n in FUNCTION_WIRING));
  const extra = Object.keys(FUNCTION_WIRING).filter((n) => !names.includes(n));
  const problems = [
    ...missing.map((n) => `function "${n}" from queues.json has no entry in FUNCTION_WIRING (src/wiring.ts)`),
    ...extra.map((n) => `FUNCTION_WIRING names "${n}", which queues.json does not declare`),
  ];
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

export function wiringFor(functionName: string): FunctionWiring {
  const w = FUNCTION_WIRING[functionName];
  if (!w) throw new Error(`no wiring for function "${functionName}"`);
  return w;
}
