/**
 * POST /v1/estimates (contract v1.2 §4): both prices of a run's body, for an upload (inspected as creation inspects
 * it) or a declared file, and nothing created or held. OpenAI is a candidate (VISION_PROVIDERS) so that the batch
 * price differs from the standard one; the uploaded bytes are real fixtures read through ranged GETs.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createRun } from '../../functions/create-run.js';
import { handler } from '../../functions/estimates.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { arrangeCreateRun, type Mocks } from '../support/create-run.js';
import { useFakeS3 } from '../support/fake-s3.js';

// Read at first use: set before any request is handled.
process.env.VISION_PROVIDERS = 'openai,local';

const mocks: Mocks = {
  ddb: mockClient(DynamoDBDocumentClient),
  s3: useFakeS3(),
  sqs: mockClient(SQSClient),
};

beforeEach(() => {
  mocks.ddb.reset();
  mocks.sqs.reset();
});

const estimate = (body: Record<string, unknown>) =>
  call(handler, { method: 'POST', path: '/v1/estimates', body, auth: { tenantId: 'tenant-a' } });

const RECEIPT_IMAGE = { type: 'image/png', sizeBytes: 13_775, width: 800, height: 834 };
const task = { prompt: 'Extract the receipt', schemaId: 'receipt' };

/** Nothing was written anywhere and nothing was queued. */
function expectNothingWritten(): void {
  expect(mocks.ddb).not.toHaveReceivedCommand(PutCommand);
  expect(mocks.ddb).not.toHaveReceivedCommand(UpdateCommand);
  expect(mocks.ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  expect(mocks.sqs).not.toHaveReceivedCommand(SendMessageCommand);
}

/** The batch price is half the standard one, give or take the last micro-dollar of each rounding. */
function expectHalf(standardUsd: number, batchUsd: number): void {
  expect(Math.abs(Math.round(batchUsd * 1e6) * 2 - Math.round(standardUsd * 1e6))).toBeLessThanOrEqual(3);
}

describe('both prices', () => {
  test('for a declared image: standard, batch at half (OpenAI Batch is 50 % off), within 24 hours', async () => {
    const answer = await estimate({ ...task, file: RECEIPT_IMAGE });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      standard: { estimatedCostUsd: expect.any(Number) },
      batch: { estimatedCostUsd: expect.any(Number), expiresWithinHours: 24 },
      file: { type: 'image/png', sizeBytes: 13_775, pages: 1, width: 800, height: 834 },
    });
    expect(answer.body.standard.estimatedCostUsd).toBeGreaterThan(0);
    expectHalf(answer.body.standard.estimatedCostUsd, answer.body.batch.estimatedCostUsd);
    expectNothingWritten();
  });

  test('for an upload: its inspected facts, and the standard price is what POST /v1/runs holds for it', async () => {
    arrangeCreateRun(mocks, { file: 'receipt.png' });
    const body = { uploadId: 'upl_1', ...task };
    const answer = await estimate(body);
    expect(answer.status).toBe(200);
    expect(answer.body.file).toEqual({
      type: 'image/png',
      sizeBytes: expect.any(Number),
      pages: 1,
      width: 800,
      height: 834,
    });
    expectNothingWritten();

    const created = await call(createRun, { method: 'POST', path: '/v1/runs', body, auth: { tenantId: 'tenant-a' } });
    expect(created.status).toBe(202);
    expect(created.body.estimatedCostUsd).toBe(answer.body.standard.estimatedCostUsd);
  });

  test('a batch run is held at the batch price, marked batch and promised an end 24 hours after creation', async () => {
    arrangeCreateRun(mocks, { file: 'receipt.png' });
    const body = { uploadId: 'upl_1', ...task };
    const prices = await estimate(body);
    const created = await call(createRun, {
      method: 'POST',
      path: '/v1/runs',
      body: { ...body, priority: 'batch' },
      auth: { tenantId: 'tenant-a' },
    });
    expect(created.status).toBe(202);
    expect(created.body.estimatedCostUsd).toBe(prices.body.batch.estimatedCostUsd);
    expect(created.body.estimatedCostUsd).toBeLessThan(prices.body.standard.estimatedCostUsd);
    expect(created.body.priority).toBe('batch');
    expect(Date.parse(created.body.expiresAt) - Date.parse(created.body.createdAt)).toBe(24 * 3_600_000);
    expect(created.body.progress).toEqual({ pagesTotal: 1, pagesDone: 0, stage: 'waiting' });
    // The run record carries both, and its hold is the batch estimate.
    const tx = mocks.ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input;
    const run = tx?.TransactItems?.[0]?.Put?.Item;
    expect(run).toMatchObject({ priority: 'batch', expiresAt: created.body.expiresAt });
    expect(run?.estimateMicros).toBe(Math.round(prices.body.batch.estimatedCostUsd * 1e6));
  });

  test('a standard run carries neither priority nor expiresAt', async () => {
    arrangeCreateRun(mocks, { file: 'receipt.png' });
    const body = { uploadId: 'upl_1', ...task, priority: 'standard' };
    const created = await call(createRun, { method: 'POST', path: '/v1/runs', body, auth: { tenantId: 'tenant-a' } });
    expect(created.status).toBe(202);
    expect(created.body.priority).toBeUndefined();
    expect(created.body.expiresAt).toBeUndefined();
  });

  test("a run's whole body is accepted as it is; budget and confirmation change no price", async () => {
    const plain = await estimate({ ...task, file: RECEIPT_IMAGE });
    const withRunFields = await estimate({
      ...task,
      file: RECEIPT_IMAGE,
      workflow: 'expenses',
      metadata: { batch: 'november' },
      maxCostUsd: 0.000001,
      confirmCost: true,
      priority: 'batch',
    });
    expect(withRunFields.status).toBe(200);
    expect(withRunFields.body).toEqual(plain.body);
  });

  test("a PDF declared with a text layer is read as text, cheaper than the same PDF's page images", async () => {
    const pdf = { type: 'application/pdf', sizeBytes: 400_000, pages: 4 };
    const text = await estimate({ ...task, file: { ...pdf, textLayer: true } });
    const scan = await estimate({ ...task, file: { ...pdf, textLayer: false } });
    expect(text.status).toBe(200);
    expect(scan.status).toBe(200);
    expect(text.body.standard.estimatedCostUsd).toBeLessThan(scan.body.standard.estimatedCostUsd);
    expectHalf(scan.body.standard.estimatedCostUsd, scan.body.batch.estimatedCostUsd);
  });
});

describe('refused as a run would be, with nothing written', () => {
  test.each<[string, Record<string, unknown>]>([
    ['both uploadId and file', { uploadId: 'upl_1', file: RECEIPT_IMAGE }],
    ['neither uploadId nor file', {}],
    ['an image of two pages', { file: { ...RECEIPT_IMAGE, pages: 2 } }],
    ['a PDF with a width', { file: { type: 'application/pdf', sizeBytes: 1000, width: 10 } }],
    // One side alone would escape the pixel limit.
    ['an image with a width alone', { file: { type: 'image/png', sizeBytes: 1000, width: 30_000_000 } }],
    ['an image with a height alone', { file: { type: 'image/png', sizeBytes: 1000, height: 30_000_000 } }],
    ['a text layer on an image', { file: { ...RECEIPT_IMAGE, textLayer: true } }],
    ['an unsupported type', { file: { type: 'image/gif', sizeBytes: 1000 } }],
    ['an unknown priority', { file: RECEIPT_IMAGE, priority: 'urgent' }],
    ['an unknown field', { file: RECEIPT_IMAGE, colour: 'red' }],
  ])('400 INVALID_REQUEST for %s', async (_case, body) => {
    expectError(await estimate({ ...task, ...body }), 'INVALID_REQUEST');
    expectNothingWritten();
  });

  test('the limits of an upload: size, pages, pixels', async () => {
    expectError(
      await estimate({ ...task, file: { type: 'image/jpeg', sizeBytes: 21 * 1024 * 1024 } }),
      'FILE_TOO_LARGE',
    );
    expectError(
      await estimate({ ...task, file: { type: 'application/pdf', sizeBytes: 1_000_000, pages: 1001 } }),
      'TOO_MANY_PAGES',
    );
    const bomb = await estimate({
      ...task,
      file: { type: 'image/png', sizeBytes: 1000, width: 20_000, height: 20_000 },
    });
    expect(expectError(bomb, 'CORRUPT_FILE').details).toMatchObject({ reason: 'pixel_limit' });
    expectNothingWritten();
  });

  test('an upload that is not the tenant’s, and an unknown schema', async () => {
    arrangeCreateRun(mocks, { upload: null });
    expectError(await estimate({ ...task, uploadId: 'upl_missing' }), 'UPLOAD_NOT_FOUND');
    expectError(await estimate({ prompt: 'x', schemaId: 'no-such-schema', file: RECEIPT_IMAGE }), 'UNKNOWN_SCHEMA');
    expectNothingWritten();
  });
});
