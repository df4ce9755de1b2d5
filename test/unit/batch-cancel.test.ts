/**
 * Cancelling a provider batch nobody waits for any more. Each batch API's cancel as its reference has it (method,
 * path, key header) on the wire fakes (bench/batch-fakes.ts; Bedrock's StopModelInvocationJob is in
 * bedrock-batch.test.ts); then the batcher on OpenAI's fake with the lane's storage in memory: a batch whose every
 * request expired near its deadline is cancelled once (across passes, and two passes at once), its late answers change
 * nothing, a batch a request may still take an answer from is left alone, and a refused cancel fails nothing.
 */

import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchApis } from '../../shared/batching/apis.js';
import { runBatcher } from '../../shared/batching/batcher.js';
import { BatchParked } from '../../shared/batching/parked.js';
import { setLogSink } from '../../shared/log.js';
import { anthropicBatchApi } from '../../shared/providers/anthropic/batch-api.js';
import type { BatchApi } from '../../shared/providers/batch-codec.js';
import { geminiBatchApi } from '../../shared/providers/gemini/batch-api.js';
import { openaiBatchApi } from '../../shared/providers/openai/batch-api.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { batchLaneAdapters } from '../../shared/worker/batch-lane.js';
import { fixture } from '../support/aws.js';
import { attemptInput, batchRun, laneMemory, notInline, sendAtOnce } from '../support/batch-lane-memory.js';

const RECEIPT = fixture('receipt.png');
const { table, objects } = laneMemory(RECEIPT);

let fakes: BatchFakes;
beforeEach(async () => {
  fakes = await startBatchFakes({
    behaviour: {
      outcome: () => ({
        kind: 'ok',
        answer: { merchant: 'Corner Shop', total: 12.5 },
        usage: { input: 900, output: 30 },
      }),
      // Running until cancelled; a cancelled batch ends with its first line answered.
      pollsBeforeEnd: 1_000,
      doneBeforeExpiry: 1,
    },
  });
  process.env.OPENAI_API_KEY = 'sk-test-cancel';
  process.env.OPENAI_BASE_URL = `${fakes.url}/v1`;
});
afterEach(() => fakes.close());

describe.each([
  {
    provider: 'openai',
    api: (url: string) => openaiBatchApi({ OPENAI_API_KEY: 'sk-cancel-key', OPENAI_BASE_URL: `${url}/v1` }),
    path: (ref: string) => `/v1/batches/${ref}/cancel`,
    key: ['authorization', 'Bearer sk-cancel-key'],
  },
  {
    provider: 'anthropic',
    api: (url: string) => anthropicBatchApi({ ANTHROPIC_API_KEY: 'sk-ant-cancel-key', ANTHROPIC_BASE_URL: url }),
    path: (ref: string) => `/v1/messages/batches/${ref}/cancel`,
    key: ['x-api-key', 'sk-ant-cancel-key'],
  },
  {
    provider: 'gemini',
    api: (url: string) => geminiBatchApi({ GEMINI_API_KEY: 'gemini-cancel-key', GEMINI_BASE_URL: url }),
    // The reference: POST /v1beta/{name=batches/*}:cancel; the batch's reference is its name.
    path: (ref: string) => `/v1beta/${ref}:cancel`,
    key: ['x-goog-api-key', 'gemini-cancel-key'],
  },
])('$provider batch API: cancel', ({ api, path, key }) => {
  test('POSTs the cancel with the key; the batch then ends with the lines done so far; an ended one is refused', async () => {
    const batches = api(fakes.url);
    const ids = ['run_a#x#vision#all', 'run_b#x#vision#all'];
    const ref = await batches.submit(
      'model-1',
      ids.map((customId) => ({ customId, body: { model: 'model-1', input: customId } })),
    );
    expect(await batches.poll(ref, ids)).toBeUndefined();

    await batches.cancel(ref);
    const sent = fakes.requests.at(-1);
    expect([sent?.method, sent?.path]).toEqual(['POST', path(ref)]);
    expect(sent?.headers[key[0] as string]).toBe(key[1]);

    // Polled as before: it ended; the line answered before the cancel is still answered (and billed), the other not.
    const results = await batches.poll(ref, ids);
    expect(results?.get(ids[0] as string)?.kind).toBe('answer');
    expect(results?.get(ids[1] as string)?.kind).not.toBe('answer');

    const refused = await batches.cancel(ref).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/HTTP 400/);
    expect((refused as Error).message).not.toContain(key[1]);
  });
});

// ---------- the batcher ----------

const inlineOpenai = notInline('openai');
const enqueued: string[] = [];
beforeEach(() => {
  enqueued.length = 0;
});
const pass = (extra: Partial<Parameters<typeof runBatcher>[0]> = {}) =>
  runBatcher({
    apis: batchApis(),
    enqueue: async (jobId) => {
      enqueued.push(jobId);
    },
    limits: sendAtOnce,
    ...extra,
  });

const invoke = (run: RunRecord) =>
  (batchLaneAdapters(run, { openai: inlineOpenai }).openai as ProviderAdapter).invoke(attemptInput(run, RECEIPT), {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + 60_000,
  });

/** Parks each run's attempt and submits them in one batch (still running after `passes` passes). */
async function submitted(runs: RunRecord[], passes = 2): Promise<void> {
  for (const run of runs) await expect(invoke(run)).rejects.toBeInstanceOf(BatchParked);
  for (let i = 0; i < passes; i++) await pass();
  for (const run of runs) expect(table.get(`${run.jobId}#openai#vision#all`)?.state).toBe('submitted');
}

const cancels = () => fakes.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/cancel'));
const batchItems = () => [...table.values()].filter((i) => String(i.requestId).startsWith('batch#'));
/** A minute before the runs' deadline: within the margin, so their requests expire. */
const nearDeadline = (run: RunRecord) => () => Date.parse(run.expiresAt as string) - 60_000;

test('a batch whose every request expired near the deadline is cancelled once; its late answers change nothing', async () => {
  const runs = [batchRun('run_c1', 'openai'), batchRun('run_c2', 'openai')];
  await submitted(runs);
  expect(cancels()).toHaveLength(0);

  const near = nearDeadline(runs[0] as RunRecord);
  expect(await pass({ now: near })).toMatchObject({ expired: 2, cancelled: 1, handedBack: 2 });
  expect(cancels()).toHaveLength(1);
  expect(batchItems()[0]?.cancelRequestedAt).toEqual(expect.any(String));

  // The next pass polls it as before: it ended (cancelled) with its first line answered. The requests stay expired:
  // no answer is stored, nothing is handed back again, and the batch is not cancelled twice.
  expect(await pass({ now: near })).toMatchObject({ answered: 0, expired: 0, cancelled: 0, handedBack: 0 });
  expect(fakes.batches[0]?.items).toHaveLength(2);
  for (const run of runs) {
    const request = table.get(`${run.jobId}#openai#vision#all`);
    expect([request?.state, request?.answerKey]).toEqual(['expired', undefined]);
  }
  expect([...objects.keys()].filter((k) => k.includes('/answers/'))).toEqual([]);
  expect(batchItems()[0]?.openState).toBeUndefined();
  expect(await pass({ now: near })).toMatchObject({ cancelled: 0, handedBack: 0 });
  expect(cancels()).toHaveLength(1);
  expect(enqueued.sort()).toEqual(['run_c1', 'run_c2']);

  // Each run falls back: its attempt fails as a timeout, never answered from the cancelled batch.
  for (const run of runs) await expect(invoke(run)).rejects.toMatchObject({ kind: 'timeout' });
});

test('two passes at once cancel the batch once', async () => {
  const run = batchRun('run_twice', 'openai');
  await submitted([run]);
  const near = nearDeadline(run);
  const reports = await Promise.all([pass({ now: near }), pass({ now: near })]);
  expect(reports.map((r) => r.cancelled).sort()).toEqual([0, 1]);
  expect(reports.reduce((sum, r) => sum + r.expired, 0)).toBe(1);
  expect(cancels()).toHaveLength(1);
});

test('a batch a request may still take an answer from is left alone, and cancelled once that request is resolved', async () => {
  const run = batchRun('run_crash', 'openai');
  await expect(invoke(run)).rejects.toBeInstanceOf(BatchParked);
  // A crash after the batch was recorded, before its request was marked submitted: it stays `submitting`.
  await expect(
    pass({
      fault: (point) => {
        if (point === 'after-record') throw new Error('crash');
      },
    }),
  ).rejects.toThrow('crash');
  expect(table.get(`${run.jobId}#openai#vision#all`)?.state).toBe('submitting');

  // Near the deadline the batch still runs, and its request is not resolved: no cancel. The same pass puts the stale
  // request back to waiting and, its deadline being near, releases it to a normal call (groups.ts) rather than batch it.
  const near = nearDeadline(run);
  expect(await pass({ now: near })).toMatchObject({ expired: 0, cancelled: 0, submitted: 0, direct: 1 });
  expect(cancels()).toHaveLength(0);
  expect(fakes.batches).toHaveLength(1);
  // The next pass finds the request resolved for good (called normally): nobody waits for the batch, cancelled once.
  expect(await pass({ now: near })).toMatchObject({ expired: 0, cancelled: 1 });
  expect(cancels().map((r) => r.path)).toEqual(fakes.batches.map((b) => `/v1/batches/${b.batchId}/cancel`));
  expect(await pass({ now: near })).toMatchObject({ cancelled: 0 });
  expect(cancels()).toHaveLength(1);
});

test('a cancel the provider refuses is logged, fails no pass, blocks no other batch, and is not asked again', async () => {
  const first = batchRun('run_refused', 'openai');
  await submitted([first], 1);
  const second = batchRun('run_other', 'openai');
  await submitted([second], 1);
  expect(fakes.batches).toHaveLength(2);

  const real = batchApis().openai as BatchApi;
  const asked: string[] = [];
  const openai: BatchApi = {
    ...real,
    cancel: async (ref) => {
      asked.push(ref);
      if (asked.length === 1) throw new Error(`openai batch: HTTP 500 on POST /batches/${ref}/cancel`);
      await real.cancel(ref);
    },
  };
  const warnings: string[] = [];
  const level = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'warn';
  setLogSink((entry) => {
    if (entry.level === 'warn') warnings.push(JSON.stringify(entry));
  });
  try {
    const near = nearDeadline(first);
    expect(await pass({ apis: { openai }, now: near })).toMatchObject({ expired: 2, cancelled: 1 });
    expect(asked).toEqual(fakes.batches.map((b) => b.batchId));
    expect(cancels()).toHaveLength(1);
    expect(warnings.join('')).toContain('could not be cancelled');
    expect(warnings.join('')).not.toContain('sk-test-cancel');

    // Not asked again: the refused batch runs to its end, polled as before.
    expect(await pass({ apis: { openai }, now: near })).toMatchObject({ cancelled: 0, answered: 0 });
    expect(asked).toHaveLength(2);
  } finally {
    setLogSink(null);
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  }
});
