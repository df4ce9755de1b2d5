/** GET /v1/runs/{jobId}/file (a short-lived read address) and the dashboard's static pages. */
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as dashboard } from '../../functions/dashboard.js';
import { handler as fileUrl } from '../../functions/file-url.js';
import { dashboardHeaders, storageOrigin } from '../../shared/dashboard/assets.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { completedRunItem, tableName } from '../support/aws.js';
import { apiEvent, lambdaContext } from '../support/events.js';
import { useFakeS3 } from '../support/fake-s3.js';

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => {
  ddb.reset();
});

function getFile(jobId: string, tenantId = 'tenant-a') {
  return call(fileUrl, { path: `/v1/runs/${jobId}/file`, pathParameters: { jobId }, auth: { tenantId } });
}

describe('GET /v1/runs/{jobId}/file', () => {
  /** S3 as far as the handler talks to it: the HEAD of the object. */
  const storage = useFakeS3();

  test('answers a presigned GET of exactly that object, typed as inspected, valid for 5 minutes', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ fileName: 'till slip "1".png' }) });
    storage.put(completedRunItem().objectKey, new Uint8Array(13775));
    const before = Date.now();
    const answer = await getFile('run_1');
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      jobId: 'run_1',
      url: expect.any(String),
      expiresAt: expect.any(String),
      contentType: 'image/png',
      fileName: 'till slip "1".png',
    });
    const expires = Date.parse(answer.body.expiresAt) - before;
    expect(expires).toBeGreaterThanOrEqual(299_000);
    expect(expires).toBeLessThanOrEqual(301_000);

    const url = new URL(answer.body.url);
    const run = completedRunItem();
    expect(decodeURIComponent(url.pathname)).toContain(run.objectKey);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(url.searchParams.get('response-content-type')).toBe('image/png');
    // The client's file name is reduced to safe characters inside the header value.
    expect(url.searchParams.get('response-content-disposition')).toBe('inline; filename="till slip _1_.png"');
    // Nothing of the API key or tenant secret travels in the address.
    expect(answer.body.url).not.toMatch(/x-api-key/i);
    // Only a HEAD of exactly that object reached storage; the file itself is read by the browser, not by us.
    expect(storage.requests).toEqual([{ method: 'HEAD', key: run.objectKey, range: undefined }]);
  });

  test('the address names the version the run was created from, when the bucket keeps versions', async () => {
    const run = completedRunItem({ objectIdentity: { etag: '"e"', versionId: 'v-7' } });
    ddb.on(GetCommand).resolves({ Item: run });
    storage.put(run.objectKey, new Uint8Array(13775));
    const answer = await getFile('run_1');
    expect(new URL(answer.body.url).searchParams.get('versionId')).toBe('v-7');
  });

  test("an unknown run, or another tenant's, answers 404 NOT_FOUND without touching storage", async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ tenantId: 'tenant-b' }) });
    expectError(await getFile('run_1', 'tenant-a'), 'NOT_FOUND');
    ddb.on(GetCommand).resolves({});
    expectError(await getFile('run_nope'), 'NOT_FOUND');
    expect(storage.requests).toHaveLength(0);
    expect(ddb).toHaveReceivedCommandWith(GetCommand, { TableName: tableName('runs') });
  });

  test('a run whose upload has expired answers 404 NOT_FOUND saying so', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem() });
    // The bucket holds nothing under the run's key.
    const error = expectError(await getFile('run_1'), 'NOT_FOUND');
    expect(error.message).toMatch(/no longer stored/);
    expect(error.details).toEqual({ id: 'run_1', reason: 'file_expired' });
  });

  test('past the upload retention the file is not served, although the bucket still holds it', async () => {
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ uploadExpiresAtEpoch: hourAgo }) });
    storage.put(completedRunItem().objectKey, new Uint8Array(13775));
    const error = expectError(await getFile('run_1'), 'NOT_FOUND');
    expect(error.details).toEqual({ id: 'run_1', reason: 'file_expired' });
    expect(storage.requests).toHaveLength(0);

    // Within it, served as usual.
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ uploadExpiresAtEpoch: hourAgo + 7200 }) });
    expect((await getFile('run_1')).status).toBe(200);
  });

  test('a storage outage is a retryable 500, not a 404', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem() });
    storage.put(completedRunItem().objectKey, new Uint8Array(1));
    storage.failWith(503);
    expectError(await getFile('run_1'), 'INTERNAL_ERROR');
    expect(storage.requests.length).toBeGreaterThan(1);
  });

  test('the scope runs:read is required', async () => {
    const answer = await call(fileUrl, {
      path: '/v1/runs/run_1/file',
      pathParameters: { jobId: 'run_1' },
      auth: { tenantId: 'tenant-a', scopes: ['runs:write'] },
    });
    expectError(answer, 'FORBIDDEN');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });
});

describe('GET /v1/runs/{jobId}/file?page=N (a page image of a PDF run)', () => {
  const storage = useFakeS3();
  const PDF = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 1564, pages: 2 } as const;
  const pdfRun = (overrides: Partial<RunRecord> = {}) =>
    completedRunItem({ file: PDF, fileName: 'invoice "Oct".pdf', ...overrides });
  const previewKey = (page: number) => `previews/tenant-a/run_1/page-${page}.jpg`;

  function getPage(query: Record<string, string | string[]>, tenantId = 'tenant-a') {
    return call(fileUrl, {
      path: '/v1/runs/run_1/file',
      pathParameters: { jobId: 'run_1' },
      query,
      auth: { tenantId },
    });
  }

  test("answers a presigned GET of that page's image, as JPEG, with its size in pixels", async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun() });
    storage.put(previewKey(2), new Uint8Array(80_000), { metadata: { width: '1237', height: '1600' } });
    const answer = await getPage({ page: '2' });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      jobId: 'run_1',
      url: expect.any(String),
      expiresAt: expect.any(String),
      contentType: 'image/jpeg',
      fileName: 'invoice "Oct".pdf',
      page: 2,
      width: 1237,
      height: 1600,
    });
    const url = new URL(answer.body.url);
    expect(decodeURIComponent(url.pathname)).toMatch(/\/previews\/tenant-a\/run_1\/page-2\.jpg$/);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(url.searchParams.get('response-content-type')).toBe('image/jpeg');
    expect(url.searchParams.get('response-content-disposition')).toBe('inline; filename="invoice _Oct_-page-2.jpg"');
    // The image is a current object of its own: no version of the upload applies to it.
    expect(url.searchParams.get('versionId')).toBeNull();
    expect(storage.requests).toEqual([{ method: 'HEAD', key: previewKey(2), range: undefined }]);
  });

  test('without its size in the metadata the address is still served, without width and height', async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun() });
    storage.put(previewKey(1), new Uint8Array(10));
    const answer = await getPage({ page: '1' });
    expect(answer.status).toBe(200);
    expect(answer.body.page).toBe(1);
    expect(answer.body).not.toHaveProperty('width');
    expect(answer.body).not.toHaveProperty('height');
  });

  test('a page the worker stored no image of answers 404 NOT_FOUND with reason no_page_preview', async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun({ objectIdentity: { etag: '"e"', versionId: 'v-1' } }) });
    storage.put(completedRunItem().objectKey, new Uint8Array(1564));
    storage.put(previewKey(1), new Uint8Array(10));
    const error = expectError(await getPage({ page: '2' }), 'NOT_FOUND');
    expect(error.details).toEqual({ id: 'run_1', page: 2, reason: 'no_page_preview' });
    expect(error.message).toBe('Run run_1 has no image of page 2');
    // An image run has no page images at all.
    storage.reset();
    storage.put(completedRunItem().objectKey, new Uint8Array(13775));
    ddb.on(GetCommand).resolves({ Item: completedRunItem() });
    expect(expectError(await getPage({ page: '1' }), 'NOT_FOUND').details.reason).toBe('no_page_preview');
  });

  test('past the upload retention a page image is refused as the file is, without touching storage', async () => {
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    ddb.on(GetCommand).resolves({ Item: pdfRun({ uploadExpiresAtEpoch: hourAgo }) });
    storage.put(previewKey(1), new Uint8Array(10));
    const error = expectError(await getPage({ page: '1' }), 'NOT_FOUND');
    expect(error.details).toEqual({ id: 'run_1', reason: 'file_expired' });
    expect(storage.requests).toHaveLength(0);
  });

  test.each([
    ['0', 'page'],
    ['-1', 'page'],
    ['1.5', 'page'],
    ['two', 'page'],
    ['3', 'page'],
  ])('page=%s is 400 INVALID_REQUEST naming %s, before storage is asked', async (page, path) => {
    ddb.on(GetCommand).resolves({ Item: pdfRun() });
    const error = expectError(await getPage({ page }), 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toEqual([path]);
    expect(storage.requests).toHaveLength(0);
  });

  test('a page past the last one says how many pages the file has', async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun() });
    const error = expectError(await getPage({ page: '3' }), 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([{ path: 'page', message: "the run's file has 2 pages" }]);
  });

  test('page given twice, or another query parameter, is 400 INVALID_REQUEST', async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun() });
    expectError(await getPage({ page: ['1', '2'] }), 'INVALID_REQUEST');
    const unknown = expectError(await getPage({ pages: '1' }), 'INVALID_REQUEST');
    expect(unknown.details.issues.map((i: { path: string }) => i.path)).toEqual(['pages']);
    expect(storage.requests).toHaveLength(0);
  });

  test("an unknown run, or another tenant's, is 404 NOT_FOUND whatever the page", async () => {
    ddb.on(GetCommand).resolves({ Item: pdfRun({ tenantId: 'tenant-b' }) });
    storage.put('previews/tenant-b/run_1/page-1.jpg', new Uint8Array(10));
    const error = expectError(await getPage({ page: '1' }, 'tenant-a'), 'NOT_FOUND');
    expect(error.details).toEqual({ id: 'run_1' });
    expect(storage.requests).toHaveLength(0);
  });
});

describe('the dashboard pages', () => {
  async function page(pathParameters?: Record<string, string>, publicPath?: string) {
    const event = apiEvent({ path: '/', auth: null, ...(pathParameters ? { pathParameters } : {}) });
    if (publicPath) (event.requestContext as { path?: string }).path = publicPath;
    const result = await dashboard(event, lambdaContext());
    const headers = Object.fromEntries(
      Object.entries(result.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
    );
    return { status: result.statusCode, headers, body: result.body };
  }

  test('/ serves the HTML page with a strict content security policy and no referrer', async () => {
    const answer = await page(undefined, '/prod/');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(answer.body).toMatch(/<html/i);
    // Relative asset addresses, so the page works under a stage prefix.
    expect(answer.body).toContain('dashboard/app.js');
    expect(answer.headers['content-security-policy']).toContain("script-src 'self'");
    expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    // Previews may load from the storage origin only (here the emulator endpoint of the test environment, if any).
    expect(answer.headers['content-security-policy']).toContain(`img-src 'self' data: blob: ${storageOrigin()};`);
    expect(answer.headers['content-security-policy']).not.toMatch(/img-src[^;]* https: /);
    expect(answer.headers['referrer-policy']).toBe('no-referrer');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  test('under a stage without the trailing slash it redirects, so relative addresses resolve inside the stage', async () => {
    const answer = await page(undefined, '/prod');
    expect(answer.status).toBe(301);
    expect(answer.headers.location).toBe('/prod/');
    // Nothing but a bare stage name is ever echoed into Location (no open redirect).
    for (const path of ['//evil.example', '/prod/x', '/a b']) {
      const other = await page(undefined, path);
      expect(other.status).toBe(200);
      expect(other.headers.location).toBeUndefined();
    }
  });

  test('assets are served with their types; anything else is a 404 in the contract error body', async () => {
    const script = await page({ asset: 'app.js' });
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    const style = await page({ asset: 'style.css' });
    expect(style.headers['content-type']).toBe('text/css; charset=utf-8');

    for (const asset of ['../package.json', '..%2Fpackage.json', 'index.html', 'nope.js', '.hidden.js']) {
      const answer = await page({ asset });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body).error.code).toBe('NOT_FOUND');
    }
  });
});

describe('the storage origin previews may load from', () => {
  test('the public upload endpoint, else the S3 endpoint, else the uploads bucket’s own regional host', () => {
    expect(
      storageOrigin({ UPLOAD_PUBLIC_ENDPOINT: 'http://192.168.1.5:4566/', AWS_ENDPOINT_URL_S3: 'http://x:1' }),
    ).toBe('http://192.168.1.5:4566');
    expect(storageOrigin({ AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9324' })).toBe('http://127.0.0.1:9324');
    expect(storageOrigin({ AWS_ENDPOINT_URL: 'http://localhost.localstack.cloud:4566' })).toBe(
      'http://localhost.localstack.cloud:4566',
    );
    expect(storageOrigin({ UPLOADS_BUCKET_DOMAIN: 'vision-prod-uploads.s3.eu-west-1.amazonaws.com' })).toBe(
      'https://vision-prod-uploads.s3.eu-west-1.amazonaws.com',
    );
    // Deployed without the bucket's host: no policy that lets every bucket in (the function fails at init instead).
    expect(() => storageOrigin({})).toThrow(/UPLOADS_BUCKET_DOMAIN/);
  });

  test('deployed, the page may show images and frames from its bucket’s host only, not all of amazonaws.com', () => {
    const csp = dashboardHeaders({ UPLOADS_BUCKET_DOMAIN: 'vision-prod-uploads.s3.eu-west-1.amazonaws.com' })[
      'content-security-policy'
    ];
    const directive = (name: string) => csp?.split('; ').find((d) => d.startsWith(`${name} `));
    expect(directive('img-src')).toBe(
      "img-src 'self' data: blob: https://vision-prod-uploads.s3.eu-west-1.amazonaws.com",
    );
    expect(directive('frame-src')).toBe('frame-src https://vision-prod-uploads.s3.eu-west-1.amazonaws.com');
    expect(csp).not.toContain('*');
  });
});
