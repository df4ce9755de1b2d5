/**
 * Helpers for unit tests that mock the AWS SDK at the client (aws-sdk-client-mock): table names as the functions see
 * them, stored items, S3 objects served to the worker's client from real fixture bytes, and the SDK's own error types.
 * Nothing here imports service modules that read configuration, so a test file may set the environment first.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, type GetObjectCommandOutput, NoSuchKey, type S3Client } from '@aws-sdk/client-s3';
import type { AwsClientStub } from 'aws-sdk-client-mock';
import { tables, uploadsBucket } from '../../shared/infra/resources.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { UploadRecord } from '../../shared/store/uploads.js';
import { estimateMicros } from './pricing.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

/**
 * A value as DynamoDB would store and return it: the Maps `transactWrite` hands the marshaller (shared/store/
 * transact.ts) back as plain objects, at every depth. For reading the transactions a test captured.
 */
export function mapsAsObjects<T>(value: T): T {
  if (Array.isArray(value)) return value.map(mapsAsObjects) as T;
  if (value instanceof Map) {
    return Object.fromEntries([...value].map(([key, item]) => [key, mapsAsObjects(item)])) as T;
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapsAsObjects(item)])) as T;
  }
  return value;
}

/** A fixture file's bytes (test/fixtures). */
export function fixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(path.join(FIXTURES, name)));
}

/** The deployed name of a table, as test/setup-env.ts set it for the functions. */
export function tableName(table: keyof typeof tables): string {
  const name = process.env[tables[table].envVar];
  if (!name) throw new Error(`test environment lacks ${tables[table].envVar}`);
  return name;
}

export function bucketName(): string {
  const name = process.env[uploadsBucket.envVar];
  if (!name) throw new Error(`test environment lacks ${uploadsBucket.envVar}`);
  return name;
}

/** A GetObject body the SDK's consumers can read (`transformToByteArray` / `transformToString`). */
export function objectBody(bytes: Uint8Array): NonNullable<GetObjectCommandOutput['Body']> {
  return {
    transformToByteArray: async () => bytes.slice(),
    transformToString: async () => Buffer.from(bytes).toString('utf8'),
    transformToWebStream: () => new Blob([bytes.slice()]).stream(),
  } as unknown as NonNullable<GetObjectCommandOutput['Body']>;
}

/**
 * Serves `bytes` as the stored object to the worker's S3 client, which reads whole files (the API handlers reach S3
 * over HTTP instead: test/support/fake-s3.ts).
 */
export function serveObject(s3: AwsClientStub<S3Client>, bytes: Uint8Array, key?: string): void {
  s3.on(GetObjectCommand, key === undefined ? {} : { Key: key }).callsFake(() => ({
    Body: objectBody(bytes),
    ContentLength: bytes.length,
  }));
}

/** GetObject's answer for a key with no object. */
export function s3NoSuchKey(): NoSuchKey {
  return new NoSuchKey({ message: 'The specified key does not exist.', $metadata: { httpStatusCode: 404 } });
}

/** A cancelled DynamoDB transaction with one reason code per item (`None` for the items that passed). */
export function transactionCancelled(codes: string[]): TransactionCanceledException {
  return new TransactionCanceledException({
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`,
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
}

/** A DynamoDB conditional-check failure as the document client raises it for a single-item write. */
export function conditionalCheckFailed(): Error {
  return new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
}

const HOUR_MS = 3600_000;

/** An upload slot as presign stores it, usable for another day. */
export function uploadItem(overrides: Partial<UploadRecord> = {}): UploadRecord {
  const uploadId = overrides.uploadId ?? 'upl_1';
  const tenantId = overrides.tenantId ?? 'tenant-a';
  const expires = new Date(Date.now() + 24 * HOUR_MS);
  return {
    uploadId,
    tenantId,
    objectKey: `uploads/${tenantId}/${uploadId}`,
    fileName: 'receipt.png',
    contentLength: 1000,
    createdAt: new Date(Date.now() - HOUR_MS).toISOString(),
    expiresAt: expires.toISOString(),
    expiresAtEpoch: Math.floor(expires.getTime() / 1000),
    ...overrides,
  };
}

/** A queued run as create-run stores it: one-page PNG, local OCR, held at today's estimate for one page. */
export function runItem(overrides: Partial<RunRecord> = {}): RunRecord {
  const jobId = overrides.jobId ?? 'run_1';
  const tenantId = overrides.tenantId ?? 'tenant-a';
  return {
    jobId,
    tenantId,
    status: 'queued',
    stage: 'waiting',
    uploadId: 'upl_1',
    objectKey: `uploads/${tenantId}/upl_1`,
    prompt: 'Extract the receipt',
    outputFormat: 'json',
    schemaId: 'receipt',
    task: {
      prompt: 'Extract the receipt',
      outputFormat: 'json',
      fields: [
        { name: 'merchant', type: 'string', required: true },
        { name: 'total', type: 'number', required: true },
      ],
      schemaId: null,
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    workflow: null,
    metadata: {},
    file: { mime: 'image/png', kind: 'image', sizeBytes: 13775, width: 800, height: 834, pages: 1 },
    strategy: 'ocr_then_analyze',
    candidates: ['local'],
    estimateMicros: estimateMicros(1),
    maxCostMicros: null,
    holdFromCredit: false,
    createdAt: '2026-11-01T10:00:00.000Z',
    expiresAtEpoch: 2_000_000_000,
    usageCounted: true,
    ...overrides,
  };
}

/** A run settled `completed`: price 104 micros of a 130 hold, so 26 refunded. */
export function completedRunItem(overrides: Partial<RunRecord> = {}): RunRecord {
  return runItem({
    estimateMicros: 130,
    status: 'completed',
    stage: 'done',
    completedAt: '2026-11-01T10:00:05.000Z',
    result: { merchant: 'ACME HARDWARE', total: 42.5 },
    usage: { requests: 1, billableUnits: 1, costMicros: 80, priceMicros: 104 },
    chargedMicros: 104,
    refundedMicros: 26,
    confidence: 0.9,
    attempts: [{ provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: 1200 }],
    ...overrides,
  });
}

/** A run settled `failed` after every provider failed: nothing charged, the whole hold refunded. */
export function failedRunItem(overrides: Partial<RunRecord> = {}): RunRecord {
  return runItem({
    estimateMicros: 130,
    status: 'failed',
    stage: 'done',
    completedAt: '2026-11-01T10:00:05.000Z',
    error: {
      code: 'PROVIDER_ERROR',
      message: 'Every candidate provider in the plan failed',
      status: 502,
      retryable: true,
    },
    chargedMicros: 0,
    refundedMicros: 130,
    attempts: [{ provider: 'local', step: 'ocr', outcome: 'failed', latencyMs: 30, failure: 'server' }],
    ...overrides,
  });
}
