/**
 * A run whose creation accepted an estimate never fails because of that estimate (contract v1.2 §5): the worker runs
 * the step and the facts the estimate priced (shared/worker/steps.ts), or the cheaper step when the dearer one would
 * cross the spend limit, and the estimate's own attempt is never skipped for the limit (shared/worker/attempts.ts).
 * Runs are planned exactly as creation plans them (planRun on the inspected facts, one provider as VISION_PROVIDERS
 * would give it) and processed through the worker with scripted adapters and DynamoDB/S3 mocked at the client.
 */
import { S3Client } from '@aws-sdk/client-s3';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import * as mupdf from 'mupdf';
import { type ProviderFakes, startProviderFakes } from '../../bench/provider-fakes.js';
import { createWorkerHandler } from '../../functions/worker.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { inspectUpload } from '../../shared/inspect/index.js';
import { likelyStep, predictAttempt } from '../../shared/planning/estimate.js';
import { planRun } from '../../shared/planning/plan.js';
import { localCost, priceFor } from '../../shared/pricing/pricing.js';
import { catalog } from '../../shared/providers/catalog.js';
import { localProvider, shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import { createOpenAIProvider } from '../../shared/providers/openai/adapter.js';
import { calibrationKey } from '../../shared/providers/predict.js';
import type { ProviderOutput } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import { clearCalibrationCache, tenantItemKey } from '../../shared/store/calibration.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { ProviderId, Step, TaskSpec } from '../../shared/task.js';
import { failing, type ScriptedAdapter, succeeding } from '../support/adapters.js';
import { fixture, mapsAsObjects, runItem, serveObject, tableName } from '../support/aws.js';
import { lambdaContext, sqsEvent } from '../support/events.js';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);

const INVOICE: TaskSpec = buildTask({
  prompt: 'Extract the invoice',
  outputFormat: 'json',
  schemaId: 'invoice',
  schema: registry.get('invoice'),
});
const TRANSCRIBE: TaskSpec = buildTask({ prompt: 'Transcribe the document', outputFormat: 'text' });

beforeEach(() => {
  ddb.reset();
  s3.reset();
  // The worker's calibration read is cached for a minute: each test arranges its own.
  clearCalibrationCache();
});

const LIMITS = { imageMaxBytes: 20e6, imageMaxPixels: 40e6, pdfMaxBytes: 100e6, pdfMaxPages: 1000 };

async function factsOf(bytes: Uint8Array): Promise<FileFacts> {
  return inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.byteLength, LIMITS);
}

/** A queued run of `bytes`, planned and held as creation plans it with VISION_PROVIDERS set to `providers`. */
async function plannedRun(bytes: Uint8Array, task: TaskSpec, providers: ProviderId[]): Promise<RunRecord> {
  const file = await factsOf(bytes);
  const plan = planRun(file, task, providers, { explicitOrder: true });
  return runItem({
    outputFormat: task.outputFormat,
    schemaId: task.schemaId,
    task,
    file,
    strategy: plan.strategy,
    candidates: plan.candidates,
    estimateMicros: plan.estimateMicros,
    ...(plan.chunkPages !== undefined
      ? { chunkPages: plan.chunkPages, progress: { pagesTotal: file.pages, pagesDone: 0 } }
      : {}),
  });
}

function arrange(run: RunRecord, bytes: Uint8Array, calibration: Record<string, unknown>[] = []): void {
  ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: run.jobId } }).resolves({ Item: run });
  ddb.on(UpdateCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
  ddb.on(QueryCommand).resolves({ Items: [] });
  ddb.on(BatchGetCommand).resolves({ Responses: { [tableName('calibration')]: calibration } });
  serveObject(s3, bytes, run.objectKey);
}

async function deliver(adapters: Partial<Record<ProviderId, ScriptedAdapter>>): Promise<void> {
  await createWorkerHandler({ adapters })(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(60_000));
}

/** The settlement's run update (the one transaction that sets a status): its status, attempts and price. */
function settled(): { status: string; attempts: Array<Record<string, unknown>>; priceMicros: number } {
  const settlements = ddb
    .commandCalls(TransactWriteCommand)
    .map((c) => mapsAsObjects(c.args[0].input) as TransactWriteCommandInput)
    .map((input) => input.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {})
    .filter((values) => values[':status'] !== undefined);
  expect(settlements).toHaveLength(1);
  const values = settlements[0] ?? {};
  return { status: values[':status'], attempts: values[':attempts'], priceMicros: values[':usage']?.priceMicros };
}

/** A language model's answer whose cost is what the estimate predicted for `step` on the run's facts. */
function answering(provider: ProviderId, run: RunRecord, step: Step, result: Record<string, unknown> = {}) {
  const costMicros = predictAttempt(provider, run.file, run.task, step)?.costMicros ?? 1;
  const output: Partial<ProviderOutput> = { result, usage: { billableUnits: run.file.pages, costMicros } };
  return succeeding(provider, output);
}

const steps = (adapter: ScriptedAdapter): Step[] => adapter.calls.map((c) => c.input.step);
const texts = (adapter: ScriptedAdapter): Array<string | undefined> => adapter.calls.map((c) => c.input.documentText);

/**
 * A PDF built here: each page either lines of text (Helvetica, `size` points, a line every 1.25 x size from the top)
 * or a small raster image alone on it.
 */
function pdfOf(pages: Array<string[] | 'image'>, size = 12): Uint8Array {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  for (const page of pages) {
    if (page === 'image') {
      // A 64 x 64 grey square: a few hundred bytes, so the file still looks like text to the estimate.
      const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceGray, [0, 0, 64, 64], false);
      pixmap.clear(128);
      const image = doc.addImage(new mupdf.Image(pixmap));
      doc.insertPage(
        -1,
        doc.addPage([0, 0, 612, 792], 0, { XObject: { Im1: image } }, 'q 300 0 0 300 72 400 cm /Im1 Do Q'),
      );
    } else {
      const ops = page.map((line, i) => `BT /F1 ${size} Tf 36 ${760 - i * size * 1.25} Td (${line}) Tj ET`).join('\n');
      doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, { Font: { F1: font } }, ops));
    }
  }
  return doc.saveToBuffer('compress=yes,garbage=yes').asUint8Array();
}

describe("issue #26's invoice: a text PDF whose second page is two short lines", () => {
  const SHORT = fixture('short-page.pdf');

  test('openai alone: the estimate priced `analyze`, the worker asks openai once to analyze both pages and completes', async () => {
    const run = await plannedRun(SHORT, INVOICE, ['openai']);
    // The estimate took the file for text: the analysis of its text is what was held.
    expect(run.estimateMicros).toBeLessThan(predictAttempt('openai', run.file, INVOICE, 'vision')?.costMicros ?? 0);
    arrange(run, SHORT);
    const openai = answering('openai', run, 'analyze', { invoiceNumber: 'INV-2041', totalDue: 1250 });
    await deliver({ openai });
    const { status, attempts, priceMicros } = settled();
    expect(status).toBe('completed');
    expect(attempts).toEqual([expect.objectContaining({ provider: 'openai', step: 'analyze', outcome: 'succeeded' })]);
    expect(steps(openai)).toEqual(['analyze']);
    expect(texts(openai)[0]).toContain('ACME SUPPLY CO');
    expect(texts(openai)[0]).toContain('Terms net 30');
    expect(priceMicros).toBeLessThanOrEqual(run.estimateMicros);
  });

  test('anthropic alone: analyzed as text too, not read as page images at 1.3x the estimate', async () => {
    const run = await plannedRun(SHORT, INVOICE, ['anthropic']);
    arrange(run, SHORT);
    const anthropic = answering('anthropic', run, 'analyze');
    await deliver({ anthropic });
    expect(settled().status).toBe('completed');
    expect(steps(anthropic)).toEqual(['analyze']);
  });

  test('in page chunks (text output, a page a call), the short page is analyzed as text like the others', async () => {
    const run = await plannedRun(SHORT, TRANSCRIBE, ['openai']);
    expect(run.chunkPages).toBe(1);
    arrange(run, SHORT);
    const openai = answering('openai', { ...run, file: { ...run.file, pages: 1 } }, 'analyze', { text: 'page' });
    await deliver({ openai });
    expect(settled().status).toBe('completed');
    expect(steps(openai)).toEqual(['analyze', 'analyze']);
    expect(texts(openai).sort()).toEqual([expect.stringContaining('ACME SUPPLY CO'), 'Terms net 30\n\nPage 2'].sort());
    // Each chunk's provider is given the chunk's facts as the estimate saw them: its share of the file's bytes, not
    // the size of the grafted one-page PDF (which carries the file's fonts and objects again).
    const share = Math.ceil(run.file.sizeBytes / 2);
    expect(openai.calls.map((c) => c.input.facts)).toEqual([
      expect.objectContaining({ pages: 1, sizeBytes: share }),
      expect.objectContaining({ pages: 1, sizeBytes: share }),
    ]);
  });
});

describe('the local provider reads what the estimate priced', () => {
  afterAll(async () => shutdownLocalProvider());

  test("issue #26's invoice is read from its text layer, both pages at the text-layer price, as estimated", async () => {
    const bytes = fixture('short-page.pdf');
    const facts = await factsOf(bytes);
    const predicted = predictAttempt('local', facts, INVOICE, 'vision')?.costMicros;
    const output = await localProvider.invoke(
      { bytes, facts, task: INVOICE, step: 'vision' },
      { signal: new AbortController().signal, deadlineMs: Date.now() + 30_000 },
    );
    expect(output.usage).toEqual({ billableUnits: 2, costMicros: 2 * localCost.textLayerPageMicros });
    expect(output.usage.costMicros).toBe(predicted);
    expect(output.documentText).toContain('Terms net 30');
  });
});

describe('a PDF estimated as text with a page that has no text at all', () => {
  const MIXED = pdfOf([['INVOICE INV-7', 'Amount due 10.00 USD', 'Vendor: Globex Ltd'], 'image']);

  test('the file is small enough to be estimated as text', async () => {
    const facts = await factsOf(MIXED);
    expect(facts.sizeBytes / facts.pages).toBeLessThanOrEqual(8 * 1024);
    expect(likelyStep('openai', facts)).toBe('analyze');
  });

  test('when reading the pages would cross the spend limit, the model analyzes the text there is (the priced step)', async () => {
    const run = await plannedRun(MIXED, INVOICE, ['openai']);
    arrange(run, MIXED);
    const openai = answering('openai', run, 'analyze');
    await deliver({ openai });
    expect(settled().status).toBe('completed');
    expect(steps(openai)).toEqual(['analyze']);
    expect(texts(openai)[0]).toContain('INVOICE INV-7');
  });

  test('when reading the pages fits the spend limit, the model reads them (the scan is not lost)', async () => {
    const run = await plannedRun(MIXED, INVOICE, ['openai']);
    // A hold large enough for the vision pass within the limit (2x).
    const vision = predictAttempt('openai', run.file, INVOICE, 'vision')?.costMicros ?? 0;
    const roomy = { ...run, estimateMicros: vision };
    arrange(roomy, MIXED);
    const openai = answering('openai', roomy, 'vision');
    await deliver({ openai });
    expect(settled().status).toBe('completed');
    expect(steps(openai)).toEqual(['vision']);
    expect(texts(openai)).toEqual([undefined]);
  });
});

describe('a text PDF far denser than the typical page the estimate priced', () => {
  const SENTENCE =
    'The supplier shall deliver the goods described in Schedule 2 within thirty days of each purchase order, and any ' +
    'delay not caused by the buyer entitles the buyer to a reduction of two percent of the price per week of delay. ';
  /** Twelve pages of 6-point print, about 12,000 characters each (a typical page has about 2,000). */
  const dense = () =>
    pdfOf(
      Array.from({ length: 12 }, () => Array.from({ length: 96 }, (_, i) => SENTENCE.slice(i % 7, 125 + (i % 7)))),
      6,
    );
  let fakes: ProviderFakes;
  beforeAll(async () => {
    fakes = await startProviderFakes();
  });
  afterAll(async () => fakes.close());

  test('openai alone: the real adapter is let spend its own prediction, and the run completes (the excess absorbed)', async () => {
    const bytes = dense();
    const run = await plannedRun(bytes, INVOICE, ['openai']);
    expect(likelyStep('openai', run.file)).toBe('analyze');
    arrange(run, bytes);
    fakes.use({
      answer: { invoiceNumber: null, totalDue: null },
      textOutput: false,
      pages: 2,
      pageLines: [],
      expense: [],
    });
    fakes.take();
    const openai = createOpenAIProvider({
      env: { OPENAI_API_KEY: 'sk-dense-fake', OPENAI_BASE_URL: `${fakes.url}/v1` },
    });
    await createWorkerHandler({ adapters: { openai } })(
      sqsEvent([{ body: '{"jobId":"run_1"}' }]),
      lambdaContext(60_000),
    );
    const { status, attempts, priceMicros } = settled();
    expect({ status, attempts }).toEqual({
      status: 'completed',
      attempts: [expect.objectContaining({ provider: 'openai', step: 'analyze', outcome: 'succeeded' })],
    });
    expect(fakes.take().requests).toBe(1);
    // Denser than priced: its price is over the spend limit the estimate alone would have set.
    expect(priceMicros).toBeGreaterThan(2 * run.estimateMicros);
  });
});

describe('an OCR-then-analyze chain', () => {
  test('its analysis is predicted for the text the OCR step really read: a short reading lets a dearer fallback run', async () => {
    const scan = fixture('scanned.pdf');
    const file = await factsOf(scan);
    const textractCost = catalog.textract?.stepCostMicros(file, INVOICE, 'ocr') ?? Number.NaN;
    const read = 'ACME SUPPLY CO INVOICE INV-2041 AMOUNT DUE 1250.00 USD';
    const analysis = (chars?: number) =>
      predictAttempt(
        'openai',
        file,
        INVOICE,
        'analyze',
        undefined,
        chars === undefined ? {} : { documentTextChars: chars },
      )?.costMicros ?? Number.NaN;
    // The spend limit leaves openai's analysis of the short reading room after Textract's, not of a typical page.
    expect(analysis(read.length)).toBeLessThan(analysis());
    const run = runItem({
      task: INVOICE,
      schemaId: 'invoice',
      file,
      ocrCandidates: ['textract'],
      candidates: ['anthropic', 'openai'],
      estimateMicros: Math.floor((priceFor(textractCost + analysis()) - 1) / 2),
    });
    arrange(run, scan);
    const textract = succeeding('textract', {
      result: { text: read },
      documentText: read,
      usage: { billableUnits: 1, costMicros: textractCost },
    });
    const openai = answering('openai', run, 'analyze');
    await deliver({ textract, anthropic: failing('anthropic', 'server'), openai });
    expect(settled().attempts.map((a) => `${a.provider}/${a.step}/${a.outcome}`)).toEqual([
      'textract/ocr/succeeded',
      'anthropic/analyze/failed',
      'openai/analyze/succeeded',
    ]);
  });
});

describe("the estimate's attempt is never skipped for the spend limit", () => {
  test('calibration learnt since creation making the attempt look dearer than the limit does not skip it', async () => {
    const receipt = fixture('receipt.png');
    const task = buildTask({
      prompt: 'Extract',
      outputFormat: 'json',
      schemaId: 'receipt',
      schema: registry.get('receipt'),
    });
    const run = await plannedRun(receipt, task, ['openai']);
    // Since creation the key's factors reached their ceiling (4x): the worker's prediction is ~4x the estimate.
    const key = calibrationKey('openai', task, 'vision');
    const high = Array.from({ length: 20 }, () => 10);
    arrange(run, receipt, [{ key: tenantItemKey(run.tenantId, key), input: high, output: high, version: 1 }]);
    const openai = answering('openai', run, 'vision');
    await deliver({ openai });
    expect(settled().status).toBe('completed');
    expect(steps(openai)).toEqual(['vision']);
  });
});
