/**
 * The whole stack: one QueuePipeline per queue of queues.json, one RustFunction per function that
 * is not subscribed, the API's publish policy, and the outputs. Checks (settings, config, build
 * artifacts) all run before the first resource is registered.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import type { AlarmTarget } from "./alarms";
import { checkArtifacts } from "./artifacts";
import { loadStageConfig, type StageConfig } from "./config";
import { functionEnvironment } from "./environment";
import { policyJson, publishStatement, resumeBucketStatement, type Statement } from "./iam";
import { RustFunction } from "./lambda";
import { Naming } from "./naming";
import { API_PUBLISH_POLICY_ARN, functionOutputName, queueOutputNames } from "./outputs";
import { QueuePipeline } from "./pipeline";
import { type FunctionSpec, loadSettings, queueByKey, queuesInCreationOrder, type Settings } from "./settings";
import { API_PUBLISHES_TO, checkWiring, wiringFor } from "./wiring";

export interface SophiaStack {
  settings: Settings;
  config: StageConfig;
  pipelines: Record<string, QueuePipeline>;
  functions: Record<string, RustFunction>;
  apiPublishPolicy: aws.iam.Policy;
  /** Stack outputs by name (see outputs.ts). */
  outputs: Record<string, pulumi.Output<string>>;
}

export function createSophiaStack(settingsFile?: string): SophiaStack {
  const settings = loadSettings(settingsFile);
  checkWiring(settings);
  const config = loadStageConfig(settings);
  const naming = new Naming(settings.appName, config.stage);
  const zips = checkArtifacts(
    config.artifactsDir,
    config.architecture,
    settings.functions.map((f) => f.name),
    config.stage,
  );

  const alarms: AlarmTarget = { actions: config.alarmTopicArn ? [config.alarmTopicArn] : [], tags: naming.tags };
  const partition = config.resumeBucket ? aws.getPartitionOutput().partition : undefined;

  const pipelines: Record<string, QueuePipeline> = {};

  const extraStatements = (fn: FunctionSpec): Statement[] => {
    const statements: Statement[] = [];
    if (fn.publishesTo.length > 0) {
      statements.push(publishStatement(fn.publishesTo.map((k) => pipelines[k]!.queueArn)));
    }
    if (config.resumeBucket && partition && wiringFor(fn.name).resumeBucket) {
      statements.push(resumeBucketStatement(partition, config.resumeBucket));
    }
    return statements;
  };
  const environment = (fn: FunctionSpec) =>
    functionEnvironment(
      fn,
      config,
      fn.publishesTo.map((k) => ({ queue: queueByKey(settings, k), url: pipelines[k]!.queueUrl })),
    );
  const common = (fn: FunctionSpec) => ({
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
      queue: q,
      consumer,
      consumerArgs: common(consumer),
      maximumConcurrency: config.maximumConcurrency[q.key]!,
      oldestMessageAgeAlarmSeconds: config.oldestMessageAgeAlarmSeconds[q.key]!,
      alarms,
    });
  }

  const functions: Record<string, RustFunction> = {};
  for (const q of settings.queues) functions[q.consumer] = pipelines[q.key]!.consumer;
  for (const fn of settings.functions.filter((f) => f.subscribedTo === null)) {
    const functionName = naming.functionName(fn.name);
    functions[fn.name] = new RustFunction(fn.name, {
      functionName,
      roleName: naming.roleName(fn.name),
      logGroupName: naming.logGroupName(functionName),
      description: "Deployed, not subscribed to any queue",
      timeoutSeconds: fn.timeoutSeconds,
      tags: naming.tags,
      ...common(fn),
    });
  }

  const apiPublishPolicy = new aws.iam.Policy("api-publish", {
    name: naming.policyName("api-publish"),
    description: "Lets the Sophia API publish interview events (attach to the API task role).",
    policy: policyJson([publishStatement(API_PUBLISHES_TO.map((k) => pipelines[k]!.queueArn), "ApiPublish")]),
    tags: naming.tags,
  });

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

  return { settings, config, pipelines, functions, apiPublishPolicy, outputs };
}

/** Looks up an output by name; throws when the name is not one this stack produces. */
export function output(stack: SophiaStack, name: string): pulumi.Output<string> {
  const o = stack.outputs[name];
  if (!o) throw new Error(`stack has no output named ${name}; known: ${Object.keys(stack.outputs).join(", ")}`);
  return o;
}
