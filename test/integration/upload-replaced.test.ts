/**
 * A run processes exactly the bytes its creation inspected: bytes PUT again to the same presigned address after the
 * run was created are not the run's. Its first message is lost (the local stack's `lose-message` fault), so the
 * reconciler sends it again seconds later, after the test has PUT to the address again.
 */
import { call, fixture, KEYS, waitForFinal } from './client.js';

async function presignedPut(url: string, bytes: Uint8Array): Promise<void> {
  const put = await fetch(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([new Uint8Array(bytes)]),
  });
  expect(put.status).toBe(200);
}

/** Uploads `original`, creates a run from it whose first message is lost, then PUTs `again` to the same address. */
async function runThenPutAgain(original: Uint8Array, again: Uint8Array) {
  const presign = await call<{ uploadId: string; uploadUrl: string }>('POST', '/v1/uploads/presign', {
    key: KEYS.a,
    body: { fileName: 'receipt.png', contentLength: original.length },
  });
  await presignedPut(presign.body.uploadUrl, original);
  const created = await call('POST', '/v1/runs', {
    body: {
      uploadId: presign.body.uploadId,
      prompt: 'Receipt',
      schemaId: 'receipt',
      metadata: { localFault: 'lose-message' },
    },
  });
  expect(created.status).toBe(202);
  // The address is still valid (15 minutes) and signs the length, so the same length is all it takes.
  await presignedPut(presign.body.uploadUrl, again);
  return { created, final: await waitForFinal(String(created.body.jobId), { timeoutMs: 60_000 }) };
}

test('an upload replaced after the run was created fails the run UPLOAD_NOT_FOUND (replaced), refunded in full', async () => {
  const original = new Uint8Array(await fixture('receipt.png'));
  const swapped = original.slice();
  const middle = Math.floor(swapped.length / 2);
  swapped[middle] = (swapped[middle] ?? 0) ^ 0xff;
  const { created, final } = await runThenPutAgain(original, swapped);
  expect(final.body).toMatchObject({
    status: 'failed',
    error: { code: 'UPLOAD_NOT_FOUND', retryable: false, details: { reason: 'replaced' } },
    chargedUsd: 0,
    refundedUsd: created.body.estimatedCostUsd,
  });
});

test('the same bytes PUT again are still the run’s bytes: the run completes', async () => {
  const original = new Uint8Array(await fixture('receipt.png'));
  const { final } = await runThenPutAgain(original, original);
  expect(final.body.status).toBe('completed');
});
