/**
 * The worker OCRs for evidence only the pages it must (shared/worker/grounding.ts `withEvidence`): a language model's
 * answer on a PDF whose page 1 has a text layer and whose pages 2 and 3 are scans nobody read; and an image a language
 * model answers has its OCR started beside the model's call (`earlyEvidenceOcr`) and used, not repeated. With the real
 * local OCR engine; the pages read are taken from the worker's own "OCR for evidence" log line (what an operator sees).
 */
import { readFile } from 'node:fs/promises';
import { S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { type LogEntry, setLogSink } from '../../shared/log.js';
import { shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import type { Settlement } from '../../shared/store/ledger.js';
import { earlyEvidenceOcr, withEvidence } from '../../shared/worker/grounding.js';
import { runItem } from '../support/aws.js';
import { modelAnswerOn, SCAN_ONLY_VALUE, TEXT_PAGE_VALUES, textAndScansPdf } from '../support/text-and-scans-pdf.js';

const s3 = mockClient(S3Client);
const logged: LogEntry[] = [];
const level = process.env.LOG_LEVEL;

beforeAll(() => {
  process.env.LOG_LEVEL = 'info';
  setLogSink((entry) => logged.push(entry));
});

afterAll(async () => {
  setLogSink(null);
  if (level === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = level;
  await shutdownLocalProvider();
});

beforeEach(() => {
  logged.length = 0;
  s3.reset();
  s3.resolves({});
});

/** withEvidence on the 3-page PDF for a JSON answer without words (a language model's); the pages OCR'd. */
async function ground(result: Record<string, unknown>) {
  const pdf = await textAndScansPdf();
  const { run, settlement } = modelAnswerOn(pdf, 'run_ocr_pages', result);
  const out = await withEvidence(run, pdf.bytes, settlement, {}, Date.now() + 60_000);
  if (out.status !== 'completed') throw new Error('grounding changed the settlement');
  const ocrPages = logged.filter((e) => e.message === 'OCR for evidence').flatMap((e) => e.pages as number[]);
  return { fields: out.fields ?? {}, ocrPages };
}

test("every value on the text page: no page is OCR'd", async () => {
  const { fields, ocrPages } = await ground({ ...TEXT_PAGE_VALUES });
  expect(ocrPages).toEqual([]);
  for (const name of Object.keys(TEXT_PAGE_VALUES)) expect([name, fields[name]?.page]).toEqual([name, 1]);
});

test("a value printed only on the first scan: that page is OCR'd, the scan after it is not", async () => {
  const { fields, ocrPages } = await ground({ ...TEXT_PAGE_VALUES, ...SCAN_ONLY_VALUE });
  expect(ocrPages).toEqual([2]);
  expect(fields.receiptTotal?.page).toBe(2);
  expect(fields.receiptTotal?.bbox).toHaveLength(4);
});

test("a value printed nowhere: every unread page is OCR'd (bounded), and the value gets no box", async () => {
  const { fields, ocrPages } = await ground({ ...TEXT_PAGE_VALUES, vendorTaxId: 'ZZ-99-NOWHERE' });
  expect(ocrPages).toEqual([2, 3]);
  expect(fields.vendorTaxId?.bbox).toBeUndefined();
});

describe('an image a language model answers: its evidence OCR starts beside the call', () => {
  const RECEIPT = { mime: 'image/png', kind: 'image', sizeBytes: 13775, width: 800, height: 834, pages: 1 } as const;
  const receiptRun = (overrides: Parameters<typeof runItem>[0] = {}) =>
    runItem({ jobId: 'run_early', file: { ...RECEIPT }, candidates: ['openai', 'local'], ...overrides });
  const later = () => Date.now() + 60_000;

  test('only for a JSON run on an image whose first candidate is a language model', async () => {
    const bytes = new Uint8Array(await readFile(new URL('../fixtures/receipt.png', import.meta.url)));
    const text = { ...runItem().task, outputFormat: 'text' as const, fields: null };
    expect(earlyEvidenceOcr(receiptRun({ task: text }), bytes, ['openai'], later())).toBeUndefined();
    expect(earlyEvidenceOcr(receiptRun(), bytes, ['local', 'openai'], later())).toBeUndefined();
    expect(earlyEvidenceOcr(receiptRun(), bytes, ['textract'], later())).toBeUndefined();
    const pdf = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 1, pages: 1 } as const;
    expect(earlyEvidenceOcr(receiptRun({ file: pdf }), bytes, ['openai'], later())).toBeUndefined();
    const words = await earlyEvidenceOcr(receiptRun(), bytes, ['anthropic', 'local'], later());
    expect(words?.map((p) => [p.page, p.source])).toEqual([[1, 'paddleocr']]);
    expect(words?.[0]?.words.map((w) => w.text)).toContain('ACME');
  });

  test('grounding uses the words read beside the call and reads the image no second time', async () => {
    const bytes = new Uint8Array(await readFile(new URL('../fixtures/receipt.png', import.meta.url)));
    // Words the real image does not have where they are placed here: a box from them proves they were used.
    const placed: [number, number, number, number] = [0.5, 0.5, 0.6, 0.55];
    const early = Promise.resolve([
      { page: 1, source: 'tesseract' as const, words: [{ text: 'Globex', bbox: placed, confidence: 0.9 }] },
    ]);
    const usage = { requests: 1, billableUnits: 1, costMicros: 0, priceMicros: 0 };
    const settlement: Settlement = {
      status: 'completed',
      result: { merchant: 'Globex', total: null },
      usage,
      confidence: 0.9,
      attempts: [],
    };
    const out = await withEvidence(receiptRun(), bytes, settlement, { earlyOcr: early }, later());
    expect(out.status === 'completed' && out.fields?.merchant?.bbox).toEqual(placed);
    const ocr = logged.filter((e) => e.message === 'OCR for evidence');
    expect(ocr.map((e) => [e.pages, e.besideProvider])).toEqual([[[1], [1]]]);
  });
});
