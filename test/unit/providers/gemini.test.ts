/**
 * Drives the Gemini adapter through the real @google/genai SDK against a local fake of the Gemini API
 * (Generative Language API v1beta). The fake speaks the public wire format:
 * - request: `POST /v1beta/models/{model}:generateContent`, key in the `x-goog-api-key` header, JSON body
 *   `{contents: [{role, parts: [{inlineData: {mimeType, data}} | {text}]}], generationConfig: {maxOutputTokens,
 *   responseMimeType, responseJsonSchema, thinkingConfig}}` (https://ai.google.dev/api/generate-content);
 * - response: `{candidates: [{content: {role: 'model', parts: [{text}]}, finishReason, avgLogprobs}], usageMetadata:
 *   {promptTokenCount, candidatesTokenCount, thoughtsTokenCount, totalTokenCount}, promptFeedback?: {blockReason}}`;
 * - errors: `{error: {code, message, status, details: [{'@type': '…RetryInfo', retryDelay: '2.5s'}, …]}}`
 *   (https://ai.google.dev/gemini-api/docs/troubleshooting, https://cloud.google.com/apis/design/errors).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FileFacts, SupportedMime } from '../../../shared/file-facts.js';
import { createGeminiProvider } from '../../../shared/providers/gemini/adapter.js';
import {
  geminiPricing,
  geminiProfile,
  MAX_PDF_BYTES,
  mediaTokenBound,
  outputTokenCap,
  promptTokenBound,
  REPAIR_MESSAGE_MAX_TOKENS,
  tokenCostMicros,
} from '../../../shared/providers/gemini/profile.js';
import { resultJsonSchema } from '../../../shared/providers/task-prompt.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../../../shared/providers/types.js';
import { normaliseFields, registry } from '../../../shared/registry/registry.js';
import type { Step, TaskSpec } from '../../../shared/task.js';
import { ProviderFailure } from '../../../shared/task.js';
import { type FakeServer, type RecordedRequest, startFakeServer } from '../../support/fake-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');
const SECRET = 'AIzaSyTEST-secret-key-0123456789abcdef';
const MODEL = 'gemini-3.8-flash';
const GENERATE_PATH = `/v1beta/models/${MODEL}:generateContent`;
/** During the launch promotion ($0.75 / $3.75 per MTok) … */
const PROMO_NOW = Date.parse('2026-11-22T12:00:00Z');
/** … and after it (list price, $1.50 / $7.50 per MTok, what the estimate uses). */
const LIST_NOW = Date.parse('2027-02-01T12:00:00Z');
const PRICING = geminiPricing.models[MODEL];
if (!PRICING) throw new Error(`pricing.json lacks ${MODEL}`);

interface Fixture {
  bytes: Uint8Array;
  facts: FileFacts;
}

function fixture(name: string, mime: SupportedMime, pages = 1, size?: { width: number; height: number }): Fixture {
  const bytes = new Uint8Array(readFileSync(path.join(FIXTURES, name)));
  const kind = mime === 'application/pdf' ? 'pdf' : 'image';
  return { bytes, facts: { mime, kind, sizeBytes: bytes.byteLength, pages, ...size } };
}

const RECEIPT_PNG = fixture('receipt.png', 'image/png', 1, { width: 800, height: 834 });
const RECEIPT_JPG = fixture('receipt.jpg', 'image/jpeg', 1, { width: 834, height: 800 });
const RECEIPT_HEIC = fixture('receipt.heic', 'image/heic', 1, { width: 800, height: 834 });
const TEXT_PDF = fixture('text.pdf', 'application/pdf', 2);
const SCANNED_PDF = fixture('scanned.pdf', 'application/pdf', 1);
const TWENTY_PAGES_PDF = fixture('twenty-pages.pdf', 'application/pdf', 20);

const receiptEntry = registry.get('receipt');
if (!receiptEntry) throw new Error('registry lacks receipt');
const RECEIPT_TASK: TaskSpec = {
  prompt: 'Extract the receipt.',
  outputFormat: 'json',
  fields: normaliseFields(receiptEntry.expectedFields),
  schemaId: 'receipt',
  schemaLabel: receiptEntry.label,
  promptScaffold: receiptEntry.promptScaffold ?? null,
};
const OPEN_TASK: TaskSpec = {
  prompt: 'What is this document?',
  outputFormat: 'json',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const TEXT_TASK: TaskSpec = { ...OPEN_TASK, prompt: 'Summarise this document in one sentence.', outputFormat: 'text' };

const RECEIPT_ANSWER = {
  merchant: 'ACME HARDWARE',
  date: '2026-11-02',
  subtotal: 38.5,
  tax: 4,
  total: 42.5,
  currency: null,
};
const OPEN_ANSWER = {
  summary: 'An invoice from Globex Ltd.',
  text: 'Invoice Number: INV-2001\nInvoice Date: 2026-10-15\nVendor: Globex Ltd\nTotal Due: 1250.00',
  keyValues: [
    { key: 'Invoice Number', value: 'INV-2001' },
    { key: 'Total Due', value: '1250.00' },
  ],
};

interface UsageCounts {
  prompt: number;
  candidates: number;
  thoughts?: number;
  /** Of `prompt`, the tokens served from the context cache (implicit caching). */
  cached?: number;
}

/** A generateContent response body as the API sends it. */
function geminiBody(
  text: string,
  usage: UsageCounts,
  extra: { finishReason?: string; avgLogprobs?: number } = {},
): Record<string, unknown> {
  const thoughts = usage.thoughts ?? 0;
  return {
    candidates: [
      {
        content: { role: 'model', parts: [{ text }] },
        finishReason: extra.finishReason ?? 'STOP',
        ...(extra.avgLogprobs === undefined ? {} : { avgLogprobs: extra.avgLogprobs }),
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: usage.prompt,
      ...(usage.cached ? { cachedContentTokenCount: usage.cached } : {}),
      candidatesTokenCount: usage.candidates,
      ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
      totalTokenCount: usage.prompt + usage.candidates + thoughts,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.prompt }],
    },
    modelVersion: MODEL,
    responseId: 'fake-response-id',
  };
}

function errorBody(code: number, status: string, message: string, details: unknown[] = []): Record<string, unknown> {
  return { error: { code, message, status, details } };
}

let server: FakeServer;
let provider: ProviderAdapter;

function providerAt(nowMs: number, env: NodeJS.ProcessEnv = { GEMINI_API_KEY: SECRET, GEMINI_BASE_URL: server.url }) {
  return createGeminiProvider({ env, now: () => nowMs });
}

function invoke(
  file: Fixture,
  task: TaskSpec,
  options: { step?: Step; timeoutMs?: number; documentText?: string; adapter?: ProviderAdapter } = {},
): Promise<ProviderOutput> {
  const input: ProviderInput = {
    bytes: file.bytes,
    facts: file.facts,
    task,
    step: options.step ?? 'vision',
    ...(options.documentText === undefined ? {} : { documentText: options.documentText }),
  };
  const controller = new AbortController();
  const deadlineMs = Date.now() + (options.timeoutMs ?? 20_000);
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 20_000);
  return (options.adapter ?? provider)
    .invoke(input, { signal: controller.signal, deadlineMs })
    .finally(() => clearTimeout(timer));
}

/** Runs an invocation that must fail and returns its ProviderFailure. */
async function failure(promise: Promise<ProviderOutput>): Promise<ProviderFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderFailure) return error;
    throw error;
  }
  throw new Error('expected the invocation to fail');
}

type GenerateBody = {
  contents: { role: string; parts: Record<string, unknown>[] }[];
  generationConfig: Record<string, unknown>;
  [key: string]: unknown;
};

function bodyOf(request: RecordedRequest | undefined): GenerateBody {
  if (!request) throw new Error('no request recorded');
  return request.body as GenerateBody;
}

function inlineData(request: RecordedRequest | undefined): { mimeType: string; data: string } {
  const part = bodyOf(request).contents[0]?.parts.find((p) => p.inlineData !== undefined);
  if (!part) throw new Error('no inlineData part');
  return part.inlineData as { mimeType: string; data: string };
}

function instructionText(request: RecordedRequest | undefined): string {
  const part = bodyOf(request).contents[0]?.parts.find((p) => typeof p.text === 'string');
  return String(part?.text ?? '');
}

beforeAll(async () => {
  server = await startFakeServer();
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.requests.length = 0;
  provider = providerAt(PROMO_NOW);
});

describe('gemini adapter: success over the wire', () => {
  test('an image with a schema: request shape, result, usage and cost from usageMetadata', async () => {
    server.respond(() => ({
      json: geminiBody(
        JSON.stringify(RECEIPT_ANSWER),
        { prompt: 1460, candidates: 72, thoughts: 310 },
        { avgLogprobs: -0.05 },
      ),
    }));
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK);

    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(GENERATE_PATH);
    expect(request?.headers['x-goog-api-key']).toBe(SECRET);
    expect(request?.path).not.toContain('key=');
    const body = bodyOf(request);
    expect(body.contents).toHaveLength(1);
    expect(body.contents[0]?.role).toBe('user');
    // The image first, then the instruction (the order the Gemini docs recommend for media prompts).
    expect(body.contents[0]?.parts[0]?.inlineData).toBeDefined();
    const image = inlineData(request);
    expect(['image/jpeg', 'image/png', 'image/webp']).toContain(image.mimeType);
    const sent = Buffer.from(image.data, 'base64');
    if (image.mimeType === 'image/jpeg') expect([...sent.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    expect(instructionText(request)).toContain('Extract the receipt.');
    expect(instructionText(request)).toContain('merchant');
    expect(body.generationConfig.responseMimeType).toBe('application/json');
    expect(body.generationConfig.responseJsonSchema).toEqual(resultJsonSchema(RECEIPT_TASK));
    expect(body.generationConfig.responseSchema).toBeUndefined();
    expect(body.generationConfig.maxOutputTokens).toBe(outputTokenCap({ pages: 1 }, RECEIPT_TASK, 'vision', PRICING));
    expect(body.generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'LOW' });
    expect(body.generationConfig.responseLogprobs).toBeUndefined();
    // Not logged by Google (request-level `store`, a top-level request field).
    expect(body.store).toBe(false);

    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.documentText).toBeUndefined();
    expect(output.nativeConfidence).toBeCloseTo(Math.exp(-0.05), 6);
    // Promotion rates: 1460 x 0.75 + (72 + 310) x 3.75 = 1095 + 1432.5 → 2528 micros (rounded up).
    expect(output.usage).toEqual({ billableUnits: 1, costMicros: 2528, inputTokens: 1460, outputTokens: 382 });
  });

  test('input tokens served from the context cache are billed at the cached price, during and after the promotion', async () => {
    // Implicit caching: a request repeating a recent prefix reports those tokens in cachedContentTokenCount, which
    // promptTokenCount includes (they are not extra tokens).
    server.respond(() => ({
      json: geminiBody(JSON.stringify(RECEIPT_ANSWER), {
        prompt: 12_000,
        cached: 8_000,
        candidates: 72,
        thoughts: 310,
      }),
    }));
    const promo = await invoke(RECEIPT_PNG, RECEIPT_TASK);
    // 4000 x 0.75 + 8000 x 0.075 + 382 x 3.75 = 3000 + 600 + 1432.5 → 5033 micros (rounded up).
    expect(promo.usage).toEqual({ billableUnits: 1, costMicros: 5033, inputTokens: 12_000, outputTokens: 382 });
    const list = await invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter: providerAt(LIST_NOW) });
    // 4000 x 1.5 + 8000 x 0.15 + 382 x 7.5 = 6000 + 1200 + 2865
    expect(list.usage.costMicros).toBe(10_065);
  });

  test('after the promotion, cost is at list price', async () => {
    server.respond(() => ({
      json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1460, candidates: 72, thoughts: 310 }),
    }));
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter: providerAt(LIST_NOW) });
    // 1460 x 1.5 + 382 x 7.5 = 2190 + 2865
    expect(output.usage.costMicros).toBe(5055);
    expect(output.nativeConfidence).toBeUndefined();
  });

  test('a HEIC that fits is sent as HEIC, byte for byte', async () => {
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1450, candidates: 70 }) }));
    await invoke(RECEIPT_HEIC, RECEIPT_TASK);
    const image = inlineData(server.requests[0]);
    expect(image.mimeType).toBe('image/heic');
    expect(image.data).toBe(Buffer.from(RECEIPT_HEIC.bytes).toString('base64'));
  });

  test('a JPEG is sent upright (EXIF orientation applied) as an image Gemini reads', async () => {
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1450, candidates: 70 }) }));
    await invoke(RECEIPT_JPG, RECEIPT_TASK);
    const image = inlineData(server.requests[0]);
    expect(image.mimeType).toBe('image/jpeg');
    const sent = Buffer.from(image.data, 'base64');
    const { default: sharp } = await import('sharp');
    const meta = await sharp(sent).metadata();
    // Stored 834 x 800 with orientation 6: upright it is 800 wide, 834 high.
    expect([meta.width, meta.height]).toEqual([800, 834]);
  });

  test('a PDF goes inline as application/pdf; an open analysis is normalised and gives the document text', async () => {
    server.respond(() => ({
      json: geminiBody(JSON.stringify(OPEN_ANSWER), { prompt: 1800, candidates: 160, thoughts: 200 }),
    }));
    const output = await invoke(TEXT_PDF, OPEN_TASK);
    const document = inlineData(server.requests[0]);
    expect(document.mimeType).toBe('application/pdf');
    expect(document.data).toBe(Buffer.from(TEXT_PDF.bytes).toString('base64'));
    expect(bodyOf(server.requests[0]).generationConfig.responseJsonSchema).toEqual(resultJsonSchema(OPEN_TASK));
    expect(output.result).toEqual({
      summary: OPEN_ANSWER.summary,
      text: OPEN_ANSWER.text,
      keyValues: { 'Invoice Number': 'INV-2001', 'Total Due': '1250.00' },
    });
    expect(output.documentText).toBe(OPEN_ANSWER.text);
    expect(output.usage.billableUnits).toBe(2);
  });

  test('outputFormat text asks for plain text and returns {text}', async () => {
    server.respond(() => ({
      json: geminiBody('An invoice from Globex Ltd for 1250.00.', { prompt: 1700, candidates: 14 }),
    }));
    const output = await invoke(TEXT_PDF, TEXT_TASK);
    const config = bodyOf(server.requests[0]).generationConfig;
    expect(config.responseMimeType).toBeUndefined();
    expect(config.responseJsonSchema).toBeUndefined();
    expect(config.maxOutputTokens).toBe(outputTokenCap({ pages: 2 }, TEXT_TASK, 'vision', PRICING));
    expect(output.result).toEqual({ text: 'An invoice from Globex Ltd for 1250.00.' });
    expect(output.documentText).toBe('An invoice from Globex Ltd for 1250.00.');
  });

  test('an ocr step transcribes, whatever the task asked', async () => {
    server.respond(() => ({ json: geminiBody('ACME HARDWARE\nTotal: 42.50', { prompt: 1300, candidates: 40 }) }));
    const output = await invoke(SCANNED_PDF, RECEIPT_TASK, { step: 'ocr' });
    expect(instructionText(server.requests[0])).toMatch(/^Transcribe all legible text/);
    expect(bodyOf(server.requests[0]).generationConfig.responseJsonSchema).toBeUndefined();
    expect(output.result).toEqual({ text: 'ACME HARDWARE\nTotal: 42.50' });
    expect(output.documentText).toBe('ACME HARDWARE\nTotal: 42.50');
  });

  test('an analyze step sends the given text, not the file', async () => {
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 400, candidates: 70 }) }));
    const documentText = 'ACME HARDWARE\nDate: 2026-11-02\nTotal: 42.50';
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK, { step: 'analyze', documentText });
    const parts = bodyOf(server.requests[0]).contents[0]?.parts ?? [];
    expect(parts.some((p) => p.inlineData !== undefined)).toBe(false);
    expect(String(parts[0]?.text)).toContain(documentText);
    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.documentText).toBe(documentText);
  });

  test('GOOGLE_GEMINI_BASE_URL is honoured when GEMINI_BASE_URL is not set; GEMINI_MODEL picks a priced model', async () => {
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1450, candidates: 70 }) }));
    const adapter = providerAt(PROMO_NOW, {
      GEMINI_API_KEY: SECRET,
      GOOGLE_GEMINI_BASE_URL: server.url,
      GEMINI_MODEL: MODEL,
    });
    await invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter });
    expect(server.requests[0]?.path).toBe(GENERATE_PATH);
  });

  test('a classification task (a packet page) runs on pricing.json classificationModel at its prices', async () => {
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1000, candidates: 100 }) }));
    const adapter = providerAt(PROMO_NOW, { GEMINI_API_KEY: SECRET, GEMINI_BASE_URL: server.url });
    const output = await invoke(RECEIPT_PNG, { ...RECEIPT_TASK, modelTier: 'classification' }, { adapter });
    expect(geminiPricing.classificationModel).toBe('gemini-3.1-flash-lite');
    expect(server.requests[0]?.path).toBe('/v1beta/models/gemini-3.1-flash-lite:generateContent');
    // 1000 × 0.25 + 100 × 1.50 = 400 micros: Flash-Lite's list prices (it has no promotion).
    expect(output.usage.costMicros).toBe(400);
  });
});

const PROMO_RATES = { inputPerMTokUsd: 0.75, cachedInputPerMTokUsd: 0.075, outputPerMTokUsd: 3.75 };

describe('gemini adapter: structured output repair', () => {
  test('an answer coercion fixes (missing fields, a number as text) is taken without a repair request', async () => {
    server.respond(() => ({
      json: geminiBody('{"merchant": "ACME HARDWARE", "total": "42.50"}', { prompt: 1460, candidates: 30 }),
    }));
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK);
    expect(server.requests).toHaveLength(1);
    expect(output.result).toEqual(expect.objectContaining({ merchant: 'ACME HARDWARE', total: '42.50', date: null }));
  });

  test('a schema-invalid answer gets one repair request; a valid repair succeeds and both requests are billed', async () => {
    let calls = 0;
    server.respond(() => {
      calls += 1;
      return calls === 1
        ? {
            json: geminiBody('{"merchant": {"name": "ACME"}, "total": "n/a"}', {
              prompt: 1460,
              candidates: 20,
              thoughts: 100,
            }),
          }
        : { json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1560, candidates: 72, thoughts: 50 }) };
    });
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK);
    expect(server.requests).toHaveLength(2);
    const repair = bodyOf(server.requests[1]);
    expect(repair.contents.map((c) => c.role)).toEqual(['user', 'model', 'user']);
    expect(repair.contents[1]?.parts[0]?.text).toBe('{"merchant": {"name": "ACME"}, "total": "n/a"}');
    const message = String(repair.contents[2]?.parts[0]?.text);
    expect(message).toContain('$.merchant: expected string or null, got object');
    expect(message).toContain('$.total: expected number or null, got string');
    // What coercion fixes is not asked for: the missing date becomes null.
    expect(message).not.toContain('$.date');
    // The repair resends the document.
    expect(repair.contents[0]?.parts[0]?.inlineData).toBeDefined();
    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: tokenCostMicros(1460 + 1560, 120 + 122, PROMO_RATES),
      inputTokens: 3020,
      outputTokens: 242,
    });
  });

  test('invalid twice → invalid_output carrying the usage of both requests', async () => {
    server.respond(() => ({ json: geminiBody('not json at all', { prompt: 1460, candidates: 5, thoughts: 40 }) }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(server.requests).toHaveLength(2);
    expect(error.kind).toBe('invalid_output');
    expect(error.usage).toEqual({
      billableUnits: 1,
      costMicros: tokenCostMicros(2920, 90, PROMO_RATES),
      inputTokens: 2920,
      outputTokens: 90,
    });
  });

  test.each([
    ['MAX_TOKENS', 'at the'],
    ['CONTINUATION', 'per-request token limit'],
  ])('a text answer cut short (%s) is truncated with its usage, never a result', async (finishReason, why) => {
    server.respond(() => ({
      json: geminiBody('Page 1: ACME HARDWARE, 12 Main', { prompt: 1460, candidates: 900 }, { finishReason }),
    }));
    const error = await failure(invoke(TEXT_PDF, TEXT_TASK));
    expect(server.requests).toHaveLength(1);
    expect(error.kind).toBe('truncated');
    expect(error.message).toContain(why);
    expect(error.usage?.outputTokens).toBe(900);
    expect(error.usage?.costMicros).toBe(tokenCostMicros(1460, 900, PROMO_RATES));
  });

  test.each(['MAX_TOKENS', 'CONTINUATION'])(
    'a JSON answer cut short (%s) is truncated with its usage, without a repair',
    async (finishReason) => {
      server.respond(() => ({
        json: geminiBody(
          '{"merchant": "ACME HARD',
          { prompt: 1460, candidates: 800, thoughts: 4000 },
          { finishReason },
        ),
      }));
      const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
      expect(server.requests).toHaveLength(1);
      expect(error.kind).toBe('truncated');
      expect(error.usage?.outputTokens).toBe(4800);
      expect(error.usage?.costMicros).toBe(tokenCostMicros(1460, 4800, PROMO_RATES));
    },
  );

  test('a JSON answer cut at MAX_TOKENS that still parses is truncated, never a result', async () => {
    // A list cut between two items can close into valid JSON: the finish reason, not the parse, says it is incomplete.
    server.respond(() => ({
      json: geminiBody(
        JSON.stringify(RECEIPT_ANSWER),
        { prompt: 1460, candidates: 800 },
        { finishReason: 'MAX_TOKENS' },
      ),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(server.requests).toHaveLength(1);
    expect(error.kind).toBe('truncated');
    expect(error.usage?.outputTokens).toBe(800);
  });
});

describe('gemini adapter: failures', () => {
  test.each([
    [400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', 'client'],
    [401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.', 'auth'],
    [403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers.", 'auth'],
    [404, 'NOT_FOUND', `models/${MODEL} is not found for API version v1beta.`, 'client'],
    [500, 'INTERNAL', 'An internal error has occurred.', 'server'],
    [503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.', 'server'],
  ])('HTTP %i %s → %s, with one request (the SDK does not retry)', async (status, grpc, message, kind) => {
    server.respond(() => ({ status, json: errorBody(status, grpc, message) }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe(kind);
    expect(error.message).toContain(`HTTP ${status}`);
    expect(error.message).toContain(message);
    expect(server.requests).toHaveLength(1);
  });

  test('an invalid key (400 API_KEY_INVALID, the Gemini API way) → auth, and the key is scrubbed from the message', async () => {
    server.respond(() => ({
      status: 400,
      json: errorBody(400, 'INVALID_ARGUMENT', `API key not valid: ${SECRET}. Please pass a valid API key.`, [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
      ]),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('auth');
    expect(error.message).not.toContain(SECRET);
    expect(error.message).toContain('[redacted]');
  });

  test('429 with Retry-After seconds → rate_limited with retryAfterMs', async () => {
    server.respond(() => ({
      status: 429,
      headers: { 'retry-after': '7' },
      json: errorBody(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(7000);
    expect(server.requests).toHaveLength(1);
  });

  test('429 with an HTTP-date Retry-After → rate_limited with the time until then', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    server.respond(() => ({
      status: 429,
      headers: { 'retry-after': at },
      json: errorBody(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.'),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterMs).toBeGreaterThan(25_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  test('429 RESOURCE_EXHAUSTED with google.rpc.RetryInfo and no header → retryAfterMs from retryDelay', async () => {
    server.respond(() => ({
      status: 429,
      json: errorBody(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota.', [
        { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'input_token_count' }] },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '2.5s' },
      ]),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(2500);
  });

  test('an answer slower than the deadline → timeout, promptly', async () => {
    server.respond(() => ({
      // Far longer than the deadline: an adapter that waited for the answer could not finish within jest's limit.
      delayMs: 60_000,
      json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1, candidates: 1 }),
    }));
    const started = Date.now();
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK, { timeoutMs: 1500 }));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  test('a 200 whose body is not JSON → invalid_output', async () => {
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      raw: '<html>proxy error</html>',
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('invalid_output');
  });

  test('a 200 without candidates → invalid_output', async () => {
    server.respond(() => ({ json: { usageMetadata: { promptTokenCount: 1460, totalTokenCount: 1460 } } }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('invalid_output');
    expect(error.usage?.inputTokens).toBe(1460);
  });

  test('a connection refused → server', async () => {
    const closed = await startFakeServer();
    const url = closed.url;
    await closed.close();
    const adapter = providerAt(PROMO_NOW, { GEMINI_API_KEY: SECRET, GEMINI_BASE_URL: url });
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter }));
    expect(error.kind).toBe('server');
  });

  test.each(['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT'])('finishReason %s → refusal with usage', async (reason) => {
    server.respond(() => ({
      json: geminiBody('', { prompt: 1460, candidates: 0, thoughts: 30 }, { finishReason: reason }),
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('refusal');
    expect(error.usage?.inputTokens).toBe(1460);
    expect(server.requests).toHaveLength(1);
  });

  test('a blocked prompt (promptFeedback.blockReason, no candidates) → refusal', async () => {
    server.respond(() => ({
      json: {
        promptFeedback: { blockReason: 'PROHIBITED_CONTENT' },
        usageMetadata: { promptTokenCount: 1460, totalTokenCount: 1460 },
      },
    }));
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
    expect(error.kind).toBe('refusal');
    expect(error.message).toContain('PROHIBITED_CONTENT');
  });

  test('no API key → auth, and nothing is sent', async () => {
    const adapter = providerAt(PROMO_NOW, { GEMINI_BASE_URL: server.url });
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter }));
    expect(error.kind).toBe('auth');
    expect(server.requests).toHaveLength(0);
  });

  test('a model pricing.json does not list → client, and nothing is sent', async () => {
    const adapter = providerAt(PROMO_NOW, {
      GEMINI_API_KEY: SECRET,
      GEMINI_BASE_URL: server.url,
      GEMINI_MODEL: 'gemini-9-ultra',
    });
    const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK, { adapter }));
    expect(error.kind).toBe('client');
    expect(server.requests).toHaveLength(0);
  });

  test('a PDF over the inline limit → client with a clear message, and nothing is sent', async () => {
    const big: Fixture = {
      bytes: new Uint8Array(MAX_PDF_BYTES + 1),
      facts: { mime: 'application/pdf', kind: 'pdf', sizeBytes: MAX_PDF_BYTES + 1, pages: 3 },
    };
    const error = await failure(invoke(big, RECEIPT_TASK));
    expect(error.kind).toBe('client');
    expect(error.message).toMatch(/PDF is 50\.0 MB.*up to 50 MB inline/);
    expect(server.requests).toHaveLength(0);
  });

  test('the key never appears in a failure message or an output', async () => {
    const echoes = [
      { status: 401, json: errorBody(401, 'UNAUTHENTICATED', `bad key ${SECRET}`) },
      { status: 429, json: errorBody(429, 'RESOURCE_EXHAUSTED', `quota for ${SECRET}`) },
      { status: 500, json: errorBody(500, 'INTERNAL', `internal ${SECRET}`) },
      { status: 502, raw: `upstream ${SECRET}` },
    ];
    for (const answer of echoes) {
      server.respond(() => answer);
      const error = await failure(invoke(RECEIPT_PNG, RECEIPT_TASK));
      expect(`${error.message} ${String(error.cause ?? '')}`).not.toContain(SECRET);
    }
    server.respond(() => ({ json: geminiBody(JSON.stringify(RECEIPT_ANSWER), { prompt: 1460, candidates: 70 }) }));
    const output = await invoke(RECEIPT_PNG, RECEIPT_TASK);
    expect(JSON.stringify(output)).not.toContain(SECRET);
  });
});

describe('gemini profile: the estimate bounds the actual cost', () => {
  test('the profile', () => {
    expect(geminiProfile.id).toBe('gemini');
    expect(geminiProfile.auth).toBe('api-key');
    expect(geminiProfile.credentialEnv).toEqual(['GEMINI_API_KEY']);
    expect(geminiProfile.strategies).toEqual(['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary']);
  });

  // Realistic usage per fixture: media at the documented default resolution (1,120 tokens an image, 560 a PDF page)
  // plus ~50% for the text layer of text PDFs, the instruction and schema, a short answer and some LOW thinking.
  const cases: [string, Fixture, TaskSpec, string, UsageCounts][] = [
    [
      'receipt.png',
      RECEIPT_PNG,
      RECEIPT_TASK,
      JSON.stringify(RECEIPT_ANSWER),
      { prompt: 1460, candidates: 72, thoughts: 600 },
    ],
    [
      'receipt.jpg',
      RECEIPT_JPG,
      RECEIPT_TASK,
      JSON.stringify(RECEIPT_ANSWER),
      { prompt: 1460, candidates: 72, thoughts: 600 },
    ],
    [
      'receipt.heic',
      RECEIPT_HEIC,
      RECEIPT_TASK,
      JSON.stringify(RECEIPT_ANSWER),
      { prompt: 1460, candidates: 72, thoughts: 600 },
    ],
    ['text.pdf', TEXT_PDF, OPEN_TASK, JSON.stringify(OPEN_ANSWER), { prompt: 1900, candidates: 220, thoughts: 500 }],
    [
      'scanned.pdf',
      SCANNED_PDF,
      RECEIPT_TASK,
      JSON.stringify(RECEIPT_ANSWER),
      { prompt: 900, candidates: 72, thoughts: 600 },
    ],
    [
      'twenty-pages.pdf',
      TWENTY_PAGES_PDF,
      TEXT_TASK,
      'Twenty short paragraphs.',
      { prompt: 17_500, candidates: 12, thoughts: 900 },
    ],
  ];

  test.each(cases)(
    '%s: maxCostMicros ≥ the cost the adapter computes, at promotion and at list price',
    async (_n, file, task, text, usage) => {
      server.respond(() => ({ json: geminiBody(text, usage) }));
      const estimate = geminiProfile.maxCostMicros(file.facts, task);
      for (const nowMs of [PROMO_NOW, LIST_NOW]) {
        const output = await invoke(file, task, { adapter: providerAt(nowMs) });
        expect(output.usage.costMicros).toBeGreaterThan(0);
        expect(estimate).toBeGreaterThanOrEqual(output.usage.costMicros);
      }
    },
  );

  const jsonCases = cases.filter(([, , task]) => task.outputFormat === 'json');
  test.each(jsonCases)(
    '%s: a worst-case attempt (two requests at the input bounds and output caps) costs exactly the vision bound, within the estimate',
    async (_n, file, task) => {
      const cap = outputTokenCap(file.facts, task, 'vision', PRICING);
      const firstInput = promptTokenBound(task, 'vision') + mediaTokenBound(file.facts, 'vision', PRICING);
      let calls = 0;
      server.respond(() => {
        calls += 1;
        const prompt = calls === 1 ? firstInput : firstInput + cap + REPAIR_MESSAGE_MAX_TOKENS;
        return { json: geminiBody('{"broken": ', { prompt, candidates: cap - 1000, thoughts: 1000 }) };
      });
      const error = await failure(invoke(file, task, { adapter: providerAt(LIST_NOW) }));
      expect(error.kind).toBe('invalid_output');
      expect(server.requests).toHaveLength(2);
      expect(error.usage?.costMicros).toBe(geminiProfile.stepCostMicros(file.facts, task, 'vision'));
      // PDFs are also bounded for the text (`analyze`) path, so the estimate may be higher than the vision bound.
      expect(error.usage?.costMicros).toBeLessThanOrEqual(geminiProfile.maxCostMicros(file.facts, task));
    },
  );

  test('a worst-case text answer (one request at the bounds, cut at the cap) stays within the estimate', async () => {
    const file = TWENTY_PAGES_PDF;
    const cap = outputTokenCap(file.facts, TEXT_TASK, 'vision', PRICING);
    const prompt = promptTokenBound(TEXT_TASK, 'vision') + mediaTokenBound(file.facts, 'vision', PRICING);
    server.respond(() => ({
      json: geminiBody(
        'Paragraph one…',
        { prompt, candidates: cap - 1000, thoughts: 1000 },
        { finishReason: 'MAX_TOKENS' },
      ),
    }));
    const error = await failure(invoke(file, TEXT_TASK, { adapter: providerAt(LIST_NOW) }));
    expect(error.kind).toBe('truncated');
    expect(server.requests).toHaveLength(1);
    expect(error.usage?.costMicros).toBeLessThanOrEqual(geminiProfile.maxCostMicros(file.facts, TEXT_TASK));
  });

  test('the estimate is the list price of the bounds: exact figures for a receipt', () => {
    const cap = outputTokenCap({ pages: 1 }, RECEIPT_TASK, 'vision', PRICING);
    // 4,096 thinking + 256 + 6 scalar fields x 128.
    expect(cap).toBe(5120);
    const firstInput = promptTokenBound(RECEIPT_TASK, 'vision') + 1120;
    const expected = tokenCostMicros(2 * firstInput + cap + REPAIR_MESSAGE_MAX_TOKENS, 2 * cap, PRICING);
    expect(geminiProfile.maxCostMicros(RECEIPT_PNG.facts, RECEIPT_TASK)).toBe(expected);
  });

  test('caps grow with pages for transcriptions and list fields, within the model limit', () => {
    expect(outputTokenCap({ pages: 20 }, TEXT_TASK, 'vision', PRICING)).toBe(4096 + 256 + 20 * 1500);
    expect(outputTokenCap({ pages: 200 }, TEXT_TASK, 'vision', PRICING)).toBe(PRICING.maxOutputTokens);
    const statement = registry.get('bank_statement');
    if (!statement) throw new Error('registry lacks bank_statement');
    const task: TaskSpec = { ...RECEIPT_TASK, fields: normaliseFields(statement.expectedFields) };
    // 7 scalar fields and one array (transactions) that may hold a page's worth per page.
    expect(outputTokenCap({ pages: 3 }, task, 'vision', PRICING)).toBe(4096 + 256 + 7 * 128 + 512 + 3 * 1500);
    expect(outputTokenCap({ pages: 3 }, RECEIPT_TASK, 'ocr', PRICING)).toBe(4096 + 256 + 3 * 1500);
  });

  test('an analyze step is bounded by the text it is allowed to pass on', () => {
    const facts = TEXT_PDF.facts;
    expect(mediaTokenBound(facts, 'analyze', PRICING)).toBe(2 * 6000);
    expect(geminiProfile.stepCostMicros(facts, RECEIPT_TASK, 'analyze')).toBeGreaterThan(0);
  });

  test('an unknown GEMINI_MODEL still gets an estimate (the most expensive listed figures)', () => {
    expect(
      geminiProfile.stepCostMicros(RECEIPT_PNG.facts, RECEIPT_TASK, 'vision', {
        env: { GEMINI_MODEL: 'gemini-9-ultra' },
      }),
    ).toBe(geminiProfile.stepCostMicros(RECEIPT_PNG.facts, RECEIPT_TASK, 'vision', { env: { GEMINI_MODEL: MODEL } }));
  });
});
