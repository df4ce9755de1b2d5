/**
 * Textract's words as evidence: the adapter, through the real SDK against a fake Textract (as textract.test.ts), returns
 * its WORD blocks' geometry as page-relative boxes in reading order; expense and identity documents, multi-page
 * answers and answers without geometry are read by `textractWords` itself.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Block } from '@aws-sdk/client-textract';
import { inspectUpload } from '../../../shared/inspect/index.js';
import { textractProvider } from '../../../shared/providers/textract/adapter.js';
import { textractWords } from '../../../shared/providers/textract/words.js';
import type { ProviderInput } from '../../../shared/providers/types.js';
import { buildTask, registry } from '../../../shared/registry/registry.js';
import { type FakeServer, type ScriptedResponse, startFakeServer } from '../../support/fake-server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures');

let server: FakeServer;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  server = await startFakeServer();
  const env = {
    AWS_ENDPOINT_URL_TEXTRACT: server.url,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIATEXTRACTWORDS001',
    AWS_SECRET_ACCESS_KEY: 'textract-words/unit-test-secret',
    AWS_SESSION_TOKEN: undefined,
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server.close();
});

function answer(operation: string, json: unknown): void {
  server.respond((request): ScriptedResponse => {
    const target = (request.headers['x-amz-target'] ?? '').replace(/^Textract\./, '');
    if (target !== operation) return { status: 400, json: { __type: 'UnknownOperationException', message: target } };
    return { status: 200, headers: { 'content-type': 'application/x-amz-json-1.1' }, json };
  });
}

async function receiptInput(schemaId?: string): Promise<ProviderInput> {
  const bytes = new Uint8Array(readFileSync(path.join(FIXTURES, 'receipt.png')));
  const facts = await inspectUpload(async (start, end) => bytes.subarray(start, end + 1), bytes.byteLength, {
    imageMaxBytes: 20 * 1024 * 1024,
    imageMaxPixels: 100_000_000,
    pdfMaxBytes: 50 * 1024 * 1024,
    pdfMaxPages: 200,
  });
  const schema = schemaId ? registry.get(schemaId) : undefined;
  return {
    bytes,
    facts,
    task: buildTask({ prompt: 'Read this', outputFormat: 'json', schemaId, schema }),
    step: 'vision',
  };
}

const deadline = () => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 10_000 });

let id = 0;
const box = (Left: number, Top: number, Width: number, Height: number) => ({
  BoundingBox: { Left, Top, Width, Height },
  Polygon: [
    { X: Left, Y: Top },
    { X: Left + Width, Y: Top },
    { X: Left + Width, Y: Top + Height },
    { X: Left, Y: Top + Height },
  ],
});

/**
 * The receipt's last lines as DetectDocumentText answers: the PAGE block, every LINE with its CHILD words, then the
 * WORD blocks (here deliberately in reverse, so that only the lines' relationships give the reading order).
 */
function receiptBlocks(page = 1): Block[] {
  const lines = [
    { words: ['Tax:', '4.00'], top: 0.676, confidences: [95.2, 96.4] },
    { words: ['Total:', '42.50'], top: 0.757, confidences: [94.8, 99.1] },
  ];
  const lineBlocks: Block[] = [];
  const wordBlocks: Block[] = [];
  for (const line of lines) {
    const ids = line.words.map(() => `w-${++id}`);
    lineBlocks.push({
      BlockType: 'LINE',
      Id: `l-${++id}`,
      Page: page,
      Text: line.words.join(' '),
      Confidence: 95,
      Geometry: box(0.095, line.top, 0.26, 0.034),
      Relationships: [{ Type: 'CHILD', Ids: ids }],
    });
    line.words.forEach((text, i) => {
      wordBlocks.push({
        BlockType: 'WORD',
        Id: ids[i] as string,
        Page: page,
        Text: text,
        TextType: 'PRINTED',
        Confidence: line.confidences[i] as number,
        Geometry: box(0.095 + i * 0.14, line.top, 0.12, 0.034),
      });
    });
  }
  return [
    { BlockType: 'PAGE', Id: `p-${++id}`, Page: page, Geometry: box(0, 0, 1, 1) },
    ...lineBlocks,
    ...wordBlocks.reverse(),
  ];
}

describe('Textract words', () => {
  test('the adapter returns its WORD blocks as words: geometry as [x0, y0, x1, y1], confidence / 100, line order', async () => {
    answer('DetectDocumentText', { DocumentMetadata: { Pages: 1 }, Blocks: receiptBlocks() });
    const output = await textractProvider.invoke(await receiptInput(), deadline());

    expect(output.words).toHaveLength(1);
    const [page] = output.words ?? [];
    expect(page?.page).toBe(1);
    expect(page?.source).toBe('textract');
    expect(page?.words.map((w) => w.text)).toEqual(['Tax:', '4.00', 'Total:', '42.50']);
    expect(page?.words[3]).toEqual({ text: '42.50', bbox: [0.235, 0.757, 0.355, 0.791], confidence: 0.991 });
  });

  test('an expense document without WORD blocks gives its LINE blocks as words', async () => {
    const lines = receiptBlocks().filter((b) => b.BlockType !== 'WORD');
    answer('AnalyzeExpense', {
      DocumentMetadata: { Pages: 1 },
      ExpenseDocuments: [
        {
          ExpenseIndex: 1,
          SummaryFields: [{ Type: { Text: 'TOTAL' }, ValueDetection: { Text: '42.50', Confidence: 99 } }],
          Blocks: lines,
        },
      ],
    });
    const output = await textractProvider.invoke(await receiptInput('receipt'), deadline());

    expect(output.result.total).toBe(42.5);
    expect(output.words?.[0]?.words).toEqual([
      { text: 'Tax: 4.00', bbox: [0.095, 0.676, 0.355, 0.71], confidence: 0.95 },
      { text: 'Total: 42.50', bbox: [0.095, 0.757, 0.355, 0.791], confidence: 0.95 },
    ]);
  });

  test("an asynchronous job's pages keep their numbers, each block once", () => {
    const page2 = receiptBlocks(2);
    // A Get page that repeats a block (NextToken pages overlap in practice only by Id) counts it once.
    const words = textractWords([...receiptBlocks(1), ...page2, page2[3] as Block], [], []);
    expect(words.map((p) => [p.page, p.words.length])).toEqual([
      [1, 4],
      [2, 4],
    ]);
  });

  test("each of AnalyzeID's documents is the page image it was sent", () => {
    const front = receiptBlocks(1);
    const back = receiptBlocks(1);
    const words = textractWords(
      [],
      [],
      [
        { DocumentIndex: 1, Blocks: front },
        { DocumentIndex: 2, Blocks: back },
      ],
    );
    expect(words.map((p) => p.page)).toEqual([1, 2]);
  });

  test('boxes stay on the page; a page read without any geometry is left out, a blank page is listed empty', () => {
    const spilling: Block = {
      BlockType: 'WORD',
      Id: 'spill',
      Page: 1,
      Text: 'edge',
      Confidence: 120,
      Geometry: box(0.95, -0.01, 0.1, 0.05),
    };
    const noGeometry: Block = { BlockType: 'LINE', Id: 'ng', Page: 2, Text: 'Total: 42.50', Confidence: 98 };
    const blank: Block = { BlockType: 'PAGE', Id: 'blank', Page: 3 };
    expect(textractWords([spilling, noGeometry, blank], [], [])).toEqual([
      { page: 1, source: 'textract', words: [{ text: 'edge', bbox: [0.95, 0, 1, 0.04], confidence: 1 }] },
      { page: 3, source: 'textract', words: [] },
    ]);
  });
});
