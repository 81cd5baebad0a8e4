/**
 * CloudWatch alarms: on the SQS metrics that say a pipeline is unhealthy (anything in a DLQ, a
 * source queue whose oldest message is older than the stage's threshold) and on the functions
 * (errors, throttles, report-generate's duration near its timeout). Alarm names are fixed, so a
 * replacement deletes first.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/** SQS publishes its metrics once a minute. */
const SQS_METRIC_PERIOD_SECONDS = 60;
/** Consecutive breaching minutes before the age alarm fires (one slow poll is not an incident). */
const OLDEST_MESSAGE_AGE_EVALUATION_PERIODS = 5;

export interface AlarmTarget {
  /** SNS topic ARNs notified on ALARM and OK. */
  actions: pulumi.Input<string>[];
  tags: Record<string, string>;
}

/** Above the threshold is bad; no data is fine; ALARM and OK go to the target's topics. */
function notifying(target: AlarmTarget) {
  return {
    comparisonOperator: "GreaterThanThreshold",
    treatMissingData: "notBreaching",
    alarmActions: target.actions,
    okActions: target.actions,
    tags: target.tags,
  };
}

export function dlqNotEmptyAlarm(
  name: string,
  alarmName: string,
  dlqName: pulumi.Input<string>,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: pulumi.interpolate`Messages are waiting in the dead-letter queue ${dlqName}: they failed every retry.`,
      namespace: "AWS/SQS",
      metricName: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: dlqName },
      statistic: "Maximum",
      period: SQS_METRIC_PERIOD_SECONDS,
      evaluationPeriods: 1,
      threshold: 0,
      ...notifying(target),
    },
    { ...opts, deleteBeforeReplace: true },
  );
}

export function oldestMessageAgeAlarm(
  name: string,
  alarmName: string,
  queueName: pulumi.Input<string>,
  thresholdSeconds: number,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: pulumi.interpolate`The oldest message in ${queueName} is older than ${thresholdSeconds} s: the consumer is not keeping up or keeps failing.`,
      namespace: "AWS/SQS",
      metricName: "ApproximateAgeOfOldestMessage",
      dimensions: { QueueName: queueName },
      statistic: "Maximum",
      period: SQS_METRIC_PERIOD_SECONDS,
      evaluationPeriods: OLDEST_MESSAGE_AGE_EVALUATION_PERIODS,
      threshold: thresholdSeconds,
      ...notifying(target),
    },
    { ...opts, deleteBeforeReplace: true },
  );
}

/** Lambda publishes its metrics once a minute; errors and throttles are judged over 5 minutes. */
const LAMBDA_METRIC_PERIOD_SECONDS = 300;
/** The duration alarm fires at this share of the function's timeout. */
export const DURATION_ALARM_FRACTION = 0.8;

export type FunctionAlarmKind = "errors" | "throttles" | "duration";

/**
 * One alarm on a function's metric: `errors` (Sum of Errors > 0), `throttles` (Sum of Throttles > 0)
 * or `duration` (Maximum Duration > DURATION_ALARM_FRACTION x timeout, in ms).
 */
export function functionAlarm(
  name: string,
  alarmName: string,
  functionName: pulumi.Input<string>,
  kind: FunctionAlarmKind,
  timeoutSeconds: number,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  const spec = {
    errors: { metricName: "Errors", statistic: "Sum", threshold: 0, what: "returned errors (a failed batch or init)" },
    throttles: { metricName: "Throttles", statistic: "Sum", threshold: 0, what: "was throttled (concurrency exhausted)" },
    duration: {
      metricName: "Duration",
      statistic: "Maximum",
      threshold: Math.round(timeoutSeconds * 1000 * DURATION_ALARM_FRACTION),
      what: `ran longer than ${DURATION_ALARM_FRACTION * 100}% of its ${timeoutSeconds} s timeout`,
    },
  }[kind];
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: pulumi.interpolate`${functionName} ${spec.what}.`,
      namespace: "AWS/Lambda",
      metricName: spec.metricName,
      dimensions: { FunctionName: functionName },
      statistic: spec.statistic,
      period: LAMBDA_METRIC_PERIOD_SECONDS,
      evaluationPeriods: 1,
      threshold: spec.threshold,
      ...notifying(target),
    },
    { ...opts, deleteBeforeReplace: true },
  );
}

/**
 * Invalid messages dropped (the functions' EMF metric `RecordsDroppedInvalid` above zero): the
 * drop is the contract, but it means a producer sends what the contract rejects, and the
 * message is gone (its redacted preview is in the function's log, for a replay).
 */
export function droppedInvalidAlarm(
  name: string,
  alarmName: string,
  stage: string,
  functionName: string,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  const description = `${functionName} dropped messages its contract rejects: a producer sends invalid bodies (see the "invalid message dropped" log lines).`;
  return sumAboveZero(name, alarmName, description, { namespace: "Sophia", metricName: "RecordsDroppedInvalid", dimensions: { Stage: stage, Function: functionName } }, target, opts);
}

/** An alarm on the Sum of a metric above zero over five minutes. */
function sumAboveZero(
  name: string,
  alarmName: string,
  alarmDescription: pulumi.Input<string>,
  metric: { namespace: string; metricName: string; dimensions: Record<string, pulumi.Input<string>> },
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    { name: alarmName, alarmDescription, ...metric, statistic: "Sum", period: LAMBDA_METRIC_PERIOD_SECONDS, evaluationPeriods: 1, threshold: 0, ...notifying(target) },
    { ...opts, deleteBeforeReplace: true },
  );
}
