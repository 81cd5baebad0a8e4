/**
 * The policy documents of the bootstrap's roles, built from `deploy-permissions.json` (the table of
 * resource type -> actions, shared with infra-pulumi's tests) and the state backend's layout. Pure
 * functions of plain values: the tests call them directly, the program calls them inside `apply`.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export const PERMISSIONS_FILE = path.join(__dirname, "..", "deploy-permissions.json");

export type Condition = Record<string, Record<string, string | string[]>>;

export interface TableStatement {
  actions: string[];
  resources: string[];
  condition?: Condition;
  /**
   * Only for a stage placed in a VPC (`sophia:vpc`), only for one that is not, or only for one
   * whose stack creates the interface endpoints (`sophia:vpc.interfaceEndpoints`).
   */
  when?: "vpc" | "novpc" | "endpoints" | "alarmSubscription";
}

export interface TableRow {
  source: string;
  statements: TableStatement[];
  /** No IAM grant: the resource's own policy (named here) grants the deploy role. */
  viaResourcePolicy?: string;
  deny?: TableStatement[];
}

export interface PreviewAction {
  accessLevel: "Read" | "List" | "Write" | "Permissions management" | "Tagging";
  source: string;
  /** AWS files it under Write, but it modifies nothing (kms:Decrypt). */
  changesNothing?: boolean;
}

export interface PermissionsTable {
  migrateFunction: string;
  /** The function the stage's scheduled erasure check invokes (infra-pulumi/src/erasure-check.ts): the stage's roles may invoke it and no other. */
  erasureCheckFunction: string;
  resourceTypes: Record<string, TableRow>;
  previewActions: Record<string, PreviewAction>;
}

export function loadPermissions(file: string = PERMISSIONS_FILE): PermissionsTable {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as PermissionsTable & { previewActions: Record<string, unknown> };
  const previewActions = Object.fromEntries(
    Object.entries(raw.previewActions).filter(([k]) => !k.startsWith("$")),
  ) as Record<string, PreviewAction>;
  return { migrateFunction: raw.migrateFunction, erasureCheckFunction: raw.erasureCheckFunction, resourceTypes: raw.resourceTypes, previewActions };
}

/** A stage's `sophia:vpc` placement: the deploy role may create endpoints only in it. */
export interface VpcScope {
  vpcId: string;
  subnetIds: string[];
  securityGroupIds: string[];
  /**
   * `sophia:vpc.interfaceEndpoints`: the stack creates the SQS and Secrets Manager endpoints. Only
   * then may the deploy role create, change or delete an endpoint (one with private DNS and a
   * narrow policy would cut SQS and Secrets Manager for every other tenant of the VPC).
   */
  interfaceEndpoints?: boolean | undefined;
}

/** Alarm destinations a stage's file names outside the stage's own topic (`sophia:alarmTopicArn`, `sophia:alarmSubscription`). */
export interface AlarmScope {
  topicArn?: string;
  subscription?: { protocol: string; endpoint: string };
}

/** What a stage's deploy role is scoped to. */
export interface StageScope {
  partition: string;
  region: string;
  account: string;
  stage: string;
  /** `sophia:secretsExtensionLayerArn` of the stage. */
  layerArn: string;
  /** The stage's `sophia:vpc` (its VPC, subnets and security groups), or false without one. */
  vpc: VpcScope | false;
  /** Where its alarms may go besides its own topics; none when absent. */
  alarm?: AlarmScope | undefined;
}

export interface PolicyStatement {
  Sid: string;
  Effect: "Allow" | "Deny";
  Action: string[];
  Resource: string[];
  Condition?: Condition;
}

/** A Deny of everything but the resources it names (IAM's NotResource: no condition key names a role's name). */
export interface DenyOutsideStatement {
  Sid: string;
  Effect: "Deny";
  Action: string[];
  NotResource: string[];
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: PolicyStatement[];
}

/** The deploy role's inline policy: its guards include a Deny with NotResource. */
export interface GuardDocument {
  Version: "2012-10-17";
  Statement: (PolicyStatement | DenyOutsideStatement)[];
}

export const APP = "sophia";

// ---------------------------------------------------------------------------------------------
// Name spaces. A stage's roles and IAM policies live under the IAM path `/sophia/<stage>/`: a stage
// name has no '/', so no other stage's path extends it (`/sophia/dev/` never matches
// `/sophia/dev-eu/`). The bootstrap's own roles and policies live under `/sophia-bootstrap/`, which
// no stage path matches, and every deploy role carries an explicit Deny on it.

/** IAM path of the bootstrap's roles and policies (deploy, preview, boundaries). */
export const BOOTSTRAP_PATH = `/${APP}-bootstrap/`;
/** IAM path of a stage's roles and policies (infra-pulumi sets it on every role and policy it creates). */
export const stageIamPath = (stage: string): string => `/${APP}/${stage}/`;
export const deployRoleName = (stage: string): string => `${APP}-bootstrap-${stage}-deploy`;
export const previewRoleName = (stage: string): string => `${APP}-bootstrap-${stage}-preview`;
export const boundaryPolicyName = (stage: string): string => `${APP}-bootstrap-${stage}-boundary`;
export const iamArn = (partition: string, account: string, kind: "role" | "policy", path: string, name: string): string =>
  `arn:${partition}:iam::${account}:${kind}${path}${name}`;
export const deployRoleArn = (partition: string, account: string, stage: string): string =>
  iamArn(partition, account, "role", BOOTSTRAP_PATH, deployRoleName(stage));
export const previewRoleArn = (partition: string, account: string, stage: string): string =>
  iamArn(partition, account, "role", BOOTSTRAP_PATH, previewRoleName(stage));
export const boundaryArn = (partition: string, account: string, stage: string): string =>
  iamArn(partition, account, "policy", BOOTSTRAP_PATH, boundaryPolicyName(stage));

/**
 * Stages one bootstrap stack (one account and region) may hold: regional names are `sophia-<stage>-*`,
 * so a stage whose name is another's plus `-...` (dev and dev-eu) would match the other's functions,
 * queues and alarms. Returns the problems (empty when none).
 */
export function collidingStages(stages: string[]): string[] {
  const out: string[] = [];
  for (const a of stages) {
    for (const b of stages) {
      if (a !== b && b.startsWith(`${a}-`)) out.push(`stages "${a}" and "${b}": sophia-${a}-* would match sophia-${b}-*; give one of them another name (or its own account or region)`);
    }
  }
  if (stages.some((s) => s === "bootstrap" || s.startsWith("bootstrap-"))) out.push('a stage may not be named "bootstrap" (the bootstrap\'s own names)');
  return out;
}

function render(template: string, scope: StageScope, table: PermissionsTable): string {
  const prefix = `${APP}-${scope.stage}`;
  const values: Record<string, string> = {
    partition: scope.partition,
    region: scope.region,
    account: scope.account,
    stage: scope.stage,
    prefix,
    iamPath: stageIamPath(scope.stage).slice(1),
    boundaryArn: boundaryArn(scope.partition, scope.account, scope.stage),
    layerArn: scope.layerArn,
    migrateFunction: `${prefix}-${table.migrateFunction}`,
    ...(scope.vpc ? { vpcId: scope.vpc.vpcId } : {}),
    ...(scope.alarm?.subscription ? { alarmProtocol: scope.alarm.subscription.protocol, alarmEndpoint: scope.alarm.subscription.endpoint } : {}),
  };
  return template.replace(/\$\{(\w+)\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`deploy-permissions.json: unknown placeholder \${${name}}`);
    return v;
  });
}

function renderCondition(c: Condition | undefined, scope: StageScope, table: PermissionsTable): Condition | undefined {
  if (!c) return undefined;
  const out: Condition = {};
  for (const [op, kv] of Object.entries(c)) {
    out[op] = Object.fromEntries(
      Object.entries(kv).map(([k, v]) => [k, Array.isArray(v) ? v.flatMap((x) => expand(x, scope)).map((x) => render(x, scope, table)) : render(v, scope, table)]),
    );
  }
  return out;
}

/**
 * A resource (or a condition value) naming `${subnetId}` or `${securityGroupId}` stands for one per
 * subnet or security group of the stage's `sophia:vpc`; `${alarmTopicArn}` for the stage's
 * `sophia:alarmTopicArn`, or nothing.
 */
function expand(template: string, scope: StageScope): string[] {
  const vpc = scope.vpc;
  if (template.includes("${subnetId}")) return vpc ? vpc.subnetIds.map((id) => template.replace("${subnetId}", id)) : [];
  if (template.includes("${securityGroupId}")) return vpc ? vpc.securityGroupIds.map((id) => template.replace("${securityGroupId}", id)) : [];
  if (template === "${alarmTopicArn}") return scope.alarm?.topicArn ? [scope.alarm.topicArn] : [];
  return [template];
}

function whenHolds(when: TableStatement["when"], scope: StageScope): boolean {
  switch (when) {
    case "vpc":
      return scope.vpc !== false;
    case "novpc":
      return scope.vpc === false;
    case "endpoints":
      return scope.vpc !== false && scope.vpc.interfaceEndpoints === true;
    case "alarmSubscription":
      return scope.alarm?.subscription !== undefined;
    default:
      return true;
  }
}

const sid = (type: string, i: number, effect: string) =>
  `${effect}${type.split(":")[2] ?? type}${i}`.replace(/[^A-Za-z0-9]/g, "");

/** The deploy role's statements for the stage: every row of the table, rendered for the stage. */
export function deployStatements(scope: StageScope, table: PermissionsTable = loadPermissions()): PolicyStatement[] {
  const out: PolicyStatement[] = [];
  for (const [type, row] of Object.entries(table.resourceTypes)) {
    const emit = (list: TableStatement[] | undefined, effect: "Allow" | "Deny") =>
      (list ?? [])
        .filter((s) => whenHolds(s.when, scope))
        .forEach((s, i) => {
          const condition = renderCondition(s.condition, scope, table);
          out.push({
            Sid: sid(type, i, effect),
            Effect: effect,
            Action: [...s.actions],
            Resource: s.resources.flatMap((r) => expand(r, scope)).map((r) => render(r, scope, table)),
            ...(condition ? { Condition: condition } : {}),
          });
        });
    emit(row.statements, "Allow");
    emit(row.deny, "Deny");
  }
  return out;
}

/** Where Pulumi's S3 backend keeps a stack (project `sophia`): its checkpoint, history, backups and lock. */
export function stateObjectArns(partition: string, bucket: string, stage: string, project = APP): string[] {
  const o = (key: string) => `arn:${partition}:s3:::${bucket}/${key}`;
  return [
    o(`.pulumi/stacks/${project}/${stage}.json`),
    o(`.pulumi/stacks/${project}/${stage}.json.*`),
    // The stack's tags, read on every load of the stack (pkg/backend/diy/stack_tags.go,
    // stackTagsPath = StackBasePath + ".pulumi-tags"; a denied read is an error, not "no tags").
    o(`.pulumi/stacks/${project}/${stage}.pulumi-tags`),
    o(`.pulumi/history/${project}/${stage}/*`),
    o(`.pulumi/backups/${project}/${stage}/*`),
    // The DIY backend locks under the stack's fully qualified name, organization/<project>/<stack>
    // (pulumi/pulumi pkg/backend/diy/lock.go: stackLockDir(stackRef.FullyQualifiedName()); the
    // organization of a DIY backend is always "organization", pkg/backend/diy/store.go).
    o(`.pulumi/locks/organization/${project}/${stage}/*`),
  ];
}

/** The `s3:prefix` values of the DIY backend's list requests for one stack (StringLike patterns). */
export function stateListPrefixes(stage: string, project = APP): string[] {
  return [
    `.pulumi/stacks/${project}/${stage}.json*`,
    `.pulumi/locks/organization/${project}/${stage}/*`,
    `.pulumi/history/${project}/${stage}/*`,
    `.pulumi/backups/${project}/${stage}/*`,
  ];
}

/** Read-write on the stage's own state objects; read of the backend's metadata; list of the stage's own prefixes. */
export function stateStatements(partition: string, bucket: string, stage: string, write: boolean): PolicyStatement[] {
  return [
    {
      Sid: write ? "StageStateReadWrite" : "StageStateRead",
      Effect: "Allow",
      Action: write ? ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"] : ["s3:GetObject"],
      Resource: stateObjectArns(partition, bucket, stage),
    },
    { Sid: "BackendMetadataRead", Effect: "Allow", Action: ["s3:GetObject"], Resource: [`arn:${partition}:s3:::${bucket}/.pulumi/meta.yaml`] },
    {
      // Only the lists the DIY backend makes for this stack (pulumi/pulumi v3.248.0 pkg/backend/diy):
      // its checkpoint's candidates (state.go stackPath: prefix `<stacks>/<project>/<stage>.json`),
      // its lock, history and backups directories (bucket.go listBucket: prefix `<dir>/`); never
      // another stage's names. Its scan for legacy stack files (`.pulumi/stacks/`, at login) is
      // refused, which backend.go ignores ("If there's an error listing don't fail").
      Sid: "BackendList",
      Effect: "Allow",
      Action: ["s3:ListBucket"],
      Resource: [`arn:${partition}:s3:::${bucket}`],
      Condition: { StringLike: { "s3:prefix": stateListPrefixes(stage) } },
    },
  ];
}

/** The stack's secrets provider key (awskms): encrypt + decrypt for a deploy, decrypt only for a preview. */
export function secretsProviderStatement(keyArn: string, write: boolean): PolicyStatement {
  return {
    Sid: write ? "StackSecretsEncryptDecrypt" : "StackSecretsDecrypt",
    Effect: "Allow",
    Action: write ? ["kms:Encrypt", "kms:Decrypt"] : ["kms:Decrypt"],
    Resource: [keyArn],
  };
}

/** GitHub's OIDC issuer (https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/configuring-openid-connect-in-amazon-web-services). */
export const GITHUB_OIDC_HOST = "token.actions.githubusercontent.com";
export const GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com";

/**
 * The repository's OIDC subject claim, customised (scripts/protect-environments sets it:
 * `PUT /repos/{owner}/{repo}/actions/oidc/customization/sub` with `use_default: false` and these
 * `include_claim_keys`, in this order). GitHub then writes each key and its value, joined by ':'
 * ("repo:<owner/repo>:environment:<env>:job_workflow_ref:<path>@<ref>" in GitHub's example for
 * repo, context, job_workflow_ref: https://docs.github.com/en/actions/reference/security/oidc).
 * The default subject of an environment's job names the environment alone, whatever ran it: if
 * GitHub let a pull request whose head is a branch named `main` (into any branch) run a workflow of
 * its own with `environment: dev`, its token would be dev's. With `ref` and `job_workflow_ref` the
 * deploy roles trust only infra.yml as it is on main, run for main.
 */
export const OIDC_SUB_CLAIM_KEYS = ["repo", "context", "ref", "job_workflow_ref"] as const;
/** The workflow whose jobs deploy and preview (.github/workflows/infra.yml). */
export const INFRA_WORKFLOW = ".github/workflows/infra.yml";

/** A deploy role's subject: a job of its environment, in infra.yml as on main, run for main. */
export function deploySubject(repository: string, environment: string): string {
  return `repo:${repository}:environment:${environment}:ref:refs/heads/main:job_workflow_ref:${repository}/${INFRA_WORKFLOW}@refs/heads/main`;
}

/**
 * The preview role's subjects (StringLike): a job of the `preview` environment of infra.yml, run for
 * a pull request (its merge ref). A pull request's infra.yml is its own, so this is no more than
 * the environment's protection gives; the role stays read-only.
 */
export function previewSubjectPattern(repository: string, environment: string): string {
  return `repo:${repository}:environment:${environment}:ref:refs/pull/*/merge:job_workflow_ref:${repository}/${INFRA_WORKFLOW}@refs/pull/*/merge`;
}

/**
 * Trust policy for GitHub OIDC tokens whose `sub` is exactly `subject` (a deploy role:
 * deploySubject), or matches it when `like` (the preview role: previewSubjectPattern). IAM matches
 * `token.actions.githubusercontent.com:sub` with StringEquals and StringLike alike.
 */
export interface TrustDocument {
  Version: "2012-10-17";
  Statement: { Sid: string; Effect: "Allow"; Principal: { Federated: string }; Action: string; Condition: Condition }[];
}

export function githubTrustPolicy(providerArn: string, subject: string, like = false): TrustDocument {
  const aud = { [`${GITHUB_OIDC_HOST}:aud`]: GITHUB_OIDC_AUDIENCE };
  const sub = { [`${GITHUB_OIDC_HOST}:sub`]: subject };
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "GitHubActionsOidc",
        Effect: "Allow",
        Principal: { Federated: providerArn },
        Action: "sts:AssumeRoleWithWebIdentity",
        Condition: like ? { StringEquals: aud, StringLike: sub } : { StringEquals: { ...aud, ...sub } },
      },
    ],
  };
}

export function policyDocument(statements: PolicyStatement[]): PolicyDocument {
  return { Version: "2012-10-17", Statement: statements };
}

/** The production stage and the protected stages, declared once (declarations/stages.json). */
export const STAGES_FILE = path.join(__dirname, "..", "..", "declarations", "stages.json");
export interface StageNames {
  production: { stage: string; environment: string };
  protectedStages: string[];
}
export function loadStageNames(file: string = STAGES_FILE): StageNames {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as StageNames;
  return { production: { stage: raw.production.stage, environment: raw.production.environment }, protectedStages: raw.protectedStages };
}

/** GitHub environment names: a stage's environment is its name, except production's (`prod-rs`: `production`). */
export function environmentOf(stage: string, overrides: Record<string, string> = {}, names: StageNames = loadStageNames()): string {
  return overrides[stage] ?? (stage === names.production.stage ? names.production.environment : stage);
}

/** Fails on a wildcard action, on `*` resources outside the table's explicit ones, and on Deny-less kms:*. */
export function assertNoWildcardActions(doc: PolicyDocument): void {
  for (const s of doc.Statement) {
    for (const a of s.Action) if (a.includes("*")) throw new Error(`wildcard action ${a} in ${s.Sid}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The deploy role can never widen itself.

/**
 * Explicit Denies every deploy role carries: nothing on the bootstrap's own roles and policies (its
 * own role, the preview role, the boundaries) nor on the GitHub OIDC provider; never a boundary
 * removed; never a role created, re-bounded, given an inline policy or a managed one unless it
 * carries this stage's boundary (`iam:PermissionsBoundary` is absent for a role without one, so
 * StringNotEquals denies it too).
 */
export function guardStatements(partition: string, account: string, stage: string, region: string): PolicyStatement[] {
  const iam = (rest: string) => `arn:${partition}:iam::${account}:${rest}`;
  return [
    {
      Sid: "DenyBootstrapIdentities",
      Effect: "Deny",
      Action: ["iam:*"],
      Resource: [iam(`role${BOOTSTRAP_PATH}*`), iam(`policy${BOOTSTRAP_PATH}*`), iam("oidc-provider/*")],
    },
    { Sid: "DenyBoundaryRemoval", Effect: "Deny", Action: ["iam:DeleteRolePermissionsBoundary"], Resource: ["*"] },
    {
      // The stage creates no managed policy, and no policy a principal outside the stage holds
      // (the API's and the operators' are the bootstrap's: stageAccessPolicies) may be rewritten,
      // re-defaulted or deleted by it: a new version of a policy attached outside the stage would
      // widen that principal, and outlive any rotation of this role.
      Sid: "DenyManagedPolicyWrites",
      Effect: "Deny",
      Action: ["iam:CreatePolicy", "iam:CreatePolicyVersion", "iam:SetDefaultPolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:TagPolicy", "iam:UntagPolicy"],
      Resource: ["*"],
    },
    {
      // The operator audit trail is the bootstrap's (its group, retention and deletion protection):
      // no deploy of the stage may delete, re-retain, re-protect or write it.
      Sid: "DenyOperatorAuditTrail",
      Effect: "Deny",
      Action: ["logs:*"],
      Resource: [auditLogGroupArn(partition, region, account, stage), `${auditLogGroupArn(partition, region, account, stage)}:*`],
    },
    {
      // The pause switch's documents are the bootstrap's (mappingSwitchDocument): whoever writes one
      // writes what on-call runs with the switch role, or, without an assumeRole, with the
      // operator's own rights (SSM runs such a document as the user who starts it).
      Sid: "DenyBootstrapDocuments",
      Effect: "Deny",
      Action: ["ssm:*"],
      Resource: [`arn:${partition}:ssm:${region}:${account}:document/${APP}-bootstrap-*`, `arn:${partition}:ssm:${region}:${account}:automation-definition/${APP}-bootstrap-*`],
    },
    {
      Sid: "DenyRoleWritesOutsideBoundary",
      Effect: "Deny",
      Action: ["iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:AttachRolePolicy"],
      Resource: ["*"],
      Condition: { StringNotEquals: { "iam:PermissionsBoundary": boundaryArn(partition, account, stage) } },
    },
  ];
}

/**
 * Role names are unique in an account and an assumed role's session ARN drops the path
 * (arn:aws:sts::<account>:assumed-role/<name>/<session>): a role of `/sophia/dev/` named
 * `sophia-prod-report-generate` is prod's to anything that matches principals by name. The
 * deploy role's grants name `role/sophia/<stage>/sophia-<stage>-*`; this Deny refuses a create or
 * a boundary on any other (IAM has no condition key on a role's name: NotResource).
 */
/** The stack's one role that is not a function's: the scheduled erasure check's execution role. */
export const ERASURE_CHECK_ROLE = "erasure-check";

export function roleNameGuard(partition: string, account: string, stage: string, functions: string[] = loadDeclarations().functions): DenyOutsideStatement {
  return {
    Sid: "DenyRolesNotNamedForTheStage",
    Effect: "Deny",
    Action: ["iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:UpdateAssumeRolePolicy", "iam:PassRole"],
    // Exactly the stack's roles, one per function (declarations/queues.json; infra-pulumi names
    // them naming.roleName(function)) and the scheduled erasure check's (infra-pulumi/src/erasure-check.ts,
    // roleName("erasure-check"); the deploy rehearsal fails if the two names part): `sophia-<stage>-*`
    // alone would also match another stage's names that extend this one's (sophia-qa-eu-* in another
    // Region of the account).
    NotResource: [...functions, ERASURE_CHECK_ROLE].map((f) => iamArn(partition, account, "role", stageIamPath(stage), `${APP}-${stage}-${f}`)),
  };
}

/**
 * Stages of one bootstrap whose resume-bucket prefixes overlap (the same bucket, one prefix the
 * start of the other's): each function role's boundary would then reach the other stage's résumés.
 */
export function resumePrefixProblems(stages: { stage: string; resumeBucket?: string | undefined; resumeBucketPrefix?: string | undefined }[]): string[] {
  const out: string[] = [];
  const withBucket = stages.filter((s) => s.resumeBucket);
  for (const a of withBucket) {
    if (!a.resumeBucketPrefix) continue;
    for (const b of withBucket) {
      if (a === b || a.resumeBucket !== b.resumeBucket || !b.resumeBucketPrefix) continue;
      if (a.stage < b.stage && (a.resumeBucketPrefix.startsWith(b.resumeBucketPrefix) || b.resumeBucketPrefix.startsWith(a.resumeBucketPrefix))) {
        out.push(`stages "${a.stage}" and "${b.stage}" share the resume bucket ${a.resumeBucket} with overlapping prefixes (${a.resumeBucketPrefix}, ${b.resumeBucketPrefix}): give each its own sophia:resumeBucketPrefix, neither the start of the other`);
      }
    }
  }
  return out;
}

/** What a stage's function roles may ever do (their permissions boundary); their own policies narrow it. */
export interface BoundaryScope {
  partition: string;
  region: string;
  account: string;
  stage: string;
  /** The stage's `sophia:vpc`: its functions' network interfaces only in its subnets and security groups. */
  vpc: VpcScope | false;
  /** `sophia:resumeBucket` of the stage, when it names one. */
  resumeBucket?: string | undefined;
  /** `sophia:resumeBucketPrefix` of the stage: the boundary allows only objects under it (none without it). */
  resumeBucketPrefix?: string | undefined;
}

export function boundaryStatements(b: BoundaryScope, table: PermissionsTable = loadPermissions()): PolicyStatement[] {
  const prefix = `${APP}-${b.stage}`;
  const arn = (svc: string, rest: string) => `arn:${b.partition}:${svc}:${b.region}:${b.account}:${rest}`;
  const out: PolicyStatement[] = [
    {
      Sid: "StageQueues",
      Effect: "Allow",
      Action: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"],
      Resource: [arn("sqs", `${prefix}-*`)],
    },
    { Sid: "StageLogs", Effect: "Allow", Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Resource: [arn("logs", `log-group:/aws/lambda/${prefix}-*:*`)] },
    { Sid: "StageSecrets", Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [arn("secretsmanager", `secret:${APP}/${b.stage}/*`)] },
    {
      // Decrypt through Secrets Manager of this stage's secrets only, whatever key they use and
      // whatever its tags: Secrets Manager's encryption context names the secret
      // (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html#security-encryption-encryption-context).
      Sid: "StageKeyViaSecretsManager",
      Effect: "Allow",
      Action: ["kms:Decrypt"],
      Resource: [arn("kms", "key/*")],
      Condition: {
        StringEquals: { "kms:ViaService": `secretsmanager.${b.region}.amazonaws.com` },
        StringLike: { "kms:EncryptionContext:SecretARN": arn("secretsmanager", `secret:${APP}/${b.stage}/*`) },
      },
    },
  ];
  if (b.resumeBucket && b.resumeBucketPrefix) {
    // The stage's prefix only: another stage sharing the bucket keeps its own (the bootstrap refuses
    // two stages whose prefixes of one bucket overlap: resumePrefixProblems).
    out.push({ Sid: "ResumeBucket", Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject"], Resource: [`arn:${b.partition}:s3:::${b.resumeBucket}/${b.resumeBucketPrefix}*`] });
  }
  if (b.vpc) {
    out.push(
      {
        Sid: "VpcNetworkInterfaces",
        Effect: "Allow",
        Action: ["ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"],
        // Lambda creates a function's network interfaces with its role: only in the stage's subnets
        // and security groups, so no code of the stage is ever placed in another team's network.
        Resource: [
          arn("ec2", "network-interface/*"),
          ...b.vpc.subnetIds.map((id) => arn("ec2", `subnet/${id}`)),
          ...b.vpc.securityGroupIds.map((id) => arn("ec2", `security-group/${id}`)),
        ],
      },
      { Sid: "VpcDescribe", Effect: "Allow", Action: ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"], Resource: ["*"] },
    );
  }
  out.push(erasureCheckBoundaryStatement(b, table));
  return out;
}

/**
 * The scheduled erasure check's role (infra-pulumi/src/erasure-check.ts): EventBridge Scheduler
 * invokes whatever target a schedule names as the role the schedule is given, so a role of the stage
 * may invoke this one function of the stage (deploy-permissions.json `erasureCheckFunction`) and no
 * other; its own policy names the same function.
 */
export function erasureCheckBoundaryStatement(b: BoundaryScope, table: PermissionsTable): PolicyStatement {
  return {
    Sid: "StageErasureCheck",
    Effect: "Allow",
    Action: ["lambda:InvokeFunction"],
    Resource: [`arn:${b.partition}:lambda:${b.region}:${b.account}:function:${APP}-${b.stage}-${table.erasureCheckFunction}`],
  };
}

// ---------------------------------------------------------------------------------------------
// Size: IAM counts a policy's characters without whitespace
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html): a role's inline
// policies together at most 10,240, a managed policy at most 6,144, 10 managed policies per role
// by default. The bootstrap keeps 10 % of each free.

export const INLINE_LIMIT = 10_240;
export const MANAGED_LIMIT = 6_144;
export const MANAGED_PER_ROLE = 10;
export const HEADROOM = 0.9;

export function policySize(doc: unknown): number {
  return JSON.stringify(doc).replace(/\s/g, "").length;
}

/** Packs statements, in order, into managed policy documents of at most 90 % of IAM's limit each. */
export function packManaged(statements: PolicyStatement[], limit = Math.floor(MANAGED_LIMIT * HEADROOM)): PolicyDocument[] {
  const docs: PolicyDocument[] = [];
  let current: PolicyStatement[] = [];
  for (const s of statements) {
    if (policySize(policyDocument([s])) > limit) throw new Error(`statement ${s.Sid} alone exceeds ${limit} characters`);
    if (current.length > 0 && policySize(policyDocument([...current, s])) > limit) {
      docs.push(policyDocument(current));
      current = [];
    }
    current.push(s);
  }
  if (current.length > 0) docs.push(policyDocument(current));
  return docs;
}

/** Everything that decides a deploy role's policies, as plain values. */
export interface DeployRoleInput {
  scope: StageScope;
  /** The S3 backend's bucket and its key; absent with Pulumi Cloud. */
  state?: { bucket: string; keyArn: string } | undefined;
  /** The stage's awskms secrets-provider key; absent with Pulumi Cloud. */
  secretsKeyArn?: string | undefined;
}

export interface DeployRolePolicies {
  /** The role's one inline policy: its state, its secrets provider, and the guard Denies. */
  inline: GuardDocument;
  /** The table's rows, rendered for the stage, packed into managed policies. */
  managed: PolicyDocument[];
}

/** The state statements of a deploy (write) or preview (read) role, with the bucket key via S3. */
export function stateAccessStatements(partition: string, region: string, bucket: string, keyArn: string, stage: string, write: boolean): PolicyStatement[] {
  return [
    ...stateStatements(partition, bucket, stage, write),
    {
      Sid: write ? "StateKeyReadWrite" : "StateKeyRead",
      Effect: "Allow",
      Action: write ? ["kms:GenerateDataKey", "kms:Decrypt"] : ["kms:Decrypt"],
      Resource: [keyArn],
      Condition: { StringEquals: { "kms:ViaService": `s3.${region}.amazonaws.com` } },
    },
  ];
}

/** The deploy role's policies exactly as the bootstrap attaches them (the rehearsal evaluates these). */
export function deployRolePolicies(input: DeployRoleInput, table: PermissionsTable = loadPermissions()): DeployRolePolicies {
  const { scope } = input;
  const inline: GuardDocument = {
    Version: "2012-10-17",
    Statement: [
      ...(input.state ? stateAccessStatements(scope.partition, scope.region, input.state.bucket, input.state.keyArn, scope.stage, true) : []),
      ...(input.secretsKeyArn ? [secretsProviderStatement(input.secretsKeyArn, true)] : []),
      ...guardStatements(scope.partition, scope.account, scope.stage, scope.region),
      roleNameGuard(scope.partition, scope.account, scope.stage),
    ],
  };
  const managed = packManaged(deployStatements(scope, table));
  if (policySize(inline) > INLINE_LIMIT * HEADROOM) throw new Error(`deploy role ${scope.stage}: inline policy ${policySize(inline)} > 90 % of ${INLINE_LIMIT}`);
  if (managed.length > MANAGED_PER_ROLE - 2) throw new Error(`deploy role ${scope.stage}: ${managed.length} managed policies (keep two of the ${MANAGED_PER_ROLE} free)`);
  return { inline, managed };
}

/** The preview role's one inline policy: read its stage's state, decrypt its stage's config. */
export function previewRolePolicy(partition: string, region: string, stage: string, state: { bucket: string; keyArn: string }, secretsKeyArn: string): PolicyDocument {
  return policyDocument([
    ...stateAccessStatements(partition, region, state.bucket, state.keyArn, stage, false),
    secretsProviderStatement(secretsKeyArn, false),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Key policies of the bootstrap's keys: no account-root statement (no IAM policy elsewhere in the
// account reaches them); the break-glass administrators of `sophia-bootstrap:keyAdministrators`
// administer them (and run the bootstrap, so KMS's lockout check passes); the roles get exactly
// their use. https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-overview.html

/**
 * The AWS doc's key-administrator actions ("Allows key administrators to administer the KMS key").
 * infra-pulumi/src/secrets.ts keeps the same list for the stage key (another package); the deploy
 * rehearsal holds the two equal.
 */
export const KMS_ADMIN_ACTIONS = [
  "kms:Create*",
  "kms:Describe*",
  "kms:Enable*",
  "kms:List*",
  "kms:Put*",
  "kms:Update*",
  "kms:Revoke*",
  "kms:Disable*",
  "kms:Get*",
  "kms:Delete*",
  "kms:TagResource",
  "kms:UntagResource",
  "kms:ScheduleKeyDeletion",
  "kms:CancelKeyDeletion",
  "kms:RotateKeyOnDemand",
];

export interface KeyPolicyStatement {
  Sid: string;
  Effect: "Allow";
  Principal: { AWS: string[] };
  Action: string[];
  Resource: "*";
  Condition?: Condition;
}

export const PRINCIPAL_ARN = /^arn:aws[a-z-]*:iam::\d{12}:(role|user)\/[\w+=,.@/-]+$/;

function administrators(admins: string[]): KeyPolicyStatement {
  if (admins.length === 0 || admins.some((a) => !PRINCIPAL_ARN.test(a))) {
    throw new Error("sophia-bootstrap:keyAdministrators must list IAM role or user ARNs (exact, path included)");
  }
  return { Sid: "KeyAdministrators", Effect: "Allow", Principal: { AWS: admins }, Action: KMS_ADMIN_ACTIONS, Resource: "*" };
}

/** The state bucket's key: administrators; the deploy roles write, the preview role reads, through S3 only. */
export function stateKeyPolicy(args: { admins: string[]; writers: string[]; readers: string[]; region: string }): { Version: "2012-10-17"; Statement: KeyPolicyStatement[] } {
  const viaS3 = { StringEquals: { "kms:ViaService": `s3.${args.region}.amazonaws.com` } };
  const st: KeyPolicyStatement[] = [
    administrators(args.admins),
    { Sid: "WriteStateViaS3", Effect: "Allow", Principal: { AWS: [...args.admins, ...args.writers] }, Action: ["kms:GenerateDataKey", "kms:Decrypt"], Resource: "*", Condition: viaS3 },
  ];
  if (args.readers.length > 0) st.push({ Sid: "ReadStateViaS3", Effect: "Allow", Principal: { AWS: args.readers }, Action: ["kms:Decrypt"], Resource: "*", Condition: viaS3 });
  return { Version: "2012-10-17", Statement: st };
}

/** A stage's secrets-provider key: administrators and its deploy role encrypt and decrypt; its preview role decrypts. */
export function secretsProviderKeyPolicy(args: { admins: string[]; deployRole: string; previewRole?: string | undefined }): { Version: "2012-10-17"; Statement: KeyPolicyStatement[] } {
  const st: KeyPolicyStatement[] = [
    administrators(args.admins),
    { Sid: "StackSecretsEncryptDecrypt", Effect: "Allow", Principal: { AWS: [...args.admins, args.deployRole] }, Action: ["kms:Encrypt", "kms:Decrypt"], Resource: "*" },
  ];
  if (args.previewRole) st.push({ Sid: "StackSecretsDecrypt", Effect: "Allow", Principal: { AWS: [args.previewRole] }, Action: ["kms:Decrypt"], Resource: "*" });
  return { Version: "2012-10-17", Statement: st };
}

// ---------------------------------------------------------------------------------------------
// The API's and the operators' access to a stage (docs/design.md, "Who can change the API's and
// the operators' access"). Principals outside the stage (the API's task role, operators' roles)
// hold these managed policies; they live under the bootstrap's path, where every deploy role is
// denied every IAM call, so no deploy can widen them. Their content follows declarations/queues.json
// (exact queue, DLQ and function names of the stage); a queue added there reaches them at the next
// bootstrap run.

export const DECLARATIONS_FILE = path.join(__dirname, "..", "..", "declarations", "queues.json");

/** What the access policies need from declarations/queues.json. */
export interface StageDeclarations {
  queues: { name: string; dlqName: string; publishedByApi: boolean }[];
  functions: string[];
  /** The operator audit trail's log group, after `<app>-<stage>-`. */
  operatorAuditLogGroup: string;
}

export function loadDeclarations(file: string = DECLARATIONS_FILE): StageDeclarations {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as {
    queues: { name: string; dlqName: string; publishedByApi?: boolean }[];
    functions: { name: string }[];
    operatorAuditLogGroup: string;
  };
  return {
    queues: raw.queues.map((q) => ({ name: q.name, dlqName: q.dlqName, publishedByApi: q.publishedByApi === true })),
    functions: raw.functions.map((f) => f.name),
    operatorAuditLogGroup: raw.operatorAuditLogGroup,
  };
}

/** The operator audit trail's log group: `<app>-<stage>-<operatorAuditLogGroup>` (declarations/queues.json). */
export const auditLogGroupName = (stage: string, d: Pick<StageDeclarations, "operatorAuditLogGroup"> = loadDeclarations()): string => `${APP}-${stage}-${d.operatorAuditLogGroup}`;
export const auditLogGroupArn = (partition: string, region: string, account: string, stage: string): string =>
  `arn:${partition}:logs:${region}:${account}:log-group:${auditLogGroupName(stage)}`;
/** How long the operator audit trail is kept (a CloudWatch Logs retention value). */
export const AUDIT_RETENTION_DAYS = 400;

export const apiPublishPolicyName = (stage: string): string => `${APP}-bootstrap-${stage}-api-publish`;
export const opsPolicyName = (stage: string): string => `${APP}-bootstrap-${stage}-ops`;

/**
 * The actions, as infra-pulumi/src/iam.ts names them for the VPC endpoint policy (another
 * package: the confinement test holds the two equal).
 */
export const API_PUBLISH_ACTIONS = ["sqs:SendMessage"];
export const OPS_QUEUE_ACTIONS = ["sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"];
export const OPS_DLQ_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:ChangeMessageVisibility",
  "sqs:GetQueueUrl",
  "sqs:GetQueueAttributes",
  "sqs:StartMessageMoveTask",
  "sqs:ListMessageMoveTasks",
  "sqs:CancelMessageMoveTask",
];
export const OPS_FUNCTION_READ_ACTIONS = ["lambda:GetFunctionConfiguration"];
/** No required resource type in AWS's data: granted on `*` (read-only). */
export const OPS_ACCOUNT_READ_ACTIONS = ["lambda:ListEventSourceMappings", "cloudwatch:GetMetricData"];
/**
 * sophia-ops `queue pause|resume`: never UpdateEventSourceMapping (IAM cannot narrow its parameters:
 * whoever may call it may also re-point or filter the mapping). The operators start the bootstrap's
 * pause switch instead: one SSM Automation document per stage, `<app>-bootstrap-<stage>-mapping-enabled`
 * (mappingSwitchDocument), whose one request sets Enabled on the mapping whose UUID it is given
 * (a parameter held to a UUID's form by allowedPattern), run by the bootstrap's role
 * `<app>-bootstrap-<stage>-mapping-switch`, which may update only the stage's mappings (tagged as
 * the stage's, invoking one of its functions). Both are the bootstrap's (its IAM path, its
 * document names): no deploy role may write the document, whose content is what on-call runs
 * (a document without an assumeRole runs with the rights of whoever starts it).
 */
export const OPS_SWITCH_ACTIONS = ["ssm:StartAutomationExecution"];
export const OPS_SWITCH_READ_ACTIONS = ["ssm:GetAutomationExecution"];
/** sophia-ops reads the document (its content and version) before it starts that version. */
export const OPS_SWITCH_DOCUMENT_READ_ACTIONS = ["ssm:GetDocument"];
export const mappingSwitchRoleName = (stage: string): string => `${APP}-bootstrap-${stage}-mapping-switch`;
export const mappingSwitchDocumentName = (stage: string): string => `${APP}-bootstrap-${stage}-mapping-enabled`;
export const mappingSwitchRoleArn = (partition: string, account: string, stage: string): string =>
  iamArn(partition, account, "role", BOOTSTRAP_PATH, mappingSwitchRoleName(stage));
/** A Lambda event source mapping's UUID, the document's one free-form parameter (SSM refuses any other value). */
export const MAPPING_UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/**
 * The pause switch's document: one request, UpdateEventSourceMapping with the given UUID and
 * Enabled, nothing else, with the switch role. sophia-ops (tools/ops/src/pause_switch.rs) refuses
 * to start a document whose content is not of exactly this form.
 */
export function mappingSwitchDocument(roleArn: string): Record<string, unknown> {
  return {
    schemaVersion: "0.3",
    description: "Pause (Enabled false) or resume (Enabled true) one event source mapping of the stage; nothing else.",
    assumeRole: roleArn,
    parameters: {
      MappingUuid: { type: "String", description: "the mapping's UUID", allowedPattern: MAPPING_UUID_PATTERN },
      Enabled: { type: "Boolean", description: "false pauses the mapping, true resumes it" },
    },
    mainSteps: [
      {
        name: "SetEnabled",
        action: "aws:executeAwsApi",
        inputs: { Service: "lambda", Api: "UpdateEventSourceMapping", UUID: "{{ MappingUuid }}", Enabled: "{{ Enabled }}" },
        outputs: [{ Name: "State", Selector: "$.State", Type: "String" }],
      },
    ],
  };
}

/** SSM Automation of this account only (the confused-deputy conditions AWS recommends for a service role). */
export function mappingSwitchTrustPolicy(partition: string, region: string, account: string): Record<string, unknown> {
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Service: "ssm.amazonaws.com" },
        Action: "sts:AssumeRole",
        Condition: {
          StringEquals: { "aws:SourceAccount": account },
          ArnLike: { "aws:SourceArn": `arn:${partition}:ssm:${region}:${account}:automation-execution/*` },
        },
      },
    ],
  };
}

/**
 * The switch role's one grant: set a mapping of the stage, one tagged as the stage's
 * (aws:ResourceTag/stage) and, when the request carries lambda:FunctionArn, whose function is one
 * of the stage's (exact names from declarations/queues.json). Another stage's mapping, an untagged
 * one or another team's is refused whatever UUID the document is given.
 *
 * `ArnEqualsIfExists`, not `ArnEquals`: the switch document's one step sends the UUID and Enabled,
 * never FunctionName. Should Lambda fill lambda:FunctionArn only from a request's FunctionName, a
 * plain ArnEquals on an absent key is false and every pause and resume would be AccessDenied in
 * the incident it exists for. The stage tag confines the grant alone: no deploy role can set or
 * remove a mapping's stage tag (infra-pulumi/test/rehearsal/confinement.test.ts). The real
 * account's check is docs/deploy.md's "What only AWS can show".
 */
export function mappingSwitchStatements(s: AccessScope, d: Pick<StageDeclarations, "functions">): PolicyStatement[] {
  const arn = (rest: string) => `arn:${s.partition}:lambda:${s.region}:${s.account}:${rest}`;
  return [
    {
      Sid: "StageMappingsEnabled",
      Effect: "Allow",
      Action: ["lambda:UpdateEventSourceMapping"],
      Resource: [arn("event-source-mapping:*")],
      Condition: {
        ArnEqualsIfExists: { "lambda:FunctionArn": d.functions.map((f) => arn(`function:${APP}-${s.stage}-${f}`)) },
        StringEquals: { "aws:ResourceTag/stage": s.stage },
      },
    },
  ];
}

/**
 * sophia-ops' audit trail (the stage's operator audit log group): append only. A new stream per
 * command and its events; no `logs:DeleteLogStream`, `logs:DeleteLogGroup`, `logs:PutRetentionPolicy`
 * or `logs:DeleteRetentionPolicy`, so the operator role cannot change or remove a record it wrote.
 */
export const OPS_AUDIT_APPEND_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"];
export const OPS_AUDIT_READ_ACTIONS = ["logs:FilterLogEvents"];
/**
 * Whose stream: an operator creates and appends to streams under a prefix AWS fills from the
 * session, never from the client (IAM policy variables in the resource:
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html), so the
 * stream's name is the identity `sophia-ops audit list` shows:
 * - `source/<source identity>/...`: a role session with a source identity (`aws:SourceIdentity`,
 *   set once by the first AssumeRole or the identity provider and kept through role chaining:
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_temp_control-access_monitor.html);
 * - `user/<user name>/...`: an IAM user (`aws:username`, present for IAM users only).
 * Not `aws:userid`: for a role session it is `<role id>:<session name>`, and a log stream's name
 * cannot hold a colon (CloudWatch Logs' LogStreamName pattern `[^:*]*`), so no stream could match.
 * Neither value can hold a slash (source identity `[\w+=,.@-]*`, user names likewise), so one
 * identity's prefix never covers another's. tools/ops/src/audit_trail.rs names the streams so.
 */
export const AUDIT_STREAM_PREFIXES = { sourceIdentity: "source/${aws:SourceIdentity}/", user: "user/${aws:username}/" } as const;

export interface AccessScope {
  partition: string;
  region: string;
  account: string;
  stage: string;
}

/** The API's task role: SendMessage on exactly the queues the API publishes to. */
export function apiPublishStatements(s: AccessScope, d: StageDeclarations): PolicyStatement[] {
  const queue = (name: string) => `arn:${s.partition}:sqs:${s.region}:${s.account}:${APP}-${s.stage}-${name}`;
  const published = d.queues.filter((q) => q.publishedByApi);
  if (published.length === 0) throw new Error("declarations/queues.json: no queue is publishedByApi");
  return [{ Sid: "ApiPublish", Effect: "Allow", Action: API_PUBLISH_ACTIONS, Resource: published.map((q) => queue(q.name)) }];
}

/** sophia-ops: publish to the queues; list, show and redrive the DLQs; queue status, pause and resume; append to its audit trail. */
export function opsStatements(s: AccessScope, d: StageDeclarations): PolicyStatement[] {
  const arn = (svc: string, rest: string) => `arn:${s.partition}:${svc}:${s.region}:${s.account}:${rest}`;
  const name = (n: string) => `${APP}-${s.stage}-${n}`;
  const auditGroup = arn("logs", `log-group:${name(d.operatorAuditLogGroup)}`);
  return [
    { Sid: "OpsQueues", Effect: "Allow", Action: OPS_QUEUE_ACTIONS, Resource: d.queues.map((q) => arn("sqs", name(q.name))) },
    { Sid: "OpsDeadLetterQueues", Effect: "Allow", Action: OPS_DLQ_ACTIONS, Resource: d.queues.map((q) => arn("sqs", name(q.dlqName))) },
    { Sid: "OpsFunctions", Effect: "Allow", Action: OPS_FUNCTION_READ_ACTIONS, Resource: d.functions.map((f) => arn("lambda", `function:${name(f)}`)) },
    { Sid: "OpsQueueStatus", Effect: "Allow", Action: OPS_ACCOUNT_READ_ACTIONS, Resource: ["*"] },
    {
      // Pause and resume: start the bootstrap's switch document of this stage (sophia-ops starts the
      // version it read and checked), and a new execution of it; nothing else of SSM.
      Sid: "OpsPauseSwitch",
      Effect: "Allow",
      Action: OPS_SWITCH_ACTIONS,
      Resource: [
        arn("ssm", `document/${mappingSwitchDocumentName(s.stage)}`),
        arn("ssm", `automation-definition/${mappingSwitchDocumentName(s.stage)}:*`),
        arn("ssm", "automation-execution/*"),
      ],
    },
    { Sid: "OpsPauseSwitchDocument", Effect: "Allow", Action: OPS_SWITCH_DOCUMENT_READ_ACTIONS, Resource: [arn("ssm", `document/${mappingSwitchDocumentName(s.stage)}`)] },
    { Sid: "OpsPauseSwitchStatus", Effect: "Allow", Action: OPS_SWITCH_READ_ACTIONS, Resource: [arn("ssm", "automation-execution/*")] },
    {
      // SSM runs the document with the switch role, which the operator passes: that role, to SSM only.
      Sid: "OpsPassSwitchRole",
      Effect: "Allow",
      Action: ["iam:PassRole"],
      Resource: [mappingSwitchRoleArn(s.partition, s.account, s.stage)],
      Condition: { StringEquals: { "iam:PassedToService": "ssm.amazonaws.com" } },
    },
    // One statement per variable: a variable the request lacks (aws:SourceIdentity for an IAM user,
    // aws:username for a role session) leaves its statement matching nothing.
    { Sid: "OpsAuditAppendSourceIdentity", Effect: "Allow", Action: OPS_AUDIT_APPEND_ACTIONS, Resource: [`${auditGroup}:log-stream:${AUDIT_STREAM_PREFIXES.sourceIdentity}*`] },
    { Sid: "OpsAuditAppendUser", Effect: "Allow", Action: OPS_AUDIT_APPEND_ACTIONS, Resource: [`${auditGroup}:log-stream:${AUDIT_STREAM_PREFIXES.user}*`] },
    { Sid: "OpsAuditRead", Effect: "Allow", Action: OPS_AUDIT_READ_ACTIONS, Resource: [auditGroup, `${auditGroup}:*`] },
  ];
}
