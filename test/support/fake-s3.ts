/**
 * S3 as the API handlers reach it, through presigned addresses (shared/aws/s3-urls.ts): a local HTTP server that holds
 * objects by key and answers GET (a Range gives 206 with Content-Range, or 416 on an empty object) and HEAD, with
 * 404 NoSuchKey for a key it does not hold. Every answer carries the object's ETag (its MD5, as S3's for a single PUT)
 * and, when given them, its version id and user metadata (`x-amz-meta-…`); an `If-Match` that differs answers 412.
 * `useFakeS3()` runs it for one test file and points AWS_ENDPOINT_URL_S3 at it (an IP address, so the addresses are
 * path-style: /{bucket}/{key}).
 */
import { createHash } from 'node:crypto';
import { uploadsBucket } from '../../shared/infra/resources.js';
import { type FakeServer, type ScriptedResponse, startFakeServer } from './fake-server.js';

export interface S3Request {
  method: string;
  key: string;
  range: string | undefined;
  ifMatch: string | undefined;
}

interface StoredObject {
  bytes: Uint8Array;
  versionId?: string;
  /** User metadata, answered as `x-amz-meta-<name>` headers. */
  metadata?: Record<string, string>;
}

export interface FakeS3 {
  put(key: string, bytes: Uint8Array, options?: { versionId?: string; metadata?: Record<string, string> }): void;
  /** Runs `change` once `count` requests have been answered (to replace an object between two reads). */
  afterRequests(count: number, change: () => void): void;
  /** Forgets every object and every recorded request. */
  reset(): void;
  /** Requests received since the last reset, oldest first. */
  readonly requests: S3Request[];
  /** Answers every request with this status (an outage) until reset. */
  failWith(status: number): void;
}

/** The ETag S3 gives an object written by one PUT: the quoted MD5 of its bytes. */
export const etagOf = (bytes: Uint8Array): string => `"${createHash('md5').update(bytes).digest('hex')}"`;

function answer(
  objects: Map<string, StoredObject>,
  method: string,
  key: string,
  range: string | undefined,
  ifMatch: string | undefined,
): ScriptedResponse {
  const object = objects.get(key);
  if (!object) {
    return {
      status: 404,
      raw: '<Error><Code>NoSuchKey</Code></Error>',
      headers: { 'content-type': 'application/xml' },
    };
  }
  const { bytes } = object;
  const identity: Record<string, string> = {
    etag: etagOf(bytes),
    ...(object.versionId !== undefined ? { 'x-amz-version-id': object.versionId } : {}),
    ...Object.fromEntries(Object.entries(object.metadata ?? {}).map(([name, value]) => [`x-amz-meta-${name}`, value])),
  };
  if (ifMatch !== undefined && ifMatch !== identity.etag) {
    return { status: 412, raw: '<Error><Code>PreconditionFailed</Code></Error>', headers: identity };
  }
  const full = { status: 200, headers: { 'content-length': String(bytes.length), ...identity } };
  if (method === 'HEAD') return { ...full, raw: '' };
  if (range === undefined) return { ...full, raw: Buffer.from(bytes) };
  const match = /^bytes=(\d+)-(\d+)$/.exec(range);
  if (!match) throw new Error(`unexpected Range header ${range}`);
  const start = Number(match[1]);
  if (bytes.length === 0 || start >= bytes.length)
    return { status: 416, raw: '<Error><Code>InvalidRange</Code></Error>' };
  const end = Math.min(bytes.length - 1, Number(match[2]));
  return {
    status: 206,
    raw: Buffer.from(bytes.subarray(start, end + 1)),
    headers: { 'content-range': `bytes ${start}-${end}/${bytes.length}`, ...identity },
  };
}

/** Starts the fake for the current test file (beforeAll/afterAll) and clears it before each test. */
export function useFakeS3(): FakeS3 {
  const objects = new Map<string, StoredObject>();
  const requests: S3Request[] = [];
  let outage: number | undefined;
  let pending: { count: number; change: () => void } | undefined;
  let server: FakeServer | undefined;
  const saved = process.env.AWS_ENDPOINT_URL_S3;

  beforeAll(async () => {
    server = await startFakeServer((request): ScriptedResponse => {
      const url = new URL(request.path, 'http://fake-s3');
      const prefix = `/${process.env[uploadsBucket.envVar]}/`;
      if (!url.pathname.startsWith(prefix)) throw new Error(`request outside the uploads bucket: ${url.pathname}`);
      const key = url.pathname.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
      const ifMatch = request.headers['if-match'];
      requests.push({ method: request.method, key, range: request.headers.range, ifMatch });
      if (outage !== undefined) return { status: outage, raw: '' };
      const reply = answer(objects, request.method, key, request.headers.range, ifMatch);
      if (pending !== undefined && requests.length >= pending.count) {
        pending.change();
        pending = undefined;
      }
      return reply;
    });
    process.env.AWS_ENDPOINT_URL_S3 = server.url;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_S3;
    else process.env.AWS_ENDPOINT_URL_S3 = saved;
    await server?.close();
  });

  const fake: FakeS3 = {
    put: (key, bytes, options = {}) => {
      objects.set(key, { bytes, ...options });
    },
    afterRequests: (count, change) => {
      pending = { count, change };
    },
    reset: () => {
      objects.clear();
      requests.length = 0;
      outage = undefined;
      pending = undefined;
    },
    requests,
    failWith: (status) => {
      outage = status;
    },
  };
  beforeEach(() => fake.reset());
  return fake;
}
