/**
 * The words Textract read, as evidence (shared/fields/types.ts PageWords): its WORD blocks' geometry (already relative
 * to the page, origin top-left: `BoundingBox` Left/Top/Width/Height → [x0, y0, x1, y1]), `Confidence` / 100.
 * Not to undo: a page's words are its WORD blocks in reading order (each LINE's CHILD words in Textract's line order);
 * only a page without WORD blocks falls back to its LINE blocks (one "word" per line), so every page Textract read
 * has evidence (a blank page: no words). Pages are as Textract numbers them (1-based in the document it was given).
 */
import type { Block, ExpenseDocument, IdentityDocument } from '@aws-sdk/client-textract';
import type { EvidenceWord, PageWords } from '../../fields/types.js';
import { relativeBox, unitConfidence } from '../../media/index.js';

function wordOf(block: Block): EvidenceWord | undefined {
  const text = block.Text?.trim();
  const box = block.Geometry?.BoundingBox;
  if (!text || !box) return undefined;
  const { Left: left, Top: top, Width: width, Height: height } = box;
  if (left === undefined || top === undefined || width === undefined || height === undefined) return undefined;
  const bbox = relativeBox([left, top, left + width, top + height], { width: 1, height: 1 });
  if (!bbox) return undefined;
  const confidence = unitConfidence(block.Confidence);
  return confidence === undefined ? { text, bbox } : { text, bbox, confidence };
}

/** One page's WORD blocks in reading order: each LINE's children in order, then any word no line claims. */
function orderedWords(blocks: readonly Block[]): Block[] {
  const words = blocks.filter((b) => b.BlockType === 'WORD');
  const byId = new Map(words.filter((b) => b.Id !== undefined).map((b) => [b.Id as string, b]));
  const ordered: Block[] = [];
  const placed = new Set<Block>();
  for (const line of blocks) {
    if (line.BlockType !== 'LINE') continue;
    for (const relation of line.Relationships ?? []) {
      if (relation.Type !== 'CHILD') continue;
      for (const id of relation.Ids ?? []) {
        const word = byId.get(id);
        if (word === undefined || placed.has(word)) continue;
        placed.add(word);
        ordered.push(word);
      }
    }
  }
  for (const word of words) if (!placed.has(word)) ordered.push(word);
  return ordered;
}

/** Blocks grouped by page, each once (an async job's pages and an expense document's may repeat a block). */
function byPage(blocks: readonly Block[], pageOf: (block: Block) => number): Map<number, Block[]> {
  const pages = new Map<number, Block[]>();
  const seen = new Set<string>();
  for (const block of blocks) {
    if (block.Id !== undefined) {
      if (seen.has(block.Id)) continue;
      seen.add(block.Id);
    }
    const page = pageOf(block);
    const list = pages.get(page) ?? [];
    list.push(block);
    pages.set(page, list);
  }
  return pages;
}

/**
 * Each page's words. A page whose text came without any geometry (not what Textract's API returns; a fake's or an
 * emulator's answer) is left out rather than listed empty, so that the text layer or OCR can still give it words.
 */
function pageWords(pages: Map<number, Block[]>): PageWords[] {
  const out: PageWords[] = [];
  for (const [page, blocks] of [...pages.entries()].sort(([a], [b]) => a - b)) {
    const ordered = orderedWords(blocks);
    const chosen = ordered.length > 0 ? ordered : blocks.filter((b) => b.BlockType === 'LINE');
    const words = chosen.map(wordOf).filter((w): w is EvidenceWord => w !== undefined);
    if (words.length === 0 && chosen.some((b) => b.Text?.trim())) continue;
    out.push({ page, source: 'textract', words });
  }
  return out;
}

const pageNumber = (page: number | undefined): number =>
  typeof page === 'number' && Number.isInteger(page) && page >= 1 ? page : 1;

/**
 * The words of every page Textract read: text-detection and analysis blocks, expense documents' blocks, identity
 * documents' blocks. AnalyzeID reads each page image it is sent as a document of its own (its blocks say page 1):
 * with several documents, a document's page is its `DocumentIndex`.
 */
export function textractWords(
  blocks: readonly Block[],
  expense: readonly ExpenseDocument[],
  identity: readonly IdentityDocument[],
): PageWords[] {
  const read = [...blocks, ...expense.flatMap((d) => d.Blocks ?? [])].filter(
    (b) => b.BlockType === 'WORD' || b.BlockType === 'LINE' || b.BlockType === 'PAGE',
  );
  const pages = byPage(read, (b) => pageNumber(b.Page));
  identity.forEach((document, index) => {
    const documentPage = identity.length > 1 ? pageNumber(document.DocumentIndex ?? index + 1) : undefined;
    for (const [page, list] of byPage(document.Blocks ?? [], (b) => documentPage ?? pageNumber(b.Page))) {
      pages.set(page, [...(pages.get(page) ?? []), ...list]);
    }
  });
  return pageWords(pages);
}
