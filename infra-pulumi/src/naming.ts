/**
 * Physical names: `<app>-<stage>-<name>` for functions, queues, roles and alarms (docs/design.md), and
 * the tags every taggable resource carries. Stage = Pulumi stack name.
 */

// AWS name limits.
const SQS_QUEUE_NAME_MAX = 80;
const LAMBDA_FUNCTION_NAME_MAX = 64;
const IAM_ROLE_NAME_MAX = 64;
const IAM_POLICY_NAME_MAX = 128;

export class Naming {
  readonly prefix: string;

  constructor(
    readonly app: string,
    readonly stage: string,
  ) {
    if (!/^[a-z][a-z0-9-]*$/.test(app)) throw new Error(`app name "${app}" must be lowercase letters, digits and '-'`);
    if (!/^[a-z0-9][a-z0-9-]*$/.test(stage)) {
      throw new Error(
        `stack name "${stage}" cannot be used as a stage: use lowercase letters, digits and '-' ` +
          `(it becomes part of queue and function names)`,
      );
    }
    this.prefix = `${app}-${stage}`;
  }

  private checked(name: string, max: number, what: string): string {
    if (name.length > max) {
      throw new Error(`${what} name "${name}" is ${name.length} characters; AWS allows ${max}. Use a shorter stack name.`);
    }
    return name;
  }

  functionName(fn: string): string {
    return this.checked(`${this.prefix}-${fn}`, LAMBDA_FUNCTION_NAME_MAX, "Lambda function");
  }

  queueName(queue: string): string {
    return this.checked(`${this.prefix}-${queue}`, SQS_QUEUE_NAME_MAX, "SQS queue");
  }

  roleName(fn: string): string {
    return this.checked(`${this.prefix}-${fn}`, IAM_ROLE_NAME_MAX, "IAM role");
  }

  policyName(what: string): string {
    return this.checked(`${this.prefix}-${what}`, IAM_POLICY_NAME_MAX, "IAM policy");
  }

  /**
   * IAM path of the stage's roles and policies, `/<app>/<stage>/`: the deploy role's IAM grants are
   * scoped to it, and a stage name has no '/', so no other stage's path extends it.
   */
  get iamPath(): string {
    return `/${this.app}/${this.stage}/`;
  }

  /** Secrets Manager names use `/`: `sophia/<stage>/<name>`. */
  secretName(what: string): string {
    return `${this.app}/${this.stage}/${what}`;
  }

  topicName(what: string): string {
    return this.checked(`${this.prefix}-${what}`, 256, "SNS topic");
  }

  alarmName(what: string): string {
    return `${this.prefix}-${what}`;
  }

  /** The operator audit trail's log group (`operatorAuditLogGroup` of queues.json). */
  auditLogGroupName(suffix: string): string {
    return `${this.prefix}-${suffix}`;
  }

  /** Lambda writes to this log group by default; the program creates it so it can own retention. */
  logGroupName(functionName: string): string {
    return `/aws/lambda/${functionName}`;
  }

  get tags(): Record<string, string> {
    return { app: this.app, stage: this.stage, "managed-by": "pulumi" };
  }
}
