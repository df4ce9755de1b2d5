/** POST /v1/runs/{jobId}/verify: QA metadata on completed runs, with history; the status never changes. */
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/verify-run.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { completedRunItem, failedRunItem, mapsAsObjects, runItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
});

function verify(body: unknown, options: { jobId?: string; tenantId?: string; keyId?: string; keyLabel?: string } = {}) {
  const jobId = options.jobId ?? 'run_1';
  return call(handler, {
    method: 'POST',
    path: `/v1/runs/${jobId}/verify`,
    pathParameters: { jobId },
    body,
    auth: {
      tenantId: options.tenantId ?? 'tenant-a',
      keyId: options.keyId ?? 'key_qa',
      ...(options.keyLabel !== undefined ? { keyLabel: options.keyLabel } : {}),
    },
  });
}

test('a completed run is verified: 200 with the verification, written with its history in one transaction', async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  const before = Date.now();
  const answer = await verify({ accepted: false, corrections: { total: 43.5 }, note: 'total misread' });
  expect(answer.status).toBe(200);
  expectContractHeaders(answer);
  expect(answer.body).toEqual({
    jobId: 'run_1',
    status: 'completed',
    verification: {
      accepted: false,
      corrections: { total: 43.5 },
      note: 'total misread',
      verifiedAt: expect.any(String),
      verifiedBy: 'key_qa',
    },
  });
  expect(Date.parse(answer.body.verification.verifiedAt)).toBeGreaterThanOrEqual(before - 1000);

  expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  const items = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? []);
  expect(items).toHaveLength(2);
  const update = items[0]?.Update;
  expect(update?.TableName).toBe(tableName('runs'));
  expect(update?.Key).toEqual({ jobId: 'run_1' });
  expect(update?.ExpressionAttributeValues?.[':v']).toEqual(answer.body.verification);
  // Still completed and still ours when written; the status itself is never set.
  expect(update?.ConditionExpression).toContain('#status = :completed');
  expect(update?.ExpressionAttributeValues?.[':tenant']).toBe('tenant-a');
  expect(update?.UpdateExpression).not.toMatch(/#status\s*=/);

  const history = items[1]?.Put;
  expect(history?.TableName).toBe(tableName('verifications'));
  expect(history?.Item).toEqual(
    expect.objectContaining({
      jobId: 'run_1',
      tenantId: 'tenant-a',
      accepted: false,
      corrections: { total: 43.5 },
      note: 'total misread',
      verifiedBy: 'key_qa',
      verificationId: expect.stringContaining(answer.body.verification.verifiedAt),
    }),
  );
});

test('a review by a labelled key records the label beside the key id, so the reviewer can be named', async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  const answer = await verify({ accepted: true }, { keyId: 'key_qa', keyLabel: 'alice-laptop' });
  expect(answer.body.verification).toMatchObject({ verifiedBy: 'key_qa', verifiedByLabel: 'alice-laptop' });
  const items = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? []);
  expect(items[0]?.Update?.ExpressionAttributeValues?.[':v']).toMatchObject({ verifiedByLabel: 'alice-laptop' });
  expect(items[1]?.Put?.Item).toMatchObject({ verifiedBy: 'key_qa', verifiedByLabel: 'alice-laptop' });

  // A key without a label records the id alone.
  const unlabelled = await verify({ accepted: true }, { keyLabel: '' });
  expect(unlabelled.body.verification).not.toHaveProperty('verifiedByLabel');
});

test('corrections default to {} and note to null', async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  const answer = await verify({ accepted: true });
  expect(answer.status).toBe(200);
  expect(answer.body.verification).toEqual(expect.objectContaining({ accepted: true, corrections: {}, note: null }));
});

test('a later verification adds another history item with its own id (history is kept)', async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  await verify({ accepted: true });
  await verify({ accepted: false });
  const ids = ddb
    .commandCalls(TransactWriteCommand)
    .map((c) => c.args[0].input.TransactItems?.[1]?.Put?.Item?.verificationId);
  expect(ids).toHaveLength(2);
  expect(ids[0]).not.toBe(ids[1]);
});

test.each([
  ['queued', runItem()],
  ['failed', failedRunItem()],
])('a %s run answers 409 RUN_NOT_COMPLETED (retryable) and nothing is written', async (status, item) => {
  ddb.on(GetCommand).resolves({ Item: item });
  const answer = await verify({ accepted: true });
  const error = expectError(answer, 'RUN_NOT_COMPLETED');
  expect(error.retryable).toBe(true);
  expect(error.details).toEqual({ jobId: 'run_1', status });
  expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
});

test("another tenant's run answers 404 NOT_FOUND and nothing is written", async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem({ tenantId: 'tenant-b' }) });
  const answer = await verify({ accepted: true });
  expectError(answer, 'NOT_FOUND');
  expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
});

test('an unknown run answers 404 NOT_FOUND', async () => {
  ddb.on(GetCommand).resolves({});
  const answer = await verify({ accepted: true }, { jobId: 'run_missing' });
  expectError(answer, 'NOT_FOUND');
});

test.each([
  ['a note over 2000 characters', { accepted: true, note: 'n'.repeat(2001) }, 'note'],
  ['a missing accepted', { corrections: {} }, 'accepted'],
  ['a string accepted', { accepted: 'yes' }, 'accepted'],
  ['corrections that are not an object', { accepted: true, corrections: ['total'] }, 'corrections'],
  ['an unknown field', { accepted: true, status: 'failed' }, 'status'],
])('%s answers 400 INVALID_REQUEST before the run is read', async (_what, body, path) => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  const answer = await verify(body);
  const error = expectError(answer, 'INVALID_REQUEST');
  expect(error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
  expect(ddb).not.toHaveReceivedAnyCommand();
});

test('a note of exactly 2000 characters is accepted', async () => {
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  const answer = await verify({ accepted: true, note: 'n'.repeat(2000) });
  expect(answer.status).toBe(200);
});
