/**
 * A run in page chunks through the worker (functions/worker.ts → shared/worker/chunked.ts), with scripted adapters
 * and DynamoDB/S3 mocked at the client: each page asked once and checkpointed, a resumed run asking only for the pages
 * no checkpoint covers, a cut chunk split and asked again, a cut page failing the run, and the run's concurrency bound.
 */
import { S3Client } from '@aws-sdk/client-s3';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import * as mupdf from 'mupdf';
import { createWorkerHandler } from '../../functions/worker.js';
import { chunkedCostMicros } from '../../shared/planning/chunks.js';
import { chainedPlan, planRun } from '../../shared/planning/plan.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../../shared/providers/types.js';
import { viewResult } from '../../shared/runs/run-view.js';
import type { ChunkCheckpoint } from '../../shared/store/chunks.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure, type TaskSpec } from '../../shared/task.js';
import { fixture, mapsAsObjects, runItem, serveObject, tableName } from '../support/aws.js';
import { lambdaContext, sqsEvent } from '../support/events.js';

// Read at first use (shared/config.ts): three chunks of a run at once, so that the bound is visible with 20 pages.
process.env.SERVICE_RUN_CONCURRENCY = '3';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const PDF = fixture('twenty-pages.pdf');
const TEXT_TASK: TaskSpec = {
  prompt: 'Transcribe',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const LIST_TASK: TaskSpec = {
  prompt: 'List the sections',
  outputFormat: 'json',
  fields: [
    { name: 'title', type: 'string', required: false },
    { name: 'sections', type: 'array', required: false },
  ],
  schemaId: null,
  schemaLabel: 'Sections',
  promptScaffold: null,
};
const FACTS = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: PDF.byteLength, pages: 20 };

beforeEach(() => {
  ddb.reset();
  s3.reset();
});

/** A queued run of the 20-page fixture, planned (and held) as creation plans it, with `chunkPages` overridable. */
function chunkedRun(task: TaskSpec, overrides: Partial<RunRecord> = {}): RunRecord {
  const plan = planRun(FACTS, task, ['local'], { explicitOrder: true });
  return runItem({
    outputFormat: task.outputFormat,
    task,
    file: FACTS,
    candidates: plan.candidates,
    estimateMicros: plan.estimateMicros,
    ...(plan.chunkPages !== undefined ? { chunkPages: plan.chunkPages } : {}),
    progress: { pagesTotal: 20, pagesDone: 0 },
    ...overrides,
  });
}

function arrange(run: RunRecord, checkpoints: ChunkCheckpoint[] = [], bytes: Uint8Array = PDF): void {
  ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: run.jobId } }).resolves({ Item: run });
  ddb.on(UpdateCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
  ddb.on(QueryCommand, { TableName: tableName('runChunks') }).resolves({
    Items: checkpoints.map((c) => ({ ...c, jobId: run.jobId, answer: JSON.stringify(c.output), expiresAtEpoch: 1 })),
  });
  serveObject(s3, bytes, run.objectKey);
}

/** A `local` adapter that answers each chunk by `answer`, recording the pages it was asked for and how many at once. */
function pagesAdapter(answer: (input: ProviderInput) => ProviderOutput | ProviderFailure) {
  const asked: Array<{ first: number; last: number; pages: number }> = [];
  let active = 0;
  let peak = 0;
  const adapter: ProviderAdapter = {
    id: 'local',
    async invoke(input) {
      active += 1;
      peak = Math.max(peak, active);
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const range = input.pages ?? { first: 1, last: input.facts.pages };
        asked.push({ ...range, pages: input.facts.pages });
        const out = answer(input);
        if (out instanceof ProviderFailure) throw out;
        return out;
      } finally {
        active -= 1;
      }
    },
  };
  return { adapter, asked, peak: () => peak };
}

const pageText = (input: ProviderInput): ProviderOutput => ({
  result: { text: `page ${input.pages?.first}` },
  usage: { billableUnits: 1, costMicros: 10 },
});

async function deliver(adapter: ProviderAdapter) {
  const handler = createWorkerHandler({ adapters: { local: adapter } });
  return handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(120_000));
}

function transactions(): TransactWriteCommandInput[] {
  return ddb.commandCalls(TransactWriteCommand).map((c) => mapsAsObjects(c.args[0].input));
}

/** The settlement's update of the run (the transaction that books a `settle` ledger entry). */
function settledRun(): Record<string, unknown> {
  const settles = transactions().filter((t) =>
    t.TransactItems?.some((i) => (i.Put?.Item as { kind?: string } | undefined)?.kind === 'settle'),
  );
  expect(settles).toHaveLength(1);
  const update = settles[0]?.TransactItems?.[0]?.Update;
  return update?.ExpressionAttributeValues ?? {};
}

function checkpointPuts(): Array<Record<string, unknown>> {
  return transactions()
    .flatMap((t) => t.TransactItems ?? [])
    .filter((i) => i.Put?.TableName === tableName('runChunks'))
    .map((i) => i.Put?.Item as Record<string, unknown>);
}

test('a 20-page text run asks for every page once, checkpoints each, and merges {text, pages} in page order', async () => {
  const run = chunkedRun(TEXT_TASK);
  expect(run.chunkPages).toBe(1);
  arrange(run);
  const fake = pagesAdapter(pageText);
  const response = await deliver(fake.adapter);
  expect(response.batchItemFailures).toEqual([]);

  expect(fake.asked.map((a) => a.first).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  expect(fake.asked.every((a) => a.pages === 1 && a.last === a.first)).toBe(true);
  expect(checkpointPuts().map((c) => c.first)).toHaveLength(20);

  const values = settledRun();
  // Stored as its pages only; the view joins the text (shared/runs/run-view.ts).
  const stored = values[':result'] as { text?: string; pages: Array<{ page: number; text: string }> };
  expect(stored.text).toBeUndefined();
  expect(stored.pages.map((p) => p.page)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  const result = viewResult('text', stored) as { text: string };
  expect(result.text.split('\n\f\n')).toEqual(Array.from({ length: 20 }, (_, i) => `page ${i + 1}`));
  expect(values[':usage']).toMatchObject({ requests: 20, billableUnits: 20, costMicros: 200 });
});

test('a redelivered run asks only for the pages no checkpoint covers, and merges the checkpointed ones', async () => {
  const run = chunkedRun(TEXT_TASK);
  const done: ChunkCheckpoint[] = [1, 2, 3, 4, 5].map((page) => ({
    first: page,
    last: page,
    provider: 'local',
    output: { result: { text: `page ${page}` }, billableUnits: 1 },
    attempts: [{ provider: 'local', step: 'vision', outcome: 'succeeded', latencyMs: 3 }],
    requests: 1,
    costMicros: 10,
  }));
  arrange(run, done);
  const fake = pagesAdapter(pageText);
  await deliver(fake.adapter);

  expect(fake.asked.map((a) => a.first).sort((a, b) => a - b)).toEqual(Array.from({ length: 15 }, (_, i) => i + 6));
  const values = settledRun();
  expect((values[':result'] as { pages: unknown[] }).pages).toHaveLength(20);
  // The checkpointed pages' usage is the run's too: one request each, paid once.
  expect(values[':usage']).toMatchObject({ requests: 20, costMicros: 200 });
});

test('a JSON chunk cut at its output cap is split in two and asked again; the halves are merged', async () => {
  // 10 pages per chunk; a chunk of more than 5 pages is cut.
  const run = chunkedRun(LIST_TASK, { chunkPages: 10 });
  arrange(run);
  const fake = pagesAdapter((input) => {
    const range = input.pages ?? { first: 1, last: 1 };
    if (range.last - range.first + 1 > 5) {
      // Unbilled here: the hold is exactly the chunks' worst cases, and a split is asked only within it.
      return new ProviderFailure('truncated', 'cut');
    }
    const sections = [];
    for (let page = range.first; page <= range.last; page++) sections.push(`Section ${page}`);
    return {
      result: { title: 'Agreement', sections },
      usage: { billableUnits: range.last - range.first + 1, costMicros: 10 },
    };
  });
  await deliver(fake.adapter);

  const asked = fake.asked.map((a) => `${a.first}-${a.last}`).sort();
  expect(asked).toEqual(['1-10', '1-5', '11-15', '11-20', '16-20', '6-10'].sort());
  const values = settledRun();
  expect(values[':status']).toBe('completed');
  expect((values[':result'] as { sections: string[] }).sections).toEqual(
    Array.from({ length: 20 }, (_, i) => `Section ${i + 1}`),
  );
});

test('a single page that is still cut fails the run: PROVIDER_ERROR, reason truncated, the page', async () => {
  const run = chunkedRun(TEXT_TASK);
  arrange(run);
  const fake = pagesAdapter((input) =>
    input.pages?.first === 7 ? new ProviderFailure('truncated', 'cut at the cap') : pageText(input),
  );
  await deliver(fake.adapter);

  const values = settledRun();
  expect(values[':status']).toBe('failed');
  expect(values[':error']).toMatchObject({
    code: 'PROVIDER_ERROR',
    status: 502,
    details: { reason: 'truncated', page: 7 },
  });
  expect(values[':charged']).toBe(0);
});

test('chunks run concurrently, never more at once than SERVICE_RUN_CONCURRENCY', async () => {
  const planned = planRun(FACTS, TEXT_TASK, ['openai'], { explicitOrder: true });
  const run = chunkedRun(TEXT_TASK, { candidates: ['openai'], estimateMicros: planned.estimateMicros });
  arrange(run);
  const fake = pagesAdapter(pageText);
  const handler = createWorkerHandler({ adapters: { openai: { ...fake.adapter, id: 'openai' } } });
  await handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(120_000));
  expect(fake.asked).toHaveLength(20);
  expect(fake.peak()).toBe(3);
});

test('out of time with pages left, the run is handed back to SQS: nothing asked, nothing settled', async () => {
  const run = chunkedRun(TEXT_TASK);
  arrange(run);
  const fake = pagesAdapter(pageText);
  const handler = createWorkerHandler({ adapters: { local: fake.adapter } });
  // 24 s left, 5 s of them kept to settle: under the 20 s a chunk needs to start.
  const response = await handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(24_000));
  expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
  expect(fake.asked).toEqual([]);
  expect(transactions()).toEqual([]);
});

test('a provider answering 429 for a while slows down, and the run still completes with every page', async () => {
  const run = chunkedRun(TEXT_TASK);
  arrange(run);
  let limited = 3;
  const fake = pagesAdapter((input) => {
    if (limited > 0) {
      limited -= 1;
      return new ProviderFailure('rate_limited', '429', { retryAfterMs: 20 });
    }
    return pageText(input);
  });
  await deliver(fake.adapter);
  const values = settledRun();
  expect(values[':status']).toBe('completed');
  expect((values[':result'] as { pages: unknown[] }).pages).toHaveLength(20);
  const attempts = values[':attempts'] as Array<{ outcome: string; failure?: string }>;
  expect(attempts.filter((a) => a.failure === 'rate_limited')).toHaveLength(3);
});

test("a chained plan runs per chunk: each chunk's own text is analyzed, and the halves of the document merge", async () => {
  const chainCost = chunkedCostMicros(
    FACTS,
    10,
    (chunk) => chainedPlan(chunk, LIST_TASK, ['textract', 'openai'])?.costMicros,
  );
  const run = chunkedRun(LIST_TASK, {
    chunkPages: 10,
    candidates: ['openai'],
    ocrCandidates: ['textract'],
    estimateMicros: priceFor(chainCost ?? 0),
  });
  arrange(run);
  const texts: string[] = [];
  const analyze = pagesAdapter((input) => {
    texts.push(input.documentText ?? '');
    const range = input.pages ?? { first: 1, last: 1 };
    const sections = [];
    for (let page = range.first; page <= range.last; page++) sections.push(`Section ${page}`);
    return { result: { title: 'Agreement', sections }, usage: { billableUnits: 10, costMicros: 10 } };
  });
  const ocr = pagesAdapter(() => new ProviderFailure('server', 'not expected: the text layer replaces OCR'));
  const handler = createWorkerHandler({
    adapters: { openai: { ...analyze.adapter, id: 'openai' }, textract: { ...ocr.adapter, id: 'textract' } },
  });
  await handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(120_000));

  expect(ocr.asked).toEqual([]);
  expect(analyze.asked.map((a) => `${a.first}-${a.last}`).sort()).toEqual(['1-10', '11-20']);
  const first = texts.find((t) => t.includes('Section 1\n')) ?? '';
  expect(first).toContain('Section 10');
  expect(first).not.toContain('Section 11');
  const values = settledRun();
  expect((values[':result'] as { sections: string[] }).sections).toEqual(
    Array.from({ length: 20 }, (_, i) => `Section ${i + 1}`),
  );
});

test('a file that passed inspection but cannot be opened fails CORRUPT_FILE at once, nothing asked or charged', async () => {
  const run = chunkedRun(TEXT_TASK);
  arrange(run, [], new TextEncoder().encode('%PDF-1.7 these bytes are not a PDF'));
  const fake = pagesAdapter(pageText);
  const response = await deliver(fake.adapter);
  expect(response.batchItemFailures).toEqual([]);
  expect(fake.asked).toEqual([]);
  const values = settledRun();
  expect(values[':error']).toMatchObject({ code: 'CORRUPT_FILE', details: { reason: 'undecodable' } });
  expect(values[':charged']).toBe(0);
});

/** A PDF of `pages` scanned pages (the receipt image, no text layer). */
function scannedPdf(pages: number): Uint8Array {
  const doc = new mupdf.PDFDocument();
  const image = doc.addImage(new mupdf.Image(fixture('receipt.png')));
  for (let n = 0; n < pages; n++) {
    doc.insertPage(-1, doc.addPage([0, 0, 384, 400], 0, { XObject: { Im1: image } }, 'q 384 0 0 400 0 0 cm /Im1 Do Q'));
  }
  const bytes = doc.saveToBuffer('compress').asUint8Array().slice();
  doc.destroy();
  return bytes;
}

test("a chained plan's scanned chunk is read one page per OCR call, then analyzed as one text", async () => {
  const bytes = scannedPdf(4);
  const facts = { ...FACTS, sizeBytes: bytes.byteLength, pages: 4 };
  const run = chunkedRun(LIST_TASK, {
    file: facts,
    chunkPages: 2,
    candidates: ['openai'],
    ocrCandidates: ['textract'],
    progress: { pagesTotal: 4, pagesDone: 0 },
    estimateMicros: priceFor(
      chunkedCostMicros(facts, 2, (chunk) => chainedPlan(chunk, LIST_TASK, ['textract', 'openai'])?.costMicros) ?? 0,
    ),
  });
  arrange(run, [], bytes);
  const ocr = pagesAdapter((input) => ({
    result: { text: `Text of page ${input.pages?.first}` },
    usage: { billableUnits: 1, costMicros: 1 },
  }));
  const texts: string[] = [];
  const analyze = pagesAdapter((input) => {
    texts.push(input.documentText ?? '');
    return {
      result: { title: 'Scan', sections: [`pages ${input.pages?.first}-${input.pages?.last}`] },
      usage: { billableUnits: 2, costMicros: 1 },
    };
  });
  const handler = createWorkerHandler({
    adapters: { openai: { ...analyze.adapter, id: 'openai' }, textract: { ...ocr.adapter, id: 'textract' } },
  });
  await handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(120_000));

  expect(ocr.asked.map((a) => `${a.first}-${a.last}:${a.pages}`).sort()).toEqual(['1-1:1', '2-2:1', '3-3:1', '4-4:1']);
  expect(texts.sort()).toEqual(['Text of page 1\n\nText of page 2', 'Text of page 3\n\nText of page 4']);
  const values = settledRun();
  expect((values[':result'] as { sections: string[] }).sections).toEqual(['pages 1-2', 'pages 3-4']);
  // Four OCR pages are the run's billable units; every request counted.
  expect(values[':usage']).toMatchObject({ requests: 6, billableUnits: 4 });
});
