/**
 * PDF: the page count, from the structure alone. A PDF is read from its end: `startxref` points at the newest
 * cross-reference section, which maps object numbers to byte offsets (or to slots inside compressed object streams)
 * and chains to older sections through /Prev. From the trailer's /Root we reach the page tree, whose root /Count is the
 * page count. Only the tail, the cross-reference sections and a handful of small objects are read, never the page
 * contents, fonts or images, which are almost all of a PDF's bytes.
 */
import { constants, inflateSync } from 'node:zlib';
import { CorruptFileError } from '../errors.js';
import {
  Incomplete,
  isDict,
  Lexer,
  latin1,
  nameOf,
  type PdfDict,
  PdfRef,
  PdfSyntaxError,
  type PdfValue,
  uint,
} from './pdf-syntax.js';
import { type ByteSource, PastEndError } from './source.js';

type XrefEntry = { type: 0 } | { type: 1; offset: number } | { type: 2; stream: number; index: number };

interface IndirectObject {
  num: number;
  value: PdfValue;
  /** Absolute offset of the stream data, for stream objects. */
  streamStart?: number;
}

interface ObjectStream {
  /** Object numbers in the order the stream lists them, and their offsets relative to `first`. */
  nums: number[];
  offsets: number[];
  first: number;
  data: Uint8Array;
}

/** The structure is damaged in a way a full-file scan may repair (wrong offsets, missing objects, bad syntax). */
class BrokenPdf extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokenPdf';
  }
}

const isBroken = (e: unknown) =>
  e instanceof BrokenPdf || e instanceof PdfSyntaxError || e instanceof PastEndError || e instanceof Incomplete;

// `%%EOF` should be within the last 1024 bytes, but some producers append a little junk; look a bit further.
const TAIL_BYTES = 4096;
const FIRST_WINDOW = 4096;
const MAX_WINDOW = 16 * 1024 * 1024;
const MAX_SECTIONS = 256;
const MAX_OBJECT_LOADS = 20_000;
const MAX_REF_CHAIN = 32;
const MAX_DECODED_BYTES = 32 * 1024 * 1024;
const MAX_TOTAL_DECODED_BYTES = 128 * 1024 * 1024;
const MAX_PAGE_TREE_NODES = 200_000;
const MAX_CACHED_OBJECT_STREAMS = 32;
const SCAN_CHUNK = 1024 * 1024;
const SCAN_OVERLAP = 256;

/** Counts a PDF's pages from its structure; throws CorruptFileError (truncated, encrypted, unreadable). */
export async function inspectPdf(src: ByteSource, maxScanBytes: number): Promise<number> {
  const startxref = await findStartxref(src);
  const pdf = new PdfFile(src, maxScanBytes);
  try {
    try {
      if (startxref === undefined) throw new BrokenPdf('startxref has no offset');
      await pdf.loadXref(startxref);
    } catch (error) {
      if (!isBroken(error)) throw error;
      await pdf.rebuild();
    }
    pdf.assertNotEncrypted();
    try {
      return await pdf.pageCount();
    } catch (error) {
      if (!isBroken(error) || pdf.rebuilt) throw error;
      // Many real PDFs have cross-reference offsets that are slightly off; readers rebuild the map by scanning.
      await pdf.rebuild();
      pdf.assertNotEncrypted();
      return await pdf.pageCount();
    }
  } catch (error) {
    if (isBroken(error)) {
      throw new CorruptFileError('unreadable', `PDF structure is unreadable: ${(error as Error).message}`);
    }
    throw error;
  }
}

/** The newest cross-reference offset; a file that lacks `startxref`/`%%EOF` at its end was cut short. */
async function findStartxref(src: ByteSource): Promise<number | undefined> {
  const length = Math.min(src.size, TAIL_BYTES);
  const tail = latin1(await src.read(src.size - length, length));
  const eof = tail.lastIndexOf('%%EOF');
  const keyword = eof < 0 ? -1 : tail.lastIndexOf('startxref', eof);
  // Junk after %%EOF is common and harmless, but PDF syntax there is an appended update that was cut off: reading
  // the older revision instead would silently drop the newest changes.
  if (keyword < 0 || /\d[\0\t\n\f\r ]+obj\b|xref|trailer|endstream/.test(tail.slice(eof + 5))) {
    throw new CorruptFileError('truncated', 'PDF does not end with startxref and %%EOF (the upload is incomplete)');
  }
  const match = /^startxref[\0\t\n\f\r ]+(\d{1,15})/.exec(tail.slice(keyword, eof));
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

class PdfFile {
  private entries = new Map<number, XrefEntry>();
  /** Trailer dictionaries, newest first. */
  private trailers: PdfDict[] = [];
  private readonly objects = new Map<number, IndirectObject>();
  private readonly objectStreams = new Map<number, ObjectStream>();
  private objectLoads = 0;
  private decodedBytes = 0;
  rebuilt = false;

  constructor(
    private readonly src: ByteSource,
    private readonly maxScanBytes: number,
  ) {}

  /** Reads the cross-reference chain from `startxref` through every /Prev; newer entries win. */
  async loadXref(startxref: number): Promise<void> {
    const visited = new Set<number>();
    let offset: number | undefined = startxref;
    // A /Prev cycle (hostile or just buggy) would loop forever; stop at a section already read.
    while (offset !== undefined && !visited.has(offset) && visited.size < MAX_SECTIONS) {
      visited.add(offset);
      const { entries, trailer } = await this.readSection(offset);
      this.trailers.push(trailer);
      for (const [num, entry] of entries) if (!this.entries.has(num)) this.entries.set(num, entry);
      offset = uint(trailer.get('Prev'));
    }
  }

  /** Refuses encrypted files: their objects cannot be read (or rendered) without the password. */
  assertNotEncrypted(): void {
    const encrypt = this.trailers.find((t) => t.has('Encrypt') && t.get('Encrypt') !== null);
    if (encrypt) {
      throw new CorruptFileError('encrypted', 'PDF is encrypted; remove the password protection and upload it again');
    }
  }

  /** /Root → /Pages → /Count; walks the page tree only when /Count is missing. */
  async pageCount(): Promise<number> {
    const root = this.trailers.map((t) => t.get('Root')).find((r) => r instanceof PdfRef || isDict(r));
    if (root === undefined) throw new BrokenPdf('trailer has no /Root');
    const catalog = await this.resolve(root);
    if (!isDict(catalog)) throw new BrokenPdf('/Root is not a dictionary');
    const pages = await this.resolve(catalog.get('Pages'));
    if (!isDict(pages)) throw new BrokenPdf('catalog has no /Pages dictionary');
    const count = await this.resolve(pages.get('Count'));
    if (typeof count === 'number') {
      if (!Number.isInteger(count) || count <= 0) {
        throw new CorruptFileError('unreadable', `PDF page tree declares ${count} pages`);
      }
      return count;
    }
    const leaves = await this.countLeaves(pages);
    if (leaves <= 0) throw new CorruptFileError('unreadable', 'PDF page tree has no pages');
    return leaves;
  }

  private async countLeaves(root: PdfDict): Promise<number> {
    const seen = new Set<number>();
    const queue: PdfValue[] = [root];
    let leaves = 0;
    for (let visited = 0; queue.length > 0; visited++) {
      if (visited > MAX_PAGE_TREE_NODES) throw new BrokenPdf('page tree is too large');
      const item = queue.shift() ?? null;
      if (item instanceof PdfRef) {
        if (seen.has(item.num)) continue; // a cycle in the tree
        seen.add(item.num);
      }
      const node = await this.resolve(item);
      if (!isDict(node)) continue;
      const kids = await this.resolve(node.get('Kids'));
      if (nameOf(node.get('Type')) === 'Pages' || Array.isArray(kids)) {
        if (Array.isArray(kids)) queue.push(...kids);
      } else {
        leaves++;
      }
    }
    return leaves;
  }

  /** Follows references to a direct value; a missing object is a broken structure. */
  async resolve(value: PdfValue | undefined): Promise<PdfValue> {
    let v: PdfValue | undefined = value;
    for (let i = 0; v instanceof PdfRef; i++) {
      if (i >= MAX_REF_CHAIN) throw new BrokenPdf('reference chain is too long');
      v = (await this.load(v.num)).value;
    }
    return v ?? null;
  }

  private async load(num: number): Promise<IndirectObject> {
    const cached = this.objects.get(num);
    if (cached) return cached;
    if (++this.objectLoads > MAX_OBJECT_LOADS) {
      throw new CorruptFileError('unreadable', 'PDF structure requires too many object reads to inspect');
    }
    const entry = this.entries.get(num);
    let obj: IndirectObject;
    if (!entry || entry.type === 0) {
      throw new BrokenPdf(`object ${num} is not in the cross-reference table`);
    } else if (entry.type === 1) {
      obj = await this.window(entry.offset, (lx) => parseIndirectObject(lx, entry.offset));
      if (obj.num !== num) throw new BrokenPdf(`offset ${entry.offset} holds object ${obj.num}, not ${num}`);
    } else {
      obj = { num, value: await this.fromObjectStream(entry.stream, entry.index, num) };
    }
    this.objects.set(num, obj);
    return obj;
  }

  private async fromObjectStream(streamNum: number, index: number, num: number): Promise<PdfValue> {
    const stream = await this.objectStream(streamNum);
    // The xref's index should point at the right slot; search by number when it does not.
    let slot = stream.nums[index] === num ? index : stream.nums.lastIndexOf(num);
    if (slot < 0) throw new BrokenPdf(`object ${num} is not in object stream ${streamNum}`);
    slot = Math.max(0, slot);
    const lx = new Lexer(stream.data, stream.first + (stream.offsets[slot] ?? 0), true);
    return lx.parseValue();
  }

  private async objectStream(num: number): Promise<ObjectStream> {
    const cached = this.objectStreams.get(num);
    if (cached) return cached;
    const obj = await this.load(num);
    const dict = obj.value;
    if (!isDict(dict) || obj.streamStart === undefined || nameOf(dict.get('Type')) !== 'ObjStm') {
      throw new BrokenPdf(`object ${num} is not an object stream`);
    }
    const n = uint(await this.resolve(dict.get('N')));
    const first = uint(await this.resolve(dict.get('First')));
    if (n === undefined || first === undefined) throw new BrokenPdf(`object stream ${num} lacks /N or /First`);
    const data = await this.streamData(dict, obj.streamStart);
    // The stream opens with N pairs "objnum offset", then the objects themselves from byte /First.
    const lx = new Lexer(data.subarray(0, Math.min(first, data.length)), 0, true);
    const nums: number[] = [];
    const offsets: number[] = [];
    for (let i = 0; i < n; i++) {
      const a = lx.next();
      const b = lx.next();
      if (a.t !== 'num' || b.t !== 'num') break;
      nums.push(a.v);
      offsets.push(b.v);
    }
    const stream = { nums, offsets, first, data };
    if (this.objectStreams.size >= MAX_CACHED_OBJECT_STREAMS) this.objectStreams.clear();
    this.objectStreams.set(num, stream);
    return stream;
  }

  /** One cross-reference section at `offset`: a classic `xref` table or a cross-reference stream. */
  private async readSection(
    offset: number,
    streamOnly = false,
  ): Promise<{ entries: Map<number, XrefEntry>; trailer: PdfDict }> {
    if (offset >= this.src.size) throw new BrokenPdf(`cross-reference offset ${offset} is past the end`);
    const parsed = await this.window(offset, (lx) => {
      const save = lx.pos;
      const tok = lx.next();
      // A hybrid file's side section must be a stream; accepting a table there would allow /XRefStm loops.
      if (tok.t === 'kw' && tok.v === 'xref' && !streamOnly) return { table: parseXrefTable(lx) };
      lx.pos = save;
      return { stream: parseIndirectObject(lx, offset) };
    });
    if (parsed.table) {
      const { entries, trailer } = parsed.table;
      // A "hybrid" file keeps a classic table for old readers and lists compressed objects in a side stream.
      const side = uint(trailer.get('XRefStm'));
      if (side !== undefined) {
        try {
          const hidden = await this.readSection(side, true);
          for (const [num, entry] of hidden.entries) {
            if (entry.type !== 0 && entries.get(num)?.type !== 1) entries.set(num, entry);
          }
        } catch (error) {
          if (!isBroken(error)) throw error;
        }
      }
      return { entries, trailer };
    }
    const obj = parsed.stream;
    if (!obj || !isDict(obj.value) || obj.streamStart === undefined || nameOf(obj.value.get('Type')) !== 'XRef') {
      throw new BrokenPdf(`no cross-reference section at offset ${offset}`);
    }
    return {
      entries: parseXrefStream(obj.value, await this.streamData(obj.value, obj.streamStart)),
      trailer: obj.value,
    };
  }

  /** The decoded data of a stream whose dictionary is `dict` and whose data starts at `start`. */
  private async streamData(dict: PdfDict, start: number): Promise<Uint8Array> {
    let length: number | undefined;
    try {
      length = uint(await this.resolve(dict.get('Length')));
    } catch (error) {
      // /Length may be an indirect object we cannot reach yet (mid-xref); find `endstream` instead.
      if (!isBroken(error)) throw error;
    }
    if (length === undefined || start + length > this.src.size || !(await this.endstreamAt(start + length))) {
      length = await this.findEndstream(start);
    }
    if (length > MAX_DECODED_BYTES) throw new BrokenPdf('stream is too large');
    return this.decode(await this.src.readExact(start, length), dict);
  }

  private async endstreamAt(at: number): Promise<boolean> {
    const text = latin1(await this.src.read(at, 32));
    return /^[\0\t\n\f\r ]*endstream/.test(text);
  }

  /** Length of the stream data starting at `start`, found by searching for `endstream`. */
  private async findEndstream(start: number): Promise<number> {
    let size = FIRST_WINDOW;
    for (;;) {
      const text = latin1(await this.src.read(start, size));
      const at = text.indexOf('endstream');
      if (at >= 0) {
        // The end-of-line before `endstream` is not part of the data.
        let end = at;
        if (text[end - 1] === '\n') end--;
        if (text[end - 1] === '\r') end--;
        return Math.max(0, end);
      }
      if (start + text.length >= this.src.size || size >= MAX_DECODED_BYTES) {
        throw new BrokenPdf('stream has no endstream');
      }
      size *= 4;
    }
  }

  private decode(raw: Uint8Array, dict: PdfDict): Uint8Array {
    const filters = asArray(dict.get('Filter'));
    const params = asArray(dict.get('DecodeParms') ?? dict.get('DP'));
    let data = raw;
    for (const [i, filter] of filters.entries()) {
      const name = nameOf(filter);
      if (name !== 'FlateDecode' && name !== 'Fl') throw new BrokenPdf(`unsupported stream filter ${name ?? '?'}`);
      data = this.inflate(data);
      const p = params[i];
      if (isDict(p)) data = unpredict(data, p);
    }
    return data;
  }

  private inflate(data: Uint8Array): Uint8Array {
    let out: Uint8Array;
    try {
      // SYNC_FLUSH: accept streams that lack their final checksum, which real writers produce more often than one
      // would hope; the bytes we need are all there.
      out = inflateSync(data, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: MAX_DECODED_BYTES });
    } catch (error) {
      throw new BrokenPdf(`stream does not inflate (${(error as Error).message})`);
    }
    this.decodedBytes += out.length;
    if (this.decodedBytes > MAX_TOTAL_DECODED_BYTES) {
      throw new CorruptFileError('unreadable', 'PDF structure requires decompressing too much data to inspect');
    }
    return out;
  }

  /** Parses at `offset` with a growing window until the construct fits. */
  private async window<T>(offset: number, parse: (lx: Lexer) => T): Promise<T> {
    for (let size = FIRST_WINDOW; ; ) {
      const bytes = await this.src.read(offset, size);
      try {
        return parse(new Lexer(bytes, 0, offset + bytes.length >= this.src.size));
      } catch (error) {
        if (!(error instanceof Incomplete)) throw error;
        if (size >= MAX_WINDOW) throw new BrokenPdf(`object at ${offset} is too large`);
        size = Math.min(MAX_WINDOW, Math.max(size * 4, error.needed));
      }
    }
  }

  /**
   * Rebuilds the object map by scanning the whole file for `N G obj` headers (later definitions win, as incremental
   * updates append), and finds the trailer (`trailer <<…>>`, an /XRef stream, or failing both the /Catalog object).
   */
  async rebuild(): Promise<void> {
    if (this.src.size > this.maxScanBytes) throw new BrokenPdf('file is too large to scan');
    this.rebuilt = true;
    const found = await scanObjects(this.src);
    const previousTrailers = this.trailers;
    this.entries = new Map([...found.objects].map(([num, offset]) => [num, { type: 1, offset } as XrefEntry]));
    this.objects.clear();
    this.objectStreams.clear();

    // Objects inside object streams are invisible to the scan; list them from each stream's header.
    const catalogs = [...found.catalogs];
    for (const streamNum of found.objectStreams) {
      try {
        const stream = await this.objectStream(streamNum);
        for (const [index, num] of stream.nums.entries()) {
          if (!this.entries.has(num)) this.entries.set(num, { type: 2, stream: streamNum, index });
        }
        const text = latin1(stream.data, stream.first);
        for (const m of text.matchAll(CATALOG_RE)) {
          const slot = stream.offsets.findLastIndex((o) => o <= m.index);
          const num = stream.nums[slot];
          if (num !== undefined) catalogs.push(num);
        }
      } catch (error) {
        if (!isBroken(error)) throw error;
      }
    }

    const trailers: PdfDict[] = [];
    for (const offset of found.trailers.reverse()) {
      try {
        const dict = await this.window(offset, (lx) => {
          lx.next(); // `trailer`
          return lx.parseValue();
        });
        if (isDict(dict)) trailers.push(dict);
      } catch (error) {
        if (!isBroken(error)) throw error;
      }
    }
    for (const num of found.xrefStreams.reverse()) {
      try {
        const dict = (await this.load(num)).value;
        if (isDict(dict)) trailers.push(dict);
      } catch (error) {
        if (!isBroken(error)) throw error;
      }
    }
    // The trailers read before the rebuild may well be fine (only offsets were off); keep them as a fallback.
    trailers.push(...previousTrailers);
    const lastCatalog = catalogs.at(-1);
    if (lastCatalog !== undefined) trailers.push(new Map([['Root', new PdfRef(lastCatalog, 0)]]));
    this.trailers = trailers;
  }
}

const WS = '[\\0\\t\\n\\f\\r ]';
const CATALOG_RE = new RegExp(`/Type${WS}*/Catalog(?![A-Za-z0-9])`, 'g');
// One pass finds object headers, `trailer` keywords and the /Type of the objects the rebuild cares about, in file order.
const SCAN_RE = new RegExp(
  `(?<![0-9])(\\d{1,10})${WS}+\\d{1,5}${WS}+obj(?![A-Za-z0-9])|trailer${WS}*<<|/Type${WS}*/(Catalog|XRef|ObjStm)(?![A-Za-z0-9])`,
  'g',
);

interface ScanResult {
  objects: Map<number, number>;
  trailers: number[];
  catalogs: number[];
  xrefStreams: number[];
  objectStreams: number[];
}

async function scanObjects(src: ByteSource): Promise<ScanResult> {
  const result: ScanResult = { objects: new Map(), trailers: [], catalogs: [], xrefStreams: [], objectStreams: [] };
  let carry = '';
  let current: number | undefined; // the object whose body the scan is in
  for await (const { offset, bytes } of src.chunks(SCAN_CHUNK)) {
    const text = carry + latin1(bytes);
    const base = offset - carry.length;
    const last = offset + bytes.length >= src.size;
    // Matches starting in the overlap are left for the next chunk, where they are whole; carry one extra character
    // so the look-behind still sees what precedes them.
    const limit = last ? text.length : text.length - SCAN_OVERLAP;
    SCAN_RE.lastIndex = carry.length > 0 ? 1 : 0;
    for (let m = SCAN_RE.exec(text); m !== null && m.index < limit; m = SCAN_RE.exec(text)) {
      if (m[1] !== undefined) {
        current = Number(m[1]);
        result.objects.set(current, base + m.index);
      } else if (m[2] === undefined) {
        result.trailers.push(base + m.index);
      } else if (current !== undefined) {
        const list = m[2] === 'Catalog' ? result.catalogs : m[2] === 'XRef' ? result.xrefStreams : result.objectStreams;
        list.push(current);
      }
    }
    carry = last ? '' : text.slice(limit - 1);
  }
  return result;
}

/** `N G obj <value> [stream]`, parsed at the start of the window whose absolute offset is `base`. */
function parseIndirectObject(lx: Lexer, base: number): IndirectObject {
  const num = lx.next();
  const gen = lx.next();
  const obj = lx.next();
  if (num.t !== 'num' || gen.t !== 'num' || obj.t !== 'kw' || obj.v !== 'obj') {
    throw new BrokenPdf(`no object header at offset ${base}`);
  }
  const value = lx.parseValue();
  const after = lx.pos;
  const tok = lx.next();
  if (tok.t === 'kw' && tok.v === 'stream') {
    // The data starts after the end-of-line that follows `stream` (CRLF or LF; a lone CR is tolerated).
    let at = lx.pos;
    if (lx.peek(at) === 0x0d) at++;
    if (lx.peek(at) === 0x0a) at++;
    return { num: num.v, value, streamStart: base + at };
  }
  lx.pos = after;
  return { num: num.v, value };
}

function parseXrefTable(lx: Lexer): { entries: Map<number, XrefEntry>; trailer: PdfDict } {
  const entries = new Map<number, XrefEntry>();
  for (;;) {
    const tok = lx.next();
    if (tok.t === 'kw' && tok.v === 'trailer') {
      const trailer = lx.parseValue();
      if (!isDict(trailer)) throw new BrokenPdf('trailer is not a dictionary');
      return { entries, trailer };
    }
    const count = lx.next();
    if (tok.t !== 'num' || count.t !== 'num' || !tok.int || !count.int || tok.v < 0 || count.v < 0) {
      throw new BrokenPdf('malformed cross-reference table');
    }
    // Entries are 20 bytes each; ask for the whole subsection at once rather than growing the window step by step.
    const needed = lx.pos + count.v * 20 + 1024;
    if (needed > lx.buf.length && !lx.complete) throw new Incomplete(needed);
    for (let i = 0; i < count.v; i++) entries.set(tok.v + i, readXrefEntry(lx));
  }
}

const FREE: XrefEntry = { type: 0 };

/** One `oooooooooo ggggg n|f` entry, read byte by byte: tables can list a million objects, too many for `next()`. */
function readXrefEntry(lx: Lexer): XrefEntry {
  const offset = readUint(lx);
  const gen = readUint(lx);
  lx.skipWhitespace();
  const kind = lx.peek();
  lx.pos++;
  if (offset === undefined || gen === undefined || (kind !== 0x6e && kind !== 0x66)) {
    throw new BrokenPdf('malformed cross-reference entry');
  }
  return kind === 0x6e && offset > 0 ? { type: 1, offset } : FREE;
}

function readUint(lx: Lexer): number | undefined {
  lx.skipWhitespace();
  const start = lx.pos;
  let value = 0;
  for (let c = lx.peek(); c >= 0x30 && c <= 0x39 && lx.pos - start < 15; c = lx.peek()) {
    value = value * 10 + (c - 0x30);
    lx.pos++;
  }
  return lx.pos > start ? value : undefined;
}

function parseXrefStream(dict: PdfDict, data: Uint8Array): Map<number, XrefEntry> {
  const w = dict.get('W');
  const widths = Array.isArray(w) ? w.map(uint) : [];
  const [w0, w1, w2] = widths;
  if (widths.length !== 3 || w0 === undefined || w1 === undefined || w2 === undefined || w0 > 8 || w1 > 8 || w2 > 8) {
    throw new BrokenPdf('cross-reference stream has an invalid /W');
  }
  const rowBytes = w0 + w1 + w2;
  if (rowBytes === 0) throw new BrokenPdf('cross-reference stream has an empty /W');
  const index = dict.get('Index');
  const size = uint(dict.get('Size')) ?? 0;
  const ranges = Array.isArray(index) ? index.map(uint) : [0, size];

  const field = (at: number, width: number) => {
    let v = 0;
    for (let i = 0; i < width; i++) v = v * 256 + (data[at + i] ?? 0);
    return v;
  };
  const entries = new Map<number, XrefEntry>();
  let row = 0;
  for (let r = 0; r + 1 < ranges.length; r += 2) {
    const start = ranges[r];
    const count = ranges[r + 1];
    if (start === undefined || count === undefined) throw new BrokenPdf('cross-reference stream has an invalid /Index');
    for (let i = 0; i < count && (row + 1) * rowBytes <= data.length; i++, row++) {
      const at = row * rowBytes;
      // With a zero-width type field every entry is type 1.
      const type = w0 === 0 ? 1 : field(at, w0);
      const a = field(at + w0, w1);
      const b = field(at + w0 + w1, w2);
      if (type === 1) entries.set(start + i, a > 0 ? { type: 1, offset: a } : { type: 0 });
      else if (type === 2) entries.set(start + i, { type: 2, stream: a, index: b });
      else entries.set(start + i, { type: 0 });
    }
  }
  return entries;
}

/** Undoes a TIFF (2) or PNG (10–15) predictor, as cross-reference streams commonly use PNG Up (12). */
function unpredict(data: Uint8Array, params: PdfDict): Uint8Array {
  const predictor = uint(params.get('Predictor')) ?? 1;
  if (predictor <= 1) return data;
  const colors = uint(params.get('Colors')) ?? 1;
  const bits = uint(params.get('BitsPerComponent')) ?? 8;
  const columns = uint(params.get('Columns')) ?? 1;
  const bpp = Math.max(1, Math.ceil((colors * bits) / 8));
  const rowBytes = Math.ceil((colors * bits * columns) / 8);
  if (rowBytes <= 0 || colors > 32 || bits > 16) throw new BrokenPdf('invalid predictor parameters');

  if (predictor === 2) {
    if (bits !== 8) throw new BrokenPdf('unsupported TIFF predictor depth');
    const out = Uint8Array.from(data);
    for (let rowStart = 0; rowStart < out.length; rowStart += rowBytes) {
      for (let i = bpp; i < rowBytes && rowStart + i < out.length; i++) {
        out[rowStart + i] = ((out[rowStart + i] ?? 0) + (out[rowStart + i - bpp] ?? 0)) & 0xff;
      }
    }
    return out;
  }

  // PNG predictors: every row starts with its own filter-type byte, whatever /Predictor says.
  const rows = Math.floor(data.length / (rowBytes + 1));
  const out = new Uint8Array(rows * rowBytes);
  let prev = new Uint8Array(rowBytes);
  for (let r = 0; r < rows; r++) {
    const filter = data[r * (rowBytes + 1)] ?? 0;
    const src = data.subarray(r * (rowBytes + 1) + 1, (r + 1) * (rowBytes + 1));
    const cur = out.subarray(r * rowBytes, (r + 1) * rowBytes);
    for (let i = 0; i < rowBytes; i++) {
      const x = src[i] ?? 0;
      const left = i >= bpp ? (cur[i - bpp] ?? 0) : 0;
      const up = prev[i] ?? 0;
      const upLeft = i >= bpp ? (prev[i - bpp] ?? 0) : 0;
      let value: number;
      switch (filter) {
        case 0:
          value = x;
          break;
        case 1:
          value = x + left;
          break;
        case 2:
          value = x + up;
          break;
        case 3:
          value = x + ((left + up) >> 1);
          break;
        case 4: {
          const p = left + up - upLeft;
          const pa = Math.abs(p - left);
          const pb = Math.abs(p - up);
          const pc = Math.abs(p - upLeft);
          value = x + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
          break;
        }
        default:
          throw new BrokenPdf(`invalid PNG predictor row filter ${filter}`);
      }
      cur[i] = value & 0xff;
    }
    prev = cur;
  }
  return out;
}

function asArray(v: PdfValue | undefined): PdfValue[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}
