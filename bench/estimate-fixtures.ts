/**
 * What the estimate phases run (bench/estimates.ts after 40 runs, bench/first-run.ts on an empty calibration table):
 * the fixtures with their tasks and the answers the provider fakes give (bench/provider-fakes.ts), and the real cloud
 * adapters pointed at those fakes (`local` is the real local provider).
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { TextractClient } from '@aws-sdk/client-textract';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import type { CreateRunRequest } from '../shared/contract.js';
import { pdfTextLayer } from '../shared/media/index.js';
import { createAnthropicProvider } from '../shared/providers/anthropic/adapter.js';
import { createBedrockProvider } from '../shared/providers/bedrock/adapter.js';
import { createGeminiProvider } from '../shared/providers/gemini/adapter.js';
import { localProvider } from '../shared/providers/local/local-provider.js';
import { createOpenAIProvider } from '../shared/providers/openai/adapter.js';
import { createTextractProvider } from '../shared/providers/textract/adapter.js';
import type { ProviderAdapter } from '../shared/providers/types.js';
import { buildTask, registry } from '../shared/registry/registry.js';
import type { ProviderId, TaskSpec } from '../shared/task.js';
import { type ExpenseField, type FakeCase, TOKEN_MODEL } from './provider-fakes.js';

export const ESTIMATE_PROVIDERS: readonly ProviderId[] = [
  'openai',
  'anthropic',
  'gemini',
  'bedrock',
  'textract',
  'local',
];
export const LANGUAGE_MODELS: ReadonlySet<ProviderId> = new Set(['openai', 'anthropic', 'gemini', 'bedrock']);

export interface Fixture {
  file: string;
  label: string;
  /** What a client sends to POST /v1/runs (besides the upload), and the task it becomes. */
  request: Pick<CreateRunRequest, 'prompt' | 'schemaId'> & { outputFormat?: 'json' | 'text' };
  task: TaskSpec;
  /** What a model answers for the whole file; for a call on some of its pages, `answerFor` when given. */
  answer: Record<string, unknown>;
  answerFor?: (pages: number) => Record<string, unknown>;
  /** Lines per page for Textract, when the file has no text layer to take them from (images). */
  lines?: string[];
  expense: ExpenseField[];
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
const RECEIPT_ANSWER = {
  merchant: 'ACME HARDWARE',
  date: '2026-11-02',
  subtotal: 38.5,
  tax: 4,
  total: 42.5,
  currency: null,
};
const RECEIPT_EXPENSE: ExpenseField[] = [
  { type: 'VENDOR_NAME', text: 'ACME HARDWARE' },
  { type: 'INVOICE_RECEIPT_DATE', text: '2026-11-02' },
  { type: 'SUBTOTAL', text: '38.50' },
  { type: 'TAX', text: '4.00' },
  { type: 'TOTAL', text: '42.50' },
];

function fixture(f: Omit<Fixture, 'task'>): Fixture {
  const { prompt, schemaId, outputFormat = 'json' } = f.request;
  const schema = schemaId === undefined ? undefined : registry.get(schemaId);
  return { ...f, task: buildTask({ prompt, outputFormat, schemaId, schema }) };
}

/** A summary of realistic length for a text-output task: summaryBaseTokens + summaryTokensPerPage per page. */
function summary(pages: number): string {
  const tokens = TOKEN_MODEL.summaryBaseTokens + TOKEN_MODEL.summaryTokensPerPage * pages;
  const sentence =
    'The document sets out the payment terms of the vendor: invoices are due within thirty days, late payments ' +
    'accrue one percent interest per month, and goods remain the vendor’s property until paid. ';
  let text = '';
  while (text.length < tokens * TOKEN_MODEL.proseCharsPerToken) text += sentence;
  return text.slice(0, tokens * TOKEN_MODEL.proseCharsPerToken).trim();
}

const BUSINESS_CARD = {
  lines: ['Jane Doe', 'Head of Engineering', 'Example Corp', 'jane.doe@example.com', '+1 555 0100'],
  answer: {
    summary:
      'A business card of Jane Doe, Head of Engineering at Example Corp, with an e-mail address and a phone number.',
    text: 'Jane Doe\nHead of Engineering\nExample Corp\njane.doe@example.com\n+1 555 0100',
    keyValues: [
      { key: 'name', value: 'Jane Doe' },
      { key: 'title', value: 'Head of Engineering' },
      { key: 'company', value: 'Example Corp' },
      { key: 'email', value: 'jane.doe@example.com' },
      { key: 'phone', value: '+1 555 0100' },
    ],
  },
};

/** The fixtures of the warm phase (bench/estimates.ts). */
export const FIXTURES: Fixture[] = [
  fixture({
    file: 'receipt.png',
    label: 'receipt schema',
    request: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  }),
  fixture({
    file: 'text.pdf',
    label: 'invoice schema',
    request: { prompt: 'Extract the invoice', schemaId: 'invoice' },
    answer: {
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      dueDate: null,
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: null,
    },
    expense: [
      { type: 'INVOICE_RECEIPT_ID', text: 'INV-2001' },
      { type: 'INVOICE_RECEIPT_DATE', text: '2026-10-15' },
      { type: 'VENDOR_NAME', text: 'Globex Ltd' },
      { type: 'AMOUNT_DUE', text: '1250.00' },
    ],
  }),
  fixture({
    file: 'twenty-pages.pdf',
    label: 'text output',
    request: { prompt: 'Summarise the document', outputFormat: 'text' },
    answer: { text: summary(20) },
    answerFor: (pages) => ({ text: summary(pages) }),
    expense: [],
  }),
  fixture({
    file: 'receipt.heic',
    label: 'receipt schema',
    request: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  }),
  fixture({
    file: 'scanned.pdf',
    label: 'receipt schema',
    request: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  }),
  fixture({
    file: 'business-card.png',
    label: 'generic prompt',
    request: { prompt: 'Describe this picture.' },
    answer: BUSINESS_CARD.answer,
    lines: BUSINESS_CARD.lines,
    expense: [],
  }),
];

/**
 * The first-run phase's fixtures: the warm phase's (its picture with a generic prompt among them), issue #26's invoice
 * (its second page two short lines), and the issue's other generic prompt on a receipt and on a text PDF. An open
 * analysis answers with the document's legible text
 * (the fake bills a text-layer page in an answer as it does in a request: a typical page, TOKEN_MODEL.textPageTokens).
 */
export const FIRST_RUN_FIXTURES: Fixture[] = [
  ...FIXTURES,
  fixture({
    file: 'short-page.pdf',
    label: 'invoice schema',
    request: { prompt: 'Extract the invoice', schemaId: 'invoice' },
    answer: {
      invoiceNumber: 'INV-2041',
      invoiceDate: '2026-10-31',
      dueDate: null,
      vendor: 'ACME SUPPLY CO',
      totalDue: 1250,
      currency: 'USD',
    },
    expense: [
      { type: 'VENDOR_NAME', text: 'ACME SUPPLY CO' },
      { type: 'INVOICE_RECEIPT_ID', text: 'INV-2041' },
      { type: 'INVOICE_RECEIPT_DATE', text: '2026-10-31' },
      { type: 'AMOUNT_DUE', text: '1250.00' },
    ],
  }),
  fixture({
    file: 'receipt.png',
    label: 'generic prompt',
    request: { prompt: 'Extract the key information from this document.' },
    answer: {
      summary: 'A receipt from ACME HARDWARE dated 2026-11-02 for 42.50, of which 4.00 tax.',
      text: RECEIPT_LINES.join('\n'),
      keyValues: [
        { key: 'merchant', value: 'ACME HARDWARE' },
        { key: 'date', value: '2026-11-02' },
        { key: 'subtotal', value: '38.50' },
        { key: 'tax', value: '4.00' },
        { key: 'total', value: '42.50' },
      ],
    },
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  }),
  fixture({
    file: 'text.pdf',
    label: 'generic prompt',
    request: { prompt: 'Extract the key information from this document.' },
    // Filled in from the text layer by `fakeCaseOf`: the answer's `text` is the document's own.
    answer: {},
    expense: [],
  }),
];

/** The bytes of a fixture (test/fixtures). */
export async function fixtureBytes(file: string): Promise<Uint8Array> {
  return new Uint8Array(await readFile(path.join(PROJECT_ROOT, 'test', 'fixtures', file)));
}

/** A PDF's text layer per page as the worker sends it (trimmed); none for an image. */
export async function pageTextsOf(bytes: Uint8Array, pdf: boolean): Promise<string[]> {
  if (!pdf) return [];
  const deadline = { signal: new AbortController().signal, deadlineMs: Date.now() + 120_000 };
  return (await pdfTextLayer(bytes, deadline)).map((page) => page.trim());
}

/** What the fakes answer and bill for a fixture whose pages read `pageTexts` (empty for an image or a scan). */
export function fakeCaseOf(f: Fixture, pages: number, pageTexts: readonly string[]): FakeCase {
  const open = f.task.outputFormat === 'json' && f.task.fields === null;
  const answer =
    open && Object.keys(f.answer).length === 0
      ? {
          summary: 'An invoice of Globex Ltd to Initech Inc for consulting services, and its payment terms.',
          text: pageTexts.join('\n\n'),
          keyValues: [
            { key: 'invoice number', value: 'INV-2001' },
            { key: 'total due', value: '1250.00' },
          ],
        }
      : f.answer;
  return {
    answer,
    ...(f.answerFor ? { answerFor: f.answerFor } : {}),
    textOutput: f.task.outputFormat === 'text',
    pages,
    ...(pageTexts.some((t) => t !== '') ? { pageTexts: [...pageTexts] } : {}),
    pageLines: f.lines ? [f.lines] : pageTexts.map((p) => p.split('\n').filter((l) => l.trim() !== '')),
    expense: f.expense,
  };
}

const MODEL_VARIABLES = ['OPENAI_MODEL', 'ANTHROPIC_MODEL', 'GEMINI_MODEL', 'BEDROCK_MODEL_ID'] as const;

/** The real adapters, each cloud one pointed at the fakes at `url` (the same model choice the profiles estimate with). */
export function benchAdapters(url: string): Record<ProviderId, ProviderAdapter> {
  const models: NodeJS.ProcessEnv = {};
  for (const name of MODEL_VARIABLES) if (process.env[name]) models[name] = process.env[name];
  const credentials = {
    accessKeyId: 'AKIABENCHFAKE0000000',
    secretAccessKey: 'bench-fake-secret-access-key-0000000000',
  };
  return {
    openai: createOpenAIProvider({
      env: { ...models, OPENAI_API_KEY: 'sk-bench-fake', OPENAI_BASE_URL: `${url}/v1` },
    }),
    anthropic: createAnthropicProvider({
      env: { ...models, ANTHROPIC_API_KEY: 'sk-ant-bench-fake', ANTHROPIC_BASE_URL: url },
    }),
    gemini: createGeminiProvider({ env: { ...models, GEMINI_API_KEY: 'bench-fake-key', GEMINI_BASE_URL: url } }),
    bedrock: createBedrockProvider({
      env: { ...models, AWS_REGION: 'us-east-1' },
      client: new BedrockRuntimeClient({
        region: 'us-east-1',
        endpoint: url,
        credentials,
        maxAttempts: 1,
        requestHandler: new NodeHttpHandler({ connectionTimeout: 5_000 }),
      }),
    }),
    textract: createTextractProvider({
      client: new TextractClient({ region: 'us-east-1', endpoint: url, credentials, maxAttempts: 1 }),
      pollIntervalMs: 10,
    }),
    local: localProvider,
  };
}
