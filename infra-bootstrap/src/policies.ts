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
  /** Only for a stage placed in a VPC (`sophia:vpc`). */
  when?: "vpc";
}

export interface TableRow {
  source: string;
  statements: TableStatement[];
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
  resourceTypes: Record<string, TableRow>;
  previewActions: Record<string, PreviewAction>;
}

export function loadPermissions(file: string = PERMISSIONS_FILE): PermissionsTable {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as PermissionsTable & { previewActions: Record<string, unknown> };
  const previewActions = Object.fromEntries(
    Object.entries(raw.previewActions).filter(([k]) => !k.startsWith("$")),
  ) as Record<string, PreviewAction>;
  return { migrateFunction: raw.migrateFunction, resourceTypes: raw.resourceTypes, previewActions };
}

/** What a stage's deploy role is scoped to. */
export interface StageScope {
  partition: string;
  region: string;
  account: string;
  stage: string;
  /** `sophia:secretsExtensionLayerArn` of the stage. */
  layerArn: string;
  /** The stage sets `sophia:vpc`. */
  vpc: boolean;
}

export interface PolicyStatement {
  Sid: string;
  Effect: "Allow" | "Deny";
  Action: string[];
  Resource: string[];
  Condition?: Condition;
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: PolicyStatement[];
}

export const APP = "sophia";

function render(template: string, scope: StageScope, table: PermissionsTable): string {
  const prefix = `${APP}-${scope.stage}`;
  const values: Record<string, string> = {
    partition: scope.partition,
    region: scope.region,
    account: scope.account,
    stage: scope.stage,
    prefix,
    layerArn: scope.layerArn,
    migrateFunction: `${prefix}-${table.migrateFunction}`,
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
      Object.entries(kv).map(([k, v]) => [k, Array.isArray(v) ? v.map((x) => render(x, scope, table)) : render(v, scope, table)]),
    );
  }
  return out;
}

const sid = (type: string, i: number, effect: string) =>
  `${effect}${type.split(":")[2] ?? type}${i}`.replace(/[^A-Za-z0-9]/g, "");

/** The deploy role's statements for the stage: every row of the table, rendered for the stage. */
export function deployStatements(scope: StageScope, table: PermissionsTable = loadPermissions()): PolicyStatement[] {
  const out: PolicyStatement[] = [];
  for (const [type, row] of Object.entries(table.resourceTypes)) {
    const emit = (list: TableStatement[] | undefined, effect: "Allow" | "Deny") =>
      (list ?? [])
        .filter((s) => s.when !== "vpc" || scope.vpc)
        .forEach((s, i) => {
          const condition = renderCondition(s.condition, scope, table);
          out.push({
            Sid: sid(type, i, effect),
            Effect: effect,
            Action: [...s.actions],
            Resource: s.resources.map((r) => render(r, scope, table)),
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
    o(`.pulumi/history/${project}/${stage}/*`),
    o(`.pulumi/backups/${project}/${stage}/*`),
    o(`.pulumi/locks/${project}/${stage}/*`),
  ];
}

/** Read-write on the stage's own state objects; read of the backend's metadata; list of the bucket. */
export function stateStatements(partition: string, bucket: string, stage: string, write: boolean): PolicyStatement[] {
  return [
    {
      Sid: write ? "StageStateReadWrite" : "StageStateRead",
      Effect: "Allow",
      Action: write ? ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"] : ["s3:GetObject"],
      Resource: stateObjectArns(partition, bucket, stage),
    },
    { Sid: "BackendMetadataRead", Effect: "Allow", Action: ["s3:GetObject"], Resource: [`arn:${partition}:s3:::${bucket}/.pulumi/meta.yaml`] },
    { Sid: "BackendList", Effect: "Allow", Action: ["s3:ListBucket"], Resource: [`arn:${partition}:s3:::${bucket}`] },
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
 * Trust policy for GitHub OIDC tokens whose `sub` is exactly `subject`: a deploy role trusts
 * `repo:<owner>/<repo>:environment:<env>` (only a job of that environment), the preview role
 * `repo:<owner>/<repo>:pull_request` (only pull request jobs).
 */
export interface TrustDocument {
  Version: "2012-10-17";
  Statement: { Sid: string; Effect: "Allow"; Principal: { Federated: string }; Action: string; Condition: Condition }[];
}

export function githubTrustPolicy(providerArn: string, subject: string): TrustDocument {
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "GitHubActionsOidc",
        Effect: "Allow",
        Principal: { Federated: providerArn },
        Action: "sts:AssumeRoleWithWebIdentity",
        Condition: {
          StringEquals: { [`${GITHUB_OIDC_HOST}:aud`]: GITHUB_OIDC_AUDIENCE, [`${GITHUB_OIDC_HOST}:sub`]: subject },
        },
      },
    ],
  };
}

export function policyDocument(statements: PolicyStatement[]): PolicyDocument {
  return { Version: "2012-10-17", Statement: statements };
}

/** GitHub environment names: a stage's environment is its name, except prod's (`production`). */
export function environmentOf(stage: string, overrides: Record<string, string> = {}): string {
  return overrides[stage] ?? (stage === "prod" ? "production" : stage);
}

/** Fails on a wildcard action, on `*` resources outside the table's explicit ones, and on Deny-less kms:*. */
export function assertNoWildcardActions(doc: PolicyDocument): void {
  for (const s of doc.Statement) {
    for (const a of s.Action) if (a.includes("*")) throw new Error(`wildcard action ${a} in ${s.Sid}`);
  }
}
