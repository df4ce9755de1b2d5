/**
 * Fan-out of a long document through the local stack's real queue (contract v1.1 §2): with SERVICE_FANOUT_PAGES
 * lowered to 6, the 20-page fixture runs as four group messages handled by several worker pollers, against a fake
 * OpenAI server. Every page is asked of the provider once, the ledger holds and settles once, and the result's pages
 * are in order, also when a group's delivery crashes before or after its count and when the run's and every group's
 * messages arrive twice. Its own stack: the provider list and the fan-out threshold are global.
 */
import { readFile } from 'node:fs/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';
import { pageOf, transcribePages } from '../support/openai-answers.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_fan_out_tenant_0123456789abcdef';
const TENANT = 'fanout';
const PAGES = Array.from({ length: 20 }, (_, i) => i + 1);

const transcribe = transcribePages(300);

describe('a long document fanned out over the local queue', () => {
  let fake: FakeServer;
  let stack: RunningStack;
  let ddb: DynamoDBDocumentClient;
  let sqs: SQSClient;

  beforeAll(async () => {
    fake = await startFakeServer(transcribe);
    stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'sk-test-fan-out-0123456789',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      // Four groups (6, 6, 6 and 2 pages), three pages of a group at a time, three worker pollers.
      SERVICE_FANOUT_PAGES: '6',
      SERVICE_RUN_CONCURRENCY: '3',
      LOCAL_WORKER_CONCURRENCY: '3',
      // A crashed delivery comes back after 5 s; a group (two rounds of 300 ms calls) is done well within its claim.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '5',
      VISION_LOCAL_FAULT_INJECTION: 'true',
    });
    ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb }));
    sqs = new SQSClient({ endpoint: stack.info.endpoints.sqs, useQueueUrlAsEndpoint: false });
  }, 150_000);
  afterAll(async () => {
    sqs?.destroy();
    ddb?.destroy();
    await stack?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });

  async function createRun(metadata: Record<string, unknown> = {}): Promise<string> {
    const bytes = await readFile(new URL('../fixtures/twenty-pages.pdf', import.meta.url));
    const presign = (await (
      await api('/v1/uploads/presign', {
        method: 'POST',
        body: JSON.stringify({ fileName: 'twenty-pages.pdf', contentLength: bytes.length }),
      })
    ).json()) as { uploadId: string; uploadUrl: string };
    await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([bytes]) });
    const created = await api('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({
        uploadId: presign.uploadId,
        prompt: 'Transcribe',
        outputFormat: 'text',
        confirmCost: true,
        metadata,
      }),
    });
    expect(created.status).toBe(202);
    return ((await created.json()) as { jobId: string }).jobId;
  }

  /** Polls the run until it is final; returns it and every queued `progress` seen on the way. */
  async function untilFinal(jobId: string) {
    const seen: Array<Record<string, unknown>> = [];
    const deadline = Date.now() + 90_000;
    for (;;) {
      const run = (await (await api(`/v1/runs/${jobId}`)).json()) as Record<string, unknown>;
      if (run.status !== 'queued') return { run, seen };
      if (run.progress) seen.push(run.progress as Record<string, unknown>);
      if (Date.now() > deadline) throw new Error(`run ${jobId} not final`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The run item as stored (its fan-out record, groups and deliveries). */
  async function stored(jobId: string): Promise<Record<string, unknown>> {
    const out = await ddb.send(
      new GetCommand({ TableName: stack.info.resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
    );
    return out.Item ?? {};
  }

  async function ledgerKinds(jobId: string): Promise<string[]> {
    const out = await ddb.send(
      new QueryCommand({
        TableName: stack.info.resources.tables.ledger,
        KeyConditionExpression: 'tenantId = :t AND begins_with(entryId, :j)',
        ExpressionAttributeValues: { ':t': TENANT, ':j': `${jobId}#` },
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map((e) => String(e.kind)).sort();
  }

  /** Waits until the run queue holds no message, visible or in flight (every copy handled and deleted). */
  async function queueDrained(): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const out = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: stack.info.resources.queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      const left =
        Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
      if (left === 0) return;
      if (Date.now() > deadline) throw new Error(`run queue still holds ${left} message(s)`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** The pages the provider was asked for, in order: each exactly once. */
  const askedPages = () => fake.requests.map(pageOf).sort((a, b) => (a ?? 0) - (b ?? 0));

  async function expectOnceAndInOrder(jobId: string, run: Record<string, unknown>): Promise<Record<string, unknown>> {
    expect(run.status).toBe('completed');
    const result = run.result as { text: string; pages: Array<{ page: number; text: string }> };
    expect(result.pages).toEqual(PAGES.map((page) => ({ page, text: `Transcribed page ${page}` })));
    expect(result.text.split('\n\f\n')).toHaveLength(20);
    expect(askedPages()).toEqual(PAGES);
    expect((run.usage as { requests: number }).requests).toBe(20);
    expect(await ledgerKinds(jobId)).toEqual(['hold', 'settle']);
    const item = await stored(jobId);
    expect(item.fanout).toEqual({ groups: 4, groupPages: 6 });
    expect(item.groupsDone).toBe(4);
    const groups = item.groups as Record<string, { doneAt?: string }>;
    expect(Object.keys(groups).sort()).toEqual(['0', '1', '2', '3']);
    for (const entry of Object.values(groups)) expect(entry.doneAt).toEqual(expect.any(String));
    return item;
  }

  test('four groups, each its own delivery: every page asked once, one hold and one settlement, pages in order', async () => {
    const jobId = await createRun();
    const { run, seen } = await untilFinal(jobId);
    const item = await expectOnceAndInOrder(jobId, run);
    // The run's own message and one delivery per group, at least.
    expect(Number(item.deliveries)).toBeGreaterThanOrEqual(5);
    expect(seen.length).toBeGreaterThan(0);
    for (const progress of seen) {
      expect(progress).toMatchObject({ pagesTotal: 20, stage: expect.stringMatching(/^(waiting|processing)$/) });
      expect(progress.pagesDone).toBeLessThanOrEqual(20);
    }
  });

  test.each([
    ['crash-after-group', "a group's chunks are done, before its count"],
    ['crash-after-last-group', 'the last group is counted, before the merge'],
  ])('a worker crash (%s: %s): the redelivery asks nothing again and the run settles once', async (fault) => {
    const jobId = await createRun({ localFault: fault });
    const { run } = await untilFinal(jobId);
    const item = await expectOnceAndInOrder(jobId, run);
    // The crash is real: the crashed group was delivered again.
    expect(Number(item.deliveries)).toBeGreaterThanOrEqual(6);
  });

  test("the run's message and every group message delivered twice: every page asked once, one settlement", async () => {
    const jobId = await createRun();
    const deadline = Date.now() + 30_000;
    while ((await stored(jobId)).fanout === undefined) {
      if (Date.now() > deadline) throw new Error(`run ${jobId} never fanned out`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const bodies = [{ jobId }, ...[0, 1, 2, 3].map((group) => ({ jobId, group }))];
    for (const body of bodies) {
      await sqs.send(
        new SendMessageCommand({ QueueUrl: stack.info.resources.queueUrl, MessageBody: JSON.stringify(body) }),
      );
    }
    const { run } = await untilFinal(jobId);
    await queueDrained();
    await expectOnceAndInOrder(jobId, run);
  });
});
