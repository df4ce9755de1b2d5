/**
 * Evaluations on the local stack (contract-v1.2 §1): the runs, the report (equal to the comparison module's over the
 * same runs), the money (Σ item charges + refund = the hold, to the micro-dollar, once, under duplicates and crashes),
 * the cost contract, idempotency, tenant isolation, and runs that never enter the review queue.
 * Over 400 lines: one file so that its evaluations share one local stack's tenants and ledger, whose balances it checks.
 */
import { scoreDocument } from '../../shared/scoring/compare.js';
import { buildReport, type ScoredItem } from '../../shared/scoring/report.js';
import {
  call,
  fixture,
  KEYS,
  ledgerEntries,
  type Reply,
  sendRunMessage,
  setCredit,
  tenantRecord,
  upload,
} from './client.js';

interface Item {
  index: number;
  jobId: string;
  provider: string | null;
  status: string;
  chargedUsd?: number;
  latencyMs?: number | null;
  reviewNeeded?: boolean | null;
  fields?: Record<string, { outcome: string; score: number; confidence: number | null }>;
}
interface Evaluation {
  evaluationId: string;
  status: string;
  progress: { itemsTotal: number; itemsDone: number };
  estimatedCostUsd: number;
  chargedUsd: number;
  refundedUsd: number;
  report?: Record<string, unknown>;
  items?: Item[];
  nextItemsCursor?: string | null;
}

const micros = (usd: number) => Math.round(usd * 1e6);

async function waitForEvaluation(evaluationId: string, key = KEYS.a, timeoutMs = 150_000): Promise<Evaluation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call<Evaluation>('GET', `/v1/evaluations/${evaluationId}?itemsLimit=1000`, { key });
    if (reply.status !== 200) throw new Error(`GET evaluation answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    if (reply.body.status !== 'queued') return reply.body;
    if (Date.now() > deadline)
      throw new Error(`evaluation ${evaluationId} still queued: ${JSON.stringify(reply.body.progress)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Each run of the evaluation as GET /v1/runs/{jobId} gives it. */
async function runsOf(evaluation: Evaluation, key = KEYS.a): Promise<Record<string, unknown>[]> {
  return Promise.all(
    (evaluation.items ?? []).map(async (item) => (await call('GET', `/v1/runs/${item.jobId}`, { key })).body),
  );
}

/** The money of an evaluation adds up: Σ its runs' charges and refunds is the hold, and its own totals are theirs. */
async function expectMoneyExact(evaluation: Evaluation, tenantId = 'tenant-a', key = KEYS.a) {
  const runs = await runsOf(evaluation, key);
  const charged = runs.reduce((s, r) => s + micros(Number(r.chargedUsd)), 0);
  const refunded = runs.reduce((s, r) => s + micros(Number(r.refundedUsd)), 0);
  const hold = micros(evaluation.estimatedCostUsd);
  expect(charged + refunded).toBe(hold);
  expect(micros(evaluation.chargedUsd)).toBe(charged);
  expect(micros(evaluation.refundedUsd)).toBe(refunded);
  // One hold in the ledger for the evaluation, one settlement per run, and nothing else.
  const holdEntries = await ledgerEntries(tenantId, evaluation.evaluationId);
  expect(holdEntries).toEqual([expect.objectContaining({ kind: 'hold', amountMicros: hold })]);
  let settledHold = 0;
  for (const run of runs) {
    const entries = await ledgerEntries(tenantId, String(run.jobId));
    expect(entries.map((e) => e.kind)).toEqual(['settle']);
    settledHold += Number(entries[0]?.holdMicros);
  }
  expect(settledHold).toBe(hold);
}

async function uploads(...names: string[]): Promise<string[]> {
  return Promise.all(names.map(async (name) => upload(name, await fixture(name))));
}

describe('an evaluation of three documents on the local provider', () => {
  let created: Reply<Record<string, unknown>>;
  let evaluation: Evaluation;
  let heldBefore: number;

  beforeAll(async () => {
    const [png, jpg, damaged] = await uploads('receipt.png', 'receipt.jpg', 'damaged.png');
    heldBefore = Number((await tenantRecord('tenant-a')).heldMicros ?? 0);
    created = await call('POST', '/v1/evaluations', {
      body: {
        name: 'receipts, local',
        schemaId: 'receipt',
        providers: ['local'],
        workflow: 'eval-it',
        confirmCost: true,
        items: [
          { uploadId: png, expected: { merchant: 'Acme Hardware', date: '02/11/2026', total: '$42.50' } },
          { uploadId: jpg, expected: { merchant: 'ACME HARDWARE', total: 99, currency: null } },
          { uploadId: damaged, expected: { merchant: 'Somewhere' } },
        ],
      },
    });
    expect(created.status).toBe(202);
    evaluation = await waitForEvaluation(String(created.body.evaluationId));
  });

  test('202 with the runs it makes, the estimate held and the Location', () => {
    expect(created.body).toMatchObject({ status: 'queued', items: 3, documents: 3, providers: ['local'] });
    expect(created.headers.get('location')).toBe(`/v1/evaluations/${created.body.evaluationId}`);
    expect(Number(created.body.estimatedCostUsd)).toBeGreaterThan(0);
  });

  test('every item is accounted for: the failed run counts as failed, never dropped', () => {
    expect(evaluation.status).toBe('completed');
    expect(evaluation.progress).toEqual({ itemsTotal: 3, itemsDone: 3 });
    expect(evaluation.items?.map((i) => [i.index, i.status])).toEqual([
      [0, 'completed'],
      [1, 'completed'],
      [2, 'failed'],
    ]);
    expect(evaluation.report).toMatchObject({
      perProvider: { local: { runs: 3, failed: 1 } },
      perField: {
        merchant: { compared: 3, missing: 1 },
        total: { compared: 2, right: 1 },
        date: { compared: 1, right: 1 },
        currency: { compared: 1 },
      },
    });
    const items = evaluation.items ?? [];
    expect(items[0]?.fields?.total).toMatchObject({ outcome: 'right' });
    expect(items[1]?.fields?.total).toMatchObject({ outcome: 'wrong', score: 0 });
    expect(items[2]?.fields?.merchant).toMatchObject({ outcome: 'missing', confidence: null });
  });

  test("the report equals the comparison module's over the same runs", async () => {
    const runs = await runsOf(evaluation);
    const expected = [
      { merchant: 'Acme Hardware', date: '02/11/2026', total: '$42.50' },
      { merchant: 'ACME HARDWARE', total: 99, currency: null },
      { merchant: 'Somewhere' },
    ];
    const scored: ScoredItem[] = runs.map((run, i) => {
      const completed = run.status === 'completed';
      const attempts = (run.attempts as { latencyMs: number; outcome: string }[]) ?? [];
      return {
        jobId: String(run.jobId),
        index: i,
        provider: 'local',
        status: completed ? 'completed' : 'failed',
        chargedMicros: micros(Number(run.chargedUsd)),
        latencyMs: attempts.length
          ? attempts.filter((a) => a.outcome !== 'skipped').reduce((s, a) => s + a.latencyMs, 0)
          : null,
        reviewNeeded: completed ? Boolean((run.review as { needed: boolean }).needed) : null,
        fields: scoreDocument({
          fields: run.expectedFields as never,
          expected: expected[i] as Record<string, unknown>,
          got: completed ? (run.result as Record<string, unknown>) : null,
          evidence: (run.fields as Record<string, { confidence: number }>) ?? null,
        }),
      };
    });
    expect(evaluation.report).toEqual(buildReport(scored));
  });

  test('its runs are ordinary runs tagged with the evaluation, counted in usage, never in the review queue', async () => {
    const runs = await runsOf(evaluation);
    for (const run of runs) expect(run.evaluationId).toBe(evaluation.evaluationId);
    const queue = await call<{ items: { jobId: string }[] }>('GET', '/v1/runs?review=needed&limit=100');
    const ids = new Set(queue.body.items.map((r) => r.jobId));
    for (const item of evaluation.items ?? []) expect(ids.has(item.jobId)).toBe(false);
    const usage = await call<{ totals: Record<string, number> }>('GET', '/v1/usage?workflow=eval-it');
    expect(usage.body.totals).toMatchObject({ runs: 3, completed: 2, failed: 1 });
    expect(micros(usage.body.totals.estimatedUsd ?? 0)).toBe(micros(evaluation.estimatedCostUsd));
  });

  test('money: Σ item charges + refund = the hold, to the micro-dollar; nothing stays held', async () => {
    await expectMoneyExact(evaluation);
    expect(Number((await tenantRecord('tenant-a')).heldMicros ?? 0)).toBe(heldBefore);
  });

  test('listed newest first; another tenant sees nothing (404, not 403)', async () => {
    const list = await call<{ items: { evaluationId: string; items?: unknown }[] }>('GET', '/v1/evaluations?limit=5');
    expect(list.body.items[0]?.evaluationId).toBe(evaluation.evaluationId);
    expect(list.body.items[0]?.items).toBeUndefined();
    const asB = await call('GET', `/v1/evaluations/${evaluation.evaluationId}`, { key: KEYS.b });
    expect(asB.status).toBe(404);
    expect(asB.body).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const listB = await call<{ items: { evaluationId: string }[] }>('GET', '/v1/evaluations', { key: KEYS.b });
    expect(listB.body.items.map((e) => e.evaluationId)).not.toContain(evaluation.evaluationId);
  });

  test('items page by page with a cursor bound to the evaluation', async () => {
    const first = await call<Evaluation>('GET', `/v1/evaluations/${evaluation.evaluationId}?itemsLimit=2`);
    expect(first.body.items?.map((i) => i.index)).toEqual([0, 1]);
    const next = await call<Evaluation>(
      'GET',
      `/v1/evaluations/${evaluation.evaluationId}?itemsLimit=2&itemsCursor=${first.body.nextItemsCursor}`,
    );
    expect(next.body.items?.map((i) => i.index)).toEqual([2]);
    expect(next.body.nextItemsCursor).toBeNull();
    const elsewhere = await call(
      'GET',
      `/v1/evaluations/eval_${'0'.repeat(32)}?itemsCursor=${first.body.nextItemsCursor}`,
    );
    expect(elsewhere.status).toBe(404);
  });
});

describe('an inline schema whose fields are bare names', () => {
  test('its values are compared by what the expected value is (a date, an amount), not as text', async () => {
    const [png] = await uploads('receipt.png');
    const created = await call('POST', '/v1/evaluations', {
      body: {
        name: 'inline, untyped',
        schema: { label: 'Receipt', expectedFields: ['merchant', 'date', { name: 'total' }] },
        providers: ['local'],
        confirmCost: true,
        items: [{ uploadId: png, expected: { merchant: 'Acme Hardware', date: '02/11/2026', total: '42.50' } }],
      },
    });
    expect(created.status).toBe(202);
    const evaluation = await waitForEvaluation(String(created.body.evaluationId));
    const fields = evaluation.items?.[0]?.fields ?? {};
    expect(Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, f.outcome]))).toEqual({
      merchant: 'right',
      date: 'right',
      total: 'right',
    });
  });
});

describe('the cost contract, on the whole evaluation', () => {
  test('a budget below the estimate, or no confirmation above the threshold, is refused and leaves nothing', async () => {
    const [png] = await uploads('receipt.png');
    // One receipt on the local provider is estimated under the integration stack's $0.001 threshold; eight are over it:
    // the threshold applies to the whole evaluation.
    const items = Array.from({ length: 8 }, () => ({ uploadId: png, expected: { total: 1 } }));
    const body = { name: 'refused', schemaId: 'receipt', items };
    const before = await call<{ items: unknown[] }>('GET', '/v1/evaluations?limit=100');
    const ledgerBefore = (await ledgerEntries('tenant-a')).length;
    const budget = await call('POST', '/v1/evaluations', { body: { ...body, maxCostUsd: 0.000001 } });
    expect(budget.status).toBe(402);
    expect(budget.body).toMatchObject({ error: { code: 'BUDGET_EXCEEDED' } });
    const unconfirmed = await call<{ error: { details: { estimatedCostUsd: number } } }>('POST', '/v1/evaluations', {
      body,
    });
    expect(unconfirmed.status).toBe(402);
    expect(unconfirmed.body).toMatchObject({ error: { code: 'COST_CONFIRMATION_REQUIRED' } });
    const after = await call<{ items: unknown[] }>('GET', '/v1/evaluations?limit=100');
    expect(after.body.items.length).toBe(before.body.items.length);
    expect((await ledgerEntries('tenant-a')).length).toBe(ledgerBefore);
    // The same with a budget that covers it: accepted without confirmCost, as a run is.
    const budgeted = await call('POST', '/v1/evaluations', {
      body: { ...body, maxCostUsd: unconfirmed.body.error.details.estimatedCostUsd },
    });
    expect(budgeted.status).toBe(202);
    await waitForEvaluation(String(budgeted.body.evaluationId));
  });

  test('a limited tenant whose credit cannot cover the whole hold is refused; nothing is held', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'), { key: KEYS.b });
    const before = await tenantRecord('tenant-b');
    await setCredit('tenant-b', 1);
    const refused = await call('POST', '/v1/evaluations', {
      key: KEYS.b,
      body: {
        name: 'no credit',
        schemaId: 'receipt',
        confirmCost: true,
        items: [{ uploadId, expected: { total: 1 } }],
      },
    });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ error: { code: 'INSUFFICIENT_CREDIT' } });
    const after = await tenantRecord('tenant-b');
    expect(after.heldMicros ?? 0).toBe(before.heldMicros ?? 0);
    expect(after.availableMicros).toBe(1);
    await setCredit('tenant-b', Number(before.availableMicros ?? 1_000_000));
  });
});

describe('bad input gets the contract error', () => {
  test("expected values must name the schema fields; providers must be available; uploads must be the tenant's", async () => {
    const [png] = await uploads('receipt.png');
    const unknownField = await call('POST', '/v1/evaluations', {
      body: { name: 'x', schemaId: 'receipt', confirmCost: true, items: [{ uploadId: png, expected: { totl: 1 } }] },
    });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body).toMatchObject({
      error: { code: 'INVALID_REQUEST', details: { issues: [{ path: 'items.0.expected.totl' }] } },
    });
    // An item nothing would be compared on would be paid for and score nothing.
    const nothingExpected = await call('POST', '/v1/evaluations', {
      body: { name: 'x', schemaId: 'receipt', confirmCost: true, items: [{ uploadId: png, expected: {} }] },
    });
    expect(nothingExpected.status).toBe(400);
    expect(nothingExpected.body).toMatchObject({
      error: { code: 'INVALID_REQUEST', details: { issues: [{ path: 'items.0.expected' }] } },
    });
    const provider = await call('POST', '/v1/evaluations', {
      body: {
        name: 'x',
        schemaId: 'receipt',
        providers: ['openai'],
        items: [{ uploadId: png, expected: { total: 1 } }],
      },
    });
    expect(provider.status).toBe(400);
    expect(provider.body).toMatchObject({ error: { code: 'INVALID_REQUEST', details: { available: ['local'] } } });
    const theirs = await upload('receipt.png', await fixture('receipt.png'), { key: KEYS.b });
    const foreign = await call('POST', '/v1/evaluations', {
      body: {
        name: 'x',
        schemaId: 'receipt',
        confirmCost: true,
        items: [
          { uploadId: png, expected: { total: 1 } },
          { uploadId: theirs, expected: { total: 1 } },
        ],
      },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ error: { code: 'UPLOAD_NOT_FOUND', details: { item: 1 } } });
    const noSchema = await call('POST', '/v1/evaluations', {
      body: { name: 'x', items: [{ uploadId: png, expected: { total: 1 } }] },
    });
    expect(noSchema.status).toBe(400);
  });
});

describe('exactly once under retries, duplicates and crashes', () => {
  test('the same Idempotency-Key and body returns the original evaluation and holds once; another body is refused', async () => {
    const [png] = await uploads('receipt.png');
    const body = {
      name: 'idem',
      schemaId: 'receipt',
      confirmCost: true,
      items: [{ uploadId: png, expected: { total: 42.5 } }],
    };
    const key = `eval-${png}`;
    const [a, b] = await Promise.all([
      call('POST', '/v1/evaluations', { body, headers: { 'idempotency-key': key } }),
      call('POST', '/v1/evaluations', { body, headers: { 'idempotency-key': key } }),
    ]);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.evaluationId).toBe(a.body.evaluationId);
    const again = await call('POST', '/v1/evaluations', { body, headers: { 'idempotency-key': key } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(a.body);
    const other = await call('POST', '/v1/evaluations', {
      body: { ...body, name: 'other' },
      headers: { 'idempotency-key': key },
    });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    const evaluation = await waitForEvaluation(String(a.body.evaluationId));
    expect(evaluation.progress).toEqual({ itemsTotal: 1, itemsDone: 1 });
    await expectMoneyExact(evaluation);
  });

  test('duplicate messages and a crash before each settlement: every run settles and counts once', async () => {
    const [png, jpg] = await uploads('receipt.png', 'receipt.jpg');
    const created = await call('POST', '/v1/evaluations', {
      body: {
        name: 'crashes',
        schemaId: 'receipt',
        confirmCost: true,
        // Every run's first delivery dies between the provider's answer and the settlement (SQS redelivers it).
        metadata: { localFault: 'crash-before-settle' },
        items: [
          { uploadId: png, expected: { total: 42.5 } },
          { uploadId: jpg, expected: { total: 42.5 } },
        ],
      },
    });
    expect(created.status).toBe(202);
    const first = await call<Evaluation>('GET', `/v1/evaluations/${created.body.evaluationId}`);
    // A duplicate of every run's message, twice.
    for (const item of first.body.items ?? []) {
      await sendRunMessage(item.jobId);
      await sendRunMessage(item.jobId);
    }
    const evaluation = await waitForEvaluation(String(created.body.evaluationId));
    expect(evaluation.progress).toEqual({ itemsTotal: 2, itemsDone: 2 });
    expect(evaluation.report).toMatchObject({ perField: { total: { compared: 2 } } });
    await expectMoneyExact(evaluation);
  });

  test('a crash after the last settlement, before the report: the report is written once by a read or the sweep', async () => {
    const [png] = await uploads('receipt.png');
    const created = await call('POST', '/v1/evaluations', {
      body: {
        name: 'crash after settle',
        schemaId: 'receipt',
        confirmCost: true,
        metadata: { localFault: 'crash-after-settle' },
        items: [{ uploadId: png, expected: { total: 42.5, merchant: 'ACME HARDWARE' } }],
      },
    });
    const evaluation = await waitForEvaluation(String(created.body.evaluationId));
    expect(evaluation.status).toBe('completed');
    expect(evaluation.progress).toEqual({ itemsTotal: 1, itemsDone: 1 });
    expect(evaluation.report).toMatchObject({ perField: { total: { compared: 1, right: 1 } } });
    await expectMoneyExact(evaluation);
  });
});
