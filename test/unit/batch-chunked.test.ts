/**
 * A batch run in page chunks through the batch lane (issue 31 point 2), on OpenAI's batch fake (bench/batch-fakes.ts)
 * with the lane's storage in memory (test/support/batch-lane-memory.ts): one delivery parks every chunk's call (one
 * wave), the batcher answers them in one provider batch, and the next delivery checkpoints them and settles once at
 * the batch price, asking nothing twice. A fanned-out run's group parks its own chunks, and the batcher sends that
 * group's message back. A chained chunk read page by page parks all its pages at once.
 */
import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchApis } from '../../shared/batching/apis.js';
import { runBatcher } from '../../shared/batching/batcher.js';
import { BatchParked } from '../../shared/batching/parked.js';
import { Deadline, PdfFile } from '../../shared/media/index.js';
import { chunkFacts } from '../../shared/planning/chunks.js';
import { predictedCostMicros } from '../../shared/planning/estimate.js';
import { chunkReservation } from '../../shared/planning/reservations.js';
import { openaiBatchCodec } from '../../shared/providers/openai/batch.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { TaskSpec } from '../../shared/task.js';
import { ocrPagesOneByOne } from '../../shared/worker/chunk-ocr.js';
import { processRun } from '../../shared/worker/process-run.js';
import { fixture, mapsAsObjects, runItem } from '../support/aws.js';
import { laneMemory, notInline, sendAtOnce } from '../support/batch-lane-memory.js';

const PDF = fixture('twenty-pages.pdf');
const { table, objects, runs, runUpdates, settlements, chunks } = laneMemory(PDF);
const FACTS = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: PDF.byteLength, pages: 20 };
const TASK: TaskSpec = {
  prompt: 'Extract the invoice',
  outputFormat: 'json',
  fields: [{ name: 'total', type: 'number', required: false }],
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

beforeAll(() => {
  process.env.OPENAI_API_KEY = 'sk-test-batch-chunks';
});

let fakes: BatchFakes;
beforeEach(async () => {
  fakes = await startBatchFakes({
    behaviour: { outcome: () => ({ kind: 'ok', answer: { total: 12.5 }, usage: { input: 2000, output: 30 } }) },
  });
  process.env.OPENAI_BASE_URL = `${fakes.url}/v1`;
});
afterEach(() => fakes.close());

const enqueued: Array<[string, number | undefined]> = [];
beforeEach(() => {
  enqueued.length = 0;
});
const pass = () =>
  runBatcher({
    apis: batchApis(),
    enqueue: async (jobId, group) => {
      enqueued.push([jobId, group]);
    },
    limits: sendAtOnce,
  });

/** A queued batch run of the 20-page PDF in chunks of 5 pages, planned openai then local, due in 24 hours. */
function chunkedBatchRun(jobId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return runItem({
    jobId,
    priority: 'batch',
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    task: TASK,
    file: FACTS,
    strategy: 'direct_multimodal',
    candidates: ['openai', 'local'],
    chunkPages: 5,
    estimateMicros: 1_000_000,
    progress: { pagesTotal: 20, pagesDone: 0 },
    ...overrides,
  });
}

const options = (extra: { group?: number } = {}) => ({
  adapters: { openai: notInline('openai') },
  remainingMs: 120_000,
  receiveCount: 1,
  maxReceiveCount: 3,
  ...extra,
});
const requestsOf = (jobId: string) => [...table.keys()].filter((id) => id.startsWith(`${jobId}#`)).sort();

test("one delivery parks every chunk's call; the next one checkpoints them and settles once at the batch price", async () => {
  const run = chunkedBatchRun('run_chunked_batch');
  runs.set(run.jobId, run);
  expect(await processRun(run.jobId, options())).toBe('batched');
  // Four chunks, four requests, written by the one delivery: a wave, not a chunk per delivery.
  const parked = requestsOf(run.jobId);
  expect(parked.map((id) => id.split('#').pop())).toEqual(['1-5', '11-15', '16-20', '6-10']);
  expect(runUpdates.some((u) => u.ExpressionAttributeValues?.[':batched'] === 'batched')).toBe(true);

  // A redelivery while they wait parks again and writes nothing new.
  expect(await processRun(run.jobId, options())).toBe('batched');
  expect(requestsOf(run.jobId)).toEqual(parked);

  for (let i = 0; i < 3; i++) await pass();
  expect(fakes.batches).toHaveLength(1);
  expect(fakes.batches[0]?.items).toHaveLength(4);
  expect(enqueued).toEqual([[run.jobId, undefined]]);

  expect(await processRun(run.jobId, options())).toBe('settled');
  expect(chunks.size).toBe(4);
  expect(settlements).toHaveLength(1);
  const usage = settledUsage();
  expect(usage.requests).toBe(4);
  // Each chunk's answer costs half its list price (rounded up to the micro); the run costs their sum.
  let halves = 0;
  for (const id of parked) {
    const range = id.split('#').pop()?.split('-').map(Number) as [number, number];
    const input = { bytes: PDF, facts: chunkFacts(FACTS, { first: range[0], last: range[1] }), task: TASK };
    const listed = await openaiBatchCodec.parse(JSON.parse(objects.get(`${answerKeyOf(id)}`) ?? 'null'), {
      ...input,
      step: 'analyze',
    });
    halves += Math.ceil(listed.usage.costMicros / 2);
  }
  expect(usage.costMicros).toBe(halves);
  // Nothing was sent twice.
  expect(fakes.batches).toHaveLength(1);
});

test("a fanned-out run's group parks its own chunks, and the batcher sends that group's message back", async () => {
  const run = chunkedBatchRun('run_fanned_batch', {
    fanout: { groups: 2, groupPages: 10 },
    groups: { '0': {}, '1': {} },
    groupsDone: 0,
  });
  runs.set(run.jobId, run);
  expect(await processRun(run.jobId, options({ group: 1 }))).toBe('batched');
  // Only the group's pages, each request marked with the group.
  const parked = requestsOf(run.jobId);
  expect(parked.map((id) => id.split('#').pop())).toEqual(['11-15', '16-20']);
  expect(parked.map((id) => table.get(id)?.group)).toEqual([1, 1]);
  // The group's lease given up, the run shown batched.
  const park = runUpdates.find((u) => u.ExpressionAttributeValues?.[':batched'] === 'batched');
  expect(park?.UpdateExpression).toBe('SET #stage = :batched REMOVE #groups.#g.leaseUntil, #groups.#g.leaseHolder');
  expect(park?.ExpressionAttributeNames?.['#g']).toBe('1');
  expect(settlements).toHaveLength(0);

  for (let i = 0; i < 3; i++) await pass();
  expect(fakes.batches[0]?.items).toHaveLength(2);
  expect(enqueued).toEqual([[run.jobId, 1]]);
});

test("a batch run's chunks are reserved at their batch price, as its estimate was made", () => {
  const run = chunkedBatchRun('run_reserved', { candidates: ['openai'] });
  const range = { first: 1, last: 5 };
  const facts = chunkFacts(FACTS, range);
  expect(chunkReservation(run, range)).toBe(predictedCostMicros('openai', facts, TASK, undefined, 'batch'));
  expect(chunkReservation({ ...run, priority: 'standard' }, range)).toBe(
    predictedCostMicros('openai', facts, TASK, undefined, 'standard'),
  );
  expect(chunkReservation(run, range)).toBeLessThan(chunkReservation({ ...run, priority: 'standard' }, range));
});

test("a chained chunk read page by page parks every page's OCR call in the same delivery", async () => {
  const run = chunkedBatchRun('run_pages', { ocrCandidates: ['local'], strategy: 'ocr_then_analyze' });
  const asked: number[] = [];
  const parking: ProviderAdapter = {
    id: 'local',
    invoke: async (input) => {
      asked.push(input.pages?.first ?? 0);
      throw new BatchParked(`run_pages#local#ocr#${input.pages?.first}`);
    },
  };
  const deadlineMs = Date.now() + 60_000;
  const pdf = await PdfFile.open(PDF, new Deadline(new AbortController().signal, deadlineMs, 'test'));
  try {
    const read = ocrPagesOneByOne({
      run,
      pdf,
      range: { first: 6, last: 10 },
      adapters: { local: parking },
      shared: { othersMicros: () => 0, started: () => {}, settled: () => {} },
      capMicros: run.estimateMicros,
      deadlineMs,
    });
    await expect(read).rejects.toBeInstanceOf(BatchParked);
  } finally {
    pdf.close();
  }
  expect(asked).toEqual([6, 7, 8, 9, 10]);
});

function answerKeyOf(requestId: string): string {
  return String(table.get(requestId)?.answerKey);
}

function settledUsage(): { costMicros: number; priceMicros: number; requests: number } {
  const runWrite = mapsAsObjects(settlements[0])?.TransactItems?.find(
    (i) => i.Update?.ExpressionAttributeValues?.[':absorbed'] !== undefined,
  );
  return runWrite?.Update?.ExpressionAttributeValues?.[':usage'] as {
    costMicros: number;
    priceMicros: number;
    requests: number;
  };
}
