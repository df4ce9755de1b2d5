/** How grounding reads printed text (shared/fields/normalize.ts): tokens, amounts and dates in their notations. */
import {
  amountKey,
  formatAmount,
  nameTokens,
  numericDates,
  parseAmount,
  parseDateValue,
  tokens,
} from '../../shared/fields/normalize.js';

describe('tokens', () => {
  test('case, punctuation and diacritics are folded away', () => {
    expect(tokens('Street,')).toEqual(['street']);
    expect(tokens('Café  Müller — Zürich')).toEqual(['cafe', 'muller', 'zurich']);
    expect(tokens('INV-1042')).toEqual(['inv', '1042']);
    expect(tokens('$42.17')).toEqual(['42', '17']);
    expect(tokens('—')).toEqual([]);
  });

  test('field names split into words in any casing', () => {
    expect(nameTokens('invoiceNumber')).toEqual(['invoice', 'number']);
    expect(nameTokens('line_items')).toEqual(['line', 'items']);
    expect(nameTokens('VATNumber')).toEqual(['vat', 'number']);
    expect(nameTokens('statementPeriodStart')).toEqual(['statement', 'period', 'start']);
  });
});

describe('parseAmount', () => {
  test.each([
    ['42.17', [42.17]],
    ['$42.17', [42.17]],
    ['42,17', [42.17]],
    ['€42,17', [42.17]],
    ['EUR 42,17', [42.17]],
    ['1,234.50', [1234.5]],
    ['1.234,50', [1234.5]],
    ['1 234,50', [1234.5]],
    ["1'234.50", [1234.5]],
    ['(42.17)', [-42.17]],
    ['-42.17', [-42.17]],
    ['42.17-', [-42.17]],
    ['Total:', []],
    ['2026-11-02', []],
    ['INV-1042', []],
    ['42.', []],
  ])('%s → %p', (printed, expected) => {
    expect(parseAmount(printed)).toEqual(expected);
  });

  test('an ambiguous separator yields both readings, never a guess', () => {
    expect(parseAmount('1,234').sort()).toEqual([1.234, 1234].sort());
    expect(parseAmount('1.234').sort()).toEqual([1.234, 1234].sort());
  });

  test('equal amounts share a key whatever their floating point noise', () => {
    expect(amountKey(41.17 + 1)).toBe(amountKey(42.17));
    expect(amountKey(42.5)).toBe(amountKey(42.5));
    expect(amountKey(42.5)).not.toBe(amountKey(42.51));
  });

  test('amounts in reasons have two decimals', () => {
    expect(formatAmount(41.17)).toBe('41.17');
    expect(formatAmount(1)).toBe('1.00');
    expect(formatAmount(0.125)).toBe('0.125');
  });
});

describe('dates', () => {
  test.each([
    ['2026-11-20', ['2026-11-20']],
    ['20/11/2026', ['2026-11-20']],
    ['11/20/2026', ['2026-11-20']],
    ['20.11.2026', ['2026-11-20']],
    ['11/20/26', ['2026-11-20']],
    ['Nov 20, 2026', ['2026-11-20']],
    ['November 20th 2026', ['2026-11-20']],
    ['20 November 2026', ['2026-11-20']],
    ['20-Nov-2026', ['2026-11-20']],
    ['20 novembre 2026', ['2026-11-20']],
  ])('the value %s means %p', (printed, expected) => {
    expect(parseDateValue(printed)).toEqual(expected);
  });

  test('day and month both ≤ 12: both readings', () => {
    expect(parseDateValue('02/11/2026').sort()).toEqual(['2026-02-11', '2026-11-02']);
  });

  test('a date that does not exist, or text around a date, is no date value', () => {
    expect(parseDateValue('2026-02-30')).toEqual([]);
    expect(parseDateValue('31/02/2026')).toEqual([]);
    expect(parseDateValue('due 2026-11-20')).toEqual([]);
    expect(parseDateValue('x'.repeat(1_000_000))).toEqual([]);
  });

  test('numeric dates are found inside a word (an OCR word with its label fused)', () => {
    expect(numericDates('Date:2026-11-02')).toEqual([{ text: '2026-11-02', readings: ['2026-11-02'] }]);
  });
});
