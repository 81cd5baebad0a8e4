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
  BOOTSTRAP_PATH,
  boundaryPolicyName,
  boundaryStatements,
  collidingStages,
  deployRoleName,
  deployRolePolicies,
  environmentOf,
  GITHUB_OIDC_AUDIENCE,
  GITHUB_OIDC_HOST,
  githubTrustPolicy,
  loadPermissions,
  policyDocument,
  previewRoleName,
  previewRolePolicy,
  PRINCIPAL_ARN,
  secretsProviderKeyPolicy,
  stateKeyPolicy,
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
  vpc: boolean;
  environment: string;
  /** `sophia:resumeBucket` (the function roles' boundary allows its objects). */
  resumeBucket: string | undefined;
}

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
  if (problems.length > 0) return problems;
  const resumeBucket = typeof config["sophia:resumeBucket"] === "string" ? (config["sophia:resumeBucket"] as string) : undefined;
  return { stage, region, layerArn: layerArn as string, vpc: config["sophia:vpc"] !== undefined, environment: environmentOf(stage, environments), resumeBucket };
}

export interface BootstrapConfig {
  /** `owner/repo` of the GitHub repository whose workflows deploy. */
  githubRepository: string;
  stages: string[];
  /** GitHub environment per stage (default: the stage's name, `production` for `prod`). */
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
  if (previewStage !== undefined && ["prod", "production"].includes(previewStage)) {
    problems.push(`${CONFIG_NAMESPACE}:previewStage must not be a protected stage: a pull request's code runs in the preview and can read that stage's config`);
  }
  const backend = (c.get("backend") ?? "s3") as BootstrapConfig["backend"];
  if (!["s3", "pulumi-cloud"].includes(backend)) problems.push(`${CONFIG_NAMESPACE}:backend must be s3 or pulumi-cloud`);
  const protect = c.getBoolean("protect") ?? true;
  const keyAdministrators = c.getObject<string[]>("keyAdministrators") ?? [];
  if (backend === "s3" && (!Array.isArray(keyAdministrators) || keyAdministrators.length === 0 || keyAdministrators.some((a) => typeof a !== "string" || !PRINCIPAL_ARN.test(a)))) {
    problems.push(`${CONFIG_NAMESPACE}:keyAdministrators must list the break-glass IAM role or user ARNs (exact, path included) that administer the state and secrets keys`);
  }
  if (Array.isArray(stages)) problems.push(...collidingStages(stages));
  if (problems.length > 0) throw new pulumi.RunError(`Invalid bootstrap configuration:\n  - ${problems.join("\n  - ")}`);
  return { githubRepository, stages, environments, previewStage, oidcProviderArn: c.get("oidcProviderArn"), backend, protect, keyAdministrators };
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
  outputs: Record<string, pulumi.Output<string>>;
}

const TAGS = { app: APP, "managed-by": "pulumi", purpose: "bootstrap" };

export function createBootstrap(config: BootstrapConfig = loadBootstrapConfig()): Bootstrap {
  const region = new pulumi.Config("aws").require("region");
  const facts: StageFacts[] = [];
  const problems: string[] = [];
  for (const stage of config.stages) {
    const f = stageFacts(stage, region, config.environments);
    if (Array.isArray(f)) problems.push(...f);
    else facts.push(f);
  }
  if (problems.length > 0) throw new pulumi.RunError(`The stages cannot be bootstrapped:\n  - ${problems.join("\n  - ")}`);

  const identity = aws.getCallerIdentityOutput();
  const partition = aws.getPartitionOutput().partition;
  const account = identity.accountId;
  const kept = config.protect ? { protect: true, retainOnDelete: true } : {};

  // 1. GitHub's OIDC provider: one per account, so an existing one can be named instead.
  const oidcProviderArn: pulumi.Output<string> = config.oidcProviderArn
    ? pulumi.output(config.oidcProviderArn)
    : new aws.iam.OpenIdConnectProvider(
        "github-oidc",
        // AWS trusts GitHub's certificate through its own root CAs: no thumbprint needed
        // (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html).
        { url: `https://${GITHUB_OIDC_HOST}`, clientIdLists: [GITHUB_OIDC_AUDIENCE], tags: TAGS },
        kept,
      ).arn;

  // 2. The roles first (no policies yet): the keys' policies name them, and KMS refuses a policy
  //    naming a principal that does not exist.
  const deployRoles: Record<string, aws.iam.Role> = {};
  const outputs: Record<string, pulumi.Output<string>> = { OIDC_PROVIDER_ARN: oidcProviderArn };
  for (const f of facts) {
    deployRoles[f.stage] = new aws.iam.Role(`${f.stage}-deploy`, {
      name: deployRoleName(f.stage),
      // Outside every stage's IAM path (/sophia/<stage>/): no deploy role's grant reaches it, and
      // every deploy role denies itself any IAM call on this path.
      path: BOOTSTRAP_PATH,
      description: `Deploys the ${f.stage} stage from the GitHub environment ${f.environment}`,
      assumeRolePolicy: oidcProviderArn.apply((arn) =>
        JSON.stringify(githubTrustPolicy(arn, `repo:${config.githubRepository}:environment:${f.environment}`)),
      ),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage: f.stage },
    });
    outputs[`${f.stage.toUpperCase().replace(/-/g, "_")}_DEPLOY_ROLE_ARN`] = deployRoles[f.stage]!.arn;
  }
  // The preview role: jobs of the `preview` environment only (the pull-request preview of
  // .github/workflows/infra.yml, whose token is that environment's secret and whose reviewers, if
  // any, approve each run; a bare pull_request job, any workflow a branch adds, gets nothing);
  // reads the previewed stage's state and decrypts its
  // config (awskms), writes nothing (docs/deploy.md, "Previews and secrets"). With Pulumi Cloud it
  // needs no AWS permission at all: sts:GetCallerIdentity needs none
  // (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html).
  let previewRole: aws.iam.Role | undefined;
  if (config.previewStage !== undefined) {
    const stage = config.previewStage;
    previewRole = new aws.iam.Role("preview", {
      name: previewRoleName(stage),
      path: BOOTSTRAP_PATH,
      description: `Read-only pulumi preview of ${stage} for pull requests`,
      assumeRolePolicy: oidcProviderArn.apply((arn) => JSON.stringify(githubTrustPolicy(arn, `repo:${config.githubRepository}:environment:${PREVIEW_ENVIRONMENT}`))),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage },
    });
    outputs["PREVIEW_ROLE_ARN"] = previewRole.arn;
  }

  // 3. The state backend: one bucket per account and region, its own key. Explicit key policies:
  //    no account-root statement; the break-glass administrators; each role exactly its use.
  let stateBucket: aws.s3.Bucket | undefined;
  let stateKey: aws.kms.Key | undefined;
  const secretsKeys: Record<string, aws.kms.Key> = {};
  if (config.backend === "s3") {
    const writers = pulumi.all(facts.map((f) => deployRoles[f.stage]!.arn));
    const readers = previewRole ? pulumi.all([previewRole.arn]) : pulumi.output([] as string[]);
    stateKey = new aws.kms.Key(
      "state-key",
      {
        description: "Encrypts the Pulumi state of the sophia stages",
        enableKeyRotation: true,
        deletionWindowInDays: 30,
        policy: pulumi
          .all([writers, readers])
          .apply(([w, r]) => JSON.stringify(stateKeyPolicy({ admins: config.keyAdministrators, writers: w, readers: r, region }))),
        tags: TAGS,
      },
      kept,
    );
    new aws.kms.Alias("state-key-alias", { name: `alias/${APP}-pulumi-state`, targetKeyId: stateKey.keyId });
    stateBucket = new aws.s3.Bucket(
      "state",
      { bucket: pulumi.interpolate`${APP}-pulumi-state-${account}-${region}`, forceDestroy: !config.protect, tags: TAGS },
      kept,
    );
    new aws.s3.BucketVersioning("state-versioning", { bucket: stateBucket.id, versioningConfiguration: { status: "Enabled" } });
    new aws.s3.BucketServerSideEncryptionConfiguration("state-encryption", {
      bucket: stateBucket.id,
      rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "aws:kms", kmsMasterKeyId: stateKey.arn }, bucketKeyEnabled: true }],
    });
    new aws.s3.BucketPublicAccessBlock("state-public-access", {
      bucket: stateBucket.id,
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    new aws.s3.BucketOwnershipControls("state-ownership", { bucket: stateBucket.id, rule: { objectOwnership: "BucketOwnerEnforced" } });
    new aws.s3.BucketPolicy("state-tls-only", {
      bucket: stateBucket.id,
      policy: pulumi.jsonStringify({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "DenyPlainHttp",
            Effect: "Deny",
            Principal: "*",
            Action: "s3:*",
            Resource: [stateBucket.arn, pulumi.interpolate`${stateBucket.arn}/*`],
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          },
        ],
      }),
    });
    // Per stage: the key of the stack's `awskms` secrets provider (its config secrets).
    for (const f of facts) {
      const preview = previewRole && config.previewStage === f.stage ? previewRole.arn : pulumi.output(undefined);
      secretsKeys[f.stage] = new aws.kms.Key(
        `${f.stage}-pulumi-secrets`,
        {
          description: `Secrets provider of the Pulumi stack ${f.stage} (pulumi stack init --secrets-provider awskms://alias/${APP}-${f.stage}-pulumi-secrets)`,
          enableKeyRotation: true,
          deletionWindowInDays: 30,
          policy: pulumi
            .all([deployRoles[f.stage]!.arn, preview])
            .apply(([d, p]) => JSON.stringify(secretsProviderKeyPolicy({ admins: config.keyAdministrators, deployRole: d, previewRole: p }))),
          tags: { ...TAGS, stage: f.stage },
        },
        kept,
      );
      new aws.kms.Alias(`${f.stage}-pulumi-secrets-alias`, { name: `alias/${APP}-${f.stage}-pulumi-secrets`, targetKeyId: secretsKeys[f.stage]!.keyId });
    }
  }
  const stateOf = (): pulumi.Output<{ bucket: string; keyArn: string } | undefined> =>
    stateBucket && stateKey ? pulumi.all([stateBucket.bucket, stateKey.arn]).apply(([bucket, keyArn]) => ({ bucket, keyArn })) : pulumi.output(undefined);

  // 4. Per stage: the permissions boundary of every role the stage creates, and the deploy role's
  //    policies (policies.ts, deployRolePolicies: the table as managed policies, the state, the
  //    secrets provider and the guard Denies inline).
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
        .all([partition, account])
        .apply(([p, a]) => JSON.stringify(policyDocument(boundaryStatements({ partition: p, region, account: a, stage: f.stage, vpc: f.vpc, resumeBucket: f.resumeBucket })))),
      tags: { ...TAGS, stage: f.stage },
    });
    const key = secretsKeys[f.stage];
    const rendered = pulumi
      .all([partition, account, stateOf(), key ? key.arn : pulumi.output(undefined)])
      .apply(([p, a, state, secretsKeyArn]) =>
        deployRolePolicies({ scope: { partition: p, region, account: a, stage: f.stage, layerArn: f.layerArn, vpc: f.vpc }, state, secretsKeyArn }, table),
      );
    deployPolicies[f.stage] = new aws.iam.RolePolicy(`${f.stage}-deploy-policy`, {
      role: deployRoles[f.stage]!.id,
      name: "deploy-stage",
      policy: rendered.apply((r) => JSON.stringify(r.inline)),
    });
    // The count of managed policies is known before the ARNs: render once with placeholders.
    const count = deployRolePolicies({ scope: { partition: "aws", region, account: "000000000000", stage: f.stage, layerArn: f.layerArn, vpc: f.vpc } }, table).managed.length;
    deployManagedPolicies[f.stage] = [];
    for (let i = 0; i < count; i++) {
      const policy = new aws.iam.Policy(`${f.stage}-deploy-${i + 1}`, {
        name: `${deployRoleName(f.stage)}-${i + 1}`,
        path: BOOTSTRAP_PATH,
        description: `Deploy role of ${f.stage}: resource types of the stage (part ${i + 1} of ${count}, infra-bootstrap/deploy-permissions.json)`,
        policy: rendered.apply((r) => JSON.stringify(r.managed[i])),
        tags: { ...TAGS, stage: f.stage },
      });
      new aws.iam.RolePolicyAttachment(`${f.stage}-deploy-${i + 1}`, { role: deployRoles[f.stage]!.name, policyArn: policy.arn });
      deployManagedPolicies[f.stage]!.push(policy);
    }
  }

  let previewPolicy: aws.iam.RolePolicy | undefined;
  if (previewRole && config.previewStage !== undefined) {
    const stage = config.previewStage;
    const key = secretsKeys[stage];
    if (stateBucket && key) {
      previewPolicy = new aws.iam.RolePolicy("preview-policy", {
        role: previewRole.id,
        name: "preview-read-only",
        policy: pulumi
          .all([partition, stateOf(), key.arn])
          .apply(([p, state, keyArn]) => JSON.stringify(previewRolePolicy(p, region, stage, state!, keyArn))),
      });
    }
  }

  if (stateBucket) {
    outputs["PULUMI_BACKEND_URL"] = pulumi.interpolate`s3://${stateBucket.bucket}?region=${region}`;
    for (const stage of Object.keys(secretsKeys)) {
      outputs[`${stage.toUpperCase().replace(/-/g, "_")}_SECRETS_PROVIDER`] = pulumi.output(`awskms://alias/${APP}-${stage}-pulumi-secrets?region=${region}`);
    }
  }
  return { oidcProviderArn, deployRoles, deployPolicies, deployManagedPolicies, boundaries, previewRole, previewPolicy, stateBucket, secretsKeys, outputs };
}
