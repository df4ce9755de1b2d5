/**
 * Drives the anthropic adapter through the real @anthropic-ai/sdk against a local fake of the Messages API
 * (test/support/fake-server.ts): the requests the SDK puts on the wire are checked against the public API reference
 * (POST /v1/messages; image / document content blocks with base64 sources; `tools` with `input_schema`; `tool_choice`
 * {type: 'tool'}; `max_tokens`), and the fake answers with the API's response and error bodies. Media preparation
 * (shared/media) runs for real on the fixtures. Expected costs are computed here from pricing.json's numbers, not
 * with the adapter's own cost function.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import type { FileFacts } from '../../../shared/file-facts.js';
import { type InspectLimits, inspectUpload } from '../../../shared/inspect/index.js';
import { createAnthropicProvider } from '../../../shared/providers/anthropic/adapter.js';
import { retryAfterMs } from '../../../shared/providers/anthropic/failures.js';
import pricingRaw from '../../../shared/providers/anthropic/pricing.json' with { type: 'json' };
import {
  anthropicProfile,
  instructionFor,
  outputTokenCap,
  pricesFor,
  promptTokenBound,
} from '../../../shared/providers/anthropic/profile.js';
import { resultSchemaErrors } from '../../../shared/providers/result-validation.js';
import { resultJsonSchema } from '../../../shared/providers/task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../../../shared/providers/types.js';
import type { ProviderFailure, Step, TaskSpec } from '../../../shared/task.js';
import { failureOf as anyFailureOf } from '../../support/failures.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../../support/fake-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');
const fixture = (name: string): Buffer => readFileSync(path.join(FIXTURES, name));

const KEY = 'sk-ant-api03-TEST-SECRET-d41d8cd98f00b204e9800998ecf8427e';
const MODEL = 'claude-haiku-5-5';
const MiB = 1024 * 1024;
const LIMITS: InspectLimits = {
  imageMaxBytes: 20 * MiB,
  imageMaxPixels: 100_000_000,
  pdfMaxBytes: 50 * MiB,
  pdfMaxPages: 200,
};

// ---------------------------------------------------------------------------------------------------------------
// Prices, straight from pricing.json (Haiku 5.5: $0.10 / $0.50 per MTok up to 100k prompt tokens, $0.50 / $2.50 over)
// ---------------------------------------------------------------------------------------------------------------

const haiku = pricingRaw.models['claude-haiku-5-5'];
const [standardTier, longTier] = haiku.tiers;
if (!standardTier || !longTier) throw new Error('pricing.json: claude-haiku-5-5 must have two tiers');

/** Micro-dollars for one request: tokens × USD/MTok is micro-dollars; a prompt over 100k tokens bills all at tier 2. */
function requestMicros(input: number, output: number): number {
  const tier = input > (standardTier?.maxPromptTokens ?? 0) ? longTier : standardTier;
  return input * (tier?.inputPerMTokUsd ?? 0) + output * (tier?.outputPerMTokUsd ?? 0);
}
function costMicros(...requests: [number, number][]): number {
  return Math.ceil(requests.reduce((sum, [i, o]) => sum + requestMicros(i, o), 0) - 1e-6);
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures, tasks, responses
// ---------------------------------------------------------------------------------------------------------------

async function factsOf(bytes: Uint8Array): Promise<FileFacts> {
  return inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.length, LIMITS);
}

const receiptTask: TaskSpec = {
  prompt: 'Extract the receipt details.',
  outputFormat: 'json',
  fields: [
    { name: 'date', type: 'date', required: true },
    { name: 'invoiceNumber', type: 'string', required: false },
    { name: 'total', type: 'number', description: 'Grand total', required: true },
  ],
  schemaId: 'receipt',
  schemaLabel: 'Receipt',
  promptScaffold: null,
};
const RECEIPT_RESULT = { date: '2026-11-02', invoiceNumber: 'INV-1042', total: 42.5 };

const openTask: TaskSpec = {
  prompt: 'What is this document?',
  outputFormat: 'json',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const textTask: TaskSpec = { ...openTask, prompt: 'Transcribe the document.', outputFormat: 'text' };

function input(bytes: Uint8Array, facts: FileFacts, task: TaskSpec, step: Step = 'vision'): ProviderInput {
  return { bytes, facts, task, step };
}

function options(ms = 10_000, signal: AbortSignal = new AbortController().signal): InvokeOptions {
  return { signal, deadlineMs: Date.now() + ms };
}

let toolIds = 0;

/** A Messages API response (https://platform.claude.com/docs/en/api/messages) whose content is one record_result call. */
function toolResponse(
  toolInput: unknown,
  usage: { input: number; output: number },
  extra: Record<string, unknown> = {},
): ScriptedResponse {
  toolIds += 1;
  return {
    status: 200,
    headers: { 'request-id': `req_${toolIds}` },
    json: {
      id: `msg_${toolIds}`,
      type: 'message',
      role: 'assistant',
      model: MODEL,
      container: null,
      diagnostics: null,
      content: [
        {
          type: 'tool_use',
          id: `toolu_${toolIds}`,
          name: 'record_result',
          input: toolInput,
          caller: { type: 'direct' },
        },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: usage.input,
        output_tokens: usage.output,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        inference_geo: 'us',
        output_tokens_details: { thinking_tokens: 0 },
        server_tool_use: null,
        service_tier: 'standard',
        speed: 'standard',
      },
      ...extra,
    },
  };
}

/** An error response as the API sends it: `{type: 'error', error: {type, message}, request_id}`. */
function errorResponse(status: number, type: string, message: string, headers: Record<string, string> = {}) {
  return {
    status,
    headers: { 'request-id': 'req_error', ...headers },
    json: { type: 'error', error: { type, message }, request_id: 'req_error' },
  } satisfies ScriptedResponse;
}

/** Answers the scripted responses in order (the last one again if more requests come). */
function inOrder(server: FakeServer, ...responses: ScriptedResponse[]): void {
  let i = 0;
  server.respond(() => responses[Math.min(i++, responses.length - 1)] as ScriptedResponse);
}

/** The adapter's failure, whose message never carries the key. */
async function failureOf(work: Promise<unknown>): Promise<ProviderFailure> {
  const failure = await anyFailureOf(work);
  expect(failure.message).not.toContain(KEY);
  return failure;
}

type Body = {
  model: string;
  max_tokens: number;
  messages: { role: string; content: Record<string, unknown>[] }[];
  tools: { name: string; description: string; input_schema: unknown }[];
  tool_choice: unknown;
  thinking: unknown;
};
const bodyOf = (request: RecordedRequest | undefined): Body => request?.body as Body;

/** The base64 source of an image or document block: its media type and decoded bytes. */
function sourceOf(block: Record<string, unknown> | undefined): { mediaType: string; bytes: Buffer } {
  const source = (block?.source ?? {}) as { media_type?: string; data?: string };
  return { mediaType: String(source.media_type), bytes: Buffer.from(String(source.data), 'base64') };
}

// ---------------------------------------------------------------------------------------------------------------
// Suite
// ---------------------------------------------------------------------------------------------------------------

let server: FakeServer;
let provider: ProviderAdapter;
const png = fixture('receipt.png');
const jpg = fixture('receipt.jpg');
const heic = fixture('receipt.heic');
const textPdf = fixture('text.pdf');
const scannedPdf = fixture('scanned.pdf');
const twentyPdf = fixture('twenty-pages.pdf');
let pngFacts: FileFacts;
let jpgFacts: FileFacts;
let heicFacts: FileFacts;
let textPdfFacts: FileFacts;
let scannedFacts: FileFacts;
let twentyFacts: FileFacts;
/** Every output the adapter returned, checked for the key at the end. */
const outputs: ProviderOutput[] = [];

async function run(i: ProviderInput, o: InvokeOptions = options()): Promise<ProviderOutput> {
  const output = await provider.invoke(i, o);
  outputs.push(output);
  return output;
}

beforeAll(async () => {
  server = await startFakeServer();
  // The production path: the key from ANTHROPIC_API_KEY through apiKeyFor, the endpoint from ANTHROPIC_BASE_URL.
  provider = createAnthropicProvider({ env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: server.url } });
  [pngFacts, jpgFacts, heicFacts, textPdfFacts, scannedFacts, twentyFacts] = await Promise.all([
    factsOf(png),
    factsOf(jpg),
    factsOf(heic),
    factsOf(textPdf),
    factsOf(scannedPdf),
    factsOf(twentyPdf),
  ]);
});

afterAll(async () => {
  await server.close();
  expect(JSON.stringify(outputs)).not.toContain(KEY);
});

beforeEach(() => {
  server.requests.length = 0;
});

describe('anthropic adapter: success', () => {
  test('a PNG receipt: the request on the wire and the output', async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }));
    const output = await run(input(png, pngFacts, receiptTask));

    expect(server.requests).toHaveLength(1);
    const request = server.requests[0] as RecordedRequest;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/messages');
    // The SDK authenticates with the key (Authorization: Bearer in SDK 1.x; x-api-key in the classic reference).
    expect([request.headers['x-api-key'], request.headers.authorization]).toContainEqual(expect.stringContaining(KEY));
    expect(request.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(request.headers['content-type']).toContain('application/json');
    expect(request.headers['x-stainless-retry-count']).toBe('0');

    const body = bodyOf(request);
    expect(body.model).toBe(MODEL);
    expect(body.max_tokens).toBe(outputTokenCap(pngFacts, receiptTask, 'vision', pricesFor(MODEL)));
    expect(body.max_tokens).toBe(1024 + 256 * 3 + 512);
    expect(body.messages).toHaveLength(1);
    const [file, text] = body.messages[0]?.content ?? [];
    expect(body.messages[0]?.role).toBe('user');
    expect(file).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: expect.stringMatching(/^image\/(jpeg|png)$/), data: expect.any(String) },
    });
    const sent = sourceOf(file).bytes;
    const meta = await sharp(sent).metadata();
    expect(`image/${meta.format === 'jpeg' ? 'jpeg' : meta.format}`).toBe(sourceOf(file).mediaType);
    expect([meta.width, meta.height]).toEqual([800, 834]);
    expect(text).toEqual({ type: 'text', text: instructionFor(receiptTask) });
    expect(text?.text).toContain('Extract the receipt details.');
    expect(body.tools).toEqual([
      { name: 'record_result', description: expect.any(String), input_schema: resultJsonSchema(receiptTask) },
    ]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'record_result', disable_parallel_tool_use: true });
    expect(body.thinking).toEqual({ type: 'disabled' });

    expect(output.result).toEqual(RECEIPT_RESULT);
    expect(output.nativeConfidence).toBeUndefined();
    expect(output.documentText).toBeUndefined();
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: costMicros([1490, 62]),
      inputTokens: 1490,
      outputTokens: 62,
    });
    expect(output.usage.costMicros).toBe(180); // 1490 × 0.10 + 62 × 0.50 = 180 µ$
  });

  test('inline field names the API refuses as tool property keys go as field_<n>; the result has the client’s names', async () => {
    const inline: TaskSpec = {
      ...receiptTask,
      schemaId: null,
      fields: [
        { name: 'Invoice Number', type: 'string', required: true },
        { name: '日付', type: 'date', required: false },
        { name: 'total', type: 'number', required: true },
        { name: 'x'.repeat(65), type: 'string', required: false },
      ],
    };
    inOrder(
      server,
      toolResponse(
        { field_1: 'INV-7', field_2: '2026-11-02', total: 42.5, field_4: null },
        { input: 1490, output: 40 },
      ),
    );
    const output = await run(input(png, pngFacts, inline));

    const schema = bodyOf(server.requests[0]).tools[0]?.input_schema as {
      properties: Record<string, { description?: string }>;
    };
    // The pattern Anthropic enforces on input_schema property keys (a 400 for the whole request otherwise).
    for (const key of Object.keys(schema.properties)) expect(key).toMatch(/^[a-zA-Z0-9_.-]{1,64}$/);
    expect(Object.keys(schema.properties)).toEqual(['field_1', 'field_2', 'total', 'field_4']);
    expect(schema.properties.field_1?.description).toContain('"Invoice Number"');
    const text = bodyOf(server.requests[0]).messages[0]?.content[1]?.text;
    expect(text).toContain('- field_2 (the field "日付") (date)');
    expect(output.result).toEqual({
      'Invoice Number': 'INV-7',
      日付: '2026-11-02',
      total: 42.5,
      ['x'.repeat(65)]: null,
    });
  });

  test('a JPEG stored sideways (EXIF 6) is sent upright', async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }));
    await run(input(jpg, jpgFacts, receiptTask));
    const file = bodyOf(server.requests[0]).messages[0]?.content[0];
    expect(jpgFacts.width).toBe(834);
    const meta = await sharp(sourceOf(file).bytes).metadata();
    expect([meta.width, meta.height]).toEqual([800, 834]);
  });

  test('a HEIC receipt is converted to JPEG', async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }));
    const output = await run(input(heic, heicFacts, receiptTask));
    const file = bodyOf(server.requests[0]).messages[0]?.content[0];
    expect(file?.source).toMatchObject({ type: 'base64', media_type: 'image/jpeg' });
    const sent = sourceOf(file).bytes;
    expect(sent.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(output.result).toEqual(RECEIPT_RESULT);
  });

  test('a PDF goes whole as a base64 document block; pages are the billable units', async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 5320, output: 70 }));
    const output = await run(input(textPdf, textPdfFacts, receiptTask));
    const [file, text] = bodyOf(server.requests[0]).messages[0]?.content ?? [];
    expect(file).toEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: expect.any(String) },
    });
    expect(sourceOf(file).bytes.equals(textPdf)).toBe(true);
    expect(text?.type).toBe('text');
    expect(output.usage).toEqual({
      billableUnits: 2,
      costMicros: costMicros([5320, 70]),
      inputTokens: 5320,
      outputTokens: 70,
    });
  });

  test('a prompt over 100k tokens is billed at the long-prompt tier, output included', async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 120_000, output: 300 }));
    const output = await run(input(twentyPdf, twentyFacts, receiptTask));
    expect(output.usage.billableUnits).toBe(20);
    expect(output.usage.costMicros).toBe(costMicros([120_000, 300]));
    expect(output.usage.costMicros).toBe(60_750); // 120000 × 0.50 + 300 × 2.50
  });

  test('cache tokens count towards the prompt and are priced at their own rates', async () => {
    const response = toolResponse(RECEIPT_RESULT, { input: 1000, output: 50 });
    const usage = (response.json as { usage: Record<string, unknown> }).usage;
    Object.assign(usage, {
      cache_creation_input_tokens: 2000,
      cache_read_input_tokens: 4000,
      cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 0 },
    });
    inOrder(server, response);
    const output = await run(input(png, pngFacts, receiptTask));
    const t = standardTier;
    expect(output.usage.inputTokens).toBe(7000);
    expect(output.usage.costMicros).toBe(
      Math.ceil(
        1000 * t.inputPerMTokUsd +
          50 * t.outputPerMTokUsd +
          2000 * t.cacheWrite5mPerMTokUsd +
          4000 * t.cacheReadPerMTokUsd -
          1e-6,
      ),
    );
  });

  test('an open analysis: keyValues become an object, the text is the document text', async () => {
    inOrder(
      server,
      toolResponse(
        {
          summary: 'A hardware store receipt.',
          text: 'ACME HARDWARE\nTotal: 42.50',
          keyValues: [{ key: 'Total', value: '42.50' }],
        },
        { input: 1400, output: 90 },
      ),
    );
    const output = await run(input(png, pngFacts, openTask));
    expect(bodyOf(server.requests[0]).tools[0]?.input_schema).toEqual(resultJsonSchema(openTask));
    expect(output.result).toEqual({
      summary: 'A hardware store receipt.',
      text: 'ACME HARDWARE\nTotal: 42.50',
      keyValues: { Total: '42.50' },
    });
    expect(output.documentText).toBe('ACME HARDWARE\nTotal: 42.50');
  });

  test('text output: {text}', async () => {
    inOrder(server, toolResponse({ text: 'ACME HARDWARE' }, { input: 1300, output: 20 }));
    const output = await run(input(scannedPdf, scannedFacts, textTask));
    expect(bodyOf(server.requests[0]).tools[0]?.input_schema).toEqual(resultJsonSchema(textTask));
    expect(output.result).toEqual({ text: 'ACME HARDWARE' });
    expect(output.documentText).toBe('ACME HARDWARE');
    expect(output.usage.billableUnits).toBe(1);
  });

  test('an ocr step transcribes whatever the task', async () => {
    inOrder(server, toolResponse({ text: 'ACME HARDWARE\nTotal: 42.50' }, { input: 1300, output: 20 }));
    const output = await run(input(png, pngFacts, receiptTask, 'ocr'));
    const body = bodyOf(server.requests[0]);
    expect(body.tools[0]?.input_schema).toEqual(
      resultJsonSchema({ ...receiptTask, outputFormat: 'text', fields: null }),
    );
    expect(String(body.messages[0]?.content[1]?.text)).toMatch(/Transcribe all legible text/);
    expect(output.result).toEqual({ text: 'ACME HARDWARE\nTotal: 42.50' });
  });

  test("an analyze step sends another provider's text instead of the file", async () => {
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 400, output: 40 }));
    const documentText = 'ACME HARDWARE\nDate: 2026-11-02\nInvoice Number: INV-1042\nTotal: 42.50';
    const output = await run({ ...input(png, pngFacts, receiptTask, 'analyze'), documentText });
    const content = bodyOf(server.requests[0]).messages[0]?.content ?? [];
    expect(content.map((c) => c.type)).toEqual(['text', 'text']);
    expect(content[0]?.text).toContain('Invoice Number: INV-1042');
    expect(output.result).toEqual(RECEIPT_RESULT);
    expect(output.documentText).toBe(documentText);
  });
});

test('an analyze step cuts a text larger than the estimate allows per page, and the request stays within the bound', async () => {
  inOrder(server, toolResponse(RECEIPT_RESULT, { input: 400, output: 40 }));
  // 6,000 bytes of text per page are held; a 10,000-byte page is cut on a character boundary (é is 2 bytes).
  const documentText = `${'é'.repeat(2_999)}x${'y'.repeat(4_000)}`;
  const before = server.requests.length;
  await run({ ...input(png, pngFacts, receiptTask, 'analyze'), documentText });
  const sent = String(bodyOf(server.requests[before]).messages[0]?.content[0]?.text);
  expect(sent).toBe(`<document>\n${'é'.repeat(2_999)}xy\n</document>`);
  expect(promptTokenBound(pngFacts, receiptTask, 'analyze')).toBeGreaterThanOrEqual(Buffer.byteLength(sent));
});

describe('anthropic adapter: repair', () => {
  test('schema-invalid output, then a valid repair: two requests, usage of both', async () => {
    inOrder(
      server,
      toolResponse({ date: '2026-11-02', invoiceNumber: 'INV-1042', total: 'forty-two' }, { input: 1490, output: 60 }),
      toolResponse(RECEIPT_RESULT, { input: 1720, output: 62 }),
    );
    const output = await run(input(png, pngFacts, receiptTask));
    expect(server.requests).toHaveLength(2);
    const repair = bodyOf(server.requests[1]);
    expect(repair.messages).toHaveLength(3);
    expect(repair.messages[0]).toEqual(bodyOf(server.requests[0]).messages[0]);
    const firstId = `toolu_${toolIds - 1}`;
    expect(repair.messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: firstId,
          name: 'record_result',
          input: { date: '2026-11-02', invoiceNumber: 'INV-1042', total: 'forty-two' },
        },
      ],
    });
    expect(repair.messages[2]?.role).toBe('user');
    expect(repair.messages[2]?.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: firstId,
      is_error: true,
      content: expect.stringContaining('$.total: expected number or null, got string'),
    });
    expect(repair.tool_choice).toEqual({ type: 'tool', name: 'record_result', disable_parallel_tool_use: true });
    expect(output.result).toEqual(RECEIPT_RESULT);
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: costMicros([1490, 60], [1720, 62]),
      inputTokens: 1490 + 1720,
      outputTokens: 122,
    });
  });

  test('a missing field and a number as a string need no repair: coerced, one request', async () => {
    // The worker shapes the answer to the schema's fields (missing → null, unknown keys dropped, "42.50" → 42.5):
    // a second, billed request would fix nothing the coercion does not.
    inOrder(server, toolResponse({ date: '2026-11-02', total: '42.50' }, { input: 1490, output: 40 }));
    const output = await provider.invoke(input(png, pngFacts, receiptTask), options());
    expect(server.requests).toHaveLength(1);
    expect(output.result).toEqual({ date: '2026-11-02', invoiceNumber: null, total: '42.50' });
  });

  test('invalid twice: invalid_output carrying the usage of both requests', async () => {
    inOrder(
      server,
      toolResponse({ date: '2026-11-02', total: 'n/a' }, { input: 1490, output: 40 }),
      toolResponse({ date: '2026-11-02', total: { amount: 42.5 } }, { input: 1700, output: 45 }),
    );
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(server.requests).toHaveLength(2);
    expect(failure.kind).toBe('invalid_output');
    expect(failure.message).toContain('$.total: expected number or null, got object');
    expect(failure.usage).toEqual({
      billableUnits: 1,
      costMicros: costMicros([1490, 40], [1700, 45]),
      inputTokens: 3190,
      outputTokens: 85,
    });
  });

  test('no tool call at all is repaired with the errors as text', async () => {
    const textOnly = toolResponse(
      RECEIPT_RESULT,
      { input: 1490, output: 30 },
      {
        content: [{ type: 'text', text: 'The total is 42.50.', citations: null }],
        stop_reason: 'end_turn',
      },
    );
    inOrder(server, textOnly, toolResponse(RECEIPT_RESULT, { input: 1600, output: 62 }));
    const output = await run(input(png, pngFacts, receiptTask));
    const repair = bodyOf(server.requests[1]);
    expect(repair.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'The total is 42.50.' }] });
    expect(repair.messages[2]?.content).toEqual([
      { type: 'text', text: expect.stringContaining('no record_result call was made') },
    ]);
    expect(output.usage.costMicros).toBe(costMicros([1490, 30], [1600, 62]));
  });

  test('a max_tokens stop with incomplete tool input is truncated at once, with its usage', async () => {
    const cap = 1024 + 256 * 3 + 512;
    inOrder(server, toolResponse({ date: '2026-11-02' }, { input: 1490, output: cap }, { stop_reason: 'max_tokens' }));
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(server.requests).toHaveLength(1);
    expect(failure.kind).toBe('truncated');
    expect(failure.usage).toMatchObject({ costMicros: costMicros([1490, cap]), outputTokens: cap });
  });

  test('a refusal is a refusal, with its usage', async () => {
    inOrder(
      server,
      toolResponse(
        RECEIPT_RESULT,
        { input: 1490, output: 5 },
        {
          content: [],
          stop_reason: 'refusal',
          stop_details: { type: 'refusal', category: 'general_harms', explanation: 'Declined by a safety classifier.' },
        },
      ),
    );
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('refusal');
    expect(failure.message).toContain('general_harms');
    expect(failure.usage?.costMicros).toBe(costMicros([1490, 5]));
  });
});

describe('anthropic adapter: failures', () => {
  test('400 invalid_request_error → client', async () => {
    inOrder(server, errorResponse(400, 'invalid_request_error', 'messages.0.content.0: image exceeds 5 MB maximum'));
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('client');
    expect(failure.message).toContain('400 invalid_request_error');
    expect(failure.usage).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });

  test('401 authentication_error → auth; the key never shows, even when the server echoes it', async () => {
    inOrder(server, errorResponse(401, 'authentication_error', `invalid x-api-key: Bearer ${KEY}`));
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('auth');
    expect(failure.message).toContain('[redacted]');
  });

  test('403 permission_error → auth', async () => {
    inOrder(server, errorResponse(403, 'permission_error', 'Your API key does not have permission to use this model.'));
    expect((await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()))).kind).toBe('auth');
  });

  test('429 with Retry-After seconds → rate_limited with retryAfterMs', async () => {
    inOrder(
      server,
      errorResponse(429, 'rate_limit_error', 'Number of request tokens has exceeded your rate limit.', {
        'retry-after': '7',
      }),
    );
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBe(7000);
    expect(server.requests).toHaveLength(1); // the SDK's own retries are off
  });

  test('429 with Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    inOrder(server, errorResponse(429, 'rate_limit_error', 'rate limited', { 'retry-after': at }));
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBeGreaterThan(25_000);
    expect(failure.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  test('500 api_error and 529 overloaded_error → server', async () => {
    inOrder(server, errorResponse(500, 'api_error', 'Internal server error'));
    expect((await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()))).kind).toBe('server');
    inOrder(server, errorResponse(529, 'overloaded_error', 'Overloaded'));
    const overloaded = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(overloaded.kind).toBe('server');
    expect(overloaded.message).toContain('529 overloaded_error');
  });

  test('a server slower than the deadline → timeout', async () => {
    inOrder(server, { ...toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }), delayMs: 1_500 });
    const started = Date.now();
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options(500)));
    expect(failure.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  test('an aborted attempt → timeout', async () => {
    inOrder(server, { ...toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }), delayMs: 1_500 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const failure = await failureOf(
      provider.invoke(input(png, pngFacts, receiptTask), options(10_000, controller.signal)),
    );
    expect(failure.kind).toBe('timeout');
  });

  test('a deadline already passed → timeout without a request', async () => {
    const failure = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options(-1)));
    expect(failure.kind).toBe('timeout');
    expect(server.requests).toHaveLength(0);
  });

  test('a 200 whose body is not JSON → invalid_output', async () => {
    inOrder(server, {
      status: 200,
      headers: { 'content-type': 'application/json' },
      raw: '{"id": "msg_1", "content": [',
    });
    expect((await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()))).kind).toBe(
      'invalid_output',
    );
  });

  test('a 200 without usage → invalid_output without usage; content that is not a list → with usage', async () => {
    inOrder(server, { status: 200, json: { id: 'msg_1', type: 'message', content: [] } });
    const noUsage = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(noUsage.kind).toBe('invalid_output');
    expect(noUsage.usage).toBeUndefined();
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 1490, output: 10 }, { content: 'oops' }));
    const badContent = await failureOf(provider.invoke(input(png, pngFacts, receiptTask), options()));
    expect(badContent.kind).toBe('invalid_output');
    expect(badContent.usage?.costMicros).toBe(costMicros([1490, 10]));
  });

  test('an unreachable endpoint → server', async () => {
    const dead = await startFakeServer();
    const url = dead.url;
    await dead.close();
    const offline = createAnthropicProvider({ env: { ANTHROPIC_BASE_URL: url }, apiKey: async () => KEY });
    expect((await failureOf(offline.invoke(input(png, pngFacts, receiptTask), options()))).kind).toBe('server');
  });

  test('no API key → auth, nothing sent', async () => {
    const keyless = createAnthropicProvider({ env: { ANTHROPIC_BASE_URL: server.url } });
    const failure = await failureOf(keyless.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('auth');
    expect(server.requests).toHaveLength(0);
  });

  test('a model without prices → client, nothing sent', async () => {
    const unpriced = createAnthropicProvider({
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_MODEL: 'claude-opus-5-5' },
      apiKey: async () => KEY,
    });
    const failure = await failureOf(unpriced.invoke(input(png, pngFacts, receiptTask), options()));
    expect(failure.kind).toBe('client');
    expect(server.requests).toHaveLength(0);
  });

  test('ANTHROPIC_MODEL selects another priced model', async () => {
    const older = createAnthropicProvider({
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_MODEL: 'claude-haiku-4-5' },
      apiKey: async () => KEY,
    });
    inOrder(server, toolResponse(RECEIPT_RESULT, { input: 1490, output: 62 }));
    const output = await older.invoke(input(png, pngFacts, receiptTask), options());
    expect(bodyOf(server.requests[0]).model).toBe('claude-haiku-4-5');
    const tier = pricingRaw.models['claude-haiku-4-5'].tiers[0];
    expect(output.usage.costMicros).toBe(
      Math.ceil(1490 * (tier?.inputPerMTokUsd ?? 0) + 62 * (tier?.outputPerMTokUsd ?? 0)),
    );
  });

  test('a PDF over the API’s 100 pages per request → client, nothing sent', async () => {
    const facts: FileFacts = { ...twentyFacts, pages: 101 };
    const failure = await failureOf(provider.invoke(input(twentyPdf, facts, receiptTask), options()));
    expect(failure.kind).toBe('client');
    expect(failure.message).toContain('101 pages');
    expect(server.requests).toHaveLength(0);
  });

  test('a PDF too large for one request → client, nothing sent', async () => {
    const big = new Uint8Array(25 * MiB);
    const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: big.length, pages: 3 };
    const failure = await failureOf(provider.invoke(input(big, facts, receiptTask), options()));
    expect(failure.kind).toBe('client');
    expect(server.requests).toHaveLength(0);
  });
});

describe('anthropic profile: the estimate bounds the actual cost', () => {
  // Realistic usage per fixture (newer tokenizer): an 800 × 834 image ≈ 890 tokens + ~600 of instruction and tool;
  // a text PDF page ≈ 2,350 tokens, a scanned page ≈ 1,600; outputs as a receipt extraction or transcription needs.
  const cases: [string, () => [Uint8Array, FileFacts], TaskSpec, number, number][] = [
    ['receipt.png', () => [png, pngFacts], receiptTask, 1490, 62],
    ['receipt.jpg', () => [jpg, jpgFacts], receiptTask, 1490, 62],
    ['receipt.heic', () => [heic, heicFacts], openTask, 1420, 400],
    ['text.pdf', () => [textPdf, textPdfFacts], receiptTask, 5320, 70],
    ['scanned.pdf', () => [scannedPdf, scannedFacts], textTask, 2250, 150],
    ['twenty-pages.pdf', () => [twentyPdf, twentyFacts], openTask, 47_600, 9_000],
  ];

  test.each(cases)(
    '%s: maxCostMicros ≥ the cost of a call and a repair',
    async (_name, file, task, inTokens, outTokens) => {
      const [bytes, facts] = file();
      const invalid = task.outputFormat === 'text' ? { text: 42 } : task.fields ? { total: 'x' } : { summary: 1 };
      const valid =
        task.outputFormat === 'text'
          ? { text: 'ACME' }
          : task.fields
            ? RECEIPT_RESULT
            : { summary: 'A receipt', text: 'ACME', keyValues: [] };
      inOrder(
        server,
        toolResponse(invalid, { input: inTokens, output: outTokens }),
        toolResponse(valid, { input: inTokens + outTokens + 300, output: outTokens }),
      );
      const output = await run(input(bytes, facts, task));
      expect(server.requests).toHaveLength(2);
      expect(output.usage.costMicros).toBe(costMicros([inTokens, outTokens], [inTokens + outTokens + 300, outTokens]));
      const bound = anthropicProfile.maxCostMicros(facts, task);
      expect(bound).toBeGreaterThanOrEqual(output.usage.costMicros);
      // …and for the worst output the cap allows, on both requests.
      const cap = bodyOf(server.requests[0]).max_tokens;
      expect(bound).toBeGreaterThanOrEqual(costMicros([inTokens, cap], [inTokens + cap + 300, cap]));
    },
  );

  test('the bound follows the prompt into the long-prompt tier', () => {
    const small = anthropicProfile.maxCostMicros(pngFacts, receiptTask, { env: {} });
    const twenty = anthropicProfile.maxCostMicros(twentyFacts, receiptTask, { env: {} });
    // 20 pages × 8,000 tokens is over 100k: every token of both requests at $0.50 / $2.50.
    expect(twenty).toBeGreaterThan(2 * 160_000 * longTier.inputPerMTokUsd);
    expect(small).toBeLessThan(5_000);
    expect(
      anthropicProfile.maxCostMicros(pngFacts, receiptTask, { env: { ANTHROPIC_MODEL: 'claude-haiku-4-5' } }),
    ).toBeGreaterThan(small);
  });

  test('an image is held for its vision pass; a PDF for the larger of vision and analyze (ocr only in a chain)', () => {
    const image = anthropicProfile.maxCostMicros(pngFacts, receiptTask, { env: {} });
    expect(image).toBe(anthropicProfile.stepCostMicros(pngFacts, receiptTask, 'vision', { env: {} }));
    // The analyze allowance of a page is larger than the receipt image: it is not held for a step images never run.
    expect(anthropicProfile.stepCostMicros(pngFacts, receiptTask, 'analyze', { env: {} })).toBeGreaterThan(image);
    const pdf = anthropicProfile.maxCostMicros(twentyFacts, receiptTask, { env: {} });
    expect(pdf).toBe(
      Math.max(
        anthropicProfile.stepCostMicros(twentyFacts, receiptTask, 'vision', { env: {} }),
        anthropicProfile.stepCostMicros(twentyFacts, receiptTask, 'analyze', { env: {} }),
      ),
    );
  });

  test('the profile', () => {
    expect(anthropicProfile).toMatchObject({ id: 'anthropic', auth: 'api-key', credentialEnv: ['ANTHROPIC_API_KEY'] });
    expect(anthropicProfile.strategies).toContain('direct_multimodal');
  });
});

describe('anthropic helpers', () => {
  test('retryAfterMs reads retry-after-ms, Retry-After and the exhausted limit reset', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), now)).toBe(1500);
    expect(retryAfterMs(new Headers({ 'retry-after': '2.5' }), now)).toBe(2500);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Sun, 22 Nov 2026 10:00:12 GMT' }), now)).toBe(12_000);
    expect(
      retryAfterMs(
        new Headers({
          'anthropic-ratelimit-requests-remaining': '12',
          'anthropic-ratelimit-requests-reset': '2026-11-22T10:00:01Z',
          'anthropic-ratelimit-input-tokens-remaining': '0',
          'anthropic-ratelimit-input-tokens-reset': '2026-11-22T10:00:20Z',
        }),
        now,
      ),
    ).toBe(20_000);
    expect(retryAfterMs(new Headers({}), now)).toBeUndefined();
  });

  test('resultSchemaErrors checks types, required and extra properties, nested items', () => {
    const schema = resultJsonSchema(receiptTask);
    expect(resultSchemaErrors(RECEIPT_RESULT, schema)).toEqual([]);
    expect(resultSchemaErrors({ date: null, invoiceNumber: null, total: null }, schema)).toEqual([]);
    expect(resultSchemaErrors({ date: 5, total: 1, x: 1 }, schema)).toEqual([
      '$.date: expected string or null, got number',
      '$.invoiceNumber: required property is missing',
      '$.x: property is not in the schema',
    ]);
    const open = resultJsonSchema(openTask);
    expect(resultSchemaErrors({ summary: 's', text: 't', keyValues: [{ key: 'k' }] }, open)).toEqual([
      '$.keyValues[0].value: required property is missing',
    ]);
  });
});
