/**
 * Where a value stands among the words: every place that prints it, each with how closely (`exact`: the value's own
 * text; `normalised`: the same value once case, punctuation, diacritics, currency signs, separators or date notation
 * are set aside; `in-word`: a piece of a longer word; `partial`: most of a long text's tokens close together). Pure.
 * Not to undo: a value is compared token by token over a page's reading order, never as a substring of the page, so
 * `42.5` is not found in `142.50` and "Blue Bottle Coffee" is found over three words.
 */
import { amountKey, collapse, parseAmount, parseDateValue, tokens } from './normalize.js';
import { type Expired, type Span, WordIndex } from './word-index.js';

export type MatchKind = 'exact' | 'normalised' | 'look-alike' | 'in-word' | 'symbol' | 'partial';

/** One place a value is printed. `quality` in (0, 1] ranks places and feeds the field's confidence. */
export interface Match {
  span: Span;
  kind: MatchKind;
  quality: number;
}

/** Match quality per kind (docs/confidence.md). A partial match scores `QUALITY.partial × overlap`. */
export const QUALITY = {
  exact: 1,
  normalised: 0.95,
  'look-alike': 0.9,
  'in-word': 0.8,
  symbol: 0.9,
  partial: 0.75,
} as const;

/** A long text (≥ APPROX_MIN_TOKENS tokens) matches approximately when this share of its distinct tokens stand close. */
export const APPROX_MIN_TOKENS = 3;
export const APPROX_MIN_OVERLAP = 0.7;

/** At most this many places are kept per value; more only cost time (the first ones win ties anyway). */
const MAX_MATCHES = 200;
/** A token this common is left out of an approximate match's search (it still counts as a token of the value). */
const COMMON_TOKEN = 5_000;
const MAX_APPROX_HITS = 50_000;

/** Places a text is printed: as a token sequence, else (long texts) approximately. Null when the clock ran out. */
export function textMatches(index: WordIndex, value: string, expired: Expired): Match[] | null {
  const want = tokens(value);
  if (want.length === 0) return [];
  const found = sequenceMatches(index, value, want, expired);
  if (found === null || found.length > 0 || want.length < 2) return found;
  const joined = joinedMatches(index, want, expired);
  if (joined === null || joined.length > 0) return joined;
  const alike = lookAlikeMatches(index, want, expired);
  if (alike === null || alike.length > 0 || want.length < APPROX_MIN_TOKENS) return alike;
  return approximateMatch(index, want, expired);
}

/**
 * Characters an OCR engine reads for one another (`0`/`O`/`D`, `1`/`I`/`l`, `5`/`S`, `8`/`B`), each class folded to
 * one letter. A value a reader's slips were undone in (`URBAN IDEA SDN BHD` printed as read, `URBAN 1DEA SON BHD`) is
 * still where the page prints it.
 */
const LOOK_ALIKE: Record<string, string> = { '0': 'o', d: 'o', q: 'o', '1': 'i', l: 'i', '5': 's', '8': 'b' };

function lookAlike(token: string): string {
  return token.replace(/[0dq1l58]/g, (c) => LOOK_ALIKE[c] ?? c);
}

const lookAlikeTokens = new WeakMap<WordIndex, string[][]>();

/**
 * Places that print a text of letters (two tokens at least) with look-alike characters swapped, token for token
 * (`look-alike`); a value with no letter is left to the exact and amount matches.
 */
function lookAlikeMatches(index: WordIndex, want: string[], expired: Expired): Match[] | null {
  if (want.length < 2 || !want.some((t) => /\p{L}/u.test(t))) return [];
  let pages = lookAlikeTokens.get(index);
  if (pages === undefined) {
    pages = index.pages.map((p) => p.tokens.map(lookAlike));
    lookAlikeTokens.set(index, pages);
  }
  const target = want.map(lookAlike);
  const matches: Match[] = [];
  for (let pageIndex = 0; pageIndex < pages.length; pageIndex++) {
    if (expired()) return null;
    const t = pages[pageIndex] as string[];
    for (let start = 0; start + target.length <= t.length && matches.length < MAX_MATCHES; start++) {
      let same = true;
      for (let k = 0; k < target.length && same; k++) same = t[start + k] === target[k];
      if (!same) continue;
      const span = index.tokenSpan(pageIndex, start, start + target.length - 1);
      matches.push({ span, kind: 'look-alike', quality: QUALITY['look-alike'] });
    }
  }
  return matches;
}

/**
 * Places that print a text's tokens with the spaces between them lost or moved (`GARDENIABAKERIES (KL)SDNBHD` for
 * "Gardenia Bakeries (KL) Sdn Bhd", `SUBANG H EALTHCARE`): consecutive page tokens whose letters and digits, joined,
 * are the value's. OCR does this to large or widely spaced print; the value is the same, so it is `normalised`.
 */
function joinedMatches(index: WordIndex, want: string[], expired: Expired): Match[] | null {
  const target = want.join('');
  const matches: Match[] = [];
  for (let pageIndex = 0; pageIndex < index.pages.length; pageIndex++) {
    if (expired()) return null;
    const t = (index.pages[pageIndex] as (typeof index.pages)[number]).tokens;
    for (let start = 0; start < t.length && matches.length < MAX_MATCHES; start++) {
      let joined = t[start] as string;
      let end = start;
      while (joined.length < target.length && target.startsWith(joined) && end + 1 < t.length) joined += t[++end];
      if (joined !== target) continue;
      matches.push({ span: index.tokenSpan(pageIndex, start, end), kind: 'normalised', quality: QUALITY.normalised });
    }
  }
  return matches;
}

function sequenceMatches(index: WordIndex, value: string, want: string[], expired: Expired): Match[] | null {
  // Anchor on the value's rarest token: fewest places to verify.
  let anchor = 0;
  let fewest = Number.POSITIVE_INFINITY;
  for (let k = 0; k < want.length; k++) {
    const count = index.positions(want[k] as string).length;
    if (count < fewest) [anchor, fewest] = [k, count];
  }
  if (fewest === 0) return [];
  const wanted = collapse(value);
  const matches: Match[] = [];
  const places = index.positions(want[anchor] as string);
  for (let i = 0; i < places.length && matches.length < MAX_MATCHES; i++) {
    if (i % 1024 === 1023 && expired()) return null;
    const { pageIndex, token } = WordIndex.unpack(places[i] as number);
    const start = token - anchor;
    const page = index.pages[pageIndex];
    if (page === undefined || start < 0 || start + want.length > page.tokens.length) continue;
    let same = true;
    for (let k = 0; k < want.length && same; k++) same = page.tokens[start + k] === want[k];
    if (!same) continue;
    const last = start + want.length - 1;
    const span = index.tokenSpan(pageIndex, start, last);
    const kind: MatchKind = !index.coversWords(pageIndex, start, last)
      ? 'in-word'
      : collapse(index.text(span)).includes(wanted)
        ? 'exact'
        : 'normalised';
    matches.push({ span, kind, quality: QUALITY[kind] });
  }
  return matches;
}

/**
 * The page window (at most 2n + 2 tokens for a value of n tokens) holding the most of the value's distinct tokens;
 * a match when they are at least APPROX_MIN_OVERLAP of them (an address read with a line break, a missing comma word
 * or an extra "Suite" in between).
 */
function approximateMatch(index: WordIndex, want: string[], expired: Expired): Match[] | null {
  const distinct = [...new Set(want)];
  const hits: { position: number; token: string }[] = [];
  for (const token of distinct) {
    const places = index.positions(token);
    if (places.length > COMMON_TOKEN) continue;
    for (const position of places) hits.push({ position, token });
    if (hits.length > MAX_APPROX_HITS) return [];
  }
  if (expired()) return null;
  hits.sort((a, b) => a.position - b.position);
  const width = 2 * want.length + 2;
  const counts = new Map<string, number>();
  let best = { count: 0, from: 0, to: 0 };
  let from = 0;
  for (let to = 0; to < hits.length; to++) {
    if (to % 4096 === 4095 && expired()) return null;
    const head = hits[to] as (typeof hits)[number];
    counts.set(head.token, (counts.get(head.token) ?? 0) + 1);
    while (!sameWindow((hits[from] as (typeof hits)[number]).position, head.position, width)) {
      const tail = (hits[from] as (typeof hits)[number]).token;
      const left = (counts.get(tail) ?? 1) - 1;
      if (left === 0) counts.delete(tail);
      else counts.set(tail, left);
      from++;
    }
    if (counts.size > best.count) best = { count: counts.size, from, to };
  }
  const overlap = best.count / distinct.length;
  if (overlap < APPROX_MIN_OVERLAP) return [];
  const first = WordIndex.unpack((hits[best.from] as (typeof hits)[number]).position);
  const last = WordIndex.unpack((hits[best.to] as (typeof hits)[number]).position);
  const span = index.tokenSpan(first.pageIndex, first.token, last.token);
  return [{ span, kind: 'partial', quality: QUALITY.partial * overlap }];
}

function sameWindow(from: number, to: number, width: number): boolean {
  const a = WordIndex.unpack(from);
  const b = WordIndex.unpack(to);
  return a.pageIndex === b.pageIndex && b.token - a.token < width;
}

/** Places the document prints an amount as an amount (`42.17`, `$42.17`, `42,17 €`); the sign is optional. */
export function amountPlaces(index: WordIndex, value: number, expired: Expired): Match[] | null {
  const spans = index.amountSpans(expired);
  if (spans === null) return null;
  const magnitude = Math.abs(value);
  const forms = [String(magnitude), magnitude.toFixed(2)];
  const signed = (spans.get(amountKey(value)) ?? []).slice(0, MAX_MATCHES).map((span): Match => {
    const kind: MatchKind = forms.some((form) => index.text(span).includes(form)) ? 'exact' : 'normalised';
    return { span, kind, quality: QUALITY[kind] };
  });
  if (signed.length > 0 || value >= 0) return signed;
  // `-42.17` printed as `42.17` in a debit column.
  return (spans.get(amountKey(magnitude)) ?? [])
    .slice(0, MAX_MATCHES)
    .map((span) => ({ span, kind: 'normalised', quality: QUALITY.normalised }));
}

/**
 * Places a number is printed: as an amount, else, for a whole number, as a piece of a word that is not itself an
 * amount (`1042` of `INV-1042`, never `38` of `38.50`).
 */
export function amountMatches(index: WordIndex, value: number, expired: Expired): Match[] | null {
  const places = amountPlaces(index, value, expired);
  if (places === null || places.length > 0 || !Number.isInteger(value) || Math.abs(value) < 10) return places;
  const pieces = textMatches(index, String(value), expired);
  return pieces?.filter((m) => parseAmount(index.text(m.span)).length === 0) ?? null;
}

/** Places a date is printed, in any notation that can mean it; a value that is not a date is matched as text. */
export function dateMatches(index: WordIndex, value: string, expired: Expired): Match[] | null {
  const readings = parseDateValue(value);
  if (readings.length === 0) return textMatches(index, value, expired);
  const spans = index.dateSpans(expired);
  if (spans === null) return null;
  const wanted = collapse(value);
  const seen = new Set<string>();
  const matches: Match[] = [];
  for (const iso of readings) {
    for (const span of spans.get(iso) ?? []) {
      const key = `${span.pageIndex}:${span.first}:${span.last}`;
      if (seen.has(key) || matches.length >= MAX_MATCHES) continue;
      seen.add(key);
      const kind: MatchKind = collapse(index.text(span)).includes(wanted) ? 'exact' : 'normalised';
      matches.push({ span, kind, quality: QUALITY[kind] });
    }
  }
  matches.sort((a, b) => a.span.pageIndex - b.span.pageIndex || a.span.first - b.span.first);
  return matches;
}

/** The sign each currency is printed with; `$` alone also prints other dollars, so it is a weaker match for them. */
const SYMBOL: Record<string, string> = { USD: '$', EUR: '€', GBP: '£', JPY: '¥', CNY: '¥', INR: '₹', KRW: '₩' };
const DOLLARS = new Set(['CAD', 'AUD', 'NZD', 'SGD', 'HKD', 'MXN']);

/** Places an ISO 4217 code is printed: the code itself, else its currency sign in a word (`$42.17`). */
export function currencyMatches(index: WordIndex, code: string, expired: Expired): Match[] | null {
  const upper = code.trim().toUpperCase();
  const direct = textMatches(index, upper, expired);
  if (direct === null || direct.length > 0) return direct;
  const symbol = SYMBOL[upper] ?? (DOLLARS.has(upper) ? '$' : undefined);
  if (symbol === undefined) return [];
  const quality = SYMBOL[upper] === undefined ? QUALITY.partial * APPROX_MIN_OVERLAP : QUALITY.symbol;
  const matches: Match[] = [];
  for (let p = 0; p < index.pages.length && matches.length < MAX_MATCHES; p++) {
    if (expired()) return null;
    const words = index.pages[p]?.words ?? [];
    for (let w = 0; w < words.length && matches.length < MAX_MATCHES; w++) {
      if (words[w]?.text.includes(symbol))
        matches.push({ span: { pageIndex: p, first: w, last: w }, kind: 'symbol', quality });
    }
  }
  return matches;
}
