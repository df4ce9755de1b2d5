/**
 * The scan that rebuilds a damaged PDF's object map: one pass over the whole file for `N G obj` headers, `trailer`
 * keywords and the /Type of the objects a rebuild needs. Bounded by the file's size and by what it may keep.
 */
import { ImplausiblePdf, latin1 } from './pdf-syntax.js';
import { XrefTable } from './pdf-xref.js';
import type { ByteSource } from './source.js';

const SCAN_CHUNK = 1024 * 1024;
const SCAN_OVERLAP = 256;
// Trailers, catalogs and cross-reference streams a rebuild keeps: an honest file has a few per incremental update.
const MAX_SCANNED_SECTIONS = 10_000;

const WS = '[\\0\\t\\n\\f\\r ]';
export const CATALOG_RE = new RegExp(`/Type${WS}*/Catalog(?![A-Za-z0-9])`, 'g');
// One pass finds object headers, `trailer` keywords and the /Type of the objects the rebuild cares about, in file order.
const SCAN_RE = new RegExp(
  `(?<![0-9])(\\d{1,10})${WS}+\\d{1,5}${WS}+obj(?![A-Za-z0-9])|trailer${WS}*<<|/Type${WS}*/(Catalog|XRef|ObjStm)(?![A-Za-z0-9])`,
  'g',
);

export interface ScanResult {
  objects: XrefTable;
  trailers: number[];
  catalogs: number[];
  xrefStreams: number[];
  objectStreams: number[];
}

export async function scanObjects(src: ByteSource, maxObjects: number): Promise<ScanResult> {
  const objects = new XrefTable(maxObjects);
  const result: ScanResult = { objects, trailers: [], catalogs: [], xrefStreams: [], objectStreams: [] };
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
        // Later definitions win, as incremental updates append. A header past what the file's size allows is text
        // that only looks like one (inside a content stream, say): it cannot be an object a reader needs.
        if (current < maxObjects) objects.put(current, { type: 1, offset: base + m.index }, 0);
      } else if (m[2] === undefined) {
        result.trailers.push(base + m.index);
      } else if (current !== undefined) {
        const list = m[2] === 'Catalog' ? result.catalogs : m[2] === 'XRef' ? result.xrefStreams : result.objectStreams;
        list.push(current);
      }
      if (result.trailers.length + result.catalogs.length + result.xrefStreams.length > MAX_SCANNED_SECTIONS) {
        throw new ImplausiblePdf(`over ${MAX_SCANNED_SECTIONS} trailers and catalogs`);
      }
    }
    carry = last ? '' : text.slice(limit - 1);
  }
  return result;
}
