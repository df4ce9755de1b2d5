/**
 * The words of a run, indexed once for grounding: per page a stream of folded tokens in reading order (each pointing
 * back to its word), a map from token to its positions, and, built on first need, maps from an amount and from an
 * ISO date to the word spans that print it. Pure.
 * Not to undo: every build step checks the caller's clock between pages and reports an unfinished index, so that a
 * document of 1,000 pages cannot hold grounding past its budget; an unfinished index is never searched (a value it
 * did not reach would look unsupported).
 */

import {
  amountKey,
  dayOf,
  fullYear,
  isCurrencyWord,
  isoDate,
  monthOf,
  numericDates,
  parseAmount,
  tokens,
} from './normalize.js';
import type { BBox, EvidenceWord, PageWords } from './types.js';

/** Consecutive words of one indexed page, `first`..`last` inclusive. */
export interface Span {
  /** Index into `WordIndex.pages` (not the document page number). */
  pageIndex: number;
  first: number;
  last: number;
}

export interface IndexedPage {
  /** 1-based page of the whole document. */
  page: number;
  words: EvidenceWord[];
  /** Folded tokens in reading order. */
  tokens: string[];
  /** For each token, the index of its word. */
  tokenWord: number[];
  /** For each word, its first token (its count in `wordTokens`); a word of punctuation only has none. */
  wordFirstToken: number[];
  wordTokens: number[];
}

/** Positions are packed as `pageIndex × STRIDE + token`, so one number per occurrence. */
const STRIDE = 2 ** 22;

/** A clock check: true once the budget is spent. */
export type Expired = () => boolean;

export class WordIndex {
  readonly pages: IndexedPage[] = [];
  private readonly byToken = new Map<string, number[]>();
  private amounts: Map<string, Span[]> | undefined;
  private dates: Map<string, Span[]> | undefined;

  /** Indexes the pages in page order; null when the clock ran out first. */
  static build(pageWords: readonly PageWords[], expired: Expired): WordIndex | null {
    const index = new WordIndex();
    const ordered = [...pageWords].sort((a, b) => a.page - b.page);
    for (const pw of ordered) {
      if (expired()) return null;
      index.addPage(pw);
    }
    return index;
  }

  private addPage(pw: PageWords): void {
    const pageIndex = this.pages.length;
    const words = (Array.isArray(pw.words) ? pw.words : []).filter(isWord);
    const page: IndexedPage = {
      page: pw.page,
      words,
      tokens: [],
      tokenWord: [],
      wordFirstToken: [],
      wordTokens: [],
    };
    for (let w = 0; w < words.length; w++) {
      const wordTokens = tokens((words[w] as EvidenceWord).text);
      page.wordFirstToken.push(page.tokens.length);
      page.wordTokens.push(wordTokens.length);
      for (const token of wordTokens) {
        if (page.tokens.length >= STRIDE - 1) break;
        const position = pageIndex * STRIDE + page.tokens.length;
        const list = this.byToken.get(token);
        if (list === undefined) this.byToken.set(token, [position]);
        else list.push(position);
        page.tokens.push(token);
        page.tokenWord.push(w);
      }
    }
    this.pages.push(page);
  }

  /** Where a folded token occurs, as packed positions in document order. */
  positions(token: string): readonly number[] {
    return this.byToken.get(token) ?? [];
  }

  static unpack(position: number): { pageIndex: number; token: number } {
    return { pageIndex: Math.floor(position / STRIDE), token: position % STRIDE };
  }

  /** The words spanned by tokens `first`..`last` of a page. */
  tokenSpan(pageIndex: number, first: number, last: number): Span {
    const page = this.pages[pageIndex] as IndexedPage;
    return { pageIndex, first: page.tokenWord[first] ?? 0, last: page.tokenWord[last] ?? 0 };
  }

  /** Spans that print an amount (`amountKey`), built on first call; null when the clock ran out first. */
  amountSpans(expired: Expired): Map<string, Span[]> | null {
    if (this.amounts !== undefined) return this.amounts;
    const map = new Map<string, Span[]>();
    for (let p = 0; p < this.pages.length; p++) {
      if (expired()) return null;
      addAmounts(map, p, (this.pages[p] as IndexedPage).words);
    }
    this.amounts = map;
    return map;
  }

  /** Spans that print a date, by ISO date (every reading of an ambiguous one), built on first call. */
  dateSpans(expired: Expired): Map<string, Span[]> | null {
    if (this.dates !== undefined) return this.dates;
    const map = new Map<string, Span[]>();
    for (let p = 0; p < this.pages.length; p++) {
      if (expired()) return null;
      addDates(map, p, this.pages[p] as IndexedPage);
    }
    this.dates = map;
    return map;
  }

  page(span: Span): IndexedPage {
    return this.pages[span.pageIndex] as IndexedPage;
  }

  /** The words of a span joined by spaces. */
  text(span: Span): string {
    return this.page(span)
      .words.slice(span.first, span.last + 1)
      .map((w) => w.text)
      .join(' ');
  }

  /** The union of the span's word boxes. */
  bbox(span: Span): BBox {
    const words = this.page(span).words.slice(span.first, span.last + 1);
    const box: BBox = [1, 1, 0, 0];
    for (const w of words) {
      box[0] = Math.min(box[0], w.bbox[0]);
      box[1] = Math.min(box[1], w.bbox[1]);
      box[2] = Math.max(box[2], w.bbox[2]);
      box[3] = Math.max(box[3], w.bbox[3]);
    }
    return box;
  }

  /** Mean reader confidence of the span's words; 1 for words without one (a PDF text layer is exact). */
  readerConfidence(span: Span): number {
    const words = this.page(span).words.slice(span.first, span.last + 1);
    if (words.length === 0) return 1;
    return (
      words.reduce((sum, w) => sum + (typeof w.confidence === 'number' ? clamp01(w.confidence) : 1), 0) / words.length
    );
  }

  /** Whether two spans of the same page stand on one line (their vertical centres within the other's height). */
  sameLine(a: Span, b: Span): boolean {
    if (a.pageIndex !== b.pageIndex) return false;
    const [, ay0, , ay1] = this.bbox(a);
    const [, by0, , by1] = this.bbox(b);
    const aMid = (ay0 + ay1) / 2;
    const bMid = (by0 + by1) / 2;
    return (aMid >= by0 && aMid <= by1) || (bMid >= ay0 && bMid <= ay1);
  }

  /** Whether the tokens of the span cover its words entirely (not a piece of a longer word, as `1042` of `INV-1042`). */
  coversWords(pageIndex: number, firstToken: number, lastToken: number): boolean {
    const page = this.pages[pageIndex] as IndexedPage;
    const firstWord = page.tokenWord[firstToken] ?? 0;
    const lastWord = page.tokenWord[lastToken] ?? 0;
    return (
      page.wordFirstToken[firstWord] === firstToken &&
      (page.wordFirstToken[lastWord] ?? 0) + (page.wordTokens[lastWord] ?? 0) - 1 === lastToken
    );
  }
}

function isWord(w: unknown): w is EvidenceWord {
  if (typeof w !== 'object' || w === null) return false;
  const word = w as EvidenceWord;
  return typeof word.text === 'string' && Array.isArray(word.bbox) && word.bbox.length === 4;
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

function push(map: Map<string, Span[]>, key: string, span: Span): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [span]);
  else list.push(span);
}

/**
 * Letters glued before an amount with cents: its currency (`RM53.60`, `USD42.17`), as receipts print it or OCR reads
 * it. Only before cents, so that an id (`INV1042`) never reads as an amount.
 */
const GLUED_CURRENCY = /^\p{L}{1,4}\.?(?=\d+[.,]\d{2}$)/u;

/** The readings of a word as an amount, a currency in letters glued before it set aside. */
function amountInWord(text: string): number[] {
  const readings = parseAmount(text);
  return readings.length > 0 ? readings : parseAmount(text.replace(GLUED_CURRENCY, ''));
}

/**
 * Amounts as single words (`42.17`, `$42.17`, `RM42.17`, `(42.17)`), with a currency word beside them (`42,17 €`,
 * `EUR 42.17`), split at a thousands space (`1 234,50`), or after a label in the same word (`Total:42.17`,
 * `GST:RM42.17`, as OCR sometimes reads).
 */
function addAmounts(map: Map<string, Span[]>, pageIndex: number, words: readonly EvidenceWord[]): void {
  for (let i = 0; i < words.length; i++) {
    const text = (words[i] as EvidenceWord).text;
    if (!/\d/.test(text) || text.length > 40) continue;
    const first = i > 0 && isCurrencyWord(words[i - 1]?.text ?? '') ? i - 1 : i;
    const last = i + 1 < words.length && isCurrencyWord(words[i + 1]?.text ?? '') ? i + 1 : i;
    const readings = new Set(amountInWord(text));
    const colon = text.lastIndexOf(':');
    if (readings.size === 0 && colon > 0) for (const n of amountInWord(text.slice(colon + 1))) readings.add(n);
    for (const n of readings) push(map, amountKey(n), { pageIndex, first, last });
    const next = words[i + 1]?.text ?? '';
    if (/^\d{1,3}$/.test(text) && /^\d{3}(?:[.,]\d+)?$/.test(next)) {
      const end = i + 2 < words.length && isCurrencyWord(words[i + 2]?.text ?? '') ? i + 2 : i + 1;
      for (const n of parseAmount(`${text} ${next}`)) push(map, amountKey(n), { pageIndex, first, last: end });
    }
  }
}

/** Numeric dates inside one word, and dates with a month name over three tokens (`Nov 20, 2026`, `20 Nov 2026`). */
function addDates(map: Map<string, Span[]>, pageIndex: number, page: IndexedPage): void {
  for (let w = 0; w < page.words.length; w++) {
    const text = (page.words[w] as EvidenceWord).text;
    if (text.length > 60 || !/\d[-/.]\d/.test(text)) continue;
    for (const d of numericDates(text)) for (const iso of d.readings) push(map, iso, { pageIndex, first: w, last: w });
  }
  const t = page.tokens;
  for (let i = 0; i < t.length; i++) {
    const month = monthOf(t[i] as string);
    if (month === 0) continue;
    const yearAfter = yearOf(t[i + 2], t[i + 3]);
    const mdy = yearAfter > 0 ? isoDate(yearAfter, month, dayOf(t[i + 1] ?? '')) : null;
    if (mdy !== null) push(map, mdy, spanOf(page, pageIndex, i, i + 2));
    const yearNext = yearOf(t[i + 1], t[i + 2]);
    const dmy = i > 0 && yearNext > 0 ? isoDate(yearNext, month, dayOf(t[i - 1] ?? '')) : null;
    if (dmy !== null) push(map, dmy, spanOf(page, pageIndex, i - 1, i + 1));
  }
}

/** A year token; also a 4-digit year with the hour glued on, before the minutes (`11 Jun 201818:32`, as OCR reads). */
function yearOf(token: string | undefined, next: string | undefined): number {
  if (token === undefined) return 0;
  if (/^\d{5,6}$/.test(token) && next !== undefined && /^\d{2}$/.test(next)) return fullYear(token.slice(0, 4));
  if (!/^(?:\d{4}|\d{2})$/.test(token)) return 0;
  return fullYear(token);
}

function spanOf(page: IndexedPage, pageIndex: number, firstToken: number, lastToken: number): Span {
  return { pageIndex, first: page.tokenWord[firstToken] ?? 0, last: page.tokenWord[lastToken] ?? 0 };
}
