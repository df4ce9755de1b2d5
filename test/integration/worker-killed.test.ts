/**
 * A run whose worker dies mid-run on the local stack (issue #26 point 1, contract v1.2 §5): the whole stack is
 * SIGKILLed (or stopped with Ctrl-C) while a 20-page document is with a provider, and started again on its data
 * folder. The run is taken up at once, from its checkpoints, and completes: every page answered once (the page whose
 * request the stop cut off is asked again: its answer never came), one hold and one settlement. The SIGKILLed run is
 * fanned out in groups (the groups are leased and taken up the same way). Its own stacks: each test restarts one.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type FakeServer, type RecordedRequest, startFakeServer } from '../support/fake-server.js';
import { openaiAnswer, pageOf } from '../support/openai-answers.js';
import { processesMentioning } from '../support/processes.js';
import { type RunningStack, startStack } from './stack.js';

const KEY = 'vk_killed_worker_0123456789abcdef';
const TENANT = 'killed';
const PAGES = Array.from({ length: 20 }, (_, i) => i + 1);
/** The page whose request is with the provider when the stack is stopped: it is never answered by the first stack. */
const CUT_PAGE = 6;

/** The fake provider: each page answered after a short while, except CUT_PAGE while `holding`, which is kept waiting. */
function provider(fake: FakeServer) {
  const state = { holding: true, answered: [] as number[], asked: [] as number[], askedAt: [] as number[] };
  fake.respond(async (request: RecordedRequest) => {
    const page = pageOf(request) ?? 0;
    state.asked.push(page);
    state.askedAt.push(Date.now());
    if (page === CUT_PAGE && state.holding) await new Promise(() => {});
    await new Promise((resolve) => setTimeout(resolve, 150));
    state.answered.push(page);
    return openaiAnswer({ text: `Transcribed page ${page}` }, { input: 900, output: 40 });
  });
  return state;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a worker killed mid-run on the local stack', () => {
  let fake: FakeServer;
  const dirs: string[] = [];
  const stacks: RunningStack[] = [];

  beforeAll(async () => {
    fake = await startFakeServer();
  });
  afterAll(async () => {
    for (const stack of stacks) await stack.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await fake?.close();
  });

  function environment(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      VISION_LOCAL_DATA_DIR: dataDir,
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'sk-test-killed-worker-0123456789',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      // One page at a time, one run at a time: the pages before CUT_PAGE are answered and checkpointed first.
      SERVICE_RUN_CONCURRENCY: '1',
      LOCAL_WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
      ...extra,
    };
  }

  async function start(env: Record<string, string>): Promise<RunningStack> {
    const stack = await startStack(env, 150_000);
    stacks.push(stack);
    return stack;
  }

  function api(stack: RunningStack, path: string, init?: RequestInit) {
    return fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });
  }

  async function createRun(stack: RunningStack): Promise<string> {
    const bytes = await readFile(new URL('../fixtures/twenty-pages.pdf', import.meta.url));
    const presign = (await (
      await api(stack, '/v1/uploads/presign', {
        method: 'POST',
        body: JSON.stringify({ fileName: 'twenty-pages.pdf', contentLength: bytes.length }),
      })
    ).json()) as { uploadId: string; uploadUrl: string };
    await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([bytes]) });
    const created = await api(stack, '/v1/runs', {
      method: 'POST',
      body: JSON.stringify({
        uploadId: presign.uploadId,
        prompt: 'Transcribe',
        outputFormat: 'text',
        confirmCost: true,
      }),
    });
    expect(created.status).toBe(202);
    return ((await created.json()) as { jobId: string }).jobId;
  }

  /** How many chunks of the run are checkpointed (one page each: a text run). */
  async function checkpointed(stack: RunningStack, jobId: string): Promise<number> {
    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb }));
    try {
      const out = await ddb.send(
        new QueryCommand({
          TableName: stack.info.resources.tables.runChunks,
          KeyConditionExpression: 'jobId = :j',
          ExpressionAttributeValues: { ':j': jobId },
          ConsistentRead: true,
          Select: 'COUNT',
        }),
      );
      return out.Count ?? 0;
    } finally {
      ddb.destroy();
    }
  }

  async function ledgerKinds(stack: RunningStack, jobId: string): Promise<string[]> {
    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb }));
    try {
      const out = await ddb.send(
        new QueryCommand({
          TableName: stack.info.resources.tables.ledger,
          KeyConditionExpression: 'tenantId = :t AND begins_with(entryId, :j)',
          ExpressionAttributeValues: { ':t': TENANT, ':j': `${jobId}#` },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).map((e) => String(e.kind)).sort();
    } finally {
      ddb.destroy();
    }
  }

  /**
   * Runs the scenario: a run reaches CUT_PAGE on a first stack, which is then ended with `signal`; a second stack on the
   * same data folder takes it up. Returns the run as completed, the first stack's output after the signal, and times.
   */
  async function killedMidRun(signal: 'SIGKILL' | 'SIGINT', extra: Record<string, string> = {}) {
    const dataDir = mkdtempSync(join(tmpdir(), 'vision-killed-'));
    dirs.push(dataDir);
    const state = provider(fake);
    const first = await start(environment(dataDir, extra));
    const jobId = await createRun(first);
    await until('the request for the page that is cut off', () => (state.asked.includes(CUT_PAGE) ? true : undefined));
    // One page at a time: the pages before it are answered, it alone is with the provider. The stop comes once every
    // answer is checkpointed (a page's checkpoint is written while the next page is asked: a crash in between would
    // pay that page twice, which is what checkpoints after each answer bound, not what this test is about).
    expect(state.answered).toEqual(expect.arrayContaining(PAGES.slice(0, CUT_PAGE - 1)));
    expect(state.answered).not.toContain(CUT_PAGE);
    await until('every answer checkpointed', async () =>
      (await checkpointed(first, jobId)) === state.answered.length ? true : undefined,
    );

    const printed = first.output.length;
    const stoppedAt = Date.now();
    const exited = new Promise((resolve) => first.process.once('exit', resolve));
    first.process.kill(signal);
    await exited;
    // Nothing the first stack started outlives it: DynamoDB Local ends with it, even after a SIGKILL.
    await until('the first stack and its DynamoDB Local to be gone', () =>
      processesMentioning(dataDir).length === 0 ? true : undefined,
    );
    const said = first.output.slice(printed);

    state.holding = false;
    const second = await start(environment(dataDir, extra));
    const readyAt = Date.now();
    const run = await until('the run to complete after the restart', async () => {
      const body = (await (await api(second, `/v1/runs/${jobId}`)).json()) as Record<string, unknown>;
      return body.status === 'queued' ? undefined : body;
    });
    const doneAt = Date.now();
    if (process.env.REPORT_TIMINGS) {
      const takenUpAt = state.askedAt.find((at) => at >= readyAt) ?? doneAt;
      process.stderr.write(
        `${signal}: stop to ready ${readyAt - stoppedAt} ms, ready to the first page asked ${takenUpAt - readyAt} ms, ` +
          `ready to completed ${doneAt - readyAt} ms, stop to completed ${doneAt - stoppedAt} ms\n`,
      );
    }
    return { jobId, run, said, state, second };
  }

  function expectEveryPageOnceAndOneCharge(outcome: Awaited<ReturnType<typeof killedMidRun>>) {
    const { run, state } = outcome;
    expect(run.status).toBe('completed');
    const result = run.result as { pages: Array<{ page: number; text: string }> };
    expect(result.pages).toEqual(PAGES.map((page) => ({ page, text: `Transcribed page ${page}` })));
    // Every page answered (paid) once: the checkpointed ones were not asked again. The page whose request the stop
    // cut off was asked a second time; it had never been answered.
    expect(state.answered.sort((a, b) => a - b)).toEqual(PAGES);
    expect(state.asked.filter((page) => page === CUT_PAGE)).toHaveLength(2);
    expect(state.asked.filter((page) => page !== CUT_PAGE).sort((a, b) => a - b)).toEqual(
      PAGES.filter((page) => page !== CUT_PAGE),
    );
    expect((run.usage as { requests: number }).requests).toBe(20);
    expect(Number(run.chargedUsd)).toBeGreaterThan(0);
    expect(Number(run.chargedUsd) + Number(run.refundedUsd)).toBeCloseTo(Number(run.estimatedCostUsd), 6);
  }

  test('SIGKILL while a fanned-out group is with the provider: the restarted stack takes the run up at once and completes it, each page paid once', async () => {
    // Two groups of ten pages, one after the other: the invocation of the group with page 6 dies with the stack.
    const outcome = await killedMidRun('SIGKILL', { SERVICE_FANOUT_PAGES: '10' });
    expectEveryPageOnceAndOneCharge(outcome);
    expect(await ledgerKinds(outcome.second, outcome.jobId)).toEqual(['hold', 'settle']);
  });

  test('Ctrl-C while a run is with the provider: the stop prints no error or warning, and the next start completes the run', async () => {
    const outcome = await killedMidRun('SIGINT');
    expectEveryPageOnceAndOneCharge(outcome);
    expect(await ledgerKinds(outcome.second, outcome.jobId)).toEqual(['hold', 'settle']);
    // A stop that was asked for is not an error (the stack prints warnings and errors at LOG_LEVEL=warn).
    expect(outcome.said.filter((line) => /"level":"(warn|error)"/.test(line))).toEqual([]);
  });
});
