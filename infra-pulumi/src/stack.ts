/**
 * The whole stack: one QueuePipeline per queue of queues.json, one RustFunction per function that
 * is not subscribed, the API's publish policy, and the outputs. Checks (settings, config, build
 * artifacts) all run before the first resource is registered.
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
import { checkArtifacts } from "./artifacts";
import { loadStageConfig, type StageConfig } from "./config";
import { functionEnvironment, SECRET, secretsOf } from "./environment";
import {
  decryptViaSecretsManagerStatement,
  OPS_AUDIT_RETENTION_DAYS,
  publishStatement,
  readSecretsStatement,
  resumeBucketStatement,
  type Statement,
  vpcAccessStatements,
  stageAccessPolicyArns,
  stageRoleScope,
} from "./iam";
import { RustFunction } from "./lambda";
import { loadMetrics } from "./metrics";
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
import { type FunctionSpec, loadSettings, queueByKey, queuesInCreationOrder, type Settings } from "./settings";
import { keyAdministrators, StageSecrets } from "./secrets";
import { stageVpcEndpoints } from "./vpc-endpoints";
import { checkWiring, MIGRATION_FUNCTION, MIGRATION_PAYLOAD, wiringFor } from "./wiring";
import { OPENAI_LIMITS_KEY, openAiLimitsUnsetWarning } from "./openai-budget";

export interface SophiaStack {
  settings: Settings;
  config: StageConfig;
  pipelines: Record<string, QueuePipeline>;
  functions: Record<string, RustFunction>;
  /** The operator audit trail (`<app>-<stage>-operator-audit`): the ops policy (the bootstrap's) may only append and read. */
  auditLogGroup: aws.cloudwatch.LogGroup;
  secrets: StageSecrets;
  /** The stage's own topic, unless `sophia:alarmTopicArn` names one. */
  alarmTopic: aws.sns.Topic | undefined;
  functionAlarms: aws.cloudwatch.MetricAlarm[];
  /** The stage's CloudWatch dashboard (`sophia-<stage>`). */
  dashboard: aws.cloudwatch.Dashboard;
  vpcEndpoints: aws.ec2.VpcEndpoint[];
  /** The one-shot `{"sophiaOps":"migrate"}` invocation every event source mapping waits for. */
  migration: aws.lambda.Invocation;
  /** Stack outputs by name (see outputs.ts). */
  outputs: Record<string, pulumi.Output<string>>;
}

export function createSophiaStack(settingsFile?: string): SophiaStack {
  const settings = loadSettings(settingsFile);
  checkWiring(settings);
  const config = loadStageConfig(settings);
  const naming = new Naming(settings.appName, config.stage);
  // Every role of the stage under its IAM path, bounded by infra-bootstrap's boundary for the stage.
  const roleScope = stageRoleScope(naming);
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

  // Alarms reach a person: the stage's own SNS topic (optionally subscribed from config) unless a topic is given.
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
  const alarms: AlarmTarget = { actions: [alarmTopicArn], tags: naming.tags };
  const needsPartition = config.resumeBucketAccess !== "none" || config.vpc !== undefined;
  const partition = needsPartition ? aws.getPartitionOutput().partition : undefined;
  const account = config.vpc ? aws.getCallerIdentityOutput().accountId : undefined;

  const keyAdmins = keyAdministrators(naming.stage);
  const secrets = new StageSecrets("secrets", {
    naming,
    values:
      config.mongodbAuth === "password"
        ? { [SECRET.mongodbUri]: config.secrets.mongodbUri, [SECRET.openaiApiKey]: config.secrets.openaiApiKey }
        : { [SECRET.openaiApiKey]: config.secrets.openaiApiKey },
    protect: config.protectData,
    administrators: keyAdmins,
    region: config.region,
  });

  const pipelines: Record<string, QueuePipeline> = {};
  // The migration runs inside the stage (it reaches the database the functions reach, whatever the
  // access list) and before traffic: every event source mapping waits for it. The invocation needs
  // the migrating function, which one of the pipelines creates: hence a promise settled below.
  let migrationCreated!: (r: pulumi.Resource) => void;
  const migrationDone = new Promise<pulumi.Resource>((resolve) => (migrationCreated = resolve));

  const extraStatements = (fn: FunctionSpec): Statement[] => {
    const statements: Statement[] = [];
    if (fn.publishesTo.length > 0) {
      statements.push(publishStatement(fn.publishesTo.map((k) => pipelines[k]!.queueArn)));
    }
    if (config.resumeBucketAccess !== "none" && partition && wiringFor(fn.name).resumeBucket) {
      statements.push(
        resumeBucketStatement(partition, config.resumeBucket!, config.resumeBucketPrefix!, config.resumeBucketAccess),
      );
    }
    const own = secretsOf(fn, config);
    if (own.length > 0) {
      statements.push(readSecretsStatement(own.map((x) => secrets.arn(x))));
      statements.push(decryptViaSecretsManagerStatement(secrets.key.arn, config.region));
    }
    if (config.vpc && partition && account) {
      statements.push(
        ...vpcAccessStatements(partition, config.region, account, config.vpc.subnetIds, config.vpc.securityGroupIds),
      );
    }
    return statements;
  };
  const environment = (fn: FunctionSpec) =>
    functionEnvironment(
      fn,
      config,
      fn.publishesTo.map((k) => ({ queue: queueByKey(settings, k), url: pipelines[k]!.queueUrl })),
      (suffix) => secrets.arn(suffix),
    );
  const common = (fn: FunctionSpec) => ({
    ...(secretsOf(fn, config).length > 0 ? { layers: [config.secretsExtensionLayerArn] } : {}),
    ...(config.vpc ? { vpc: { subnetIds: config.vpc.subnetIds, securityGroupIds: config.vpc.securityGroupIds } } : {}),
    zipPath: zips[fn.name]!,
    architecture: config.architecture,
    memoryMb: config.memoryMb[fn.name]!,
    logRetentionDays: config.logRetentionDays,
    environment: environment(fn),
    statements: extraStatements(fn),
  });

  // Queues a consumer publishes to are created before that consumer's pipeline.
  for (const q of queuesInCreationOrder(settings)) {
    const consumer = settings.functions.find((f) => f.name === q.consumer)!;
    pipelines[q.key] = new QueuePipeline(q.name, {
      naming,
      roleScope,
      queue: q,
      consumer,
      consumerArgs: common(consumer),
      maximumConcurrency: config.maximumConcurrency[q.key]!,
      oldestMessageAgeAlarmSeconds: config.oldestMessageAgeAlarmSeconds[q.key]!,
      alarms,
      protectQueues: config.protectData,
      beforeTraffic: [migrationDone],
    });
  }

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
      ...common(fn),
    });
  }

  // Invoked on create and whenever its triggers change: new code (new migrations), another
  // database, another connection string. A FunctionError fails `pulumi up` before any mapping is
  // created or updated. lambda:InvokeFunction on this one function is all the deploy role needs
  // (infra-bootstrap/deploy-permissions.json); Pulumi: https://www.pulumi.com/registry/packages/aws/api-docs/lambda/invocation/
  const migrating = functions[MIGRATION_FUNCTION];
  if (!migrating) throw new Error(`the migration function ${MIGRATION_FUNCTION} is not in queues.json`);
  const zipSha256 = crypto.createHash("sha256").update(fs.readFileSync(zips[MIGRATION_FUNCTION]!)).digest("hex");
  const migration = new aws.lambda.Invocation(
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
    { dependsOn: [migrating.function] },
  );
  migrationCreated(migration);

  // Function alarms (plannedAlarms: the one list; the queue alarms are the pipelines'). Only for
  // functions that can run: one with reserved concurrency 0 and no queue has no data, ever.
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
  const running = settings.functions.filter((f) => canRun(f, config));

  const stageDashboard = dashboard("dashboard", naming.prefix, {
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

  // Optional VPC placement: interface endpoints so SQS and Secrets Manager are reached without NAT,
  // each with an endpoint policy scoped to the stage's ARNs (vpc-endpoints.ts).
  const vpcEndpoints: aws.ec2.VpcEndpoint[] =
    config.vpc?.interfaceEndpoints && account
      ? stageVpcEndpoints({
          naming,
          region: config.region,
          vpc: config.vpc,
          account,
          queueArns: settings.queues.flatMap((q) => [pipelines[q.key]!.queueArn, pipelines[q.key]!.dlqArn]),
          secretArns: Object.keys(secrets.secrets).map((x) => secrets.arn(x)),
        })
      : [];

  // The key's and the secrets' own policies name their principals (secrets.ts).
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

  // The API's and the operators' policies are the bootstrap's (infra-bootstrap/src/policies.ts,
  // apiPublishStatements / opsStatements): principals outside the stage hold them, so no deploy of
  // the stage may write them (docs/design.md, "Who can change the API's and the operators' access").
  // The stack outputs their ARNs, where the API and scripts/stack-env read them.
  const accessPolicyArns = stageAccessPolicyArns(naming.stage);

  // The operator audit trail: sophia-ops may append to it and read it, never change or delete it.
  const auditLogGroup = new aws.cloudwatch.LogGroup(
    "operator-audit",
    {
      name: naming.auditLogGroupName(settings.operatorAuditLogGroup),
      retentionInDays: OPS_AUDIT_RETENTION_DAYS,
      tags: naming.tags,
    },
    { deleteBeforeReplace: true },
  );


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

  return {
    settings,
    config,
    pipelines,
    functions,
    auditLogGroup,
    secrets,
    alarmTopic,
    functionAlarms,
    dashboard: stageDashboard,
    vpcEndpoints,
    migration,
    outputs,
  };
}
