/**
 * Long documents on the local stack (contract v1.1 §2): a 20-page text-layer PDF runs one page per call against a fake
 * OpenAI server, shows its progress while queued, and survives a worker crash between chunks: the provider is asked
 * for each page once and the ledger holds and settles once. Its own stack: the provider list is global.
 */
import { readFile } from 'node:fs/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';
import { pageOf, transcribePages } from '../support/openai-answers.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_long_documents_tenant_0123456789';
const TENANT = 'long';

const transcribe = transcribePages(100);

async function createRun(stack: RunningStack, body: Record<string, unknown>): Promise<string> {
  const bytes = await readFile(new URL('../fixtures/twenty-pages.pdf', import.meta.url));
  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });
  const presign = (await (
    await api('/v1/uploads/presign', {
      method: 'POST',
      body: JSON.stringify({ fileName: 'twenty-pages.pdf', contentLength: bytes.length }),
    })
  ).json()) as { uploadId: string; uploadUrl: string };
  await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([bytes]) });
  const created = await api('/v1/runs', {
    method: 'POST',
    body: JSON.stringify({ uploadId: presign.uploadId, confirmCost: true, ...body }),
  });
  expect(created.status).toBe(202);
  return ((await created.json()) as { jobId: string }).jobId;
}

/** Polls the run until it is final; returns it and every queued `progress` seen on the way. */
async function untilFinal(stack: RunningStack, jobId: string) {
  const seen: Array<Record<string, unknown>> = [];
  const deadline = Date.now() + 90_000;
  for (;;) {
    const reply = await fetch(`${stack.info.baseUrl}/v1/runs/${jobId}`, { headers: { 'x-api-key': KEY } });
    const run = (await reply.json()) as Record<string, unknown>;
    if (run.status !== 'queued') return { run, seen };
    if (run.progress) seen.push(run.progress as Record<string, unknown>);
    if (Date.now() > deadline) throw new Error(`run ${jobId} not final`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a long document on the local stack', () => {
  let fake: FakeServer;
  let stack: RunningStack;

  beforeAll(async () => {
    fake = await startFakeServer(transcribe);
    stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'sk-test-long-documents-0123456789',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      // Four pages at a time, so that a crash after the first page leaves pages that were never asked.
      SERVICE_RUN_CONCURRENCY: '4',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
      VISION_LOCAL_FAULT_INJECTION: 'true',
    });
  }, 150_000);
  afterAll(async () => {
    await stack?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  test('one call per page, {text, pages} in page order, and progress while queued', async () => {
    const jobId = await createRun(stack, { prompt: 'Transcribe', outputFormat: 'text' });
    const { run, seen } = await untilFinal(stack, jobId);
    expect(run.status).toBe('completed');
    const result = run.result as { text: string; pages: Array<{ page: number; text: string }> };
    expect(result.pages).toEqual(
      Array.from({ length: 20 }, (_, i) => ({ page: i + 1, text: `Transcribed page ${i + 1}` })),
    );
    expect(result.text.split('\n\f\n')).toHaveLength(20);
    expect(fake.requests.map(pageOf).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(seen.length).toBeGreaterThan(0);
    for (const progress of seen) {
      expect(progress).toMatchObject({ pagesTotal: 20, stage: expect.stringMatching(/^(waiting|processing)$/) });
      expect(progress.pagesDone).toBeLessThanOrEqual(20);
    }
  });

  test('a worker crash between chunks: every page asked once, one hold and one settlement', async () => {
    const jobId = await createRun(stack, {
      prompt: 'Transcribe',
      outputFormat: 'text',
      metadata: { localFault: 'crash-after-chunk' },
    });
    const { run } = await untilFinal(stack, jobId);
    expect(run.status).toBe('completed');
    expect((run.result as { pages: unknown[] }).pages).toHaveLength(20);

    const pages = fake.requests.map(pageOf);
    expect(pages.sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));

    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb }));
    const runs = await ddb.send(
      new QueryCommand({
        TableName: stack.info.resources.tables.runs,
        KeyConditionExpression: 'jobId = :j',
        ExpressionAttributeValues: { ':j': jobId },
        ConsistentRead: true,
      }),
    );
    // The crash is real: a second delivery finished the run.
    expect(Number(runs.Items?.[0]?.deliveries)).toBeGreaterThanOrEqual(2);
    const ledger = await ddb.send(
      new QueryCommand({
        TableName: stack.info.resources.tables.ledger,
        KeyConditionExpression: 'tenantId = :t AND begins_with(entryId, :j)',
        ExpressionAttributeValues: { ':t': TENANT, ':j': `${jobId}#` },
        ConsistentRead: true,
      }),
    );
    expect((ledger.Items ?? []).map((e) => e.kind).sort()).toEqual(['hold', 'settle']);
    const usage = run.usage as { requests: number };
    expect(usage.requests).toBe(20);
  });
});
