/**
 * Packets on the local stack (contract-v1.2 §3): a generated packet (test/support/packets.ts) created with
 * `split: true` completes with `documents[]` that put every page in exactly one document, with the local engine
 * (the shared stack) and with a fake language model (its own stack: the provider list is global) that classifies each
 * page from its text. A crash before the settlement is redelivered and charged once; a crash after a checkpoint is
 * redelivered and asks the model nothing it answered before; `review=needed` lists a split run whose document needs
 * review once.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { checkPartition } from '../../shared/packets/result.js';
import { countSplit, scoreOf } from '../../shared/packets/score.js';
import { CLASSIFY_MARKER } from '../../shared/worker/packet-evidence.js';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';
import { packetModel } from '../support/packet-model.js';
import { makePackets } from '../support/packets.js';
import {
  call,
  fixture,
  KEYS,
  ledgerEntries,
  startStackOnSuiteEmulators,
  upload,
  visionCli,
  waitForFinal,
} from './client.js';
import type { RunningStack } from './stack.js';

const PACKETS = makePackets(30, 8).filter((p) => p.truth.length >= 3);
const PACKET = PACKETS[0];
if (!PACKET) throw new Error('no packet of three documents or more');

interface Doc {
  index: number;
  schemaId: string;
  pages: { first: number; last: number };
  classification: { confidence: number };
  result?: Record<string, unknown>;
  fields?: Record<string, unknown>;
  review?: { needed: boolean };
}

const shapes = (documents: readonly Doc[]) => documents.map((d) => ({ schemaId: d.schemaId, pages: d.pages }));

/** Every page of the packet in exactly one document, in order; `other` documents without an extraction. */
function expectPartition(documents: readonly Doc[], pages: number) {
  expect(checkPartition(documents, pages)).toBeNull();
  const seen = documents.flatMap((d) =>
    Array.from({ length: d.pages.last - d.pages.first + 1 }, (_, i) => d.pages.first + i),
  );
  expect(seen).toEqual(Array.from({ length: pages }, (_, i) => i + 1));
  for (const d of documents) expect(d.result === undefined).toBe(d.schemaId === 'other');
}

describe('a split run with the local engine', () => {
  test('documents[] is a partition close to the truth, each extracted with its schema, charged once', async () => {
    const uploadId = await upload('packet.pdf', PACKET.bytes);
    const created = await call('POST', '/v1/runs', {
      body: { uploadId, prompt: 'Extract each document', split: true, confirmCost: true },
    });
    expect(created.status).toBe(202);
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 120_000 });
    expect(final.body.status).toBe('completed');
    const documents = (final.body.result as { documents: Doc[] }).documents;
    expectPartition(documents, PACKET.pages);
    const score = scoreOf(countSplit(shapes(documents), PACKET.truth));
    expect(score.f1).toBeGreaterThanOrEqual(0.8);
    expect(score.pageAccuracy).toBeGreaterThanOrEqual(0.8);
    for (const d of documents.filter((doc) => doc.schemaId !== 'other')) {
      expect(d.fields).toBeDefined();
      expect(d.review).toBeDefined();
    }
    const review = final.body.review as { needed: boolean };
    expect(review.needed).toBe(documents.some((d) => d.review?.needed === true));
    expect(Number(final.body.chargedUsd)).toBeLessThanOrEqual(Number(final.body.estimatedCostUsd));
    const entries = await ledgerEntries('tenant-a', jobId);
    expect(entries.map((e) => e.kind).sort()).toEqual(['hold', 'settle']);
  });

  test('a crash before the settlement is redelivered: the same split, one hold and one settlement', async () => {
    const uploadId = await upload('packet.pdf', PACKET.bytes);
    const created = await call('POST', '/v1/runs', {
      body: {
        uploadId,
        prompt: 'Extract each document',
        split: true,
        confirmCost: true,
        metadata: { localFault: 'crash-before-settle' },
      },
    });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 120_000 });
    expect(final.body.status).toBe('completed');
    expectPartition((final.body.result as { documents: Doc[] }).documents, PACKET.pages);
    const entries = await ledgerEntries('tenant-a', jobId);
    expect(entries.map((e) => e.kind).sort()).toEqual(['hold', 'settle']);
  });

  test('schemaId "auto" on an image: classed from what OCR reads, extracted with that schema, the class shown', async () => {
    const uploadId = await upload('card.png', await fixture('business-card.png'));
    const created = await call('POST', '/v1/runs', {
      body: {
        uploadId,
        prompt: 'Extract',
        schemaId: 'auto',
        schemaIds: ['receipt', 'business_card'],
        confirmCost: true,
      },
    });
    expect(created.status).toBe(202);
    const final = await waitForFinal(String(created.body.jobId), { timeoutMs: 120_000 });
    expect(final.body.status).toBe('completed');
    // As asked, and what it was answered with: the schema's fields, the class and how sure it is.
    expect(final.body.schemaId).toBe('auto');
    expect(final.body.classification).toEqual({ schemaId: 'business_card', confidence: expect.any(Number) });
    const fields = (final.body.expectedFields as { name: string }[]).map((f) => f.name);
    expect(fields).toEqual(expect.arrayContaining(['name', 'email']));
    expect(Object.keys(final.body.result as object)).toEqual(expect.arrayContaining(fields));
  });

  test('a split needs a PDF, and schemaIds names registry schemas', async () => {
    const png = await upload('receipt.png', await fixture('receipt.png'));
    const refused = await call('POST', '/v1/runs', { body: { uploadId: png, prompt: 'x', split: true } });
    expect(refused.status).toBe(400);
    const uploadId = await upload('packet.pdf', PACKET.bytes);
    const unknown = await call('POST', '/v1/runs', {
      body: { uploadId, prompt: 'x', split: true, schemaIds: ['no_such_schema'] },
      key: KEYS.a,
    });
    expect(unknown.status).toBe(400);
  });
});

test('vision analyze --split prints one block per document', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'packet-'));
  const file = join(dir, 'packet.pdf');
  writeFileSync(file, PACKET.bytes);
  const out = await visionCli(['analyze', file, '--prompt', 'Extract each document', '--split', '--yes']);
  expect(out.code).toBe(0);
  const blocks = out.stdout.match(/^== document \d+: [a-z_]+, pages? \d+(-\d+)? \(classification/gm) ?? [];
  const count = Number(/^run run_\w+: (\d+) documents, charged/m.exec(out.stdout)?.[1]);
  expect(count).toBeGreaterThanOrEqual(2);
  expect(blocks).toHaveLength(count);
});

describe('a split run with a language model', () => {
  let fake: FakeServer;
  let own: RunningStack;
  let ddb: DynamoDBDocumentClient;
  const KEY = 'vk_packets_model_tenant_0123456789';

  beforeAll(async () => {
    // Each answer after 100 ms, two calls of a run at once: a crash leaves pages not yet asked.
    fake = await startFakeServer(packetModel({ firstTokenMs: 100, tokensPerSecond: 100_000 }));
    own = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `packets:${KEY}`,
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'sk-test-packets-0123456789',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      SERVICE_PROVIDER_CONCURRENCY: '2',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
      VISION_LOCAL_FAULT_INJECTION: 'true',
    });
    ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: own.info.endpoints.dynamodb }));
  }, 150_000);
  afterAll(async () => {
    ddb?.destroy();
    await own?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const api = (path: string, init?: RequestInit) =>
    fetch(`${own.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });

  /** Creates a split run of PACKET and waits for it to be final. */
  const splitRun = async (metadata: Record<string, string> = {}) => {
    const presign = (await (
      await api('/v1/uploads/presign', {
        method: 'POST',
        body: JSON.stringify({ fileName: 'packet.pdf', contentLength: PACKET.bytes.length }),
      })
    ).json()) as { uploadId: string; uploadUrl: string };
    await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([new Uint8Array(PACKET.bytes)]) });
    const created = await api('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ uploadId: presign.uploadId, prompt: 'Extract', split: true, confirmCost: true, metadata }),
    });
    expect(created.status).toBe(202);
    const { jobId } = (await created.json()) as { jobId: string };
    let run: Record<string, unknown> = {};
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      run = (await (await api(`/v1/runs/${jobId}`)).json()) as Record<string, unknown>;
      if (run.status !== 'queued') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect({ status: run.status, error: run.error }).toEqual({ status: 'completed', error: undefined });
    return { jobId, run, documents: (run.result as { documents: Doc[] }).documents };
  };

  test('one classification call per page, one extraction per document, every page in one document', async () => {
    const { run, documents } = await splitRun();
    expectPartition(documents, PACKET.pages);
    const score = scoreOf(countSplit(shapes(documents), PACKET.truth));
    expect(score.f1).toBeGreaterThanOrEqual(0.8);
    const extracted = documents.filter((d) => d.schemaId !== 'other').length;
    expect(fake.requests).toHaveLength(PACKET.pages + extracted);
    expect(run.attempts).toHaveLength(PACKET.pages + extracted);
    // Pages are classified on OpenAI's smaller model (pricing.json classificationModel); documents on the configured one.
    const models = (classify: boolean) =>
      new Set(
        fake.requests
          .filter((r) => JSON.stringify(r.body).includes(CLASSIFY_MARKER) === classify)
          .map((r) => (r.body as { model?: string }).model),
      );
    expect(models(true)).toEqual(new Set(['gpt-5.4-nano']));
    expect(models(false)).toEqual(new Set(['gpt-5.4-mini']));
  });

  test('a crash after a checkpoint: the redelivery asks the model nothing again; one hold, one settlement', async () => {
    const { jobId, run, documents } = await splitRun({ localFault: 'crash-after-chunk' });
    expectPartition(documents, PACKET.pages);
    const extracted = documents.filter((d) => d.schemaId !== 'other').length;
    // Every page classified once and every document extracted once, over both deliveries.
    expect(fake.requests).toHaveLength(PACKET.pages + extracted);
    expect(run.attempts).toHaveLength(PACKET.pages + extracted);
    // The crash was real: the run was delivered again, its checkpoints (a page each, a document each) read back.
    const stored = await ddb.send(
      new GetCommand({ TableName: own.info.resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
    );
    expect(Number(stored.Item?.deliveries)).toBeGreaterThanOrEqual(2);
    const chunks = await ddb.send(
      new QueryCommand({
        TableName: own.info.resources.tables.runChunks,
        KeyConditionExpression: 'jobId = :j',
        ExpressionAttributeValues: { ':j': jobId },
        ConsistentRead: true,
      }),
    );
    expect(chunks.Items?.filter((c) => Number(c.first) > 0)).toHaveLength(PACKET.pages);
    expect(chunks.Items?.filter((c) => Number(c.first) < 0)).toHaveLength(extracted);
    const ledger = await ddb.send(
      new QueryCommand({
        TableName: own.info.resources.tables.ledger,
        KeyConditionExpression: 'tenantId = :t AND begins_with(entryId, :j)',
        ExpressionAttributeValues: { ':t': 'packets', ':j': `${jobId}#` },
        ConsistentRead: true,
      }),
    );
    expect(ledger.Items?.map((e) => e.kind).sort()).toEqual(['hold', 'settle']);
  });
});
