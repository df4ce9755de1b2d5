/**
 * The interface's whole client flow over real HTTP against the local stack: presign → PUT → create → poll →
 * verify, for every supported file kind, with the real `local` provider (tesseract OCR / PDF text layer).
 */
import { call, fixture, KEYS, stack, upload, waitForFinal } from './client.js';

interface Completed {
  status: string;
  protocolVersion: string;
  requests: number;
  result: Record<string, unknown>;
  usage: { requests: number; billableUnits: number; costUsd: number; priceUsd: number };
  chargedUsd: number;
  refundedUsd: number;
  estimatedCostUsd: number;
  confidence: number;
  strategy: string;
  attempts: { provider: string; step: string; outcome: string; latencyMs: number }[];
  metadata: Record<string, unknown>;
  schemaId: string | null;
  outputFormat: string;
}

async function analyse(file: string, body: Record<string, unknown>) {
  const uploadId = await upload(file, await fixture(file));
  const created = await call('POST', '/v1/runs', { body: { uploadId, ...body } });
  expect(created.status).toBe(202);
  const final = await waitForFinal(String(created.body.jobId));
  return { created, final: final.body as unknown as Completed };
}

function expectMoneyConsistent(run: Completed) {
  expect(run.chargedUsd).toBeCloseTo(Math.min(run.usage.priceUsd, run.estimatedCostUsd), 6);
  expect(run.refundedUsd).toBeCloseTo(run.estimatedCostUsd - run.chargedUsd, 6);
  expect(run.chargedUsd).toBeLessThanOrEqual(run.estimatedCostUsd);
}

describe('client flow with the local provider', () => {
  test('a PNG receipt with the receipt schema completes with the extracted total, date and money settled', async () => {
    const { created, final } = await analyse('receipt.png', {
      prompt: 'Extract the receipt',
      schemaId: 'receipt',
      workflow: 'receipts',
      metadata: { customerRef: 'A-1' },
    });
    expect(created.body).toMatchObject({
      status: 'queued',
      schemaId: 'receipt',
      outputFormat: 'json',
      metadata: { customerRef: 'A-1' },
    });
    expect(created.headers.get('location')).toBe(`/v1/runs/${String(created.body.jobId)}`);
    expect(final.status).toBe('completed');
    expect(final.protocolVersion).toBe('0.1.0');
    expect(Object.keys(final.result).sort()).toEqual(['currency', 'date', 'merchant', 'subtotal', 'tax', 'total']);
    expect(final.result.total).toBe(42.5);
    expect(final.result.date).toBe('2026-11-02');
    expect(final.result.currency).toBeNull();
    expect(final.usage.billableUnits).toBe(1);
    expect(final.requests).toBe(1);
    expect(final.attempts).toEqual([expect.objectContaining({ provider: 'local', outcome: 'succeeded' })]);
    expect(final.confidence).toBeGreaterThan(0);
    expect(final.confidence).toBeLessThanOrEqual(1);
    expect(final.metadata).toEqual({ customerRef: 'A-1' });
    expectMoneyConsistent(final);
  });

  test('a JPEG with EXIF rotation is read upright', async () => {
    const { final } = await analyse('receipt.jpg', { prompt: 'Read it', outputFormat: 'text' });
    expect(final.status).toBe('completed');
    expect(String(final.result.text)).toMatch(/ACME/i);
    expect(String(final.result.text)).toMatch(/42\.50/);
    // contract-v1.1 §2: a text result is {text, pages} for one page as for many.
    expect(final.result.pages).toEqual([{ page: 1, text: final.result.text }]);
  });

  test('a HEIC photo completes', async () => {
    const { final } = await analyse('receipt.heic', {
      prompt: 'Total?',
      schema: { label: 'Total', expectedFields: [{ name: 'total', type: 'number' }] },
    });
    expect(final.status).toBe('completed');
    expect(final.result).toEqual({ total: 42.5 });
  });

  test('a text PDF uses its text layer, and its estimate (the text-layer price) is what it costs', async () => {
    const { final } = await analyse('text.pdf', { prompt: 'Extract the invoice', schemaId: 'invoice' });
    expect(final.status).toBe('completed');
    expect(final.strategy).toBe('ocr_then_analyze');
    expect(final.result.invoiceNumber).toBe('INV-2001');
    expect(final.result.totalDue).toBe(1250);
    expect(final.usage.billableUnits).toBe(2);
    // Estimated as local reads a text layer (docs/pricing.md): charged the estimate, nothing to refund.
    expect(final.chargedUsd).toBe(final.estimatedCostUsd);
    expect(final.refundedUsd).toBe(0);
    expectMoneyConsistent(final);
  });

  test('a scanned PDF is OCR’d', async () => {
    const { final } = await analyse('scanned.pdf', { prompt: 'Text please', outputFormat: 'text' });
    expect(final.status).toBe('completed');
    expect(String(final.result.text)).toMatch(/Total/i);
    expectMoneyConsistent(final);
  });

  test('a PNG whose headers pass but whose image data is damaged fails CORRUPT_FILE (not retryable), charging nothing', async () => {
    const { created, final } = await analyse('damaged.png', { prompt: 'Extract the receipt', schemaId: 'receipt' });
    // Creation reads headers only (ranged reads): the damage shows only when the worker decodes the pixels.
    expect(created.body.status).toBe('queued');
    const failed = final as unknown as Completed & { error: Record<string, unknown> };
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'CORRUPT_FILE', status: 422, retryable: false });
    expect(failed.error.details).toMatchObject({ reason: 'undecodable' });
    expect(failed.attempts).toEqual([
      expect.objectContaining({ provider: 'local', outcome: 'failed', failure: 'unreadable_file' }),
    ]);
    expect(failed.chargedUsd).toBe(0);
    expect(failed.refundedUsd).toBe(failed.estimatedCostUsd);
  });

  test('without a schema the result is an open summary of the document', async () => {
    const { final } = await analyse('business-card.png', { prompt: 'What is this?' });
    expect(final.status).toBe('completed');
    expect(final.strategy).toBe('generic_vision_summary');
    expect(String(final.result.text)).toMatch(/Jane/);
  });
});

describe('verify, list and usage', () => {
  test('typed corrections: an unknown field or a wrong type is 400 with details.fields, and nothing is stored', async () => {
    const { created, final } = await analyse('receipt.png', { prompt: 'Receipt', schemaId: 'receipt' });
    const jobId = String(created.body.jobId);
    expect(final.status).toBe('completed');
    const refused = await call('POST', `/v1/runs/${jobId}/verify`, {
      body: { accepted: false, corrections: { total: '43', tip: 1 } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'INVALID_REQUEST' });
    const error = refused.body.error as { details: { fields: Record<string, string> } };
    expect(Object.keys(error.details.fields).sort()).toEqual(['tip', 'total']);
    const after = await call('GET', `/v1/runs/${jobId}`);
    expect(after.body.verification).toBeUndefined();
    // A number stays a number: the same correction, typed right, is stored as sent.
    const accepted = await call('POST', `/v1/runs/${jobId}/verify`, {
      body: { accepted: false, corrections: { total: 43 } },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body.verification).toMatchObject({ corrections: { total: 43 } });
    expect((await call('GET', `/v1/runs/${jobId}`)).body.review).toEqual(expect.objectContaining({ needed: false }));
  });

  test('verify records QA metadata without changing the status, and a later verify replaces it', async () => {
    const { created } = await analyse('receipt.png', { prompt: 'Receipt', schemaId: 'receipt', workflow: 'qa-flow' });
    const jobId = String(created.body.jobId);
    const first = await call('POST', `/v1/runs/${jobId}/verify`, {
      body: { accepted: false, corrections: { total: 42.5 }, note: 'fixed' },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      jobId,
      status: 'completed',
      verification: { accepted: false, corrections: { total: 42.5 }, note: 'fixed' },
    });
    const second = await call('POST', `/v1/runs/${jobId}/verify`, { body: { accepted: true } });
    expect(second.body).toMatchObject({ verification: { accepted: true, corrections: {}, note: null } });
    const run = await call('GET', `/v1/runs/${jobId}`);
    expect(run.body.status).toBe('completed');
    expect(run.body.verification).toMatchObject({ accepted: true });

    const usage = await call<{
      workflows: { workflow: string; runs: number; verified: number; accepted: number; acceptanceRate: number }[];
    }>('GET', '/v1/usage');
    expect(usage.status).toBe(200);
    expect(usage.body.workflows.find((w) => w.workflow === 'qa-flow')).toMatchObject({
      runs: 1,
      verified: 1,
      accepted: 1,
      acceptanceRate: 1,
    });
  });

  test('names that are JavaScript built-ins ("constructor") in metadata, result fields and corrections are stored as sent', async () => {
    // DynamoDB's marshaller reads `value.constructor.name` to pick a type: these used to be 500s, and a settlement
    // that failed on every delivery.
    const metadata = { constructor: 1, nested: { constructor: { name: 'Set' } }, list: [{ constructor: 'x' }] };
    const { created, final } = await analyse('receipt.png', {
      prompt: 'Extract the receipt',
      schema: {
        label: 'Receipt',
        expectedFields: ['constructor', 'total', { name: 'nested', type: 'object' }],
        promptScaffold: '{prompt} {fields}',
      },
      metadata,
    });
    expect(created.body.metadata).toEqual(metadata);
    expect(final.status).toBe('completed');
    expect(final.metadata).toEqual(metadata);
    expect(Object.keys(final.result).sort()).toEqual(['constructor', 'nested', 'total']);
    // A bare field name is a string field: the value as printed.
    expect(final.result.total).toBe('42.50');
    const jobId = String(created.body.jobId);
    // Corrections name the schema's fields, in their types (an object field takes an object).
    const corrections = { constructor: 'ACME', nested: { constructor: { name: 'Uint8Array' } } };
    const verified = await call('POST', `/v1/runs/${jobId}/verify`, { body: { accepted: false, corrections } });
    expect(verified.status).toBe(200);
    expect((await call('GET', `/v1/runs/${jobId}`)).body.verification).toMatchObject({ corrections });
  });

  test('verify on a queued run answers 409 RUN_NOT_COMPLETED', async () => {
    // The simulated crash keeps the run queued until SQS redelivers it (3 s in the test stack), so it is still
    // queued when verify arrives.
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    const created = await call('POST', '/v1/runs', {
      body: { uploadId, prompt: 'Receipt', metadata: { localFault: 'crash-before-settle' } },
    });
    expect(created.status).toBe(202);
    const verify = await call('POST', `/v1/runs/${String(created.body.jobId)}/verify`, { body: { accepted: true } });
    expect(verify.status).toBe(409);
    expect(verify.body).toMatchObject({
      error: { code: 'RUN_NOT_COMPLETED', retryable: true, details: { status: 'queued' } },
    });
    expect((await waitForFinal(String(created.body.jobId))).body.status).toBe('completed');
  });

  test('list runs is newest first, filters by workflow and status, and pages with a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const uploadId = await upload('receipt.png', await fixture('receipt.png'));
      const created = await call('POST', '/v1/runs', {
        body: { uploadId, prompt: `p${i}`, workflow: 'paging', outputFormat: 'text' },
      });
      ids.push(String(created.body.jobId));
    }
    const page1 = await call<{ items: { jobId: string }[]; nextCursor: string | null }>(
      'GET',
      '/v1/runs?workflow=paging&limit=2',
    );
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((r) => r.jobId)).toEqual([ids[2], ids[1]]);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await call<{ items: { jobId: string }[]; nextCursor: string | null }>(
      'GET',
      `/v1/runs?workflow=paging&limit=2&cursor=${encodeURIComponent(page1.body.nextCursor ?? '')}`,
    );
    expect(page2.body.items.map((r) => r.jobId)).toEqual([ids[0]]);
    for (const id of ids) await waitForFinal(id);
    const completed = await call<{ items: { status: string }[] }>('GET', '/v1/runs?workflow=paging&status=completed');
    expect(completed.body.items).toHaveLength(3);
    const other = await call<{ items: unknown[] }>('GET', '/v1/runs?workflow=paging', { key: KEYS.b });
    expect(other.body.items).toHaveLength(0);
  });
});

describe('what the dashboard reads', () => {
  test("a run's file can be read back through its short-lived address, byte for byte, with the inspected type", async () => {
    const bytes = await fixture('receipt.png');
    const { created } = await analyse('receipt.png', { prompt: 'Receipt', schemaId: 'receipt' });
    const jobId = String(created.body.jobId);
    expect(created.body.file).toEqual({
      name: 'receipt.png',
      type: 'image/png',
      sizeBytes: bytes.length,
      pages: 1,
      width: expect.any(Number),
      height: expect.any(Number),
    });

    const file = await call<{ url: string; contentType: string; fileName: string }>('GET', `/v1/runs/${jobId}/file`);
    expect(file.status).toBe(200);
    expect(file.body).toMatchObject({ contentType: 'image/png', fileName: 'receipt.png' });
    // The address needs no key: it is what an <img src> loads.
    const read = await fetch(file.body.url);
    expect(read.status).toBe(200);
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);

    // Tenant-scoped like every read.
    const other = await call('GET', `/v1/runs/${jobId}/file`, { key: KEYS.b });
    expect(other.status).toBe(404);
  });

  test("usage per hour shows this hour's runs of a workflow in the last bucket, matching the totals", async () => {
    const workflow = `series-${Date.now()}`;
    const { final } = await analyse('receipt.png', { prompt: 'Receipt', schemaId: 'receipt', workflow });
    const from = new Date(Date.now() - 3 * 3600_000).toISOString();
    const usage = await call<{
      totals: { runs: number; chargedUsd: number };
      series: { start: string; totals: { runs: number; chargedUsd: number } }[];
    }>('GET', `/v1/usage?interval=hour&workflow=${workflow}&from=${encodeURIComponent(from)}`);
    expect(usage.status).toBe(200);
    expect(usage.body.series).toHaveLength(4);
    expect(usage.body.series.at(-1)?.totals).toMatchObject({ runs: 1, chargedUsd: final.chargedUsd });
    expect(usage.body.series.slice(0, 3).every((b) => b.totals.runs === 0)).toBe(true);
    expect(usage.body.totals).toMatchObject({ runs: 1, chargedUsd: final.chargedUsd });
  });

  test('the local stack serves the dashboard page at / without a key', async () => {
    const page = await fetch(`${stack().baseUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const script = await fetch(`${stack().baseUrl}/dashboard/app.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  });
});
