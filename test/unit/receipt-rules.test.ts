/**
 * The local provider's layout rules on receipt-like pages written here (not copies of any dataset receipt): each page
 * is lines of text laid out as an engine would read them (one word per token, monospace boxes, one row per line), so
 * the rules see rows, amounts at the right edge and print sizes as on paper.
 * Over 400 lines: every rule (total, date, merchant, tax, currency) is driven through the one page builder below.
 */
import type { EvidenceWord } from '../../shared/fields/types.js';
import { readingRows } from '../../shared/providers/local/layout.js';
import { extractWithLayout } from '../../shared/providers/local/layout-fields.js';
import { findDate } from '../../shared/providers/local/receipt-dates.js';
import { findMerchant } from '../../shared/providers/local/receipt-merchant.js';
import { findCurrency, findTax, findTotal } from '../../shared/providers/local/receipt-rules.js';
import type { FieldSpec } from '../../shared/task.js';

const NOW = new Date('2026-11-28T12:00:00Z');
const WIDTH = 48;
const LINE = 1 / 60;

/**
 * A page from lines: `text` (its leading spaces an indent), or `{text, size}` for larger print. A run of 3+ spaces
 * inside a line is a tab stop (the amount column): the rest of the line is right-aligned.
 */
function page(lines: (string | { text: string; size: number })[]): EvidenceWord[] {
  const words: EvidenceWord[] = [];
  let y = 0.02;
  for (const line of lines) {
    const { text, size } = typeof line === 'string' ? { text: line, size: 1 } : line;
    const indent = text.length - text.trimStart().length;
    const [left = '', right] = text.trimStart().split(/ {3,}/);
    const place = (part: string, start: number) => {
      let at = start;
      for (const token of part.split(' ')) {
        if (token !== '') {
          const x0 = (at * size) / WIDTH;
          words.push({
            text: token,
            bbox: [x0, y, x0 + (token.length * size) / WIDTH, y + LINE * size * 0.8],
            confidence: 0.97,
          });
        }
        at += token.length + 1;
      }
    };
    place(left, indent);
    if (right !== undefined) place(right, WIDTH / size - right.length);
    y += LINE * size;
  }
  return words;
}

const rows = (lines: Parameters<typeof page>[0]) => readingRows(page(lines));

describe('total', () => {
  test('the amount a total keyword labels, not the subtotal, the tax or a count', () => {
    const found = findTotal(
      rows([
        'Item A   12.00',
        'Item B   28.09',
        'Qty: 2   ',
        'SUBTOTAL   40.09',
        'GST 6%   2.41',
        'TOTAL (INCL GST)   RM 42.50',
        'CASH   RM 50.00',
        'CHANGE   RM 7.50',
      ]),
    );
    expect(found?.value).toBe(42.5);
    expect(found?.signals.agreesPaid).toBe(1);
  });

  test('the rounded total the customer paid, not the total before rounding', () => {
    const found = findTotal(
      rows(['TOTAL   181.98', 'ROUNDING ADJ   0.02', 'TOTAL ROUNDED   182.00', 'CASH   200.00', 'CHANGE   18.00']),
    );
    expect(found?.value).toBe(182);
  });

  test('a total printed under its label, with a currency sign', () => {
    expect(findTotal(rows(['Espresso   3.50', 'Croissant   4.00', 'AMOUNT DUE', '$7.50']))?.value).toBe(7.5);
  });

  test('a tax summary after the payment does not replace the total', () => {
    const found = findTotal(
      rows([
        'Nett Total   RM 37.10',
        'Cash   RM 50.00',
        'Change   RM 12.90',
        'Tax Summary   Amount  Tax',
        'Total   35.00   2.10',
      ]),
    );
    expect(found?.value).toBe(37.1);
  });

  test('in other languages and with a decimal comma', () => {
    expect(findTotal(rows(['Zwischensumme   8,40', 'MwSt 19%   1,60', 'Gesamtbetrag   10,00 €']))?.value).toBe(10);
    expect(findTotal(rows(['Sous-total   8,40', 'TVA 20%   1,60', 'Total TTC   10,00 EUR']))?.value).toBe(10);
  });

  test('no total keyword: what was paid, cash less change', () => {
    expect(findTotal(rows(['Noodles   9.00', 'Tea   2.50', 'Cash   20.00', 'Change   8.50']))?.value).toBe(11.5);
  });

  test('a cash rounding adjustment is not the cash tendered: the payment still confirms the total', () => {
    const lines = ['Total (Eat In)   RM24.00', 'Cash Rounding   -RM0.01', 'Cash   RM30.00', 'Change   RM6.00'];
    expect(findTotal(rows(lines))?.signals.agreesPaid).toBe(1);
    expect(findTotal(rows(['Noodles   9.00', 'Rounding   0.00', 'Cash   20.00', 'Change   8.50']))?.value).toBe(11.5);
  });

  test('a till that prints the cash tendered as a deduction: cash less change still confirms the total', () => {
    const found = findTotal(rows(['Noodles   14.35', 'TOTAL   17.35', 'CASH   -20.00', 'CHANGE   2.65']));
    expect(found?.value).toBe(17.35);
    expect(found?.signals.agreesPaid).toBe(1);
  });

  test("a credit note's total payable is negative; a negative amount under a plain or excluded label is no total", () => {
    const credit = ['Bread   2.50', 'Returned: Cake   -8.00', 'Total supplies   2.50', 'Total Payable:   -5.50'];
    expect(findTotal(rows(credit))?.value).toBe(-5.5);
    expect(findTotal(rows(['TOTAL   21.00', 'Total   -6.40', 'Total Savings   -6.40']))?.value).toBe(21);
  });

  test('nothing that reads as a total: null, never a guess', () => {
    expect(findTotal(rows(['Thank you', 'Visit again']))).toBeNull();
  });
});

describe('date', () => {
  test('day first by default, the date beside a date label', () => {
    expect(findDate(rows(['Printed 28/11/2026', 'Date: 03/04/2024 14:05']), NOW)?.value).toBe('2024-04-03');
  });

  test('month first on a US receipt (sales tax, a state and ZIP code)', () => {
    const found = findDate(rows(['SAN FRANCISCO, CA 94103', '03/04/2024 2:15 PM', 'SALES TAX 8.625%   1.89']), NOW);
    expect(found?.value).toBe('2024-03-04');
  });

  test("an ambiguous date follows the document's other dates", () => {
    expect(findDate(rows(['Date: 05/06/2024', 'Return by 20/06/2024']), NOW)?.value).toBe('2024-06-05');
    expect(findDate(rows(['Date: 05/06/2024', 'Member until 06/20/2027']), NOW)?.value).toBe('2024-05-06');
  });

  test('month names, two-digit years, a time glued to the date', () => {
    expect(findDate(rows(['29 MAR 2018 12:13']), NOW)?.value).toBe('2018-03-29');
    expect(findDate(rows(['11 Jun 201818:32']), NOW)?.value).toBe('2018-06-11');
    expect(findDate(rows(['Mar 29, 2018']), NOW)?.value).toBe('2018-03-29');
    expect(findDate(rows(['14-03-18 21:49 T1 R000418']), NOW)?.value).toBe('2018-03-14');
    expect(findDate(rows(['23-01-201913:14:15 PM']), NOW)?.value).toBe('2019-01-23');
    expect(findDate(rows(['Datum: 02.11.2026']), NOW)?.value).toBe('2026-11-02');
  });

  test('not an expiry date, not a date in the future', () => {
    expect(findDate(rows(['Card expiry 12/2029', 'Valid until 31/12/2027', 'Sold 15/10/2026']), NOW)?.value).toBe(
      '2026-10-15',
    );
    expect(findDate(rows(['Date: 01/01/2030']), NOW)).toBeNull();
  });
});

describe('merchant', () => {
  test('the row with a company suffix, not the owner above it, the address or the phone', () => {
    const found = findMerchant(
      rows([
        'LIM AH KOW',
        'GOLDEN LEAF TRADING SDN. BHD. (123456-X)',
        'NO. 12, JALAN MAWAR 3,',
        '47301 PETALING JAYA',
        'TEL: 03-1234 5678',
        'TAX INVOICE',
        'Rice   3.00',
      ]),
    );
    expect(found?.value).toBe('GOLDEN LEAF TRADING SDN. BHD.');
    expect(found?.signals.suffix).toBe(1);
  });

  test('a suffix alone on its row joins the name above it', () => {
    expect(
      findMerchant(rows(['HAPPY DRAGON VEGETARIAN RESTAURANT', 'SDN BHD', '(998877-A)', 'Tea   1.00']))?.value,
    ).toBe('HAPPY DRAGON VEGETARIAN RESTAURANT SDN BHD');
  });

  test("the name's words are every word it was read from, a misread form included, not its registration", () => {
    // `SON BHD` is read `SDN BHD` only beside `BHD`: the word `SON` alone is not in the name's text, yet the name was
    // read from it (a second read of the name cuts from its first word to its last, SON included).
    const found = findMerchant(
      rows(['GOLDEN LEAF TRADING SON BHD (123456-X)', 'NO. 12, JALAN MAWAR 3,', 'Rice   3.00']),
    );
    expect(found?.value).toBe('GOLDEN LEAF TRADING SDN BHD');
    expect(found?.words?.map((w) => w.text)).toEqual(['GOLDEN', 'LEAF', 'TRADING', 'SON', 'BHD']);
  });

  test("a name whose first word detection lost stands off a centred block's axis: it goes to review", () => {
    const centred = (text: string) => `${' '.repeat(Math.floor((WIDTH - text.length) / 2))}${text}`;
    const header = (name: string) => [
      name,
      centred('(123456-X)'),
      centred('NO. 12, JALAN MAWAR 3, TAMAN MAWAR'),
      centred('47301 PETALING JAYA, SELANGOR'),
      centred('TEL: 03-1234 5678'),
      'Rice   3.00',
      'TOTAL   3.00',
      'Date: 01/11/2026',
    ];
    // The whole name centred as printed, and the same print with its first word too faint to be read.
    const whole = header(centred('GOLDEN LEAF TRADING SDN BHD'));
    const cut = header(centred('GOLDEN LEAF TRADING SDN BHD').replace('GOLDEN', '      '));
    const fields: FieldSpec[] = [{ name: 'merchant', type: 'string', required: true }];
    const read = (lines: string[]) => {
      const r = rows(lines);
      return extractWithLayout(r, r.map((x) => x.text).join('\n'), fields, NOW);
    };
    expect(findMerchant(rows(whole))?.signals.offCentre).toBe(0);
    expect(findMerchant(rows(cut))?.signals.offCentre).toBe(1);
    expect(read(cut).result.merchant).toBe('LEAF TRADING SDN BHD');
    expect(read(cut).confidence.merchant).toBeLessThan(0.8);
    expect(read(whole).confidence.merchant).toBeGreaterThanOrEqual(0.8);
    // A block that is not centred (lines flush left) says nothing of a short name.
    const flush = ['LEAF TRADING SDN BHD', '(123456-X)', 'NO. 12, JALAN MAWAR 3, TAMAN MAWAR', '47301 PETALING JAYA'];
    expect(findMerchant(rows([...flush, 'Rice   3.00']))?.signals.offCentre).toBe(0);
  });

  test('without a suffix, the largest print of the top rows', () => {
    const found = findMerchant(
      rows(['Welcome!', { text: 'BLUE HERON', size: 2 }, '123 Market Street', 'Phone 415-555-0101', 'Latte   4.50']),
    );
    expect(found?.value).toBe('BLUE HERON');
    expect(found?.signals.suffix).toBe(0);
  });
});

describe('tax and currency', () => {
  test('a tax row with a rate: the amount, not the rate', () => {
    expect(findTax(rows(['SUBTOTAL   $30.24', 'SALES TAX 6.25%   $1.89', 'TOTAL   $32.13']))?.value).toBe(1.89);
    expect(findTax(rows(['GST ID: 000123456789', 'GST 6%   2.10', 'TOTAL   37.10']))?.value).toBe(2.1);
  });

  test('the currency from codes, signs and the country a $ stands in', () => {
    expect(findCurrency(rows(['TOTAL   $32.13']))?.value).toBe('USD');
    expect(findCurrency(rows(['TOTAL   RM 37.10']))?.value).toBe('MYR');
    expect(findCurrency(rows(['Gesamt   10,00 €']))?.value).toBe('EUR');
    expect(findCurrency(rows(['KOPI CORNER PTE LTD', 'TOTAL   $4.20']))?.value).toBe('SGD');
    expect(findCurrency(rows(['TOTAL   32.13']))).toBeNull();
  });
});

describe('extractWithLayout', () => {
  const fields: FieldSpec[] = [
    { name: 'merchant', type: 'string', required: true },
    { name: 'date', type: 'date', required: true },
    { name: 'subtotal', type: 'number', required: false },
    { name: 'tax', type: 'number', required: false },
    { name: 'total', type: 'number', required: true },
    { name: 'currency', type: 'string', required: false },
    { name: 'cashier', type: 'string', required: false },
  ];

  test("a US receipt's fields, and a confidence for each field the rules found", () => {
    const lines = [
      { text: 'CORNER HARDWARE INC', size: 1.5 },
      '500 Main Street, Springfield, IL 62701',
      '11/03/2026 10:42 AM',
      'Cashier: Dana',
      'Hammer   $18.99',
      'Nails   $11.25',
      'SUBTOTAL   $30.24',
      'SALES TAX 6.25%   $1.89',
      'TOTAL   $32.13',
      'VISA   $32.13',
    ];
    const r = rows(lines);
    const { result, confidence } = extractWithLayout(r, r.map((x) => x.text).join('\n'), fields, NOW);
    expect(result).toEqual({
      merchant: 'CORNER HARDWARE INC',
      date: '2026-11-03',
      subtotal: 30.24,
      tax: 1.89,
      total: 32.13,
      currency: 'USD',
      cashier: 'Dana',
    });
    for (const name of ['merchant', 'date', 'total']) expect(confidence[name]).toBeGreaterThan(0.5);
  });

  test('the total and the merchant come with the words they were read from, for a second read', () => {
    const r = rows([
      { text: 'CORNER HARDWARE INC', size: 1.5 },
      '11/03/2026 10:42 AM',
      'Hammer   $18.99',
      'TOTAL   $32.13',
      'Cashier: Dana',
    ]);
    const { claims } = extractWithLayout(r, r.map((x) => x.text).join('\n'), fields, NOW);
    const texts = (name: string) => claims[name]?.words.map((w) => w.text);
    expect(claims.total?.kind).toBe('amount');
    expect(texts('total')).toEqual(['$32.13']);
    expect(claims.merchant?.kind).toBe('name');
    expect(texts('merchant')).toEqual(['CORNER', 'HARDWARE', 'INC']);
    // Only the fields a second read checks: not the date (its digits read again differ too often when right), nor a
    // labelled cashier.
    expect(Object.keys(claims).sort()).toEqual(['merchant', 'total']);
  });

  test('a subtotal and tax that do not add up to the total are left out; tax included gives the amount before it', () => {
    const f: FieldSpec[] = fields.filter((x) => ['subtotal', 'tax', 'total'].includes(x.name));
    const misread = rows(['SUBTOTAL   79.60', 'GST 6%   3.27', 'TOTAL   57.80']);
    expect(extractWithLayout(misread, misread.map((r) => r.text).join('\n'), f, NOW).result).toEqual({
      subtotal: null,
      tax: null,
      total: 57.8,
    });
    const included = rows(['SUBTOTAL   53.60', 'TAXABLE AMOUNT   50.57', 'GST 6%   3.03', 'TOTAL   53.60']);
    expect(extractWithLayout(included, '', f, NOW).result).toEqual({ subtotal: 50.57, tax: 3.03, total: 53.6 });
  });

  test('a string field (a bare name) gets the text as printed; only number and date fields are normalised', () => {
    const r = rows([
      'ACME TRADING SDN BHD',
      'Date: 05/11/2026 14:02',
      'SUBTOTAL   40.10',
      'TAX 6%   2.40',
      'TOTAL   RM 42.50',
    ]);
    const text = r.map((x) => x.text).join('\n');
    const asText: FieldSpec[] = ['total', 'subtotal', 'date'].map((name) => ({
      name,
      type: 'string',
      required: false,
    }));
    expect(extractWithLayout(r, text, asText, NOW).result).toEqual({
      total: '42.50',
      subtotal: '40.10',
      date: '05/11/2026',
    });
    const typed: FieldSpec[] = [
      { name: 'total', type: 'number', required: true },
      { name: 'date', type: 'date', required: true },
    ];
    expect(extractWithLayout(r, text, typed, NOW).result).toEqual({ total: 42.5, date: '2026-11-05' });
  });

  test('a name that reads like a misread (digits, letters standing alone) is far less sure than a clean one', () => {
    const f: FieldSpec[] = [{ name: 'merchant', type: 'string', required: true }];
    const sure = (name: string) => {
      const r = rows([{ text: name, size: 1.5 }, 'No 5, Jalan Besar', 'TOTAL   RM 12.00']);
      return extractWithLayout(r, '', f, NOW).confidence.merchant ?? 1;
    };
    const clean = sure('SEAVIEW TRADING SDN BHD');
    expect(clean).toBeGreaterThan(0.9);
    expect(sure("SEAV1EW 7'8 TRADING SDN BHD")).toBeLessThan(clean - 0.3);
    expect(sure('SEA V I EW TRADING SDN BHD')).toBeLessThan(clean - 0.3);
  });

  test('a name is as sure as its least sure letter: a doubtful dot or bracket is set aside', () => {
    const f: FieldSpec[] = [{ name: 'merchant', type: 'string', required: true }];
    const lines = [{ text: 'MR. K.L.E. (M) SDN BHD', size: 1.5 }, 'No 5, Jalan Besar', 'TOTAL   RM 12.00'];
    // Each character's probability: 0.99, except `doubt` on the characters `at` picks in `word`.
    const read = (word: string, at: (c: string) => boolean, doubt: number) => {
      const words = page(lines).map((w) => ({
        ...w,
        chars: [...w.text].map((c) => (w.text === word && at(c) ? doubt : 0.99)),
      }));
      return extractWithLayout(readingRows(words), '', f, NOW).confidence.merchant ?? 1;
    };
    const clean = read('', () => false, 1);
    expect(read('K.L.E.', (c) => c === '.', 0.3)).toBeCloseTo(clean, 2);
    expect(read('(M)', (c) => c === '(' || c === ')', 0.3)).toBeCloseTo(clean, 2);
    expect(read('K.L.E.', (c) => c === 'L', 0.3)).toBeLessThan(clean - 0.05);
  });

  test('names that read as names: a number of their own, a 0 in a lower-case word; a form first is a name cut short', () => {
    const f: FieldSpec[] = [{ name: 'merchant', type: 'string', required: true }];
    const read = (name: string) => {
      const r = rows([{ text: name, size: 1.5 }, 'No 5, Jalan Besar', 'TOTAL   RM 12.00']);
      return extractWithLayout(r, '', f, NOW);
    };
    expect(read('88 SEAVIEW MART SDN BHD').confidence.merchant).toBeGreaterThan(0.9);
    const scoop = read('Golden Sc0op Sdn Bhd');
    expect(scoop.result.merchant).toBe('Golden Scoop Sdn Bhd');
    expect(scoop.confidence.merchant).toBeGreaterThan(0.9);
    const cut = read('ENTERPRISE KIM SENG').confidence.merchant ?? 1;
    expect(cut).toBeLessThan(0.5);
    expect(read('KIM SENG ENTERPRISE').confidence.merchant).toBeGreaterThan(cut + 0.4);
  });

  test("a date is less sure when the reader doubted one of its characters (the CTC's least sure one)", () => {
    const f: FieldSpec[] = [{ name: 'date', type: 'date', required: true }];
    const lines = ['ACME SDN BHD', 'Date: 25/05/2018 14:02', 'TOTAL   12.00'];
    const read = (low: number) => {
      const words = page(lines).map((w) => (w.text === '25/05/2018' ? { ...w, low } : w));
      return extractWithLayout(readingRows(words), '', f, NOW).confidence.date ?? 1;
    };
    expect(read(0.99)).toBeGreaterThan(0.9);
    expect(read(0.3)).toBeLessThan(read(0.99) - 0.3);
  });

  test('a total nothing else on the receipt corroborates is less sure than one subtotal + tax or the payment agree with', () => {
    const f: FieldSpec[] = [{ name: 'total', type: 'number', required: true }];
    const sure = (lines: string[]) => extractWithLayout(rows(lines), '', f, NOW).confidence.total ?? 1;
    const alone = sure(['Coffee   3.50', 'Cake   4.20', 'TOTAL   12.00']);
    expect(sure(['SUBTOTAL   11.32', 'GST 6%   0.68', 'TOTAL   12.00'])).toBeGreaterThan(alone + 0.2);
    expect(sure(['TOTAL   12.00', 'CASH   20.00', 'CHANGE   8.00'])).toBeGreaterThan(alone + 0.3);
  });

  test('a labelled vendor stands, but is doubted when the top block names another business', () => {
    const f: FieldSpec[] = [{ name: 'merchant', type: 'string', required: true }];
    const read = (lines: Parameters<typeof rows>[0]) => {
      const r = rows(lines);
      return extractWithLayout(r, r.map((x) => x.text).join('\n'), f, NOW);
    };
    const disputed = read(['BEST DENKI SDN BHD', 'Lot 26, Subang Parade', 'Sold by: AHMAD KAMAL', 'TOTAL   RM 12.00']);
    expect(String(disputed.result.merchant).replace(/\s+/g, ' ')).toBe('AHMAD KAMAL');
    expect(disputed.confidence.merchant).toBeLessThan(0.5);
    const agreed = read(['BEST DENKI SDN BHD', 'Lot 26, Subang Parade', 'Seller: Best Denki Sdn Bhd', 'TOTAL   12.00']);
    expect(agreed.confidence.merchant ?? 1).toBeGreaterThan(0.5);
    // An address above the label, or text below it, names no other business.
    for (const lines of [
      ['INVOICE', '1 Industrial Way, Springfield', 'Vendor: Globex Ltd', 'Invoice Number: INV-7', 'Total Due: 1578.00'],
      ['INVOICE', 'Vendor: Globex Ltd', 'Consulting Services', 'Total Due: 1578.00'],
    ]) {
      const labelled = read(lines);
      expect(String(labelled.result.merchant).replace(/\s+/g, ' ')).toBe('Globex Ltd');
      expect(labelled.confidence.merchant).toBeUndefined();
    }
  });

  test('a total with rival readings is less sure than one the payment confirms', () => {
    const sure = rows(['TOTAL   12.00', 'CASH   20.00', 'CHANGE   8.00']);
    const unsure = rows(['TOTAL   12.00', 'TOTAL   21.00', 'CASH   50.00']);
    const f: FieldSpec[] = [{ name: 'total', type: 'number', required: true }];
    const a = extractWithLayout(sure, '', f, NOW).confidence.total ?? 0;
    const b = extractWithLayout(unsure, '', f, NOW).confidence.total ?? 1;
    expect(a).toBeGreaterThan(b);
  });
});
