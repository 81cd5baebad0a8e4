/**
 * The stage's secrets on AWS (docs/design.md "Secrets and candidate data"): one customer-managed KMS key
 * per stage (rotation on), and one Secrets Manager secret per value, `sophia/<stage>/<name>`,
 * encrypted with that key, whose SecretString is the raw value from the Pulumi secret config. The
 * functions get only the secrets' ARNs and read the values at init through the AWS Parameters and
 * Secrets Lambda Extension.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { Naming } from "./naming";

/** Secrets Manager keeps a deleted secret this long (its name stays taken meanwhile). */
export const SECRET_RECOVERY_WINDOW_DAYS = 7;
export const KMS_DELETION_WINDOW_DAYS = 30;

export interface StageSecretsArgs {
  naming: Naming;
  /** Secret name suffix -> value (a secret Output from the Pulumi config). */
  values: Record<string, pulumi.Output<string>>;
  /** protect + retainOnDelete (prod): a `pulumi destroy` must not take the key with it. */
  protect: boolean;
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

    this.key = new aws.kms.Key(
      `${name}-key`,
      {
        description: `Encrypts the ${naming.prefix} secrets (Secrets Manager)`,
        enableKeyRotation: true,
        deletionWindowInDays: KMS_DELETION_WINDOW_DAYS,
        tags: naming.tags,
      },
      { ...child, ...kept },
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
          recoveryWindowInDays: SECRET_RECOVERY_WINDOW_DAYS,
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

  arn(suffix: string): pulumi.Output<string> {
    const s = this.secrets[suffix];
    if (!s) throw new Error(`no secret "${suffix}"`);
    return s.arn;
  }
}
