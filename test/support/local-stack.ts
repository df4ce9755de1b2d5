/**
 * Arranging states of the running local stack that the HTTP API cannot produce on demand (for the dashboard's
 * browser test): an API key with fewer scopes, and a run whose upload has expired. They write to the emulators the
 * stack started, using the coordinates it printed (StackInfo), exactly as the stores and the retention rule would.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Scope } from '../../shared/infra/routes.js';
import { type ApiKeyRecord, hashApiKey } from '../../shared/store/tenants.js';
import type { StackInfo } from '../integration/stack.js';

function documents(info: StackInfo): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: info.endpoints.dynamodb }));
}

/** Stores an active key for `tenantId` with only `scopes` (as `npm run keys -- create --scopes` would); returns it. */
export async function createScopedKey(info: StackInfo, tenantId: string, scopes: Scope[]): Promise<string> {
  const key = `vk_test_${randomBytes(24).toString('base64url')}`;
  const record: ApiKeyRecord = {
    keyHash: hashApiKey(key),
    keyId: `key_${randomUUID().replaceAll('-', '')}`,
    tenantId,
    scopes,
    status: 'active',
    label: 'test: limited scopes',
    createdAt: new Date().toISOString(),
  };
  const client = documents(info);
  await client.send(new PutCommand({ TableName: info.resources.tables.apiKeys, Item: record }));
  client.destroy();
  return key;
}

/** Deletes a run's uploaded object, as the bucket's retention rule does after the upload retention period. */
export async function expireRunFile(info: StackInfo, jobId: string): Promise<void> {
  const client = documents(info);
  const out = await client.send(
    new GetCommand({ TableName: info.resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
  );
  client.destroy();
  const objectKey = (out.Item as { objectKey?: string } | undefined)?.objectKey;
  if (!objectKey) throw new Error(`run ${jobId} has no stored object key`);
  const s3 = new S3Client({ endpoint: info.endpoints.s3, forcePathStyle: true });
  await s3.send(new DeleteObjectCommand({ Bucket: info.resources.bucket, Key: objectKey }));
  s3.destroy();
}
