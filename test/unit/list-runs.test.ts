/** GET /v1/runs: the tenant's runs newest first, filtered, paged with an opaque cursor bound to the tenant. */
import { DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/list-runs.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { completedRunItem, failedRunItem, runItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
});

function list(query: Record<string, string | string[]> = {}, tenantId = 'tenant-a') {
  return call(handler, { path: '/v1/runs', query, auth: { tenantId } });
}

function queries(): QueryCommandInput[] {
  return ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
}

const lastKey = { jobId: 'run_2', tenantId: 'tenant-a', createdAt: '2026-11-01T09:00:00.000Z' };

test("lists the tenant's runs newest first from the byTenant index, in their public shape", async () => {
  ddb.on(QueryCommand).resolves({
    Items: [
      completedRunItem({ jobId: 'run_3', createdAt: '2026-11-03T00:00:00.000Z' }),
      failedRunItem({ jobId: 'run_2', createdAt: '2026-11-02T00:00:00.000Z' }),
      runItem({ jobId: 'run_1', createdAt: '2026-11-01T00:00:00.000Z' }),
    ],
  });
  const answer = await list();
  expect(answer.status).toBe(200);
  expectContractHeaders(answer);
  expect(answer.body.items.map((r: { jobId: string; status: string }) => [r.jobId, r.status])).toEqual([
    ['run_3', 'completed'],
    ['run_2', 'failed'],
    ['run_1', 'queued'],
  ]);
  expect(answer.body.items[0].chargedUsd).toBe(0.000104);
  expect(answer.body.items[0]).not.toHaveProperty('tenantId');
  expect(answer.body.nextCursor).toBeNull();

  const [q] = queries();
  expect(q?.TableName).toBe(tableName('runs'));
  expect(q?.IndexName).toBe('byTenant');
  expect(q?.ScanIndexForward).toBe(false);
  expect(q?.ExpressionAttributeValues?.[':pk']).toBe('tenant-a');
  expect(q?.ExpressionAttributeNames?.['#pk']).toBe('tenantId');
  // Default page size, and one run more to know whether another page follows.
  expect(q?.Limit).toBe(21);
  // Expired runs (past their retention, not yet deleted by DynamoDB's TTL) are not listed.
  expect(q?.FilterExpression).toBe('#expires > :now');
  expect(Math.abs(Number(q?.ExpressionAttributeValues?.[':now']) - Date.now() / 1000)).toBeLessThan(60);
});

test('a workflow filter queries the byTenantWorkflow index for this tenant only', async () => {
  ddb.on(QueryCommand).resolves({ Items: [] });
  const answer = await list({ workflow: 'expenses:q4' });
  expect(answer.status).toBe(200);
  expect(answer.body).toEqual({ items: [], nextCursor: null });
  const [q] = queries();
  expect(q?.IndexName).toBe('byTenantWorkflow');
  expect(q?.ExpressionAttributeNames?.['#pk']).toBe('tenantWorkflow');
  expect(q?.ExpressionAttributeValues?.[':pk']).toBe('tenant-a#expenses:q4');
  expect(q?.ScanIndexForward).toBe(false);
});

test('a status filter is applied and pages are fetched until the page is full', async () => {
  ddb
    .on(QueryCommand)
    .resolvesOnce({ Items: [failedRunItem({ jobId: 'run_9' })], LastEvaluatedKey: { jobId: 'run_5' } })
    .resolvesOnce({ Items: [failedRunItem({ jobId: 'run_4' })] });
  const answer = await list({ status: 'failed', limit: '2' });
  expect(answer.body.items.map((r: { jobId: string }) => r.jobId)).toEqual(['run_9', 'run_4']);
  expect(answer.body.nextCursor).toBeNull();
  const [first, second] = queries();
  expect(first?.FilterExpression).toBe('#status = :status AND #expires > :now');
  expect(first?.ExpressionAttributeValues?.[':status']).toBe('failed');
  expect(first?.Limit).toBe(3);
  expect(second?.ExclusiveStartKey).toEqual({ jobId: 'run_5' });
  expect(second?.Limit).toBe(2);
});

test('the last page has no cursor, even when DynamoDB could not tell that nothing follows', async () => {
  // DynamoDB returns a LastEvaluatedKey whenever a query stops at its Limit; the next query finds nothing.
  ddb
    .on(QueryCommand)
    .resolvesOnce({ Items: [runItem({ jobId: 'run_2' }), runItem({ jobId: 'run_1' })], LastEvaluatedKey: lastKey })
    .resolvesOnce({ Items: [] });
  const answer = await list({ limit: '2' });
  expect(answer.body.items).toHaveLength(2);
  expect(answer.body.nextCursor).toBeNull();
});

test("a page of long results ends before Lambda's 6 MB response limit, and the cursor continues after it", async () => {
  const long = (jobId: string) => completedRunItem({ jobId, result: { text: 'x'.repeat(1_500_000) } });
  ddb.on(QueryCommand).resolvesOnce({ Items: [long('run_4'), long('run_3'), long('run_2'), long('run_1')] });
  const page1 = await list({ limit: '5' });
  expect(page1.status).toBe(200);
  expect(page1.body.items.map((r: { jobId: string }) => r.jobId)).toEqual(['run_4', 'run_3']);
  expect(Buffer.byteLength(JSON.stringify(page1.body))).toBeLessThan(4.5 * 1024 * 1024);

  ddb.on(QueryCommand).resolves({ Items: [] });
  await list({ limit: '5', cursor: page1.body.nextCursor });
  expect(queries()[1]?.ExclusiveStartKey).toEqual({
    jobId: 'run_3',
    tenantId: 'tenant-a',
    createdAt: completedRunItem().createdAt,
  });
});

test('nextCursor round-trips: the next page starts where the last one ended', async () => {
  ddb.on(QueryCommand).resolvesOnce({
    Items: [runItem({ jobId: 'run_2', createdAt: lastKey.createdAt }), runItem({ jobId: 'run_1' })],
  });
  const page1 = await list({ limit: '1' });
  expect(page1.body.items.map((r: { jobId: string }) => r.jobId)).toEqual(['run_2']);
  expect(typeof page1.body.nextCursor).toBe('string');
  // Opaque to clients: not the raw key.
  expect(page1.body.nextCursor).not.toContain('run_2');

  ddb.on(QueryCommand).resolves({ Items: [runItem({ jobId: 'run_1' })] });
  const page2 = await list({ limit: '1', cursor: page1.body.nextCursor });
  expect(page2.status).toBe(200);
  expect(page2.body.items.map((r: { jobId: string }) => r.jobId)).toEqual(['run_1']);
  expect(page2.body.nextCursor).toBeNull();
  expect(queries()[1]?.ExclusiveStartKey).toEqual(lastKey);
});

test('a cursor from another tenant answers 400 INVALID_REQUEST and is never used', async () => {
  ddb.on(QueryCommand).resolvesOnce({ Items: [runItem({ jobId: 'run_2' }), runItem({ jobId: 'run_1' })] });
  const page1 = await list({ limit: '1' }, 'tenant-a');
  ddb.resetHistory();
  const answer = await list({ cursor: page1.body.nextCursor }, 'tenant-b');
  const error = expectError(answer, 'INVALID_REQUEST');
  expect(error.details.issues).toEqual([expect.objectContaining({ path: 'cursor' })]);
  expect(ddb).not.toHaveReceivedCommand(QueryCommand);
});

function cursorOf(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

test('a well-formed cursor of its own partition is used as is', async () => {
  ddb.on(QueryCommand).resolves({ Items: [] });
  const answer = await list({ cursor: cursorOf({ t: 'tenant-a', w: null, k: lastKey }) });
  expect(answer.status).toBe(200);
  expect(queries()[0]?.ExclusiveStartKey).toEqual(lastKey);
});

test.each([
  ['garbage', 'not-a-cursor'],
  ['a forged cursor without tenant', Buffer.from(JSON.stringify({ k: { jobId: 'x' } })).toString('base64url')],
  // The caller's tenant on the outside, another tenant's partition inside: DynamoDB would refuse it with an error.
  [
    "a cursor whose key points into another tenant's partition",
    cursorOf({ t: 'tenant-a', w: null, k: { ...lastKey, tenantId: 'tenant-b' } }),
  ],
  ['a cursor key with an extra attribute', cursorOf({ t: 'tenant-a', w: null, k: { ...lastKey, extra: 'x' } })],
  ['a cursor key with a non-string jobId', cursorOf({ t: 'tenant-a', w: null, k: { ...lastKey, jobId: 7 } })],
  [
    'a workflow cursor key on the unfiltered listing',
    cursorOf({ t: 'tenant-a', w: null, k: { jobId: 'run_1', tenantWorkflow: 'tenant-a#w', createdAt: 'x' } }),
  ],
])('%s answers 400', async (_what, cursor) => {
  const answer = await list({ cursor });
  expectError(answer, 'INVALID_REQUEST');
  expect(ddb).not.toHaveReceivedCommand(QueryCommand);
});

test('a parameter given twice answers 400 naming it, rather than one value being dropped', async () => {
  const answer = await list({ status: ['completed', 'queued'], limit: '5' });
  const error = expectError(answer, 'INVALID_REQUEST');
  expect(error.details.issues).toEqual([{ path: 'status', message: 'given more than once' }]);
  expect(ddb).not.toHaveReceivedCommand(QueryCommand);
});

test.each([
  ['limit above 100', { limit: '101' }, 'limit'],
  ['limit 0', { limit: '0' }, 'limit'],
  ['a non-numeric limit', { limit: 'ten' }, 'limit'],
  ['an unknown status', { status: 'running' }, 'status'],
  ['an invalid workflow', { workflow: 'bad workflow!' }, 'workflow'],
  ['an unknown parameter', { sort: 'asc' }, 'sort'],
])('%s answers 400 naming the parameter', async (_what, query, path) => {
  const answer = await list(query);
  const error = expectError(answer, 'INVALID_REQUEST');
  expect(error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
  expect(ddb).not.toHaveReceivedCommand(QueryCommand);
});

test('filters sent empty, as the contract writes the route (?workflow=&status=&limit=&cursor=), are not applied', async () => {
  ddb.on(QueryCommand).resolves({ Items: [] });
  const answer = await list({ workflow: '', status: '', limit: '', cursor: '' });
  expect(answer.status).toBe(200);
  const [q] = queries();
  expect(q?.IndexName).toBe('byTenant');
  expect(q?.Limit).toBe(21);
  expect(q?.ExclusiveStartKey).toBeUndefined();
  expect(q?.ExpressionAttributeValues).not.toHaveProperty(':status');
});

test('an unknown parameter sent empty is still refused (a typo surfaces)', async () => {
  const error = expectError(await list({ stauts: '' }), 'INVALID_REQUEST');
  expect(error.details.issues.map((i: { path: string }) => i.path)).toContain('stauts');
});

test('limit 100 is allowed', async () => {
  ddb.on(QueryCommand).resolves({ Items: [] });
  const answer = await list({ limit: '100' });
  expect(answer.status).toBe(200);
  expect(queries()[0]?.Limit).toBe(101);
});

test('a cursor is bound to its workflow filter: reused with another filter it answers 400, not a failed query', async () => {
  const inWorkflow = (jobId: string) => runItem({ jobId, workflow: 'expenses', tenantWorkflow: 'tenant-a#expenses' });
  ddb.on(QueryCommand).resolvesOnce({ Items: [inWorkflow('run_2'), inWorkflow('run_1')] });
  const page1 = await list({ workflow: 'expenses', limit: '1' });
  ddb.resetHistory();
  for (const query of [{}, { workflow: 'invoices' }] as Record<string, string>[]) {
    const answer = await list({ ...query, cursor: page1.body.nextCursor });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([expect.objectContaining({ path: 'cursor' })]);
  }
  expect(ddb).not.toHaveReceivedCommand(QueryCommand);

  // With the same filter it continues where it stopped.
  ddb.on(QueryCommand).resolves({ Items: [] });
  const page2 = await list({ workflow: 'expenses', cursor: page1.body.nextCursor });
  expect(page2.status).toBe(200);
  // The index's key after the page's last run, as DynamoDB itself would give it: the table key and the index's keys.
  expect(queries()[0]?.ExclusiveStartKey).toEqual({
    jobId: 'run_2',
    tenantWorkflow: 'tenant-a#expenses',
    createdAt: runItem().createdAt,
  });
});
