/** The SDK (sdk/index.ts) against the shared local stack: the whole analyze flow and the error mapping. */
import { readFile } from 'node:fs/promises';
import { type ProgressEvent, VisionClient, VisionError } from '../../sdk/index.js';
import { KEYS, stack } from './client.js';

const fixturePath = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).pathname;
const sdk = () => new VisionClient({ baseUrl: stack().baseUrl, apiKey: KEYS.a });

describe('SDK against the local stack', () => {
  test('analyze(receipt.png, schemaId receipt) completes with the total and reports progress', async () => {
    const events: ProgressEvent[] = [];
    const run = await sdk().analyze(
      fixturePath('receipt.png'),
      { prompt: 'Extract the receipt', schemaId: 'receipt', workflow: 'sdk-test', metadata: { source: 'sdk' } },
      { onProgress: (e) => events.push(e), timeoutMs: 90_000 },
    );
    expect(run.status).toBe('completed');
    expect(run.result.total).toBe(42.5);
    expect(run.workflow).toBe('sdk-test');
    expect(run.metadata).toEqual({ source: 'sdk' });
    const stages = events.map((e) => e.stage);
    expect(stages[0]).toBe('uploading');
    expect(stages.at(-1)).toBe('completed');
    expect(stages).toContain('queued');
    expect(events.find((e) => e.stage === 'uploading' && e.uploadedBytes === e.totalBytes)).toBeDefined();
    expect(events.at(-1)?.jobId).toBe(run.jobId);
    // Elapsed time never goes backwards.
    for (let i = 1; i < events.length; i++) {
      expect(events[i]?.elapsedMs).toBeGreaterThanOrEqual(events[i - 1]?.elapsedMs ?? 0);
    }
  });

  test('analyze accepts bytes (type sniffed) and a Blob, and the low-level calls read the run back', async () => {
    const bytes = new Uint8Array(await readFile(fixturePath('receipt.png')));
    const vision = sdk();
    const fromBytes = await vision.analyze(bytes, { prompt: 'Extract', schemaId: 'receipt' });
    expect(fromBytes.result.total).toBe(42.5);
    const created = await vision.submit(new Blob([bytes]), { prompt: 'Summarize', outputFormat: 'text' });
    expect(created.status).toBe('queued');
    const done = await vision.waitForRun(created.jobId, { timeoutMs: 90_000 });
    expect(typeof done.result.text).toBe('string');
    const read = await vision.getRun(created.jobId);
    expect(read.status).toBe('completed');
    const list = await vision.listRuns({ limit: 5 });
    expect(list.items.map((r) => r.jobId)).toContain(created.jobId);
    const verified = await vision.verify(created.jobId, { accepted: true, note: 'sdk' });
    expect(verified.verification.accepted).toBe(true);
    expect((await vision.schemas()).items.map((s) => s.id)).toContain('receipt');
    expect((await vision.usage()).totals.runs).toBeGreaterThan(0);
    const hourly = await vision.usage({ interval: 'hour', from: new Date(Date.now() - 3600_000).toISOString() });
    expect(hourly.series.at(-1)?.totals.runs).toBeGreaterThan(0);
    const file = await vision.fileUrl(created.jobId);
    expect(file.contentType).toBe('image/png');
    expect(Buffer.from(await (await fetch(file.url)).arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    expect(await vision.health()).toEqual({ status: 'ok' });
  });

  test('UNKNOWN_SCHEMA becomes a VisionError with the contract fields', async () => {
    const error = await sdk()
      .analyze(fixturePath('receipt.png'), { prompt: 'Extract', schemaId: 'no-such-schema' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VisionError);
    expect(error).toMatchObject({ code: 'UNKNOWN_SCHEMA', status: 400, retryable: false, run: undefined });
    expect((error as VisionError).details?.schemaId).toBe('no-such-schema');
    expect(typeof (error as VisionError).requestId).toBe('string');
  });

  test('cost confirmation: rejected without confirmation, completed through the confirmCost callback', async () => {
    const vision = sdk();
    const error = await vision
      .submit(fixturePath('scanned-pages.pdf'), { prompt: 'Summarize' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'COST_CONFIRMATION_REQUIRED', status: 402 });
    const asked: number[] = [];
    const run = await vision.analyze(
      fixturePath('scanned-pages.pdf'),
      { prompt: 'Summarize', outputFormat: 'text' },
      {
        confirmCost: ({ estimatedCostUsd }) => {
          asked.push(estimatedCostUsd);
          return true;
        },
      },
    );
    expect(asked).toHaveLength(1);
    expect(run.estimatedCostUsd).toBe(asked[0]);
  });

  test('a bad key is UNAUTHORIZED; an unknown run is NOT_FOUND', async () => {
    const bad = new VisionClient({ baseUrl: stack().baseUrl, apiKey: 'vk_wrong' });
    await expect(bad.schemas()).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    await expect(sdk().getRun('run_doesnotexist')).rejects.toMatchObject({ code: 'NOT_FOUND', status: 404 });
  });

  test('an unreachable service is NETWORK_ERROR after retries', async () => {
    const vision = new VisionClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: KEYS.a,
      retry: { retries: 1, baseDelayMs: 1 },
    });
    await expect(vision.health()).rejects.toMatchObject({ code: 'NETWORK_ERROR', status: 0, retryable: true });
  });
});
