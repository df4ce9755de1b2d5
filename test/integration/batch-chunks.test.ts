/**
 * Batch runs in page chunks on the local stack (issue 31 point 2), against OpenAI's batch fake (bench/batch-fakes.ts),
 * which also answers the synchronous Responses API for standard runs. A chunked batch run parks every chunk's call in
 * one delivery and they go in one provider batch; a fanned-out one (SERVICE_FANOUT_PAGES lowered to 10: the 20-page
 * fixture in two groups) parks each group's chunks and the batcher sends each group back. Either way every chunk's
 * request reaches the batch API once, also when the run's and its groups' messages are delivered again while they
 * wait, the pages come back in order, and the run settles once at half the standard price to the micro-dollar. A
 * packet at batch priority sends its pages' classifications in one wave (on the classification model) and its
 * documents' extractions in the next.
 * Its own stack: the provider list, the fan-out threshold and the batcher's short intervals are global.
 */
import { type BatchFakes, type BatchItem, startBatchFakes } from '../../bench/batch-fakes.js';
import { usdToMicrosCeil } from '../../shared/money.js';
import { type ModelPrices, openaiPricing, pricesFor, usageUsd } from '../../shared/providers/openai/profile.js';
import type { RecordedRequest } from '../support/fake-server.js';
import { openaiAnswer } from '../support/openai-answers.js';
import { packetModel } from '../support/packet-model.js';
import { makePackets } from '../support/packets.js';
import { type BatchLaneClient, batchLaneClient, micros, type Run } from './batch-lane-client.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_batch_chunks_tenant_0123456789abcd';
const TENANT = 'batchchunks';
const USAGE = { input: 900, output: 40 };

/** The pages of a request's chunk, from its custom id (`<jobId>#openai#<step>#<first>-<last>`). */
const pagesOf = (item: BatchItem) => item.customId.split('#').pop() ?? '';
/** A packet's request (its id names the task: `#classify` or `#<schemaId>`), answered by the packet model. */
const ofPacket = (item: BatchItem) => item.customId.split('#').length > 4;
function packetAnswer(item: BatchItem) {
  const reply = packetModel()({ body: item.body } as unknown as RecordedRequest) as {
    json: { output: Array<{ content: Array<{ text: string }> }> };
  };
  return JSON.parse(reply.json.output[0]?.content[0]?.text ?? 'null') as unknown;
}
const answerByPages = (item: BatchItem) => ({
  kind: 'ok' as const,
  answer: ofPacket(item) ? packetAnswer(item) : { text: `Transcribed pages ${pagesOf(item)}` },
  usage: USAGE,
});
const PACKET = makePackets(30, 6).find((p) => p.truth.some((d) => d.schemaId !== 'other') && p.pages <= 8);

describe('batch runs in page chunks on the local stack', () => {
  let fakes: BatchFakes;
  let stack: RunningStack;
  let lane: BatchLaneClient;

  beforeAll(async () => {
    fakes = await startBatchFakes({
      behaviour: { outcome: answerByPages },
      otherwise: (req) =>
        req.path === '/v1/responses'
          ? openaiAnswer({ text: 'Transcribed' }, USAGE, { model: 'gpt-5.4-mini-2026-03-17' })
          : { status: 404, json: { error: { message: `unexpected ${req.method} ${req.path}` } } },
    });
    stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'sk-test-batch-chunks-0123456789',
      OPENAI_BASE_URL: `${fakes.url}/v1`,
      // The 20-page fixture fans out in two groups of 10; the 2-page one runs its chunks in one delivery.
      SERVICE_FANOUT_PAGES: '10',
      LOCAL_BATCH_INTERVAL_SECONDS: '1',
      SERVICE_BATCH_MAX_WAIT_SECONDS: '1',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
    });
    lane = batchLaneClient(stack, KEY, TENANT);
  }, 150_000);
  afterAll(async () => {
    lane?.close();
    await stack?.stop();
    await fakes?.close();
  });
  beforeEach(() => {
    fakes.configure({ outcome: answerByPages, pollsBeforeEnd: 1, expire: false, doneBeforeExpiry: 0 });
  });

  async function create(file: string, body: Record<string, unknown> = {}, given?: Uint8Array): Promise<Run> {
    const uploadId = await lane.upload(file, given);
    return lane.create({ uploadId, prompt: 'Transcribe', outputFormat: 'text', confirmCost: true, ...body });
  }
  const final = (jobId: string) => lane.final(jobId);
  const ledgerKinds = (jobId: string) => lane.ledgerKinds(jobId);
  /** The run's requests that reached the provider's batch API, every time they did. */
  const sentOf = (jobId: string) =>
    fakes.batches.flatMap((b) => b.items.filter((i) => i.customId.startsWith(`${jobId}#`)));
  /** Waits until `count` requests of the run are in provider batches, and the run shows `batched`. */
  const allSubmitted = (jobId: string, count: number) =>
    lane.waitFor(
      jobId,
      (run) => sentOf(jobId).length >= count && run.stage === 'batched',
      `had ${count} requests submitted`,
    );

  /** The 2-page file run at standard priority (once): one call's cost, with the same tokens, and its estimate. */
  let standardRun: Promise<{ callMicros: number; estimateMicros: number }> | undefined;
  const standard = () => {
    standardRun ??= (async () => {
      const run = await final((await create('text.pdf')).jobId);
      expect(run.status).toBe('completed');
      expect(run.usage?.requests).toBe(2);
      return { callMicros: micros(run.usage?.costUsd) / 2, estimateMicros: micros(run.estimatedCostUsd) };
    })();
    return standardRun;
  };

  /** Completed once, pages in order, each request sent once, at half the standard price to the micro-dollar. */
  async function expectSettledOnceAtHalf(run: Run, pages: number): Promise<void> {
    expect(run.status).toBe('completed');
    expect((run.result as { pages?: unknown } | undefined)?.pages).toEqual(
      Array.from({ length: pages }, (_, i) => ({ page: i + 1, text: `Transcribed pages ${i + 1}-${i + 1}` })),
    );
    const sent = sentOf(run.jobId).map(pagesOf);
    expect(sent).toHaveLength(pages);
    expect(new Set(sent).size).toBe(pages);
    expect(run.usage?.requests).toBe(pages);
    const { callMicros } = await standard();
    expect(Number.isInteger(callMicros) && callMicros > 0).toBe(true);
    expect(micros(run.usage?.costUsd)).toBe(pages * Math.ceil(callMicros / 2));
    expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    expect(await ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);
  }

  test("a chunked batch run parks its chunks' calls together and settles once at half the standard price", async () => {
    const { estimateMicros } = await standard();
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const created = await create('text.pdf', { priority: 'batch' });
    expect(micros(created.estimatedCostUsd)).toBeLessThan(estimateMicros);
    await allSubmitted(created.jobId, 2);
    // Both chunks went in the same provider batch: one delivery parked them.
    const batches = fakes.batches.filter((b) => b.items.some((i) => i.customId.startsWith(`${created.jobId}#`)));
    expect(batches).toHaveLength(1);

    // Delivered again while it waits: parked again, nothing sent twice, nothing settled.
    await lane.redeliver(created.jobId);
    await lane.queueDrained();
    expect(sentOf(created.jobId)).toHaveLength(2);
    expect(await ledgerKinds(created.jobId)).toEqual(['hold']);

    fakes.configure({ pollsBeforeEnd: 0 });
    await expectSettledOnceAtHalf(await final(created.jobId), 2);
  });

  test("a fanned-out batch run parks each group's chunks, and each group comes back and settles the run once", async () => {
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const created = await create('twenty-pages.pdf', { priority: 'batch' });
    await allSubmitted(created.jobId, 20);
    expect((await lane.runItem(created.jobId))?.fanout).toEqual({ groups: 2, groupPages: 10 });

    // The run's and both groups' messages delivered again while they wait: nothing sent twice, nothing settled.
    for (const group of [undefined, 0, 1]) await lane.redeliver(created.jobId, group);
    await lane.queueDrained();
    expect(sentOf(created.jobId)).toHaveLength(20);
    expect(await ledgerKinds(created.jobId)).toEqual(['hold']);

    fakes.configure({ pollsBeforeEnd: 0 });
    const run = await final(created.jobId);
    await expectSettledOnceAtHalf(run, 20);
    expect((await lane.runItem(created.jobId))?.groupsDone).toBe(2);
  });

  test('a packet at batch priority: its classifications in one batch, its extractions in the next, settled once', async () => {
    if (!PACKET) throw new Error('no small packet with a document to extract in the sample');
    const created = await create(
      'packet.pdf',
      { prompt: 'Extract each document', outputFormat: 'json', split: true, priority: 'batch' },
      PACKET.bytes,
    );
    const run = await final(created.jobId);
    expect(run.status).toBe('completed');
    const documents = (run.result as unknown as { documents: Array<{ schemaId: string }> }).documents;
    const extracted = documents.filter((d) => d.schemaId !== 'other').length;
    expect(extracted).toBeGreaterThan(0);
    // Every page classified and every document extracted through the batch API, each once.
    const sent = sentOf(created.jobId).map((i) => i.customId);
    expect(new Set(sent).size).toBe(sent.length);
    const classify = sent.filter((id) => id.endsWith('#classify'));
    expect(classify).toHaveLength(PACKET.pages);
    expect(sent).toHaveLength(PACKET.pages + extracted);
    // Two waves: no batch holds a classification and an extraction together, and the classifications come first.
    const batches = fakes.batches.filter((b) => b.items.some((i) => i.customId.startsWith(`${created.jobId}#`)));
    for (const b of batches) expect(new Set(b.items.map((i) => i.customId.endsWith('#classify'))).size).toBe(1);
    expect(batches[0]?.items[0]?.customId.endsWith('#classify')).toBe(true);
    // Pages are classified on OpenAI's smaller model (pricing.json classificationModel); documents on the configured one.
    const models = (classifying: boolean) =>
      new Set(
        sentOf(created.jobId)
          .filter((i) => i.customId.endsWith('#classify') === classifying)
          .map((i) => i.body.model),
      );
    expect(models(true)).toEqual(new Set([openaiPricing.classificationModel]));
    expect(models(false)).toEqual(new Set(['gpt-5.4-mini']));
    expect(run.usage?.requests).toBe(sent.length);
    // Each call at half its model's price for the same tokens: the standard run's for an extraction.
    const { callMicros } = await standard();
    const classifyMicros = usdToMicrosCeil(
      usageUsd(
        [{ inputTokens: USAGE.input, cachedInputTokens: 0, outputTokens: USAGE.output }],
        pricesFor(String(openaiPricing.classificationModel)) as ModelPrices,
      ),
    );
    expect(micros(run.usage?.costUsd)).toBe(
      classify.length * Math.ceil(classifyMicros / 2) + extracted * Math.ceil(callMicros / 2),
    );
    expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    expect(await ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);
  });
});
