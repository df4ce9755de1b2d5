/**
 * Gemini Batch Mode on the local stack (contract v1.2 §4), against the batch fake (bench/batch-fakes.ts), which also
 * answers generateContent for standard runs. Inline requests (the default for a batch under 20 MB): a batch run
 * completes at half the list price to the micro-dollar (not half the standard run's: Gemini's standard calls are billed
 * at a promotion until 2027, and a batch answer at the list price, shared/providers/gemini/batch.ts), a failed item
 * and an expired batch fall back to the next
 * candidate within the spend limit, and a second poll of the batch or a second delivery of the run settles nothing
 * twice. A batch over the inline limit (GEMINI_BATCH_INLINE_MAX_BYTES, lowered on a second stack) goes as a file
 * through the Files API, and its answers, read back from the results file, complete or fall back the same way.
 * Each stack is shared by its cases, in order.
 */
import { type BatchFakes, type ItemOutcome, startBatchFakes } from '../../bench/batch-fakes.js';
import { priceFor, pricing } from '../../shared/pricing/pricing.js';
import { geminiPricing, tokenCostMicros } from '../../shared/providers/gemini/profile.js';
import { batchLaneClient, micros, type Run } from './batch-lane-client.js';
import { startStackOnSuiteEmulators } from './client.js';

const KEY = 'vk_batch_gemini_tenant_0123456789abcdef';
const TENANT = 'batchgemini';
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', total: 12.5 };
const USAGE = { input: 1000, output: 40 };
const task = { prompt: 'Extract the receipt', schemaId: 'receipt' };
const ok = (): ItemOutcome => ({ kind: 'ok', answer: ANSWER, usage: USAGE });
const LIST = geminiPricing.models[geminiPricing.defaultModel];
if (!LIST) throw new Error('gemini pricing.json lacks its default model');
/** What the answer's tokens cost at the list price, and at Gemini Batch Mode's 50 % off it (rounded up to the micro). */
const LIST_MICROS = tokenCostMicros(USAGE.input, USAGE.output, LIST);
const BATCH_MICROS = Math.ceil(LIST_MICROS / 2);

/** generateContent's answer for a standard run: the same answer and tokens as the batch's. */
const generateContent = () => ({
  json: {
    candidates: [
      { content: { role: 'model', parts: [{ text: JSON.stringify(ANSWER) }] }, finishReason: 'STOP', index: 0 },
    ],
    usageMetadata: {
      promptTokenCount: USAGE.input,
      candidatesTokenCount: USAGE.output,
      totalTokenCount: USAGE.input + USAGE.output,
    },
  },
});

/** A batch fake and a local stack pointed at it; `extra` is the stack's own environment. */
async function start(extra: Record<string, string> = {}) {
  const fakes = await startBatchFakes({
    behaviour: { outcome: ok },
    otherwise: (req) =>
      /:generateContent$/.test(req.path)
        ? generateContent()
        : { status: 404, json: { error: { message: `unexpected ${req.method} ${req.path}` } } },
  });
  const stack = await startStackOnSuiteEmulators({
    VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
    VISION_PROVIDERS: 'gemini,local',
    GEMINI_API_KEY: 'AIzaSy-batch-gemini-fake-0123456789',
    GEMINI_BASE_URL: fakes.url,
    LOCAL_BATCH_INTERVAL_SECONDS: '1',
    SERVICE_BATCH_MAX_WAIT_SECONDS: '1',
    LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
    ...extra,
  });
  const client = batchLaneClient(stack, KEY, TENANT);
  // A one-page text PDF: no evidence OCR on a parking delivery.
  const uploadId = await client.upload('invoice.pdf');
  const standard = await client.final((await client.create({ uploadId, ...task })).jobId);
  return { fakes, stack, client, uploadId, standard };
}

/** How many times the run's requests reached the batch API (inline or in a file). */
const sent = (fakes: BatchFakes, jobId: string) =>
  fakes.batches.flatMap((b) => b.items).filter((i) => i.customId.startsWith(`${jobId}#`)).length;

async function submitted(fakes: BatchFakes, jobId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (sent(fakes, jobId) === 0) {
    if (Date.now() > deadline) throw new Error(`run ${jobId} never submitted in a batch`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const pathOf = (run: Run) => run.attempts?.map((a) => [a.provider, a.outcome, a.failure ?? null]);

function expectBatchPrice(run: Run, standard: Run): void {
  expect(micros(run.usage?.costUsd)).toBe(BATCH_MICROS);
  expect(micros(run.usage?.priceUsd)).toBe(priceFor(BATCH_MICROS, pricing.marginPct));
  // Never above what the same tokens cost as a standard call (at its promotion price until 2027, equal to it).
  expect(micros(run.usage?.costUsd)).toBeLessThanOrEqual(micros(standard.usage?.costUsd));
  expect(micros(run.chargedUsd)).toBe(Math.min(micros(run.usage?.priceUsd), micros(run.estimatedCostUsd)));
  expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
}

describe('Gemini Batch Mode on the local stack: inline requests', () => {
  let env: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    env = await start();
  }, 150_000);
  afterAll(async () => {
    env?.client.close();
    await env?.stack.stop();
    await env?.fakes.close();
  });
  beforeEach(() => env.fakes.configure({ outcome: ok, pollsBeforeEnd: 1, expire: false, doneBeforeExpiry: 0 }));
  const createBatch = () => env.client.create({ uploadId: env.uploadId, ...task, priority: 'batch' });

  test('a batch run waits batched and completes at half the list price; a second poll and delivery settle once', async () => {
    const { fakes, client, standard } = env;
    expect(pathOf(standard)).toEqual([['gemini', 'succeeded', null]]);
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const created = await createBatch();
    expect(created.estimatedCostUsd).toBeLessThan(standard.estimatedCostUsd);
    await client.waitFor(created.jobId, (r) => r.stage === 'batched', 'batched');
    await submitted(fakes, created.jobId);
    // The batch went inline: no file was uploaded.
    expect(fakes.requests.some((r) => r.path.startsWith('/upload/'))).toBe(false);

    fakes.configure({ pollsBeforeEnd: 0 });
    const run = await client.final(created.jobId);
    expect(run.status).toBe('completed');
    expect(run.result).toMatchObject(ANSWER);
    expect(pathOf(run)).toEqual([['gemini', 'succeeded', null]]);
    expectBatchPrice(run, standard);
    expect(await client.ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);

    await client.pollAgain(created.jobId);
    await client.redeliver(created.jobId);
    await client.queueDrained();
    const after = await client.get(created.jobId);
    expect(after.chargedUsd).toBe(run.chargedUsd);
    expect(after.completedAt).toBe(run.completedAt);
    expect(await client.ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    expect(sent(fakes, created.jobId)).toBe(1);
  });

  test('a failed item falls back to the next candidate; the other runs of the batch complete at half price', async () => {
    const { fakes, client, standard } = env;
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const runs = [await createBatch(), await createBatch(), await createBatch()];
    for (const run of runs) await submitted(fakes, run.jobId);
    const bad = runs[1] as Run;
    fakes.configure({
      pollsBeforeEnd: 0,
      outcome: (item) =>
        item.customId.startsWith(`${bad.jobId}#`) ? { kind: 'error', status: 500, message: 'internal' } : ok(),
    });
    const done = await Promise.all(runs.map((r) => client.final(r.jobId)));
    for (const run of done) {
      expect(run.status).toBe('completed');
      expect(sent(fakes, run.jobId)).toBe(1);
      expect(await client.ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);
      expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    }
    expect(pathOf(done[1] as Run)).toEqual([
      ['gemini', 'failed', 'server'],
      ['local', 'succeeded', null],
    ]);
    for (const run of [done[0], done[2]] as Run[]) {
      expect(pathOf(run)).toEqual([['gemini', 'succeeded', null]]);
      expectBatchPrice(run, standard);
    }
  });

  test('an expired batch falls back like a timed-out attempt', async () => {
    const { fakes, client } = env;
    fakes.configure({ expire: true, doneBeforeExpiry: 0 });
    const created = await createBatch();
    const run = await client.final(created.jobId);
    expect(run.status).toBe('completed');
    expect(pathOf(run)).toEqual([
      ['gemini', 'failed', 'timeout'],
      ['local', 'succeeded', null],
    ]);
    expect(sent(fakes, created.jobId)).toBe(1);
    expect(await client.ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
  });
});

describe('Gemini Batch Mode on the local stack: a batch over the inline limit goes as a file', () => {
  let env: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    // Every batch is over a one-byte limit: each goes as a file, its answers come back as one.
    env = await start({ GEMINI_BATCH_INLINE_MAX_BYTES: '1' });
  }, 150_000);
  afterAll(async () => {
    env?.client.close();
    await env?.stack.stop();
    await env?.fakes.close();
  });

  test('the answered runs complete at half price, a failed one falls back, an expired one too', async () => {
    const { fakes, client, standard, uploadId } = env;
    const createBatch = () => client.create({ uploadId, ...task, priority: 'batch' });
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const runs = [await createBatch(), await createBatch(), await createBatch()];
    for (const run of runs) await submitted(fakes, run.jobId);
    // Sent as files: uploaded through the Files API, each batch naming its file.
    const creates = fakes.requests.filter((r) => /:batchGenerateContent$/.test(r.path));
    expect(creates.length).toBeGreaterThan(0);
    for (const create of creates) {
      expect((create.body as { batch: { inputConfig: unknown } }).batch.inputConfig).toEqual({
        fileName: expect.stringMatching(/^files\//),
      });
    }
    const bad = runs[1] as Run;
    fakes.configure({
      pollsBeforeEnd: 0,
      outcome: (item) =>
        item.customId.startsWith(`${bad.jobId}#`) ? { kind: 'error', status: 500, message: 'internal' } : ok(),
    });
    const done = await Promise.all(runs.map((r) => client.final(r.jobId)));
    for (const run of [done[0], done[2]] as Run[]) {
      expect(pathOf(run)).toEqual([['gemini', 'succeeded', null]]);
      expect(run.result).toMatchObject(ANSWER);
      expectBatchPrice(run, standard);
    }
    expect(pathOf(done[1] as Run)).toEqual([
      ['gemini', 'failed', 'server'],
      ['local', 'succeeded', null],
    ]);
    // Every answer was read from a results file, downloaded through the Files API.
    expect(fakes.requests.some((r) => /^\/download\/v1beta\/files\/[^/]+:download/.test(r.path))).toBe(true);

    fakes.configure({ outcome: ok, expire: true, doneBeforeExpiry: 0 });
    const late = await client.final((await createBatch()).jobId);
    expect(pathOf(late)).toEqual([
      ['gemini', 'failed', 'timeout'],
      ['local', 'succeeded', null],
    ]);
    for (const run of [...done, late]) {
      expect(run.status).toBe('completed');
      expect(sent(fakes, run.jobId)).toBe(1);
      expect(await client.ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);
      expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    }
  });
});
