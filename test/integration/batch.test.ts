/**
 * The batch lane on the local stack (contract v1.2 §4), against OpenAI's batch fake (bench/batch-fakes.ts), which also
 * answers the synchronous Responses API for standard runs. A batch run shows `expiresAt`, waits `batched` while its
 * provider batch runs, and completes at half the standard price to the micro-dollar; a failed or expired batch item
 * falls back to the next candidate within the spend limit; a redelivered run and a batch polled twice settle once. An
 * evaluation at batch priority makes batch runs, held at the batch price, through OpenAI's and Anthropic's batch fakes;
 * an Anthropic batch's failed and expired items fail their runs (named alone, it has no fallback), refunded. A batch
 * still running at its run's deadline is cancelled once, and its late answer changes nothing.
 * Its own stack: the provider list and the batcher's short intervals are global.
 */
import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchSettings } from '../../shared/infra/resources.js';
import { priceFor, pricing } from '../../shared/pricing/pricing.js';
import { customIdOf } from '../../shared/providers/anthropic/batch-api.js';
import { openaiAnswer } from '../support/openai-answers.js';
import { type BatchLaneClient, batchLaneClient, micros, type Run } from './batch-lane-client.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_batch_lane_tenant_0123456789abcdef';
const TENANT = 'batchlane';
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', total: 12.5 };
const USAGE = { input: 1000, output: 40 };
const task = { prompt: 'Extract the receipt', schemaId: 'receipt' };

const ok = () => ({ kind: 'ok' as const, answer: ANSWER, usage: USAGE });

describe('the batch lane on the local stack', () => {
  let fakes: BatchFakes;
  let stack: RunningStack;
  let client: BatchLaneClient;
  let uploadId: string;

  beforeAll(async () => {
    fakes = await startBatchFakes({
      behaviour: { outcome: ok },
      // Standard runs: the same answer and usage through the synchronous API.
      otherwise: (req) =>
        req.path === '/v1/responses'
          ? openaiAnswer(ANSWER, USAGE, { model: 'gpt-5.4-mini-2026-03-17' })
          : { status: 404, json: { error: { message: `unexpected ${req.method} ${req.path}` } } },
    });
    stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      // Runs plan openai then local; evaluations may also name anthropic, whose batch API is on the same fake.
      VISION_PROVIDERS: 'openai,local,anthropic',
      OPENAI_API_KEY: 'sk-test-batch-lane-0123456789',
      OPENAI_BASE_URL: `${fakes.url}/v1`,
      ANTHROPIC_API_KEY: 'sk-ant-test-batch-lane-0123456789',
      ANTHROPIC_BASE_URL: fakes.url,
      // A batcher pass every second, a group sent once its oldest request waited a second.
      LOCAL_BATCH_INTERVAL_SECONDS: '1',
      SERVICE_BATCH_MAX_WAIT_SECONDS: '1',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
    });
    client = batchLaneClient(stack, KEY, TENANT);
    uploadId = await client.upload('receipt.png');
  }, 150_000);
  afterAll(async () => {
    client?.close();
    await stack?.stop();
    await fakes?.close();
  });
  beforeEach(() => {
    fakes.configure({ outcome: ok, pollsBeforeEnd: 1, expire: false, doneBeforeExpiry: 0 });
  });

  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });

  const create = (body: Record<string, unknown>) => client.create({ uploadId, ...task, ...body });
  const get = (jobId: string) => client.get(jobId);
  const waitFor = (jobId: string, done: (run: Run) => boolean, what: string) => client.waitFor(jobId, done, what);
  const final = (jobId: string) => client.final(jobId);
  /** Waits until the fake holds a batch with the run's request (the run parked, the batcher submitted it). */
  async function submitted(jobId: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!fakes.batches.some((b) => b.items.some((i) => i.customId.startsWith(`${jobId}#`)))) {
      if (Date.now() > deadline) throw new Error(`run ${jobId} never submitted in a batch`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  /** How many times the run's requests reached the provider's batch API. */
  const sent = (jobId: string) =>
    fakes.batches.flatMap((b) => b.items).filter((i) => i.customId.startsWith(`${jobId}#`)).length;

  const ledgerKinds = (jobId: string) => client.ledgerKinds(jobId);
  const redeliver = (jobId: string) => client.redeliver(jobId);
  const queueDrained = () => client.queueDrained();

  test('a batch run shows expiresAt, waits batched, and completes at half the standard price to the micro-dollar', async () => {
    const standard = await final((await create({})).jobId);
    expect(standard.status).toBe('completed');
    expect(standard.attempts?.map((a) => [a.provider, a.outcome])).toEqual([['openai', 'succeeded']]);

    // The provider batch stays in progress until the test lets it end.
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const created = await create({ priority: 'batch' });
    expect(created.priority).toBe('batch');
    expect(Date.parse(String(created.expiresAt)) - Date.parse(String(created.createdAt))).toBe(24 * 3_600_000);
    expect(created.estimatedCostUsd).toBeLessThan(standard.estimatedCostUsd);
    const batched = await waitFor(created.jobId, (r) => r.stage === 'batched', 'batched');
    expect(batched).toMatchObject({ status: 'queued', stage: 'batched', expiresAt: created.expiresAt });
    expect(batched.progress).toMatchObject({ stage: 'batched' });
    await submitted(created.jobId);

    // Two redeliveries while it waits: parked again, nothing sent twice, nothing settled.
    await redeliver(created.jobId);
    await redeliver(created.jobId);
    await queueDrained();
    expect((await get(created.jobId)).stage).toBe('batched');
    expect(await ledgerKinds(created.jobId)).toEqual(['hold']);

    fakes.configure({ pollsBeforeEnd: 0 });
    const run = await final(created.jobId);
    expect(run.status).toBe('completed');
    expect(run.result).toMatchObject(ANSWER);
    expect(run.attempts?.map((a) => [a.provider, a.outcome])).toEqual([['openai', 'succeeded']]);
    expect(run.expiresAt).toBe(created.expiresAt);
    expect(sent(created.jobId)).toBe(1);
    // The same tokens cost half as a batch (rounded up to the micro), and the price is that cost with the margin.
    const standardCost = micros(standard.usage?.costUsd);
    expect(standardCost).toBeGreaterThan(0);
    expect(micros(run.usage?.costUsd)).toBe(Math.ceil(standardCost / 2));
    expect(micros(run.usage?.priceUsd)).toBe(priceFor(Math.ceil(standardCost / 2), pricing.marginPct));
    expect(micros(run.chargedUsd)).toBe(Math.min(micros(run.usage?.priceUsd), micros(run.estimatedCostUsd)));
    expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    expect(await ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);

    // The provider batch read again (a pass that crashed before closing it), and the run delivered again: the
    // answer is not recorded twice, the run is not settled twice.
    await client.pollAgain(created.jobId);
    await redeliver(created.jobId);
    await queueDrained();
    const after = await get(created.jobId);
    expect(after.chargedUsd).toBe(run.chargedUsd);
    expect(after.completedAt).toBe(run.completedAt);
    expect(await ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    expect(sent(created.jobId)).toBe(1);
  });

  test('a batch that fails part of its items: the failed run falls back to the next candidate, the others complete', async () => {
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    const runs = [
      await create({ priority: 'batch' }),
      await create({ priority: 'batch' }),
      await create({ priority: 'batch' }),
    ];
    for (const run of runs) await submitted(run.jobId);
    const bad = runs[1] as Run;
    fakes.configure({
      pollsBeforeEnd: 0,
      outcome: (item) =>
        item.customId.startsWith(`${bad.jobId}#`) ? { kind: 'error', status: 500, message: 'internal' } : ok(),
    });
    const done = await Promise.all(runs.map((r) => final(r.jobId)));
    for (const run of done) {
      expect(run.status).toBe('completed');
      expect(sent(run.jobId)).toBe(1);
      expect(await ledgerKinds(run.jobId)).toEqual(['hold', 'settle']);
      // Within the spend limit: never charged more than the estimate held.
      expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
    }
    const fellBack = done[1] as Run;
    expect(fellBack.attempts?.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'server'],
      ['local', 'succeeded', undefined],
    ]);
    expect((fellBack.result as { total: unknown }).total).toBe(42.5);
    for (const run of [done[0], done[2]] as Run[]) {
      expect(run.attempts?.map((a) => [a.provider, a.outcome])).toEqual([['openai', 'succeeded']]);
      expect(run.result).toMatchObject(ANSWER);
    }
  });

  test('an expired batch item falls back like a timed-out attempt', async () => {
    fakes.configure({ expire: true, doneBeforeExpiry: 0 });
    const created = await create({ priority: 'batch' });
    const run = await final(created.jobId);
    expect(run.status).toBe('completed');
    expect(run.attempts?.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'timeout'],
      ['local', 'succeeded', undefined],
    ]);
    expect(sent(created.jobId)).toBe(1);
    expect(await ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    expect(micros(run.chargedUsd) + micros(run.refundedUsd)).toBe(micros(run.estimatedCostUsd));
  });

  test("a batch still running at its run's deadline: the run falls back, the batch is cancelled once, its late answer changes nothing", async () => {
    // Running until cancelled; cancelled, it ends with its line answered (and billed by the provider).
    fakes.configure({ pollsBeforeEnd: 1_000_000, doneBeforeExpiry: 1 });
    const created = await create({ priority: 'batch' });
    await submitted(created.jobId);
    const batch = (await client.batchItems()).find((i) =>
      (i.requestIds as string[] | undefined)?.some((id) => id.startsWith(`${created.jobId}#`)),
    );
    const ref = String(batch?.ref);
    // Its deadline within the margin (rather than waiting 23 hours): the next pass expires the request.
    const soon = Date.now() + batchSettings.directMarginSeconds * 1000 - 1_000;
    await client.updateBatchItem(String(batch?.requestId), { deadlineMs: soon });

    const run = await final(created.jobId);
    expect(run.status).toBe('completed');
    expect(run.attempts?.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'timeout'],
      ['local', 'succeeded', undefined],
    ]);
    const cancels = () => fakes.requests.filter((r) => r.method === 'POST' && r.path === `/v1/batches/${ref}/cancel`);
    // Polled to its end (cancelled), then closed without reading its answer.
    const deadline = Date.now() + 30_000;
    while ((await client.batchItems()).find((i) => i.requestId === batch?.requestId)?.openState) {
      if (Date.now() > deadline) throw new Error('the cancelled batch was never closed');
      await new Promise((r) => setTimeout(r, 200));
    }
    await queueDrained();
    expect(cancels()).toHaveLength(1);
    const request = (await client.batchItems()).find((i) => i.requestId === `${created.jobId}#openai#vision#all`);
    expect([request?.state, request?.answerKey]).toEqual(['expired', undefined]);
    const after = await get(created.jobId);
    expect(after.chargedUsd).toBe(run.chargedUsd);
    expect(after.attempts).toEqual(run.attempts);
    expect(await ledgerKinds(created.jobId)).toEqual(['hold', 'settle']);
    expect(sent(created.jobId)).toBe(1);
  });

  /** An evaluation at batch priority through Anthropic alone, over `count` copies of the receipt; read when final. */
  async function anthropicEvaluation(count: number, before?: (jobIds: string[]) => Promise<void>) {
    const reply = await api('/v1/evaluations', {
      method: 'POST',
      body: JSON.stringify({
        name: 'anthropic batch',
        schemaId: 'receipt',
        providers: ['anthropic'],
        priority: 'batch',
        items: Array.from({ length: count }, () => ({ uploadId, expected: { total: ANSWER.total } })),
      }),
    });
    expect(reply.status).toBe(202);
    const created = (await reply.json()) as { evaluationId: string; estimatedCostUsd: number };
    const read = async () =>
      (await (await api(`/v1/evaluations/${created.evaluationId}`)).json()) as Record<string, unknown> & {
        status: string;
        chargedUsd: number;
        refundedUsd: number;
        items?: Array<{ jobId?: string }>;
      };
    const deadline = Date.now() + 120_000;
    let jobIds: string[] = [];
    while (jobIds.length < count) {
      if (Date.now() > deadline) throw new Error('the evaluation never made its runs');
      await new Promise((r) => setTimeout(r, 300));
      jobIds = ((await read()).items ?? []).flatMap((i) => (i.jobId ? [i.jobId] : []));
    }
    await before?.(jobIds);
    let evaluation = await read();
    while (evaluation.status === 'queued') {
      if (Date.now() > deadline) throw new Error('the evaluation never finished');
      await new Promise((r) => setTimeout(r, 500));
      evaluation = await read();
    }
    return { created, evaluation, runs: await Promise.all(jobIds.map((jobId) => final(jobId))) };
  }
  const anthropicIdOf = (jobId: string) => customIdOf(`${jobId}#anthropic#vision#all`);

  test("Anthropic's batch fails one item: that run fails and is refunded, the others complete, each settled once", async () => {
    fakes.configure({ pollsBeforeEnd: 1_000_000 });
    let bad = '';
    const { created, evaluation, runs } = await anthropicEvaluation(3, async (jobIds) => {
      const deadline = Date.now() + 60_000;
      const sentIds = () => new Set(fakes.batches.flatMap((b) => b.items.map((i) => i.customId)));
      while (!jobIds.every((id) => sentIds().has(anthropicIdOf(id)))) {
        if (Date.now() > deadline) throw new Error('the runs never reached the Anthropic batch API');
        await new Promise((r) => setTimeout(r, 200));
      }
      bad = anthropicIdOf(jobIds[1] as string);
      fakes.configure({
        pollsBeforeEnd: 0,
        outcome: (item) => (item.customId === bad ? { kind: 'error', status: 500, message: 'internal' } : ok()),
      });
    });
    expect(evaluation.status).toBe('completed');
    let charged = 0;
    let refunded = 0;
    for (const run of runs) {
      const failed = anthropicIdOf(run.jobId) === bad;
      // Named alone, Anthropic has no candidate after it: its failed item fails the run, refunded in full.
      expect(run.status).toBe(failed ? 'failed' : 'completed');
      expect(run.attempts?.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
        failed ? ['anthropic', 'failed', 'server'] : ['anthropic', 'succeeded', undefined],
      ]);
      if (failed) expect(micros(run.chargedUsd)).toBe(0);
      // Each request reached the batch API once; one settlement per run.
      expect(fakes.batches.flatMap((b) => b.items).filter((i) => i.customId === anthropicIdOf(run.jobId))).toHaveLength(
        1,
      );
      expect(await ledgerKinds(run.jobId)).toEqual(['settle']);
      charged += micros(run.chargedUsd);
      refunded += micros(run.refundedUsd);
    }
    expect(charged + refunded).toBe(micros(created.estimatedCostUsd));
    expect(micros(evaluation.chargedUsd)).toBe(charged);
  });

  test("Anthropic's expired batch: its run fails as a timed-out attempt and is refunded, settled once", async () => {
    fakes.configure({ expire: true, doneBeforeExpiry: 0 });
    const { created, runs } = await anthropicEvaluation(1);
    const run = runs[0] as Run;
    expect(run.status).toBe('failed');
    expect(run.attempts?.map((a) => [a.provider, a.outcome, a.failure])).toEqual([['anthropic', 'failed', 'timeout']]);
    expect(micros(run.chargedUsd)).toBe(0);
    expect(micros(run.refundedUsd)).toBe(micros(created.estimatedCostUsd));
    expect(await ledgerKinds(run.jobId)).toEqual(['settle']);
  });

  test('an evaluation at batch priority: its runs are batch runs, held and charged at the batch price', async () => {
    const body = {
      name: 'batch evaluation',
      schemaId: 'receipt',
      providers: ['openai', 'anthropic'],
      items: [{ uploadId, expected: { merchant: ANSWER.merchant, total: ANSWER.total } }],
    };
    const post = (extra: Record<string, unknown>) =>
      api('/v1/evaluations', { method: 'POST', body: JSON.stringify({ ...body, ...extra }) });
    // The standard price, as a refused budget reports it (nothing is created).
    const refused = await post({ maxCostUsd: 0.000001 });
    expect(refused.status).toBe(402);
    const standardUsd = ((await refused.json()) as { error: { details: { estimatedCostUsd: number } } }).error.details
      .estimatedCostUsd;

    const reply = await post({ priority: 'batch' });
    expect(reply.status).toBe(202);
    const created = (await reply.json()) as Record<string, unknown> & { evaluationId: string };
    expect(created).toMatchObject({ priority: 'batch', items: 2 });
    expect(Date.parse(String(created.expiresAt)) - Date.parse(String(created.createdAt))).toBe(24 * 3_600_000);
    // Both providers discount 50 %: the hold is half the standard one, give or take the rounding of each run.
    expect(Math.abs(micros(created.estimatedCostUsd) * 2 - micros(standardUsd))).toBeLessThanOrEqual(6);

    const deadline = Date.now() + 120_000;
    let evaluation: Record<string, unknown> & { items?: Array<{ jobId: string; provider: string }> };
    for (;;) {
      evaluation = await (await api(`/v1/evaluations/${created.evaluationId}`)).json();
      if (evaluation.status !== 'queued') break;
      if (Date.now() > deadline) throw new Error(`evaluation still queued: ${JSON.stringify(evaluation.progress)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(evaluation.status).toBe('completed');
    expect(evaluation.report).toMatchObject({ accuracy: 1 });
    let charged = 0;
    let refunded = 0;
    for (const item of evaluation.items ?? []) {
      const run = await get(item.jobId);
      expect(run).toMatchObject({ status: 'completed', priority: 'batch', expiresAt: created.expiresAt });
      expect(run.attempts?.map((a) => [a.provider, a.outcome])).toEqual([[item.provider, 'succeeded']]);
      // Each run's one call reached its provider's batch API once (Anthropic's custom_id is its request id's hash).
      const requestId = `${item.jobId}#${item.provider}#vision#all`;
      const customId = item.provider === 'anthropic' ? customIdOf(requestId) : requestId;
      expect(fakes.batches.flatMap((b) => b.items).filter((i) => i.customId === customId)).toHaveLength(1);
      expect(await ledgerKinds(item.jobId)).toEqual(['settle']);
      charged += micros(run.chargedUsd);
      refunded += micros(run.refundedUsd);
    }
    expect(charged + refunded).toBe(micros(created.estimatedCostUsd));
    expect(micros(evaluation.chargedUsd)).toBe(charged);
  });
});
