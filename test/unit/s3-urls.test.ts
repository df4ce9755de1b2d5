/**
 * Presigned addresses made without an S3 client (shared/aws/s3-urls.ts) equal, byte for byte, the ones the SDK's
 * getSignedUrl makes with an S3Client for the same object, time and credentials: deployed (the bucket's regional
 * domain), behind a path-style emulator, behind a virtual-hosted custom endpoint, and at the public upload endpoint.
 */
import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { objectExists, presignObject } from '../../shared/aws/s3-urls.js';
import { uploadsBucket } from '../../shared/infra/resources.js';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';

const BUCKET = process.env[uploadsBucket.envVar] ?? '';
const REGION = process.env.AWS_REGION ?? '';
const KEY = 'uploads/tenant-a/upl_0123456789abcdef0123456789abcdef';
const signingDate = new Date('2026-11-25T12:34:56Z');

const ENV_NAMES = ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'UPLOAD_PUBLIC_ENDPOINT', 'S3_FORCE_PATH_STYLE'] as const;
const saved = Object.fromEntries(ENV_NAMES.map((name) => [name, process.env[name]]));
const savedDomain = process.env[uploadsBucket.domainEnvVar];

function setEnv(values: Partial<Record<(typeof ENV_NAMES)[number], string>>): void {
  for (const name of ENV_NAMES) {
    if (values[name] === undefined) delete process.env[name];
    else process.env[name] = values[name];
  }
}

afterEach(() => {
  for (const name of ENV_NAMES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  if (savedDomain === undefined) delete process.env[uploadsBucket.domainEnvVar];
  else process.env[uploadsBucket.domainEnvVar] = savedDomain;
});

/**
 * What the service used to do: an S3Client configured like the old presigning client, except that it does not ask S3
 * for response checksums (`x-amz-checksum-mode=ENABLED` on a GET, meaningless for a browser preview).
 */
function sdkClient(config: S3ClientConfig = {}): S3Client {
  return new S3Client({
    region: REGION,
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? '',
      ...(process.env.AWS_SESSION_TOKEN ? { sessionToken: process.env.AWS_SESSION_TOKEN } : {}),
    },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...config,
  });
}

async function sdkPut(client: S3Client, contentLength: number) {
  return getSignedUrl(
    client,
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: KEY,
      ContentLength: contentLength,
      ContentType: 'application/octet-stream',
    }),
    { expiresIn: 900, signableHeaders: new Set(['content-type', 'content-length']), signingDate },
  );
}

const ourPut = (contentLength: number) =>
  presignObject({
    method: 'PUT',
    key: KEY,
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(contentLength) },
    expiresIn: 900,
    forClients: true,
    signingDate,
  });

describe('presigned addresses equal the SDK client', () => {
  test('deployed: the bucket regional domain, a PUT signed for its length and type', async () => {
    setEnv({});
    process.env[uploadsBucket.domainEnvVar] = `${BUCKET}.s3.${REGION}.amazonaws.com`;
    const expected = await sdkPut(sdkClient(), 13775);
    expect(new URL(expected).host).toBe(`${BUCKET}.s3.${REGION}.amazonaws.com`);
    expect(await ourPut(13775)).toBe(expected);
    // The length is part of the signature: another length is another address.
    expect(await ourPut(13776)).not.toBe(expected);
  });

  test('deployed: a GET that names the type and file name to answer with', async () => {
    setEnv({});
    process.env[uploadsBucket.domainEnvVar] = `${BUCKET}.s3.${REGION}.amazonaws.com`;
    const disposition = 'inline; filename="till slip (1) it\'s_*.png"';
    const expected = await getSignedUrl(
      sdkClient(),
      new GetObjectCommand({
        Bucket: BUCKET,
        Key: KEY,
        ResponseContentType: 'image/png',
        ResponseContentDisposition: disposition,
      }),
      { expiresIn: 300, signingDate },
    );
    const ours = await presignObject({
      method: 'GET',
      key: KEY,
      query: { 'response-content-disposition': disposition, 'response-content-type': 'image/png' },
      expiresIn: 300,
      forClients: true,
      signingDate,
    });
    expect(ours).toBe(expected);
  });

  test('a path-style emulator (S3_FORCE_PATH_STYLE) and an IP-address endpoint', async () => {
    setEnv({ AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566', S3_FORCE_PATH_STYLE: 'true' });
    const expected = await sdkPut(sdkClient({ forcePathStyle: true, endpoint: 'http://127.0.0.1:4566' }), 10);
    expect(new URL(expected).pathname).toBe(`/${BUCKET}/${KEY}`);
    expect(await ourPut(10)).toBe(expected);
    // An IP address cannot carry the bucket as a subdomain: path style even when not forced, as the SDK does.
    setEnv({ AWS_ENDPOINT_URL: 'http://10.0.0.7:9000' });
    expect(await ourPut(10)).toBe(await sdkPut(sdkClient({ endpoint: 'http://10.0.0.7:9000' }), 10));
  });

  test('a custom endpoint with a host name puts the bucket in front of it', async () => {
    setEnv({ AWS_ENDPOINT_URL_S3: 'https://storage.example.test:9443' });
    const expected = await sdkPut(sdkClient({ endpoint: 'https://storage.example.test:9443' }), 99);
    expect(new URL(expected).host).toBe(`${BUCKET}.storage.example.test:9443`);
    expect(await ourPut(99)).toBe(expected);
  });

  test('the public upload endpoint is used for the addresses clients get, not for the functions own calls', async () => {
    setEnv({
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566',
      UPLOAD_PUBLIC_ENDPOINT: 'http://192.168.1.5:4566',
      S3_FORCE_PATH_STYLE: 'true',
    });
    const expected = await sdkPut(sdkClient({ forcePathStyle: true, endpoint: 'http://192.168.1.5:4566' }), 5);
    expect(await ourPut(5)).toBe(expected);
    const head = await presignObject({ method: 'HEAD', key: KEY, expiresIn: 60, signingDate });
    expect(head).toBe(
      await getSignedUrl(
        sdkClient({ forcePathStyle: true, endpoint: 'http://127.0.0.1:4566' }),
        new HeadObjectCommand({ Bucket: BUCKET, Key: KEY }),
        { expiresIn: 60, signingDate },
      ),
    );
  });

  test('deployed without the bucket domain fails loudly instead of guessing a host', async () => {
    setEnv({});
    delete process.env[uploadsBucket.domainEnvVar];
    await expect(ourPut(1)).rejects.toThrow(/UPLOADS_BUCKET_DOMAIN/);
  });
});

describe('objectExists (a HEAD through a presigned address)', () => {
  let storage: FakeServer;
  const statuses: number[] = [];

  beforeAll(async () => {
    storage = await startFakeServer();
  });
  afterAll(async () => storage.close());
  beforeEach(() => {
    statuses.length = 0;
    storage.requests.length = 0;
    storage.respond(() => ({ status: statuses.shift() ?? 500 }));
    setEnv({ AWS_ENDPOINT_URL_S3: storage.url });
  });

  test('200 is true, 404 is false, and the request is a signed HEAD of the object', async () => {
    statuses.push(200, 404);
    expect(await objectExists(KEY)).toBe(true);
    expect(await objectExists(KEY)).toBe(false);
    expect(storage.requests[0]?.method).toBe('HEAD');
    const url = new URL(storage.requests[0]?.path ?? '', storage.url);
    expect(url.pathname).toBe(`/${BUCKET}/${KEY}`);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  test('an answer that does not come within 5 s is abandoned and asked again', async () => {
    storage.respond(() => (storage.requests.length === 1 ? { status: 200, delayMs: 6_000 } : { status: 200 }));
    expect(await objectExists(KEY)).toBe(true);
    expect(storage.requests).toHaveLength(2);
  });

  test('a 5xx is retried; three in a row fail; a 403 fails at once', async () => {
    statuses.push(503, 200);
    expect(await objectExists(KEY)).toBe(true);
    expect(storage.requests).toHaveLength(2);
    statuses.push(500, 502, 503);
    await expect(objectExists(KEY)).rejects.toThrow(/status 503/);
    expect(storage.requests).toHaveLength(5);
    statuses.push(403);
    await expect(objectExists(KEY)).rejects.toThrow(/status 403/);
    expect(storage.requests).toHaveLength(6);
  });
});
