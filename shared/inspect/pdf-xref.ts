/**
 * PDF cross-reference sections: classic `xref` tables and cross-reference streams, read into one compact table of
 * object number → where the object is.
 * Not to undo: the table is typed arrays bounded by what the file's size makes plausible (`maxObjectsFor`), never a
 * Map per entry: a 16 KB file can declare 16 million entries, which as a Map took 13 s and 2 GiB to inspect.
 */
import { ImplausiblePdf, Incomplete, type Lexer, type PdfDict, PdfSyntaxError, uint } from './pdf-syntax.js';

export type XrefEntry = { type: 0 } | { type: 1; offset: number } | { type: 2; stream: number; index: number };

/** The most objects a file of any size may declare; far past any honest PDF under the page limit. */
export const MAX_OBJECTS = 1 << 20;

/**
 * The most objects a file of `size` bytes can plausibly hold: an object costs at least a couple of bytes even packed
 * in a compressed object stream (a mupdf-written tagged PDF measured 8.8 bytes an object), so one per 2 bytes, with
 * room for small files and capped at MAX_OBJECTS.
 */
export function maxObjectsFor(size: number): number {
  return Math.min(MAX_OBJECTS, Math.max(65_536, Math.floor(size / 2)));
}

const ABSENT = -1;

/**
 * Entries by object number in typed arrays (11 bytes an object, grown on demand up to `maxObjects`). Each entry
 * remembers the section that wrote it, for the hybrid-file rule in `PdfFile.readSection`.
 */
export class XrefTable {
  private types = new Int8Array(0);
  private first = new Uint32Array(0);
  private second = new Uint32Array(0);
  private sections = new Uint16Array(0);

  constructor(readonly maxObjects: number) {}

  get(num: number): XrefEntry | undefined {
    const type = num >= 0 && num < this.types.length ? this.types[num] : ABSENT;
    if (type === 1) return { type: 1, offset: this.first[num] ?? 0 };
    if (type === 2) return { type: 2, stream: this.first[num] ?? 0, index: this.second[num] ?? 0 };
    return type === 0 ? { type: 0 } : undefined;
  }

  /** The section that wrote `num`'s entry, or -1. */
  sectionOf(num: number): number {
    return num >= 0 && num < this.types.length && this.types[num] !== ABSENT ? (this.sections[num] ?? -1) : -1;
  }

  /** Writes `num`'s entry (replacing any); an object number past `maxObjects` makes the file implausible. */
  put(num: number, entry: XrefEntry, section: number): void {
    if (!Number.isInteger(num) || num < 0) throw new PdfSyntaxError(`invalid object number ${num}`);
    if (num >= this.maxObjects) {
      throw new ImplausiblePdf(`object number ${num} is past the ${this.maxObjects} objects the file's size allows`);
    }
    // Offsets and stream numbers past 32 bits cannot be in a file within the size limit: such an entry is free.
    if ((entry.type === 1 && entry.offset > 0xffffffff) || (entry.type === 2 && entry.stream > 0xffffffff)) {
      entry = { type: 0 };
    }
    this.grow(num + 1);
    this.types[num] = entry.type;
    this.first[num] = entry.type === 1 ? entry.offset : entry.type === 2 ? entry.stream : 0;
    this.second[num] = entry.type === 2 ? entry.index : 0;
    this.sections[num] = section;
  }

  /**
   * Writes `num`'s entry unless an other section wrote it: a newer section's entry wins over an older one's, and
   * within one section the last entry listed wins (as readers take it).
   */
  add(num: number, entry: XrefEntry, section: number): void {
    if (this.get(num) === undefined || this.sectionOf(num) === section) this.put(num, entry, section);
  }

  private grow(length: number): void {
    if (length <= this.types.length) return;
    const capacity = Math.min(this.maxObjects, Math.max(length, this.types.length * 2, 1024));
    const types = new Int8Array(capacity).fill(ABSENT);
    types.set(this.types);
    const first = new Uint32Array(capacity);
    first.set(this.first);
    const second = new Uint32Array(capacity);
    second.set(this.second);
    const sections = new Uint16Array(capacity);
    sections.set(this.sections);
    [this.types, this.first, this.second, this.sections] = [types, first, second, sections];
  }
}

/** Receives one entry of a section as it is read. */
export type EntrySink = (num: number, entry: XrefEntry) => void;

/** The structure is damaged in a way a full-file scan may repair (wrong offsets, missing objects, bad syntax). */
export class BrokenPdf extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokenPdf';
  }
}

/**
 * A classic table after its `xref` keyword, up to and including its trailer dictionary. `available`: the file's bytes
 * from the lexer's position on; a subsection that claims more entries than they could hold is a broken table.
 */
export function parseXrefTable(lx: Lexer, available: number, sink: EntrySink): PdfDict {
  const start = lx.pos;
  for (;;) {
    const tok = lx.next();
    if (tok.t === 'kw' && tok.v === 'trailer') {
      const trailer = lx.parseValue();
      if (!(trailer instanceof Map)) throw new BrokenPdf('trailer is not a dictionary');
      return trailer;
    }
    const count = lx.next();
    if (tok.t !== 'num' || count.t !== 'num' || !tok.int || !count.int || tok.v < 0 || count.v < 0) {
      throw new BrokenPdf('malformed cross-reference table');
    }
    // Entries are 20 bytes each; ask for the whole subsection at once rather than growing the window step by step.
    if (lx.pos - start + count.v * 20 > available) throw new BrokenPdf('cross-reference table runs past the end');
    const needed = lx.pos + count.v * 20 + 1024;
    if (needed > lx.buf.length && !lx.complete) throw new Incomplete(needed);
    for (let i = 0; i < count.v; i++) sink(tok.v + i, readXrefEntry(lx));
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

/** A cross-reference stream's layout: field widths and the (start, count) ranges it covers, checked for plausibility. */
export interface XrefStreamLayout {
  widths: [number, number, number];
  ranges: number[];
  /** Bytes of decoded data the ranges need at most. */
  maxDataBytes: number;
}

/** Reads /W, /Size and /Index; a stream that claims more objects than `maxObjects` makes the file implausible. */
export function xrefStreamLayout(dict: PdfDict, maxObjects: number): XrefStreamLayout {
  const w = dict.get('W');
  const widths = Array.isArray(w) ? w.map(uint) : [];
  const [w0, w1, w2] = widths;
  if (widths.length !== 3 || w0 === undefined || w1 === undefined || w2 === undefined || w0 > 8 || w1 > 8 || w2 > 8) {
    throw new BrokenPdf('cross-reference stream has an invalid /W');
  }
  const rowBytes = w0 + w1 + w2;
  if (rowBytes === 0) throw new BrokenPdf('cross-reference stream has an empty /W');
  const size = uint(dict.get('Size')) ?? 0;
  if (size > maxObjects) {
    throw new ImplausiblePdf(`a cross-reference stream declares ${size} objects; the file's size allows ${maxObjects}`);
  }
  const index = dict.get('Index');
  const ranges = Array.isArray(index) ? index.map((v) => uint(v) ?? -1) : [0, size];
  let rows = 0;
  for (let r = 0; r + 1 < ranges.length; r += 2) {
    const [start, count] = [ranges[r] ?? -1, ranges[r + 1] ?? -1];
    if (start < 0 || count < 0) throw new BrokenPdf('cross-reference stream has an invalid /Index');
    if (start + count > maxObjects) {
      throw new ImplausiblePdf(
        `a cross-reference stream lists objects up to ${start + count}; the file allows ${maxObjects}`,
      );
    }
    rows += count;
  }
  return { widths: [w0, w1, w2], ranges, maxDataBytes: Math.min(rows, maxObjects) * rowBytes };
}

/** The rows of a cross-reference stream's decoded `data`. */
export function parseXrefStream(layout: XrefStreamLayout, data: Uint8Array, sink: EntrySink): void {
  const [w0, w1, w2] = layout.widths;
  const rowBytes = w0 + w1 + w2;
  const field = (at: number, width: number) => {
    let v = 0;
    for (let i = 0; i < width; i++) v = v * 256 + (data[at + i] ?? 0);
    return v;
  };
  let row = 0;
  for (let r = 0; r + 1 < layout.ranges.length; r += 2) {
    const start = layout.ranges[r] ?? 0;
    const count = layout.ranges[r + 1] ?? 0;
    for (let i = 0; i < count && (row + 1) * rowBytes <= data.length; i++, row++) {
      const at = row * rowBytes;
      // With a zero-width type field every entry is type 1.
      const type = w0 === 0 ? 1 : field(at, w0);
      const a = field(at + w0, w1);
      const b = field(at + w0 + w1, w2);
      if (type === 1) sink(start + i, a > 0 ? { type: 1, offset: a } : FREE);
      else if (type === 2) sink(start + i, { type: 2, stream: a, index: b });
      else sink(start + i, FREE);
    }
  }
}
