/**
 * S3 as the API handlers reach it, through presigned addresses (shared/aws/s3-urls.ts): a local HTTP server that holds
 * objects by key and answers GET (a Range gives 206 with Content-Range, or 416 on an empty object) and HEAD, with
 * 404 NoSuchKey for a key it does not hold. `useFakeS3()` runs it for one test file and points AWS_ENDPOINT_URL_S3 at
 * it (an IP address, so the addresses are path-style: /{bucket}/{key}).
 */
import { uploadsBucket } from '../../shared/infra/resources.js';
import { type FakeServer, type ScriptedResponse, startFakeServer } from './fake-server.js';

export interface S3Request {
  method: string;
  key: string;
  range: string | undefined;
}

export interface FakeS3 {
  put(key: string, bytes: Uint8Array): void;
  /** Forgets every object and every recorded request. */
  reset(): void;
  /** Requests received since the last reset, oldest first. */
  readonly requests: S3Request[];
  /** Answers every request with this status (an outage) until reset. */
  failWith(status: number): void;
}

function answer(
  objects: Map<string, Uint8Array>,
  method: string,
  key: string,
  range: string | undefined,
): ScriptedResponse {
  const bytes = objects.get(key);
  if (!bytes) {
    return {
      status: 404,
      raw: '<Error><Code>NoSuchKey</Code></Error>',
      headers: { 'content-type': 'application/xml' },
    };
  }
  const full = { status: 200, headers: { 'content-length': String(bytes.length) } };
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
    headers: { 'content-range': `bytes ${start}-${end}/${bytes.length}` },
  };
}

/** Starts the fake for the current test file (beforeAll/afterAll) and clears it before each test. */
export function useFakeS3(): FakeS3 {
  const objects = new Map<string, Uint8Array>();
  const requests: S3Request[] = [];
  let outage: number | undefined;
  let server: FakeServer | undefined;
  const saved = process.env.AWS_ENDPOINT_URL_S3;

  beforeAll(async () => {
    server = await startFakeServer((request): ScriptedResponse => {
      const url = new URL(request.path, 'http://fake-s3');
      const prefix = `/${process.env[uploadsBucket.envVar]}/`;
      if (!url.pathname.startsWith(prefix)) throw new Error(`request outside the uploads bucket: ${url.pathname}`);
      const key = url.pathname.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
      requests.push({ method: request.method, key, range: request.headers.range });
      if (outage !== undefined) return { status: outage, raw: '' };
      return answer(objects, request.method, key, request.headers.range);
    });
    process.env.AWS_ENDPOINT_URL_S3 = server.url;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_S3;
    else process.env.AWS_ENDPOINT_URL_S3 = saved;
    await server?.close();
  });

  const fake: FakeS3 = {
    put: (key, bytes) => {
      objects.set(key, bytes);
    },
    reset: () => {
      objects.clear();
      requests.length = 0;
      outage = undefined;
    },
    requests,
    failWith: (status) => {
      outage = status;
    },
  };
  beforeEach(() => fake.reset());
  return fake;
}
