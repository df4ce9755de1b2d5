/**
 * The local provider's layout rules for the fields of a sale (receipts, invoices): total, subtotal, tax, date, the
 * merchant and the currency, read from a page's rows (layout.ts) in general terms — keywords in several wordings and
 * languages, amounts with their currency, dates in every common notation, the business name in the top block — each
 * with the signals that say how likely it is right (./receipt-confidence.ts turns them into a confidence). Pure.
 * Not to undo: nothing here may name a particular merchant or be keyed to particular receipts; the rules are measured
 * on receipts they have never seen (bench/receipts.ts, docs/decisions.md#local-field-extraction).
 */
import { fold, monthOf } from '../../fields/normalize.js';
import type { ReadWord, Row } from './layout.js';

/** An amount printed on a row. */
export interface Money {
  value: number;
  /** Its digits as printed (`42.50`, `1,234.50`, `-3.00`): a string field's value. */
  printed: string;
  /** The currency printed with it (`RM`, `$`, `EUR`…), upper-cased, or ''. */
  currency: string;
  /** Where it starts in the row's text (amounts further right are printed later). */
  index: number;
  /** The mean reader confidence of the words it was read from (1 when unknown). */
  confidence: number;
  /** The least sure character of those words (their confidence where the engine gives no characters'). */
  low: number;
}

/** What a rule found, and the signals for its confidence. */
export interface Finding<T> {
  value: T;
  /** The value as the document prints it (`42.50`, `05/11/2026`), where `value` is normalised: a string field's. */
  printed?: string;
  signals: Record<string, number>;
}

// ---------------------------------------------------------------------------------------------------------------
// Amounts
// ---------------------------------------------------------------------------------------------------------------

const SIGN = String.raw`(?:US\$|S\$|A\$|C\$|HK\$|RM|MYR|USD|EUR|GBP|SGD|AUD|CAD|NZD|HKD|INR|JPY|CHF|[$€£¥₹])`;
const AMOUNT = new RegExp(
  String.raw`(?<![\p{L}\p{N}.,])(-)?\s*(${SIGN}|[A-Z]{1,2}(?=\d))?\s*(-)?\s*(\d{1,3}(?:,\d{3})+|\d{1,3}(?:\.\d{3})+(?=,\d\d(?!\d))|\d+)\s?([.,])\s?(\d{2})(?!\d)(?:\s?(${SIGN})(?![\p{L}]))?(-)?`,
  'giu',
);

/**
 * A row's text with the reader's usual slips in amounts undone, character for character (the same length, so places
 * still point into the row): an `O` among digits is a zero (`RMO.00`, `5:O0`), a colon before the cents of an amount
 * with a currency sign is its decimal mark (`RM5:00`; a time has no sign), and `RM  .00` is `RM 0.00`.
 */
function amountText(text: string): string {
  return text
    .replace(/(?<=[\d.,:])[Oo]|[Oo](?=[.,:]?\d)/g, '0')
    .replace(/((?:RM|\$|€|£)\s*\d+):(?=\d\d(?![\d:]))/gi, '$1.')
    .replace(/((?:RM|\$|€|£)\s*)\s\.(?=\d\d(?!\d))/gi, '$10.');
}

/**
 * The amounts printed on a row, left to right: two decimals, with an optional sign or currency on either side (a
 * glued prefix of one or two capitals counts as one: `FM3.00` is a misread `RM3.00`).
 */
export function amountsOf(row: Row): Money[] {
  const out: Money[] = [];
  for (const m of amountText(row.text).matchAll(AMOUNT)) {
    const [, minusA, signA, minusB, whole = '', decimal, cents = '', signB, minusC] = m;
    // 1.234,50 and 1,234.50: the mark before the cents is the decimal one; the other separates thousands.
    const digits = whole.replace(decimal === ',' ? /\./g : /,/g, '');
    if (!/^\d+$/.test(digits)) continue;
    const negative = Boolean(minusA || minusB || minusC);
    const value = Number(`${digits}.${cents}`) * (negative ? -1 : 1);
    const printed = `${negative ? '-' : ''}${whole}${decimal}${cents}`;
    const sign = (signA ?? signB ?? '').toUpperCase();
    const currency = new RegExp(`^${SIGN}$`, 'iu').test(sign) ? sign : '';
    out.push({ value, printed, currency, index: m.index ?? 0, ...readerAt(row, m.index ?? 0, m[0].length) });
  }
  return out;
}

/**
 * How sure the reader was of the words of `row` that its text from `start` (`length` characters) covers: their mean
 * confidence, and their least sure character (`low`; a word's confidence where the engine gives no characters').
 */
export function readerAt(row: Row, start: number, length: number): { confidence: number; low: number } {
  let pos = 0;
  const hit: ReadWord[] = [];
  row.words.forEach((w, i) => {
    if (i > 0) pos += row.text.startsWith('  ', pos) ? 2 : 1;
    if (pos < start + length && pos + w.text.length > start) hit.push(w);
    pos += w.text.length;
  });
  return readerOf(hit);
}

/** The mean confidence of `words` and their least sure character (1 and 1 for none, or a reader without either). */
export function readerOf(words: readonly ReadWord[]): { confidence: number; low: number } {
  if (words.length === 0) return { confidence: 1, low: 1 };
  const confidence = words.reduce((s, w) => s + (w.confidence ?? 1), 0) / words.length;
  const low = words.reduce((m, w) => Math.min(m, w.low ?? w.confidence ?? 1), 1);
  return { confidence, low };
}

// ---------------------------------------------------------------------------------------------------------------
// Totals, subtotals, tax
// ---------------------------------------------------------------------------------------------------------------

const STRONG_TOTAL =
  /\b(?:grand\s*total|nett?\s*total|total\s*(?:amount\s*)?(?:due|payable|to\s*pay)|amount\s*(?:due|payable)|balance\s*due|total\s*rounded|rounded\s*total|total\s*(?:sales\s*)?\(?\s*incl?u?s?i?v?e?\b|amount\s*incl?u?s?i?v?e?\b|total\s*ttc|montant\s*(?:total|ttc|d[uû])|importe\s*total|gesamt(?:betrag|summe)?|jumlah(?:\s*besar|\s*bersih)?|totale|a\s*pagar)\b/i;
const PLAIN_TOTAL = /\b(?:total|summe|totaal|suma|net\s*am(?:oun)?t|nett)\b/i;
const NOT_TOTAL =
  /\b(?:sub[\s-]*total|total\s*(?:qty|quantity|items?|item\(s\)|pcs|disc(?:ount)?|savings?|tax|gst|vat|sst|excl?|before|points?|weight|tender|number|no)\b|qty|quantity|items?\b|item\(s\)|summary|saved?|saving|discount|accepted|received|excl(?:uding|usive)?\b)/i;
const SUBTOTAL =
  /\b(?:sub[\s-]*total|total\s*(?:\(?excl?|before\s*tax)|amount\s*before\s*tax|zwischensumme|sous[\s-]*total)/i;
const TAX_WORD = /\b(?:gst|vat|tax|sst|mwst|tva|iva|hst|pst|qst|ust)\b/i;
const NOT_TAX =
  /\b(?:(?:gst|vat|tax|sst)\s*(?:id|reg|no|number|#|registration|invoice)|invoice|summary|incl(?:usive|\.)?|excl(?:usive|\.)?|before|total\s*(?:amount)?\s*\(?incl)/i;
const RATE = /(\d{1,2}(?:[.,]\d{1,2})?)\s*%/;
const PAYMENT =
  /\b(?:cash|change|tender(?:ed)?|paid|payment|visa|master(?:card)?|card|credit|debit|amex|e-?wallet|tunai|baki|bayar|kembali|rendu|wechsel|cambio)\b/i;
const CHANGE = /\b(?:change|baki|kembali|rendu|r[üu]ckgeld|cambio)\b/i;
const CARD = /\b(?:visa|master(?:card)?|card|credit|debit|amex|paid\s*by|e-?wallet|kredit)\b/i;
const ROUNDING = /\bround(?:ing|ed)?\b|\bpembundaran\b|\bbundar/i;
const CASH = /\b(?:cash|tunai|tender(?:ed)?|paid|bargeld|efectivo|esp[eè]ces)\b/i;

interface Labelled {
  row: number;
  money: Money;
  strong: boolean;
}

/** The amount a row's label is about: the rightmost amount on it, else the first on the next row (label above value). */
function labelledAmount(rows: readonly Row[], i: number): Money | undefined {
  const row = rows[i];
  if (row === undefined) return undefined;
  const own = amountsOf(row);
  if (own.length > 0) return own[own.length - 1];
  const next = rows[i + 1];
  if (next === undefined || next.bbox[1] - row.bbox[3] > 1.5 * row.height) return undefined;
  return /\p{L}{3,}/u.test(next.text.replace(new RegExp(SIGN.slice(3, -1), 'giu'), ''))
    ? undefined
    : amountsOf(next)[0];
}

function close(a: number, b: number): boolean {
  return Math.abs(a - b) < 0.005;
}

/** What the payment rows say was paid (cash less change, else the one amount paid by card), and how surely read. */
function paidAmount(rows: readonly Row[]): { value: number; low: number } | undefined {
  let cash: Money | undefined;
  let change: Money | undefined;
  const card = new Map<number, Money>();
  for (const [i, row] of rows.entries()) {
    if (PLAIN_TOTAL.test(row.text) || STRONG_TOTAL.test(row.text) || !PAYMENT.test(row.text)) continue;
    // "Cash Rounding -0.01" adjusts the total; it is no tender.
    if (ROUNDING.test(row.text)) continue;
    const money = labelledAmount(rows, i);
    if (money === undefined) continue;
    if (CHANGE.test(row.text)) change ??= money;
    else if (CARD.test(row.text)) card.set(money.value, money);
    else if (CASH.test(row.text)) cash ??= money;
  }
  if (cash !== undefined && change !== undefined) {
    return { value: Math.round((cash.value - change.value) * 100) / 100, low: Math.min(cash.low, change.low) };
  }
  // Otherwise the one amount paid: by card, or in cash when no change was given (none printed, or 0.00).
  const exact = change?.value === 0 || (change === undefined && !rows.some((r) => CHANGE.test(r.text)));
  if (cash !== undefined && exact && !card.has(cash.value)) card.set(cash.value, cash);
  const [only, ...others] = [...card.values()];
  return only !== undefined && others.length === 0 ? { value: only.value, low: only.low } : undefined;
}

function firstPaymentRow(rows: readonly Row[]): number {
  const i = rows.findIndex((r) => PAYMENT.test(r.text) && amountsOf(r).length > 0 && !PLAIN_TOTAL.test(r.text));
  return i < 0 ? rows.length : i;
}

/** The subtotal: the rightmost amount on the last subtotal row before payment. */
export function findSubtotal(rows: readonly Row[]): Finding<number> | null {
  const end = firstPaymentRow(rows);
  for (let i = Math.min(end, rows.length) - 1; i >= 0; i--) {
    const row = rows[i];
    if (row === undefined || !SUBTOTAL.test(row.text)) continue;
    const money = labelledAmount(rows, i);
    if (money !== undefined) {
      return { value: money.value, printed: money.printed, signals: { reader: money.confidence } };
    }
  }
  return null;
}

/** The tax: the rightmost amount of a tax row (`GST 6%  1.89`, `SALES TAX 6.25%  1.89`), its rate not an amount. */
export function findTax(rows: readonly Row[]): Finding<number> | null {
  const end = firstPaymentRow(rows);
  const found: Finding<number>[] = [];
  rows.forEach((row, i) => {
    if (!TAX_WORD.test(row.text) || NOT_TAX.test(row.text)) return;
    const money = labelledAmount(rows, i);
    if (money === undefined || money.value < 0) return;
    const rate = RATE.exec(row.text);
    found.push({
      value: money.value,
      printed: money.printed,
      signals: { reader: money.confidence, rate: rate ? 1 : 0, beforePayment: i < end ? 1 : 0 },
    });
  });
  return found.find((f) => f.signals.beforePayment === 1) ?? found[0] ?? null;
}

/**
 * The total: among the amounts a total keyword labels (strong wordings such as "grand total", "amount due", "total
 * incl. GST" and plain "total"; never a subtotal, a count or a tax), the one the rest of the receipt agrees with —
 * what was paid (cash less change), subtotal + tax — else the last before the payment rows, nearest the bottom.
 */
export function findTotal(rows: readonly Row[]): Finding<number> | null {
  const end = firstPaymentRow(rows);
  const candidates: Labelled[] = [];
  rows.forEach((row, i) => {
    const strong = STRONG_TOTAL.test(row.text);
    if (!strong && (!PLAIN_TOTAL.test(row.text) || NOT_TOTAL.test(row.text))) return;
    if (strong && /\bsub[\s-]*total/i.test(row.text)) return;
    const money = labelledAmount(rows, i);
    if (money !== undefined && money.value > 0) candidates.push({ row: i, money, strong });
  });
  const payment = paidAmount(rows);
  const paid = payment?.value;
  const subtotal = findSubtotal(rows)?.value;
  const tax = findTax(rows)?.value;
  const lastBefore = [...candidates].reverse().find((c) => c.row < end);
  // An amount with a rounding adjustment below it (before payment) is the total before rounding.
  const roundingRow = rows.findIndex(
    (r, i) => i < end && ROUNDING.test(r.text) && !STRONG_TOTAL.test(r.text) && amountsOf(r).some((m) => m.value !== 0),
  );
  const scored = candidates.map((c) => {
    const agreesPaid = paid !== undefined && close(paid, c.money.value) ? 1 : 0;
    const agreesSum = subtotal !== undefined && tax !== undefined && close(subtotal + tax, c.money.value) ? 1 : 0;
    const repeated = candidates.filter((o) => o !== c && close(o.money.value, c.money.value)).length > 0 ? 1 : 0;
    const beforeRounding = roundingRow > c.row && !ROUNDING.test(rows[c.row]?.text ?? '') ? 1 : 0;
    const score =
      (c.strong ? 2 : 1) +
      4 * agreesPaid +
      agreesSum +
      repeated +
      (c === lastBefore ? 2 : 0) -
      (c.row >= end ? 3 : 0) -
      2 * beforeRounding;
    return {
      c,
      score,
      signals: { strong: c.strong ? 1 : 0, agreesPaid, agreesSum, repeated, last: c === lastBefore ? 1 : 0 },
    };
  });
  scored.sort((a, b) => b.score - a.score || b.c.row - a.c.row);
  const best = scored[0];
  // What was paid, when no labelled amount agrees with it and the best of them is weak (before rounding, after
  // payment, or a plain "total" with rivals).
  if (paid !== undefined && paid > 0 && !candidates.some((c) => close(c.money.value, paid)) && (best?.score ?? 0) < 4) {
    const low = payment?.low ?? 1;
    const signals = { keyword: 0, agreesPaid: 1, reader: 1, low, rivals: scored.length > 0 ? 1 : 0 };
    return { value: paid, printed: paid.toFixed(2), signals };
  }
  if (best !== undefined) {
    const rivals = new Set(
      scored.filter((s) => !close(s.c.money.value, best.c.money.value)).map((s) => s.c.money.value),
    );
    return {
      value: best.c.money.value,
      printed: best.c.money.printed,
      signals: {
        ...best.signals,
        keyword: 1,
        reader: best.c.money.confidence,
        low: best.c.money.low,
        rivals: rivals.size,
        margin: best.score - (scored.find((s) => !close(s.c.money.value, best.c.money.value))?.score ?? 0),
      },
    };
  }
  if (paid !== undefined && paid > 0)
    return {
      value: paid,
      printed: paid.toFixed(2),
      signals: { keyword: 0, agreesPaid: 1, reader: 1, low: payment?.low ?? 1, rivals: 0 },
    };
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------------
// Merchant
// ---------------------------------------------------------------------------------------------------------------

const COMPANY_SUFFIX =
  /(?<![\p{L}])(?:sdn\.?\s*bhd|bhd|s\/b|inc|llc|l\.l\.c|ltd|limited|gmbh|corp(?:oration)?|company|co\.|plc|ag|s\.?a\.?r?\.?l?|pty|pte|enterprise|trading|holdings|group|restaurant|restoran|cafe|café|store|stores|mart|shop|bakery|pharmacy|farmasi|hardware|stationery|supermarket|hotel|kedai|syarikat|s\.?r\.?l|b\.?v|n\.?v|oy|ab)(?![\p{L}])/iu;
const NOT_MERCHANT =
  /\b(?:tax\s*invoice|invoice|receipt|resit|bill|welcome|thank|cashier|operator|server|table|tel|phone|fax|email|www|http|gst|reg(?:istration)?\s*no|roc|co\.?\s*reg|company\s*no|no\.?\s*\d|jalan|jln|lot|street|st\.|road|rd\.|avenue|ave\.|blvd|taman|floor|level|suite|unit|date|time|order|member|qty|price|amt|desc(?:ription)?|disc|opening|hours|hrs)\b|[@:]|\d{5}|^\(.*\)$/i;

function letters(text: string): number {
  return (text.match(/\p{L}/gu) ?? []).length;
}

/**
 * A business name as printed, with the reader's usual confusions in it undone: a `0` or `1` inside a word of letters
 * (`SC0OP`, `S00N`, `1DEA`) is the letter, and `SON BHD` or `SDNBHD` (a Malaysian company's form misread) is `SDN BHD`.
 */
export function cleanName(text: string): string {
  return text
    .replace(/(?<![\p{L}\p{N}])[\p{L}01]*[01][\p{L}01]*(?![\p{L}\p{N}])/gu, (word) =>
      letters(word) >= 2 && 2 * letters(word) >= word.length ? word.replace(/0/g, 'O').replace(/1/g, 'I') : word,
    )
    .replace(/\bSDN\.?(?=BHD)/gi, (sdn) => `${sdn} `)
    .replace(/\bS[O0]N(\.?\s*BHD)\b/gi, (_, tail: string) => `SDN${tail}`);
}

/**
 * How a name looks misread: single letters standing alone (`ST T IONERY`: a word split), runs of 14+ letters
 * (`GARDENIABAKERIES`: a space lost; `INTERNATIONAL` is 13), words of mixed case or with a digit inside (`eCo8Way`),
 * and digits or quotes at all (`A32'75'`, `BD1187`: a business name is letters; a number in it is rarely a misread).
 */
function nameShape(text: string): Record<string, number> {
  const words = text.split(/\s+/).filter((w) => w !== '');
  return {
    fragments: words.filter((w) => /^\p{L}$/u.test(w)).length,
    glued: words.filter((w) => /\p{L}{14,}/u.test(w)).length,
    odd: words.filter((w) => /\p{Ll}\p{Lu}|\p{L}\d+\p{L}/u.test(w)).length,
    digits: words.filter((w) => /\d|['"`]/u.test(w)).length,
  };
}

/** A company's trailing registration number or note in brackets: `SDN BHD (860671-D)` → `SDN BHD`. */
function withoutRegistration(text: string): string {
  return text
    .replace(/\s*[([][^()[\]]*\d[^()[\]]*[)\]]?[\s.,;]*$/u, '')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

/**
 * The merchant: in the top block (the rows before the first amount), the first row that carries a company suffix
 * (`SDN BHD`, `LTD`, `GmbH`, `Restaurant`…, a suffix alone on its row joining the row above), else the row in the
 * largest print among the first rows that are not an address, a phone number, a registration or a title.
 */
export function findMerchant(rows: readonly Row[]): Finding<string> | null {
  const firstAmount = rows.findIndex((r) => amountsOf(r).length > 0);
  const block = rows.slice(0, Math.min(firstAmount < 0 ? rows.length : firstAmount, 12));
  const usable = block
    .map((row, i) => ({ row, i, text: withoutRegistration(row.text) }))
    .filter((r) => letters(r.text) >= 3 && !NOT_MERCHANT.test(r.text));
  const medianHeight = [...block.map((r) => r.height)].sort((a, b) => a - b)[Math.floor(block.length / 2)] ?? 0;
  const suffixOnly = (text: string) => letters(text.replace(new RegExp(COMPANY_SUFFIX.source, 'giu'), '')) < 2;
  const signals = (value: string, named: Row[], k: number) => {
    const reader = readerOf(named.flatMap((row) => row.words));
    return {
      rank: k,
      tall: named.some((row) => row.height >= medianHeight * 1.15) ? 1 : 0,
      reader: reader.confidence,
      low: reader.low,
      ...nameShape(value),
    };
  };
  for (const [k, r] of usable.entries()) {
    if (!COMPANY_SUFFIX.test(r.text)) continue;
    // A name broken over two rows: "… RESTAURANT" above "SDN BHD", or "SDN BHD" alone below the name.
    const above = usable[k - 1];
    const below = usable[k + 1];
    let text = r.text;
    let named = [r.row];
    if (suffixOnly(r.text) && above !== undefined && above.i === r.i - 1) {
      text = `${above.text} ${r.text}`;
      named = [above.row, r.row];
    } else if (below !== undefined && below.i === r.i + 1 && suffixOnly(below.text)) {
      text = `${r.text} ${below.text}`;
      named = [r.row, below.row];
    }
    const value = cleanName(text);
    return { value, signals: { suffix: 1, ...signals(value, named, k) } };
  }
  const tallest = [...usable.slice(0, 4)].sort((a, b) => b.row.height - a.row.height)[0];
  if (tallest === undefined) return null;
  const value = cleanName(tallest.text);
  return { value, signals: { suffix: 0, ...signals(value, [tallest.row], usable.indexOf(tallest)) } };
}

// ---------------------------------------------------------------------------------------------------------------
// Currency
// ---------------------------------------------------------------------------------------------------------------

const CODE = /\b(USD|EUR|GBP|MYR|SGD|AUD|CAD|NZD|HKD|INR|JPY|CHF|CNY|SEK|NOK|DKK|PLN|THB|IDR|PHP)\b/;
const SIGN_CODES: [RegExp, string][] = [
  [/\bRM\s*\d/i, 'MYR'],
  [/€/, 'EUR'],
  [/£/, 'GBP'],
  [/₹/, 'INR'],
  [/¥/, 'JPY'],
  [/\bS\$/, 'SGD'],
  [/\bA\$/, 'AUD'],
  [/\bC\$/, 'CAD'],
  [/\bHK\$/, 'HKD'],
];
/** Where a bare `$` is not the US dollar: the country a receipt's company form or address names. */
const DOLLAR_LOCALES: [RegExp, string][] = [
  [/\b(?:sdn\.?\s*bhd|malaysia)\b/i, 'MYR'],
  [/\b(?:pte\.?\s*ltd|singapore)\b/i, 'SGD'],
  [/\b(?:pty\.?\s*ltd|australia|ABN)\b/i, 'AUD'],
  [/\b(?:canada|HST)\b/i, 'CAD'],
  [/\b(?:new zealand)\b/i, 'NZD'],
  [/\b(?:hong kong)\b/i, 'HKD'],
];

/** The currency: a printed ISO code, else a sign (`RM`, `€`, `S$`…), else `$` read by the receipt's country. */
export function findCurrency(rows: readonly Row[]): Finding<string> | null {
  const text = rows.map((r) => r.text).join('\n');
  const code = CODE.exec(text)?.[1];
  if (code !== undefined) return { value: code, signals: { code: 1 } };
  for (const [re, iso] of SIGN_CODES) if (re.test(text)) return { value: iso, signals: { sign: 1 } };
  if (!/\$\s*\d/.test(text)) return null;
  for (const [re, iso] of DOLLAR_LOCALES) if (re.test(text)) return { value: iso, signals: { locale: 1 } };
  return { value: 'USD', signals: { dollar: 1 } };
}
