/**
 * Bedrock batch inference for the batcher (shared/batching/batcher.ts): the lines as a JSONL of `{recordId,
 * modelInput}` under `batch/bedrock/{token}/input/` of the uploads bucket, a model invocation job
 * (CreateModelInvocationJob, InvokeModel format, the service role BEDROCK_BATCH_ROLE_ARN that Bedrock assumes to read
 * the input and write the output), GetModelInvocationJob until it ends (Completed | PartiallyCompleted | Failed |
 * Stopped | Expired), and the answers read from every `*.jsonl.out` under its output prefix (`modelOutput` or `error`).
 * StopModelInvocationJob cancels a job (Bedrock bills only the tokens already processed; it ends Stopped).
 *
 * Not to undo:
 * - Record ids are `R` and a 10-digit index (the reference asks for an alphanumeric id; a custom id carries `#`), mapped
 *   back through `records.json` beside the input; a record with no output line is left out, so the batcher expires it.
 * - The job's clientRequestToken (and its S3 prefix) is a hash of the model and the custom ids: a batch sent again
 *   after a crash between Bedrock's acceptance and the batcher's record, with the same requests, is the same job, not
 *   a second bill.
 * - A group under Bedrock's minimum records per job is never submitted (shared/batching/groups.ts holds it back).
 */
import { createHash } from 'node:crypto';
import {
  BedrockClient,
  CreateModelInvocationJobCommand,
  GetModelInvocationJobCommand,
  type ModelInvocationJobStatus,
  StopModelInvocationJobCommand,
} from '@aws-sdk/client-bedrock';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { s3 } from '../../aws/s3.js';
import { uploadsBucketName } from '../../aws/s3-urls.js';
import { batchSettings, bedrockBatch } from '../../infra/resources.js';
import type { FailureKind } from '../../task.js';
import type { BatchApi, BatchItemResult } from '../batch-codec.js';
import { isPlainObject } from '../common.js';

const ENDED: ReadonlySet<ModelInvocationJobStatus> = new Set([
  'Completed',
  'PartiallyCompleted',
  'Failed',
  'Stopped',
  'Expired',
]);

/** The prefix of one job's objects in the uploads bucket. */
export const bedrockJobPrefix = (token: string) => `${bedrockBatch.prefix}${token}/`;

/** The record id of the line at `index`: alphanumeric, as the reference asks. */
export const recordIdAt = (index: number) => `R${String(index).padStart(10, '0')}`;

/** The job's idempotency token: the same model and requests give the same token (and so the same job). */
export function jobToken(model: string, customIds: readonly string[]): string {
  return createHash('sha256')
    .update(JSON.stringify([model, [...customIds].sort()]))
    .digest('hex')
    .slice(0, 40);
}

/** `s3://bucket/key` → key in the uploads bucket. */
function keyOf(uri: string, bucket: string): string {
  const prefix = `s3://${bucket}/`;
  if (!uri.startsWith(prefix)) throw new Error('bedrock batch: the job writes outside the uploads bucket');
  return uri.slice(prefix.length);
}

async function readText(bucket: string, key: string): Promise<string> {
  const out = await s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await out.Body?.transformToString()) ?? '';
}

async function listKeys(bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3().send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
    );
    for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** What one output record says: its answer, or its error by code. */
function resultOf(record: Record<string, unknown>): BatchItemResult {
  if (record.modelOutput !== undefined && record.error === undefined)
    return { kind: 'answer', body: record.modelOutput };
  const error = isPlainObject(record.error) ? record.error : {};
  const code = Number(error.errorCode ?? 500);
  const failure: FailureKind = code === 429 ? 'rate_limited' : code >= 500 || Number.isNaN(code) ? 'server' : 'client';
  return { kind: 'failed', failure, message: `bedrock batch: record error ${Number.isNaN(code) ? '?' : code}` };
}

export interface BedrockBatchOptions {
  /** The control-plane client (default: one for AWS_REGION, created on first use). */
  client?: BedrockClient;
}

/** Bedrock batch inference through the uploads bucket and the service role BEDROCK_BATCH_ROLE_ARN. */
export function bedrockBatchApi(env: NodeJS.ProcessEnv = process.env, options: BedrockBatchOptions = {}): BatchApi {
  let client = options.client;
  const bedrock = () => {
    const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    client ??= new BedrockClient({ ...(region ? { region } : {}) });
    return client;
  };
  return {
    id: 'bedrock',
    async submit(model, lines) {
      const roleArn = env[bedrockBatch.roleEnvVar]?.trim();
      if (!roleArn) throw new Error(`bedrock batch: ${bedrockBatch.roleEnvVar} is not configured`);
      const bucket = uploadsBucketName();
      const token = jobToken(
        model,
        lines.map((l) => l.customId),
      );
      const prefix = bedrockJobPrefix(token);
      const records = Object.fromEntries(lines.map((l, i) => [recordIdAt(i), l.customId]));
      const jsonl = lines.map((l, i) => JSON.stringify({ recordId: recordIdAt(i), modelInput: l.body })).join('\n');
      await s3().send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${prefix}records.json`,
          Body: JSON.stringify(records),
          ContentType: 'application/json',
        }),
      );
      await s3().send(
        new PutObjectCommand({ Bucket: bucket, Key: `${prefix}input/records.jsonl`, Body: `${jsonl}\n` }),
      );
      const job = await bedrock().send(
        new CreateModelInvocationJobCommand({
          jobName: `vision-batch-${token.slice(0, 24)}`,
          roleArn,
          modelId: model,
          modelInvocationType: 'InvokeModel',
          clientRequestToken: token,
          inputDataConfig: {
            s3InputDataConfig: { s3Uri: `s3://${bucket}/${prefix}input/records.jsonl`, s3InputFormat: 'JSONL' },
          },
          outputDataConfig: { s3OutputDataConfig: { s3Uri: `s3://${bucket}/${prefix}output/` } },
          timeoutDurationInHours: batchSettings.expiresWithinHours,
        }),
      );
      if (!job.jobArn) throw new Error('bedrock batch: the job was created without an ARN');
      return job.jobArn;
    },

    async poll(ref) {
      const job = await bedrock().send(new GetModelInvocationJobCommand({ jobIdentifier: ref }));
      if (!job.status || !ENDED.has(job.status)) return undefined;
      const bucket = uploadsBucketName();
      const outputUri = job.outputDataConfig?.s3OutputDataConfig?.s3Uri;
      const results = new Map<string, BatchItemResult>();
      if (!outputUri) return results;
      const outputPrefix = keyOf(outputUri.endsWith('/') ? outputUri : `${outputUri}/`, bucket);
      const jobPrefix = outputPrefix.replace(/output\/$/, '');
      const records = JSON.parse(await readText(bucket, `${jobPrefix}records.json`)) as Record<string, string>;
      for (const key of await listKeys(bucket, outputPrefix)) {
        if (!key.endsWith('.jsonl.out')) continue;
        for (const line of (await readText(bucket, key)).split('\n')) {
          if (line.trim() === '') continue;
          const record: unknown = JSON.parse(line);
          if (!isPlainObject(record) || typeof record.recordId !== 'string') continue;
          const customId = records[record.recordId];
          if (customId !== undefined) results.set(customId, resultOf(record));
        }
      }
      return results;
    },

    async cancel(ref) {
      await bedrock().send(new StopModelInvocationJobCommand({ jobIdentifier: ref }));
    },
  };
}
