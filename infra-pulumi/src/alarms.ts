/**
 * CloudWatch alarms: on the SQS metrics that say a pipeline is unhealthy (anything in a DLQ, a
 * source queue whose oldest message is older than the stage's threshold), on the functions
 * (errors, throttles, report-generate's duration near its timeout) and on the functions' own EMF
 * metrics (invalid messages dropped, reports failing, reports late: the time-to-report service
 * level of declarations/metrics.json). Alarm names are fixed, so a replacement
 * deletes first.
 *
 * `ALARM_KINDS` is the one list of alarms: the program creates alarms only through it, every
 * description says what happened, the first `sophia-ops` command to run and the runbook section
 * (docs/runbook.md), and docs/reference/alarms.md is generated from it (src/reference.ts; a test
 * fails when the file drifts, when an anchor is missing from the runbook, or when the program
 * creates an alarm the list does not describe).
 *
 * Notifications: ALARM only. No `okActions`: a new alarm starts in INSUFFICIENT_DATA and OK
 * actions run on a transition to OK "from any other state"
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html,
 * OKActions), so every alarm of a first deploy would send an OK message. Missing data is
 * `notBreaching` (same page, TreatMissingData: missing points are "within the threshold"):
 * an idle stage has no Lambda or EMF datapoints and must stay quiet. One exception:
 * erasures-overdue is `breaching`, because the stage's schedule (erasure-check.ts) makes its
 * metric arrive every ERASURE_CHECK_RATE_MINUTES whatever the traffic, so an hour without a data
 * point is the schedule or the function broken, and silence must page.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

import { ConfigError, type StageConfig } from "./config";
import { ERASURE_ALARM_PERIOD_SECONDS, ERASURE_CHECK_RATE_MINUTES } from "./erasure-check";
import { emfAlarmMetric, emits, humanMs, loadMetrics, type MetricsDeclaration, type ServiceLevel, serviceLevel } from "./metrics";
import { DEFAULT_SETTINGS_PATH, type FunctionSpec, type QueueSpec, type Settings } from "./settings";
import { wiringFor } from "./wiring";

/** SQS publishes its metrics once a minute. */
const SQS_METRIC_PERIOD_SECONDS = 60;
/** Consecutive breaching minutes before the age alarm fires (one slow poll is not an incident). */
const OLDEST_MESSAGE_AGE_EVALUATION_PERIODS = 5;
/** Lambda publishes its metrics once a minute; errors and throttles are judged over 5 minutes. */
const LAMBDA_METRIC_PERIOD_SECONDS = 300;
/** The duration alarm fires at this share of the function's timeout. */
export const DURATION_ALARM_FRACTION = 0.8;
/** CloudWatch's limit on an alarm description (PutMetricAlarm AlarmDescription, 0..1024). */
export const ALARM_DESCRIPTION_MAX = 1024;
/** Where the runbook lives in the repository; alarm descriptions link to its sections. */
export const RUNBOOK_PATH = "docs/runbook.md";

export interface AlarmTarget {
  /** SNS topic ARNs notified on ALARM. */
  actions: pulumi.Input<string>[];
  tags: Record<string, string>;
}

export type AlarmKindId =
  | "dlq-not-empty"
  | "oldest-message-age"
  | "errors"
  | "throttles"
  | "duration"
  | "dropped-invalid"
  | "reports-failed"
  | "transient-give-up"
  | "time-to-report"
  | "erasures-overdue";

/** The alarms on the functions' own EMF metrics (see [`emfAlarm`]), with their metric. */
export const EMF_ALARM_METRICS = {
  "dropped-invalid": "RecordsDroppedInvalid",
  "reports-failed": "ReportsFailed",
  "transient-give-up": "RecordsGivenUp",
  "time-to-report": "TimeToReportMs",
  "erasures-overdue": "ErasuresOverdue",
} as const;
export type EmfAlarmKind = keyof typeof EMF_ALARM_METRICS;

export function isEmfAlarm(kind: AlarmKindId): kind is EmfAlarmKind {
  return kind in EMF_ALARM_METRICS;
}

/**
 * What an alarm is about: a queue (queues.json `name`) or a function (queues.json function name),
 * with the declared properties its text reads (never a comparison of names: a new queue or
 * function brings its own text through queues.json).
 */
export type AlarmSubject = QueueSubject | FunctionSubject;

export interface QueueSubject {
  stage: string;
  /** queues.json name of the queue. */
  name: string;
  /** queues.json `dlqMeaning`: what a message in its DLQ means. */
  dlqMeaning: string;
}

export interface FunctionSubject {
  stage: string;
  /** queues.json name of the function. */
  name: string;
  /** The queue it consumes (its `name`), if any. */
  queue?: string;
  /** queues.json `unfinishedWorkCommand`: the sophia-ops command that lists its unfinished work. */
  unfinishedWorkCommand: string;
}

/** The subject of `q`'s alarms: its name and its declared DLQ meaning, its facts filled in. */
export function queueSubject(stage: string, q: QueueSpec): QueueSubject {
  return { stage, name: q.name, dlqMeaning: withDeclaredFacts(q.dlqMeaning, `${q.name}'s dlqMeaning`) };
}

/**
 * A declared text names a number another declaration holds as `{maxReportAttempts}`
 * (declarations/reports.json `maxAttempts`), so that the number is written once: a literal
 * "<n> attempts" or an unknown `{name}` is refused.
 */
export function withDeclaredFacts(text: string, where: string, reportsFile = REPORTS_PATH): string {
  if (/\b\d+\s+attempts?\b/.test(text)) {
    throw new Error(`${where}: write the attempt limit as {maxReportAttempts} (declarations/reports.json), not a number`);
  }
  if (!text.includes("{")) return text;
  const rules = JSON.parse(fs.readFileSync(reportsFile, "utf8")) as { maxAttempts: number; erasureCompletionHours: number };
  const facts: Record<string, string> = { maxReportAttempts: String(rules.maxAttempts), erasureCompletionHours: String(rules.erasureCompletionHours) };
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const value = facts[name];
    if (value === undefined) throw new Error(`${where}: ${whole} names no declared fact (known: ${Object.keys(facts).join(", ")})`);
    return value;
  });
}

/** declarations/reports.json, beside queues.json. */
const REPORTS_PATH = path.join(path.dirname(DEFAULT_SETTINGS_PATH), "reports.json");

/** The subject of a queue alarm, as the planner made it. */
function ofQueue(s: AlarmSubject): QueueSubject {
  if (!("dlqMeaning" in s)) throw new Error(`alarm subject ${s.name} is not a queue`);
  return s;
}

/** The subject of a function alarm, as the planner made it. */
function ofFunction(s: AlarmSubject): FunctionSubject {
  if (!("unfinishedWorkCommand" in s)) throw new Error(`alarm subject ${s.name} is not a function`);
  return s;
}

/** A function's first command: its queue's status when it has one, else its unfinished work. */
const queueOrUnfinished = (s: AlarmSubject): string => {
  const f = ofFunction(s);
  return ops(f.stage, f.queue ? `queue status ${f.queue}` : f.unfinishedWorkCommand);
};

/** The queue a function's records come from (its DLQ holds what it gave up on), else its own name. */
const queueOf = (s: AlarmSubject): string => ofFunction(s).queue ?? s.name;

export interface AlarmKind {
  id: AlarmKindId;
  /** One line for the reference. */
  title: string;
  per: "queue" | "function";
  /** namespace/metric, for the reference. */
  metric: string;
  /** Condition, for the reference. */
  condition: string;
  /** Runbook anchor (GitHub's slug of the section heading). */
  anchor: (s: AlarmSubject) => string;
  /** What happened, in one sentence. */
  what: (s: AlarmSubject) => string;
  /** The first command to run. */
  firstCommand: (s: AlarmSubject) => string;
}

const ops = (stage: string, command: string) => `sophia-ops --stage ${stage} ${command}`;

/** The time-to-report service level of declarations/metrics.json (the one the alarm judges). */
const timeToReport = (): ServiceLevel => serviceLevel(loadMetrics(), "TimeToReportMs");

/** The one list of alarms (see the module comment). */
export const ALARM_KINDS: readonly AlarmKind[] = [
  {
    id: "dlq-not-empty",
    title: "Messages in a dead-letter queue",
    per: "queue",
    metric: "AWS/SQS ApproximateNumberOfMessagesVisible (QueueName = the DLQ)",
    condition: "Maximum > 0 over 1 minute",
    anchor: (s) => `${s.name}-dlq-not-empty`,
    what: (s) => `Messages are waiting in the ${s.name} DLQ: ${ofQueue(s).dlqMeaning}`,
    firstCommand: (s) => ops(s.stage, `dlq list ${s.name}`),
  },
  {
    id: "oldest-message-age",
    title: "Oldest message in a source queue too old",
    per: "queue",
    metric: "AWS/SQS ApproximateAgeOfOldestMessage (QueueName = the source queue)",
    condition: `Maximum > sophia:alarmOldestMessageAgeSeconds for ${OLDEST_MESSAGE_AGE_EVALUATION_PERIODS} consecutive minutes`,
    anchor: () => "oldest-message-too-old",
    what: (s) =>
      `The oldest message in ${s.name} is older than the stage's threshold: the consumer is stopped (a pause made on purpose included: the status names who paused), slow or in a burst.`,
    firstCommand: (s) => ops(s.stage, `queue status ${s.name}`),
  },
  {
    id: "errors",
    title: "Function errors",
    per: "function",
    metric: "AWS/Lambda Errors (FunctionName)",
    condition: "Sum > 0 over 5 minutes",
    anchor: () => "function-errors",
    what: (s) => `${s.name} returned errors (a failed batch or a failed init).`,
    firstCommand: queueOrUnfinished,
  },
  {
    id: "throttles",
    title: "Function throttled",
    per: "function",
    metric: "AWS/Lambda Throttles (FunctionName)",
    condition: "Sum > 0 over 5 minutes",
    anchor: () => "function-throttled",
    what: (s) => `${s.name} was throttled (its concurrency was exhausted).`,
    firstCommand: queueOrUnfinished,
  },
  {
    id: "duration",
    title: "report-generate near its timeout",
    per: "function",
    metric: "AWS/Lambda Duration (FunctionName)",
    condition: `Maximum > ${DURATION_ALARM_FRACTION * 100}% of the function's timeout over 5 minutes`,
    anchor: () => "report-generate-near-its-timeout",
    what: (s) => `${s.name} ran longer than ${DURATION_ALARM_FRACTION * 100}% of its timeout (slow model calls).`,
    // Its queue's status names the attempts failing by kind (`timeout`) long before any reaches the DLQ.
    firstCommand: queueOrUnfinished,
  },
  {
    id: "dropped-invalid",
    title: "Invalid messages dropped",
    per: "function",
    metric: "Sophia RecordsDroppedInvalid (Stage, Function)",
    condition: "Sum > 0 over 5 minutes",
    anchor: () => "invalid-messages-dropped",
    what: (s) => `${s.name} dropped messages its contract rejects: a producer sends invalid bodies ("invalid message dropped" log lines).`,
    firstCommand: (s) => ops(s.stage, ofFunction(s).unfinishedWorkCommand),
  },
  {
    id: "reports-failed",
    title: "Reports failing",
    per: "function",
    metric: "Sophia ReportsFailed (Stage, Function)",
    condition: "Sum > 0 over 5 minutes",
    anchor: () => "reports-failing",
    what: (s) => `${s.name} failed report attempts in the last 5 minutes (by error kind on the dashboard); the third failure of a report sends its message to the DLQ.`,
    firstCommand: (s) => ops(s.stage, "report failures"),
  },
  {
    id: "transient-give-up",
    title: "Records given up after a day of transient failures",
    per: "function",
    metric: "Sophia RecordsGivenUp (Stage, Function)",
    condition: "Sum > 0 over 5 minutes",
    anchor: () => "records-given-up-after-transient-failures",
    what: (s) =>
      `${s.name} gave up on records that failed transiently (the provider or database away) for longer than the give-up age (24 hours); they are in the ${queueOf(s)} DLQ with their attempts still available.`,
    firstCommand: (s) => ops(s.stage, `dlq list ${queueOf(s)}`),
  },
  {
    id: "time-to-report",
    title: "Reports are late (the time-to-report service level)",
    per: "function",
    metric: "Sophia TimeToReportMs (Stage, Function)",
    condition: `${timeToReport().statistic} > ${humanMs(timeToReport().thresholdMs)} over ${humanMs(timeToReport().periodSeconds * 1000)} (declarations/metrics.json serviceLevels)`,
    anchor: () => "reports-are-late",
    what: (s) =>
      `Reports are late: the ${timeToReport().statistic} of the time from an interview's end to its report stored, over the reports ${s.name} completed in the last ${humanMs(timeToReport().periodSeconds * 1000)}, is over ${humanMs(timeToReport().thresholdMs)}.`,
    firstCommand: (s) => ops(s.stage, "report late"),
  },
  {
    id: "erasures-overdue",
    title: "Erasures not completed in time",
    per: "function",
    metric: "Sophia ErasuresOverdue (Stage, Function)",
    condition: `Maximum > 0 over ${humanMs(ERASURE_ALARM_PERIOD_SECONDS * 1000)}; no data point in that period is ALARM too (missing data breaching: the schedule checks every ${ERASURE_CHECK_RATE_MINUTES} minutes)`,
    anchor: () => "erasures-not-completed-in-time",
    what: (s) =>
      withDeclaredFacts(
        `Erasure requests of candidate data are still PENDING more than {erasureCompletionHours} hours after they were made (counted by ${s.name}); each says what is left and why. Or no count arrived for ${humanMs(ERASURE_ALARM_PERIOD_SECONDS * 1000)}: the scheduled erasure check (every ${ERASURE_CHECK_RATE_MINUTES} minutes) or ${s.name} is broken.`,
        "the erasures-overdue alarm",
      ),
    firstCommand: (s) => ops(s.stage, "erasure list --overdue"),
  },
];

export function alarmKind(id: AlarmKindId): AlarmKind {
  return ALARM_KINDS.find((k) => k.id === id)!;
}

/** One alarm the stage gets: its kind, what it is about, its name without `<app>-<stage>-`. */
export interface PlannedAlarm {
  kind: AlarmKindId;
  subject: AlarmSubject;
  suffix: string;
}

/**
 * Every alarm of a stage, in one list: the program creates exactly these (pipeline.ts the queue
 * alarms, stack.ts the function alarms; a test compares the registered alarms with this list) and
 * docs/reference/alarms.md is rendered from it.
 */
export function plannedAlarms(
  settings: Settings,
  metrics: MetricsDeclaration,
  config: Pick<StageConfig, "stage" | "invocableUnsubscribed">,
): PlannedAlarm[] {
  const planned: PlannedAlarm[] = [];
  for (const q of settings.queues) {
    const subject = queueSubject(config.stage, q);
    planned.push({ kind: "dlq-not-empty", subject, suffix: `${q.dlqName}-not-empty` });
    planned.push({ kind: "oldest-message-age", subject, suffix: `${q.name}-oldest-message-age` });
  }
  for (const fn of settings.functions.filter((f) => canRun(f, config))) {
    const queue = settings.queues.find((q) => q.key === fn.subscribedTo)?.name;
    const subject: FunctionSubject = {
      stage: config.stage,
      name: fn.name,
      ...(queue ? { queue } : {}),
      unfinishedWorkCommand: fn.unfinishedWorkCommand,
    };
    const kinds: AlarmKindId[] = ["errors", "throttles"];
    if (wiringFor(fn.name).durationAlarm) kinds.push("duration");
    if (emits(metrics, "RecordsDroppedInvalid", fn.name)) kinds.push("dropped-invalid");
    if (emits(metrics, "ReportsFailed", fn.name)) kinds.push("reports-failed");
    // Only a consumer that requeues transient failures has a give-up age (queues.json requeuesTransientFailures).
    const requeues = settings.queues.some((q) => q.key === fn.subscribedTo && q.requeuesTransientFailures);
    if (requeues && emits(metrics, "RecordsGivenUp", fn.name)) kinds.push("transient-give-up");
    if (emits(metrics, "TimeToReportMs", fn.name)) kinds.push("time-to-report");
    if (emits(metrics, "ErasuresOverdue", fn.name)) kinds.push("erasures-overdue");
    for (const kind of kinds) planned.push({ kind, subject, suffix: `${fn.name}-${kind}` });
  }
  return planned;
}

/** What the alarm says: what happened, the first command, the runbook section. */
export function alarmDescription(id: AlarmKindId, subject: AlarmSubject): string {
  const k = alarmKind(id);
  const text = `${k.what(subject)} First: ${k.firstCommand(subject)}. Runbook: ${RUNBOOK_PATH}#${k.anchor(subject)}`;
  if (text.length > ALARM_DESCRIPTION_MAX) throw new Error(`alarm description over ${ALARM_DESCRIPTION_MAX} characters: ${text}`);
  return text;
}

/**
 * Above the threshold is bad; no data is fine (unless `missingBreaches`: a metric a schedule makes
 * arrive whatever the traffic); ALARM goes to the target's topics (no OK burst).
 */
function notifying(target: AlarmTarget, missingBreaches = false) {
  return {
    comparisonOperator: "GreaterThanThreshold",
    treatMissingData: missingBreaches ? "breaching" : "notBreaching",
    alarmActions: target.actions,
    tags: target.tags,
  };
}

/**
 * Whether a function can run, so that it gets dashboard series and alarms: it consumes a queue,
 * or the stage lets it be invoked (`sophia:invocableUnsubscribedFunctions`; otherwise its reserved
 * concurrency is 0 and it has no metric that could ever have data).
 */
export function canRun(fn: FunctionSpec, config: Pick<StageConfig, "invocableUnsubscribed">): boolean {
  return fn.subscribedTo !== null || config.invocableUnsubscribed;
}

/**
 * Alarms reach a person: a protected stage (production, `prod-rs`) with neither `sophia:alarmTopicArn` nor
 * `sophia:alarmSubscription` is a config error; another stage gets a warning at every deploy
 * (returned, the caller logs it).
 */
export function checkAlarmDelivery(
  config: Pick<StageConfig, "stage" | "protectData" | "alarmTopicArn" | "alarmSubscription">,
): string | undefined {
  if (config.alarmTopicArn || config.alarmSubscription) return undefined;
  const how =
    `set sophia:alarmSubscription ({protocol: email, endpoint: <address>}, then confirm AWS's e-mail) ` +
    `or sophia:alarmTopicArn (an existing topic someone is subscribed to)`;
  if (config.protectData) {
    throw new ConfigError(config.stage, [`alarms of protected stage "${config.stage}" would reach nobody: ${how}`]);
  }
  return `ALARMS REACH NOBODY on stage "${config.stage}": its alarm topic has no subscription. To be paged, ${how}.`;
}

export function dlqNotEmptyAlarm(
  name: string,
  alarmName: string,
  dlqName: pulumi.Input<string>,
  subject: AlarmSubject,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: alarmDescription("dlq-not-empty", subject),
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
  subject: AlarmSubject,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: alarmDescription("oldest-message-age", subject),
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
  subject: AlarmSubject,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  const spec = {
    errors: { metricName: "Errors", statistic: "Sum", threshold: 0 },
    throttles: { metricName: "Throttles", statistic: "Sum", threshold: 0 },
    duration: { metricName: "Duration", statistic: "Maximum", threshold: Math.round(timeoutSeconds * 1000 * DURATION_ALARM_FRACTION) },
  }[kind];
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: alarmDescription(kind, subject),
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
 * An alarm on one of the functions' EMF metrics (declared in metrics.json with [Stage, Function]):
 * `dropped-invalid` (RecordsDroppedInvalid: the drop is the contract, but a producer sends what
 * the contract rejects and the message is gone; its redacted preview is in the log) or
 * `reports-failed` (ReportsFailed in total: a failing report pages within minutes instead of when
 * its message reaches the DLQ, 3 receives x 1800 s later) or `transient-give-up` (RecordsGivenUp:
 * a record failed transiently for longer than the give-up age and went to the DLQ) or
 * `time-to-report` (TimeToReportMs: its declared service level's percentile, an
 * ExtendedStatistic, over the level's period: reports are late).
 *
 * A percentile alarm: `extendedStatistic` instead of `statistic` (PutMetricAlarm ExtendedStatistic,
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html). Percentiles
 * of an EMF metric exist because each line publishes raw values, never negative ones here ("CloudWatch
 * needs raw data points to calculate percentile statistics", "not available ... when any of the metric
 * values are negative": https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricStatistics.html).
 */
export function emfAlarm(
  name: string,
  alarmName: string,
  kind: EmfAlarmKind,
  metrics: MetricsDeclaration,
  subject: AlarmSubject,
  functionName: string,
  target: AlarmTarget,
  opts: pulumi.CustomResourceOptions,
): aws.cloudwatch.MetricAlarm {
  const metricName = EMF_ALARM_METRICS[kind];
  if (!emits(metrics, metricName, subject.name)) throw new Error(`${subject.name} does not emit ${metricName} (declarations/metrics.json)`);
  return new aws.cloudwatch.MetricAlarm(
    name,
    {
      name: alarmName,
      alarmDescription: alarmDescription(kind, subject),
      ...emfAlarmMetric(metrics, metricName, { Stage: subject.stage, Function: functionName }),
      ...(kind === "time-to-report"
        ? {
            extendedStatistic: serviceLevel(metrics, metricName).statistic,
            period: serviceLevel(metrics, metricName).periodSeconds,
            threshold: serviceLevel(metrics, metricName).thresholdMs,
          }
        : kind === "erasures-overdue"
          ? { statistic: "Maximum", period: ERASURE_ALARM_PERIOD_SECONDS, threshold: 0 }
          : { statistic: "Sum", period: LAMBDA_METRIC_PERIOD_SECONDS, threshold: 0 }),
      evaluationPeriods: 1,
      // The schedule (erasure-check.ts) sends a count every ERASURE_CHECK_RATE_MINUTES: silence pages.
      ...notifying(target, kind === "erasures-overdue"),
    },
    { ...opts, deleteBeforeReplace: true },
  );
}
