/**
 * Per-field evidence and review on the run (contract-v1.1 §3): what the settlement writes (fields and review with the
 * result, on the item or in RunResults parts; the review queue's sparse index key), what GET /v1/runs/{jobId} shows,
 * the review queue (`GET /v1/runs?review=needed`) and its cursors, a verify clearing the review, and
 * SERVICE_REVIEW_CONFIDENCE.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as getRunHandler } from '../../functions/get-run.js';
import { handler as listRunsHandler } from '../../functions/list-runs.js';
import { handler as verifyHandler } from '../../functions/verify-run.js';
import { checkConfig, config } from '../../shared/config.js';
import { runResponse } from '../../shared/contract.js';
import type { Fields, Review } from '../../shared/fields/types.js';
import { type Settlement, settleRun } from '../../shared/store/ledger.js';
import { RESULT_MAX_BYTES } from '../../shared/store/run-results.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { call, expectError } from '../support/api.js';
import { completedRunItem, mapsAsObjects, runItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
});

const FIELDS: Fields = {
  merchant: { confidence: 0.97, page: 1, bbox: [0.1, 0.05, 0.55, 0.09], source: 'ACME HARDWARE' },
  total: {
    confidence: 0.42,
    page: 1,
    bbox: [0.62, 0.81, 0.74, 0.84],
    source: '$42.50',
    alternatives: [{ value: 45.2, page: 2 }],
  },
};
const NEEDED: Review = { needed: true, reasons: ['total: confidence 0.42 is below 0.8'] };

function completedSettlement(extra: Partial<Extract<Settlement, { status: 'completed' }>> = {}): Settlement {
  return {
    status: 'completed',
    result: { merchant: 'ACME HARDWARE', total: 42.5 },
    usage: { requests: 1, billableUnits: 1, costMicros: 80, priceMicros: 104 },
    confidence: 0.7,
    attempts: [{ provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: 900 }],
    ...extra,
  };
}

/** The settlement transaction's items, by what they write. */
function settlementItems() {
  const calls = ddb.commandCalls(TransactWriteCommand);
  expect(calls).toHaveLength(1);
  const items = mapsAsObjects(calls[0]?.args[0].input.TransactItems ?? []);
  const run = items.find((i) => i.Update?.TableName === tableName('runs'))?.Update;
  const parts = items.flatMap((i) => (i.Put?.TableName === tableName('runResults') && i.Put.Item ? [i.Put.Item] : []));
  return { run, parts };
}

/** The value the settlement's update SETs `attribute` to (undefined when it does not set it). */
function written(update: ReturnType<typeof settlementItems>['run'], attribute: string): unknown {
  const names = update?.ExpressionAttributeNames ?? {};
  const placeholder = Object.entries(names).find(([, name]) => name === attribute)?.[0] ?? attribute;
  const match = new RegExp(`(?:SET |, )${placeholder} = (:\\w+)`).exec(update?.UpdateExpression ?? '');
  return match ? update?.ExpressionAttributeValues?.[match[1] as string] : undefined;
}

describe('the settlement stores fields and review with the result, in the same transaction', () => {
  test('a review that is needed puts the run in its tenant’s review queue (reviewTenant)', async () => {
    expect(await settleRun(runItem(), completedSettlement({ fields: FIELDS, review: NEEDED }))).toBe(true);
    const { run, parts } = settlementItems();
    expect(parts).toEqual([]);
    expect(written(run, 'fields')).toEqual(FIELDS);
    expect(written(run, 'review')).toEqual(NEEDED);
    expect(written(run, 'reviewTenant')).toBe('tenant-a');
    // Only while still queued: a duplicate delivery writes none of it.
    expect(run?.ConditionExpression).toContain('#status = :queued');
  });

  test('a review that is not needed is stored, and the run stays out of the queue', async () => {
    await settleRun(runItem(), completedSettlement({ fields: FIELDS, review: { needed: false, reasons: [] } }));
    const { run } = settlementItems();
    expect(written(run, 'review')).toEqual({ needed: false, reasons: [] });
    expect(run?.UpdateExpression).not.toContain('reviewTenant');
  });

  test('a settlement without fields or review (text runs, the worker before grounding) writes neither', async () => {
    await settleRun(runItem(), completedSettlement());
    const { run } = settlementItems();
    expect(run?.UpdateExpression).not.toMatch(/fields|review|reviewTenant/i);
  });

  test('fields too large for the run item travel with the result in RunResults, and read back together', async () => {
    // 500 values with a 450-character source each: about 240 KB of evidence for a small result.
    const many: Fields = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`f${i}`, { confidence: 0.9, page: 1, source: 'x'.repeat(450) }]),
    );
    const result = Object.fromEntries(Object.keys(many).map((name) => [name, 'x']));
    await settleRun(runItem(), completedSettlement({ result, fields: many, review: NEEDED }));
    const { run, parts } = settlementItems();
    expect(parts.length).toBeGreaterThan(0);
    expect(written(run, 'resultParts')).toBe(parts.length);
    expect(written(run, 'fieldsInParts')).toBe(true);
    expect(run?.UpdateExpression).not.toMatch(/#result =|#fields =/);
    // The review is small and stays on the item, where the index and the verify need it.
    expect(written(run, 'reviewTenant')).toBe('tenant-a');

    // Read back: GET shows the result and its fields as the worker gave them.
    const { result: _r, ...stored } = runItem();
    const item = {
      ...completedRunItem(),
      ...stored,
      status: 'completed',
      result: undefined,
      resultParts: parts.length,
      fieldsInParts: true,
      review: NEEDED,
      reviewTenant: 'tenant-a',
    };
    ddb.on(GetCommand).resolves({ Item: item });
    ddb.on(QueryCommand).resolves({ Items: parts });
    const answer = await call(getRunHandler, {
      path: '/v1/runs/run_1',
      pathParameters: { jobId: 'run_1' },
      auth: { tenantId: 'tenant-a' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.result).toEqual(result);
    expect(answer.body.fields).toEqual(many);
    expect(answer.body).not.toHaveProperty('fieldsInParts');
  });

  test('fields that would not fit in the settlement with the result are left out; the run still completes', async () => {
    const source = 'y'.repeat(500);
    const huge: Fields = Object.fromEntries(
      Array.from({ length: Math.ceil(RESULT_MAX_BYTES / 500) + 10 }, (_, i) => [`f${i}`, { confidence: 0.5, source }]),
    );
    expect(await settleRun(runItem(), completedSettlement({ fields: huge, review: NEEDED }))).toBe(true);
    const { run, parts } = settlementItems();
    expect(written(run, 'status')).toBe('completed');
    expect(parts).toEqual([]);
    expect(written(run, 'fields')).toBeUndefined();
    expect(written(run, 'result')).toEqual({ merchant: 'ACME HARDWARE', total: 42.5 });
    expect(written(run, 'review')).toEqual(NEEDED);
  });
});

describe('GET /v1/runs/{jobId} shows fields and review on completed json runs (contract-v1.1 §3)', () => {
  function get(item: RunRecord) {
    ddb.on(GetCommand).resolves({ Item: item });
    return call(getRunHandler, {
      path: '/v1/runs/run_1',
      pathParameters: { jobId: 'run_1' },
      auth: { tenantId: 'tenant-a' },
    });
  }

  test('exactly as the contract shapes them: the review as {needed, reasons}, internal keys never', async () => {
    const answer = await get(completedRunItem({ fields: FIELDS, review: NEEDED, reviewTenant: 'tenant-a' }));
    expect(answer.status).toBe(200);
    expect(answer.body.fields).toEqual(FIELDS);
    expect(answer.body.review).toEqual(NEEDED);
    expect(answer.body).not.toHaveProperty('reviewTenant');
    expect(runResponse.safeParse(answer.body).success).toBe(true);
  });

  test('a text run shows neither, nor does a run settled before fields existed', async () => {
    const text = await get(
      completedRunItem({ outputFormat: 'text', result: { text: 'hello' }, fields: FIELDS, review: NEEDED }),
    );
    expect(text.body).not.toHaveProperty('fields');
    expect(text.body).not.toHaveProperty('review');
    const older = await get(completedRunItem());
    expect(older.body).not.toHaveProperty('fields');
    expect(older.body).not.toHaveProperty('review');
  });

  test('the contract refuses a box outside the page or a confidence above 1', () => {
    const view = (fields: unknown) => ({
      ...completedRunItem(),
      status: 'completed',
      protocolVersion: '0.1.0',
      requests: 1,
      usage: { requests: 1, billableUnits: 1, costUsd: 0, priceUsd: 0 },
      chargedUsd: 0,
      refundedUsd: 0,
      estimatedCostUsd: 0,
      file: { name: null, type: 'image/png', sizeBytes: 1, pages: 1 },
      completedAt: '2026-11-01T10:00:05.000Z',
      fields,
    });
    expect(runResponse.safeParse(view(FIELDS)).success).toBe(true);
    expect(runResponse.safeParse(view({ total: { confidence: 0.5, bbox: [0, 0, 1.2, 1] } })).success).toBe(false);
    expect(runResponse.safeParse(view({ total: { confidence: 1.5 } })).success).toBe(false);
    // One entry per item of an array of objects, each keyed by the item's fields.
    const items = { lines: { confidence: 0.8, items: [{ amount: { confidence: 0.9, page: 2, bbox: [0, 0, 1, 1] } }] } };
    expect(runResponse.safeParse(view(items)).success).toBe(true);
  });
});

describe('GET /v1/runs?review=needed: the review queue', () => {
  function list(query: Record<string, string>, tenantId = 'tenant-a') {
    return call(listRunsHandler, { path: '/v1/runs', query, auth: { tenantId } });
  }
  const queries = (): QueryCommandInput[] => ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
  const queued = (jobId: string, createdAt: string) =>
    completedRunItem({ jobId, createdAt, fields: FIELDS, review: NEEDED, reviewTenant: 'tenant-a' });

  test('reads the tenant’s partition of the sparse reviewNeeded index, newest first', async () => {
    ddb.on(QueryCommand).resolves({
      Items: [queued('run_3', '2026-11-03T00:00:00.000Z'), queued('run_2', '2026-11-02T00:00:00.000Z')],
    });
    const answer = await list({ review: 'needed' });
    expect(answer.status).toBe(200);
    expect(answer.body.items.map((r: { jobId: string }) => r.jobId)).toEqual(['run_3', 'run_2']);
    expect(answer.body.items[0].review).toEqual(NEEDED);
    const [q] = queries();
    expect(q).toMatchObject({
      TableName: tableName('runs'),
      IndexName: 'reviewNeeded',
      ScanIndexForward: false,
      Limit: 21,
      FilterExpression: '#expires > :now',
    });
    expect(q?.ExpressionAttributeNames?.['#pk']).toBe('reviewTenant');
    expect(q?.ExpressionAttributeValues?.[':pk']).toBe('tenant-a');
  });

  test('pages with a cursor bound to the queue: it continues the queue, and is refused on the plain listing', async () => {
    ddb.on(QueryCommand).resolves({
      Items: [queued('run_3', '2026-11-03T00:00:00.000Z'), queued('run_2', '2026-11-02T00:00:00.000Z')],
    });
    const first = await list({ review: 'needed', limit: '1' });
    expect(first.body.items).toHaveLength(1);
    const cursor = first.body.nextCursor as string;
    expect(typeof cursor).toBe('string');

    ddb.reset();
    ddb.on(QueryCommand).resolves({ Items: [queued('run_2', '2026-11-02T00:00:00.000Z')] });
    const second = await list({ review: 'needed', limit: '1', cursor });
    expect(second.status).toBe(200);
    expect(queries()[0]?.ExclusiveStartKey).toEqual({
      jobId: 'run_3',
      reviewTenant: 'tenant-a',
      createdAt: '2026-11-03T00:00:00.000Z',
    });
    // The same position on another index, or for another tenant, is no position at all.
    expectError(await list({ limit: '1', cursor }), 'INVALID_REQUEST');
    expectError(await list({ review: 'needed', limit: '1', cursor }, 'tenant-b'), 'INVALID_REQUEST');
    const plain = await list({ limit: '1' });
    expect(plain.status).toBe(200);
    expect(queries().at(-1)?.IndexName).toBe('byTenant');
  });

  test('a workflow narrows the queue as a filter on the same index', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    expect((await list({ review: 'needed', workflow: 'expenses' })).status).toBe(200);
    const [q] = queries();
    expect(q?.IndexName).toBe('reviewNeeded');
    expect(q?.FilterExpression).toBe('#workflow = :workflow AND #expires > :now');
    expect(q?.ExpressionAttributeValues?.[':workflow']).toBe('tenant-a#expenses');
  });

  test('review takes only "needed": anything else is 400 INVALID_REQUEST naming the parameter, with no read', async () => {
    // (`review=` empty is not sent, like every other filter: the whole listing.)
    for (const review of ['yes', 'true', 'NEEDED', 'needed,yes']) {
      const answer = expectError(await list({ review }), 'INVALID_REQUEST');
      expect(answer.details.issues).toEqual([expect.objectContaining({ path: 'review' })]);
    }
    expect(ddb).toHaveReceivedCommandTimes(QueryCommand, 0);
  });
});

describe('a verify clears the review in its own transaction', () => {
  function verify(body: unknown) {
    return call(verifyHandler, {
      method: 'POST',
      path: '/v1/runs/run_1/verify',
      pathParameters: { jobId: 'run_1' },
      body,
      auth: { tenantId: 'tenant-a', keyId: 'key_qa' },
    });
  }
  const runUpdates = () =>
    ddb.commandCalls(TransactWriteCommand).map((c) => mapsAsObjects(c.args[0].input.TransactItems ?? [])[0]?.Update);

  test('review.needed becomes false (reasons kept) and the run leaves the queue, with the verification', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ review: NEEDED, reviewTenant: 'tenant-a' }) });
    expect((await verify({ accepted: true })).status).toBe(200);
    const [update] = runUpdates();
    expect(update?.UpdateExpression).toBe(
      'SET verification = :v, verificationCount = :next, qualityCounted = :true, #review.#needed = :notNeeded REMOVE reviewTenant',
    );
    expect(update?.ExpressionAttributeNames).toMatchObject({ '#review': 'review', '#needed': 'needed' });
    expect(update?.ExpressionAttributeValues?.[':notNeeded']).toBe(false);
  });

  test('a run with no review, or one already cleared, is verified as before', async () => {
    for (const item of [completedRunItem(), completedRunItem({ review: { needed: false, reasons: ['x'] } })]) {
      ddb.reset();
      ddb.on(TransactWriteCommand).resolves({});
      ddb.on(GetCommand).resolves({ Item: item });
      expect((await verify({ accepted: true })).status).toBe(200);
      expect(runUpdates()[0]?.UpdateExpression).toBe(
        'SET verification = :v, verificationCount = :next, qualityCounted = :true',
      );
    }
  });

  test('racing verifications: the one that lost reads the cleared review and counts once', async () => {
    const cleared = completedRunItem({
      review: { needed: false, reasons: NEEDED.reasons },
      verification: {
        accepted: true,
        corrections: {},
        note: null,
        verifiedAt: '2026-11-02T00:00:00.000Z',
        verifiedBy: 'k',
      },
      verificationCount: 1,
      // The other verification was counted in the accuracy counters too (store/quality.ts).
      qualityCounted: true,
    });
    ddb
      .on(GetCommand)
      .resolvesOnce({ Item: completedRunItem({ review: NEEDED, reviewTenant: 'tenant-a' }) })
      .resolves({ Item: cleared });
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(
        new TransactionCanceledException({
          message: 'cancelled',
          $metadata: {},
          CancellationReasons: [
            { Code: 'ConditionalCheckFailed' },
            { Code: 'None' },
            { Code: 'None' },
            { Code: 'None' },
          ],
        }),
      )
      .resolves({});
    expect((await verify({ accepted: true })).status).toBe(200);
    const [lost, won] = runUpdates();
    expect(lost?.UpdateExpression).toContain('REMOVE reviewTenant');
    // Written against what the other verification left: no review change, the same answer counts no usage again.
    expect(won?.UpdateExpression).toBe('SET verification = :v, verificationCount = :next, qualityCounted = :true');
    expect(won?.ExpressionAttributeValues).toMatchObject({ ':seen': 1, ':next': 2 });
    const wonItems = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[1]?.args[0].input.TransactItems ?? []);
    expect(wonItems.map((i) => (i.Put ?? i.Update)?.TableName)).toEqual([
      tableName('runs'),
      tableName('verifications'),
    ]);
  });
});

describe('SERVICE_REVIEW_CONFIDENCE', () => {
  const saved = process.env.SERVICE_REVIEW_CONFIDENCE;
  afterEach(() => {
    if (saved === undefined) delete process.env.SERVICE_REVIEW_CONFIDENCE;
    else process.env.SERVICE_REVIEW_CONFIDENCE = saved;
  });

  test('defaults to 0.8 (the threshold the worker passes to grounding)', () => {
    delete process.env.SERVICE_REVIEW_CONFIDENCE;
    expect(config.reviewConfidence).toBe(0.8);
  });

  test('a share in [0, 1]; empty is unset; anything else fails the function at init, naming the variable', () => {
    for (const ok of ['0', '0.5', '1', '']) {
      process.env.SERVICE_REVIEW_CONFIDENCE = ok;
      expect(() => checkConfig()).not.toThrow();
    }
    for (const bad of ['1.5', '-0.1', 'high']) {
      process.env.SERVICE_REVIEW_CONFIDENCE = bad;
      expect(() => checkConfig()).toThrow(/SERVICE_REVIEW_CONFIDENCE/);
    }
  });
});
