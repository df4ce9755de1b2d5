/**
 * A page's words as rows of text, top to bottom, left to right: what the local provider's rules read, whichever
 * engine (or text layer) gave the words. A word joins the row whose word nearest across has its vertical middle within
 * half a word's height of its own (a curled receipt's rows drift) and which has nothing where it stands; a wide gap inside a row is written as two spaces (a new "cell", as
 * the text rules of extract-fields.ts understand it). Pure.
 */
import type { BBox, EvidenceWord } from '../../fields/types.js';
import type { LinePart } from './paddle-geometry.js';

/** A word as the rules read it: evidence, and where the engine gives it, its least sure character's probability. */
export interface ReadWord extends EvidenceWord {
  /** PaddleOCR's lowest character probability in the word (`confidence` is their mean). */
  low?: number;
  /** PaddleOCR's probability of each character of `text`, in order (when the text's length is theirs). */
  chars?: readonly number[];
  /** PaddleOCR's text region the word was read from, in pixels of the page image, and its span along it. */
  line?: LinePart;
}

/** One row of words, left to right. */
export interface Row {
  words: ReadWord[];
  /** The words joined: one space, or two across a gap wider than CELL_GAP row heights. */
  text: string;
  bbox: BBox;
  /** The row's height relative to the page (its tallest word): large print reads larger. */
  height: number;
}

/** A gap wider than this many row heights separates two cells of a row. */
const CELL_GAP = 1.5;

function middle(w: EvidenceWord): number {
  return (w.bbox[1] + w.bbox[3]) / 2;
}

function heightOf(w: EvidenceWord): number {
  return w.bbox[3] - w.bbox[1];
}

function horizontalGap(a: EvidenceWord, b: EvidenceWord): number {
  return Math.max(0, Math.max(a.bbox[0], b.bbox[0]) - Math.min(a.bbox[2], b.bbox[2]));
}

function overlapsHorizontally(a: EvidenceWord, b: EvidenceWord): boolean {
  const overlap = Math.min(a.bbox[2], b.bbox[2]) - Math.max(a.bbox[0], b.bbox[0]);
  return overlap > 0.5 * Math.min(a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0]);
}

function rowOf(words: ReadWord[]): Row {
  const sorted = [...words].sort((a, b) => a.bbox[0] - b.bbox[0]);
  const height = Math.max(...sorted.map(heightOf));
  let text = '';
  sorted.forEach((w, i) => {
    const previous = sorted[i - 1];
    if (previous !== undefined) text += w.bbox[0] - previous.bbox[2] > CELL_GAP * height ? '  ' : ' ';
    text += w.text;
  });
  const bbox: BBox = [
    Math.min(...sorted.map((w) => w.bbox[0])),
    Math.min(...sorted.map((w) => w.bbox[1])),
    Math.max(...sorted.map((w) => w.bbox[2])),
    Math.max(...sorted.map((w) => w.bbox[3])),
  ];
  return { words: sorted, text, bbox, height };
}

/** The words of one page as rows, top to bottom. */
export function readingRows(words: readonly ReadWord[]): Row[] {
  const groups: { words: ReadWord[]; middle: number; height: number }[] = [];
  for (const word of [...words].sort((a, b) => middle(a) - middle(b))) {
    const m = middle(word);
    const h = heightOf(word);
    let best: (typeof groups)[number] | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const group of groups) {
      // Against the group's word nearest across: a curled or skewed row drifts, its neighbours do not.
      const nearest = group.words.reduce((a, b) => (horizontalGap(a, word) <= horizontalGap(b, word) ? a : b));
      const distance = Math.abs(middle(nearest) - m);
      if (distance > 0.5 * Math.min(group.height, h) || distance >= bestDistance) continue;
      if (group.words.some((w) => overlapsHorizontally(w, word))) continue;
      best = group;
      bestDistance = distance;
    }
    if (best === undefined) {
      groups.push({ words: [word], middle: m, height: h });
      continue;
    }
    best.words.push(word);
    best.middle = best.words.reduce((s, w) => s + middle(w), 0) / best.words.length;
    best.height = Math.max(best.height, h);
  }
  return groups.map((g) => rowOf(g.words)).sort((a, b) => a.bbox[1] + a.bbox[3] - (b.bbox[1] + b.bbox[3]));
}
