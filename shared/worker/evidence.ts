/**
 * A run's evidence words (contract-v1.1 §3): the words, with their boxes, that grounding (shared/fields) matches a
 * result's values against. Where they come from, first found wins per page:
 * 1. the provider's own words (Textract's geometry; the local provider's OCR boxes and text layer);
 * 2. for a PDF, the text layer (mupdf) of every page the provider left without words (a language model's pages);
 * 3. on request, local OCR of pages still without words (a scan or an image only a language model read), bounded in
 *    pages and time: `ocrPagesForEvidence`, with the local provider's one OCR engine.
 * Not to undo:
 * - Pages are 1-based in the WHOLE document: a chunk's words are offset by its first page before they leave it.
 * - Evidence never fails a run: a file mupdf cannot read, or an OCR that fails or runs out of time, gives fewer words
 *   (logged), never an error.
 * See docs/decisions.md#where-a-runs-words-come-from.
 */
import type { PageWords } from '../fields/types.js';
import type { FileFacts } from '../file-facts.js';
import { log } from '../log.js';
import { Deadline, pdfWords } from '../media/index.js';
import { ocrPageWords } from '../providers/local/local-provider.js';
import type { ProviderOutput } from '../providers/types.js';

/** What `collectEvidenceWords` is given. */
export interface CollectEvidenceInput {
  /** The file the provider read: the whole file, or a chunk's PDF when `pages` is set. */
  bytes: Uint8Array;
  /** The facts of `bytes` (a chunk's: `pages` is its page count). */
  facts: FileFacts;
  /** The provider's answer; only its `words` (numbered within `bytes`) are used. */
  output: Pick<ProviderOutput, 'words'>;
  /** A chunk: the pages of the whole document `bytes` holds (1-based, both included). */
  pages?: { first: number; last: number };
  /** Epoch ms after which no text layer is read (the words found so far are returned). */
  deadlineMs: number;
}

/** What `ocrPagesForEvidence` is given. */
export interface OcrEvidenceInput {
  /** The whole file. */
  bytes: Uint8Array;
  facts: FileFacts;
  /** Pages to read (1-based in the whole file): those without words. Out-of-range pages and repeats are ignored. */
  pages: readonly number[];
  /** Epoch ms by which OCR stops (a page being read then is abandoned). */
  deadlineMs: number;
  /** At most this many pages are read (the lowest first). */
  maxPages: number;
}

/** The words with every page moved `by` pages on (a chunk's words into the whole document: `by` = first − 1). */
export function offsetWords(words: readonly PageWords[], by: number): PageWords[] {
  return by === 0 ? [...words] : words.map((page) => ({ ...page, page: page.page + by }));
}

/** The pages 1..`pageCount` that no entry of `words` covers, in order (a page read as blank is covered). */
export function pagesWithoutWords(words: readonly PageWords[], pageCount: number): number[] {
  const covered = new Set(words.map((page) => page.page));
  return Array.from({ length: pageCount }, (_, i) => i + 1).filter((page) => !covered.has(page));
}

/**
 * The run's words: the provider's own for the pages it returned them for, and for a PDF the text layer's for the
 * pages it did not (pages without a text layer are left out: no one read them). In page order, pages offset to the
 * whole document when `pages` is given. Never throws.
 */
export async function collectEvidenceWords(input: CollectEvidenceInput): Promise<PageWords[]> {
  const { facts } = input;
  const count = Math.max(1, facts.pages);
  const byPage = new Map<number, PageWords>();
  for (const page of input.output.words ?? []) {
    // Within the file the provider was given; a repeated page keeps its first entry.
    if (Number.isInteger(page.page) && page.page >= 1 && page.page <= count && !byPage.has(page.page)) {
      byPage.set(page.page, page);
    }
  }
  const missing = pagesWithoutWords([...byPage.values()], count);
  if (facts.kind === 'pdf' && missing.length > 0 && Date.now() < input.deadlineMs) {
    try {
      const deadline = { signal: new AbortController().signal, deadlineMs: input.deadlineMs };
      for (const page of await pdfWords(input.bytes, deadline, missing)) byPage.set(page.page, page);
    } catch (error: unknown) {
      log.warn('could not read the PDF text layer for evidence', { error: String(error) });
    }
  }
  const pages = [...byPage.values()].sort((a, b) => a.page - b.page);
  return offsetWords(pages, (input.pages?.first ?? 1) - 1);
}

/**
 * Local OCR of pages no engine read (a scan or an image only a language model saw), for evidence: at most `maxPages`
 * of `pages`, lowest first, with the local provider's OCR engine (never a second one), stopping at the deadline.
 * Returns the pages read, `source` the engine that read them; never throws (a failure or the deadline ends it with what it has).
 */
export async function ocrPagesForEvidence(input: OcrEvidenceInput): Promise<PageWords[]> {
  const count = Math.max(1, input.facts.pages);
  const pages = [...new Set(input.pages)]
    .filter((page) => Number.isInteger(page) && page >= 1 && page <= count)
    .sort((a, b) => a - b)
    .slice(0, Math.max(0, Math.floor(input.maxPages)));
  const out: PageWords[] = [];
  if (pages.length === 0 || Date.now() >= input.deadlineMs) return out;
  const deadline = new Deadline(new AbortController().signal, input.deadlineMs, 'evidence OCR');
  try {
    await ocrPageWords({ bytes: input.bytes, mime: input.facts.mime }, pages, deadline, out);
  } catch (error: unknown) {
    log.warn('evidence OCR stopped', { pagesAsked: pages.length, pagesRead: out.length, error: String(error) });
  }
  return out;
}
