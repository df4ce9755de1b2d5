/**
 * The review queue on the local stack (contract-v1.1 §3): `GET /v1/runs?review=needed` lists a tenant's runs whose
 * review is needed, newest first, page by page, never another tenant's; a verify takes a run out of it (racing
 * verifications still count once). The runs are settled through the store with fields and a review
 * (test/support/review-seed.ts), because the worker does not ground fields until the lead wires it.
 */

import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createResources } from '../../scripts/local/emulators.js';
import { VisionClient } from '../../sdk/index.js';
import type { Fields, Review } from '../../shared/fields/types.js';
import { tables } from '../../shared/infra/resources.js';
import { freshTenant, RECEIPT_PNG, seedSettledRun, useStackTables } from '../support/review-seed.js';
import { call, fixture, stack, upload } from './client.js';

interface Listed {
  items: { jobId: string; status: string; review?: Review; fields?: Fields }[];
  nextCursor: string | null;
}

const RESULT = { merchant: 'ACME HARDWARE', date: '2026-11-02', subtotal: 38.5, tax: 4, total: 42.5, currency: null };
const FIELDS: Fields = {
  merchant: { confidence: 0.96, page: 1, bbox: [0.31, 0.06, 0.69, 0.1], source: 'ACME HARDWARE' },
  total: { confidence: 0.41, page: 1, bbox: [0.6, 0.78, 0.8, 0.82], source: '$42.50' },
};
const needed = (i: number): Review => ({ needed: true, reasons: [`total: confidence 0.41 is below 0.8 (${i})`] });
const NOT_NEEDED: Review = { needed: false, reasons: [] };

let restore: () => void;
let a: { tenantId: string; key: string };
let b: { tenantId: string; key: string };
/** Tenant A's runs whose review is needed, oldest first. */
let queuedA: string[];
let queuedB: string;

function listQueue(key: string, query = '') {
  return call<Listed>('GET', `/v1/runs?review=needed${query}`, { key });
}

beforeAll(async () => {
  restore = useStackTables(stack());
  [a, b] = await Promise.all([freshTenant('review-a'), freshTenant('review-b')]);
  const bytes = await fixture('receipt.png');
  const [uploadA, uploadB] = await Promise.all([
    upload('receipt.png', bytes, { key: a.key }),
    upload('receipt.png', bytes, { key: b.key }),
  ]);
  const base = Date.now() - 60_000;
  const seed = (tenant: { tenantId: string }, uploadId: string, at: number, review?: Review) =>
    seedSettledRun({
      tenantId: tenant.tenantId,
      uploadId,
      fileName: 'receipt.png',
      file: RECEIPT_PNG,
      result: RESULT,
      fields: FIELDS,
      ...(review ? { review } : {}),
      workflow: 'review-test',
      createdAt: new Date(base + at * 1000),
    });
  // Interleaved in time: needed, not needed, no review at all (a run settled before fields existed), needed, ...
  queuedA = [];
  queuedA.push(await seed(a, uploadA, 1, needed(1)));
  await seed(a, uploadA, 2, NOT_NEEDED);
  await seed(a, uploadA, 3);
  queuedA.push(await seed(a, uploadA, 4, needed(2)));
  await seed(a, uploadA, 5, NOT_NEEDED);
  queuedA.push(await seed(a, uploadA, 6, needed(3)));
  queuedB = await seed(b, uploadB, 7, needed(4));
});

afterAll(() => restore?.());

test('lists exactly the runs whose review is needed, newest first, with their fields and review', async () => {
  const answer = await listQueue(a.key);
  expect(answer.status).toBe(200);
  expect(answer.body.items.map((r) => r.jobId)).toEqual([...queuedA].reverse());
  expect(answer.body.nextCursor).toBeNull();
  for (const run of answer.body.items) {
    expect(run.status).toBe('completed');
    expect(run.review?.needed).toBe(true);
    expect(run.fields).toEqual(FIELDS);
  }
  // The whole listing still has every run, with review shown as stored.
  const all = await call<Listed>('GET', '/v1/runs?workflow=review-test&limit=100', { key: a.key });
  expect(all.body.items).toHaveLength(6);
  expect(all.body.items.map((r) => r.review?.needed ?? 'none')).toEqual([true, false, true, 'none', false, true]);
});

test('pages with limit and cursor like the whole listing; a queue cursor is no cursor elsewhere', async () => {
  const first = await listQueue(a.key, '&limit=2');
  expect(first.body.items.map((r) => r.jobId)).toEqual([queuedA[2], queuedA[1]]);
  const cursor = first.body.nextCursor;
  expect(typeof cursor).toBe('string');
  const second = await listQueue(a.key, `&limit=2&cursor=${cursor}`);
  expect(second.status).toBe(200);
  // The last page is never empty, and says so.
  expect(second.body).toMatchObject({ items: [{ jobId: queuedA[0] }], nextCursor: null });

  const elsewhere = await call('GET', `/v1/runs?limit=2&cursor=${cursor}`, { key: a.key });
  expect(elsewhere.status).toBe(400);
  expect(elsewhere.body).toMatchObject({
    error: { code: 'INVALID_REQUEST', details: { issues: [{ path: 'cursor' }] } },
  });
});

test('tenant-scoped: each tenant sees its own queue only, and another tenant’s cursor is refused', async () => {
  const ofB = await listQueue(b.key);
  expect(ofB.body.items.map((r) => r.jobId)).toEqual([queuedB]);
  expect((await listQueue(a.key)).body.items.map((r) => r.jobId)).not.toContain(queuedB);
  const cursorOfA = (await listQueue(a.key, '&limit=1')).body.nextCursor;
  const stolen = await call('GET', `/v1/runs?review=needed&limit=1&cursor=${cursorOfA}`, { key: b.key });
  expect(stolen.status).toBe(400);
  // Another tenant's run in the queue stays unknown to this one.
  expect((await call('GET', `/v1/runs/${queuedB}`, { key: a.key })).status).toBe(404);
});

test('review= takes only "needed": anything else is 400 INVALID_REQUEST in the contract’s shape', async () => {
  const answer = await call('GET', '/v1/runs?review=maybe', { key: a.key });
  expect(answer.status).toBe(400);
  expect(answer.body).toEqual({
    error: {
      code: 'INVALID_REQUEST',
      message: expect.any(String),
      status: 400,
      retryable: false,
      details: { issues: [{ path: 'review', message: expect.any(String) }] },
      requestId: expect.any(String),
    },
  });
});

test('a verify clears the review (reasons kept) and takes the run out of the queue', async () => {
  const [, middle] = queuedA;
  const verified = await call('POST', `/v1/runs/${middle}/verify`, { key: a.key, body: { accepted: true } });
  expect(verified.status).toBe(200);
  const run = await call<{ review: Review; verification: { accepted: boolean } }>('GET', `/v1/runs/${middle}`, {
    key: a.key,
  });
  expect(run.body.review).toEqual({ needed: false, reasons: needed(2).reasons });
  expect(run.body.verification.accepted).toBe(true);
  expect((await listQueue(a.key)).body.items.map((r) => r.jobId)).toEqual([queuedA[2], queuedA[0]]);
});

test('racing verifications of one run: both recorded, the run leaves the queue once, verified counts once', async () => {
  const newest = queuedA[2] as string;
  const replies = await Promise.all(
    [true, true, false].map((accepted) =>
      call('POST', `/v1/runs/${newest}/verify`, { key: a.key, body: { accepted, note: 'race' } }),
    ),
  );
  expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
  const run = await call<{ review: Review }>('GET', `/v1/runs/${newest}`, { key: a.key });
  expect(run.body.review.needed).toBe(false);
  // Through the SDK, as a client reads the queue.
  const sdk = new VisionClient({ baseUrl: stack().baseUrl, apiKey: a.key });
  const queue = await sdk.listRuns({ review: 'needed' });
  expect(queue.items.map((r) => r.jobId)).toEqual([queuedA[0]]);
  // Two runs verified in this tenant (the one above and this one), whatever the race.
  const usage = await call<{ totals: { verified: number } }>('GET', '/v1/usage?workflow=review-test', { key: a.key });
  expect(usage.body.totals.verified).toBe(2);
});

test('a Runs table kept from before the review queue (the local data folder) gets its index at the next start', async () => {
  const prefix = `kept${Date.now().toString(36)}-`;
  const endpoints = stack().endpoints;
  const ddb = new DynamoDBClient({ endpoint: endpoints.dynamodb });
  // The Runs table as an earlier version created it: every index but the review queue's.
  const attributes = ['jobId', 'tenantId', 'createdAt', 'tenantWorkflow', 'queuedShard'];
  const index = (name: string, partition: string, projection: 'ALL' | 'KEYS_ONLY' = 'ALL') => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: partition, KeyType: 'HASH' as const },
      { AttributeName: 'createdAt', KeyType: 'RANGE' as const },
    ],
    Projection: { ProjectionType: projection },
  });
  await ddb.send(
    new CreateTableCommand({
      TableName: `${prefix}${tables.runs.id}`,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: attributes.map((AttributeName) => ({ AttributeName, AttributeType: 'S' as const })),
      KeySchema: [{ AttributeName: 'jobId', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        index('byTenant', 'tenantId'),
        index('byTenantWorkflow', 'tenantWorkflow'),
        index('queued', 'queuedShard', 'KEYS_ONLY'),
      ],
    }),
  );
  await createResources(endpoints, prefix);
  const described = await ddb.send(new DescribeTableCommand({ TableName: `${prefix}${tables.runs.id}` }));
  ddb.destroy();
  const indexes = (described.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).sort();
  expect(indexes).toEqual(['byTenant', 'byTenantWorkflow', 'queued', 'reviewNeeded']);
});
