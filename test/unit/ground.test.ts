/**
 * Grounding a result on its words (shared/fields/ground.ts): where each value stands (multi-word values, notations,
 * labels, items), the signals of its confidence, review reasons, the aggregate, and bad input within the budget.
 */
import { BUDGET_REASON, groundFields, groundWithClock } from '../../shared/fields/ground.js';
import type { GroundInput, PageWords } from '../../shared/fields/types.js';
import type { FieldSpec } from '../../shared/task.js';
import { cafeWords, type Line, layout, receiptWords } from '../support/grounding-corpus.js';

const NOW = new Date('2026-12-01T12:00:00Z');

function input(result: Record<string, unknown>, words: PageWords[], extra: Partial<GroundInput> = {}): GroundInput {
  return { result, fieldSpecs: null, words, reviewThreshold: 0.8, now: NOW, nativeConfidence: 0.9, ...extra };
}

/** One text-layer page of lines, each 20 points below the last. */
function page(n: number, ...texts: string[]): PageWords {
  const lines: Line[] = texts.map((text, i) => ({ text, x: 40, y: 60 + 20 * i, size: 10 }));
  return layout(n, 600, 800, lines);
}

const spec = (name: string, type: FieldSpec['type'], required = false): FieldSpec => ({ name, type, required });

describe('where a value stands', () => {
  test('a value over several words is found across them: the union of their boxes, its page, the printed text', () => {
    const { fields } = groundFields(input({ merchant: 'Blue Bottle Coffee' }, cafeWords));
    const words = cafeWords[0]?.words.slice(0, 3) ?? [];
    expect(fields.merchant).toMatchObject({
      page: 1,
      source: 'Blue Bottle Coffee',
      bbox: [words[0]?.bbox[0], words[0]?.bbox[1], words[2]?.bbox[2], words[2]?.bbox[3]],
    });
  });

  test('a name whose spaces OCR lost or moved is found, as the same value', () => {
    const words = [page(1, 'GARDENIABAKERIES (KL)SDNBHD', 'SUBANG H EALTHCARE SDN BHD')];
    const { fields } = groundFields(
      input({ a: 'Gardenia Bakeries (KL) Sdn Bhd', b: 'SUBANG HEALTHCARE SDN BHD', c: 'Gardenia Healthcare' }, words),
    );
    expect(fields.a?.source).toBe('GARDENIABAKERIES (KL)SDNBHD');
    expect(fields.b?.source).toBe('SUBANG H EALTHCARE SDN BHD');
    expect(fields.a?.confidence).toBeGreaterThan(0.9);
    expect(fields.c?.bbox).toBeUndefined();
  });

  test("a name the reader's look-alike slips were undone in is found where they are printed, below an exact one", () => {
    const words = [page(1, 'URBAN 1DEA SON BHD', 'GOLDEN SC0OP SDN BHD', 'ACME 5TORES')];
    const { fields } = groundFields(
      input({ a: 'URBAN IDEA SDN BHD', b: 'Golden Scoop Sdn Bhd', c: 'ACME STORES', d: 'URBAN IDEAL SDN BHD' }, words),
    );
    expect(fields.a?.source).toBe('URBAN 1DEA SON BHD');
    expect(fields.b?.source).toBe('GOLDEN SC0OP SDN BHD');
    expect(fields.c?.source).toBe('ACME 5TORES');
    // A different letter is no look-alike: at best an approximate match of most words.
    expect(fields.d?.confidence).toBeLessThan(0.7);
    const exact = groundFields(input({ a: 'URBAN 1DEA SON BHD' }, words)).fields.a?.confidence ?? 0;
    expect(fields.a?.confidence).toBeGreaterThan(0.8);
    expect(fields.a?.confidence).toBeLessThan(exact);
  });

  test('punctuation splits, case and diacritics do not hide a value', () => {
    const words = [page(1, 'CAFÉ MÜLLER', '12 Main Street, Springfield')];
    const { fields } = groundFields(input({ name: 'Cafe Muller', address: '12 Main Street Springfield' }, words));
    expect(fields.name?.source).toBe('CAFÉ MÜLLER');
    expect(fields.address?.source).toBe('12 Main Street, Springfield');
  });

  test('the page is the page of the whole document the words are on', () => {
    const words = [page(1, 'Cover letter'), page(2, 'Terms'), page(3, 'Invoice Number: INV-7')];
    expect(groundFields(input({ invoiceNumber: 'INV-7' }, words)).fields.invoiceNumber?.page).toBe(3);
  });

  test('an exact match wins over an earlier normalised one', () => {
    const words = [page(1, 'Acme Hardware catalogue'), page(2, 'ACME HARDWARE')];
    expect(groundFields(input({ merchant: 'ACME HARDWARE' }, words)).fields.merchant?.page).toBe(2);
  });

  test.each([
    ['42.17', 42.17, '42.17'],
    ['$42.17', 42.17, '$42.17'],
    ['42,17 €', 42.17, '42,17 €'],
    ['1,234.50', 1234.5, '1,234.50'],
    ['(42.17)', -42.17, '(42.17)'],
    ['Debit 42.17', -42.17, '42.17'],
    // A currency in letters glued to the amount, as receipts print it or OCR reads it, also after a fused label.
    ['RM53.60', 53.6, 'RM53.60'],
    ['USD42.17', 42.17, 'USD42.17'],
    ['GST:RM78.30', 78.3, 'GST:RM78.30'],
  ])('the amount printed %s is found for the value %p', (printed, value, source) => {
    const { fields } = groundFields(input({ amount: value }, [page(1, `Amount ${printed}`)]));
    expect(fields.amount?.source).toBe(source);
  });

  test('a number is never found inside a longer amount, but a whole number may be a piece of an id', () => {
    const words = [page(1, 'Total 38.50', 'Order INV-1042')];
    const { fields, unsupported } = groundFields(input({ total: 38, order: 1042 }, words));
    expect(fields.total?.bbox).toBeUndefined();
    expect(unsupported).toEqual(['total']);
    expect(fields.order?.source).toBe('INV-1042');
  });

  test('letters glued before digits are a currency only before an amount with cents: INV1042 is no amount 1042', () => {
    expect(groundFields(input({ total: 1042 }, [page(1, 'Order INV1042')])).unsupported).toEqual(['total']);
    expect(groundFields(input({ total: 1042 }, [page(1, 'Total RM1042.00')])).fields.total?.source).toBe('RM1042.00');
  });

  test.each([
    ['2026-11-20', 'Issued Nov 20, 2026', 'Nov 20, 2026'],
    ['2026-11-20', 'Issued 20/11/2026', '20/11/2026'],
    ['2026-11-20', 'Issued 20 November 2026', '20 November 2026'],
    ['Nov 20, 2026', 'Issued 2026-11-20', '2026-11-20'],
    ['20/11/2026', 'Issued 11/20/2026', '11/20/2026'],
    // OCR lost the space between the date and the time.
    ['2018-04-27', 'Printed 27-04-1816:40 T1', '27-04-1816:40'],
    ['2019-01-23', 'Printed 23-01-201913:14:15 PM', '23-01-201913:14:15'],
    ['2018-06-11', 'UNIHAKKA 11 Jun 201818:32', '11 Jun 201818:32'],
  ])('the date %s is found where the document prints %s', (value, line, source) => {
    const { fields } = groundFields(input({ date: value }, [page(1, line)], { fieldSpecs: [spec('date', 'date')] }));
    expect(fields.date?.source).toBe(source);
  });

  test('a value printed in several places: the one under a label like the field name ("Total", not "Subtotal")', () => {
    const words = [page(1, 'Subtotal 42.50', 'Tax 0.00', 'Total 42.50')];
    const { fields } = groundFields(input({ total: 42.5 }, words));
    expect(fields.total?.bbox?.[1]).toBeCloseTo(words[0]?.words.at(-1)?.bbox[1] ?? 0, 4);
  });

  test('without a label to tell them apart, the first place', () => {
    const words = [page(1, 'Ref 77 Ref 77')];
    const { fields } = groundFields(input({ ref: 77 }, words));
    expect(fields.ref?.bbox?.[0]).toBeCloseTo(words[0]?.words[1]?.bbox[0] ?? 0, 4);
  });

  test('a currency code is supported by its sign', () => {
    const { fields } = groundFields(input({ currency: 'EUR' }, [page(1, 'Total 42,17 €')]));
    expect(fields.currency?.source).toBe('€');
  });

  test('a long text matches approximately (most of its tokens close together), scoring below an exact match', () => {
    const words = [page(1, '300 Webster St, Oakland, CA 94607')];
    const { fields } = groundFields(
      input({ exact: '300 Webster St, Oakland, CA 94607', near: '300 Webster Street, Oakland CA 94607' }, words),
    );
    expect(fields.near?.source).toBe('300 Webster St, Oakland, CA 94607');
    expect(fields.near?.confidence).toBeLessThan(fields.exact?.confidence ?? 0);
    const far = groundFields(input({ address: '12 Harbour Road, Oakland CA' }, words));
    expect(far.fields.address?.bbox).toBeUndefined();
  });

  test('a value printed nowhere: no box, a low confidence, listed as unsupported', () => {
    const { fields, unsupported } = groundFields(input({ merchant: 'Home Depot', paid: true }, receiptWords));
    expect(fields.merchant).toEqual({ confidence: expect.any(Number) });
    expect(fields.merchant?.confidence).toBeLessThan(0.3);
    expect(unsupported).toEqual(['merchant']);
  });

  test('the source is at most 500 characters', () => {
    const long = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
    const { fields } = groundFields(input({ notes: long }, [page(1, long)]));
    expect(fields.notes?.source).toHaveLength(500);
  });
});

describe('items of an array of objects', () => {
  const words = [page(1, 'Screws 2 x 10.00', 'Hammer 1 x 18.50', 'Screws 1 x 4.00', 'Total 1 item')];
  const result = {
    line_items: [
      { description: 'Screws', quantity: 2, price: 10 },
      { description: 'Hammer', quantity: 1, price: 18.5 },
      { description: 'Screws', quantity: 1, price: 4 },
    ],
  };

  test('each item is grounded on its own line, repeated descriptions in order', () => {
    const { fields } = groundFields(input(result, words));
    const lineTop = (i: number) => words[0]?.words[4 * i]?.bbox[1];
    const items = fields.line_items?.items ?? [];
    expect(items).toHaveLength(3);
    items.forEach((item, i) => {
      for (const key of ['description', 'quantity', 'price'])
        expect(item[key]?.bbox?.[1]).toBeCloseTo(lineTop(i) ?? -1, 4);
    });
  });

  test('the array has no box; its confidence is the mean of its items', () => {
    const { fields } = groundFields(input(result, words));
    const all = (fields.line_items?.items ?? []).flatMap((item) => Object.values(item).map((e) => e.confidence));
    expect(fields.line_items?.bbox).toBeUndefined();
    expect(fields.line_items?.confidence).toBeCloseTo(all.reduce((a, b) => a + b, 0) / all.length, 2);
  });

  test('an item value printed nowhere makes the array unsupported', () => {
    const wrong = { line_items: [{ description: 'Nails', quantity: 2, price: 10 }] };
    expect(groundFields(input(wrong, words)).unsupported).toEqual(['line_items']);
  });
});

describe('the signals of a field confidence', () => {
  const words = [page(1, 'Invoice Number: INV-2001')];

  test('the reader confidence of the matched words counts', () => {
    const sure = groundFields(
      input({ id: 'INV-2001' }, [layout(1, 600, 800, [{ text: 'INV-2001', x: 0, y: 20, size: 10 }], 0.99)]),
    );
    const unsure = groundFields(
      input({ id: 'INV-2001' }, [layout(1, 600, 800, [{ text: 'INV-2001', x: 0, y: 20, size: 10 }], 0.4)]),
    );
    expect(unsure.fields.id?.confidence).toBeLessThan(sure.fields.id?.confidence ?? 0);
  });

  test('the provider native confidence counts, but never vouches alone for a value printed nowhere', () => {
    const high = groundFields(input({ id: 'INV-2001', other: 'INV-9' }, words, { nativeConfidence: 1 }));
    const low = groundFields(input({ id: 'INV-2001' }, words, { nativeConfidence: 0.2 }));
    expect(low.fields.id?.confidence).toBeLessThan(high.fields.id?.confidence ?? 0);
    expect(high.fields.other?.confidence).toBeLessThanOrEqual(0.25);
  });

  test('a value not of its field type scores lower (an object where a string was expected)', () => {
    const specs = [spec('id', 'string'), spec('ref', 'string')];
    const { fields } = groundFields(input({ id: 'INV-2001', ref: { id: 'INV-2001' } }, words, { fieldSpecs: specs }));
    expect(fields.ref?.bbox).toBeUndefined();
    expect(fields.ref?.confidence).toBeLessThan(fields.id?.confidence ?? 0);
  });

  test('conflicting values from other chunks are kept and lower the confidence', () => {
    const alternatives = { id: [{ value: 'INV-2002', page: 3 }] };
    const plain = groundFields(input({ id: 'INV-2001' }, words));
    const doubted = groundFields(input({ id: 'INV-2001' }, words, { alternatives }));
    expect(doubted.fields.id?.alternatives).toEqual([{ value: 'INV-2002', page: 3 }]);
    expect(doubted.fields.id?.confidence).toBeLessThan(plain.fields.id?.confidence ?? 0);
  });

  test("an alternative a chunk of several pages read is given the page it is printed on, or none, never the chunk's first", () => {
    const pages = [page(51, 'Filler text only'), page(52, 'More filler'), page(55, 'Invoice: INV-2002')];
    const alternatives = { id: [{ value: 'INV-2002' }, { value: 'INV-9999' }] };
    const { fields } = groundFields(input({ id: 'INV-2001' }, pages, { alternatives }));
    expect(fields.id?.alternatives).toEqual([{ value: 'INV-2002', page: 55 }, { value: 'INV-9999' }]);
  });

  test('a value printed only under another field label is suspect', () => {
    const receipt = [page(1, 'Subtotal: 38.50', 'Total: 42.50')];
    const { fields } = groundFields(input({ subtotal: 38.5, total: 38.5 }, receipt));
    expect(fields.total?.confidence).toBeLessThan(fields.subtotal?.confidence ?? 0);
  });

  test('a tax the label says the amount includes or leaves out does not make it a tax label', () => {
    const total = (label: string) => {
      const receipt = [page(1, 'Subtotal 46.54', 'GST 6% 2.63', 'Rounding Adj 0.01', `${label} 46.55`)];
      return groundFields(input({ subtotal: 46.54, tax: 2.63, total: 46.55 }, receipt)).fields.total?.confidence;
    };
    const plain = total('Amount Payable');
    for (const label of ['Total After Adj Incl GST', 'Total Incl. of GST', 'Amount Excl VAT']) {
      expect(total(label)).toBeCloseTo(plain ?? 0, 3);
    }
    // The tax itself, labelled, is still a tax label: a total printed only there is suspect.
    expect(total('Adj GST')).toBeLessThan(plain ?? 0);
  });

  test('booleans have no box; their confidence is the native one', () => {
    const { fields, unsupported } = groundFields(input({ paid: true }, words, { nativeConfidence: 0.7 }));
    expect(fields.paid).toEqual({ confidence: 0.7 });
    expect(unsupported).toEqual([]);
  });
});

describe('review and the run confidence', () => {
  const fieldSpecs = [spec('merchant', 'string', true), spec('total', 'number', true), spec('currency', 'string')];

  test('a required field below the threshold, and a missing one, need review with their names', () => {
    const { review } = groundFields(
      input({ merchant: 'Home Depot', total: null, currency: null }, receiptWords, { fieldSpecs }),
    );
    expect(review).toEqual({ needed: true, reasons: ['merchant: below 0.8 (0.23)', 'total: missing'] });
  });

  test('optional fields below the threshold do not need review', () => {
    const { review } = groundFields(
      input({ merchant: 'ACME HARDWARE', total: 42.5, currency: 'JPY' }, receiptWords, { fieldSpecs }),
    );
    expect(review).toEqual({ needed: false, reasons: [] });
  });

  test('the run confidence: required fields weigh twice, null optional ones not at all, 3 decimals', () => {
    const grounded = groundFields(
      input({ merchant: 'ACME HARDWARE', total: 99, currency: null }, receiptWords, { fieldSpecs }),
    );
    const { merchant, total, currency } = grounded.fields;
    expect(currency?.confidence).toBe(0.5);
    const expected = Math.round(((2 * (merchant?.confidence ?? 0) + 2 * (total?.confidence ?? 0)) / 4) * 1000) / 1000;
    expect(grounded.confidence).toBe(expected);
  });

  test('with no field to weigh, the run confidence is the native one', () => {
    expect(groundFields(input({ note: null }, receiptWords, { nativeConfidence: 0.654321 })).confidence).toBe(0.654);
  });
});

describe('bad input stays within the budget and never throws', () => {
  test('no time left: every field skipped with a reason, none reported unsupported', () => {
    const fieldSpecs = [spec('merchant', 'string', true), spec('total', 'number')];
    const grounded = groundFields(
      input({ merchant: 'ACME HARDWARE', total: 42.5 }, receiptWords, { fieldSpecs, budgetMs: 0 }),
    );
    expect(grounded.fields).toEqual({ merchant: { confidence: 0.45 }, total: { confidence: 0.45 } });
    expect(grounded.unsupported).toEqual([]);
    expect(grounded.review.reasons).toEqual([BUDGET_REASON, 'merchant: below 0.8 (0.45)']);
  });

  test('the budget running out mid-way: the fields before it are grounded, the rest skipped', () => {
    const result = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field${i}`, 'ACME HARDWARE']));
    let calls = 0;
    const clock = () => (calls++ < 40 ? 0 : 1_000);
    const grounded = groundWithClock(input(result, receiptWords, { budgetMs: 100 }), clock);
    expect(grounded.fields.field0?.source).toBe('ACME HARDWARE');
    expect(grounded.fields.field199).toEqual({ confidence: 0.45 });
    expect(grounded.review.reasons).toContain(BUDGET_REASON);
  });

  test('a 1 MB value is not looked for; the other fields are grounded', () => {
    const grounded = groundFields(input({ notes: 'x'.repeat(1_000_000), merchant: 'ACME HARDWARE' }, receiptWords));
    expect(grounded.fields.notes?.bbox).toBeUndefined();
    expect(grounded.fields.merchant?.source).toBe('ACME HARDWARE');
    expect(grounded.review.reasons).toContain('notes: grounding skipped (value too long)');
  });

  test('a schema of 200 fields gets one entry per field', () => {
    const fieldSpecs = Array.from({ length: 200 }, (_, i) => spec(`f${i}`, i % 2 === 0 ? 'number' : 'string'));
    const result = Object.fromEntries(
      fieldSpecs.map((s, i) => [s.name, i % 3 === 0 ? null : i % 2 === 0 ? i : { x: i }]),
    );
    const grounded = groundFields(input(result, receiptWords, { fieldSpecs }));
    expect(Object.keys(grounded.fields)).toHaveLength(200);
  });

  test('malformed words and a result of odd shapes are grounded as far as they go', () => {
    const words = [{ page: 1, source: 'tesseract', words: [{ text: 5 }, null, { text: 'ok', bbox: [0, 0, 1, 1] }] }];
    const grounded = groundFields(
      input({ a: 'ok', b: [1, [2]], c: { d: { e: 'ok' } }, d: Number.NaN }, words as unknown as PageWords[]),
    );
    expect(grounded.fields.a?.source).toBe('ok');
    expect(Object.keys(grounded.fields)).toEqual(['a', 'b', 'c', 'd']);
  });
});

test('a box is always within the page, whatever a reader reported', () => {
  const words: PageWords[] = [
    { page: 1, source: 'textract', words: [{ text: 'ACME', bbox: [-0.01, 0.2, 1.02, Number.NaN], confidence: 0.9 }] },
  ];
  expect(groundFields(input({ merchant: 'ACME' }, words)).fields.merchant?.bbox).toEqual([0, 0.2, 1, 0]);
});

describe("the provider's confidence in one value", () => {
  test('a value the model was unsure of (its logprobs) scores below the same value it was sure of', () => {
    const words = [page(1, 'Total 42.50', 'Vendor ACME')];
    const result = { total: 42.5, vendor: 'ACME' };
    const sure = groundFields(input(result, words, { valueConfidence: { total: 0.99 } }));
    const unsure = groundFields(input(result, words, { valueConfidence: { total: 0.2 } }));
    expect(unsure.fields.total?.confidence).toBeLessThan(sure.fields.total?.confidence ?? 0);
    // The other value keeps the answer's overall confidence.
    expect(unsure.fields.vendor?.confidence).toBe(sure.fields.vendor?.confidence);
  });

  test('the page never lifts a value above the doubt its provider has in it: a doubted required value goes to review', () => {
    const words = [page(1, 'ACME SDN BHD', 'Total 42.50')];
    const fieldSpecs = [spec('vendor', 'string', true), spec('total', 'number', true)];
    const result = { vendor: 'ACME SDN BHD', total: 42.5 };
    const doubted = groundFields(input(result, words, { fieldSpecs, valueConfidence: { vendor: 0.6, total: 0.99 } }));
    expect(doubted.fields.vendor?.confidence).toBe(0.6);
    expect(doubted.review.reasons).toEqual(['vendor: below 0.8 (0.60)']);
    // What the page shows still lowers it: a value printed nowhere stays at most 0.25 × the provider's confidence.
    const unprinted = groundFields(input({ vendor: 'GLOBEX LTD' }, words, { valueConfidence: { vendor: 0.99 } }));
    expect(unprinted.fields.vendor?.confidence).toBeLessThanOrEqual(0.25);
  });
});
