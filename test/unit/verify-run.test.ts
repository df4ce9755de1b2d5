/**
 * POST /v1/runs/{jobId}/verify: QA metadata on completed runs, with history; the status never changes.
 * Over 400 lines: one handler's whole contract (the counters it moves, races, corrections by kind of run) in one place.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
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
  expect(items).toHaveLength(12);
  // The first verification of the run: one more verified in its hour's and day's usage, none accepted.
  expect(items.slice(2, 4).map((i) => [i.Update?.TableName, i.Update?.ExpressionAttributeValues])).toEqual([
    [tableName('usage'), { ':workflow': null, ':verified': 1 }],
    [tableName('usage'), { ':workflow': null, ':verified': 1 }],
  ]);
  // Accuracy from reviews: the run's fields checked once each, the corrected total wrong (GET /v1/quality), in the
  // counters of the four filters of its day (any or its workflow × any or its schema), each day item's version moved.
  expect(items.slice(4).map((i) => [i.Update?.TableName, i.Update?.Key?.slot])).toEqual([
    [tableName('quality'), '*#*#2026-11-01'],
    [tableName('quality'), '~c#*#*#2026-11-01'],
    [tableName('quality'), '#*#2026-11-01'],
    [tableName('quality'), '~c##*#2026-11-01'],
    [tableName('quality'), '*#receipt#2026-11-01'],
    [tableName('quality'), '~c#*#receipt#2026-11-01'],
    [tableName('quality'), '#receipt#2026-11-01'],
    [tableName('quality'), '~c##receipt#2026-11-01'],
  ]);
  expect(items[4]?.Update?.UpdateExpression).toBe('SET #set = :set ADD #0 :0');
  expect(items[4]?.Update?.ExpressionAttributeNames).toEqual({ '#set': 'day', '#0': 'v' });
  expect(items[4]?.Update?.ExpressionAttributeValues).toEqual({ ':set': '2026-11-01', ':0': 1 });
  const quality = items[5]?.Update;
  const added = Object.fromEntries(
    (quality?.UpdateExpression?.replace(/^ADD /, '') ?? '')
      .split(', ')
      .map((clause) => clause.split(' '))
      .map(([name = '', value = '']) => [
        quality?.ExpressionAttributeNames?.[name],
        quality?.ExpressionAttributeValues?.[value],
      ]),
  );
  expect(added).toEqual({
    verifiedRuns: 1,
    'fv#merchant': 1,
    'fv#total': 1,
    'fc#total': 1,
    'pr#local': 1,
    'pv#local': 2,
    'pc#local': 1,
    v: 1,
  });
  expect(update0(items)).toContain('qualityCounted = :true');
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

/** The usage counters each verification transaction added, in order. */
function usageAdded(): Record<string, unknown>[] {
  return ddb
    .commandCalls(TransactWriteCommand)
    .map((c) => mapsAsObjects(c.args[0].input.TransactItems ?? [])[2]?.Update?.ExpressionAttributeValues ?? {});
}

const verified = (accepted: boolean, count: number) =>
  completedRunItem({
    verification: { accepted, corrections: {}, note: null, verifiedAt: '2026-11-02T00:00:00.000Z', verifiedBy: 'k' },
    verificationCount: count,
  });

test('replacing a rejection with an acceptance moves one run from rejected to accepted, still one verified', async () => {
  ddb.on(GetCommand).resolves({ Item: verified(false, 1) });
  expect((await verify({ accepted: true })).status).toBe(200);
  expect(usageAdded()).toEqual([{ ':workflow': null, ':accepted': 1 }]);
  const run = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? [])[0]?.Update;
  expect(run?.ConditionExpression).toContain('verificationCount = :seen');
  expect(run?.ExpressionAttributeValues).toMatchObject({ ':seen': 1, ':next': 2 });
});

test('the same answer again changes no usage or accuracy counter (the history still grows)', async () => {
  ddb.on(GetCommand).resolves({ Item: { ...verified(true, 2), qualityCounted: true } });
  expect((await verify({ accepted: true })).status).toBe(200);
  const items = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? []);
  expect(items.map((i) => (i.Put ?? i.Update)?.TableName)).toEqual([tableName('runs'), tableName('verifications')]);
});

test('a run reviewed before the accuracy counters is counted whole from its next review (nothing taken away)', async () => {
  ddb.on(GetCommand).resolves({ Item: verified(true, 2) });
  expect((await verify({ accepted: true })).status).toBe(200);
  const items = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? []);
  const quality = items.find((i) => String(i.Update?.Key?.slot).startsWith('~c#'))?.Update;
  expect(Object.values(quality?.ExpressionAttributeValues ?? {}).filter((v) => typeof v === 'number')).toEqual([1, 2]);
});

test('a verification that lost a race to another one reads the run again and counts from what that one wrote', async () => {
  ddb
    .on(GetCommand)
    .resolvesOnce({ Item: completedRunItem() })
    .resolves({ Item: verified(true, 1) });
  ddb
    .on(TransactWriteCommand)
    .rejectsOnce(
      new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
      }),
    )
    .resolves({});
  expect((await verify({ accepted: false })).status).toBe(200);
  // First try: a first verification (+1 verified); second: replacing an acceptance (−1 accepted, no new verified).
  expect(usageAdded()).toEqual([
    { ':workflow': null, ':verified': 1 },
    { ':workflow': null, ':accepted': -1 },
  ]);
});

test('a dozen reviews of one run at once all get through: one that loses eleven races still writes', async () => {
  const lost = () =>
    new TransactionCanceledException({
      message: 'cancelled',
      $metadata: {},
      CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
    });
  ddb.on(GetCommand).resolves({ Item: completedRunItem() });
  let writes = ddb.on(TransactWriteCommand);
  for (let i = 0; i < 11; i++) writes = writes.rejectsOnce(lost());
  writes.resolves({});
  expect((await verify({ accepted: true })).status).toBe(200);
  expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(12);
});

test('a run created before the usage counters is verified without touching them (the backfill counts it)', async () => {
  ddb.on(GetCommand).resolves({ Item: { ...completedRunItem(), usageCounted: undefined } });
  expect((await verify({ accepted: true })).status).toBe(200);
  const items = mapsAsObjects(ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? []);
  // The usage counters are the backfill's to count; the accuracy counters start from this review.
  expect(items.map((i) => i.Update?.TableName ?? i.Put?.TableName)).toEqual([
    tableName('runs'),
    tableName('verifications'),
    ...Array.from({ length: 8 }, () => tableName('quality')),
  ]);
  expect(items[0]?.Update?.ConditionExpression).toContain('attribute_not_exists(usageCounted)');
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

describe('corrections are typed by the run they correct', () => {
  const invoice = completedRunItem({
    task: {
      prompt: 'Extract',
      outputFormat: 'json',
      fields: [
        { name: 'vendor', type: 'string', required: true },
        { name: 'total', type: 'number', required: true },
        { name: 'lines', type: 'integer', required: false },
        { name: 'paid', type: 'boolean', required: false },
        { name: 'date', type: 'date', required: false },
        { name: 'items', type: 'array', required: false },
      ],
      schemaId: null,
      schemaLabel: null,
      promptScaffold: null,
    },
  });

  test.each([
    ['a number typed as text (the dashboard once stored "0")', { total: '0' }, 'total', 'must be a number'],
    ['a field the schema does not have', { totl: 1 }, 'totl', 'not a field'],
    ['a fraction for an integer field', { lines: 2.5 }, 'lines', 'must be an integer'],
    ['a word for a boolean', { paid: 'yes' }, 'paid', 'true or false'],
    ['a date that does not exist', { date: '2026-02-30' }, 'date', 'YYYY-MM-DD'],
    ['a date written day-first', { date: '20/11/2026' }, 'date', 'YYYY-MM-DD'],
    ['an object for a list', { items: { a: 1 } }, 'items', 'an array'],
  ])(
    '%s answers 400 INVALID_REQUEST naming the field, and nothing is written',
    async (_what, corrections, field, says) => {
      ddb.on(GetCommand).resolves({ Item: invoice });
      const answer = await verify({ accepted: false, corrections });
      const error = expectError(answer, 'INVALID_REQUEST');
      expect(Object.keys(error.details.fields)).toEqual([field]);
      expect(error.details.fields[field]).toContain(says);
      expect(error.details.issues).toEqual([{ path: `corrections.${field}`, message: error.details.fields[field] }]);
      expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
    },
  );

  test('values of the right types, and null for "not in the document", are stored as given', async () => {
    ddb.on(GetCommand).resolves({ Item: invoice });
    const corrections = { vendor: 'ACME', total: 0, lines: 3, paid: false, date: '2026-11-20', items: [] };
    const answer = await verify({ accepted: false, corrections: { ...corrections, paid: null } });
    expect(answer.status).toBe(200);
    expect(answer.body.verification.corrections).toEqual({ ...corrections, paid: null });
  });

  test("without a schema the fields are the result's own, each keeping its JSON type", async () => {
    const free = completedRunItem({
      task: { ...invoice.task, fields: null },
      result: { amount: 12.5, note: 'x', missing: null },
    });
    ddb.on(GetCommand).resolves({ Item: free });
    expect((await verify({ accepted: false, corrections: { amount: 13, missing: 'now found' } })).status).toBe(200);
    const wrong = await verify({ accepted: false, corrections: { amount: '13', extra: 1 } });
    expect(Object.keys(expectError(wrong, 'INVALID_REQUEST').details.fields).sort()).toEqual(['amount', 'extra']);
  });

  test("a split run is corrected by document, each against its own schema's fields", async () => {
    const split = completedRunItem({
      task: { ...invoice.task, fields: null },
      packet: { mode: 'split', schemaIds: ['invoice', 'receipt'] },
      result: {
        documents: [
          {
            index: 0,
            schemaId: 'invoice',
            pages: { first: 1, last: 2 },
            classification: { confidence: 0.9 },
            result: {},
          },
          { index: 1, schemaId: 'other', pages: { first: 3, last: 3 }, classification: { confidence: 0.9 } },
          {
            index: 2,
            schemaId: 'receipt',
            pages: { first: 4, last: 4 },
            classification: { confidence: 0.9 },
            result: {},
          },
        ],
      },
    });
    ddb.on(GetCommand).resolves({ Item: split });
    const right = { documents: [{ index: 2, result: { total: 12.5, merchant: null } }] };
    expect((await verify({ accepted: false, corrections: right })).status).toBe(200);

    // The list sent back as shown, one value edited (the dashboard's form): only `result` is a correction.
    const shown = split.result?.documents as Record<string, unknown>[];
    const edited = [shown[0], shown[1], { ...shown[2], result: { total: 13 } }];
    expect((await verify({ accepted: false, corrections: { documents: edited } })).status).toBe(200);

    const wrong = await verify({
      accepted: false,
      corrections: {
        documents: [
          { index: 99, result: { total: 1 } },
          { index: 1, result: { total: 1 } },
          { index: 0, result: { totalDue: 'not a number', bogus: 1 } },
          { index: 2, colour: 'red' },
          { index: 2, schemaId: 'invoice', result: {} },
        ],
        total: 1,
      },
    });
    expect(expectError(wrong, 'INVALID_REQUEST').details.fields).toEqual({
      total: expect.stringContaining('corrected by document'),
      'documents.0.index': expect.stringContaining('no document 99'),
      'documents.1.result': expect.stringContaining('`other`'),
      'documents.2.result.totalDue': expect.stringContaining('must be a number'),
      'documents.2.result.bogus': expect.stringContaining('not a field of this document'),
      'documents.3': expect.stringContaining('{index, result}'),
      'documents.4.schemaId': expect.stringContaining('a class is not corrected'),
    });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
  });

  test('a text run is corrected through its text alone', async () => {
    const text = completedRunItem({
      task: { ...invoice.task, outputFormat: 'text', fields: null },
      result: { text: 'a' },
    });
    ddb.on(GetCommand).resolves({ Item: text });
    expect((await verify({ accepted: false, corrections: { text: 'b' } })).status).toBe(200);
    expectError(await verify({ accepted: false, corrections: { total: 1 } }), 'INVALID_REQUEST');
  });
});

/** The run's own update expression in a verify's transaction. */
function update0(items: { Update?: { UpdateExpression?: string } }[]): string {
  return items[0]?.Update?.UpdateExpression ?? '';
}
