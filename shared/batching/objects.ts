/**
 * The batch lane's objects in the uploads bucket under `batch/`: each waiting request's line (its request body, which
 * carries the document and is too large for a DynamoDB item) and each answer, as JSON. The worker writes a line when
 * it parks a run, the batcher reads lines to submit them and writes answers; the worker reads an answer back.
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { s3 } from '../aws/s3.js';
import { uploadsBucketName } from '../aws/s3-urls.js';
import { uploadsBucket } from '../infra/resources.js';

/** The key of a request's line or answer: the request id is made of safe characters (run id, provider, step, pages). */
export const batchObjectKey = (kind: 'lines' | 'answers', requestId: string) =>
  `${uploadsBucket.batchPrefix}${kind}/${requestId.replaceAll('#', '/')}.json`;

export async function putJson(key: string, value: unknown): Promise<number> {
  const body = JSON.stringify(value);
  await s3().send(
    new PutObjectCommand({ Bucket: uploadsBucketName(), Key: key, Body: body, ContentType: 'application/json' }),
  );
  return Buffer.byteLength(body);
}

export async function getJson<T = unknown>(key: string): Promise<T> {
  const out = await s3().send(new GetObjectCommand({ Bucket: uploadsBucketName(), Key: key }));
  return JSON.parse((await out.Body?.transformToString()) ?? 'null') as T;
}
