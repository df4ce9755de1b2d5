/**
 * How grounding reads text: the comparable tokens of a word or value (case, diacritics and punctuation folded away),
 * amounts as printed (`$42.17`, `42,17 €`, `1,234.50`, `(42.17)`) and dates in the common notations (`2026-11-20`,
 * `20/11/2026`, `11/20/2026`, `Nov 20, 2026`, `20 November 2026`). Pure.
 * Not to undo: an ambiguous notation yields every reading (`1,234` is 1234 or 1.234, `02/11/2026` is 2 Nov or 11 Feb),
 * never a guess; the value being grounded decides which reading it matches. The provider-side readers
 * (shared/providers/fields.ts) return one reading or null instead, because they produce values.
 */

/** Lower case, diacritics removed (`Café` → `cafe`), compatibility forms folded (`ﬁ` → `fi`). */
export function fold(text: string): string {
  // Most words are ASCII: lower-casing is all they need, and NFKD is the costliest step of indexing.
  if (ASCII.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}
const ASCII = /^[\x20-\x7e]*$/;

const TOKEN_SPLIT = /[^\p{L}\p{N}]+/u;

/** The comparable pieces of a text: folded runs of letters and digits (`"Street,"` → `street`, `INV-1042` → inv, 1042). */
export function tokens(text: string): string[] {
  return fold(text)
    .split(TOKEN_SPLIT)
    .filter((t) => t.length > 0);
}

/** A field name as lower-case words: `invoiceNumber`, `invoice_number`, `Invoice-Number` → invoice, number. */
export function nameTokens(name: string): string[] {
  return tokens(name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2'));
}

/** Collapses runs of whitespace to one space and trims. */
export function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------------------------
// Amounts
// ---------------------------------------------------------------------------------------------------------------

/** ISO 4217 codes of the currencies an amount is commonly printed with (a regex alternation). */
export const CURRENCY_CODES =
  'USD|EUR|GBP|CAD|AUD|NZD|JPY|CNY|CHF|INR|SEK|NOK|DKK|PLN|CZK|HUF|MXN|BRL|ZAR|SGD|HKD|KRW|TRY|AED|SAR|ILS|RUB';
const CURRENCY_CODE_RE = new RegExp(`\\b(?:${CURRENCY_CODES})\\b`, 'gi');
const CURRENCY_SYMBOLS = /[$€£¥₹₩₽¢₺₪]/g;

/** The text with every currency sign and code replaced by a space (`$42.17` → ` 42.17`). */
export function withoutCurrency(text: string): string {
  return text.replace(CURRENCY_CODE_RE, ' ').replace(CURRENCY_SYMBOLS, ' ');
}

/**
 * An amount's sign and the rest: accounting parentheses `(42.17)`, a leading minus (`-`, `−`, `–`) or a trailing one
 * (`42.17-`, as some receipts print credits); both parentheses and a minus cancel out.
 */
export function splitSign(amount: string): { negative: boolean; rest: string } {
  let s = amount.trim();
  let negative = false;
  if (/^\(.*\)$/.test(s)) {
    negative = true;
    s = s.slice(1, -1).trim();
  }
  if (/^[-−–]/.test(s)) return { negative: !negative, rest: s.slice(1).trim() };
  if (/\d[-−]$/.test(s)) return { negative: !negative, rest: s.slice(0, -1).trim() };
  return { negative, rest: s };
}

/** A word that is only a currency sign or code (`$`, `€`, `EUR`): an amount's neighbour, part of its span. */
export function isCurrencyWord(text: string): boolean {
  const t = text.trim();
  return t.length > 0 && withoutCurrency(t).trim() === '';
}

/** Every number a printed amount may mean (none when it is not one). Thousands separators `,` `.` `'` and space. */
export function parseAmount(raw: string): number[] {
  // The commonest printed forms (`3`, `42.5`, `42.50`) mean one number: read without the general path's patterns
  // (a 20-page invoice has thousands of them; a decimal mark with 1–2 digits cannot be a thousands separator).
  if (/^\d+(?:\.\d{1,2})?$/.test(raw)) return [Number(raw)];
  const { negative, rest } = splitSign(
    collapse(withoutCurrency(raw))
      .replace(/^[:#]+/, '')
      .replace(/[:;,]+$/, ''),
  );
  return unsignedReadings(rest).map((n) => (negative ? -n : n));
}

/** Digits in groups of three after `,` or `.` (`1,234`, `1.234.567`), and one decimal mark (`42,17`, `42.17`). */
const GROUPED = { ',': /^\d{1,3}(?:,\d{3})+$/, '.': /^\d{1,3}(?:\.\d{3})+$/ } as const;
const DECIMAL = { ',': /^\d+,\d+$/, '.': /^\d+\.\d+$/ } as const;

function unsignedReadings(s: string): number[] {
  if (!/^\d[\d,.' ]*$/.test(s) || /[,.' ]$/.test(s)) return [];
  if (/[' ]/.test(s)) {
    if (!/^\d{1,3}(?:[' ]\d{3})+(?:[.,]\d+)?$/.test(s)) return [];
    return unsignedReadings(s.replace(/[' ]/g, ''));
  }
  const comma = s.lastIndexOf(',');
  const dot = s.lastIndexOf('.');
  if (comma >= 0 && dot >= 0) {
    const decimal = comma > dot ? ',' : '.';
    const thousands = decimal === ',' ? '.' : ',';
    const [whole, fraction, ...rest] = s.split(decimal);
    if (rest.length > 0 || whole === undefined || fraction === undefined) return [];
    if (!GROUPED[thousands].test(whole) || !/^\d+$/.test(fraction)) return [];
    return [Number(`${whole.split(thousands).join('')}.${fraction}`)];
  }
  const sep = comma >= 0 ? ',' : dot >= 0 ? '.' : '';
  if (sep === '') return [Number(s)];
  const readings: number[] = [];
  // One separator: a decimal mark (`42,17`, `42.17`) …
  if (DECIMAL[sep].test(s)) readings.push(Number(s.replace(sep, '.')));
  // … or thousands separators (`1,234`, `1.234.567`): both readings when the groups allow either.
  if (GROUPED[sep].test(s)) readings.push(Number(s.split(sep).join('')));
  return [...new Set(readings)].filter(Number.isFinite);
}

/** The key two amounts share when they are equal to a hundredth of a cent (floating point noise aside). */
export function amountKey(n: number): string {
  return String(Math.round(n * 10_000) / 10_000);
}

/** `42.5` → `42.50`; used in review reasons. */
export function formatAmount(n: number): string {
  return Math.abs(n * 100 - Math.round(n * 100)) < 1e-6 ? n.toFixed(2) : String(n);
}

// ---------------------------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------------------------

const MONTHS = new Map<string, number>();
const MONTH_NAMES: [number, string[]][] = [
  [1, ['jan', 'january', 'januar', 'janvier', 'enero', 'gennaio', 'jänner']],
  [2, ['feb', 'february', 'februar', 'fevrier', 'febrero', 'febbraio']],
  [3, ['mar', 'march', 'marz', 'maerz', 'mars', 'marzo']],
  [4, ['apr', 'april', 'avril', 'abril', 'aprile']],
  [5, ['may', 'mai', 'mayo', 'maggio']],
  [6, ['jun', 'june', 'juni', 'juin', 'junio', 'giugno']],
  [7, ['jul', 'july', 'juli', 'juillet', 'julio', 'luglio']],
  [8, ['aug', 'august', 'aout', 'agosto']],
  [9, ['sep', 'sept', 'september', 'septembre', 'septiembre', 'settembre']],
  [10, ['oct', 'october', 'okt', 'oktober', 'octobre', 'octubre', 'ottobre']],
  [11, ['nov', 'november', 'novembre', 'noviembre']],
  [12, ['dec', 'december', 'dez', 'dezember', 'decembre', 'diciembre', 'dicembre']],
];
for (const [month, names] of MONTH_NAMES) for (const name of names) MONTHS.set(fold(name), month);

/** The month a folded token names (`nov`, `november`, `novembre`), or 0. */
export function monthOf(token: string): number {
  return MONTHS.get(token) ?? 0;
}

/** `YYYY-MM-DD` of a real calendar date, or null (`2026-02-30` is not one). */
export function isoDate(y: number, m: number, d: number): string | null {
  if (!Number.isInteger(y) || !Number.isInteger(m) || !Number.isInteger(d) || y < 1000 || y > 9999) return null;
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return null;
  return `${String(y)}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** A two-digit year as printed on receipts: `26` → 2026, `85` → 1985. */
export function fullYear(y: string): number {
  const n = Number(y);
  if (y.length !== 2) return n;
  return n < 70 ? 2000 + n : 1900 + n;
}

/** A day token: `20`, `20th`, `1st`. */
export function dayOf(token: string): number {
  const m = /^(\d{1,2})(?:st|nd|rd|th|er|e)?$/.exec(token);
  return m === null ? 0 : Number(m[1]);
}

const YMD = /(?<!\d)(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)/g;
// A time glued to the year (`27-04-1816:40`, `23-01-201913:14`: OCR lost the space) ends the date where it starts.
const DMY_OR_MDY =
  /(?<!\d)(\d{1,2})([-/.])(\d{1,2})\2(\d{2}(?=\d{1,2}:\d\d)|\d{4}(?=\d{1,2}:\d\d)|\d{4}(?!\d)|\d{2}(?!\d))/g;

/** A numeric date found inside a text: where it stands and every real date it may mean. */
export interface NumericDate {
  text: string;
  readings: string[];
}

/** The numeric dates in a text (`2026-11-20`, `20/11/2026`, `11/20/26`, `20.11.2026`), each with all its readings. */
export function numericDates(text: string): NumericDate[] {
  const found: NumericDate[] = [];
  for (const m of text.matchAll(YMD)) {
    const iso = isoDate(Number(m[1]), Number(m[3]), Number(m[4]));
    if (iso !== null) found.push({ text: m[0], readings: [iso] });
  }
  for (const m of text.matchAll(DMY_OR_MDY)) {
    const a = Number(m[1]);
    const b = Number(m[3]);
    const y = fullYear(m[4] ?? '');
    const readings = [isoDate(y, b, a), isoDate(y, a, b)].filter((r): r is string => r !== null);
    if (readings.length > 0) found.push({ text: m[0], readings: [...new Set(readings)] });
  }
  return found;
}

/**
 * Every real date a value may mean, when the whole value is one date (`2026-11-20`, `Nov 20, 2026`, `20 November
 * 2026`, `20/11/2026`); empty otherwise. Text around the date is not allowed: `due 2026-11-20` is not a date value.
 */
export function parseDateValue(raw: string): string[] {
  if (raw.length > 200) return [];
  const text = collapse(raw);
  if (text.length === 0 || text.length > 40) return [];
  const numeric = numericDates(text).filter((d) => d.text === text.replace(/[.,]$/, ''));
  if (numeric.length > 0) return [...new Set(numeric.flatMap((d) => d.readings))];
  const t = tokens(text);
  if (t.length !== 3) return [];
  const [a = '', b = '', c = ''] = t;
  const year = /^\d{4}$/.test(c) || /^\d{2}$/.test(c) ? fullYear(c) : 0;
  const readings = [
    monthOf(a) > 0 ? isoDate(year, monthOf(a), dayOf(b)) : null,
    monthOf(b) > 0 ? isoDate(year, monthOf(b), dayOf(a)) : null,
    /^\d{4}$/.test(a) && monthOf(b) > 0 ? isoDate(Number(a), monthOf(b), dayOf(c)) : null,
  ];
  return [...new Set(readings.filter((r): r is string => r !== null))];
}

/** Whether a value looks like it means to be a date (digits with date separators, or a month name with digits). */
export function looksLikeDate(raw: string): boolean {
  if (raw.length > 200) return false;
  const text = collapse(raw);
  if (text.length > 40) return false;
  return (
    /^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}$/.test(text) || (/\d/.test(text) && tokens(text).some((t) => monthOf(t) > 0))
  );
}
