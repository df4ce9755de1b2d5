/**
 * The Bedrock batch fake's storage on a real S3 API (the local stack's emulator): it reads a job's input and writes
 * its output where the service role would let Bedrock, so the batcher on the local stack reads them as it would in AWS.
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ObjectStorage } from './batch-fakes.js';

/** `s3://bucket/key` → its bucket and key. */
function parts(uri: string): { Bucket: string; Key: string } {
  const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!match) throw new Error(`not an S3 URI: ${uri}`);
  return { Bucket: match[1] as string, Key: match[2] as string };
}

/** Storage through an S3 endpoint; `endpoint` is read at each call (the stack may start after the fake). */
export function s3Storage(endpoint: () => string): ObjectStorage & { close(): void } {
  let client: S3Client | undefined;
  let at = '';
  const s3 = () => {
    if (!client || at !== endpoint()) {
      client?.destroy();
      at = endpoint();
      client = new S3Client({
        endpoint: at,
        forcePathStyle: true,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      });
    }
    return client;
  };
  return {
    read: async (uri) => {
      const out = await s3().send(new GetObjectCommand(parts(uri)));
      return (await out.Body?.transformToString()) ?? '';
    },
    write: async (uri, body) => {
      await s3().send(new PutObjectCommand({ ...parts(uri), Body: body }));
    },
    close: () => client?.destroy(),
  };
}
