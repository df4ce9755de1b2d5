import { coerceBoolean, coerceDate, coerceNumber, nameWords } from '../../shared/providers/fields.js';
import { labelVariants } from '../../shared/providers/local/concepts.js';
import { extractFields, extractKeyValues } from '../../shared/providers/local/extract-fields.js';
import type { FieldSpec, FieldType } from '../../shared/task.js';

const f = (name: string, type: FieldType = 'string'): FieldSpec => ({ name, type, required: false });

const RECEIPT = [
  'ACME HARDWARE',
  '12 Main Street, Springfield',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Hammer 1 x 18.50',
  'Screws 2 x 10.00',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
  'Thank you',
].join('\n');

const INVOICE = [
  'INVOICE',
  'Invoice Number: INV-2001',
  'Invoice Date: 2026-10-15',
  'Due Date: 2026-11-14',
  'Vendor: Globex Ltd',
  'Bill To: Initech Inc',
  'Consulting services, October 2026',
  'Sub Total: 1,000.00',
  'VAT (25%): 250.00',
  'Total Due: $1,250.00',
  '',
  'Terms and Conditions',
  'Payment is due within thirty days of the invoice date.',
].join('\n');

const CARD = ['Jane Doe', 'Head of Engineering', 'Example Corp', 'jane.doe@example.com', '+1 555 0100'].join('\n');

describe('nameWords / labelVariants', () => {
  test.each([
    ['invoiceNumber', ['invoice', 'number']],
    ['invoice_number', ['invoice', 'number']],
    ['Invoice-Number', ['invoice', 'number']],
    ['PONumber', ['po', 'number']],
    ['total', ['total']],
    ['e-mail', ['e', 'mail']],
  ])('nameWords(%s)', (name, words) => {
    expect(nameWords(name)).toEqual(words);
  });

  test('number-like names get "no" and "#" variants', () => {
    expect(labelVariants('invoiceNumber')).toEqual(
      expect.arrayContaining(['invoice number', 'invoice no', 'invoice #']),
    );
    expect(labelVariants('invoice_number')).toEqual(labelVariants('invoiceNumber'));
  });

  test('specific synonyms come before generic ones', () => {
    const total = labelVariants('total');
    expect(total.indexOf('grand total')).toBeLessThan(total.indexOf('total'));
    expect(total).toEqual(expect.arrayContaining(['amount due', 'total due', 'balance due']));
    const date = labelVariants('date');
    expect(date.indexOf('invoice date')).toBeLessThan(date.indexOf('date'));
    expect(labelVariants('vendorName')).toEqual(
      expect.arrayContaining(['vendor name', 'vendor', 'merchant', 'seller']),
    );
  });
});

describe('extractFields: documents', () => {
  const receiptFields = [
    f('total', 'number'),
    f('subtotal', 'number'),
    f('tax', 'number'),
    f('date', 'date'),
    f('invoiceNumber'),
    f('vendor'),
    f('merchant_name'),
    f('missing_thing'),
  ];

  test('receipt', () => {
    expect(extractFields(RECEIPT, receiptFields)).toEqual({
      total: 42.5,
      subtotal: 38.5,
      tax: 4,
      date: '2026-11-02',
      invoiceNumber: 'INV-1042',
      vendor: 'ACME HARDWARE',
      merchant_name: 'ACME HARDWARE',
      missing_thing: null,
    });
  });

  test('result has exactly the schema field names as keys', () => {
    const fields = [f('a'), f('b', 'number'), f('c', 'date')];
    expect(Object.keys(extractFields(RECEIPT, fields))).toEqual(['a', 'b', 'c']);
    expect(Object.keys(extractFields('', fields))).toEqual(['a', 'b', 'c']);
  });

  test('invoice', () => {
    expect(
      extractFields(INVOICE, [
        f('invoiceNumber'),
        f('invoice_date', 'date'),
        f('date', 'date'),
        f('dueDate', 'date'),
        f('vendor'),
        f('total', 'number'),
        f('amountDue', 'number'),
        f('subtotal', 'number'),
        f('billTo'),
        f('purchaseOrderNumber'),
      ]),
    ).toEqual({
      invoiceNumber: 'INV-2001',
      invoice_date: '2026-10-15',
      date: '2026-10-15',
      dueDate: '2026-11-14',
      vendor: 'Globex Ltd',
      total: 1250,
      amountDue: 1250,
      subtotal: 1000,
      billTo: 'Initech Inc',
      purchaseOrderNumber: null,
    });
  });

  test('business card by pattern', () => {
    expect(
      extractFields(CARD, [f('name'), f('title'), f('company'), f('email'), f('phone'), f('website'), f('fax')]),
    ).toEqual({
      name: 'Jane Doe',
      title: 'Head of Engineering',
      company: 'Example Corp',
      email: 'jane.doe@example.com',
      phone: '+1 555 0100',
      website: null,
      fax: null,
    });
  });

  test('business card with labels', () => {
    const card = [
      'JOHN SMITH',
      'Senior Developer',
      'Initech Solutions LLC',
      'Fax: +1 (555) 999-0000',
      'Mobile: +1 (555) 123-4567',
      'E-mail: john@initech.example.com (work)',
      'www.initech.example.com',
    ].join('\n');
    expect(
      extractFields(card, [f('fullName'), f('jobTitle'), f('companyName'), f('email'), f('phone'), f('website')]),
    ).toEqual({
      fullName: 'JOHN SMITH',
      jobTitle: 'Senior Developer',
      companyName: 'Initech Solutions LLC',
      email: 'john@initech.example.com',
      phone: '+1 (555) 123-4567',
      website: 'www.initech.example.com',
    });
  });

  test("a receipt's letterhead is its vendor, never a person's name, a job title or a card's company", () => {
    expect(extractFields(RECEIPT, [f('fullName'), f('name'), f('title'), f('company')])).toEqual({
      fullName: null,
      name: null,
      title: null,
      company: null,
    });
  });

  test("a business card's first line is its holder, never an invoice's vendor or a receipt's merchant", () => {
    expect(extractFields(CARD, [f('vendor'), f('merchant'), f('name')])).toEqual({
      vendor: null,
      merchant: null,
      name: 'Jane Doe',
    });
  });

  test('empty text: every field null', () => {
    expect(extractFields('', [f('total', 'number'), f('vendor'), f('date', 'date'), f('email')])).toEqual({
      total: null,
      vendor: null,
      date: null,
      email: null,
    });
  });
});

describe('extractFields: label matching', () => {
  test.each<[string, string, FieldType, unknown]>([
    // Subtotal never counts as total; the last total wins.
    ['subtotal only', 'Subtotal: 38.50', 'number', null],
    ['sub total only', 'Sub Total: 38.50', 'number', null],
    ['subtotal then total', 'Subtotal: 38.50\nTotal: 42.50', 'number', 42.5],
    ['total then subtotal', 'TOTAL 42.50\nSUBTOTAL 38.50', 'number', 42.5],
    ['last total wins', 'Total: 10.00\nDiscount: 1.00\nTotal: 9.00', 'number', 9],
    ['grand total preferred', 'Grand Total: 99.00\nTotal: 90.00', 'number', 99],
    ['amount due synonym', 'Amount Due: 12.00', 'number', 12],
    ['balance due synonym', 'Balance due 7.25', 'number', 7.25],
    ['total due synonym', 'Total Due: 1250.00', 'number', 1250],
    ['total with words after is skipped', 'Total items: 3\nTotal: 5.00', 'number', 5],
    ['totals is not total', 'Totals: 5.00', 'number', null],
    ['value on next line', 'Total:\n42.50', 'number', 42.5],
    ['case-insensitive', 'tOtAl: 1.50', 'number', 1.5],
    ['dot leaders', 'Total ....... 8.00', 'number', 8],
    ['bulleted', '* Total: 8.00', 'number', 8],
    ['second cell on a line', 'Tax: 4.00    Total: 42.50', 'number', 42.5],
    ['currency code', 'Total: 42.50 USD', 'number', 42.5],
    ['euro with decimal comma', 'Total: 1.234,56 €', 'number', 1234.56],
    ['negative in parentheses', 'Total: ($5.00)', 'number', -5],
  ])('total: %s', (_, text, type, expected) => {
    expect(extractFields(text, [f('total', type)]).total).toEqual(expected);
  });

  test.each<[string, string, string, unknown]>([
    ['invoice no', 'Invoice No.: A-77', 'invoiceNumber', 'A-77'],
    ['invoice #', 'Invoice # 5531', 'invoiceNumber', '5531'],
    ['invoice # glued', 'Invoice #INV-9', 'invoiceNumber', 'INV-9'],
    ['snake case name', 'Invoice Number: X1', 'invoice_number', 'X1'],
    ['cut at the next key', 'Invoice Number: INV-1 Date: 2026-11-02', 'invoiceNumber', 'INV-1'],
    ['cut at a column gap', 'Invoice Number: INV-1        Page 1 of 2', 'invoiceNumber', 'INV-1'],
    ['unknown field by its name', 'PO Number: PO-88', 'poNumber', 'PO-88'],
    ['unknown field not present', 'Total: 1.00', 'customerReference', null],
    ['label must start a cell', 'Payment reference: 42', 'reference', null],
    ['vendor label wins over first line', 'WELCOME\nSeller: Foo GmbH', 'vendor', 'Foo GmbH'],
    ['vendor first line skips a document title', 'RECEIPT\nCorner Cafe\nTotal: 3.00', 'vendor', 'Corner Cafe'],
  ])('string: %s', (_, text, name, expected) => {
    expect(extractFields(text, [f(name)])[name]).toEqual(expected);
  });

  test('a date field does not take the due date', () => {
    expect(extractFields('Due Date: 2026-12-01\nDate: 2026-11-02', [f('date', 'date')]).date).toBe('2026-11-02');
    expect(extractFields('Due Date: 2026-12-01', [f('date', 'date')]).date).toBeNull();
  });

  test('a generic date falls back to the first date in the text', () => {
    expect(extractFields('CORNER CAFE\n11/15/2026 10:14\nTotal 3.00', [f('date', 'date')]).date).toBe('2026-11-15');
    expect(extractFields('CORNER CAFE\n11/15/2026 10:14', [f('date')]).date).toBe('11/15/2026');
  });
});

describe('extractFields: type coercion', () => {
  test.each<[string, string, FieldType, unknown]>([
    ['number', 'Amount: 42.50', 'number', 42.5],
    ['number with thousands', 'Amount: 1,250.00', 'number', 1250],
    ['number that is not one', 'Amount: forty two', 'number', null],
    ['integer', 'Quantity: 3', 'integer', 3],
    ['integer that is fractional', 'Quantity: 3.5', 'integer', null],
    ['boolean yes', 'Paid: yes', 'boolean', true],
    ['boolean no', 'Paid: No', 'boolean', false],
    ['boolean nonsense', 'Paid: perhaps', 'boolean', null],
    ['date iso', 'Date: 2026-11-02', 'date', '2026-11-02'],
    ['date month name', 'Date: Nov 2, 2026', 'date', '2026-11-02'],
    ['date day-first name', 'Date: 2 November 2026', 'date', '2026-11-02'],
    ['date day > 12', 'Date: 15/10/2026', 'date', '2026-10-15'],
    ['date month-first, day > 12', 'Date: 10/15/2026', 'date', '2026-10-15'],
    ['date ambiguous kept as found', 'Date: 02/11/2026', 'date', '02/11/2026'],
    ['date dotted is day-first', 'Date: 02.11.2026', 'date', '2026-11-02'],
    ['date impossible', 'Date: 2026-02-30', 'date', null],
    ['date not a date', 'Date: tomorrow', 'date', null],
    ['string trimmed', 'Note:    hello world   ', 'string', 'hello world'],
    ['array split', 'Items: hammer, screws; nails', 'array', ['hammer', 'screws', 'nails']],
    ['object never guessed', 'Customer: Initech', 'object', null],
  ])('%s', (_, text, type, expected) => {
    const name = text.split(':')[0]?.toLowerCase() ?? '';
    expect(extractFields(text, [f(name, type)])[name]).toEqual(expected);
  });

  test('a value that cannot be coerced falls through to the next match, else null', () => {
    expect(extractFields('Total: n/a\nTotal: 3.00', [f('total', 'number')]).total).toBe(3);
    expect(extractFields('Total: n/a', [f('total', 'number')]).total).toBeNull();
    expect(extractFields('Invoice Number: INV-1042', [f('invoiceNumber', 'number')]).invoiceNumber).toBeNull();
  });
});

describe('coercers', () => {
  test.each<[string, number | null]>([
    ['42.50', 42.5],
    ['$42.50', 42.5],
    ['USD 42.50', 42.5],
    ['1,250', 1250],
    ['1,250.00', 1250],
    ['1.250,00', 1250],
    ['1 250,00', 1250],
    ["1'250.00", 1250],
    ['42,5', 42.5],
    ['1.234.567', 1234567],
    ['-3.00', -3],
    ['3.00-', -3],
    ['(3.00)', -3],
    ['3.00−', -3],
    ['(−3.00)', 3],
    ['HUF 1 250', 1250],
    ['42.50 paid', 42.5],
    ['3 items 42.50', null],
    ['1,25,0', null],
    ['abc', null],
    ['', null],
  ])('coerceNumber(%j)', (raw, expected) => {
    expect(coerceNumber(raw)).toBe(expected);
  });

  test.each<[string, string | null]>([
    ['2026-11-02', '2026-11-02'],
    ['2026/11/2', '2026-11-02'],
    ['Mon, Nov 2, 2026 10:14 AM', '2026-11-02'],
    ['November 2nd, 2026', '2026-11-02'],
    ['2-Nov-2026', '2026-11-02'],
    ['2 Nov 26', '2026-11-02'],
    ['11/02/2026', '11/02/2026'],
    ['13/13/2026', null],
    ['31/04/2026', null],
    ['no date here', null],
  ])('coerceDate(%j)', (raw, expected) => {
    expect(coerceDate(raw)).toBe(expected);
  });

  test.each<[string, boolean | null]>([
    ['true', true],
    ['Yes', true],
    ['✓', true],
    ['false', false],
    ['NO', false],
    ['maybe', null],
  ])('coerceBoolean(%j)', (raw, expected) => {
    expect(coerceBoolean(raw)).toBe(expected);
  });
});

describe('extractKeyValues', () => {
  test('collects "Label: value" lines as printed', () => {
    expect(extractKeyValues(RECEIPT)).toEqual({
      Date: '2026-11-02',
      'Invoice Number': 'INV-1042',
      Subtotal: '38.50',
      Tax: '4.00',
      Total: '42.50',
    });
  });

  test('ignores times, URLs and lines without a label; keeps the first of a repeated label', () => {
    expect(extractKeyValues('10:14 AM\nhttps://example.com\nNote: a\nNote: b\nplain line')).toEqual({ Note: 'a' });
  });
});
