/**
 * Drives the openai adapter through the real `openai` SDK against a local fake of the Responses API
 * (test/support/fake-server.ts). The requests the SDK puts on the wire are checked against the public API reference
 * (POST /v1/responses with a Bearer key; `input` messages whose content holds `input_image` {image_url: data URL,
 * detail}, `input_file` {filename, file_data: data URL} and `input_text` parts; `text.format` {type: "json_schema",
 * name, schema, strict}; `max_output_tokens`; `include: ["message.output_text.logprobs"]`; `reasoning.effort`;
 * `store`), and the fake answers with the API's response object (`output[].content[]` of `output_text` with
 * `logprobs`, or `refusal`; `status` / `incomplete_details`; `usage`) and its error bodies ({error: {message, type,
 * param, code}}). Media preparation (shared/media) runs for real on the fixtures. Expected costs are computed here
 * from pricing.json's numbers, not with the adapter's cost function.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as mupdf from 'mupdf';
import sharp from 'sharp';
import type { FileFacts } from '../../../shared/file-facts.js';
import { type InspectLimits, inspectUpload } from '../../../shared/inspect/index.js';
import { createOpenAIProvider } from '../../../shared/providers/openai/adapter.js';
import { retryAfterMs } from '../../../shared/providers/openai/failures.js';
import pricingRaw from '../../../shared/providers/openai/pricing.json' with { type: 'json' };
import {
  attemptTokenBounds,
  OCR_TASK,
  openaiProfile,
  pricesFor,
  SYSTEM_INSTRUCTIONS,
} from '../../../shared/providers/openai/profile.js';
import { strictCompatible } from '../../../shared/providers/openai/request.js';
import {
  confidenceFromLogprobs,
  jsonValueRanges,
  topLevelValueSpans,
  valueConfidences,
} from '../../../shared/providers/openai/value-confidence.js';
import { resultSchemaErrors } from '../../../shared/providers/result-validation.js';
import { buildInstruction, resultJsonSchema } from '../../../shared/providers/task-prompt.js';
import type { InvokeOptions, ProviderInput } from '../../../shared/providers/types.js';
import type { Step, TaskSpec } from '../../../shared/task.js';
import { failureOf } from '../../support/failures.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../../support/fake-server.js';

mupdf.setLog(() => {});

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');
const fixture = (name: string): Buffer => readFileSync(path.join(FIXTURES, name));

const KEY = 'sk-proj-TEST-SECRET-7f3c9a1e5b2d8c4f6a0e9b1d3c5f7a9e';
const MiB = 1024 * 1024;
const LIMITS: InspectLimits = {
  imageMaxBytes: 20 * MiB,
  imageMaxPixels: 100_000_000,
  pdfMaxBytes: 50 * MiB,
  pdfMaxPages: 200,
};

// Prices straight from pricing.json: gpt-5.4-mini, $0.75 input / $0.075 cached input / $4.50 output per MTok.
const mini = pricingRaw.models['gpt-5.4-mini'];

/** Expected cost in micros, rounded up once over the whole attempt (as the contract's money rules do). */
function expectedMicros(...usages: { input: number; output: number; cached?: number }[]): number {
  const usd = usages.reduce(
    (sum, u) =>
      sum +
      ((u.input - (u.cached ?? 0)) * mini.inputPerMTokUsd +
        (u.cached ?? 0) * mini.cachedInputPerMTokUsd +
        u.output * mini.outputPerMTokUsd) /
        1_000_000,
    0,
  );
  return Math.ceil(usd * 1_000_000 - 1e-6);
}

async function factsOf(bytes: Uint8Array): Promise<FileFacts> {
  return inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.byteLength, LIMITS);
}

// ---------------------------------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------------------------------

const receiptTask: TaskSpec = {
  prompt: 'Extract the receipt details',
  outputFormat: 'json',
  fields: [
    { name: 'vendor', type: 'string', required: true },
    { name: 'date', type: 'date', required: false },
    { name: 'total', type: 'number', required: true },
    { name: 'invoiceNumber', type: 'string', required: false },
  ],
  schemaId: 'receipt',
  schemaLabel: 'Receipt',
  promptScaffold: null,
};
const openTask: TaskSpec = {
  prompt: 'What is this document?',
  outputFormat: 'json',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const textTask: TaskSpec = { ...openTask, prompt: 'Summarise the document in one sentence', outputFormat: 'text' };
const statementTask: TaskSpec = {
  ...openTask,
  prompt: 'Extract the statement',
  fields: [
    { name: 'accountHolder', type: 'string', required: true },
    { name: 'transactions', type: 'array', required: false, description: 'List of {date, description, amount}' },
  ],
};

const RECEIPT_ANSWER = { vendor: 'ACME HARDWARE', date: '2026-11-02', total: 42.5, invoiceNumber: 'INV-1042' };

// ---------------------------------------------------------------------------------------------------------------
// The fake Responses API
// ---------------------------------------------------------------------------------------------------------------

interface FakeUsage {
  input: number;
  output: number;
  cached?: number;
}

/** Splits text into 3-character "tokens", each with the same logprob (so any subset has the same mean). */
function tokens(
  text: string,
  logprob = -0.01,
): { token: string; logprob: number; bytes: number[]; top_logprobs: [] }[] {
  const out = [];
  for (let i = 0; i < text.length; i += 3) {
    const token = text.slice(i, i + 3);
    out.push({ token, logprob, bytes: [...Buffer.from(token)], top_logprobs: [] as [] });
  }
  return out;
}

/** A Responses API object as the API returns it. */
function responseObject(
  content: Record<string, unknown>[],
  usage: FakeUsage,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: 'resp_0123456789abcdef',
    object: 'response',
    created_at: 1_795_000_000,
    status: 'completed',
    error: null,
    incomplete_details: null,
    instructions: SYSTEM_INSTRUCTIONS,
    max_output_tokens: 4096,
    model: 'gpt-5.4-mini-2026-03-17',
    output: [{ id: 'msg_0123456789abcdef', type: 'message', status: 'completed', role: 'assistant', content }],
    parallel_tool_calls: true,
    reasoning: { effort: 'none', summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'json_schema', name: 'result', strict: true }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cached ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
    user: null,
    metadata: {},
    ...extra,
  };
}

/** A completed response whose answer is `text` (JSON text of the answer object), with logprobs. */
function answer(value: unknown, usage: FakeUsage = { input: 1260, output: 60 }, logprob = -0.01): ScriptedResponse {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return {
    json: responseObject([{ type: 'output_text', annotations: [], logprobs: tokens(text, logprob), text }], usage),
  };
}

/** An API error body as OpenAI sends it. */
function apiError(
  status: number,
  message: string,
  code: string | null = null,
  headers: Record<string, string> = {},
  param: string | null = null,
): ScriptedResponse {
  const type = status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { status, headers, json: { error: { message, type, param, code } } };
}

// ---------------------------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------------------------

let server: FakeServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  server = await startFakeServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
  env = { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${server.url}/v1` };
});

function options(ms = 20_000): InvokeOptions {
  return { signal: new AbortController().signal, deadlineMs: Date.now() + ms };
}

async function inputFor(name: string, task: TaskSpec, step: Step = 'vision'): Promise<ProviderInput> {
  const bytes = fixture(name);
  return { bytes, facts: await factsOf(bytes), task, step };
}

/** Runs the adapter and returns the failure it throws (fails the test if it succeeds). */

interface SentBody {
  model: string;
  instructions: string;
  input: { type?: string; role: string; content: unknown }[];
  text: { format: { type: string; name: string; schema: unknown; strict: boolean } };
  max_output_tokens: number;
  include?: string[];
  reasoning?: { effort: string };
  store: boolean;
}

function bodyOf(request: RecordedRequest | undefined): SentBody {
  if (!request) throw new Error('no request was sent');
  return request.body as SentBody;
}

function partsOf(request: RecordedRequest | undefined, index = 0): Record<string, unknown>[] {
  const content = bodyOf(request).input[index]?.content;
  if (!Array.isArray(content)) throw new Error('message content is not a list of parts');
  return content as Record<string, unknown>[];
}

function dataUrlBytes(url: unknown, mime: string): Buffer {
  const prefix = `data:${mime};base64,`;
  expect(typeof url).toBe('string');
  expect((url as string).startsWith(prefix)).toBe(true);
  return Buffer.from((url as string).slice(prefix.length), 'base64');
}

// ---------------------------------------------------------------------------------------------------------------
// Requests and results
// ---------------------------------------------------------------------------------------------------------------

describe('openai adapter: request and result', () => {
  it('sends a PNG as an upright JPEG data URL with the strict schema, and returns the fields, usage and cost', async () => {
    server.respond(() => answer(RECEIPT_ANSWER, { input: 1260, output: 60 }));
    const adapter = createOpenAIProvider({ env });
    const output = await adapter.invoke(await inputFor('receipt.png', receiptTask), options());

    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/responses');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    const body = bodyOf(request);
    expect(body.model).toBe('gpt-5.4-mini');
    expect(body.instructions).toBe(SYSTEM_INSTRUCTIONS);
    expect(body.store).toBe(false);
    expect(body.reasoning).toEqual({ effort: 'none' });
    expect(body.include).toEqual(['message.output_text.logprobs']);
    expect(body.max_output_tokens).toBe(1024 + 64 * 4);
    expect(body.text.format).toEqual({
      type: 'json_schema',
      name: 'result',
      schema: resultJsonSchema(receiptTask),
      strict: true,
    });
    expect(body.input).toHaveLength(1);
    expect(body.input[0]).toMatchObject({ type: 'message', role: 'user' });
    const [image, instruction] = partsOf(request);
    expect(image).toMatchObject({ type: 'input_image', detail: 'high' });
    const jpeg = dataUrlBytes(image?.image_url, 'image/jpeg');
    const meta = await sharp(jpeg).metadata();
    expect(meta.format).toBe('jpeg');
    expect([meta.width, meta.height]).toEqual([800, 834]);
    expect(instruction).toEqual({ type: 'input_text', text: buildInstruction(receiptTask) });

    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.documentText).toBeUndefined();
    expect(output.nativeConfidence).toBeCloseTo(Math.exp(-0.01), 6);
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedMicros({ input: 1260, output: 60 }),
      inputTokens: 1260,
      outputTokens: 60,
    });
    // 1260 × 0.75 + 60 × 4.50 = 1215 micro-dollars per million tokens → 0.001215 USD.
    expect(output.usage.costMicros).toBe(1215);
  });

  it('prices cached input tokens at the cached price', async () => {
    server.respond(() => answer(RECEIPT_ANSWER, { input: 2000, cached: 1024, output: 100 }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    // (2000 − 1024) × 0.75 + 1024 × 0.075 + 100 × 4.50 = 732 + 76.8 + 450 = 1258.8 → 1259 micros.
    expect(output.usage.costMicros).toBe(1259);
    expect(output.usage.costMicros).toBe(expectedMicros({ input: 2000, cached: 1024, output: 100 }));
  });

  it('applies EXIF orientation to a JPEG and decodes HEIC to JPEG', async () => {
    server.respond(() => answer(RECEIPT_ANSWER));
    const adapter = createOpenAIProvider({ env });
    for (const name of ['receipt.jpg', 'receipt.heic']) {
      server.requests.length = 0;
      await adapter.invoke(await inputFor(name, receiptTask), options());
      const [image] = partsOf(server.requests[0]);
      const meta = await sharp(dataUrlBytes(image?.image_url, 'image/jpeg')).metadata();
      // receipt.jpg stores 834 × 800 pixels with orientation 6: sent upright, 800 wide and 834 tall.
      expect([name, meta.width, meta.height]).toEqual([name, 800, 834]);
    }
  });

  it('downscales a large image to a 2048 px long side', async () => {
    const big = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#ffffff' } })
      .png()
      .toBuffer();
    server.respond(() => answer(RECEIPT_ANSWER, { input: 3460, output: 60 }));
    const facts = await factsOf(big);
    const output = await createOpenAIProvider({ env }).invoke(
      { bytes: big, facts, task: receiptTask, step: 'vision' },
      options(),
    );
    const [image] = partsOf(server.requests[0]);
    const meta = await sharp(dataUrlBytes(image?.image_url, 'image/jpeg')).metadata();
    expect([meta.width, meta.height]).toEqual([2048, 1536]);
    expect(output.usage.costMicros).toBeLessThanOrEqual(openaiProfile.maxCostMicros(facts, receiptTask));
  });

  it('sends a PDF as a base64 input_file and reports its text layer and pages', async () => {
    const invoice = { vendor: 'Globex Ltd', date: '2026-10-15', total: 1250, invoiceNumber: 'INV-2001' };
    server.respond(() => answer(invoice, { input: 6666, output: 70 }));
    const input = await inputFor('text.pdf', receiptTask);
    const output = await createOpenAIProvider({ env }).invoke(input, options());

    const parts = partsOf(server.requests[0]);
    expect(parts).toHaveLength(2);
    expect(parts[0]).toMatchObject({ type: 'input_file', filename: 'document.pdf' });
    expect(parts[0]?.detail).toBeUndefined(); // a text layer: the model's default page-image detail is enough
    expect(dataUrlBytes(parts[0]?.file_data, 'application/pdf').equals(fixture('text.pdf'))).toBe(true);
    expect(parts[1]).toEqual({ type: 'input_text', text: buildInstruction(receiptTask) });
    expect(bodyOf(server.requests[0]).max_output_tokens).toBe(1024 + 64 * 4);

    expect(output.result).toEqual(invoice);
    expect(output.documentText).toContain('INV-2001');
    expect(output.documentText).toContain('Payment is due within thirty days');
    expect(output.usage).toMatchObject({ billableUnits: 2, costMicros: expectedMicros({ input: 6666, output: 70 }) });
  });

  it('reads a scanned PDF (no text layer) without document text', async () => {
    server.respond(() => answer(RECEIPT_ANSWER, { input: 3460, output: 60 }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('scanned.pdf', receiptTask), options());
    // A scan: the page image is all there is, so it is read at high detail.
    expect(partsOf(server.requests[0])[0]).toMatchObject({ type: 'input_file', detail: 'high' });
    expect(output.documentText).toBeUndefined();
    expect(output.usage.billableUnits).toBe(1);
  });

  it('runs an open analysis of a 20-page PDF with an output cap that grows with the pages', async () => {
    const open = {
      summary: 'A twenty-page report',
      text: 'Page one …',
      keyValues: [
        { key: 'Pages', value: '20' },
        { key: 'Title', value: 'Report' },
      ],
    };
    server.respond(() => answer(open, { input: 63_610, output: 8000 }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('twenty-pages.pdf', openTask), options());
    const body = bodyOf(server.requests[0]);
    expect(body.max_output_tokens).toBe(1024 + 2048 * 20);
    expect(body.text.format.schema).toEqual(resultJsonSchema(openTask));
    expect(output.result).toEqual({ ...open, keyValues: { Pages: '20', Title: 'Report' } });
    expect(output.documentText?.length).toBeGreaterThan(100);
    expect(output.usage.billableUnits).toBe(20);
  });

  it('answers a text task with {text} and a 4096-token cap', async () => {
    server.respond(() => answer({ text: 'A receipt from ACME HARDWARE.' }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', textTask), options());
    const body = bodyOf(server.requests[0]);
    expect(body.max_output_tokens).toBe(4096);
    expect(body.text.format.schema).toEqual(resultJsonSchema(textTask));
    expect(partsOf(server.requests[0])[1]).toEqual({ type: 'input_text', text: buildInstruction(textTask) });
    expect(output.result).toEqual({ text: 'A receipt from ACME HARDWARE.' });
    expect(output.documentText).toBe('A receipt from ACME HARDWARE.');
  });

  it('runs an analyze step on the text an OCR step read, without sending the file', async () => {
    server.respond(() => answer(RECEIPT_ANSWER, { input: 700, output: 60 }));
    const input = {
      ...(await inputFor('receipt.png', receiptTask, 'analyze')),
      documentText: 'ACME HARDWARE\nTotal: 42.50',
    };
    const output = await createOpenAIProvider({ env }).invoke(input, options());
    const parts = partsOf(server.requests[0]);
    expect(parts.map((p) => p.type)).toEqual(['input_text', 'input_text']);
    expect(parts[0]?.text).toContain('<document>\nACME HARDWARE\nTotal: 42.50\n</document>');
    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.documentText).toBe('ACME HARDWARE\nTotal: 42.50');
  });

  it("cuts an analyze step's text to the allowance the estimate holds, on a character boundary", async () => {
    server.respond(() => answer(RECEIPT_ANSWER, { input: 700, output: 60 }));
    const documentText = 'é'.repeat(10_000); // 20,000 bytes; one page allows 6,064
    const input = { ...(await inputFor('receipt.png', receiptTask, 'analyze')), documentText };
    await createOpenAIProvider({ env }).invoke(input, options());
    const sent = String(partsOf(server.requests[0])[0]?.text);
    expect(sent).toContain(`<document>\n${'é'.repeat(3_032)}\n</document>`);
    expect(sent).not.toContain('é'.repeat(3_033));
  });

  it('transcribes for an ocr step, whatever the task', async () => {
    server.respond(() => answer({ text: 'ACME HARDWARE\nTotal: 42.50' }));
    const output = await createOpenAIProvider({ env }).invoke(
      await inputFor('receipt.png', receiptTask, 'ocr'),
      options(),
    );
    const body = bodyOf(server.requests[0]);
    expect(body.text.format.schema).toEqual(resultJsonSchema(OCR_TASK));
    expect(partsOf(server.requests[0])[1]).toEqual({ type: 'input_text', text: buildInstruction(OCR_TASK) });
    expect(output.result).toEqual({ text: 'ACME HARDWARE\nTotal: 42.50' });
    expect(output.documentText).toBe('ACME HARDWARE\nTotal: 42.50');
  });

  it('sends a schema with a free-form list non-strict, checks the answer itself, and caps lists per page', async () => {
    const statement = { accountHolder: 'Jane Doe', transactions: [{ date: '2026-10-01', amount: -12.5 }] };
    server.respond(() => answer(statement));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('text.pdf', statementTask), options());
    const body = bodyOf(server.requests[0]);
    expect(body.text.format.strict).toBe(false);
    expect(body.max_output_tokens).toBe(1024 + 64 + (64 + 1024 * 2));
    expect(output.result).toEqual(statement);
  });

  it('reads the final answer, not intermediate commentary messages', async () => {
    const text = JSON.stringify(RECEIPT_ANSWER);
    const body = responseObject([{ type: 'output_text', annotations: [], logprobs: tokens(text), text }], {
      input: 1260,
      output: 70,
    });
    const final = (body.output as Record<string, unknown>[])[0];
    body.output = [
      {
        id: 'msg_commentary',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        phase: 'commentary',
        content: [{ type: 'output_text', annotations: [], text: 'Reading the receipt…' }],
      },
      { ...final, phase: 'final_answer' },
    ];
    server.respond(() => ({ json: body }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(server.requests).toHaveLength(1);
  });

  it('uses OPENAI_MODEL and its prices', async () => {
    env.OPENAI_MODEL = 'gpt-5.4-nano';
    server.respond(() => answer(RECEIPT_ANSWER, { input: 1000, output: 100 }));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    expect(bodyOf(server.requests[0]).model).toBe('gpt-5.4-nano');
    // 1000 × 0.20 + 100 × 1.25 = 325 micros.
    expect(output.usage.costMicros).toBe(325);
  });

  it('a classification task (a packet page) runs on pricing.json classificationModel at its prices', async () => {
    env.OPENAI_MODEL = 'gpt-5.4-mini';
    server.respond(() => answer(RECEIPT_ANSWER, { input: 1000, output: 100 }));
    const classify = { ...receiptTask, modelTier: 'classification' as const };
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', classify), options());
    expect(pricingRaw.classificationModel).toBe('gpt-5.4-nano');
    expect(bodyOf(server.requests[0]).model).toBe('gpt-5.4-nano');
    // 1000 × 0.20 + 100 × 1.25 = 325 micros: nano's prices, not mini's.
    expect(output.usage.costMicros).toBe(325);
    // The client's own task still runs on OPENAI_MODEL.
    await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    expect(bodyOf(server.requests[1]).model).toBe('gpt-5.4-mini');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

describe('openai adapter: failures', () => {
  it('fails with auth, before any request, when no key is configured', async () => {
    delete env.OPENAI_API_KEY;
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('auth');
    expect(failure.message).toBe('OPENAI_API_KEY is not configured');
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a model without prices (client), before any request', async () => {
    env.OPENAI_MODEL = 'gpt-imaginary';
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('client');
    expect(server.requests).toHaveLength(0);
  });

  it.each([
    [400, 'invalid_value', 'client'],
    [401, 'invalid_api_key', 'auth'],
    [403, 'unsupported_country_region_territory', 'auth'],
    [404, 'model_not_found', 'client'],
    [408, null, 'timeout'],
    [422, null, 'client'],
    [500, null, 'server'],
    [503, null, 'server'],
  ] as const)('maps HTTP %i to %s', async (status, code, kind) => {
    server.respond(() => apiError(status, `scripted ${status}`, code));
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe(kind);
    expect(failure.message).toContain(`HTTP ${status}`);
    expect(failure.usage).toBeUndefined();
    expect(server.requests).toHaveLength(1); // the SDK's own retries are off
  });

  it('maps 429 to rate_limited with Retry-After in seconds, as an HTTP date, or in ms', async () => {
    const adapter = createOpenAIProvider({ env });
    const input = await inputFor('receipt.png', receiptTask);
    server.respond(() => apiError(429, 'Rate limit reached', 'rate_limit_exceeded', { 'retry-after': '7' }));
    let failure = await failureOf(adapter.invoke(input, options()));
    expect([failure.kind, failure.retryAfterMs]).toEqual(['rate_limited', 7000]);

    const date = new Date(Date.now() + 30_000).toUTCString();
    server.respond(() => apiError(429, 'Rate limit reached', 'rate_limit_exceeded', { 'retry-after': date }));
    failure = await failureOf(adapter.invoke(input, options()));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBeGreaterThan(25_000);
    expect(failure.retryAfterMs).toBeLessThanOrEqual(30_000);

    server.respond(() => apiError(429, 'Rate limit reached', 'rate_limit_exceeded', { 'retry-after-ms': '1500' }));
    failure = await failureOf(adapter.invoke(input, options()));
    expect(failure.retryAfterMs).toBe(1500);
  });

  it('maps 429 insufficient_quota (billing, not a burst) to auth', async () => {
    server.respond(() => apiError(429, 'You exceeded your current quota', 'insufficient_quota'));
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('auth');
  });

  it('reads OpenAI rate-limit reset headers when there is no Retry-After', () => {
    expect(retryAfterMs(new Headers({ 'x-ratelimit-reset-requests': '1s', 'x-ratelimit-reset-tokens': '6m0s' }))).toBe(
      360_000,
    );
    expect(retryAfterMs(new Headers({ 'x-ratelimit-reset-tokens': '120ms' }))).toBe(120);
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });

  it('maps a refused connection to server', async () => {
    const closed = await startFakeServer();
    const url = closed.url;
    await closed.close();
    env.OPENAI_BASE_URL = `${url}/v1`;
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('server');
  });

  /** A responder that answers only when the test releases it (so no timer outlives the test). */
  function heldAnswer(): { release: () => void } {
    let release = (): void => {};
    server.respond(
      () =>
        new Promise<ScriptedResponse>((resolve) => {
          release = () => resolve(answer(RECEIPT_ANSWER));
        }),
    );
    return { release: () => release() };
  }

  it('times out at the attempt deadline when OpenAI is slow', async () => {
    const held = heldAnswer();
    const input = await inputFor('receipt.png', receiptTask);
    const started = Date.now();
    try {
      const failure = await failureOf(createOpenAIProvider({ env }).invoke(input, options(1500)));
      expect(failure.kind).toBe('timeout');
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(server.requests).toHaveLength(1);
    } finally {
      held.release();
    }
  });

  it('times out when the attempt is aborted', async () => {
    const held = heldAnswer();
    const input = await inputFor('receipt.png', receiptTask);
    const controller = new AbortController();
    const pending = createOpenAIProvider({ env }).invoke(input, {
      signal: controller.signal,
      deadlineMs: Date.now() + 20_000,
    });
    const timer = setTimeout(() => controller.abort(), 500);
    try {
      const failure = await failureOf(pending);
      expect(failure.kind).toBe('timeout');
    } finally {
      clearTimeout(timer);
      held.release();
    }
  });

  it('fails a body that is not a Responses API object with invalid_output', async () => {
    const adapter = createOpenAIProvider({ env });
    const input = await inputFor('receipt.png', receiptTask);
    const bodies: ScriptedResponse[] = [
      { raw: 'upstream said hello', headers: { 'content-type': 'text/plain' } },
      { raw: '{"object": "response", "output": [', headers: { 'content-type': 'application/json' } },
      { json: { object: 'response', id: 'resp_1' } },
      { json: { object: 'chat.completion', choices: [] } },
    ];
    for (const body of bodies) {
      server.respond(() => body);
      const failure = await failureOf(adapter.invoke(input, options()));
      expect(failure.kind).toBe('invalid_output');
    }
  });

  it('fails a response that reports status failed by its error code, with the usage it reports', async () => {
    server.respond(() => ({
      json: responseObject(
        [],
        { input: 900, output: 0 },
        {
          status: 'failed',
          error: { code: 'server_error', message: 'The model crashed' },
        },
      ),
    }));
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('server');
    expect(failure.usage?.costMicros).toBe(expectedMicros({ input: 900, output: 0 }));
  });

  it('fails a truncated answer (max_output_tokens) as truncated with its usage, without a repair', async () => {
    server.respond(() => ({
      json: responseObject(
        [{ type: 'output_text', annotations: [], text: '{"vendor": "ACME HARDW' }],
        { input: 1260, output: 1280 },
        { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
      ),
    }));
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(failure.kind).toBe('truncated');
    expect(failure.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedMicros({ input: 1260, output: 1280 }),
      inputTokens: 1260,
      outputTokens: 1280,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('fails a refusal, and an answer stopped by content filtering, with refusal and their usage', async () => {
    const adapter = createOpenAIProvider({ env });
    const input = await inputFor('receipt.png', receiptTask);
    server.respond(() => ({
      json: responseObject([{ type: 'refusal', refusal: "I'm sorry, I can't help with that." }], {
        input: 1260,
        output: 12,
      }),
    }));
    let failure = await failureOf(adapter.invoke(input, options()));
    expect(failure.kind).toBe('refusal');
    expect(failure.message).toContain("I'm sorry");
    expect(failure.usage?.costMicros).toBe(expectedMicros({ input: 1260, output: 12 }));

    server.respond(() => ({
      json: responseObject(
        [],
        { input: 1260, output: 3 },
        {
          status: 'incomplete',
          incomplete_details: { reason: 'content_filter' },
        },
      ),
    }));
    failure = await failureOf(adapter.invoke(input, options()));
    expect(failure.kind).toBe('refusal');
  });

  it('asks again without logprobs when the model rejects them, and stops asking for them', async () => {
    server.respond((request) =>
      (request.body as SentBody).include
        ? apiError(400, 'logprobs are not supported with reasoning models.', 'unsupported_parameter', {}, 'include')
        : answer(RECEIPT_ANSWER),
    );
    const adapter = createOpenAIProvider({ env });
    const input = await inputFor('receipt.png', receiptTask);
    const output = await adapter.invoke(input, options());
    expect(server.requests).toHaveLength(2);
    expect(bodyOf(server.requests[1]).include).toBeUndefined();
    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.nativeConfidence).toBeUndefined();

    server.requests.length = 0;
    await adapter.invoke(input, options());
    expect(server.requests).toHaveLength(1);
    expect(bodyOf(server.requests[0]).include).toBeUndefined();
  });

  it('refuses, before any request, a PDF whose text layer is larger than the estimate allows', async () => {
    const doc = new mupdf.PDFDocument();
    const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
    const line = 'The quick brown fox jumps over the lazy dog while the invoice totals are checked. '.repeat(3);
    const ops = Array.from({ length: 100 }, (_, i) => `BT /F1 4 Tf 10 ${780 - i * 7} Td (${line}) Tj ET`);
    doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, { Font: { F1: font } }, ops.join('\n')));
    const dense = Buffer.from(doc.saveToBuffer('compress=yes').asUint8Array());
    const facts = await factsOf(dense);
    expect(facts.pages).toBe(1);

    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke({ bytes: dense, facts, task: receiptTask, step: 'vision' }, options()),
    );
    expect(failure.kind).toBe('client');
    expect(failure.message).toContain('more text than the cost estimate allows');
    expect(server.requests).toHaveLength(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Repair
// ---------------------------------------------------------------------------------------------------------------

describe('openai adapter: one repair request', () => {
  // Values no coercion turns into their field's type (a missing invoiceNumber alone would just be null).
  const invalid = { vendor: 'ACME HARDWARE', date: ['2026-11-02'], total: 'unknown' };

  it('repairs an answer that does not match the schema with one more request', async () => {
    let call = 0;
    server.respond(() => {
      call += 1;
      return call === 1
        ? answer(invalid, { input: 1260, output: 30 })
        : answer(RECEIPT_ANSWER, { input: 600, output: 60 });
    });
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());

    expect(server.requests).toHaveLength(2);
    const repair = bodyOf(server.requests[1]);
    expect(repair.text.format.schema).toEqual(resultJsonSchema(receiptTask));
    expect(repair.max_output_tokens).toBe(1024 + 64 * 4);
    expect(repair.input.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    // The file is not sent again: the repair fixes the form of the answer, from the model's own answer.
    expect(partsOf(server.requests[1], 0)).toEqual([{ type: 'input_text', text: buildInstruction(receiptTask) }]);
    expect(repair.input[1]?.content).toBe(JSON.stringify(invalid));
    const fix = partsOf(server.requests[1], 2)[0];
    expect(fix?.type).toBe('input_text');
    expect(fix?.text).toContain('does not match the required JSON schema');
    expect(fix?.text).toContain(
      '$.date: expected string or null, got array; $.total: expected number or null, got string',
    );

    expect(output.result).toEqual(RECEIPT_ANSWER);
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedMicros({ input: 1260, output: 30 }, { input: 600, output: 60 }),
      inputTokens: 1860,
      outputTokens: 90,
    });
  });

  it('repairs an answer that is not JSON at all', async () => {
    let call = 0;
    server.respond(() => {
      call += 1;
      return call === 1 ? answer('Sure! Here is the JSON: {vendor: ACME}') : answer(RECEIPT_ANSWER);
    });
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    expect(server.requests).toHaveLength(2);
    expect(partsOf(server.requests[1], 2)[0]?.text).toContain('not valid JSON');
    expect(output.result).toEqual(RECEIPT_ANSWER);
  });

  it('fails with invalid_output, carrying both requests’ usage, when the repair is invalid too', async () => {
    let call = 0;
    server.respond(() => {
      call += 1;
      return call === 1 ? answer(invalid, { input: 1260, output: 30 }) : answer(invalid, { input: 600, output: 30 });
    });
    const failure = await failureOf(
      createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options()),
    );
    expect(server.requests).toHaveLength(2);
    expect(failure.kind).toBe('invalid_output');
    expect(failure.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedMicros({ input: 1260, output: 30 }, { input: 600, output: 30 }),
      inputTokens: 1860,
      outputTokens: 60,
    });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------------------------

describe('openai adapter: the API key never leaks', () => {
  it('keeps the key out of every failure message and every output, even when the server echoes it', async () => {
    const adapter = createOpenAIProvider({ env });
    const input = await inputFor('receipt.png', receiptTask);
    const texts: string[] = [];
    const scripted: ScriptedResponse[] = [
      apiError(401, `Incorrect API key provided: ${KEY}. You can find your API key at https://platform.openai.com.`),
      apiError(400, `Bad request for key ${KEY}`, 'invalid_value'),
      apiError(500, `internal error near ${KEY.slice(0, 20)}…${KEY.slice(-4)}`),
      apiError(429, `Rate limit for ${KEY}`, 'rate_limit_exceeded', { 'retry-after': '1' }),
      { json: responseObject([{ type: 'refusal', refusal: `I will not repeat ${KEY}` }], { input: 10, output: 5 }) },
      { status: 502, raw: `bad gateway ${KEY}`, headers: { 'content-type': 'text/plain' } },
    ];
    for (const response of scripted) {
      server.respond(() => response);
      const failure = await failureOf(adapter.invoke(input, options()));
      texts.push(failure.message, String(failure), JSON.stringify(failure), String(failure.cause ?? ''));
    }
    server.respond(() => answer({ ...RECEIPT_ANSWER, vendor: 'ACME' }));
    texts.push(JSON.stringify(await adapter.invoke(input, options())));

    expect(texts.length).toBeGreaterThan(10);
    for (const text of texts) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(KEY.slice(8));
    }
    // The key did go on the wire, where it belongs: in the Authorization header.
    expect(server.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Cost bound
// ---------------------------------------------------------------------------------------------------------------

describe('openai profile: the estimate bounds the actual cost', () => {
  // Realistic usage: image patches × 1.2 (as measured) plus ~450 prompt tokens; PDF pages ~3,008 image tokens plus
  // their text; outputs sized like real answers.
  const cases: [string, TaskSpec, FakeUsage][] = [
    ['receipt.png', receiptTask, { input: 1260, output: 60 }],
    ['receipt.jpg', receiptTask, { input: 1260, output: 60 }],
    ['receipt.heic', openTask, { input: 1260, output: 400 }],
    ['receipt.png', textTask, { input: 1200, output: 300 }],
    ['text.pdf', receiptTask, { input: 6666, output: 70 }],
    ['text.pdf', openTask, { input: 6666, output: 900 }],
    ['scanned.pdf', receiptTask, { input: 3460, output: 60 }],
    ['twenty-pages.pdf', openTask, { input: 63_610, output: 8000 }],
    ['twenty-pages.pdf', statementTask, { input: 63_610, output: 2000 }],
  ];

  it.each(cases)('%s (%#): maxCostMicros ≥ the cost the adapter computes', async (name, task, usage) => {
    server.respond(() => answer(task.outputFormat === 'text' ? { text: 'x' } : validFor(task), usage));
    const input = await inputFor(name, task);
    const output = await createOpenAIProvider({ env }).invoke(input, options());
    expect(output.usage.costMicros).toBe(expectedMicros(usage));
    expect(openaiProfile.maxCostMicros(input.facts, task)).toBeGreaterThanOrEqual(output.usage.costMicros);
  });

  it.each(cases)('%s (%#): the bound holds even when both requests use every token it allows', async (name, task) => {
    const input = await inputFor(name, task);
    const prices = pricesFor('gpt-5.4-mini');
    if (!prices) throw new Error('gpt-5.4-mini has no prices');
    const bounds = attemptTokenBounds(input.facts, task, 'vision', prices);
    let call = 0;
    server.respond(() => {
      call += 1;
      return call === 1
        ? answer('not json', { input: bounds.call.input, output: bounds.call.output })
        : answer(task.outputFormat === 'text' ? { text: 'x' } : validFor(task), bounds.repair);
    });
    const output = await createOpenAIProvider({ env }).invoke(input, options());
    expect(server.requests).toHaveLength(2);
    expect(output.usage.costMicros).toBe(expectedMicros(bounds.call, bounds.repair));
    expect(openaiProfile.maxCostMicros(input.facts, task)).toBeGreaterThanOrEqual(output.usage.costMicros);
  });

  it('bounds the requests it actually sends: prompt bytes under the bound, images within their patch allowance', async () => {
    server.respond(() => answer(RECEIPT_ANSWER));
    const input = await inputFor('receipt.png', receiptTask);
    await createOpenAIProvider({ env }).invoke(input, options());
    const body = bodyOf(server.requests[0]);
    const prices = pricesFor('gpt-5.4-mini');
    if (!prices) throw new Error('gpt-5.4-mini has no prices');
    const textBytes =
      Buffer.byteLength(body.instructions) +
      Buffer.byteLength(String(partsOf(server.requests[0])[1]?.text)) +
      Buffer.byteLength(JSON.stringify(body.text.format.schema));
    const [image] = partsOf(server.requests[0]);
    const meta = await sharp(dataUrlBytes(image?.image_url, 'image/jpeg')).metadata();
    const patches = Math.ceil((meta.width ?? 0) / 32) * Math.ceil((meta.height ?? 0) / 32);
    // Any tokenisation of the text and the image fits in the first request's input bound.
    const bounds = attemptTokenBounds(input.facts, receiptTask, 'vision', prices);
    expect(textBytes + Math.ceil(patches * prices.imagePatchMultiplier)).toBeLessThanOrEqual(bounds.call.input);
  });

  it('describes the provider for the catalog', () => {
    expect(openaiProfile).toMatchObject({ id: 'openai', auth: 'api-key', credentialEnv: ['OPENAI_API_KEY'] });
    expect(openaiProfile.strategies).toEqual(['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary']);
  });

  it('grows with pages, covers analyze for PDFs (an image runs vision only), gives ocr its own larger bound, and prices an unknown model as the default', async () => {
    const one = await factsOf(fixture('scanned.pdf'));
    const twenty = await factsOf(fixture('twenty-pages.pdf'));
    const receipt = await factsOf(fixture('receipt.png'));
    // Each page beyond the first adds at least its page image (2,500 patches × 1.62 + 32) and its text allowance
    // (6,000 + 64) at $0.75 per MTok: 10,146 tokens → 7,609.5 micros.
    expect(
      openaiProfile.maxCostMicros(twenty, receiptTask) - openaiProfile.maxCostMicros(one, receiptTask),
    ).toBeGreaterThanOrEqual(19 * 10_146 * mini.inputPerMTokUsd);
    for (const facts of [one, twenty]) {
      const bound = openaiProfile.maxCostMicros(facts, receiptTask);
      expect(bound).toBeGreaterThanOrEqual(openaiProfile.stepCostMicros(facts, receiptTask, 'vision', { env: {} }));
      expect(bound).toBeGreaterThanOrEqual(openaiProfile.stepCostMicros(facts, receiptTask, 'analyze', { env: {} }));
      expect(openaiProfile.stepCostMicros(facts, receiptTask, 'ocr', { env: {} })).toBeGreaterThan(bound);
    }
    // A single-step plan sends an image as an image: its hold is the vision pass, not the larger text allowance.
    expect(openaiProfile.maxCostMicros(receipt, receiptTask)).toBe(
      openaiProfile.stepCostMicros(receipt, receiptTask, 'vision', { env: {} }),
    );
    expect(openaiProfile.stepCostMicros(receipt, receiptTask, 'analyze', { env: {} })).toBeGreaterThan(
      openaiProfile.maxCostMicros(receipt, receiptTask),
    );
    expect(
      openaiProfile.stepCostMicros(receipt, receiptTask, 'vision', { env: { OPENAI_MODEL: 'gpt-imaginary' } }),
    ).toBe(openaiProfile.stepCostMicros(receipt, receiptTask, 'vision', { env: {} }));
    expect(
      openaiProfile.stepCostMicros(receipt, receiptTask, 'vision', { env: { OPENAI_MODEL: 'gpt-5.4-nano' } }),
    ).toBeLessThan(openaiProfile.stepCostMicros(receipt, receiptTask, 'vision', { env: {} }));
    // A receipt photo with four fields: a couple of cents at most, not dollars.
    expect(openaiProfile.maxCostMicros(receipt, receiptTask)).toBeLessThan(30_000);
  });
});

/** A schema-valid answer for a task (fields all null but the first, or an open analysis). */
function validFor(task: TaskSpec): Record<string, unknown> {
  if (task.fields === null) return { summary: 's', text: 't', keyValues: [] };
  return Object.fromEntries(task.fields.map((f, i) => [f.name, i === 0 ? 'x' : null]));
}

// ---------------------------------------------------------------------------------------------------------------
// Pure helpers
// ---------------------------------------------------------------------------------------------------------------

describe('openai adapter helpers', () => {
  it('computes confidence over the tokens that spell values, not over the schema-forced syntax', () => {
    const text = '{"total":42.5,"vendor":"ACME"}';
    expect(jsonValueRanges(text)).toEqual([
      [9, 13],
      [23, 29],
    ]);
    const t = (token: string, logprob: number) => ({ token, logprob });
    const logprobs = [
      t('{"', -0.00001),
      t('total', -0.00001),
      t('":', -0.00001),
      t('42', -0.2),
      t('.5', -0.4),
      t(',"', -0.00001),
      t('vendor', -0.00001),
      t('":"', -0.05),
      t('ACME', -0.3),
      t('"}', -0.05),
    ];
    expect(confidenceFromLogprobs(text, logprobs)).toBeCloseTo(Math.exp(-0.2), 6);
    // Tokens that do not spell the text: every token counts.
    const misaligned = logprobs.map((l) => ({ ...l, token: `${l.token} ` }));
    expect(confidenceFromLogprobs(text, misaligned)).toBeCloseTo(Math.exp(-1.00005 / 10), 6);
    expect(confidenceFromLogprobs(text, [])).toBeUndefined();

    // Per value: each top-level key's own tokens, so an unsure vendor does not hide behind a sure total.
    expect(valueConfidences(text, logprobs)).toEqual({
      total: Math.round(Math.exp(-0.3) * 1000) / 1000,
      vendor: Math.round(Math.exp((-0.05 - 0.3 - 0.05) / 3) * 1000) / 1000,
    });
    expect(valueConfidences(text, misaligned)).toBeUndefined();
    expect(topLevelValueSpans('{"a": {"b": [1, "}"]}, "c" : "x,y", "d":null}')).toEqual(
      new Map([
        ['a', [6, 21]],
        ['c', [29, 34]],
        ['d', [40, 44]],
      ]),
    );
  });

  it('reports the nativeConfidence of the answer end to end', async () => {
    server.respond(() => answer(RECEIPT_ANSWER, undefined, -0.3));
    const output = await createOpenAIProvider({ env }).invoke(await inputFor('receipt.png', receiptTask), options());
    expect(output.nativeConfidence).toBeCloseTo(Math.exp(-0.3), 6);
  });

  it('validates answers against the result schema subset', () => {
    const schema = resultJsonSchema(receiptTask);
    expect(resultSchemaErrors(RECEIPT_ANSWER, schema)).toEqual([]);
    expect(resultSchemaErrors({ ...RECEIPT_ANSWER, total: null, date: null }, schema)).toEqual([]);
    expect(resultSchemaErrors({ ...RECEIPT_ANSWER, extra: 1 }, schema)).toEqual([
      '$.extra: property is not in the schema',
    ]);
    expect(resultSchemaErrors({ vendor: 'x', total: 1 }, schema)).toEqual([
      '$.date: required property is missing',
      '$.invoiceNumber: required property is missing',
    ]);
    expect(resultSchemaErrors({ ...RECEIPT_ANSWER, total: '42' }, schema)).toEqual([
      '$.total: expected number or null, got string',
    ]);
    expect(resultSchemaErrors([], schema)).toEqual(['$: expected object, got array']);
    const open = resultJsonSchema(openTask);
    expect(resultSchemaErrors({ summary: 's', text: 't', keyValues: [{ key: 'a', value: 1 }] }, open)).toEqual([
      '$.keyValues[0].value: expected string, got number',
    ]);
  });

  it('knows which schemas strict mode accepts', () => {
    expect(strictCompatible(resultJsonSchema(receiptTask))).toBe(true);
    expect(strictCompatible(resultJsonSchema(openTask))).toBe(true);
    expect(strictCompatible(resultJsonSchema(textTask))).toBe(true);
    expect(strictCompatible(resultJsonSchema(statementTask))).toBe(false); // items: {}
    const objectField = { ...openTask, fields: [{ name: 'meta', type: 'object' as const, required: false }] };
    expect(strictCompatible(resultJsonSchema(objectField))).toBe(false); // an object without properties
  });
});
