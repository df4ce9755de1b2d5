/**
 * PDF: the page count, from the structure alone. A PDF is read from its end: `startxref` points at the newest
 * cross-reference section, which maps object numbers to byte offsets (or to slots inside compressed object streams)
 * and chains to older sections through /Prev. From the trailer's /Root we reach the page tree, whose root /Count is the
 * page count. Only the tail, the cross-reference sections and a handful of small objects are read, never the page
 * contents, fonts or images, which are almost all of a PDF's bytes.
 * Over 400 lines: `PdfFile` is one reader (xref chain, objects, streams, rebuild); the parsers it uses are in
 * pdf-syntax.ts, pdf-xref.ts, pdf-scan.ts and pdf-predictors.ts.
 */
import { constants, inflateSync } from 'node:zlib';
import { CorruptFileError } from '../errors.js';
import { unpredict } from './pdf-predictors.js';
import { CATALOG_RE, scanObjects } from './pdf-scan.js';
import {
  ImplausiblePdf,
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
import {
  BrokenPdf,
  type EntrySink,
  maxObjectsFor,
  parseXrefStream,
  parseXrefTable,
  XrefTable,
  xrefStreamLayout,
} from './pdf-xref.js';
import { type ByteSource, PastEndError } from './source.js';

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

const isBroken = (e: unknown) =>
  e instanceof BrokenPdf || e instanceof PdfSyntaxError || e instanceof PastEndError || e instanceof Incomplete;

// `%%EOF` should be within the last 1024 bytes, but some producers append a little junk; look a bit further.
const TAIL_BYTES = 4096;
const FIRST_WINDOW = 4096;
const MAX_WINDOW = 4 * 1024 * 1024;
const MAX_SECTIONS = 256;
const MAX_OBJECT_LOADS = 20_000;
const MAX_REF_CHAIN = 32;
const MAX_DECODED_BYTES = 16 * 1024 * 1024;
// All streams inflated in one inspection: at most 64 MiB, and at most 32 times the file's size (honest structure
// streams compress a few times over; a bomb a thousand times), with a floor for small files.
const MAX_TOTAL_DECODED_BYTES = 64 * 1024 * 1024;
const DECODED_BYTES_PER_FILE_BYTE = 32;
const MIN_DECODED_BYTES_ALLOWED = 8 * 1024 * 1024;
const MAX_PAGE_TREE_NODES = 200_000;
const MAX_CACHED_OBJECT_STREAM_BYTES = 16 * 1024 * 1024;

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
    if (error instanceof ImplausiblePdf) {
      throw new CorruptFileError('implausible', `PDF structure is implausible for its size: ${error.message}`);
    }
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
  private readonly maxObjects: number;
  private entries: XrefTable;
  /** Trailer dictionaries, newest first. */
  private trailers: PdfDict[] = [];
  private readonly objects = new Map<number, IndirectObject>();
  private readonly objectStreams = new Map<number, ObjectStream>();
  private objectStreamBytes = 0;
  private objectLoads = 0;
  private decodedBytes = 0;
  private readonly maxDecodedBytes: number;
  rebuilt = false;

  constructor(
    private readonly src: ByteSource,
    private readonly maxScanBytes: number,
  ) {
    this.maxObjects = maxObjectsFor(src.size);
    this.entries = new XrefTable(this.maxObjects);
    this.maxDecodedBytes = Math.min(
      MAX_TOTAL_DECODED_BYTES,
      Math.max(MIN_DECODED_BYTES_ALLOWED, DECODED_BYTES_PER_FILE_BYTE * src.size),
    );
  }

  /** Reads the cross-reference chain from `startxref` through every /Prev; newer entries win. */
  async loadXref(startxref: number): Promise<void> {
    const visited = new Set<number>();
    let offset: number | undefined = startxref;
    // A /Prev cycle (hostile or just buggy) would loop forever; stop at a section already read.
    while (offset !== undefined && !visited.has(offset) && visited.size < MAX_SECTIONS) {
      const section = visited.size;
      visited.add(offset);
      // Newer sections are read first, and their entries win.
      const trailer = await this.readSection(offset, section);
      this.trailers.push(trailer);
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
    for (let next = 0; next < queue.length; next++) {
      if (next > MAX_PAGE_TREE_NODES) throw new ImplausiblePdf(`a page tree of over ${MAX_PAGE_TREE_NODES} nodes`);
      const item = queue[next] ?? null;
      if (item instanceof PdfRef) {
        // A node reached twice is counted once: a cycle ends, and kids shared to fan a few objects out into 2^40
        // pages are a few pages.
        if (seen.has(item.num)) continue;
        seen.add(item.num);
      }
      const node = await this.resolve(item);
      if (!isDict(node)) continue;
      const kids = await this.resolve(node.get('Kids'));
      if (nameOf(node.get('Type')) === 'Pages' || Array.isArray(kids)) {
        // One at a time: spreading a huge /Kids into push() overflows the call stack.
        if (Array.isArray(kids)) for (const kid of kids) queue.push(kid);
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
    if (n > this.maxObjects) throw new ImplausiblePdf(`object stream ${num} declares ${n} objects`);
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
    if (this.objectStreamBytes + data.length > MAX_CACHED_OBJECT_STREAM_BYTES) {
      this.objectStreams.clear();
      this.objectStreamBytes = 0;
    }
    this.objectStreams.set(num, stream);
    this.objectStreamBytes += data.length;
    return stream;
  }

  /**
   * One cross-reference section at `offset`, a classic `xref` table or a cross-reference stream: its entries go to
   * the table tagged `section` (older sections never replace a newer one's), its trailer dictionary is returned.
   */
  private async readSection(offset: number, section: number, streamOnly = false): Promise<PdfDict> {
    if (offset >= this.src.size) throw new BrokenPdf(`cross-reference offset ${offset} is past the end`);
    const available = this.src.size - offset;
    const add: EntrySink = (num, entry) => this.entries.add(num, entry, section);
    // A window too small is parsed again, bigger: adding the same entries twice changes nothing.
    const parsed = await this.window(offset, (lx) => {
      const save = lx.pos;
      const tok = lx.next();
      // A hybrid file's side section must be a stream; accepting a table there would allow /XRefStm loops.
      if (tok.t === 'kw' && tok.v === 'xref' && !streamOnly) return { trailer: parseXrefTable(lx, available, add) };
      lx.pos = save;
      return { object: parseIndirectObject(lx, offset) };
    });
    if (parsed.trailer !== undefined) {
      // A "hybrid" file keeps a classic table for old readers and lists compressed objects in a side stream, whose
      // entries fill in what this table left free (never what it places at an offset, nor a newer section's).
      const side = uint(parsed.trailer.get('XRefStm'));
      if (side !== undefined) {
        try {
          await this.readSection(side, section, true);
        } catch (error) {
          if (!isBroken(error)) throw error;
        }
      }
      return parsed.trailer;
    }
    const obj = parsed.object;
    if (!obj || !isDict(obj.value) || obj.streamStart === undefined || nameOf(obj.value.get('Type')) !== 'XRef') {
      throw new BrokenPdf(`no cross-reference section at offset ${offset}`);
    }
    const layout = xrefStreamLayout(obj.value, this.maxObjects);
    // With a PNG predictor every row carries one more byte.
    const data = await this.streamData(obj.value, obj.streamStart, 2 * layout.maxDataBytes + 1024);
    const sink: EntrySink = streamOnly
      ? (num, entry) => {
          const listed = this.entries.get(num);
          const ours = this.entries.sectionOf(num) === section;
          if (entry.type !== 0 && (listed === undefined || (ours && listed.type !== 1))) {
            this.entries.put(num, entry, section);
          }
        }
      : add;
    parseXrefStream(layout, data, sink);
    return obj.value;
  }

  /** The decoded data of a stream whose dictionary is `dict` and whose data starts at `start`. */
  /** The decoded data of a stream whose dictionary is `dict` and whose data starts at `start`; `limit`: most bytes. */
  private async streamData(dict: PdfDict, start: number, limit = MAX_DECODED_BYTES): Promise<Uint8Array> {
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
    return this.decode(await this.src.readExact(start, length), dict, Math.min(limit, MAX_DECODED_BYTES));
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

  private decode(raw: Uint8Array, dict: PdfDict, limit: number): Uint8Array {
    const filters = asArray(dict.get('Filter'));
    const params = asArray(dict.get('DecodeParms') ?? dict.get('DP'));
    let data = raw;
    for (const [i, filter] of filters.entries()) {
      const name = nameOf(filter);
      if (name !== 'FlateDecode' && name !== 'Fl') throw new BrokenPdf(`unsupported stream filter ${name ?? '?'}`);
      data = this.inflate(data, limit);
      const p = params[i];
      if (isDict(p)) data = unpredict(data, p);
    }
    return data;
  }

  /** Inflates at most `limit` bytes, within what the whole inspection may still inflate; a bomb is implausible. */
  private inflate(data: Uint8Array, limit: number): Uint8Array {
    const allowed = Math.min(limit, this.maxDecodedBytes - this.decodedBytes);
    if (allowed <= 0) throw new ImplausiblePdf('its structure needs decompressing too much data');
    let out: Uint8Array;
    try {
      // SYNC_FLUSH: accept streams that lack their final checksum, which real writers produce more often than one
      // would hope; the bytes we need are all there.
      out = inflateSync(data, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: allowed });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new ImplausiblePdf(`a structure stream inflates past ${allowed} bytes`);
      }
      throw new BrokenPdf(`stream does not inflate (${(error as Error).message})`);
    }
    this.decodedBytes += out.length;
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
    const found = await scanObjects(this.src, this.maxObjects);
    const previousTrailers = this.trailers;
    this.entries = found.objects;
    this.objects.clear();
    this.objectStreams.clear();

    // Objects inside object streams are invisible to the scan; list them from each stream's header.
    const catalogs = [...found.catalogs];
    for (const streamNum of found.objectStreams) {
      try {
        const stream = await this.objectStream(streamNum);
        for (const [index, num] of stream.nums.entries()) {
          // Section 1: fills in what the scan (section 0) did not find, never replaces it.
          this.entries.add(num, { type: 2, stream: streamNum, index }, 1);
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

function asArray(v: PdfValue | undefined): PdfValue[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}
