/**
 * POST /v1/estimates on the local stack (contract v1.2 §4): both prices for an upload or a declared file, the same
 * standard price POST /v1/runs then holds, and nothing created or held. The shared stack plans with `local` alone (no
 * batch interface: both prices equal); a stack of its own with OpenAI as a candidate shows the batch discount (no
 * provider is called: an estimate is computed from the file's facts).
 */
import { call, fixture, KEYS, runCount, startStackOnSuiteEmulators, tenantRecord, upload } from './client.js';

const TENANT = 'tenant-a';
const task = { prompt: 'Extract the receipt', schemaId: 'receipt' };

interface Estimate {
  standard: { estimatedCostUsd: number };
  batch: { estimatedCostUsd: number; expiresWithinHours: number };
  file: Record<string, unknown>;
}

test('an upload: both prices, nothing created or held; the run then holds the standard one', async () => {
  const uploadId = await upload('receipt.png', await fixture('receipt.png'));
  const runsBefore = await runCount(TENANT);
  const heldBefore = (await tenantRecord(TENANT)).heldMicros;

  const answer = await call<Estimate>('POST', '/v1/estimates', { body: { uploadId, ...task } });
  expect(answer.status).toBe(200);
  expect(answer.body).toEqual({
    standard: { estimatedCostUsd: expect.any(Number) },
    // `local` has no batch interface: a batch run would wait for the next window and pay the normal price.
    batch: { estimatedCostUsd: answer.body.standard.estimatedCostUsd, expiresWithinHours: 24 },
    file: { type: 'image/png', sizeBytes: expect.any(Number), pages: 1, width: 800, height: 834 },
  });
  expect(await runCount(TENANT)).toBe(runsBefore);
  expect((await tenantRecord(TENANT)).heldMicros).toBe(heldBefore);

  const run = await call<{ estimatedCostUsd: number }>('POST', '/v1/runs', { body: { uploadId, ...task } });
  expect(run.status).toBe(202);
  expect(run.body.estimatedCostUsd).toBe(answer.body.standard.estimatedCostUsd);
});

test('errors are the contract’s: another tenant’s upload, a declared file over the limits, a file both uploaded and declared', async () => {
  const uploadId = await upload('receipt.png', await fixture('receipt.png'));
  const other = await call('POST', '/v1/estimates', { key: KEYS.b, body: { uploadId, ...task } });
  expect(other.status).toBe(404);
  expect(other.body).toMatchObject({ error: { code: 'UPLOAD_NOT_FOUND' } });

  const pages = await call('POST', '/v1/estimates', {
    body: { ...task, file: { type: 'application/pdf', sizeBytes: 2_000_000, pages: 5000 } },
  });
  expect(pages.status).toBe(413);
  expect(pages.body).toMatchObject({ error: { code: 'TOO_MANY_PAGES' } });

  const both = await call('POST', '/v1/estimates', {
    body: { ...task, uploadId, file: { type: 'image/png', sizeBytes: 1000 } },
  });
  expect(both.status).toBe(400);
  expect(both.body).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
});

test('with OpenAI as a candidate, a declared file’s batch price is half its standard one', async () => {
  const key = 'vk_estimates_openai_0123456789abcdef';
  const stack = await startStackOnSuiteEmulators({
    VISION_DEV_API_KEYS: `estimates:${key}`,
    VISION_PROVIDERS: 'openai,local',
    OPENAI_API_KEY: 'sk-estimates-never-called',
    // Nothing listens here: an estimate must not call the provider.
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
  });
  try {
    const reply = await fetch(`${stack.info.baseUrl}/v1/estimates`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ ...task, file: { type: 'image/jpeg', sizeBytes: 42_294, width: 834, height: 800 } }),
    });
    expect(reply.status).toBe(200);
    const body = (await reply.json()) as Estimate;
    const standard = Math.round(body.standard.estimatedCostUsd * 1e6);
    const batch = Math.round(body.batch.estimatedCostUsd * 1e6);
    expect(standard).toBeGreaterThan(0);
    // Half, give or take the last micro-dollar of each rounding (cost, then margin).
    expect(Math.abs(batch * 2 - standard)).toBeLessThanOrEqual(3);
    expect(body.batch.expiresWithinHours).toBe(24);
  } finally {
    await stack.stop();
  }
});
