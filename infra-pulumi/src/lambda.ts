/**
 * `sophia:lambda:RustFunction`: one Rust Lambda built by cargo-lambda, with its own log group
 * (explicit, so the stack owns its retention), its own role and one inline least-privilege policy.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { Architecture } from "./config";
import { LAMBDA_ASSUME_ROLE_POLICY, policyJson, type StageRoleScope, type Statement, writeLogsStatement } from "./iam";

/** cargo-lambda produces a custom-runtime `bootstrap` executable. */
export const LAMBDA_RUNTIME = "provided.al2023";
export const LAMBDA_HANDLER = "bootstrap";

export interface RustFunctionArgs {
  /** Physical function name, `<app>-<stage>-<fn>`. */
  functionName: string;
  roleName: string;
  /** The stage's IAM path and the permissions boundary the role carries (infra-bootstrap's). */
  roleScope: StageRoleScope;
  logGroupName: string;
  /** Path to `bootstrap.zip`. */
  zipPath: string;
  architecture: Architecture;
  memoryMb: number;
  timeoutSeconds: number;
  logRetentionDays: number;
  environment: Record<string, pulumi.Input<string>>;
  /** Statements besides writing its own logs (queue access, S3...). */
  statements: Statement[];
  tags: Record<string, string>;
  description?: string;
  /** Lambda layer version ARNs (the Parameters and Secrets extension). */
  layers?: string[];
  /** 0 = nobody can invoke it (an unsubscribed function that must not run); undefined = unreserved. */
  reservedConcurrency?: number;
  vpc?: { subnetIds: string[]; securityGroupIds: string[] };
}

export class RustFunction extends pulumi.ComponentResource {
  readonly function: aws.lambda.Function;
  readonly role: aws.iam.Role;
  readonly rolePolicy: aws.iam.RolePolicy;
  readonly logGroup: aws.cloudwatch.LogGroup;
  readonly name: pulumi.Output<string>;
  readonly arn: pulumi.Output<string>;

  constructor(name: string, args: RustFunctionArgs, opts?: pulumi.ComponentResourceOptions) {
    super("sophia:lambda:RustFunction", name, {}, opts);
    const child = { parent: this };

    this.logGroup = new aws.cloudwatch.LogGroup(
      `${name}-logs`,
      { name: args.logGroupName, retentionInDays: args.logRetentionDays, tags: args.tags },
      // Fixed names: a replacement must delete the old one first, or AWS says "already exists".
      { ...child, deleteBeforeReplace: true },
    );

    this.role = new aws.iam.Role(
      `${name}-role`,
      {
        name: args.roleName,
        path: args.roleScope.path,
        permissionsBoundary: args.roleScope.permissionsBoundary,
        description: `Execution role of ${args.functionName}`,
        assumeRolePolicy: LAMBDA_ASSUME_ROLE_POLICY,
        tags: args.tags,
      },
      { ...child, deleteBeforeReplace: true },
    );

    this.rolePolicy = new aws.iam.RolePolicy(
      `${name}-policy`,
      {
        name: "least-privilege",
        role: this.role.id,
        policy: policyJson([writeLogsStatement(this.logGroup.arn), ...args.statements]),
      },
      // PutRolePolicy overwrites: a create-first replacement would be deleted with the old one.
      { ...child, deleteBeforeReplace: true },
    );

    this.function = new aws.lambda.Function(
      name,
      {
        name: args.functionName,
        description: args.description,
        role: this.role.arn,
        runtime: LAMBDA_RUNTIME,
        handler: LAMBDA_HANDLER,
        architectures: [args.architecture],
        memorySize: args.memoryMb,
        timeout: args.timeoutSeconds,
        code: new pulumi.asset.FileArchive(args.zipPath),
        environment: { variables: args.environment },
        layers: args.layers ?? [],
        ...(args.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: args.reservedConcurrency } : {}),
        ...(args.vpc ? { vpcConfig: { subnetIds: args.vpc.subnetIds, securityGroupIds: args.vpc.securityGroupIds } } : {}),
        // Naming the log group makes the function wait for it, so Lambda never creates it first.
        loggingConfig: { logFormat: "Text", logGroup: this.logGroup.name },
        tags: args.tags,
      },
      // The policy must exist before an event source mapping validates the role's SQS permissions.
      { ...child, dependsOn: [this.rolePolicy, this.logGroup], deleteBeforeReplace: true },
    );

    this.name = this.function.name;
    this.arn = this.function.arn;
    this.registerOutputs({ name: this.name, arn: this.arn, roleArn: this.role.arn, logGroup: this.logGroup.name });
  }
}
