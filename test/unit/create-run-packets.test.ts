/**
 * POST /v1/runs for packets (contract-v1.2 §3): `split: true`, `schemaIds`, `schemaId: "auto"` accepted, recorded on
 * the run and held at classification + extraction; bad combinations refused with the contract's errors, nothing held.
 * Same world as create-run.test.ts (local provider only, real fixtures through ranged reads).
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/create-run.js';
import { registry } from '../../shared/registry/registry.js';
import { call, expectError } from '../support/api.js';
import { arrangeCreateRun, expectNothingHeldOrQueued, type Mocks, transactions } from '../support/create-run.js';
import { useFakeS3 } from '../support/fake-s3.js';
import { estimateUsd, textLayerEstimateMicros } from '../support/pricing.js';

const mocks: Mocks = {
  ddb: mockClient(DynamoDBDocumentClient),
  s3: useFakeS3(),
  sqs: mockClient(SQSClient),
};

beforeEach(() => {
  mocks.ddb.reset();
  mocks.sqs.reset();
});

function create(body: Record<string, unknown>) {
  return call(handler, {
    method: 'POST',
    path: '/v1/runs',
    body,
    headers: {},
    auth: { tenantId: 'tenant-a' },
  });
}

const minimal = { uploadId: 'upl_1', prompt: 'Extract every document' };
const storedRun = () => transactions(mocks)[0]?.TransactItems?.[0]?.Put?.Item;

describe('a packet run is accepted', () => {
  test('split: true on a PDF records the packet with every registry schema and holds classification + extraction', async () => {
    arrangeCreateRun(mocks, { file: 'text.pdf' });
    const answer = await create({ ...minimal, split: true });
    expect(answer.status).toBe(202);
    expect(storedRun()?.packet).toEqual({ mode: 'split', schemaIds: [...registry.keys()] });
    // Its progress counts the pages classified (their checkpoints), from none; it is not run in chunks.
    expect(storedRun()?.progress).toEqual({ pagesTotal: 2, pagesDone: 0 });
    expect(storedRun()?.chunkPages).toBeUndefined();
    // local prices a text-layer page the same for any task: classifying the 2 pages and extracting them, each priced.
    expect(answer.body.estimatedCostUsd).toBe((2 * textLayerEstimateMicros(2)) / 1_000_000);
    expect(answer.body.schemaId).toBeNull();
  });

  test('schemaIds narrows the schemas a document may be', async () => {
    arrangeCreateRun(mocks, { file: 'text.pdf' });
    const answer = await create({ ...minimal, split: true, schemaIds: ['invoice', 'receipt'] });
    expect(answer.status).toBe(202);
    expect(storedRun()?.packet).toEqual({ mode: 'split', schemaIds: ['invoice', 'receipt'] });
  });

  test('schemaId "auto" classifies a whole image first: recorded as auto, echoed as sent', async () => {
    arrangeCreateRun(mocks);
    const answer = await create({ ...minimal, schemaId: 'auto', schemaIds: ['receipt', 'business_card'] });
    expect(answer.status).toBe(202);
    expect(answer.body.schemaId).toBe('auto');
    expect(storedRun()?.packet).toEqual({ mode: 'auto', schemaIds: ['receipt', 'business_card'] });
    expect(storedRun()?.task.fields).toBeNull();
    // One OCR'd page, classified and extracted.
    expect(answer.body.estimatedCostUsd).toBe(2 * estimateUsd(1));
  });

  test.each([
    ['split', { split: true }, 'split'],
    ['schemaId "auto"', { schemaId: 'auto' }, 'auto'],
  ])('%s at batch priority is a batch run, due in 24 hours', async (_what, patch, mode) => {
    arrangeCreateRun(mocks, { file: 'text.pdf' });
    const answer = await create({ ...minimal, ...patch, priority: 'batch' });
    expect(answer.status).toBe(202);
    expect(answer.body.priority).toBe('batch');
    expect(Date.parse(answer.body.expiresAt) - Date.parse(answer.body.createdAt)).toBe(24 * 3_600_000);
    expect(storedRun()?.priority).toBe('batch');
    expect(storedRun()?.packet?.mode).toBe(mode);
  });

  test('an ordinary run records no packet', async () => {
    arrangeCreateRun(mocks);
    expect((await create({ ...minimal, schemaId: 'receipt' })).status).toBe(202);
    expect(storedRun()?.packet).toBeUndefined();
  });
});

describe('a bad packet request holds nothing and queues nothing', () => {
  afterEach(() => {
    expectNothingHeldOrQueued(mocks);
  });

  test('split on an image answers 400 INVALID_REQUEST naming split', async () => {
    arrangeCreateRun(mocks);
    const error = expectError(await create({ ...minimal, split: true }), 'INVALID_REQUEST');
    expect(error.details.reason).toBe('split_needs_pdf');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toEqual(['split']);
  });

  test('an unknown id in schemaIds answers 400 UNKNOWN_SCHEMA with the known ids', async () => {
    arrangeCreateRun(mocks, { file: 'text.pdf' });
    const error = expectError(
      await create({ ...minimal, split: true, schemaIds: ['invoice', 'payslip'] }),
      'UNKNOWN_SCHEMA',
    );
    expect(error.details).toEqual({ schemaId: 'payslip', knownSchemaIds: [...registry.keys()] });
  });

  test.each([
    ['split with a schemaId', { split: true, schemaId: 'invoice' }, 'split'],
    ['split with an inline schema', { split: true, schema: { label: 'X', expectedFields: ['a'] } }, 'split'],
    ['schemaIds without split or auto', { schemaIds: ['invoice'] }, 'schemaIds'],
    ['schemaIds with split: false', { split: false, schemaIds: ['invoice'] }, 'schemaIds'],
    ['an empty schemaIds', { split: true, schemaIds: [] }, 'schemaIds'],
    ['a repeated id in schemaIds', { split: true, schemaIds: ['invoice', 'invoice'] }, 'schemaIds'],
    ['split with text output', { split: true, outputFormat: 'text' }, 'outputFormat'],
    ['schemaId "auto" with text output', { schemaId: 'auto', outputFormat: 'text' }, 'outputFormat'],
    ['a string split', { split: 'yes' }, 'split'],
  ])('%s answers 400 INVALID_REQUEST naming the field', async (_what, patch, path) => {
    arrangeCreateRun(mocks, { file: 'text.pdf' });
    const error = expectError(await create({ ...minimal, ...patch }), 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path.split('.')[0])).toContain(path);
  });
});
