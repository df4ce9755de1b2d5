/**
 * Turns one handler's `ResourceAccess` (shared/infra/routes.ts) into IAM grants AND the environment variables that
 * carry resource names (shared/infra/resources.ts), in one call. A function can only learn a table's name through
 * the same call that grants access to it, so grants and environment cannot drift apart.
 */
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { runQueue, type TableName, tables, uploadsBucket, workerSettings } from '../shared/infra/resources.js';
import type { ResourceAccess } from '../shared/infra/routes.js';
import type { StatefulResources } from './stateful-stack.js';

/** Object key pattern the functions may touch in the uploads bucket. */
export const UPLOAD_OBJECTS = `${uploadsBucket.keyPrefix}*`;

function assertNever(value: never, what: string): never {
  throw new Error(`Unhandled ${what}: ${String(value)}`);
}

export function bindAccess(fn: lambda.Function, access: ResourceAccess, resources: StatefulResources): void {
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
    switch (access.bucket) {
      case 'read':
        bucket.grantRead(fn, UPLOAD_OBJECTS);
        break;
      case 'presign-put':
        // A presigned URL carries the signer's permissions: the function itself must be allowed to PutObject.
        bucket.grantPut(fn, UPLOAD_OBJECTS);
        break;
      default:
        assertNever(access.bucket, 'bucket access');
    }
  }

  if (access.queue !== undefined) {
    const queue = resources.runQueue;
    fn.addEnvironment(runQueue.envVar, queue.queueUrl);
    switch (access.queue) {
      case 'send':
        queue.grantSendMessages(fn);
        break;
      case 'consume':
        // The event source mapping grants receive/delete/change-visibility on the queue to the function's role.
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
}
