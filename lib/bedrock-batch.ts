/**
 * Bedrock batch inference for the batcher (issue 31, shared/providers/bedrock/batch-api.ts), created only when bedrock
 * is enabled: the service role Bedrock assumes to run a model invocation job, and the batcher's own rights.
 *
 * Not to undo:
 * - The role trusts bedrock.amazonaws.com only for this account's model invocation jobs in this region
 *   (aws:SourceAccount, aws:SourceArn), so no other account's job and no other Bedrock feature can assume it.
 * - Every S3 right (the role's and the batcher's listing) stops at bedrockBatch.prefix of the uploads bucket: a job
 *   reads its records and writes its output there, never the uploads themselves.
 * - The batcher may pass that role and no other, and only to Bedrock (iam:PassedToService).
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { bedrockBatch } from '../shared/infra/resources.js';
import { acknowledgeWildcardResources } from './nag.js';
import { bedrockStatements } from './provider-iam.js';

/** What the batcher does with jobs: create (for the configured model), read and stop them. */
export const BEDROCK_BATCH_ACTIONS = [
  'bedrock:CreateModelInvocationJob',
  'bedrock:GetModelInvocationJob',
  'bedrock:StopModelInvocationJob',
] as const;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const WILDCARDS = [
  {
    pattern: /:model-invocation-job\/\*$/,
    reason:
      "Bedrock batch inference jobs of this account and region: their ids are made by Bedrock when the batcher creates one, so they cannot be listed in advance; the batcher creates, reads and stops only jobs, and the service role's trust is conditioned on the same ARN pattern.",
  },
  {
    pattern: new RegExp(`/${escapeRegExp(bedrockBatch.prefix)}\\*$`),
    reason: `Objects of Bedrock batch jobs under the ${bedrockBatch.prefix} prefix of the uploads bucket only (${bedrockBatch.prefix}{token}/records.json, input/records.jsonl and output/…, made per job): the job reads its records and writes its output there.`,
  },
  {
    pattern: /:bedrock:\*::foundation-model\//,
    reason:
      'The inference profile routes to its one base model in regions Bedrock chooses; limited to that model and, by the bedrock:InferenceProfileArn condition, to calls through that profile.',
  },
] as const;

/** ListBucket on the uploads bucket, for keys under the batch jobs' prefix only. */
function listJobObjects(bucket: s3.IBucket): iam.PolicyStatement {
  return new iam.PolicyStatement({
    actions: ['s3:ListBucket'],
    resources: [bucket.bucketArn],
    conditions: { StringLike: { 's3:prefix': [`${bedrockBatch.prefix}*`] } },
  });
}

/** Creates the Bedrock batch service role and grants the batcher what it needs to run jobs with it. */
export function grantBedrockBatch(batcher: lambda.Function, bucket: s3.IBucket, modelId: string): iam.Role {
  const stack = Stack.of(batcher);
  const jobs = `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:model-invocation-job/*`;
  const objects = bucket.arnForObjects(`${bedrockBatch.prefix}*`);
  const invoke = bedrockStatements(stack, modelId);

  const role = new iam.Role(stack, bedrockBatch.roleId, {
    description: 'Assumed by Bedrock to run the batcher model invocation jobs: their S3 input and output, the model',
    assumedBy: new iam.ServicePrincipal('bedrock.amazonaws.com', {
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': jobs },
      },
    }),
  });
  role.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject', 's3:PutObject'], resources: [objects] }));
  role.addToPolicy(listJobObjects(bucket));
  for (const statement of invoke) role.addToPolicy(statement);
  acknowledgeWildcardResources(role, WILDCARDS);

  batcher.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['bedrock:CreateModelInvocationJob'],
      // The job, and the model it runs (an inference profile's model only through that profile).
      resources: [jobs, ...invoke.flatMap((s) => s.resources)],
    }),
  );
  batcher.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['bedrock:GetModelInvocationJob', 'bedrock:StopModelInvocationJob'],
      resources: [jobs],
    }),
  );
  batcher.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['iam:PassRole'],
      resources: [role.roleArn],
      conditions: { StringEquals: { 'iam:PassedToService': 'bedrock.amazonaws.com' } },
    }),
  );
  batcher.addToRolePolicy(listJobObjects(bucket));
  batcher.addEnvironment(bedrockBatch.roleEnvVar, role.roleArn);
  acknowledgeWildcardResources(batcher, WILDCARDS);
  return role;
}
