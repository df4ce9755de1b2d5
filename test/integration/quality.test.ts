/**
 * Accuracy from reviews on the local stack (contract-v1.2 §1, GET /v1/quality): counted when each run is verified
 * (accepted = every field right, a corrected field wrong), a later review replacing the earlier one's counts,
 * per field, per provider, per day, with calibration over the reviewed values; tenant-scoped.
 */
import { call, fixture, KEYS, upload, waitForFinal } from './client.js';

interface Quality {
  verifiedRuns: number;
  accuracy: number | null;
  fields: Record<string, { verified: number; corrected: number; accuracy: number | null }>;
  providers: Record<string, { verifiedRuns: number; verified: number; corrected: number }>;
  calibration: { auroc: number | null; bins: { count: number }[] };
  series: { start: string; fields: Record<string, { verified: number }> }[];
}

const WORKFLOW = `quality-it-${Date.now()}`;

async function completedRun(): Promise<Record<string, unknown>> {
  const uploadId = await upload('receipt.png', await fixture('receipt.png'));
  const created = await call('POST', '/v1/runs', {
    body: { uploadId, prompt: 'Extract the receipt', schemaId: 'receipt', workflow: WORKFLOW },
  });
  const final = await waitForFinal(String(created.body.jobId));
  expect(final.body.status).toBe('completed');
  return final.body;
}

const quality = (query = `workflow=${WORKFLOW}`, key = KEYS.a) => call<Quality>('GET', `/v1/quality?${query}`, { key });

describe('GET /v1/quality', () => {
  let runs: Record<string, unknown>[];

  beforeAll(async () => {
    runs = await Promise.all([completedRun(), completedRun(), completedRun()]);
  });

  test('counts each verified run once, by field: accepted is right, a corrected field is wrong', async () => {
    const [a, b, c] = runs.map((r) => String(r.jobId));
    const merchant = String(((runs[2]?.result ?? {}) as Record<string, unknown>).merchant);
    expect((await call('POST', `/v1/runs/${a}/verify`, { body: { accepted: true } })).status).toBe(200);
    expect(
      (
        await call('POST', `/v1/runs/${b}/verify`, {
          body: { accepted: false, corrections: { merchant: 'Other Shop' } },
        })
      ).status,
    ).toBe(200);
    // A "correction" that is the value the run gave (as the comparison module reads it) corrects nothing.
    expect(
      (
        await call('POST', `/v1/runs/${c}/verify`, {
          body: { accepted: false, corrections: { merchant: merchant.toLowerCase() } },
        })
      ).status,
    ).toBe(200);

    const reply = await quality();
    expect(reply.status).toBe(200);
    const fields = Object.keys(runs[0]?.result as Record<string, unknown>).length;
    expect(reply.body.verifiedRuns).toBe(3);
    expect(reply.body.fields.merchant).toEqual({ verified: 3, corrected: 1, accuracy: Number((2 / 3).toFixed(6)) });
    expect(reply.body.fields.total).toEqual({ verified: 3, corrected: 0, accuracy: 1 });
    expect(reply.body.providers.local).toEqual({
      verifiedRuns: 3,
      verified: 3 * fields,
      corrected: 1,
      accuracy: Number(((3 * fields - 1) / (3 * fields)).toFixed(6)),
    });
    expect(reply.body.series).toHaveLength(1);
    expect(reply.body.series[0]?.fields.merchant?.verified).toBe(3);
    // Every reviewed value came with a confidence: the bins hold them all.
    expect(reply.body.calibration.bins.reduce((n, bin) => n + bin.count, 0)).toBe(3 * fields);
  });

  test('a later review replaces the earlier one in the counts (by the difference), never adds a run twice', async () => {
    const b = String(runs[1]?.jobId);
    expect((await call('POST', `/v1/runs/${b}/verify`, { body: { accepted: true } })).status).toBe(200);
    const reply = await quality();
    expect(reply.body.verifiedRuns).toBe(3);
    expect(reply.body.fields.merchant).toEqual({ verified: 3, corrected: 0, accuracy: 1 });
    expect(reply.body.calibration.auroc).toBeNull(); // no wrong value left: no AUROC
  });

  test('filters by workflow and schema, and is the tenant’s own', async () => {
    expect((await quality(`workflow=${WORKFLOW}&schemaId=invoice`)).body.verifiedRuns).toBe(0);
    expect((await quality(`workflow=${WORKFLOW}`, KEYS.b)).body).toMatchObject({ verifiedRuns: 0, fields: {} });
    const past = await quality(`workflow=${WORKFLOW}&from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z`);
    expect(past.body.verifiedRuns).toBe(0);
    const bad = await quality('workflow=x&period=week');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
  });
});
