/**
 * Calibration of per-field confidence (shared/fields, docs/confidence.md) on the fixture corpus: in every run, each
 * value planted wrong (a total off by a digit, a wrong date, a merchant not on the page, a value printed under another
 * label) scores below every right value of the same run, and below every value of the all-right run.
 */
import { groundFields } from '../../shared/fields/ground.js';
import type { Grounded, GroundInput, PageWords } from '../../shared/fields/types.js';
import { normaliseFields, registry } from '../../shared/registry/registry.js';
import type { FieldSpec } from '../../shared/task.js';
import { cafeWords, invoiceWords, receiptWords } from './grounding-corpus.js';

const NOW = new Date('2026-12-01T12:00:00Z');

function registryFields(id: string): FieldSpec[] {
  const schema = registry.get(id);
  if (schema === undefined) throw new Error(`no registry schema ${id}`);
  return normaliseFields(schema.expectedFields);
}

interface Doc {
  name: string;
  words: PageWords[];
  fieldSpecs: FieldSpec[] | null;
  nativeConfidence?: number;
  right: Record<string, unknown>;
  /** Each planted wrong: a path (`total`, `items.1.amount`) and the wrong value. */
  wrongs: [string, unknown][];
}

const CORPUS: Doc[] = [
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

function ground(doc: Doc, result: Record<string, unknown>): Grounded {
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
function plant(result: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(result);
  const [field = '', item, key] = path.split('.');
  if (item === undefined || key === undefined) copy[field] = value;
  else ((copy[field] as Record<string, unknown>[])[Number(item)] as Record<string, unknown>)[key] = value;
  return copy;
}

/** Every non-null value's confidence by path (top-level fields and item fields; arrays by their items). */
function confidences(result: Record<string, unknown>, grounded: Grounded): Map<string, number> {
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

describe.each(CORPUS)('calibration: $name', (doc) => {
  const rightRun = confidences(doc.right, ground(doc, doc.right));

  test('the all-right run grounds every value, none unsupported', () => {
    const grounded = ground(doc, doc.right);
    expect(grounded.unsupported).toEqual([]);
    expect(grounded.review).toEqual({ needed: false, reasons: [] });
  });

  test.each(doc.wrongs)('a wrong %s (%p) scores below every right value', (path, wrong) => {
    const result = plant(doc.right, path, wrong);
    const run = confidences(result, ground(doc, result));
    const wrongScore = run.get(path) ?? Number.NaN;
    const rightScores = [...run].filter(([p]) => p !== path).map(([, c]) => c);
    expect(wrongScore).toBeLessThan(Math.min(...rightScores));
    expect(wrongScore).toBeLessThan(Math.min(...rightRun.values()));
  });

  test('several wrong values at once: each below every right one', () => {
    const planted = doc.wrongs.filter(([path], i) => doc.wrongs.findIndex(([p]) => p === path) === i).slice(0, 3);
    const result = planted.reduce((acc, [path, value]) => plant(acc, path, value), doc.right);
    const run = confidences(result, ground(doc, result));
    const wrongPaths = new Set(planted.map(([path]) => path));
    const wrong = [...run].filter(([p]) => wrongPaths.has(p)).map(([, c]) => c);
    const right = [...run].filter(([p]) => !wrongPaths.has(p)).map(([, c]) => c);
    expect(wrong).toHaveLength(planted.length);
    expect(Math.max(...wrong)).toBeLessThan(Math.min(...right));
  });
});
