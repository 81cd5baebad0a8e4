/**
 * `sophia:queues:QueuePipeline`: a source queue, its dead-letter queue (redrive both ways), the
 * consumer function and the event source mapping between them, plus the two alarms. Every number
 * comes from the queue's and the consumer's entries in queues.json.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import { type AlarmTarget, dlqNotEmptyAlarm, oldestMessageAgeAlarm, queueSubject } from "./alarms";
import type { Architecture } from "./config";
import {
  consumeQueueStatement,
  deadLetterStatement,
  type StageRoleScope,
  type Statement,
} from "./iam";
import { requiredVisibilityTimeoutSeconds } from "./invariants";
import { RustFunction } from "./lambda";
import type { Naming } from "./naming";
import type { FunctionSpec, QueueSpec } from "./settings";

export const REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures";

export interface ConsumerArgs {
  zipPath: string;
  architecture: Architecture;
  memoryMb: number;
  logRetentionDays: number;
  environment: Record<string, pulumi.Input<string>>;
  /** Statements besides consuming its own queue and writing its own logs. */
  statements: Statement[];
  layers?: string[];
  vpc?: { subnetIds: string[]; securityGroupIds: string[] };
}

export interface QueuePipelineArgs {
  naming: Naming;
  roleScope: StageRoleScope;
  queue: QueueSpec;
  consumer: FunctionSpec;
  consumerArgs: ConsumerArgs;
  /** ESM scaling cap (AWS: 2..1000); preferred over reserved concurrency for SQS consumers. */
  maximumConcurrency: number;
  oldestMessageAgeAlarmSeconds: number;
  alarms: AlarmTarget;
  /** protect + retainOnDelete on the queue and its DLQ (they hold undelivered messages). */
  protectQueues: boolean;
  /**
   * What must exist before the event source mapping delivers the first message (the migration
   * invocation, see `stack.ts`): the mapping waits for it (a promise, since it may be created later).
   */
  beforeTraffic?: pulumi.Input<pulumi.Resource>[];
}

export class QueuePipeline extends pulumi.ComponentResource {
  readonly queue: aws.sqs.Queue;
  readonly deadLetterQueue: aws.sqs.Queue;
  /** The DLQ's: `byQueue`, its own source queue only. */
  readonly redriveAllowPolicy: aws.sqs.RedriveAllowPolicy;
  /** The source queue's: `denyAll` (no queue may dead-letter into it). */
  readonly sourceRedriveAllowPolicy: aws.sqs.RedriveAllowPolicy;
  readonly consumer: RustFunction;
  readonly eventSourceMapping: aws.lambda.EventSourceMapping;
  readonly dlqAlarm: aws.cloudwatch.MetricAlarm;
  readonly ageAlarm: aws.cloudwatch.MetricAlarm;

  readonly queueUrl: pulumi.Output<string>;
  readonly queueArn: pulumi.Output<string>;
  readonly dlqUrl: pulumi.Output<string>;
  readonly dlqArn: pulumi.Output<string>;
  readonly functionName: pulumi.Output<string>;

  constructor(name: string, args: QueuePipelineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("sophia:queues:QueuePipeline", name, {}, opts);
    const child = { parent: this };
    const { naming, queue: q, consumer: fn } = args;
    const tags = naming.tags;
    checkConsumer(name, q, fn);
    const queues = sourceAndDeadLetterQueues(name, naming, q, args.protectQueues, this);
    this.deadLetterQueue = queues.deadLetterQueue;
    this.queue = queues.queue;
    this.sourceRedriveAllowPolicy = queues.sourceRedriveAllowPolicy;
    this.redriveAllowPolicy = queues.redriveAllowPolicy;

    const c = args.consumerArgs;
    this.consumer = new RustFunction(
      fn.name,
      {
        functionName: naming.functionName(fn.name),
        roleName: naming.roleName(fn.name),
        roleScope: args.roleScope,
        logGroupName: naming.logGroupName(naming.functionName(fn.name)),
        description: `Consumes ${naming.queueName(q.name)}`,
        zipPath: c.zipPath,
        architecture: c.architecture,
        memoryMb: c.memoryMb,
        timeoutSeconds: fn.timeoutSeconds,
        logRetentionDays: c.logRetentionDays,
        environment: c.environment,
        statements: [
          consumeQueueStatement(this.queue.arn, q.requeuesTransientFailures),
          ...(q.deadLettersPermanentFailures ? [deadLetterStatement(this.deadLetterQueue.arn)] : []),
          ...c.statements,
        ],
        tags,
        ...(c.layers ? { layers: c.layers } : {}),
        ...(c.vpc ? { vpc: c.vpc } : {}),
      },
      child,
    );

    this.eventSourceMapping = eventSourceMapping(name, q, this.queue, this.consumer, args, child);

    this.dlqAlarm = dlqNotEmptyAlarm(
      `${name}-dlq-not-empty`,
      naming.alarmName(`${q.dlqName}-not-empty`),
      this.deadLetterQueue.name,
      queueSubject(naming.stage, q),
      args.alarms,
      child,
    );
    this.ageAlarm = oldestMessageAgeAlarm(
      `${name}-oldest-message-age`,
      naming.alarmName(`${q.name}-oldest-message-age`),
      this.queue.name,
      args.oldestMessageAgeAlarmSeconds,
      queueSubject(naming.stage, q),
      args.alarms,
      child,
    );

    this.queueUrl = this.queue.url;
    this.queueArn = this.queue.arn;
    this.dlqUrl = this.deadLetterQueue.url;
    this.dlqArn = this.deadLetterQueue.arn;
    this.functionName = this.consumer.name;
    this.registerOutputs({
      queueUrl: this.queueUrl,
      queueArn: this.queueArn,
      dlqUrl: this.dlqUrl,
      dlqArn: this.dlqArn,
      functionName: this.functionName,
    });
  }
}

/** The consumer is the queue's declared one, and the queue's visibility timeout follows the 6x rule. */
function checkConsumer(name: string, q: QueueSpec, fn: FunctionSpec): void {
  if (fn.subscribedTo !== q.key || q.consumer !== fn.name) {
    throw new Error(`QueuePipeline ${name}: "${fn.name}" is not the declared consumer of queue "${q.key}"`);
  }
  const required = requiredVisibilityTimeoutSeconds(fn.timeoutSeconds, q.maximumBatchingWindowSeconds);
  if (q.visibilityTimeoutSeconds < required) {
    throw new Error(`QueuePipeline ${name}: visibility timeout ${q.visibilityTimeoutSeconds} s < ${required} s (6x rule)`);
  }
}

/** The source queue and its DLQ (redrive both ways), each with its redrive allow policy, children of the pipeline. */
function sourceAndDeadLetterQueues(
  name: string,
  naming: Naming,
  q: QueueSpec,
  protectQueues: boolean,
  parent: pulumi.Resource,
): Pick<QueuePipeline, "queue" | "deadLetterQueue" | "sourceRedriveAllowPolicy" | "redriveAllowPolicy"> {
  const child = { parent };
  const tags = naming.tags;
  // Fixed names: replace delete-first (else "already exists"); prod's queues are protected.
  const queueOpts: pulumi.CustomResourceOptions = {
    ...child,
    deleteBeforeReplace: true,
    ...(protectQueues ? { protect: true, retainOnDelete: true } : {}),
  };
  const deadLetterQueue = new aws.sqs.Queue(
    `${name}-dlq`,
    {
      name: naming.queueName(q.dlqName),
      messageRetentionSeconds: q.dlqMessageRetentionSeconds,
      sqsManagedSseEnabled: true,
      tags,
    },
    queueOpts,
  );

  const queue = new aws.sqs.Queue(
    `${name}-queue`,
    {
      name: naming.queueName(q.name),
      visibilityTimeoutSeconds: q.visibilityTimeoutSeconds,
      messageRetentionSeconds: q.messageRetentionSeconds,
      sqsManagedSseEnabled: true,
      redrivePolicy: pulumi.jsonStringify({
        deadLetterTargetArn: deadLetterQueue.arn,
        maxReceiveCount: q.maxReceiveCount,
      }),
      tags,
    },
    queueOpts,
  );

  // No queue may use the source queue as its dead-letter queue: without this, SQS's default
  // (allowAll) would let any queue of the account and region (another stage's deploy role sets its
  // own queue's redrive policy) move messages into it.
  const sourceRedriveAllowPolicy = new aws.sqs.RedriveAllowPolicy(
    `${name}-queue-redrive-allow`,
    { queueUrl: queue.url, redriveAllowPolicy: JSON.stringify({ redrivePermission: "denyAll" }) },
    child,
  );

  // Only this pipeline's source queue may use the DLQ (and redrive from it).
  const redriveAllowPolicy = new aws.sqs.RedriveAllowPolicy(
    `${name}-dlq-redrive-allow`,
    {
      queueUrl: deadLetterQueue.url,
      redriveAllowPolicy: pulumi.jsonStringify({
        redrivePermission: "byQueue",
        sourceQueueArns: [queue.arn],
      }),
    },
    child,
  );
  return { queue, deadLetterQueue, sourceRedriveAllowPolicy, redriveAllowPolicy };
}

/** The mapping from the source queue to its consumer; it waits for the consumer's policy and `beforeTraffic`. */
function eventSourceMapping(
  name: string,
  q: QueueSpec,
  queue: aws.sqs.Queue,
  consumer: RustFunction,
  args: QueuePipelineArgs,
  child: { parent: pulumi.Resource },
): aws.lambda.EventSourceMapping {
  return new aws.lambda.EventSourceMapping(
    `${name}-esm`,
    {
      eventSourceArn: queue.arn,
      functionName: consumer.arn,
      enabled: true,
      batchSize: q.batchSize,
      maximumBatchingWindowInSeconds: q.maximumBatchingWindowSeconds,
      functionResponseTypes: q.reportBatchItemFailures ? [REPORT_BATCH_ITEM_FAILURES] : [],
      scalingConfig: { maximumConcurrency: args.maximumConcurrency },
      // The stage tag is what makes a mapping the stage's in IAM: a mapping's UUID says nothing of
      // its stage, and UpdateEventSourceMapping names a function of its own, so the deploy role may
      // update (and the operators' pause may touch) only a mapping tagged with its stage
      // (infra-bootstrap/deploy-permissions.json). The role may not tag an untagged mapping (that
      // would adopt another team's): a mapping created before mappings carried tags is tagged once
      // by an administrator (docs/deploy.md, "Event source mappings created before their tag").
      tags: args.naming.tags,
    },
    { ...child, dependsOn: [consumer.rolePolicy, ...(args.beforeTraffic ?? [])] },
  );
}
