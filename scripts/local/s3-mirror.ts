/**
 * Keeps the S3 emulator's objects on disk. fauxqs 1.x holds everything in memory and offers no persistence, so the
 * local stack copies each object that a request changes into `<data>/s3/<bucket>/` (bytes + a small JSON with its key,
 * content type and user metadata) and, at start, puts the copies back. Not to undo: the copy is read back through the S3 API after
 * the emulator answered, never from the request, so what is kept is exactly what the emulator stores (a restored object
 * has the same bytes, hence the same ETag a queued run pinned at creation). A copy is written just after the write it
 * follows: an object stored in the last moment before the stack was killed may be missing after a restart.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { log } from '../../shared/log.js';

interface KeptObject {
  key: string;
  contentType?: string;
  /** User metadata (`x-amz-meta-…`: a page image's size). */
  metadata?: Record<string, string>;
}

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,62}$/;

export interface S3Mirror {
  /** Tells the mirror about a request the emulator answered (its onResponse hook). */
  noteResponse(method: string, url: string, statusCode: number): void;
  /** Puts every kept object back into the emulator at `endpoint`, then starts copying; returns how many. */
  start(endpoint: string): Promise<number>;
  /** Waits for the copies in flight. */
  flush(): Promise<void>;
}

export function createS3Mirror(dir: string): S3Mirror {
  let client: S3Client | undefined;
  const pending = new Map<string, Promise<void>>();

  const fileOf = (bucket: string, key: string) =>
    path.join(dir, bucket, createHash('sha256').update(key).digest('hex'));

  async function copy(bucket: string, key: string): Promise<void> {
    if (!client) return;
    const file = fileOf(bucket, key);
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const bytes = await object.Body?.transformToByteArray();
      await mkdir(path.dirname(file), { recursive: true });
      const metadata = object.Metadata && Object.keys(object.Metadata).length > 0 ? object.Metadata : undefined;
      const kept: KeptObject = {
        key,
        ...(object.ContentType ? { contentType: object.ContentType } : {}),
        ...(metadata ? { metadata } : {}),
      };
      await writeFile(`${file}.tmp`, bytes ?? new Uint8Array());
      await rename(`${file}.tmp`, `${file}.bin`);
      await writeFile(`${file}.json`, JSON.stringify(kept));
    } catch (error: unknown) {
      if (!(error instanceof NoSuchKey)) throw error;
      await rm(`${file}.json`, { force: true });
      await rm(`${file}.bin`, { force: true });
    }
  }

  /** Copies every object of a bucket and drops kept copies of objects it no longer has (after a batch delete). */
  async function copyBucket(bucket: string): Promise<void> {
    if (!client) return;
    const keys = new Set<string>();
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.add(object.Key);
      token = page.NextContinuationToken;
    } while (token);
    for (const kept of await keptObjects(bucket)) if (!keys.has(kept.key)) await copy(bucket, kept.key);
    for (const key of keys) await copy(bucket, key);
  }

  async function keptObjects(bucket: string): Promise<KeptObject[]> {
    const names = await readdir(path.join(dir, bucket)).catch(() => [] as string[]);
    const kept: KeptObject[] = [];
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      try {
        kept.push(JSON.parse(await readFile(path.join(dir, bucket, name), 'utf8')) as KeptObject);
      } catch {
        // A copy cut short by a kill: its object is lost.
      }
    }
    return kept;
  }

  /** Runs copies of one bucket/key one after another, in request order. */
  function enqueue(id: string, work: () => Promise<void>): void {
    const next = (pending.get(id) ?? Promise.resolve())
      .then(work)
      .catch((error: unknown) => log.warn('could not keep a copy of an S3 object on disk', { object: id, error }));
    pending.set(id, next);
    void next.finally(() => {
      if (pending.get(id) === next) pending.delete(id);
    });
  }

  return {
    noteResponse(method, url, statusCode) {
      if (!client || statusCode >= 300 || !['PUT', 'POST', 'DELETE'].includes(method)) return;
      let bucket: string;
      let key: string;
      try {
        const pathname = new URL(url, 'http://s3.local').pathname;
        const slash = pathname.indexOf('/', 1);
        bucket = decodeURIComponent(slash < 0 ? pathname.slice(1) : pathname.slice(1, slash));
        key = slash < 0 ? '' : decodeURIComponent(pathname.slice(slash + 1));
      } catch {
        return;
      }
      if (!BUCKET_NAME.test(bucket)) return;
      if (key === '') enqueue(bucket, () => copyBucket(bucket));
      else enqueue(`${bucket}/${key}`, () => copy(bucket, key));
    },

    async start(endpoint) {
      const restoring = new S3Client({ endpoint, forcePathStyle: true });
      let restored = 0;
      const buckets = await readdir(dir).catch(() => [] as string[]);
      for (const bucket of buckets.filter((b) => BUCKET_NAME.test(b))) {
        await restoring.send(new CreateBucketCommand({ Bucket: bucket }));
        for (const kept of await keptObjects(bucket)) {
          const bytes = await readFile(`${fileOf(bucket, kept.key)}.bin`).catch(() => undefined);
          if (bytes === undefined) continue;
          await restoring.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: kept.key,
              Body: bytes,
              ContentType: kept.contentType,
              Metadata: kept.metadata,
            }),
          );
          restored += 1;
        }
      }
      client = restoring;
      return restored;
    },

    async flush() {
      while (pending.size > 0) await Promise.allSettled([...pending.values()]);
    },
  };
}
