/**
 * The batch lane on Anthropic's Message Batches fake (bench/batch-fakes.ts): an attempt becomes a batch request whose
 * params are the adapter's first request and whose custom_id the API accepts; the batcher submits, polls and reads the
 * results (in any order) by custom_id; the attempt answers through the adapter's reading of a message, at half the
 * list price. An errored request fails its attempt with the kind its error type says, an expired or canceled one
 * too, so the run falls back. Storage is in memory (test/support/batch-lane-memory.ts).
 */
import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchApis } from '../../shared/batching/apis.js';
import { runBatcher } from '../../shared/batching/batcher.js';
import { BatchParked } from '../../shared/batching/parked.js';
import { anthropicBatchCodec } from '../../shared/providers/anthropic/batch.js';
import { anthropicBatchApi, customIdOf } from '../../shared/providers/anthropic/batch-api.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure } from '../../shared/task.js';
import { batchLaneAdapters } from '../../shared/worker/batch-lane.js';
import { fixture } from '../support/aws.js';
import {
  attemptInput,
  batchRun as batchRunOf,
  laneMemory,
  notInline,
  sendAtOnce,
} from '../support/batch-lane-memory.js';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';

const RECEIPT = fixture('receipt.png');
const { table, objects } = laneMemory(RECEIPT);
const KEY = 'sk-ant-test-batch-SECRET-0123456789';
const ANSWER = { merchant: 'Corner Shop', total: 12.5 };

let fakes: BatchFakes;
beforeEach(async () => {
  process.env.ANTHROPIC_API_KEY = KEY;
  fakes = await startBatchFakes({
    behaviour: { outcome: () => ({ kind: 'ok', answer: ANSWER, usage: { input: 1500, output: 60 } }) },
  });
  process.env.ANTHROPIC_BASE_URL = fakes.url;
});
afterEach(() => fakes.close());

const batchRun = (jobId: string) => batchRunOf(jobId, 'anthropic');
const inputOf = (run: RunRecord) => attemptInput(run, RECEIPT);
const inline = notInline('anthropic');
const limits = sendAtOnce;
const pass = () => runBatcher({ apis: batchApis(), enqueue: async () => {}, limits });
const invoke = (run: RunRecord) =>
  (batchLaneAdapters(run, { anthropic: inline }).anthropic as ProviderAdapter).invoke(inputOf(run), {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + 60_000,
  });
const requestIdOf = (run: RunRecord) => `${run.jobId}#anthropic#vision#all`;

async function throughTheLane(runs: RunRecord[]) {
  for (const run of runs) await expect(invoke(run)).rejects.toBeInstanceOf(BatchParked);
  const reports = [];
  for (let i = 0; i < 3; i++) reports.push(await pass());
  return reports;
}

test('an attempt is sent once as the adapter’s request, answered, and priced at half the list price', async () => {
  const run = batchRun('run_anthropic1');
  const [first, , third] = await throughTheLane([run]);
  expect(first).toMatchObject({ submitted: 1 });
  expect(third).toMatchObject({ answered: 1, handedBack: 1 });

  expect(fakes.batches).toHaveLength(1);
  const [item] = fakes.batches[0]?.items ?? [];
  // The request id carries `#`, which a custom_id may not: it goes as a hash the reference's pattern accepts.
  expect(item?.customId).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  expect(item?.customId).not.toBe(requestIdOf(run));
  // The adapter's first request: the image, the instruction, the result tool forced, thinking off, a spend cap.
  expect(item?.body).toMatchObject({
    model: 'claude-haiku-5-5',
    tool_choice: { type: 'tool', name: 'record_result' },
    thinking: { type: 'disabled' },
    messages: [{ role: 'user', content: [{ type: 'image' }, { type: 'text' }] }],
  });
  expect(item?.body.max_tokens).toEqual(expect.any(Number));
  expect(fakes.requests.every((r) => r.headers['x-api-key'] === KEY)).toBe(true);
  expect(JSON.stringify([...objects.values(), ...table.values()])).not.toContain(KEY);

  const output = await invoke(run);
  expect(output.result).toEqual(ANSWER);
  const listed = await anthropicBatchCodec.parse(
    JSON.parse(objects.get(String(table.get(requestIdOf(run))?.answerKey)) ?? 'null'),
    inputOf(run),
  );
  expect(listed.usage.costMicros).toBeGreaterThan(0);
  expect(output.usage.costMicros).toBe(Math.ceil(listed.usage.costMicros / 2));
  expect(output.usage.inputTokens).toBe(1500);

  // Later passes send nothing again and answer nothing twice.
  expect(await pass()).toMatchObject({ submitted: 0, answered: 0, handedBack: 0 });
  expect(fakes.batches).toHaveLength(1);
});

test('errored requests fail their attempts by error type; the others in the batch are answered', async () => {
  const runs = ['run_ok', 'run_limited', 'run_refused'].map(batchRun);
  // Which run a line is: by its custom_id, the hash of its request id.
  const status = new Map([
    [customIdOf(requestIdOf(runs[1] as RunRecord)), 429],
    [customIdOf(requestIdOf(runs[2] as RunRecord)), 400],
  ]);
  fakes.configure({
    outcome: (item) => {
      const code = status.get(item.customId);
      return code ? { kind: 'error', status: code, message: 'no' } : { kind: 'ok', answer: ANSWER };
    },
  });
  const reports = await throughTheLane(runs);
  expect(reports[2]).toMatchObject({ answered: 1, failed: 2, handedBack: 3 });
  expect(fakes.batches).toHaveLength(1);
  await expect(invoke(runs[0] as RunRecord)).resolves.toMatchObject({ result: ANSWER });
  await expect(invoke(runs[1] as RunRecord)).rejects.toMatchObject({ kind: 'rate_limited' });
  await expect(invoke(runs[2] as RunRecord)).rejects.toMatchObject({ kind: 'client' });
});

test('an expired request fails its attempt as a timeout', async () => {
  fakes.configure({ expire: true, doneBeforeExpiry: 0 });
  const run = batchRun('run_expired');
  await throughTheLane([run]);
  expect(table.get(requestIdOf(run))?.state).toBe('expired');
  await expect(invoke(run)).rejects.toMatchObject({ kind: 'timeout' });
});

test('an answer whose tool input does not match the schema fails the attempt (no repair in a batch)', async () => {
  fakes.configure({ outcome: () => ({ kind: 'ok', answer: 'no idea' }) });
  const run = batchRun('run_wrong');
  await throughTheLane([run]);
  await expect(invoke(run)).rejects.toMatchObject({ kind: 'invalid_output' });
});

test('a request that would cross the spend limit is refused before it is parked', async () => {
  const run = batchRun('run_poor');
  const adapter = batchLaneAdapters(run, { anthropic: inline }).anthropic as ProviderAdapter;
  await expect(
    adapter.invoke(inputOf(run), {
      signal: new AbortController().signal,
      deadlineMs: Date.now() + 60_000,
      maxCostMicros: 1,
    }),
  ).rejects.toBeInstanceOf(ProviderFailure);
  expect(table.size).toBe(0);
});

describe('the results file as the reference words it', () => {
  let server: FakeServer;
  afterEach(() => server?.close());

  test('canceled and unknown error types are failures; a request missing from the results is not reported', async () => {
    const ids = ['run_a#anthropic#vision#all', 'run_b#anthropic#vision#all', 'run_c#anthropic#vision#all'];
    server = await startFakeServer((req) => {
      if (req.path === '/v1/messages/batches/msgbatch_1') {
        return { json: { id: 'msgbatch_1', type: 'message_batch', processing_status: 'ended', results_url: null } };
      }
      if (req.path === '/v1/messages/batches/msgbatch_1/results') {
        const lines = [
          { custom_id: customIdOf(ids[0] as string), result: { type: 'canceled' } },
          {
            custom_id: customIdOf(ids[1] as string),
            result: { type: 'errored', error: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } },
          },
          // Not one of this batch's requests: ignored.
          { custom_id: 'someone-else', result: { type: 'expired' } },
        ];
        return { raw: lines.map((l) => JSON.stringify(l)).join('\n') };
      }
      return { status: 404, json: {} };
    });
    const api = anthropicBatchApi({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: server.url });
    const results = await api.poll('msgbatch_1', ids);
    expect(results).toEqual(
      new Map([
        [ids[0], { kind: 'failed', failure: 'server', message: 'anthropic batch: the request was canceled' }],
        [ids[1], { kind: 'failed', failure: 'server', message: 'anthropic batch: overloaded_error' }],
      ]),
    );
  });

  test('a batch still in progress (or canceling) answers nothing yet', async () => {
    server = await startFakeServer(() => ({ json: { id: 'msgbatch_2', processing_status: 'canceling' } }));
    const api = anthropicBatchApi({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: server.url });
    expect(await api.poll('msgbatch_2', ['run_x#anthropic#vision#all'])).toBeUndefined();
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/messages/batches/msgbatch_2']);
  });
});
