/**
 * The tests' fixed account, region, VPC and layer, without Pulumi: a test that needs only these
 * (the confinement sweep) does not load the Pulumi runtime. harness.ts and mocks.ts re-export them.
 */
export const ACCOUNT = "123456789012";
export const REGION = "eu-west-1";
export const PARTITION = "aws";

/**
 * Every option that adds a resource type or a grant (VPC with interface endpoints, an alarm
 * subscription, resume bucket access): the stage the deploy role's table and the rehearsal are held to.
 */
export const EVERY_OPTION_VPC = { vpcId: "vpc-0abc1234", subnetIds: ["subnet-0aaa1111"], securityGroupIds: ["sg-0ccc3333"], interfaceEndpoints: true };

/** The extension layer the tests configure (eu-west-1, arm64; the x86_64 stacks override it). */
export const TEST_LAYER_ARN = {
  arm64: "arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:11",
  x86_64: "arn:aws:lambda:eu-west-1:015030872274:layer:AWS-Parameters-and-Secrets-Lambda-Extension:11",
};

/** The stage file's sophia:alarmSubscription in every-option runs (harness.ts), as the bootstrap reads it. */
export const EVERY_OPTION_ALARM = { subscription: { protocol: "email", endpoint: "oncall@example.com" } };
