/**
 * HEIC/HEIF (ISO base media file format): a flat sequence of top-level boxes, with image properties inside `meta`.
 * Only box headers and the `meta` box are read; the coded image data (`mdat`) is never touched.
 */
import { CorruptFileError } from '../errors.js';
import { type ByteSource, type Dimensions, fourcc, PastEndError, u16, u32 } from './source.js';

/** Brands whose presence alone makes an ISO-BMFF file an HEVC-coded HEIF image. */
export const HEIC_BRANDS: ReadonlySet<string> = new Set(['heic', 'heix', 'heim', 'heis']);

const MAX_TOP_LEVEL_BOXES = 10_000;
// `meta` holds item locations and properties: kilobytes even for big tiled photos. Refuse to buffer absurd ones.
const MAX_META_BYTES = 4 * 1024 * 1024;

interface Box {
  type: string;
  /** Offset of the box header. */
  start: number;
  /** Offset of the payload (after size, type and any largesize). */
  payload: number;
  /** Offset just past the box. */
  end: number;
}

/** The major and compatible brands of the `ftyp` box at the start of `head` (empty when absent). */
export function ftypBrands(head: Uint8Array): string[] {
  if (head.length < 16 || fourcc(head, 4) !== 'ftyp') return [];
  const end = Math.min(head.length, u32(head, 0));
  const brands = [fourcc(head, 8)];
  for (let at = 16; at + 4 <= end; at += 4) brands.push(fourcc(head, at));
  return brands;
}

/** Whether the file's `meta` box lists an HEVC-coded (`hvc1`) item, i.e. a generic HEIF that is really HEIC. */
export async function hasHevcItem(src: ByteSource): Promise<boolean> {
  const meta = await readMeta(src);
  return itemTypes(meta).has('hvc1');
}

/**
 * Checks the top-level boxes exactly cover the file and reads the primary image's size from `ispe`;
 * throws CorruptFileError otherwise.
 */
export async function inspectHeic(src: ByteSource): Promise<Dimensions> {
  const meta = await readMeta(src);
  const size = imageSize(meta);
  if (!size) throw new CorruptFileError('unreadable', 'HEIC has no image size property (ispe)');
  return size;
}

/** Walks the top-level boxes (which must tile the file exactly) and returns the payload of `meta`. */
async function readMeta(src: ByteSource): Promise<Uint8Array> {
  let offset = 0;
  let meta: Box | undefined;
  for (let i = 0; offset < src.size; i++) {
    if (i >= MAX_TOP_LEVEL_BOXES) throw new CorruptFileError('unreadable', 'HEIC has too many top-level boxes');
    const box = await readTopLevelBoxHeader(src, offset);
    if (box.type === 'meta' && !meta) meta = box;
    offset = box.end;
  }
  if (!meta) throw new CorruptFileError('unreadable', 'HEIC has no meta box');
  if (meta.end - meta.payload > MAX_META_BYTES) throw new CorruptFileError('unreadable', 'HEIC meta box is too large');
  return src.readExact(meta.payload, meta.end - meta.payload);
}

async function readTopLevelBoxHeader(src: ByteSource, offset: number): Promise<Box> {
  // A file cut short mid-upload usually ends inside `mdat`, whose declared size then overruns the file.
  const truncated = () => new CorruptFileError('truncated', 'HEIC ends inside a box (the upload is incomplete)');
  let head: Uint8Array;
  try {
    head = await src.readExact(offset, 8);
  } catch (error) {
    if (error instanceof PastEndError) throw truncated();
    throw error;
  }
  const size32 = u32(head, 0);
  const type = fourcc(head, 4);
  let payload = offset + 8;
  let size: number;
  if (size32 === 1) {
    // 64-bit "largesize" follows the type, used for big `mdat` boxes.
    let large: Uint8Array;
    try {
      large = await src.readExact(offset + 8, 8);
    } catch (error) {
      if (error instanceof PastEndError) throw truncated();
      throw error;
    }
    size = u32(large, 0) * 0x1_0000_0000 + u32(large, 4);
    payload += 8;
  } else if (size32 === 0) {
    size = src.size - offset; // "extends to the end of the file", allowed only for the last box
  } else {
    size = size32;
  }
  if (size < payload - offset) throw new CorruptFileError('unreadable', `HEIC box "${type}" has invalid size ${size}`);
  if (offset + size > src.size) throw truncated();
  return { type, start: offset, payload, end: offset + size };
}

/** Child boxes of a container payload `[from, to)` in `buf`. */
function children(buf: Uint8Array, from: number, to: number): Box[] {
  const boxes: Box[] = [];
  let at = from;
  while (at + 8 <= to) {
    const size32 = u32(buf, at);
    let payload = at + 8;
    let size = size32;
    if (size32 === 1) {
      if (at + 16 > to) break;
      size = u32(buf, at + 8) * 0x1_0000_0000 + u32(buf, at + 12);
      payload += 8;
    } else if (size32 === 0) {
      size = to - at;
    }
    if (size < payload - at || at + size > to) throw new CorruptFileError('unreadable', 'HEIC meta box is malformed');
    boxes.push({ type: fourcc(buf, at + 4), start: at, payload, end: at + size });
    at += size;
  }
  return boxes;
}

function child(buf: Uint8Array, parent: { payload: number; end: number }, type: string): Box | undefined {
  return children(buf, parent.payload, parent.end).find((b) => b.type === type);
}

/** `meta` is a FullBox: its children start after 4 bytes of version and flags. */
function metaRoot(meta: Uint8Array): { payload: number; end: number } {
  return { payload: 4, end: meta.length };
}

function primaryItemId(meta: Uint8Array): number | undefined {
  const pitm = child(meta, metaRoot(meta), 'pitm');
  if (!pitm) return undefined;
  const version = meta[pitm.payload] ?? 0;
  return version === 0 ? u16(meta, pitm.payload + 4) : u32(meta, pitm.payload + 4);
}

function itemTypes(meta: Uint8Array): Set<string> {
  const types = new Set<string>();
  const iinf = child(meta, metaRoot(meta), 'iinf');
  if (!iinf) return types;
  const version = meta[iinf.payload] ?? 0;
  const entriesStart = iinf.payload + 4 + (version === 0 ? 2 : 4);
  for (const infe of children(meta, entriesStart, iinf.end)) {
    if (infe.type !== 'infe') continue;
    const infeVersion = meta[infe.payload] ?? 0;
    // Item types exist from infe version 2 on; version 2 has a 16-bit item id, version 3 a 32-bit one.
    if (infeVersion < 2) continue;
    const typeAt = infe.payload + 4 + (infeVersion === 2 ? 2 : 4) + 2;
    if (typeAt + 4 <= infe.end) types.add(fourcc(meta, typeAt));
  }
  return types;
}

/** The primary item's `ispe`, or the largest `ispe` when the associations cannot tell. */
function imageSize(meta: Uint8Array): Dimensions | undefined {
  const iprp = child(meta, metaRoot(meta), 'iprp');
  if (!iprp) return undefined;
  const ipco = child(meta, iprp, 'ipco');
  if (!ipco) return undefined;
  const properties = children(meta, ipco.payload, ipco.end);
  const ispe = (box: Box | undefined): Dimensions | undefined =>
    box?.type === 'ispe' && box.payload + 12 <= box.end
      ? { width: u32(meta, box.payload + 4), height: u32(meta, box.payload + 8) }
      : undefined;

  const primary = primaryItemId(meta);
  const ipma = child(meta, iprp, 'ipma');
  if (primary !== undefined && ipma) {
    for (const index of associatedProperties(meta, ipma, primary)) {
      // Property indices are 1-based; 0 means "no property".
      const size = ispe(properties[index - 1]);
      if (size) return size;
    }
  }
  let largest: Dimensions | undefined;
  for (const box of properties) {
    const size = ispe(box);
    if (size && (!largest || size.width * size.height > largest.width * largest.height)) largest = size;
  }
  return largest;
}

/** Property indices `ipma` associates with `itemId`. */
function associatedProperties(meta: Uint8Array, ipma: Box, itemId: number): number[] {
  const version = meta[ipma.payload] ?? 0;
  const flags = u32(meta, ipma.payload) & 0xffffff;
  let at = ipma.payload + 4;
  const entries = u32(meta, at);
  at += 4;
  for (let e = 0; e < entries && at < ipma.end; e++) {
    const id = version < 1 ? u16(meta, at) : u32(meta, at);
    at += version < 1 ? 2 : 4;
    const count = meta[at] ?? 0;
    at += 1;
    const indices: number[] = [];
    for (let a = 0; a < count; a++) {
      // The top bit of each association is the "essential" flag; flag bit 1 widens the index to 15 bits.
      if (flags & 1) {
        indices.push(u16(meta, at) & 0x7fff);
        at += 2;
      } else {
        indices.push((meta[at] ?? 0) & 0x7f);
        at += 1;
      }
    }
    if (id === itemId) return indices;
  }
  return [];
}
