#!/usr/bin/env node
/**
 * Checks a committed stack file before CI previews or deploys it: every key the program requires is
 * there (the two secrets as ciphertext, the region, the extension layer, the key's break-glass
 * administrators; the account pin on a protected stage), so a stage bootstrapped without committing `Pulumi.<stage>.yaml` fails here,
 * naming each missing key and the command that sets it, instead of deep inside `pulumi up`.
 *
 * And the stack's secrets provider: CI has no passphrase, so a stack in the S3 state bucket must say
 * `secretsprovider: awskms://...` (the stage's key, made by infra-bootstrap). A stack file without it
 * was created with the passphrase provider (`encryptionsalt:`), by hand or by a bootstrap that could
 * not read the bootstrap's outputs; `pulumi stack change-secrets-provider` re-encrypts it under the
 * key. Only a stack kept in Pulumi Cloud (`--pulumi-cloud`: CI without vars.PULUMI_BACKEND_URL) may
 * use Pulumi Cloud's own provider, which writes no provider line.
 *
 *   node infra-pulumi/ci/check-stack-file.cjs <stage> [--file Pulumi.<stage>.yaml] [--pulumi-cloud]
 *
 * Exit 0 when complete; 1 with one `::error::` line per missing key (GitHub annotations). Needs
 * js-yaml (infra-pulumi's devDependencies: `scripts/test-infra --install-only`).
 */
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const yaml = require("js-yaml");

// The protected stages, declared once (declarations/stages.json; src/config.ts reads the same list).
const PROTECTED = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "declarations", "stages.json"), "utf8")).protectedStages;

/**
 * The problem with a stack file's secrets provider, or null. `pulumiCloud`: the stack lives in Pulumi
 * Cloud, whose default provider writes neither `secretsprovider` nor `encryptionsalt`.
 */
function secretsProviderProblem(stage, doc, pulumiCloud) {
  const provider = doc && typeof doc.secretsprovider === "string" ? doc.secretsprovider : "";
  if (provider.startsWith("awskms://")) return null;
  const fix =
    `scripts/bootstrap-stage ${stage} re-encrypts it under the stage's key from infra-bootstrap ` +
    `(pulumi stack change-secrets-provider "awskms://alias/sophia-${stage}-pulumi-secrets?region=<region>" --stack ${stage}), then commit Pulumi.${stage}.yaml`;
  const passphrase = provider === "passphrase" || (doc && doc.encryptionsalt !== undefined);
  if (passphrase) {
    return `secretsprovider: the stack uses the passphrase provider (encryptionsalt), which CI cannot decrypt (no passphrase there): ${fix}`;
  }
  if (provider !== "") return `secretsprovider is ${provider}, not awskms://...: ${fix}`;
  if (pulumiCloud) return null;
  return `secretsprovider: awskms://... is missing (the stage's key from infra-bootstrap): ${fix}`;
}

/** Returns the problems of a stack file (an empty list when complete). */
function missingKeys(stage, doc, { pulumiCloud = false } = {}) {
  const config = (doc && doc.config) || {};
  const problems = [];
  const provider = secretsProviderProblem(stage, doc, pulumiCloud);
  if (provider) problems.push(provider);
  const secure = (v) => typeof v === "object" && v !== null && typeof v.secure === "string" && v.secure.length > 0;
  for (const key of ["sophia:mongodbUri", "sophia:openaiApiKey"]) {
    if (!secure(config[key])) {
      problems.push(`${key} is missing (or not encrypted): scripts/bootstrap-stage ${stage}, then commit Pulumi.${stage}.yaml`);
    }
  }
  // The same shape the program requires (src/secrets.ts, keyAdministrators): exact IAM ARNs.
  const admins = config["sophia:kmsKeyAdministrators"];
  const principal = /^arn:aws[a-z-]*:iam::\d{12}:(role|user)\/[\w+=,.@/-]+$/;
  if (!Array.isArray(admins) || admins.length === 0 || admins.some((a) => typeof a !== "string" || !principal.test(a))) {
    problems.push(`sophia:kmsKeyAdministrators must list the stage's break-glass IAM role or user ARNs, exact and path included: see docs/deploy.md, "KMS key administrators"`);
  }
  if (typeof config["aws:region"] !== "string" || config["aws:region"] === "") {
    problems.push(`aws:region is missing: pulumi config set aws:region <region> --stack ${stage}`);
  }
  if (typeof config["sophia:secretsExtensionLayerArn"] !== "string") {
    problems.push(`sophia:secretsExtensionLayerArn is missing: see docs/deploy.md, "The extension layer"`);
  }
  const protectedStage = config["sophia:protectData"] === true || (config["sophia:protectData"] === undefined && PROTECTED.includes(stage));
  const pin = config["aws:allowedAccountIds"];
  if (protectedStage && !(Array.isArray(pin) && pin.length > 0)) {
    problems.push(`aws:allowedAccountIds is missing on a protected stage: scripts/bootstrap-stage ${stage}`);
  }
  if (Array.isArray(pin)) {
    for (const id of pin) {
      if (typeof id !== "string" || !/^\d{12}$/.test(id)) {
        problems.push(`aws:allowedAccountIds holds ${JSON.stringify(id)}: account ids are 12-digit strings (pulumi config set --path --type string 'aws:allowedAccountIds[0]' <id> --stack ${stage})`);
      }
    }
  }
  return problems;
}

function main(argv) {
  const stage = argv[0];
  if (!stage || !/^[a-z0-9][a-z0-9-]*$/.test(stage)) {
    console.error("usage: check-stack-file.cjs <stage> [--file Pulumi.<stage>.yaml] [--pulumi-cloud]");
    return 2;
  }
  const i = argv.indexOf("--file");
  const file = i >= 0 ? argv[i + 1] : path.join(__dirname, "..", "..", `Pulumi.${stage}.yaml`);
  if (!fs.existsSync(file)) {
    console.log(`::error::no ${path.basename(file)}: the stage has not been set up (docs/deploy.md)`);
    return 1;
  }
  const problems = missingKeys(stage, yaml.load(fs.readFileSync(file, "utf8")), { pulumiCloud: argv.includes("--pulumi-cloud") });
  for (const p of problems) console.log(`::error file=${path.basename(file)}::${p}`);
  if (problems.length === 0) console.log(`${path.basename(file)}: every required key is there`);
  return problems.length === 0 ? 0 : 1;
}

module.exports = { missingKeys, secretsProviderProblem };
if (require.main === module) process.exit(main(process.argv.slice(2)));
