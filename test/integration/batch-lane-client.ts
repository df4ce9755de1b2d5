/**
 * What the batch lane's integration tests do to a local stack (test/integration/batch-*.test.ts): upload, create and
 * read runs, wait for a state, read a run's ledger and its batch requests, deliver a run's message again, and reopen a
 * provider batch so the batcher polls it a second time (a pass that crashed before closing it).
 */
import { readFile } from 'node:fs/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { waitForRunQueueDrained } from './client.js';
import type { RunningStack } from './stack.js';

export type Run = Record<string, unknown> & {
  jobId: string;
  status: string;
  stage?: string;
  attempts?: Array<{ provider: string; outcome: string; failure?: string }>;
  usage?: { costUsd: number; priceUsd: number; requests: number };
  chargedUsd?: number;
  refundedUsd?: number;
  estimatedCostUsd: number;
};

export const micros = (usd: unknown) => Math.round(Number(usd) * 1e6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface BatchLaneClient {
  /** Uploads a fixture by name, or the bytes given under that name. */
  upload(file: string, bytes?: Uint8Array): Promise<string>;
  create(body: Record<string, unknown>): Promise<Run>;
  get(jobId: string): Promise<Run>;
  /** POST /v1/estimates: both prices for a run's body. */
  estimate(
    body: Record<string, unknown>,
  ): Promise<{ standard: { estimatedCostUsd: number }; batch: { estimatedCostUsd: number } }>;
  waitFor(jobId: string, done: (run: Run) => boolean, what: string, timeoutMs?: number): Promise<Run>;
  final(jobId: string, timeoutMs?: number): Promise<Run>;
  ledgerKinds(jobId: string): Promise<string[]>;
  /** The BatchRequests table's items (requests and provider batches). */
  batchItems(): Promise<Array<Record<string, unknown>>>;
  /** Sets fields of one BatchRequests item. */
  updateBatchItem(requestId: string, fields: Record<string, unknown>): Promise<void>;
  /** Reopens the provider batch holding one of the run's requests and waits until the batcher polled it again. */
  pollAgain(jobId: string): Promise<void>;
  /** The run's own item in the Runs table, read consistently. */
  runItem(jobId: string): Promise<Record<string, unknown> | undefined>;
  /** Sends the run's message (a fanned-out group's, when given) again. */
  redeliver(jobId: string, group?: number): Promise<void>;
  queueDrained(): Promise<void>;
  close(): void;
}

export function batchLaneClient(stack: RunningStack, key: string, tenant: string): BatchLaneClient {
  const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb }));
  const sqs = new SQSClient({ endpoint: stack.info.endpoints.sqs, useQueueUrlAsEndpoint: false });
  const table = stack.info.resources.tables.batchRequests as string;
  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...init?.headers },
    });
  const get = async (jobId: string) => (await (await api(`/v1/runs/${jobId}`)).json()) as Run;
  const batchItems = async () =>
    ((await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []) as Array<
      Record<string, unknown>
    >;
  const updateBatchItem = async (requestId: string, fields: Record<string, unknown>) => {
    const names = Object.keys(fields);
    await ddb.send(
      new UpdateCommand({
        TableName: table,
        Key: { requestId },
        UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
        ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, fields[n]])),
      }),
    );
  };
  const waitFor = async (jobId: string, done: (run: Run) => boolean, what: string, timeoutMs = 90_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await get(jobId);
      if (done(run)) return run;
      if (Date.now() > deadline) throw new Error(`run ${jobId} never ${what}: ${JSON.stringify(run)}`);
      await sleep(250);
    }
  };

  return {
    async upload(file, given) {
      const bytes = given ? Buffer.from(given) : await readFile(new URL(`../fixtures/${file}`, import.meta.url));
      const reply = await api('/v1/uploads/presign', {
        method: 'POST',
        body: JSON.stringify({ fileName: file, contentLength: bytes.length }),
      });
      const presign = (await reply.json()) as { uploadId: string; uploadUrl: string };
      await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([bytes]) });
      return presign.uploadId;
    },
    async create(body) {
      const reply = await api('/v1/runs', { method: 'POST', body: JSON.stringify(body) });
      if (reply.status !== 202) throw new Error(`POST /v1/runs answered ${reply.status}: ${await reply.text()}`);
      return (await reply.json()) as Run;
    },
    get,
    async estimate(body) {
      const reply = await api('/v1/estimates', { method: 'POST', body: JSON.stringify(body) });
      if (reply.status !== 200) throw new Error(`POST /v1/estimates answered ${reply.status}: ${await reply.text()}`);
      return await reply.json();
    },
    waitFor,
    final: (jobId, timeoutMs) =>
      waitFor(jobId, (r) => r.status === 'completed' || r.status === 'failed', 'final', timeoutMs),
    async ledgerKinds(jobId) {
      const out = await ddb.send(
        new QueryCommand({
          TableName: stack.info.resources.tables.ledger,
          KeyConditionExpression: 'tenantId = :t AND begins_with(entryId, :j)',
          ExpressionAttributeValues: { ':t': tenant, ':j': `${jobId}#` },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).map((e) => String(e.kind)).sort();
    },
    batchItems,
    updateBatchItem,
    async pollAgain(jobId) {
      const batch = (await batchItems()).find((i) =>
        (i.requestIds as string[] | undefined)?.some((id) => id.startsWith(`${jobId}#`)),
      );
      if (!batch) throw new Error(`no provider batch holds a request of run ${jobId}`);
      await updateBatchItem(String(batch.requestId), { openState: 'polling' });
      const deadline = Date.now() + 30_000;
      while ((await batchItems()).find((i) => i.requestId === batch.requestId)?.openState) {
        if (Date.now() > deadline) throw new Error('the batcher never polled the reopened batch');
        await sleep(200);
      }
    },
    async runItem(jobId) {
      const out = await ddb.send(
        new GetCommand({ TableName: stack.info.resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
      );
      return out.Item;
    },
    async redeliver(jobId, group) {
      const body = group === undefined ? { jobId } : { jobId, group };
      await sqs.send(
        new SendMessageCommand({ QueueUrl: stack.info.resources.queueUrl, MessageBody: JSON.stringify(body) }),
      );
    },
    queueDrained: () => waitForRunQueueDrained(60_000, stack.info),
    close() {
      sqs.destroy();
      ddb.destroy();
    },
  };
}
