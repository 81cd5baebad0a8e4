/**
 * The whole stack: one QueuePipeline per queue of queues.json, one RustFunction per function that
 * is not subscribed, the API's publish policy, and the outputs. Checks (settings, config, build
 * artifacts) all run before the first resource is registered.
 *
 * createSophiaStack assembles it from named pieces, in the order they are registered: the checked
 * inputs, the alarm destination, the stage's secrets, the queue pipelines and the unsubscribed
 * functions (function-args.ts: what each function is given), the migration, the scheduled erasure
 * check (erasure-check.ts), the function alarms and
 * the dashboard, the VPC endpoints, the secrets' access, the operator audit trail, the outputs.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";

import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import {
  type AlarmTarget,
  alarmKind,
  canRun,
  checkAlarmDelivery,
  emfAlarm,
  isEmfAlarm,
  functionAlarm,
  type FunctionAlarmKind,
  plannedAlarms,
} from "./alarms";
import { dashboard } from "./dashboard";
import { type ErasureCheck, erasureCheck, erasureCheckFunction } from "./erasure-check";
import { checkArtifacts } from "./artifacts";
import { loadStageConfig, type StageConfig } from "./config";
import { SECRET, secretsOf } from "./environment";
import { type FunctionArgsContext, functionArgs } from "./function-args";
import { type StageRoleScope, stageAccessPolicyArns, stageRoleScope } from "./iam";
import { RustFunction } from "./lambda";
import { loadMetrics, type MetricsDeclaration } from "./metrics";
import { Naming } from "./naming";
import {
  ALARM_TOPIC_ARN,
  API_PUBLISH_POLICY_ARN,
  functionOutputName,
  functionRoleOutputName,
  OPS_POLICY_ARN,
  queueOutputNames,
} from "./outputs";
import { QueuePipeline } from "./pipeline";
import { loadSettings, queuesInCreationOrder, type Settings } from "./settings";
import { keyAdministrators, StageSecrets } from "./secrets";
import { stageVpcEndpoints } from "./vpc-endpoints";
import { checkWiring, MIGRATION_FUNCTION, MIGRATION_PAYLOAD } from "./wiring";
import { migrationRetryHook } from "./migration-retry";
import { OPENAI_LIMITS_KEY, openAiLimitsUnsetWarning } from "./openai-budget";

export interface SophiaStack {
  settings: Settings;
  config: StageConfig;
  pipelines: Record<string, QueuePipeline>;
  functions: Record<string, RustFunction>;
  secrets: StageSecrets;
  /** The stage's own topic, unless `sophia:alarmTopicArn` names one. */
  alarmTopic: aws.sns.Topic | undefined;
  functionAlarms: aws.cloudwatch.MetricAlarm[];
  /** The stage's CloudWatch dashboard (`sophia-<stage>`). */
  dashboard: aws.cloudwatch.Dashboard;
  vpcEndpoints: aws.ec2.VpcEndpoint[];
  /** The one-shot `{"sophiaOps":"migrate"}` invocation every event source mapping waits for. */
  migration: aws.lambda.Invocation;
  /** The scheduled erasure check (src/erasure-check.ts): its schedule and the role it invokes with; none when its function cannot run. */
  erasureCheck: ErasureCheck | undefined;
  /** Stack outputs by name (see outputs.ts). */
  outputs: Record<string, pulumi.Output<string>>;
}

export function createSophiaStack(settingsFile?: string): SophiaStack {
  const { settings, config, naming, zips, metrics } = checkedInputs(settingsFile);
  // Every role of the stage under its IAM path, bounded by infra-bootstrap's boundary for the stage.
  const roleScope = stageRoleScope(naming);
  const { alarmTopic, alarmTopicArn, alarms } = alarmDestination(naming, config);
  const needsPartition = config.resumeBucketAccess !== "none" || config.vpc !== undefined;
  const partition = needsPartition ? aws.getPartitionOutput().partition : undefined;
  const account = config.vpc ? aws.getCallerIdentityOutput().accountId : undefined;
  const keyAdmins = keyAdministrators(naming.stage);
  const secrets = stageSecrets(naming, config, keyAdmins);
  const ctx: FunctionArgsContext = { settings, config, zips, secrets, pipelines: {}, partition, account };

  // The migration runs inside the stage (it reaches the database the functions reach, whatever the
  // access list) and before traffic: every event source mapping waits for it. The invocation needs
  // the migrating function, which one of the pipelines creates: hence a promise settled below.
  let migrationCreated!: (r: pulumi.Resource) => void;
  const migrationDone = new Promise<pulumi.Resource>((resolve) => (migrationCreated = resolve));
  const pipelines = queuePipelines(ctx, naming, roleScope, alarms, migrationDone);
  const functions = stageFunctions(ctx, naming, roleScope);
  const migration = migrationInvocation(functions, zips, config, secrets);
  migrationCreated(migration);

  // The erasures-overdue alarm's data, whatever the traffic: the declared payload on a fixed rate.
  // Only for a function that can run (its alarm exists only then: alarms.ts plannedAlarms).
  const checked = settings.functions.find((f) => f.name === erasureCheckFunction(settings, metrics))!;
  const erasureChecks = canRun(checked, config)
    ? erasureCheck({ naming, roleScope, functionName: naming.functionName(checked.name), functionArn: functions[checked.name]!.arn })
    : undefined;
  const functionAlarms = stageFunctionAlarms(settings, metrics, config, naming, functions, alarms);
  const stageDashboard = dashboardOf(settings, metrics, config, naming);
  const vpcEndpoints = interfaceEndpoints(settings, config, naming, account, pipelines, secrets);
  // Operators pause and resume through the bootstrap's pause switch (infra-bootstrap/src/policies.ts,
  // mappingSwitchDocument): no document or role of the stack, so no deploy of the stage writes what
  // on-call runs.
  restrictSecretAccess(settings, config, functions, secrets, keyAdmins);
  // The API's and the operators' policies are the bootstrap's (infra-bootstrap/src/policies.ts,
  // apiPublishStatements / opsStatements): principals outside the stage hold them, so no deploy of
  // the stage may write them (docs/design.md, "Who can change the API's and the operators' access").
  // The stack outputs their ARNs, where the API and scripts/stack-env read them.
  const accessPolicyArns = stageAccessPolicyArns(naming.stage);
  // The operator audit trail's log group is the bootstrap's (infra-bootstrap/src/bootstrap.ts,
  // stageAccessPolicies): no deploy of the stage may delete it, shorten its retention or rewrite it.
  const outputs = stackOutputs(settings, pipelines, functions, accessPolicyArns, alarmTopicArn);

  return {
    settings,
    config,
    pipelines,
    functions,
    secrets,
    alarmTopic,
    functionAlarms,
    dashboard: stageDashboard,
    vpcEndpoints,
    migration,
    erasureCheck: erasureChecks,
    outputs,
  };
}

interface CheckedInputs {
  settings: Settings;
  config: StageConfig;
  naming: Naming;
  /** The checked `bootstrap.zip` of each function. */
  zips: Record<string, string>;
  metrics: MetricsDeclaration;
}

/** queues.json, the wiring, the stage config and the build artifacts, all checked; warnings logged. */
function checkedInputs(settingsFile: string | undefined): CheckedInputs {
  const settings = loadSettings(settingsFile);
  checkWiring(settings);
  const config = loadStageConfig(settings);
  const naming = new Naming(settings.appName, config.stage);
  const { zips, warnings } = checkArtifacts(
    config.artifactsDir,
    config.architecture,
    settings.functions.map((f) => f.name),
    config.stage,
    undefined,
    config.mongodbAuth === "aws-iam" ? ["aws-iam-auth"] : [],
  );
  for (const w of warnings) void pulumi.log.warn(w);
  const metrics = loadMetrics(settings);
  // Alarms reach a person: a protected stage without a topic or subscription fails here.
  const unrouted = checkAlarmDelivery(config);
  if (unrouted) void pulumi.log.warn(unrouted);
  const unbudgeted = openAiLimitsUnsetWarning(
    new pulumi.Config("sophia").getObject<unknown>(OPENAI_LIMITS_KEY),
    config.maximumConcurrency["reportGenerate"],
  );
  if (unbudgeted) void pulumi.log.warn(unbudgeted);
  return { settings, config, naming, zips, metrics };
}

/** Alarms reach a person: the stage's own SNS topic (optionally subscribed from config) unless a topic is given. */
function alarmDestination(
  naming: Naming,
  config: StageConfig,
): { alarmTopic: aws.sns.Topic | undefined; alarmTopicArn: pulumi.Input<string>; alarms: AlarmTarget } {
  let alarmTopic: aws.sns.Topic | undefined;
  if (!config.alarmTopicArn) {
    alarmTopic = new aws.sns.Topic(
      "alarms",
      { name: naming.topicName("alarms"), displayName: `${naming.prefix} alarms`, tags: naming.tags },
      { deleteBeforeReplace: true },
    );
    if (config.alarmSubscription) {
      new aws.sns.TopicSubscription("alarms-subscription", {
        topic: alarmTopic.arn,
        protocol: config.alarmSubscription.protocol,
        endpoint: config.alarmSubscription.endpoint,
      });
    }
  }
  const alarmTopicArn: pulumi.Input<string> = config.alarmTopicArn ?? alarmTopic!.arn;
  return { alarmTopic, alarmTopicArn, alarms: { actions: [alarmTopicArn], tags: naming.tags } };
}

/** The stage's KMS key and its secrets (the MongoDB URI only with password authentication). */
function stageSecrets(naming: Naming, config: StageConfig, keyAdmins: pulumi.Output<string[]>): StageSecrets {
  return new StageSecrets("secrets", {
    naming,
    values:
      config.mongodbAuth === "password"
        ? { [SECRET.mongodbUri]: config.secrets.mongodbUri, [SECRET.openaiApiKey]: config.secrets.openaiApiKey }
        : { [SECRET.openaiApiKey]: config.secrets.openaiApiKey },
    protect: config.protectData,
    administrators: keyAdmins,
    region: config.region,
  });
}

/** One QueuePipeline per queue; queues a consumer publishes to are created before that consumer's pipeline. */
function queuePipelines(
  ctx: FunctionArgsContext,
  naming: Naming,
  roleScope: StageRoleScope,
  alarms: AlarmTarget,
  migrationDone: Promise<pulumi.Resource>,
): Record<string, QueuePipeline> {
  const { settings, config, pipelines } = ctx;
  for (const q of queuesInCreationOrder(settings)) {
    const consumer = settings.functions.find((f) => f.name === q.consumer)!;
    pipelines[q.key] = new QueuePipeline(q.name, {
      naming,
      roleScope,
      queue: q,
      consumer,
      consumerArgs: functionArgs(ctx, consumer),
      maximumConcurrency: config.maximumConcurrency[q.key]!,
      oldestMessageAgeAlarmSeconds: config.oldestMessageAgeAlarmSeconds[q.key]!,
      alarms,
      protectQueues: config.protectData,
      beforeTraffic: [migrationDone],
    });
  }
  return pipelines;
}

/** Every function by name: the pipelines' consumers, and a RustFunction per function subscribed to no queue. */
function stageFunctions(ctx: FunctionArgsContext, naming: Naming, roleScope: StageRoleScope): Record<string, RustFunction> {
  const { settings, config, pipelines } = ctx;
  const functions: Record<string, RustFunction> = {};
  for (const q of settings.queues) functions[q.consumer] = pipelines[q.key]!.consumer;
  for (const fn of settings.functions.filter((f) => f.subscribedTo === null)) {
    const functionName = naming.functionName(fn.name);
    functions[fn.name] = new RustFunction(fn.name, {
      functionName,
      roleName: naming.roleName(fn.name),
      roleScope,
      logGroupName: naming.logGroupName(functionName),
      description: "Deployed, not subscribed to any queue",
      timeoutSeconds: fn.timeoutSeconds,
      tags: naming.tags,
      // Invoking it releases reservations: nobody may, until a stack option says something must.
      ...(config.invocableUnsubscribed ? {} : { reservedConcurrency: 0 }),
      ...functionArgs(ctx, fn),
    });
  }
  return functions;
}

/**
 * Invoked on create and whenever its triggers change: new code (new migrations), another
 * database, another connection string. A FunctionError fails `pulumi up` before any mapping is
 * created or updated, after the bounded retries of migration-retry.ts on an access refusal (IAM's
 * eventual consistency on a fresh stage). lambda:InvokeFunction on this one function is all the deploy role needs
 * (infra-bootstrap/deploy-permissions.json); Pulumi: https://www.pulumi.com/registry/packages/aws/api-docs/lambda/invocation/
 */
function migrationInvocation(
  functions: Record<string, RustFunction>,
  zips: Record<string, string>,
  config: StageConfig,
  secrets: StageSecrets,
): aws.lambda.Invocation {
  const migrating = functions[MIGRATION_FUNCTION];
  if (!migrating) throw new Error(`the migration function ${MIGRATION_FUNCTION} is not in queues.json`);
  const zipSha256 = crypto.createHash("sha256").update(fs.readFileSync(zips[MIGRATION_FUNCTION]!)).digest("hex");
  return new aws.lambda.Invocation(
    "migrate",
    {
      functionName: migrating.name,
      input: JSON.stringify(MIGRATION_PAYLOAD),
      triggers: {
        codeSha256: zipSha256,
        database: config.mongodbDatabase,
        // The connection string's secret version (or the plain IAM URI): a new cluster gets its indexes too.
        connection:
          config.mongodbAuth === "password" ? secrets.versions[SECRET.mongodbUri]!.versionId : pulumi.output(config.mongodbIamUri ?? ""),
      },
    },
    // Retried a bounded number of times while a just-written policy is not yet in force (migration-retry.ts).
    { dependsOn: [migrating.function], hooks: { onError: [migrationRetryHook()] } },
  );
}

/**
 * Function alarms (plannedAlarms: the one list; the queue alarms are the pipelines'). Only for
 * functions that can run: one with reserved concurrency 0 and no queue has no data, ever.
 */
function stageFunctionAlarms(
  settings: Settings,
  metrics: MetricsDeclaration,
  config: StageConfig,
  naming: Naming,
  functions: Record<string, RustFunction>,
  alarms: AlarmTarget,
): aws.cloudwatch.MetricAlarm[] {
  const functionAlarms: aws.cloudwatch.MetricAlarm[] = [];
  for (const a of plannedAlarms(settings, metrics, config).filter((p) => alarmKind(p.kind).per === "function")) {
    const fn = settings.functions.find((f) => f.name === a.subject.name)!;
    const alarmName = naming.alarmName(a.suffix);
    functionAlarms.push(
      isEmfAlarm(a.kind)
        ? emfAlarm(a.suffix, alarmName, a.kind, metrics, a.subject, naming.functionName(fn.name), alarms, {})
        : functionAlarm(a.suffix, alarmName, functions[fn.name]!.name, a.kind as FunctionAlarmKind, fn.timeoutSeconds, a.subject, alarms, {}),
    );
  }
  return functionAlarms;
}

/** The stage's CloudWatch dashboard: every queue and DLQ, every function that can run. */
function dashboardOf(settings: Settings, metrics: MetricsDeclaration, config: StageConfig, naming: Naming): aws.cloudwatch.Dashboard {
  const running = settings.functions.filter((f) => canRun(f, config));
  return dashboard("dashboard", naming.prefix, {
    stage: config.stage,
    region: config.region,
    metrics,
    queues: settings.queues.map((q) => ({ queue: naming.queueName(q.name), dlq: naming.queueName(q.dlqName) })),
    functions: running.map((f) => ({
      name: f.name,
      functionName: naming.functionName(f.name),
      logGroupName: naming.logGroupName(naming.functionName(f.name)),
    })),
  });
}

/**
 * Optional VPC placement: interface endpoints so SQS and Secrets Manager are reached without NAT,
 * each with an endpoint policy scoped to the stage's ARNs (vpc-endpoints.ts).
 */
function interfaceEndpoints(
  settings: Settings,
  config: StageConfig,
  naming: Naming,
  account: pulumi.Output<string> | undefined,
  pipelines: Record<string, QueuePipeline>,
  secrets: StageSecrets,
): aws.ec2.VpcEndpoint[] {
  if (!(config.vpc?.interfaceEndpoints && account)) return [];
  return stageVpcEndpoints({
    naming,
    region: config.region,
    vpc: config.vpc,
    account,
    queueArns: settings.queues.flatMap((q) => [pipelines[q.key]!.queueArn, pipelines[q.key]!.dlqArn]),
    secretArns: Object.keys(secrets.secrets).map((x) => secrets.arn(x)),
  });
}

/** The key's and the secrets' own policies name their principals (secrets.ts): each secret, the roles that read it. */
function restrictSecretAccess(
  settings: Settings,
  config: StageConfig,
  functions: Record<string, RustFunction>,
  secrets: StageSecrets,
  keyAdmins: pulumi.Output<string[]>,
): void {
  const secretReaders: Record<string, pulumi.Input<string>[]> = {};
  for (const fn of settings.functions) {
    for (const suffix of secretsOf(fn, config)) (secretReaders[suffix] ??= []).push(functions[fn.name]!.role.arn);
  }
  secrets.restrictAccess({
    administrators: keyAdmins,
    functionRoles: Object.values(secretReaders).flat(),
    readers: secretReaders,
    region: config.region,
  });
}

/** The stack outputs by name (outputs.ts names them), in the order index.ts exports them. */
function stackOutputs(
  settings: Settings,
  pipelines: Record<string, QueuePipeline>,
  functions: Record<string, RustFunction>,
  accessPolicyArns: { apiPublish: pulumi.Output<string>; ops: pulumi.Output<string> },
  alarmTopicArn: pulumi.Input<string>,
): Record<string, pulumi.Output<string>> {
  const outputs: Record<string, pulumi.Output<string>> = {};
  for (const q of settings.queues) {
    const names = queueOutputNames(q);
    const p = pipelines[q.key]!;
    outputs[names.url] = p.queueUrl;
    outputs[names.arn] = p.queueArn;
    outputs[names.dlqUrl] = p.dlqUrl;
    outputs[names.dlqArn] = p.dlqArn;
  }
  for (const fn of settings.functions) outputs[functionOutputName(fn)] = functions[fn.name]!.name;
  outputs[API_PUBLISH_POLICY_ARN] = accessPolicyArns.apiPublish;
  outputs[OPS_POLICY_ARN] = accessPolicyArns.ops;
  outputs[ALARM_TOPIC_ARN] = pulumi.output(alarmTopicArn);
  for (const fn of settings.functions) outputs[functionRoleOutputName(fn)] = functions[fn.name]!.role.arn;
  return outputs;
}
