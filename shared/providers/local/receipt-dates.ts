/**
 * The purchase date of a sale, read from a page's rows (layout.ts): numeric dates in either order and with month
 * names, day first unless the document says otherwise, preferring one beside a date label or a time; with the signals
 * of its confidence, down to the recogniser's least sure character of the date. Pure; part of ./receipt-rules.ts.
 * Not to undo: nothing here may be keyed to particular receipts (docs/decisions.md#local-field-extraction).
 */
import { fold, monthOf } from '../../fields/normalize.js';
import type { Row } from './layout.js';
import { type Finding, readerAt, wordsAt } from './receipt-rules.js';

const MONTH_WORD = String.raw`(\p{L}{3,9})\.?`;
const NUMERIC_DATE =
  /(?<!\d)(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)|(?<![\d.,])(\d{1,2}) ?([-/.]) ?(\d{1,2}) ?\6 ?(\d{2}(?=\d{1,2}:\d{2})|\d{4}|\d{2})(?=\D|$|\d{1,2}:\d{2})/gu;
const WORDY_DATE = new RegExp(
  String.raw`(?<!\d)(\d{1,2})(?:st|nd|rd|th)?[\s-]*${MONTH_WORD}[\s,-]*(\d{4}(?=\d{1,2}:\d\d)|\d{4}(?!\d)|\d{2}(?!\d))|\b${MONTH_WORD}[\s-]*(\d{1,2})(?:st|nd|rd|th)?,?[\s-]*(\d{4})(?!\d)`,
  'giu',
);
const DATE_LABEL = /\b(?:date|dated|tarikh|datum|fecha|data|dt)\b|日期/i;
/** A time of day as printed or read (`21:49`, `9:05 PM`, a space the reader put by the colon: `21 :49`). */
const TIME = /\d ?: ?\d{2}/;
const NOT_PURCHASE_DATE = /\b(?:expir\w*|exp|valid|due|best\s*before|until|since|birth|dob|from|to)\b/i;

/** A date printed on a row: its day, month and year as printed, whether day and month could swap. */
interface PrintedDate {
  row: number;
  /** The two numbers of a numeric date as printed (first, second), or the month known from its name. */
  first: number;
  second: number;
  year: number;
  named: boolean;
  iso: boolean;
  /** Where it is printed in the row's text. */
  index: number;
  length: number;
}

function year4(y: string): number {
  const n = Number(y);
  return y.length === 2 ? 2000 + n : n;
}

function datesOn(row: Row, index: number): PrintedDate[] {
  const out: PrintedDate[] = [];
  for (const m of row.text.matchAll(NUMERIC_DATE)) {
    const at = { row: index, index: m.index ?? 0, length: m[0].length };
    if (m[1] !== undefined)
      out.push({ ...at, first: Number(m[4]), second: Number(m[3]), year: Number(m[1]), named: false, iso: true });
    else
      out.push({ ...at, first: Number(m[5]), second: Number(m[7]), year: year4(m[8] ?? ''), named: false, iso: false });
  }
  for (const m of row.text.matchAll(WORDY_DATE)) {
    const name = (m[2] ?? m[4] ?? '').toLowerCase();
    const month = monthOf(fold(name)) || monthOf(fold(name.slice(0, 3)));
    if (month === 0) continue;
    const day = Number(m[1] ?? m[5]);
    const at = { row: index, index: m.index ?? 0, length: m[0].length };
    out.push({ ...at, first: day, second: month, year: year4(m[3] ?? m[6] ?? ''), named: true, iso: false });
  }
  return out;
}

function validDay(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d));
  return y >= 1990 && date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** Day first unless the document says otherwise: a US hint (sales tax, a state and ZIP code, USD) or its own dates. */
function monthFirst(dates: readonly PrintedDate[], text: string): boolean {
  const numeric = dates.filter((d) => !d.named && !d.iso);
  if (numeric.some((d) => d.first > 12 && d.second <= 12)) return false;
  if (numeric.some((d) => d.second > 12 && d.first <= 12)) return true;
  return (
    /\bsales\s*tax\b|\bUSD\b|\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b/.test(text) && !/\b(?:GST|VAT|SST|RM|MYR)\b/i.test(text)
  );
}

function isoOf(d: PrintedDate, usOrder: boolean): string | null {
  const [day, month] = d.named || d.iso || !usOrder ? [d.first, d.second] : [d.second, d.first];
  if (!validDay(d.year, month, day)) {
    // A numeric date only one order makes real (13/02 or 02/13) is read in that order.
    if (!d.named && !d.iso && validDay(d.year, day, month))
      return isoOf({ ...d, first: d.second, second: d.first }, false);
    return null;
  }
  return `${d.year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** The purchase date: the printed date a date label or a time stands beside, else the first; ISO `YYYY-MM-DD`. */
export function findDate(rows: readonly Row[], now: Date): Finding<string> | null {
  const all = rows.flatMap((row, i) => datesOn(row, i));
  const usOrder = monthFirst(all, rows.map((r) => r.text).join('\n'));
  const latest = now.getTime() + 2 * 86_400_000;
  const candidates = all
    .map((d) => ({ d, iso: isoOf(d, usOrder) }))
    .filter((c): c is { d: PrintedDate; iso: string } => c.iso !== null && Date.parse(c.iso) <= latest)
    .filter((c) => !NOT_PURCHASE_DATE.test(rows[c.d.row]?.text ?? ''));
  if (candidates.length === 0) return null;
  const score = (c: (typeof candidates)[number]) => {
    const text = rows[c.d.row]?.text ?? '';
    return (DATE_LABEL.test(text) ? 2 : 0) + (TIME.test(text) ? 1 : 0) - c.d.row / rows.length;
  };
  const sorted = [...candidates].sort((a, b) => score(b) - score(a));
  const best = sorted[0];
  if (best === undefined) return null;
  const row = rows[best.d.row];
  const text = row?.text ?? '';
  const ambiguous =
    !best.d.named && !best.d.iso && best.d.first <= 12 && best.d.second <= 12 && best.d.first !== best.d.second;
  const distinct = new Set(candidates.map((c) => c.iso)).size;
  return {
    value: best.iso,
    printed: text.slice(best.d.index, best.d.index + best.d.length).trim(),
    ...(row === undefined ? {} : { words: wordsAt(row, best.d.index, best.d.length) }),
    signals: {
      label: DATE_LABEL.test(text) ? 1 : 0,
      time: TIME.test(text) ? 1 : 0,
      agree: candidates.filter((c) => c.iso === best.iso).length - 1,
      rivals: distinct - 1,
      ambiguous: ambiguous ? 1 : 0,
      twoDigitYear: best.d.year < 100 ? 1 : 0,
      reader: Math.min(1, ...(rows[best.d.row]?.words ?? []).map((w) => w.confidence ?? 1)),
      low: row === undefined ? 1 : readerAt(row, best.d.index, best.d.length).low,
    },
  };
}
