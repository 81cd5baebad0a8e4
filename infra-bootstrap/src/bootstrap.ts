/**
 * The account-level resources the stages of one AWS account need, created once by an administrator
 * (`docs/deploy.md`):
 *
 * - the GitHub OIDC provider (or an existing one, `oidcProviderArn`);
 * - per stage, a deploy role trusted only for that stage's GitHub environment: the table
 *   `deploy-permissions.json` rendered for the stage as managed policies, and an inline policy with
 *   its state, its secrets key and the guard Denies (policies.ts, `deployRolePolicies`);
 * - per stage, the permissions boundary every role the stage creates must carry;
 * - a read-only preview role trusted only for jobs of the GitHub environment `preview` (reads the
 *   previewed stage's state, decrypts its config; writes nothing);
 * - the state backend bucket (versioning, SSE-KMS with its own key, public access blocked, TLS only,
 *   bucket-owner objects) and, per stage, the key of the `awskms` secrets provider; both keys with
 *   explicit key policies (the break-glass `keyAdministrators`, no account-root statement).
 *
 * The bootstrap's roles and policies live under the IAM path `/sophia-bootstrap/`, outside every
 * stage's `/sophia/<stage>/`: no deploy role can change them.
 *
 * Stage facts (region, extension layer, VPC) come from the committed `Pulumi.<stage>.yaml`.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import * as yaml from "js-yaml";

import {
  APP,
  AUDIT_RETENTION_DAYS,
  auditLogGroupName,
  BOOTSTRAP_PATH,
  boundaryPolicyName,
  boundaryStatements,
  collidingStages,
  resumePrefixProblems,
  deployRoleName,
  deployRolePolicies,
  environmentOf,
  GITHUB_OIDC_AUDIENCE,
  GITHUB_OIDC_HOST,
  githubTrustPolicy,
  deploySubject,
  previewSubjectPattern,
  KMS_ADMIN_ACTIONS,
  loadPermissions,
  loadStageNames,
  policyDocument,
  previewRoleName,
  previewRolePolicy,
  PRINCIPAL_ARN,
  secretsProviderKeyPolicy,
  stateKeyPolicy,
  type AlarmScope,
  type VpcScope,
  apiPublishPolicyName,
  apiPublishStatements,
  loadDeclarations,
  opsPolicyName,
  opsStatements,
  mappingSwitchDocument,
  mappingSwitchDocumentName,
  mappingSwitchRoleName,
  mappingSwitchStatements,
  mappingSwitchTrustPolicy,
} from "./policies";

/** The repository root (its `Pulumi.<stage>.yaml` files); tests point it elsewhere. */
export const REPO_ROOT = process.env["SOPHIA_BOOTSTRAP_REPO_ROOT"] ?? path.resolve(__dirname, "..", "..");
export const CONFIG_NAMESPACE = "sophia-bootstrap";
/** The GitHub environment the pull-request preview runs in (.github/workflows/infra.yml, scripts/protect-environments --preview). */
export const PREVIEW_ENVIRONMENT = "preview";

export interface StageFacts {
  stage: string;
  region: string;
  layerArn: string;
  /** `sophia:vpc` of the stage (its VPC, subnets and security groups), or false. */
  vpc: VpcScope | false;
  environment: string;
  /** `sophia:resumeBucket` and `sophia:resumeBucketPrefix` (the function roles' boundary allows the objects under the prefix). */
  resumeBucket: string | undefined;
  resumeBucketPrefix: string | undefined;
  /** `sophia:alarmTopicArn` and `sophia:alarmSubscription`: the only alarm destinations outside the stage's names. */
  alarm: AlarmScope;
}

/**
 * The stack's own rules for the stage-file values the bootstrap writes into the boundary and deploy
 * ARNs (infra-pulumi/src/config.ts: the resume bucket and prefix in readNames and
 * readResumeBucketAccess, the VPC ids in parseVpc). Another package, so the patterns are repeated
 * here; infra-bootstrap/test/bootstrap.test.ts fails when a source here is not config.ts's.
 */
export const STAGE_FILE_PATTERNS = {
  resumeBucket: /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
  resumeBucketPrefix: /^[A-Za-z0-9!_.'()-]+(\/[A-Za-z0-9!_.'()-]+)*\/$/,
  vpcId: /^vpc-[0-9a-f]{8,17}$/,
  subnetId: /^subnet-[0-9a-f]{8,17}$/,
  securityGroupId: /^sg-[0-9a-f]{8,17}$/,
};

/** Reads what the bootstrap needs from a committed stage file; all problems at once. */
export function stageFacts(stage: string, region: string, environments: Record<string, string>, repoRoot = REPO_ROOT): StageFacts | string[] {
  const file = path.join(repoRoot, `Pulumi.${stage}.yaml`);
  if (!/^[a-z0-9][a-z0-9-]*$/.test(stage)) return [`stage "${stage}": lowercase letters, digits and '-' only`];
  if (!fs.existsSync(file)) return [`no Pulumi.${stage}.yaml at the repository root: write the stage's file first (docs/deploy.md, step 1)`];
  const config = ((yaml.load(fs.readFileSync(file, "utf8")) ?? {}) as { config?: Record<string, unknown> }).config ?? {};
  const problems: string[] = [];
  const stageRegion = config["aws:region"];
  if (stageRegion !== region) problems.push(`Pulumi.${stage}.yaml deploys to ${String(stageRegion)}, but this bootstrap stack is in ${region} (aws:region): one bootstrap stack per account and region`);
  const layerArn = config["sophia:secretsExtensionLayerArn"];
  if (typeof layerArn !== "string" || !/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$/.test(layerArn)) {
    problems.push(`Pulumi.${stage}.yaml: sophia:secretsExtensionLayerArn must be a layer version ARN (the deploy role may read exactly that layer)`);
  }
  const vpcConfig = config["sophia:vpc"] as { vpcId?: unknown; subnetIds?: unknown; securityGroupIds?: unknown } | undefined;
  const ids = (v: unknown, pattern: RegExp) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string" && pattern.test(x));
  const P = STAGE_FILE_PATTERNS;
  if (vpcConfig !== undefined && (typeof vpcConfig.vpcId !== "string" || !P.vpcId.test(vpcConfig.vpcId) || !ids(vpcConfig.subnetIds, P.subnetId) || !ids(vpcConfig.securityGroupIds, P.securityGroupId))) {
    problems.push(`Pulumi.${stage}.yaml: sophia:vpc must name vpcId (vpc-...), subnetIds (subnet-...) and securityGroupIds (sg-...), hex ids (the deploy role may create endpoints only in them)`);
  }
  const optional = (key: string, pattern: RegExp, what: string): string | undefined => {
    const v = config[key];
    if (v === undefined) return undefined;
    if (typeof v === "string" && pattern.test(v)) return v;
    problems.push(`Pulumi.${stage}.yaml: ${key} must be ${what} (the bootstrap writes it into the stage's boundary)`);
    return undefined;
  };
  const resumeBucket = optional("sophia:resumeBucket", P.resumeBucket, "an S3 bucket name");
  const resumeBucketPrefix = optional("sophia:resumeBucketPrefix", P.resumeBucketPrefix, "an object key prefix ending in '/' (no '*'), e.g. resumes/");
  const endpoints = (vpcConfig as { interfaceEndpoints?: unknown } | undefined)?.interfaceEndpoints;
  if (endpoints !== undefined && typeof endpoints !== "boolean") problems.push(`Pulumi.${stage}.yaml: sophia:vpc.interfaceEndpoints must be true or false`);
  const alarm = alarmFacts(stage, config, problems);
  if (problems.length > 0) return problems;
  const vpc: VpcScope | false =
    vpcConfig === undefined
      ? false
      : { vpcId: vpcConfig.vpcId as string, subnetIds: vpcConfig.subnetIds as string[], securityGroupIds: vpcConfig.securityGroupIds as string[], interfaceEndpoints: endpoints === true };
  return { stage, region, layerArn: layerArn as string, vpc, environment: environmentOf(stage, environments), resumeBucket, resumeBucketPrefix, alarm };
}

/**
 * Where the stage's alarms go, as its stage file says: `sophia:alarmTopicArn` (a topic the stage's
 * alarms may name besides its own) and `sophia:alarmSubscription` (the one subscription the deploy
 * role may create on its own topic: that protocol and endpoint only).
 */
function alarmFacts(stage: string, config: Record<string, unknown>, problems: string[]): AlarmScope {
  const out: AlarmScope = {};
  const topic = config["sophia:alarmTopicArn"];
  if (topic !== undefined) {
    if (typeof topic === "string" && /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+$/.test(topic)) out.topicArn = topic;
    else problems.push(`Pulumi.${stage}.yaml: sophia:alarmTopicArn must be an SNS topic ARN`);
  }
  const raw = config["sophia:alarmSubscription"];
  if (raw !== undefined) {
    const sub = (typeof raw === "string" ? JSON.parse(raw) : raw) as { protocol?: unknown; endpoint?: unknown };
    if (typeof sub.protocol === "string" && typeof sub.endpoint === "string") out.subscription = { protocol: sub.protocol, endpoint: sub.endpoint };
    else problems.push(`Pulumi.${stage}.yaml: sophia:alarmSubscription must name protocol and endpoint`);
  }
  return out;
}

export interface BootstrapConfig {
  /** `owner/repo` of the GitHub repository whose workflows deploy. */
  githubRepository: string;
  stages: string[];
  /** GitHub environment per stage (default: the stage's name, `production` for the production stage `prod-rs`, declarations/stages.json). */
  environments: Record<string, string>;
  /** The stage pull requests preview (default `dev` when it is one of `stages`). */
  previewStage: string | undefined;
  /** An existing provider for token.actions.githubusercontent.com (one per account); else it is created. */
  oidcProviderArn: string | undefined;
  /** `s3`: the state bucket and per-stage awskms keys are created here; `pulumi-cloud`: neither. */
  backend: "s3" | "pulumi-cloud";
  /** Unprotected bootstrap (tests, a throwaway account): the bucket may be destroyed. */
  protect: boolean;
  /**
   * The break-glass principals (exact IAM role or user ARNs, path included) that administer the
   * state key and the secrets-provider keys; whoever runs the bootstrap must be one of them.
   */
  keyAdministrators: string[];
  /**
   * Break-glass roles by pattern (`aws:PrincipalArn`, ArnLike): roles whose exact ARN changes when
   * they are re-provisioned (an IAM Identity Center permission set's role gets a new suffix), e.g.
   * `arn:aws:iam::<account>:role/aws-reserved/sso.amazonaws.com/<region>/AWSReservedSSO_BreakGlass_<suffix>` with `*` for
   * `<region>` and `<suffix>`.
   * They administer the bootstrap's keys as `keyAdministrators` do (docs/deploy.md, "Break-glass
   * principals").
   */
  breakGlassRoles: string[];
  /**
   * An existing IAM Access Analyzer external-access analyzer of this account and Region (AWS allows
   * one account-level analyzer per account and Region: https://docs.aws.amazon.com/IAM/latest/UserGuide/access-analyzer-quotas.html),
   * or an organization's; without it the bootstrap creates one.
   */
  accessAnalyzerArn: string | undefined;
  /**
   * Stages whose operator audit log group their own stack created (before the bootstrap owned it):
   * the bootstrap adopts it (`import`) instead of creating it. docs/deploy.md, "What the bootstrap
   * creates", says the one-time step.
   */
  adoptAuditLogGroups: string[];
}

/** A role ARN pattern: a role of one account whose name keeps a literal prefix (a permission set's name). */
export const BREAK_GLASS_ROLE_PATTERN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/*-]*\/?[\w+=,.@-]{4,}\*?$/;

/** The problems of a breakGlassRoles list, all at once. */
export function breakGlassProblems(patterns: unknown): string[] {
  if (!Array.isArray(patterns)) return [`${CONFIG_NAMESPACE}:breakGlassRoles must be a list of role ARN patterns`];
  return patterns
    .filter((p) => typeof p !== "string" || !BREAK_GLASS_ROLE_PATTERN.test(p) || !p.includes("*"))
    .map(
      (p) =>
        `${CONFIG_NAMESPACE}:breakGlassRoles: ${JSON.stringify(p)} must be a role ARN with '*' only where re-provisioning changes it, its name's stable prefix literal (…/AWSReservedSSO_BreakGlass_*); exact ARNs go in keyAdministrators`,
    );
}

/** The names of the bootstrap's outputs (index.ts exports them under `all`); the deploy docs name only these. */
export function outputNames(config: Pick<BootstrapConfig, "stages" | "previewStage" | "backend">): string[] {
  const keyOf = (stage: string) => stage.toUpperCase().replace(/-/g, "_");
  return [
    "OIDC_PROVIDER_ARN",
    ...config.stages.flatMap((s) => [
      `${keyOf(s)}_DEPLOY_ROLE_ARN`,
      `${keyOf(s)}_EXTENSION_LAYER_ARN`,
      `${keyOf(s)}_API_PUBLISH_POLICY_ARN`,
      `${keyOf(s)}_OPS_POLICY_ARN`,
    ]),
    ...(config.previewStage !== undefined ? ["PREVIEW_ROLE_ARN"] : []),
    ...(config.backend === "s3" ? ["PULUMI_BACKEND_URL", ...config.stages.map((s) => `${keyOf(s)}_SECRETS_PROVIDER`)] : []),
  ];
}

interface BreakGlassStatement {
  Sid: "BreakGlassRoles";
  Effect: "Allow";
  Principal: { AWS: string };
  Action: string[];
  Resource: "*";
  Condition: { ArnLike: { "aws:PrincipalArn": string[] } };
}

/**
 * A bootstrap key's policy with the break-glass role patterns. The account principal delegates to
 * IAM ("Allows access to the AWS account and enables IAM policies",
 * https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html), and the condition
 * on `aws:PrincipalArn` (for a role session: the role's ARN, path included,
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-principalarn)
 * keeps every other principal of the account out: only a role matching a pattern, and only with an
 * IAM policy allowing the action, gets the administrators' actions. The account principal always
 * exists, so KMS accepts the policy however often the role is re-provisioned.
 */
export function withBreakGlassRoles<T extends { Version: "2012-10-17"; Statement: unknown[] }>(
  policy: T,
  patterns: string[],
  partition: string,
  account: string,
): T | (Omit<T, "Statement"> & { Statement: (T["Statement"][number] | BreakGlassStatement)[] }) {
  if (patterns.length === 0) return policy;
  const foreign = patterns.filter((p) => p.split(":")[4] !== account);
  if (foreign.length > 0) throw new Error(`${CONFIG_NAMESPACE}:breakGlassRoles must be roles of this account (${account}): ${foreign.join(", ")}`);
  return {
    ...policy,
    Statement: [
      ...policy.Statement,
      {
        Sid: "BreakGlassRoles",
        Effect: "Allow",
        Principal: { AWS: `arn:${partition}:iam::${account}:root` },
        Action: [...KMS_ADMIN_ACTIONS],
        Resource: "*",
        Condition: { ArnLike: { "aws:PrincipalArn": patterns } },
      },
    ],
  };
}

export function loadBootstrapConfig(): BootstrapConfig {
  const c = new pulumi.Config(CONFIG_NAMESPACE);
  const problems: string[] = [];
  const githubRepository = c.require("githubRepository");
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(githubRepository)) problems.push(`${CONFIG_NAMESPACE}:githubRepository must be owner/repo, got ${JSON.stringify(githubRepository)}`);
  const stages = c.requireObject<string[]>("stages");
  if (!Array.isArray(stages) || stages.length === 0) problems.push(`${CONFIG_NAMESPACE}:stages must list the stages of this account, e.g. [dev]`);
  const environments = c.getObject<Record<string, string>>("environments") ?? {};
  const previewStage = c.get("previewStage") ?? (stages.includes("dev") ? "dev" : undefined);
  if (previewStage !== undefined && !stages.includes(previewStage)) problems.push(`${CONFIG_NAMESPACE}:previewStage ${previewStage} is not one of the stages ${stages.join(", ")}`);
  if (previewStage !== undefined && loadStageNames().protectedStages.includes(previewStage)) {
    problems.push(`${CONFIG_NAMESPACE}:previewStage must not be a protected stage: a pull request's code runs in the preview and can read that stage's config`);
  }
  const backend = (c.get("backend") ?? "s3") as BootstrapConfig["backend"];
  if (!["s3", "pulumi-cloud"].includes(backend)) problems.push(`${CONFIG_NAMESPACE}:backend must be s3 or pulumi-cloud`);
  const protect = c.getBoolean("protect") ?? true;
  const keyAdministrators = c.getObject<string[]>("keyAdministrators") ?? [];
  if (backend === "s3" && (!Array.isArray(keyAdministrators) || keyAdministrators.length === 0 || keyAdministrators.some((a) => typeof a !== "string" || !PRINCIPAL_ARN.test(a)))) {
    problems.push(`${CONFIG_NAMESPACE}:keyAdministrators must list the break-glass IAM role or user ARNs (exact, path included) that administer the state and secrets keys`);
  }
  const breakGlassRoles = c.getObject<string[]>("breakGlassRoles") ?? [];
  problems.push(...breakGlassProblems(breakGlassRoles));
  if (Array.isArray(stages)) problems.push(...collidingStages(stages));
  const accessAnalyzerArn = c.get("accessAnalyzerArn");
  if (accessAnalyzerArn !== undefined && !/^arn:aws[a-z-]*:access-analyzer:[a-z0-9-]+:\d{12}:analyzer\/[A-Za-z0-9_.-]+$/.test(accessAnalyzerArn)) {
    problems.push(`${CONFIG_NAMESPACE}:accessAnalyzerArn must be an analyzer ARN (arn:aws:access-analyzer:<region>:<account>:analyzer/<name>)`);
  }
  if (problems.length > 0) throw new pulumi.RunError(`Invalid bootstrap configuration:\n  - ${problems.join("\n  - ")}`);
  const adoptAuditLogGroups = c.getObject<string[]>("adoptAuditLogGroups") ?? [];
  if (!Array.isArray(adoptAuditLogGroups) || adoptAuditLogGroups.some((a) => !stages.includes(a))) problems.push(`${CONFIG_NAMESPACE}:adoptAuditLogGroups must list stages of ${CONFIG_NAMESPACE}:stages`);
  if (problems.length > 0) throw new pulumi.RunError(`Invalid bootstrap configuration:\n  - ${problems.join("\n  - ")}`);
  return { githubRepository, stages, environments, previewStage, oidcProviderArn: c.get("oidcProviderArn"), backend, protect, keyAdministrators, breakGlassRoles, accessAnalyzerArn, adoptAuditLogGroups };
}

export interface Bootstrap {
  oidcProviderArn: pulumi.Output<string>;
  deployRoles: Record<string, aws.iam.Role>;
  deployPolicies: Record<string, aws.iam.RolePolicy>;
  /** Per stage: the table's statements as managed policies attached to the deploy role. */
  deployManagedPolicies: Record<string, aws.iam.Policy[]>;
  /** Per stage: the permissions boundary every role of the stage carries. */
  boundaries: Record<string, aws.iam.Policy>;
  previewRole: aws.iam.Role | undefined;
  previewPolicy: aws.iam.RolePolicy | undefined;
  stateBucket: aws.s3.Bucket | undefined;
  secretsKeys: Record<string, aws.kms.Key>;
  /** Per stage: the API's publish policy and the operators' policy (held outside the stage). */
  accessPolicies: Record<string, { apiPublish: aws.iam.Policy; ops: aws.iam.Policy }>;
  /** Per stage: the pause switch (its role and document), the bootstrap's: no deploy of the stage may write them. */
  pauseSwitches: Record<string, { role: aws.iam.Role; document: aws.ssm.Document }>;
  /** Per stage: the operator audit trail's log group (no deploy of the stage may touch it). */
  auditLogGroups: Record<string, aws.cloudwatch.LogGroup>;
  /** The account's external-access analyzer, unless `accessAnalyzerArn` names an existing one. */
  accessAnalyzer: aws.accessanalyzer.Analyzer | undefined;
  outputs: Record<string, pulumi.Output<string>>;
}

const TAGS = { app: APP, "managed-by": "pulumi", purpose: "bootstrap" };

/** Where the bootstrap's resources go, and whether they are kept (`protect`) on a delete. */
interface Account {
  region: string;
  partition: pulumi.Output<string>;
  account: pulumi.Output<string>;
  /** protect + retainOnDelete, unless the bootstrap is unprotected. */
  kept: pulumi.CustomResourceOptions;
}

/** A stage's name as an output name's prefix: `dev-eu` -> `DEV_EU`. */
const outputKey = (stage: string) => stage.toUpperCase().replace(/-/g, "_");

/**
 * The bootstrap, in the order its resources are created: the OIDC provider, the roles, the state
 * backend and the secrets-provider keys, the deploy roles' policies and boundaries, the API's and
 * the operators' policies, the preview role's policy, the outputs.
 */
export function createBootstrap(config: BootstrapConfig = loadBootstrapConfig()): Bootstrap {
  const region = new pulumi.Config("aws").require("region");
  const facts = checkedStageFacts(config, region);
  const identity = aws.getCallerIdentityOutput();
  const partition = aws.getPartitionOutput().partition;
  const account: Account = { region, partition, account: identity.accountId, kept: config.protect ? { protect: true, retainOnDelete: true } : {} };

  const oidcProviderArn = githubOidcProvider(config, account);
  // The roles first (no policies yet): the keys' policies name them, and KMS refuses a policy
  // naming a principal that does not exist.
  const deploy = stageDeployRoles(config, facts, oidcProviderArn);
  const previewRole = pullRequestPreviewRole(config, oidcProviderArn);
  const backend = config.backend === "s3" ? stateBackend(config, facts, { deployRoles: deploy.roles, previewRole }, account) : undefined;
  const secretsKeys = backend?.secretsKeys ?? {};
  const stateOf = (): pulumi.Output<{ bucket: string; keyArn: string } | undefined> =>
    backend ? pulumi.all([backend.bucket.bucket, backend.key.arn]).apply(([bucket, keyArn]) => ({ bucket, keyArn })) : pulumi.output(undefined);
  const policies = stageDeployPolicies(facts, deploy.roles, secretsKeys, stateOf, account);
  const access = stageAccessPolicies(facts, account);
  const auditLogGroups = operatorAuditLogGroups(config, facts, account);
  const pauseSwitches = stagePauseSwitches(facts, account);
  const previewPolicy = previewRole && config.previewStage !== undefined ? previewRolePolicyOf(previewRole, config.previewStage, backend, stateOf, account) : undefined;
  const accessAnalyzer = externalAccessAnalyzer(config, account);

  const outputs: Record<string, pulumi.Output<string>> = {
    OIDC_PROVIDER_ARN: oidcProviderArn,
    ...deploy.outputs,
    ...(previewRole ? { PREVIEW_ROLE_ARN: previewRole.arn } : {}),
    ...access.outputs,
    ...(backend ? backendOutputs(backend.bucket, secretsKeys, region) : {}),
  };
  return {
    oidcProviderArn,
    deployRoles: deploy.roles,
    deployPolicies: policies.deployPolicies,
    deployManagedPolicies: policies.deployManagedPolicies,
    boundaries: policies.boundaries,
    previewRole,
    previewPolicy,
    stateBucket: backend?.bucket,
    secretsKeys,
    accessPolicies: access.policies,
    auditLogGroups,
    pauseSwitches,
    accessAnalyzer,
    outputs,
  };
}

/**
 * Per stage: the operators' pause switch (docs/runbook.md, "Oldest message too old"). Its
 * document's content is what on-call runs; its role may set Enabled on the stage's mappings only
 * (policies.ts, mappingSwitchStatements). Both under the bootstrap's names and path: every deploy
 * role is denied IAM on the path and SSM on the names (guardStatements), so no deploy of any stage
 * can change what the operators start. sophia-ops reads the document and starts the version it
 * checked (tools/ops/src/pause_switch.rs).
 */
function stagePauseSwitches(facts: StageFacts[], account: Account): Bootstrap["pauseSwitches"] {
  const declarations = loadDeclarations();
  const out: Bootstrap["pauseSwitches"] = {};
  for (const f of facts) {
    const role = new aws.iam.Role(`${f.stage}-mapping-switch`, {
      name: mappingSwitchRoleName(f.stage),
      path: BOOTSTRAP_PATH,
      description: `Sets Enabled on the ${f.stage} stage's event source mappings, run by SSM Automation only`,
      assumeRolePolicy: pulumi.all([account.partition, account.account]).apply(([p, a]) => JSON.stringify(mappingSwitchTrustPolicy(p, account.region, a))),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage: f.stage },
    });
    new aws.iam.RolePolicy(`${f.stage}-mapping-switch`, {
      role: role.id,
      name: "stage-mappings-enabled",
      policy: pulumi
        .all([account.partition, account.account])
        .apply(([p, a]) => JSON.stringify(policyDocument(mappingSwitchStatements({ partition: p, region: account.region, account: a, stage: f.stage }, declarations)))),
    });
    const document = new aws.ssm.Document(`${f.stage}-mapping-enabled`, {
      name: mappingSwitchDocumentName(f.stage),
      documentType: "Automation",
      documentFormat: "JSON",
      content: role.arn.apply((arn) => JSON.stringify(mappingSwitchDocument(arn))),
      tags: { ...TAGS, stage: f.stage },
    });
    out[f.stage] = { role, document };
  }
  return out;
}

/**
 * Each stage's operator audit trail (sophia-ops appends one stream per command: docs/runbook.md,
 * "Audit trail"): the bootstrap's, so no deploy of the stage can delete it, shorten its retention
 * or replace it (the deploy roles carry an explicit Deny on it, `guardStatements`); deletion
 * protection on (CloudWatch Logs refuses DeleteLogGroup until it is turned off), kept on a destroy
 * of a protected bootstrap. The operators' policy may only create streams, append and read.
 */
function operatorAuditLogGroups(config: BootstrapConfig, facts: StageFacts[], account: Account): Record<string, aws.cloudwatch.LogGroup> {
  const out: Record<string, aws.cloudwatch.LogGroup> = {};
  for (const f of facts) {
    const name = auditLogGroupName(f.stage);
    out[f.stage] = new aws.cloudwatch.LogGroup(
      `${f.stage}-operator-audit`,
      { name, retentionInDays: AUDIT_RETENTION_DAYS, deletionProtectionEnabled: true, tags: { ...TAGS, stage: f.stage } },
      { ...account.kept, ...(config.adoptAuditLogGroups.includes(f.stage) ? { import: name } : {}) },
    );
  }
  return out;
}

/**
 * The account's IAM Access Analyzer for external access: it reports every resource policy, trust
 * policy and KMS grant that lets a principal outside the account in (roles, keys, queues, secrets,
 * functions, topics: https://docs.aws.amazon.com/IAM/latest/UserGuide/access-analyzer-resources.html),
 * the detection of the residuals no IAM condition can hold (docs/threat-model.md). One account-level
 * analyzer per account and Region: name an existing one with `accessAnalyzerArn` instead.
 */
function externalAccessAnalyzer(config: BootstrapConfig, account: Account): aws.accessanalyzer.Analyzer | undefined {
  if (config.accessAnalyzerArn) return undefined;
  return new aws.accessanalyzer.Analyzer("external-access", { analyzerName: `${APP}-bootstrap-external-access`, type: "ACCOUNT", tags: TAGS }, account.kept);
}

/** Every stage's facts from its committed stage file; all the stages' problems at once. */
function checkedStageFacts(config: BootstrapConfig, region: string): StageFacts[] {
  const facts: StageFacts[] = [];
  const problems: string[] = [];
  for (const stage of config.stages) {
    const f = stageFacts(stage, region, config.environments);
    if (Array.isArray(f)) problems.push(...f);
    else facts.push(f);
  }
  problems.push(...resumePrefixProblems(facts));
  if (problems.length > 0) throw new pulumi.RunError(`The stages cannot be bootstrapped:\n  - ${problems.join("\n  - ")}`);
  return facts;
}

/** 1. GitHub's OIDC provider: one per account, so an existing one can be named instead. */
function githubOidcProvider(config: BootstrapConfig, account: Account): pulumi.Output<string> {
  return config.oidcProviderArn
    ? pulumi.output(config.oidcProviderArn)
    : new aws.iam.OpenIdConnectProvider(
        "github-oidc",
        // AWS trusts GitHub's certificate through its own root CAs: no thumbprint needed
        // (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html).
        { url: `https://${GITHUB_OIDC_HOST}`, clientIdLists: [GITHUB_OIDC_AUDIENCE], tags: TAGS },
        account.kept,
      ).arn;
}

/** 2. Per stage, the deploy role trusted for the stage's GitHub environment; its outputs with the stage's layer. */
function stageDeployRoles(
  config: BootstrapConfig,
  facts: StageFacts[],
  oidcProviderArn: pulumi.Output<string>,
): { roles: Record<string, aws.iam.Role>; outputs: Record<string, pulumi.Output<string>> } {
  const roles: Record<string, aws.iam.Role> = {};
  const outputs: Record<string, pulumi.Output<string>> = {};
  for (const f of facts) {
    roles[f.stage] = new aws.iam.Role(`${f.stage}-deploy`, {
      name: deployRoleName(f.stage),
      // Outside every stage's IAM path (/sophia/<stage>/): no deploy role's grant reaches it, and
      // every deploy role denies itself any IAM call on this path.
      path: BOOTSTRAP_PATH,
      description: `Deploys the ${f.stage} stage from the GitHub environment ${f.environment}`,
      assumeRolePolicy: oidcProviderArn.apply((arn) =>
        JSON.stringify(githubTrustPolicy(arn, deploySubject(config.githubRepository, f.environment))),
      ),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage: f.stage },
    });
    outputs[`${outputKey(f.stage)}_DEPLOY_ROLE_ARN`] = roles[f.stage]!.arn;
    // The one layer version the deploy role may read (scripts/preflight compares the stack file's).
    outputs[`${outputKey(f.stage)}_EXTENSION_LAYER_ARN`] = pulumi.output(f.layerArn);
  }
  return { roles, outputs };
}

/**
 * The preview role: jobs of the `preview` environment only (the pull-request preview of
 * .github/workflows/infra.yml, whose token is that environment's secret and whose reviewers, if
 * any, approve each run; a bare pull_request job, any workflow a branch adds, gets nothing);
 * reads the previewed stage's state and decrypts its
 * config (awskms), writes nothing (docs/deploy.md, "Previews and secrets"). With Pulumi Cloud it
 * needs no AWS permission at all: sts:GetCallerIdentity needs none
 * (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html).
 */
function pullRequestPreviewRole(config: BootstrapConfig, oidcProviderArn: pulumi.Output<string>): aws.iam.Role | undefined {
  if (config.previewStage === undefined) return undefined;
  const stage = config.previewStage;
  return new aws.iam.Role("preview", {
    name: previewRoleName(stage),
    path: BOOTSTRAP_PATH,
    description: `Read-only pulumi preview of ${stage} for pull requests`,
    assumeRolePolicy: oidcProviderArn.apply((arn) => JSON.stringify(githubTrustPolicy(arn, previewSubjectPattern(config.githubRepository, PREVIEW_ENVIRONMENT), true))),
    maxSessionDuration: 3600,
    tags: { ...TAGS, stage },
  });
}

/** The roles the keys' policies name: the deploy role of each stage, the preview role. */
interface KeyUsers {
  deployRoles: Record<string, aws.iam.Role>;
  previewRole: aws.iam.Role | undefined;
}

interface StateBackend {
  key: aws.kms.Key;
  bucket: aws.s3.Bucket;
  secretsKeys: Record<string, aws.kms.Key>;
}

/**
 * 3. The state backend: one bucket per account and region, its own key. Explicit key policies:
 *    no account-root statement; the break-glass administrators; each role exactly its use.
 */
function stateBackend(config: BootstrapConfig, facts: StageFacts[], users: KeyUsers, account: Account): StateBackend {
  const { deployRoles, previewRole } = users;
  const writers = pulumi.all(facts.map((f) => deployRoles[f.stage]!.arn));
  const readers = previewRole ? pulumi.all([previewRole.arn]) : pulumi.output([] as string[]);
  const { region } = account;
  const key = new aws.kms.Key(
    "state-key",
    {
      description: "Encrypts the Pulumi state of the sophia stages",
      enableKeyRotation: true,
      deletionWindowInDays: 30,
      policy: pulumi
        .all([writers, readers, account.partition, account.account])
        .apply(([w, r, p, a]) =>
          JSON.stringify(withBreakGlassRoles(stateKeyPolicy({ admins: config.keyAdministrators, writers: w, readers: r, region }), config.breakGlassRoles, p, a)),
        ),
      tags: TAGS,
    },
    account.kept,
  );
  new aws.kms.Alias("state-key-alias", { name: `alias/${APP}-pulumi-state`, targetKeyId: key.keyId });
  const bucket = stateBucket(config, key, account);
  return { key, bucket, secretsKeys: secretsProviderKeys(config, facts, users, account) };
}

/** The state bucket: versioning, SSE-KMS with the state key, public access blocked, owner-enforced, TLS only. */
function stateBucket(config: BootstrapConfig, stateKey: aws.kms.Key, account: Account): aws.s3.Bucket {
  const bucket = new aws.s3.Bucket(
    "state",
    { bucket: pulumi.interpolate`${APP}-pulumi-state-${account.account}-${account.region}`, forceDestroy: !config.protect, tags: TAGS },
    account.kept,
  );
  new aws.s3.BucketVersioning("state-versioning", { bucket: bucket.id, versioningConfiguration: { status: "Enabled" } });
  new aws.s3.BucketServerSideEncryptionConfiguration("state-encryption", {
    bucket: bucket.id,
    rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "aws:kms", kmsMasterKeyId: stateKey.arn }, bucketKeyEnabled: true }],
  });
  new aws.s3.BucketPublicAccessBlock("state-public-access", {
    bucket: bucket.id,
    blockPublicAcls: true,
    blockPublicPolicy: true,
    ignorePublicAcls: true,
    restrictPublicBuckets: true,
  });
  new aws.s3.BucketOwnershipControls("state-ownership", { bucket: bucket.id, rule: { objectOwnership: "BucketOwnerEnforced" } });
  new aws.s3.BucketPolicy("state-tls-only", {
    bucket: bucket.id,
    policy: pulumi.jsonStringify({
      Version: "2012-10-17",
      Statement: [
        {
          Sid: "DenyPlainHttp",
          Effect: "Deny",
          Principal: "*",
          Action: "s3:*",
          Resource: [bucket.arn, pulumi.interpolate`${bucket.arn}/*`],
          Condition: { Bool: { "aws:SecureTransport": "false" } },
        },
      ],
    }),
  });
  return bucket;
}

/** Per stage: the key of the stack's `awskms` secrets provider (its config secrets). */
function secretsProviderKeys(config: BootstrapConfig, facts: StageFacts[], users: KeyUsers, account: Account): Record<string, aws.kms.Key> {
  const { deployRoles, previewRole } = users;
  const secretsKeys: Record<string, aws.kms.Key> = {};
  for (const f of facts) {
    const preview = previewRole && config.previewStage === f.stage ? previewRole.arn : pulumi.output(undefined);
    secretsKeys[f.stage] = new aws.kms.Key(
      `${f.stage}-pulumi-secrets`,
      {
        description: `Secrets provider of the Pulumi stack ${f.stage} (pulumi stack init --secrets-provider awskms://alias/${APP}-${f.stage}-pulumi-secrets)`,
        enableKeyRotation: true,
        deletionWindowInDays: 30,
        policy: pulumi
          .all([deployRoles[f.stage]!.arn, preview, account.partition, account.account])
          .apply(([d, p, part, a]) =>
            JSON.stringify(withBreakGlassRoles(secretsProviderKeyPolicy({ admins: config.keyAdministrators, deployRole: d, previewRole: p }), config.breakGlassRoles, part, a)),
          ),
        tags: { ...TAGS, stage: f.stage },
      },
      account.kept,
    );
    new aws.kms.Alias(`${f.stage}-pulumi-secrets-alias`, { name: `alias/${APP}-${f.stage}-pulumi-secrets`, targetKeyId: secretsKeys[f.stage]!.keyId });
  }
  return secretsKeys;
}

/**
 * 4. Per stage: the permissions boundary of every role the stage creates, and the deploy role's
 *    policies (policies.ts, deployRolePolicies: the table as managed policies, the state, the
 *    secrets provider and the guard Denies inline).
 */
function stageDeployPolicies(
  facts: StageFacts[],
  deployRoles: Record<string, aws.iam.Role>,
  secretsKeys: Record<string, aws.kms.Key>,
  stateOf: () => pulumi.Output<{ bucket: string; keyArn: string } | undefined>,
  account: Account,
): Pick<Bootstrap, "deployPolicies" | "deployManagedPolicies" | "boundaries"> {
  const { region, partition } = account;
  const table = loadPermissions();
  const deployPolicies: Record<string, aws.iam.RolePolicy> = {};
  const deployManagedPolicies: Record<string, aws.iam.Policy[]> = {};
  const boundaries: Record<string, aws.iam.Policy> = {};
  for (const f of facts) {
    boundaries[f.stage] = new aws.iam.Policy(`${f.stage}-boundary`, {
      name: boundaryPolicyName(f.stage),
      path: BOOTSTRAP_PATH,
      description: `Permissions boundary of every role the ${f.stage} stage creates`,
      policy: pulumi
        .all([partition, account.account])
        .apply(([p, a]) => JSON.stringify(policyDocument(boundaryStatements({ partition: p, region, account: a, stage: f.stage, vpc: f.vpc, resumeBucket: f.resumeBucket, resumeBucketPrefix: f.resumeBucketPrefix })))),
      tags: { ...TAGS, stage: f.stage },
    });
    const key = secretsKeys[f.stage];
    const rendered = pulumi
      .all([partition, account.account, stateOf(), key ? key.arn : pulumi.output(undefined)])
      .apply(([p, a, state, secretsKeyArn]) =>
        deployRolePolicies({ scope: { partition: p, region, account: a, stage: f.stage, layerArn: f.layerArn, vpc: f.vpc, alarm: f.alarm }, state, secretsKeyArn }, table),
      );
    deployPolicies[f.stage] = new aws.iam.RolePolicy(`${f.stage}-deploy-policy`, {
      role: deployRoles[f.stage]!.id,
      name: "deploy-stage",
      policy: rendered.apply((r) => JSON.stringify(r.inline)),
    });
    deployManagedPolicies[f.stage] = deployManagedPoliciesOf(f, deployRoles[f.stage]!, rendered, table, region);
  }
  return { deployPolicies, deployManagedPolicies, boundaries };
}

/** The table's statements for one stage as managed policies, each attached to the stage's deploy role. */
function deployManagedPoliciesOf(
  f: StageFacts,
  deployRole: aws.iam.Role,
  rendered: pulumi.Output<ReturnType<typeof deployRolePolicies>>,
  table: ReturnType<typeof loadPermissions>,
  region: string,
): aws.iam.Policy[] {
  // The count of managed policies is known before the ARNs: render once with placeholders.
  const count = deployRolePolicies({ scope: { partition: "aws", region, account: "000000000000", stage: f.stage, layerArn: f.layerArn, vpc: f.vpc, alarm: f.alarm } }, table).managed.length;
  const policies: aws.iam.Policy[] = [];
  for (let i = 0; i < count; i++) {
    const policy = new aws.iam.Policy(`${f.stage}-deploy-${i + 1}`, {
      name: `${deployRoleName(f.stage)}-${i + 1}`,
      path: BOOTSTRAP_PATH,
      description: `Deploy role of ${f.stage}: resource types of the stage (part ${i + 1} of ${count}, infra-bootstrap/deploy-permissions.json)`,
      policy: rendered.apply((r) => JSON.stringify(r.managed[i])),
      tags: { ...TAGS, stage: f.stage },
    });
    new aws.iam.RolePolicyAttachment(`${f.stage}-deploy-${i + 1}`, { role: deployRole.name, policyArn: policy.arn });
    policies.push(policy);
  }
  return policies;
}

/**
 * 5. Per stage: the API's and the operators' access (policies.ts, apiPublishStatements and
 *    opsStatements). Principals outside the stage hold them, so the bootstrap owns them: no deploy
 *    role can write a new version (docs/design.md, "Who can change the API's and the operators' access").
 */
function stageAccessPolicies(
  facts: StageFacts[],
  account: Account,
): { policies: Bootstrap["accessPolicies"]; outputs: Record<string, pulumi.Output<string>> } {
  const declarations = loadDeclarations();
  const policies: Bootstrap["accessPolicies"] = {};
  const outputs: Record<string, pulumi.Output<string>> = {};
  for (const f of facts) {
    const statements = (build: typeof opsStatements) =>
      pulumi.all([account.partition, account.account]).apply(([p, a]) => JSON.stringify(policyDocument(build({ partition: p, region: account.region, account: a, stage: f.stage }, declarations))));
    const apiPublish = new aws.iam.Policy(`${f.stage}-api-publish`, {
      name: apiPublishPolicyName(f.stage),
      path: BOOTSTRAP_PATH,
      description: `Lets the Sophia API publish to the ${f.stage} queues (attach to the API's task role)`,
      policy: statements(apiPublishStatements),
      tags: { ...TAGS, stage: f.stage },
    });
    const ops = new aws.iam.Policy(`${f.stage}-ops`, {
      name: opsPolicyName(f.stage),
      path: BOOTSTRAP_PATH,
      description: `sophia-ops on the ${f.stage} stage (attach to the operators' roles)`,
      policy: statements(opsStatements),
      tags: { ...TAGS, stage: f.stage },
    });
    policies[f.stage] = { apiPublish, ops };
    outputs[`${outputKey(f.stage)}_API_PUBLISH_POLICY_ARN`] = apiPublish.arn;
    outputs[`${outputKey(f.stage)}_OPS_POLICY_ARN`] = ops.arn;
  }
  return { policies, outputs };
}

/** The preview role's read-only policy: the previewed stage's state and its secrets-provider key (S3 backend only). */
function previewRolePolicyOf(
  previewRole: aws.iam.Role,
  stage: string,
  backend: StateBackend | undefined,
  stateOf: () => pulumi.Output<{ bucket: string; keyArn: string } | undefined>,
  account: Account,
): aws.iam.RolePolicy | undefined {
  const key = backend?.secretsKeys[stage];
  if (!backend || !key) return undefined;
  return new aws.iam.RolePolicy("preview-policy", {
    role: previewRole.id,
    name: "preview-read-only",
    policy: pulumi
      .all([account.partition, stateOf(), key.arn])
      .apply(([p, state, keyArn]) => JSON.stringify(previewRolePolicy(p, account.region, stage, state!, keyArn))),
  });
}

/** With the S3 backend: the backend URL and each stage's secrets provider. */
function backendOutputs(bucket: aws.s3.Bucket, secretsKeys: Record<string, aws.kms.Key>, region: string): Record<string, pulumi.Output<string>> {
  const outputs: Record<string, pulumi.Output<string>> = { PULUMI_BACKEND_URL: pulumi.interpolate`s3://${bucket.bucket}?region=${region}` };
  for (const stage of Object.keys(secretsKeys)) {
    outputs[`${outputKey(stage)}_SECRETS_PROVIDER`] = pulumi.output(`awskms://alias/${APP}-${stage}-pulumi-secrets?region=${region}`);
  }
  return outputs;
}
