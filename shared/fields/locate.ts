/**
 * Finding one value's place: which matcher reads it (amount, date, currency code, text), and which of its places is
 * the one, by match quality, then label (top-level fields) or closeness to the item's other values (items). Pure.
 * Not to undo: among equally good places the first in reading order wins, so grounding is deterministic.
 */
import type { FieldType } from '../task.js';
import { evidenceScore, FOREIGN_LABEL, MISLABELLED } from './confidence.js';
import type { LabelBook, LabelVerdict } from './labels.js';
import { amountMatches, currencyMatches, dateMatches, type Match, textMatches } from './match.js';
import { nameTokens, parseDateValue } from './normalize.js';
import type { Expired, Span, WordIndex } from './word-index.js';

/** A string longer than this is not looked for (no field value is a page of text); its field is skipped. */
export const MAX_VALUE_CHARS = 5_000;

/** Where a value was found and how well the words support it (`evidence` in [0, 1]); absent → not found. */
export interface Found {
  match?: Match;
  evidence: number;
}

/** `skip`: no time left (or a value too long to look for); `none`: nothing a word could print (a boolean, null). */
export type Located = Found | 'skip' | 'too-long' | 'none';

/** Whether a value is something words print: a string, or a finite number. */
export function printable(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** The places of values already looked for in this grounding (items repeat values: quantities, units, dates). */
export type PlaceCache = Map<string, Match[]>;

/** One grounding's search: its words, its clock and what it has looked for already. */
export interface Search {
  index: WordIndex;
  expired: Expired;
  cache: PlaceCache;
}

/** Every place a scalar value is printed, read as its field suggests; null when the clock ran out. */
export function placesOf(
  { index, expired, cache }: Search,
  name: string,
  value: string | number,
  type: FieldType | undefined,
): Match[] | null {
  const reading =
    typeof value === 'number'
      ? 'amount'
      : /^\s*[A-Za-z]{3}\s*$/.test(value) && nameTokens(name).includes('currency')
        ? 'currency'
        : type === 'date' || ((type === undefined || type === 'string') && parseDateValue(value).length > 0)
          ? 'date'
          : 'text';
  const key = `${reading}:${String(value)}`;
  const known = cache.get(key);
  if (known !== undefined) return known;
  const places =
    typeof value === 'number'
      ? amountMatches(index, value, expired)
      : reading === 'currency'
        ? currencyMatches(index, value, expired)
        : reading === 'date'
          ? dateMatches(index, value, expired)
          : textMatches(index, value, expired);
  if (places !== null) cache.set(key, places);
  return places;
}

const labelFactor = (v: LabelVerdict): number => (v.mislabelled ? MISLABELLED : v.foreign ? FOREIGN_LABEL : 1);

/** A top-level field's value: the best place by quality (a mislabelled place counts 0.3 less), then label, then order. */
export function locateField(
  search: Search,
  name: string,
  value: unknown,
  type: FieldType | undefined,
  labels: LabelBook,
): Located {
  if (!printable(value)) return 'none';
  if (typeof value === 'string' && value.length > MAX_VALUE_CHARS) return 'too-long';
  const places = placesOf(search, name, value, type);
  const index = search.index;
  if (places === null) return 'skip';
  let best: { match: Match; verdict: LabelVerdict; rank: number } | undefined;
  for (const match of places) {
    const verdict = labels.judge(name, index, match.span);
    const rank = match.quality - (verdict.mislabelled ? 0.3 : 0) - (verdict.foreign ? 0.1 : 0);
    const better =
      best === undefined ||
      rank > best.rank + 1e-9 ||
      (Math.abs(rank - best.rank) <= 1e-9 && verdict.own > best.verdict.own + 1e-9);
    if (better) best = { match, verdict, rank };
  }
  if (best === undefined) return { evidence: 0 };
  const { match, verdict } = best;
  return { match, evidence: evidenceScore(match.quality, index.readerConfidence(match.span), labelFactor(verdict)) };
}

/** What an item's values are placed against: the row found so far, and the places earlier items already took. */
export interface RowContext {
  anchor?: Span;
  /** Per item key, the places (`page:first:last`) earlier items used. */
  used: Map<string, Set<string>>;
}

const spanKey = (s: Span): string => `${s.pageIndex}:${s.first}:${s.last}`;

/**
 * One field of an item of an array of objects: the best place by quality, then on the row's line, then not taken by
 * an earlier item (two "Screws" rows take the two "Screws" lines in order), then nearest the row, then order.
 */
export function locateItemValue(search: Search, key: string, value: unknown, row: RowContext): Located {
  if (!printable(value)) return 'none';
  if (typeof value === 'string' && value.length > MAX_VALUE_CHARS) return 'too-long';
  const places = placesOf(search, key, value, undefined);
  const index = search.index;
  if (places === null) return 'skip';
  const used = row.used.get(key) ?? new Set<string>();
  const anchor = row.anchor;
  const score = (m: Match): number[] => [
    m.quality,
    anchor !== undefined && index.sameLine(anchor, m.span) ? 1 : 0,
    used.has(spanKey(m.span)) ? 0 : 1,
    anchor !== undefined && anchor.pageIndex === m.span.pageIndex ? -Math.abs(m.span.first - anchor.first) : -Infinity,
  ];
  let best: { match: Match; score: number[] } | undefined;
  for (const match of places) {
    const s = score(match);
    if (best === undefined || greater(s, best.score)) best = { match, score: s };
  }
  if (best === undefined) return { evidence: 0 };
  used.add(spanKey(best.match.span));
  row.used.set(key, used);
  const { match } = best;
  return { match, evidence: evidenceScore(match.quality, index.readerConfidence(match.span), 1) };
}

function greater(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (Math.abs(x - y) > 1e-9) return x > y;
  }
  return false;
}
