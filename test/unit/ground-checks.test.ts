/**
 * Cross-field checks of grounding (shared/fields/checks.ts, check-digits.ts): sums within a cent, line items, dates
 * that exist and are not in the future, due dates, IBAN and VAT check digits, and a bank statement's balance. A
 * failure names its fields in a review reason and lowers the confidence of the fields it blames.
 */
import { groundFields } from '../../shared/fields/ground.js';
import type { Grounded, GroundInput, PageWords } from '../../shared/fields/types.js';
import type { FieldSpec } from '../../shared/task.js';
import { layout } from '../support/grounding-corpus.js';

const NOW = new Date('2026-12-01T12:00:00Z');

function page(...texts: string[]): PageWords[] {
  return [
    layout(
      1,
      600,
      800,
      texts.map((text, i) => ({ text, x: 40, y: 60 + 20 * i, size: 10 })),
    ),
  ];
}

function ground(result: Record<string, unknown>, words: PageWords[], fieldSpecs: FieldSpec[] | null = null): Grounded {
  const input: GroundInput = { result, fieldSpecs, words, reviewThreshold: 0.8, now: NOW, nativeConfidence: 0.9 };
  return groundFields(input);
}

const RECEIPT = page('Subtotal 41.17', 'Tax 1.00', 'Total 42.17');

describe('subtotal + tax (+ tip) = total', () => {
  test('holds within a cent: no review', () => {
    expect(ground({ subtotal: 41.17, tax: 1, total: 42.17 }, RECEIPT).review.needed).toBe(false);
    expect(ground({ subtotal: 41.17, tax: 1.005, total: 42.17 }, RECEIPT).review.reasons).toEqual([]);
  });

  test('a cent and more off: review, the reason names the fields and their values', () => {
    const { review } = ground({ subtotal: 41.17, tax: 1, total: 42.19 }, RECEIPT);
    expect(review).toEqual({ needed: true, reasons: ['subtotal + tax ≠ total (41.17 + 1.00 ≠ 42.19)'] });
  });

  test('the member whose implied value the document prints under its label is blamed most', () => {
    const right = ground({ subtotal: 41.17, tax: 1, total: 42.17 }, RECEIPT).fields;
    const { fields } = ground({ subtotal: 41.17, tax: 1, total: 42.71 }, RECEIPT);
    expect(fields.total?.confidence).toBeLessThan(0.2);
    expect(fields.subtotal?.confidence).toBeLessThan(right.subtotal?.confidence ?? 0);
    expect(fields.subtotal?.confidence).toBeGreaterThan(0.8);
  });

  test('a tip, shipping and a discount are part of the sum', () => {
    const words = page('Subtotal 20.00', 'Discount -2.00', 'Tax 1.60', 'Tip 3.00', 'Total 22.60');
    const result = { subtotal: 20, discount: -2, tax: 1.6, tip: 3, total: 22.6 };
    expect(ground(result, words).review.reasons).toEqual([]);
    expect(ground({ ...result, tip: 4 }, words).review.reasons).toEqual([
      'subtotal + tax + tip − discount ≠ total (20.00 + 1.60 + 4.00 − 2.00 ≠ 22.60)',
    ]);
  });

  test('registry names with other spellings take part (totalAmount, taxAmount, sub_total)', () => {
    const { review } = ground({ sub_total: 41.17, taxAmount: 1, totalAmount: 40 }, RECEIPT);
    expect(review.reasons).toEqual(['sub_total + taxAmount ≠ totalAmount (41.17 + 1.00 ≠ 40.00)']);
  });
});

describe('line items', () => {
  const words = page('Hammer 1 x 18.50', 'Screws 2 x 10.00', 'Subtotal 38.50', 'Tax 4.00', 'Total 42.50');
  const items = [
    { description: 'Hammer', quantity: 1, price: 18.5 },
    { description: 'Screws', quantity: 2, price: 10 },
  ];

  test('summing (price × quantity) to the subtotal: no review', () => {
    expect(ground({ subtotal: 38.5, tax: 4, total: 42.5, line_items: items }, words).review.reasons).toEqual([]);
  });

  test('summing to the total when there is no subtotal, tax included or not', () => {
    const amounts = [{ amount: 18.5 }, { amount: 20 }];
    expect(ground({ total: 38.5, items: amounts }, words).review.reasons).toEqual([]);
    expect(ground({ tax: 4, total: 42.5, items: amounts }, words).review.reasons).toEqual([]);
  });

  test('not summing: a reason, and the item whose amount is printed nowhere is the one blamed', () => {
    const wrong = [items[0], { description: 'Screws', quantity: 2, price: 11 }];
    const { review, fields } = ground({ subtotal: 38.5, tax: 4, total: 42.5, line_items: wrong }, words);
    expect(review.reasons).toEqual(['sum of line_items ≠ subtotal (40.50 ≠ 38.50)']);
    const [first, second] = fields.line_items?.items ?? [];
    expect(second?.price?.confidence).toBeLessThan(0.2);
    expect(first?.price?.confidence).toBeGreaterThan(0.8);
  });
});

describe('dates', () => {
  const specs: FieldSpec[] = [
    { name: 'date', type: 'date', required: true },
    { name: 'total', type: 'number', required: true },
  ];

  test('a date that does not exist', () => {
    const { review, fields } = ground({ date: '2026-02-30', total: 1 }, page('Date 2026-02-30', 'Total 1.00'), specs);
    expect(review.reasons).toContain('date: not a real date (2026-02-30)');
    expect(fields.date?.confidence).toBeLessThan(0.5);
  });

  test('a receipt dated after today (a day of slack for time zones)', () => {
    const future = ground({ date: '2026-12-24', total: 1 }, page('Date 2026-12-24', 'Total 1.00'), specs);
    expect(future.review.reasons).toContain('date: in the future (2026-12-24)');
    const tomorrow = ground({ date: '2026-12-02', total: 1 }, page('Date 2026-12-02', 'Total 1.00'), specs);
    expect(tomorrow.review.reasons).toEqual([]);
  });

  test('a due date, an expiry date, or an event date without amounts may be in the future', () => {
    const words = page('Due 2027-01-15', 'Expires 2030-01-01', 'Concert 2027-03-01');
    expect(ground({ dueDate: '2027-01-15', expiryDate: '2030-01-01' }, words).review.reasons).toEqual([]);
    expect(ground({ date: '2027-03-01' }, words).review.reasons).toEqual([]);
    expect(ground({ invoiceDate: '2027-01-15' }, words).review.reasons).toEqual([
      'invoiceDate: in the future (2027-01-15)',
    ]);
  });

  test('a due date before the invoice date; a period that ends before it starts', () => {
    const words = page('Invoice Date 2026-10-15', 'Due Date 2026-09-15');
    expect(ground({ invoiceDate: '2026-10-15', dueDate: '2026-09-15' }, words).review.reasons).toEqual([
      'dueDate before invoiceDate (2026-09-15 < 2026-10-15)',
    ]);
    const period = { statementPeriodStart: '2026-10-01', statementPeriodEnd: '2026-09-30' };
    expect(ground(period, page('2026-10-01 to 2026-09-30')).review.reasons).toEqual([
      'statementPeriodEnd before statementPeriodStart (2026-09-30 < 2026-10-01)',
    ]);
  });
});

describe('check digits', () => {
  test.each([
    ['iban', 'DE89 3704 0044 0532 0130 00', true],
    ['iban', 'GB82 WEST 1234 5698 7654 32', true],
    ['iban', 'DE89 3704 0044 0532 0130 01', false],
    ['accountNumber', 'GB82WEST12345698765433', false],
    ['accountNumber', '12345678', true],
    ['vatNumber', 'DE136695976', true],
    ['vatNumber', 'DE136695977', false],
    ['vat_id', 'GB 980 7806 84', true],
    ['vat_id', 'GB 980 7806 85', false],
    ['vatNumber', 'FR40303265045', true],
  ])('%s %s passes: %p', (name, value, passes) => {
    const { review } = ground({ [name]: value }, page(value));
    const kind = name === 'iban' || name === 'accountNumber' ? 'IBAN' : 'VAT number';
    expect(review.reasons).toEqual(passes ? [] : [`${name}: ${kind} check digits fail`]);
  });
});

describe('a bank statement', () => {
  const words = page('Opening balance 100.00', 'Coffee -4.50', 'Salary 1,000.00', 'Closing balance 1,095.50');
  const transactions = [
    { date: '2026-10-02', description: 'Coffee', amount: -4.5 },
    { date: '2026-10-03', description: 'Salary', amount: 1000 },
  ];

  test('opening balance + signed transactions = closing balance', () => {
    const result = { openingBalance: 100, closingBalance: 1095.5, transactions };
    expect(ground(result, words).review.reasons).toEqual([]);
    expect(ground({ ...result, closingBalance: 1059.5 }, words).review.reasons).toEqual([
      'openingBalance + sum of transactions ≠ closingBalance (100.00 + 995.50 ≠ 1059.50)',
    ]);
  });

  test('a transaction date that does not exist', () => {
    const wrong = [{ ...transactions[0], date: '2026-10-32' }, transactions[1]];
    const { review, fields } = ground({ transactions: wrong }, words);
    expect(review.reasons).toEqual(['transactions[0].date: not a real date (2026-10-32)']);
    expect(fields.transactions?.items?.[0]?.date?.confidence).toBeLessThan(0.2);
  });
});
