/**
 * CloudWatch alarms on the SQS metrics that say a pipeline is unhealthy: anything in a DLQ, and a
 * source queue whose oldest message is older than the stage's threshold.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/** SQS publishes its metrics once a minute. */
const SQS_METRIC_PERIOD_SECONDS = 60;
/** Consecutive breaching minutes before the age alarm fires (one slow poll is not an incident). */
const OLDEST_MESSAGE_AGE_EVALUATION_PERIODS = 5;

export interface AlarmTarget {
  /** SNS topic ARNs notified on ALARM and OK; empty for console-only alarms. */
  actions: string[];
  tags: Record<string, string>;
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
      comparisonOperator: "GreaterThanThreshold",
      treatMissingData: "notBreaching",
      alarmActions: target.actions,
      okActions: target.actions,
      tags: target.tags,
    },
    opts,
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
      comparisonOperator: "GreaterThanThreshold",
      treatMissingData: "notBreaching",
      alarmActions: target.actions,
      okActions: target.actions,
      tags: target.tags,
    },
    opts,
  );
}
