/**
 * The stage's secrets on AWS (docs/design.md "Secrets and candidate data"): one customer-managed KMS key
 * per stage (rotation on), and one Secrets Manager secret per value, `sophia/<stage>/<name>`,
 * encrypted with that key, whose SecretString is the raw value from the Pulumi secret config. The
 * functions get only the secrets' ARNs and read the values at init through the AWS Parameters and
 * Secrets Lambda Extension.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import { bootstrapDeployRoleArn, KMS_DECRYPT_ACTIONS, SECRET_READ_ACTIONS } from "./iam";
import type { Naming } from "./naming";

/**
 * Secrets Manager keeps a deleted secret this long (its name stays taken meanwhile): 7 days (its
 * minimum) on a protected stage; 0 (delete without recovery) on the others, so that `pulumi destroy`
 * then `pulumi up` works at once ("This value can be 0 to force deletion without recovery",
 * https://www.pulumi.com/registry/packages/aws/api-docs/secretsmanager/secret/; DeleteSecret's
 * ForceDeleteWithoutRecovery, https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DeleteSecret.html).
 */
export const SECRET_RECOVERY_WINDOW_DAYS = 7;
export const UNPROTECTED_SECRET_RECOVERY_WINDOW_DAYS = 0;
export const KMS_DELETION_WINDOW_DAYS = 30;

export interface StageSecretsArgs {
  naming: Naming;
  /** Secret name suffix -> value (a secret Output from the Pulumi config). */
  values: Record<string, pulumi.Output<string>>;
  /** protect + retainOnDelete (prod): a `pulumi destroy` must not take the key with it. */
  protect: boolean;
  /** The key's administrators (`keyAdministrators`): named in the key policy the key is created with. */
  administrators: pulumi.Input<string[]>;
  region: string;
}

export class StageSecrets extends pulumi.ComponentResource {
  readonly key: aws.kms.Key;
  readonly alias: aws.kms.Alias;
  readonly secrets: Record<string, aws.secretsmanager.Secret> = {};
  readonly versions: Record<string, aws.secretsmanager.SecretVersion> = {};

  constructor(name: string, args: StageSecretsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("sophia:secrets:StageSecrets", name, {}, opts);
    const { naming } = args;
    const child = { parent: this };
    const kept = args.protect ? { protect: true, retainOnDelete: true } : {};

    // Created with its policy (creationKeyPolicyDocument): the administrators, the deploy role among
    // them, can use it from the first call, with no IAM grant conditioned on the key's tags. The
    // KeyPolicy resource (restrictAccess) replaces it in the same deploy once the function roles
    // exist, hence ignoreChanges. No tags: KMS authorizes a create's tags as kms:TagResource on every
    // key of the account, which the deploy role therefore is not given
    // (infra-bootstrap/deploy-permissions.json, aws:kms/key:Key).
    this.key = new aws.kms.Key(
      `${name}-key`,
      {
        description: `Encrypts the ${naming.prefix} secrets (Secrets Manager)`,
        enableKeyRotation: true,
        deletionWindowInDays: KMS_DELETION_WINDOW_DAYS,
        bypassPolicyLockoutSafetyCheck: true,
        policy: pulumi
          .all([pulumi.output(args.administrators), aws.getPartitionOutput().partition, aws.getCallerIdentityOutput().accountId])
          .apply(([admins, partition, account]) => JSON.stringify(creationKeyPolicyDocument({ administrators: admins, region: args.region, partition, account }))),
      },
      { ...child, ...kept, ignoreChanges: ["policy", "bypassPolicyLockoutSafetyCheck"] },
    );
    this.alias = new aws.kms.Alias(
      `${name}-key-alias`,
      { name: `alias/${naming.prefix}-secrets`, targetKeyId: this.key.keyId },
      { ...child, deleteBeforeReplace: true },
    );

    for (const [suffix, value] of Object.entries(args.values)) {
      const secret = new aws.secretsmanager.Secret(
        `${name}-${suffix}`,
        {
          name: naming.secretName(suffix),
          description: `${suffix} of ${naming.prefix} (read at init through the Parameters and Secrets extension)`,
          kmsKeyId: this.key.arn,
          recoveryWindowInDays: args.protect ? SECRET_RECOVERY_WINDOW_DAYS : UNPROTECTED_SECRET_RECOVERY_WINDOW_DAYS,
          tags: naming.tags,
        },
        { ...child, ...kept, deleteBeforeReplace: true },
      );
      this.secrets[suffix] = secret;
      this.versions[suffix] = new aws.secretsmanager.SecretVersion(
        `${name}-${suffix}-value`,
        { secretId: secret.id, secretString: value },
        child,
      );
    }
    this.registerOutputs({ keyArn: this.key.arn });
  }

  /**
   * Replaces AWS's default key policy and gives every secret a resource policy, once the
   * function roles exist: the key policy names the key's administrators and, per use, the function
   * roles; each secret denies every principal but its readers and the administrators.
   * `readers` maps a secret suffix to the role ARNs of the functions that read it.
   */
  restrictAccess(args: {
    administrators: pulumi.Input<string[]>;
    functionRoles: pulumi.Input<string>[];
    readers: Record<string, pulumi.Input<string>[]>;
    region: string;
  }): { keyPolicy: aws.kms.KeyPolicy; secretPolicies: Record<string, aws.secretsmanager.SecretPolicy> } {
    const child = { parent: this };
    const keyPolicy = new aws.kms.KeyPolicy(
      "secrets-key-policy",
      {
        keyId: this.key.keyId,
        // KMS's lockout check refuses a policy that would not let the caller apply the next one. The
        // administrators are a fixed list (keyAdministrators: the deploy role and the break-glass
        // principals, which KMS checks exist), never the caller, so a first deploy by a laptop
        // administrator outside the list must hand the key over: skip the check for that
        // (https://docs.aws.amazon.com/kms/latest/APIReference/API_PutKeyPolicy.html).
        bypassPolicyLockoutSafetyCheck: true,
        policy: pulumi
          .all([pulumi.output(args.administrators), pulumi.all(args.functionRoles)])
          .apply(([admins, roles]) => JSON.stringify(keyPolicyDocument({ administrators: admins, functionRoles: roles, region: args.region }))),
      },
      child,
    );
    const secretPolicies: Record<string, aws.secretsmanager.SecretPolicy> = {};
    for (const [suffix, secret] of Object.entries(this.secrets)) {
      const readers = args.readers[suffix] ?? [];
      secretPolicies[suffix] = new aws.secretsmanager.SecretPolicy(
        `secrets-${suffix}-policy`,
        {
          secretArn: secret.arn,
          // Secrets Manager refuses a policy granting broad access (BlockPublicPolicy): ours only denies.
          blockPublicPolicy: true,
          policy: pulumi
            .all([pulumi.output(args.administrators), pulumi.all(readers)])
            .apply(([admins, rs]) => JSON.stringify(secretPolicyDocument({ administrators: admins, readers: rs }))),
        },
        child,
      );
    }
    return { keyPolicy, secretPolicies };
  }

  arn(suffix: string): pulumi.Output<string> {
    const s = this.secrets[suffix];
    if (!s) throw new Error(`no secret "${suffix}"`);
    return s.arn;
  }
}

// ---------------------------------------------------------------------------------------------
// Resource policies of the key and the secrets.
//
// Without a policy of its own a key created through the API gets AWS's default key policy: one
// statement letting the account's root principal (that is, any IAM policy of the account) do
// `kms:*` on it (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html).
// This key's policy names its principals instead: the administrators (the AWS doc's "Allow key
// administrators" actions, plus writing secret values through Secrets Manager) and the function
// roles (kms:Decrypt through Secrets Manager only). No root statement: an IAM policy elsewhere in
// the account cannot reach the key. KMS's lockout safety check refuses a policy that would not let
// the principal applying it apply the next one; the stack skips it (bypassPolicyLockoutSafetyCheck)
// because its administrators are a fixed list that holds the deploy role: see `keyAdministrators`.

/** The AWS doc's key-administrator actions ("Allows key administrators to administer the KMS key"). */
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
] as const;
/** Writing a secret value (PutSecretValue, the stack's SecretVersion) and reading it back, through Secrets Manager. */
export const KMS_SECRET_WRITER_ACTIONS = ["kms:GenerateDataKey", "kms:Decrypt"] as const;

/** An IAM role or user ARN (a key policy's principals must exist and be roles or users here). */
export const PRINCIPAL_ARN = /^arn:aws[a-z-]*:iam::\d{12}:(role|user)\/[\w+=,.@/-]+$/;

export interface ResourcePolicyStatement {
  Sid: string;
  Effect: "Allow" | "Deny";
  Principal: { AWS: string[] } | "*";
  Action?: readonly string[] | string;
  NotAction?: readonly string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface ResourcePolicy {
  Version: "2012-10-17";
  Statement: ResourcePolicyStatement[];
}

const viaSecretsManager = (region: string) => ({ StringEquals: { "kms:ViaService": `secretsmanager.${region}.amazonaws.com` } });

/** The stage key's policy: administrators, and the function roles' Decrypt through Secrets Manager. */
export function keyPolicyDocument(args: { administrators: string[]; functionRoles: string[]; region: string }): ResourcePolicy {
  if (args.administrators.length === 0) throw new Error("the KMS key policy needs at least one administrator");
  for (const a of [...args.administrators, ...args.functionRoles]) {
    if (!PRINCIPAL_ARN.test(a)) throw new Error(`KMS key policy principal "${a}" is not an IAM role or user ARN`);
  }
  const statements: ResourcePolicyStatement[] = [
    // In a key policy, "Resource": "*" is the key itself.
    { Sid: "KeyAdministrators", Effect: "Allow", Principal: { AWS: args.administrators }, Action: KMS_ADMIN_ACTIONS, Resource: "*" },
    {
      Sid: "AdministratorsWriteSecretsViaSecretsManager",
      Effect: "Allow",
      Principal: { AWS: args.administrators },
      Action: KMS_SECRET_WRITER_ACTIONS,
      Resource: "*",
      Condition: viaSecretsManager(args.region),
    },
  ];
  if (args.functionRoles.length > 0) {
    statements.push({
      Sid: "FunctionsDecryptSecretsViaSecretsManager",
      Effect: "Allow",
      Principal: { AWS: [...new Set(args.functionRoles)] },
      Action: KMS_DECRYPT_ACTIONS,
      Resource: "*",
      Condition: viaSecretsManager(args.region),
    });
  }
  return { Version: "2012-10-17", Statement: statements };
}

/**
 * The policy the stage key is created with: its administrators (keyPolicyDocument), and AWS's default
 * statement for the account (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html),
 * which a key created without a policy would have had: a first deploy by an administrator outside
 * the list (docs/deploy.md, "KMS key administrators") still reaches the key through IAM until the
 * KeyPolicy resource, in the same deploy, replaces this policy with one that has no such statement.
 * The deploy role needs no IAM grant on keys: it is named here.
 */
export function creationKeyPolicyDocument(args: { administrators: string[]; region: string; partition: string; account: string }): ResourcePolicy {
  const doc = keyPolicyDocument({ administrators: args.administrators, functionRoles: [], region: args.region });
  return {
    ...doc,
    Statement: [
      ...doc.Statement,
      { Sid: "UntilTheKeyPolicyAccountIam", Effect: "Allow", Principal: { AWS: [`arn:${args.partition}:iam::${args.account}:root`] }, Action: "kms:*", Resource: "*" },
    ],
  };
}

/**
 * A secret's resource policy: only denies (IAM still has to allow). Every principal that is neither
 * a reader of this secret nor an administrator is denied every Secrets Manager action on it
 * (`aws:PrincipalArn` is the role's ARN for a role session); readers are denied everything but
 * reading it. https://docs.aws.amazon.com/secretsmanager/latest/userguide/auth-and-access_resource-policies.html
 */
export function secretPolicyDocument(args: { administrators: string[]; readers: string[] }): ResourcePolicy {
  if (args.administrators.length === 0) throw new Error("a secret policy needs at least one administrator");
  const readers = [...new Set(args.readers)];
  const statements: ResourcePolicyStatement[] = [
    {
      Sid: "DenyAllOtherPrincipals",
      Effect: "Deny",
      Principal: "*",
      Action: "secretsmanager:*",
      Resource: "*",
      Condition: { StringNotEquals: { "aws:PrincipalArn": [...args.administrators, ...readers] } },
    },
  ];
  if (readers.length > 0) {
    statements.push({
      Sid: "ReadersOnlyRead",
      Effect: "Deny",
      Principal: "*",
      NotAction: [...SECRET_READ_ACTIONS, "secretsmanager:DescribeSecret"],
      Resource: "*",
      Condition: { StringEquals: { "aws:PrincipalArn": readers } },
    });
  }
  return { Version: "2012-10-17", Statement: statements };
}

/** The config key naming the key's administrators (IAM role or user ARNs). */
export const KEY_ADMINISTRATORS_CONFIG = "kmsKeyAdministrators";

/**
 * The key's administrators: the stage's deploy role (infra-bootstrap's, by its exact ARN, path
 * included) and the break-glass principals of `sophia:kmsKeyAdministrators` (exact IAM role or user
 * ARNs, path included: an SSO role's is `role/aws-reserved/sso.amazonaws.com/<region>/<name>`). Never
 * the caller: the same list whoever deploys (a laptop administrator's first deploy, CI's next one, a
 * pull request's preview), so a preview shows no administrator switching and CI can always replace
 * the key policy and the secrets' policies. Throws when the list is missing or malformed.
 */
export function keyAdministrators(stage: string, config: pulumi.Config = new pulumi.Config("sophia")): pulumi.Output<string[]> {
  const raw = config.getObject<unknown>(KEY_ADMINISTRATORS_CONFIG);
  const bad = !Array.isArray(raw) || raw.length === 0 || raw.some((a) => typeof a !== "string" || !PRINCIPAL_ARN.test(a));
  if (bad) {
    throw new Error(
      `sophia:${KEY_ADMINISTRATORS_CONFIG} must list the stage's break-glass IAM role or user ARNs, exact and path included ` +
        `(arn:aws:iam::<account>:role/<path>/<name>); the stage's deploy role is added to them (docs/deploy.md, "KMS key administrators")`,
    );
  }
  const partition = aws.getPartitionOutput().partition;
  const account = aws.getCallerIdentityOutput().accountId;
  return pulumi.all([partition, account]).apply(([p, a]) => [...new Set([bootstrapDeployRoleArn(p, a, stage), ...(raw as string[])])]);
}
