/**
 * Evaluations whose runs DynamoDB will not take: the hold is never kept for ever. A client's JSON that the document
 * client could not marshal (a key `constructor`) is written all the same; a run record DynamoDB refuses outright (over
 * its 400 KB, with a deployment's larger prompt limit) fails its item and refunds its share at once, exactly once
 * however often the sweep tries again. The second case plays the creating request in this process (the service's own
 * `createEvaluation`, with a prompt limit of 300,000 characters) against the local stack's tables.
 */
import type { createEvaluation as CreateEvaluation } from '../../shared/evaluations/create.js';
import type { materialize as Materialize } from '../../shared/evaluations/materialize.js';
import { ENV } from '../../shared/infra/env.js';
import { runQueue, tables, uploadsBucket } from '../../shared/infra/resources.js';
import type { getEvaluation as GetEvaluation } from '../../shared/store/evaluations.js';
import { call, fixture, ledgerEntries, stack, tenantRecord, upload } from './client.js';

interface Evaluation {
  evaluationId: string;
  status: string;
  progress: { itemsTotal: number; itemsDone: number };
  estimatedCostUsd: number;
  chargedUsd: number;
  refundedUsd: number;
  report?: { accuracy: number | null; perProvider: Record<string, { runs: number; failed: number }> };
  items?: { jobId: string; status: string }[];
}

const micros = (usd: number) => Math.round(usd * 1e6);

async function waitForEvaluation(evaluationId: string, timeoutMs = 90_000): Promise<Evaluation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call<Evaluation>('GET', `/v1/evaluations/${evaluationId}?itemsLimit=100`);
    if (reply.body.status !== 'queued') return reply.body;
    if (Date.now() > deadline) throw new Error(`still queued: ${JSON.stringify(reply.body.progress)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

let createEvaluation: typeof CreateEvaluation;
let materialize: typeof Materialize;
let getEvaluation: typeof GetEvaluation;

beforeAll(async () => {
  const info = stack();
  for (const [name, def] of Object.entries(tables)) {
    const table = info.resources.tables[name];
    if (table) process.env[def.envVar] = table;
  }
  process.env[uploadsBucket.envVar] = info.resources.bucket;
  process.env[runQueue.envVar] = info.resources.queueUrl;
  process.env.AWS_ENDPOINT_URL_DYNAMODB = info.endpoints.dynamodb;
  process.env.AWS_ENDPOINT_URL_S3 = info.endpoints.s3;
  process.env.AWS_ENDPOINT_URL_SQS = info.endpoints.sqs;
  process.env.S3_FORCE_PATH_STYLE = 'true';
  process.env[ENV.providers] = 'local';
  // Read when the contract is first loaded: a deployment that allows long prompts.
  process.env[ENV.promptMaxChars] = '300000';
  ({ createEvaluation } = await import('../../shared/evaluations/create.js'));
  ({ materialize } = await import('../../shared/evaluations/materialize.js'));
  ({ getEvaluation } = await import('../../shared/store/evaluations.js'));
});

test('metadata and expected values with a key "constructor" are written and run like any', async () => {
  const png = await upload('receipt.png', await fixture('receipt.png'));
  const created = await call<Evaluation>('POST', '/v1/evaluations', {
    body: {
      name: 'constructor keys',
      schema: { label: 'odd names', expectedFields: ['constructor', { name: 'total', type: 'number' }] },
      confirmCost: true,
      metadata: { constructor: { name: 'Set' } },
      items: [{ uploadId: png, expected: { constructor: 'x', total: 42.5 } }],
    },
  });
  expect(created.status).toBe(202);
  const evaluation = await waitForEvaluation(created.body.evaluationId);
  expect(evaluation).toMatchObject({ status: 'completed', progress: { itemsTotal: 1, itemsDone: 1 } });
  const jobId = String(evaluation.items?.[0]?.jobId);
  expect((await call('GET', `/v1/runs/${jobId}`)).body).toMatchObject({
    status: 'completed',
    metadata: { constructor: { name: 'Set' } },
  });
  expect(micros(evaluation.chargedUsd) + micros(evaluation.refundedUsd)).toBe(micros(evaluation.estimatedCostUsd));
});

test('a run DynamoDB refuses fails its item and refunds its share once, however often the sweep retries', async () => {
  const [png, jpg] = await Promise.all([
    upload('receipt.png', await fixture('receipt.png')),
    upload('receipt.jpg', await fixture('receipt.jpg')),
  ]);
  const before = await tenantRecord('tenant-a');
  // Stored once in the evaluation (≈ 250 KB), twice in each run (its prompt and its task's): over DynamoDB's 400 KB.
  const prompt = `Extract the receipt. ${'Read every line with care. '.repeat(9_000)}`;
  const { response } = await createEvaluation({
    tenantId: 'tenant-a',
    body: {
      name: 'runs too large to write',
      schemaId: 'receipt',
      prompt,
      confirmCost: true,
      items: [
        { uploadId: png, expected: { total: 42.5 } },
        { uploadId: jpg, expected: { total: 42.5 } },
      ],
    },
  });
  const evaluationId = response.evaluationId;
  const hold = micros(response.estimatedCostUsd);
  expect(hold).toBeGreaterThan(0);

  // The creating request failed both items: every item is accounted for, the whole hold refunded, nothing held.
  const evaluation = await waitForEvaluation(evaluationId, 10_000);
  expect(evaluation).toMatchObject({
    status: 'failed',
    progress: { itemsTotal: 2, itemsDone: 2 },
    chargedUsd: 0,
    items: [{ status: 'failed' }, { status: 'failed' }],
  });
  expect(micros(evaluation.refundedUsd)).toBe(hold);
  expect(evaluation.report?.accuracy).toBe(0);
  const after = await tenantRecord('tenant-a');
  expect(Number(after.heldMicros ?? 0)).toBe(Number(before.heldMicros ?? 0));
  expect(Number(after.refundedMicros ?? 0) - Number(before.refundedMicros ?? 0)).toBe(hold);

  // A sweep that tries again (its last try, and once more) writes nothing and refunds nothing twice.
  const stored = await getEvaluation(evaluationId);
  if (!stored) throw new Error('the evaluation is gone');
  expect(await materialize(stored, { lastTry: true })).toEqual({ written: 0, queued: 0, failed: 0 });
  expect(await materialize(stored, { lastTry: true })).toEqual({ written: 0, queued: 0, failed: 0 });
  const again = (await call<Evaluation>('GET', `/v1/evaluations/${evaluationId}`)).body;
  expect(micros(again.refundedUsd)).toBe(hold);
  expect(again.progress.itemsDone).toBe(2);
  const tenant = await tenantRecord('tenant-a');
  expect(Number(tenant.heldMicros ?? 0)).toBe(Number(before.heldMicros ?? 0));
  expect(Number(tenant.refundedMicros ?? 0) - Number(before.refundedMicros ?? 0)).toBe(hold);
  // The ledger: the one hold, one settlement per item (never a second), and the runs were never written.
  expect(await ledgerEntries('tenant-a', evaluationId)).toEqual([expect.objectContaining({ kind: 'hold' })]);
  let settled = 0;
  for (const item of evaluation.items ?? []) {
    const entries = await ledgerEntries('tenant-a', item.jobId);
    expect(entries).toEqual([expect.objectContaining({ kind: 'settle', outcome: 'failed', chargedMicros: 0 })]);
    settled += Number(entries[0]?.refundedMicros);
    expect((await call('GET', `/v1/runs/${item.jobId}`)).status).toBe(404);
  }
  expect(settled).toBe(hold);
});
