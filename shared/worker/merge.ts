/**
 * Merging the answers of a run's page chunks into one (contract v1.1 §2). Pure.
 * - Text: `{text, pages: [{page, text}]}`, pages in order, `text` their texts joined by "\n\f\n".
 * - JSON: arrays concatenated in page order; at each seam a row the next chunk repeats (the last row again, or the
 *   table's header row) is dropped once, and a row split over the seam (each half filling the other's blanks) is
 *   joined. Scalars and objects take the first confident non-null value; a different value another chunk read is
 *   kept in `alternatives` (for `fields.<name>.alternatives`), never silently dropped.
 * - Words (evidence): every chunk's, already numbered in the whole document, in page order.
 * Not to undo: chunks are merged in page order whatever order they finished in.
 */
import type { PageWords } from '../fields/types.js';
import { isPlainObject } from '../providers/common.js';
import { PAGE_SEPARATOR } from '../runs/run-view.js';

/** What one chunk answered. `first`/`last`: its pages (1-based, both included). */
export interface ChunkAnswer {
  first: number;
  last: number;
  result: Record<string, unknown>;
  /** The document text the provider saw for these pages, when known. */
  documentText?: string;
  nativeConfidence?: number;
  /** The words the provider read, pages numbered in the whole document (never checkpointed: see chunked.ts). */
  words?: PageWords[];
}

/**
 * Another value a chunk read for a field, with its page when the chunk is that one page. A chunk of several pages
 * does not say which holds it: grounding looks for it (shared/fields/ground.ts), rather than naming the chunk's first.
 */
export interface Alternative {
  value: unknown;
  page?: number;
}

export interface MergedAnswer {
  result: Record<string, unknown>;
  /** Per top-level key: values other chunks read that differ from the one kept. Empty when none conflict. */
  alternatives: Record<string, Alternative[]>;
  /** The chunks' document texts in page order, joined like text output; undefined when no chunk had one. */
  documentText?: string;
  /** The chunks' native confidences, weighted by their pages; undefined when none reported one. */
  nativeConfidence?: number;
  /** Every chunk's words in page order; undefined when no chunk had any. */
  words?: PageWords[];
}

/** A chunk at or above this native confidence is "confident": its value wins over an earlier, less sure one. */
export const CONFIDENT = 0.5;

function inPageOrder(chunks: readonly ChunkAnswer[]): ChunkAnswer[] {
  return [...chunks].sort((a, b) => a.first - b.first);
}

function chunkText(chunk: ChunkAnswer): string {
  const text = chunk.result.text;
  return typeof text === 'string' ? text : (chunk.documentText ?? '');
}

/** Text output: one entry per chunk (one page each, as text runs are planned), joined in page order. */
export function mergeText(chunks: readonly ChunkAnswer[]): MergedAnswer {
  const ordered = inPageOrder(chunks);
  const pages = ordered.map((chunk) => ({ page: chunk.first, text: chunkText(chunk) }));
  return {
    result: { text: pages.map((p) => p.text).join(PAGE_SEPARATOR), pages },
    alternatives: {},
    ...documentAndConfidence(ordered),
  };
}

/** JSON output: see the module comment. */
export function mergeJson(chunks: readonly ChunkAnswer[]): MergedAnswer {
  const ordered = inPageOrder(chunks);
  const keys = [...new Set(ordered.flatMap((chunk) => Object.keys(chunk.result)))];
  const result: Record<string, unknown> = {};
  const alternatives: Record<string, Alternative[]> = {};
  for (const key of keys) {
    const present = ordered.filter((chunk) => Object.hasOwn(chunk.result, key));
    const values = present.map((chunk) => chunk.result[key]);
    if (values.some(Array.isArray) && values.every((v) => Array.isArray(v) || v === null || v === undefined)) {
      result[key] = concatRows(values.map((v) => (Array.isArray(v) ? v : [])));
      continue;
    }
    const { value, others } = pickValue(present, key);
    result[key] = value;
    if (others.length > 0) alternatives[key] = others;
  }
  return { result, alternatives, ...documentAndConfidence(ordered) };
}

/** The first confident non-null value (else the first non-null), and the differing values of the other chunks. */
function pickValue(chunks: readonly ChunkAnswer[], key: string): { value: unknown; others: Alternative[] } {
  const withValue = chunks.filter((chunk) => !isBlank(chunk.result[key]));
  if (withValue.length === 0) return { value: chunks.length > 0 ? null : undefined, others: [] };
  const kept =
    withValue.find((chunk) => (chunk.nativeConfidence ?? CONFIDENT) >= CONFIDENT) ?? (withValue[0] as ChunkAnswer);
  const value = kept.result[key];
  const seen = [canonical(value)];
  const others: Alternative[] = [];
  for (const chunk of withValue) {
    const other = chunk.result[key];
    const form = canonical(other);
    if (seen.includes(form)) continue;
    seen.push(form);
    others.push({ value: other, ...(chunk.first === chunk.last ? { page: chunk.first } : {}) });
  }
  return { value, others };
}

/**
 * Rows of every chunk in order. At a seam, the next chunk's first row is dropped once when it repeats the row before
 * the seam or the table's first row (a header printed on every page), and joined with the row before the seam when
 * the two complete each other (a row split over a page break: neither contradicts the other, each fills a blank).
 */
export function concatRows(lists: readonly unknown[][]): unknown[] {
  const rows: unknown[] = [];
  for (const list of lists) {
    let next = [...list];
    if (rows.length > 0 && next.length > 0) {
      const last = rows[rows.length - 1];
      const head = next[0];
      if (canonical(head) === canonical(last) || canonical(head) === canonical(rows[0])) {
        next = next.slice(1);
      } else {
        const joined = joinSplitRow(last, head);
        if (joined !== undefined) {
          rows[rows.length - 1] = joined;
          next = next.slice(1);
        }
      }
    }
    rows.push(...next);
  }
  return rows;
}

/** Two halves of one row: objects whose every shared key agrees or is blank on one side, each filling a blank. */
function joinSplitRow(before: unknown, after: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(before) || !isPlainObject(after)) return undefined;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  let fillsBefore = false;
  let fillsAfter = false;
  const joined: Record<string, unknown> = {};
  for (const key of keys) {
    const a = before[key];
    const b = after[key];
    if (isBlank(a) && isBlank(b)) joined[key] = a ?? b ?? null;
    else if (isBlank(a)) {
      fillsBefore = true;
      joined[key] = b;
    } else if (isBlank(b)) {
      fillsAfter = true;
      joined[key] = a;
    } else if (canonical(a) === canonical(b)) joined[key] = a;
    else return undefined;
  }
  return fillsBefore && fillsAfter ? joined : undefined;
}

function isBlank(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}

/** A comparable form: strings trimmed with their whitespace collapsed, object keys sorted. */
function canonical(value: unknown): string {
  return JSON.stringify(normalise(value));
}

function normalise(value: unknown): unknown {
  if (typeof value === 'string') return value.trim().replace(/\s+/g, ' ');
  if (Array.isArray(value)) return value.map(normalise);
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, normalise(value[key])]),
    );
  }
  return value;
}

function documentAndConfidence(
  ordered: readonly ChunkAnswer[],
): Pick<MergedAnswer, 'documentText' | 'nativeConfidence' | 'words'> {
  const texts = ordered.map((chunk) => chunk.documentText);
  const words = ordered.some((chunk) => chunk.words !== undefined)
    ? ordered.flatMap((chunk) => chunk.words ?? []).sort((a, b) => a.page - b.page)
    : undefined;
  const rated = ordered.filter((chunk) => chunk.nativeConfidence !== undefined);
  const weight = (chunk: ChunkAnswer) => chunk.last - chunk.first + 1;
  const totalWeight = rated.reduce((sum, chunk) => sum + weight(chunk), 0);
  return {
    ...(texts.some((t) => t !== undefined) ? { documentText: texts.map((t) => t ?? '').join(PAGE_SEPARATOR) } : {}),
    ...(rated.length > 0
      ? {
          nativeConfidence:
            rated.reduce((sum, chunk) => sum + (chunk.nativeConfidence ?? 0) * weight(chunk), 0) / totalWeight,
        }
      : {}),
    ...(words !== undefined ? { words } : {}),
  };
}
