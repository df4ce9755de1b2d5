/**
 * Ranged access to an uploaded object for inspection. The first ranged GET doubles as the presence and size check
 * (its Content-Range carries the object's total size), and its bytes serve every later read that falls inside them,
 * so a small file costs one S3 request in all.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { isMissingObject, s3 } from '../aws/s3.js';
import type { RangeReader } from '../inspect/index.js';

/** Bytes fetched by the first read: one block of the inspection's block cache (shared/inspect/source.ts). */
export const FIRST_READ_BYTES = 64 * 1024;

export interface StoredObject {
  sizeBytes: number;
  read: RangeReader;
}

// S3 answers a ranged GET on an empty object with 416 InvalidRange: the object exists and has no bytes.
function isEmptyObject(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === 'InvalidRange' ||
      (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416)
  );
}

async function getRange(bucket: string, key: string, start: number, end: number) {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${start}-${end}` }));
  const bytes = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
  const total = /\/(\d+)$/.exec(out.ContentRange ?? '')?.[1];
  return { bytes, total: total === undefined ? undefined : Number(total) };
}

/** Opens the object; returns null when it does not exist (the bytes were never PUT). */
export async function openStoredObject(bucket: string, key: string): Promise<StoredObject | null> {
  let first: Awaited<ReturnType<typeof getRange>>;
  try {
    first = await getRange(bucket, key, 0, FIRST_READ_BYTES - 1);
  } catch (error: unknown) {
    if (isMissingObject(error)) return null;
    if (isEmptyObject(error)) return { sizeBytes: 0, read: async () => new Uint8Array() };
    throw error;
  }
  // Without a Content-Range the whole object came back (a store that ignores Range), so its length is the size.
  const sizeBytes = first.total ?? first.bytes.length;
  const head = first.bytes;
  return {
    sizeBytes,
    read: async (start, end) =>
      end < head.length ? head.subarray(start, end + 1) : (await getRange(bucket, key, start, end)).bytes,
  };
}
