/**
 * The local provider's layout rules for the fields of a sale (receipts, invoices): total, subtotal, tax, date, the
 * merchant and the currency, read from a page's rows (layout.ts) in general terms — keywords in several wordings and
 * languages, amounts with their currency, dates in every common notation, the business name in the top block — each
 * with the signals that say how likely it is right (./layout-fields.ts turns them into a confidence). Pure. The date
 * and the merchant have their own modules (./receipt-dates.ts, ./receipt-merchant.ts), built on the readers here.
 * Not to undo: nothing here may name a particular merchant or be keyed to particular receipts; the rules are measured
 * on receipts they have never seen (bench/receipts.ts, docs/decisions.md#local-field-extraction).
 */
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
  /** The least sure letter or digit of the amount's own text (readerAt). */
  sure: number;
  /** The words it was read from. */
  words: ReadWord[];
}

/** What a rule found, and the signals for its confidence. */
export interface Finding<T> {
  value: T;
  /** The value as the document prints it (`42.50`, `05/11/2026`), where `value` is normalised: a string field's. */
  printed?: string;
  /** The index of the (first) row it was read from, where a rule needs it. */
  row?: number;
  /** The words it was read from, where it was read from words (not worked out): what a second read looks at. */
  words?: readonly ReadWord[];
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
    const [index, length] = [m.index ?? 0, m[0].length];
    out.push({ value, printed, currency, index, ...readerAt(row, index, length), words: wordsAt(row, index, length) });
  }
  return out;
}

/** How sure the reader was of some words: their mean, their least sure character, and their least sure letter or digit. */
export interface Reader {
  confidence: number;
  low: number;
  /**
   * The least sure letter or digit among the characters that matter (PaddleOCR's per-character probabilities; `low`
   * where the engine gives none). A doubtful dot or bracket is set aside: comparisons ignore punctuation anyway.
   */
  sure: number;
}

const ALNUM = /[\p{L}\p{N}]/u;

/** The least sure letter or digit of `word` from its character `from` to before `to` (its `low` without characters). */
function sureIn(word: ReadWord, from = 0, to = word.text.length): number {
  const chars = word.chars;
  if (chars === undefined || chars.length !== word.text.length) return word.low ?? word.confidence ?? 1;
  let least = 1;
  for (let k = Math.max(0, from); k < Math.min(to, chars.length); k++) {
    if (ALNUM.test(word.text[k] ?? '')) least = Math.min(least, chars[k] ?? 1);
  }
  return least;
}

/** The words of `row` that its text from `start` (`length` characters) covers, each with where that text is in it. */
function coveredWords(row: Row, start: number, length: number): { word: ReadWord; from: number; to: number }[] {
  let pos = 0;
  const hit: { word: ReadWord; from: number; to: number }[] = [];
  row.words.forEach((w, i) => {
    if (i > 0) pos += row.text.startsWith('  ', pos) ? 2 : 1;
    if (pos < start + length && pos + w.text.length > start)
      hit.push({ word: w, from: start - pos, to: start + length - pos });
    pos += w.text.length;
  });
  return hit;
}

/** The words of `row` that its text from `start` (`length` characters) covers. */
export function wordsAt(row: Row, start: number, length: number): ReadWord[] {
  return coveredWords(row, start, length).map((h) => h.word);
}

/**
 * How sure the reader was of the words of `row` that its text from `start` (`length` characters) covers: their mean
 * confidence, their least sure character (`low`), and the least sure letter or digit of that text itself (`sure`).
 */
export function readerAt(row: Row, start: number, length: number): Reader {
  const hit = coveredWords(row, start, length);
  const sure = hit.reduce((m, h) => Math.min(m, sureIn(h.word, h.from, h.to)), 1);
  return { ...readerOf(hit.map((h) => h.word)), sure };
}

/** The mean confidence of `words`, their least sure character and letter or digit (1 for none, or no confidence). */
export function readerOf(words: readonly ReadWord[]): Reader {
  if (words.length === 0) return { confidence: 1, low: 1, sure: 1 };
  const confidence = words.reduce((s, w) => s + (w.confidence ?? 1), 0) / words.length;
  const low = words.reduce((m, w) => Math.min(m, w.low ?? w.confidence ?? 1), 1);
  const sure = words.reduce((m, w) => Math.min(m, sureIn(w)), 1);
  return { confidence, low, sure };
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
function paidAmount(rows: readonly Row[]): { value: number; low: number; sure: number } | undefined {
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
    // Both are money handed over, whatever sign the till prints them with (`Cash -50.00`, `CHANGE 29.00`).
    const value = Math.round((Math.abs(cash.value) - Math.abs(change.value)) * 100) / 100;
    return { value, low: Math.min(cash.low, change.low), sure: Math.min(cash.sure, change.sure) };
  }
  // Otherwise the one amount paid: by card, or in cash when no change was given (none printed, or 0.00).
  const exact = change?.value === 0 || (change === undefined && !rows.some((r) => CHANGE.test(r.text)));
  if (cash !== undefined && exact && !card.has(cash.value)) card.set(cash.value, cash);
  const [only, ...others] = [...card.values()];
  return only !== undefined && others.length === 0 ? { value: only.value, low: only.low, sure: only.sure } : undefined;
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
    // A negative amount is a credit (a return, an adjustment note) only where a strong total keyword labels it.
    if (money !== undefined && (money.value > 0 || (strong && money.value < 0)))
      candidates.push({ row: i, money, strong });
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
    const signals = {
      keyword: 0,
      agreesPaid: 1,
      reader: 1,
      low,
      sure: payment?.sure ?? 1,
      rivals: scored.length > 0 ? 1 : 0,
    };
    return { value: paid, printed: paid.toFixed(2), signals };
  }
  if (best !== undefined) {
    const rivals = new Set(
      scored.filter((s) => !close(s.c.money.value, best.c.money.value)).map((s) => s.c.money.value),
    );
    return {
      value: best.c.money.value,
      printed: best.c.money.printed,
      words: best.c.money.words,
      signals: {
        ...best.signals,
        keyword: 1,
        reader: best.c.money.confidence,
        low: best.c.money.low,
        sure: best.c.money.sure,
        rivals: rivals.size,
        margin: best.score - (scored.find((s) => !close(s.c.money.value, best.c.money.value))?.score ?? 0),
      },
    };
  }
  if (paid !== undefined && paid > 0)
    return {
      value: paid,
      printed: paid.toFixed(2),
      signals: { keyword: 0, agreesPaid: 1, reader: 1, low: payment?.low ?? 1, sure: payment?.sure ?? 1, rivals: 0 },
    };
  return null;
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
