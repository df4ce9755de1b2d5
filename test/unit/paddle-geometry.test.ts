/**
 * The pure steps around the local OCR engine's models, on maps, images and model outputs made here: regions along
 * their own axis (a tilted line stays one straight crop), CTC decoding, and where a line's words start and end
 * (spaces from the model and from the paper's blank columns, never inside a number).
 */
import {
  blankRuns,
  cropLine,
  ctcDecode,
  type ReadChar,
  regionBox,
  regionWords,
  stretchPlane,
  subRegion,
  type TextRegion,
  textRegions,
} from '../../shared/providers/local/paddle-geometry.js';

/** A probability map with 1 on a bar from (x0, y0) of `length` px, `thickness` px thick, tilted by `degrees`. */
function barMap(
  width: number,
  height: number,
  bar: { x0: number; y0: number; length: number; thickness: number; degrees: number },
) {
  const prob = new Float32Array(width * height);
  const t = (bar.degrees * Math.PI) / 180;
  for (let u = 0; u < bar.length; u += 0.5) {
    for (let v = 0; v < bar.thickness; v += 0.5) {
      const x = Math.round(bar.x0 + u * Math.cos(t) - v * Math.sin(t));
      const y = Math.round(bar.y0 + u * Math.sin(t) + v * Math.cos(t));
      if (x >= 0 && y >= 0 && x < width && y < height) prob[y * width + x] = 0.95;
    }
  }
  return prob;
}

describe('text regions', () => {
  test("a tilted line is one region along its own axis, grown by DB's unclip distance", () => {
    const prob = barMap(300, 120, { x0: 20, y0: 40, length: 240, thickness: 8, degrees: -3 });
    const [region, ...rest] = textRegions(prob, 300, 120);
    expect(rest).toEqual([]);
    expect((Math.atan2(region?.sin ?? 0, region?.cos ?? 1) * 180) / Math.PI).toBeCloseTo(-3, 0);
    // Unclip: 240 x 8 grows by 240·8·1.5 / (2·248) ≈ 5.8 px on each side.
    expect(2 * (region?.halfThickness ?? 0)).toBeGreaterThan(8 + 2 * 5);
    expect(2 * (region?.halfLength ?? 0)).toBeGreaterThan(240 + 2 * 5);
  });

  test('two rows close together stay two regions; faint noise is no region', () => {
    const prob = barMap(300, 120, { x0: 20, y0: 30, length: 200, thickness: 6, degrees: 0 });
    const second = barMap(300, 120, { x0: 20, y0: 42, length: 200, thickness: 6, degrees: 0 });
    for (let i = 0; i < prob.length; i++) prob[i] = Math.max(prob[i] ?? 0, second[i] ?? 0);
    prob[100 * 300 + 150] = 0.4; // one faint pixel
    expect(textRegions(prob, 300, 120)).toHaveLength(2);
  });
});

describe('crops', () => {
  test('a tilted region is cut straight: its ink stays in the middle rows of the crop', () => {
    const width = 300;
    const height = 120;
    const prob = barMap(width, height, { x0: 20, y0: 50, length: 240, thickness: 10, degrees: 4 });
    const data = new Uint8Array(width * height).fill(255);
    prob.forEach((p, i) => {
      if (p > 0.5) data[i] = 0;
    });
    const [region] = textRegions(prob, width, height);
    const { plane, width: cw } = cropLine({ data, width, height }, region as TextRegion);
    const inkRows = new Set<number>();
    for (let y = 0; y < 48; y++) for (let x = 0; x < cw; x++) if ((plane[y * cw + x] ?? 1) < 0) inkRows.add(y);
    expect(Math.min(...inkRows)).toBeGreaterThan(8);
    expect(Math.max(...inkRows)).toBeLessThan(40);
  });
});

describe('CTC decoding', () => {
  test('repeats merge, blanks separate, class i is dictionary[i - 1]', () => {
    const dictionary = ['a', 'b', ' '];
    // Steps: a a _ a b _ → "aab"
    const steps = [1, 1, 0, 1, 2, 0];
    const probs = new Float32Array(steps.length * 4);
    steps.forEach((c, s) => {
      probs[s * 4 + c] = 0.9;
    });
    expect(ctcDecode(probs, 0, steps.length, 4, dictionary).map((c) => `${c.char}@${c.step}`)).toEqual([
      'a@0',
      'a@3',
      'b@4',
    ]);
  });
});

describe('words of a region', () => {
  const region: TextRegion = { cx: 200, cy: 20, cos: 1, sin: 0, halfLength: 200, halfThickness: 10 };
  const chars = (text: string, every = 2): ReadChar[] =>
    [...text].map((char, i) => ({ char, prob: 0.9, step: i * every }));
  const geometry = (runs: [number, number][]) => ({ stepPx: 8, cropWidth: 400, blanks: { runs, least: 10 } });

  test('a space the model read splits words; each word gets the part of the region its characters span', () => {
    const words = regionWords(chars('AB CD'), region, geometry([]));
    expect(words.map((w) => w.text)).toEqual(['AB', 'CD']);
    const [first, second] = words;
    expect(first?.box[2]).toBeLessThanOrEqual(second?.box[0] ?? 0);
    expect(first?.box[1]).toBe(regionBox(region)[1]);
  });

  test('a blank run of the paper between two letters splits a word the model ran together', () => {
    // Characters at steps 0, 2, 4, 6 (crop columns 4, 20, 36, 52): a blank from 24 to 34 lies between B and C.
    expect(regionWords(chars('ABCD'), region, geometry([[24, 34]])).map((w) => w.text)).toEqual(['AB', 'CD']);
  });

  test('inside a number only a wider blank splits: the gap beside a narrow 1 does not', () => {
    expect(regionWords(chars('2011'), region, geometry([[24, 34]])).map((w) => w.text)).toEqual(['2011']);
    expect(regionWords(chars('2011'), region, geometry([[22, 40]])).map((w) => w.text)).toEqual(['20', '11']);
  });

  test('full-width brackets fold to ASCII', () => {
    expect(regionWords(chars('（M）'), region, geometry([])).map((w) => w.text)).toEqual(['(M)']);
  });
});

describe('blank runs', () => {
  test('wide blanks between ink are spaces; gaps between letters and the margins are not', () => {
    const width = 120;
    const plane = new Float32Array(width * 48).fill(1);
    // Ink columns: letters at 10–14, 18–22 (gap 3), then a word gap to 40–44, 48–52.
    for (const [a, b] of [
      [10, 15],
      [18, 23],
      [40, 45],
      [48, 53],
    ] as const) {
      for (let x = a; x < b; x++) for (let y = 10; y < 38; y++) plane[y * width + x] = -1;
    }
    expect(blankRuns(plane, width, 48).runs).toEqual([[23, 40]]);
  });
});

describe('a second read of a part of a region', () => {
  test("a word's part of a tilted region, grown at both ends along the region's own axis", () => {
    const tilted: TextRegion = {
      cx: 100,
      cy: 50,
      cos: Math.cos(0.1),
      sin: Math.sin(0.1),
      halfLength: 80,
      halfThickness: 10,
    };
    const part = subRegion(tilted, 20, 60, 0.5);
    // From 20 − 10 to 60 + 10 along the axis (0.5 × the thickness of 20 at each end): centred 40 along it.
    expect(part.halfLength).toBeCloseTo(30);
    expect(part.cx).toBeCloseTo(100 + 40 * Math.cos(0.1));
    expect(part.cy).toBeCloseTo(50 + 40 * Math.sin(0.1));
    expect([part.cos, part.sin, part.halfThickness]).toEqual([tilted.cos, tilted.sin, 10]);
  });

  test('faded print is stretched to full contrast; a crop of one grey is left as it is', () => {
    const faded = Float32Array.from({ length: 200 }, (_, i) => (i % 4 === 0 ? 0.2 : 0.8));
    const out = stretchPlane(Float32Array.from(faded));
    expect(Math.min(...out)).toBe(-1);
    expect(Math.max(...out)).toBe(1);
    const flat = new Float32Array(50).fill(0.9);
    expect([...stretchPlane(flat)]).toEqual([...new Float32Array(50).fill(0.9)]);
  });
});
