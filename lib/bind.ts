/**
 * Turns one handler's `ResourceAccess` (shared/infra/routes.ts) into IAM grants AND the environment variables that
 * carry resource names (shared/infra/resources.ts), in one call. A function can only learn a table's name through
 * the same call that grants access to it, so grants and environment cannot drift apart.
 */

import { Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { ENV } from '../shared/infra/env.js';
import {
  deliverSettings,
  eventBus,
  runQueue,
  type TableName,
  tables,
  uploadsBucket,
  webhookQueue,
  workerSettings,
} from '../shared/infra/resources.js';
import type { ResourceAccess } from '../shared/infra/routes.js';
import { acknowledgeWildcardResources } from './nag.js';
import type { StatefulResources } from './stateful-stack.js';

/** Object key pattern the functions may touch in the uploads bucket. */
export const UPLOAD_OBJECTS = `${uploadsBucket.keyPrefix}*`;
/** Object key pattern of the page images of PDF runs (shared/uploads/page-previews.ts). */
export const PREVIEW_OBJECTS = `${uploadsBucket.previewsPrefix}*`;
/** Object key pattern of the batch lane's lines and answers (shared/batching/objects.ts). */
export const BATCH_OBJECTS = `${uploadsBucket.batchPrefix}*`;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function assertNever(value: never, what: string): never {
  throw new Error(`Unhandled ${what}: ${String(value)}`);
}

/** Wildcard resources the grants below produce, each acknowledged for cdk-nag (AwsSolutions-IAM5) with its reason. */
const SCOPED_WILDCARDS = [
  {
    pattern: /\/index\/\*$/,
    reason:
      "Table grant's index ARN (<table ARN>/index/*): covers only that table's global secondary indexes (byTenant, byTenantWorkflow), which the handler queries; no other table.",
  },
  {
    pattern: new RegExp(`/${escapeRegExp(uploadsBucket.keyPrefix)}\\*$`),
    reason: `Objects of the uploads bucket under the ${uploadsBucket.keyPrefix} prefix only (keys ${uploadsBucket.keyPrefix}{tenantId}/{uploadId}/{file name} are generated per upload, so they cannot be listed in advance).`,
  },
  {
    pattern: new RegExp(`/${escapeRegExp(uploadsBucket.previewsPrefix)}\\*$`),
    reason: `Page images of PDF runs under the ${uploadsBucket.previewsPrefix} prefix of the uploads bucket only (keys ${uploadsBucket.previewsPrefix}{tenantId}/{jobId}/page-{n}.jpg are made per run, so they cannot be listed in advance); one action each: s3:PutObject for the worker, s3:GetObject for file-url.`,
  },
  {
    pattern: new RegExp(`/${escapeRegExp(uploadsBucket.batchPrefix)}\\*$`),
    reason: `The batch lane's request lines and answers under the ${uploadsBucket.batchPrefix} prefix of the uploads bucket only (keys ${uploadsBucket.batchPrefix}{lines|answers}/{jobId}/{provider}/{step}/{pages}.json are made per request); s3:GetObject and s3:PutObject, for the worker and the batcher.`,
  },
] as const;

export function bindAccess(fn: lambda.Function, access: ResourceAccess, resources: StatefulResources): void {
  acknowledgeWildcardResources(fn, SCOPED_WILDCARDS);
  for (const [name, level] of Object.entries(access.tables ?? {}) as [TableName, 'read' | 'readwrite' | undefined][]) {
    if (level === undefined) continue;
    const table = resources.tables[name];
    fn.addEnvironment(tables[name].envVar, table.tableName);
    switch (level) {
      case 'read':
        table.grantReadData(fn);
        break;
      case 'readwrite':
        table.grantReadWriteData(fn);
        break;
      default:
        assertNever(level, 'table access');
    }
  }

  if (access.bucket !== undefined) {
    const bucket = resources.uploadsBucket;
    fn.addEnvironment(uploadsBucket.envVar, bucket.bucketName);
    fn.addEnvironment(uploadsBucket.domainEnvVar, bucket.bucketRegionalDomainName);
    switch (access.bucket) {
      case 'read':
        bucket.grantRead(fn, UPLOAD_OBJECTS);
        for (const action of ['s3:GetObject*', 's3:GetBucket*', 's3:List*']) {
          Validations.of(fn).acknowledge({
            id: `AwsSolutions-IAM5[Action::${action}]`,
            reason:
              'CDK grantRead action groups (GetObject*/GetBucket*/List*) on the uploads bucket and its uploads/ prefix only: reading an upload needs GetObject (and its version/tagging/ACL variants are harmless reads), HeadObject maps to GetObject, and a missing key answers 404 instead of 403 only with ListBucket.',
          });
        }
        break;
      case 'presign-put':
        // A presigned URL carries the signer's permissions: the function itself must be allowed to PutObject.
        bucket.grantPut(fn, UPLOAD_OBJECTS);
        Validations.of(fn).acknowledge({
          id: 'AwsSolutions-IAM5[Action::s3:Abort*]',
          reason:
            'CDK grantPut includes s3:AbortMultipartUpload (the only s3:Abort* action), on objects under the uploads/ prefix only.',
        });
        break;
      default:
        assertNever(access.bucket, 'bucket access');
    }
  }

  if (access.previews !== undefined) {
    if (access.bucket === undefined) throw new Error('previews access needs bucket access (its name and domain)');
    // One action on the previews prefix, nothing else: the worker writes page images, file-url reads (HEAD and the
    // presigned GET map to s3:GetObject; ListBucket for a 404 on a missing key comes with its bucket 'read').
    let action: string;
    switch (access.previews) {
      case 'read':
        action = 's3:GetObject';
        break;
      case 'write':
        action = 's3:PutObject';
        break;
      default:
        assertNever(access.previews, 'previews access');
    }
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [action],
        resources: [resources.uploadsBucket.arnForObjects(PREVIEW_OBJECTS)],
      }),
    );
  }

  if (access.batchObjects !== undefined) {
    fn.addEnvironment(uploadsBucket.envVar, resources.uploadsBucket.bucketName);
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [resources.uploadsBucket.arnForObjects(BATCH_OBJECTS)],
      }),
    );
  }

  if (access.queue !== undefined) {
    const queue = resources.runQueue;
    fn.addEnvironment(runQueue.envVar, queue.queueUrl);
    // Both send: the worker fans a long document out to its own queue (shared/worker/fanout.ts).
    queue.grantSendMessages(fn);
    switch (access.queue) {
      case 'send':
        break;
      case 'consume':
        // The event source mapping grants receive/delete/change-visibility on the queue to the function's role; the
        // worker's heartbeat hides the message it holds with ChangeMessageVisibility (shared/worker/heartbeat.ts).
        fn.addEventSource(
          new SqsEventSource(queue, {
            batchSize: workerSettings.batchSize,
            maxConcurrency: workerSettings.maxConcurrency,
            reportBatchItemFailures: true,
          }),
        );
        break;
      default:
        assertNever(access.queue, 'queue access');
    }
  }

  if (access.webhookQueue !== undefined) {
    const queue = resources.webhookQueue;
    fn.addEnvironment(webhookQueue.envVar, queue.queueUrl);
    queue.grantSendMessages(fn);
    switch (access.webhookQueue) {
      case 'send':
        break;
      case 'consume':
        // The deliver function also sends: the next try to its own queue, a delivery out of tries to the DLQ.
        fn.addEnvironment(webhookQueue.deadLetter.envVar, resources.webhookDeadLetterQueue.queueUrl);
        resources.webhookDeadLetterQueue.grantSendMessages(fn);
        fn.addEventSource(
          new SqsEventSource(queue, {
            batchSize: deliverSettings.batchSize,
            maxConcurrency: deliverSettings.maxConcurrency,
            reportBatchItemFailures: true,
          }),
        );
        break;
      default:
        assertNever(access.webhookQueue, 'webhook queue access');
    }
  }

  if (access.webhookSecrets !== undefined) {
    // Sealing and opening both need the key, and nothing else of Secrets Manager.
    const secret = resources.webhookSecretKey;
    fn.addEnvironment(ENV.webhookSecretStore, secret.secretArn);
    fn.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
    );
  }

  if (access.storageAddress && access.bucket === undefined) {
    fn.addEnvironment(uploadsBucket.domainEnvVar, resources.uploadsBucket.bucketRegionalDomainName);
  }

  if (access.eventBus !== undefined) {
    fn.addEnvironment(eventBus.feedQueue.envVar, resources.eventBusFeedQueue.queueUrl);
    resources.eventBusFeedQueue.grantSendMessages(fn);
  }
}

/** Environment variable that carries the provider secret's ARN (read by shared/providers/credentials.ts). */
export const PROVIDER_SECRET_ENV = ENV.providerSecretArn;

/**
 * Lets a function read the provider API keys: GetSecretValue on exactly that secret (no DescribeSecret, nothing else)
 * and its ARN in PROVIDER_SECRET_ARN. The stateless stack calls this for the worker only.
 */
export function bindProviderSecret(fn: lambda.Function, resources: StatefulResources): void {
  const secret = resources.providerSecret;
  fn.addEnvironment(PROVIDER_SECRET_ENV, secret.secretArn);
  fn.addToRolePolicy(
    new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
  );
}
