/**
 * An image's batch run reads its page for evidence only on the delivery that has the answer (issue 31): the
 * deliveries that only park it, or find it still waiting, OCR nothing. The local OCR engine is counted (its module
 * replaced, before anything imports it, by one that reads the receipt's words without running the engine); the lane
 * runs on OpenAI's batch fake with its storage in memory (test/support/batch-lane-memory.ts).
 */
import { jest } from '@jest/globals';
import type { PageWords } from '../../shared/fields/types.js';

const ocrCalls: number[][] = [];
jest.unstable_mockModule('../../shared/providers/local/local-provider.js', () => ({
  RENDER_DPI: 200,
  OCR_MAX_LONG_SIDE: 3000,
  TEXT_LAYER_CONFIDENCE: 0.99,
  OCR_MAX_CONFIDENCE: 0.98,
  shutdownLocalProvider: async () => {},
  localProvider: {
    id: 'local',
    invoke: async () => {
      throw new Error('the local provider is not part of this test');
    },
  },
  ocrPageWords: async (_file: unknown, pages: readonly number[], _deadline: unknown, out: PageWords[]) => {
    ocrCalls.push([...pages]);
    out.push({
      page: 1,
      source: 'paddleocr',
      words: [
        { text: 'Corner', bbox: [0.1, 0.1, 0.2, 0.12], confidence: 0.95 },
        { text: 'Shop', bbox: [0.21, 0.1, 0.3, 0.12], confidence: 0.95 },
        { text: '12.50', bbox: [0.6, 0.8, 0.7, 0.82], confidence: 0.95 },
      ],
    });
  },
}));

const { startBatchFakes } = await import('../../bench/batch-fakes.js');
const { batchApis } = await import('../../shared/batching/apis.js');
const { runBatcher } = await import('../../shared/batching/batcher.js');
const { processRun } = await import('../../shared/worker/process-run.js');
const { fixture } = await import('../support/aws.js');
const { batchRun, laneMemory, notInline, sendAtOnce } = await import('../support/batch-lane-memory.js');

const RECEIPT = fixture('receipt.png');
const { runs, settlements } = laneMemory(RECEIPT);

test('a batch run of an image OCRs its page once, on the delivery that has the answer', async () => {
  process.env.OPENAI_API_KEY = 'sk-test-batch-ocr';
  const fakes = await startBatchFakes({
    behaviour: {
      outcome: () => ({
        kind: 'ok',
        answer: { merchant: 'Corner Shop', total: 12.5 },
        usage: { input: 900, output: 20 },
      }),
    },
  });
  process.env.OPENAI_BASE_URL = `${fakes.url}/v1`;
  try {
    const run = batchRun('run_batch_ocr', 'openai');
    runs.set(run.jobId, run);
    const options = {
      adapters: { openai: notInline('openai') },
      remainingMs: 120_000,
      receiveCount: 1,
      maxReceiveCount: 3,
    };
    // The delivery that parks it, and one that finds it still waiting: no OCR.
    expect(await processRun(run.jobId, options)).toBe('batched');
    expect(await processRun(run.jobId, options)).toBe('batched');
    expect(ocrCalls).toEqual([]);

    const enqueue = async () => {};
    for (let i = 0; i < 3; i++) await runBatcher({ apis: batchApis(), enqueue, limits: sendAtOnce });
    expect(await processRun(run.jobId, options)).toBe('settled');
    // The answer's delivery grounds it on the page's words: one OCR of page 1.
    expect(ocrCalls).toEqual([[1]]);
    expect(settlements).toHaveLength(1);
  } finally {
    await fakes.close();
  }
});
