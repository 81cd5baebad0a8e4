/**
 * What every function of the stage is given besides its name, role and description, the pipelines'
 * consumers and the unsubscribed functions alike: its zip, architecture, memory and log retention,
 * the extension layer and the VPC placement when it needs them, its environment, and the grants
 * beyond its own queue and logs (publishing, the resume bucket, its secrets, VPC access).
 */
import type * as pulumi from "@pulumi/pulumi";

import type { StageConfig } from "./config";
import { functionEnvironment, secretsOf } from "./environment";
import {
  decryptViaSecretsManagerStatement,
  publishStatement,
  readSecretsStatement,
  resumeBucketStatement,
  type Statement,
  vpcAccessStatements,
} from "./iam";
import type { ConsumerArgs, QueuePipeline } from "./pipeline";
import type { StageSecrets } from "./secrets";
import { type FunctionSpec, queueByKey, type Settings } from "./settings";
import { wiringFor } from "./wiring";

export interface FunctionArgsContext {
  settings: Settings;
  config: StageConfig;
  /** The checked `bootstrap.zip` of each function (artifacts.ts). */
  zips: Record<string, string>;
  secrets: StageSecrets;
  /** The pipelines created so far: a consumer's comes after those of the queues it publishes to. */
  pipelines: Record<string, QueuePipeline>;
  /** The stage's partition, when a grant names it (resume bucket access, a VPC). */
  partition: pulumi.Output<string> | undefined;
  /** The stage's account, with a VPC. */
  account: pulumi.Output<string> | undefined;
}

/** The statements a function needs beyond consuming its own queue and writing its own logs. */
export function functionStatements(ctx: FunctionArgsContext, fn: FunctionSpec): Statement[] {
  const { config, partition, account, secrets } = ctx;
  const statements: Statement[] = [];
  if (fn.publishesTo.length > 0) {
    statements.push(publishStatement(fn.publishesTo.map((k) => ctx.pipelines[k]!.queueArn)));
  }
  if (config.resumeBucketAccess !== "none" && partition && wiringFor(fn.name).resumeBucket) {
    statements.push(
      resumeBucketStatement(partition, config.resumeBucket!, config.resumeBucketPrefix!, config.resumeBucketAccess),
    );
  }
  const own = secretsOf(fn, config);
  if (own.length > 0) {
    statements.push(readSecretsStatement(own.map((x) => secrets.arn(x))));
    statements.push(decryptViaSecretsManagerStatement(secrets.key.arn, config.region));
  }
  if (config.vpc && partition && account) {
    statements.push(
      ...vpcAccessStatements(partition, config.region, account, config.vpc.subnetIds, config.vpc.securityGroupIds),
    );
  }
  return statements;
}

/** A function's environment: its settings, the URLs of the queues it publishes to, its secrets' ARNs. */
function environmentOf(ctx: FunctionArgsContext, fn: FunctionSpec): Record<string, pulumi.Input<string>> {
  return functionEnvironment(
    fn,
    ctx.config,
    fn.publishesTo.map((k) => ({ queue: queueByKey(ctx.settings, k), url: ctx.pipelines[k]!.queueUrl })),
    (suffix) => ctx.secrets.arn(suffix),
  );
}

export function functionArgs(ctx: FunctionArgsContext, fn: FunctionSpec): ConsumerArgs {
  const { config } = ctx;
  return {
    ...(secretsOf(fn, config).length > 0 ? { layers: [config.secretsExtensionLayerArn] } : {}),
    ...(config.vpc ? { vpc: { subnetIds: config.vpc.subnetIds, securityGroupIds: config.vpc.securityGroupIds } } : {}),
    zipPath: ctx.zips[fn.name]!,
    architecture: config.architecture,
    memoryMb: config.memoryMb[fn.name]!,
    logRetentionDays: config.logRetentionDays,
    environment: environmentOf(ctx, fn),
    statements: functionStatements(ctx, fn),
  };
}
