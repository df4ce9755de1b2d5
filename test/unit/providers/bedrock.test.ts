/**
 * Drives the bedrock adapter through the real `@aws-sdk/client-bedrock-runtime` against a local fake of Bedrock
 * Runtime's REST-JSON wire format (POST /model/{modelId}/converse, SigV4-signed; errors as `x-amzn-errortype` + JSON
 * message, or `__type` in the body). The SDK reaches the fake through AWS_ENDPOINT_URL_BEDROCK_RUNTIME, which it reads
 * itself. Request shapes follow the Converse API reference
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html): content blocks `image`
 * {format, source: {bytes}}, `document` {format, name, source: {bytes}}, `text`; `toolConfig` {tools: [{toolSpec:
 * {name, description, inputSchema: {json}}}], toolChoice: {tool: {name}}}; `inferenceConfig.maxTokens`; responses
 * {output: {message}, stopReason, usage: {inputTokens, outputTokens, totalTokens}, metrics}. Media preparation and
 * the PDF text layer run for real on the fixtures.
 * Over 400 lines: one fake and its wire format serve every case (models, inference profiles, errors, limits); split,
 * each file would repeat the fake's setup.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import sharp from 'sharp';
import type { FileFacts } from '../../../shared/file-facts.js';
import pricingJson from '../../../shared/infra/bedrock-pricing.json' with { type: 'json' };
import { inspectUpload } from '../../../shared/inspect/index.js';
import { usdToMicrosCeil } from '../../../shared/money.js';
import { redactAwsCredentials } from '../../../shared/providers/aws-credentials.js';
import { createBedrockProvider } from '../../../shared/providers/bedrock/adapter.js';
import { failureFor } from '../../../shared/providers/bedrock/failures.js';
import {
  baseModelId,
  bedrockProfile,
  configuredModel,
  imageTokenBound,
  MAX_PDF_BYTES,
  modelId,
  OCR_INSTRUCTION,
  outputTokenCap,
  RESULT_TOOL_NAME,
  SYSTEM_PROMPT,
} from '../../../shared/providers/bedrock/profile.js';
import { resultSchemaErrors } from '../../../shared/providers/result-validation.js';
import { parseRetryAfterHeader as parseRetryAfter } from '../../../shared/providers/retry-after.js';
import { resultJsonSchema } from '../../../shared/providers/task-prompt.js';
import type { ProviderInput, ProviderOutput } from '../../../shared/providers/types.js';
import type { ProviderFailure, Step, TaskSpec } from '../../../shared/task.js';
import { failureOf } from '../../support/failures.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../../support/fake-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));

// Credentials the fake must never see echoed back to the caller. Long and unique so a leak cannot hide.
const SECRET_KEY = 'bedrockTestSecretKey/0123456789abcdefghijklmnopqrstu';
const SESSION_TOKEN = 'bedrockTestSessionToken+ZYXWVUTSRQPONMLKJIHGFEDCBA0987654321';
const ACCESS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const BEARER_TOKEN = 'ABSKbedrockApiKeyForTests0123456789abcdefghijklmnop';
const DEFAULT_MODEL = 'us.amazon.nova-2-lite-v1:0';
const NOVA2 = pricingJson.models['amazon.nova-2-lite-v1:0'];

const ENV_KEYS = [
  'AWS_ENDPOINT_URL_BEDROCK_RUNTIME',
  'AWS_ENDPOINT_URL',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'AWS_PROFILE',
  'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_AUTH_SCHEME_PREFERENCE',
  'BEDROCK_MODEL_ID',
] as const;
const savedEnv: Record<string, string | undefined> = {};

let server: FakeServer;

beforeAll(async () => {
  for (const key of ENV_KEYS) savedEnv[key] = process.env[key];
  server = await startFakeServer();
});

afterAll(async () => {
  await server.close();
  for (const key of ENV_KEYS) {
    if (savedEnv[key] === undefined) delete process.env[key];
    else process.env[key] = savedEnv[key];
  }
});

beforeEach(() => {
  server.requests.length = 0;
  for (const key of ENV_KEYS) delete process.env[key];
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = server.url;
  process.env.AWS_REGION = 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY_ID;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
  process.env.AWS_SESSION_TOKEN = SESSION_TOKEN;
});

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

const RECEIPT_TASK: TaskSpec = {
  prompt: 'Extract the receipt fields.',
  outputFormat: 'json',
  fields: [
    { name: 'vendor', type: 'string', required: true },
    { name: 'date', type: 'date', required: false },
    { name: 'invoiceNumber', type: 'string', required: false },
    { name: 'total', type: 'number', required: true },
  ],
  schemaId: 'receipt',
  schemaLabel: 'Receipt',
  promptScaffold: null,
};
const OPEN_TASK: TaskSpec = {
  ...RECEIPT_TASK,
  prompt: 'What is this?',
  fields: null,
  schemaId: null,
  schemaLabel: null,
};
const TEXT_TASK: TaskSpec = { ...OPEN_TASK, prompt: 'Summarise the document in one paragraph.', outputFormat: 'text' };
const RECEIPT_VALUES = { vendor: 'ACME HARDWARE', date: '2026-11-02', invoiceNumber: 'INV-1042', total: 42.5 };

async function factsOf(bytes: Uint8Array): Promise<FileFacts> {
  return inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.length, {
    imageMaxBytes: 20 * 1024 * 1024,
    imageMaxPixels: 100_000_000,
    pdfMaxBytes: 50 * 1024 * 1024,
    pdfMaxPages: 200,
  });
}

async function inputFor(name: string, task: TaskSpec, step: Step = 'vision'): Promise<ProviderInput> {
  const bytes = fixture(name);
  return { bytes, facts: await factsOf(bytes), task, step };
}

function options(timeoutMs = 30_000, signal: AbortSignal = new AbortController().signal) {
  return { signal, deadlineMs: Date.now() + timeoutMs };
}

interface FakeUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A Converse response as Bedrock sends it. */
function converse(content: unknown[], usage: FakeUsage, stopReason = 'end_turn'): ScriptedResponse {
  return {
    status: 200,
    headers: { 'x-amzn-requestid': '7f1c2d3e-0000-4000-8000-000000000000' },
    json: {
      output: { message: { role: 'assistant', content } },
      stopReason,
      usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
      metrics: { latencyMs: 812 },
    },
  };
}

function toolAnswer(input: unknown, usage: FakeUsage, stopReason = 'tool_use'): ScriptedResponse {
  return converse([{ toolUse: { toolUseId: 'tooluse_1', name: RESULT_TOOL_NAME, input } }], usage, stopReason);
}

/** A Bedrock error: `x-amzn-errortype` header (as AWS sends it, with the coral namespace) and a JSON message. */
function awsError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): ScriptedResponse {
  return {
    status,
    headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers },
    json: { message },
  };
}

/** Responds with the scripted answers in order (the last one repeats). */
function script(...answers: ScriptedResponse[]): void {
  let i = 0;
  server.respond(() => answers[Math.min(i++, answers.length - 1)] as ScriptedResponse);
}

function expectedCost(input: number, output: number): number {
  return usdToMicrosCeil((input * NOVA2.inputUsdPer1kTokens + output * NOVA2.outputUsdPer1kTokens) / 1000);
}

interface SentBody {
  messages: { role: string; content: Record<string, unknown>[] }[];
  system?: { text: string }[];
  inferenceConfig?: { maxTokens?: number; temperature?: number };
  toolConfig?: { tools: { toolSpec: Record<string, unknown> }[]; toolChoice: unknown };
}

function sent(index = 0): { request: RecordedRequest; body: SentBody } {
  const request = server.requests[index];
  if (!request) throw new Error(`no request #${index}`);
  return { request, body: request.body as SentBody };
}

function decode(base64: unknown): Buffer {
  if (typeof base64 !== 'string') throw new Error('expected base64 bytes');
  return Buffer.from(base64, 'base64');
}

function expectNoSecrets(text: string): void {
  for (const secret of [SECRET_KEY, SESSION_TOKEN, BEARER_TOKEN, ACCESS_KEY_ID]) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/Signature=[0-9a-f]{16,}/);
}

function expectWithinBound(input: ProviderInput, out: ProviderOutput): void {
  expect(bedrockProfile.maxCostMicros(input.facts, input.task)).toBeGreaterThanOrEqual(out.usage.costMicros);
}

// ---------------------------------------------------------------------------------------------------------------
// Success
// ---------------------------------------------------------------------------------------------------------------

describe('bedrock adapter: success', () => {
  it('sends inline field names Converse refuses as tool property keys as field_<n>, and answers under the client’s names', async () => {
    const inline: TaskSpec = {
      ...RECEIPT_TASK,
      schemaId: null,
      fields: [
        { name: 'Rechnungs Nr.', type: 'string', required: true },
        { name: 'total', type: 'number', required: true },
      ],
    };
    script(toolAnswer({ field_1: 'R-19', total: 12 }, { inputTokens: 1890, outputTokens: 30 }));
    const out = await createBedrockProvider().invoke(await inputFor('receipt.png', inline), options());
    const schema = sent().body.toolConfig?.tools[0]?.toolSpec.inputSchema as { json: { properties: object } };
    expect(Object.keys(schema.json.properties)).toEqual(['field_1', 'total']);
    expect(out.result).toEqual({ 'Rechnungs Nr.': 'R-19', total: 12 });
  });

  it('extracts schema fields from a PNG through a forced tool, and prices the usage', async () => {
    script(toolAnswer(RECEIPT_VALUES, { inputTokens: 1890, outputTokens: 64 }));
    const input = await inputFor('receipt.png', RECEIPT_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    expect(server.requests).toHaveLength(1);
    const { request, body } = sent();
    expect(request.method).toBe('POST');
    expect(request.path).toBe(`/model/${encodeURIComponent(DEFAULT_MODEL)}/converse`);
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    // SigV4 with the session's scope; the session token travels in its own header, never in the body.
    expect(request.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=.*, Signature=[0-9a-f]{64}$/,
    );
    expect(request.headers['x-amz-security-token']).toBe(SESSION_TOKEN);
    expect(request.rawBody.toString()).not.toContain(SECRET_KEY);

    expect(body.system).toEqual([{ text: SYSTEM_PROMPT }]);
    expect(body.messages).toHaveLength(1);
    const [media, text] = body.messages[0]?.content ?? [];
    const image = media?.image as { format: string; source: { bytes: string } };
    expect(['png', 'jpeg']).toContain(image.format);
    const sentImage = decode(image.source.bytes);
    expect(sentImage.length).toBeLessThanOrEqual(3_750_000);
    const meta = await sharp(sentImage).metadata();
    expect(meta.format).toBe(image.format);
    expect([meta.width, meta.height]).toEqual([800, 834]);
    expect(text?.text).toContain('Extract the receipt fields.');
    expect(text?.text).toContain('- total (number, required)');

    expect(body.toolConfig?.tools).toEqual([
      {
        toolSpec: {
          name: RESULT_TOOL_NAME,
          description: expect.any(String),
          inputSchema: { json: resultJsonSchema(RECEIPT_TASK) },
        },
      },
    ]);
    expect(body.toolConfig?.toolChoice).toEqual({ tool: { name: RESULT_TOOL_NAME } });
    // 512 base + 128 per scalar field, the same cap the profile's bound assumes.
    expect(body.inferenceConfig).toEqual({ maxTokens: 1024, temperature: 0 });

    expect(out.result).toEqual(RECEIPT_VALUES);
    expect(out.nativeConfidence).toBeUndefined();
    expect(out.documentText).toBeUndefined();
    // 1890 x 0.00033 + 64 x 0.00275 = 0.7997 USD per 1000 → 800 micros.
    expect(out.usage).toEqual({ billableUnits: 1, costMicros: 800, inputTokens: 1890, outputTokens: 64 });
    expect(out.usage.costMicros).toBe(expectedCost(1890, 64));
    expectWithinBound(input, out);
  });

  it('sends a JPEG upright (EXIF orientation applied) and keeps exactly the schema fields', async () => {
    script(toolAnswer({ ...RECEIPT_VALUES, total: null }, { inputTokens: 1902, outputTokens: 58 }));
    const input = await inputFor('receipt.jpg', RECEIPT_TASK);
    expect([input.facts.width, input.facts.height]).toEqual([834, 800]); // stored sideways
    const out = await createBedrockProvider().invoke(input, options());

    const image = sent().body.messages[0]?.content[0]?.image as { format: string; source: { bytes: string } };
    expect(image.format).toBe('jpeg');
    const meta = await sharp(decode(image.source.bytes)).metadata();
    expect([meta.width, meta.height]).toEqual([800, 834]);
    expect(out.result).toEqual({ ...RECEIPT_VALUES, total: null });
    expectWithinBound(input, out);
  });

  it('converts HEIC to JPEG (Converse takes jpeg, png, gif, webp)', async () => {
    script(toolAnswer(RECEIPT_VALUES, { inputTokens: 1895, outputTokens: 61 }));
    const input = await inputFor('receipt.heic', RECEIPT_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    const image = sent().body.messages[0]?.content[0]?.image as { format: string; source: { bytes: string } };
    expect(image.format).toBe('jpeg');
    const meta = await sharp(decode(image.source.bytes)).metadata();
    expect(meta.format).toBe('jpeg');
    expect([meta.width, meta.height]).toEqual([800, 834]);
    expect(out.result).toEqual(RECEIPT_VALUES);
    expectWithinBound(input, out);
  });

  it('sends a PDF as a document block and returns its text layer for grounding', async () => {
    const values = { vendor: 'Globex Ltd', date: '2026-10-15', invoiceNumber: 'INV-2001', total: 1250 };
    script(toolAnswer(values, { inputTokens: 3420, outputTokens: 71 }));
    const input = await inputFor('text.pdf', RECEIPT_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    const [doc, text] = sent().body.messages[0]?.content ?? [];
    const document = doc?.document as { format: string; name: string; source: { bytes: string } };
    expect(document.format).toBe('pdf');
    expect(document.name).toBe('document');
    expect(decode(document.source.bytes).equals(Buffer.from(input.bytes))).toBe(true);
    // Converse requires a text block beside a document block.
    expect(text?.text).toContain('Extract the receipt fields.');

    expect(out.result).toEqual(values);
    expect(out.documentText).toContain('Invoice Number: INV-2001');
    expect(out.documentText).toContain('Terms and Conditions');
    expect(out.usage).toMatchObject({ billableUnits: 2, inputTokens: 3420, outputTokens: 71 });
    expect(out.usage.costMicros).toBe(expectedCost(3420, 71));
    expectWithinBound(input, out);
  });

  it('normalises an open analysis of a scanned PDF and reports the text the model read', async () => {
    const answer = {
      summary: 'A hardware store receipt.',
      text: 'ACME HARDWARE\nDate: 2026-11-02\nTotal: 42.50',
      keyValues: [
        { key: 'Date', value: '2026-11-02' },
        { key: 'Total', value: '42.50' },
      ],
    };
    script(toolAnswer(answer, { inputTokens: 2950, outputTokens: 140 }));
    const input = await inputFor('scanned.pdf', OPEN_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    expect(sent().body.toolConfig?.tools[0]?.toolSpec.inputSchema).toEqual({ json: resultJsonSchema(OPEN_TASK) });
    // An open analysis may transcribe: 512 + 2000 per page.
    expect(sent().body.inferenceConfig?.maxTokens).toBe(2512);
    expect(out.result).toEqual({
      summary: answer.summary,
      text: answer.text,
      keyValues: { Date: '2026-11-02', Total: '42.50' },
    });
    expect(out.documentText).toBe(answer.text);
    expect(out.usage.billableUnits).toBe(1);
    expectWithinBound(input, out);
  });

  it('answers outputFormat text in plain text, without a tool, with maxTokens capped at the model limit', async () => {
    const summary = 'Twenty short paragraphs about nothing in particular.';
    script(converse([{ text: summary }], { inputTokens: 24_300, outputTokens: 45 }));
    const input = await inputFor('twenty-pages.pdf', TEXT_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    const { body } = sent();
    expect(body.toolConfig).toBeUndefined();
    expect(body.messages[0]?.content[0]?.document).toBeDefined();
    expect(body.messages[0]?.content[1]?.text).toContain('Summarise the document in one paragraph.');
    expect(body.inferenceConfig?.maxTokens).toBe(NOVA2.maxOutputTokens); // 512 + 2000 x 20 is over the cap
    expect(out.result).toEqual({ text: summary });
    expect(out.usage).toMatchObject({ billableUnits: 20, inputTokens: 24_300, outputTokens: 45 });
    expectWithinBound(input, out);
  });

  it('runs an OCR step as a plain transcription', async () => {
    const transcription = 'ACME HARDWARE\nDate: 2026-11-02\nInvoice Number: INV-1042\nTotal: 42.50';
    script(converse([{ text: transcription }], { inputTokens: 1700, outputTokens: 40 }));
    const input = await inputFor('receipt.png', RECEIPT_TASK, 'ocr');
    const out = await createBedrockProvider().invoke(input, options());

    const { body } = sent();
    expect(body.toolConfig).toBeUndefined();
    expect(body.messages[0]?.content[1]?.text).toBe(OCR_INSTRUCTION);
    expect(out.result).toEqual({ text: transcription });
    expect(out.documentText).toBe(transcription);
  });

  it('runs an analyze step from OCR text alone (no media sent)', async () => {
    const documentText = 'ACME HARDWARE\nDate: 2026-11-02\nTotal: 42.50';
    script(toolAnswer({ ...RECEIPT_VALUES, invoiceNumber: null }, { inputTokens: 640, outputTokens: 50 }));
    const input = { ...(await inputFor('receipt.png', RECEIPT_TASK, 'analyze')), documentText };
    const out = await createBedrockProvider().invoke(input, options());

    const content = sent().body.messages[0]?.content ?? [];
    expect(content).toHaveLength(1);
    expect(content[0]?.image).toBeUndefined();
    expect(content[0]?.text).toContain(`<document>\n${documentText}\n</document>`);
    expect(out.result).toEqual({ ...RECEIPT_VALUES, invoiceNumber: null });
    expect(out.documentText).toBe(documentText);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Repair
// ---------------------------------------------------------------------------------------------------------------

describe('bedrock adapter: schema repair', () => {
  it('takes a tool input coercion fixes (null fields left out) without a repair', async () => {
    // Converse tool use is not strict: a model may leave out a field it has no value for.
    script(toolAnswer({ vendor: 'ACME HARDWARE', total: 42.5 }, { inputTokens: 1890, outputTokens: 30 }));
    const out = await createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options());
    expect(server.requests).toHaveLength(1);
    expect(out.result).toEqual({ vendor: 'ACME HARDWARE', date: null, invoiceNumber: null, total: 42.5 });
  });

  it('repairs a schema-invalid tool input once and sums the usage of both requests', async () => {
    script(
      toolAnswer({ ...RECEIPT_VALUES, total: 'forty-two fifty' }, { inputTokens: 1890, outputTokens: 66 }),
      toolAnswer(RECEIPT_VALUES, { inputTokens: 2010, outputTokens: 64 }),
    );
    const input = await inputFor('receipt.png', RECEIPT_TASK);
    const out = await createBedrockProvider().invoke(input, options());

    expect(server.requests).toHaveLength(2);
    const { body } = sent(1);
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[0]).toEqual(sent(0).body.messages[0]); // the file is sent again
    expect(body.messages[1]?.content).toEqual([
      {
        toolUse: {
          toolUseId: 'tooluse_1',
          name: RESULT_TOOL_NAME,
          input: { ...RECEIPT_VALUES, total: 'forty-two fifty' },
        },
      },
    ]);
    const result = body.messages[2]?.content[0]?.toolResult as { toolUseId: string; content: { text: string }[] };
    expect(result.toolUseId).toBe('tooluse_1');
    expect(result.content[0]?.text).toContain('$.total: expected number or null, got string');
    expect(body.toolConfig?.toolChoice).toEqual({ tool: { name: RESULT_TOOL_NAME } });

    expect(out.result).toEqual(RECEIPT_VALUES);
    expect(out.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedCost(1890 + 2010, 66 + 64),
      inputTokens: 3900,
      outputTokens: 130,
    });
    expectWithinBound(input, out);
  });

  it('asks again in text when the model answered without calling the tool', async () => {
    script(
      converse([{ text: 'The total is 42.50.' }], { inputTokens: 1890, outputTokens: 12 }),
      toolAnswer(RECEIPT_VALUES, { inputTokens: 1930, outputTokens: 64 }),
    );
    const out = await createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options());

    const { body } = sent(1);
    expect(body.messages[1]).toEqual({ role: 'assistant', content: [{ text: 'The total is 42.50.' }] });
    expect(body.messages[2]?.content[0]?.text).toContain(`no call of the ${RESULT_TOOL_NAME} tool`);
    expect(out.result).toEqual(RECEIPT_VALUES);
  });

  it('fails with invalid_output carrying both requests usage when the repair is invalid too', async () => {
    script(
      toolAnswer({ vendor: 'ACME HARDWARE', total: 'unknown' }, { inputTokens: 1890, outputTokens: 20 }),
      toolAnswer({ vendor: 'ACME HARDWARE', total: [42.5] }, { inputTokens: 1960, outputTokens: 25 }),
    );
    const input = await inputFor('receipt.png', RECEIPT_TASK);
    const failure = await failureOf(createBedrockProvider().invoke(input, options()));

    expect(server.requests).toHaveLength(2);
    expect(failure.kind).toBe('invalid_output');
    expect(failure.message).toContain('$.total: expected number or null, got array');
    expect(failure.usage).toEqual({
      billableUnits: 1,
      costMicros: expectedCost(3850, 45),
      inputTokens: 3850,
      outputTokens: 45,
    });
    expect(bedrockProfile.maxCostMicros(input.facts, input.task)).toBeGreaterThanOrEqual(
      failure.usage?.costMicros ?? 0,
    );
  });

  it('keeps the first request usage when the repair request itself fails', async () => {
    script(
      toolAnswer({ total: 'x' }, { inputTokens: 1890, outputTokens: 20 }),
      awsError(500, 'InternalServerException', 'boom'),
    );
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(failure.kind).toBe('server');
    expect(failure.usage).toMatchObject({ inputTokens: 1890, outputTokens: 20, costMicros: expectedCost(1890, 20) });
  });

  it('does not repair an answer cut off at maxTokens: truncated with usage after one request', async () => {
    script(toolAnswer({ vendor: 'ACME' }, { inputTokens: 1890, outputTokens: 1024 }, 'max_tokens'));
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(server.requests).toHaveLength(1);
    expect(failure.kind).toBe('truncated');
    expect(failure.usage).toMatchObject({ inputTokens: 1890, outputTokens: 1024 });
  });

  it('validates the subset of JSON Schema the result schemas use', () => {
    const schema = resultJsonSchema(RECEIPT_TASK);
    expect(resultSchemaErrors(RECEIPT_VALUES, schema)).toEqual([]);
    expect(resultSchemaErrors({ vendor: null, date: null, invoiceNumber: null, total: null }, schema)).toEqual([]);
    expect(resultSchemaErrors({ ...RECEIPT_VALUES, total: '42.50', more: true }, schema)).toEqual([
      '$.total: expected number or null, got string',
      '$.more: property is not in the schema',
    ]);
    expect(resultSchemaErrors([], schema)).toEqual(['$: expected object, got array']);
    const open = resultJsonSchema(OPEN_TASK);
    expect(resultSchemaErrors({ summary: 's', text: 't', keyValues: [{ key: 'a' }] }, open)).toEqual([
      '$.keyValues[0].value: required property is missing',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

describe('bedrock adapter: failures', () => {
  async function failWith(...answers: ScriptedResponse[]): Promise<ProviderFailure> {
    script(...answers);
    return failureOf(createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()));
  }

  it.each([
    [400, 'ValidationException', 'client'],
    [404, 'ResourceNotFoundException', 'client'],
    [403, 'AccessDeniedException', 'auth'],
    [403, 'UnrecognizedClientException', 'auth'],
    [500, 'InternalServerException', 'server'],
    [503, 'ServiceUnavailableException', 'server'],
    [408, 'ModelTimeoutException', 'server'],
    [424, 'ModelErrorException', 'server'],
    [429, 'ModelNotReadyException', 'server'],
    [429, 'ThrottlingException', 'rate_limited'],
    [400, 'ServiceQuotaExceededException', 'rate_limited'],
  ])('maps HTTP %i %s to %s', async (status, type, kind) => {
    const failure = await failWith(awsError(status, type, `${type} says no`));
    expect(server.requests).toHaveLength(1); // the SDK does not retry
    expect(failure.kind).toBe(kind);
    expect(failure.message).toContain(type);
    expect(failure.usage).toBeUndefined();
  });

  it('reads Retry-After (seconds) on a throttled request', async () => {
    const failure = await failWith(awsError(429, 'ThrottlingException', 'Too many requests', { 'retry-after': '7' }));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBe(7000);
  });

  it('reads Retry-After as an HTTP date, and an error type given as __type in the body', async () => {
    const at = new Date(Date.now() + 12_000).toUTCString();
    const failure = await failWith({
      status: 429,
      headers: { 'retry-after': at },
      json: { __type: 'com.amazon.bedrock#ThrottlingException', message: 'Rate exceeded' },
    });
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBeGreaterThan(9_000);
    expect(failure.retryAfterMs).toBeLessThanOrEqual(12_000);
  });

  it('falls back on the HTTP status when the error has no type (401 → auth)', async () => {
    const failure = await failWith({ status: 401, json: { message: 'Unauthorized' } });
    expect(failure.kind).toBe('auth');
  });

  it('treats an unparseable 200 body as invalid_output and a non-JSON 502 as server', async () => {
    expect(
      (await failWith({ status: 200, raw: '<html>gateway</html>', headers: { 'content-type': 'text/html' } })).kind,
    ).toBe('invalid_output');
    expect((await failWith({ status: 502, raw: 'Bad Gateway', headers: { 'content-type': 'text/plain' } })).kind).toBe(
      'server',
    );
  });

  it('a reset connection is a server failure, not a timeout', async () => {
    const failure = await failWith({ reset: true });
    expect(failure.kind).toBe('server');
    expect(failure.message).toContain('ECONNRESET');
    // As the SDK's HTTP handler throws it outside jest's module realm (here it arrives wrapped): renamed TimeoutError,
    // its code kept. Only a real socket timeout (ETIMEDOUT), or no code at all, is a timeout.
    const deadline = { expired: () => false };
    const renamed = (code?: string) => Object.assign(new Error(`read ${code}`), { name: 'TimeoutError', code });
    expect(failureFor(renamed('ECONNRESET'), deadline, {}).kind).toBe('server');
    expect(failureFor(renamed('EPIPE'), deadline, {}).kind).toBe('server');
    expect(failureFor(renamed('ETIMEDOUT'), deadline, {}).kind).toBe('timeout');
    expect(failureFor(renamed(), deadline, {}).kind).toBe('timeout');
  });

  it('treats a 200 without a message as invalid_output', async () => {
    expect((await failWith({ status: 200, json: { stopReason: 'end_turn' } })).kind).toBe('invalid_output');
  });

  it.each(['guardrail_intervened', 'content_filtered'])('maps stopReason %s to refusal with usage', async (reason) => {
    const failure = await failWith(
      converse([{ text: 'Sorry, I cannot help with that.' }], { inputTokens: 1890, outputTokens: 9 }, reason),
    );
    expect(failure.kind).toBe('refusal');
    expect(failure.usage).toMatchObject({ inputTokens: 1890, outputTokens: 9 });
  });

  it('times out when Bedrock answers after the deadline', async () => {
    script({ ...toolAnswer(RECEIPT_VALUES, { inputTokens: 1, outputTokens: 1 }), delayMs: 1_500 });
    const input = await inputFor('receipt.png', RECEIPT_TASK);
    const started = Date.now();
    const failure = await failureOf(createBedrockProvider().invoke(input, options(500)));
    expect(failure.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  it('times out when the attempt is aborted mid-request', async () => {
    script({ ...toolAnswer(RECEIPT_VALUES, { inputTokens: 1, outputTokens: 1 }), delayMs: 1_500 });
    const input = await inputFor('receipt.png', RECEIPT_TASK);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const failure = await failureOf(createBedrockProvider().invoke(input, options(30_000, controller.signal)));
    expect(failure.kind).toBe('timeout');
  });

  it('maps a refused connection to server', async () => {
    const closed = await startFakeServer();
    const url = closed.url;
    await closed.close();
    process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = url;
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(failure.kind).toBe('server');
  });

  it('refuses a PDF over the 4.5 MB document limit without a request', async () => {
    const bytes = new Uint8Array(MAX_PDF_BYTES + 1);
    const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: bytes.length, pages: 3 };
    const failure = await failureOf(
      createBedrockProvider().invoke({ bytes, facts, task: RECEIPT_TASK, step: 'vision' }, options()),
    );
    expect(failure.kind).toBe('client');
    expect(failure.message).toContain('4.5 MB');
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a BEDROCK_MODEL_ID without a price, without a request', async () => {
    process.env.BEDROCK_MODEL_ID = 'anthropic.claude-opus-4-1-20250805-v1:0';
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(failure.kind).toBe('client');
    expect(server.requests).toHaveLength(0);
    expect(bedrockProfile.available(process.env)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------------------------

describe('bedrock adapter: secrets', () => {
  /** A hostile error that echoes everything it received: the auth header and the credentials. */
  function echoingError(request: RecordedRequest): ScriptedResponse {
    const echo = `auth=${request.headers.authorization} token=${request.headers['x-amz-security-token']} key=${SECRET_KEY} bearer=${BEARER_TOKEN}`;
    return awsError(403, 'UnrecognizedClientException', echo);
  }

  it('never puts credentials in a failure message', async () => {
    server.respond(echoingError);
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(failure.kind).toBe('auth');
    expect(failure.message).toContain('[redacted]');
    expectNoSecrets(failure.message);
    // Nothing reachable from the failure (cause chains included) carries them either.
    expectNoSecrets(inspect(failure, { depth: 10, showHidden: true }));
  });

  it('never puts credentials in an output', async () => {
    script(toolAnswer(RECEIPT_VALUES, { inputTokens: 1890, outputTokens: 64 }));
    const out = await createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options());
    expectNoSecrets(JSON.stringify(out));
  });

  it('sends a Bedrock API key as a bearer token and never echoes it', async () => {
    process.env.AWS_BEARER_TOKEN_BEDROCK = BEARER_TOKEN;
    server.respond(echoingError);
    const failure = await failureOf(
      createBedrockProvider().invoke(await inputFor('receipt.png', RECEIPT_TASK), options()),
    );
    expect(sent().request.headers.authorization).toBe(`Bearer ${BEARER_TOKEN}`);
    expect(failure.kind).toBe('auth');
    expectNoSecrets(inspect(failure, { depth: 10, showHidden: true }));
  });

  it('redacts credential shapes even when their values are unknown', () => {
    const text = redactAwsCredentials(
      'Credential=AKIAABCDEFGHIJKLMNOP/20261122/us-east-1/bedrock/aws4_request, Signature=abcdef0123456789abcdef Bearer xyz.abc',
      {},
    );
    expect(text).not.toContain('AKIAABCDEFGHIJKLMNOP');
    expect(text).not.toContain('abcdef0123456789abcdef');
    expect(text).not.toContain('xyz.abc');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Profile
// ---------------------------------------------------------------------------------------------------------------

describe('bedrock profile', () => {
  it('is available with AWS credentials (or a Bedrock API key) and a priced model', () => {
    expect(bedrockProfile.available({ AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' })).toBe(true);
    expect(bedrockProfile.available({ AWS_LAMBDA_FUNCTION_NAME: 'worker' })).toBe(true);
    expect(bedrockProfile.available({ AWS_BEARER_TOKEN_BEDROCK: 'key' })).toBe(true);
    expect(bedrockProfile.available({})).toBe(false);
    expect(bedrockProfile.available({ AWS_PROFILE: 'dev', BEDROCK_MODEL_ID: 'meta.llama3-70b-instruct-v1:0' })).toBe(
      false,
    );
    expect(bedrockProfile.auth).toBe('iam');
    expect(bedrockProfile.credentialEnv).toEqual([]);
  });

  it('picks the model from BEDROCK_MODEL_ID, else Nova 2 Lite through the US or global inference profile', () => {
    expect(modelId({ AWS_REGION: 'us-west-2' })).toBe('us.amazon.nova-2-lite-v1:0');
    expect(modelId({ AWS_REGION: 'eu-west-1' })).toBe('global.amazon.nova-2-lite-v1:0');
    expect(modelId({ BEDROCK_MODEL_ID: ' eu.amazon.nova-lite-v1:0 ' })).toBe('eu.amazon.nova-lite-v1:0');
    expect(configuredModel({ BEDROCK_MODEL_ID: 'eu.amazon.nova-lite-v1:0' })?.price.inputUsdPer1kTokens).toBe(0.00006);
    expect(baseModelId('arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-2-lite-v1:0')).toBe(
      'amazon.nova-2-lite-v1:0',
    );
  });

  it('gives list fields room per page and scalar fields a short value', () => {
    const price = NOVA2 as Parameters<typeof outputTokenCap>[3];
    const statement: TaskSpec = {
      ...RECEIPT_TASK,
      fields: [
        { name: 'accountHolder', type: 'string', required: true },
        { name: 'transactions', type: 'array', required: true },
      ],
    };
    const pdf3: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 1, pages: 3 };
    expect(outputTokenCap(pdf3, statement, 'vision', price)).toBe(512 + 128 + 1500 * 3);
    expect(outputTokenCap(pdf3, statement, 'ocr', price)).toBe(512 + 2000 * 3);
  });

  it('bounds images by the pixels Nova bills, small images scaled up as Nova does', () => {
    // Nova's published examples: 900x450 ~800 tokens, 1.3Kx1.3K ~2,600 tokens.
    expect(imageTokenBound(900, 450)).toBeGreaterThanOrEqual(800);
    expect(imageTokenBound(1300, 1300)).toBeGreaterThanOrEqual(2600);
    expect(imageTokenBound(100, 100)).toBeGreaterThanOrEqual(1300); // upscaled to ~900x900 by Nova
    expect(imageTokenBound(6000, 4000)).toBe(imageTokenBound(1568, 1046)); // we send at most 1568 px
  });

  it('bounds every fixture above the cost of a worst realistic attempt (first answer invalid, one repair)', async () => {
    const model = configuredModel({ AWS_REGION: 'us-east-1' });
    if (!model) throw new Error('default model must be priced');
    // Realistic Nova token counts: an ~800x834 image ~1,300 tokens; a PDF page up to ~2,600 (page image) + text.
    const cases: [string, TaskSpec, number][] = [
      ['receipt.png', RECEIPT_TASK, 1300],
      ['receipt.jpg', RECEIPT_TASK, 1300],
      ['receipt.heic', RECEIPT_TASK, 1300],
      ['text.pdf', RECEIPT_TASK, 2 * 3000],
      ['scanned.pdf', OPEN_TASK, 3000],
      ['twenty-pages.pdf', TEXT_TASK, 20 * 3000],
      ['twenty-pages.pdf', OPEN_TASK, 20 * 3000],
    ];
    for (const [name, task, mediaTokens] of cases) {
      const input = await inputFor(name, task);
      const cap = outputTokenCap(input.facts, task, 'vision', model.price);
      const prompt = 1200;
      const first = { inputTokens: mediaTokens + prompt, outputTokens: cap };
      const json = task.outputFormat === 'json';
      server.requests.length = 0;
      if (json) {
        // The first answer uses the whole cap and is invalid; the repair re-sends everything and answers validly.
        const bad = task.fields ? { total: 'n/a' } : { summary: 1 };
        const good = task.fields ? RECEIPT_VALUES : { summary: 's', text: 't', keyValues: [] };
        script(
          toolAnswer(bad, first),
          toolAnswer(good, { inputTokens: first.inputTokens + cap + 300, outputTokens: cap }),
        );
      } else {
        script(converse([{ text: 'text' }], first));
      }
      const out = await createBedrockProvider().invoke(input, options());
      expect(server.requests).toHaveLength(json ? 2 : 1);
      expect(sent().body.inferenceConfig?.maxTokens).toBe(cap);
      const bound = bedrockProfile.maxCostMicros(input.facts, task);
      // PDFs are also bounded for the text (`analyze`) path the worker takes when they have a text layer.
      expect(bound).toBeGreaterThanOrEqual(
        bedrockProfile.stepCostMicros(input.facts, task, 'vision', { env: { AWS_REGION: 'us-east-1' } }),
      );
      expect({ name, bound }).toEqual({ name, bound: expect.any(Number) });
      expect(bound).toBeGreaterThanOrEqual(out.usage.costMicros);
    }
  });
});

describe('bedrock helpers', () => {
  it('parses Retry-After seconds and dates', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter(new Date(Date.now() + 5_000).toUTCString())).toBeGreaterThan(3_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
