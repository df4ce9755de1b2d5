/**
 * Writes the test fixtures in test/fixtures/ (`npm run fixtures`). Text is drawn with mupdf's built-in Helvetica into
 * a PDF page, which is then rendered to PNG, so every fixture has real, OCR-able text without any system fonts.
 * Re-running rewrites the same files; the output is deterministic apart from the few bytes PDF writers vary (ids).
 * Over 400 lines: every fixture is written by this one script from the same builders, so they stay alike.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateSync } from 'node:zlib';
import * as mupdf from 'mupdf';
import sharp from 'sharp';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures');

/** One line of text on a page: baseline position in points from the top-left, size in points. */
interface Line {
  text: string;
  x: number;
  y: number;
  size: number;
  bold?: boolean;
}

/** Escapes a string for a PDF literal string. */
function pdfString(s: string): string {
  return `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

/** A PDF document writer that lays out text lines with the base-14 Helvetica fonts. */
class PdfBuilder {
  readonly doc = new mupdf.PDFDocument();
  private readonly regular = this.doc.addSimpleFont(new mupdf.Font('Helvetica'));
  private readonly bold = this.doc.addSimpleFont(new mupdf.Font('Helvetica-Bold'));

  /** Appends a page of text lines (y measured from the top, as people think about layouts). */
  addTextPage(width: number, height: number, lines: Line[]): void {
    const ops = lines.map(
      (l) => `BT /${l.bold ? 'F2' : 'F1'} ${l.size} Tf ${l.x} ${height - l.y} Td ${pdfString(l.text)} Tj ET`,
    );
    const resources = { Font: { F1: this.regular, F2: this.bold } };
    const page = this.doc.addPage([0, 0, width, height], 0, resources, `0 g\n${ops.join('\n')}\n`);
    this.doc.insertPage(-1, page);
  }

  /** Appends a page whose only content is a raster image filling it (a "scanned" page, no text layer). */
  addImagePage(width: number, height: number, image: Uint8Array): void {
    const ref = this.doc.addImage(new mupdf.Image(image));
    const page = this.doc.addPage(
      [0, 0, width, height],
      0,
      { XObject: { Im1: ref } },
      `q ${width} 0 0 ${height} 0 0 cm /Im1 Do Q\n`,
    );
    this.doc.insertPage(-1, page);
  }

  save(options = 'compress=yes,garbage=yes'): Buffer {
    return Buffer.from(this.doc.saveToBuffer(options).asUint8Array());
  }
}

/** Renders page `index` of a PDF to a grayscale PNG at `dpi`. */
function renderPng(pdf: Uint8Array, dpi: number, index = 0): Buffer {
  const doc = mupdf.Document.openDocument(pdf, 'application/pdf');
  const page = doc.loadPage(index);
  const scale = dpi / 72;
  const pixmap = page.toPixmap(mupdf.Matrix.scale(scale, scale), mupdf.ColorSpace.DeviceGray, false);
  return Buffer.from(pixmap.asPNG());
}

const written: { name: string; bytes: number; what: string }[] = [];

function write(name: string, data: Uint8Array, what: string): void {
  writeFileSync(join(OUT, name), data);
  written.push({ name, bytes: data.length, what });
}

/** The first `fraction` of a buffer, as an upload cut off mid-transfer would be. */
function truncate(data: Uint8Array, fraction: number): Uint8Array {
  return data.subarray(0, Math.floor(data.length * fraction));
}

/**
 * A copy of a PNG whose first IDAT chunk's compressed data is damaged (every 7th byte flipped), leaving the signature,
 * IHDR, chunk lengths and IEND intact: the headers a run's creation reads are fine, only decoding fails.
 */
function damageIdat(png: Uint8Array): Uint8Array {
  const out = Buffer.from(png);
  let at = 8; // after the signature
  while (at + 8 <= out.length) {
    const length = out.readUInt32BE(at);
    const type = out.toString('latin1', at + 4, at + 8);
    if (type === 'IDAT') {
      for (let i = at + 8 + 16; i < at + 8 + length; i += 7) out[i] = (out[i] ?? 0) ^ 0x5a;
      return out;
    }
    at += 12 + length;
  }
  throw new Error('damageIdat: no IDAT chunk');
}

function u16le(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

/** A minimal ZIP archive with one stored (uncompressed) entry, built by hand so no zip library is needed. */
function tinyZip(name: string, content: string): Buffer {
  const data = Buffer.from(content, 'utf8');
  const fileName = Buffer.from(name, 'utf8');
  const crc = crc32(data);
  // DOS date/time fixed at 2026-01-01 00:00 so the archive is byte-identical on every run.
  const dosTime = 0;
  const dosDate = ((2026 - 1980) << 9) | (1 << 5) | 1;
  const local = Buffer.concat([
    u32le(0x04034b50),
    u16le(20),
    u16le(0),
    u16le(0),
    u16le(dosTime),
    u16le(dosDate),
    u32le(crc),
    u32le(data.length),
    u32le(data.length),
    u16le(fileName.length),
    u16le(0),
    fileName,
    data,
  ]);
  const central = Buffer.concat([
    u32le(0x02014b50),
    u16le(20),
    u16le(20),
    u16le(0),
    u16le(0),
    u16le(dosTime),
    u16le(dosDate),
    u32le(crc),
    u32le(data.length),
    u32le(data.length),
    u16le(fileName.length),
    u16le(0),
    u16le(0),
    u16le(0),
    u16le(0),
    u32le(0),
    u32le(0),
    fileName,
  ]);
  const end = Buffer.concat([
    u32le(0x06054b50),
    u16le(0),
    u16le(0),
    u16le(1),
    u16le(1),
    u32le(central.length),
    u32le(local.length),
    u16le(0),
  ]);
  return Buffer.concat([local, central, end]);
}

/** A 1x1 GIF89a (the classic transparent pixel). */
function tinyGif(): Buffer {
  return Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
}

function pngChunk(type: string, data: Buffer): Buffer {
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData));
  return Buffer.concat([len, typeAndData, crc]);
}

/**
 * A PNG that declares 30000 x 30000 pixels (900 MP) but is only a few KB: the "pixel bomb" a decoder would try to
 * allocate ~900 MB for. The IDAT holds far fewer rows than declared, which is fine: inspection must refuse it from the
 * header alone, before anything decodes it.
 */
function pixelBombPng(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(30000, 0);
  ihdr.writeUInt32BE(30000, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // grayscale
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  // 64 rows of (filter byte + 30000 zero samples) compress to a couple of KB.
  const idat = deflateSync(Buffer.alloc(64 * 30001), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', idat),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

const RECEIPT_LINES: Line[] = [
  { text: 'ACME HARDWARE', x: 36, y: 56, size: 24, bold: true },
  { text: '12 Main Street, Springfield', x: 36, y: 84, size: 14 },
  { text: 'Date: 2026-11-02', x: 36, y: 124, size: 16 },
  { text: 'Invoice Number: INV-1042', x: 36, y: 150, size: 16 },
  { text: 'Hammer 1 x 18.50', x: 36, y: 190, size: 16 },
  { text: 'Screws 2 x 10.00', x: 36, y: 216, size: 16 },
  { text: 'Subtotal: 38.50', x: 36, y: 256, size: 16 },
  { text: 'Tax: 4.00', x: 36, y: 282, size: 16 },
  { text: 'Total: 42.50', x: 36, y: 316, size: 18, bold: true },
  { text: 'Thank you', x: 36, y: 360, size: 16 },
];

const LOREM = [
  'Payment is due within thirty days of the invoice date.',
  'Late payments accrue interest of one percent per month.',
  'Goods remain the property of the vendor until paid in full.',
  'Please quote the invoice number with every payment.',
  'Questions about this invoice go to billing@globex.example.',
];

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });

  // Receipt: 384 x 400 pt rendered at 150 dpi = 800 x 834 px, 16 pt text ~ 33 px tall, comfortable for OCR.
  const receiptPdf = new PdfBuilder();
  receiptPdf.addTextPage(384, 400, RECEIPT_LINES);
  const receiptRender = renderPng(receiptPdf.save(), 150);
  // Even dimensions: HEVC encodes in 4:2:0 and some decoders mishandle odd sizes.
  const meta = await sharp(receiptRender).metadata();
  const evenW = meta.width - (meta.width % 2);
  const evenH = meta.height - (meta.height % 2);
  const receiptPng = await sharp(receiptRender)
    .extract({ left: 0, top: 0, width: evenW, height: evenH })
    .png({ compressionLevel: 9, palette: true, colours: 16 })
    .toBuffer();
  write('receipt.png', receiptPng, `receipt image, ${evenW}x${evenH}, grayscale text`);

  // Stored pixels are turned 90° counter-clockwise; EXIF orientation 6 tells viewers to turn them back clockwise.
  const receiptJpg = await sharp(receiptPng)
    .rotate(-90)
    .jpeg({ quality: 80, mozjpeg: false })
    .withExif({ IFD0: { Make: 'Fixture', Model: 'make-fixtures' } })
    .withMetadata({ orientation: 6 })
    .toBuffer();
  write('receipt.jpg', receiptJpg, `receipt as JPEG, stored ${evenH}x${evenW} with EXIF orientation 6`);

  const tmp = mkdtempSync(join(tmpdir(), 'fixtures-'));
  try {
    const srcJpg = join(tmp, 'receipt-rgb.jpg');
    writeFileSync(srcJpg, await sharp(receiptPng).toColourspace('srgb').jpeg({ quality: 95 }).toBuffer());
    const heicPath = join(tmp, 'receipt.heic');
    execFileSync('/usr/bin/heif-enc', ['-q', '50', '-o', heicPath, srcJpg], { stdio: 'pipe' });
    write('receipt.heic', readFileSync(heicPath), `receipt as HEIC (heif-enc, x265), ${evenW}x${evenH}`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  const cardPdf = new PdfBuilder();
  cardPdf.addTextPage(350, 200, [
    { text: 'Jane Doe', x: 24, y: 44, size: 22, bold: true },
    { text: 'Head of Engineering', x: 24, y: 72, size: 15 },
    { text: 'Example Corp', x: 24, y: 100, size: 15 },
    { text: 'jane.doe@example.com', x: 24, y: 148, size: 14 },
    { text: '+1 555 0100', x: 24, y: 172, size: 14 },
  ]);
  const cardPng = await sharp(renderPng(cardPdf.save(), 200))
    .png({ compressionLevel: 9, palette: true, colours: 16 })
    .toBuffer();
  write('business-card.png', cardPng, 'business card image (name, title, company, email, phone)');

  const invoice = new PdfBuilder();
  invoice.addTextPage(612, 792, [
    { text: 'INVOICE', x: 72, y: 90, size: 28, bold: true },
    { text: 'Invoice Number: INV-2001', x: 72, y: 140, size: 16 },
    { text: 'Invoice Date: 2026-10-15', x: 72, y: 166, size: 16 },
    { text: 'Vendor: Globex Ltd', x: 72, y: 192, size: 16 },
    { text: 'Bill To: Initech Inc', x: 72, y: 218, size: 16 },
    { text: 'Consulting services, October 2026', x: 72, y: 270, size: 14 },
    { text: 'Total Due: 1250.00', x: 72, y: 320, size: 18, bold: true },
  ]);
  invoice.addTextPage(
    612,
    792,
    [{ text: 'Terms and Conditions', x: 72, y: 90, size: 20, bold: true }].concat(
      LOREM.map((text, i) => ({ text, x: 72, y: 130 + i * 24, size: 13, bold: false })),
    ),
  );
  const textPdf = invoice.save();
  write('text.pdf', textPdf, '2-page invoice PDF with a text layer');

  // Issue #26's two-page invoice: a text layer on both pages, the second only two short lines (under 20 visible
  // characters). Estimated as text; a worker that called page 2 a scan read both pages as images at 3x the estimate.
  const shortPage = new PdfBuilder();
  shortPage.addTextPage(612, 792, [
    { text: 'ACME SUPPLY CO', x: 72, y: 90, size: 20, bold: true },
    { text: 'INVOICE INV-2041', x: 72, y: 130, size: 14 },
    { text: 'Invoice date 2026-10-31', x: 72, y: 154, size: 12 },
    { text: 'Amount due 1250.00 USD', x: 72, y: 178, size: 12 },
  ]);
  shortPage.addTextPage(612, 792, [
    { text: 'Terms net 30', x: 72, y: 90, size: 12 },
    { text: 'Page 2', x: 72, y: 740, size: 10 },
  ]);
  write('short-page.pdf', shortPage.save(), '2-page invoice PDF whose second page has two short lines of text');

  // One-page invoice with a text layer: labels that match the invoice registry schema's fields (invoiceNumber,
  // invoiceDate, dueDate, vendor, totalDue, currency), a table of line items (quantity x unit price = amount),
  // subtotal + tax = total, and an IBAN with valid check digits, for grounding and its cross-field checks.
  const invoicePdf = new PdfBuilder();
  const row = (y: number, cells: [string, string, string, string], bold = false): Line[] =>
    [72, 320, 380, 480].map((x, i) => ({ text: cells[i] ?? '', x, y, size: 12, bold }));
  invoicePdf.addTextPage(612, 792, [
    { text: 'INVOICE', x: 72, y: 90, size: 28, bold: true },
    { text: 'Globex Ltd', x: 400, y: 80, size: 14, bold: true },
    { text: '1 Industrial Way, Springfield', x: 400, y: 98, size: 10 },
    { text: 'Vendor: Globex Ltd', x: 72, y: 140, size: 12 },
    { text: 'Invoice Number: INV-3001', x: 72, y: 160, size: 12 },
    { text: 'Invoice Date: 2026-09-30', x: 72, y: 180, size: 12 },
    { text: 'Due Date: Oct 30, 2026', x: 72, y: 200, size: 12 },
    { text: 'Currency: EUR', x: 72, y: 220, size: 12 },
    { text: 'Bill To: Initech Inc', x: 72, y: 240, size: 12 },
    ...row(290, ['Description', 'Qty', 'Unit Price', 'Amount'], true),
    ...row(314, ['Widget A', '4', '250.00', '1,000.00']),
    ...row(334, ['Widget B', '2', '37.50', '75.00']),
    ...row(354, ['Consulting hours', '3', '80.00', '240.00']),
    { text: 'Subtotal: 1,315.00', x: 380, y: 400, size: 12 },
    { text: 'Tax (20%): 263.00', x: 380, y: 420, size: 12 },
    { text: 'Total Due: 1,578.00', x: 380, y: 444, size: 14, bold: true },
    { text: 'IBAN: DE89 3704 0044 0532 0130 00', x: 72, y: 520, size: 12 },
    { text: 'Payment is due within thirty days of the invoice date.', x: 72, y: 540, size: 10 },
  ]);
  write('invoice.pdf', invoicePdf.save(), '1-page invoice PDF with a text layer (registry invoice fields, line items)');

  const scanned = new PdfBuilder();
  scanned.addImagePage(384, 400, receiptPng);
  write('scanned.pdf', scanned.save(), '1-page PDF whose page is only the receipt image (no text layer)');

  // Five scanned pages: a PDF estimated at the OCR price of every page, above the integration stack's threshold.
  // Each page's image differs by a white row or more (the same image five times would be stored once, and a PDF of
  // a few KB a page is taken for text).
  const scannedPages = new PdfBuilder();
  for (let page = 0; page < 5; page++) {
    const image = await sharp(receiptPng)
      .extend({ bottom: page + 1, background: '#ffffff' })
      .png({ compressionLevel: 9, palette: true, colours: 16 })
      .toBuffer();
    scannedPages.addImagePage(384, 400, image);
  }
  write('scanned-pages.pdf', scannedPages.save(), '5-page PDF, each page only the receipt image (no text layer)');

  const many = new PdfBuilder();
  for (let i = 1; i <= 1001; i++) {
    many.addTextPage(200, 100, [{ text: `Page ${i} of 1001`, x: 20, y: 50, size: 14 }]);
  }
  write('many-pages.pdf', many.save(), '1,001 one-line pages: one over the default 1,000-page limit');

  const twenty = new PdfBuilder();
  for (let i = 1; i <= 20; i++) {
    twenty.addTextPage(612, 792, [
      { text: `Section ${i}`, x: 72, y: 90, size: 20, bold: true },
      ...LOREM.map((text, j) => ({ text, x: 72, y: 130 + j * 22, size: 12 })),
      { text: `Page ${i} of 20`, x: 72, y: 740, size: 10 },
    ]);
  }
  write('twenty-pages.pdf', twenty.save(), '20-page text PDF (a paragraph per page), for the benchmark');

  const secret = new PdfBuilder();
  secret.addTextPage(612, 792, [{ text: 'Confidential', x: 72, y: 90, size: 20 }]);
  write(
    'encrypted.pdf',
    secret.save('compress=yes,encrypt=aes-256,user-password=fixture-user,owner-password=fixture-owner'),
    '1-page PDF encrypted with AES-256 (user password "fixture-user")',
  );

  write('truncated.jpg', truncate(receiptJpg, 0.6), 'first 60% of receipt.jpg (no EOI marker)');
  write('truncated.png', truncate(receiptPng, 0.6), 'first 60% of receipt.png (no IEND chunk)');
  write('truncated.pdf', truncate(textPdf, 0.6), 'first 60% of text.pdf (no startxref / %%EOF)');
  write(
    'damaged.png',
    damageIdat(receiptPng),
    'receipt.png with its image data (IDAT) damaged; headers and IEND intact',
  );
  write('zip-named.jpg', tinyZip('hello.txt', 'Hello, fixture!\n'), 'a real ZIP archive named .jpg');
  write('pdf-named.png', textPdf, 'a copy of text.pdf named .png (is a PDF)');
  write('gif-named.png', tinyGif(), 'a real 1x1 GIF89a named .png');
  write('pixel-bomb.png', pixelBombPng(), 'PNG whose IHDR declares 30000x30000 (900 MP)');
  write('empty.jpg', new Uint8Array(0), 'zero bytes');

  let total = 0;
  for (const f of written) {
    total += f.bytes;
    console.log(`${f.name.padEnd(20)} ${String(f.bytes).padStart(8)} B  ${f.what}`);
  }
  console.log(`wrote ${written.length} files, ${total} bytes, to ${OUT}`);
}

await main();
