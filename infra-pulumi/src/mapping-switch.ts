/**
 * Pausing cannot do more than pause. IAM cannot narrow UpdateEventSourceMapping's parameters: a
 * principal allowed to call it on a mapping may also re-point it (FunctionName), filter everything
 * out (FilterCriteria) or change how it fails. So operators never call it: each source queue's
 * mapping has an SSM Automation document of the stack, `<app>-<stage>-<queue>-mapping-enabled`, a
 * fixed request with the mapping's UUID baked in and one parameter, `Enabled` (a Boolean), run by
 * the role `<app>-<stage>-mapping-switch`, which only SSM Automation may assume and which may
 * update and read exactly these mappings. The operators' policy (the bootstrap's,
 * infra-bootstrap/src/policies.ts `opsStatements`) may start these documents and pass this role to
 * SSM, nothing else: `sophia-ops queue pause|resume` (docs/runbook.md, "Oldest message too old").
 *
 * The document's content is the deploy role's (the stage's); the role it runs with carries the
 * stage's boundary, which allows UpdateEventSourceMapping only on a mapping tagged with the stage
 * whose function is the stage's.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { StageRoleScope } from "./iam";
import type { Naming } from "./naming";

/** infra-bootstrap/src/policies.ts `mappingSwitchRoleName` / `mappingSwitchDocumentName` (the confinement test holds them equal). */
export const MAPPING_SWITCH_ROLE = "mapping-switch";
export const mappingSwitchDocumentName = (naming: Naming, queueName: string): string => `${naming.prefix}-${queueName}-mapping-enabled`;

/** The one request a document makes: this mapping's Enabled, nothing else. */
export function mappingSwitchDocument(args: { uuid: string; roleArn: string; queue: string }): Record<string, unknown> {
  return {
    schemaVersion: "0.3",
    description: `Pause (Enabled false) or resume (Enabled true) the event source mapping of ${args.queue}; nothing else.`,
    assumeRole: args.roleArn,
    parameters: { Enabled: { type: "Boolean", description: "false pauses the mapping, true resumes it" } },
    mainSteps: [
      {
        name: "SetEnabled",
        action: "aws:executeAwsApi",
        inputs: { Service: "lambda", Api: "UpdateEventSourceMapping", UUID: args.uuid, Enabled: "{{ Enabled }}" },
        outputs: [{ Name: "State", Selector: "$.State", Type: "String" }],
      },
    ],
  };
}

/** SSM Automation only, for this account (the confused-deputy conditions AWS recommends for a service role). */
export function mappingSwitchTrustPolicy(account: string, partition: string, region: string): string {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Service: "ssm.amazonaws.com" },
        Action: "sts:AssumeRole",
        Condition: {
          StringEquals: { "aws:SourceAccount": account },
          ArnLike: { "aws:SourceArn": `arn:${partition}:ssm:${region}:${account}:automation-execution/*` },
        },
      },
    ],
  });
}

export interface MappingSwitch {
  role: aws.iam.Role;
  documents: Record<string, aws.ssm.Document>;
}

/** The role and one document per source queue's mapping. */
export function mappingSwitch(args: {
  naming: Naming;
  roleScope: StageRoleScope;
  region: string;
  mappings: { queueName: string; mapping: aws.lambda.EventSourceMapping }[];
}): MappingSwitch {
  const { naming } = args;
  const partition = aws.getPartitionOutput().partition;
  const account = aws.getCallerIdentityOutput().accountId;
  const role = new aws.iam.Role(MAPPING_SWITCH_ROLE, {
    name: naming.roleName(MAPPING_SWITCH_ROLE),
    path: args.roleScope.path,
    permissionsBoundary: args.roleScope.permissionsBoundary,
    description: `Sets Enabled on the ${naming.prefix} event source mappings, run by SSM Automation only`,
    assumeRolePolicy: pulumi.all([account, partition]).apply(([a, p]) => mappingSwitchTrustPolicy(a, p, args.region)),
    tags: naming.tags,
  }, { deleteBeforeReplace: true });
  new aws.iam.RolePolicy(`${MAPPING_SWITCH_ROLE}-policy`, {
    role: role.id,
    name: naming.policyName(MAPPING_SWITCH_ROLE),
    policy: pulumi.all(args.mappings.map((m) => m.mapping.arn)).apply((arns) =>
      JSON.stringify({
        Version: "2012-10-17",
        Statement: [{ Sid: "TheStageMappings", Effect: "Allow", Action: ["lambda:UpdateEventSourceMapping", "lambda:GetEventSourceMapping"], Resource: arns }],
      }),
    ),
  }, { deleteBeforeReplace: true });
  const documents: Record<string, aws.ssm.Document> = {};
  for (const { queueName, mapping } of args.mappings) {
    documents[queueName] = new aws.ssm.Document(`${queueName}-mapping-enabled`, {
      name: mappingSwitchDocumentName(naming, queueName),
      documentType: "Automation",
      documentFormat: "JSON",
      content: pulumi.all([mapping.uuid, role.arn]).apply(([uuid, roleArn]) => JSON.stringify(mappingSwitchDocument({ uuid, roleArn, queue: naming.queueName(queueName) }))),
      tags: naming.tags,
    }, { deleteBeforeReplace: true });
  }
  return { role, documents };
}
