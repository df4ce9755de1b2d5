/**
 * Drives the local provider for real: mupdf (WASM) for PDFs, sharp / heic-convert for images, tesseract.js in a worker
 * thread for OCR. No mocks. Fixtures come from test/fixtures (scripts/make-fixtures.ts); the three the core assertions
 * need are rebuilt here with mupdf if they are missing, so the suite does not depend on the generator having run.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as mupdf from 'mupdf';
import type { SupportedMime } from '../../shared/file-facts.js';
import { localCost } from '../../shared/pricing/pricing.js';
import { localProvider, shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import type { InvokeOptions, ProviderInput } from '../../shared/providers/types.js';
import type { FieldSpec, TaskSpec } from '../../shared/task.js';
import { failureOf } from '../support/failures.js';

// mupdf reports recoverable problems (e.g. "repairing PDF document") on stderr; the garbage inputs below trigger them.
mupdf.setLog(() => {});

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const OCR_TIMEOUT = 30_000;

const RECEIPT_LINES = [
  'ACME HARDWARE',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
];
const INVOICE_PAGES = [
  ['Invoice Number: INV-2001', 'Invoice Date: 2026-10-15', 'Vendor: Globex Ltd', 'Total Due: 1250.00'],
  ['Terms and Conditions', 'Payment is due within thirty days of the invoice date.'],
];

function pdfString(s: string): string {
  return `(${s.replace(/[\\()]/g, '\\$&')})`;
}

/** A PDF page: lines of Helvetica text, or a full-page image (no text layer). */
type PageSpec = { lines: string[] } | { png: Uint8Array };

function buildPdf(pages: PageSpec[]): Uint8Array {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  for (const spec of pages) {
    if ('lines' in spec) {
      const resources = doc.addObject({ Font: { F1: font } });
      const content = `BT /F1 16 Tf 72 720 Td 24 TL\n${spec.lines.map((l) => `${pdfString(l)} Tj T*`).join('\n')}\nET\n`;
      doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, resources, content));
    } else {
      const resources = doc.addObject({ XObject: { Im0: doc.addImage(new mupdf.Image(spec.png)) } });
      doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, resources, 'q 612 0 0 792 0 0 cm /Im0 Do Q'));
    }
  }
  return doc.saveToBuffer('').asUint8Array().slice();
}

/** Renders page 1 of a PDF to a grey PNG. */
function renderPng(pdf: Uint8Array, dpi = 150): Uint8Array {
  const doc = mupdf.Document.openDocument(pdf, 'application/pdf');
  const pixmap = doc.loadPage(0).toPixmap(mupdf.Matrix.scale(dpi / 72, dpi / 72), mupdf.ColorSpace.DeviceGray, false);
  return pixmap.asPNG().slice();
}

const receiptPng = (dpi = 150): Uint8Array => renderPng(buildPdf([{ lines: RECEIPT_LINES }]), dpi);

const builders: Record<string, () => Uint8Array> = {
  'receipt.png': () => receiptPng(),
  'text.pdf': () => buildPdf(INVOICE_PAGES.map((lines) => ({ lines }))),
  'scanned.pdf': () => buildPdf([{ png: receiptPng(200) }]),
};

function fixture(name: string): Uint8Array {
  const file = path.join(FIXTURES, name);
  if (existsSync(file)) return new Uint8Array(readFileSync(file));
  const build = builders[name];
  if (build === undefined) throw new Error(`fixture ${name} is missing`);
  return build();
}

const hasFixture = (name: string): boolean => existsSync(path.join(FIXTURES, name));

const MIME_BY_EXT: Record<string, SupportedMime> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.heic': 'image/heic',
  '.pdf': 'application/pdf',
};

function task(outputFormat: TaskSpec['outputFormat'], fields: FieldSpec[] | null = null): TaskSpec {
  return {
    prompt: 'Extract the fields',
    outputFormat,
    fields,
    schemaId: null,
    schemaLabel: null,
    promptScaffold: null,
  };
}

function input(bytes: Uint8Array, mime: SupportedMime, spec: TaskSpec, pages = 1): ProviderInput {
  return {
    bytes,
    facts: { mime, kind: mime === 'application/pdf' ? 'pdf' : 'image', sizeBytes: bytes.byteLength, pages },
    task: spec,
    step: 'ocr',
  };
}

function fixtureInput(name: string, spec: TaskSpec, pages = 1): ProviderInput {
  const mime = MIME_BY_EXT[path.extname(name)];
  if (mime === undefined) throw new Error(`no MIME type for ${name}`);
  return { ...input(fixture(name), mime, spec, pages), step: 'vision' };
}

function options(ms = 60_000): InvokeOptions {
  return { signal: new AbortController().signal, deadlineMs: Date.now() + ms };
}

const RECEIPT_FIELDS: FieldSpec[] = [
  { name: 'total', type: 'number', required: true },
  { name: 'date', type: 'date', required: true },
  { name: 'invoiceNumber', type: 'string', required: true },
  { name: 'missing_thing', type: 'string', required: false },
];
const RECEIPT_RESULT = { total: 42.5, date: '2026-11-02', invoiceNumber: 'INV-1042', missing_thing: null };

afterAll(async () => {
  await shutdownLocalProvider();
});

describe('local provider: images (OCR)', () => {
  test(
    'PNG as text',
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.png', task('text')), options());
      const text = String(out.result.text);
      expect(Object.keys(out.result)).toEqual(['text']);
      for (const word of ['ACME', 'HARDWARE', 'INV-1042', '42.50', '2026-11-02']) expect(text).toContain(word);
      expect(out.documentText).toBe(text);
      expect(out.nativeConfidence).toBeGreaterThan(0.7);
      expect(out.nativeConfidence).toBeLessThanOrEqual(1);
      expect(out.usage).toEqual({ billableUnits: 1, costMicros: localCost.ocrPageMicros });
    },
    OCR_TIMEOUT,
  );

  test(
    'PNG as JSON with schema fields: found values coerced, missing field null',
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.png', task('json', RECEIPT_FIELDS)), options());
      expect(out.result).toEqual(RECEIPT_RESULT);
    },
    OCR_TIMEOUT,
  );

  test(
    "a clean receipt's total reads the same a second time: it is not doubted under review",
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.png', task('json', RECEIPT_FIELDS)), options());
      // The second read caps a value it disagrees with at 0.5 (second-read.ts); clean print must not be doubted.
      expect(out.valueConfidence?.total).toBeGreaterThan(0.5);
    },
    OCR_TIMEOUT,
  );

  test(
    'PNG as JSON without fields: text, key-values and page count',
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.png', task('json')), options());
      expect(out.result).toEqual({
        text: out.documentText,
        keyValues: expect.objectContaining({ Total: '42.50', 'Invoice Number': 'INV-1042' }),
        pages: 1,
      });
    },
    OCR_TIMEOUT,
  );

  (hasFixture('receipt.jpg') ? test : test.skip)(
    'JPEG stored sideways with EXIF orientation 6 is turned upright before OCR',
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.jpg', task('json', RECEIPT_FIELDS)), options());
      expect(out.result).toEqual(RECEIPT_RESULT);
    },
    OCR_TIMEOUT,
  );

  (hasFixture('receipt.heic') ? test : test.skip)(
    'HEIC is converted, then OCR',
    async () => {
      const out = await localProvider.invoke(fixtureInput('receipt.heic', task('json', RECEIPT_FIELDS)), options());
      expect(out.result).toEqual(RECEIPT_RESULT);
      expect(out.usage.costMicros).toBe(localCost.ocrPageMicros);
    },
    OCR_TIMEOUT,
  );
});

describe('local provider: PDFs', () => {
  test('a PDF with a text layer is read, not OCR’d: two text-layer pages', async () => {
    const out = await localProvider.invoke(
      fixtureInput(
        'text.pdf',
        task('json', [
          { name: 'invoiceNumber', type: 'string', required: true },
          { name: 'invoiceDate', type: 'date', required: true },
          { name: 'vendor', type: 'string', required: true },
          { name: 'total', type: 'number', required: true },
          { name: 'missing_thing', type: 'string', required: false },
        ]),
        2,
      ),
      options(),
    );
    expect(out.result).toEqual({
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      vendor: 'Globex Ltd',
      total: 1250,
      missing_thing: null,
    });
    expect(out.usage).toEqual({ billableUnits: 2, costMicros: 2 * localCost.textLayerPageMicros });
    expect(out.nativeConfidence).toBeCloseTo(0.99);
    // Pages are separated by a blank line; there is none inside a page.
    const pages = String(out.documentText).split('\n\n');
    expect(pages).toHaveLength(2);
    expect(pages[0]).toContain('Invoice Number: INV-2001');
    expect(pages[1]).toContain('Terms and Conditions');
  });

  test(
    'a scanned PDF (image-only page) is rendered and OCR’d, at the OCR price',
    async () => {
      const scanned = await localProvider.invoke(fixtureInput('scanned.pdf', task('json', RECEIPT_FIELDS)), options());
      expect(scanned.result).toEqual(RECEIPT_RESULT);
      expect(scanned.usage).toEqual({ billableUnits: 1, costMicros: localCost.ocrPageMicros });
      expect(scanned.nativeConfidence).toBeLessThan(0.99);

      const text = await localProvider.invoke(fixtureInput('text.pdf', task('text'), 2), options());
      expect(text.usage.costMicros).toBeLessThan(scanned.usage.costMicros);
      expect(String(text.result.text)).toContain('Globex Ltd');
    },
    OCR_TIMEOUT,
  );

  test(
    'a mixed PDF is priced page by page: one text-layer page plus one OCR page',
    async () => {
      const pdf = buildPdf([{ lines: INVOICE_PAGES[0] ?? [] }, { png: receiptPng(200) }]);
      const out = await localProvider.invoke(input(pdf, 'application/pdf', task('text'), 2), options());
      expect(out.usage).toEqual({
        billableUnits: 2,
        costMicros: localCost.textLayerPageMicros + localCost.ocrPageMicros,
      });
      const [page1, page2] = String(out.result.text).split('\n\n');
      expect(page1).toContain('Globex Ltd');
      expect(page2).toContain('ACME HARDWARE');
      // Mean of 0.99 (text layer) and the OCR page's confidence.
      expect(out.nativeConfidence).toBeGreaterThan(0.8);
      expect(out.nativeConfidence).toBeLessThan(0.99);
    },
    OCR_TIMEOUT,
  );

  test('text output of a PDF', async () => {
    const out = await localProvider.invoke(fixtureInput('text.pdf', task('text'), 2), options());
    expect(out.result).toEqual({ text: out.documentText });
    expect(out.result.text).toContain('Vendor: Globex Ltd');
  });
});

describe('local provider: deadlines and bad input', () => {
  test('a deadline that has already passed throws a timeout failure', async () => {
    const opts = { signal: new AbortController().signal, deadlineMs: Date.now() - 1 };
    const failure = await failureOf(localProvider.invoke(fixtureInput('receipt.png', task('text')), opts));
    expect(failure.kind).toBe('timeout');
  });

  test('an aborted signal throws a timeout failure', async () => {
    const controller = new AbortController();
    controller.abort();
    const failure = await failureOf(
      localProvider.invoke(fixtureInput('text.pdf', task('text'), 2), {
        signal: controller.signal,
        deadlineMs: Date.now() + 60_000,
      }),
    );
    expect(failure.kind).toBe('timeout');
  });

  test.each<[string, SupportedMime]>([
    ['application/pdf', 'application/pdf'],
    ['image/png', 'image/png'],
    ['image/jpeg', 'image/jpeg'],
    ['image/heic', 'image/heic'],
  ])('garbage bytes declared as %s throw an unreadable_file failure', async (_, mime) => {
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256);
    const failure = await failureOf(localProvider.invoke(input(garbage, mime, task('text')), options()));
    expect(failure.kind).toBe('unreadable_file');
  });

  test('empty bytes throw an unreadable_file failure', async () => {
    const failure = await failureOf(
      localProvider.invoke(input(new Uint8Array(0), 'image/png', task('text')), options()),
    );
    expect(failure.kind).toBe('unreadable_file');
  });

  (hasFixture('pixel-bomb.png') ? test : test.skip)(
    'a pixel bomb is refused before decoding (unreadable_file failure)',
    async () => {
      const failure = await failureOf(localProvider.invoke(fixtureInput('pixel-bomb.png', task('text')), options()));
      expect(failure.kind).toBe('unreadable_file');
    },
  );

  (hasFixture('encrypted.pdf') ? test : test.skip)(
    'a password-protected PDF throws an unreadable_file failure',
    async () => {
      const failure = await failureOf(localProvider.invoke(fixtureInput('encrypted.pdf', task('text')), options()));
      expect(failure.kind).toBe('unreadable_file');
    },
  );
});

describe('local provider: analyze step on given text', () => {
  test('extracts from documentText without decoding the file', async () => {
    const out = await localProvider.invoke(
      {
        bytes: new Uint8Array(0),
        facts: { mime: 'application/pdf', kind: 'pdf', sizeBytes: 0, pages: 1 },
        task: task('json', RECEIPT_FIELDS),
        step: 'analyze',
        documentText: RECEIPT_LINES.join('\n'),
      },
      options(),
    );
    expect(out.result).toEqual(RECEIPT_RESULT);
    expect(out.usage).toEqual({ billableUnits: 1, costMicros: localCost.textLayerPageMicros });
  });
});
