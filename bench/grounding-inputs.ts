/**
 * Documents for the grounding phase (bench/grounding.ts), generated in memory with mupdf, and the JSON results a
 * model would return for them:
 *
 * - a 20-page invoice with a text layer: its header on page 1, 648 line items over all 20 pages (~250 words a page),
 *   subtotal, tax, total and IBAN on page 20. test/fixtures/twenty-pages.pdf is not used: its pages carry one
 *   paragraph of boilerplate each (51 words) and no value worth grounding;
 *
 * Lines are placed from the top of the page (as people think about layouts); Helvetica, like the fixtures.
 */
import * as mupdf from 'mupdf';
import { normaliseFields, registry } from '../shared/registry/registry.js';
import type { FieldSpec } from '../shared/task.js';

interface TextLine {
  text: string;
  x: number;
  /** Baseline, points from the top. */
  y: number;
  size: number;
}

export interface GeneratedPdf {
  bytes: Uint8Array;
  pages: number;
}

export interface InvoiceDocument extends GeneratedPdf {
  items: number;
  /** The invoice registry schema's fields, all found in the document (dueDate printed as "Nov 14, 2026"). */
  result: Record<string, unknown>;
  fieldSpecs: FieldSpec[];
  /** The same with `subtotal`, `tax` and every line item (description, quantity, unitPrice, amount). */
  resultWithItems: Record<string, unknown>;
  fieldSpecsWithItems: FieldSpec[];
}

const PAGE = { width: 612, height: 792 } as const;
const COLUMNS = [50, 330, 390, 480] as const;

const pdfString = (text: string): string => text.replace(/[\\()]/g, (c) => `\\${c}`);

function contentOf(lines: readonly TextLine[]): string {
  const shown = lines.map((l) => `BT /F1 ${l.size} Tf ${l.x} ${PAGE.height - l.y} Td (${pdfString(l.text)}) Tj ET`);
  return `0 g\n${shown.join('\n')}\n`;
}

function save(doc: mupdf.PDFDocument): Uint8Array {
  const bytes = doc.saveToBuffer('compress=yes,garbage=yes').asUint8Array().slice();
  doc.destroy();
  return bytes;
}

const money = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const cents = (x: number): number => Math.round(x * 100) / 100;

const SERVICES = [
  'Backend development',
  'Frontend development',
  'Code review',
  'Database tuning',
  'Incident response',
  'Security audit',
  'Data migration',
  'Load testing',
  'Technical writing',
  'Project management',
];
const RATES = [95, 110, 125, 140, 150.5, 180, 210.25, 250];
/** Line items per page: fewer on page 1 (the header) and page 20 (the totals). */
const ROWS = (page: number): number => (page === 1 ? 24 : page === 20 ? 12 : 34);

interface Item {
  description: string;
  quantity: number;
  unitPrice: number;
  amount: number;
}

function item(i: number): Item {
  const quantity = 1 + ((i * 7) % 9);
  const unitPrice = RATES[(i * 5) % RATES.length] ?? 100;
  return {
    description: `${SERVICES[i % SERVICES.length]}, ticket ${4100 + i}`,
    quantity,
    unitPrice,
    amount: cents(quantity * unitPrice),
  };
}

function itemLines(items: readonly Item[], top: number, step: number): TextLine[] {
  const header = ['Description', 'Qty', 'Unit price', 'Amount'].map((text, c) => ({
    text,
    x: COLUMNS[c] ?? 50,
    y: top,
    size: 10,
  }));
  const rows = items.flatMap((it, r) =>
    [it.description, String(it.quantity), money.format(it.unitPrice), money.format(it.amount)].map((text, c) => ({
      text,
      x: COLUMNS[c] ?? 50,
      y: top + (r + 1) * step,
      size: 10,
    })),
  );
  return [...header, ...rows];
}

/** The 20-page invoice (see the module comment). */
export function invoicePdf(): InvoiceDocument {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  const items: Item[] = [];
  let subtotal = 0;
  for (let page = 1; page <= 20; page++) {
    const onPage: Item[] = [];
    for (let r = 0; r < ROWS(page); r++) onPage.push(item(items.length + r));
    items.push(...onPage);
    for (const it of onPage) subtotal = cents(subtotal + it.amount);
    const lines: TextLine[] = [];
    if (page === 1) {
      lines.push(
        { text: 'INVOICE', x: 50, y: 60, size: 24 },
        { text: 'Globex Ltd', x: 50, y: 90, size: 12 },
        { text: '42 Harbour Road, Bristol BS1 4QA, United Kingdom', x: 50, y: 104, size: 9 },
        { text: 'Invoice Number: INV-7342', x: 50, y: 130, size: 11 },
        { text: 'Invoice Date: 2026-10-15', x: 50, y: 146, size: 11 },
        { text: 'Due Date: Nov 14, 2026', x: 50, y: 162, size: 11 },
        { text: 'Currency: EUR', x: 50, y: 178, size: 11 },
        { text: 'Bill To: Initech Inc, 500 Congress Avenue, Austin TX 78701', x: 50, y: 194, size: 11 },
        ...itemLines(onPage, 230, 14),
      );
    } else {
      lines.push(...itemLines(onPage, 60, page === 20 ? 14 : 18));
    }
    if (page === 20) {
      const tax = cents(subtotal * 0.2);
      lines.push(
        { text: `Subtotal: ${money.format(subtotal)}`, x: 330, y: 270, size: 11 },
        { text: `Tax (20%): ${money.format(tax)}`, x: 330, y: 286, size: 11 },
        { text: `Total Due: ${money.format(cents(subtotal + tax))} EUR`, x: 330, y: 306, size: 13 },
        { text: 'IBAN: DE89 3704 0044 0532 0130 00', x: 50, y: 350, size: 11 },
        { text: 'Payment is due within thirty days of the invoice date.', x: 50, y: 380, size: 10 },
        { text: 'Late payments accrue interest of one percent per month.', x: 50, y: 394, size: 10 },
        { text: 'Please quote the invoice number with every payment.', x: 50, y: 408, size: 10 },
      );
    }
    lines.push({ text: `Page ${page} of 20`, x: 50, y: 760, size: 9 });
    doc.insertPage(-1, doc.addPage([0, 0, PAGE.width, PAGE.height], 0, { Font: { F1: font } }, contentOf(lines)));
  }
  const tax = cents(subtotal * 0.2);
  const result = {
    invoiceNumber: 'INV-7342',
    invoiceDate: '2026-10-15',
    dueDate: '2026-11-14',
    vendor: 'Globex Ltd',
    totalDue: cents(subtotal + tax),
    currency: 'EUR',
  };
  const fieldSpecs = normaliseFields(registry.get('invoice')?.expectedFields ?? []);
  return {
    bytes: save(doc),
    pages: 20,
    items: items.length,
    result,
    fieldSpecs,
    resultWithItems: { ...result, subtotal, tax, lineItems: items },
    fieldSpecsWithItems: [
      ...fieldSpecs,
      { name: 'subtotal', type: 'number', required: false },
      { name: 'tax', type: 'number', required: false },
      { name: 'lineItems', type: 'array', required: false },
    ],
  };
}
