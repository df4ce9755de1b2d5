/**
 * Field values as documents print them, turned into the field's type: amounts (currency signs, thousands separators,
 * decimal commas, negatives), yes/no words, dates (normalised to ISO when the notation is unambiguous), and field
 * names split into words. Pure functions, no provider's: the local and textract readers, the answer validation and
 * the worker's shaping rely on the same reading. Never a guess: a value that is not clearly of its type is null.
 */
import { collapse, splitSign, withoutCurrency } from '../fields/normalize.js';
import type { FieldType } from '../task.js';

/** Splits a field name into lower-case words: `invoiceNumber`, `invoice_number`, `Invoice-Number` → invoice, number. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9#]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}

function parsePlainNumber(s: string): number | null {
  if (!/^\d[\d,.' ]*$/.test(s) || /[,.' ]$/.test(s)) return null;
  let t = s;
  if (/[' ]/.test(t)) {
    // Spaces and apostrophes only as thousands separators: "1 250,00", "1'250.00".
    if (!/^\d{1,3}(?:[' ]\d{3})+(?:[.,]\d+)?$/.test(t)) return null;
    t = t.replace(/[' ]/g, '');
  }
  const lastComma = t.lastIndexOf(',');
  const lastDot = t.lastIndexOf('.');
  if (lastComma >= 0 && lastDot >= 0) {
    const decimal = lastComma > lastDot ? ',' : '.';
    const thousands = decimal === ',' ? '.' : ',';
    const [intPart, fracPart, ...extra] = t.split(decimal);
    if (extra.length > 0 || intPart === undefined || fracPart === undefined) return null;
    if (!new RegExp(`^\\d{1,3}(?:\\${thousands}\\d{3})*$`).test(intPart) || !/^\d+$/.test(fracPart)) return null;
    t = `${intPart.split(thousands).join('')}.${fracPart}`;
  } else if (lastComma >= 0) {
    if (/^\d{1,3}(?:,\d{3})+$/.test(t)) t = t.replace(/,/g, '');
    else if (/^\d+,\d+$/.test(t)) t = t.replace(',', '.');
    else return null;
  } else if (lastDot >= 0) {
    if (/^\d{1,3}(?:\.\d{3}){2,}$/.test(t)) t = t.replace(/\./g, '');
    else if (!/^\d+\.\d+$/.test(t)) return null;
  }
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/**
 * Parses an amount as printed: currency symbols and codes, thousands separators (`,` `.` space `'`), a decimal comma,
 * and negatives as `-42.50`, `(42.50)` or `42.50-`. Text after the amount is tolerated only when it holds no digit
 * ("42.50 paid"), so "3 items 42.50" is not a number.
 */
export function coerceNumber(raw: string): number | null {
  const { negative, rest: s } = splitSign(collapse(withoutCurrency(raw)));
  let n = parsePlainNumber(s);
  if (n === null) {
    const lead = /^(\d[\d,.' ]*\d|\d)(?=\s|$)(.*)$/.exec(s);
    if (lead?.[1] !== undefined && !/\d/.test(lead[2] ?? '')) n = parsePlainNumber(lead[1]);
  }
  if (n === null) return null;
  return negative ? -n : n;
}

const TRUE_WORDS = new Set(['true', 'yes', 'y', 'on', 'checked', 'x', '✓', '✔', '☑', '1', 'paid']);
const FALSE_WORDS = new Set(['false', 'no', 'n', 'off', 'unchecked', '☐', '0', 'none', 'unpaid']);

/** A printed yes/no (`yes`, `x`, `☑`, `paid`, `unpaid`, …) as a boolean; null when it is neither. */
export function coerceBoolean(raw: string): boolean | null {
  const s = raw.trim().toLowerCase().replace(/[.!]$/, '');
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  return null;
}

const MONTH_RE =
  '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};
const DATE_ISO = /(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)/;
const DATE_MONTH_FIRST = new RegExp(`\\b${MONTH_RE}\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})(?!\\d)`, 'i');
const DATE_DAY_FIRST = new RegExp(
  `(?<!\\d)(\\d{1,2})(?:st|nd|rd|th)?[\\s-]+${MONTH_RE}\\.?,?[\\s-]+(\\d{4}|\\d{2})(?!\\d)`,
  'i',
);
const DATE_NUMERIC = /(?<!\d)(\d{1,2})([/.-])(\d{1,2})\2(\d{4}|\d{2})(?!\d)/;

function isoDate(y: number, m: number, d: number): string | null {
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return null;
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

function fullYear(y: string): number {
  const n = Number(y);
  if (y.length > 2) return n;
  return n < 70 ? 2000 + n : 1900 + n;
}

function monthNumber(name: string): number {
  return MONTHS[name.slice(0, 3).toLowerCase()] ?? 0;
}

export interface DateMatch {
  /** The date as printed. */
  text: string;
  /** ISO `YYYY-MM-DD`, the printed text when day and month are ambiguous, or null when it is not a real date. */
  value: string | null;
}

/** The first date in a string, in order of reliability of the notation. */
export function findDate(raw: string): DateMatch | null {
  const iso = DATE_ISO.exec(raw);
  if (iso !== null) return { text: iso[0], value: isoDate(Number(iso[1]), Number(iso[2]), Number(iso[3])) };
  const mdy = DATE_MONTH_FIRST.exec(raw);
  if (mdy !== null) return { text: mdy[0], value: isoDate(Number(mdy[3]), monthNumber(mdy[1] ?? ''), Number(mdy[2])) };
  const dmy = DATE_DAY_FIRST.exec(raw);
  if (dmy !== null) {
    return { text: dmy[0], value: isoDate(fullYear(dmy[3] ?? ''), monthNumber(dmy[2] ?? ''), Number(dmy[1])) };
  }
  const num = DATE_NUMERIC.exec(raw);
  if (num === null) return null;
  const a = Number(num[1]);
  const b = Number(num[3]);
  const y = fullYear(num[4] ?? '');
  let value: string | null = null;
  if (num[2] === '.' || (a > 12 && b <= 12)) value = isoDate(y, b, a);
  else if (b > 12 && a <= 12) value = isoDate(y, a, b);
  else if (a === b) value = isoDate(y, a, b);
  else if (a <= 12 && b <= 12 && a > 0 && b > 0) value = num[0];
  return { text: num[0], value };
}

/**
 * Finds a date in a value and normalises it to ISO `YYYY-MM-DD`: `2026-11-02`, `Nov 2, 2026`, `2 November 2026`,
 * `15/10/2026` (day > 12, so day-first), `02.11.2026` (dotted dates are day-first). A numeric date whose day and month
 * are both ≤ 12 and differ (`02/11/2026`) is ambiguous and is returned as printed. No date, or an impossible one → null.
 */
export function coerceDate(raw: string): string | null {
  return findDate(raw)?.value ?? null;
}

/**
 * A printed value in a field's type: amounts, yes/no words and dates as the functions above read them, a list split
 * at commas and semicolons, an object never (it cannot be read from flat text without guessing); null when it is not
 * one, never an invented value.
 */
export function coerceText(value: string, type: FieldType): unknown {
  switch (type) {
    case 'number':
      return coerceNumber(value);
    case 'integer': {
      const n = coerceNumber(value);
      return n !== null && Number.isInteger(n) ? n : null;
    }
    case 'boolean':
      return coerceBoolean(value);
    case 'date':
      return coerceDate(value);
    case 'array': {
      const items = value
        .split(/[,;]/)
        .map((s) => s.trim())
        .filter((s) => s !== '');
      return items.length > 0 ? items : null;
    }
    case 'object':
      // A nested object cannot be read from flat "Label: value" text without guessing.
      return null;
    default: {
      const s = value.trim();
      return s === '' ? null : s;
    }
  }
}
