/**
 * Every contract error that can happen before the worker, over real HTTP — and for each rejected run creation, proof
 * that nothing was left behind: no run record, no hold, no ledger entry (a message is only ever sent for a written run).
 */
import {
  call,
  fixture,
  KEYS,
  ledgerEntries,
  runCount,
  setCredit,
  tenantRecord,
  upload,
  waitForFinal,
} from './client.js';

async function snapshot(tenantId = 'tenant-a') {
  const tenant = await tenantRecord(tenantId);
  return { runs: await runCount(tenantId), held: tenant.heldMicros, ledger: (await ledgerEntries(tenantId)).length };
}

/** Asserts the contract's error body and that the HTTP status equals error.status. */
function expectError(
  reply: { status: number; body: Record<string, unknown>; headers: Headers },
  code: string,
  status: number,
) {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({
    error: { code, status, retryable: expect.any(Boolean), message: expect.any(String) },
  });
  const error = reply.body.error as { requestId: string; details?: Record<string, unknown> };
  expect(error.requestId).toBe(reply.headers.get('x-request-id'));
  return error;
}

async function rejectedCreate(
  body: Record<string, unknown>,
  code: string,
  status: number,
  tenantId = 'tenant-a',
  key = KEYS.a,
) {
  const before = await snapshot(tenantId);
  const reply = await call('POST', '/v1/runs', { body, key });
  expectError(reply, code, status);
  expect(await snapshot(tenantId)).toEqual(before);
  return reply;
}

describe('authentication and request validation', () => {
  test('no key, an unknown key → 401 UNAUTHORIZED; /health needs none', async () => {
    expectError(await call('GET', '/v1/schemas', { key: null }), 'UNAUTHORIZED', 401);
    expectError(await call('GET', '/v1/schemas', { key: 'vk_nope' }), 'UNAUTHORIZED', 401);
    expect((await call('GET', '/health', { key: null })).body).toEqual({ status: 'ok' });
  });

  test('verify also requires a key', async () => {
    expectError(
      await call('POST', '/v1/runs/run_x/verify', { key: null, body: { accepted: true } }),
      'UNAUTHORIZED',
      401,
    );
  });

  test('a non-JSON content-type → 415, malformed JSON and unknown fields → 400 with the offending path', async () => {
    expectError(
      await call('POST', '/v1/runs', { rawBody: 'uploadId=x', headers: { 'content-type': 'text/plain' } }),
      'UNSUPPORTED_MEDIA_TYPE',
      415,
    );
    expectError(
      await call('POST', '/v1/runs', { rawBody: '{"uploadId":', headers: { 'content-type': 'application/json' } }),
      'INVALID_REQUEST',
      400,
    );
    const typo = await call('POST', '/v1/runs', { body: { uploadId: 'u', prompt: 'p', outputFormats: 'json' } });
    expectError(typo, 'INVALID_REQUEST', 400);
    expect(JSON.stringify(typo.body)).toContain('outputFormats');
  });

  test('an oversized body → 400 with the limit, whichever limit it passes, and the service keeps serving', async () => {
    const reply = await call('POST', '/v1/runs', { body: { uploadId: 'u', prompt: 'x'.repeat(300_000) } });
    expect(expectError(reply, 'INVALID_REQUEST', 400).details?.limitBytes).toBe(256 * 1024);
    // Over API Gateway's own 10 MB cap (the gateway answers; no handler runs).
    const huge = await call('POST', '/v1/runs', { body: { uploadId: 'u', prompt: 'x'.repeat(10 * 1024 * 1024) } });
    expect(expectError(huge, 'INVALID_REQUEST', 400).details?.limitBytes).toBe(10 * 1024 * 1024);
    expect((await call('GET', '/health', { key: null })).status).toBe(200);
  });

  test('a body nested thousands of levels deep, or a huge value in metadata → 400, never a 500', async () => {
    const deep = await call('POST', '/v1/runs', {
      rawBody: `{"uploadId":"u","prompt":"p","metadata":{"a":${'['.repeat(50_000)}${']'.repeat(50_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectError(deep, 'INVALID_REQUEST', 400);
    const huge = await call('POST', '/v1/runs', { body: { uploadId: 'u', prompt: 'p', metadata: { n: 1e300 } } });
    expectError(huge, 'INVALID_REQUEST', 400);
  });

  test('unknown jobs and unknown routes → 404', async () => {
    expectError(await call('GET', '/v1/runs/run_doesnotexist'), 'NOT_FOUND', 404);
    // A path segment longer than DynamoDB's 2 KB key limit is still just an unknown job.
    expectError(await call('GET', `/v1/runs/${'x'.repeat(3000)}`), 'NOT_FOUND', 404);
    expectError(await call('GET', '/v1/nothing-here'), 'NOT_FOUND', 404);
  });
});

describe('presign', () => {
  test('unsupported extension → 415, zero length → 400, over the limit → 413; extensions are case-insensitive', async () => {
    expectError(
      await call('POST', '/v1/uploads/presign', { body: { fileName: 'a.gif', contentLength: 10 } }),
      'UNSUPPORTED_FILE_TYPE',
      415,
    );
    expectError(
      await call('POST', '/v1/uploads/presign', { body: { fileName: 'a.png', contentLength: 0 } }),
      'INVALID_REQUEST',
      400,
    );
    expectError(
      await call('POST', '/v1/uploads/presign', { body: { fileName: 'a.png', contentLength: 21 * 1024 * 1024 } }),
      'FILE_TOO_LARGE',
      413,
    );
    const ok = await call('POST', '/v1/uploads/presign', { body: { fileName: 'SCAN.PDF', contentLength: 10 } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      maxBytes: 100 * 1024 * 1024,
    });
  });
});

describe('run creation rejects bad uploads and loses nothing', () => {
  test('unknown upload → 404 UPLOAD_NOT_FOUND', async () => {
    await rejectedCreate({ uploadId: 'upl_unknown', prompt: 'p' }, 'UPLOAD_NOT_FOUND', 404);
  });

  test('presigned but never PUT → 409 UPLOAD_INCOMPLETE (retryable)', async () => {
    const presign = await call('POST', '/v1/uploads/presign', { body: { fileName: 'a.png', contentLength: 100 } });
    const reply = await rejectedCreate({ uploadId: presign.body.uploadId, prompt: 'p' }, 'UPLOAD_INCOMPLETE', 409);
    expect((reply.body.error as { retryable: boolean }).retryable).toBe(true);
  });

  test('uploaded size differs from the presigned length → 422 UPLOAD_SIZE_MISMATCH', async () => {
    const bytes = await fixture('receipt.png');
    const uploadId = await upload('receipt.png', bytes, { declaredLength: bytes.length + 10 });
    const reply = await rejectedCreate({ uploadId, prompt: 'p' }, 'UPLOAD_SIZE_MISMATCH', 422);
    expect(reply.body.error).toMatchObject({
      details: { declaredBytes: bytes.length + 10, actualBytes: bytes.length },
    });
  });

  test.each([
    ['zip-named.jpg', 'UNSUPPORTED_FILE_TYPE', 415],
    ['gif-named.png', 'UNSUPPORTED_FILE_TYPE', 415],
    ['truncated.jpg', 'CORRUPT_FILE', 422],
    ['truncated.png', 'CORRUPT_FILE', 422],
    ['truncated.pdf', 'CORRUPT_FILE', 422],
    ['encrypted.pdf', 'CORRUPT_FILE', 422],
    ['pixel-bomb.png', 'CORRUPT_FILE', 422],
    ['many-pages.pdf', 'TOO_MANY_PAGES', 413],
  ])('%s → %s', async (file, code, status) => {
    const uploadId = await upload(file, await fixture(file));
    await rejectedCreate({ uploadId, prompt: 'p' }, code, status);
  });

  test('a zero-byte file cannot be presigned (400), so it never reaches a run', async () => {
    expectError(
      await call('POST', '/v1/uploads/presign', { body: { fileName: 'empty.jpg', contentLength: 0 } }),
      'INVALID_REQUEST',
      400,
    );
  });

  test('a .png that is really a PDF is accepted as the PDF it is', async () => {
    const uploadId = await upload('pdf-named.png', await fixture('pdf-named.png'));
    const created = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'p', outputFormat: 'text' } });
    expect(created.status).toBe(202);
    // Settle before the next test compares holds.
    expect((await waitForFinal(String(created.body.jobId))).body.status).toBe('completed');
  });

  test('unknown schemaId → 400 UNKNOWN_SCHEMA; schemaId with schema → 400 INVALID_REQUEST', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    await rejectedCreate({ uploadId, prompt: 'p', schemaId: 'passport_v9' }, 'UNKNOWN_SCHEMA', 400);
    await rejectedCreate(
      { uploadId, prompt: 'p', schemaId: 'receipt', schema: { label: 'x', expectedFields: ['a'] } },
      'INVALID_REQUEST',
      400,
    );
  });
});

describe('cost rules', () => {
  test('over the threshold without confirmation → 402 COST_CONFIRMATION_REQUIRED with the amounts; confirmCost passes', async () => {
    const uploadId = await upload('scanned-pages.pdf', await fixture('scanned-pages.pdf'));
    const reply = await rejectedCreate({ uploadId, prompt: 'p' }, 'COST_CONFIRMATION_REQUIRED', 402);
    expect(reply.body.error).toMatchObject({ details: { estimatedCostUsd: 0.0013, thresholdUsd: 0.001 } });
    const confirmed = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'p', confirmCost: true } });
    expect(confirmed.status).toBe(202);
    expect(confirmed.body.estimatedCostUsd).toBe(0.0013);
    await waitForFinal(String(confirmed.body.jobId));
  });

  test('estimate over maxCostUsd → 402 BUDGET_EXCEEDED; a sufficient budget also counts as confirmation', async () => {
    const uploadId = await upload('scanned-pages.pdf', await fixture('scanned-pages.pdf'));
    const reply = await rejectedCreate({ uploadId, prompt: 'p', maxCostUsd: 0.001 }, 'BUDGET_EXCEEDED', 402);
    expect(reply.body.error).toMatchObject({ details: { estimatedCostUsd: 0.0013, maxCostUsd: 0.001 } });
    const withBudget = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'p', maxCostUsd: 0.01 } });
    expect(withBudget.status).toBe(202);
    await waitForFinal(String(withBudget.body.jobId));
  });

  test('a limited tenant without enough credit → 402 INSUFFICIENT_CREDIT, nothing held', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'), { key: KEYS.b });
    await setCredit('tenant-b', 100);
    await rejectedCreate({ uploadId, prompt: 'p' }, 'INSUFFICIENT_CREDIT', 402, 'tenant-b', KEYS.b);
    await setCredit('tenant-b', 1_000_000);
    const ok = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'p' }, key: KEYS.b });
    expect(ok.status).toBe(202);
    expect((await tenantRecord('tenant-b')).availableMicros).toBe(1_000_000 - 260);
    await waitForFinal(String(ok.body.jobId), { key: KEYS.b });
  });
});
