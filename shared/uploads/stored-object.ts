/**
 * Ranged access to an uploaded object for inspection. The first ranged GET doubles as the presence and size check
 * (its Content-Range carries the object's total size), and its bytes serve every later read that falls inside them,
 * so a small file costs one S3 request in all.
 *
 * The reads go through presigned addresses (shared/aws/s3-urls.ts) rather than an S3 client: create-run is the one
 * API handler that reads objects, and the client would add ~150 KB to its bundle and its cold start.
 */
import { requestObject } from '../aws/s3-urls.js';
import type { RangeReader } from '../inspect/index.js';

/** Bytes fetched by the first read: one block of the inspection's block cache (shared/inspect/source.ts). */
export const FIRST_READ_BYTES = 64 * 1024;

/**
 * Which bytes were inspected: the object's version when the bucket keeps versions, and its ETag. The worker reads
 * exactly these (a PUT to the same key after creation makes another object, not the run's).
 */
export interface ObjectIdentity {
  etag?: string;
  versionId?: string;
}

export interface StoredObject {
  sizeBytes: number;
  identity: ObjectIdentity;
  read: RangeReader;
}

/** The object was replaced while it was being inspected (a second PUT to the same presigned address). */
export class ObjectChangedError extends Error {
  constructor() {
    super('The upload changed while it was being read');
    this.name = 'ObjectChangedError';
  }
}

type RangeAnswer =
  | { kind: 'missing' }
  | { kind: 'empty' }
  | { kind: 'bytes'; bytes: Uint8Array; total: number | undefined; identity: ObjectIdentity };

async function getRange(key: string, start: number, end: number, expected?: string): Promise<RangeAnswer> {
  const headers: Record<string, string> = { range: `bytes=${start}-${end}` };
  // Later reads ask for the object the first one saw: a replacement in between answers 412.
  if (expected !== undefined) headers['if-match'] = expected;
  const answer = await requestObject({ method: 'GET', key, headers });
  if (answer.status === 412) throw new ObjectChangedError();
  // No such key: the bytes were never PUT.
  if (answer.status === 404) return { kind: 'missing' };
  // S3 answers a range on an empty object with 416 InvalidRange: the object exists and has no bytes.
  if (answer.status === 416) return { kind: 'empty' };
  if (answer.status !== 200 && answer.status !== 206) {
    throw new Error(`S3 GET of the upload failed: status ${answer.status}`);
  }
  const total = /\/(\d+)$/.exec(answer.headers.get('content-range') ?? '')?.[1];
  const etag = answer.headers.get('etag') ?? undefined;
  // S3 says "null" for an object written while versioning was off.
  const version = answer.headers.get('x-amz-version-id') ?? undefined;
  const identity: ObjectIdentity = {
    ...(etag ? { etag } : {}),
    ...(version && version !== 'null' ? { versionId: version } : {}),
  };
  return { kind: 'bytes', bytes: answer.body, total: total === undefined ? undefined : Number(total), identity };
}

/** Opens the object; returns null when it does not exist (the bytes were never PUT). */
export async function openStoredObject(key: string): Promise<StoredObject | null> {
  const first = await getRange(key, 0, FIRST_READ_BYTES - 1);
  if (first.kind === 'missing') return null;
  if (first.kind === 'empty') return { sizeBytes: 0, identity: {}, read: async () => new Uint8Array() };
  // Without a Content-Range the whole object came back (a store that ignores Range), so its length is the size.
  const sizeBytes = first.total ?? first.bytes.length;
  const head = first.bytes;
  return {
    sizeBytes,
    identity: first.identity,
    read: async (start, end) => {
      if (end < head.length) return head.subarray(start, end + 1);
      const more = await getRange(key, start, end, first.identity.etag);
      // Inspection reads only inside the size the first answer gave: anything but bytes now is a store failure.
      if (more.kind !== 'bytes') throw new Error(`S3 GET of the upload failed: the object is ${more.kind} now`);
      return more.bytes;
    },
  };
}
