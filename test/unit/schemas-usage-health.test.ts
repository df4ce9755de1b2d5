/** GET /v1/schemas, GET /v1/usage and GET /health. */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as health } from '../../functions/health.js';
import { handler as schemas } from '../../functions/schemas.js';
import { handler as usage } from '../../functions/usage.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { completedRunItem, failedRunItem, runItem, tableName } from '../support/aws.js';
import { serveUsage, usageQueries } from '../support/usage-store.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
});

const FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'array', 'object'];

describe('GET /v1/schemas', () => {
  test('lists the five built-in schemas with id, label and normalised expected fields', async () => {
    const answer = await call(schemas, { path: '/v1/schemas' });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    const ids = answer.body.items.map((s: { id: string }) => s.id);
    expect([...ids].sort()).toEqual(['bank_statement', 'business_card', 'id_document', 'invoice', 'receipt']);
    for (const schema of answer.body.items) {
      expect(typeof schema.label).toBe('string');
      expect(schema.label.length).toBeGreaterThan(0);
      expect(schema.expectedFields.length).toBeGreaterThan(0);
      for (const field of schema.expectedFields) {
        // Normalised: every field is an object with a name, a known type and an explicit required flag.
        expect(typeof field.name).toBe('string');
        expect(FIELD_TYPES).toContain(field.type);
        expect(typeof field.required).toBe('boolean');
      }
      const names = schema.expectedFields.map((f: { name: string }) => f.name);
      expect(new Set(names).size).toBe(names.length);
    }
  });

  test('the receipt schema has its documented fields, optional ones marked required: false', async () => {
    const answer = await call(schemas, { path: '/v1/schemas' });
    const receipt = answer.body.items.find((s: { id: string }) => s.id === 'receipt');
    expect(receipt.label).toBe('Receipt');
    const byName = Object.fromEntries(receipt.expectedFields.map((f: { name: string }) => [f.name, f]));
    expect(byName.total).toEqual(expect.objectContaining({ type: 'number', required: true }));
    expect(byName.subtotal).toEqual(expect.objectContaining({ type: 'number', required: false }));
    expect(byName.date.type).toBe('date');
    // The prompt template is internal; the listing is id, label and fields.
    expect(Object.keys(receipt).sort()).toEqual(['expectedFields', 'id', 'label']);
  });

  test('requires a key', async () => {
    const answer = await call(schemas, { path: '/v1/schemas', auth: null });
    expectError(answer, 'UNAUTHORIZED');
  });

  test('refuses query parameters it does not take, as every /v1 route does (400 naming them)', async () => {
    const answer = await call(schemas, { path: '/v1/schemas', query: { foo: '1' } });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([{ path: 'foo', message: 'unknown query parameter' }]);
  });
});

describe('GET /health and query parameters', () => {
  test('is public and ignores query parameters (monitors add their own)', async () => {
    const answer = await call(health, { path: '/health', query: { probe: ['1', '2'] }, auth: null });
    expect(answer.status).toBe(200);
  });
});

describe('GET /v1/usage', () => {
  const verification = (accepted: boolean) => ({
    accepted,
    corrections: {},
    note: null,
    verifiedAt: '2026-11-05T00:00:00.000Z',
    verifiedBy: 'key_qa',
  });

  test('sums runs per workflow and in total from the usage counters, without reading a run', async () => {
    serveUsage(ddb, [
      completedRunItem({ jobId: 'r1', workflow: 'expenses', confidence: 0.8, verification: verification(true) }),
      completedRunItem({
        jobId: 'r2',
        workflow: 'expenses',
        confidence: 0.6,
        chargedMicros: 130,
        refundedMicros: 0,
        verification: verification(false),
      }),
      failedRunItem({ jobId: 'r3', workflow: 'expenses' }),
      completedRunItem({ jobId: 'r4', workflow: null, confidence: 1, verification: verification(true) }),
      runItem({ jobId: 'r5', workflow: null, estimateMicros: 130 }),
      // Another tenant's run is not counted.
      completedRunItem({ jobId: 'x1', tenantId: 'tenant-b', workflow: 'expenses' }),
    ]);

    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-11-01T00:00:00.000Z', to: '2026-11-30T00:00:00.000Z' },
    });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body.from).toBe('2026-11-01T00:00:00.000Z');
    expect(answer.body.to).toBe('2026-11-30T00:00:00.000Z');

    const expenses = answer.body.workflows.find((w: { workflow: string | null }) => w.workflow === 'expenses');
    expect(expenses).toEqual({
      workflow: 'expenses',
      runs: 3,
      completed: 2,
      failed: 1,
      queued: 0,
      estimatedUsd: 0.00039,
      // r1 charged 104, r2 charged 130, r3 (failed) 0.
      chargedUsd: 0.000234,
      // r1 refunded 26, r2 0, r3 the whole 130.
      refundedUsd: 0.000156,
      verified: 2,
      accepted: 1,
      acceptanceRate: 0.5,
      meanConfidence: 0.7,
    });
    const none = answer.body.workflows.find((w: { workflow: string | null }) => w.workflow === null);
    expect(none).toEqual(
      expect.objectContaining({ runs: 2, completed: 1, queued: 1, verified: 1, accepted: 1, acceptanceRate: 1 }),
    );
    expect(answer.body.workflows).toHaveLength(2);

    expect(answer.body.totals).toEqual({
      workflow: null,
      runs: 5,
      completed: 3,
      failed: 1,
      queued: 1,
      estimatedUsd: 0.00065,
      chargedUsd: 0.000338,
      refundedUsd: 0.000182,
      verified: 3,
      accepted: 2,
      acceptanceRate: 2 / 3,
      meanConfidence: 0.8,
    });

    // Whole days only: the day counters, tenant-scoped, and no run.
    const { counters, runs } = usageQueries(ddb);
    expect(runs).toHaveLength(0);
    expect(counters).toHaveLength(1);
    expect(counters[0]?.ExpressionAttributeValues).toEqual({
      ':tenant': 'tenant-a',
      ':first': 'd#2026-11-01#',
      ':last': 'd#2026-11-29#~',
    });
  });

  test('a period that starts and ends inside an hour reads runs only for those partial hours', async () => {
    const at = (jobId: string, createdAt: string) => completedRunItem({ jobId, createdAt });
    serveUsage(ddb, [
      at('before', '2026-11-01T10:20:00.000Z'),
      at('first-partial-hour', '2026-11-01T10:45:00.000Z'),
      at('whole-hour', '2026-11-01T11:30:00.000Z'),
      at('whole-day', '2026-11-02T05:00:00.000Z'),
      at('last-whole-hour', '2026-11-03T06:59:59.999Z'),
      at('last-partial-hour', '2026-11-03T07:14:59.999Z'),
      at('at-to', '2026-11-03T07:15:00.000Z'),
    ]);
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-11-01T10:30:00.000Z', to: '2026-11-03T07:15:00.000Z' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.totals.runs).toBe(5);
    expect(answer.body.series.map((b: { totals: { runs: number } }) => b.totals.runs)).toEqual([2, 1, 2]);
    const { counters, runs } = usageQueries(ddb);
    // The period is [from, to): the inclusive key condition stops a millisecond before each piece's end.
    expect(runs.map((q) => [q.ExpressionAttributeValues?.[':from'], q.ExpressionAttributeValues?.[':to']])).toEqual([
      ['2026-11-01T10:30:00.000Z', '2026-11-01T10:59:59.999Z'],
      ['2026-11-03T07:00:00.000Z', '2026-11-03T07:14:59.999Z'],
    ]);
    expect(
      counters.map((q) => [q.ExpressionAttributeValues?.[':first'], q.ExpressionAttributeValues?.[':last']]),
    ).toEqual([
      ['h#2026-11-01T11#', 'h#2026-11-01T23#~'],
      ['d#2026-11-02#', 'd#2026-11-02#~'],
      ['h#2026-11-03T00#', 'h#2026-11-03T06#~'],
    ]);
    // Only what usage sums is read of a run: never its result, prompt, metadata, attempts or corrections.
    for (const q of runs) {
      const projected = (q.ProjectionExpression ?? '')
        .split(', ')
        .map((path) =>
          path
            .split('.')
            .map((name) => q.ExpressionAttributeNames?.[name])
            .join('.'),
        )
        .sort();
      expect(projected).toEqual(
        [
          'jobId',
          'createdAt',
          'tenantId',
          'workflow',
          'status',
          'estimateMicros',
          'chargedMicros',
          'refundedMicros',
          'confidence',
          // Read to keep the (operator-only) absorbed counter exact; never in the tenant's answer.
          'absorbedMicros',
          'verification.accepted',
        ].sort(),
      );
    }
  });

  test('series: one bucket per UTC day from `from` to `to`, empty days included, each with its own totals', async () => {
    serveUsage(ddb, [
      completedRunItem({ jobId: 'a', workflow: 'expenses', createdAt: '2026-11-02T23:59:59.000Z' }),
      completedRunItem({ jobId: 'b', workflow: 'ids', createdAt: '2026-11-02T08:00:00.000Z' }),
      failedRunItem({ jobId: 'c', workflow: 'expenses', createdAt: '2026-11-04T00:00:00.000Z' }),
    ]);
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-11-01T12:00:00.000Z', to: '2026-11-04T06:00:00.000Z' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.interval).toBe('day');
    const series = answer.body.series as {
      start: string;
      end: string;
      totals: { runs: number };
      workflows: unknown[];
    }[];
    // The first bucket starts at the UTC day boundary before `from`; the last holds `to`.
    expect(series.map((b) => [b.start, b.end, b.totals.runs])).toEqual([
      ['2026-11-01T00:00:00.000Z', '2026-11-02T00:00:00.000Z', 0],
      ['2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', 2],
      ['2026-11-03T00:00:00.000Z', '2026-11-04T00:00:00.000Z', 0],
      ['2026-11-04T00:00:00.000Z', '2026-11-05T00:00:00.000Z', 1],
    ]);
    expect(series[1]?.workflows).toEqual([
      expect.objectContaining({ workflow: 'expenses', runs: 1, completed: 1 }),
      expect.objectContaining({ workflow: 'ids', runs: 1, completed: 1 }),
    ]);
    expect(series[3]?.totals).toEqual(expect.objectContaining({ failed: 1, chargedUsd: 0, refundedUsd: 0.00013 }));
    expect(series[0]?.workflows).toEqual([]);
    // Buckets add up to the totals.
    expect(series.reduce((n, b) => n + b.totals.runs, 0)).toBe(answer.body.totals.runs);
  });

  test('interval=hour buckets by UTC hour; workflow= counts only that workflow', async () => {
    serveUsage(ddb, [
      completedRunItem({ jobId: 'a', workflow: 'expenses', createdAt: '2026-11-02T10:30:00.000Z' }),
      completedRunItem({ jobId: 'b', workflow: 'ids', createdAt: '2026-11-02T10:40:00.000Z' }),
      completedRunItem({ jobId: 'c', workflow: 'expenses', createdAt: '2026-11-02T11:05:00.000Z' }),
    ]);
    const answer = await call(usage, {
      path: '/v1/usage',
      query: {
        from: '2026-11-02T09:00:00.000Z',
        to: '2026-11-02T11:00:00.000Z',
        interval: 'hour',
        workflow: 'expenses',
      },
    });
    expect(answer.status).toBe(200);
    expect(
      answer.body.series.map((b: { start: string; totals: { runs: number } }) => [b.start, b.totals.runs]),
    ).toEqual([
      ['2026-11-02T09:00:00.000Z', 0],
      ['2026-11-02T10:00:00.000Z', 1],
    ]);
    expect(answer.body.workflows).toEqual([expect.objectContaining({ workflow: 'expenses', runs: 1 })]);
    expect(ddb).toHaveReceivedCommandWith(QueryCommand, {
      TableName: tableName('usage'),
      FilterExpression: 'workflow = :workflow',
      ExpressionAttributeValues: expect.objectContaining({ ':workflow': 'expenses' }),
    });
  });

  test('without an interval a period longer than two years of days is bucketed by UTC month', async () => {
    serveUsage(ddb, [completedRunItem({ jobId: 'a', createdAt: '2026-02-28T23:00:00.000Z' })]);
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2000-01-15T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.interval).toBe('month');
    const series = answer.body.series as { start: string; end: string; totals: { runs: number } }[];
    // January 2000 up to, not including, March 2026.
    expect(series).toHaveLength(26 * 12 + 2);
    expect(series[0]?.start).toBe('2000-01-01T00:00:00.000Z');
    // Calendar months: February 2026 has 28 days.
    const february = series.find((b) => b.start === '2026-02-01T00:00:00.000Z');
    expect(february).toMatchObject({ end: '2026-03-01T00:00:00.000Z', totals: { runs: 1 } });
  });

  test('a calendar month of hours is allowed (744 buckets); timestamps without milliseconds are read as instants', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z', interval: 'hour' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.series).toHaveLength(744);
    expect(answer.body.from).toBe('2026-01-01T00:00:00.000Z');
    // Whole hours: the hour counters of the month, and no run.
    expect(usageQueries(ddb).runs).toHaveLength(0);
    expect(ddb).toHaveReceivedCommandWith(QueryCommand, {
      ExpressionAttributeValues: expect.objectContaining({
        ':first': 'h#2026-01-01T00#',
        ':last': 'h#2026-01-31T23#~',
      }),
    });
  });

  test('a bound written with a UTC offset is the same instant, stated and queried in UTC', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-01-01T02:00:00+02:00', to: '2026-01-01T19:00:00-05:00' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' });
    expect(ddb).toHaveReceivedCommandWith(QueryCommand, {
      ExpressionAttributeValues: expect.objectContaining({ ':first': 'd#2026-01-01#', ':last': 'd#2026-01-01#~' }),
    });
  });

  test('a period with more buckets than allowed answers 400 without reading anything', async () => {
    const answer = await call(usage, {
      path: '/v1/usage',
      query: { from: '2026-01-01T00:00:00.000Z', to: '2026-11-01T00:00:00.000Z', interval: 'hour' },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues[0].path).toBe('interval');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('with no runs, rates and confidence are null rather than invented', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    const answer = await call(usage, { path: '/v1/usage' });
    expect(answer.status).toBe(200);
    expect(answer.body.workflows).toEqual([]);
    expect(answer.body.totals).toEqual(
      expect.objectContaining({ runs: 0, chargedUsd: 0, acceptanceRate: null, meanConfidence: null }),
    );
  });

  test('without from/to the window is the last 30 days up to now', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    const before = Date.now();
    const answer = await call(usage, { path: '/v1/usage' });
    const to = Date.parse(answer.body.to);
    expect(to).toBeGreaterThanOrEqual(before - 1000);
    expect(to - Date.parse(answer.body.from)).toBe(30 * 86400_000);
  });

  test('parameters sent empty count as not sent: the default period, every workflow', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    const answer = await call(usage, { path: '/v1/usage', query: { from: '', to: '', interval: '', workflow: '' } });
    expect(answer.status).toBe(200);
    const calls = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(calls.length).toBeGreaterThan(0);
    for (const q of calls) expect(q.FilterExpression ?? '').not.toContain('workflow');
  });

  test.each([
    ['from after to', { from: '2026-12-01T00:00:00.000Z', to: '2026-11-01T00:00:00.000Z' }, 'from'],
    ['from equal to to, written differently', { from: '2026-11-01T00:00:00Z', to: '2026-11-01T00:00:00.000Z' }, 'from'],
    ['from after to once offsets apply', { from: '2026-11-01T01:00:00Z', to: '2026-11-01T02:00:00+02:00' }, 'from'],
    // `to` defaults to now: a future `from` alone is an inverted period, refused before any query (DynamoDB would
    // refuse the reversed BETWEEN with a 500).
    ['a from in the future without to', { from: new Date(Date.now() + 6 * 3600_000).toISOString() }, 'from'],
    ['a from that is not a timestamp', { from: 'yesterday' }, 'from'],
    ['an unknown parameter', { bogus: 'x' }, 'bogus'],
    ['an unknown interval', { interval: 'week' }, 'interval'],
    ['a workflow with characters the contract refuses', { workflow: 'a b' }, 'workflow'],
  ])('%s answers 400 INVALID_REQUEST', async (_what, query, path) => {
    const answer = await call(usage, { path: '/v1/usage', query });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });
});

describe('GET /health', () => {
  test('answers 200 {status: "ok"} without a key when the store answers', async () => {
    ddb.on(DescribeTableCommand).resolves({ Table: { TableName: tableName('tenants') } });
    const answer = await call(health, { path: '/health', auth: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'ok' });
    expectContractHeaders(answer);
    expect(ddb).toHaveReceivedCommandWith(DescribeTableCommand, { TableName: tableName('tenants') });
  });

  test('answers 500 INTERNAL_ERROR when the store cannot be reached', async () => {
    ddb.on(DescribeTableCommand).rejects(new Error('connect ECONNREFUSED 10.0.0.1:443'));
    const answer = await call(health, { path: '/health', auth: null });
    expectError(answer, 'INTERNAL_ERROR');
    expect(JSON.stringify(answer.body)).not.toContain('ECONNREFUSED');
  });
});
