/**
 * Gemini Batch Mode for the batch lane: the codec's inline request is the adapter's own request (checked against what
 * the adapter sends through the SDK), its answer is read as the adapter reads one (priced at the list price), and the
 * batch API submits inline requests and reads their answers by key from the wire fake (bench/batch-fakes.ts), with
 * partial failure and expiry.
 */
import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import type { FileFacts } from '../../shared/file-facts.js';
import type { BatchItemResult } from '../../shared/providers/batch-codec.js';
import { createGeminiProvider } from '../../shared/providers/gemini/adapter.js';
import { geminiBatchCodec } from '../../shared/providers/gemini/batch.js';
import { geminiBatchApi } from '../../shared/providers/gemini/batch-api.js';
import { geminiPricing, tokenCostMicros } from '../../shared/providers/gemini/profile.js';
import type { ProviderInput } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import { ProviderFailure } from '../../shared/task.js';
import { fixture } from '../support/aws.js';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';

const KEY = 'AIzaSyTEST-batch-key-0123456789abcdef';
const MODEL = 'gemini-3.8-flash';
const LIST = geminiPricing.models[MODEL];
if (!LIST) throw new Error(`pricing.json lacks ${MODEL}`);

const RECEIPT_TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const TEXT_TASK = buildTask({ prompt: 'Summarise in one sentence.', outputFormat: 'text' });
const RECEIPT = fixture('receipt.png');
const FACTS: FileFacts = {
  mime: 'image/png',
  kind: 'image',
  sizeBytes: RECEIPT.length,
  width: 800,
  height: 834,
  pages: 1,
};
const input = (task = RECEIPT_TASK): ProviderInput => ({ bytes: RECEIPT, facts: FACTS, task, step: 'vision' });
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', subtotal: 10, tax: 2.5, total: 12.5, currency: 'EUR' };

function response(text: string, usage = { prompt: 1200, output: 60 }, finishReason = 'STOP') {
  return {
    candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason, index: 0 }],
    usageMetadata: {
      promptTokenCount: usage.prompt,
      candidatesTokenCount: usage.output,
      totalTokenCount: usage.prompt + usage.output,
    },
  };
}

describe('the codec', () => {
  let adapterFake: FakeServer;
  beforeAll(async () => {
    adapterFake = await startFakeServer(() => ({ json: response(JSON.stringify(ANSWER)) }));
  });
  afterAll(() => adapterFake.close());

  test("a line is the adapter's own request: same parts, instruction, cap, thinking and schema", async () => {
    const env = { GEMINI_API_KEY: KEY, GEMINI_BASE_URL: adapterFake.url };
    await createGeminiProvider({ env }).invoke(input(), {
      signal: new AbortController().signal,
      deadlineMs: Date.now() + 30_000,
    });
    const sent = adapterFake.requests.at(-1)?.body as Record<string, unknown>;
    const line = await geminiBatchCodec.line(input(), { env });
    expect(line.model).toBe(MODEL);
    expect(line.body.contents).toEqual(sent.contents);
    expect(line.body.generationConfig).toEqual(sent.generationConfig);
    expect(line.body.store).toBe(false);
    expect(line.body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      thinkingConfig: { thinkingLevel: 'LOW' },
    });
  });

  test('the spend limit caps the answer at the list price (the discount only lowers the cost)', async () => {
    const whole = await geminiBatchCodec.line(input(), { env: {} });
    const capped = await geminiBatchCodec.line(input(), { env: {}, maxCostMicros: 3_000 });
    const cap = (line: typeof whole) => (line.body.generationConfig as { maxOutputTokens: number }).maxOutputTokens;
    expect(cap(capped)).toBeLessThan(cap(whole));
    // Within the limit at the list output price (what is left after the predicted input).
    expect(cap(capped) * LIST.outputPerMTokUsd).toBeLessThanOrEqual(3_000);
  });

  test('a spend limit too small for a useful answer refuses the line unsent', async () => {
    await expect(geminiBatchCodec.line(input(), { maxCostMicros: 1, env: {} })).rejects.toMatchObject({
      kind: 'client',
    });
  });

  test('an answer is read as the adapter reads one, priced at the list price (never a promotion)', async () => {
    const output = await geminiBatchCodec.parse(response(JSON.stringify(ANSWER)), input(), { env: {} });
    expect(output.result).toMatchObject({ merchant: 'Corner Shop', total: 12.5 });
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: tokenCostMicros(1200, 60, LIST),
      inputTokens: 1200,
      outputTokens: 60,
    });
    const text = await geminiBatchCodec.parse(response('A receipt from Corner Shop.'), input(TEXT_TASK), { env: {} });
    expect(text.result).toEqual({ text: 'A receipt from Corner Shop.' });
  });

  test('no repair in a batch: an answer off the schema, a cut one and a refusal fail with their usage', async () => {
    const off = geminiBatchCodec.parse(response('{"merchant": 12'), input(), { env: {} });
    await expect(off).rejects.toMatchObject({ kind: 'invalid_output', usage: { inputTokens: 1200 } });
    const cut = geminiBatchCodec.parse(response('{"merchant"', undefined, 'MAX_TOKENS'), input(), { env: {} });
    await expect(cut).rejects.toMatchObject({ kind: 'truncated' });
    const refused = geminiBatchCodec.parse(response('', undefined, 'SAFETY'), input(), { env: {} });
    await expect(refused).rejects.toMatchObject({ kind: 'refusal' });
    await expect(geminiBatchCodec.parse('not a response', input(), { env: {} })).rejects.toBeInstanceOf(
      ProviderFailure,
    );
  });
});

describe('the batch API on the wire fake', () => {
  let fakes: BatchFakes;
  beforeEach(async () => {
    fakes = await startBatchFakes();
  });
  afterEach(() => fakes.close());

  const api = () => geminiBatchApi({ GEMINI_API_KEY: KEY, GEMINI_BASE_URL: fakes.url });
  const lines = (ids: string[]) =>
    ids.map((customId) => ({ customId, body: { contents: [{ parts: [{ text: customId }] }] } }));

  test('submits inline requests keyed by custom id, polls until the batch ends, answers each by its key', async () => {
    fakes.configure({
      pollsBeforeEnd: 2,
      outcome: (item) =>
        item.customId === 'run_b#gemini#vision#all'
          ? { kind: 'error', status: 500, message: 'internal' }
          : item.customId === 'run_c#gemini#vision#all'
            ? { kind: 'error', status: 429, message: 'quota' }
            : { kind: 'ok', answer: ANSWER, usage: { input: 900, output: 40 } },
    });
    const ids = ['run_a#gemini#vision#all', 'run_b#gemini#vision#all', 'run_c#gemini#vision#all'];
    const ref = await api().submit(MODEL, lines(ids));
    expect(ref).toMatch(/^batches\//);
    expect(fakes.batches[0]?.items.map((i) => i.customId)).toEqual(ids);
    const create = fakes.requests.find((r) => r.method === 'POST');
    expect(create?.path).toBe(`/v1beta/models/${MODEL}:batchGenerateContent`);
    expect(create?.headers['x-goog-api-key']).toBe(KEY);

    expect(await api().poll(ref, ids)).toBeUndefined();
    expect(await api().poll(ref, ids)).toBeUndefined();
    const results = (await api().poll(ref, ids)) as Map<string, BatchItemResult>;
    expect(results.get('run_b#gemini#vision#all')).toMatchObject({ kind: 'failed', failure: 'server' });
    expect(results.get('run_c#gemini#vision#all')).toMatchObject({ kind: 'failed', failure: 'rate_limited' });
    const answer = results.get('run_a#gemini#vision#all');
    expect(answer?.kind).toBe('answer');
    // The answer is a GenerateContentResponse the codec reads.
    const body = answer?.kind === 'answer' ? answer.body : undefined;
    const output = await geminiBatchCodec.parse(body, input(), { env: {} });
    expect(output.result).toMatchObject({ merchant: 'Corner Shop' });
    expect(output.usage.inputTokens).toBe(900);
  });

  test('an expired batch answers the items done before it expired; the others are left out (the batcher expires them)', async () => {
    fakes.configure({ expire: true, doneBeforeExpiry: 1, pollsBeforeEnd: 0 });
    const ref = await api().submit(MODEL, lines(['one', 'two', 'three']));
    const results = (await api().poll(ref, ['one', 'two', 'three'])) as Map<string, BatchItemResult>;
    expect([...results.keys()]).toEqual(['one']);
  });

  test('a batch over the inline limit goes as a file through the Files API; its answers come back as a file, by key', async () => {
    fakes.configure({
      outcome: (item) =>
        item.customId === 'run_b#gemini#vision#all'
          ? { kind: 'error', status: 500, message: 'internal' }
          : { kind: 'ok', answer: ANSWER, usage: { input: 900, output: 40 } },
    });
    const ids = ['run_a#gemini#vision#all', 'run_b#gemini#vision#all', 'run_c#gemini#vision#all'];
    const small = JSON.stringify({ requests: { requests: lines(ids) } }).length;
    const files = geminiBatchApi({
      GEMINI_API_KEY: KEY,
      GEMINI_BASE_URL: fakes.url,
      GEMINI_BATCH_INLINE_MAX_BYTES: String(small - 100),
    });
    const ref = await files.submit(MODEL, lines(ids));
    // A resumable upload (start, then one upload-and-finalize), then the batch names the file, not inline requests.
    const [start, upload, create] = fakes.requests.filter((r) => r.method === 'POST');
    expect(start?.headers).toMatchObject({ 'x-goog-upload-protocol': 'resumable', 'x-goog-upload-command': 'start' });
    expect(upload?.headers).toMatchObject({ 'x-goog-upload-command': 'upload, finalize', 'x-goog-api-key': KEY });
    const uploaded =
      upload?.rawBody
        .toString('utf8')
        .split('\n')
        .map((l) => JSON.parse(l)) ?? [];
    expect(uploaded.map((l) => l.key)).toEqual(ids);
    expect(uploaded[0].request).toEqual(lines(ids)[0]?.body);
    const batch = (create?.body as { batch?: { inputConfig?: Record<string, unknown> } } | undefined)?.batch;
    expect(batch?.inputConfig).toEqual({ fileName: expect.stringMatching(/^files\//) });
    expect(fakes.batches[0]?.items.map((i) => i.customId)).toEqual(ids);

    expect(await files.poll(ref, ids)).toBeUndefined();
    const results = (await files.poll(ref, ids)) as Map<string, BatchItemResult>;
    expect(fakes.requests.at(-1)?.path).toMatch(/^\/download\/v1beta\/files\/[^/]+:download\?alt=media$/);
    expect(results.get('run_b#gemini#vision#all')).toMatchObject({ kind: 'failed', failure: 'server' });
    const answer = results.get('run_c#gemini#vision#all');
    const output = await geminiBatchCodec.parse(answer?.kind === 'answer' ? answer.body : undefined, input(), {
      env: {},
    });
    expect(output.result).toMatchObject({ merchant: 'Corner Shop' });
    expect(output.usage.inputTokens).toBe(900);
    expect([...results.keys()].sort()).toEqual(ids);

    // At the limit, the same batch goes inline (the API's own limit is the default).
    const inline = geminiBatchApi({
      GEMINI_API_KEY: KEY,
      GEMINI_BASE_URL: fakes.url,
      GEMINI_BATCH_INLINE_MAX_BYTES: String(small + 100),
    });
    await inline.submit(MODEL, lines(ids));
    const last = fakes.requests.filter((r) => r.method === 'POST').at(-1)?.body as {
      batch: { inputConfig: { requests?: unknown } };
    };
    expect(last.batch.inputConfig.requests).toBeDefined();
  });

  test('an expired file batch: its responses file holds the items done before it expired, the others left out', async () => {
    fakes.configure({ expire: true, doneBeforeExpiry: 2, pollsBeforeEnd: 0 });
    const files = geminiBatchApi({
      GEMINI_API_KEY: KEY,
      GEMINI_BASE_URL: fakes.url,
      GEMINI_BATCH_INLINE_MAX_BYTES: '1',
    });
    const ref = await files.submit(MODEL, lines(['one', 'two', 'three']));
    const results = (await files.poll(ref, ['one', 'two', 'three'])) as Map<string, BatchItemResult>;
    expect(fakes.requests.at(-1)?.path).toMatch(/^\/download\/v1beta\/files\//);
    expect([...results.keys()].sort()).toEqual(['one', 'two']);
  });

  test('a refused submit or poll throws without the key in its message', async () => {
    const broken = geminiBatchApi({ GEMINI_API_KEY: KEY, GEMINI_BASE_URL: `${fakes.url}/nowhere` });
    await expect(broken.submit(MODEL, lines(['x']))).rejects.toThrow(/HTTP 404/);
    await expect(broken.poll('batches/none', [])).rejects.not.toThrow(KEY);
    await expect(geminiBatchApi({}).submit(MODEL, lines(['x']))).rejects.toMatchObject({ kind: 'auth' });
  });
});
