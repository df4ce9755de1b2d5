/**
 * The world a run creation sees, mocked at the SDK clients: the upload slot and the tenant in DynamoDB, the uploaded
 * bytes in a fake S3 (a real fixture, served through ranged GETs of presigned addresses), the queue, and an idempotency table that remembers what the
 * creation transaction wrote (so a replay returns what an earlier request really stored).
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteCommand,
  type DeleteCommandInput,
  type DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { AwsClientStub } from 'aws-sdk-client-mock';
import type { TenantRecord } from '../../shared/store/tenants.js';
import type { UploadRecord } from '../../shared/store/uploads.js';
import { fixture, mapsAsObjects, tableName, uploadItem } from './aws.js';
import type { FakeS3 } from './fake-s3.js';

export interface Mocks {
  ddb: AwsClientStub<DynamoDBDocumentClient>;
  /** The uploads bucket, reached through presigned addresses (useFakeS3). */
  s3: FakeS3;
  sqs: AwsClientStub<SQSClient>;
}

export interface ArrangeOptions {
  /** Fixture file served as the object (default receipt.png); ignored when `bytes` is given. */
  file?: string;
  bytes?: Uint8Array;
  /** Overrides of the stored upload slot; `null` means no slot at all. */
  upload?: Partial<UploadRecord> | null;
  /** Overrides of the tenant; `availableMicros` makes it a limited tenant. */
  tenant?: Partial<TenantRecord>;
}

export interface World {
  upload: UploadRecord | null;
  bytes: Uint8Array;
  /** Idempotency records as the creation transactions wrote them, by key. */
  idempotency: Map<string, Record<string, unknown>>;
}

/** Arranges a creation that succeeds unless a test changes one part of the world. */
export function arrangeCreateRun(mocks: Mocks, options: ArrangeOptions = {}): World {
  const bytes = options.bytes ?? fixture(options.file ?? 'receipt.png');
  const upload = options.upload === null ? null : uploadItem({ contentLength: bytes.length, ...options.upload });
  const idempotency = new Map<string, Record<string, unknown>>();

  mocks.ddb.on(GetCommand, { TableName: tableName('uploads') }).resolves(upload ? { Item: upload } : {});
  mocks.ddb.on(GetCommand, { TableName: tableName('tenants') }).resolves({
    Item: {
      tenantId: 'tenant-a',
      name: 'Tenant A',
      createdAt: '2026-01-01T00:00:00.000Z',
      heldMicros: 0,
      chargedMicros: 0,
      refundedMicros: 0,
      ...options.tenant,
    },
  });
  mocks.ddb
    .on(GetCommand, { TableName: tableName('idempotency') })
    .callsFake((input: GetCommandInput) => ({ Item: idempotency.get(String(input.Key?.idempotencyKey)) }));
  mocks.ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    for (const item of input.TransactItems ?? []) {
      if (item.Put?.TableName === tableName('idempotency') && item.Put.Item) {
        idempotency.set(String(item.Put.Item.idempotencyKey), mapsAsObjects(item.Put.Item));
      }
    }
    return {};
  });
  // A conditional delete (`jobId = :jobId`) removes the record only if it still names that run.
  mocks.ddb.on(DeleteCommand, { TableName: tableName('idempotency') }).callsFake((input: DeleteCommandInput) => {
    const key = String(input.Key?.idempotencyKey);
    const wanted = input.ExpressionAttributeValues?.[':jobId'];
    if (wanted === undefined || idempotency.get(key)?.jobId === wanted) idempotency.delete(key);
    return {};
  });
  if (upload) mocks.s3.put(upload.objectKey, bytes);
  mocks.sqs.on(SendMessageCommand).resolves({ MessageId: 'msg-1' });
  return { upload, bytes, idempotency };
}

/** The TransactWrite inputs sent so far. */
export function transactions(mocks: Mocks): TransactWriteCommandInput[] {
  return mocks.ddb.commandCalls(TransactWriteCommand).map((c) => mapsAsObjects(c.args[0].input));
}

/** Asserts that nothing was held and nothing queued. */
export function expectNothingHeldOrQueued(mocks: Mocks): void {
  expect(mocks.ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  expect(mocks.sqs).not.toHaveReceivedCommand(SendMessageCommand);
}
