/**
 * Word boxes as evidence keeps them (shared/fields/types.ts): relative to the page, origin top-left, each number in
 * [0, 1], rounded to 4 decimals (a tenth of a millimetre on a letter page: finer adds bytes, not precision).
 * Every reader of words (Textract's geometry, tesseract's pixels, mupdf's points) converts through `relativeBox`.
 */
import type { BBox } from '../fields/types.js';

function unit(value: number): number {
  if (!Number.isFinite(value)) return 0;
  return Math.round(Math.min(1, Math.max(0, value)) * 10_000) / 10_000;
}

/**
 * The box `[x0, y0, x1, y1]` (any unit, origin top-left) relative to a page of `width` x `height` in that unit whose
 * top-left corner is at (`left`, `top`); clamped to the page. Undefined for a box with no area on the page (outside
 * it, or degenerate): such a word cannot be shown where it stands.
 */
export function relativeBox(
  box: readonly [number, number, number, number],
  page: { width: number; height: number; left?: number; top?: number },
): BBox | undefined {
  const { width, height, left = 0, top = 0 } = page;
  if (!(width > 0) || !(height > 0)) return undefined;
  const [x0, y0, x1, y1] = box;
  const out: BBox = [
    unit((Math.min(x0, x1) - left) / width),
    unit((Math.min(y0, y1) - top) / height),
    unit((Math.max(x0, x1) - left) / width),
    unit((Math.max(y0, y1) - top) / height),
  ];
  return out[2] > out[0] && out[3] > out[1] ? out : undefined;
}

/** A reader's 0–100 confidence as evidence's [0, 1]; undefined when it gave none. */
export function unitConfidence(percent: number | undefined): number | undefined {
  if (percent === undefined || !Number.isFinite(percent)) return undefined;
  return Math.round(Math.min(100, Math.max(0, percent)) * 10) / 1000;
}
