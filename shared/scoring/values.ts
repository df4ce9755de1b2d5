/**
 * Reading expected and extracted values the way contract-v1.2 §1 compares them: strings normalised (Unicode NFKC,
 * case folding, every run of whitespace and punctuation one space), amounts with their currency signs, separators and
 * sign notations, dates as calendar days in the common notations, each reading tagged with the day-month order it
 * assumed. Pure. Builds on grounding's readers (shared/fields/normalize.ts), which give every reading of a notation.
 */
import { dayOf, fullYear, isoDate, monthOf, parseAmount, tokens } from '../fields/normalize.js';

// ---------- strings ----------

const SEPARATORS = /[\p{P}\s]+/gu;

/**
 * A string as compared: NFKC, case-folded (upper then lower case, so `ß` and `SS` meet), every run of whitespace and
 * punctuation one space, ends trimmed. `MR. D.I.Y. (M) SDN BHD` → `mr d i y m sdn bhd`.
 */
export function normaliseText(value: string): string {
  return value.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC').replace(SEPARATORS, ' ').trim();
}

/** Longest string (in code points) an edit distance is computed on; longer ones are cut (a value is not a page). */
const EDIT_MAX = 2000;

/** Levenshtein distance over code points (insert, delete, substitute: 1 each). */
export function editDistance(a: string, b: string): number {
  const x = Array.from(a).slice(0, EDIT_MAX);
  const y = Array.from(b).slice(0, EDIT_MAX);
  if (x.length === 0) return y.length;
  if (y.length === 0) return x.length;
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const current = [i];
    for (let j = 1; j <= y.length; j++) {
      const substitute = (previous[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitute));
    }
    previous = current;
  }
  return previous[y.length] ?? 0;
}

/** 1 − the edit distance over the longer string's length, of two normalised strings (1 when both are empty). */
export function textSimilarity(a: string, b: string): number {
  const longest = Math.max(Array.from(a).length, Array.from(b).length);
  if (longest === 0) return 1;
  return 1 - editDistance(a, b) / Math.min(longest, EDIT_MAX);
}

// ---------- numbers ----------

/**
 * Letters written beside an amount for its currency (`RM`, `USD`, `Rs`, `kr`): up to four at either end, inside a
 * sign or parenthesis (`-RM 5.00`, `(USD 5.00)`, `5.00 EUR-`).
 */
const LETTERS_AT_START = /^([-−–(+]?\s*)\p{L}{1,4}\.?\s*/u;
const LETTERS_AT_END = /\s*\p{L}{1,4}\.?(\s*[-−–)]?)$/u;
const CURRENCY_SIGNS = /\p{Sc}/gu;

/**
 * The number a value means: a JSON number itself, or a printed amount read (empty when it is none). Not to undo: a
 * notation with two readings, one separator before exactly three digits, is read one way, as the English-language
 * convention does: a comma groups thousands (`1,000`, `$42,500`), a dot is a decimal point (`9.004`). Taking either
 * reading scored an answer 1,000 times off (`42.5` for `$42,500`) as right. Two separators are never ambiguous.
 */
export function numberReadings(value: unknown): number[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [value] : [];
  if (typeof value !== 'string') return [];
  const text = value.normalize('NFKC').replace(CURRENCY_SIGNS, ' ').trim();
  if (text.length === 0 || text.length > 64) return [];
  const bare = text
    .replace(LETTERS_AT_START, '$1')
    .replace(LETTERS_AT_END, '$1')
    .trim()
    .replace(/^\+\s*/, '');
  const readings = parseAmount(bare).filter(Number.isFinite);
  if (readings.length <= 1) return readings;
  // Two readings (`1,000`: 1 and 1000; `9.004`: 9.004 and 9004): the grouped one is the larger in size.
  const sizes = readings.map(Math.abs);
  const grouped = bare.includes(',');
  return [readings[sizes.indexOf(grouped ? Math.max(...sizes) : Math.min(...sizes))] as number];
}

/** Two amounts are equal within half a cent (contract-v1.2 §1). */
export const NUMBER_TOLERANCE = 0.005;

/** Whether the two amounts are within the tolerance; null when either is not a number. */
export function sameNumber(a: unknown, b: unknown): boolean | null {
  const x = numberReadings(a);
  const y = numberReadings(b);
  if (x.length === 0 || y.length === 0) return null;
  // A hair over the tolerance: 1.005 − 1 is 0.004999… or 0.00500…1 in binary.
  return x.some((p) => y.some((q) => Math.abs(p - q) <= NUMBER_TOLERANCE + 1e-9));
}

// ---------- dates ----------

/** The order a numeric day-month reading assumed; `fixed` when the notation leaves no choice. */
export type DayOrder = 'dmy' | 'mdy' | 'fixed';

export interface DateReading {
  /** `YYYY-MM-DD`. */
  day: string;
  order: DayOrder;
}

const WEEKDAYS = new Set(['mon', 'tue', 'tues', 'wed', 'thu', 'thur', 'thurs', 'fri', 'sat', 'sun']);
const FULL_WEEKDAYS = /^(?:mon|tues|wednes|thurs|fri|satur|sun)day$/;

/**
 * Every calendar day a value may mean, each with the order it read (`25/12/2018`: 25 Dec, dmy; `05/06/2018`: 5 June
 * dmy and 6 May mdy; `2018-12-25`, `25 Dec 2018`, `Dec 25, 2018`, `20181225`: fixed). A time after an ISO date is
 * ignored (the printed day is the day). Empty when the value is not one date.
 */
export function dateReadings(value: unknown): DateReading[] {
  if (typeof value !== 'string' && typeof value !== 'number') return [];
  const text = String(value).normalize('NFKC').trim();
  if (text.length === 0 || text.length > 64) return [];
  const iso = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i.exec(
    text,
  );
  if (iso) return fixed(isoDate(Number(iso[1]), Number(iso[2]), Number(iso[3])));
  const ymd = /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$/.exec(text);
  if (ymd) return fixed(isoDate(Number(ymd[1]), Number(ymd[2]), Number(ymd[3])));
  const compact = /^(\d{4})(\d{2})(\d{2})$/.exec(text);
  if (compact) return fixed(isoDate(Number(compact[1]), Number(compact[2]), Number(compact[3])));
  const numeric = /^(\d{1,2})\s*([-/.])\s*(\d{1,2})\s*\2\s*(\d{4}|\d{2})$/.exec(text);
  if (numeric) {
    const a = Number(numeric[1]);
    const b = Number(numeric[3]);
    const year = fullYear(numeric[4] ?? '');
    const dmy = isoDate(year, b, a);
    const mdy = isoDate(year, a, b);
    if (dmy !== null && dmy === mdy) return fixed(dmy);
    return [
      ...(dmy !== null ? [{ day: dmy, order: 'dmy' as const }] : []),
      ...(mdy !== null ? [{ day: mdy, order: 'mdy' as const }] : []),
    ];
  }
  return namedMonth(text);
}

function fixed(day: string | null): DateReading[] {
  return day === null ? [] : [{ day, order: 'fixed' }];
}

/** `25 Dec 2018`, `Dec 25, 2018`, `25-DEC-18`, `2018 Dec 25`, `Tuesday, 25th December 2018`. */
function namedMonth(text: string): DateReading[] {
  const parts = tokens(text).filter((t) => !WEEKDAYS.has(t) && !FULL_WEEKDAYS.test(t));
  if (parts.length !== 3) return [];
  const [a = '', b = '', c = ''] = parts;
  const year = (t: string) => (/^\d{4}$/.test(t) || /^\d{2}$/.test(t) ? fullYear(t) : 0);
  const days = [
    monthOf(b) > 0 ? isoDate(year(c), monthOf(b), dayOf(a)) : null,
    monthOf(a) > 0 ? isoDate(year(c), monthOf(a), dayOf(b)) : null,
    /^\d{4}$/.test(a) && monthOf(b) > 0 ? isoDate(Number(a), monthOf(b), dayOf(c)) : null,
  ].filter((d): d is string => d !== null);
  return [...new Set(days)].map((day) => ({ day, order: 'fixed' }));
}

/**
 * Whether two values are the same calendar day; null when either is not a date. An ambiguous day-month in the answer
 * is read in the expected value's own order: `expected` `25/12/2018` (day first) makes `05/12/2018` the 5th of
 * December. When the expected value shows no order (`2018-12-25`, or ambiguous itself), either order may match, the
 * answer's ambiguous notation read in the same order as the expected's.
 */
export function sameDay(expected: unknown, got: unknown): boolean | null {
  const e = dateReadings(expected);
  const g = dateReadings(got);
  if (e.length === 0 || g.length === 0) return null;
  const eOrders = new Set(e.map((r) => r.order));
  const orders: DayOrder[] =
    eOrders.has('dmy') && !eOrders.has('mdy')
      ? ['dmy']
      : eOrders.has('mdy') && !eOrders.has('dmy')
        ? ['mdy']
        : ['dmy', 'mdy'];
  const gAmbiguous = g.some((r) => r.order === 'dmy') && g.some((r) => r.order === 'mdy');
  for (const order of orders) {
    const eDays = new Set(e.filter((r) => r.order === order || r.order === 'fixed').map((r) => r.day));
    const gDays = gAmbiguous ? g.filter((r) => r.order === order) : g;
    if (gDays.some((r) => eDays.has(r.day))) return true;
  }
  return false;
}

// ---------- booleans ----------

/** A boolean, or the strings `true` / `false` (any case); null otherwise. */
export function booleanOf(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const t = value.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
  }
  return null;
}
