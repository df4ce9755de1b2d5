/**
 * tesseract.js's recognition tree (blocks → paragraphs → lines → words, boxes in pixels of the image it read) as
 * evidence words (shared/fields/types.ts): in tesseract's reading order, boxes relative to that image, confidence / 100.
 * Pure; the local provider asks tesseract for `blocks` output to get the tree.
 */
import type Tesseract from 'tesseract.js';
import type { EvidenceWord } from '../../fields/types.js';
import { relativeBox, unitConfidence } from '../../media/index.js';

/** The words of a recognition, relative to the `width` x `height` pixels of the image tesseract was given. */
export function tesseractWords(
  blocks: readonly Tesseract.Block[] | null | undefined,
  image: { width: number; height: number },
): EvidenceWord[] {
  const words: EvidenceWord[] = [];
  for (const block of blocks ?? []) {
    for (const paragraph of block.paragraphs ?? []) {
      for (const line of paragraph.lines ?? []) {
        for (const word of line.words ?? []) {
          const text = word.text?.trim();
          if (!text || !word.bbox) continue;
          const bbox = relativeBox([word.bbox.x0, word.bbox.y0, word.bbox.x1, word.bbox.y1], image);
          if (!bbox) continue;
          const confidence = unitConfidence(word.confidence);
          words.push(confidence === undefined ? { text, bbox } : { text, bbox, confidence });
        }
      }
    }
  }
  return words;
}
