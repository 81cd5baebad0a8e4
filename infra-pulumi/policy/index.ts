/**
 * Policy pack `sophia-queues`. Run with a real preview:
 *
 *   pulumi preview --stack dev --policy-pack infra-pulumi/policy
 *
 * Never import this module from tests: `new PolicyPack` starts a gRPC server that never exits.
 * The rules live in rules.ts and are tested there.
 */
import { PolicyPack, type PolicyResource, type ReportViolation } from "@pulumi/policy";

import {
  checkEsmReportsBatchItemFailures,
  checkKmsKeyPolicies,
  checkNoSecretValuesInFunctionEnv,
  checkSecretPolicies,
  checkSourceQueuesHaveDlq,
  checkVisibilityCoversTimeout,
  checkVpcEndpointPolicies,
  type ResourceLike,
  secretPlaintextVariables,
  TYPES,
  type Violation,
} from "./rules";

function report(violations: Violation[], reportViolation: ReportViolation): void {
  for (const v of violations) reportViolation(v.message, v.resource.startsWith("urn:") ? v.resource : undefined);
}

/** The SDK's resources already have the shape the rules read (props + propertyDependencies). */
const asResources = (resources: PolicyResource[]): ResourceLike[] => resources as unknown as ResourceLike[];

new PolicyPack("sophia-queues", {
  enforcementLevel: "mandatory",
  policies: [
    {
      name: "sqs-source-queue-has-dlq",
      description: "Every SQS queue that is not itself a dead-letter queue redrives to one, with maxReceiveCount <= 5.",
      validateStack: (args, reportViolation) => report(checkSourceQueuesHaveDlq(asResources(args.resources)), reportViolation),
    },
    {
      name: "sqs-esm-reports-batch-item-failures",
      description: "Every SQS event source mapping sets functionResponseTypes [ReportBatchItemFailures].",
      validateResource: (args, reportViolation) => {
        if (args.type !== TYPES.eventSourceMapping) return;
        report(checkEsmReportsBatchItemFailures({ type: args.type, name: args.name, urn: args.urn, props: args.props }), reportViolation);
      },
    },
    {
      name: "sqs-visibility-covers-function-timeout",
      description: "An SQS queue's visibility timeout is >= 6 x its consumer's timeout + the batching window.",
      validateStack: (args, reportViolation) =>
        report(checkVisibilityCoversTimeout(asResources(args.resources)), reportViolation),
    },
    {
      // Validations see secret values decrypted: exactly what this rule needs, since a Pulumi
      // secret in a function's environment is still readable with lambda:GetFunctionConfiguration.
      name: "no-secret-values-in-function-env",
      description:
        "No Lambda environment value looks like a secret (URI with user:password@, sk- keys, *KEY*/*SECRET*/*PASSWORD*/*TOKEN* that is not an ARN).",
      validateResource: (args, reportViolation) => {
        if (args.type !== TYPES.function) return;
        report(checkNoSecretValuesInFunctionEnv({ type: args.type, name: args.name, urn: args.urn, props: args.props }), reportViolation);
      },
    },
    {
      name: "kms-key-policy-names-principals",
      description: "A KMS key has its own key policy naming its administrators; never the account root's kms:* (AWS's default) or everyone.",
      validateStack: (args, reportViolation) => report(checkKmsKeyPolicies(asResources(args.resources)), reportViolation),
    },
    {
      name: "secret-resource-policy-denies-others",
      description: "Every Secrets Manager secret has a resource policy denying every principal but its readers and administrators.",
      validateStack: (args, reportViolation) => report(checkSecretPolicies(asResources(args.resources)), reportViolation),
    },
    {
      name: "vpc-endpoint-policy-scoped",
      description: "Every interface VPC endpoint has a policy naming exact actions on exact ARNs (not the default * on *).",
      validateStack: (args, reportViolation) => report(checkVpcEndpointPolicies(asResources(args.resources)), reportViolation),
    },
    {
      // Validation policies receive secrets decrypted and unmarked (pulumi/pulumi-policy#241), so
      // they cannot tell a secret from plaintext. Remediations receive them as `Secret` objects:
      // this one turns any plaintext credential in a function's environment into a secret before
      // the engine stores it, and the preview lists the remediation.
      name: "no-plaintext-secrets-in-function-env",
      description: "Credentials in Lambda environments (*_KEY, *SECRET*, *TOKEN*, URIs with user:password) are secrets.",
      enforcementLevel: "remediate",
      remediateResource: (args) => (args.type === TYPES.function ? secretPlaintextVariables(args.props) : undefined),
    },
  ],
});
