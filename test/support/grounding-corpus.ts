/**
 * The grounding corpus (shared/fields, docs/confidence.md "Calibration"): word sets built from the fixture texts
 * (test/fixtures/README.md) — the receipt as tesseract reads receipt.png (boxes and confidences from a real run of the
 * local provider's OCR), text.pdf's invoice as its text layer lays it out, and a café receipt in US notation with line
 * items and a tip — and CORPUS, each document's right result with the wrong values planted in it one at a time.
 * Not a test file: the grounding unit tests, the calibration test and the benchmark (bench/grounding.ts) import it, so
 * the benchmark's calibration figure is measured on exactly what the test asserts.
 */
import { groundFields } from '../../shared/fields/ground.js';
import type { BBox, EvidenceWord, Grounded, GroundInput, PageWords } from '../../shared/fields/types.js';
import { normaliseFields, registry } from '../../shared/registry/registry.js';
import type { FieldSpec } from '../../shared/task.js';

/** tesseract.js (LSTM, eng) on test/fixtures/receipt.png, 800 x 834: [text, confidence %, x0, y0, x1, y1]. */
const RECEIPT_OCR: [string, number, number, number, number, number][] = [
  ['ACME', 96, 76, 80, 220, 118],
  ['HARDWARE', 96, 239, 81, 531, 117],
  ['12', 96, 78, 154, 106, 175],
  ['Main', 96, 118, 154, 177, 176],
  ['Street,', 96, 189, 153, 270, 179],
  ['Springfield', 96, 283, 153, 417, 181],
  ['Date:', 96, 78, 234, 153, 259],
  ['2026-11-02', 96, 165, 234, 333, 259],
  ['Invoice', 95, 78, 289, 179, 314],
  ['Number:', 93, 193, 289, 316, 314],
  ['INV-1042', 87, 330, 289, 466, 314],
  ['Hammer', 95, 78, 372, 202, 397],
  ['1', 95, 215, 372, 224, 396],
  ['x', 96, 241, 379, 255, 396],
  ['18.50', 96, 269, 372, 347, 397],
  ['Screws', 95, 77, 425, 183, 451],
  ['2', 96, 195, 426, 210, 450],
  ['x', 96, 222, 433, 237, 450],
  ['10.00', 96, 251, 426, 329, 451],
  ['Subtotal:', 95, 77, 508, 205, 534],
  ['38.50', 96, 217, 509, 297, 534],
  ['Tax:', 95, 76, 564, 138, 589],
  ['4.00', 96, 150, 564, 212, 589],
  ['Total:', 95, 76, 631, 174, 659],
  ['42.50', 96, 188, 631, 280, 659],
  ['Thank', 96, 76, 726, 167, 751],
  ['you', 96, 178, 732, 228, 757],
];

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

export const receiptWords: PageWords[] = [
  {
    page: 1,
    source: 'tesseract',
    words: RECEIPT_OCR.map(([text, confidence, x0, y0, x1, y1]) => ({
      text,
      confidence: confidence / 100,
      bbox: [round4(x0 / 800), round4(y0 / 834), round4(x1 / 800), round4(y1 / 834)] as BBox,
    })),
  },
];

export interface Line {
  text: string;
  x: number;
  /** Baseline, points from the top. */
  y: number;
  size: number;
}

/**
 * The words of text lines as a PDF text layer boxes them: Helvetica's average advance (~0.52 em a character, a space
 * 0.28 em), ascent 0.72 em and descent 0.21 em, relative to the page. Approximate, which is all grounding needs.
 */
export function layout(
  page: number,
  width: number,
  height: number,
  lines: readonly Line[],
  confidence?: number,
): PageWords {
  const words: EvidenceWord[] = [];
  for (const line of lines) {
    let x = line.x;
    for (const text of line.text.split(' ')) {
      const w = text.length * 0.52 * line.size;
      const bbox: BBox = [
        round4(x / width),
        round4((line.y - 0.72 * line.size) / height),
        round4((x + w) / width),
        round4((line.y + 0.21 * line.size) / height),
      ];
      words.push(confidence === undefined ? { text, bbox } : { text, bbox, confidence });
      x += w + 0.28 * line.size;
    }
  }
  return { page, source: confidence === undefined ? 'text-layer' : 'tesseract', words };
}

/** text.pdf: a 2-page invoice (scripts/make-fixtures.ts draws the same lines). */
export const invoiceWords: PageWords[] = [
  layout(1, 612, 792, [
    { text: 'INVOICE', x: 72, y: 90, size: 28 },
    { text: 'Invoice Number: INV-2001', x: 72, y: 140, size: 16 },
    { text: 'Invoice Date: 2026-10-15', x: 72, y: 166, size: 16 },
    { text: 'Vendor: Globex Ltd', x: 72, y: 192, size: 16 },
    { text: 'Bill To: Initech Inc', x: 72, y: 218, size: 16 },
    { text: 'Consulting services, October 2026', x: 72, y: 270, size: 14 },
    { text: 'Total Due: 1250.00', x: 72, y: 320, size: 18 },
  ]),
  layout(2, 612, 792, [
    { text: 'Terms and Conditions', x: 72, y: 90, size: 20 },
    { text: 'Payment is due within thirty days of the invoice date.', x: 72, y: 130, size: 13 },
    { text: 'Late payments accrue interest of one percent per month.', x: 72, y: 154, size: 13 },
    { text: 'Goods remain the property of the vendor until paid in full.', x: 72, y: 178, size: 13 },
    { text: 'Please quote the invoice number with every payment.', x: 72, y: 202, size: 13 },
    { text: 'Questions about this invoice go to billing@globex.example.', x: 72, y: 226, size: 13 },
  ]),
];

/** A café receipt in US notation, photographed (OCR confidences in the 0.9s): multi-word merchant, month-name date. */
export const cafeWords: PageWords[] = [
  layout(
    1,
    300,
    500,
    [
      { text: 'Blue Bottle Coffee', x: 20, y: 40, size: 16 },
      { text: '300 Webster St, Oakland, CA 94607', x: 20, y: 60, size: 9 },
      { text: 'Nov 20, 2026 08:14', x: 20, y: 84, size: 10 },
      { text: 'Latte $5.25', x: 20, y: 120, size: 10 },
      { text: 'Croissant $4.50', x: 20, y: 136, size: 10 },
      { text: 'Cold Brew $5.50', x: 20, y: 152, size: 10 },
      { text: 'Subtotal $15.25', x: 20, y: 180, size: 10 },
      { text: 'Tax $1.37', x: 20, y: 196, size: 10 },
      { text: 'Tip $3.00', x: 20, y: 212, size: 10 },
      { text: 'Total $19.62', x: 20, y: 232, size: 12 },
      { text: 'VISA **** 4242 $19.62', x: 20, y: 256, size: 9 },
      { text: 'Thank you!', x: 20, y: 290, size: 10 },
    ],
    0.93,
  ),
];

/** "Today" for the corpus's date checks. */
export const NOW = new Date('2026-12-01T12:00:00Z');

function registryFields(id: string): FieldSpec[] {
  const schema = registry.get(id);
  if (schema === undefined) throw new Error(`no registry schema ${id}`);
  return normaliseFields(schema.expectedFields);
}

export interface CorpusDoc {
  name: string;
  words: PageWords[];
  fieldSpecs: FieldSpec[] | null;
  nativeConfidence?: number;
  right: Record<string, unknown>;
  /** Each planted wrong: a path (`total`, `items.1.amount`) and the wrong value. */
  wrongs: [string, unknown][];
}

export const CORPUS: CorpusDoc[] = [
  {
    name: 'receipt.png read by tesseract',
    words: receiptWords,
    fieldSpecs: [...registryFields('receipt'), { name: 'line_items', type: 'array', required: false }],
    nativeConfidence: 0.95,
    right: {
      merchant: 'ACME HARDWARE',
      date: '2026-11-02',
      subtotal: 38.5,
      tax: 4,
      total: 42.5,
      currency: null,
      line_items: [
        { description: 'Hammer', quantity: 1, price: 18.5 },
        { description: 'Screws', quantity: 2, price: 10 },
      ],
    },
    wrongs: [
      ['total', 42.51],
      ['total', 38.5],
      ['total', 24.5],
      ['subtotal', 38.05],
      ['tax', 4.5],
      ['date', '2026-11-03'],
      ['date', '2026-02-11'],
      ['merchant', 'ACE HARDWARE'],
      ['merchant', 'Home Depot'],
      ['line_items.0.price', 18.05],
      ['line_items.1.description', 'Nails'],
    ],
  },
  {
    name: 'text.pdf read from its text layer',
    words: invoiceWords,
    fieldSpecs: registryFields('invoice'),
    nativeConfidence: 0.99,
    right: {
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      dueDate: null,
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: null,
    },
    wrongs: [
      ['invoiceNumber', 'INV-2007'],
      ['invoiceDate', '2026-10-16'],
      ['invoiceDate', '2026-10-05'],
      ['vendor', 'Initech Inc'],
      ['vendor', 'Acme Corp'],
      ['totalDue', 1205],
      ['totalDue', 125],
    ],
  },
  {
    name: 'a café receipt answered by a model without its own confidence',
    words: cafeWords,
    fieldSpecs: [
      { name: 'merchant', type: 'string', required: true },
      { name: 'date', type: 'date', required: true },
      { name: 'subtotal', type: 'number', required: false },
      { name: 'tax', type: 'number', required: false },
      { name: 'tip', type: 'number', required: false },
      { name: 'total', type: 'number', required: true },
      { name: 'currency', type: 'string', required: false },
      { name: 'items', type: 'array', required: false },
    ],
    right: {
      merchant: 'Blue Bottle Coffee',
      date: '2026-11-20',
      subtotal: 15.25,
      tax: 1.37,
      tip: 3,
      total: 19.62,
      currency: 'USD',
      items: [
        { name: 'Latte', amount: 5.25 },
        { name: 'Croissant', amount: 4.5 },
        { name: 'Cold Brew', amount: 5.5 },
      ],
    },
    wrongs: [
      ['total', 19.26],
      ['tip', 2],
      ['tax', 1.73],
      ['date', '2026-11-21'],
      ['date', '2026-10-20'],
      ['merchant', 'Philz Coffee'],
      ['items.1.amount', 4.05],
      ['items.2.name', 'Espresso'],
    ],
  },
];

/** Grounds a result of `doc` as the worker would (review threshold 0.8, the default). */
export function ground(doc: CorpusDoc, result: Record<string, unknown>): Grounded {
  const input: GroundInput = {
    result,
    fieldSpecs: doc.fieldSpecs,
    words: doc.words,
    reviewThreshold: 0.8,
    now: NOW,
    ...(doc.nativeConfidence === undefined ? {} : { nativeConfidence: doc.nativeConfidence }),
  };
  return groundFields(input);
}

/** The result with one value replaced; `items.1.amount` reaches into an array of objects. */
export function plant(result: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(result);
  const [field = '', item, key] = path.split('.');
  if (item === undefined || key === undefined) copy[field] = value;
  else ((copy[field] as Record<string, unknown>[])[Number(item)] as Record<string, unknown>)[key] = value;
  return copy;
}

/** The corpus's run with several wrong values at once: the first planted wrong of each of three distinct fields. */
export function severalWrongs(doc: CorpusDoc): [string, unknown][] {
  return doc.wrongs.filter(([path], i) => doc.wrongs.findIndex(([p]) => p === path) === i).slice(0, 3);
}

/** Every non-null value's confidence by path (top-level fields and item fields; arrays by their items). */
export function confidences(result: Record<string, unknown>, grounded: Grounded): Map<string, number> {
  const out = new Map<string, number>();
  for (const [field, value] of Object.entries(result)) {
    const evidence = grounded.fields[field];
    if (value === null || evidence === undefined) continue;
    if (evidence.items === undefined) out.set(field, evidence.confidence);
    evidence.items?.forEach((item, i) => {
      for (const [key, e] of Object.entries(item)) out.set(`${field}.${i}.${key}`, e.confidence);
    });
  }
  return out;
}
