/**
 * The policy pack's rules as plain functions over resources, so they can be unit-tested without
 * starting a policy server (index.ts wires them into `new PolicyPack`). A resource here is what
 * @pulumi/policy hands to a policy: `{ type, name, urn, props, propertyDependencies }`.
 *
 * Values are read with `read`, which takes a property's raw value (bypassing the policy SDK's
 * unknown-checking proxy), so that a rule can decide for itself what an unknown value means:
 * during a preview, ARNs of resources that do not exist yet are unknown. A rule that cannot judge
 * a resource because of an unknown skips it rather than guessing.
 */
import { Secret } from "@pulumi/policy";

import { MAX_RECEIVE_COUNT_LIMIT, requiredVisibilityTimeoutSeconds } from "../src/invariants";

export const TYPES = {
  queue: "aws:sqs/queue:Queue",
  redrivePolicy: "aws:sqs/redrivePolicy:RedrivePolicy",
  redriveAllowPolicy: "aws:sqs/redriveAllowPolicy:RedriveAllowPolicy",
  eventSourceMapping: "aws:lambda/eventSourceMapping:EventSourceMapping",
  function: "aws:lambda/function:Function",
} as const;

export const REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures";
/** AWS defaults when the property is not set. */
const SQS_DEFAULT_VISIBILITY_TIMEOUT = 30;
const LAMBDA_DEFAULT_TIMEOUT = 3;

export interface ResourceLike {
  type: string;
  name: string;
  urn?: string;
  props: Record<string, unknown>;
  propertyDependencies?: Record<string, ResourceLike[]>;
}

export interface Violation {
  /** URN when known, else the resource name. */
  resource: string;
  message: string;
}

// ---------------------------------------------------------------------------------------------
// Reading values: plain JSON, the engine's wire format (secret wrappers, unknown sentinels), the
// policy SDK's `Secret` class and proxies.

const SPECIAL_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
/** The engine's unknown sentinels (one per value kind) as the policy SDK passes them on. */
const UNKNOWN_SENTINELS = new Set([
  "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
  "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
  "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
  "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
  "030794c1-ac77-496b-92df-f27374a8bd58",
  "e48ece36-62e2-4504-bad9-02848725956a",
  "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
]);

/** The raw value of `obj[key]`: reads the property descriptor, so proxies neither unwrap nor throw. */
export function read(obj: unknown, key: string): unknown {
  if (typeof obj !== "object" || obj === null) return undefined;
  const d = Object.getOwnPropertyDescriptor(obj, key);
  return d === undefined ? undefined : "value" in d ? d.value : (obj as Record<string, unknown>)[key];
}

export function isSecretValue(v: unknown): boolean {
  if (v instanceof Secret) return true;
  return typeof v === "object" && v !== null && read(v, SPECIAL_SIG_KEY) === SECRET_SIG;
}

export function isUnknownValue(v: unknown): boolean {
  if (typeof v === "string") return UNKNOWN_SENTINELS.has(v);
  // @pulumi/pulumi's `unknown` placeholder (what mocks record for unknown inputs in a preview).
  return typeof v === "object" && v !== null && read(v, "__pulumiUnknown") === true;
}

/** The value inside any secret wrappers. */
export function reveal(v: unknown): unknown {
  let cur = v;
  while (isSecretValue(cur)) cur = read(cur, "value");
  return cur;
}

/** Reads a path; reports whether a secret wrapper was crossed and whether an unknown was hit. */
export function readPath(obj: unknown, path: string[]): { value: unknown; secret: boolean; unknown: boolean } {
  let cur: unknown = obj;
  let secret = false;
  for (const key of path) {
    if (isSecretValue(cur)) {
      secret = true;
      cur = reveal(cur);
    }
    if (isUnknownValue(cur)) return { value: undefined, secret, unknown: true };
    cur = read(cur, key);
  }
  if (isSecretValue(cur)) {
    secret = true;
    cur = reveal(cur);
  }
  return { value: cur, secret, unknown: isUnknownValue(cur) };
}

function idOf(r: ResourceLike): string {
  return r.urn ?? r.name;
}

function parseJsonObject(v: unknown): Record<string, unknown> | undefined {
  const raw = reveal(v);
  if (typeof raw === "object" && raw !== null) return raw as Record<string, unknown>;
  if (typeof raw !== "string" || raw === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function knownString(r: ResourceLike, key: string): string | undefined {
  const { value, unknown } = readPath(r.props, [key]);
  return !unknown && typeof value === "string" ? value : undefined;
}

function dependencies(r: ResourceLike, key: string): ResourceLike[] {
  return r.propertyDependencies?.[key] ?? [];
}

/** Finds the resource of `type` that `ref` (an ARN, URL, id or name) points at, or that `r.key` depends on. */
function referenced(
  resources: ResourceLike[],
  r: ResourceLike,
  key: string,
  type: string,
  fields: string[],
): ResourceLike | undefined {
  const dep = dependencies(r, key).find((d) => d.type === type);
  if (dep) return dep;
  const ref = knownString(r, key);
  if (ref === undefined) return undefined;
  return resources.find((x) => x.type === type && fields.some((f) => knownString(x, f) === ref));
}

// ---------------------------------------------------------------------------------------------
// Rule: every SQS source queue has a DLQ with maxReceiveCount <= MAX_RECEIVE_COUNT_LIMIT.

/** Queues that serve as a DLQ: targets of redrive policies, and queues whose redrive-allow policy lets another use them. */
export function deadLetterQueues(resources: ResourceLike[]): Set<ResourceLike> {
  const queues = resources.filter((r) => r.type === TYPES.queue);
  const dlqs = new Set<ResourceLike>();
  const byArn = (arn: unknown) => queues.find((q) => typeof arn === "string" && knownString(q, "arn") === arn);
  const byUrl = (url: unknown) =>
    queues.find((q) => typeof url === "string" && (knownString(q, "url") === url || knownString(q, "id") === url));

  for (const r of resources) {
    if (r.type === TYPES.queue || r.type === TYPES.redrivePolicy) {
      for (const d of dependencies(r, "redrivePolicy")) if (d.type === TYPES.queue && d !== r) dlqs.add(d);
      const target = byArn(parseJsonObject(read(r.props, "redrivePolicy"))?.["deadLetterTargetArn"]);
      if (target) dlqs.add(target);
    }
    // A redrive-allow policy that lets some queue use its queue as a DLQ (byQueue, allowAll); a
    // source queue's denyAll says the opposite.
    if (r.type === TYPES.redriveAllowPolicy && parseJsonObject(read(r.props, "redriveAllowPolicy"))?.["redrivePermission"] !== "denyAll") {
      for (const d of dependencies(r, "queueUrl")) if (d.type === TYPES.queue) dlqs.add(d);
      const q = byUrl(reveal(read(r.props, "queueUrl")));
      if (q) dlqs.add(q);
    }
    if (r.type === TYPES.queue) {
      const allow = parseJsonObject(read(r.props, "redriveAllowPolicy"));
      const permission = allow?.["redrivePermission"];
      if (permission === "byQueue" || permission === "allowAll") dlqs.add(r);
    }
  }
  return dlqs;
}

export function checkSourceQueuesHaveDlq(resources: ResourceLike[]): Violation[] {
  const dlqs = deadLetterQueues(resources);
  const violations: Violation[] = [];
  for (const q of resources.filter((r) => r.type === TYPES.queue && !dlqs.has(r))) {
    let policyValue = read(q.props, "redrivePolicy");
    if (policyValue === undefined || policyValue === "") {
      // The redrive policy may be a separate aws.sqs.RedrivePolicy resource.
      const separate = resources.find(
        (r) =>
          r.type === TYPES.redrivePolicy &&
          (dependencies(r, "queueUrl").includes(q) ||
            [knownString(q, "url"), knownString(q, "id")].includes(knownString(r, "queueUrl"))),
      );
      policyValue = separate ? read(separate.props, "redrivePolicy") : undefined;
    }
    if (isUnknownValue(reveal(policyValue))) continue; // computed from the DLQ's ARN: judged once known
    const policy = parseJsonObject(policyValue);
    if (!policy) {
      violations.push({ resource: idOf(q), message: `SQS queue "${q.name}" has no redrive policy (dead-letter queue).` });
      continue;
    }
    const target = policy["deadLetterTargetArn"];
    if (typeof target !== "string" || target === "") {
      violations.push({ resource: idOf(q), message: `SQS queue "${q.name}": redrive policy names no deadLetterTargetArn.` });
    }
    const count = policy["maxReceiveCount"];
    const n = typeof count === "string" ? Number(count) : count;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_RECEIVE_COUNT_LIMIT) {
      violations.push({
        resource: idOf(q),
        message: `SQS queue "${q.name}": maxReceiveCount must be between 1 and ${MAX_RECEIVE_COUNT_LIMIT}, got ${JSON.stringify(count)}.`,
      });
    }
  }
  return violations;
}

// ---------------------------------------------------------------------------------------------
// Rule: every SQS event source mapping reports batch item failures.

/** True for mappings whose source is SQS (or unknown yet, with none of the stream/broker settings). */
export function isSqsMapping(props: Record<string, unknown>): boolean {
  const arn = readPath(props, ["eventSourceArn"]);
  if (!arn.unknown && typeof arn.value === "string") return /^arn:[^:]+:sqs:/.test(arn.value);
  const streamOrBroker = ["startingPosition", "topics", "queues", "selfManagedEventSource", "amazonManagedKafkaEventSourceConfig"];
  return streamOrBroker.every((k) => read(props, k) === undefined);
}

export function checkEsmReportsBatchItemFailures(r: ResourceLike): Violation[] {
  if (r.type !== TYPES.eventSourceMapping || !isSqsMapping(r.props)) return [];
  const types = readPath(r.props, ["functionResponseTypes"]);
  if (types.unknown) return [];
  const list = Array.isArray(types.value) ? types.value.map(reveal) : [];
  return list.includes(REPORT_BATCH_ITEM_FAILURES)
    ? []
    : [
        {
          resource: idOf(r),
          message:
            `SQS event source mapping "${r.name}" must set functionResponseTypes ["${REPORT_BATCH_ITEM_FAILURES}"] ` +
            `so one failed message does not make the whole batch retry.`,
        },
      ];
}

// ---------------------------------------------------------------------------------------------
// Rule: visibility timeout >= 6 x function timeout + batching window, for every SQS mapping.

function knownNumber(props: Record<string, unknown>, key: string, fallback: number): number | undefined {
  const { value, unknown } = readPath(props, [key]);
  if (unknown) return undefined;
  if (value === undefined || value === null) return fallback;
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? n : undefined;
}

export function checkVisibilityCoversTimeout(resources: ResourceLike[]): Violation[] {
  const violations: Violation[] = [];
  for (const esm of resources.filter((r) => r.type === TYPES.eventSourceMapping && isSqsMapping(r.props))) {
    const queue = referenced(resources, esm, "eventSourceArn", TYPES.queue, ["arn"]);
    const fn = referenced(resources, esm, "functionName", TYPES.function, ["arn", "name", "qualifiedArn", "id"]);
    if (!queue || !fn) continue; // the queue or function is not in this stack: nothing to compare
    const visibility = knownNumber(queue.props, "visibilityTimeoutSeconds", SQS_DEFAULT_VISIBILITY_TIMEOUT);
    const timeout = knownNumber(fn.props, "timeout", LAMBDA_DEFAULT_TIMEOUT);
    const window = knownNumber(esm.props, "maximumBatchingWindowInSeconds", 0);
    if (visibility === undefined || timeout === undefined || window === undefined) continue;
    const required = requiredVisibilityTimeoutSeconds(timeout, window);
    if (visibility < required) {
      violations.push({
        resource: idOf(queue),
        message:
          `SQS queue "${queue.name}" has visibility timeout ${visibility} s but its consumer "${fn.name}" runs up to ` +
          `${timeout} s with a ${window} s batching window: it needs >= 6 x ${timeout} + ${window} = ${required} s.`,
      });
    }
  }
  return violations;
}

// ---------------------------------------------------------------------------------------------
// Rule: no plaintext secrets in function environments.

/** Names that hold credentials whatever their value looks like. */
const SECRET_NAME = /(^|_)(KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)($|_)|SECRET|TOKEN|PASSWORD/i;
/** Connection strings (`*_URI`, `*_URL`, `*_DSN`) are secret when they carry `user:password@`. */
const CONNECTION_NAME = /_(URI|URL|DSN)$/i;
const URL_WITH_CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s:]+:[^/@\s]+@/i;

export function isSensitiveVariable(name: string, value: unknown): boolean {
  // A secret's ARN (`*_SECRET_ARN`) and the extension's own settings name secrets without being one.
  if (typeof value === "string" && (ARN.test(value) || EXTENSION_SETTINGS.test(name))) return false;
  if (SECRET_NAME.test(name)) return true;
  return CONNECTION_NAME.test(name) && typeof value === "string" && URL_WITH_CREDENTIALS.test(value);
}

/** Names of sensitive environment variables whose value is plaintext (neither secret nor unknown). */
export function plaintextSecretVariables(functionProps: Record<string, unknown>): string[] {
  const vars = readPath(functionProps, ["environment", "variables"]);
  if (vars.secret || vars.unknown || typeof vars.value !== "object" || vars.value === null) return [];
  const found: string[] = [];
  for (const name of Object.keys(vars.value)) {
    const raw = read(vars.value, name);
    if (isSecretValue(raw) || isUnknownValue(raw)) continue;
    if (typeof raw === "string" && raw !== "" && isSensitiveVariable(name, raw)) found.push(name);
  }
  return found.sort();
}

export function checkNoPlaintextSecrets(r: ResourceLike): Violation[] {
  if (r.type !== TYPES.function) return [];
  const names = plaintextSecretVariables(r.props);
  return names.length === 0
    ? []
    : [
        {
          resource: idOf(r),
          message:
            `Lambda function "${r.name}" has plaintext secrets in its environment: ${names.join(", ")}. ` +
            `Read them with config.requireSecret (pulumi config set --secret ...).`,
        },
      ];
}

/**
 * Remediation for the policy server, where props keep secrets as `Secret` objects: wraps every
 * plaintext sensitive variable in a `Secret` so the engine encrypts it. Returns undefined when
 * nothing needed wrapping (the resource is left untouched).
 */
export function secretPlaintextVariables(functionProps: Record<string, unknown>): Record<string, unknown> | undefined {
  const names = plaintextSecretVariables(functionProps);
  if (names.length === 0) return undefined;
  const vars = readPath(functionProps, ["environment", "variables"]).value as Record<string, unknown>;
  for (const name of names) vars[name] = new Secret(read(vars, name));
  return functionProps;
}

// ---------------------------------------------------------------------------------------------
// Rule (mandatory): no secret VALUE in any function environment, wrapped as a Pulumi secret or not.
// On AWS a secret is read from Secrets Manager at init; the environment carries only its ARN
// (docs/design.md "Secrets and candidate data"). Anyone with lambda:GetFunctionConfiguration reads an
// environment, so even a Pulumi secret there is a leak.

/** A name that announces a credential: a KEY, SECRET, PASSWORD or TOKEN word (plural too). */
const CREDENTIAL_NAME = /(^|_)(API_?KEY|KEY|SECRETS?|PASSWORD|PASSWD|PASSPHRASE|TOKEN|CREDENTIALS?)($|_)/i;
/** Settings of the AWS Parameters and Secrets Lambda Extension: names with SECRETS, values that are not. */
const EXTENSION_SETTINGS = /^(PARAMETERS_SECRETS_EXTENSION_[A-Z_]+|SECRETS_MANAGER_(TTL|TIMEOUT_MILLIS)|SSM_PARAMETER_STORE_[A-Z_]+)$/;
const ARN = /^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{0,12}:\S+$/;
/** userinfo with a password in any URI: `scheme://user:password@`. */
const URI_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/@\s:]+:[^/@\s]+@/i;
/** OpenAI secret keys (`sk-...`, `sk-proj-...`). */
const OPENAI_KEY = /(^|[^A-Za-z0-9])sk-[A-Za-z0-9_-]{8,}/;

/** Why a variable's value looks like a secret, or undefined. Never returns the value. */
export function secretLookingReason(name: string, value: string): string | undefined {
  if (URI_PASSWORD.test(value)) return "a URI with a password (user:password@)";
  if (OPENAI_KEY.test(value)) return "an OpenAI key (sk-...)";
  if (CREDENTIAL_NAME.test(name) && !EXTENSION_SETTINGS.test(name) && !ARN.test(value)) {
    return "a credential name whose value is not an ARN";
  }
  return undefined;
}

export function checkNoSecretValuesInFunctionEnv(r: ResourceLike): Violation[] {
  if (r.type !== TYPES.function) return [];
  const vars = readPath(r.props, ["environment", "variables"]);
  if (vars.unknown || typeof vars.value !== "object" || vars.value === null) return [];
  const found: string[] = [];
  for (const name of Object.keys(vars.value).sort()) {
    const raw = reveal(read(vars.value, name));
    if (isUnknownValue(raw) || typeof raw !== "string" || raw === "") continue;
    const reason = secretLookingReason(name, raw);
    if (reason) found.push(`${name} (${reason})`);
  }
  return found.length === 0
    ? []
    : [
        {
          resource: idOf(r),
          message:
            `Lambda function "${r.name}" has secret-looking values in its environment: ${found.join(", ")}. ` +
            `Store the value in Secrets Manager and pass its ARN (<NAME>_SECRET_ARN); see infra-pulumi/README.md "Secrets".`,
        },
      ];
}

// ---------------------------------------------------------------------------------------------
// Rules for the stage's own resources: the key, the secrets and the VPC endpoints carry policies of their own that
// name their principals and resources. A policy still unknown (a preview, before the ARNs it names
// exist) is judged once known.

export const DATA_TYPES = {
  kmsKey: "aws:kms/key:Key",
  kmsKeyPolicy: "aws:kms/keyPolicy:KeyPolicy",
  secret: "aws:secretsmanager/secret:Secret",
  secretPolicy: "aws:secretsmanager/secretPolicy:SecretPolicy",
  vpcEndpoint: "aws:ec2/vpcEndpoint:VpcEndpoint",
  vpcEndpointPolicy: "aws:ec2/vpcEndpointPolicy:VpcEndpointPolicy",
} as const;

interface PolicyStatementLike {
  Effect?: unknown;
  Principal?: unknown;
  Action?: unknown;
  NotAction?: unknown;
  Resource?: unknown;
  Condition?: unknown;
}

/**
 * The policy of `r`: that of a separate policy resource attached to it (applied after `r` is
 * created, it is the one that holds), else its own `policy` property (the stage key is created with
 * one, which its KeyPolicy resource then replaces).
 */
function attachedPolicy(
  resources: ResourceLike[],
  r: ResourceLike,
  policyType: string,
  refKey: string,
  ownFields: string[],
): { statements: PolicyStatementLike[] | undefined; unknown: boolean } {
  const own = read(r.props, "policy");
  const attached = resources.find(
    (p) =>
      p.type === policyType &&
      (dependencies(p, refKey).includes(r) || ownFields.some((f) => knownString(r, f) !== undefined && knownString(r, f) === knownString(p, refKey))),
  );
  const value = attached ? read(attached.props, "policy") : own;
  if (isUnknownValue(reveal(value))) return { statements: undefined, unknown: true };
  const doc = parseJsonObject(value);
  if (!doc) return { statements: undefined, unknown: false };
  const st = doc["Statement"];
  return { statements: (Array.isArray(st) ? st : [st]).filter((s) => typeof s === "object" && s !== null) as PolicyStatementLike[], unknown: false };
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

/** The AWS principals of a statement ("*" for everyone, in either form). */
function principals(s: PolicyStatementLike): string[] {
  if (s.Principal === "*") return ["*"];
  const p = s.Principal as Record<string, unknown> | undefined;
  return list(p?.["AWS"]).map(String);
}

const ACCOUNT_ROOT = /^(\d{12}|arn:aws[a-z-]*:iam::\d{12}:root)$/;

/** Rule: a KMS key has a key policy of its own, naming its administrators, never the account root or everyone. */
export function checkKmsKeyPolicies(resources: ResourceLike[]): Violation[] {
  const violations: Violation[] = [];
  for (const key of resources.filter((r) => r.type === DATA_TYPES.kmsKey)) {
    const { statements, unknown } = attachedPolicy(resources, key, DATA_TYPES.kmsKeyPolicy, "keyId", ["keyId", "id", "arn"]);
    if (unknown) continue;
    if (!statements) {
      violations.push({
        resource: idOf(key),
        message: `KMS key "${key.name}" has AWS's default key policy (the account root, i.e. any IAM policy of the account, may do kms:*): attach a key policy naming its administrators and users.`,
      });
      continue;
    }
    const allows = statements.filter((s) => s.Effect === "Allow");
    for (const s of allows) {
      const broad = principals(s).filter((p) => p === "*" || ACCOUNT_ROOT.test(p));
      if (broad.length > 0) {
        violations.push({
          resource: idOf(key),
          message: `KMS key "${key.name}": its key policy allows ${broad.join(", ")} (the account root or everyone); name IAM roles or users instead.`,
        });
      }
    }
    const administers = allows.some(
      (s) => principals(s).length > 0 && list(s.Action).some((a) => a === "kms:Put*" || a === "kms:PutKeyPolicy"),
    );
    if (!administers) {
      violations.push({ resource: idOf(key), message: `KMS key "${key.name}": its key policy names no administrator (kms:PutKeyPolicy).` });
    }
  }
  return violations;
}

/** Rule: every secret has a resource policy that denies every principal but the ones it names. */
export function checkSecretPolicies(resources: ResourceLike[]): Violation[] {
  const violations: Violation[] = [];
  for (const secret of resources.filter((r) => r.type === DATA_TYPES.secret)) {
    const { statements, unknown } = attachedPolicy(resources, secret, DATA_TYPES.secretPolicy, "secretArn", ["arn", "id"]);
    if (unknown) continue;
    const denyOthers = (statements ?? []).some((s) => {
      if (s.Effect !== "Deny" || !principals(s).includes("*")) return false;
      const cond = (s.Condition ?? {}) as Record<string, Record<string, unknown>>;
      return ["StringNotEquals", "ArnNotEquals", "StringNotLike", "ArnNotLike"].some((op) => cond[op]?.["aws:PrincipalArn"] !== undefined);
    });
    const allowsEveryone = (statements ?? []).some((s) => s.Effect === "Allow" && principals(s).includes("*"));
    if (!denyOthers || allowsEveryone) {
      violations.push({
        resource: idOf(secret),
        message: `Secret "${secret.name}" needs a resource policy that denies every principal but its readers and administrators (Deny, Principal *, aws:PrincipalArn not in the list)${allowsEveryone ? " and allows no one broadly" : ""}.`,
      });
    }
  }
  return violations;
}

/** Rule: an interface endpoint carries a policy naming exact actions on exact ARNs (not AWS's default `*` on `*`). */
export function checkVpcEndpointPolicies(resources: ResourceLike[]): Violation[] {
  const violations: Violation[] = [];
  for (const ep of resources.filter((r) => r.type === DATA_TYPES.vpcEndpoint)) {
    const kind = knownString(ep, "vpcEndpointType");
    if (kind !== undefined && kind !== "Interface") continue;
    const { statements, unknown } = attachedPolicy(resources, ep, DATA_TYPES.vpcEndpointPolicy, "vpcEndpointId", ["id"]);
    if (unknown) continue;
    if (!statements) {
      violations.push({
        resource: idOf(ep),
        message: `VPC endpoint "${ep.name}" has the default endpoint policy (any principal, any action, any resource): scope it to the stage's ARNs.`,
      });
      continue;
    }
    for (const s of statements.filter((x) => x.Effect === "Allow")) {
      const wildAction = s.NotAction !== undefined || list(s.Action).some((a) => String(a) === "*" || String(a).endsWith(":*"));
      const wildResource = list(s.Resource).some((r) => String(r) === "*" || String(r).endsWith(":*"));
      if (wildAction || wildResource) {
        violations.push({
          resource: idOf(ep),
          message: `VPC endpoint "${ep.name}": its policy allows ${wildAction ? "every action" : "every resource"}; name the actions and the stage's ARNs.`,
        });
      }
    }
  }
  return violations;
}
