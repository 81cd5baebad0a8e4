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
  OPS_ACCOUNT_READ_ACTIONS,
  OPS_DLQ_ACTIONS,
  OPS_FUNCTION_READ_ACTIONS,
  OPS_MAPPING_ACTIONS,
  OPS_QUEUE_ACTIONS,
  policyJson,
  publishStatement,
  readSecretsStatement,
  resumeBucketStatement,
  type Statement,
  vpcAccessStatements,
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
import { apiPublishedQueues, type FunctionSpec, loadSettings, queueByKey, queuesInCreationOrder, type Settings } from "./settings";
import { keyAdministrators, StageSecrets } from "./secrets";
import { stageVpcEndpoints } from "./vpc-endpoints";
import { checkWiring, MIGRATION_FUNCTION, MIGRATION_PAYLOAD, wiringFor } from "./wiring";
import { OPENAI_LIMITS_KEY, openAiLimitsUnsetWarning } from "./openai-budget";

export interface SophiaStack {
  settings: Settings;
  config: StageConfig;
  pipelines: Record<string, QueuePipeline>;
  functions: Record<string, RustFunction>;
  apiPublishPolicy: aws.iam.Policy;
  /** sophia-ops: send to both queues, receive/delete/move on the DLQs. */
  opsPolicy: aws.iam.Policy;
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

  const secrets = new StageSecrets("secrets", {
    naming,
    values:
      config.mongodbAuth === "password"
        ? { [SECRET.mongodbUri]: config.secrets.mongodbUri, [SECRET.openaiApiKey]: config.secrets.openaiApiKey }
        : { [SECRET.openaiApiKey]: config.secrets.openaiApiKey },
    protect: config.protectData,
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
    administrators: keyAdministrators(naming.stage),
    functionRoles: Object.values(secretReaders).flat(),
    readers: secretReaders,
    region: config.region,
  });

  const apiPublishPolicy = new aws.iam.Policy("api-publish", {
    name: naming.policyName("api-publish"),
    path: naming.iamPath,
    description: "Lets the Sophia API publish interview events (attach to the API task role).",
    policy: policyJson([publishStatement(apiPublishedQueues(settings).map((q) => pipelines[q.key]!.queueArn), "ApiPublish")]),
    tags: naming.tags,
  }, { deleteBeforeReplace: true });

  const queueArns = settings.queues.map((q) => pipelines[q.key]!.queueArn);
  const dlqArns = settings.queues.map((q) => pipelines[q.key]!.dlqArn);
  const opsPolicy = new aws.iam.Policy(
    "ops",
    {
      name: naming.policyName("ops"),
      path: naming.iamPath,
      description: "sophia-ops (operator CLI): publish to the queues; list, show and redrive the DLQs; queue status, pause and resume.",
      policy: policyJson([
        { Sid: "OpsQueues", Effect: "Allow", Action: OPS_QUEUE_ACTIONS, Resource: queueArns },
        { Sid: "OpsDeadLetterQueues", Effect: "Allow", Action: OPS_DLQ_ACTIONS, Resource: dlqArns },
        {
          Sid: "OpsFunctions",
          Effect: "Allow",
          Action: OPS_FUNCTION_READ_ACTIONS,
          Resource: settings.functions.map((fn) => functions[fn.name]!.arn),
        },
        { Sid: "OpsQueueStatus", Effect: "Allow", Action: OPS_ACCOUNT_READ_ACTIONS, Resource: ["*"] },
        {
          Sid: "OpsMappings",
          Effect: "Allow",
          Action: OPS_MAPPING_ACTIONS,
          Resource: settings.queues.map((q) => pipelines[q.key]!.eventSourceMapping.arn),
        },
      ]),
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
  outputs[API_PUBLISH_POLICY_ARN] = apiPublishPolicy.arn;
  outputs[OPS_POLICY_ARN] = opsPolicy.arn;
  outputs[ALARM_TOPIC_ARN] = pulumi.output(alarmTopicArn);
  for (const fn of settings.functions) outputs[functionRoleOutputName(fn)] = functions[fn.name]!.role.arn;

  return {
    settings,
    config,
    pipelines,
    functions,
    apiPublishPolicy,
    opsPolicy,
    secrets,
    alarmTopic,
    functionAlarms,
    dashboard: stageDashboard,
    vpcEndpoints,
    migration,
    outputs,
  };
}
