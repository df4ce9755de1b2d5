/**
 * `groundFields` alone on synthetic words (phase 10, bench/grounding.ts, reports them as information beside the
 * issue #18 figures measured on real fixtures):
 *
 * - receipt: a receipt image's words as OCR gives them (~70 words with confidences, one page) and a receipt result of
 *   10 fields, 6 of them line items;
 * - long document: a 20-page text-layer PDF (~400 words a page, no confidences) with an invoice-schema result whose
 *   values stand on page 1 and page 20.
 *
 * Each case is grounded once cold (its first call) and then `iterations` times; p50 and p90 are over the warm calls.
 * The budget is lifted (60 s) so that a slow machine measures the time rather than the skip.
 */
import { groundFields } from '../shared/fields/ground.js';
import type { BBox, EvidenceWord, GroundInput, PageWords } from '../shared/fields/types.js';
import { normaliseFields, registry } from '../shared/registry/registry.js';
import type { FieldSpec } from '../shared/task.js';
import { type Summary, summarize } from './stats.js';

export interface SyntheticCase {
  pages: number;
  words: number;
  fields: number;
  /** The first call of the process (JIT cold), ms. */
  firstMs: number;
  /** Warm calls. */
  ms: Summary;
  /** The grounded run's confidence and review, to show the case grounded what it should. */
  confidence: number;
  reviewNeeded: boolean;
  unsupported: string[];
}

export interface SyntheticGroundingResult {
  iterations: number;
  receipt: SyntheticCase;
  longDocument: SyntheticCase;
}

/** Lines of text as words with boxes: ~0.52 em a character, a space 0.28 em (close enough to Helvetica). */
function layout(
  page: number,
  size: { width: number; height: number },
  lines: readonly string[],
  options: { top: number; step: number; em: number; confidence?: (i: number) => number },
): PageWords {
  const words: EvidenceWord[] = [];
  lines.forEach((line, row) => {
    const y = options.top + row * options.step;
    let x = 40;
    for (const text of line.split(' ')) {
      const w = text.length * 0.52 * options.em;
      const bbox: BBox = [x / size.width, (y - options.em) / size.height, (x + w) / size.width, y / size.height];
      const confidence = options.confidence?.(words.length);
      words.push(confidence === undefined ? { text, bbox } : { text, bbox, confidence });
      x += w + 0.28 * options.em;
    }
  });
  return { page, source: options.confidence === undefined ? 'text-layer' : 'tesseract', words };
}

const RECEIPT_LINES = [
  'BLUE BOTTLE COFFEE',
  '300 Webster St, Oakland, CA 94607',
  'Tel (510) 653-3394',
  'Nov 20, 2026 08:14 Register 2',
  'Cashier: Maria Order #4471',
  'Latte 1 x $5.25',
  'Croissant 2 x $4.50',
  'Cold Brew 1 x $5.50',
  'Drip Coffee 1 x $3.75',
  'Oat Milk 1 x $0.75',
  'Scone 1 x $4.25',
  'Subtotal $28.50',
  'Sales Tax $2.57',
  'Tip $4.00',
  'Total $35.07',
  'VISA **** 4242 $35.07',
  'Auth 08812Z Approved',
  'Thank you, come again!',
];

function receiptCase(): GroundInput {
  const words = [
    layout(1, { width: 576, height: 1400 }, RECEIPT_LINES, {
      top: 60,
      step: 40,
      em: 22,
      confidence: (i) => 0.86 + ((i * 7) % 13) / 100,
    }),
  ];
  const item = (description: string, quantity: number, price: number) => ({ description, quantity, price });
  const fieldSpecs: FieldSpec[] = [
    ...normaliseFields(registry.get('receipt')?.expectedFields ?? []),
    { name: 'address', type: 'string', required: false },
    { name: 'phone', type: 'string', required: false },
    { name: 'tip', type: 'number', required: false },
    { name: 'line_items', type: 'array', required: false },
  ];
  return {
    result: {
      merchant: 'Blue Bottle Coffee',
      date: '2026-11-20',
      subtotal: 28.5,
      tax: 2.57,
      total: 35.07,
      currency: 'USD',
      address: '300 Webster St, Oakland, CA 94607',
      phone: '(510) 653-3394',
      tip: 4,
      line_items: [
        item('Latte', 1, 5.25),
        item('Croissant', 2, 4.5),
        item('Cold Brew', 1, 5.5),
        item('Drip Coffee', 1, 3.75),
        item('Oat Milk', 1, 0.75),
        item('Scone', 1, 4.25),
      ],
    },
    fieldSpecs,
    words,
    nativeConfidence: 0.9,
    reviewThreshold: 0.8,
    now: new Date('2026-12-01T00:00:00Z'),
    budgetMs: 60_000,
  };
}

const PROSE = (
  'Payment is due within thirty days of the invoice date and late payments accrue interest of one percent per ' +
  'month on the outstanding balance. Goods remain the property of the vendor until paid in full, and any dispute ' +
  'must be raised in writing within 14 days of delivery, quoting the invoice number and the order reference. ' +
  'Services rendered under this agreement are billed monthly at the rates in schedule B, section 4.2, unless the ' +
  'parties agree otherwise in writing; hours are rounded to the nearest quarter and travel is charged at cost.'
).split(' ');

/** 20 pages of ~400 words each (40 lines of 10 words), the invoice's values on page 1 and its total on page 20. */
function longDocumentCase(): GroundInput {
  const words: PageWords[] = [];
  for (let p = 1; p <= 20; p++) {
    const lines: string[] = [];
    if (p === 1) lines.push('INVOICE', 'Invoice Number: INV-2001', 'Invoice Date: 2026-10-15', 'Vendor: Globex Ltd');
    for (let l = lines.length; l < 40; l++) {
      const start = (p * 53 + l * 10) % PROSE.length;
      lines.push(Array.from({ length: 10 }, (_, i) => PROSE[(start + i) % PROSE.length]).join(' '));
    }
    if (p === 20) lines.push('Due Date: 2026-11-14', 'Total Due: 1,250.00 USD');
    lines.push(`Page ${p} of 20`);
    words.push(layout(p, { width: 612, height: 792 }, lines, { top: 60, step: 17, em: 10 }));
  }
  return {
    result: {
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      dueDate: '2026-11-14',
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: 'USD',
    },
    fieldSpecs: normaliseFields(registry.get('invoice')?.expectedFields ?? []),
    words,
    nativeConfidence: 0.99,
    reviewThreshold: 0.8,
    now: new Date('2026-12-01T00:00:00Z'),
    budgetMs: 60_000,
  };
}

function measure(input: GroundInput, iterations: number): SyntheticCase {
  let t = performance.now();
  const grounded = groundFields(input);
  const firstMs = performance.now() - t;
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    t = performance.now();
    groundFields(input);
    samples.push(performance.now() - t);
  }
  return {
    pages: input.words.length,
    words: input.words.reduce((sum, page) => sum + page.words.length, 0),
    fields: Object.keys(input.result).length,
    firstMs: Math.round(firstMs * 10) / 10,
    ms: summarize(samples),
    confidence: grounded.confidence,
    reviewNeeded: grounded.review.needed,
    unsupported: grounded.unsupported,
  };
}

/** Times `groundFields` on the two cases (see the module comment). */
export function measureSyntheticGrounding(options: { iterations?: number } = {}): SyntheticGroundingResult {
  const iterations = options.iterations ?? 50;
  return {
    iterations,
    receipt: measure(receiptCase(), iterations),
    longDocument: measure(longDocumentCase(), iterations),
  };
}
