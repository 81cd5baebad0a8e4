/**
 * Pulumi mocks for the program: record every registered resource and invoke, and return the
 * computed outputs AWS would return (arn, url, id). In preview mode nothing computed is returned,
 * so those outputs are unknown, as in a real `pulumi preview` of a new stack.
 */
import * as pulumi from "@pulumi/pulumi";

import { ACCOUNT, PARTITION, REGION } from "./fixtures";

export { ACCOUNT, PARTITION, REGION };

export interface RecordedResource {
  type: string;
  name: string;
  /** Inputs as the engine receives them: secrets wrapped, unknowns as the unknown sentinel. */
  inputs: Record<string, unknown>;
  /** Inputs plus the computed outputs the mock returned (what a stack policy sees after deploy). */
  state: Record<string, unknown>;
  custom: boolean;
  /** Resource options the engine receives (the mock API does not pass them on; see recordOptions). */
  options: { protect: boolean; deleteBeforeReplace: boolean; retainOnDelete: boolean; dependsOn: string[]; parent: string; onError: string[] };
  /** The URN the engine gives it (type chain of its parents, then its name): a new URN replaces the resource. */
  urn: string;
}

interface RegisterRequest {
  getType(): string;
  getName(): string;
  getProtect(): boolean | undefined;
  getDeletebeforereplace(): boolean;
  getRetainondelete(): boolean | undefined;
  getDependenciesList(): string[];
  getParent(): string;
  getHooks(): { getOnErrorList(): string[] } | undefined;
}
/** The error hooks the program registered (their names), as the engine would receive them. */
export const registeredErrorHooks: string[] = [];
const pendingOptions = new Map<string, RecordedResource["options"] & { urn: string }>();
let optionsPatched = false;

/**
 * Pulumi's MockMonitor drops the RegisterResource request's options before calling `newResource`;
 * this wraps its `registerResource` (internal API, @pulumi/pulumi pinned) to keep protect,
 * deleteBeforeReplace, retainOnDelete and the parent's URN, so the tests can assert them.
 */
function recordOptions(): void {
  if (optionsPatched) return;
  optionsPatched = true;
  const monitor = (require("@pulumi/pulumi/runtime/mocks") as { MockMonitor: { prototype: Record<string, unknown> } }).MockMonitor;
  const original = monitor.prototype["registerResource"] as (this: unknown, req: RegisterRequest, cb: unknown) => Promise<void>;
  monitor.prototype["registerResource"] = function (this: unknown, req: RegisterRequest, cb: unknown) {
    const newUrn = (this as { newUrn(parent: string, type: string, name: string): string }).newUrn;
    pendingOptions.set(`${req.getType()}::${req.getName()}`, {
      protect: req.getProtect() === true,
      deleteBeforeReplace: req.getDeletebeforereplace(),
      retainOnDelete: req.getRetainondelete() === true,
      dependsOn: req.getDependenciesList(),
      parent: req.getParent(),
      onError: req.getHooks()?.getOnErrorList() ?? [],
      urn: newUrn.call(this, req.getParent(), req.getType(), req.getName()),
    });
    return original.call(this, req, cb);
  };
  // Pulumi 3.248.0's MockMonitor says it supports error hooks (supportsErrorHooks) but has no
  // registerErrorHook: the registration would never settle. The engine's answer is an empty one.
  monitor.prototype["registerErrorHook"] = function (req: { getName(): string }, cb: (err: null, res: object) => void) {
    registeredErrorHooks.push(req.getName());
    cb(null, {});
  };
}

export interface RecordedCall {
  token: string;
  inputs: Record<string, unknown>;
}

/** Computed outputs per resource type, from the physical name. */
function computed(type: string, inputs: Record<string, unknown>, logical: string): { id: string; state: Record<string, unknown> } {
  const name = typeof inputs["name"] === "string" ? (inputs["name"] as string) : logical;
  const arn = (service: string, rest: string) => `arn:${PARTITION}:${service}:${REGION}:${ACCOUNT}:${rest}`;
  const iamPath = typeof inputs["path"] === "string" ? (inputs["path"] as string) : "/";
  switch (type) {
    case "aws:sqs/queue:Queue": {
      const url = `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
      return { id: url, state: { arn: arn("sqs", name), url } };
    }
    case "aws:lambda/function:Function":
      return {
        id: name,
        state: {
          arn: arn("lambda", `function:${name}`),
          invokeArn: `arn:${PARTITION}:apigateway:${REGION}:lambda:path/2015-03-31/functions/${arn("lambda", `function:${name}`)}/invocations`,
          qualifiedArn: arn("lambda", `function:${name}:$LATEST`),
          version: "$LATEST",
        },
      };
    case "aws:iam/role:Role":
      // An IAM ARN carries the path: role/<path><name> (path "/" by default).
      return { id: name, state: { arn: `arn:${PARTITION}:iam::${ACCOUNT}:role${iamPath}${name}`, uniqueId: `AROA${name.length}` } };
    case "aws:iam/policy:Policy":
      return { id: `arn:${PARTITION}:iam::${ACCOUNT}:policy${iamPath}${name}`, state: { arn: `arn:${PARTITION}:iam::${ACCOUNT}:policy${iamPath}${name}` } };
    case "aws:cloudwatch/logGroup:LogGroup":
      return { id: name, state: { arn: arn("logs", `log-group:${name}`) } };
    case "aws:cloudwatch/metricAlarm:MetricAlarm":
      return { id: name, state: { arn: arn("cloudwatch", `alarm:${name}`) } };
    case "aws:lambda/eventSourceMapping:EventSourceMapping":
      return { id: `esm-${logical}`, state: { uuid: `esm-${logical}`, arn: arn("lambda", `event-source-mapping:esm-${logical}`) } };
    case "aws:kms/key:Key":
      return { id: `key-${logical}`, state: { arn: arn("kms", `key/key-${logical}`), keyId: `key-${logical}` } };
    case "aws:secretsmanager/secret:Secret":
      // AWS appends a random 6-character suffix to a secret's ARN.
      return { id: arn("secretsmanager", `secret:${name}-AbCdEf`), state: { arn: arn("secretsmanager", `secret:${name}-AbCdEf`) } };
    case "aws:secretsmanager/secretVersion:SecretVersion":
      return { id: `${logical}|v1`, state: { versionId: `version-of-${logical}` } };
    case "aws:sns/topic:Topic":
      return { id: arn("sns", name), state: { arn: arn("sns", name) } };
    case "aws:scheduler/schedule:Schedule": {
      // The provider's id is "<group>/<name>"; the ARN is schedule/<group>/<name>.
      const group = typeof inputs["groupName"] === "string" ? (inputs["groupName"] as string) : "default";
      return { id: `${group}/${name}`, state: { arn: arn("scheduler", `schedule/${group}/${name}`) } };
    }
    default:
      return { id: `${logical}-id`, state: {} };
  }
}

export function createMocks(preview: boolean): {
  mocks: pulumi.runtime.Mocks;
  resources: RecordedResource[];
  calls: RecordedCall[];
} {
  recordOptions();
  const resources: RecordedResource[] = [];
  const calls: RecordedCall[] = [];
  const mocks: pulumi.runtime.Mocks = {
    newResource(args: pulumi.runtime.MockResourceArgs): { id: string | undefined; state: Record<string, unknown> } {
      const inputs = args.inputs as Record<string, unknown>;
      const c = computed(args.type, inputs, args.name);
      const state = preview ? { ...inputs } : { ...inputs, ...c.state };
      const { urn, ...options } = pendingOptions.get(`${args.type}::${args.name}`) ?? {
        protect: false,
        deleteBeforeReplace: false,
        retainOnDelete: false,
        onError: [],
        dependsOn: [],
        parent: "",
        urn: "",
      };
      resources.push({ type: args.type, name: args.name, inputs, state, custom: args.custom ?? true, options, urn });
      return { id: preview ? undefined : c.id, state };
    },
    call(args: pulumi.runtime.MockCallArgs): Record<string, unknown> {
      calls.push({ token: args.token, inputs: args.inputs as Record<string, unknown> });
      switch (args.token) {
        case "aws:index/getPartition:getPartition":
          return { partition: PARTITION, dnsSuffix: "amazonaws.com", id: PARTITION, reverseDnsPrefix: "com.amazonaws" };
        case "aws:index/getCallerIdentity:getCallerIdentity":
          return { accountId: ACCOUNT, arn: `arn:${PARTITION}:iam::${ACCOUNT}:user/test`, id: ACCOUNT, userId: "AIDATEST" };
        default:
          throw new Error(`unexpected invoke ${args.token}`);
      }
    },
  };
  return { mocks, resources, calls };
}
