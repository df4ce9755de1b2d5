/**
 * Fallback across real provider adapters on the local stack: provider endpoints are pointed (through each SDK's
 * base-URL variable) at a local fake server that fails, so the plan must fall back — to the next provider, or to
 * PROVIDER_ERROR when every candidate fails. Each scenario starts its own stack because VISION_PROVIDERS is global.
 * Also checks that provider keys never appear in the stack's logs or in run records.
 */
import { readFile } from 'node:fs/promises';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';
import { openaiAnswer as answerOf } from '../support/openai-answers.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

/** A completed OpenAI answer as the dated model snapshot reports itself. */
const openaiAnswer = (answer: unknown, usage: { input: number; output: number }) =>
  answerOf(answer, usage, { model: 'gpt-5.4-mini-2026-03-17' });

const KEY = 'vk_fallback_tenant_0123456789abcdef';
const OPENAI_SECRET = 'sk-test-openai-SECRET-0f9e8d7c6b5a';
const ANTHROPIC_SECRET = 'sk-ant-test-SECRET-1a2b3c4d5e6f';

async function analyse(stack: RunningStack, file: string, body: Record<string, unknown>) {
  const bytes = await readFile(new URL(`../fixtures/${file}`, import.meta.url));
  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });
  const presign = (await (
    await api('/v1/uploads/presign', {
      method: 'POST',
      body: JSON.stringify({ fileName: file, contentLength: bytes.length }),
    })
  ).json()) as {
    uploadId: string;
    uploadUrl: string;
  };
  await fetch(presign.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([bytes]),
  });
  const created = (await (
    await api('/v1/runs', { method: 'POST', body: JSON.stringify({ uploadId: presign.uploadId, ...body }) })
  ).json()) as { jobId: string };
  const deadline = Date.now() + 90_000;
  for (;;) {
    const run = (await (await api(`/v1/runs/${created.jobId}`)).json()) as Record<string, unknown>;
    if (run.status === 'completed' || run.status === 'failed') return run;
    if (Date.now() > deadline) throw new Error(`run ${created.jobId} not final`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stackEnv(fake: FakeServer, providers: string): Record<string, string> {
  return {
    VISION_DEV_API_KEYS: `fallback:${KEY}`,
    VISION_PROVIDERS: providers,
    OPENAI_API_KEY: OPENAI_SECRET,
    OPENAI_BASE_URL: `${fake.url}/v1`,
    ANTHROPIC_API_KEY: ANTHROPIC_SECRET,
    ANTHROPIC_BASE_URL: fake.url,
    LOG_LEVEL: 'info',
  };
}

describe('provider fallback on the local stack', () => {
  let fake: FakeServer;

  beforeAll(async () => {
    fake = await startFakeServer(() => ({
      status: 500,
      json: { error: { message: 'upstream exploded', type: 'server_error' } },
    }));
  });
  afterAll(async () => fake.close());

  test('when every candidate fails the run is failed with PROVIDER_ERROR, 502, retryable, nothing charged', async () => {
    const stack = await startStackOnSuiteEmulators(stackEnv(fake, 'openai,anthropic'));
    try {
      const run = await analyse(stack, 'receipt.png', { prompt: 'Receipt', schemaId: 'receipt' });
      expect(run).toMatchObject({
        status: 'failed',
        error: { code: 'PROVIDER_ERROR', status: 502, retryable: true },
        chargedUsd: 0,
      });
      expect(run.refundedUsd).toBe(run.estimatedCostUsd);
      const attempts = run.attempts as { provider: string; outcome: string; failure: string }[];
      expect(attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
        ['openai', 'failed', 'server'],
        ['anthropic', 'failed', 'server'],
      ]);
      const everything = JSON.stringify(run) + stack.output.join('\n');
      expect(everything).not.toContain(OPENAI_SECRET);
      expect(everything).not.toContain(ANTHROPIC_SECRET);
    } finally {
      await stack.stop();
    }
  });

  test('when the first candidate fails and the second answers, the run completes and attempts show both', async () => {
    const stack = await startStackOnSuiteEmulators(stackEnv(fake, 'openai,local'));
    try {
      const run = await analyse(stack, 'receipt.png', { prompt: 'Receipt', schemaId: 'receipt' });
      expect(run.status).toBe('completed');
      expect((run.result as { total: unknown }).total).toBe(42.5);
      const attempts = run.attempts as { provider: string; outcome: string }[];
      expect(attempts.map((a) => [a.provider, a.outcome])).toEqual([
        ['openai', 'failed'],
        ['local', 'succeeded'],
      ]);
      expect(JSON.stringify(run) + stack.output.join('\n')).not.toContain(OPENAI_SECRET);
    } finally {
      await stack.stop();
    }
  });

  test("Textract answering like LocalStack's mock (a page billed, no text) falls back to local within the spend limit", async () => {
    // LocalStack's Textract answers every call with empty Blocks / ExpenseDocuments while reporting the pages.
    const localstackTextract = await startFakeServer((request) => ({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      json: String(request.headers['x-amz-target']).endsWith('AnalyzeExpense')
        ? { DocumentMetadata: { Pages: 1 }, ExpenseDocuments: [] }
        : { DocumentMetadata: { Pages: 1 }, Blocks: [] },
    }));
    const stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `fallback:${KEY}`,
      VISION_PROVIDERS: 'textract,local',
      AWS_ACCESS_KEY_ID: 'AKIDLOCALSTACKTEST',
      AWS_SECRET_ACCESS_KEY: 'localstack-test-secret',
      VISION_DISABLE_IAM_PROVIDERS: 'false',
      AWS_ENDPOINT_URL_TEXTRACT: localstackTextract.url,
    });
    try {
      const run = await analyse(stack, 'receipt.png', { prompt: 'Receipt', schemaId: 'receipt' });
      const attempts = run.attempts as { provider: string; outcome: string; failure?: string }[];
      expect(attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
        ['textract', 'failed', 'invalid_output'],
        ['local', 'succeeded', undefined],
      ]);
      expect(run.status).toBe('completed');
      expect((run.result as { total: unknown }).total).toBe(42.5);
      // The Textract page was billed and the local OCR too: the fallback fits the spend limit (2 x the estimate, which
      // predicts Textract alone); the client pays at most the estimate and the service absorbs the rest.
      const usage = run.usage as { requests: number; priceUsd: number };
      expect(usage.requests).toBe(2);
      const estimate = run.estimatedCostUsd as number;
      expect(run.chargedUsd).toBe(Math.min(usage.priceUsd, estimate));
      expect(Math.round(((run.chargedUsd as number) + (run.refundedUsd as number)) * 1e6)).toBe(
        Math.round(estimate * 1e6),
      );
      expect(usage.priceUsd).toBeLessThanOrEqual(2 * estimate);
      expect(JSON.stringify(run)).not.toContain('absorbed');
      expect(localstackTextract.requests.length).toBeGreaterThan(0);
    } finally {
      await stack.stop();
      await localstackTextract.close();
    }
  });

  test('a scanned PDF and an open question: Textract reads the page, OpenAI answers from its text (two steps, one charge)', async () => {
    // One fake speaks both APIs: Textract (JSON 1.1, X-Amz-Target) and OpenAI's Responses API (POST /v1/responses).
    const lines = ['ACME HARDWARE', 'Date: 2026-11-02', 'Total: 42.50'];
    const answer = {
      summary: 'A receipt from ACME HARDWARE for 42.50',
      text: lines.join('\n'),
      keyValues: [{ key: 'Total', value: '42.50' }],
    };
    const providers = await startFakeServer((request) => {
      if (request.headers['x-amz-target'] === 'Textract.DetectDocumentText') {
        return {
          status: 200,
          headers: { 'content-type': 'application/x-amz-json-1.1' },
          json: {
            DocumentMetadata: { Pages: 1 },
            Blocks: [
              { BlockType: 'PAGE', Id: 'p1', Page: 1, Confidence: 99.5 },
              ...lines.map((Text, i) => ({ BlockType: 'LINE', Id: `l${i}`, Page: 1, Text, Confidence: 98 })),
            ],
          },
        };
      }
      if (request.path === '/v1/responses') return openaiAnswer(answer, { input: 900, output: 80 });
      return { status: 404, json: { message: `unexpected ${request.method} ${request.path}` } };
    });
    // No VISION_PROVIDERS (an explicit order is one pass): the plan is the service's choice among the providers with
    // credentials — OpenAI (key), Textract (AWS credentials) and local; Bedrock is left out with an unpriced model.
    const stack = await startStackOnSuiteEmulators({
      VISION_DEV_API_KEYS: `fallback:${KEY}`,
      OPENAI_API_KEY: OPENAI_SECRET,
      OPENAI_BASE_URL: `${providers.url}/v1`,
      BEDROCK_MODEL_ID: 'unpriced.model-v1:0',
      LOG_LEVEL: 'info',
      AWS_ACCESS_KEY_ID: 'AKIDCHAINTEST',
      AWS_SECRET_ACCESS_KEY: 'chain-test-secret',
      VISION_DISABLE_IAM_PROVIDERS: 'false',
      AWS_ENDPOINT_URL_TEXTRACT: providers.url,
    });
    try {
      const run = await analyse(stack, 'scanned.pdf', { prompt: 'Who sold this and for how much?' });
      expect(run.status).toBe('completed');
      expect(run.strategy).toBe('ocr_then_analyze');
      const attempts = run.attempts as { provider: string; step: string; outcome: string }[];
      expect(attempts.map((a) => [a.provider, a.step, a.outcome])).toEqual([
        ['textract', 'ocr', 'succeeded'],
        ['openai', 'analyze', 'succeeded'],
      ]);
      // The open-analysis result, key-value pairs as an object (as from any provider).
      expect(run.result).toEqual({ summary: answer.summary, text: answer.text, keyValues: { Total: '42.50' } });
      // OpenAI was sent Textract's text, not the PDF.
      const sent = JSON.stringify(providers.requests.find((r) => r.path === '/v1/responses')?.body);
      expect(sent).toContain('ACME HARDWARE');
      expect(sent).not.toContain('application/pdf');
      const usage = run.usage as { requests: number; priceUsd: number; billableUnits: number };
      expect(usage).toMatchObject({ requests: 2, billableUnits: 1 });
      expect(run.chargedUsd).toBe(usage.priceUsd);
      expect(run.chargedUsd as number).toBeLessThanOrEqual(run.estimatedCostUsd as number);
      expect((run.refundedUsd as number) + (run.chargedUsd as number)).toBeCloseTo(run.estimatedCostUsd as number, 6);
      expect(JSON.stringify(run) + stack.output.join('\n')).not.toContain(OPENAI_SECRET);
    } finally {
      await stack.stop();
      await providers.close();
    }
  });

  test('a transcription larger than a DynamoDB item (≈800 KB) completes and reads back whole', async () => {
    // Twenty pages, one call each (a chunked run), ~40 KB of text each.
    const text = `${'Line of a long transcribed document, with numbers 12345 and words. '.repeat(600)}end`;
    const openai = await startFakeServer(() => openaiAnswer({ text }, { input: 1_500, output: 2_000 }));
    const stack = await startStackOnSuiteEmulators(stackEnv(openai, 'openai'));
    try {
      const run = await analyse(stack, 'twenty-pages.pdf', {
        prompt: 'Transcribe the document',
        outputFormat: 'text',
        confirmCost: true,
      });
      expect(run.status).toBe('completed');
      expect(Buffer.byteLength(JSON.stringify(run.result))).toBeGreaterThan(600 * 1024);
      const pages = Array.from({ length: 20 }, (_, i) => ({ page: i + 1, text }));
      expect(run.result).toEqual({ text: pages.map((p) => p.text).join('\n\f\n'), pages });
      expect((run.chargedUsd as number) + (run.refundedUsd as number)).toBeCloseTo(run.estimatedCostUsd as number, 6);
    } finally {
      await stack.stop();
      await openai.close();
    }
  });
});
