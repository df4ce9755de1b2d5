/** The PNG and TIFF predictors a Flate-encoded PDF stream may use (cross-reference streams commonly use PNG Up). */
import { type PdfDict, uint } from './pdf-syntax.js';
import { BrokenPdf } from './pdf-xref.js';

/** Undoes a TIFF (2) or PNG (10–15) predictor, as cross-reference streams commonly use PNG Up (12). */
export function unpredict(data: Uint8Array, params: PdfDict): Uint8Array {
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
