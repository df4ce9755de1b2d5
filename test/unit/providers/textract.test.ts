/**
 * Drives the Textract adapter through the real @aws-sdk/client-textract against a fake server that speaks Textract's
 * wire protocol (AWS JSON 1.1: `POST /`, `x-amz-target: Textract.<Operation>`, errors as `{__type, message}`), found
 * by the SDK itself through AWS_ENDPOINT_URL_TEXTRACT. Requests are checked against the public API reference
 * (docs.aws.amazon.com/textract/latest/dg/API_*.html); fixtures are the real files in test/fixtures, their facts
 * computed by the service's own inspection.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Block, TextractClient } from '@aws-sdk/client-textract';
import type { FileFacts } from '../../../shared/file-facts.js';
import { inspectUpload } from '../../../shared/inspect/index.js';
import { parseRetryAfterHeader as parseRetryAfter } from '../../../shared/providers/retry-after.js';
import { createTextractProvider, textractProvider } from '../../../shared/providers/textract/adapter.js';
import {
  billedPages,
  buildQueries,
  textractApiFor,
  textractPageMicros,
  textractPricing,
  textractProfile,
} from '../../../shared/providers/textract/profile.js';
import type { InvokeOptions, ProviderInput, ProviderOutput } from '../../../shared/providers/types.js';
import { buildTask, registry } from '../../../shared/registry/registry.js';
import type { FieldSpec, ProviderFailure, Step, TaskSpec } from '../../../shared/task.js';
import { failureOf } from '../../support/failures.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../../support/fake-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');
const ACCESS_KEY_ID = 'AKIATEXTRACTTEST0001';
const SECRET_ACCESS_KEY = 'textract/unit-test-secret-do-not-leak-0123456789';
const BUCKET = 'uploads-bucket';
const KEY = 'tenant-1/upload-1';

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and tasks
// ---------------------------------------------------------------------------------------------------------------

interface Fixture {
  bytes: Uint8Array;
  facts: FileFacts;
}

const fixtureCache = new Map<string, Fixture>();

async function fixture(name: string): Promise<Fixture> {
  const cached = fixtureCache.get(name);
  if (cached) return cached;
  const bytes = new Uint8Array(readFileSync(path.join(FIXTURES, name)));
  const facts = await inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.byteLength, {
    imageMaxBytes: 20 * 1024 * 1024,
    imageMaxPixels: 100_000_000,
    pdfMaxBytes: 50 * 1024 * 1024,
    pdfMaxPages: 200,
  });
  const loaded = { bytes, facts };
  fixtureCache.set(name, loaded);
  return loaded;
}

function task(options: { schemaId?: string; outputFormat?: 'json' | 'text'; fields?: FieldSpec[] } = {}): TaskSpec {
  const schema = options.schemaId ? registry.get(options.schemaId) : undefined;
  const built = buildTask({
    prompt: 'Read this document',
    outputFormat: options.outputFormat ?? 'json',
    schemaId: options.schemaId,
    schema,
  });
  return options.fields ? { ...built, fields: options.fields, schemaLabel: 'Custom' } : built;
}

async function inputFor(
  name: string,
  taskSpec: TaskSpec,
  extra: { step?: Step; source?: boolean } = {},
): Promise<ProviderInput> {
  const { bytes, facts } = await fixture(name);
  return {
    bytes,
    facts,
    task: taskSpec,
    step: extra.step ?? 'vision',
    ...(extra.source ? { source: { bucket: BUCKET, key: KEY } } : {}),
  };
}

function deadline(ms = 10_000): InvokeOptions {
  return { signal: new AbortController().signal, deadlineMs: Date.now() + ms };
}

/** The estimate the planner made for this input must cover what the attempt reported. */
function expectWithinEstimate(input: ProviderInput, usage: ProviderOutput['usage']): void {
  expect(textractProfile.maxCostMicros(input.facts, input.task)).toBeGreaterThanOrEqual(usage.costMicros);
}

// ---------------------------------------------------------------------------------------------------------------
// The fake Textract (AWS JSON 1.1)
// ---------------------------------------------------------------------------------------------------------------

let server: FakeServer;
const savedEnv: Record<string, string | undefined> = {};
const ENV = {
  AWS_ENDPOINT_URL_TEXTRACT: '',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY: SECRET_ACCESS_KEY,
};

beforeAll(async () => {
  server = await startFakeServer();
  // The SDK resolves its endpoint and credentials from the environment on the first call, as in the worker.
  for (const [name, value] of Object.entries({ ...ENV, AWS_ENDPOINT_URL_TEXTRACT: server.url })) {
    savedEnv[name] = process.env[name];
    process.env[name] = value;
  }
  savedEnv.AWS_SESSION_TOKEN = process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_SESSION_TOKEN;
});

afterAll(async () => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server.close();
});

beforeEach(() => {
  server.requests.length = 0;
});

type Handler = (request: RecordedRequest, call: number) => ScriptedResponse;

/** Answers each operation (`x-amz-target: Textract.<Operation>`) with its handler; `call` counts that operation. */
function textract(handlers: Record<string, Handler>): void {
  const calls = new Map<string, number>();
  server.respond((request) => {
    const operation = (request.headers['x-amz-target'] ?? '').replace(/^Textract\./, '');
    const call = calls.get(operation) ?? 0;
    calls.set(operation, call + 1);
    const handler = handlers[operation];
    if (!handler) return awsError(400, 'UnknownOperationException', `no handler for ${operation}`);
    return handler(request, call);
  });
}

function ok(json: unknown): ScriptedResponse {
  return {
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'req-1' },
    json,
  };
}

function awsError(status: number, type: string, message: string, headers: Record<string, string> = {}) {
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'req-1', ...headers },
    json: { __type: type, message },
  };
}

function operations(): string[] {
  return server.requests.map((r) => (r.headers['x-amz-target'] ?? '').replace(/^Textract\./, ''));
}

function bodyOf(index = 0): Record<string, unknown> {
  return server.requests[index]?.body as Record<string, unknown>;
}

function sentBytes(document: unknown): Buffer {
  return Buffer.from((document as { Bytes: string }).Bytes, 'base64');
}

let blockId = 0;
const nextId = () => `b-${++blockId}`;

function pageBlock(page = 1): Block {
  return { BlockType: 'PAGE', Id: nextId(), Page: page, Confidence: 99.9 };
}

/** A PAGE block and one LINE block per line, as DetectDocumentText returns them. */
function pageOf(lines: string[], page = 1, confidences: number[] = []): Block[] {
  return [
    pageBlock(page),
    ...lines.map((Text, i) => ({
      BlockType: 'LINE' as const,
      Id: nextId(),
      Page: page,
      Text,
      Confidence: confidences[i] ?? 99,
      TextType: 'PRINTED' as const,
    })),
  ];
}

const RECEIPT_LINES = [
  'ACME HARDWARE',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
  'Thank you',
];

// ---------------------------------------------------------------------------------------------------------------
// Routing and cost model (no network)
// ---------------------------------------------------------------------------------------------------------------

describe('textract profile', () => {
  test('prices come from pricing.json with a source and a date, in whole micros per page', () => {
    expect(textractPricing.source).toMatch(/^https:\/\/aws\.amazon\.com\/textract\/pricing/);
    expect(textractPricing.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(textractPageMicros).toEqual({ detect_text: 1500, expense: 10_000, identity: 25_000, queries: 15_000 });
  });

  test('picks the API that fits the task', () => {
    expect(textractApiFor(task({ outputFormat: 'text' }))).toBe('detect_text');
    expect(textractApiFor(task())).toBe('detect_text');
    expect(textractApiFor(task({ schemaId: 'receipt' }))).toBe('expense');
    expect(textractApiFor(task({ schemaId: 'invoice' }))).toBe('expense');
    expect(textractApiFor(task({ schemaId: 'id_document' }))).toBe('identity');
    expect(textractApiFor(task({ schemaId: 'business_card' }))).toBe('queries');
    expect(textractApiFor(task({ schemaId: 'bank_statement' }))).toBe('queries');
    expect(textractApiFor(task({ schemaId: 'receipt' }), 'ocr')).toBe('detect_text');
    const many = Array.from(
      { length: 16 },
      (_, i): FieldSpec => ({ name: `field${i}`, type: 'string', required: false }),
    );
    expect(textractApiFor(task({ fields: many }))).toBe('detect_text');
    expect(textractApiFor(task({ fields: many.slice(0, 15) }))).toBe('queries');
  });

  test('builds one query per answerable field, within the API pattern, aliased by the field name', () => {
    const fields: FieldSpec[] = [
      { name: 'invoiceNumber', type: 'string', required: true },
      { name: 'total', type: 'number', description: 'Total amount — incl. VAT', required: false },
      { name: 'lines', type: 'array', required: false },
      { name: 'Größe', type: 'string', description: 'Size in cm', required: false },
      { name: '价格', type: 'number', required: false },
    ];
    const queries = buildQueries(fields);
    expect(queries).toEqual([
      { field: 'invoiceNumber', text: 'What is the invoice number?', alias: 'invoiceNumber' },
      { field: 'total', text: 'What is the total (Total amount incl. VAT)?', alias: 'total' },
      // Names outside the API's ASCII pattern are asked by description and aliased by position; without one, not asked.
      { field: 'Größe', text: 'What is the Size in cm?', alias: 'field3' },
    ]);
    for (const q of queries) {
      expect(q.text).toMatch(/^[a-zA-Z0-9\s!"#$%'&()*+,\-./:;=?@[\\\]^_`{|}~><]{1,200}$/);
      expect(q.alias).toMatch(/^[a-zA-Z0-9\s!"#$%'&()*+,\-./:;=?@[\\\]^_`{|}~><]{1,200}$/);
    }
  });

  test('the cost bound is pages billed × the API page price', async () => {
    const png = await fixture('receipt.png');
    const twenty = await fixture('twenty-pages.pdf');
    expect(textractProfile.maxCostMicros(png.facts, task({ schemaId: 'receipt' }))).toBe(10_000);
    expect(textractProfile.maxCostMicros(twenty.facts, task({ outputFormat: 'text' }))).toBe(20 * 1500);
    expect(textractProfile.maxCostMicros(twenty.facts, task({ schemaId: 'business_card' }))).toBe(20 * 15_000);
    // AnalyzeID reads at most the two sides of a document.
    expect(billedPages(twenty.facts, 'identity')).toBe(2);
    expect(textractProfile.maxCostMicros(twenty.facts, task({ schemaId: 'id_document' }))).toBe(2 * 25_000);
    expect(textractProfile.auth).toBe('iam');
    expect(textractProfile.credentialEnv).toEqual([]);
  });

  test('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 03:00:10 GMT', Date.parse('Sun, 22 Nov 2026 03:00:00 GMT'))).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Synchronous APIs
// ---------------------------------------------------------------------------------------------------------------

describe('textract synchronous APIs', () => {
  test('text from a PNG: DetectDocumentText with the image bytes, LINE blocks joined, cost per page', async () => {
    textract({
      DetectDocumentText: () =>
        ok({
          DocumentMetadata: { Pages: 1 },
          Blocks: pageOf(RECEIPT_LINES, 1, [99, 97, 95, 98, 96, 99, 93]),
          DetectDocumentTextModelVersion: '1.0',
        }),
    });
    const input = await inputFor('receipt.png', task({ outputFormat: 'text' }));
    const output = await textractProvider.invoke(input, deadline());

    expect(server.requests).toHaveLength(1);
    const request = server.requests[0] as RecordedRequest;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/');
    expect(request.headers['x-amz-target']).toBe('Textract.DetectDocumentText');
    expect(request.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(request.headers.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY_ID}/\\d{8}/us-east-1/textract/aws4_request, `),
    );
    // One attempt: the plan, not the SDK, retries.
    expect(request.headers['amz-sdk-request']).toBe('attempt=1; max=1');
    expect(Object.keys(bodyOf())).toEqual(['Document']);
    // A PNG within Textract's limits is sent exactly as uploaded.
    expect(sentBytes(bodyOf().Document).equals(Buffer.from(input.bytes))).toBe(true);

    const text = RECEIPT_LINES.join('\n');
    expect(output.result).toEqual({ text });
    expect(output.documentText).toBe(text);
    expect(output.nativeConfidence).toBeCloseTo((99 + 97 + 95 + 98 + 96 + 99 + 93) / 7 / 100, 6);
    expect(output.usage).toEqual({ billableUnits: 1, costMicros: 1500 });
    expectWithinEstimate(input, output.usage);
  });

  test('open analysis of a JPEG: summary from the first lines, text, and Label: value lines as key-values', async () => {
    textract({ DetectDocumentText: () => ok({ DocumentMetadata: { Pages: 1 }, Blocks: pageOf(RECEIPT_LINES) }) });
    const input = await inputFor('receipt.jpg', task());
    const output = await textractProvider.invoke(input, deadline());

    expect(operations()).toEqual(['DetectDocumentText']);
    // Textract reads any in-plane rotation: the EXIF-rotated JPEG goes as uploaded.
    expect(sentBytes(bodyOf().Document).equals(Buffer.from(input.bytes))).toBe(true);
    expect(output.result).toEqual({
      summary:
        'ACME HARDWARE; Date: 2026-11-02; Invoice Number: INV-1042; Subtotal: 38.50; Tax: 4.00; Total: 42.50; Thank you',
      text: RECEIPT_LINES.join('\n'),
      keyValues: {
        Date: '2026-11-02',
        'Invoice Number': 'INV-1042',
        Subtotal: '38.50',
        Tax: '4.00',
        Total: '42.50',
      },
    });
    expectWithinEstimate(input, output.usage);
  });

  test('a HEIC photo is converted to JPEG before it is sent', async () => {
    textract({ DetectDocumentText: () => ok({ DocumentMetadata: { Pages: 1 }, Blocks: pageOf(RECEIPT_LINES) }) });
    const input = await inputFor('receipt.heic', task({ outputFormat: 'text' }));
    const output = await textractProvider.invoke(input, deadline(30_000));

    const sent = sentBytes(bodyOf().Document);
    expect([...sent.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    expect(sent.byteLength).toBeLessThanOrEqual(10_000_000);
    expect(output.result).toEqual({ text: RECEIPT_LINES.join('\n') });
    expectWithinEstimate(input, output.usage);
  });

  test('the OCR step reads text even for a receipt schema', async () => {
    textract({ DetectDocumentText: () => ok({ DocumentMetadata: { Pages: 1 }, Blocks: pageOf(RECEIPT_LINES) }) });
    const input = await inputFor('receipt.png', task({ schemaId: 'receipt' }), { step: 'ocr' });
    const output = await textractProvider.invoke(input, deadline());
    expect(operations()).toEqual(['DetectDocumentText']);
    expect(output.result).toEqual({ text: RECEIPT_LINES.join('\n') });
    expect(output.usage.costMicros).toBe(1500);
  });

  test('receipt schema: AnalyzeExpense SummaryFields mapped onto the registry fields', async () => {
    textract({
      AnalyzeExpense: () =>
        ok({
          DocumentMetadata: { Pages: 1 },
          ExpenseDocuments: [
            {
              ExpenseIndex: 1,
              SummaryFields: [
                {
                  Type: { Text: 'VENDOR_NAME', Confidence: 98 },
                  ValueDetection: { Text: 'ACME HARDWARE', Confidence: 97.5 },
                  PageNumber: 1,
                },
                {
                  Type: { Text: 'INVOICE_RECEIPT_DATE', Confidence: 99 },
                  LabelDetection: { Text: 'Date:', Confidence: 99 },
                  ValueDetection: { Text: 'Nov 2, 2026', Confidence: 96 },
                  PageNumber: 1,
                },
                {
                  Type: { Text: 'SUBTOTAL', Confidence: 99 },
                  LabelDetection: { Text: 'Subtotal:', Confidence: 99 },
                  ValueDetection: { Text: '$38.50', Confidence: 95 },
                  Currency: { Code: 'USD', Confidence: 90 },
                  PageNumber: 1,
                },
                {
                  Type: { Text: 'TAX', Confidence: 99 },
                  LabelDetection: { Text: 'Tax:', Confidence: 99 },
                  ValueDetection: { Text: '4.00', Confidence: 94 },
                  PageNumber: 1,
                },
                {
                  // A weaker TOTAL candidate: the most confident one wins.
                  Type: { Text: 'TOTAL', Confidence: 40 },
                  ValueDetection: { Text: '38.50', Confidence: 41 },
                  PageNumber: 1,
                },
                {
                  Type: { Text: 'TOTAL', Confidence: 99 },
                  LabelDetection: { Text: 'Total:', Confidence: 99 },
                  ValueDetection: { Text: '$42.50', Confidence: 98 },
                  Currency: { Code: 'USD', Confidence: 97 },
                  PageNumber: 1,
                },
                {
                  Type: { Text: 'OTHER', Confidence: 60 },
                  LabelDetection: { Text: 'Invoice Number:', Confidence: 90 },
                  ValueDetection: { Text: 'INV-1042', Confidence: 92 },
                  PageNumber: 1,
                },
              ],
              LineItemGroups: [],
              Blocks: pageOf(RECEIPT_LINES, 1, [90, 90, 90, 90, 90, 90, 90]),
            },
          ],
        }),
    });
    const input = await inputFor('receipt.png', task({ schemaId: 'receipt' }));
    const output = await textractProvider.invoke(input, deadline());

    expect(operations()).toEqual(['AnalyzeExpense']);
    expect(Object.keys(bodyOf())).toEqual(['Document']);
    expect(sentBytes(bodyOf().Document).equals(Buffer.from(input.bytes))).toBe(true);
    expect(output.result).toEqual({
      merchant: 'ACME HARDWARE',
      date: '2026-11-02',
      subtotal: 38.5,
      tax: 4,
      total: 42.5,
      currency: 'USD',
    });
    expect(output.documentText).toBe(RECEIPT_LINES.join('\n'));
    expect(output.nativeConfidence).toBeCloseTo(0.9, 6);
    expect(output.usage).toEqual({ billableUnits: 1, costMicros: 10_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('invoice schema on a one-page PDF: the PDF bytes go to AnalyzeExpense; missing fields are null', async () => {
    textract({
      AnalyzeExpense: () =>
        ok({
          DocumentMetadata: { Pages: 1 },
          ExpenseDocuments: [
            {
              ExpenseIndex: 1,
              SummaryFields: [
                { Type: { Text: 'INVOICE_RECEIPT_ID' }, ValueDetection: { Text: 'INV-2001', Confidence: 99 } },
                { Type: { Text: 'INVOICE_RECEIPT_DATE' }, ValueDetection: { Text: '15.10.2026', Confidence: 97 } },
                {
                  Type: { Text: 'NAME' },
                  ValueDetection: { Text: 'Globex Ltd', Confidence: 93 },
                  GroupProperties: [{ Types: ['VENDOR'], Id: 'g1' }],
                },
                {
                  Type: { Text: 'NAME' },
                  ValueDetection: { Text: 'Initech', Confidence: 99 },
                  GroupProperties: [{ Types: ['RECEIVER'], Id: 'g2' }],
                },
                {
                  Type: { Text: 'AMOUNT_DUE' },
                  ValueDetection: { Text: '1.250,00 €', Confidence: 95 },
                  Currency: { Code: 'EUR', Confidence: 95 },
                },
              ],
              Blocks: pageOf(['Invoice Number: INV-2001', 'Vendor: Globex Ltd']),
            },
          ],
        }),
    });
    const input = await inputFor('scanned.pdf', task({ schemaId: 'invoice' }));
    const output = await textractProvider.invoke(input, deadline());

    expect(operations()).toEqual(['AnalyzeExpense']);
    const sent = sentBytes(bodyOf().Document);
    expect(sent.equals(Buffer.from(input.bytes))).toBe(true);
    expect(sent.subarray(0, 5).toString()).toBe('%PDF-');
    expect(output.result).toEqual({
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      dueDate: null,
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: 'EUR',
    });
    expectWithinEstimate(input, output.usage);
  });

  test('id_document: AnalyzeID with the image as its one page; name parts joined, dates normalised, MRZ country', async () => {
    const field = (type: string, text: string, normalized?: string) => ({
      Type: { Text: type, Confidence: 99 },
      ValueDetection: {
        Text: text,
        Confidence: 98,
        ...(normalized ? { NormalizedValue: { Value: normalized, ValueType: 'Date' } } : {}),
      },
    });
    textract({
      AnalyzeID: () =>
        ok({
          DocumentMetadata: { Pages: 1 },
          AnalyzeIDModelVersion: '1.0',
          IdentityDocuments: [
            {
              DocumentIndex: 1,
              IdentityDocumentFields: [
                field('FIRST_NAME', 'JANE'),
                field('MIDDLE_NAME', ''),
                field('LAST_NAME', 'DOE'),
                field('DOCUMENT_NUMBER', 'X1234567'),
                field('DATE_OF_BIRTH', '04 JUL 1990', '1990-07-04T00:00:00'),
                field('EXPIRATION_DATE', '05 JAN 2031', '2031-01-05T00:00:00'),
                field('ID_TYPE', 'PASSPORT'),
                field(
                  'MRZ_CODE',
                  'P<USADOE<<JANE<<<<<<<<<<<<<<<<<<<<<<<<<<<<<\nX1234567<0USA9007040F3101051<<<<<<<<<<<<<<04',
                ),
                field('PLACE_OF_BIRTH', 'OHIO, U.S.A.'),
              ],
              Blocks: pageOf(['PASSPORT', 'DOE', 'JANE']),
            },
          ],
        }),
    });
    const fields: FieldSpec[] = [
      ...(task({ schemaId: 'id_document' }).fields ?? []),
      { name: 'placeOfBirth', type: 'string', required: false },
    ];
    const input = await inputFor('receipt.png', { ...task({ schemaId: 'id_document' }), fields });
    const output = await textractProvider.invoke(input, deadline());

    expect(operations()).toEqual(['AnalyzeID']);
    const pages = bodyOf().DocumentPages as unknown[];
    expect(pages).toHaveLength(1);
    expect(sentBytes(pages[0]).equals(Buffer.from(input.bytes))).toBe(true);
    expect(output.result).toEqual({
      documentType: 'PASSPORT',
      documentNumber: 'X1234567',
      fullName: 'JANE DOE',
      dateOfBirth: '1990-07-04',
      expiryDate: '2031-01-05',
      issuingCountry: 'USA',
      placeOfBirth: 'OHIO, U.S.A.',
    });
    expect(output.usage).toEqual({ billableUnits: 1, costMicros: 25_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('id_document from a two-page PDF: both pages rendered to JPEG and sent as the front and back', async () => {
    textract({
      AnalyzeID: () =>
        ok({
          DocumentMetadata: { Pages: 2 },
          IdentityDocuments: [
            {
              DocumentIndex: 1,
              IdentityDocumentFields: [{ Type: { Text: 'document number' }, ValueDetection: { Text: 'D-99' } }],
              Blocks: pageOf(['FRONT']),
            },
            { DocumentIndex: 2, IdentityDocumentFields: [], Blocks: pageOf(['BACK']) },
          ],
        }),
    });
    const input = await inputFor('text.pdf', task({ schemaId: 'id_document' }), { source: true });
    const output = await textractProvider.invoke(input, deadline(30_000));

    const pages = bodyOf().DocumentPages as unknown[];
    expect(pages).toHaveLength(2);
    for (const page of pages) expect([...sentBytes(page).subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    expect(output.result).toMatchObject({ documentNumber: 'D-99', fullName: null, issuingCountry: null });
    expect(output.documentText).toBe('FRONT\n\nBACK');
    expect(output.usage).toEqual({ billableUnits: 2, costMicros: 50_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('another schema: AnalyzeDocument QUERIES, one query per field, answers found by alias', async () => {
    textract({
      AnalyzeDocument: (request) => {
        const queries = (request.body as { QueriesConfig: { Queries: { Text: string; Alias: string }[] } })
          .QueriesConfig.Queries;
        const answers: Record<string, [string, number][]> = {
          name: [['Jane Doe', 97]],
          company: [
            ['Example', 40],
            ['Example Corp', 88],
          ],
          email: [['jane.doe@example.com', 99]],
        };
        const blocks: Block[] = pageOf(['Jane Doe', 'Head of Engineering', 'Example Corp', 'jane.doe@example.com']);
        for (const query of queries) {
          const results = (answers[query.Alias] ?? []).map(([Text, Confidence]) => ({
            BlockType: 'QUERY_RESULT' as const,
            Id: nextId(),
            Text,
            Confidence,
            Page: 1,
          }));
          blocks.push(
            {
              BlockType: 'QUERY',
              Id: nextId(),
              Query: query,
              Page: 1,
              ...(results.length ? { Relationships: [{ Type: 'ANSWER', Ids: results.map((r) => r.Id) }] } : {}),
            },
            ...results,
          );
        }
        return ok({ DocumentMetadata: { Pages: 1 }, Blocks: blocks, AnalyzeDocumentModelVersion: '1.0' });
      },
    });
    const input = await inputFor('business-card.png', task({ schemaId: 'business_card' }));
    const output = await textractProvider.invoke(input, deadline());

    expect(operations()).toEqual(['AnalyzeDocument']);
    const body = bodyOf();
    expect(body.FeatureTypes).toEqual(['QUERIES']);
    expect(body.QueriesConfig).toEqual({
      Queries: [
        { Text: 'What is the name?', Alias: 'name' },
        { Text: 'What is the title?', Alias: 'title' },
        { Text: 'What is the company?', Alias: 'company' },
        { Text: 'What is the email?', Alias: 'email' },
        { Text: 'What is the phone?', Alias: 'phone' },
        { Text: 'What is the website?', Alias: 'website' },
      ],
    });
    expect(sentBytes(body.Document).equals(Buffer.from(input.bytes))).toBe(true);
    expect(output.result).toEqual({
      name: 'Jane Doe',
      title: null,
      company: 'Example Corp',
      email: 'jane.doe@example.com',
      phone: null,
      website: null,
    });
    expect(output.usage).toEqual({ billableUnits: 1, costMicros: 15_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('a schema too large for queries: text detection, then rule-based extraction', async () => {
    textract({ DetectDocumentText: () => ok({ DocumentMetadata: { Pages: 1 }, Blocks: pageOf(RECEIPT_LINES) }) });
    const fields: FieldSpec[] = [
      { name: 'total', type: 'number', required: true },
      { name: 'subtotal', type: 'number', required: false },
      ...Array.from({ length: 14 }, (_, i): FieldSpec => ({ name: `extra${i}`, type: 'string', required: false })),
    ];
    const input = await inputFor('receipt.png', task({ fields }));
    const output = await textractProvider.invoke(input, deadline());
    expect(operations()).toEqual(['DetectDocumentText']);
    expect(output.result).toMatchObject({ total: 42.5, subtotal: 38.5, extra0: null });
    expect(output.usage.costMicros).toBe(1500);
    expectWithinEstimate(input, output.usage);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Asynchronous APIs
// ---------------------------------------------------------------------------------------------------------------

describe('textract asynchronous APIs (multi-page PDFs from S3)', () => {
  const polling = createTextractProvider({ pollIntervalMs: 20 });

  test('text: StartDocumentTextDetection, then GetDocumentTextDetection polled and paged with NextToken', async () => {
    const pageLines = (page: number) => [`Page ${page} heading`, `Paragraph of page ${page}.`];
    const blocksFor = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => pageOf(pageLines(from + i), from + i)).flat();
    textract({
      StartDocumentTextDetection: () => ok({ JobId: 'job-text-1' }),
      GetDocumentTextDetection: (request, call) => {
        const token = (request.body as { NextToken?: string }).NextToken;
        if (call < 2) return ok({ JobStatus: 'IN_PROGRESS' });
        const meta = { DocumentMetadata: { Pages: 20 }, JobStatus: 'SUCCEEDED', DetectDocumentTextModelVersion: '1.0' };
        if (token === undefined) return ok({ ...meta, Blocks: blocksFor(1, 8), NextToken: 'token-2' });
        if (token === 'token-2') return ok({ ...meta, Blocks: blocksFor(9, 16), NextToken: 'token-3' });
        return ok({ ...meta, Blocks: blocksFor(17, 20) });
      },
    });
    const input = await inputFor('twenty-pages.pdf', task({ outputFormat: 'text' }), { source: true });
    const output = await polling.invoke(input, deadline());

    expect(operations()).toEqual([
      'StartDocumentTextDetection',
      'GetDocumentTextDetection',
      'GetDocumentTextDetection',
      'GetDocumentTextDetection',
      'GetDocumentTextDetection',
      'GetDocumentTextDetection',
    ]);
    expect(bodyOf(0)).toEqual({ DocumentLocation: { S3Object: { Bucket: BUCKET, Name: KEY } } });
    expect(server.requests.slice(1).map((r) => r.body)).toEqual([
      { JobId: 'job-text-1' },
      { JobId: 'job-text-1' },
      { JobId: 'job-text-1' },
      { JobId: 'job-text-1', NextToken: 'token-2' },
      { JobId: 'job-text-1', NextToken: 'token-3' },
    ]);
    const expected = Array.from({ length: 20 }, (_, i) => pageLines(i + 1).join('\n')).join('\n\n');
    expect(output.result).toEqual({ text: expected });
    expect(output.usage).toEqual({ billableUnits: 20, costMicros: 20 * 1500 });
    expectWithinEstimate(input, output.usage);
  });

  test('expense: StartExpenseAnalysis and GetExpenseAnalysis, documents gathered across result pages', async () => {
    textract({
      StartExpenseAnalysis: () => ok({ JobId: 'job-expense-1' }),
      GetExpenseAnalysis: (request) => {
        const token = (request.body as { NextToken?: string }).NextToken;
        const meta = { DocumentMetadata: { Pages: 2 }, JobStatus: 'SUCCEEDED' };
        if (token === undefined) {
          return ok({
            ...meta,
            NextToken: 'next',
            ExpenseDocuments: [
              {
                ExpenseIndex: 1,
                SummaryFields: [
                  { Type: { Text: 'INVOICE_RECEIPT_ID' }, ValueDetection: { Text: 'INV-2001', Confidence: 99 } },
                  { Type: { Text: 'VENDOR_NAME' }, ValueDetection: { Text: 'Globex Ltd', Confidence: 99 } },
                ],
                Blocks: pageOf(['Invoice Number: INV-2001', 'Vendor: Globex Ltd'], 1),
              },
            ],
          });
        }
        return ok({
          ...meta,
          ExpenseDocuments: [
            {
              ExpenseIndex: 1,
              SummaryFields: [
                {
                  Type: { Text: 'AMOUNT_DUE' },
                  ValueDetection: { Text: '1250.00', Confidence: 96 },
                  Currency: { Code: 'USD' },
                },
                { Type: { Text: 'DUE_DATE' }, ValueDetection: { Text: '2026-11-14', Confidence: 96 } },
              ],
              Blocks: pageOf(['Terms and Conditions'], 2),
            },
          ],
        });
      },
    });
    const input = await inputFor('text.pdf', task({ schemaId: 'invoice' }), { source: true });
    const output = await polling.invoke(input, deadline());

    expect(operations()).toEqual(['StartExpenseAnalysis', 'GetExpenseAnalysis', 'GetExpenseAnalysis']);
    expect(bodyOf(0)).toEqual({ DocumentLocation: { S3Object: { Bucket: BUCKET, Name: KEY } } });
    expect(output.result).toEqual({
      invoiceNumber: 'INV-2001',
      invoiceDate: null,
      dueDate: '2026-11-14',
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: 'USD',
    });
    expect(output.documentText).toBe('Invoice Number: INV-2001\nVendor: Globex Ltd\n\nTerms and Conditions');
    expect(output.usage).toEqual({ billableUnits: 2, costMicros: 2 * 10_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('queries: StartDocumentAnalysis asks every query of every page; the most confident answer wins', async () => {
    textract({
      StartDocumentAnalysis: () => ok({ JobId: 'job-q-1' }),
      GetDocumentAnalysis: () => {
        const answer = (alias: string, text: string, confidence: number, page: number): Block[] => {
          const resultId = nextId();
          return [
            {
              BlockType: 'QUERY',
              Id: nextId(),
              Page: page,
              Query: { Text: 'q', Alias: alias, Pages: ['*'] },
              Relationships: [{ Type: 'ANSWER', Ids: [resultId] }],
            },
            { BlockType: 'QUERY_RESULT', Id: resultId, Text: text, Confidence: confidence, Page: page },
          ];
        };
        return ok({
          DocumentMetadata: { Pages: 2 },
          JobStatus: 'SUCCEEDED',
          Blocks: [
            ...pageOf(['Account holder: Jane Doe'], 1),
            ...answer('accountHolder', 'Jane Doe', 95, 1),
            ...answer('closingBalance', '12', 30, 1),
            ...pageOf(['Closing balance: 1,234.56'], 2),
            ...answer('closingBalance', '1,234.56', 91, 2),
          ],
        });
      },
    });
    const input = await inputFor('text.pdf', task({ schemaId: 'bank_statement' }), { source: true });
    const output = await polling.invoke(input, deadline());

    expect(operations()).toEqual(['StartDocumentAnalysis', 'GetDocumentAnalysis']);
    const start = bodyOf(0) as { FeatureTypes: string[]; QueriesConfig: { Queries: Record<string, unknown>[] } };
    expect(start.FeatureTypes).toEqual(['QUERIES']);
    // The array field (transactions) is not queried: a query answers with one piece of text.
    expect(start.QueriesConfig.Queries.map((q) => q.Alias)).toEqual([
      'bankName',
      'accountHolder',
      'accountNumber',
      'statementPeriodStart',
      'statementPeriodEnd',
      'openingBalance',
      'closingBalance',
    ]);
    for (const query of start.QueriesConfig.Queries) expect(query.Pages).toEqual(['*']);
    expect(output.result).toMatchObject({
      accountHolder: 'Jane Doe',
      closingBalance: 1234.56,
      bankName: null,
      transactions: null,
    });
    expect(output.usage).toEqual({ billableUnits: 2, costMicros: 2 * 15_000 });
    expectWithinEstimate(input, output.usage);
  });

  test('a throttled poll is asked again (the job keeps running); a throttled start fails the attempt', async () => {
    textract({
      StartDocumentTextDetection: () => ok({ JobId: 'job-throttled' }),
      GetDocumentTextDetection: (_request, call) =>
        call === 0
          ? awsError(400, 'ProvisionedThroughputExceededException', 'Provisioned rate exceeded', { 'retry-after': '0' })
          : ok({ DocumentMetadata: { Pages: 20 }, JobStatus: 'SUCCEEDED', Blocks: pageOf(['done']) }),
    });
    const input = await inputFor('twenty-pages.pdf', task({ outputFormat: 'text' }), { source: true });
    const output = await polling.invoke(input, deadline());
    expect(operations()).toEqual([
      'StartDocumentTextDetection',
      'GetDocumentTextDetection',
      'GetDocumentTextDetection',
    ]);
    expect(output.result).toEqual({ text: 'done' });

    textract({ StartDocumentTextDetection: () => awsError(400, 'LimitExceededException', 'Too many open jobs') });
    const failure = await failureOf(polling.invoke(input, deadline()));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.usage).toBeUndefined();
  });

  test('a multi-page PDF without its S3 location is a client failure, and nothing is sent', async () => {
    textract({});
    const input = await inputFor('text.pdf', task({ outputFormat: 'text' }));
    const failure = await failureOf(polling.invoke(input, deadline()));
    expect(failure.kind).toBe('client');
    expect(failure.message).toMatch(/S3/);
    expect(server.requests).toHaveLength(0);
  });

  test('a FAILED job is a server failure with Textract’s status message, and costs nothing', async () => {
    textract({
      StartDocumentTextDetection: () => ok({ JobId: 'job-failed' }),
      GetDocumentTextDetection: () =>
        ok({ JobStatus: 'FAILED', StatusMessage: 'Request has unsupported document format' }),
    });
    const input = await inputFor('twenty-pages.pdf', task({ outputFormat: 'text' }), { source: true });
    const failure = await failureOf(polling.invoke(input, deadline()));
    expect(failure.kind).toBe('server');
    expect(failure.message).toContain('Request has unsupported document format');
    expect(failure.usage).toBeUndefined();
  });

  test('the deadline passing while the job runs is a timeout that still carries the job’s pages', async () => {
    textract({
      StartDocumentTextDetection: () => ok({ JobId: 'job-slow' }),
      GetDocumentTextDetection: () => ok({ JobStatus: 'IN_PROGRESS' }),
    });
    const input = await inputFor('twenty-pages.pdf', task({ outputFormat: 'text' }), { source: true });
    const started = Date.now();
    const failure = await failureOf(polling.invoke(input, deadline(400)));
    expect(failure.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(operations().filter((o) => o === 'GetDocumentTextDetection').length).toBeGreaterThan(2);
    // The job keeps running (and is billed) after we stop waiting.
    expect(failure.usage).toEqual({ billableUnits: 20, costMicros: 20 * 1500 });
  });

  test('polling waits about the poll interval between requests, never past the deadline', async () => {
    const slow = createTextractProvider({ pollIntervalMs: 1_000 });
    textract({
      StartDocumentTextDetection: () => ok({ JobId: 'job-interval' }),
      GetDocumentTextDetection: () => ok({ JobStatus: 'IN_PROGRESS' }),
    });
    const input = await inputFor('twenty-pages.pdf', task({ outputFormat: 'text' }), { source: true });
    const started = Date.now();
    const failure = await failureOf(slow.invoke(input, deadline(1_500)));
    const elapsed = Date.now() - started;
    expect(failure.kind).toBe('timeout');
    // About one poll a second within a 1.5 s deadline, never a spin: one at once, one per full interval, and one more
    // when the last pause is cut short by the deadline (a loaded machine may fit fewer). Only this job's requests: a poll the previous test aborted at its deadline can reach the server late.
    const [start, ...polls] = server.requests
      .filter((r) => {
        const jobId = (r.body as { JobId?: string } | undefined)?.JobId;
        return jobId === undefined || jobId === 'job-interval';
      })
      .map((r) => (r.headers['x-amz-target'] ?? '').replace(/^Textract\./, ''));
    expect(start).toBe('StartDocumentTextDetection');
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(polls.length).toBeLessThanOrEqual(3);
    expect(polls.every((op) => op === 'GetDocumentTextDetection')).toBe(true);
    // It waits for the deadline rather than giving up early, and stops soon after it (generous slack for load).
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(5_000);
    expect(polls.length).toBeLessThanOrEqual(Math.floor(elapsed / 1_000) + 2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

describe('textract failures', () => {
  async function detectFailure(response: ScriptedResponse, ms = 10_000): Promise<ProviderFailure> {
    textract({ DetectDocumentText: () => response });
    const input = await inputFor('receipt.png', task({ outputFormat: 'text' }));
    return failureOf(textractProvider.invoke(input, deadline(ms)));
  }

  test.each([
    [400, 'ProvisionedThroughputExceededException'],
    [400, 'LimitExceededException'],
    [400, 'com.amazonaws.textract#ThrottlingException'],
    [500, 'ThrottlingException'],
  ])('%i %s → rate_limited', async (status, type) => {
    const failure = await detectFailure(awsError(status, type, 'Rate exceeded'));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.usage).toBeUndefined();
  });

  test('429 with Retry-After → rate_limited with retryAfterMs', async () => {
    const failure = await detectFailure(awsError(429, 'TooManyRequestsException', 'slow down', { 'retry-after': '2' }));
    expect(failure.kind).toBe('rate_limited');
    expect(failure.retryAfterMs).toBe(2000);
  });

  test.each([
    [400, 'AccessDeniedException'],
    [400, 'UnrecognizedClientException'],
    [403, 'InvalidSignatureException'],
    [403, 'SomethingForbidden'],
  ])('%i %s → auth', async (status, type) => {
    const failure = await detectFailure(awsError(status, type, 'not allowed'));
    expect(failure.kind).toBe('auth');
  });

  test.each([
    'InvalidParameterException',
    'UnsupportedDocumentException',
    'BadDocumentException',
    'DocumentTooLargeException',
    'InvalidS3ObjectException',
  ])('400 %s → client', async (type) => {
    const failure = await detectFailure(awsError(400, type, 'bad document'));
    expect(failure.kind).toBe('client');
    expect(failure.message).toContain(type);
  });

  test('500 InternalServerError → server; a 503 HTML page → server; a refused connection → server', async () => {
    expect((await detectFailure(awsError(500, 'InternalServerError', 'oops'))).kind).toBe('server');
    expect((await detectFailure({ status: 503, raw: '<html>Service Unavailable</html>' })).kind).toBe('server');
    const unreachable = createTextractProvider({
      client: new TextractClient({
        maxAttempts: 1,
        endpoint: 'http://127.0.0.1:9',
        region: 'us-east-1',
        credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
      }),
    });
    const input = await inputFor('receipt.png', task({ outputFormat: 'text' }));
    expect((await failureOf(unreachable.invoke(input, deadline()))).kind).toBe('server');
  });

  test('a server slower than the deadline → timeout (the page may have been processed: its usage is kept)', async () => {
    const started = Date.now();
    const failure = await detectFailure({ ...ok({ Blocks: pageOf(['late']) }), delayMs: 1_000 }, 300);
    expect(failure.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(failure.usage).toEqual({ billableUnits: 1, costMicros: 1500 });
  });

  test('a 200 whose body is not JSON → invalid_output with the page’s usage', async () => {
    const failure = await detectFailure({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      raw: 'this is not json',
    });
    expect(failure.kind).toBe('invalid_output');
    expect(failure.usage).toEqual({ billableUnits: 1, costMicros: 1500 });
  });

  test('a response without a PAGE block (how LocalStack answers) → invalid_output, so the plan falls back', async () => {
    const failure = await detectFailure(ok({ DocumentMetadata: { Pages: 1 }, Blocks: [] }));
    expect(failure.kind).toBe('invalid_output');
    expect(failure.message).toMatch(/PAGE/);
  });

  test.each([
    ['without ExpenseDocuments', { DocumentMetadata: { Pages: 1 } }],
    [
      'with an empty ExpenseDocuments list (how LocalStack answers)',
      { DocumentMetadata: { Pages: 1 }, ExpenseDocuments: [] },
    ],
  ])('AnalyzeExpense %s → invalid_output, not an all-null result', async (_what, body) => {
    textract({ AnalyzeExpense: () => ok(body) });
    const input = await inputFor('receipt.png', task({ schemaId: 'receipt' }));
    const failure = await failureOf(textractProvider.invoke(input, deadline()));
    expect(failure.kind).toBe('invalid_output');
    expect(failure.usage).toEqual({ billableUnits: 1, costMicros: 10_000 });
  });

  test('AnalyzeID with an empty IdentityDocuments list → invalid_output with the page billed', async () => {
    textract({ AnalyzeID: () => ok({ DocumentMetadata: { Pages: 1 }, IdentityDocuments: [] }) });
    const input = await inputFor('receipt.png', task({ schemaId: 'id_document' }));
    const failure = await failureOf(textractProvider.invoke(input, deadline()));
    expect(failure.kind).toBe('invalid_output');
    expect(failure.usage?.billableUnits).toBe(1);
  });

  test('an empty file is an unreadable_file failure before any request', async () => {
    textract({});
    const { facts } = await fixture('receipt.png');
    const failure = await failureOf(
      textractProvider.invoke(
        { bytes: new Uint8Array(0), facts, task: task({ outputFormat: 'text' }), step: 'vision' },
        deadline(),
      ),
    );
    expect(failure.kind).toBe('unreadable_file');
    expect(server.requests).toHaveLength(0);
  });

  test('credentials never reach a failure message or an output, even when the server echoes the request', async () => {
    const echo = (request: RecordedRequest) =>
      awsError(
        400,
        'UnrecognizedClientException',
        `The security token included in the request is invalid. Key ${ACCESS_KEY_ID}; ${request.headers.authorization}`,
      );
    textract({ DetectDocumentText: (request) => echo(request) });
    const input = await inputFor('receipt.png', task({ outputFormat: 'text' }));
    const failure = await failureOf(textractProvider.invoke(input, deadline()));
    expect(failure.kind).toBe('auth');
    expect(failure.message).toContain('security token included in the request is invalid');
    expect(failure.message).not.toContain(SECRET_ACCESS_KEY);
    expect(failure.message).not.toContain(ACCESS_KEY_ID);
    expect(failure.message).not.toMatch(/Signature=[0-9a-f]{16}/);
    // The request itself is signed with the key id, never carrying the secret.
    expect(JSON.stringify(server.requests)).not.toContain(SECRET_ACCESS_KEY);

    textract({ DetectDocumentText: () => ok({ DocumentMetadata: { Pages: 1 }, Blocks: pageOf(RECEIPT_LINES) }) });
    const output = await textractProvider.invoke(input, deadline());
    expect(JSON.stringify(output)).not.toContain(SECRET_ACCESS_KEY);
    expect(JSON.stringify(output)).not.toContain(ACCESS_KEY_ID);
  });
});

describe('textract cost bound', () => {
  test.each([
    ['receipt.png', task({ outputFormat: 'text' })],
    ['receipt.jpg', task({ schemaId: 'receipt' })],
    ['receipt.heic', task({ schemaId: 'id_document' })],
    ['business-card.png', task({ schemaId: 'business_card' })],
    ['scanned.pdf', task({ schemaId: 'invoice' })],
    ['text.pdf', task({ schemaId: 'id_document' })],
    ['text.pdf', task({ schemaId: 'bank_statement' })],
    ['twenty-pages.pdf', task()],
  ])('%s: the estimate covers the pages Textract reports', async (name, taskSpec) => {
    const { facts } = await fixture(name);
    const api = textractApiFor(taskSpec);
    const reportedPages = billedPages(facts, api);
    const actual = reportedPages * textractPageMicros[api];
    expect(textractProfile.maxCostMicros(facts, taskSpec)).toBeGreaterThanOrEqual(actual);
    // An OCR step of the same task uses the cheapest API, so it is covered too.
    expect(textractProfile.maxCostMicros(facts, taskSpec)).toBeGreaterThanOrEqual(
      facts.pages * textractPageMicros.detect_text,
    );
  });
});
