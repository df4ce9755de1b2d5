/**
 * Packets for the boundary pass (issue 30): text-layer PDFs that hold several documents, each with its truth (every
 * document's class and pages). Built from the fixture documents (test/fixtures/invoice.pdf, short-page.pdf) and
 * rendered variations: receipts in a row (two of one shop), multi-page statements with a running header and
 * `Page k of n`, an invoice whose second page is its table continued, an invoice closed by a terms page, a terms sheet
 * of its own, passports, business cards, blank separator pages. Deterministic: `makePackets(seed)` gives the same
 * packets for the same seed. The bench's `packets` phase scores the local engine on them; `npx tsx test/support/packets.ts DIR`
 * writes them out (PDF + JSON truth) to look at.
 * Over 400 lines: one renderer per kind of document, side by side, so their variations (and what the truth calls one
 * document) are read and changed together.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as mupdf from 'mupdf';

/** One document of a packet as it truly is. */
export interface TruthDocument {
  schemaId: string;
  pages: { first: number; last: number };
}

export interface Packet {
  name: string;
  bytes: Uint8Array;
  pages: number;
  truth: TruthDocument[];
}

/** A line of text: baseline `y` from the top of the page, in points. */
interface Line {
  text: string;
  x: number;
  y: number;
  size?: number;
  bold?: boolean;
}

/** A page to draw: its size and lines (none: a blank page). */
interface PageSpec {
  width: number;
  height: number;
  lines: Line[];
}

/** A document to put in a packet: drawn pages, or pages of a fixture PDF. */
type DocumentSpec =
  | { schemaId: string; pages: PageSpec[]; fixture?: undefined }
  | { schemaId: string; fixture: string; pageCount: number; pages?: undefined };

/** mulberry32: a small, well-mixed seeded generator (deterministic packets need no more). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));
const money = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

const SHOPS = ['ACME HARDWARE', 'CORNER CAFE', 'CITY FUEL STATION', 'GREEN GROCER', 'BOOK NOOK', 'PIXEL ELECTRONICS'];
const VENDORS = ['Globex Ltd', 'Initech Inc', 'Umbrella Supplies', 'Stark Components', 'Wayne Logistics'];
const BANKS = ['FIRST NATIONAL BANK', 'CITY CREDIT UNION', 'HARBOUR SAVINGS BANK'];
const PEOPLE = ['Jane Doe', 'John Smith', 'Maria Garcia', 'Wei Chen', 'Amina Okafor', 'Lars Nilsen'];
const GOODS = ['Hammer', 'Coffee', 'Bread', 'Batteries', 'Notebook', 'Paint brush', 'Fuel', 'Apples', 'Cable', 'Tea'];
const SERVICES = ['Widget A', 'Widget B', 'Consulting hours', 'Freight', 'Support plan', 'Licence fee', 'Spare parts'];
const TERMS = [
  'Payment is due within thirty days of the invoice date unless agreed otherwise in writing.',
  'Goods remain the property of the seller until paid for in full.',
  'The seller shall not be liable for any indirect loss; liability is limited to the invoice value.',
  'Claims for damaged goods must be made within seven days of delivery.',
  'These terms are governed by the laws of the country of the seller.',
  'Late payments may be charged interest at the statutory rate.',
];

function receipt(rng: Rng, shop = pick(rng, SHOPS)): DocumentSpec {
  const lines: Line[] = [
    { text: shop, x: 30, y: 40, size: 14, bold: true },
    { text: `${int(rng, 1, 99)} Market Street`, x: 30, y: 58, size: 9 },
  ];
  let y = 80;
  const down = (dy: number) => {
    y += dy;
    return y;
  };
  if (rng() < 0.5) lines.push({ text: 'SALES RECEIPT', x: 30, y: down(4), size: 11, bold: true });
  const label = pick(rng, ['Receipt No:', 'Receipt #', 'Receipt', 'Trans #']);
  if (rng() < 0.85) lines.push({ text: `${label} R-${int(rng, 10000, 99999)}`, x: 30, y: down(18), size: 9 });
  lines.push({
    text: `Date: 2026-${String(int(rng, 1, 12)).padStart(2, '0')}-${int(rng, 10, 28)}`,
    x: 30,
    y: down(16),
    size: 9,
  });
  if (rng() < 0.5) lines.push({ text: `Cashier: ${pick(rng, PEOPLE).split(' ')[0]}`, x: 30, y: down(16), size: 9 });
  y += 10;
  let subtotal = 0;
  for (let i = int(rng, 2, 6); i > 0; i--) {
    const price = int(rng, 100, 5000) / 100;
    subtotal += price;
    lines.push({ text: pick(rng, GOODS), x: 30, y: down(16), size: 9 }, { text: money(price), x: 220, y, size: 9 });
  }
  const tax = Math.round(subtotal * 8) / 100;
  lines.push(
    { text: 'Subtotal', x: 30, y: down(24), size: 9 },
    { text: money(subtotal), x: 220, y, size: 9 },
    { text: 'Tax', x: 30, y: down(16), size: 9 },
    { text: money(tax), x: 220, y, size: 9 },
    { text: 'TOTAL', x: 30, y: down(18), size: 11, bold: true },
    { text: money(subtotal + tax), x: 220, y, size: 11, bold: true },
    rng() < 0.5
      ? { text: `VISA **** ${int(rng, 1000, 9999)}`, x: 30, y: down(22), size: 9 }
      : { text: 'CASH', x: 30, y: down(22), size: 9 },
    { text: 'Thank you for shopping with us', x: 30, y: down(28), size: 9 },
  );
  return { schemaId: 'receipt', pages: [{ width: 300, height: Math.max(420, y + 40), lines }] };
}

/** An invoice of 1 page, or 2: its table continued on page 2, or a terms page under the vendor's header. */
/** How documents print their page numbers. */
const PAGE_FORMATS = [
  (k: number, n: number) => `Page ${k} of ${n}`,
  (k: number, n: number) => `Page ${k}/${n}`,
  (k: number, n: number) => `p. ${k} of ${n}`,
];

/**
 * An invoice of 1 page, or 2: its table continued on page 2 (bare rows, or under the whole header block repeated with
 * the number), or a terms page under the vendor's header.
 */
function invoice(
  rng: Rng,
  shape: 'single' | 'continued' | 'repeated' | 'terms',
  vendor = pick(rng, VENDORS),
): DocumentSpec {
  const number = `INV-${int(rng, 1000, 9999)}`;
  const numbered = shape !== 'single' && rng() < 0.5;
  const format = pick(rng, PAGE_FORMATS);
  const footer = (k: number): Line[] => (numbered ? [{ text: format(k, 2), x: 270, y: 760, size: 9 }] : []);
  const head: Line[] = [
    { text: vendor, x: 72, y: 60, size: 16, bold: true },
    { text: `${int(rng, 1, 200)} Industrial Way, Springfield`, x: 72, y: 78, size: 9 },
    { text: 'INVOICE', x: 72, y: 120, size: 24, bold: true },
    {
      text: `${pick(rng, ['Invoice Number:', 'Invoice No.', 'Invoice #', 'Invoice no:'])} ${number}`,
      x: 72,
      y: 150,
      size: 11,
    },
    { text: 'Invoice Date: 2026-10-15', x: 72, y: 166, size: 11 },
    { text: 'Due Date: 2026-11-14', x: 72, y: 182, size: 11 },
    { text: `Bill To: ${pick(rng, PEOPLE)}`, x: 72, y: 198, size: 11 },
  ];
  const row = (y: number, cells: string[], bold = false): Line[] =>
    [72, 330, 400, 490].map((x, i) => ({ text: cells[i] ?? '', x, y, size: 10, bold }));
  const items = (count: number, y0: number): Line[] =>
    Array.from({ length: count }, (_, i) => {
      const qty = int(rng, 1, 9);
      const unit = int(rng, 1000, 50000) / 100;
      return row(y0 + i * 18, [pick(rng, SERVICES), String(qty), money(unit), money(qty * unit)]);
    }).flat();
  const totals = (y: number): Line[] => [
    { text: `Subtotal: ${money(int(rng, 1000, 9000))}`, x: 400, y, size: 10 },
    { text: `Total Due: ${money(int(rng, 1000, 9000))}`, x: 400, y: y + 18, size: 12, bold: true },
  ];
  const table = row(240, ['Description', 'Qty', 'Unit Price', 'Amount'], true);
  if (shape === 'single') {
    const n = int(rng, 2, 10);
    return {
      schemaId: 'invoice',
      pages: [{ width: 612, height: 792, lines: [...head, ...table, ...items(n, 262), ...totals(290 + n * 18)] }],
    };
  }
  const first = { width: 612, height: 792, lines: [...head, ...table, ...items(24, 262), ...footer(1)] };
  if (shape === 'repeated') {
    const n = int(rng, 3, 12);
    return {
      schemaId: 'invoice',
      pages: [
        first,
        {
          width: 612,
          height: 792,
          lines: [...head, ...table, ...items(n, 262), ...totals(290 + n * 18), ...footer(2)],
        },
      ],
    };
  }
  if (shape === 'continued') {
    const n = int(rng, 3, 12);
    return {
      schemaId: 'invoice',
      pages: [first, { width: 612, height: 792, lines: [...items(n, 60), ...totals(90 + n * 18), ...footer(2)] }],
    };
  }
  const terms: Line[] = [
    { text: vendor, x: 72, y: 60, size: 16, bold: true },
    { text: 'Terms and Conditions', x: 72, y: 110, size: 16, bold: true },
    ...TERMS.map((text, i) => ({ text, x: 72, y: 140 + i * 20, size: 10 })),
  ];
  const short = { width: 612, height: 792, lines: [...head, ...table, ...items(4, 262), ...totals(350), ...footer(1)] };
  return { schemaId: 'invoice', pages: [short, { width: 612, height: 792, lines: [...terms, ...footer(2)] }] };
}

/** A statement of 2–4 pages: the bank's running header and `Page k of n` on every page. */
function statement(rng: Rng, bank = pick(rng, BANKS)): DocumentSpec {
  const n = int(rng, 2, 4);
  const format = pick(rng, PAGE_FORMATS);
  const account = String(int(rng, 10_000_000, 99_999_999));
  const holder = pick(rng, PEOPLE);
  const repeatAccount = rng() < 0.5;
  let balance = int(rng, 50_000, 500_000) / 100;
  const pages: PageSpec[] = [];
  for (let k = 1; k <= n; k++) {
    const lines: Line[] = [
      { text: bank, x: 72, y: 50, size: 14, bold: true },
      { text: 'Statement of Account', x: 400, y: 50, size: 12, bold: true },
    ];
    let y = 80;
    const down = (dy: number) => {
      y += dy;
      return y;
    };
    if (k === 1) {
      lines.push(
        { text: `Account holder: ${holder}`, x: 72, y: down(16), size: 10 },
        { text: `Account Number: ${account}`, x: 72, y: down(16), size: 10 },
        { text: 'Statement period: 2026-10-01 to 2026-10-31', x: 72, y: down(16), size: 10 },
        { text: `Opening balance ${money(balance)}`, x: 72, y: down(16), size: 10 },
      );
    } else {
      if (repeatAccount) lines.push({ text: `Account Number: ${account}`, x: 72, y: down(16), size: 10 });
      lines.push({ text: `Balance brought forward ${money(balance)}`, x: 72, y: down(16), size: 10 });
    }
    y += 14;
    for (const [x, text] of [
      [72, 'Date'],
      [140, 'Description'],
      [350, 'Debit'],
      [420, 'Credit'],
      [490, 'Balance'],
    ] as const)
      lines.push({ text, x, y: y + 12, size: 10, bold: true });
    y += 12;
    for (let r = 0; r < 22; r++) {
      const amount = int(rng, 100, 40_000) / 100;
      const credit = rng() < 0.3;
      balance += credit ? amount : -amount;
      y += 16;
      lines.push(
        { text: `2026-10-${String(int(rng, 1, 31)).padStart(2, '0')}`, x: 72, y, size: 9 },
        {
          text: credit ? 'Transfer in' : pick(rng, ['Card payment', 'Direct debit', 'Cash withdrawal']),
          x: 140,
          y,
          size: 9,
        },
        { text: money(amount), x: credit ? 420 : 350, y, size: 9 },
        { text: money(balance), x: 490, y, size: 9 },
      );
    }
    if (k === n) lines.push({ text: `Closing balance ${money(balance)}`, x: 72, y: y + 30, size: 10, bold: true });
    lines.push({ text: format(k, n), x: 270, y: 760, size: 9 });
    pages.push({ width: 612, height: 792, lines });
  }
  return { schemaId: 'bank_statement', pages };
}

function passport(rng: Rng): DocumentSpec {
  const [given = 'JANE', surname = 'DOE'] = pick(rng, PEOPLE).toUpperCase().split(' ');
  const number = `X${int(rng, 1_000_000, 9_999_999)}`;
  const lines: Line[] = [
    { text: 'PASSPORT', x: 24, y: 30, size: 14, bold: true },
    { text: `Passport No: ${number}`, x: 180, y: 30, size: 9 },
    { text: `Surname: ${surname}`, x: 24, y: 60, size: 10 },
    { text: `Given names: ${given}`, x: 24, y: 76, size: 10 },
    { text: 'Nationality: UTOPIAN', x: 24, y: 92, size: 10 },
    { text: `Date of birth: ${int(rng, 10, 28)} MAR ${int(rng, 1950, 2005)}`, x: 24, y: 108, size: 10 },
    { text: 'Sex: F', x: 24, y: 124, size: 10 },
    { text: 'Date of expiry: 14 JUN 2031', x: 24, y: 140, size: 10 },
    { text: `P<UTO${surname}<<${given}<<<<<<<<<<<<<<<<<<<<`, x: 24, y: 190, size: 9 },
  ];
  return { schemaId: 'id_document', pages: [{ width: 360, height: 230, lines }] };
}

function businessCard(rng: Rng): DocumentSpec {
  const person = pick(rng, PEOPLE);
  const company = pick(rng, VENDORS);
  const lines: Line[] = [
    { text: person, x: 20, y: 36, size: 14, bold: true },
    { text: pick(rng, ['Head of Engineering', 'Sales Director', 'Accountant', 'Buyer']), x: 20, y: 54, size: 9 },
    { text: company, x: 20, y: 70, size: 9 },
    {
      text: `${person.split(' ')[0]?.toLowerCase()}@${company.split(' ')[0]?.toLowerCase()}.example`,
      x: 20,
      y: 104,
      size: 9,
    },
    { text: `Mobile +1 555 0${int(rng, 100, 999)}`, x: 20, y: 118, size: 9 },
  ];
  return { schemaId: 'business_card', pages: [{ width: 252, height: 144, lines }] };
}

/** A sheet of terms on its own (an `other` document): an issuer's title, some of the clauses. */
function termsSheet(rng: Rng): DocumentSpec {
  const clauses = TERMS.filter(() => rng() < 0.7);
  const lines: Line[] = [
    { text: `${pick(rng, [...VENDORS, ...BANKS])}: Terms and Conditions`, x: 72, y: 80, size: 16, bold: true },
    ...clauses.map((text, i) => ({ text, x: 72, y: 120 + i * 40, size: 10 })),
  ];
  return { schemaId: 'other', pages: [{ width: 612, height: 792, lines }] };
}

const FIXTURES = new URL('../fixtures/', import.meta.url);
/** Fixture documents: 1-page invoice.pdf; short-page.pdf (2-page invoice whose page 2 is two short lines). */
const fixtureInvoice: DocumentSpec = { schemaId: 'invoice', fixture: 'invoice.pdf', pageCount: 1 };
const fixtureShortPage: DocumentSpec = { schemaId: 'invoice', fixture: 'short-page.pdf', pageCount: 2 };

const blank = (): PageSpec => ({ width: 612, height: 792, lines: [] });

function escapePdf(s: string): string {
  return `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

/** Draws the documents (blank separators after those marked) into one PDF, with the truth. */
function build(name: string, documents: { doc: DocumentSpec; blankAfter: boolean }[]): Packet {
  const pdf = new mupdf.PDFDocument();
  const fonts = {
    F1: pdf.addSimpleFont(new mupdf.Font('Helvetica')),
    F2: pdf.addSimpleFont(new mupdf.Font('Helvetica-Bold')),
  };
  const draw = (page: PageSpec) => {
    const ops = page.lines.map(
      (l) => `BT /${l.bold ? 'F2' : 'F1'} ${l.size ?? 10} Tf ${l.x} ${page.height - l.y} Td ${escapePdf(l.text)} Tj ET`,
    );
    pdf.insertPage(-1, pdf.addPage([0, 0, page.width, page.height], 0, { Font: fonts }, `0 g\n${ops.join('\n')}\n`));
  };
  const truth: TruthDocument[] = [];
  let pages = 0;
  for (const { doc, blankAfter } of documents) {
    const first = pages + 1;
    if (doc.fixture !== undefined) {
      const source = new mupdf.PDFDocument(readFileSync(new URL(doc.fixture, FIXTURES)));
      for (let i = 0; i < doc.pageCount; i++) pdf.graftPage(-1, source, i);
      source.destroy();
      pages += doc.pageCount;
    } else {
      for (const page of doc.pages) draw(page);
      pages += doc.pages.length;
    }
    if (blankAfter) {
      draw(blank());
      pages += 1;
    }
    truth.push({ schemaId: doc.schemaId, pages: { first, last: pages } });
  }
  const bytes = pdf.saveToBuffer('compress=yes').asUint8Array().slice();
  pdf.destroy();
  return { name, bytes, pages, truth };
}

const plain = (...docs: DocumentSpec[]) => docs.map((doc) => ({ doc, blankAfter: false }));

/**
 * `count` packets for `seed`: five that each show one case, then mixes of 3–8 documents with a blank separator after
 * about one document in seven.
 */
export function makePackets(seed = 30, count = 40): Packet[] {
  const rng = random(seed);
  const shop = pick(rng, SHOPS);
  const bank = pick(rng, BANKS);
  const vendor = pick(rng, VENDORS);
  const packets: Packet[] = [
    build(
      'receipts-in-a-row',
      plain(receipt(rng), receipt(rng, shop), receipt(rng, shop), receipt(rng), receipt(rng), receipt(rng)),
    ),
    build('statements', plain(statement(rng, bank), statement(rng, bank), receipt(rng))),
    build('invoice-continued', plain(invoice(rng, 'continued'), fixtureInvoice, invoice(rng, 'continued'))),
    build('blank-separators', [
      { doc: invoice(rng, 'single', vendor), blankAfter: true },
      { doc: invoice(rng, 'single', vendor), blankAfter: true },
      { doc: receipt(rng), blankAfter: false },
    ]),
    build('terms', plain(invoice(rng, 'terms'), termsSheet(rng), receipt(rng), fixtureShortPage, passport(rng))),
  ];
  const deck: (() => DocumentSpec)[] = [
    () => receipt(rng),
    () => receipt(rng),
    () => invoice(rng, 'single'),
    () => invoice(rng, 'continued'),
    () => invoice(rng, 'repeated'),
    () => invoice(rng, 'terms'),
    () => statement(rng),
    () => statement(rng),
    () => passport(rng),
    () => businessCard(rng),
    () => termsSheet(rng),
    () => fixtureInvoice,
    () => fixtureShortPage,
  ];
  for (let i = packets.length; i < count; i++) {
    const docs: { doc: DocumentSpec; blankAfter: boolean }[] = [];
    for (let n = int(rng, 3, 8); docs.length < n; ) {
      const doc = pick(rng, deck)();
      // The same fixture file twice in a row is one document scanned twice: a duplicate, which page evidence cannot
      // tell from a document's own repeated pages (docs/decisions.md#packets-boundaries-by-evidence).
      if (doc.fixture !== undefined && docs.at(-1)?.doc.fixture === doc.fixture) continue;
      docs.push({ doc, blankAfter: rng() < 0.15 });
    }
    packets.push(build(`mix-${String(i).padStart(2, '0')}`, docs));
  }
  return packets;
}

/** `tsx test/support/packets.ts DIR`: writes every packet as DIR/NAME.pdf beside DIR/NAME.json (its truth). */
if (process.argv[1]?.endsWith('packets.ts') && process.argv[2]) {
  const dir = process.argv[2];
  mkdirSync(dir, { recursive: true });
  for (const p of makePackets()) {
    writeFileSync(join(dir, `${p.name}.pdf`), p.bytes);
    writeFileSync(join(dir, `${p.name}.json`), `${JSON.stringify({ pages: p.pages, documents: p.truth }, null, 2)}\n`);
  }
}
