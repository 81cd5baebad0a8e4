/**
 * Pulumi program `sophia-bootstrap`: the account-level resources of the sophia stages (GitHub OIDC
 * provider, deploy and preview roles, state bucket, secrets-provider keys). See docs/deploy.md.
 */
import { createBootstrap } from "./src/bootstrap";

const bootstrap = createBootstrap();

export const OIDC_PROVIDER_ARN = bootstrap.outputs["OIDC_PROVIDER_ARN"];
export const PREVIEW_ROLE_ARN = bootstrap.outputs["PREVIEW_ROLE_ARN"];
export const PULUMI_BACKEND_URL = bootstrap.outputs["PULUMI_BACKEND_URL"];
/** Every output by name: <STAGE>_DEPLOY_ROLE_ARN, <STAGE>_SECRETS_PROVIDER, ... */
export const all = bootstrap.outputs;
