/**
 * Where a run's words come from (shared/worker/evidence.ts), for real: mupdf's text layer (text.pdf, invoice.pdf),
 * tesseract's word boxes in the local provider (receipt.png), the text layer for a language model's answer, a chunk's
 * pages offset into the whole document, and local OCR of a scan no engine read (scanned.pdf). Boxes are checked
 * against where the fixture generator (scripts/make-fixtures.ts) drew each line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as mupdf from 'mupdf';
import type { EvidenceWord, PageWords } from '../../shared/fields/types.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { Deadline, PdfFile, pdfWords } from '../../shared/media/index.js';
import { MAX_WORD_CHARS_PER_PAGE } from '../../shared/media/pdf.js';
import { localProvider, shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import type { ProviderInput } from '../../shared/providers/types.js';
import type { TaskSpec } from '../../shared/task.js';
import {
  collectEvidenceWords,
  ocrPagesForEvidence,
  offsetWords,
  pagesWithoutWords,
} from '../../shared/worker/evidence.js';

// mupdf reports the repair of the garbage PDF below on stderr.
mupdf.setLog(() => {});

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const fixture = (name: string) => new Uint8Array(readFileSync(path.join(FIXTURES, name)));
const later = (ms = 60_000) => Date.now() + ms;
const media = () => ({ signal: new AbortController().signal, deadlineMs: later() });

const pdfFacts = (bytes: Uint8Array, pages: number): FileFacts => ({
  mime: 'application/pdf',
  kind: 'pdf',
  sizeBytes: bytes.byteLength,
  pages,
});
const PNG_FACTS: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 1, width: 800, height: 834, pages: 1 };
const TEXT_TASK: TaskSpec = {
  prompt: 'Transcribe',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

afterAll(async () => {
  await shutdownLocalProvider();
});

function word(page: PageWords | undefined, text: string): EvidenceWord {
  const found = page?.words.find((w) => w.text === text);
  if (!found) throw new Error(`no word "${text}" on page ${page?.page}: ${page?.words.map((w) => w.text).join(' ')}`);
  return found;
}

/** Every box inside the page and not empty. */
function expectSaneBoxes(pages: readonly PageWords[]): void {
  const bad = pages.flatMap((p) =>
    p.words.filter(({ bbox: [x0, y0, x1, y1] }) => !(0 <= x0 && x0 < x1 && x1 <= 1 && 0 <= y0 && y0 < y1 && y1 <= 1)),
  );
  expect(bad).toEqual([]);
}

/** Words in reading order: each one right of the one before on its line, or on a line below it. */
function expectReadingOrder(page: PageWords | undefined): void {
  const words = page?.words ?? [];
  const out: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const [a, b] = [words[i - 1] as EvidenceWord, words[i] as EvidenceWord];
    const sameLine = b.bbox[1] < a.bbox[3] && b.bbox[3] > a.bbox[1];
    if (sameLine ? b.bbox[0] < a.bbox[2] : b.bbox[1] < a.bbox[3]) out.push(`${a.text} → ${b.text}`);
  }
  expect(out).toEqual([]);
}

/** A word lies on the line drawn with its baseline `baselinePt` points from the top of a page `heightPt` tall. */
function expectOnLine(w: EvidenceWord, baselinePt: number, sizePt: number, heightPt: number): void {
  const baseline = baselinePt / heightPt;
  expect(w.bbox[1]).toBeGreaterThan(baseline - (1.2 * sizePt) / heightPt);
  expect(w.bbox[1]).toBeLessThan(baseline);
  expect(w.bbox[3]).toBeGreaterThan(baseline - (0.2 * sizePt) / heightPt);
  expect(w.bbox[3]).toBeLessThan(baseline + (0.4 * sizePt) / heightPt);
}

describe('the PDF text layer (mupdf)', () => {
  test("text.pdf: each page's words with boxes on the page, in reading order", async () => {
    const pages = await pdfWords(fixture('text.pdf'), media());
    expect(pages.map((p) => [p.page, p.source])).toEqual([
      [1, 'text-layer'],
      [2, 'text-layer'],
    ]);
    expect(pages[0]?.words.slice(0, 4).map((w) => w.text)).toEqual(['INVOICE', 'Invoice', 'Number:', 'INV-2001']);
    expect(pages[1]?.words.slice(0, 3).map((w) => w.text)).toEqual(['Terms', 'and', 'Conditions']);
    expectSaneBoxes(pages);
    for (const page of pages) expectReadingOrder(page);
    // "Total Due: 1250.00", 18 pt, baseline 320 pt down a 792 pt page, starting 72 pt from the left of 612.
    const total = word(pages[0], '1250.00');
    expectOnLine(total, 320, 18, 792);
    expect(total.bbox[0]).toBeGreaterThan(72 / 612);
    expect(total.confidence).toBeUndefined();
  });

  test('invoice.pdf: the registry fields, line items and IBAN stand where they were drawn', async () => {
    const [page, ...rest] = await pdfWords(fixture('invoice.pdf'), media());
    expect(rest).toEqual([]);
    expect(page?.page).toBe(1);
    expectSaneBoxes([page as PageWords]);
    expectReadingOrder(page);
    expectOnLine(word(page, 'INV-3001'), 160, 12, 792);
    expectOnLine(word(page, '2026-09-30'), 180, 12, 792);
    expectOnLine(word(page, '1,315.00'), 400, 12, 792);
    expectOnLine(word(page, '263.00'), 420, 12, 792);
    expectOnLine(word(page, '1,578.00'), 444, 14, 792);
    expectOnLine(word(page, 'DE89'), 520, 12, 792);
    // The amount column starts 480 pt from the left; a line item's amount is on its row.
    const amount = word(page, '1,000.00');
    expectOnLine(amount, 314, 12, 792);
    expect(amount.bbox[0]).toBeCloseTo(480 / 612, 2);
  });

  test('a page of 200,000 characters: its words stop at the cap, its text does not', async () => {
    const doc = new mupdf.PDFDocument();
    const font = doc.addObject({ Font: { F1: doc.addSimpleFont(new mupdf.Font('Helvetica')) } });
    const line = `(${'abcd '.repeat(100)}) Tj T*`;
    const content = `BT /F1 1 Tf 0 790 Td 1 TL\n${Array.from({ length: 400 }, () => line).join('\n')}\nET\n`;
    doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, font, content));
    const bytes = doc.saveToBuffer('').asUint8Array().slice();
    const pdf = await PdfFile.open(bytes, new Deadline(new AbortController().signal, later()));
    try {
      const { text, words } = pdf.textAndWords(0);
      expect(text.replace(/\s/g, '')).toHaveLength(160_000);
      // Each word costs five characters visited: "abcd" and the space after it.
      expect(words).toHaveLength(MAX_WORD_CHARS_PER_PAGE / 5);
      expect(words.every((w) => w.text === 'abcd')).toBe(true);
    } finally {
      pdf.close();
    }
  });

  test('a scan has no text layer: no words, not an empty page', async () => {
    expect(await pdfWords(fixture('scanned.pdf'), media())).toEqual([]);
  });
});

describe('the local provider returns words for every page it read', () => {
  test('receipt.png: the OCR engine\'s word boxes, relative to the image, "Total:" on its line', async () => {
    const bytes = fixture('receipt.png');
    const input: ProviderInput = { bytes, facts: PNG_FACTS, task: TEXT_TASK, step: 'vision' };
    const output = await localProvider.invoke(input, media());

    expect(output.words?.map((p) => [p.page, p.source])).toEqual([[1, 'paddleocr']]);
    const page = output.words?.[0];
    expectSaneBoxes(output.words ?? []);
    expectReadingOrder(page);
    // "Total: 42.50" is drawn 18 pt bold with its baseline 316 pt down the 400 pt receipt: pixels 631–659 of 834.
    const total = word(page, 'Total:');
    expectOnLine(total, 316, 18, 400);
    expectOnLine(word(page, '42.50'), 316, 18, 400);
    expect(total.bbox[3]).toBeLessThan(word(page, 'Thank').bbox[1]);
    expect(total.bbox[1]).toBeGreaterThan(word(page, 'Tax:').bbox[3]);
    expect(total.confidence).toBeGreaterThan(0.5);
    expect(total.confidence).toBeLessThanOrEqual(1);
  });

  test('text.pdf: its text layer, page by page', async () => {
    const bytes = fixture('text.pdf');
    const output = await localProvider.invoke(
      { bytes, facts: pdfFacts(bytes, 2), task: TEXT_TASK, step: 'vision' },
      media(),
    );
    expect(output.words?.map((p) => [p.page, p.source])).toEqual([
      [1, 'text-layer'],
      [2, 'text-layer'],
    ]);
    expect(output.words).toEqual(await pdfWords(bytes, media()));
  });
});

describe('collectEvidenceWords', () => {
  test("the provider's own words are kept; a PDF's pages it left without words get the text layer's", async () => {
    const bytes = fixture('text.pdf');
    const own: PageWords = { page: 1, source: 'textract', words: [{ text: 'INV-2001', bbox: [0.3, 0.15, 0.4, 0.18] }] };
    const words = await collectEvidenceWords({
      bytes,
      facts: pdfFacts(bytes, 2),
      output: { words: [own] },
      deadlineMs: later(),
    });
    expect(words.map((p) => [p.page, p.source])).toEqual([
      [1, 'textract'],
      [2, 'text-layer'],
    ]);
    expect(words[0]).toEqual(own);
  });

  test("a language model's answer (no words) on the invoice is grounded on the text layer", async () => {
    const bytes = fixture('invoice.pdf');
    const words = await collectEvidenceWords({ bytes, facts: pdfFacts(bytes, 1), output: {}, deadlineMs: later() });
    expect(words).toEqual(await pdfWords(bytes, media()));
    expect(word(words[0], 'INV-3001')).toBeDefined();
  });

  test('an image a language model read has no words yet: the page needs OCR', async () => {
    const words = await collectEvidenceWords({
      bytes: fixture('receipt.png'),
      facts: PNG_FACTS,
      output: {},
      deadlineMs: later(),
    });
    expect(words).toEqual([]);
    expect(pagesWithoutWords(words, 1)).toEqual([1]);
  });

  test("a chunk's words say the whole document's page: page 13 of twenty-pages.pdf is page 13", async () => {
    const whole = fixture('twenty-pages.pdf');
    const d = new Deadline(new AbortController().signal, later());
    const pdf = await PdfFile.open(whole, d);
    const chunk = pdf.extractPages(12, 13);
    pdf.close();
    const words = await collectEvidenceWords({
      bytes: chunk,
      facts: pdfFacts(chunk, 2),
      output: {},
      pages: { first: 13, last: 14 },
      deadlineMs: later(),
    });
    expect(words.map((p) => p.page)).toEqual([13, 14]);
    const [thirteen] = words;
    expect(thirteen?.words.slice(0, 2).map((w) => w.text)).toEqual(['Section', '13']);
    expect(thirteen?.words.slice(-4).map((w) => w.text)).toEqual(['Page', '13', 'of', '20']);
  });

  test("an unreadable PDF gives the provider's words and no error", async () => {
    const own: PageWords = { page: 1, source: 'tesseract', words: [] };
    const bytes = new TextEncoder().encode('%PDF-1.7 not really');
    const words = await collectEvidenceWords({
      bytes,
      facts: pdfFacts(bytes, 3),
      output: { words: [own, { ...own, page: 9 }] },
      deadlineMs: later(),
    });
    // Page 9 is not in a 3-page file.
    expect(words).toEqual([own]);
  });

  test('offsetWords and pagesWithoutWords', () => {
    const words: PageWords[] = [
      { page: 1, source: 'text-layer', words: [] },
      { page: 3, source: 'text-layer', words: [] },
    ];
    expect(offsetWords(words, 10).map((p) => p.page)).toEqual([11, 13]);
    expect(pagesWithoutWords(words, 4)).toEqual([2, 4]);
  });
});

describe('ocrPagesForEvidence', () => {
  test("scanned.pdf page 1: the OCR engine's words on the right lines", async () => {
    const bytes = fixture('scanned.pdf');
    const words = await ocrPagesForEvidence({
      bytes,
      facts: pdfFacts(bytes, 1),
      pages: [1],
      deadlineMs: later(),
      maxPages: 3,
    });
    expect(words.map((p) => [p.page, p.source])).toEqual([[1, 'paddleocr']]);
    expectSaneBoxes(words);
    // The scan is receipt.png filling a 384 x 400 pt page.
    expectOnLine(word(words[0], 'Total:'), 316, 18, 400);
    expectOnLine(word(words[0], 'INV-1042'), 150, 16, 400);
  });

  test('bounded: no pages past maxPages or the file, none once the deadline has passed', async () => {
    const bytes = fixture('receipt.png');
    const ask = (pages: number[], maxPages: number, deadlineMs = later()) =>
      ocrPagesForEvidence({ bytes, facts: PNG_FACTS, pages, deadlineMs, maxPages });
    expect(await ask([1], 0)).toEqual([]);
    expect(await ask([0, 2, 99], 5)).toEqual([]);
    expect(await ask([1], 1, Date.now() - 1)).toEqual([]);
    const read = await ask([1, 1], 5);
    expect(read.map((p) => p.page)).toEqual([1]);
    expect(word(read[0], 'ACME')).toBeDefined();
  });

  test('an OCR that cannot finish gives what it has, never an error', async () => {
    const bytes = fixture('damaged.png');
    expect(
      await ocrPagesForEvidence({ bytes, facts: PNG_FACTS, pages: [1], deadlineMs: later(), maxPages: 1 }),
    ).toEqual([]);
  });
});
