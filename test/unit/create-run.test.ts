/**
 * POST /v1/runs with the default configuration (threshold 1.00 USD; the cost-confirmation threshold is exercised with
 * a low threshold in create-run-threshold.test.ts). The uploaded bytes are real fixtures read through ranged GETs, so
 * the real inspection decides type, readability and limits.
 * Over 400 lines: every rule of POST /v1/runs, in the order the handler checks them, against one set of mocks.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/create-run.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { fixture, mapsAsObjects, tableName, transactionCancelled } from '../support/aws.js';
import {
  type ArrangeOptions,
  arrangeCreateRun,
  expectNothingHeldOrQueued,
  type Mocks,
  transactions,
} from '../support/create-run.js';
import { etagOf, useFakeS3 } from '../support/fake-s3.js';
import { estimateMicros, estimateUsd, textLayerEstimateMicros, textLayerEstimateUsd } from '../support/pricing.js';

const mocks: Mocks = {
  ddb: mockClient(DynamoDBDocumentClient),
  s3: useFakeS3(),
  sqs: mockClient(SQSClient),
};
const MiB = 1024 * 1024;

beforeEach(() => {
  mocks.ddb.reset();
  mocks.sqs.reset();
});

function create(body: Record<string, unknown>, options: { headers?: Record<string, string>; tenantId?: string } = {}) {
  return call(handler, {
    method: 'POST',
    path: '/v1/runs',
    body,
    headers: options.headers ?? {},
    auth: { tenantId: options.tenantId ?? 'tenant-a' },
  });
}

const minimal = { uploadId: 'upl_1', prompt: 'Summarise this document' };

describe('a run is accepted', () => {
  test('202 with the creation envelope, a location header and the estimate', async () => {
    arrangeCreateRun(mocks);
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      jobId: expect.stringMatching(/^run_[0-9a-f]{32}$/),
      status: 'queued',
      stage: 'waiting',
      uploadId: 'upl_1',
      prompt: 'Summarise this document',
      outputFormat: 'json',
      schemaId: null,
      // One page through local OCR, at the pricing table's price plus margin.
      estimatedCostUsd: estimateUsd(1),
      metadata: {},
      workflow: null,
      createdAt: expect.any(String),
      // What inspection found in the stored bytes, with the name given at presign.
      file: { name: 'receipt.png', type: 'image/png', sizeBytes: 13775, pages: 1, width: 800, height: 834 },
    });
    expect(new Date(answer.body.createdAt).toISOString()).toBe(answer.body.createdAt);
    expect(answer.headers.location).toBe(`/v1/runs/${answer.body.jobId}`);
    expect(answer.headers['idempotent-replayed']).toBeUndefined();
  });

  test('the run, the tenant hold, the ledger hold entry and the usage counters are written in exactly one transaction', async () => {
    const world = arrangeCreateRun(mocks);
    const answer = await create(minimal);
    const [tx, ...others] = transactions(mocks);
    expect(others).toHaveLength(0);
    const items = tx?.TransactItems ?? [];
    expect(items).toHaveLength(5);
    // The run counts in its hour's and day's usage from its creation: one run, its estimate.
    const hour = new Date(String(items[0]?.Put?.Item?.createdAt)).toISOString().slice(0, 13);
    expect(items.slice(3).map((i) => [i.Update?.TableName, i.Update?.Key?.slot])).toEqual([
      [tableName('usage'), `h#${hour}#`],
      [tableName('usage'), `d#${hour.slice(0, 10)}#`],
    ]);
    for (const counter of items.slice(3)) {
      expect(counter.Update?.ExpressionAttributeValues).toEqual({
        ':workflow': null,
        ':runs': 1,
        ':estimatedMicros': items[1]?.Update?.ExpressionAttributeValues?.[':hold'],
      });
    }
    expect(items[0]?.Put?.Item?.usageCounted).toBe(true);
    // Idempotent at DynamoDB too: an SDK retry after a lost response cannot fail on the run's own condition.
    expect(tx?.ClientRequestToken).toBe(String(answer.body.jobId).replace(/^run_/, ''));

    const runPut = items[0]?.Put;
    expect(runPut?.TableName).toBe(tableName('runs'));
    expect(runPut?.ConditionExpression).toBe('attribute_not_exists(jobId)');
    expect(runPut?.Item).toEqual(
      expect.objectContaining({
        jobId: answer.body.jobId,
        tenantId: 'tenant-a',
        status: 'queued',
        uploadId: 'upl_1',
        // The preview stops serving the file when the upload's retention ends.
        uploadExpiresAtEpoch: world.upload?.expiresAtEpoch,
        prompt: 'Summarise this document',
        estimateMicros: estimateMicros(1),
        maxCostMicros: null,
        candidates: ['local'],
        // Quoted in error.requestId should the run fail in the worker.
        requestId: answer.requestId,
        // The facts come from the bytes (receipt.png is 800 x 834), not from the client.
        file: expect.objectContaining({ mime: 'image/png', kind: 'image', width: 800, height: 834, pages: 1 }),
      }),
    );

    const hold = items[1]?.Update;
    expect(hold?.TableName).toBe(tableName('tenants'));
    expect(hold?.Key).toEqual({ tenantId: 'tenant-a' });
    expect(hold?.ExpressionAttributeValues).toEqual({ ':hold': estimateMicros(1) });
    expect(hold?.UpdateExpression).toContain('heldMicros');

    const ledger = items[2]?.Put;
    expect(ledger?.TableName).toBe(tableName('ledger'));
    expect(ledger?.ConditionExpression).toBe('attribute_not_exists(entryId)');
    expect(ledger?.Item).toEqual(
      expect.objectContaining({
        tenantId: 'tenant-a',
        entryId: `${answer.body.jobId}#hold`,
        kind: 'hold',
        amountMicros: estimateMicros(1),
      }),
    );
  });

  test('one message naming the jobId is queued, after the hold', async () => {
    arrangeCreateRun(mocks);
    const answer = await create(minimal);
    expect(mocks.sqs).toHaveReceivedCommandTimes(SendMessageCommand, 1);
    const sent = mocks.sqs.commandCalls(SendMessageCommand)[0]?.args[0].input;
    expect(sent?.QueueUrl).toBe(process.env.RUN_QUEUE_URL);
    expect(JSON.parse(sent?.MessageBody ?? '{}')).toEqual({ jobId: answer.body.jobId });
    // Ordering: the transaction happened before the message.
    const tx = mocks.ddb.commandCalls(TransactWriteCommand)[0];
    const msg = mocks.sqs.commandCalls(SendMessageCommand)[0];
    expect(tx?.calledBefore(msg as NonNullable<typeof msg>)).toBe(true);
  });

  test('a small upload is checked with a single ranged S3 read (presence, size and content at once)', async () => {
    const world = arrangeCreateRun(mocks);
    expect((await create(minimal)).status).toBe(202);
    expect(mocks.s3.requests).toEqual([{ method: 'GET', key: world.upload?.objectKey, range: 'bytes=0-65535' }]);
  });

  test('the run records which bytes it inspected: the object version and ETag the read answered with', async () => {
    const world = arrangeCreateRun(mocks);
    mocks.s3.put(String(world.upload?.objectKey), world.bytes, { versionId: 'v-42' });
    expect((await create(minimal)).status).toBe(202);
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.objectIdentity).toEqual({ etag: etagOf(world.bytes), versionId: 'v-42' });
  });

  test('later reads of a larger upload ask for the object the first read saw (If-Match its ETag)', async () => {
    const world = arrangeCreateRun(mocks, { file: 'many-pages.pdf' });
    await create(minimal);
    const [first, ...later] = mocks.s3.requests;
    expect(first?.ifMatch).toBeUndefined();
    expect(later.length).toBeGreaterThan(0);
    for (const request of later) expect(request.ifMatch).toBe(etagOf(world.bytes));
  });

  test('an upload replaced while it is inspected answers 409 UPLOAD_INCOMPLETE and holds nothing', async () => {
    const world = arrangeCreateRun(mocks, { file: 'many-pages.pdf' });
    const other = world.bytes.slice();
    other[other.length - 100] = (other[other.length - 100] ?? 0) ^ 0xff;
    mocks.s3.afterRequests(1, () => mocks.s3.put(String(world.upload?.objectKey), other));
    const error = expectError(await create(minimal), 'UPLOAD_INCOMPLETE');
    expect(error.retryable).toBe(true);
    expect(transactions(mocks)).toHaveLength(0);
  });

  test('the prompt is echoed exactly and optional fields are echoed: schemaId, outputFormat, workflow, nested metadata', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({
      ...minimal,
      schemaId: 'receipt',
      outputFormat: 'text',
      workflow: 'expenses:q4',
      prompt: '  Summarise, keep my spacing  ',
      metadata: { customer: 'c-42', priority: 2, urgent: true, note: null, nested: { tags: ['a', 'b'] } },
    });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual(
      expect.objectContaining({
        schemaId: 'receipt',
        outputFormat: 'text',
        workflow: 'expenses:q4',
        prompt: '  Summarise, keep my spacing  ',
        metadata: { customer: 'c-42', priority: 2, urgent: true, note: null, nested: { tags: ['a', 'b'] } },
      }),
    );
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.tenantWorkflow).toBe('tenant-a#expenses:q4');
    expect(run?.task).toEqual(
      expect.objectContaining({
        outputFormat: 'text',
        schemaLabel: 'Receipt',
        fields: expect.arrayContaining([expect.objectContaining({ name: 'total', type: 'number' })]),
      }),
    );
  });

  test('an inline schema is accepted and normalised for the worker', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({
      ...minimal,
      schema: {
        label: 'Parking ticket',
        expectedFields: ['plate', { name: 'fine', type: 'number', required: true }],
        promptScaffold: 'Read {fields}. {prompt}',
      },
    });
    expect(answer.status).toBe(202);
    expect(answer.body.schemaId).toBeNull();
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.task.fields).toEqual([
      { name: 'plate', type: 'string', required: false },
      { name: 'fine', type: 'number', required: true },
    ]);
  });

  test('a 20-page PDF is estimated per page: 20 x the page price (a text layer: local reads it, at its price)', async () => {
    arrangeCreateRun(mocks, { file: 'twenty-pages.pdf' });
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
    expect(answer.body.estimatedCostUsd).toBe(textLayerEstimateUsd(20));
    expect(textLayerEstimateMicros(20)).toBe(20 * textLayerEstimateMicros(1));
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.file).toEqual(expect.objectContaining({ kind: 'pdf', mime: 'application/pdf', pages: 20 }));
    expect(run?.strategy).toBe('ocr_then_analyze');
  });

  test('the real type decides, not the name: a PDF stored under a .png name is accepted as a PDF', async () => {
    arrangeCreateRun(mocks, { file: 'pdf-named.png', upload: { fileName: 'pdf-named.png' } });
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.file.mime).toBe('application/pdf');
  });

  test.each([['receipt.jpg'], ['receipt.heic'], ['text.pdf'], ['scanned.pdf']])('%s is accepted', async (file) => {
    arrangeCreateRun(mocks, { file });
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
  });

  test('one upload may be used by several runs, each with its own jobId and hold', async () => {
    arrangeCreateRun(mocks);
    const first = await create(minimal);
    const second = await create({ ...minimal, prompt: 'Another question' });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(first.body.jobId).not.toBe(second.body.jobId);
    expect(transactions(mocks)).toHaveLength(2);
    expect(mocks.sqs).toHaveReceivedCommandTimes(SendMessageCommand, 2);
  });

  test('maxCostUsd equal to the estimate is within budget and caps the run', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, maxCostUsd: estimateUsd(1) });
    expect(answer.status).toBe(202);
    const run = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;
    expect(run?.maxCostMicros).toBe(estimateMicros(1));
  });

  test('a limited tenant with enough credit has the hold taken from its available credit', async () => {
    arrangeCreateRun(mocks, { tenant: { availableMicros: 1_000_000 } });
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
    const hold = transactions(mocks)[0]?.TransactItems?.[1]?.Update;
    expect(hold?.UpdateExpression).toContain('availableMicros = availableMicros - :hold');
    expect(hold?.ConditionExpression).toContain('availableMicros >= :hold');
    expect(transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item?.holdFromCredit).toBe(true);
  });
});

describe('a rejected request holds nothing and queues nothing', () => {
  afterEach(() => {
    expectNothingHeldOrQueued(mocks);
  });

  // ----- body -----

  test('an invalid body answers 400 before the upload is even looked up', async () => {
    arrangeCreateRun(mocks, { upload: null });
    const answer = await create({ uploadId: 'upl_missing' });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toContain('prompt');
    expect(mocks.ddb).not.toHaveReceivedAnyCommand();
  });

  test('schemaId together with schema answers 400 INVALID_REQUEST', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({
      ...minimal,
      schemaId: 'receipt',
      schema: { label: 'X', expectedFields: ['a'] },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(JSON.stringify(error.details.issues)).toMatch(/schema/);
  });

  test.each([
    ['a blank prompt', { prompt: '   ' }, 'prompt'],
    ['a prompt over 10 000 characters', { prompt: 'x'.repeat(10_001) }, 'prompt'],
    ['an unknown outputFormat', { outputFormat: 'xml' }, 'outputFormat'],
    ['a workflow with spaces', { workflow: 'my flow' }, 'workflow'],
    ['a workflow over 64 characters', { workflow: 'w'.repeat(65) }, 'workflow'],
    [
      'metadata with 51 keys',
      { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
      'metadata',
    ],
    ['metadata over 8 KiB', { metadata: { big: 'x'.repeat(8 * 1024) } }, 'metadata'],
    ['a blank prompt', { prompt: '   ' }, 'prompt'],
    ['a negative maxCostUsd', { maxCostUsd: -1 }, 'maxCostUsd'],
    ['a maxCostUsd below one micro-dollar (it would apply as 0)', { maxCostUsd: 0.0000009 }, 'maxCostUsd'],
    ['a string confirmCost', { confirmCost: 'yes' }, 'confirmCost'],
    ['a typo in a field name', { schemaID: 'receipt' }, 'schemaID'],
  ])('%s answers 400 naming the field', async (_what, patch, path) => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, ...patch });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path.split('.')[0])).toContain(path);
  });

  test('an inline schema field with a bad member is named down to the member, with what is allowed', async () => {
    arrangeCreateRun(mocks);
    const schema = { label: 'X', expectedFields: ['ok', { name: 't', type: 'float' }, 5] };
    const error = expectError(await create({ ...minimal, schema, misspelt: 1 }), 'INVALID_REQUEST');
    expect(error.details.issues).toEqual(
      expect.arrayContaining([
        { path: 'schema.expectedFields.1.type', message: expect.stringContaining('"string"|"number"') },
        { path: 'schema.expectedFields.2', message: 'Invalid input: expected string or object' },
        { path: 'misspelt', message: 'Unrecognized key: "misspelt"' },
      ]),
    );
    expectNothingHeldOrQueued(mocks);
  });

  // ----- upload ownership and presence -----

  test('an unknown upload answers 404 UPLOAD_NOT_FOUND', async () => {
    arrangeCreateRun(mocks, { upload: null });
    const answer = await create(minimal);
    const error = expectError(answer, 'UPLOAD_NOT_FOUND');
    expect(error.details).toEqual({ uploadId: 'upl_1' });
    expect(mocks.s3.requests).toEqual([]);
  });

  test("another tenant's upload answers exactly as an unknown one (its existence is not revealed)", async () => {
    arrangeCreateRun(mocks, { upload: { tenantId: 'tenant-b', objectKey: 'uploads/tenant-b/upl_1' } });
    const theirs = await create(minimal);
    mocks.ddb.reset();
    arrangeCreateRun(mocks, { upload: null });
    const unknown = await create(minimal);
    const strip = (b: { error: Record<string, unknown> }) => ({ ...b.error, requestId: undefined });
    expectError(theirs, 'UPLOAD_NOT_FOUND');
    expect(strip(theirs.body)).toEqual(strip(unknown.body));
    expect(mocks.s3.requests).toEqual([]);
  });

  test('an expired upload answers 404 UPLOAD_NOT_FOUND', async () => {
    arrangeCreateRun(mocks, { upload: { expiresAt: new Date(Date.now() - 1000).toISOString() } });
    const answer = await create(minimal);
    expectError(answer, 'UPLOAD_NOT_FOUND');
  });

  test('a run created before the bytes were PUT answers 409 UPLOAD_INCOMPLETE, retryable', async () => {
    arrangeCreateRun(mocks);
    // The slot exists; the bucket holds nothing under its key.
    mocks.s3.reset();
    const answer = await create(minimal);
    const error = expectError(answer, 'UPLOAD_INCOMPLETE');
    expect(error.retryable).toBe(true);
  });

  test('storage failing on every attempt answers 500 INTERNAL_ERROR, retryable, and holds nothing', async () => {
    arrangeCreateRun(mocks);
    mocks.s3.failWith(503);
    const error = expectError(await create(minimal), 'INTERNAL_ERROR');
    expect(error.retryable).toBe(true);
    // Three attempts, as the S3 client's standard retry would make.
    expect(mocks.s3.requests).toHaveLength(3);
    expectNothingHeldOrQueued(mocks);
  });

  test('storage refusing the read (403) answers 500 INTERNAL_ERROR at once, not 409 or 404', async () => {
    arrangeCreateRun(mocks);
    mocks.s3.failWith(403);
    expectError(await create(minimal), 'INTERNAL_ERROR');
    expect(mocks.s3.requests).toHaveLength(1);
    expectNothingHeldOrQueued(mocks);
  });

  // ----- size -----

  test('stored bytes of another size than presigned answer 422 UPLOAD_SIZE_MISMATCH with both sizes', async () => {
    const world = arrangeCreateRun(mocks, { upload: { contentLength: 20_000 } });
    const answer = await create(minimal);
    const error = expectError(answer, 'UPLOAD_SIZE_MISMATCH');
    expect(error.details).toEqual({ declaredBytes: 20_000, actualBytes: world.bytes.length });
  });

  test('an empty object PUT to a slot presigned for more answers 422 UPLOAD_SIZE_MISMATCH with 0 bytes', async () => {
    arrangeCreateRun(mocks, { bytes: new Uint8Array(0), upload: { contentLength: 13_775 } });
    const answer = await create(minimal);
    const error = expectError(answer, 'UPLOAD_SIZE_MISMATCH');
    expect(error.details).toEqual({ declaredBytes: 13_775, actualBytes: 0 });
  });

  test('an image over 20 MiB (uploaded under a .pdf name) answers 413 FILE_TOO_LARGE', async () => {
    const bytes = new Uint8Array(21 * MiB);
    bytes.set(fixture('receipt.png'));
    arrangeCreateRun(mocks, { bytes, upload: { fileName: 'big.pdf' } });
    const answer = await create(minimal);
    const error = expectError(answer, 'FILE_TOO_LARGE');
    expect(error.details).toEqual({ sizeBytes: 21 * MiB, limitBytes: 20 * MiB });
  });

  // ----- real file type -----

  test.each([
    ['a ZIP stored as .jpg', 'zip-named.jpg'],
    ['a GIF stored as .png', 'gif-named.png'],
  ])('%s answers 415 UNSUPPORTED_FILE_TYPE', async (_what, file) => {
    arrangeCreateRun(mocks, { file, upload: { fileName: file } });
    const answer = await create(minimal);
    expectError(answer, 'UNSUPPORTED_FILE_TYPE');
  });

  // ----- readability and limits -----

  test.each([
    ['a truncated PNG', 'truncated.png', 'truncated'],
    ['a truncated JPEG', 'truncated.jpg', 'truncated'],
    ['a truncated PDF', 'truncated.pdf', 'truncated'],
    ['an encrypted PDF', 'encrypted.pdf', 'encrypted'],
    ['a pixel bomb', 'pixel-bomb.png', 'pixel_limit'],
  ])('%s answers 422 CORRUPT_FILE (reason %s)', async (_what, file, reason) => {
    arrangeCreateRun(mocks, { file });
    const answer = await create(minimal);
    const error = expectError(answer, 'CORRUPT_FILE');
    expect(error.details.reason).toBe(reason);
  });

  test('a PDF over 1,000 pages (the default limit) answers 413 TOO_MANY_PAGES', async () => {
    arrangeCreateRun(mocks, { file: 'many-pages.pdf' });
    const answer = await create(minimal);
    const error = expectError(answer, 'TOO_MANY_PAGES');
    expect(error.details).toEqual({ pages: 1001, limitPages: 1000 });
  });

  // ----- schema -----

  test('an unknown schemaId answers 400 UNKNOWN_SCHEMA listing the known ones', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, schemaId: 'passport' });
    const error = expectError(answer, 'UNKNOWN_SCHEMA');
    expect(error.details.schemaId).toBe('passport');
    expect(error.details.knownSchemaIds).toEqual(
      expect.arrayContaining(['receipt', 'invoice', 'id_document', 'business_card', 'bank_statement']),
    );
  });

  // ----- estimate and budget -----

  test('an estimate over maxCostUsd answers 402 BUDGET_EXCEEDED with both amounts', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, maxCostUsd: estimateUsd(1) / 2 });
    const error = expectError(answer, 'BUDGET_EXCEEDED');
    expect(error.details).toEqual({ estimatedCostUsd: estimateUsd(1), maxCostUsd: estimateUsd(1) / 2 });
  });

  test('a budget even a micro-dollar under the estimate is exceeded', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, maxCostUsd: (estimateMicros(1) - 1) / 1_000_000 });
    expectError(answer, 'BUDGET_EXCEEDED');
  });

  // ----- the contract's check order: the first failing check answers -----

  test.each<[string, ArrangeOptions, Record<string, unknown>, string]>([
    ['unknown schemaId + missing upload', { upload: null }, { schemaId: 'nope' }, 'UPLOAD_NOT_FOUND'],
    [
      "unknown schemaId + another tenant's upload",
      { upload: { tenantId: 'tenant-b' } },
      { schemaId: 'nope' },
      'UPLOAD_NOT_FOUND',
    ],
    ['size mismatch + a ZIP', { file: 'zip-named.jpg', upload: { contentLength: 5 } }, {}, 'UPLOAD_SIZE_MISMATCH'],
    ['a ZIP + unknown schemaId', { file: 'zip-named.jpg' }, { schemaId: 'nope' }, 'UNSUPPORTED_FILE_TYPE'],
    ['a corrupt file + unknown schemaId', { file: 'truncated.png' }, { schemaId: 'nope' }, 'CORRUPT_FILE'],
    ['too many pages + over budget', { file: 'many-pages.pdf' }, { maxCostUsd: 0.000001 }, 'TOO_MANY_PAGES'],
    ['unknown schemaId + over budget', {}, { schemaId: 'nope', maxCostUsd: 0.000001 }, 'UNKNOWN_SCHEMA'],
    ['over budget + no credit', { tenant: { availableMicros: 0 } }, { maxCostUsd: 0.000001 }, 'BUDGET_EXCEEDED'],
  ])('%s answers %s', async (_what, arrange, patch, code) => {
    arrangeCreateRun(mocks, arrange);
    const answer = await create({ ...minimal, ...patch });
    expectError(answer, code);
  });

  test('bytes not yet PUT + unknown schemaId answers UPLOAD_INCOMPLETE', async () => {
    arrangeCreateRun(mocks);
    mocks.s3.reset();
    const answer = await create({ ...minimal, schemaId: 'nope' });
    expectError(answer, 'UPLOAD_INCOMPLETE');
  });
});

describe('credit', () => {
  test('a limited tenant whose credit cannot cover the hold answers 402 INSUFFICIENT_CREDIT; nothing is queued', async () => {
    arrangeCreateRun(mocks, { tenant: { availableMicros: 50 } });
    mocks.ddb.on(TransactWriteCommand).rejects(transactionCancelled(['None', 'ConditionalCheckFailed', 'None']));
    const answer = await create(minimal);
    const error = expectError(answer, 'INSUFFICIENT_CREDIT');
    expect(error.details).toEqual({ requiredUsd: estimateUsd(1), availableUsd: 0.00005 });
    // The one transaction was cancelled as a whole, so nothing is held; nothing is queued.
    expect(mocks.ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
    expect(mocks.sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });
});

describe('a tenant whose credit limit changes between the read and the hold', () => {
  test('is held again once with the fresh state, as a new transaction (its own ClientRequestToken)', async () => {
    arrangeCreateRun(mocks); // read as unlimited
    mocks.ddb
      .on(GetCommand, { TableName: tableName('tenants') })
      .resolvesOnce({ Item: { tenantId: 'tenant-a', heldMicros: 0, chargedMicros: 0, refundedMicros: 0 } })
      .resolves({
        Item: { tenantId: 'tenant-a', heldMicros: 0, chargedMicros: 0, refundedMicros: 0, availableMicros: 5_000_000 },
      });
    mocks.ddb
      .on(TransactWriteCommand)
      .rejectsOnce(transactionCancelled(['None', 'ConditionalCheckFailed', 'None']))
      .resolves({});
    const answer = await create(minimal);
    expect(answer.status).toBe(202);
    const [first, second] = transactions(mocks);
    expect(first?.TransactItems?.[1]?.Update?.ConditionExpression).toContain('attribute_not_exists(availableMicros)');
    expect(second?.TransactItems?.[1]?.Update?.ConditionExpression).toContain('availableMicros >= :hold');
    // The same token with other parameters would be refused by DynamoDB (IdempotentParameterMismatch).
    expect(second?.ClientRequestToken).not.toBe(first?.ClientRequestToken);
    expect(second?.ClientRequestToken?.length).toBeLessThanOrEqual(36);
  });
});

describe('Idempotency-Key', () => {
  test('a concurrent duplicate that also found the credit spent by the first is answered with the first response, not 402', async () => {
    const probe = arrangeCreateRun(mocks, { tenant: { availableMicros: estimateMicros(1) } });
    await create(minimal, { headers: { 'Idempotency-Key': 'probe' } });
    const first = probe.idempotency.get('tenant-a#probe');
    mocks.ddb.reset();
    mocks.sqs.reset();
    const world = arrangeCreateRun(mocks, { tenant: { availableMicros: estimateMicros(1) } });
    mocks.ddb.on(TransactWriteCommand).callsFake(() => {
      world.idempotency.set('tenant-a#twice', { ...first, idempotencyKey: 'tenant-a#twice' });
      // Both the tenant's credit condition and the key's failed: the first request took the credit and the key.
      throw transactionCancelled(['None', 'ConditionalCheckFailed', 'None', 'ConditionalCheckFailed']);
    });
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'twice' } });
    expect(answer.status).toBe(202);
    expect(answer.body.jobId).toBe(first?.jobId);
    expect(answer.headers['idempotent-replayed']).toBe('true');
  });

  test('the same key and body returns the stored response, marked replayed, and holds nothing twice', async () => {
    arrangeCreateRun(mocks);
    const first = await create(minimal, { headers: { 'Idempotency-Key': 'order-7' } });
    expect(first.status).toBe(202);
    // The first creation stored its response with the hold, in the same transaction.
    const items = transactions(mocks)[0]?.TransactItems ?? [];
    expect(items).toHaveLength(6);
    expect(items[3]?.Put?.TableName).toBe(tableName('idempotency'));

    mocks.s3.requests.length = 0;
    const again = await create(minimal, { headers: { 'Idempotency-Key': 'order-7' } });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers.location).toBe(`/v1/runs/${first.body.jobId}`);
    expect(mocks.ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
    expect(mocks.sqs).toHaveReceivedCommandTimes(SendMessageCommand, 1);
    expect(mocks.s3.requests).toEqual([]);
  });

  test('the same body with its keys in another order is the same request', async () => {
    arrangeCreateRun(mocks);
    const first = await create(
      { uploadId: 'upl_1', prompt: 'p', metadata: { a: 1, b: 2 } },
      { headers: { 'Idempotency-Key': 'k' } },
    );
    const again = await create(
      { metadata: { b: 2, a: 1 }, prompt: 'p', uploadId: 'upl_1' },
      { headers: { 'Idempotency-Key': 'k' } },
    );
    expect(again.body.jobId).toBe(first.body.jobId);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  test('the same key with a different body answers 409 IDEMPOTENCY_KEY_REUSED and writes nothing', async () => {
    arrangeCreateRun(mocks);
    await create(minimal, { headers: { 'Idempotency-Key': 'order-7' } });
    mocks.ddb.resetHistory();
    mocks.sqs.resetHistory();
    const answer = await create(
      { ...minimal, prompt: 'A different question' },
      { headers: { 'Idempotency-Key': 'order-7' } },
    );
    expectError(answer, 'IDEMPOTENCY_KEY_REUSED');
    expectNothingHeldOrQueued(mocks);
  });

  test('keys are per tenant: another tenant using the same key gets its own run', async () => {
    const world = arrangeCreateRun(mocks);
    const mine = await create(minimal, { headers: { 'Idempotency-Key': 'shared' } });
    mocks.ddb
      .on(GetCommand, { TableName: tableName('uploads') })
      .resolves({ Item: { ...world.upload, tenantId: 'tenant-b' } });
    const theirs = await create(minimal, { headers: { 'Idempotency-Key': 'shared' }, tenantId: 'tenant-b' });
    expect(theirs.status).toBe(202);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.jobId).not.toBe(mine.body.jobId);
  });

  test('an expired idempotency record is not replayed', async () => {
    const world = arrangeCreateRun(mocks);
    const first = await create(minimal, { headers: { 'Idempotency-Key': 'old' } });
    for (const record of world.idempotency.values()) record.expiresAtEpoch = Math.floor(Date.now() / 1000) - 1;
    const again = await create(minimal, { headers: { 'Idempotency-Key': 'old' } });
    expect(again.status).toBe(202);
    expect(again.body.jobId).not.toBe(first.body.jobId);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
  });

  test('a concurrent request with the same key that commits first is answered with its response', async () => {
    // A first request stores the fingerprint of this body; the racing winner sent the same body, so it stored the same.
    const probe = arrangeCreateRun(mocks);
    await create(minimal, { headers: { 'Idempotency-Key': 'probe' } });
    const requestHash = probe.idempotency.get('tenant-a#probe')?.requestHash;
    expect(typeof requestHash).toBe('string');

    mocks.ddb.reset();
    mocks.sqs.reset();
    const world = arrangeCreateRun(mocks);
    const winner = { jobId: 'run_winner', status: 'queued', prompt: minimal.prompt };
    mocks.ddb.on(TransactWriteCommand).callsFake(() => {
      // The other request committed its record between our read and our write: our transaction is cancelled.
      world.idempotency.set('tenant-a#race', {
        idempotencyKey: 'tenant-a#race',
        requestHash,
        jobId: 'run_winner',
        response: winner,
        expiresAtEpoch: Math.floor(Date.now() / 1000) + 3600,
      });
      throw transactionCancelled(['None', 'None', 'None', 'ConditionalCheckFailed']);
    });
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'race' } });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual(winner);
    expect(answer.headers['idempotent-replayed']).toBe('true');
    expect(mocks.sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });

  test('a key of 255 characters is accepted', async () => {
    arrangeCreateRun(mocks);
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'k'.repeat(255) } });
    expect(answer.status).toBe(202);
  });

  test('a key over 255 characters answers 400 INVALID_REQUEST and nothing is read or written', async () => {
    arrangeCreateRun(mocks);
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'k'.repeat(256) } });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues[0].path).toBe('Idempotency-Key');
    expect(mocks.ddb).not.toHaveReceivedAnyCommand();
    expectNothingHeldOrQueued(mocks);
  });
});

describe('enqueue failure after the hold', () => {
  test('answers 500 INTERNAL_ERROR and settles the run failed with the whole hold refunded', async () => {
    arrangeCreateRun(mocks);
    mocks.sqs.on(SendMessageCommand).rejects(new Error('QueueDoesNotExist: https://sqs.internal/queue-secret'));
    const answer = await create(minimal);
    expectError(answer, 'INTERNAL_ERROR');
    expect(JSON.stringify(answer.body)).not.toContain('queue-secret');

    const [created, settled, ...more] = transactions(mocks);
    expect(more).toHaveLength(0);
    const jobId = created?.TransactItems?.[0]?.Put?.Item?.jobId;
    const items = settled?.TransactItems ?? [];
    const runUpdate = items[0]?.Update;
    expect(runUpdate?.Key).toEqual({ jobId });
    expect(runUpdate?.ConditionExpression).toBe('#status = :queued AND usageCounted = :counted');
    expect(runUpdate?.ExpressionAttributeValues).toEqual(
      expect.objectContaining({
        ':status': 'failed',
        ':charged': 0,
        ':refunded': estimateMicros(1),
        ':error': expect.objectContaining({ code: 'INTERNAL_ERROR', status: 500, retryable: true }),
      }),
    );
    expect(items[1]?.Update?.ExpressionAttributeValues).toEqual({
      ':negHold': -estimateMicros(1),
      ':charged': 0,
      ':refunded': estimateMicros(1),
    });
    expect(items[2]?.Put?.Item).toEqual(
      expect.objectContaining({
        entryId: `${jobId}#settle`,
        outcome: 'failed',
        chargedMicros: 0,
        refundedMicros: estimateMicros(1),
      }),
    );
  });

  test('a retry under the same Idempotency-Key is not answered with the failed attempt as a queued run', async () => {
    arrangeCreateRun(mocks);
    mocks.sqs.on(SendMessageCommand).rejectsOnce(new Error('throttled')).resolves({ MessageId: 'm-2' });
    const failed = await create(minimal, { headers: { 'Idempotency-Key': 'retry-me' } });
    expectError(failed, 'INTERNAL_ERROR');
    const failedJobId = transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item?.jobId;

    const retried = await create(minimal, { headers: { 'Idempotency-Key': 'retry-me' } });
    expect(retried.status).toBe(202);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    // A new run that is really queued, not the one that was failed and refunded.
    expect(retried.body.jobId).not.toBe(failedJobId);
    expect(mocks.sqs).toHaveReceivedCommandTimes(SendMessageCommand, 2);
    const lastMessage = mocks.sqs.commandCalls(SendMessageCommand)[1]?.args[0].input.MessageBody ?? '{}';
    expect(JSON.parse(lastMessage)).toEqual({ jobId: retried.body.jobId });
  });

  test('an enqueue error after SQS took the message (a worker already settled the run) answers 202, and the key replays it', async () => {
    const world = arrangeCreateRun(mocks);
    mocks.sqs.on(SendMessageCommand).rejects(new Error('socket hang up'));
    let calls = 0;
    mocks.ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
      calls += 1;
      // The failing settlement finds the run final: the worker completed it from the message that did get through.
      if (calls > 1) throw transactionCancelled(['ConditionalCheckFailed', 'None', 'None']);
      const put = input.TransactItems?.[3]?.Put;
      if (put?.Item) world.idempotency.set(String(put.Item.idempotencyKey), mapsAsObjects(put.Item));
      return {};
    });
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'sent-anyway' } });
    expect(answer.status).toBe(202);
    expect(answer.body.status).toBe('queued');
    expect(mocks.ddb).not.toHaveReceivedCommand(DeleteCommand);

    // A retry under the same key is the same run, not a second one charged again.
    const retried = await create(minimal, { headers: { 'Idempotency-Key': 'sent-anyway' } });
    expect(retried.body.jobId).toBe(answer.body.jobId);
    expect(retried.headers['idempotent-replayed']).toBe('true');
  });

  test('an enqueue error whose compensating settlement fails too answers 202: the run stays queued for the reconciler', async () => {
    // A 500 here would be wrong: the run keeps its hold and the reconciler sends its message, so it is processed and
    // charged; a client told 500 would retry and pay for a second run.
    const world = arrangeCreateRun(mocks);
    mocks.sqs.on(SendMessageCommand).rejects(new Error('throttled'));
    let calls = 0;
    mocks.ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
      calls += 1;
      if (calls > 1) throw new Error('ProvisionedThroughputExceededException');
      const put = input.TransactItems?.[3]?.Put;
      if (put?.Item) world.idempotency.set(String(put.Item.idempotencyKey), mapsAsObjects(put.Item));
      return {};
    });
    const answer = await create(minimal, { headers: { 'Idempotency-Key': 'double-fault' } });
    expect(answer.status).toBe(202);
    expect(answer.body.status).toBe('queued');
    expect(calls).toBe(2);
    // The key still names this run: a retry replays it rather than creating (and charging) a second one.
    expect(mocks.ddb).not.toHaveReceivedCommand(DeleteCommand);
    const retried = await create(minimal, { headers: { 'Idempotency-Key': 'double-fault' } });
    expect(retried.body.jobId).toBe(answer.body.jobId);
  });

  test("a limited tenant's refunded hold goes back to its available credit", async () => {
    arrangeCreateRun(mocks, { tenant: { availableMicros: 1_000 } });
    mocks.sqs.on(SendMessageCommand).rejects(new Error('throttled'));
    const answer = await create(minimal);
    expectError(answer, 'INTERNAL_ERROR');
    const settle = transactions(mocks)[1]?.TransactItems?.[1]?.Update;
    expect(settle?.UpdateExpression).toContain('availableMicros :refunded');
  });
});
