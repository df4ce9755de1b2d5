/**
 * Bedrock batch inference on the local stack (contract v1.2 §4), against the control-plane fake (bench/batch-fakes.ts,
 * reached through AWS_ENDPOINT_URL_BEDROCK) that reads each job's records from the stack's S3 and writes the `.out`
 * records back, as Bedrock does; the same fake answers Converse for the standard and released calls. Bedrock takes no
 * job under 100 records: a smaller group waits, then is called normally (at the normal price) when its runs' deadline
 * nears; a job of 100 completes at half the price to the micro-dollar, its failed and expired records fall back, and a
 * second poll of the job or a second delivery of a run settles nothing twice.
 * Its own stack (the provider list and the batcher's short intervals are global), shared by the cases in order.
 */
import { type BatchFakes, type BatchItem, type ItemOutcome, startBatchFakes } from '../../bench/batch-fakes.js';
import { s3Storage } from '../../bench/batch-fakes-s3.js';
import { batchSettings } from '../../shared/infra/resources.js';
import { priceFor, pricing } from '../../shared/pricing/pricing.js';
import { type BatchLaneClient, batchLaneClient, micros, type Run } from './batch-lane-client.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_batch_bedrock_tenant_0123456789abcdef';
const TENANT = 'batchbedrock';
const MODEL = 'amazon.nova-lite-v1:0';
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', total: 12.5 };
const USAGE = { input: 1000, output: 40 };
const MIN_RECORDS = 100;
const task = { prompt: 'Extract the receipt', schemaId: 'receipt' };
const ok = (): ItemOutcome => ({ kind: 'ok', answer: ANSWER, usage: USAGE });
const recordIndex = (item: BatchItem) => Number(item.customId.slice(1));

/** Bedrock Runtime's Converse answer: the forced result tool called with the answer, the same tokens. */
const converse = () => ({
  json: {
    output: {
      message: {
        role: 'assistant',
        content: [{ toolUse: { toolUseId: 'tooluse_std', name: 'record_result', input: ANSWER } }],
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: USAGE.input, outputTokens: USAGE.output, totalTokens: USAGE.input + USAGE.output },
    metrics: { latencyMs: 10 },
  },
});

describe('Bedrock batch inference on the local stack', () => {
  let fakes: BatchFakes;
  let stack: RunningStack;
  let client: BatchLaneClient;
  let uploadId: string;
  let standard: Run;
  const storage = s3Storage(() => stack.info.endpoints.s3);

  const jobs = () => fakes.requests.filter((r) => r.method === 'POST' && r.path === '/model-invocation-job');
  const converseCalls = () => fakes.requests.filter((r) => /^\/model\/[^/]+\/converse$/.test(r.path)).length;
  const createBatch = () => client.create({ uploadId, ...task, priority: 'batch' });

  beforeAll(async () => {
    fakes = await startBatchFakes({
      storage,
      behaviour: { outcome: ok },
      otherwise: (req) =>
        /^\/model\/[^/]+\/converse$/.test(req.path)
          ? converse()
          : { status: 404, json: { message: `unexpected ${req.method} ${req.path}` } },
    });
    stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      VISION_PROVIDERS: 'bedrock,local',
      BEDROCK_MODEL_ID: MODEL,
      AWS_ACCESS_KEY_ID: 'AKIABATCHBEDROCKFAKE0',
      AWS_SECRET_ACCESS_KEY: 'batch-bedrock-fake-secret',
      AWS_REGION: 'us-east-1',
      VISION_DISABLE_IAM_PROVIDERS: 'false',
      AWS_ENDPOINT_URL_BEDROCK: fakes.url,
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: fakes.url,
      LOCAL_BATCH_INTERVAL_SECONDS: '1',
      SERVICE_BATCH_MAX_WAIT_SECONDS: '1',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
      LOCAL_WORKER_CONCURRENCY: '4',
    });
    client = batchLaneClient(stack, KEY, TENANT);
    // A one-page text PDF: its batch line is its text (no page images, no evidence OCR on a parking delivery).
    uploadId = await client.upload('invoice.pdf');
    standard = await client.final((await client.create({ uploadId, ...task })).jobId);
  }, 150_000);
  afterAll(async () => {
    client?.close();
    await stack?.stop();
    await fakes?.close();
    storage.close();
  });

  test('the standard run: one Converse call, the baseline price', () => {
    expect(standard.status).toBe('completed');
    expect(standard.attempts?.map((a) => [a.provider, a.outcome])).toEqual([['bedrock', 'succeeded']]);
    expect(micros(standard.usage?.costUsd)).toBeGreaterThan(0);
  });

  test('under 100 records no job is created: the runs wait, then are called normally at the normal price', async () => {
    // Bedrock's minimum may not be met: a batch estimate promises the normal price (the spend limit fits a normal call).
    const both = await client.estimate({ uploadId, ...task });
    expect(both.batch.estimatedCostUsd).toBe(both.standard.estimatedCostUsd);
    const runs = [await createBatch(), await createBatch()];
    for (const run of runs) await client.waitFor(run.jobId, (r) => r.stage === 'batched', 'batched');
    const calls = converseCalls();
    // Several batcher passes: the group stays under the minimum, so nothing is sent.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(jobs()).toHaveLength(0);
    expect(converseCalls()).toBe(calls);
    for (const run of runs) expect((await client.get(run.jobId)).stage).toBe('batched');

    // Time passes: the runs' deadline comes within the margin a normal call needs, so the batcher releases them.
    const soon = Date.now() + batchSettings.directMarginSeconds * 1000 - 1_000;
    for (const item of await client.batchItems()) {
      if (runs.some((r) => String(item.requestId).startsWith(`${r.jobId}#`))) {
        await client.updateBatchItem(String(item.requestId), { deadlineMs: soon });
      }
    }
    for (const created of runs) {
      const run = await client.final(created.jobId);
      expect(run.status).toBe('completed');
      expect(run.attempts?.map((a) => [a.provider, a.outcome])).toEqual([['bedrock', 'succeeded']]);
      expect(run.usage?.costUsd).toBe(standard.usage?.costUsd);
      expect(run.usage?.priceUsd).toBe(standard.usage?.priceUsd);
      expect(await client.ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    }
    expect(converseCalls()).toBe(calls + runs.length);
    expect(jobs()).toHaveLength(0);
  }, 120_000);

  test('a job of 100 records: the answered runs cost half, a failed record falls back, and so do expired ones', async () => {
    // The job stays in progress until every run is in it; then record 3 fails and the last two expire.
    fakes.configure({
      pollsBeforeEnd: 1_000_000,
      outcome: (item) => (recordIndex(item) === 3 ? { kind: 'error', status: 500, message: 'internal' } : ok()),
    });
    // Created ten at a time (as clients would): the worker parks each while the others are created.
    const runs: Run[] = [];
    while (runs.length < MIN_RECORDS) runs.push(...(await Promise.all(Array.from({ length: 10 }, createBatch))));
    const deadline = Date.now() + 180_000;
    while (fakes.batches.filter((b) => b.provider === 'bedrock').length === 0) {
      if (Date.now() > deadline) throw new Error('the batcher never created a job of 100 records');
      await new Promise((r) => setTimeout(r, 500));
    }
    const job = fakes.batches.find((b) => b.provider === 'bedrock');
    expect(job?.items).toHaveLength(MIN_RECORDS);
    expect(jobs()).toHaveLength(1);
    const sent = jobs()[0]?.body as Record<string, unknown>;
    expect(sent).toMatchObject({ modelId: MODEL, modelInvocationType: 'InvokeModel' });
    expect(String(sent.roleArn)).toMatch(/^arn:aws:iam::\d{12}:role\//);

    fakes.configure({ pollsBeforeEnd: 0, expire: true, doneBeforeExpiry: MIN_RECORDS - 2 });
    // One run polled at a time: by the time the first is final most others are, and a hundred pollers at once (400
    // requests a second) would take the stack's CPU from the worker they wait for.
    const done: Run[] = [];
    for (const run of runs) done.push(await client.final(run.jobId, 180_000));
    const byPath = (path: string) =>
      done.filter((r) => JSON.stringify(r.attempts?.map((a) => [a.provider, a.outcome, a.failure ?? null])) === path);
    const answered = byPath(JSON.stringify([['bedrock', 'succeeded', null]]));
    const failed = byPath(
      JSON.stringify([
        ['bedrock', 'failed', 'server'],
        ['local', 'succeeded', null],
      ]),
    );
    const expired = byPath(
      JSON.stringify([
        ['bedrock', 'failed', 'timeout'],
        ['local', 'succeeded', null],
      ]),
    );
    expect([answered.length, failed.length, expired.length]).toEqual([MIN_RECORDS - 3, 1, 2]);

    const batchCost = Math.ceil(micros(standard.usage?.costUsd) / 2);
    for (const run of answered) {
      expect(run.result).toMatchObject(ANSWER);
      expect(micros(run.usage?.costUsd)).toBe(batchCost);
      expect(micros(run.usage?.priceUsd)).toBe(priceFor(batchCost, pricing.marginPct));
      expect(micros(run.chargedUsd)).toBe(Math.min(micros(run.usage?.priceUsd), micros(run.estimatedCostUsd)));
    }
    for (const run of done) {
      expect(run.status).toBe('completed');
      expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    }
    // Nothing went twice: one job of 100 records (one per run), each run held and settled once.
    expect(jobs()).toHaveLength(1);
    for (const run of runs) expect(await client.ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);

    // The job read again (a batcher pass that crashed before closing it) and a run delivered again: settled once.
    const one = answered[0] as Run;
    await client.pollAgain(one.jobId);
    await client.redeliver(one.jobId);
    await client.queueDrained();
    const after = await client.get(one.jobId);
    expect(after.chargedUsd).toBe(one.chargedUsd);
    expect(after.completedAt).toBe(one.completedAt);
    expect(await client.ledgerKinds(one.jobId)).toEqual(['hold', 'settle']);
    expect(jobs()).toHaveLength(1);
  }, 420_000);
});
