/** The boundary and class pass over a packet's page evidence (shared/packets/boundaries.ts). */
import fc from 'fast-check';
import { classifyFile, splitPacket } from '../../shared/packets/boundaries.js';
import { blankEvidence, type PageEvidence } from '../../shared/packets/evidence.js';

const SCHEMAS = ['receipt', 'invoice', 'bank_statement', 'id_document', 'business_card'];

/** Evidence of page `page`, leaning towards `schema`, with the given signals. */
function page(pageNo: number, schema: string, signals: Partial<PageEvidence> = {}): PageEvidence {
  return {
    page: pageNo,
    classes: { [schema]: 0.8, other: 0.1 },
    blank: false,
    ids: [],
    names: [],
    startCue: false,
    continued: false,
    ...signals,
  };
}

/** The documents as `schema first-last` strings: what a reader checks at a glance. */
function split(pages: PageEvidence[], schemas = SCHEMAS): string[] {
  return splitPacket(pages, schemas).map((d) => `${d.schemaId} ${d.pages.first}-${d.pages.last}`);
}

describe('splitPacket', () => {
  test('receipts in a row from different shops are one document each', () => {
    const pages = ['acme hardware', 'corner cafe', 'city fuel', 'acme hardware'].map((header, i) =>
      page(i + 1, 'receipt', { header, startCue: true }),
    );
    expect(split(pages)).toEqual(['receipt 1-1', 'receipt 2-2', 'receipt 3-3', 'receipt 4-4']);
  });

  test('two receipts of the same shop are split by their different receipt numbers', () => {
    const pages = [
      page(1, 'receipt', { header: 'acme hardware main street', ids: ['R1001'] }),
      page(2, 'receipt', { header: 'acme hardware main street', ids: ['R1002'] }),
    ];
    expect(split(pages)).toEqual(['receipt 1-1', 'receipt 2-2']);
  });

  test('a three-page statement stays one document: running header, Page k of n, even a page that looks like another class', () => {
    const header = 'first national bank statement of account';
    const pages = [
      page(1, 'bank_statement', { header, startCue: true, ids: ['ACC12345678'], pageNumber: { k: 1, n: 3 } }),
      // The middle page is all transactions: the page alone looks like a receipt.
      { ...page(2, 'receipt', { header, startCue: true, pageNumber: { k: 2, n: 3 } }) },
      page(3, 'bank_statement', { header, startCue: true, ids: ['ACC12345678'], pageNumber: { k: 3, n: 3 } }),
    ];
    expect(split(pages)).toEqual(['bank_statement 1-3']);
  });

  test('a statement with only its running header (no page numbers, no ids) is not cut at each page', () => {
    const header = 'first national bank statement of account';
    const pages = [1, 2, 3, 4].map((n) => page(n, 'bank_statement', { header, startCue: true }));
    expect(split(pages)).toEqual(['bank_statement 1-4']);
  });

  test('an invoice whose second page is a continued table is one document', () => {
    const pages = [
      page(1, 'invoice', { header: 'globex ltd invoice', startCue: true, ids: ['INV3001'] }),
      // The table runs on: the top of the page is table rows, not the issuer.
      page(2, 'invoice', { header: 'widget a', continued: true }),
    ];
    expect(split(pages)).toEqual(['invoice 1-2']);
  });

  test('an unnumbered first page, then `Page 2` under another top line: one document (first pages go unnumbered)', () => {
    const pages = [
      page(1, 'invoice', { header: 'acme supply co', startCue: true, ids: ['INV2041'] }),
      // The invoice's second sheet: a line of terms and `Page 2`, nothing that names a class.
      { ...page(2, 'other', { header: 'terms net', pageNumber: { k: 2 } }), classes: { other: 0.4 } },
      page(3, 'receipt', { header: 'corner cafe', startCue: true }),
    ];
    expect(split(pages)).toEqual(['invoice 1-2', 'receipt 3-3']);
  });

  test('the same bank twice: Page 1 of 2 after Page 2 of 2 starts the second statement', () => {
    const header = 'first national bank statement of account';
    const pages = [
      page(1, 'bank_statement', { header, ids: ['ACC111'], pageNumber: { k: 1, n: 2 } }),
      page(2, 'bank_statement', { header, ids: ['ACC111'], pageNumber: { k: 2, n: 2 } }),
      page(3, 'bank_statement', { header, ids: ['ACC222'], pageNumber: { k: 1, n: 2 } }),
      page(4, 'bank_statement', { header, ids: ['ACC222'], pageNumber: { k: 2, n: 2 } }),
    ];
    expect(split(pages)).toEqual(['bank_statement 1-2', 'bank_statement 3-4']);
  });

  test('a blank separator page belongs to the document before it, and the page after it starts one', () => {
    const header = 'globex ltd invoice';
    const pages = [
      page(1, 'invoice', { header }),
      blankEvidence(2),
      // Same issuer, no number: only the blank sheet says a new invoice starts.
      page(3, 'invoice', { header }),
    ];
    expect(split(pages)).toEqual(['invoice 1-2', 'invoice 3-3']);
  });

  test('blank pages that open the packet belong to its first document; an all-blank packet is one other document', () => {
    expect(split([blankEvidence(1), page(2, 'receipt', { header: 'acme' })])).toEqual(['receipt 1-2']);
    expect(split([blankEvidence(1), blankEvidence(2)])).toEqual(['other 1-2']);
  });

  test('a terms-and-conditions page under the invoice header is the invoice’s last page', () => {
    const pages = [
      page(1, 'invoice', { header: 'globex ltd', ids: ['INV3001'], pageNumber: { k: 1, n: 2 } }),
      page(2, OTHER_PAGE, { header: 'globex ltd', pageNumber: { k: 2, n: 2 } }),
    ];
    expect(split(pages)).toEqual(['invoice 1-2']);
  });

  test('two invoices to the same customer are split by their numbers, not held by the name', () => {
    const header = 'stark components';
    const pages = [
      page(1, 'invoice', { header, startCue: true, ids: ['INV2080'], names: ['LARSNILSEN'] }),
      page(2, 'invoice', { header, startCue: true, ids: ['INV4112'], names: ['LARSNILSEN'] }),
    ];
    expect(split(pages)).toEqual(['invoice 1-1', 'invoice 2-2']);
  });

  test('an invoice closed by a terms page, then the same vendor’s next invoice: the numbers are compared across it', () => {
    const header = 'globex ltd';
    const pages = [
      page(1, 'invoice', { header, startCue: true, ids: ['INV3001'] }),
      page(2, OTHER_PAGE, { header }),
      page(3, 'invoice', { header, startCue: true, ids: ['INV3339'] }),
    ];
    expect(split(pages)).toEqual(['invoice 1-2', 'invoice 3-3']);
  });

  test('without numbers, another person on the next page starts a document; the same person holds pages together', () => {
    const header = 'city clinic';
    const pages = [
      page(1, 'other', { header, names: ['JANEDOE'] }),
      page(2, 'other', { header, names: ['JANEDOE'] }),
      page(3, 'other', { header, names: ['JOHNSMITH'] }),
    ];
    expect(split(pages)).toEqual(['other 1-2', 'other 3-3']);
  });

  test('a terms sheet of its own between two receipts is an other document', () => {
    const pages = [
      page(1, 'receipt', { header: 'acme hardware' }),
      page(2, OTHER_PAGE, { header: 'terms and conditions of sale' }),
      page(3, 'receipt', { header: 'corner cafe' }),
    ];
    expect(split(pages)).toEqual(['receipt 1-1', 'other 2-2', 'receipt 3-3']);
  });

  test('a class not allowed is never chosen: the page goes to other', () => {
    const pages = [page(1, 'id_document', { header: 'passport' }), page(2, 'receipt', { header: 'acme' })];
    expect(split(pages, ['receipt'])).toEqual(['other 1-1', 'receipt 2-2']);
  });

  test('a document’s confidence is high for agreeing pages and lower for mixed ones', () => {
    const sure = splitPacket([page(1, 'invoice', { header: 'globex' })], SCHEMAS)[0];
    const mixed = splitPacket(
      [
        {
          ...page(1, 'invoice', { header: 'globex', pageNumber: { k: 1, n: 2 } }),
          classes: { invoice: 0.5, receipt: 0.4 },
        },
        {
          ...page(2, 'invoice', { header: 'globex', pageNumber: { k: 2, n: 2 } }),
          classes: { invoice: 0.4, receipt: 0.5 },
        },
      ],
      SCHEMAS,
    )[0];
    expect(sure?.classification.confidence).toBeGreaterThan(0.7);
    expect(mixed?.classification.confidence).toBeLessThan(0.6);
  });

  test('a clean page the local engine read is sure, among every schema or one; cues that split are not', () => {
    // Scores as shared/packets/local-evidence.ts gives them: an invoice's cues (weight 7.5), a stray receipt cue
    // (`total`, 0.5) and `other`'s base (1), which every page has and which once capped every document under 0.8.
    const clean = { invoice: 0.976, receipt: 0.221, other: 0.393 };
    for (const schemas of [SCHEMAS, ['invoice']]) {
      const [document] = splitPacket([{ ...page(1, 'invoice'), classes: clean }], schemas);
      expect(document?.schemaId).toBe('invoice');
      expect(document?.classification.confidence).toBeGreaterThanOrEqual(0.8);
      expect(classifyFile([{ ...page(1, 'invoice'), classes: clean }], schemas).confidence).toBeGreaterThanOrEqual(0.8);
    }
    const split = { invoice: 0.632, receipt: 0.632, other: 0.393 };
    const [unsure] = splitPacket([{ ...page(1, 'invoice'), classes: split }], SCHEMAS);
    expect(unsure?.classification.confidence).toBeLessThan(0.8);
    expect(classifyFile([{ ...page(1, 'invoice'), classes: split }], SCHEMAS).confidence).toBeLessThan(0.8);
  });

  test('refuses evidence that is not pages 1..n in order', () => {
    expect(() => splitPacket([page(2, 'receipt')], SCHEMAS)).toThrow(/out of order/);
  });
});

const OTHER_PAGE = 'other';

/** Any page evidence the schema allows, for page `n`. */
const arbitraryEvidence = (n: number) =>
  fc.record({
    page: fc.constant(n),
    classes: fc.dictionary(
      fc.constantFrom(...SCHEMAS, 'other', 'unknown_schema'),
      fc.double({ min: 0, max: 1, noNaN: true }),
    ),
    blank: fc.boolean(),
    pageNumber: fc.option(
      fc.record({
        k: fc.integer({ min: 1, max: 5 }),
        n: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
      }),
      { nil: undefined },
    ),
    header: fc.option(fc.constantFrom('acme', 'globex ltd', 'first bank statement', ''), { nil: undefined }),
    ids: fc.array(fc.constantFrom('A1', 'B2', 'C3'), { maxLength: 2 }),
    names: fc.array(fc.constantFrom('JANEDOE', 'JOHNSMITH'), { maxLength: 2 }),
    startCue: fc.boolean(),
    continued: fc.boolean(),
  });

const arbitraryPacket = fc
  .integer({ min: 1, max: 40 })
  .chain((length) => fc.tuple(...Array.from({ length }, (_, i) => arbitraryEvidence(i + 1))));

describe('splitPacket, any evidence', () => {
  test('every page is in exactly one document, documents in order and indexed, classes allowed', () => {
    fc.assert(
      fc.property(arbitraryPacket, fc.subarray(SCHEMAS), (pages, schemas) => {
        const docs = splitPacket(pages as PageEvidence[], schemas);
        const covered = docs.flatMap((d) =>
          Array.from({ length: d.pages.last - d.pages.first + 1 }, (_, i) => d.pages.first + i),
        );
        expect(covered).toEqual(pages.map((p) => p.page));
        docs.forEach((d, i) => {
          expect(d.index).toBe(i);
          expect([...schemas, 'other']).toContain(d.schemaId);
          expect(d.classification.confidence).toBeGreaterThanOrEqual(0);
          expect(d.classification.confidence).toBeLessThanOrEqual(1);
        });
      }),
      { numRuns: 300 },
    );
  });

  test('the same evidence gives the same documents', () => {
    fc.assert(
      fc.property(arbitraryPacket, (pages) => {
        expect(splitPacket(pages as PageEvidence[], SCHEMAS)).toEqual(splitPacket(pages as PageEvidence[], SCHEMAS));
      }),
      { numRuns: 100 },
    );
  });
});
