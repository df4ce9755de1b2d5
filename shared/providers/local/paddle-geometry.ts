/**
 * The pure steps of the local OCR engine (./paddle-ocr.ts) around its two models: text regions and the page's skew
 * from the detection map, a region cut out as the recognition model reads it, CTC decoding, and a region's characters
 * as words with boxes (spaces from the model and from the paper's blank columns). No I/O.
 */
/** A pixel is text when the detection model's probability is above this; a region when its mean is above BOX. */
const DET_PIXEL_THRESHOLD = 0.3;
const DET_BOX_THRESHOLD = 0.6;
/** DB's "unclip": a region is grown by area × ratio / perimeter on each side (the model marks shrunk text cores). */
const UNCLIP_RATIO = 1.5;
/** The recognition model reads lines 48 px high. */
export const REC_HEIGHT = 48;
/** A recognised region whose mean character probability is below this is noise (a logo, a smudge). */
export const MIN_REGION_CONFIDENCE = 0.5;
/**
 * A run of blank columns is a space when it is at least SPACE_COLUMNS wide (in a 48 px high crop) and SPACE_FACTOR
 * times the line's median run (the gap between letters, which wide print makes wide too).
 */
const SPACE_COLUMNS = 8;
const SPACE_FACTOR = 2.5;
/** Between two characters of a number or a date a blank must be this many times as wide to be a space. */
const DIGIT_GAP_FACTOR = 1.6;
/** The crop's top and bottom margins (this share each) are left out of the blank test: the row's neighbours reach in. */
const BLANK_MARGIN = 0.12;

/** A single-channel 8-bit image. */
export interface GreyImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** A box in pixels: [x0, y0, x1, y1], x1 and y1 excluded. */
export type PixelBox = [number, number, number, number];

/**
 * A text region: a rectangle along its own axis (receipts curl, so each line has its own angle), in pixels:
 * centre, unit axis direction, half length along it and half thickness across it (unclip growth included).
 */
export interface TextRegion {
  cx: number;
  cy: number;
  cos: number;
  sin: number;
  halfLength: number;
  halfThickness: number;
}

/** The axis-aligned box around a region's part from `u0` to `u1` along its axis (all of it by default). */
export function regionBox(r: TextRegion, u0 = -r.halfLength, u1 = r.halfLength): PixelBox {
  const corners = [u0, u1].flatMap((u) =>
    [-r.halfThickness, r.halfThickness].map((v) => [r.cx + u * r.cos - v * r.sin, r.cy + u * r.sin + v * r.cos]),
  );
  const xs = corners.map((c) => c[0] ?? 0);
  const ys = corners.map((c) => c[1] ?? 0);
  return [
    Math.floor(Math.min(...xs)),
    Math.floor(Math.min(...ys)),
    Math.ceil(Math.max(...xs)),
    Math.ceil(Math.max(...ys)),
  ];
}

/** A region of a `scale`d map in the pixels of the image: `sx`, `sy` image pixels per map pixel. */
export function scaleRegion(r: TextRegion, sx: number, sy: number): TextRegion {
  const [ax, ay] = [r.cos * sx, r.sin * sy];
  const along = Math.hypot(ax, ay);
  const [nx, ny] = [-r.sin * sx, r.cos * sy];
  return {
    cx: (r.cx + 0.5) * sx,
    cy: (r.cy + 0.5) * sy,
    cos: ax / along,
    sin: ay / along,
    halfLength: r.halfLength * along,
    halfThickness: r.halfThickness * Math.hypot(nx, ny),
  };
}

/**
 * Text regions of a detection probability map (`width` x `height`), in the map's pixels: 4-connected components of
 * pixels above DET_PIXEL_THRESHOLD whose mean probability passes DET_BOX_THRESHOLD, each as the rectangle along its
 * principal axis that holds it, grown by DB's unclip distance (the model marks shrunk text cores).
 */
export function textRegions(prob: Float32Array, width: number, height: number): TextRegion[] {
  const seen = new Uint8Array(width * height);
  const members = new Int32Array(width * height);
  const regions: TextRegion[] = [];
  for (let start = 0; start < prob.length; start++) {
    if (seen[start] === 1 || (prob[start] ?? 0) <= DET_PIXEL_THRESHOLD) continue;
    // Flood fill: `members` holds the component, its unvisited tail doubling as the stack.
    let count = 0;
    let visit = 0;
    members[count++] = start;
    seen[start] = 1;
    let sum = 0;
    let sx = 0;
    let sy = 0;
    while (visit < count) {
      const p = members[visit++] as number;
      const x = p % width;
      const y = (p - x) / width;
      sum += prob[p] as number;
      sx += x;
      sy += y;
      // The four neighbours inside the map, each taken once.
      if (x > 0 && seen[p - 1] === 0 && (prob[p - 1] as number) > DET_PIXEL_THRESHOLD) {
        seen[p - 1] = 1;
        members[count++] = p - 1;
      }
      if (x < width - 1 && seen[p + 1] === 0 && (prob[p + 1] as number) > DET_PIXEL_THRESHOLD) {
        seen[p + 1] = 1;
        members[count++] = p + 1;
      }
      if (y > 0 && seen[p - width] === 0 && (prob[p - width] as number) > DET_PIXEL_THRESHOLD) {
        seen[p - width] = 1;
        members[count++] = p - width;
      }
      if (y < height - 1 && seen[p + width] === 0 && (prob[p + width] as number) > DET_PIXEL_THRESHOLD) {
        seen[p + width] = 1;
        members[count++] = p + width;
      }
    }
    if (count < 9 || sum / count < DET_BOX_THRESHOLD) continue;
    const [mx, my] = [sx / count, sy / count];
    let [vxx, vyy, vxy] = [0, 0, 0];
    for (let i = 0; i < count; i++) {
      const p = members[i] ?? 0;
      const [dx, dy] = [(p % width) - mx, Math.floor(p / width) - my];
      vxx += dx * dx;
      vyy += dy * dy;
      vxy += dx * dy;
    }
    const angle = 0.5 * Math.atan2(2 * vxy, vxx - vyy);
    const [cos, sin] = [Math.cos(angle), Math.sin(angle)];
    let [u0, u1, v0, v1] = [
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ];
    for (let i = 0; i < count; i++) {
      const p = members[i] ?? 0;
      const [dx, dy] = [(p % width) - mx, Math.floor(p / width) - my];
      const u = dx * cos + dy * sin;
      const v = -dx * sin + dy * cos;
      [u0, u1, v0, v1] = [Math.min(u0, u), Math.max(u1, u), Math.min(v0, v), Math.max(v1, v)];
    }
    const [length, thickness] = [u1 - u0 + 1, v1 - v0 + 1];
    if (Math.min(length, thickness) < 3) continue;
    const grow = (length * thickness * UNCLIP_RATIO) / (2 * (length + thickness));
    const [uc, vc] = [(u0 + u1) / 2, (v0 + v1) / 2];
    regions.push({
      cx: mx + uc * cos - vc * sin,
      cy: my + uc * sin + vc * cos,
      cos,
      sin,
      halfLength: length / 2 + grow,
      halfThickness: thickness / 2 + grow,
    });
  }
  return regions;
}

/**
 * A region of `image` straightened and resized to `height` px high (length in proportion, at least 8) by bilinear
 * sampling along its axis, normalised to [-1, 1] as the recognition model was trained: one plane, `width` x `height`;
 * outside the image reads as paper.
 */
export function cropLine(image: GreyImage, r: TextRegion, height = REC_HEIGHT): { plane: Float32Array; width: number } {
  const width = Math.max(8, Math.round((height * r.halfLength) / r.halfThickness));
  const plane = new Float32Array(width * height);
  const { data, width: iw, height: ih } = image;
  // Along the crop's row, x and y move by a fixed step: the sampling point is updated, not recomputed.
  const [du, dv] = [(2 * r.halfLength) / width, (2 * r.halfThickness) / height];
  for (let y = 0; y < height; y++) {
    const v = (y + 0.5) * dv - r.halfThickness;
    const u0 = 0.5 * du - r.halfLength;
    let px = r.cx + u0 * r.cos - v * r.sin - 0.5;
    let py = r.cy + u0 * r.sin + v * r.cos - 0.5;
    const [stepX, stepY] = [du * r.cos, du * r.sin];
    for (let x = 0; x < width; x++, px += stepX, py += stepY) {
      const x0 = Math.floor(px);
      const y0 = Math.floor(py);
      const fx = px - x0;
      const fy = py - y0;
      let value: number;
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < iw && y0 + 1 < ih) {
        const i = y0 * iw + x0;
        const top = (data[i] as number) * (1 - fx) + (data[i + 1] as number) * fx;
        const bottom = (data[i + iw] as number) * (1 - fx) + (data[i + iw + 1] as number) * fx;
        value = top * (1 - fy) + bottom * fy;
      } else {
        // At the image's edge: outside reads as paper.
        const at = (ax: number, ay: number) =>
          ax < 0 || ay < 0 || ax >= iw || ay >= ih ? 255 : (data[ay * iw + ax] as number);
        value =
          (at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx) * (1 - fy) +
          (at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx) * fy;
      }
      plane[y * width + x] = value / 127.5 - 1;
    }
  }
  return { plane, width };
}

/** One character read by CTC: its text, probability and the time step it was read at. */
export interface ReadChar {
  char: string;
  prob: number;
  step: number;
}

/**
 * Greedy CTC decoding of one line's `steps` x `classes` probabilities starting at `offset`: the best class per step,
 * repeats merged, blanks (class 0) dropped; class i is `dictionary[i - 1]`.
 */
export function ctcDecode(
  probs: Float32Array,
  offset: number,
  steps: number,
  classes: number,
  dictionary: readonly string[],
): ReadChar[] {
  const chars: ReadChar[] = [];
  let previous = 0;
  for (let s = 0; s < steps; s++) {
    const base = offset + s * classes;
    let best = 0;
    let bestProb = probs[base] as number;
    for (let c = 1; c < classes; c++) {
      const p = probs[base + c] as number;
      if (p > bestProb) {
        bestProb = p;
        best = c;
      }
    }
    if (best !== 0 && best !== previous) chars.push({ char: dictionary[best - 1] ?? ' ', prob: bestProb, step: s });
    previous = best;
  }
  return chars;
}

/**
 * The blank column runs of a line crop (normalised plane, `width` x `height`) wide enough to be spaces, as
 * [from, to) in crop columns, inner ones only. A column is blank when none of its pixels
 * in the crop's middle band is darker than the middle of its range (the crop holds ink and paper, both).
 */
export function blankRuns(
  plane: Float32Array,
  width: number,
  height: number,
): { runs: [number, number][]; least: number } {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of plane) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (hi - lo < 0.3) return { runs: [], least: Number.POSITIVE_INFINITY };
  const ink = (lo + hi) / 2;
  const [top, bottom] = [Math.floor(height * BLANK_MARGIN), Math.ceil(height * (1 - BLANK_MARGIN))];
  const runs: [number, number][] = [];
  let from = -1;
  let seenInk = false;
  for (let x = 0; x <= width; x++) {
    let blank = x < width;
    for (let y = top; blank && y < bottom; y++) if ((plane[y * width + x] ?? 1) < ink) blank = false;
    if (blank && from < 0) from = x;
    if (!blank) {
      if (from >= 0 && seenInk && x < width) runs.push([from, x]);
      from = -1;
      if (x < width) seenInk = true;
    }
  }
  const widths = runs.map(([a, b]) => b - a).sort((a, b) => a - b);
  const least = Math.max(SPACE_COLUMNS, SPACE_FACTOR * (widths[Math.floor(widths.length / 2)] ?? 0));
  return { runs: runs.filter(([a, b]) => b - a >= least), least };
}

/** A word of a region in pixels of the page, with the mean probability of its characters and the lowest. */
export interface PixelWord {
  text: string;
  box: PixelBox;
  confidence: number;
  /** Its least sure character's probability: one misread letter hides in the mean, not here. */
  low: number;
  /** Each character's probability, in reading order (a value's own characters, not the word's: receipt-rules.ts). */
  chars: number[];
  /** The region it was read from and its part of it (along the axis, from the centre): what a second read re-cuts. */
  line: LinePart;
}

/** A word's place in its text region: the region (shared by the region's words) and its span along the axis. */
export interface LinePart {
  region: TextRegion;
  from: number;
  to: number;
}

/** The part of `region` from `from` to `to` along its axis, grown by `grow` × its thickness at both ends. */
export function subRegion(region: TextRegion, from: number, to: number, grow: number): TextRegion {
  const [a, b] = [from - grow * 2 * region.halfThickness, to + grow * 2 * region.halfThickness];
  const mid = (a + b) / 2;
  return {
    ...region,
    cx: region.cx + mid * region.cos,
    cy: region.cy + mid * region.sin,
    halfLength: (b - a) / 2,
  };
}

/**
 * A line crop (cropLine's plane, values in [-1, 1]) contrast-stretched in place: its darkest and lightest `tail` share
 * of values become -1 and 1 (faded thermal print reads as ink). A crop of one grey is left as it is.
 */
export function stretchPlane(plane: Float32Array, tail = 0.02): Float32Array {
  const sorted = Float32Array.from(plane).sort();
  const k = Math.floor(tail * (sorted.length - 1));
  const [lo, hi] = [sorted[k] ?? -1, sorted[sorted.length - 1 - k] ?? 1];
  if (hi - lo < 0.06) return plane;
  for (let i = 0; i < plane.length; i++)
    plane[i] = Math.max(-1, Math.min(1, (2 * ((plane[i] ?? 0) - lo)) / (hi - lo) - 1));
  return plane;
}

/**
 * A region's characters as words: split at a read space and at a blank run of the crop between two characters (the
 * model often drops the space between words of large print; the paper does not), each word's box the part of the
 * region its characters span; `stepPx` crop columns per time step, `cropWidth` the crop's columns; text folded to
 * NFKC (the model reads full-width brackets).
 */
export function regionWords(
  chars: readonly ReadChar[],
  region: TextRegion,
  geometry: { stepPx: number; cropWidth: number; blanks: { runs: readonly [number, number][]; least: number } },
): PixelWord[] {
  const { stepPx, cropWidth, blanks } = geometry;
  const column = (c: ReadChar) => (c.step + 0.5) * stepPx;
  const along = (col: number) =>
    (Math.min(cropWidth, Math.max(0, col)) / cropWidth) * 2 * region.halfLength - region.halfLength;
  const words: PixelWord[] = [];
  let current: ReadChar[] = [];
  const flush = () => {
    const text = current
      .map((c) => c.char)
      .join('')
      .normalize('NFKC')
      .trim();
    const first = current[0];
    const last = current[current.length - 1];
    if (text !== '' && first !== undefined && last !== undefined) {
      const [from, to] = [along(column(first) - stepPx), along(column(last) + stepPx)];
      const box = regionBox(region, from, to);
      const confidence = current.reduce((s, c) => s + c.prob, 0) / current.length;
      const low = current.reduce((m, c) => Math.min(m, c.prob), 1);
      words.push({ text, box, confidence, low, chars: current.map((c) => c.prob), line: { region, from, to } });
    }
    current = [];
  };
  for (const c of chars) {
    const previous = current[current.length - 1];
    if (c.char.trim() === '') {
      flush();
      continue;
    }
    if (previous !== undefined) {
      const [a, b] = [column(previous), column(c)];
      // Inside a number or a date only a wider blank: a narrow `1` leaves wide blanks beside it ("20/1 1/2017").
      const numeric = /[\d./,:-]/.test(previous.char) && /[\d./,:-]/.test(c.char);
      const least = numeric ? DIGIT_GAP_FACTOR * blanks.least : 0;
      if (blanks.runs.some(([from, to]) => (from + to) / 2 > a && (from + to) / 2 < b && to - from >= least)) flush();
    }
    current.push(c);
  }
  flush();
  return words;
}
