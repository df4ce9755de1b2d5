import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateSync } from 'node:zlib';
import * as mupdf from 'mupdf';
import { ApiError } from '../../shared/errors.js';
import { type InspectLimits, inspectUpload, type RangeReader } from '../../shared/inspect/index.js';
import { XrefTable } from '../../shared/inspect/pdf-xref.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const fixture = (name: string): Buffer => readFileSync(join(FIXTURES, name));

const MiB = 1024 * 1024;
const LIMITS: InspectLimits = {
  imageMaxBytes: 20 * MiB,
  imageMaxPixels: 100_000_000,
  pdfMaxBytes: 100 * MiB,
  pdfMaxPages: 1000,
};

/** A RangeReader over a buffer that validates ranges and counts what was read. */
function bufferReader(buf: Uint8Array) {
  const stats = { bytes: 0, requests: 0 };
  const read: RangeReader = async (start, endInclusive) => {
    if (!Number.isInteger(start) || start < 0 || endInclusive < start || endInclusive >= buf.length) {
      throw new Error(`invalid range ${start}-${endInclusive} for ${buf.length} bytes`);
    }
    stats.bytes += endInclusive - start + 1;
    stats.requests += 1;
    return buf.subarray(start, endInclusive + 1);
  };
  return { read, stats };
}

async function inspect(buf: Uint8Array, limits: InspectLimits = LIMITS) {
  const { read, stats } = bufferReader(buf);
  const facts = await inspectUpload(read, buf.length, limits);
  return { facts, stats };
}

/** The ApiError inspecting `buf` throws (fails the test when it resolves or throws something else). */
async function inspectError(buf: Uint8Array, limits: InspectLimits = LIMITS): Promise<ApiError> {
  const { read } = bufferReader(buf);
  const error = await inspectUpload(read, buf.length, limits).then(
    (facts) => new Error(`expected a rejection, got ${JSON.stringify(facts)}`),
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw error;
  return error;
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-built PDFs: exact control over offsets, xref formats and damage.

const PAGE_TREE_2 = {
  1: '<< /Type /Catalog /Pages 2 0 R >>',
  2: '<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>',
  3: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >>',
  4: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >>',
};

interface TableOptions {
  /** Added to every offset in the xref table (simulates a sloppy writer). */
  shift?: number;
  /** Overrides the startxref value. */
  startxref?: number;
  trailerExtra?: string;
}

/** A PDF with the given objects (number → body) and a classic xref table. */
function pdfWithTable(objects: Record<number, string>, options: TableOptions = {}): Buffer {
  let out = '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n';
  const offsets = new Map<number, number>();
  for (const [num, body] of Object.entries(objects)) {
    offsets.set(Number(num), out.length);
    out += `${num} 0 obj\n${body}\nendobj\n`;
  }
  const size = Math.max(...offsets.keys()) + 1;
  const xref = out.length;
  out += `xref\n0 ${size}\n0000000000 65535 f \n`;
  for (let n = 1; n < size; n++) {
    const offset = offsets.get(n);
    out +=
      offset === undefined
        ? '0000000000 00000 f \n'
        : `${String(offset + (options.shift ?? 0)).padStart(10, '0')} 00000 n \n`;
  }
  out += `trailer\n<< /Size ${size} /Root 1 0 R ${options.trailerExtra ?? ''} >>\n`;
  out += `startxref\n${options.startxref ?? xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** PNG "Up" prediction (predictor 12) of rows of `columns` bytes, as writers apply it to xref streams. */
function pngUpPredict(data: Uint8Array, columns: number): Buffer {
  const rows = data.length / columns;
  const out = Buffer.alloc(rows * (columns + 1));
  for (let r = 0; r < rows; r++) {
    out[r * (columns + 1)] = 2;
    for (let i = 0; i < columns; i++) {
      const cur = data[r * columns + i] ?? 0;
      const up = r > 0 ? (data[(r - 1) * columns + i] ?? 0) : 0;
      out[r * (columns + 1) + 1 + i] = (cur - up) & 0xff;
    }
  }
  return out;
}

/**
 * A PDF 1.5-style file: objects 1..n live in one compressed object stream, listed by a Flate + PNG-predicted
 * cross-reference stream with /W [1 2 1].
 */
function pdfWithXrefStream(objects: Record<number, string>): Buffer {
  const nums = Object.keys(objects).map(Number);
  let body = '';
  const header: string[] = [];
  for (const num of nums) {
    header.push(`${num} ${body.length}`);
    body += `${objects[num]}\n`;
  }
  const headerText = `${header.join(' ')}\n`;
  const objStmData = deflateSync(Buffer.from(headerText + body, 'latin1'));
  const objStmNum = Math.max(...nums) + 1;
  const xrefNum = objStmNum + 1;

  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const length = () => parts.reduce((n, p) => n + p.length, 0);
  const objStmOffset = length();
  parts.push(
    Buffer.from(
      `${objStmNum} 0 obj\n<< /Type /ObjStm /N ${nums.length} /First ${headerText.length} /Filter /FlateDecode /Length ${objStmData.length} >>\nstream\n`,
      'latin1',
    ),
    objStmData,
    Buffer.from('\nendstream\nendobj\n', 'latin1'),
  );
  const xrefOffset = length();

  const size = xrefNum + 1;
  const rows = Buffer.alloc(size * 4);
  const row = (n: number, type: number, a: number, b: number) => {
    rows[n * 4] = type;
    rows.writeUInt16BE(a, n * 4 + 1);
    rows[n * 4 + 3] = b;
  };
  row(0, 0, 0, 255);
  nums.forEach((num, index) => {
    row(num, 2, objStmNum, index);
  });
  row(objStmNum, 1, objStmOffset, 0);
  row(xrefNum, 1, xrefOffset, 0);
  const xrefData = deflateSync(pngUpPredict(rows, 4));
  parts.push(
    Buffer.from(
      `${xrefNum} 0 obj\n<< /Type /XRef /Size ${size} /W [1 2 1] /Root 1 0 R /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 4 >> /Length ${xrefData.length} >>\nstream\r\n`,
      'latin1',
    ),
    xrefData,
    Buffer.from(`\r\nendstream\nendobj\nstartxref\n${xrefOffset}\n%%EOF\n`, 'latin1'),
  );
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------------------------
// mupdf-built PDFs: what real writers produce.

function mupdfDocument(pages: number, image?: Uint8Array): mupdf.PDFDocument {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  const resources: Record<string, unknown> = { Font: { F1: font } };
  let extra = '';
  if (image) {
    resources.XObject = { Im1: doc.addImage(new mupdf.Image(image)) };
    extra = 'q 100 0 0 100 50 50 cm /Im1 Do Q\n';
  }
  for (let i = 1; i <= pages; i++) {
    const content = `BT /F1 14 Tf 72 700 Td (Page ${i} of ${pages}) Tj ET\n${i === 1 ? extra : ''}`;
    doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, resources, content));
  }
  return doc;
}

const saved = (doc: mupdf.PDFDocument, options: string) => Buffer.from(doc.saveToBuffer(options).asUint8Array());

/** A PNG of random noise (incompressible), `side` x `side` RGB. */
function noisePng(side: number): Buffer {
  let seed = 0x9e3779b9;
  const raw = Buffer.alloc(side * (side * 3 + 1));
  for (let i = 0; i < raw.length; i++) {
    // xorshift32: deterministic and incompressible enough.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    raw[i] = i % (side * 3 + 1) === 0 ? 0 : seed & 0xff;
  }
  const chunk = (type: string, data: Buffer) => {
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([head, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 1 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

// ---------------------------------------------------------------------------------------------------------------

describe('inspectUpload: fixtures', () => {
  it.each([
    ['receipt.png', 'image/png', 800, 834],
    // Stored dimensions, before EXIF orientation 6 turns it upright.
    ['receipt.jpg', 'image/jpeg', 834, 800],
    ['receipt.heic', 'image/heic', 800, 834],
    ['business-card.png', 'image/png', 973, 556],
  ])('%s is %s, %ix%i, one page', async (name, mime, width, height) => {
    const buf = fixture(name);
    const { facts } = await inspect(buf);
    expect(facts).toEqual({ mime, kind: 'image', sizeBytes: buf.length, width, height, pages: 1 });
  });

  it.each([
    ['text.pdf', 2],
    ['scanned.pdf', 1],
    ['twenty-pages.pdf', 20],
  ])('%s is a PDF with %i pages', async (name, pages) => {
    const buf = fixture(name);
    const { facts } = await inspect(buf);
    expect(facts).toEqual({ mime: 'application/pdf', kind: 'pdf', sizeBytes: buf.length, pages });
  });

  it('many-pages.pdf is refused with TOO_MANY_PAGES (1,001 > 1,000)', async () => {
    const error = await inspectError(fixture('many-pages.pdf'));
    expect(error.code).toBe('TOO_MANY_PAGES');
    expect(error.status).toBe(413);
    expect(error.details).toEqual({ pages: 1001, limitPages: 1000 });
  });

  it('many-pages.pdf passes when the page limit allows it', async () => {
    const { facts } = await inspect(fixture('many-pages.pdf'), { ...LIMITS, pdfMaxPages: 1001 });
    expect(facts.pages).toBe(1001);
  });

  it('encrypted.pdf is CORRUPT_FILE reason encrypted', async () => {
    const error = await inspectError(fixture('encrypted.pdf'));
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.details).toEqual({ reason: 'encrypted' });
    expect(error.message).toMatch(/encrypted/);
  });

  it.each(['truncated.jpg', 'truncated.png', 'truncated.pdf'])('%s is CORRUPT_FILE reason truncated', async (name) => {
    const error = await inspectError(fixture(name));
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.details).toEqual({ reason: 'truncated' });
  });

  it('pixel-bomb.png is CORRUPT_FILE reason pixel_limit, from its header alone', async () => {
    const error = await inspectError(fixture('pixel-bomb.png'));
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.details).toEqual({
      reason: 'pixel_limit',
      width: 30000,
      height: 30000,
      megapixels: 900,
      limitMegapixels: 100,
    });
  });

  it('empty.jpg is CORRUPT_FILE reason empty, without reading anything', async () => {
    const { read, stats } = bufferReader(new Uint8Array(0));
    await expect(inspectUpload(read, 0, LIMITS)).rejects.toMatchObject({
      code: 'CORRUPT_FILE',
      details: { reason: 'empty' },
    });
    expect(fixture('empty.jpg').length).toBe(0);
    expect(stats.requests).toBe(0);
  });

  it.each([
    ['zip-named.jpg', 'application/zip'],
    ['gif-named.png', 'image/gif'],
  ])('%s is UNSUPPORTED_FILE_TYPE (detected %s), whatever its name says', async (name, detected) => {
    const error = await inspectError(fixture(name));
    expect(error.code).toBe('UNSUPPORTED_FILE_TYPE');
    expect(error.status).toBe(415);
    expect(error.details).toMatchObject({ detected });
  });

  it('undetectable bytes are UNSUPPORTED_FILE_TYPE with detected null', async () => {
    const error = await inspectError(Buffer.from('just some plain text, not an image\n'));
    expect(error.code).toBe('UNSUPPORTED_FILE_TYPE');
    expect(error.details).toMatchObject({ detected: null });
  });

  it('pdf-named.png is detected as a PDF from its bytes', async () => {
    const { facts } = await inspect(fixture('pdf-named.png'));
    expect(facts).toMatchObject({ mime: 'application/pdf', kind: 'pdf', pages: 2 });
  });
});

describe('inspectUpload: size limits', () => {
  it('an image over imageMaxBytes is FILE_TOO_LARGE', async () => {
    const buf = fixture('receipt.png');
    const error = await inspectError(buf, { ...LIMITS, imageMaxBytes: 10_000 });
    expect(error.code).toBe('FILE_TOO_LARGE');
    expect(error.details).toEqual({ sizeBytes: buf.length, limitBytes: 10_000 });
  });

  it('a PDF is held to pdfMaxBytes, not imageMaxBytes', async () => {
    const buf = fixture('scanned.pdf');
    await expect(inspect(buf, { ...LIMITS, imageMaxBytes: 1000 })).resolves.toMatchObject({ facts: { pages: 1 } });
    const error = await inspectError(buf, { ...LIMITS, pdfMaxBytes: 20_000 });
    expect(error.code).toBe('FILE_TOO_LARGE');
    expect(error.details).toEqual({ sizeBytes: buf.length, limitBytes: 20_000 });
  });

  it('the pixel limit is configurable: receipt.png (0.67 MP) fails a 0.5 MP limit', async () => {
    const error = await inspectError(fixture('receipt.png'), { ...LIMITS, imageMaxPixels: 500_000 });
    expect(error.details).toMatchObject({ reason: 'pixel_limit', width: 800, height: 834, limitMegapixels: 0.5 });
  });
});

describe('inspectUpload: images', () => {
  it('a JPEG with a few zero bytes of padding after EOI is accepted', async () => {
    const buf = Buffer.concat([fixture('receipt.jpg'), Buffer.alloc(4)]);
    const { facts } = await inspect(buf);
    expect(facts).toMatchObject({ mime: 'image/jpeg', width: 834, height: 800 });
  });

  describe('motion photos (a video after the JPEG, announced in its XMP)', () => {
    // A stand-in for the MP4 a phone appends: an ftyp box and some payload.
    const video = Buffer.concat([Buffer.from('00000018667479706d703432', 'hex'), Buffer.alloc(5000, 7)]);

    /** receipt.jpg with an XMP APP1 segment right after SOI, then `trailer`. */
    function motionPhoto(xmp: string, trailer: Buffer = video): Buffer {
      const jpeg = fixture('receipt.jpg');
      const payload = Buffer.from(`http://ns.adobe.com/xap/1.0/\0${xmp}`, 'latin1');
      const header = Buffer.from([0xff, 0xe1, 0, 0]);
      header.writeUInt16BE(payload.length + 2, 2);
      return Buffer.concat([jpeg.subarray(0, 2), header, payload, jpeg.subarray(2), trailer]);
    }

    it('a Pixel motion photo (GCamera:MicroVideoOffset) is accepted', async () => {
      const buf = motionPhoto(`<rdf:Description GCamera:MotionPhoto="1" GCamera:MicroVideoOffset="${video.length}"/>`);
      const { facts } = await inspect(buf);
      expect(facts).toMatchObject({ mime: 'image/jpeg', width: 834, height: 800, sizeBytes: buf.length });
    });

    it('a Container:Directory motion photo (Samsung, newer Pixels) is accepted', async () => {
      const xmp =
        '<Container:Directory><rdf:Seq>' +
        '<rdf:li><Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary" Item:Length="0" Item:Padding="0"/></rdf:li>' +
        `<rdf:li><Container:Item Item:Mime="video/mp4" Item:Semantic="MotionPhoto" Item:Length="${video.length}"/></rdf:li>` +
        '</rdf:Seq></Container:Directory>';
      const { facts } = await inspect(motionPhoto(xmp));
      expect(facts).toMatchObject({ mime: 'image/jpeg', width: 834, height: 800 });
    });

    it('a motion photo whose video was stripped (XMP kept) is accepted', async () => {
      const buf = motionPhoto(`<x GCamera:MicroVideoOffset="${video.length}"/>`, Buffer.alloc(0));
      const { facts } = await inspect(buf);
      expect(facts).toMatchObject({ mime: 'image/jpeg', width: 834, height: 800 });
    });

    it('an XMP trailer at least as long as the file falls back to checking the end of the file', async () => {
      const jpeg = motionPhoto('<x GCamera:MicroVideoOffset="99999999"/>', Buffer.alloc(0));
      await expect(inspect(jpeg)).resolves.toMatchObject({ facts: { mime: 'image/jpeg' } });
      const error = await inspectError(motionPhoto('<x GCamera:MicroVideoOffset="99999999"/>').subarray(0, -10));
      expect(error.details).toEqual({ reason: 'truncated' });
    });

    it('a motion photo cut inside its video is still caught as truncated', async () => {
      const buf = motionPhoto(`<x GCamera:MicroVideoOffset="${video.length}"/>`);
      const error = await inspectError(buf.subarray(0, buf.length - 1000));
      expect(error.details).toEqual({ reason: 'truncated' });
    });

    it('data after the end marker without an XMP announcing it is truncated, as before', async () => {
      const buf = Buffer.concat([fixture('receipt.jpg'), video]);
      const error = await inspectError(buf);
      expect(error.details).toEqual({ reason: 'truncated' });
    });

    it('the still image of a motion photo decodes (what the worker sends on)', async () => {
      const { default: sharp } = await import('sharp');
      const buf = motionPhoto(`<x GCamera:MicroVideoOffset="${video.length}"/>`);
      const meta = await sharp(buf).metadata();
      expect([meta.width, meta.height]).toEqual([834, 800]);
      const { info } = await sharp(buf, { failOn: 'error' }).raw().toBuffer({ resolveWithObject: true });
      expect(info.width).toBe(834);
    });
  });

  it('a JPEG cut inside its headers is truncated', async () => {
    const error = await inspectError(fixture('receipt.jpg').subarray(0, 300));
    expect(error.details).toEqual({ reason: 'truncated' });
  });

  it('a PNG with a damaged IHDR checksum is unreadable', async () => {
    const buf = Buffer.from(fixture('receipt.png'));
    buf[20] = (buf[20] ?? 0) ^ 0xff; // inside the height field
    const error = await inspectError(buf);
    expect(error.details).toEqual({ reason: 'unreadable' });
  });

  it('a large PNG is inspected from its head and tail only', async () => {
    const png = fixture('receipt.png');
    // Splice a 2 MiB ancillary chunk after IHDR: decoders skip it, and so must inspection.
    const filler = Buffer.alloc(8 + 2 * MiB + 4);
    filler.writeUInt32BE(2 * MiB, 0);
    filler.write('zzZz', 4, 'latin1');
    const buf = Buffer.concat([png.subarray(0, 33), filler, png.subarray(33)]);
    const { facts, stats } = await inspect(buf);
    expect(facts).toMatchObject({ mime: 'image/png', width: 800, height: 834 });
    expect(stats.bytes).toBeLessThan(256 * 1024);
  });

  it('a HEIC cut short is truncated', async () => {
    const heic = fixture('receipt.heic');
    const error = await inspectError(heic.subarray(0, Math.floor(heic.length * 0.6)));
    expect(error.details).toEqual({ reason: 'truncated' });
  });

  it('a HEIC with bytes after its last box is truncated (boxes must tile the file)', async () => {
    const error = await inspectError(Buffer.concat([fixture('receipt.heic'), Buffer.from([0, 0, 0])]));
    expect(error.details).toEqual({ reason: 'truncated' });
  });

  /** receipt.heic with its ftyp rewritten to the generic `mif1` brands and the first item type replaced. */
  function genericHeif(itemType: string): Buffer {
    const buf = Buffer.from(fixture('receipt.heic'));
    expect(buf.toString('latin1', 4, 28)).toBe('ftypheic\0\0\0\0mif1heicmiaf');
    buf.write('ftypmif1\0\0\0\0mif1miafmiaf', 4, 'latin1');
    const at = buf.indexOf('hvc1', 0, 'latin1');
    expect(at).toBeGreaterThan(0);
    buf.write(itemType, at, 'latin1');
    return buf;
  }

  it('a generic HEIF (mif1) whose image is HEVC-coded is accepted as HEIC', async () => {
    const { facts } = await inspect(genericHeif('hvc1'));
    expect(facts).toMatchObject({ mime: 'image/heic', width: 800, height: 834 });
  });

  it('a generic HEIF whose image is not HEVC (e.g. AV1) is UNSUPPORTED_FILE_TYPE', async () => {
    const error = await inspectError(genericHeif('av01'));
    expect(error.code).toBe('UNSUPPORTED_FILE_TYPE');
    expect(error.details).toMatchObject({ detected: 'image/heif' });
  });

  it('a reader failure propagates unchanged (it is not the file being corrupt)', async () => {
    const failure = new Error('S3 is down');
    await expect(
      inspectUpload(
        async () => {
          throw failure;
        },
        1000,
        LIMITS,
      ),
    ).rejects.toBe(failure);
  });
});

describe('inspectUpload: PDF structure', () => {
  it('reads a classic xref table', async () => {
    const buf = pdfWithTable(PAGE_TREE_2);
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(2);
    expect(stats.bytes).toBe(buf.length); // read once: no repair scan was needed
  });

  it('rebuilds the object map when xref offsets are wrong', async () => {
    const buf = pdfWithTable(PAGE_TREE_2, { shift: 7 });
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(2);
    expect(stats.bytes).toBe(2 * buf.length); // the head/tail read, then one full scan
  });

  it('rebuilds when startxref points at garbage', async () => {
    const { facts } = await inspect(pdfWithTable(PAGE_TREE_2, { startxref: 3 }));
    expect(facts.pages).toBe(2);
  });

  it('a rebuild ignores text that only looks like an object header past what the file allows (in a stream)', async () => {
    const withText = {
      ...PAGE_TREE_2,
      5: '<< /Length 30 >>\nstream\n(see 900000 0 obj in the spec)\nendstream',
    };
    // Offsets off by 7: the reader rebuilds by scanning, and the scan also reads the stream's text.
    const { facts } = await inspect(pdfWithTable(withText, { shift: 7 }));
    expect(facts.pages).toBe(2);
  });

  it('cross-reference entries: the newest section wins, and within one section the last entry listed', () => {
    const table = new XrefTable(100);
    table.add(2, { type: 1, offset: 10 }, 0);
    table.add(2, { type: 1, offset: 20 }, 0);
    expect(table.get(2)).toEqual({ type: 1, offset: 20 });
    // An older section (read later) never replaces it.
    table.add(2, { type: 1, offset: 30 }, 1);
    expect(table.get(2)).toEqual({ type: 1, offset: 20 });
    expect(table.get(3)).toBeUndefined();
  });

  it('stops on a /Prev cycle', async () => {
    const base = pdfWithTable(PAGE_TREE_2);
    const xref = base.lastIndexOf('xref\n0 ');
    const cyclic = pdfWithTable(PAGE_TREE_2, { trailerExtra: `/Prev ${xref}` });
    expect(cyclic.lastIndexOf('xref\n0 ')).toBe(xref);
    const { facts } = await inspect(cyclic);
    expect(facts.pages).toBe(2);
  });

  it('counts the leaves when the page tree has no /Count', async () => {
    const { facts } = await inspect(
      pdfWithTable({ ...PAGE_TREE_2, 2: '<< /Type /Pages /Kids [3 0 R 4 0 R 3 0 R] >>' }),
    );
    // 3 0 R is listed twice but is one object: a cycle guard, not a page count.
    expect(facts.pages).toBe(2);
  });

  it('a page tree with /Count 0 is unreadable', async () => {
    const error = await inspectError(pdfWithTable({ ...PAGE_TREE_2, 2: '<< /Type /Pages /Kids [] /Count 0 >>' }));
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.details).toEqual({ reason: 'unreadable' });
  });

  it('a PDF with no recoverable structure is unreadable', async () => {
    const buf = Buffer.from('%PDF-1.4\nthis is not a pdf body at all\nstartxref\n9\n%%EOF\n', 'latin1');
    const error = await inspectError(buf);
    expect(error.details).toEqual({ reason: 'unreadable' });
  });

  it('an /Encrypt entry in the trailer is refused as encrypted', async () => {
    const buf = pdfWithTable(
      { ...PAGE_TREE_2, 5: '<< /Filter /Standard /V 2 /R 3 >>' },
      { trailerExtra: '/Encrypt 5 0 R' },
    );
    const error = await inspectError(buf);
    expect(error.details).toEqual({ reason: 'encrypted' });
  });

  it('reads a PNG-predicted xref stream with objects in an object stream', async () => {
    const buf = pdfWithXrefStream({
      1: '<< /Type /Catalog /Pages 2 0 R >>',
      2: '<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>',
      3: '<< /Type /Page /Parent 2 0 R >>',
      4: '<< /Type /Page /Parent 2 0 R >>',
      5: '<< /Type /Page /Parent 2 0 R >>',
    });
    expect(buf.includes('/ObjStm')).toBe(true);
    expect(buf.includes('/Type /Catalog')).toBe(false); // only inside the compressed stream
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(3);
    expect(stats.bytes).toBe(buf.length); // read once: no repair scan was needed
  });

  it('recovers an object-stream PDF whose startxref is wrong', async () => {
    const good = pdfWithXrefStream({
      1: '<< /Type /Catalog /Pages 2 0 R >>',
      2: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      3: '<< /Type /Page /Parent 2 0 R >>',
    });
    const text = good.toString('latin1');
    const broken = Buffer.from(text.replace(/startxref\n\d+/, 'startxref\n1'), 'latin1');
    const { facts } = await inspect(broken);
    expect(facts.pages).toBe(1);
  });

  it('reads a hybrid file: a classic table plus an /XRefStm side stream for compressed objects', async () => {
    const streamed = pdfWithXrefStream({
      1: '<< /Type /Catalog /Pages 2 0 R >>',
      2: '<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>',
      3: '<< /Type /Page /Parent 2 0 R >>',
      4: '<< /Type /Page /Parent 2 0 R >>',
    });
    const text = streamed.toString('latin1');
    const body = text.slice(0, text.lastIndexOf('startxref'));
    const objStm = body.indexOf('5 0 obj');
    const side = body.indexOf('6 0 obj');
    const pad = (n: number) => String(n).padStart(10, '0');
    // The table lists only the object stream and the side stream; objects 1-4 are found through /XRefStm alone.
    const table =
      `xref\n0 1\n0000000000 65535 f \n5 2\n${pad(objStm)} 00000 n \n${pad(side)} 00000 n \n` +
      `trailer\n<< /Size 7 /Root 1 0 R /XRefStm ${side} >>\nstartxref\n${body.length}\n%%EOF\n`;
    const buf = Buffer.from(body + table, 'latin1');
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(2);
    expect(stats.bytes).toBe(buf.length); // read once: resolved through the side stream, not by a repair scan
  });

  it('reads what mupdf writes with xref and object streams', async () => {
    const buf = saved(mupdfDocument(7), 'compress=yes,objstms=yes');
    expect(buf.includes('/ObjStm')).toBe(true);
    expect(buf.includes('/XRef')).toBe(true);
    expect(/\nxref\n/.test(buf.toString('latin1'))).toBe(false); // no classic table
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(7);
    expect(stats.bytes).toBe(buf.length); // read once: no repair scan was needed
  });

  it('follows an incremental update (newest entries win)', async () => {
    const base = saved(mupdfDocument(2), 'compress=yes');
    const doc = new mupdf.PDFDocument(base);
    const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
    doc.insertPage(
      -1,
      doc.addPage([0, 0, 612, 792], 0, { Font: { F1: font } }, 'BT /F1 14 Tf 72 700 Td (Added) Tj ET'),
    );
    const updated = saved(doc, 'incremental=yes');
    expect(updated.subarray(0, base.length).equals(base)).toBe(true);
    expect(updated.toString('latin1').match(/%%EOF/g)).toHaveLength(2);
    expect((await inspect(base)).facts.pages).toBe(2);
    const { facts, stats } = await inspect(updated);
    expect(facts.pages).toBe(3);
    expect(stats.bytes).toBe(updated.length); // the /Prev chain resolved it, not a repair scan
  });

  it('an incremental update cut off before its %%EOF is truncated', async () => {
    const base = saved(mupdfDocument(2), 'compress=yes');
    const doc = new mupdf.PDFDocument(base);
    doc.deletePage(1);
    const updated = saved(doc, 'incremental=yes');
    const error = await inspectError(updated.subarray(0, updated.length - 20));
    expect(error.details).toEqual({ reason: 'truncated' });
  });

  it('reads far less than the whole of a large 20-page PDF', async () => {
    const buf = saved(mupdfDocument(20, noisePng(700)), 'compress=yes');
    expect(buf.length).toBeGreaterThan(MiB);
    const { facts, stats } = await inspect(buf);
    expect(facts.pages).toBe(20);
    expect(stats.bytes).toBeLessThan(buf.length / 4);
    expect(stats.requests).toBeLessThanOrEqual(6);
  });

  it('a large PDF with a broken xref is still counted, by one bounded scan', async () => {
    const buf = saved(mupdfDocument(20, noisePng(700)), 'compress=yes');
    const text = buf.toString('latin1');
    const broken = Buffer.from(text.replace(/startxref\n\d+/, 'startxref\n17'), 'latin1');
    const { facts, stats } = await inspect(broken);
    expect(facts.pages).toBe(20);
    expect(stats.bytes).toBeLessThan(broken.length * 2);
  });
});
