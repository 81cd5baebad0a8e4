/**
 * The optional interface endpoints for SQS and Secrets Manager (`sophia:vpc.interfaceEndpoints`),
 * each with an endpoint policy scoped to this stage's ARNs. Without a policy AWS
 * attaches the default one, `Allow * on *` for every principal
 * (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-access.html): anything in the
 * VPC could then reach any queue or secret, of any account, through the endpoint. An endpoint
 * policy grants nothing by itself; it limits what passes through the endpoint, so each policy
 * names the actions this stack's principals use, on exactly the stage's queues (sources and DLQs)
 * or secrets, for principals of the stage's account only.
 *
 * With private DNS on, every SQS / Secrets Manager call from the VPC goes through these endpoints:
 * a VPC shared with other workloads must not get its endpoints from this stack (set
 * `interfaceEndpoints: false` and let the VPC's owner manage them).
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { VpcPlacement } from "./config";
import { OPS_DLQ_ACTIONS, OPS_QUEUE_ACTIONS, SECRET_READ_ACTIONS, SQS_CONSUME_ACTIONS, SQS_PUBLISH_ACTIONS } from "./iam";
import type { Naming } from "./naming";
import type { ResourcePolicy } from "./secrets";

/** What passes the SQS endpoint: the functions' and sophia-ops' actions, nothing else. */
export const SQS_ENDPOINT_ACTIONS = [
  ...new Set<string>([...SQS_CONSUME_ACTIONS, ...SQS_PUBLISH_ACTIONS, ...OPS_QUEUE_ACTIONS, ...OPS_DLQ_ACTIONS]),
].sort();
/** What passes the Secrets Manager endpoint: reading the stage's secrets (the extension's calls). */
export const SECRETS_ENDPOINT_ACTIONS = [...SECRET_READ_ACTIONS, "secretsmanager:DescribeSecret"] as const;

export const ENDPOINT_SERVICES = ["sqs", "secretsmanager"] as const;
export type EndpointService = (typeof ENDPOINT_SERVICES)[number];

/** One endpoint's policy: `actions` on exactly `resources`, for principals of `account`. */
export function endpointPolicyDocument(args: { sid: string; actions: readonly string[]; resources: string[]; account: string }): ResourcePolicy {
  if (args.resources.length === 0 || args.resources.some((r) => r === "*" || !r.startsWith("arn:"))) {
    throw new Error(`endpoint policy ${args.sid} must name exact ARNs, got ${JSON.stringify(args.resources)}`);
  }
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: args.sid,
        Effect: "Allow",
        Principal: "*",
        Action: args.actions,
        Resource: args.resources,
        Condition: { StringEquals: { "aws:PrincipalAccount": args.account } },
      },
    ],
  };
}

export function stageVpcEndpoints(args: {
  naming: Naming;
  region: string;
  vpc: VpcPlacement;
  account: pulumi.Input<string>;
  /** The stage's source queues and DLQs. */
  queueArns: pulumi.Input<string>[];
  /** The stage's secrets. */
  secretArns: pulumi.Input<string>[];
}): aws.ec2.VpcEndpoint[] {
  const scoped: Record<EndpointService, { sid: string; actions: readonly string[]; resources: pulumi.Input<string>[] }> = {
    sqs: { sid: "StageQueuesOnly", actions: SQS_ENDPOINT_ACTIONS, resources: args.queueArns },
    secretsmanager: { sid: "StageSecretsOnly", actions: SECRETS_ENDPOINT_ACTIONS, resources: args.secretArns },
  };
  return ENDPOINT_SERVICES.map((service) => {
    const s = scoped[service];
    return new aws.ec2.VpcEndpoint(`${service}-endpoint`, {
      vpcId: args.vpc.vpcId,
      serviceName: `com.amazonaws.${args.region}.${service}`,
      vpcEndpointType: "Interface",
      subnetIds: args.vpc.subnetIds,
      securityGroupIds: args.vpc.securityGroupIds,
      privateDnsEnabled: true,
      policy: pulumi
        .all([pulumi.all(s.resources), pulumi.output(args.account)])
        .apply(([resources, account]) =>
          JSON.stringify(endpointPolicyDocument({ sid: s.sid, actions: s.actions, resources, account })),
        ),
      tags: { ...args.naming.tags, Name: `${args.naming.prefix}-${service}` },
    });
  });
}
