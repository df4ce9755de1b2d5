/**
 * A generated corpus of hostile PDFs ("bombs"): small files whose structure asks a reader for huge or endless work.
 * Each is written byte by byte (offsets computed, streams deflated) so the bomb is exactly the structure named, with
 * nothing else wrong. `expect` says what the inspector must answer: `corrupt` (422 CORRUPT_FILE), or `pages` (a page
 * count, then the usual page limit applies). Used by the hostile-PDF tests and `npm run bench`.
 */
import { deflateSync } from 'node:zlib';

export interface PdfBomb {
  name: string;
  /** What the family attacks, for the test's output. */
  attack: string;
  /** Builds the file (some take a moment and hundreds of MB to build, so only on demand). */
  build: () => Uint8Array;
  /** What the API's inspector must answer. */
  expect: { corrupt: true } | { pages: number } | { tooManyPages: true };
  /**
   * Whether the hostile-PDF test also feeds this file to the worker's renderer (mupdf). Not `prev-chain`: mupdf spends
   * 4 s and 2 GiB on it; the inspector refuses it, so the worker never meets it.
   */
  render: boolean;
}

type Part = string | Uint8Array;

/** Assembles numbered objects into a PDF with a correct classic xref table (unless `tail` replaces it). */
class PdfWriter {
  private readonly parts: Uint8Array[] = [];
  private length = 0;
  readonly offsets = new Map<number, number>();

  constructor() {
    this.add('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n');
  }

  get size(): number {
    return this.length;
  }

  add(part: Part): void {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'latin1') : part;
    this.parts.push(bytes);
    this.length += bytes.byteLength;
  }

  object(num: number, body: string): void {
    this.offsets.set(num, this.length);
    this.add(`${num} 0 obj\n${body}\nendobj\n`);
  }

  stream(num: number, dict: string, data: Uint8Array): void {
    this.offsets.set(num, this.length);
    this.add(`${num} 0 obj\n<< ${dict} /Length ${data.byteLength} >>\nstream\n`);
    this.add(data);
    this.add('\nendstream\nendobj\n');
  }

  /** A classic xref table over objects 0..max and the trailer. */
  finish(trailer: string): Uint8Array {
    const max = Math.max(0, ...this.offsets.keys());
    const xref = this.length;
    let table = `xref\n0 ${max + 1}\n0000000000 65535 f \n`;
    for (let n = 1; n <= max; n++) {
      const at = this.offsets.get(n);
      table += at === undefined ? '0000000000 65535 f \n' : `${String(at).padStart(10, '0')} 00000 n \n`;
    }
    this.add(`${table}trailer\n<< /Size ${max + 1} ${trailer} >>\nstartxref\n${xref}\n%%EOF\n`);
    return this.bytes();
  }

  /** Ends with `startxref` pointing at `xrefOffset` (the caller wrote the section). */
  end(xrefOffset: number): Uint8Array {
    this.add(`startxref\n${xrefOffset}\n%%EOF\n`);
    return this.bytes();
  }

  bytes(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.parts));
  }
}

const PAGE_CONTENT = 'BT /F1 12 Tf 72 720 Td (Hello) Tj ET';

/** Catalog (1), page tree (2) with one page (3) and its content (4): the usual scaffold of a one-page file. */
function onePage(w: PdfWriter, contents = PAGE_CONTENT, resources = '<< >>'): void {
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  w.object(3, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources ${resources} >>`);
  w.stream(4, '', Buffer.from(contents, 'latin1'));
}

/** A cross-reference stream claiming `size` objects, whose rows inflate from a few KB. */
function xrefStreamBomb(size: number): Uint8Array {
  const w = new PdfWriter();
  onePage(w);
  const rows = Buffer.alloc(size); // /W [0 1 0]: one byte a row, every row type 1 at offset 0 (free)
  const data = deflateSync(rows, { level: 9 });
  const at = w.size;
  w.stream(5, `/Type /XRef /W [0 1 0] /Size ${size} /Root 1 0 R /Filter /FlateDecode`, data);
  return w.end(at);
}

/** An object stream whose /N claims `n` objects. */
function objectStreamCountBomb(n: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  const header = Buffer.from('2 0 '.repeat(1), 'latin1');
  const body = Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>', 'latin1');
  const data = deflateSync(Buffer.concat([header, Buffer.alloc(4 * 1024 * 1024, 0x20), body]), { level: 9 });
  w.stream(6, `/Type /ObjStm /N ${n} /First ${header.byteLength + 4 * 1024 * 1024} /Filter /FlateDecode`, data);
  w.object(3, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>`);
  w.stream(4, '', Buffer.from(PAGE_CONTENT, 'latin1'));
  // An xref stream listing object 2 inside object stream 6.
  const rows: number[] = [];
  const row = (type: number, a: number, b: number) =>
    rows.push(type, (a >> 24) & 255, (a >> 16) & 255, (a >> 8) & 255, a & 255, b);
  row(0, 0, 0);
  row(1, w.offsets.get(1) ?? 0, 0);
  row(2, 6, 0);
  row(1, w.offsets.get(3) ?? 0, 0);
  row(1, w.offsets.get(4) ?? 0, 0);
  row(0, 0, 0);
  row(1, w.offsets.get(6) ?? 0, 0);
  const at = w.size;
  row(1, at, 0);
  w.stream(7, '/Type /XRef /W [1 4 1] /Size 8 /Root 1 0 R', Uint8Array.from(rows));
  return w.end(at);
}

/** An array nested `depth` levels deep inside the catalog. */
function nestedArrays(depth: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, `<< /Type /Catalog /Pages 2 0 R /Junk ${'['.repeat(depth)}${']'.repeat(depth)} >>`);
  w.object(2, '<< /Type /Pages /Kids [3 0 R] >>');
  w.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>');
  return w.finish('/Root 1 0 R');
}

/** Dictionaries nested `depth` levels deep in the page tree root. */
function nestedDicts(depth: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, `<< /Type /Pages /Kids [3 0 R] /X ${'<< /A '.repeat(depth)}1${' >>'.repeat(depth)} >>`);
  w.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>');
  return w.finish('/Root 1 0 R');
}

/** A page tree whose /Count is a reference chain that loops, and whose Kids point back at the root. */
function circularReferences(): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, '<< /Type /Pages /Kids [2 0 R 5 0 R 2 0 R] /Count 6 0 R >>');
  w.object(5, '<< /Type /Pages /Kids [2 0 R 5 0 R] >>');
  w.object(6, '7 0 R');
  w.object(7, '6 0 R');
  return w.finish('/Root 1 0 R');
}

/** One /Kids array of `kids` page references and no /Count. */
function wideKids(kids: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, `<< /Type /Pages /Kids [${'3 0 R '.repeat(kids)}] >>`);
  w.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>');
  return w.finish('/Root 1 0 R');
}

/** A page tree that fans out 2-way `levels` deep without /Count: 2^levels nodes from a few objects. */
function fanOutTree(levels: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  for (let l = 0; l < levels; l++) w.object(2 + l, `<< /Type /Pages /Kids [${3 + l} 0 R ${3 + l} 0 R] >>`);
  w.object(2 + levels, '<< /Type /Page /MediaBox [0 0 612 792] >>');
  return w.finish('/Root 1 0 R');
}

/** A one-page file whose page tree root says /Count `count`. */
function countLie(count: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, `<< /Type /Pages /Kids [3 0 R] /Count ${count} >>`);
  w.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>');
  w.stream(4, '', Buffer.from(PAGE_CONTENT, 'latin1'));
  return w.finish('/Root 1 0 R');
}

/** A classic xref subsection that claims `count` entries. */
function xrefTableCountLie(count: number): Uint8Array {
  const w = new PdfWriter();
  onePage(w);
  const at = w.size;
  w.add(`xref\n0 ${count}\n0000000000 65535 f \n`);
  for (let n = 1; n <= 4; n++) w.add(`${String(w.offsets.get(n)).padStart(10, '0')} 00000 n \n`);
  w.add('trailer\n<< /Size 5 /Root 1 0 R >>\n');
  return w.end(at);
}

/** `sections` cross-reference streams chained through /Prev, each inflating to a few MB. */
function prevChain(sections: number): Uint8Array {
  const w = new PdfWriter();
  onePage(w);
  const data = deflateSync(Buffer.alloc(2 * 1024 * 1024), { level: 9 });
  let prev: number | undefined;
  for (let s = 0; s < sections; s++) {
    const at = w.size;
    const link = prev === undefined ? '' : ` /Prev ${prev}`;
    w.stream(10 + s, `/Type /XRef /W [0 1 0] /Size 2097152 /Root 1 0 R${link} /Filter /FlateDecode`, data);
    prev = at;
  }
  return w.end(prev ?? 0);
}

/** A page whose content stream inflates to `mb` MiB of spaces (the renderer reads it; the inspector need not). */
function contentFlateBomb(mb: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  w.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>');
  w.stream(4, '/Filter /FlateDecode', deflateSync(Buffer.alloc(mb * 1024 * 1024, 0x20), { level: 9 }));
  return w.finish('/Root 1 0 R');
}

/** LZW-encodes `data` as PDF's LZWDecode reads it (9–12-bit codes, MSB first, EarlyChange 1). */
function lzwEncode(data: Uint8Array): Uint8Array {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  let width = 9;
  const write = (code: number): void => {
    acc = (acc << width) | code;
    bits += width;
    while (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
    acc &= (1 << bits) - 1;
  };
  const table = new Map<number, number>();
  let next = 258;
  write(256);
  let prefix = data[0] ?? 0;
  for (let i = 1; i < data.length; i++) {
    const c = data[i] ?? 0;
    const code = table.get(prefix * 256 + c);
    if (code !== undefined) {
      prefix = code;
      continue;
    }
    write(prefix);
    table.set(prefix * 256 + c, next++);
    if (next === (1 << width) - 1 && width < 12) width++;
    if (next >= 4094) {
      write(256);
      table.clear();
      next = 258;
      width = 9;
    }
    prefix = c;
  }
  write(prefix);
  write(257);
  if (bits > 0) out.push((acc << (8 - bits)) & 0xff);
  return Uint8Array.from(out);
}

/** A content stream in LZW, repeated `copies` times as the page's /Contents array. */
function contentLzwBomb(copies: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  w.object(3, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [${'4 0 R '.repeat(copies)}] >>`);
  w.stream(4, '/Filter /LZWDecode', lzwEncode(Buffer.alloc(8 * 1024 * 1024, 0x20)));
  return w.finish('/Root 1 0 R');
}

/** A page that draws an image claiming `width` x `height` pixels, with a few bytes of data. */
function hugeImage(width: number, height: number): Uint8Array {
  const w = new PdfWriter();
  w.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  w.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  w.object(
    3,
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /Im0 5 0 R >> >> >>',
  );
  w.stream(4, '', Buffer.from('q 612 0 0 792 0 0 cm /Im0 Do Q', 'latin1'));
  w.stream(
    5,
    `/Type /XObject /Subtype /Image /Width ${width} /Height ${height} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode`,
    deflateSync(Buffer.alloc(64 * 1024), { level: 9 }),
  );
  return w.finish('/Root 1 0 R');
}

/** The corpus. Sizes are chosen to be small files that ask for large work. */
export function pdfBombs(): PdfBomb[] {
  return [
    {
      name: 'xref-stream-size-16m',
      attack: 'cross-reference stream /Size 16,000,000, 16 MB of rows deflated to ~16 KB',
      build: () => xrefStreamBomb(16_000_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'xref-stream-size-30m',
      attack: 'cross-reference stream /Size 30,000,000 (past the size limit of a Map)',
      build: () => xrefStreamBomb(30_000_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'object-stream-count',
      attack: 'object stream /N 50,000,000 over 4 MB of inflated padding',
      build: () => objectStreamCountBomb(50_000_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'nested-arrays',
      attack: '200,000 nested arrays in the catalog',
      build: () => nestedArrays(200_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'nested-dicts',
      attack: '100,000 nested dictionaries in the page tree',
      build: () => nestedDicts(100_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'circular-references',
      attack: '/Count as a reference loop, /Kids pointing back at the root',
      build: () => circularReferences(),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'kids-1m',
      attack: 'a page tree of 1,000,000 kids without /Count',
      build: () => wideKids(1_000_000),
      expect: { corrupt: true },
      render: true,
    },
    {
      name: 'fan-out-tree',
      attack: 'a page tree doubling 40 levels deep (2^40 nodes) without /Count',
      build: () => fanOutTree(40),
      expect: { pages: 1 },
      render: true,
    },
    {
      name: 'count-lie',
      attack: 'a one-page file whose /Count says 2,000,000,000',
      build: () => countLie(2_000_000_000),
      expect: { tooManyPages: true },
      render: true,
    },
    {
      name: 'xref-table-count-lie',
      attack: 'a classic xref subsection claiming 100,000,000 entries',
      build: () => xrefTableCountLie(100_000_000),
      expect: { pages: 1 },
      render: true,
    },
    {
      name: 'prev-chain',
      attack: '200 cross-reference streams chained by /Prev, each inflating to 2 MB',
      build: () => prevChain(200),
      expect: { corrupt: true },
      render: false,
    },
    {
      name: 'content-flate-bomb',
      attack: 'a content stream inflating to 256 MiB',
      build: () => contentFlateBomb(256),
      expect: { pages: 1 },
      render: true,
    },
    {
      name: 'content-lzw-bomb',
      attack: 'an LZW content stream of ~8 MB drawn 64 times',
      build: () => contentLzwBomb(64),
      expect: { pages: 1 },
      render: true,
    },
    {
      name: 'image-huge-dimensions',
      attack: 'an image claiming 1,000,000 x 1,000,000 pixels',
      build: () => hugeImage(1_000_000, 1_000_000),
      expect: { pages: 1 },
      render: true,
    },
  ];
}
