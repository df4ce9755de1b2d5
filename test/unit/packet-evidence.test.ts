/** The local engine's page evidence from a page's words (shared/packets/local-evidence.ts). */
import type { EvidenceWord } from '../../shared/fields/types.js';
import { pageEvidence } from '../../shared/packets/evidence.js';
import { localPageEvidence } from '../../shared/packets/local-evidence.js';

const SCHEMAS = ['receipt', 'invoice', 'bank_statement', 'id_document', 'business_card'];

/** Words of a page from rows of cells: `[y, [x, text], [x, text], …]`, positions relative to the page. */
function pageWords(...rows: [number, ...[number, string][]][]): EvidenceWord[] {
  return rows.flatMap(([y, ...cells]) =>
    cells.flatMap(([x, text]) => {
      let at = x;
      return text.split(' ').map((word) => {
        const box: EvidenceWord = { text: word, bbox: [at, y, at + word.length * 0.012, y + 0.015] };
        at += (word.length + 1) * 0.012;
        return box;
      });
    }),
  );
}

/** The class with the highest score. */
const best = (classes: Record<string, number>) =>
  Object.entries(classes).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];

describe('localPageEvidence', () => {
  test('a statement page: its class, running header, account number and Page k of n', () => {
    const e = localPageEvidence(
      7,
      pageWords(
        [0.05, [0.1, 'FIRST NATIONAL BANK'], [0.6, 'Statement of Account']],
        [0.1, [0.1, 'Account Number: 12345678']],
        [0.14, [0.1, 'Balance brought forward 1,204.50']],
        [0.2, [0.1, '2026-10-03'], [0.3, 'Card payment'], [0.6, '12.40'], [0.8, '1,192.10']],
        [0.95, [0.45, 'Page 2 of 3']],
      ),
      SCHEMAS,
    );
    expect(best(e.classes)).toBe('bank_statement');
    expect(e).toMatchObject({
      page: 7,
      blank: false,
      header: 'first national bank statement of account',
      ids: ['12345678'],
      pageNumber: { k: 2, n: 3 },
      continued: true,
    });
    expect(pageEvidence.parse(e)).toEqual(e);
  });

  test('an invoice: the title above "Invoice Number: X" does not take X’s place (the number is the id)', () => {
    const e = localPageEvidence(
      1,
      pageWords(
        [0.05, [0.1, 'Globex Ltd']],
        [0.1, [0.1, 'INVOICE']],
        [0.14, [0.1, 'Invoice Number: INV-1042']],
        [0.17, [0.1, 'Invoice Date: 2026-10-15']],
        [0.2, [0.1, 'Bill To: Jane Doe']],
        [0.3, [0.1, 'Total Due: 1,250.00']],
      ),
      SCHEMAS,
    );
    expect(best(e.classes)).toBe('invoice');
    expect(e.ids).toEqual(['INV1042']);
    expect(e.names).toEqual(['JANEDOE']);
    expect(e.startCue).toBe(true);
    expect(e.header).toBe('globex ltd');
    expect(e.pageNumber).toBeUndefined();
  });

  test('a page that opens with table rows continues a table', () => {
    const e = localPageEvidence(
      2,
      pageWords(
        [0.05, [0.1, 'Widget A'], [0.5, '4'], [0.6, '250.00'], [0.8, '1,000.00']],
        [0.08, [0.1, 'Freight'], [0.5, '1'], [0.6, '75.00'], [0.8, '75.00']],
        [0.2, [0.6, 'Total Due: 1,075.00']],
      ),
      SCHEMAS,
    );
    expect(e.continued).toBe(true);
    expect(e.startCue).toBe(false);
  });

  test('a receipt, a terms page, a passport and a business card are told apart', () => {
    const receipt = pageWords(
      [0.05, [0.1, 'CORNER CAFE']],
      [0.1, [0.1, 'Receipt No: R-48213']],
      [0.2, [0.1, 'Coffee'], [0.7, '3.50']],
      [0.25, [0.1, 'TOTAL'], [0.7, '3.50']],
      [0.3, [0.1, 'CASH']],
      [0.35, [0.1, 'Thank you for shopping with us']],
    );
    const terms = pageWords(
      [0.05, [0.1, 'Terms and Conditions of Sale']],
      [0.1, [0.1, 'The seller shall not be liable for any indirect loss.']],
      [0.15, [0.1, 'These terms are governed by the laws of the country of the seller.']],
    );
    const passport = pageWords(
      [0.05, [0.1, 'PASSPORT'], [0.5, 'Passport No: X1234567']],
      [0.15, [0.1, 'Surname: DOE']],
      [0.2, [0.1, 'Given names: JANE']],
      [0.25, [0.1, 'Nationality: UTOPIAN']],
      [0.3, [0.1, 'Date of birth: 12 MAR 1990']],
    );
    const card = pageWords(
      [0.2, [0.1, 'Jane Doe']],
      [0.35, [0.1, 'Head of Engineering']],
      [0.6, [0.1, 'jane@example.com']],
      [0.7, [0.1, 'Mobile +1 555 0100']],
    );
    expect(best(localPageEvidence(1, receipt, SCHEMAS).classes)).toBe('receipt');
    expect(best(localPageEvidence(1, terms, SCHEMAS).classes)).toBe('other');
    expect(localPageEvidence(1, passport, SCHEMAS)).toMatchObject({ ids: ['X1234567'], startCue: true });
    expect(best(localPageEvidence(1, passport, SCHEMAS).classes)).toBe('id_document');
    expect(best(localPageEvidence(1, card, SCHEMAS).classes)).toBe('business_card');
  });

  test('only the allowed schemas (and other) are scored', () => {
    const e = localPageEvidence(1, pageWords([0.1, [0.1, 'INVOICE Invoice Number: INV-1']]), ['receipt']);
    expect(Object.keys(e.classes).sort()).toEqual(['other', 'receipt']);
  });

  test('a page without legible words, or saying it is intentionally blank, is blank', () => {
    expect(localPageEvidence(3, [], SCHEMAS)).toEqual({
      page: 3,
      classes: {},
      blank: true,
      ids: [],
      names: [],
      startCue: false,
      continued: false,
    });
    expect(localPageEvidence(3, pageWords([0.5, [0.3, '. -']]), SCHEMAS).blank).toBe(true);
    expect(localPageEvidence(3, pageWords([0.5, [0.3, 'This page intentionally left blank']]), SCHEMAS).blank).toBe(
      true,
    );
  });

  test('`Page k` alone gives k without n; an impossible `Page 5 of 3` gives nothing', () => {
    const alone = localPageEvidence(1, pageWords([0.1, [0.1, 'Notes']], [0.95, [0.4, 'Page 4']]), SCHEMAS);
    expect(alone.pageNumber).toEqual({ k: 4 });
    const impossible = localPageEvidence(1, pageWords([0.1, [0.1, 'Notes']], [0.95, [0.4, 'Page 5 of 3']]), SCHEMAS);
    expect(impossible.pageNumber).toBeUndefined();
  });
});
