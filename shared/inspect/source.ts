/**
 * Random access to the stored object through ranged reads. Every ranged GET costs a round trip, so reads are rounded
 * out to aligned blocks and cached: the format readers can then ask for a few bytes at a time without thinking about
 * request counts. A byte budget bounds what one inspection may fetch, so no crafted file can make us download it many
 * times over.
 */
import { CorruptFileError } from '../errors.js';

/** Reads bytes [start, end] inclusive of the stored object (an S3 ranged GET in production). */
export type RangeReader = (start: number, endInclusive: number) => Promise<Uint8Array>;

/** A failure of the underlying reader (network, S3), as opposed to a problem with the file; passed on untouched. */
export class SourceReadError extends Error {
  constructor(override readonly cause: unknown) {
    super('Reading the stored object failed');
    this.name = 'SourceReadError';
  }
}

/** Thrown when an offset the file structure points at lies past the end of the file. */
export class PastEndError extends Error {
  constructor(offset: number, size: number) {
    super(`Offset ${offset} is past the end of the file (${size} bytes)`);
    this.name = 'PastEndError';
  }
}

const BLOCK = 64 * 1024;
const MAX_CACHED_BLOCKS = 64;

/** A block-cached, budgeted view of the stored object. */
export class ByteSource {
  private readonly blocks = new Map<number, Uint8Array>();
  /** Total bytes fetched from the reader (cache hits excluded). */
  bytesFetched = 0;
  /** Number of reader calls. */
  requests = 0;

  constructor(
    private readonly reader: RangeReader,
    readonly size: number,
    private readonly budgetBytes: number,
  ) {}

  /** Bytes [offset, offset + length), cut short at the end of the file (possibly empty). */
  async read(offset: number, length: number): Promise<Uint8Array> {
    const start = Math.max(0, Math.floor(offset));
    const end = Math.min(this.size, start + Math.max(0, Math.floor(length)));
    if (end <= start) return new Uint8Array(0);
    const firstBlock = Math.floor(start / BLOCK);
    const lastBlock = Math.floor((end - 1) / BLOCK);
    // A long read (a big stream) would flush the cache for nothing: fetch it directly.
    if (lastBlock - firstBlock + 1 > MAX_CACHED_BLOCKS / 2) return this.fetch(start, end);
    await this.ensureBlocks(firstBlock, lastBlock);
    if (firstBlock === lastBlock) {
      const block = this.block(firstBlock);
      return block.subarray(start - firstBlock * BLOCK, end - firstBlock * BLOCK);
    }
    const out = new Uint8Array(end - start);
    for (let b = firstBlock; b <= lastBlock; b++) {
      const block = this.block(b);
      const blockStart = b * BLOCK;
      const from = Math.max(start, blockStart);
      const to = Math.min(end, blockStart + block.length);
      out.set(block.subarray(from - blockStart, to - blockStart), from - start);
    }
    return out;
  }

  /** Exactly `length` bytes at `offset`; throws PastEndError when the file is shorter. */
  async readExact(offset: number, length: number): Promise<Uint8Array> {
    if (offset < 0 || offset + length > this.size) throw new PastEndError(offset + length, this.size);
    return this.read(offset, length);
  }

  /**
   * Streams the whole file in large chunks without caching them, for the rare full scans (a PDF with a broken
   * cross-reference table). Still counted against the budget.
   */
  async *chunks(chunkBytes: number): AsyncGenerator<{ offset: number; bytes: Uint8Array }> {
    for (let offset = 0; offset < this.size; offset += chunkBytes) {
      const end = Math.min(this.size, offset + chunkBytes);
      yield { offset, bytes: await this.fetch(offset, end) };
    }
  }

  private block(index: number): Uint8Array {
    const block = this.blocks.get(index);
    if (!block) throw new Error(`block ${index} not loaded`);
    // Re-insert so the Map's insertion order doubles as least-recently-used order.
    this.blocks.delete(index);
    this.blocks.set(index, block);
    return block;
  }

  private async ensureBlocks(first: number, last: number): Promise<void> {
    // Touch the cached blocks of this read first so loading the missing ones cannot evict them.
    for (let b = first; b <= last; b++) if (this.blocks.has(b)) this.block(b);
    let runStart = -1;
    for (let b = first; b <= last + 1; b++) {
      const missing = b <= last && !this.blocks.has(b);
      if (missing && runStart < 0) runStart = b;
      if (!missing && runStart >= 0) {
        await this.loadRun(runStart, b - 1);
        runStart = -1;
      }
    }
  }

  /** One ranged request for a run of adjacent missing blocks. */
  private async loadRun(first: number, last: number): Promise<void> {
    const start = first * BLOCK;
    const end = Math.min(this.size, (last + 1) * BLOCK);
    const bytes = await this.fetch(start, end);
    for (let b = first; b <= last; b++) {
      const from = b * BLOCK - start;
      this.blocks.set(b, bytes.subarray(from, Math.min(bytes.length, from + BLOCK)));
    }
    while (this.blocks.size > MAX_CACHED_BLOCKS) {
      const oldest = this.blocks.keys().next().value;
      if (oldest === undefined) break;
      this.blocks.delete(oldest);
    }
  }

  private async fetch(start: number, end: number): Promise<Uint8Array> {
    const length = end - start;
    if (this.bytesFetched + length > this.budgetBytes) {
      throw new CorruptFileError(
        'unreadable',
        'The file structure requires reading too much of the file to inspect it',
        {
          budgetBytes: this.budgetBytes,
        },
      );
    }
    this.bytesFetched += length;
    this.requests += 1;
    let bytes: Uint8Array;
    try {
      bytes = await this.reader(start, end - 1);
    } catch (error) {
      throw new SourceReadError(error);
    }
    if (bytes.length !== length) {
      // The object changed under us or the reader misbehaved: not the client's file's fault, so not a CorruptFileError.
      throw new SourceReadError(new Error(`Ranged read ${start}-${end - 1} returned ${bytes.length} bytes`));
    }
    return bytes;
  }
}

/** Image dimensions as stored (before any EXIF orientation). */
export interface Dimensions {
  width: number;
  height: number;
}

/** Big-endian unsigned 16-bit at `at`. */
export function u16(b: Uint8Array, at: number): number {
  return ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
}

/** Big-endian unsigned 32-bit at `at`. */
export function u32(b: Uint8Array, at: number): number {
  return ((b[at] ?? 0) * 0x1000000 + (((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0))) >>> 0;
}

/** Four bytes at `at` as an ASCII tag (box types, chunk types). */
export function fourcc(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at] ?? 0, b[at + 1] ?? 0, b[at + 2] ?? 0, b[at + 3] ?? 0);
}
