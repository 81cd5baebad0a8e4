/**
 * The account-level resources the stages of one AWS account need, created once by an administrator
 * (`docs/deploy.md`):
 *
 * - the GitHub OIDC provider (or an existing one, `oidcProviderArn`);
 * - per stage, a deploy role trusted only for that stage's GitHub environment, whose inline policy
 *   is the table `deploy-permissions.json` rendered for the stage (plus its state and secrets key);
 * - a read-only preview role trusted only for pull_request tokens (reads the previewed stage's
 *   state, decrypts its config; writes nothing);
 * - the state backend bucket (versioning, SSE-KMS with its own key, public access blocked, TLS only,
 *   bucket-owner objects) and, per stage, the key of the `awskms` secrets provider.
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
  deployStatements,
  environmentOf,
  GITHUB_OIDC_AUDIENCE,
  GITHUB_OIDC_HOST,
  githubTrustPolicy,
  loadPermissions,
  policyDocument,
  type PolicyStatement,
  secretsProviderStatement,
  stateStatements,
} from "./policies";

/** The repository root (its `Pulumi.<stage>.yaml` files); tests point it elsewhere. */
export const REPO_ROOT = process.env["SOPHIA_BOOTSTRAP_REPO_ROOT"] ?? path.resolve(__dirname, "..", "..");
export const CONFIG_NAMESPACE = "sophia-bootstrap";

export interface StageFacts {
  stage: string;
  region: string;
  layerArn: string;
  vpc: boolean;
  environment: string;
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
  return { stage, region, layerArn: layerArn as string, vpc: config["sophia:vpc"] !== undefined, environment: environmentOf(stage, environments) };
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
  if (problems.length > 0) throw new pulumi.RunError(`Invalid bootstrap configuration:\n  - ${problems.join("\n  - ")}`);
  return { githubRepository, stages, environments, previewStage, oidcProviderArn: c.get("oidcProviderArn"), backend, protect };
}

export interface Bootstrap {
  oidcProviderArn: pulumi.Output<string>;
  deployRoles: Record<string, aws.iam.Role>;
  deployPolicies: Record<string, aws.iam.RolePolicy>;
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

  // 2. The state backend: one bucket per account and region, its own key.
  let stateBucket: aws.s3.Bucket | undefined;
  let stateKey: aws.kms.Key | undefined;
  const secretsKeys: Record<string, aws.kms.Key> = {};
  if (config.backend === "s3") {
    stateKey = new aws.kms.Key(
      "state-key",
      { description: "Encrypts the Pulumi state of the sophia stages", enableKeyRotation: true, deletionWindowInDays: 30, tags: TAGS },
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
      secretsKeys[f.stage] = new aws.kms.Key(
        `${f.stage}-pulumi-secrets`,
        {
          description: `Secrets provider of the Pulumi stack ${f.stage} (pulumi stack init --secrets-provider awskms://alias/${APP}-${f.stage}-pulumi-secrets)`,
          enableKeyRotation: true,
          deletionWindowInDays: 30,
          tags: { ...TAGS, stage: f.stage },
        },
        kept,
      );
      new aws.kms.Alias(`${f.stage}-pulumi-secrets-alias`, { name: `alias/${APP}-${f.stage}-pulumi-secrets`, targetKeyId: secretsKeys[f.stage]!.keyId });
    }
  }

  // The stage's state objects, and the bucket key SSE-KMS uses for them (GenerateDataKey to write,
  // Decrypt to read: https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html).
  const stateAccess = (stage: string, write: boolean): pulumi.Output<PolicyStatement[]> =>
    stateBucket && stateKey
      ? pulumi.all([partition, stateBucket.bucket, stateKey.arn]).apply(([p, bucket, keyArn]) => [
          ...stateStatements(p, bucket, stage, write),
          {
            Sid: write ? "StateKeyReadWrite" : "StateKeyRead",
            Effect: "Allow" as const,
            Action: write ? ["kms:GenerateDataKey", "kms:Decrypt"] : ["kms:Decrypt"],
            Resource: [keyArn],
            Condition: { StringEquals: { "kms:ViaService": `s3.${region}.amazonaws.com` } },
          },
        ])
      : pulumi.output([]);

  // 3. One deploy role per stage, trusted for that stage's GitHub environment only.
  const table = loadPermissions();
  const deployRoles: Record<string, aws.iam.Role> = {};
  const deployPolicies: Record<string, aws.iam.RolePolicy> = {};
  const outputs: Record<string, pulumi.Output<string>> = { OIDC_PROVIDER_ARN: oidcProviderArn };
  for (const f of facts) {
    const role = new aws.iam.Role(`${f.stage}-deploy`, {
      name: `${APP}-${f.stage}-deploy`,
      description: `Deploys the ${f.stage} stage from the GitHub environment ${f.environment}`,
      assumeRolePolicy: oidcProviderArn.apply((arn) =>
        JSON.stringify(githubTrustPolicy(arn, `repo:${config.githubRepository}:environment:${f.environment}`)),
      ),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage: f.stage },
    });
    const key = secretsKeys[f.stage];
    deployPolicies[f.stage] = new aws.iam.RolePolicy(`${f.stage}-deploy-policy`, {
      role: role.id,
      name: "deploy-stage",
      policy: pulumi
        .all([partition, account, stateAccess(f.stage, true), key ? key.arn : pulumi.output("")])
        .apply(([p, a, state, keyArn]) =>
          JSON.stringify(
            policyDocument([
              ...deployStatements({ partition: p, region, account: a, stage: f.stage, layerArn: f.layerArn, vpc: f.vpc }, table),
              ...state,
              ...(keyArn ? [secretsProviderStatement(keyArn, true)] : []),
            ]),
          ),
        ),
    });
    deployRoles[f.stage] = role;
    outputs[`${f.stage.toUpperCase().replace(/-/g, "_")}_DEPLOY_ROLE_ARN`] = role.arn;
  }

  // 4. The preview role: pull_request tokens only; reads the previewed stage's state and decrypts its
  //    config (awskms), writes nothing (docs/deploy.md, "Previews and secrets"). With Pulumi Cloud it
  //    needs no AWS permission at all: sts:GetCallerIdentity needs none
  //    (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html).
  let previewRole: aws.iam.Role | undefined;
  let previewPolicy: aws.iam.RolePolicy | undefined;
  if (config.previewStage !== undefined) {
    const stage = config.previewStage;
    previewRole = new aws.iam.Role("preview", {
      name: `${APP}-${stage}-preview`,
      description: `Read-only pulumi preview of ${stage} for pull requests`,
      assumeRolePolicy: oidcProviderArn.apply((arn) => JSON.stringify(githubTrustPolicy(arn, `repo:${config.githubRepository}:pull_request`))),
      maxSessionDuration: 3600,
      tags: { ...TAGS, stage },
    });
    const key = secretsKeys[stage];
    if (stateBucket && key) {
      previewPolicy = new aws.iam.RolePolicy("preview-policy", {
        role: previewRole.id,
        name: "preview-read-only",
        policy: pulumi
          .all([stateAccess(stage, false), key.arn])
          .apply(([state, keyArn]) => JSON.stringify(policyDocument([...state, secretsProviderStatement(keyArn, false)]))),
      });
    }
    outputs["PREVIEW_ROLE_ARN"] = previewRole.arn;
  }

  if (stateBucket) {
    outputs["PULUMI_BACKEND_URL"] = pulumi.interpolate`s3://${stateBucket.bucket}?region=${region}`;
    for (const stage of Object.keys(secretsKeys)) {
      outputs[`${stage.toUpperCase().replace(/-/g, "_")}_SECRETS_PROVIDER`] = pulumi.output(`awskms://alias/${APP}-${stage}-pulumi-secrets?region=${region}`);
    }
  }
  return { oidcProviderArn, deployRoles, deployPolicies, previewRole, previewPolicy, stateBucket, secretsKeys, outputs };
}
