/**
 * Least-privilege policy documents. Every statement names exact actions on exact ARNs; the only
 * wildcards are the ones AWS needs to address children of a named parent (log streams of one log
 * group, objects of one bucket), and `assertLeastPrivilege` enforces that.
 */
import * as pulumi from "@pulumi/pulumi";

export const SQS_CONSUME_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:ChangeMessageVisibility",
  "sqs:GetQueueAttributes",
] as const;
export const SQS_PUBLISH_ACTIONS = ["sqs:SendMessage"] as const;
export const LOG_WRITE_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
export const S3_OBJECT_READ_WRITE_ACTIONS = ["s3:GetObject", "s3:PutObject"] as const;

export interface Statement {
  Sid: string;
  Effect: "Allow";
  Action: readonly string[];
  Resource: pulumi.Input<string>[];
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

/** Receive/delete/change visibility/get attributes on exactly one queue. */
export function consumeQueueStatement(queueArn: pulumi.Input<string>): Statement {
  return { Sid: "ConsumeOwnQueue", Effect: "Allow", Action: SQS_CONSUME_ACTIONS, Resource: [queueArn] };
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

/** GetObject/PutObject on the objects of one existing bucket. */
export function resumeBucketStatement(partition: pulumi.Input<string>, bucket: string): Statement {
  return {
    Sid: "ReadWriteResumeBucket",
    Effect: "Allow",
    Action: S3_OBJECT_READ_WRITE_ACTIONS,
    Resource: [pulumi.interpolate`arn:${partition}:s3:::${bucket}/*`],
  };
}

/**
 * Throws unless every action is exact and every resource is a specific ARN. Allowed wildcard forms:
 * `<log group arn>:*` and `arn:<p>:s3:::<bucket>/*`.
 */
export function assertLeastPrivilege(doc: { Statement: { Action: readonly string[]; Resource: string[] }[] }): void {
  for (const s of doc.Statement) {
    for (const a of s.Action) {
      if (a.includes("*")) throw new Error(`IAM action "${a}" contains a wildcard`);
    }
    for (const r of s.Resource) {
      const allowed =
        !r.includes("*") ||
        /^arn:[a-z-]+:logs:[a-z0-9-]+:\d{12}:log-group:[^*]+:\*$/.test(r) ||
        /^arn:[a-z-]+:s3:::[a-z0-9.-]+\/\*$/.test(r);
      if (!allowed || r === "*") throw new Error(`IAM resource "${r}" is not a specific ARN`);
    }
  }
}

/** Serialises a policy document after checking it (the check runs once the ARNs are known). */
export function policyJson(statements: Statement[]): pulumi.Output<string> {
  const doc: PolicyDocument = { Version: "2012-10-17", Statement: statements };
  return pulumi.output(doc).apply((resolved) => {
    assertLeastPrivilege(resolved as unknown as { Statement: { Action: string[]; Resource: string[] }[] });
    return JSON.stringify(resolved);
  });
}
