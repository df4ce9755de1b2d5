/**
 * Names of the stacks and of their CloudFormation outputs, shared by the stacks (which create the outputs) and by
 * operator tools that read them with DescribeStacks (`npm run keys -- --stack <stage>`, scripts/keys.ts). Plain data:
 * importing this module does not load aws-cdk-lib.
 *
 * Outputs are plain stack outputs (no `Export`): tools read them by key; nothing imports them across stacks, so they
 * never pin a resource in place.
 */
import { type TableName, tables } from '../shared/infra/resources.js';

/** `VisionStateful-<stage>` and `VisionStateless-<stage>` (lib/app.ts builds the stacks with these names). */
export const STACK_NAME_PREFIX = { stateful: 'VisionStateful-', stateless: 'VisionStateless-' } as const;

export function stackNames(stage: string): { stateful: string; stateless: string } {
  return { stateful: `${STACK_NAME_PREFIX.stateful}${stage}`, stateless: `${STACK_NAME_PREFIX.stateless}${stage}` };
}

/** Output key of a table's name in the stateful stack: `<table id>TableName`, e.g. `ApiKeysTableName`. */
export function tableOutputKey(name: TableName): string {
  return `${tables[name].id}TableName`;
}

/** Outputs of the stateful stack besides the table names. */
export const STATEFUL_OUTPUTS = {
  uploadsBucketName: 'UploadsBucketName',
  providerSecretArn: 'ProviderSecretArn',
  /** The EventBridge bus every run event goes to (contract-v1.1 §4). */
  eventBusName: 'EventBusName',
  eventBusArn: 'EventBusArn',
} as const;

/** Outputs of the stateless stack. */
export const STATELESS_OUTPUTS = {
  apiUrl: 'ApiUrl',
  restApiId: 'RestApiId',
  /** The per-key usage plan; API Gateway API keys for client keys are attached to it (docs/keys.md). */
  usagePlanId: 'UsagePlanId',
  /** SNS topic every alarm notifies (ALARM and OK). */
  alarmTopicArn: 'AlarmTopicArn',
} as const;
