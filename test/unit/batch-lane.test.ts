/**
 * The batch lane end to end on OpenAI's batch fake (bench/batch-fakes.ts): a batch run's attempt is parked as a waiting
 * request with its line, the batcher submits it, polls, records the answer once and sends the run back, and the
 * attempt then answers through the adapter's own parser at half the list price. Partial failure and expiry fall back
 * like any failed attempt; a duplicate poll result and a batcher crash between submit and record answer nothing twice.
 * Storage is in memory (test/support/batch-lane-memory.ts).
 */

import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchApis } from '../../shared/batching/apis.js';
import { runBatcher } from '../../shared/batching/batcher.js';
import { BatchParked } from '../../shared/batching/parked.js';
import { batchKey } from '../../shared/pricing/calibration.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import { openaiBatchCodec } from '../../shared/providers/openai/batch.js';
import { calibrationKey } from '../../shared/providers/predict.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import { clearCalibrationCache, tenantItemKey } from '../../shared/store/calibration.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure } from '../../shared/task.js';
import { tryCandidates } from '../../shared/worker/attempts.js';
import { batchLaneAdapters } from '../../shared/worker/batch-lane.js';
import { processRun } from '../../shared/worker/process-run.js';
import { succeeding } from '../support/adapters.js';
import { fixture, mapsAsObjects } from '../support/aws.js';
import {
  attemptInput,
  batchRun as batchRunOf,
  laneMemory,
  notInline,
  sendAtOnce,
} from '../support/batch-lane-memory.js';

const RECEIPT = fixture('receipt.png');
const { table, objects, runs, runUpdates, settlements, ddb } = laneMemory(RECEIPT);

beforeAll(() => {
  process.env.OPENAI_API_KEY = 'sk-test-batch';
});

let fakes: BatchFakes;
beforeEach(async () => {
  fakes = await startBatchFakes({
    behaviour: {
      outcome: () => ({
        kind: 'ok',
        answer: { merchant: 'Corner Shop', total: 12.5 },
        usage: { input: 1000, output: 40 },
      }),
    },
  });
  process.env.OPENAI_BASE_URL = `${fakes.url}/v1`;
});
afterEach(() => fakes.close());

const batchRun = (jobId = 'run_batch1') => batchRunOf(jobId, 'openai');
const inputOf = (run: RunRecord) => attemptInput(run, RECEIPT);
const inlineOpenai = notInline('openai');
const limits = sendAtOnce;
const enqueued: string[] = [];
const pass = (extra: Partial<Parameters<typeof runBatcher>[0]> = {}) =>
  runBatcher({
    apis: batchApis(),
    enqueue: async (jobId) => {
      enqueued.push(jobId);
    },
    limits,
    ...extra,
  });
beforeEach(() => {
  enqueued.length = 0;
});

const invoke = (adapters: Partial<Record<string, ProviderAdapter>>, run: RunRecord) =>
  (adapters.openai as ProviderAdapter).invoke(inputOf(run), {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + 60_000,
  });

/** Parks the run's attempt, then runs batcher passes until its run is sent back. */
async function throughTheLane(runs: RunRecord[], passes = 3) {
  for (const run of runs) {
    await expect(invoke(batchLaneAdapters(run, { openai: inlineOpenai }), run)).rejects.toBeInstanceOf(BatchParked);
  }
  const reports = [];
  for (let i = 0; i < passes; i++) reports.push(await pass());
  return reports;
}

test('an attempt is parked, submitted once, answered, sent back, and priced at half the list price', async () => {
  const run = batchRun();
  const [first, second, third] = await throughTheLane([run]);
  expect(first).toMatchObject({ submitted: 1, answered: 0 });
  expect(second).toMatchObject({ submitted: 0, answered: 0 });
  expect(third).toMatchObject({ answered: 1, handedBack: 1 });
  expect(enqueued).toEqual([run.jobId]);
  expect(fakes.batches).toHaveLength(1);
  expect(fakes.batches[0]?.items.map((i) => i.customId)).toEqual([`${run.jobId}#openai#vision#all`]);

  const output = await invoke(batchLaneAdapters(run, { openai: inlineOpenai }), run);
  expect(output.result).toEqual({ merchant: 'Corner Shop', total: 12.5 });
  // The same answer at list price, through the codec alone: the lane charges half of it, rounded up to the micro.
  const listed = await openaiBatchCodec.parse(
    JSON.parse(objects.get(String(table.get(`${run.jobId}#openai#vision#all`)?.answerKey)) ?? 'null'),
    inputOf(run),
  );
  expect(output.usage.costMicros).toBe(Math.ceil(listed.usage.costMicros / 2));
  expect(output.usage.inputTokens).toBe(1000);

  // Later passes send nothing again and answer nothing twice.
  expect(await pass()).toMatchObject({ submitted: 0, answered: 0, handedBack: 0 });
  expect(fakes.batches).toHaveLength(1);
});

test('a duplicate poll result (the batch read again) resolves nothing twice', async () => {
  const run = batchRun();
  await throughTheLane([run]);
  // The batch record put back in the polling state, as a pass that crashed before closing it would leave it.
  const batch = [...table.values()].find((i) => String(i.requestId).startsWith('batch#'));
  (batch as Record<string, unknown>).openState = 'polling';
  const again = await pass();
  expect(again).toMatchObject({ answered: 0, failed: 0, expired: 0, handedBack: 0 });
  expect(enqueued).toEqual([run.jobId]);
});

test('a batcher crash between the submit and its record: the request waits again, and its run is answered once', async () => {
  const run = batchRun();
  await expect(invoke(batchLaneAdapters(run, { openai: inlineOpenai }), run)).rejects.toBeInstanceOf(BatchParked);
  await expect(
    pass({
      fault: () => {
        throw new Error('crash');
      },
    }),
  ).rejects.toThrow('crash');
  expect(table.get(`${run.jobId}#openai#vision#all`)?.state).toBe('submitting');
  // Not yet stale: left alone.
  expect(await pass()).toMatchObject({ submitted: 0 });
  // Stale: waits again and is submitted in a new batch (the first batch's answer is never read).
  const later = () => Date.now() + 3_600_000;
  expect(await pass({ now: later })).toMatchObject({ submitted: 1 });
  for (let i = 0; i < 2; i++) await pass({ now: later });
  expect(enqueued).toEqual([run.jobId]);
  const output = await invoke(batchLaneAdapters(run, { openai: inlineOpenai }), run);
  expect(output.result).toEqual({ merchant: 'Corner Shop', total: 12.5 });
});

test('a partial failure: the failed item falls back to the next candidate, the others are answered', async () => {
  const runs = [batchRun('run_ok1'), batchRun('run_bad'), batchRun('run_ok2')];
  fakes.configure({
    outcome: (item) =>
      item.customId.startsWith('run_bad')
        ? { kind: 'error', status: 500, message: 'internal' }
        : { kind: 'ok', answer: { merchant: 'Corner Shop', total: 12.5 } },
  });
  const reports = await throughTheLane(runs);
  expect(reports[2]).toMatchObject({ answered: 2, failed: 1, handedBack: 3 });
  expect(fakes.batches).toHaveLength(1);
  expect(fakes.batches[0]?.items).toHaveLength(3);

  const run = runs[1] as RunRecord;
  const local = succeeding('local', { result: { merchant: 'Corner Shop', total: 12.5 } });
  // `local` has no batch interface: its attempt waits for the next window and is then called normally.
  const adapters = batchLaneAdapters(run, { openai: inlineOpenai, local });
  const attempt = () =>
    tryCandidates({
      candidates: run.candidates,
      adapters,
      input: { bytes: RECEIPT, facts: run.file, task: run.task },
      capMicros: run.estimateMicros,
      deadlineMs: Date.now() + 60_000,
      priority: 'batch',
    });
  await expect(attempt()).rejects.toBeInstanceOf(BatchParked);
  expect(await pass()).toMatchObject({ direct: 1, submitted: 0, handedBack: 1 });
  const outcome = await attempt();
  expect(outcome.provider).toBe('local');
  expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
    ['openai', 'failed', 'server'],
    ['local', 'succeeded', undefined],
  ]);
  expect(local.calls).toHaveLength(1);
});

test("an expired batch item fails its attempt as a timeout; a batch still running near the run's deadline expires", async () => {
  fakes.configure({ expire: true, doneBeforeExpiry: 0 });
  const run = batchRun();
  await throughTheLane([run]);
  expect(table.get(`${run.jobId}#openai#vision#all`)?.state).toBe('expired');
  await expect(invoke(batchLaneAdapters(run, { openai: inlineOpenai }), run)).rejects.toMatchObject({
    kind: 'timeout',
  });

  // A batch that never ends: once its run's deadline is within the margin, its request expires here.
  fakes.configure({ expire: false, pollsBeforeEnd: 1_000 });
  const late = batchRun('run_late');
  await throughTheLane([late]);
  expect(table.get(`${late.jobId}#openai#vision#all`)?.state).toBe('submitted');
  const nearDeadline = () => Date.parse(late.expiresAt as string) - 60_000;
  expect(await pass({ now: nearDeadline })).toMatchObject({ expired: 1, handedBack: 1 });
  await expect(invoke(batchLaneAdapters(late, { openai: inlineOpenai }), late)).rejects.toBeInstanceOf(ProviderFailure);
});

test('the worker parks a batch run (stage batched, its lease given up), then settles it once at the batch price', async () => {
  const run = batchRun('run_worker');
  runs.set(run.jobId, run);
  const options = { adapters: { openai: inlineOpenai }, remainingMs: 120_000, receiveCount: 1, maxReceiveCount: 3 };
  expect(await processRun(run.jobId, options)).toBe('batched');
  const parked = runUpdates.find((u) => u.ExpressionAttributeValues?.[':batched'] === 'batched');
  expect(parked?.UpdateExpression).toBe('SET #stage = :batched REMOVE leaseUntil, leaseHolder');
  expect(settlements).toHaveLength(0);

  // A redelivery (a duplicate message, a reconciler resend) while the request waits parks again, settles nothing.
  expect(await processRun(run.jobId, options)).toBe('batched');
  expect(table.size).toBe(1);

  for (let i = 0; i < 3; i++) await pass();
  expect(enqueued).toEqual([run.jobId]);
  expect(await processRun(run.jobId, options)).toBe('settled');
  expect(settlements).toHaveLength(1);
  const runWrite = mapsAsObjects(settlements[0])?.TransactItems?.find(
    (i) => i.Update?.ExpressionAttributeValues?.[':absorbed'] !== undefined,
  );
  const settled = runWrite?.Update?.ExpressionAttributeValues ?? {};
  expect(settled[':usage']).toBeDefined();
  const usage = settled[':usage'] as { costMicros: number; priceMicros: number; requests: number };
  // Half OpenAI's list price for the fake's tokens (rounded up to the micro), then the margin, as the estimate priced.
  const listed = await openaiBatchCodec.parse(
    JSON.parse(objects.get(String(table.get(`${run.jobId}#openai#vision#all`)?.answerKey)) ?? 'null'),
    inputOf(run),
  );
  expect(usage.costMicros).toBe(Math.ceil(listed.usage.costMicros / 2));
  expect(usage.priceMicros).toBe(priceFor(usage.costMicros, run.marginPct));
  expect(fakes.batches).toHaveLength(1);
});

test("the worker predicts a batch run's attempts with the batch calibration its estimate used", async () => {
  // The worker's calibration read is cached for a minute: this delivery reads its own.
  clearCalibrationCache();
  const run = batchRun('run_batch_keys');
  runs.set(run.jobId, run);
  const options = { adapters: { openai: inlineOpenai }, remainingMs: 120_000, receiveCount: 1, maxReceiveCount: 3 };
  expect(await processRun(run.jobId, options)).toBe('batched');
  // The calibration the worker read: a fallback's bound is predicted from it (shared/planning/estimate.ts).
  const asked = ddb
    .commandCalls(BatchGetCommand)
    .flatMap((c) => Object.values(c.args[0].input.RequestItems ?? {}).flatMap((r) => r.Keys ?? []))
    .map((k) => String(k.key));
  const batchVision = batchKey(calibrationKey('openai', run.task, 'vision'));
  expect(asked).toEqual(expect.arrayContaining([batchVision, tenantItemKey(run.tenantId, batchVision)]));
});
