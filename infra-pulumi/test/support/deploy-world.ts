/**
 * The world docs/deploy.md's blocks run against (infra-pulumi/test/deploy-doc.test.ts): stand-in
 * `pulumi` and `aws` commands that forward to this process, which keeps their state (logins,
 * backends, stacks, the bootstrap's keys, the stage's deployed key policy) and decides every AWS
 * request with the IAM policy simulator (rehearsal/simulate.ts) as the principal making it.
 *
 * What the stand-ins do where the documented steps depend on it, and where that was read:
 * - a `file://` backend needs an existing directory: pulumi/pulumi v3.248.0
 *   pkg/backend/diy/backend.go, `massageBlobPath` (only `no_tmp_dir` is set on the gocloud URL;
 *   gocloud.dev/blob/fileblob's OpenBucket refuses a missing directory unless `create_dir`);
 * - the first use of an S3 backend writes `.pulumi/meta.yaml`, every later one reads it:
 *   pkg/backend/diy/meta.go, `ensurePulumiMeta`;
 * - `PULUMI_BACKEND_URL` overrides the login for one command; `pulumi whoami --verbose` prints
 *   "Backend URL: ...": pkg/cmd/pulumi/whoami/whoami.go;
 * - the passphrase provider without a terminal needs PULUMI_CONFIG_PASSPHRASE(_FILE):
 *   pkg/secrets/passphrase/manager.go ("passphrase must be set with ...");
 * - `pulumi up` without a terminal needs --yes: pkg/backend/backenderr/backenderr.go (the test's
 *   FAKE_TERMINAL_ANSWER=yes stands for the person answering the prompt);
 * - the awskms provider encrypts the stack's data key and config secrets with the key (kms:Encrypt)
 *   and decrypts them (kms:Decrypt) as the caller: pkg/secrets/cloud/manager.go;
 * - KMS refuses a key policy that would not let the principal applying it apply the next one,
 *   unless BypassPolicyLockoutSafetyCheck (https://docs.aws.amazon.com/kms/latest/APIReference/API_PutKeyPolicy.html):
 *   the bootstrap's keys keep the check;
 * - the AWS provider's requests per resource type and phase: rehearsal/requests.json (read from
 *   hashicorp/terraform-provider-aws at the commit it names), made as the caller, the read-backs
 *   after a policy write included (kms `updateKeyPolicy`/`findKeyInfo`, secretsmanager
 *   `PutResourcePolicy` then `GetResourcePolicy`);
 * - `pulumi config set` refuses, without --plaintext or --secret, a plaintext value for a key whose
 *   name matches passwd|pass|password|pwd|secret|token when the value (its first 16 characters)
 *   looks random to zxcvbn; --secret, --plaintext and --type are mutually exclusive
 *   (pkg/cmd/pulumi/config/config.go: `looksLikeSecret`, lines 1371-1399, its use at 831-836, and
 *   MarkFlagsMutuallyExclusive at 741). The stand-in refuses every such key's plaintext value
 *   without the entropy test, a superset of the real refusal: zxcvbn is not reproduced here;
 * - `pulumi stack output` reads the snapshot with its secrets manager
 *   (pkg/cmd/pulumi/stack/stack_output.go, `SnapshotStackOutputs`), so a passphrase stack needs
 *   the passphrase there too;
 * - `pulumi config get --json` prints an object, `{"value": <the value as text>, "objectValue": <a
 *   list's or map's parsed value>, "secret": <bool>}` (pkg/cmd/pulumi/config/config.go,
 *   `configValueJSON`), never the bare list;
 * - `pulumi version` prints the CLI's version, `v<semver>` (the stand-in is the pinned CLI,
 *   PULUMI_CLI_VERSION);
 * - GitHub creates an environment the first time a job names it, with no protection rule
 *   (https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#jobsjob_idenvironment);
 *   the dev deploy job reads `vars.AWS_DEPLOY_ROLE_ARN` from it, and deploy-prod, which needs it,
 *   then names `production` (.github/workflows/infra.yml).
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as yaml from "js-yaml";

import { breakGlassProblems, outputNames, stageFacts, withBreakGlassRoles } from "../../../infra-bootstrap/src/bootstrap";
import {
  apiPublishPolicyName,
  BOOTSTRAP_PATH,
  deployRoleArn,
  deployRolePolicies,
  PRINCIPAL_ARN,
  opsPolicyName,
  previewRoleArn,
  secretsProviderKeyPolicy,
  stateKeyPolicy,
} from "../../../infra-bootstrap/src/policies";
import { actionFacts, decide, type Decision, type Doc, TAG_WRITES } from "../rehearsal/simulate";
import type { Github } from "./github";
import type { RecordedResource } from "./mocks";

export const P = "aws";
/** The stand-in's `pulumi version`: the CLI the doc asks for (the @pulumi/pulumi of package.json). */
export const PULUMI_CLI_VERSION = (JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as { dependencies: Record<string, string> }).dependencies["@pulumi/pulumi"]!;
/** pulumi/pulumi v3.248.0 pkg/cmd/pulumi/config/config.go, keyPattern. */
const SECRET_KEY_NAME = /passwd|pass|password|pwd|secret|token/i;
/** The newest extension layer version AWS has in the stand-in (the doc's bump goes to 20). */
export const LATEST_LAYER = 20;
export const ADMINISTRATOR_ACCESS: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "*", Resource: "*" }] };
const ADMIN_IDENTITY = { docs: [ADMINISTRATOR_ACCESS], text: JSON.stringify([ADMINISTRATOR_ACCESS]) };
const NO_IDENTITY = { docs: [] as Doc[], text: "[]" };
/** AWS's default key policy: https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html */
const defaultKeyPolicy = (account: string): Doc => ({
  Version: "2012-10-17",
  Statement: [{ Sid: "Enable IAM User Permissions", Effect: "Allow", Principal: { AWS: `arn:${P}:iam::${account}:root` }, Action: "kms:*", Resource: "*" }],
});

type Phase = "create" | "read" | "update" | "delete";
interface RequestsFile {
  types: Record<string, { requests: Record<Phase, [string, string][]> }>;
}

export interface Decided {
  step: string;
  principal: string;
  action: string;
  resource: string;
  decision: Decision;
}

interface StackState {
  project: string;
  outputs?: Record<string, unknown>;
  deployed: boolean;
}

interface BootstrapState {
  region: string;
  repository: string;
  stages: string[];
  bucket: string;
  stateKey: string;
  stateKeyPolicy: Doc;
  secretsKeys: Record<string, { arn: string; policy: Doc }>;
  /** The layer version each deploy role may read: the stage file's when the bootstrap last ran. */
  layers: Record<string, string>;
}

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface CiRun {
  stage: string;
  environmentCreatedOnFirstUse: boolean;
  ok: boolean;
  detail: string;
}

/** The program's recorded resources for a stage (one mocked run of dev; other stages by renaming). */
export type ProgramFor = (stage: string) => RecordedResource[];

export class World {
  readonly decided: Decided[] = [];
  readonly ci: CiRun[] = [];
  readonly npm: string[] = [];
  step = "";
  private logins = new Map<string, string>();
  private selected = new Map<string, string>();
  private backends = new Map<string, Map<string, StackState>>();
  private metaWritten = new Set<string>();
  private identities = new Map<string, { docs: Doc[]; text: string }>();
  private decisions = new Map<string, Decision>();
  bootstrap: BootstrapState | undefined;
  /** Per stage: the key policy and secret policies the last successful `up` left. */
  readonly stages = new Map<string, { keyPolicy: Doc; secretPolicies: Record<string, Doc> }>();

  constructor(
    readonly account: string,
    readonly repoRoot: string,
    readonly fakeState: string,
    /** IAM roles of people: name -> ARN (path included); all have AdministratorAccess. */
    readonly people: Record<string, string>,
    private readonly program: ProgramFor,
    private readonly requests: RequestsFile,
    /** The break-glass list the program ran with (its policies are rewritten to the stack file's). */
    private readonly programAdmins: string[],
  ) {}

  /** A policy of the program's run, with the stack file's administrators in place of the run's. */
  private withAdmins(text: string, admins: string[]): Doc {
    const from = this.programAdmins.map((a) => JSON.stringify(a)).join(",");
    if (!text.includes(from)) throw new Error("the program's policy does not name its administrators as the doc test expects");
    return JSON.parse(text.split(from).join(admins.map((a) => JSON.stringify(a)).join(","))) as Doc;
  }

  // -------------------------------------------------------------------------------------------
  // Principals and decisions.

  private roleArnOf(name: string): string | undefined {
    if (this.people[name]) return this.people[name];
    const stage = this.bootstrap?.stages.find((s) => name === `sophia-bootstrap-${s}-deploy`);
    return stage ? deployRoleArn(P, this.account, stage) : undefined;
  }

  /** The principal of an assumed-role session ARN, as IAM evaluates it (the role's ARN). */
  principalOf(session: string): string {
    const m = /^arn:aws:sts::\d{12}:assumed-role\/([^/]+)\//.exec(session);
    const arn = m ? this.roleArnOf(m[1]!) : undefined;
    if (!arn) throw new Error(`unknown principal ${session}`);
    return arn;
  }

  sessionOf(roleArn: string): string {
    return `arn:aws:sts::${this.account}:assumed-role/${roleArn.split("/").pop()}/session`;
  }

  /** A principal's identity policies, and their JSON (part of a decision's cache key). */
  private identityOf(principal: string): { docs: Doc[]; text: string } {
    if (Object.values(this.people).includes(principal)) return ADMIN_IDENTITY;
    const b = this.bootstrap;
    const stage = b?.stages.find((s) => principal === deployRoleArn(P, this.account, s));
    if (!b || !stage) return NO_IDENTITY;
    const input: Parameters<typeof deployRolePolicies>[0] = {
      scope: { partition: P, region: b.region, account: this.account, stage, layerArn: b.layers[stage]!, vpc: false },
      state: { bucket: b.bucket, keyArn: b.stateKey },
      secretsKeyArn: b.secretsKeys[stage]!.arn,
    };
    // Rendered once per input: every request of a deploy as the role asks for them.
    const key = JSON.stringify(input);
    let identity = this.identities.get(key);
    if (!identity) {
      const p = deployRolePolicies(input);
      const docs = [p.inline, ...p.managed] as unknown as Doc[];
      identity = { docs, text: JSON.stringify(docs) };
      this.identities.set(key, identity);
    }
    return identity;
  }

  async decide(principal: string, action: string, resource: string, opts: { context?: Record<string, string | string[]>; resourcePolicy?: Doc | undefined } = {}): Promise<Decision> {
    const identity = this.identityOf(principal);
    // The simulator's answer depends on these inputs only: a deploy repeats most of the previous one's requests.
    const key = JSON.stringify([principal, action, resource, opts.context ?? {}, opts.resourcePolicy ?? null]) + identity.text;
    let decision = this.decisions.get(key);
    if (decision === undefined) {
      decision = (await decide({ principal, action, resource, context: opts.context ?? {} }, { identity: identity.docs, resourcePolicy: opts.resourcePolicy })).decision;
      this.decisions.set(key, decision);
    }
    this.decided.push({ step: this.step, principal, action, resource, decision });
    return decision;
  }

  private denied(principal: string, action: string, resource: string): string {
    return `AccessDeniedException: User: ${principal} is not authorized to perform: ${action} on resource: ${resource}`;
  }

  // -------------------------------------------------------------------------------------------
  // The CLIs.

  async cli(tool: string, argv: string[], cwd: string, env: Record<string, string>, stdin: string): Promise<CliResult> {
    try {
      if (tool === "aws") return await this.aws(argv, env);
      if (tool === "pulumi") return await this.pulumi(argv, cwd, env, stdin);
      return { stdout: "", stderr: `unknown stand-in ${tool}\n`, code: 3 };
    } catch (e) {
      return { stdout: "", stderr: `error: ${(e as Error).message}\n`, code: 255 };
    }
  }

  private async aws(argv: string[], env: Record<string, string>): Promise<CliResult> {
    const session = env["FAKE_PRINCIPAL"]!;
    const principal = this.principalOf(session);
    const opt = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
    const ok = (stdout: string): CliResult => ({ stdout: `${stdout}\n`, stderr: "", code: 0 });
    const fail = (op: string, code: string, message: string): CliResult => ({ stdout: "", stderr: `\nAn error occurred (${code}) when calling the ${op} operation: ${message}\n`, code: 254 });
    const [service, command] = argv;
    if (service === "sts" && command === "get-caller-identity") {
      const q = opt("--query");
      if (q === "Arn") return ok(session);
      if (q === "Account") return ok(this.account);
      return ok(JSON.stringify({ UserId: "AROAEXAMPLE:session", Account: this.account, Arn: session }));
    }
    if (service === "iam" && command === "get-role") {
      const name = opt("--role-name")!;
      const arn = this.roleArnOf(name) ?? `arn:${P}:iam::${this.account}:role/${name}`;
      if ((await this.decide(principal, "iam:GetRole", arn)) !== "Allowed") return fail("GetRole", "AccessDenied", this.denied(principal, "iam:GetRole", arn));
      if (!this.roleArnOf(name)) return fail("GetRole", "NoSuchEntity", `The role with name ${name} cannot be found.`);
      return ok(arn);
    }
    if (service === "lambda" && command === "get-layer-version-by-arn") {
      const arn = opt("--arn")!;
      // AWS's extension layer is shared with every account by its layer policy.
      const layerPolicy: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "lambda:GetLayerVersion", Resource: arn }] };
      if ((await this.decide(principal, "lambda:GetLayerVersion", arn, { resourcePolicy: layerPolicy })) !== "Allowed") {
        return fail("GetLayerVersionByArn", "AccessDeniedException", this.denied(principal, "lambda:GetLayerVersion", arn));
      }
      if (Number(arn.split(":").pop()) > LATEST_LAYER) return fail("GetLayerVersionByArn", "ResourceNotFoundException", "The resource you requested does not exist.");
      return ok(opt("--query") === "CompatibleArchitectures" ? "arm64" : arn);
    }
    return { stdout: "", stderr: `the aws stand-in does not know: aws ${argv.join(" ")}\n`, code: 252 };
  }

  // -- pulumi --------------------------------------------------------------------------------

  private projectOf(cwd: string): { dir: string; name: string } {
    for (let dir = cwd; ; dir = path.dirname(dir)) {
      const file = path.join(dir, "Pulumi.yaml");
      if (fs.existsSync(file)) return { dir, name: (yaml.load(fs.readFileSync(file, "utf8")) as { name: string }).name };
      if (dir === path.dirname(dir)) throw new Error("no Pulumi.yaml found; run pulumi in a project directory");
    }
  }

  private async openBackend(url: string, session: string | undefined): Promise<Map<string, StackState>> {
    if (url.startsWith("file://")) {
      const dir = url.slice("file://".length).split("?")[0]!;
      if (!fs.existsSync(dir)) throw new Error(`problem logging in: unable to open bucket ${url}: open ${dir}: no such file or directory`);
    } else if (url.startsWith("s3://")) {
      const bucket = url.slice("s3://".length).split("?")[0]!;
      if (!this.bootstrap || this.bootstrap.bucket !== bucket) throw new Error(`problem logging in: NoSuchBucket: ${bucket}`);
      if (!session) throw new Error("no AWS credentials");
      const principal = this.principalOf(session);
      const meta = `arn:${P}:s3:::${bucket}/.pulumi/meta.yaml`;
      if (this.metaWritten.has(bucket)) {
        if ((await this.decide(principal, "s3:GetObject", meta)) !== "Allowed") throw new Error(this.denied(principal, "s3:GetObject", meta));
      } else {
        if ((await this.decide(principal, "s3:PutObject", meta)) !== "Allowed") throw new Error(`could not write .pulumi/meta.yaml: ${this.denied(principal, "s3:PutObject", meta)}`);
        await this.stateWrite(principal, bucket);
        this.metaWritten.add(bucket);
      }
    }
    if (!this.backends.has(url)) this.backends.set(url, new Map());
    return this.backends.get(url)!;
  }

  /** An object written to the state bucket: SSE-KMS under the state key, through S3. */
  private async stateWrite(principal: string, bucket: string): Promise<void> {
    const b = this.bootstrap!;
    const ctx = { "kms:ViaService": `s3.${b.region}.amazonaws.com` };
    if ((await this.decide(principal, "kms:GenerateDataKey", b.stateKey, { context: ctx, resourcePolicy: b.stateKeyPolicy })) !== "Allowed") {
      throw new Error(`writing to ${bucket}: ${this.denied(principal, "kms:GenerateDataKey", b.stateKey)}`);
    }
  }

  private keyOfProvider(provider: string): { arn: string; policy: Doc } {
    const m = /^awskms:\/\/alias\/sophia-(.+)-pulumi-secrets\?/.exec(provider);
    const key = m && this.bootstrap?.secretsKeys[m[1]!];
    if (!key) throw new Error(`secrets provider ${provider}: NotFoundException: Alias not found`);
    return key;
  }

  private readStackFile(file: string): Record<string, unknown> {
    return fs.existsSync(file) ? ((yaml.load(fs.readFileSync(file, "utf8")) as Record<string, unknown> | null) ?? {}) : {};
  }

  private async crypt(op: "Encrypt" | "Decrypt", doc: Record<string, unknown>, principal: string, env: Record<string, string>): Promise<void> {
    const provider = doc["secretsprovider"];
    if (typeof provider === "string" && provider.startsWith("awskms://")) {
      const key = this.keyOfProvider(provider);
      if ((await this.decide(principal, `kms:${op}`, key.arn, { resourcePolicy: key.policy })) !== "Allowed") throw new Error(`secrets provider: ${this.denied(principal, `kms:${op}`, key.arn)}`);
    } else if (!env["PULUMI_CONFIG_PASSPHRASE"] && !env["PULUMI_CONFIG_PASSPHRASE_FILE"]) {
      throw new Error("passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables");
    }
  }

  private async pulumi(argv: string[], cwd: string, env: Record<string, string>, stdin: string): Promise<CliResult> {
    const flags: Record<string, string | true> = {};
    const args: string[] = [];
    const valued = new Set(["--stack", "-s", "--secrets-provider", "--type", "--policy-pack", "--message", "-m"]);
    if (argv[0] === "version") return { stdout: `v${env["FAKE_PULUMI_VERSION"] ?? PULUMI_CLI_VERSION}\n`, stderr: "", code: 0 };
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      if (valued.has(a)) flags[a === "-s" ? "--stack" : a] = argv[++i]!;
      else if (a.startsWith("--")) flags[a] = true;
      else args.push(a);
    }
    const home = env["HOME"]!;
    const session = env["FAKE_PRINCIPAL"];
    const out = (stdout: string): CliResult => ({ stdout, stderr: "", code: 0 });
    const [cmd, sub] = args;
    if (cmd === "login") {
      const url = args[1]!;
      await this.openBackend(url, session);
      this.logins.set(home, url);
      return out(`Logged in to ${url}\n`);
    }
    const url = env["PULUMI_BACKEND_URL"] || this.logins.get(home);
    if (cmd === "whoami") {
      if (!url) throw new Error("you are not logged in: pulumi login");
      return out(`User: ${home.split("/").pop()}\nBackend URL: ${url}\n`);
    }
    if (!url) throw new Error("PULUMI_ACCESS_TOKEN must be set for login during non-interactive CLI sessions");
    const project = this.projectOf(cwd);
    const stacks = await this.openBackend(url, session);
    const selectedKey = `${home}|${project.dir}|${url}`;
    const stackName = (typeof flags["--stack"] === "string" ? flags["--stack"] : undefined) ?? this.selected.get(selectedKey);
    const fqn = (s: string) => `${project.name}/${s.split("/").pop()}`;
    const stackFile = (s: string) => path.join(project.dir, `Pulumi.${s.split("/").pop()}.yaml`);
    const principal = session ? this.principalOf(session) : undefined;

    if (cmd === "stack" && sub === "select") {
      const s = args[2] ?? stackName!;
      if (!stacks.has(fqn(s))) return { stdout: "", stderr: `error: no stack named '${s}' found\n`, code: 255 };
      this.selected.set(selectedKey, s);
      return out("");
    }
    if (cmd === "stack" && sub === "init") {
      const s = args[2]!;
      if (stacks.has(fqn(s))) throw new Error(`stack '${s}' already exists`);
      const file = stackFile(s);
      const doc = this.readStackFile(file);
      const provider = flags["--secrets-provider"];
      if (typeof provider === "string" && provider.startsWith("awskms://")) {
        doc["secretsprovider"] = provider;
        await this.crypt("Encrypt", doc, principal!, env);
        doc["encryptedkey"] = "ZmFrZS1kYXRhLWtleQ==";
      } else {
        await this.crypt("Encrypt", { secretsprovider: "passphrase" }, principal ?? "", env);
        doc["encryptionsalt"] = "v1:ZmFrZXNhbHQ=:v1:ZmFrZQ==:ZmFrZQ==";
      }
      if (url.startsWith("s3://")) await this.stateWrite(principal!, url.slice(5).split("?")[0]!);
      fs.writeFileSync(file, yaml.dump(doc, { lineWidth: -1 }));
      stacks.set(fqn(s), { project: project.name, deployed: false });
      this.selected.set(selectedKey, s);
      return out(`Created stack '${s}'\n`);
    }
    if (!stackName) throw new Error("no stack selected: pulumi stack select");
    const state = stacks.get(fqn(stackName));
    if (!state) return { stdout: "", stderr: `error: no stack named '${stackName}' found\n`, code: 255 };
    const file = stackFile(stackName);
    const doc = this.readStackFile(file);
    const config = ((doc["config"] as Record<string, unknown> | undefined) ?? {}) as Record<string, unknown>;

    if (cmd === "stack" && sub === "output") {
      if (typeof doc["secretsprovider"] !== "string") await this.crypt("Decrypt", doc, principal ?? "", env);
      const outputs = state.outputs ?? {};
      const name = args[2];
      if (name !== undefined && !(name in outputs)) throw new Error(`current stack does not have output property '${name}'`);
      const v = name !== undefined ? outputs[name] : outputs;
      return out(`${flags["--json"] || typeof v !== "string" ? JSON.stringify(v, null, 2) : v}\n`);
    }
    if (cmd === "config" && sub === "get") {
      const v = config[args[2]!];
      if (v === undefined) return { stdout: "", stderr: `error: configuration key '${args[2]}' not found for stack '${stackName}'\n`, code: 1 };
      const secure = typeof v === "object" && v !== null && "secure" in v;
      if (secure) await this.crypt("Decrypt", doc, principal!, env);
      const text = secure ? Buffer.from(String((v as { secure: string }).secure).slice(3), "base64").toString() : typeof v === "string" ? v : JSON.stringify(v);
      // --json: configValueJSON (pkg/cmd/pulumi/config/config.go), `value` the value as text,
      // `objectValue` the parsed object or list, printed indented.
      if (flags["--json"]) return out(`${JSON.stringify({ value: text, ...(!secure && typeof v === "object" && v !== null ? { objectValue: v } : {}), secret: secure }, null, 2)}\n`);
      return out(`${text}\n`);
    }
    if (cmd === "config" && sub === "set") {
      const key = args[2]!;
      let value: unknown = args[3] ?? stdin;
      const exclusive = ["--secret", "--plaintext", "--type"].filter((f) => flags[f] !== undefined);
      if (exclusive.length > 1) throw new Error(`if any flags in the group [secret plaintext type] are set none of the others can be; [${exclusive.map((f) => f.slice(2)).sort().join(" ")}] were all set`);
      const keyName = key.slice(key.indexOf(":") + 1);
      if (!flags["--secret"] && !flags["--plaintext"] && SECRET_KEY_NAME.test(keyName)) {
        throw new Error(`config value for '${key}' looks like a secret; rerun with --secret to encrypt it, or --plaintext if you meant to store in plaintext`);
      }
      if (flags["--secret"]) {
        await this.crypt("Encrypt", doc, principal!, env);
        value = { secure: `v1:${Buffer.from(String(value)).toString("base64")}` };
      } else if (flags["--path"] && flags["--type"] !== "string" && /^\d+$/.test(String(value))) {
        value = Number(value);
      }
      setPath(config, key, value, flags["--path"] === true);
      doc["config"] = config;
      fs.writeFileSync(file, yaml.dump(doc, { lineWidth: -1 }));
      return out("");
    }
    if (cmd === "preview" || cmd === "up") {
      const up = cmd === "up";
      if (up && !flags["--yes"] && env["FAKE_TERMINAL_ANSWER"] !== "yes") {
        throw new Error("--yes or --skip-preview or --preview-only must be passed in to proceed when running in non-interactive mode");
      }
      if (project.name === "sophia-bootstrap") return await this.bootstrapUp(state, config, principal!, up, env, doc);
      return await this.stageUp(stackName.split("/").pop()!, state, doc, config, principal!, up, env);
    }
    return { stdout: "", stderr: `the pulumi stand-in does not know: pulumi ${argv.join(" ")}\n`, code: 3 };
  }

  // -- the bootstrap's up ---------------------------------------------------------------------

  private async bootstrapUp(state: StackState, config: Record<string, unknown>, principal: string, up: boolean, env: Record<string, string>, doc: Record<string, unknown>): Promise<CliResult> {
    await this.crypt("Decrypt", doc, principal, env);
    const region = String(config["aws:region"]);
    const stages = (config["sophia-bootstrap:stages"] as string[] | undefined) ?? [];
    const admins = (config["sophia-bootstrap:keyAdministrators"] as string[] | undefined) ?? [];
    const patterns = (config["sophia-bootstrap:breakGlassRoles"] as string[] | undefined) ?? [];
    const repository = String(config["sophia-bootstrap:githubRepository"]);
    const problems = [...breakGlassProblems(patterns)];
    if (admins.length === 0 || admins.some((a) => !PRINCIPAL_ARN.test(a))) problems.push("sophia-bootstrap:keyAdministrators must list the break-glass IAM role or user ARNs");
    const layers: Record<string, string> = {};
    for (const s of stages) {
      const f = stageFacts(s, region, {}, this.repoRoot);
      if (Array.isArray(f)) problems.push(...f);
      else layers[s] = f.layerArn;
    }
    if (problems.length > 0) throw new Error(`Invalid bootstrap configuration:\n  - ${problems.join("\n  - ")}`);
    const previewStage = stages.includes("dev") ? "dev" : undefined;
    const deployRoles = stages.map((s) => deployRoleArn(P, this.account, s));
    const preview = previewStage ? previewRoleArn(P, this.account, previewStage) : undefined;
    const keyArn = (name: string) => `arn:${P}:kms:${region}:${this.account}:key/${name}`;
    const stateKey = keyArn("state-key");
    const statePolicy = withBreakGlassRoles(stateKeyPolicy({ admins, writers: deployRoles, readers: preview ? [preview] : [], region }), patterns, P, this.account) as unknown as Doc;
    const secretsKeys: BootstrapState["secretsKeys"] = {};
    for (const s of stages) {
      const policy = withBreakGlassRoles(
        secretsProviderKeyPolicy({ admins, deployRole: deployRoleArn(P, this.account, s), previewRole: s === previewStage ? preview : undefined }),
        patterns,
        P,
        this.account,
      ) as unknown as Doc;
      secretsKeys[s] = { arn: keyArn(`${s}-pulumi-secrets`), policy };
    }
    // Each key policy written as the caller: allowed under the key's current policy (an existing
    // key), and KMS's lockout check under the new one.
    const writes: [string, Doc | undefined, Doc][] = [[stateKey, this.bootstrap?.stateKeyPolicy, statePolicy], ...stages.map((s) => [secretsKeys[s]!.arn, this.bootstrap?.secretsKeys[s]?.policy, secretsKeys[s]!.policy] as [string, Doc | undefined, Doc])];
    for (const [arn, current, next] of writes) {
      if (current && (await this.decide(principal, "kms:PutKeyPolicy", arn, { resourcePolicy: current })) !== "Allowed") throw new Error(`updating ${arn}: ${this.denied(principal, "kms:PutKeyPolicy", arn)}`);
      if ((await this.decide(principal, "kms:PutKeyPolicy", arn, { resourcePolicy: next })) !== "Allowed") {
        throw new Error(`creating ${arn}: MalformedPolicyDocumentException: The new key policy will not allow you to update the key policy in the future.`);
      }
    }
    if (!up) return { stdout: "Previewing update (account-main)\n", stderr: "", code: 0 };
    this.bootstrap = { region, repository, stages, bucket: `sophia-pulumi-state-${this.account}-${region}`, stateKey, stateKeyPolicy: statePolicy, secretsKeys, layers };
    const outputs: Record<string, string> = {};
    for (const name of outputNames({ stages, previewStage, backend: "s3" })) {
      const stage = stages.find((s) => name.startsWith(`${s.toUpperCase().replace(/-/g, "_")}_`));
      if (name === "OIDC_PROVIDER_ARN") outputs[name] = `arn:${P}:iam::${this.account}:oidc-provider/token.actions.githubusercontent.com`;
      else if (name === "PREVIEW_ROLE_ARN") outputs[name] = preview!;
      else if (name === "PULUMI_BACKEND_URL") outputs[name] = `s3://${this.bootstrap.bucket}?region=${region}`;
      else if (stage && name.endsWith("_DEPLOY_ROLE_ARN")) outputs[name] = deployRoleArn(P, this.account, stage);
      else if (stage && name.endsWith("_EXTENSION_LAYER_ARN")) outputs[name] = layers[stage]!;
      else if (stage && name.endsWith("_API_PUBLISH_POLICY_ARN")) outputs[name] = `arn:${P}:iam::${this.account}:policy${BOOTSTRAP_PATH}${apiPublishPolicyName(stage)}`;
      else if (stage && name.endsWith("_OPS_POLICY_ARN")) outputs[name] = `arn:${P}:iam::${this.account}:policy${BOOTSTRAP_PATH}${opsPolicyName(stage)}`;
      else if (stage && name.endsWith("_SECRETS_PROVIDER")) outputs[name] = `awskms://alias/sophia-${stage}-pulumi-secrets?region=${region}`;
      else throw new Error(`no stand-in value for output ${name}`);
    }
    state.outputs = { OIDC_PROVIDER_ARN: outputs["OIDC_PROVIDER_ARN"], PREVIEW_ROLE_ARN: outputs["PREVIEW_ROLE_ARN"], PULUMI_BACKEND_URL: outputs["PULUMI_BACKEND_URL"], all: outputs };
    state.deployed = true;
    return { stdout: "Updating (account-main)\nResources: updated\n", stderr: "", code: 0 };
  }

  // -- a stage's up ---------------------------------------------------------------------------

  /**
   * Every request of the stage's `up` (or preview) as `principal`: the S3 backend's, the awskms
   * provider's, and the provider's per resource and phase (requests.json), each against the
   * resource policy it meets at that moment. Returns the refused ones; changes nothing.
   */
  async stageRequests(stage: string, doc: Record<string, unknown>, principal: string, phases: Phase[], write: boolean): Promise<string[]> {
    const b = this.bootstrap;
    if (!b) return ["the bootstrap has not run"];
    const config = (doc["config"] ?? {}) as Record<string, unknown>;
    const refused: string[] = [];
    const check = async (action: string, resource: string, opts: { context?: Record<string, string | string[]>; resourcePolicy?: Doc | undefined } = {}) => {
      const d = await this.decide(principal, action, resource, opts);
      if (d !== "Allowed") refused.push(`${action} on ${resource}: ${d}`);
    };
    // The backend and the secrets provider (rehearsal: backendRequests).
    const o = (key: string) => `arn:${P}:s3:::${b.bucket}/${key}`;
    const viaS3 = { "kms:ViaService": `s3.${b.region}.amazonaws.com` };
    await check("s3:GetObject", o(`.pulumi/stacks/sophia/${stage}.json`));
    await check("kms:Decrypt", b.stateKey, { context: viaS3, resourcePolicy: b.stateKeyPolicy });
    await check("kms:Decrypt", b.secretsKeys[stage]!.arn, { resourcePolicy: b.secretsKeys[stage]!.policy });
    if (write) {
      for (const key of [`.pulumi/locks/organization/sophia/${stage}/lock.json`, `.pulumi/stacks/sophia/${stage}.json`, `.pulumi/history/sophia/${stage}/${stage}-1.history.json`]) await check("s3:PutObject", o(key));
      await check("kms:GenerateDataKey", b.stateKey, { context: viaS3, resourcePolicy: b.stateKeyPolicy });
      await check("kms:Encrypt", b.secretsKeys[stage]!.arn, { resourcePolicy: b.secretsKeys[stage]!.policy });
    }
    // The stage's resources, as the program registers them, with the stack file's administrators.
    const resources = this.program(stage);
    const admins = (config["sophia:kmsKeyAdministrators"] as string[] | undefined) ?? [];
    const layer = String(config["sophia:secretsExtensionLayerArn"]);
    const policyOf = (r: RecordedResource | undefined): Doc | undefined =>
      r ? this.withAdmins(typeof r.inputs["policy"] === "string" ? (r.inputs["policy"] as string) : JSON.stringify(r.inputs["policy"]), admins) : undefined;
    const keyPolicyNew = policyOf(resources.find((r) => r.type === "aws:kms/keyPolicy:KeyPolicy"));
    const key = resources.find((r) => r.type === "aws:kms/key:Key");
    const keyArn = key ? String(key.state["arn"]) : "";
    const keyCreationPolicy = key && key.inputs["policy"] !== undefined ? policyOf(key) : defaultKeyPolicy(this.account);
    const previous = this.stages.get(stage);
    const secretPolicyNew = (secretArn: string) => policyOf(resources.find((r) => r.type === "aws:secretsmanager/secretPolicy:SecretPolicy" && r.inputs["secretArn"] === secretArn));
    const tags = (r: RecordedResource) => (r.inputs["tags"] as Record<string, string> | undefined) ?? {};
    const byArn = (type: string, arn: string) => resources.find((r) => r.type === type && (r.state["arn"] === arn || r.inputs["name"] === arn));
    for (const phase of phases) {
      for (const r of resources.filter((x) => x.custom && x.type.startsWith("aws:"))) {
        const entry = this.requests.types[r.type];
        if (!entry) throw new Error(`requests.json has no ${r.type}`);
        for (const [action, on] of entry.requests[phase]) {
          // Which policy a request on the stage key meets: before the stack's key policy lands
          // (the key and its alias on create, and PutKeyPolicy itself) the key's creation policy;
          // after it, the stack's (the provider's read-backs, every later deploy).
          const keyPolicyFor = (): Doc | undefined => {
            if (phase === "create") {
              const before = r.type === "aws:kms/key:Key" || r.type === "aws:kms/alias:Alias" || (r.type === "aws:kms/keyPolicy:KeyPolicy" && action === "kms:PutKeyPolicy");
              return before ? keyCreationPolicy : keyPolicyNew;
            }
            return action === "kms:PutKeyPolicy" && previous ? previous.keyPolicy : keyPolicyNew;
          };
          const secretPolicyFor = (arn: string): Doc | undefined => {
            if (phase === "create" && (r.type === "aws:secretsmanager/secret:Secret" || action === "secretsmanager:PutResourcePolicy")) return previous?.secretPolicies[arn];
            if (action === "secretsmanager:PutResourcePolicy") return previous?.secretPolicies[arn];
            return secretPolicyNew(arn);
          };
          const own = tags(r);
          // A resource the stage gives no tags (the key, the mappings: docs/threat-model.md) is never
          // tagged: the provider sends tag requests only for tags it is given.
          if (TAG_WRITES.test(action) && Object.keys(own).length === 0) continue;
          const takesTags = (phase === "create" || phase === "update") && Object.keys(own).length > 0 && (await actionFacts(action)).conditionKeys.some((k) => k.startsWith("aws:RequestTag/"));
          const requestTags: Record<string, string | string[]> = takesTags ? { ...Object.fromEntries(Object.entries(own).map(([k, v]) => [`aws:RequestTag/${k}`, v])), "aws:TagKeys": Object.keys(own) } : {};
          const resourceTags = (t: Record<string, string>) => Object.fromEntries(Object.entries(t).map(([k, v]) => [`aws:ResourceTag/${k}`, v]));
          const go = async (resource: string, context: Record<string, string | string[]>, resourcePolicy?: Doc) =>
            check(action, resource, {
              context: {
                ...requestTags,
                ...(action === "secretsmanager:PutResourcePolicy" ? { "secretsmanager:BlockPublicPolicy": String(r.inputs["blockPublicPolicy"] ?? false) } : {}),
                ...context,
              },
              resourcePolicy,
            });
          const self = (): string => {
            if (r.type === "aws:cloudwatch/dashboard:Dashboard") return `arn:${P}:cloudwatch::${this.account}:dashboard/${String(r.inputs["dashboardName"])}`;
            if (r.type === "aws:kms/alias:Alias") return `arn:${P}:kms:${b.region}:${this.account}:${String(r.inputs["name"])}`;
            if (r.type === "aws:ssm/document:Document") return `arn:${P}:ssm:${b.region}:${this.account}:document/${String(r.inputs["name"])}`;
            return String(r.state["arn"]);
          };
          switch (on) {
            case "self": {
              const arn = self();
              const ctx: Record<string, string | string[]> = resourceTags(own);
              if (r.type === "aws:iam/role:Role") ctx["iam:PermissionsBoundary"] = String(r.inputs["permissionsBoundary"]);
              if (r.type === "aws:lambda/eventSourceMapping:EventSourceMapping") ctx["lambda:FunctionArn"] = String(r.inputs["functionName"]);
              const policy = r.type === "aws:kms/key:Key" ? keyPolicyFor() : r.type === "aws:secretsmanager/secret:Secret" ? secretPolicyFor(arn) : undefined;
              await go(arn, ctx, policy);
              break;
            }
            case "star":
              await go("*", r.type === "aws:lambda/eventSourceMapping:EventSourceMapping" ? { "lambda:FunctionArn": String(r.inputs["functionName"]) } : {});
              break;
            case "vpcStar":
              if (r.inputs["vpcConfig"]) await go("*", {});
              break;
            case "reserved":
              if (r.inputs["reservedConcurrentExecutions"] !== undefined) await go(self(), resourceTags(own));
              break;
            case "role": {
              const role = byArn("aws:iam/role:Role", String(r.inputs["role"]))!;
              await go(String(role.state["arn"]), { ...resourceTags(tags(role)), "iam:PermissionsBoundary": String(role.inputs["permissionsBoundary"]), "iam:PassedToService": "lambda.amazonaws.com" });
              break;
            }
            case "scheduleRole": {
              // A schedule's execution role (Target.RoleArn), passed to EventBridge Scheduler.
              const role = byArn("aws:iam/role:Role", String((r.inputs["target"] as Record<string, unknown>)["roleArn"]))!;
              await go(String(role.state["arn"]), { ...resourceTags(tags(role)), "iam:PermissionsBoundary": String(role.inputs["permissionsBoundary"]), "iam:PassedToService": "scheduler.amazonaws.com" });
              break;
            }
            case "layers": {
              const layerPolicy: Doc = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "lambda:GetLayerVersion", Resource: layer }] };
              await go(layer, {}, layerPolicy);
              break;
            }
            case "functionLatest": {
              const fn = byArn("aws:lambda/function:Function", String(r.inputs["functionName"]))!;
              await go(`${String(fn.state["arn"])}:$LATEST`, resourceTags(tags(fn)));
              break;
            }
            case "key":
              await go(keyArn, resourceTags(key ? tags(key) : {}), keyPolicyFor());
              break;
            case "secret": {
              const arn = String(r.inputs["secretId"] ?? r.inputs["secretArn"]);
              const secret = byArn("aws:secretsmanager/secret:Secret", arn)!;
              await go(arn, resourceTags(tags(secret)), secretPolicyFor(arn));
              break;
            }
            case "secretKey":
              await go(keyArn, { ...resourceTags(key ? tags(key) : {}), "kms:ViaService": `secretsmanager.${b.region}.amazonaws.com` }, keyPolicyNew);
              break;
            case "topic":
              await go(String(r.inputs["topic"]), {});
              break;
            case "queue": {
              const name = String(r.inputs["queueUrl"]).split("/").pop()!;
              await go(`arn:${P}:sqs:${b.region}:${this.account}:${name}`, {});
              break;
            }
            default:
              throw new Error(`${r.type}: target ${on} is not resolved by the doc test (a stage with sophia:vpc?)`);
          }
        }
      }
    }
    return refused;
  }

  private async stageUp(stage: string, state: StackState, doc: Record<string, unknown>, config: Record<string, unknown>, principal: string, up: boolean, env: Record<string, string>): Promise<CliResult> {
    await this.crypt("Decrypt", doc, principal, env);
    const allowed = config["aws:allowedAccountIds"] as string[] | undefined;
    if (allowed && !allowed.includes(this.account)) throw new Error(`AWS account ID not allowed: ${this.account}`);
    const phases: Phase[] = !up ? ["read"] : state.deployed ? ["read", "update"] : ["create"];
    const refused = await this.stageRequests(stage, doc, principal, phases, up);
    if (refused.length > 0) {
      return { stdout: "", stderr: `error: ${refused.length} request(s) refused, the ${up ? "update" : "preview"} stopped:\n${refused.slice(0, 12).map((r) => `  ${r}`).join("\n")}\n`, code: 255 };
    }
    if (!up) return { stdout: `Previewing update (${stage})\n`, stderr: "", code: 0 };
    const resources = this.program(stage);
    const admins = (config["sophia:kmsKeyAdministrators"] as string[] | undefined) ?? [];
    const keyPolicyResource = resources.find((r) => r.type === "aws:kms/keyPolicy:KeyPolicy")!;
    const swap = (text: string) => this.withAdmins(text, admins);
    const secretPolicies: Record<string, Doc> = {};
    for (const r of resources.filter((x) => x.type === "aws:secretsmanager/secretPolicy:SecretPolicy")) secretPolicies[String(r.inputs["secretArn"])] = swap(String(r.inputs["policy"]));
    this.stages.set(stage, { keyPolicy: swap(String(keyPolicyResource.inputs["policy"])), secretPolicies });
    state.deployed = true;
    return { stdout: `Updating (${stage})\nResources: updated\n`, stderr: "", code: 0 };
  }

  // -- CI --------------------------------------------------------------------------------------

  /**
   * A push to main: .github/workflows/infra.yml's deploy-dev job runs in the `dev` environment
   * (GitHub creates it on first use, unprotected), assumes vars.AWS_DEPLOY_ROLE_ARN through the
   * role's OIDC trust (environment:dev of the bootstrap's repository), checks the committed stack
   * file and runs `pulumi up --yes` on the bucket as the deploy role.
   */
  async push(checkStackFile: (stage: string) => Promise<boolean>): Promise<CiRun> {
    const stage = "dev";
    const file = path.join(this.fakeState, "github.json");
    const gh = JSON.parse(fs.readFileSync(file, "utf8")) as Github;
    let created = false;
    if (!gh.environments[stage]) {
      gh.environments[stage] = { reviewers: [], prevent_self_review: false, deployment_branch_policy: null, branchPolicies: [], variables: {} };
      fs.writeFileSync(file, JSON.stringify(gh));
      created = true;
    }
    const run = (ok: boolean, detail: string): CiRun => {
      const r = { stage, environmentCreatedOnFirstUse: created, ok, detail };
      this.ci.push(r);
      return r;
    };
    const role = gh.environments[stage]!.variables["AWS_DEPLOY_ROLE_ARN"];
    if (!role) return run(false, "configure-aws-credentials: vars.AWS_DEPLOY_ROLE_ARN is empty in the dev environment");
    if (!this.bootstrap || this.bootstrap.repository !== gh.repo || role !== deployRoleArn(P, this.account, stage)) {
      return run(false, `Not authorized to perform sts:AssumeRoleWithWebIdentity on ${role}`);
    }
    if (!(await checkStackFile(stage))) return run(false, "check-stack-file refused Pulumi.dev.yaml");
    const prev = this.step;
    this.step = `${prev} / CI`;
    try {
      const url = `s3://${this.bootstrap.bucket}?region=${this.bootstrap.region}`;
      await this.openBackend(url, this.sessionOf(role));
      const state = this.backends.get(url)!.get(`sophia/${stage}`);
      if (!state) return run(false, "no stack dev in the bucket");
      const doc = this.readStackFile(path.join(this.repoRoot, `Pulumi.${stage}.yaml`));
      const r = await this.stageUp(stage, state, doc, (doc["config"] ?? {}) as Record<string, unknown>, role, true, {});
      // deploy-prod (needs: deploy-dev) then starts in `production`: GitHub creates it, unprotected,
      // if it does not exist yet; with no role variable there, the job fails (no prod role yet).
      if (r.code === 0) {
        const after = JSON.parse(fs.readFileSync(file, "utf8")) as Github;
        if (!after.environments["production"]) {
          after.environments["production"] = { reviewers: [], prevent_self_review: false, deployment_branch_policy: null, branchPolicies: [], variables: {} };
          fs.writeFileSync(file, JSON.stringify(after));
        }
      }
      return run(r.code === 0, r.stderr || r.stdout);
    } catch (e) {
      return run(false, (e as Error).message);
    } finally {
      this.step = prev;
    }
  }
}

/** `pulumi config set [--path] key value` on a config map. */
function setPath(config: Record<string, unknown>, key: string, value: unknown, usePath: boolean): void {
  if (!usePath) {
    config[key] = value;
    return;
  }
  const m = /^([^[.]+:[^[.]+)((?:\[\d+\]|\.[^[.]+)*)$/.exec(key);
  if (!m) throw new Error(`invalid --path key ${key}`);
  const parts = [...m[2]!.matchAll(/\[(\d+)\]|\.([^[.]+)/g)].map((x) => (x[1] !== undefined ? Number(x[1]) : x[2]!));
  if (parts.length === 0) {
    config[m[1]!] = value;
    return;
  }
  let node: Record<string | number, unknown> = config;
  let k: string | number = m[1]!;
  for (const part of parts) {
    if (node[k] === undefined) node[k] = typeof part === "number" ? [] : {};
    node = node[k] as Record<string | number, unknown>;
    k = part;
  }
  node[k] = value;
}
